/* Tests for op traces (samebits/trace.h: src/io/trace_writer.c, trace_reader.c,
 * fed by the autograd hook of src/autograd/trace_hook.c).
 *
 * 1. A short synthetic training run traced twice gives identical records,
 *    tracing changes no result bit, and the records are the ops in execution
 *    order (forward outputs, then each backward contribution).
 * 2. The one-ulp injection at (step, op) in the middle of the run changes
 *    exactly one bit of that record, leaves every earlier record identical,
 *    and propagates to later records and to the trained model.
 * 3. Values read back are the recorded tensor's exact little-endian bytes.
 * 4. API misuse gives specific errors; an aborted trace leaves no file.
 * 5. The reader refuses every truncation and every single-byte change of a
 *    small trace file (untrusted input): never a crash, never a clean read.
 * 6. Resource limits: a record whose values inflate (128 MiB of zeros from
 *    a file of ~130 KB) is refused before its values are allocated, unless
 *    the reader's limit is raised; a FIFO is refused without blocking.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "harness.h"
#include "samebits/trace.h"
#include "samebits/train.h"

static char dir[64];

static void path_in(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", dir, name); }

/* A tiny MLP trained for `steps` Adam steps on Philox data; returns its hash. */
static void train(int steps, unsigned char digest[32]) {
    sb_module *layers[3] = {0}, *model = NULL;
    sb_optimizer *opt = NULL;
    sb_graph *g = NULL;
    CHECK_OK(sb_nn_linear(&layers[0], 6, 5, true));
    CHECK_OK(sb_nn_tanh(&layers[1]));
    CHECK_OK(sb_nn_linear(&layers[2], 5, 3, true));
    CHECK_OK(sb_nn_sequential(&model, layers, 3));
    CHECK_OK(sb_module_init(model, 42));
    sb_adam_config cfg = sb_adam_default_config(0.05);
    CHECK_OK(sb_optimizer_adam(&opt, model, &cfg));
    CHECK_OK(sb_graph_new(&g));
    for (int s = 0; s < steps; s++) {
        sb_graph_reset(g);
        CHECK_OK(sb_trace_step((uint64_t)s));
        sb_tensor *x, *y;
        int64_t xs[2] = {4, 6}, ys[1] = {4};
        CHECK_OK(sb_tensor_new_in(&x, sb_graph_arena(g), SB_F32, 2, xs));
        CHECK_OK(sb_tensor_new_in(&y, sb_graph_arena(g), SB_I64, 1, ys));
        sb_rng rng = sb_rng_make(7, (uint64_t)s);
        CHECK_OK(sb_rng_normal(&rng, 0, 0.0f, 1.0f, x->data, 24));
        for (int i = 0; i < 4; i++) ((int64_t *)y->data)[i] = sb_rng_bounded_at(7, 99, (uint64_t)(4 * s + i), 3);
        sb_variable *in, *logits, *loss;
        CHECK_OK(sb_graph_input(g, x, &in));
        CHECK_OK(sb_module_forward(model, g, in, &logits));
        CHECK_OK(sb_ag_cross_entropy(g, logits, y, SB_LOSS_MEAN, 0.0f, &loss));
        CHECK_OK(sb_graph_backward(g, loss));
        CHECK_OK(sb_optimizer_step(opt));
    }
    CHECK_OK(sb_module_hash(model, digest));
    sb_graph_free(g);
    sb_optimizer_free(opt);
    sb_module_free(model);
}

typedef struct { uint64_t step, op; char name[64]; unsigned char sha[32]; int64_t numel; unsigned char *values; } rec;

/* All records of a trace (values copied when present); returns the count. */
static int read_all(const char *path, rec *out, int cap) {
    sb_trace_reader *r;
    CHECK_OK(sb_trace_reader_open_path(&r, path));
    if (!r) return 0;
    int n = 0;
    for (;;) {
        sb_trace_entry e;
        bool done;
        sb_status s = sb_trace_reader_next(r, &e, &done);
        CHECK(s == SB_OK, "reading %s: %s", path, sb_last_error());
        if (s != SB_OK || done || n == cap) break;
        rec *x = &out[n++];
        x->step = e.step;
        x->op = e.op;
        snprintf(x->name, sizeof x->name, "%s", e.name);
        memcpy(x->sha, e.sha256, 32);
        x->numel = e.numel;
        x->values = NULL;
        if (e.has_values) {
            CHECK_OK(sb_trace_reader_values(r, &e));
            size_t bytes = (size_t)e.numel * sb_dtype_size(e.dtype);
            x->values = malloc(bytes ? bytes : 1);
            if (e.values) memcpy(x->values, e.values, bytes);
        }
    }
    sb_trace_reader_free(r);
    return n;
}

static void free_all(rec *r, int n) {
    for (int i = 0; i < n; i++) free(r[i].values);
}

#define MAX_REC 512

static void test_runs(void) {
    char a[96], b[96], c[96];
    path_in(a, sizeof a, "a.trace");
    path_in(b, sizeof b, "b.trace");
    path_in(c, sizeof c, "c.trace");
    unsigned char plain[32], da[32], db[32], dc[32];
    train(4, plain);
    CHECK_OK(sb_trace_open(a, 0));
    CHECK(sb_trace_active(), "trace not active after open");
    train(4, da);
    CHECK_OK(sb_trace_close());
    CHECK(!sb_trace_active(), "trace still active after close");
    CHECK_OK(sb_trace_open(b, 0));
    train(4, db);
    CHECK_OK(sb_trace_close());
    CHECK(!memcmp(plain, da, 32) && !memcmp(da, db, 32), "tracing changed the trained model");

    static rec ra[MAX_REC], rb[MAX_REC], rc[MAX_REC];
    int na = read_all(a, ra, MAX_REC), nb = read_all(b, rb, MAX_REC);
    /* per step: linear, tanh, linear, cross_entropy forward; backward:
     * cross_entropy.d_in0, linear.d_in0/1/2, tanh.d_in0, linear.d_in1/2 (the
     * first linear's input needs no gradient) */
    static const char *const order[] = {"linear", "tanh", "linear", "cross_entropy", "cross_entropy.d_in0",
                                        "linear.d_in0", "linear.d_in1", "linear.d_in2", "tanh.d_in0",
                                        "linear.d_in1", "linear.d_in2"};
    CHECK(na == 44 && nb == 44, "records: %d and %d, want 44", na, nb);
    for (int i = 0; i < na && i < nb; i++) {
        CHECK(ra[i].step == (uint64_t)(i / 11) && ra[i].op == (uint64_t)(i % 11) && !strcmp(ra[i].name, order[i % 11]),
              "record %d is step %" PRIu64 " op %" PRIu64 " %s", i, ra[i].step, ra[i].op, ra[i].name);
        CHECK(!memcmp(ra[i].sha, rb[i].sha, 32), "record %d differs between identical runs", i);
    }

    /* one ulp at step 2, op 1 (the tanh output) */
    sb_trace_inject_ulp(2, 1);
    CHECK_OK(sb_trace_open(c, 0));
    train(4, dc);
    CHECK_OK(sb_trace_close());
    CHECK(memcmp(dc, da, 32), "the injected change did not reach the model");
    int nc = read_all(c, rc, MAX_REC);
    CHECK(nc == na, "injected run has %d records, want %d", nc, na);
    int first = -1;
    for (int i = 0; i < na && i < nc; i++)
        if (memcmp(ra[i].sha, rc[i].sha, 32)) { first = i; break; }
    CHECK(first == 2 * 11 + 1, "first differing record %d, want %d", first, 2 * 11 + 1);
    if (first == 23 && ra[first].values && rc[first].values) {
        int64_t n = ra[first].numel, diffs = 0, at = -1;
        for (int64_t i = 0; i < 4 * n; i++)
            if (ra[first].values[i] != rc[first].values[i]) { diffs++; at = i; }
        CHECK(diffs == 1 && at == 4 * (n / 2) && (ra[first].values[at] ^ rc[first].values[at]) == 1,
              "injection changed %" PRId64 " bytes, last at %" PRId64, diffs, at);
    }
    CHECK(nc > 24 && memcmp(ra[24].sha, rc[24].sha, 32), "the change did not propagate to the next op");
    int later = 0;
    for (int i = 33; i < na && i < nc; i++) later += memcmp(ra[i].sha, rc[i].sha, 32) != 0;
    CHECK(later > 0, "the change did not reach the next step");
    /* the injection is one-shot per trace: a new trace is clean again */
    CHECK_OK(sb_trace_open(c, 0));
    train(4, dc);
    CHECK_OK(sb_trace_close());
    CHECK(!memcmp(dc, da, 32), "injection stayed armed after close");
    free_all(ra, na);
    free_all(rb, nb);
    free_all(rc, nc);
}

static void test_values_and_api(void) {
    char p[96];
    path_in(p, sizeof p, "v.trace");
    sb_tensor *t, *big;
    int64_t shape[2] = {3, 5};
    CHECK_OK(sb_tensor_new(&t, SB_F32, 2, shape));
    float *x = t->data;
    const uint32_t specials[] = {0x80000000u, 0x00000001u, 0x7f800000u, 0x7fc00123u, 0x3f800001u};
    for (int i = 0; i < 15; i++) {
        uint32_t u = i < 5 ? specials[i] : 0x40000000u + (uint32_t)i * 77777u;
        memcpy(&x[i], &u, 4);
    }
    /* a transposed view: recorded in logical (row-major) order */
    sb_tensor *tt;
    CHECK_OK(sb_tensor_transpose(&tt, t, 0, 1));
    int64_t bs[1] = {100000};
    CHECK_OK(sb_tensor_new(&big, SB_I64, 1, bs));
    for (int64_t i = 0; i < bs[0]; i++) ((int64_t *)big->data)[i] = i * 1000003 - 7;

    CHECK_OK(sb_trace_record("ignored-when-closed", t)); /* no trace: a no-op */
    CHECK_OK(sb_trace_open(p, 0));
    CHECK_ERROR(sb_trace_open(p, 0), SB_ERR_ARG, "already open");
    CHECK_OK(sb_trace_step(5));
    CHECK_OK(sb_trace_record("my.tensor", t));
    CHECK_OK(sb_trace_record("my.transposed", tt));
    CHECK_OK(sb_trace_record("my.indices", big));
    sb_tensor *empty;
    int64_t es[2] = {0, 3};
    CHECK_OK(sb_tensor_new(&empty, SB_F32, 2, es));
    CHECK_OK(sb_trace_record("my.empty", empty));
    sb_tensor_free(empty);
    CHECK_ERROR(sb_trace_record("has space", t), SB_ERR_ARG, "printable");
    CHECK_ERROR(sb_trace_record("", t), SB_ERR_ARG, "sb_trace_record");
    CHECK_ERROR(sb_trace_record("a123456789012345678901234567890123456789012345678901234567890123", t), SB_ERR_ARG,
                "1..63");
    CHECK_ERROR(sb_trace_record(NULL, t), SB_ERR_NULL, "name");
    CHECK_ERROR(sb_trace_record("x", NULL), SB_ERR_NULL, "sb_trace_record");
    CHECK_OK(sb_trace_close());
    CHECK_ERROR(sb_trace_close(), SB_ERR_ARG, "no trace is open");

    static rec r[8];
    int n = read_all(p, r, 8);
    CHECK(n == 4, "%d records, want 4", n);
    CHECK(n == 4 && r[3].numel == 0 && !strcmp(r[3].name, "my.empty"), "the empty tensor's record");
    if (n == 4) {
        CHECK(r[0].step == 5 && r[0].op == 0 && !strcmp(r[0].name, "my.tensor"), "record 0 header");
        CHECK(r[2].op == 2 && r[2].numel == 100000, "record 2 header");
        bool same = true, same_t = true, same_big = true;
        for (int i = 0; i < 15; i++) {
            uint32_t u, v = 0, w = 0;
            memcpy(&u, &x[i], 4);
            for (int k = 3; k >= 0; k--) v = v << 8 | r[0].values[4 * i + k];
            int row = i / 3, col = i % 3; /* tt is (5, 3): element (row, col) = x[col][row] */
            memcpy(&u, &x[col * 5 + row], 4);
            for (int k = 3; k >= 0; k--) w = w << 8 | r[1].values[4 * i + k];
            same_t = same_t && w == u;
            memcpy(&u, &x[i], 4);
            same = same && v == u;
        }
        for (int64_t i = 0; i < 100000; i++) {
            uint64_t v = 0;
            for (int k = 7; k >= 0; k--) v = v << 8 | r[2].values[8 * i + k];
            same_big = same_big && (int64_t)v == ((int64_t *)big->data)[i];
        }
        CHECK(same, "values are not the tensor's bytes (NaN payloads included)");
        CHECK(same_t, "a strided tensor was not recorded in logical order");
        CHECK(same_big, "int64 values differ");
        unsigned char d[32];
        const sb_tensor *list[1] = {t};
        sb_hash_tensors(list, 1, d);
        CHECK(!memcmp(d, r[0].sha, 32), "record hash is not sb_hash_tensors");
    }
    free_all(r, n);

    /* hashes only: no values to read */
    CHECK_OK(sb_trace_open(p, SB_TRACE_HASHES_ONLY));
    CHECK_OK(sb_trace_record("h", t));
    CHECK_OK(sb_trace_close());
    sb_trace_reader *rd;
    CHECK_OK(sb_trace_reader_open_path(&rd, p));
    sb_trace_entry e;
    bool done;
    CHECK_OK(sb_trace_reader_next(rd, &e, &done));
    CHECK(!done && !e.has_values, "hashes-only record has values");
    CHECK_ERROR(sb_trace_reader_values(rd, &e), SB_ERR_ARG, "no values");
    CHECK_OK(sb_trace_reader_next(rd, &e, &done));
    CHECK(done, "hashes-only trace has a second record");
    sb_trace_reader_free(rd);

    /* misuse */
    CHECK_ERROR(sb_trace_open(NULL, 0), SB_ERR_NULL, "path");
    CHECK_ERROR(sb_trace_open(p, 8), SB_ERR_ARG, "flags");
    char missing[128];
    path_in(missing, sizeof missing, "no/such/dir/t.trace");
    CHECK_ERROR(sb_trace_open(missing, 0), SB_ERR_IO, "no/such/dir");
    setenv("SB_TRACE_INJECT", "3", 1);
    CHECK_ERROR(sb_trace_open(p, 0), SB_ERR_ARG, "SB_TRACE_INJECT");
    unsetenv("SB_TRACE_INJECT");
    CHECK(!sb_trace_active(), "a refused open left a trace active");
    CHECK_ERROR(sb_trace_reader_open_path(&rd, missing), SB_ERR_IO, "no/such/dir");
    CHECK(rd == NULL, "reader set on failure");

    /* abort: no file */
    char ab[96];
    path_in(ab, sizeof ab, "aborted.trace");
    CHECK_OK(sb_trace_open(ab, 0));
    CHECK_OK(sb_trace_record("x", t));
    sb_trace_abort();
    CHECK(access(ab, F_OK) != 0, "an aborted trace left a file");
    CHECK(!sb_trace_active(), "abort left the trace active");
    sb_tensor_free(tt);
    sb_tensor_free(t);
    sb_tensor_free(big);
}

/* Reads a whole buffer as a trace, values included; SB_OK only if clean. */
static sb_status parse(const unsigned char *buf, size_t len) {
    FILE *f = fmemopen((void *)buf, len ? len : 1, "rb");
    if (!f) return SB_ERR_IO;
    if (!len) { fclose(f); f = fopen("/dev/null", "rb"); }
    sb_trace_reader *r;
    sb_status s = sb_trace_reader_open(&r, f, "fuzz");
    if (s == SB_OK) {
        for (;;) {
            sb_trace_entry e;
            bool done;
            s = sb_trace_reader_next(r, &e, &done);
            if (s != SB_OK || done) break;
            if (e.has_values && (s = sb_trace_reader_values(r, &e)) != SB_OK) break;
        }
        sb_trace_reader_free(r);
    }
    fclose(f);
    return s;
}

static void test_damage(void) {
    char p[96];
    path_in(p, sizeof p, "small.trace");
    int64_t shape[1] = {6};
    sb_tensor *t;
    CHECK_OK(sb_tensor_new(&t, SB_F32, 1, shape));
    for (int i = 0; i < 6; i++) ((float *)t->data)[i] = (float)i * 0.3f - 1.0f;
    CHECK_OK(sb_trace_open(p, 0));
    CHECK_OK(sb_trace_record("one", t));
    CHECK_OK(sb_trace_step(1));
    CHECK_OK(sb_trace_record("two", t));
    CHECK_OK(sb_trace_close());
    sb_tensor_free(t);
    FILE *f = fopen(p, "rb");
    unsigned char buf[4096];
    size_t len = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    CHECK(len > 100 && len < sizeof buf, "small trace is %zu bytes", len);
    CHECK(parse(buf, len) == SB_OK, "the intact trace does not parse: %s", sb_last_error());
    int clean_truncations = 0, clean_flips = 0;
    for (size_t cut = 0; cut < len; cut++)
        if (parse(buf, cut) == SB_OK) clean_truncations++;
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit += sb_test_quick() ? 7 : 1) {
            buf[i] ^= (unsigned char)(1u << bit);
            if (parse(buf, len) == SB_OK) clean_flips++;
            buf[i] ^= (unsigned char)(1u << bit);
        }
    }
    CHECK(clean_truncations == 0, "%d truncations read cleanly", clean_truncations);
    CHECK(clean_flips == 0, "%d bit flips read cleanly", clean_flips);
    unsigned char extra[4097];
    memcpy(extra, buf, len);
    extra[len] = 0;
    CHECK(parse(extra, len + 1) == SB_ERR_FORMAT, "trailing bytes accepted");
    sb_clear_error();
    CHECK(parse((const unsigned char *)"SBTRACE1\1\0\0\0\0\0\0\0", 16) == SB_ERR_FORMAT &&
              strstr(sb_last_error(), "truncated"), "header-only trace: %s", sb_last_error());
}

static void put_le(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* A trace whose first record is float32 [n] of zeros, deflated at level 9:
 * the file is about n*4/1032 bytes. The record's hash is left zero (wrong),
 * so only a reader that inflates the values can notice. */
static bool write_inflating_trace(const char *path, int64_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    unsigned char head[16] = "SBTRACE1\1\0\0\0\0\0\0\0", rec[1 + 8 + 8 + 1 + 3 + 2 + 8 + 32];
    fwrite(head, 1, 16, f);
    unsigned char *p = rec;
    *p++ = 'R';
    put_le(p, 0); p += 8;
    put_le(p, 0); p += 8;
    *p++ = 3;
    memcpy(p, "big", 3); p += 3;
    *p++ = SB_F32;
    *p++ = 1;
    put_le(p, (uint64_t)n); p += 8;
    memset(p, 0, 32);
    fwrite(rec, 1, sizeof rec, f);
    /* deflate the zeros a chunk at a time, then write zlen and the stream */
    size_t cap = (size_t)n * 4 / 1000 + 4096, zlen = 0;
    unsigned char *z = malloc(cap), *zeros = calloc(1, (size_t)1 << 20);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    bool ok = z && zeros && deflateInit(&zs, 9) == Z_OK;
    zs.next_out = z;
    zs.avail_out = (uInt)cap;
    for (int64_t left = n * 4; ok && left >= 0; left -= (int64_t)1 << 20) {
        zs.next_in = zeros;
        zs.avail_in = (uInt)(left < ((int64_t)1 << 20) ? left : ((int64_t)1 << 20));
        int rc = deflate(&zs, left <= ((int64_t)1 << 20) ? Z_FINISH : Z_NO_FLUSH);
        ok = rc == Z_OK || rc == Z_STREAM_END;
        if (rc == Z_STREAM_END) break;
    }
    zlen = cap - zs.avail_out;
    deflateEnd(&zs);
    unsigned char zl[8];
    put_le(zl, zlen);
    if (ok) { fwrite(zl, 1, 8, f); fwrite(z, 1, zlen, f); }
    free(z);
    free(zeros);
    return fclose(f) == 0 && ok;
}

static void test_limits(void) {
    char p[96];
    path_in(p, sizeof p, "inflating.trace");
    int64_t n = (int64_t)1 << 25; /* 128 MiB of float32 zeros */
    CHECK(write_inflating_trace(p, n), "cannot write %s", p);
    struct stat st;
    CHECK(stat(p, &st) == 0 && st.st_size < 200000, "the crafted trace is %lld bytes", (long long)st.st_size);
    sb_trace_reader *r;
    sb_trace_entry e;
    bool done;
    /* the default limit refuses the record before reading its values */
    CHECK_OK(sb_trace_reader_open_path(&r, p));
    CHECK_ERROR(sb_trace_reader_next(r, &e, &done), SB_ERR_RANGE, "limit of 67108864");
    CHECK(strstr(sb_last_error(), "134217728 bytes") != NULL, "message: %s", sb_last_error());
    sb_trace_reader_free(r);
    /* raised, the record is read; its (wrong) hash is what stops it */
    CHECK_OK(sb_trace_reader_open_path(&r, p));
    CHECK_ERROR(sb_trace_reader_set_max_values(r, 0), SB_ERR_ARG, "max_bytes");
    CHECK_ERROR(sb_trace_reader_set_max_values(NULL, 1), SB_ERR_NULL, "r is NULL");
    CHECK_OK(sb_trace_reader_set_max_values(r, (uint64_t)256 << 20));
    CHECK_OK(sb_trace_reader_next(r, &e, &done));
    CHECK(!done && e.numel == n, "the record under a raised limit");
    CHECK_ERROR(sb_trace_reader_values(r, &e), SB_ERR_FORMAT, "hash");
    sb_trace_reader_free(r);
    /* a FIFO is refused without blocking (no writer ever opens it) */
    path_in(p, sizeof p, "fifo");
    CHECK(mkfifo(p, 0600) == 0, "mkfifo: %s", strerror(errno));
    r = NULL;
    CHECK_ERROR(sb_trace_reader_open_path(&r, p), SB_ERR_IO, "a FIFO (named pipe), not a regular file");
    CHECK(r == NULL, "nothing returned for a FIFO");
    CHECK_ERROR(sb_trace_reader_open_path(&r, dir), SB_ERR_IO, "a directory");
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    snprintf(dir, sizeof dir, "/tmp/sb_test_trace_%ld", (long)getpid());
    char cmd[128];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    if (system(cmd) != 0) { fprintf(stderr, "cannot make %s\n", dir); return 1; }
    test_runs();
    test_values_and_api();
    test_damage();
    test_limits();
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return sb_test_finish();
}
