/* Op-by-op traces: the writer fed by the autograd hooks, and the checking
 * reader behind `samebits trace-diff`. File format: docs/VERIFY-AND-TRACE.md.
 *
 *   header   "SBTRACE1"  u32 version (1)  u32 flags (bit 0: hashes only)
 *   record   'R' u64 step  u64 op  u8 name_len  name  u8 dtype  u8 ndim
 *            i64 shape[ndim]  sha256[32]  [u64 zlen  zlib(values)]
 *   trailer  'E' u64 record_count  sha256[32] of every byte before it
 * Integers are little-endian; values are the elements' little-endian bytes
 * in row-major order, raw (NaN payloads kept: the diff shows real bits),
 * while the record's sha256 is sb_hash_tensors' canonical hash. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#ifndef SB_NO_ZLIB
#include <zlib.h>
#endif
#include "autograd/trace_internal.h"
#include "core/fpenv.h"
#include "io/io_internal.h"
#include "ops/op_table.h"
#include "samebits/hash.h"

#define TRACE_MAGIC "SBTRACE1"
#define TRACE_VERSION 1u
#define NAME_MAX_LEN 63
/* zlib's deflate never compresses better than about 1032:1; a record that
 * claims more is a lie, refused before anything that large is allocated. */
#define ZLIB_MAX_RATIO 1032u

atomic_bool sb_trace_is_on;

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

static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

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

static bool valid_name(const char *s) {
    size_t n = strlen(s);
    if (n < 1 || n > NAME_MAX_LEN) return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x21 || s[i] > 0x7e) return false;
    return true;
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

void sb_trace_hook(const char *op, const char *suffix, sb_tensor *t) {
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
        atomic_store(&sb_trace_is_on, true);
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
    atomic_store(&sb_trace_is_on, false);
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
        atomic_store(&sb_trace_is_on, false);
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

/* ---- reader ---------------------------------------------------------------- */

struct sb_trace_reader {
    FILE *fp, *owned;
    char *name;
    unsigned flags;
    uint64_t records;
    sb_sha256_ctx hash;
    bool finished;
    unsigned char *z, *values; /* the current record's compressed and raw bytes */
    size_t z_len, values_cap;
    bool z_ready;
};

static sb_status bad(const sb_trace_reader *r, const char *what) {
    return sb_fail(SB_ERR_FORMAT, "trace '%s': %s (damaged or not a samebits trace)", r->name, what);
}

/* Exactly n bytes, hashed; a short read is truncation. */
static sb_status get(sb_trace_reader *r, void *buf, size_t n, const char *what) {
    if (n && fread(buf, 1, n, r->fp) != n) {
        if (ferror(r->fp)) return sb_fail(SB_ERR_IO, "trace '%s': read error", r->name);
        char msg[96];
        snprintf(msg, sizeof msg, "truncated in %s", what);
        return bad(r, msg);
    }
    sb_sha256_update(&r->hash, buf, n);
    return SB_OK;
}

sb_status sb_trace_reader_open(sb_trace_reader **out, FILE *fp, const char *name) {
    const char *fn = "sb_trace_reader_open";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    if (!fp) return sb_fail(SB_ERR_NULL, "%s: fp is NULL", fn);
    sb_trace_reader *r = sb_calloc(fn, 1, sizeof *r);
    if (!r) return SB_ERR_NOMEM;
    const char *nm = name ? name : "(stream)";
    r->name = sb_malloc(fn, strlen(nm) + 1);
    if (!r->name) { free(r); return SB_ERR_NOMEM; }
    strcpy(r->name, nm);
    r->fp = fp;
    sb_sha256_init(&r->hash);
    unsigned char h[16];
    sb_status s = get(r, h, sizeof h, "the header");
    if (s == SB_OK && memcmp(h, TRACE_MAGIC, 8)) s = bad(r, "bad magic");
    uint32_t version = 0, flags = 0;
    for (int i = 3; i >= 0; i--) {
        version = version << 8 | h[8 + i];
        flags = flags << 8 | h[12 + i];
    }
    if (s == SB_OK && version != TRACE_VERSION) s = bad(r, "unsupported version");
    if (s == SB_OK && (flags & ~SB_TRACE_HASHES_ONLY)) s = bad(r, "unknown flags");
    if (s != SB_OK) { sb_trace_reader_free(r); return s; }
    r->flags = flags;
    *out = r;
    return SB_OK;
}

sb_status sb_trace_reader_open_path(sb_trace_reader **out, const char *path) {
    if (!out) return sb_fail(SB_ERR_NULL, "sb_trace_reader_open_path: out is NULL");
    *out = NULL;
    if (!path) return sb_fail(SB_ERR_NULL, "sb_trace_reader_open_path: path is NULL");
    FILE *fp = fopen(path, "rb");
    if (!fp) return sb_fail(SB_ERR_IO, "trace '%s': cannot open: %s", path, strerror(errno));
    sb_status s = sb_trace_reader_open(out, fp, path);
    if (s != SB_OK) { fclose(fp); return s; }
    (*out)->owned = fp;
    return SB_OK;
}

void sb_trace_reader_free(sb_trace_reader *r) {
    if (!r) return;
    if (r->owned) fclose(r->owned);
    free(r->name);
    free(r->z);
    free(r->values);
    free(r);
}

static sb_status read_trailer(sb_trace_reader *r) {
    unsigned char digest[32], t[8], want[32];
    SB_TRY(get(r, t, sizeof t, "the trailer"));
    sb_sha256_final(&r->hash, digest);
    if (fread(want, 1, 32, r->fp) != 32) return bad(r, "truncated in the trailer");
    if (get_u64(t) != r->records) return bad(r, "the trailer's record count does not match");
    if (memcmp(want, digest, 32)) return bad(r, "checksum mismatch");
    if (fgetc(r->fp) != EOF) return bad(r, "bytes after the trailer");
    r->finished = true;
    return SB_OK;
}

sb_status sb_trace_reader_next(sb_trace_reader *r, sb_trace_entry *e, bool *done) {
    const char *fn = "sb_trace_reader_next";
    if (!r || !e || !done) return sb_fail(SB_ERR_NULL, "%s: NULL argument", fn);
    *done = false;
    if (r->finished) { *done = true; return SB_OK; }
    r->z_ready = false;
    unsigned char tag;
    SB_TRY(get(r, &tag, 1, "a record tag"));
    if (tag == 'E') {
        SB_TRY(read_trailer(r));
        *done = true;
        return SB_OK;
    }
    if (tag != 'R') return bad(r, "unknown record tag");
    sb_trace_entry x;
    memset(&x, 0, sizeof x);
    unsigned char b[17];
    SB_TRY(get(r, b, 17, "a record"));
    x.step = get_u64(b);
    x.op = get_u64(b + 8);
    size_t len = b[16];
    if (len < 1 || len > NAME_MAX_LEN) return bad(r, "bad op name length");
    SB_TRY(get(r, x.name, len, "an op name"));
    x.name[len] = 0;
    if (!valid_name(x.name)) return bad(r, "op name has unprintable characters");
    SB_TRY(get(r, b, 2, "a record"));
    if (b[0] > SB_I64) return bad(r, "bad dtype");
    if (b[1] > SB_MAX_DIMS) return bad(r, "too many dimensions");
    x.dtype = (sb_dtype)b[0];
    x.ndim = b[1];
    x.numel = 1;
    for (int k = 0; k < x.ndim; k++) {
        SB_TRY(get(r, b, 8, "a shape"));
        uint64_t d = get_u64(b);
        if (d > (uint64_t)1 << 40) return bad(r, "a dimension is implausibly large");
        x.shape[k] = (int64_t)d;
        if (d && x.numel > ((int64_t)1 << 40) / (int64_t)d) return bad(r, "too many elements");
        x.numel *= (int64_t)d;
    }
    SB_TRY(get(r, x.sha256, 32, "a hash"));
    x.has_values = !(r->flags & SB_TRACE_HASHES_ONLY);
    if (x.has_values) {
        SB_TRY(get(r, b, 8, "a value length"));
        uint64_t zlen = get_u64(b);
        uint64_t raw = (uint64_t)x.numel * sb_dtype_size(x.dtype);
        if (zlen < 8 || zlen > raw + raw / 8 + 4096 || raw > zlen * ZLIB_MAX_RATIO)
            return bad(r, "value length does not fit the shape");
        /* Grow as bytes arrive, so a lying length meets EOF before a big
         * allocation. */
        size_t have = 0;
        while (have < zlen) {
            size_t chunk = zlen - have < ((size_t)1 << 20) ? (size_t)(zlen - have) : (size_t)1 << 20;
            unsigned char *nz = realloc(r->z, have + chunk);
            if (!nz) return sb_fail(SB_ERR_NOMEM, "trace '%s': out of memory", r->name);
            r->z = nz;
            SB_TRY(get(r, r->z + have, chunk, "values"));
            have += chunk;
        }
        r->z_len = (size_t)zlen;
        r->z_ready = true;
    }
    r->records++;
    *e = x;
    return SB_OK;
}

sb_status sb_trace_reader_values(sb_trace_reader *r, sb_trace_entry *e) {
    const char *fn = "sb_trace_reader_values";
    if (!r || !e) return sb_fail(SB_ERR_NULL, "%s: NULL argument", fn);
    if (!e->has_values || !r->z_ready)
        return sb_fail(SB_ERR_ARG, "%s: trace '%s' holds no values for this record", fn, r->name);
    size_t es = sb_dtype_size(e->dtype), raw = (size_t)e->numel * es;
    if (raw + 1 > r->values_cap) {
        unsigned char *v = realloc(r->values, raw + 1);
        if (!v) return sb_fail(SB_ERR_NOMEM, "trace '%s': out of memory", r->name);
        r->values = v;
        r->values_cap = raw + 1;
    }
#ifdef SB_NO_ZLIB
    return sb_fail(SB_ERR_UNSUPPORTED, "%s: this build has no zlib (NO_ZLIB=1) to read trace values", fn);
#else
    uLongf got = (uLongf)raw;
    if (uncompress(r->values, &got, r->z, (uLong)r->z_len) != Z_OK || got != raw)
        return bad(r, "values do not decompress to the record's size");
#endif
    /* The values must hash to the record's hash (canonical NaN, as the writer). */
    sb_sha256_ctx c;
    sb_sha256_init(&c);
    for (size_t i = 0; i < raw; i += es) {
        unsigned char v[8];
        memcpy(v, r->values + i, es);
        if (e->dtype == SB_F32) {
            uint32_t u = (uint32_t)v[0] | (uint32_t)v[1] << 8 | (uint32_t)v[2] << 16 | (uint32_t)v[3] << 24;
            if ((u & 0x7fffffffu) > 0x7f800000u) { v[0] = 0; v[1] = 0; v[2] = 0xc0; v[3] = 0x7f; }
        }
        sb_sha256_update(&c, v, es);
    }
    unsigned char d[32];
    sb_sha256_final(&c, d);
    if (memcmp(d, e->sha256, 32)) return bad(r, "values do not match the record's hash");
    e->values = r->values;
    return SB_OK;
}
