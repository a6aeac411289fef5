/* Op-by-op traces: the writer (samebits/trace.h). While a trace is open it
 * is the autograd graph's trace sink (autograd/trace_internal.h): autograd
 * sits below io and knows nothing of files, so the writer registers itself
 * there at sb_trace_open and leaves at close. The format is in
 * trace_format.h; the reader is trace_reader.c. */
#include <pthread.h>
#include <stdlib.h>
#ifndef SB_NO_ZLIB
#include <zlib.h>
#endif
#include "autograd/trace_internal.h"
#include "core/fpenv.h"
#include "io/io_internal.h"
#include "io/trace_format.h"
#include "ops/op_table.h"
#include "samebits/hash.h"
#include "samebits/trace.h"

static struct {
    pthread_mutex_t lock;
    sb_atomic_file af;
    sb_sha256_ctx file_hash;
    unsigned flags;
    uint64_t step, op, records;
    sb_status err;
    char err_msg[256];
    uint64_t inject_step, inject_op;
} T = {.lock = PTHREAD_MUTEX_INITIALIZER, .inject_step = UINT64_MAX, .inject_op = UINT64_MAX};

/* Only under T.lock with a trace open. The first error sticks. */
static void keep_error(sb_status s) {
    if (T.err != SB_OK || s == SB_OK) return;
    T.err = s;
    snprintf(T.err_msg, sizeof T.err_msg, "%s", sb_last_error());
}

static void emit(const void *buf, size_t n) {
    if (T.err != SB_OK) return;
    sb_sha256_update(&T.file_hash, buf, n);
    keep_error(sb_atomic_write(&T.af, "sb_trace", buf, n));
}

/* Element i (row-major logical order) of t, honouring strides. */
static int64_t offset_of(const sb_tensor *t, int64_t i) {
    int64_t off = 0;
    for (int k = t->ndim - 1; k >= 0; k--) {
        off += (i % t->shape[k]) * t->strides[k];
        i /= t->shape[k];
    }
    return off;
}

static void maybe_inject(sb_tensor *t) {
    if (T.step != T.inject_step || T.op != T.inject_op || t->dtype != SB_F32) return;
    int64_t n = sb_tensor_numel(t);
    if (n <= 0) return;
    uint32_t *e = (uint32_t *)t->data + offset_of(t, n / 2);
    *e ^= 1u; /* one unit in the last place */
}

static void write_record(const char *name, sb_tensor *t) {
    maybe_inject(t);
    size_t es = sb_dtype_size(t->dtype);
    int64_t n = sb_tensor_numel(t);
    unsigned char head[1 + 8 + 8 + 1 + NAME_MAX_LEN + 2 + 8 * SB_MAX_DIMS + 32], *p = head;
    *p++ = 'R';
    put_u64(p, T.step); p += 8;
    put_u64(p, T.op); p += 8;
    size_t len = strlen(name);
    *p++ = (unsigned char)len;
    memcpy(p, name, len); p += len;
    *p++ = (unsigned char)t->dtype;
    *p++ = (unsigned char)t->ndim;
    for (int k = 0; k < t->ndim; k++) { put_u64(p, (uint64_t)t->shape[k]); p += 8; }
    const sb_tensor *list[1] = {t};
    keep_error(sb_hash_tensors(list, 1, p));
    p += 32;
    emit(head, (size_t)(p - head));
    T.op++;
    T.records++;
    if (T.flags & SB_TRACE_HASHES_ONLY) return;
#ifdef SB_NO_ZLIB
    (void)es; (void)n; /* sb_trace_open refused value traces */
#else
    size_t raw_len = (size_t)n * es;
    uLongf zlen = compressBound((uLong)raw_len);
    unsigned char *raw = sb_malloc("sb_trace", raw_len ? raw_len : 1);
    unsigned char *z = sb_malloc("sb_trace", (size_t)zlen + 8);
    if (!raw || !z) {
        keep_error(SB_ERR_NOMEM);
        free(raw);
        free(z);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        const unsigned char *src = (const unsigned char *)t->data + (size_t)offset_of(t, i) * es;
        uint64_t v = 0;
        if (es == 4) { uint32_t u; memcpy(&u, src, 4); v = u; }
        else memcpy(&v, src, 8);
        for (size_t b = 0; b < es; b++) raw[(size_t)i * es + b] = (unsigned char)(v >> (8 * b));
    }
    if (compress2(z + 8, &zlen, raw, (uLong)raw_len, 1) != Z_OK) {
        keep_error(sb_fail(SB_ERR_INTERNAL, "sb_trace: zlib could not compress a record"));
    } else {
        put_u64(z, (uint64_t)zlen);
        emit(z, (size_t)zlen + 8);
    }
    free(raw);
    free(z);
#endif
}

/* The sink autograd calls for every op output and gradient contribution. */
static void record_from_graph(const char *op, const char *suffix, sb_tensor *t) {
    /* A device tensor is traced through a host copy (and an injected change
     * goes back to the device). */
    sb_tensor *host = NULL;
    if (t && t->device != SB_DEVICE_CPU && sb_tensor_to(&host, t, SB_DEVICE_CPU) != SB_OK) return;
    pthread_mutex_lock(&T.lock);
    if (atomic_load(&sb_trace_is_on) && t && t->data) {
        char name[NAME_MAX_LEN + 1];
        if (!strncmp(op, "sb_ag_", 6)) op += 6;
        /* Record names are the op table's trace names (src/ops/op_table.h),
         * so a trace can always be read back to the op that wrote it. */
        if (!sb_op_by_trace_name(op))
            keep_error(sb_fail(SB_ERR_INTERNAL, "sb_trace: autograd op '%s' has no trace name "
                               "in the op table (src/ops/op_table.h)", op));
        snprintf(name, sizeof name, "%s%s", op, suffix ? suffix : "");
        write_record(name, host ? host : t);
    }
    pthread_mutex_unlock(&T.lock);
    if (host) {
        (void)sb_tensor_copy(t, host);
        sb_tensor_free(host);
    }
}

sb_status sb_trace_open(const char *path, unsigned flags) {
    const char *fn = "sb_trace_open";
    if (!path) return sb_fail(SB_ERR_NULL, "%s: path is NULL", fn);
    if (flags & ~SB_TRACE_HASHES_ONLY) return sb_fail(SB_ERR_ARG, "%s: unknown flags 0x%x", fn, flags);
#ifdef SB_NO_ZLIB
    if (!(flags & SB_TRACE_HASHES_ONLY))
        return sb_fail(SB_ERR_UNSUPPORTED,
                       "%s: this build has no zlib (NO_ZLIB=1), so a trace cannot hold values; "
                       "record hashes only (SB_TRACE_HASHES_ONLY, --trace-hashes-only)", fn);
#endif
    uint64_t inj_step = UINT64_MAX, inj_op = UINT64_MAX;
    const char *env = getenv("SB_TRACE_INJECT");
    if (env && *env) {
        unsigned long long s, o;
        int used = 0;
        if (sscanf(env, "%llu:%llu%n", &s, &o, &used) != 2 || env[used])
            return sb_fail(SB_ERR_ARG, "%s: SB_TRACE_INJECT must be STEP:OP (two integers), got '%s'", fn, env);
        inj_step = s;
        inj_op = o;
    }
    pthread_mutex_lock(&T.lock);
    sb_status s = SB_OK;
    if (atomic_load(&sb_trace_is_on)) {
        s = sb_fail(SB_ERR_ARG, "%s: a trace is already open; close it first", fn);
    } else if ((s = sb_atomic_open(&T.af, fn, path)) == SB_OK) {
        sb_sha256_init(&T.file_hash);
        T.flags = flags;
        T.step = T.op = T.records = 0;
        T.err = SB_OK;
        T.err_msg[0] = 0;
        if (env && *env) { T.inject_step = inj_step; T.inject_op = inj_op; }
        unsigned char h[16];
        memcpy(h, TRACE_MAGIC, 8);
        for (int i = 0; i < 4; i++) h[8 + i] = (unsigned char)(TRACE_VERSION >> (8 * i));
        for (int i = 0; i < 4; i++) h[12 + i] = (unsigned char)(flags >> (8 * i));
        emit(h, sizeof h);
        sb_trace_set_sink(record_from_graph);
    }
    pthread_mutex_unlock(&T.lock);
    return s;
}

sb_status sb_trace_close(void) {
    pthread_mutex_lock(&T.lock);
    if (!atomic_load(&sb_trace_is_on)) {
        pthread_mutex_unlock(&T.lock);
        return sb_fail(SB_ERR_ARG, "sb_trace_close: no trace is open");
    }
    sb_trace_set_sink(NULL);
    unsigned char tail[1 + 8], digest[32];
    tail[0] = 'E';
    put_u64(tail + 1, T.records);
    emit(tail, sizeof tail);
    sb_sha256_final(&T.file_hash, digest);
    if (T.err == SB_OK) keep_error(sb_atomic_write(&T.af, "sb_trace", digest, 32));
    sb_status s = T.err;
    if (s == SB_OK) {
        s = sb_atomic_commit(&T.af, "sb_trace_close");
    } else {
        sb_atomic_abort(&T.af);
        sb_fail(s, "sb_trace: the trace was not written: %s", T.err_msg);
    }
    T.inject_step = T.inject_op = UINT64_MAX;
    pthread_mutex_unlock(&T.lock);
    return s;
}

void sb_trace_abort(void) {
    pthread_mutex_lock(&T.lock);
    if (atomic_load(&sb_trace_is_on)) {
        sb_trace_set_sink(NULL);
        sb_atomic_abort(&T.af);
    }
    T.inject_step = T.inject_op = UINT64_MAX;
    pthread_mutex_unlock(&T.lock);
}

bool sb_trace_active(void) { return atomic_load(&sb_trace_is_on); }

sb_status sb_trace_step(uint64_t step) {
    pthread_mutex_lock(&T.lock);
    T.step = step;
    T.op = 0;
    pthread_mutex_unlock(&T.lock);
    return SB_OK;
}

sb_status sb_trace_record(const char *name, sb_tensor *t) {
    SB_FPENV_GUARD();
    const char *fn = "sb_trace_record";
    if (!name) return sb_fail(SB_ERR_NULL, "%s: name is NULL", fn);
    if (!valid_name(name))
        return sb_fail(SB_ERR_ARG, "%s: name '%.80s' must be 1..63 printable characters without spaces", fn, name);
    SB_TRY(sb_check_host_tensor(fn, "t", t, t ? t->dtype : SB_F32, -1));
    if (!atomic_load(&sb_trace_is_on)) return SB_OK;
    pthread_mutex_lock(&T.lock);
    if (atomic_load(&sb_trace_is_on)) write_record(name, t);
    pthread_mutex_unlock(&T.lock);
    return SB_OK;
}

void sb_trace_inject_ulp(uint64_t step, uint64_t op) {
    pthread_mutex_lock(&T.lock);
    T.inject_step = step;
    T.inject_op = op;
    pthread_mutex_unlock(&T.lock);
}
