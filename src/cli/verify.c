/* `samebits verify`: a self-check a user runs on a new machine.
 *
 * It replays the committed op test vectors (tests/vectors/ops.txt, embedded
 * in the binary as src/cli/verify_vectors.c) through the public ops at this
 * machine's default instruction set and thread count, compares the SHA-256
 * of every output with the expectation, and prints one PASS/FAIL line per
 * output and a verdict. Each vector line names an op, a Philox seed and the
 * op's shapes/parameters; the inputs are generated from the seed, so the
 * file holds no data, only hashes (format: docs/VERIFY-AND-TRACE.md).
 *
 * The expectations come from the reference path: `samebits verify
 * --generate` runs the same cases with the scalar (reference) kernels on one
 * thread and prints the file. The contract says every instruction set and
 * thread count gives the same bits, so a mismatch here is a bug (or a
 * broken toolchain/CPU) on this machine.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "core/internal.h"
#include "io/io_internal.h"
#include "samebits.h"
#include "samebits/train.h"

extern const char sb_verify_vectors_text[];

#define MAX_OUT 8
#define MAX_PARAMS 300
#define MAX_ELEMS ((int64_t)1 << 24) /* per tensor: a hostile vector file cannot exhaust memory */
/* Default of --max-memory: the tensor bytes one vector may allocate. The
 * built-in vectors need under 2 MiB (docs/VERIFY-AND-TRACE.md). */
#define DEFAULT_MAX_MIB 256

typedef struct {
    char op[32];
    uint64_t seed;
    bool quick;
    int lineno; /* in the vector file, for messages */
    char params[MAX_PARAMS];
    int n_out;
    char out_name[MAX_OUT][32];
    unsigned char out_hash[MAX_OUT][32];
} vcase;

typedef struct {
    const vcase *c;
    sb_arena *arena;
    const char *data_dir;
    bool skipped;
    char skip_why[160];
    /* A vector the file may not contain (malformed parameters, or more
     * memory than --max-memory): the file is refused, exit status 2. */
    bool refused;
    size_t bytes_used, max_bytes;
    int n_out;
    char out_name[MAX_OUT][32];
    unsigned char out_hash[MAX_OUT][32];
} run_ctx;

typedef struct { int nd; int64_t d[SB_MAX_DIMS]; } shp;

/* ---- parameters ------------------------------------------------------------
 * params is "key=value,key=value"; values are integers, decimals or shapes
 * written AxBxC. */
static const char *param_raw(const run_ctx *r, const char *key) {
    size_t kl = strlen(key);
    for (const char *p = r->c->params; *p;) {
        if (!strncmp(p, key, kl) && p[kl] == '=') return p + kl + 1;
        p = strchr(p, ',');
        if (!p) break;
        p++;
    }
    return NULL;
}

static sb_status bad_param(run_ctx *r, const char *key) {
    r->refused = true;
    return sb_fail(SB_ERR_ARG, "vector '%s %s': parameter '%s' is missing or malformed", r->c->op,
                   r->c->params, key);
}

static sb_status pint(run_ctx *r, const char *key, int64_t dflt, int64_t *out) {
    const char *v = param_raw(r, key);
    if (!v) { *out = dflt; return SB_OK; }
    char *end;
    long long x = strtoll(v, &end, 10);
    if (end == v || (*end && *end != ',') || x < -(1LL << 62) || x > (1LL << 62)) return bad_param(r, key);
    *out = x;
    return SB_OK;
}

static sb_status pflt(run_ctx *r, const char *key, float dflt, float *out) {
    const char *v = param_raw(r, key);
    if (!v) { *out = dflt; return SB_OK; }
    char *end;
    /* strtof reads decimal strings correctly rounded on every C library we
     * support; parameters are short decimals anyway. */
    float x = strtof(v, &end);
    if (end == v || (*end && *end != ',')) return bad_param(r, key);
    *out = x;
    return SB_OK;
}

static sb_status pshape(run_ctx *r, const char *key, shp *s) {
    const char *v = param_raw(r, key);
    if (!v) return bad_param(r, key);
    s->nd = 0;
    if (!strncmp(v, "scalar", 6)) return SB_OK;
    int64_t numel = 1;
    for (;;) {
        char *end;
        long long x = strtoll(v, &end, 10);
        if (end == v || x < 0 || x > MAX_ELEMS || s->nd == SB_MAX_DIMS) return bad_param(r, key);
        s->d[s->nd++] = x;
        numel *= x ? x : 1;
        if (numel > MAX_ELEMS) return bad_param(r, key);
        if (*end != 'x') {
            if (*end && *end != ',') return bad_param(r, key);
            return SB_OK;
        }
        v = end + 1;
    }
}

/* ---- inputs ------------------------------------------------------------------
 * Element i of an input made with stream s is sb_rng_normal_at(seed, s, i)
 * times `scale`; with adv = A > 0, an element whose bounded draw (stream
 * s ^ ADV) is 0 (probability 1/A) is replaced by one of the adversarial
 * values below (±0, subnormals, infinities, NaN, huge values whose sums
 * cancel). */
#define ADV_STREAM UINT64_C(0x4144560000000000)
static const uint32_t adversarial[] = {
    0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x007fffffu, 0x807fffffu, 0x00800000u,
    0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f7fffffu, 0xff7fffffu, 0x60ad78ecu, 0xe0ad78ecu,
    0x3f800001u, 0x477fe000u,
};
#define N_ADV (sizeof adversarial / sizeof adversarial[0])

static float f32_from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* True when the product of the n factors (each >= 0) is at most limit;
 * checked at every step, so no hostile factor can wrap around. */
static bool product_within(int64_t limit, int n, const int64_t *f) {
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        if (f[i] < 0 || __builtin_mul_overflow(p, f[i], &p) || p > limit) return false;
    return true;
}

/* Every tensor of a vector is made here: its size is checked against the
 * per-tensor bound and the vector's memory budget before anything is
 * allocated. */
static sb_status alloc_tensor(run_ctx *r, sb_tensor **t, sb_dtype dt, int nd, const int64_t *dims) {
    if (!product_within(MAX_ELEMS, nd, dims)) {
        r->refused = true;
        return sb_fail(SB_ERR_RANGE, "vector '%s %s': a tensor of more than %lld elements", r->c->op,
                       r->c->params, (long long)MAX_ELEMS);
    }
    int64_t numel = 1;
    for (int i = 0; i < nd; i++) numel *= dims[i];
    size_t bytes = (size_t)numel * sb_dtype_size(dt);
    if (bytes > r->max_bytes - r->bytes_used) {
        r->refused = true;
        return sb_fail(SB_ERR_RANGE, "vector '%s %s': needs more than --max-memory %zu MiB of tensors",
                       r->c->op, r->c->params, r->max_bytes >> 20);
    }
    SB_TRY(sb_tensor_new_in(t, r->arena, dt, nd, dims));
    r->bytes_used += bytes;
    return SB_OK;
}

static sb_status tnew(run_ctx *r, sb_tensor **t, sb_dtype dt, const shp *s) {
    return alloc_tensor(r, t, dt, s->nd, s->d);
}

static sb_status input(run_ctx *r, sb_tensor **t, const shp *s, uint64_t stream) {
    SB_TRY(tnew(r, t, SB_F32, s));
    int64_t adv;
    float scale, shift;
    SB_TRY(pint(r, "adv", 0, &adv));
    SB_TRY(pflt(r, "scale", 1.0f, &scale));
    SB_TRY(pflt(r, "shift", 0.0f, &shift));
    if (adv < 0 || adv > 0xffffffffLL) return bad_param(r, "adv");
    float *x = (*t)->data;
    int64_t n = sb_tensor_numel(*t);
    for (int64_t i = 0; i < n; i++) {
        x[i] = sb_rng_normal_at(r->c->seed, stream, (uint64_t)i) * scale + shift;
        if (adv && sb_rng_bounded_at(r->c->seed, stream ^ ADV_STREAM, (uint64_t)i, (uint32_t)adv) == 0)
            x[i] = f32_from_bits(adversarial[sb_rng_bounded_at(r->c->seed, stream ^ ADV_STREAM, (uint64_t)i + n,
                                                               (uint32_t)N_ADV)]);
    }
    return SB_OK;
}

static sb_status zeros_like(run_ctx *r, sb_tensor **t, const sb_tensor *like) {
    return alloc_tensor(r, t, like->dtype, like->ndim, like->shape);
}

/* Class labels (N) in [0, classes); with ignore = I >= 0, every 5th label is I. */
static sb_status labels(run_ctx *r, sb_tensor **t, int64_t n, int64_t classes, int64_t ignore, uint64_t stream) {
    shp s = {1, {n}};
    SB_TRY(tnew(r, t, SB_I64, &s));
    int64_t *y = (*t)->data;
    for (int64_t i = 0; i < n; i++)
        y[i] = ignore >= 0 && i % 5 == 3 ? ignore
                                         : (int64_t)sb_rng_bounded_at(r->c->seed, stream, (uint64_t)i, (uint32_t)classes);
    return SB_OK;
}

static sb_status out(run_ctx *r, const char *name, const sb_tensor *t) {
    if (r->n_out == MAX_OUT) return sb_fail(SB_ERR_INTERNAL, "verify: too many outputs");
    snprintf(r->out_name[r->n_out], 32, "%s", name);
    const sb_tensor *list[1] = {t};
    SB_TRY(sb_hash_tensors(list, 1, r->out_hash[r->n_out]));
    r->n_out++;
    return SB_OK;
}

static sb_status out_digest(run_ctx *r, const char *name, const unsigned char d[32]) {
    if (r->n_out == MAX_OUT) return sb_fail(SB_ERR_INTERNAL, "verify: too many outputs");
    snprintf(r->out_name[r->n_out], 32, "%s", name);
    memcpy(r->out_hash[r->n_out], d, 32);
    r->n_out++;
    return SB_OK;
}

/* ---- the op runners ------------------------------------------------------------ */

static sb_status run_matmul(run_ctx *r) {
    shp sa, sb;
    int64_t ta, tb;
    SB_TRY(pshape(r, "a", &sa));
    SB_TRY(pshape(r, "b", &sb));
    SB_TRY(pint(r, "ta", 0, &ta));
    SB_TRY(pint(r, "tb", 0, &tb));
    if (sa.nd < 2 || sb.nd < 2) return bad_param(r, "a/b");
    sb_tensor *a, *b, *y, *dy, *da, *db;
    SB_TRY(input(r, &a, &sa, 1));
    SB_TRY(input(r, &b, &sb, 2));
    int64_t m = ta ? sa.d[sa.nd - 1] : sa.d[sa.nd - 2], n = tb ? sb.d[sb.nd - 2] : sb.d[sb.nd - 1];
    shp so = sa.nd == 3 ? sa : sb;
    so.d[so.nd - 2] = m;
    so.d[so.nd - 1] = n;
    SB_TRY(tnew(r, &y, SB_F32, &so));
    SB_TRY(sb_matmul(a, b, ta, tb, y));
    SB_TRY(out(r, "forward", y));
    SB_TRY(input(r, &dy, &so, 3));
    SB_TRY(zeros_like(r, &da, a));
    SB_TRY(zeros_like(r, &db, b));
    SB_TRY(sb_matmul_backward(dy, a, b, ta, tb, da, db));
    SB_TRY(out(r, "backward_a", da));
    return out(r, "backward_b", db);
}

/* The raw-buffer GEMM with row strides wider than the matrices. */
static sb_status run_sgemm(run_ctx *r) {
    int64_t m, n, k, ta, tb, pad;
    SB_TRY(pint(r, "m", 1, &m));
    SB_TRY(pint(r, "n", 1, &n));
    SB_TRY(pint(r, "k", 1, &k));
    SB_TRY(pint(r, "ta", 0, &ta));
    SB_TRY(pint(r, "tb", 0, &tb));
    SB_TRY(pint(r, "pad", 0, &pad));
    if (m < 1 || n < 1 || k < 1 || pad < 0 || pad > 1024 || !product_within(MAX_ELEMS / 4, 2, (int64_t[]){m, k}) ||
        !product_within(MAX_ELEMS / 4, 2, (int64_t[]){k, n}) || !product_within(MAX_ELEMS / 4, 2, (int64_t[]){m, n}))
        return bad_param(r, "m/n/k/pad");
    int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    int64_t lda = ac + pad, ldb = bc + pad, ldc = n + pad;
    shp s_a = {1, {ar * lda}}, s_b = {1, {br * ldb}}, s_c = {2, {m, ldc}};
    sb_tensor *a, *b, *c;
    SB_TRY(input(r, &a, &s_a, 1));
    SB_TRY(input(r, &b, &s_b, 2));
    SB_TRY(tnew(r, &c, SB_F32, &s_c));
    if (sb_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, a->data, lda, b->data, ldb, c->data, ldc) != SB_OK)
        return sb_fail(SB_ERR_INTERNAL, "sb_sgemm failed: %s", sb_last_error());
    return out(r, "forward", c);
}

static sb_status run_linear(run_ctx *r) {
    shp sx, sw;
    int64_t bias;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pshape(r, "w", &sw));
    SB_TRY(pint(r, "bias", 1, &bias));
    if (sx.nd < 1 || sw.nd != 2) return bad_param(r, "x/w");
    shp sb_ = {1, {sw.d[0]}}, sy = sx;
    sy.d[sy.nd - 1] = sw.d[0];
    sb_tensor *x, *w, *b = NULL, *y, *dy, *dx, *dw, *db;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(input(r, &w, &sw, 2));
    if (bias) SB_TRY(input(r, &b, &sb_, 3));
    SB_TRY(tnew(r, &y, SB_F32, &sy));
    SB_TRY(sb_linear_forward(x, w, b, y));
    SB_TRY(out(r, "forward", y));
    SB_TRY(input(r, &dy, &sy, 4));
    SB_TRY(zeros_like(r, &dx, x));
    SB_TRY(zeros_like(r, &dw, w));
    SB_TRY(tnew(r, &db, SB_F32, &sb_));
    SB_TRY(sb_linear_backward(dy, x, w, dx, dw, db));
    SB_TRY(out(r, "backward_x", dx));
    SB_TRY(out(r, "backward_w", dw));
    return out(r, "backward_b", db);
}

static sb_status pair(run_ctx *r, const char *key, int64_t dflt, int64_t *h, int64_t *w) {
    if (!param_raw(r, key)) { *h = *w = dflt; return SB_OK; }
    shp s;
    SB_TRY(pshape(r, key, &s));
    if (s.nd != 2) return bad_param(r, key);
    *h = s.d[0];
    *w = s.d[1];
    return SB_OK;
}

static sb_status run_conv2d(run_ctx *r) {
    shp sx, sw;
    sb_conv2d_params p;
    int64_t bias;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pshape(r, "w", &sw));
    SB_TRY(pair(r, "stride", 1, &p.stride_h, &p.stride_w));
    SB_TRY(pair(r, "pad", 0, &p.pad_h, &p.pad_w));
    SB_TRY(pair(r, "dil", 1, &p.dilation_h, &p.dilation_w));
    SB_TRY(pint(r, "groups", 1, &p.groups));
    SB_TRY(pint(r, "bias", 1, &bias));
    if (sx.nd != 4 || sw.nd != 4) return bad_param(r, "x/w");
    shp sy = {4, {sx.d[0], sw.d[0], 0, 0}}, sbias = {1, {sw.d[0]}};
    SB_TRY(sb_conv2d_output_size(sx.d[2], sx.d[3], sw.d[2], sw.d[3], &p, &sy.d[2], &sy.d[3]));
    sb_tensor *x, *w, *b = NULL, *y, *dy, *dx, *dw, *db;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(input(r, &w, &sw, 2));
    if (bias) SB_TRY(input(r, &b, &sbias, 3));
    SB_TRY(tnew(r, &y, SB_F32, &sy));
    SB_TRY(sb_conv2d_forward(x, w, b, &p, y));
    SB_TRY(out(r, "forward", y));
    SB_TRY(input(r, &dy, &sy, 4));
    SB_TRY(zeros_like(r, &dx, x));
    SB_TRY(zeros_like(r, &dw, w));
    SB_TRY(tnew(r, &db, SB_F32, &sbias));
    SB_TRY(sb_conv2d_backward(dy, x, w, &p, dx, dw, db));
    SB_TRY(out(r, "backward_input", dx));
    SB_TRY(out(r, "backward_weight", dw));
    return out(r, "backward_bias", db);
}

static sb_status run_pool(run_ctx *r, bool is_max) {
    shp sx;
    sb_pool2d_params p;
    int64_t ceil_mode, cip;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pair(r, "kernel", 2, &p.kernel_h, &p.kernel_w));
    SB_TRY(pair(r, "stride", 0, &p.stride_h, &p.stride_w));
    SB_TRY(pair(r, "pad", 0, &p.pad_h, &p.pad_w));
    SB_TRY(pint(r, "ceil", 0, &ceil_mode));
    SB_TRY(pint(r, "cip", 1, &cip));
    p.ceil_mode = ceil_mode != 0;
    p.count_include_pad = cip != 0;
    if (sx.nd != 4) return bad_param(r, "x");
    shp sy = {4, {sx.d[0], sx.d[1], 0, 0}};
    SB_TRY(sb_pool2d_output_size(sx.d[2], sx.d[3], &p, &sy.d[2], &sy.d[3]));
    sb_tensor *x, *y, *idx = NULL, *dy, *dx;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(tnew(r, &y, SB_F32, &sy));
    SB_TRY(input(r, &dy, &sy, 2));
    SB_TRY(zeros_like(r, &dx, x));
    if (is_max) {
        SB_TRY(tnew(r, &idx, SB_I64, &sy));
        SB_TRY(sb_max_pool2d_forward(x, &p, y, idx));
        SB_TRY(out(r, "forward", y));
        SB_TRY(out(r, "indices", idx));
        SB_TRY(sb_max_pool2d_backward(dy, idx, &p, dx));
    } else {
        SB_TRY(sb_avg_pool2d_forward(x, &p, y));
        SB_TRY(out(r, "forward", y));
        SB_TRY(sb_avg_pool2d_backward(dy, &p, dx));
    }
    return out(r, "backward", dx);
}
static sb_status run_max_pool2d(run_ctx *r) { return run_pool(r, true); }
static sb_status run_avg_pool2d(run_ctx *r) { return run_pool(r, false); }

/* Adaptive pooling: x, the output size out=OHxOW. */
static sb_status run_adaptive_pool(run_ctx *r, bool is_max) {
    shp sx;
    int64_t oh, ow;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pair(r, "out", 1, &oh, &ow));
    if (sx.nd != 4) return bad_param(r, "x");
    shp sy = {4, {sx.d[0], sx.d[1], oh, ow}};
    sb_tensor *x, *y, *idx = NULL, *dy, *dx;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(tnew(r, &y, SB_F32, &sy));
    SB_TRY(input(r, &dy, &sy, 2));
    SB_TRY(zeros_like(r, &dx, x));
    if (is_max) {
        SB_TRY(tnew(r, &idx, SB_I64, &sy));
        SB_TRY(sb_adaptive_max_pool2d_forward(x, y, idx));
        SB_TRY(out(r, "forward", y));
        SB_TRY(out(r, "indices", idx));
        SB_TRY(sb_adaptive_max_pool2d_backward(dy, idx, dx));
    } else {
        SB_TRY(sb_adaptive_avg_pool2d_forward(x, y));
        SB_TRY(out(r, "forward", y));
        SB_TRY(sb_adaptive_avg_pool2d_backward(dy, dx));
    }
    return out(r, "backward", dx);
}
static sb_status run_adaptive_max_pool2d(run_ctx *r) { return run_adaptive_pool(r, true); }
static sb_status run_adaptive_avg_pool2d(run_ctx *r) { return run_adaptive_pool(r, false); }

static const char *const binary_names[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
static const char *const unary_names[] = {"neg", "abs", "sqrt", "exp", "log", "square", "reciprocal"};

static sb_status pick(run_ctx *r, const char *key, const char *const *names, int n, int *out_i) {
    const char *v = param_raw(r, key);
    if (!v) return bad_param(r, key);
    size_t len = strcspn(v, ",");
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == len && !strncmp(v, names[i], len)) { *out_i = i; return SB_OK; }
    return bad_param(r, key);
}

static sb_status run_binary(run_ctx *r) {
    shp sa, sb, so = {0, {0}};
    int op = 0;
    SB_TRY(pick(r, "op", binary_names, 6, &op));
    SB_TRY(pshape(r, "a", &sa));
    SB_TRY(pshape(r, "b", &sb));
    so.nd = sa.nd > sb.nd ? sa.nd : sb.nd;
    for (int i = 0; i < so.nd; i++) {
        int ia = i - (so.nd - sa.nd), ib = i - (so.nd - sb.nd);
        int64_t da = ia >= 0 ? sa.d[ia] : 1, db = ib >= 0 ? sb.d[ib] : 1;
        so.d[i] = da == 1 ? db : da;
    }
    sb_tensor *a, *b, *y, *dy, *da, *db;
    SB_TRY(input(r, &a, &sa, 1));
    SB_TRY(input(r, &b, &sb, 2));
    SB_TRY(tnew(r, &y, SB_F32, &so));
    SB_TRY(sb_binary((sb_binary_op)op, a, b, y));
    SB_TRY(out(r, "forward", y));
    SB_TRY(input(r, &dy, &so, 3));
    SB_TRY(zeros_like(r, &da, a));
    SB_TRY(zeros_like(r, &db, b));
    SB_TRY(sb_binary_backward((sb_binary_op)op, dy, a, b, da, db));
    SB_TRY(out(r, "backward_a", da));
    SB_TRY(out(r, "backward_b", db));
    float s;
    SB_TRY(pflt(r, "s", 0.75f, &s));
    SB_TRY(sb_binary_scalar((sb_binary_op)op, a, s, da));
    return out(r, "scalar", da);
}

static sb_status run_unary(run_ctx *r) {
    shp sx;
    int op = 0;
    SB_TRY(pick(r, "op", unary_names, 7, &op));
    SB_TRY(pshape(r, "x", &sx));
    sb_tensor *x, *y, *dy, *dx;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(zeros_like(r, &y, x));
    SB_TRY(sb_unary((sb_unary_op)op, x, y));
    SB_TRY(out(r, "forward", y));
    SB_TRY(input(r, &dy, &sx, 2));
    SB_TRY(zeros_like(r, &dx, x));
    SB_TRY(sb_unary_backward((sb_unary_op)op, x, y, dy, dx));
    return out(r, "backward", dx);
}

static const char *const act_names[] = {"relu", "leaky_relu", "tanh", "sigmoid", "silu", "gelu", "gelu_tanh",
                                        "softplus", "hardtanh", "hardsigmoid", "hardswish"};

static sb_status run_activation(run_ctx *r) {
    shp sx;
    int a = 0;
    float slope, beta, threshold, min_val, max_val;
    SB_TRY(pick(r, "fn", act_names, 11, &a));
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pflt(r, "slope", 0.01f, &slope));
    SB_TRY(pflt(r, "beta", 1.0f, &beta));
    SB_TRY(pflt(r, "threshold", 20.0f, &threshold));
    SB_TRY(pflt(r, "min", -1.0f, &min_val));
    SB_TRY(pflt(r, "max", 1.0f, &max_val));
    sb_tensor *x, *y, *dy, *dx;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(zeros_like(r, &y, x));
    SB_TRY(input(r, &dy, &sx, 2));
    SB_TRY(zeros_like(r, &dx, x));
    switch (a) {
    case 0: SB_TRY(sb_relu_forward(x, y)); SB_TRY(sb_relu_backward(x, dy, dx)); break;
    case 1: SB_TRY(sb_leaky_relu_forward(x, slope, y)); SB_TRY(sb_leaky_relu_backward(x, dy, slope, dx)); break;
    case 2: SB_TRY(sb_tanh_forward(x, y)); SB_TRY(sb_tanh_backward(y, dy, dx)); break;
    case 3: SB_TRY(sb_sigmoid_forward(x, y)); SB_TRY(sb_sigmoid_backward(y, dy, dx)); break;
    case 4: SB_TRY(sb_silu_forward(x, y)); SB_TRY(sb_silu_backward(x, dy, dx)); break;
    case 5: SB_TRY(sb_gelu_forward(x, false, y)); SB_TRY(sb_gelu_backward(x, dy, false, dx)); break;
    case 6: SB_TRY(sb_gelu_forward(x, true, y)); SB_TRY(sb_gelu_backward(x, dy, true, dx)); break;
    case 7:
        SB_TRY(sb_softplus_forward(x, beta, threshold, y));
        SB_TRY(sb_softplus_backward(x, dy, beta, threshold, dx));
        break;
    case 8:
        SB_TRY(sb_hardtanh_forward(x, min_val, max_val, y));
        SB_TRY(sb_hardtanh_backward(x, dy, min_val, max_val, dx));
        break;
    case 9: SB_TRY(sb_hardsigmoid_forward(x, y)); SB_TRY(sb_hardsigmoid_backward(x, dy, dx)); break;
    default: SB_TRY(sb_hardswish_forward(x, y)); SB_TRY(sb_hardswish_backward(x, dy, dx)); break;
    }
    SB_TRY(out(r, "forward", y));
    return out(r, "backward", dx);
}

/* dims=BITS: bit k set reduces axis k (0: all axes). */
static sb_status reduce_setup(run_ctx *r, sb_tensor **x, int *dims, int *nd, bool *keep, shp *so) {
    shp sx;
    int64_t mask, keepdim;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pint(r, "dims", 0, &mask));
    SB_TRY(pint(r, "keepdim", 0, &keepdim));
    if (mask < 0 || mask >= (1 << sx.nd)) return bad_param(r, "dims");
    *keep = keepdim != 0;
    *nd = 0;
    so->nd = 0;
    for (int k = 0; k < sx.nd; k++) {
        bool reduced = mask == 0 || (mask >> k & 1);
        if (reduced) dims[(*nd)++] = k;
        if (!reduced) so->d[so->nd++] = sx.d[k];
        else if (*keep) so->d[so->nd++] = 1;
    }
    if (mask == 0) *nd = 0;
    return input(r, x, &sx, 1);
}

static const char *const reduce_names[] = {"sum", "mean", "var", "std", "max", "min"};

static sb_status run_reduce(run_ctx *r) {
    int fn, dims[SB_MAX_DIMS], nd = 0;
    bool keep = false;
    shp so;
    sb_tensor *x, *y, *idx, *dy, *dx;
    int64_t correction;
    SB_TRY(pick(r, "fn", reduce_names, 6, &fn));
    SB_TRY(pint(r, "correction", 1, &correction));
    SB_TRY(reduce_setup(r, &x, dims, &nd, &keep, &so));
    SB_TRY(tnew(r, &y, SB_F32, &so));
    SB_TRY(input(r, &dy, &so, 2));
    SB_TRY(zeros_like(r, &dx, x));
    switch (fn) {
    case 0:
        SB_TRY(sb_sum(x, dims, nd, keep, y));
        SB_TRY(out(r, "forward", y));
        SB_TRY(sb_sum_backward(dy, dims, nd, keep, dx));
        return out(r, "backward", dx);
    case 1:
        SB_TRY(sb_mean(x, dims, nd, keep, y));
        SB_TRY(out(r, "forward", y));
        SB_TRY(sb_mean_backward(dy, dims, nd, keep, dx));
        return out(r, "backward", dx);
    case 2: SB_TRY(sb_var(x, dims, nd, correction, keep, y)); return out(r, "forward", y);
    case 3: SB_TRY(sb_std(x, dims, nd, correction, keep, y)); return out(r, "forward", y);
    default:
        SB_TRY(tnew(r, &idx, SB_I64, &so));
        SB_TRY(fn == 4 ? sb_max(x, dims, nd, keep, y, idx) : sb_min(x, dims, nd, keep, y, idx));
        SB_TRY(out(r, "forward", y));
        SB_TRY(out(r, "indices", idx));
        SB_TRY(sb_max_backward(dy, idx, dims, nd, keep, dx));
        SB_TRY(out(r, "backward", dx));
        SB_TRY(zeros_like(r, &idx, idx));
        SB_TRY(fn == 4 ? sb_argmax(x, dims, nd, keep, idx) : sb_argmin(x, dims, nd, keep, idx));
        return out(r, "arg", idx);
    }
}

static sb_status run_softmax(run_ctx *r, bool log) {
    shp sx;
    int64_t dim;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pint(r, "dim", -1, &dim));
    sb_tensor *x, *y, *dy, *dx;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(zeros_like(r, &y, x));
    SB_TRY(input(r, &dy, &sx, 2));
    SB_TRY(zeros_like(r, &dx, x));
    if (log) {
        SB_TRY(sb_log_softmax_forward(x, (int)dim, y));
        SB_TRY(sb_log_softmax_backward(y, dy, (int)dim, dx));
    } else {
        SB_TRY(sb_softmax_forward(x, (int)dim, y));
        SB_TRY(sb_softmax_backward(y, dy, (int)dim, dx));
    }
    SB_TRY(out(r, "forward", y));
    return out(r, "backward", dx);
}
static sb_status run_softmax_op(run_ctx *r) { return run_softmax(r, false); }
static sb_status run_log_softmax(run_ctx *r) { return run_softmax(r, true); }

static sb_status loss_setup(run_ctx *r, shp *sx, int64_t *red, int64_t *ignore, shp *sl) {
    SB_TRY(pshape(r, "x", sx));
    SB_TRY(pint(r, "reduction", 1, red));
    SB_TRY(pint(r, "ignore", -100, ignore));
    if (*red < 0 || *red > 2) return bad_param(r, "reduction");
    *sl = *red == SB_LOSS_NONE ? *sx : (shp){0, {0}};
    return SB_OK;
}

static sb_status run_cross_entropy(run_ctx *r, bool nll) {
    shp sx, sl;
    int64_t red, ignore;
    float smoothing;
    SB_TRY(loss_setup(r, &sx, &red, &ignore, &sl));
    SB_TRY(pflt(r, "smoothing", 0.0f, &smoothing));
    if (sx.nd != 2) return bad_param(r, "x");
    if (red == SB_LOSS_NONE) sl.nd = 1;
    sb_tensor *x, *t, *loss, *dloss, *dx;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(labels(r, &t, sx.d[0], sx.d[1], ignore >= 0 ? ignore : -1, 2));
    SB_TRY(tnew(r, &loss, SB_F32, &sl));
    SB_TRY(input(r, &dloss, &sl, 3));
    SB_TRY(zeros_like(r, &dx, x));
    if (nll) {
        SB_TRY(sb_nll_loss_forward(x, t, (sb_loss_reduction)red, ignore, loss));
        SB_TRY(sb_nll_loss_backward(x, t, (sb_loss_reduction)red, ignore, dloss, dx));
    } else {
        SB_TRY(sb_cross_entropy_forward(x, t, (sb_loss_reduction)red, smoothing, ignore, loss));
        SB_TRY(sb_cross_entropy_backward(x, t, (sb_loss_reduction)red, smoothing, ignore, dloss, dx));
    }
    SB_TRY(out(r, "forward", loss));
    return out(r, "backward", dx);
}
static sb_status run_ce(run_ctx *r) { return run_cross_entropy(r, false); }
static sb_status run_nll(run_ctx *r) { return run_cross_entropy(r, true); }

static sb_status run_mse(run_ctx *r) {
    shp sx, sl;
    int64_t red, ignore;
    SB_TRY(loss_setup(r, &sx, &red, &ignore, &sl));
    sb_tensor *x, *y, *loss, *dloss, *dx, *dy;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(input(r, &y, &sx, 2));
    SB_TRY(tnew(r, &loss, SB_F32, &sl));
    SB_TRY(input(r, &dloss, &sl, 3));
    SB_TRY(zeros_like(r, &dx, x));
    SB_TRY(zeros_like(r, &dy, x));
    SB_TRY(sb_mse_forward(x, y, (sb_loss_reduction)red, loss));
    SB_TRY(sb_mse_backward(x, y, (sb_loss_reduction)red, dloss, dx, dy));
    SB_TRY(out(r, "forward", loss));
    SB_TRY(out(r, "backward_x", dx));
    return out(r, "backward_y", dy);
}

static sb_status run_batch_norm(run_ctx *r) {
    shp sx;
    int64_t training;
    float momentum, eps;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pint(r, "training", 1, &training));
    SB_TRY(pflt(r, "momentum", 0.1f, &momentum));
    SB_TRY(pflt(r, "eps", 1e-5f, &eps));
    if (sx.nd < 2) return bad_param(r, "x");
    shp sc = {1, {sx.d[1]}};
    sb_tensor *x, *gamma, *beta, *rm, *rv, *y, *mean, *rstd, *dy, *dx, *dg, *db;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(input(r, &gamma, &sc, 2));
    SB_TRY(input(r, &beta, &sc, 3));
    SB_TRY(input(r, &rm, &sc, 4));
    SB_TRY(tnew(r, &rv, SB_F32, &sc));
    SB_TRY(sb_tensor_fill(rv, 1.5f));
    SB_TRY(zeros_like(r, &y, x));
    SB_TRY(tnew(r, &mean, SB_F32, &sc));
    SB_TRY(tnew(r, &rstd, SB_F32, &sc));
    SB_TRY(sb_batch_norm_forward(x, gamma, beta, rm, rv, training != 0, momentum, eps, y, mean, rstd));
    SB_TRY(out(r, "forward", y));
    SB_TRY(out(r, "save_rstd", rstd));
    SB_TRY(out(r, "running_var", rv));
    SB_TRY(input(r, &dy, &sx, 5));
    SB_TRY(zeros_like(r, &dx, x));
    SB_TRY(tnew(r, &dg, SB_F32, &sc));
    SB_TRY(tnew(r, &db, SB_F32, &sc));
    SB_TRY(sb_batch_norm_backward(dy, x, gamma, mean, rstd, training != 0, dx, dg, db));
    SB_TRY(out(r, "backward_x", dx));
    SB_TRY(out(r, "backward_gamma", dg));
    return out(r, "backward_beta", db);
}

static sb_status run_layer_norm(run_ctx *r) {
    shp sx;
    int64_t nn;
    float eps;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pint(r, "normalized", 1, &nn));
    SB_TRY(pflt(r, "eps", 1e-5f, &eps));
    if (nn < 1 || nn > sx.nd) return bad_param(r, "normalized");
    shp sw = {(int)nn, {0}}, ss = {sx.nd - (int)nn, {0}};
    for (int k = 0; k < nn; k++) sw.d[k] = sx.d[sx.nd - nn + k];
    for (int k = 0; k < ss.nd; k++) ss.d[k] = sx.d[k];
    sb_tensor *x, *w, *b, *y, *mean, *rstd, *dy, *dx, *dw, *db;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(input(r, &w, &sw, 2));
    SB_TRY(input(r, &b, &sw, 3));
    SB_TRY(zeros_like(r, &y, x));
    SB_TRY(tnew(r, &mean, SB_F32, &ss));
    SB_TRY(tnew(r, &rstd, SB_F32, &ss));
    SB_TRY(sb_layer_norm_forward(x, (int)nn, w, b, eps, y, mean, rstd));
    SB_TRY(out(r, "forward", y));
    SB_TRY(out(r, "save_rstd", rstd));
    SB_TRY(input(r, &dy, &sx, 4));
    SB_TRY(zeros_like(r, &dx, x));
    SB_TRY(zeros_like(r, &dw, w));
    SB_TRY(zeros_like(r, &db, b));
    SB_TRY(sb_layer_norm_backward(dy, x, (int)nn, w, mean, rstd, dx, dw, db));
    SB_TRY(out(r, "backward_x", dx));
    SB_TRY(out(r, "backward_w", dw));
    return out(r, "backward_b", db);
}

static sb_status run_dropout(run_ctx *r) {
    shp sx;
    float p;
    int64_t offset;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pflt(r, "p", 0.5f, &p));
    SB_TRY(pint(r, "offset", 0, &offset));
    sb_tensor *x, *y, *mask, *dy, *dx;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(zeros_like(r, &y, x));
    SB_TRY(zeros_like(r, &mask, x));
    SB_TRY(sb_dropout_forward(x, p, true, r->c->seed, 7, (uint64_t)offset, y, mask));
    SB_TRY(out(r, "forward", y));
    SB_TRY(out(r, "mask", mask));
    SB_TRY(input(r, &dy, &sx, 2));
    SB_TRY(zeros_like(r, &dx, x));
    SB_TRY(sb_dropout_backward(dy, mask, p, true, dx));
    return out(r, "backward", dx);
}

/* K optimizer steps on one parameter tensor, a fresh gradient each step. */
static sb_status run_optim(run_ctx *r, bool adam) {
    shp sx;
    int64_t steps, flag1, flag2;
    float lr, wd, momentum;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pint(r, "steps", 3, &steps));
    SB_TRY(pflt(r, "lr", 0.01f, &lr));
    SB_TRY(pflt(r, "wd", 0.0f, &wd));
    SB_TRY(pflt(r, "momentum", 0.9f, &momentum));
    SB_TRY(pint(r, adam ? "amsgrad" : "nesterov", 0, &flag1));
    SB_TRY(pint(r, adam ? "decoupled" : "maximize", 0, &flag2));
    if (steps < 1 || steps > 100) return bad_param(r, "steps");
    sb_tensor *p, *g, *m, *v, *vmax;
    SB_TRY(input(r, &p, &sx, 1));
    SB_TRY(zeros_like(r, &m, p));
    SB_TRY(zeros_like(r, &v, p));
    SB_TRY(zeros_like(r, &vmax, p));
    sb_sgd_config sgd = sb_sgd_default_config(lr);
    sgd.momentum = momentum;
    sgd.weight_decay = wd;
    sgd.nesterov = flag1 != 0;
    sgd.maximize = flag2 != 0;
    sb_adam_config ad = flag2 ? sb_adamw_default_config(lr) : sb_adam_default_config(lr);
    ad.weight_decay = wd;
    ad.amsgrad = flag1 != 0;
    for (int64_t s = 1; s <= steps; s++) {
        SB_TRY(input(r, &g, &sx, 10 + (uint64_t)s));
        if (adam) SB_TRY(sb_adam_step_tensor(&ad, s, p, g, m, v, ad.amsgrad ? vmax : NULL));
        else SB_TRY(sb_sgd_step_tensor(&sgd, s, p, g, m));
    }
    SB_TRY(out(r, "param", p));
    SB_TRY(out(r, adam ? "exp_avg" : "momentum", m));
    return adam ? out(r, "exp_avg_sq", v) : SB_OK;
}
static sb_status run_sgd(run_ctx *r) { return run_optim(r, false); }
static sb_status run_adam(run_ctx *r) { return run_optim(r, true); }

static sb_status run_rng(run_ctx *r) {
    int64_t n, index;
    SB_TRY(pint(r, "n", 1, &n));
    SB_TRY(pint(r, "index", 0, &index));
    if (n < 1 || n > MAX_ELEMS || index < 0) return bad_param(r, "n/index");
    sb_rng g = sb_rng_make(r->c->seed, 3);
    shp s = {1, {n}};
    sb_tensor *u, *z, *b, *perm;
    SB_TRY(tnew(r, &u, SB_F32, &s));
    SB_TRY(tnew(r, &z, SB_F32, &s));
    SB_TRY(tnew(r, &b, SB_I32, &s));
    SB_TRY(tnew(r, &perm, SB_I64, &s));
    SB_TRY(sb_rng_uniform(&g, (uint64_t)index, u->data, n));
    SB_TRY(out(r, "uniform", u));
    SB_TRY(sb_rng_uniform_range(&g, (uint64_t)index, -2.5f, 7.0f, u->data, n));
    SB_TRY(out(r, "uniform_range", u));
    SB_TRY(sb_rng_normal(&g, (uint64_t)index, 0.5f, 3.0f, z->data, n));
    SB_TRY(out(r, "normal", z));
    SB_TRY(sb_rng_bounded(&g, (uint64_t)index, 1000003u, b->data, n));
    SB_TRY(out(r, "bounded", b));
    SB_TRY(sb_rng_permutation(r->c->seed, 5, n, perm->data));
    return out(r, "permutation", perm);
}

/* ---- the six correctly rounded functions ---- */
static const char *const math_names[] = {"expf", "expm1f", "logf", "log1pf", "tanhf", "erff"};
static float (*const math_fns[])(float) = {sb_expf, sb_expm1f, sb_logf, sb_log1pf, sb_tanhf, sb_erff};

/* Inputs closest to a rounding boundary (found by the exhaustive run of
 * tests/test_math.c) and the edges where results overflow, become
 * subnormal, saturate or vanish; each edge is taken with its 4 neighbours
 * on both sides. */
static const uint32_t math_hard[6][12] = {
    {0xc16912cdu, 0xbbf0edf1u, 0xb3000000u, 0xbae0e25cu, 0x377eff81u, 0x40315b33u, 0x4001b249u,
     0x39c6be5bu, 0x38e69cc1u, 0x3d1a274eu, 0x383a3ef1u, 0xbc2a461au},
    {0x3dc252ddu, 0x34ca62c1u, 0x3a254e7au, 0xb675cbfcu, 0x33b504f3u, 0xbb7b3b6cu, 0x36322b1bu,
     0xb3800000u, 0x40315b33u, 0x4001b249u, 0x3b643f1bu, 0xc169ee19u},
    {0x1f116ab8u, 0x3c413d3au, 0x4c5d65a5u, 0x41178febu, 0x4d604ebeu, 0x65d890d3u, 0x66a8c860u,
     0x6f31a8ecu, 0x2c4c24b7u, 0x5ee8984eu, 0x79e7ec37u, 0x3bf86ef0u},
    {0x3710001bu, 0x3efd81adu, 0x55185f82u, 0x66a8c860u, 0x6f31a8ecu, 0xb70fffe5u, 0x35400003u,
     0x41078febu, 0x65d890d3u, 0xb53ffffdu, 0xbb0ec8c4u, 0xb76fffb5u},
    {0x3ac37de2u, 0xbac37de2u, 0x3eee0566u, 0xbeee0566u, 0xc0acb4d0u, 0x40acb4d0u, 0x3cd41b91u,
     0xbcd41b91u, 0xc0c5e8cau, 0x40c5e8cau, 0x3d7c3055u, 0xbd7c3055u},
    {0x3940ead6u, 0xb940ead6u, 0x39c0057du, 0xb9c0057du, 0x36aea466u, 0xb6aea466u, 0x358e9d2du,
     0xb58e9d2du, 0x122a320cu, 0x12aa320cu, 0x132a320cu, 0x13aa320cu},
};
static const uint32_t math_edges[] = {
    0x00000000u, 0x00000001u, 0x007fffffu, 0x00800000u, 0x7f7fffffu, 0x3f800000u, 0x33000000u,
    0x42b17218u, /* expf overflow: ln(FLT_MAX) */
    0xc2aeac50u, /* expf: result leaves the normal range */
    0xc2cff1b5u, /* expf: result underflows to zero */
    0xc18aa122u, /* expm1f saturates at -1 */
    0xbf800000u, /* log1pf pole at -1 */
    0x41102cb4u, /* tanhf saturates */
    0x407ad444u, /* erff saturates */
    0x3f000000u, 0x40000000u, 0x402df854u,
};

static sb_status run_math(run_ctx *r) {
    int f = 0;
    int64_t n, hard;
    SB_TRY(pick(r, "fn", math_names, 6, &f));
    SB_TRY(pint(r, "n", 0, &n));
    SB_TRY(pint(r, "hard", 0, &hard));
    if (n < 0 || n > MAX_ELEMS) return bad_param(r, "n");
    int64_t count = hard ? 12 + (int64_t)(sizeof math_edges / sizeof math_edges[0]) * 18 + 4 : n;
    shp s = {1, {count}};
    sb_tensor *x, *y;
    SB_TRY(tnew(r, &x, SB_F32, &s));
    SB_TRY(tnew(r, &y, SB_F32, &s));
    uint32_t *xb = x->data;
    if (hard) {
        int64_t k = 0;
        for (int i = 0; i < 12; i++) xb[k++] = math_hard[f][i];
        for (size_t e = 0; e < sizeof math_edges / sizeof math_edges[0]; e++)
            for (int sign = 0; sign < 2; sign++)
                for (int d = -4; d <= 4; d++) {
                    uint32_t u = math_edges[e] + (uint32_t)d; /* wraps near 0: still a valid float */
                    xb[k++] = (u & 0x7fffffffu) | (sign ? 0x80000000u : 0);
                }
        xb[k++] = 0x7f800000u;
        xb[k++] = 0xff800000u;
        xb[k++] = 0x7fc00000u;
        xb[k++] = 0xffc00001u;
    } else {
        /* A Philox sweep: half over every bit pattern, half over [-16, 16]. */
        for (int64_t i = 0; i < n; i++) {
            uint32_t w[4];
            sb_rng_block(r->c->seed, 11, (uint64_t)i, 0, w);
            xb[i] = i % 2 ? w[1] : sb_f32_bits((float)(int32_t)w[2] * 0x1p-27f);
        }
    }
    float *xv = x->data, *yv = y->data;
    for (int64_t i = 0; i < count; i++) yv[i] = math_fns[f](xv[i]);
    SB_TRY(out(r, "scalar", y));
    /* expf and logf also run as the vectorised tensor ops. */
    if (f == 0 || f == 2) {
        SB_TRY(sb_unary(f == 0 ? SB_UNARY_EXP : SB_UNARY_LOG, x, y));
        SB_TRY(out(r, "tensor", y));
    }
    return SB_OK;
}

static sb_status run_ssum(run_ctx *r) {
    int64_t n, inc;
    SB_TRY(pint(r, "n", 1, &n));
    SB_TRY(pint(r, "inc", 1, &inc));
    if (n < 0 || inc < 1 || !product_within(MAX_ELEMS, 2, (int64_t[]){n, inc})) return bad_param(r, "n/inc");
    shp s = {1, {n * inc + 1}}, one = {0, {0}};
    sb_tensor *x, *y;
    SB_TRY(input(r, &x, &s, 1));
    SB_TRY(tnew(r, &y, SB_F32, &one));
    if (sb_ssum(n, x->data, inc, (float *)y->data) != SB_OK)
        return sb_fail(SB_ERR_INTERNAL, "sb_ssum failed: %s", sb_last_error());
    return out(r, "forward", y);
}

/* A few Adam steps of LeNet-5 through the autograd graph: images are
 * uniform [0, 1) noise from Philox, labels Philox draws. */
static sb_status train_steps(run_ctx *r, const sb_dataset *data, int64_t steps, int64_t batch) {
    sb_module *model = NULL;
    sb_optimizer *opt = NULL;
    sb_graph *g = NULL;
    sb_loader *loader = NULL;
    sb_adam_config adam = sb_adam_default_config(0.01);
    shp sl = {1, {steps}};
    sb_tensor *losses;
    sb_status s = tnew(r, &losses, SB_F32, &sl);
    if (s == SB_OK) s = sb_model_lenet5(&model);
    if (s == SB_OK) s = sb_module_init(model, r->c->seed);
    if (s == SB_OK) s = sb_optimizer_adam(&opt, model, &adam);
    if (s == SB_OK) s = sb_graph_new(&g);
    if (s == SB_OK && data) s = sb_loader_new(&loader, data, batch, true, r->c->seed);
    if (s == SB_OK && data) s = sb_loader_set_epoch(loader, 0);
    for (int64_t k = 0; k < steps && s == SB_OK; k++) {
        sb_graph_reset(g);
        sb_tensor *x = NULL, *y = NULL;
        sb_variable *in, *logits, *loss;
        if (data) {
            s = sb_loader_batch(loader, k, sb_graph_arena(g), &x, &y);
        } else {
            int64_t xs[4] = {batch, 1, 28, 28}, ys[1] = {batch};
            s = sb_tensor_new_in(&x, sb_graph_arena(g), SB_F32, 4, xs);
            if (s == SB_OK) s = sb_tensor_new_in(&y, sb_graph_arena(g), SB_I64, 1, ys);
            if (s == SB_OK) {
                sb_rng rng = sb_rng_make(r->c->seed, 100 + (uint64_t)k);
                s = sb_rng_uniform(&rng, 0, x->data, sb_tensor_numel(x));
                for (int64_t i = 0; i < batch; i++)
                    ((int64_t *)y->data)[i] = sb_rng_bounded_at(r->c->seed, 200 + (uint64_t)k, (uint64_t)i, 10);
            }
        }
        if (s == SB_OK) s = sb_graph_input(g, x, &in);
        if (s == SB_OK) s = sb_module_forward(model, g, in, &logits);
        if (s == SB_OK) s = sb_ag_cross_entropy(g, logits, y, SB_LOSS_MEAN, 0.0f, &loss);
        if (s == SB_OK) s = sb_graph_backward(g, loss);
        if (s == SB_OK) s = sb_optimizer_step(opt);
        if (s == SB_OK) ((float *)losses->data)[k] = ((float *)loss->value->data)[0];
    }
    unsigned char d[32];
    if (s == SB_OK) s = out(r, "losses", losses);
    if (s == SB_OK) s = sb_module_hash(model, d);
    if (s == SB_OK) s = out_digest(r, "model", d);
    sb_loader_free(loader);
    sb_graph_free(g);
    sb_optimizer_free(opt);
    sb_module_free(model);
    return s;
}

static sb_status run_train_lenet5(run_ctx *r) {
    int64_t steps, batch;
    SB_TRY(pint(r, "steps", 2, &steps));
    SB_TRY(pint(r, "batch", 4, &batch));
    if (steps < 1 || steps > 100 || batch < 1 || batch > 1000) return bad_param(r, "steps/batch");
    return train_steps(r, NULL, steps, batch);
}

/* The same on the first batches of Fashion-MNIST, when the data is there. */
static sb_status run_train_fmnist(run_ctx *r) {
    int64_t steps, batch;
    SB_TRY(pint(r, "steps", 2, &steps));
    SB_TRY(pint(r, "batch", 100, &batch));
    if (steps < 1 || steps > 100 || batch < 1 || batch > 1000) return bad_param(r, "steps/batch");
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/train-images-idx3-ubyte.gz", r->data_dir);
    FILE *f = fopen(probe, "rb");
    if (!f) {
        snprintf(probe, sizeof probe, "%s/train-images-idx3-ubyte", r->data_dir);
        f = fopen(probe, "rb");
    }
    if (!f) {
        r->skipped = true;
        snprintf(r->skip_why, sizeof r->skip_why, "no Fashion-MNIST at %.100s (--data DIR)", r->data_dir);
        return SB_OK;
    }
    fclose(f);
    sb_dataset train = {0};
    sb_status s = sb_mnist_load(r->data_dir, true, &train);
    if (s == SB_OK) s = train_steps(r, &train, steps, batch);
    sb_dataset_free(&train);
    return s;
}

/* One graph through every sb_ag_* op the CLI's LeNet-5 does not use:
 * x -> conv2d -> batch_norm -> gelu -> avg_pool2d -> add(., sigmoid(.)) ->
 * flatten -> linear -> layer_norm -> tanh -> dropout -> relu -> mse, then
 * the backward walk; outputs are the loss and the gradients. */
static sb_status param(run_ctx *r, sb_graph *g, const shp *s, uint64_t stream, sb_tensor **grad, sb_variable **v) {
    sb_tensor *value;
    SB_TRY(input(r, &value, s, stream));
    SB_TRY(zeros_like(r, grad, value));
    return sb_graph_param(g, value, *grad, v);
}

static sb_status run_autograd(run_ctx *r) {
    int64_t n, c, hw;
    SB_TRY(pint(r, "n", 2, &n));
    SB_TRY(pint(r, "c", 3, &c));
    SB_TRY(pint(r, "hw", 8, &hw));
    if (n < 1 || c < 1 || hw < 2 || !product_within(MAX_ELEMS / 8, 4, (int64_t[]){n, c, hw, hw}))
        return bad_param(r, "n/c/hw");
    sb_graph *g;
    SB_TRY(sb_graph_new(&g));
    sb_status s = SB_OK;
    sb_tensor *gx, *gw1, *gb1, *ggamma, *gbeta, *gw2, *gb2, *gw3, *gb3, *rm, *rv, *target;
    sb_variable *x, *w1, *b1, *gamma, *beta, *w2, *b2, *w3, *b3, *h, *h2, *loss;
    shp sx = {4, {n, c, hw, hw}}, sw1 = {4, {4, c, 3, 3}}, s4 = {1, {4}};
    int64_t feat = 4 * (hw / 2) * (hw / 2);
    shp sw2 = {2, {10, feat}}, s10 = {1, {10}}, sy = {2, {n, 10}};
    sb_conv2d_params cp = SB_CONV2D_PARAMS_DEFAULT;
    cp.pad_h = cp.pad_w = 1;
    sb_pool2d_params pp = SB_POOL2D_PARAMS(2, 2);
#define STEP(call) do { if (s == SB_OK) s = (call); } while (0)
    STEP(param(r, g, &sx, 1, &gx, &x));
    STEP(param(r, g, &sw1, 2, &gw1, &w1));
    STEP(param(r, g, &s4, 3, &gb1, &b1));
    STEP(param(r, g, &s4, 4, &ggamma, &gamma));
    STEP(param(r, g, &s4, 5, &gbeta, &beta));
    STEP(param(r, g, &sw2, 6, &gw2, &w2));
    STEP(param(r, g, &s10, 7, &gb2, &b2));
    STEP(param(r, g, &s10, 8, &gw3, &w3));
    STEP(param(r, g, &s10, 9, &gb3, &b3));
    STEP(input(r, &rm, &s4, 10));
    STEP(input(r, &target, &sy, 11));
    STEP(tnew(r, &rv, SB_F32, &s4));
    STEP(sb_tensor_fill(rv, 1.0f));
    STEP(sb_ag_conv2d(g, x, w1, b1, &cp, &h));
    STEP(sb_ag_batch_norm(g, h, gamma, beta, rm, rv, true, 0.1f, 1e-5f, &h));
    STEP(sb_ag_gelu(g, h, false, &h));
    STEP(sb_ag_avg_pool2d(g, h, &pp, &h));
    STEP(sb_ag_sigmoid(g, h, &h2));
    STEP(sb_ag_add(g, h, h2, &h));
    STEP(sb_ag_flatten(g, h, 1, -1, &h));
    STEP(sb_ag_linear(g, h, w2, b2, &h));
    STEP(sb_ag_layer_norm(g, h, 1, w3, b3, 1e-5f, &h));
    STEP(sb_ag_tanh(g, h, &h));
    STEP(sb_ag_dropout(g, h, 0.25f, true, r->c->seed, 9, 0, &h));
    STEP(sb_ag_relu(g, h, &h));
    STEP(sb_ag_mse(g, h, target, SB_LOSS_MEAN, &loss));
    STEP(sb_graph_backward(g, loss));
    STEP(out(r, "loss", loss->value));
    STEP(out(r, "grad_x", gx));
    STEP(out(r, "grad_conv_w", gw1));
    STEP(out(r, "grad_conv_b", gb1));
    STEP(out(r, "grad_bn_gamma", ggamma));
    STEP(out(r, "grad_linear_w", gw2));
    STEP(out(r, "grad_ln_w", gw3));
    STEP(out(r, "running_var", rv));
#undef STEP
    sb_graph_free(g);
    return s;
}

typedef struct { const char *op; sb_status (*run)(run_ctx *r); } runner;
static const runner runners[] = {
    {"matmul", run_matmul},         {"sgemm", run_sgemm},
    {"linear", run_linear},         {"conv2d", run_conv2d},
    {"max_pool2d", run_max_pool2d}, {"avg_pool2d", run_avg_pool2d},
    {"adaptive_max_pool2d", run_adaptive_max_pool2d},
    {"adaptive_avg_pool2d", run_adaptive_avg_pool2d},
    {"binary", run_binary},         {"unary", run_unary},
    {"activation", run_activation}, {"reduce", run_reduce},
    {"softmax", run_softmax_op},    {"log_softmax", run_log_softmax},
    {"cross_entropy", run_ce},      {"nll_loss", run_nll},
    {"mse", run_mse},               {"batch_norm", run_batch_norm},
    {"layer_norm", run_layer_norm}, {"dropout", run_dropout},
    {"sgd", run_sgd},               {"adam", run_adam},
    {"rng", run_rng},               {"math", run_math},
    {"ssum", run_ssum},             {"train_lenet5", run_train_lenet5},
    {"train_fmnist", run_train_fmnist}, {"autograd", run_autograd},
};
#define N_RUNNERS (sizeof runners / sizeof runners[0])

static const runner *find_runner(const char *op) {
    for (size_t i = 0; i < N_RUNNERS; i++)
        if (!strcmp(runners[i].op, op)) return &runners[i];
    return NULL;
}

/* ---- the cases `--generate` writes ----------------------------------------- */
typedef struct { const char *op; uint64_t seed; bool quick; const char *params; } spec;
static const spec specs[] = {
    /* GEMM family: every transpose, odd sizes, > 32, batched and shared operands */
    {"matmul", 1, true, "a=5x7,b=7x3"},
    {"matmul", 2, true, "a=7x5,b=7x3,ta=1"},
    {"matmul", 3, true, "a=5x7,b=3x7,tb=1,adv=16"},
    {"matmul", 4, false, "a=37x33,b=37x65,ta=1,tb=0"},
    {"matmul", 5, false, "a=33x37,b=65x37,ta=0,tb=1,adv=64"},
    {"matmul", 6, false, "a=37x33,b=65x37,ta=1,tb=1"},
    {"matmul", 7, true, "a=3x4x6,b=3x6x5"},
    {"matmul", 8, false, "a=3x17x9,b=9x13,adv=32"},
    {"matmul", 9, false, "a=70x300,b=300x66"},
    {"sgemm", 10, true, "m=3,n=5,k=9,pad=3"},
    {"sgemm", 11, false, "m=67,n=35,k=129,ta=1,tb=1,pad=1"},
    {"linear", 12, true, "x=4x9,w=5x9"},
    {"linear", 13, false, "x=2x3x40,w=33x40,adv=50"},
    {"linear", 14, false, "x=100x400,w=120x400"},
    {"linear", 15, true, "x=1x1,w=1x1,bias=0"},
    /* conv2d: stride, padding, dilation, groups, 1x1, odd sizes */
    {"conv2d", 16, true, "x=2x3x7x6,w=4x3x3x3"},
    {"conv2d", 17, true, "x=2x4x9x7,w=6x2x3x3,stride=2x1,pad=1x0,dil=1x2,groups=2"},
    {"conv2d", 18, false, "x=3x6x11x13,w=6x1x3x5,stride=2x2,pad=2x1,groups=6,adv=40"},
    {"conv2d", 19, false, "x=4x1x28x28,w=6x1x5x5,pad=2x2"},
    {"conv2d", 20, false, "x=4x6x14x14,w=16x6x5x5,bias=0"},
    {"conv2d", 21, true, "x=1x5x4x4,w=7x5x1x1,stride=3x3"},
    {"conv2d", 22, false, "x=2x8x10x10,w=12x4x3x3,dil=2x3,pad=3x3,groups=2,adv=20"},
    /* pooling */
    {"max_pool2d", 23, true, "x=2x3x7x7,kernel=2x2"},
    {"max_pool2d", 24, true, "x=2x3x9x8,kernel=3x2,stride=2x1,pad=1x1,ceil=1,adv=8"},
    {"max_pool2d", 25, false, "x=4x6x28x28,kernel=2x2"},
    {"avg_pool2d", 26, true, "x=2x3x7x7,kernel=3x3,stride=2x2,pad=1x1"},
    {"avg_pool2d", 27, false, "x=2x3x9x8,kernel=3x2,stride=2x1,pad=1x1,ceil=1,cip=0,adv=8"},
    {"adaptive_max_pool2d", 120, true, "x=2x3x7x5,out=3x4,adv=8"},
    {"adaptive_max_pool2d", 121, false, "x=2x4x10x9,out=4x3"},
    {"adaptive_avg_pool2d", 122, true, "x=2x3x7x5,out=3x4,adv=8"},
    {"adaptive_avg_pool2d", 123, false, "x=2x4x14x14,out=5x1"},
    /* elementwise */
    {"binary", 28, true, "op=add,a=3x4x5,b=4x1,adv=6"},
    {"binary", 29, true, "op=sub,a=3x4x5,b=5,adv=6"},
    {"binary", 30, true, "op=mul,a=2x33,b=2x33,adv=6"},
    {"binary", 31, true, "op=div,a=70,b=70,adv=6"},
    {"binary", 32, true, "op=maximum,a=3x1x5,b=4x1,adv=4"},
    {"binary", 33, true, "op=minimum,a=9x9,b=9x9,adv=4"},
    {"binary", 34, false, "op=add,a=9000,b=9000,adv=50"},
    {"unary", 35, true, "op=neg,x=65,adv=5"},
    {"unary", 36, true, "op=abs,x=65,adv=5"},
    {"unary", 37, true, "op=sqrt,x=65,adv=5"},
    {"unary", 38, true, "op=exp,x=99,adv=5,scale=30"},
    {"unary", 39, true, "op=log,x=99,adv=5,scale=10"},
    {"unary", 40, true, "op=square,x=65,adv=5"},
    {"unary", 41, true, "op=reciprocal,x=65,adv=5"},
    {"unary", 42, false, "op=exp,x=10007,adv=100,scale=40"},
    /* activations */
    {"activation", 43, true, "fn=relu,x=3x37,adv=5"},
    {"activation", 44, true, "fn=leaky_relu,x=3x37,slope=0.2,adv=5"},
    {"activation", 45, true, "fn=tanh,x=3x37,adv=5,scale=4"},
    {"activation", 46, true, "fn=sigmoid,x=3x37,adv=5,scale=8"},
    {"activation", 47, true, "fn=silu,x=3x37,adv=5,scale=4"},
    {"activation", 48, true, "fn=gelu,x=3x37,adv=5,scale=3"},
    {"activation", 49, true, "fn=gelu_tanh,x=3x37,adv=5,scale=3"},
    {"activation", 50, true, "fn=softplus,x=3x37,beta=2,threshold=10,adv=5,scale=6"},
    {"activation", 124, true, "fn=hardtanh,x=3x37,min=-2,max=1.5,adv=5,scale=3"},
    {"activation", 125, true, "fn=hardtanh,x=5x29,min=0,max=6,adv=5,scale=5"},
    {"activation", 126, true, "fn=hardsigmoid,x=3x37,adv=5,scale=4"},
    {"activation", 127, true, "fn=hardswish,x=3x37,adv=5,scale=4"},
    {"activation", 51, false, "fn=gelu,x=9001,adv=100,scale=5"},
    {"activation", 52, false, "fn=tanh,x=9001,adv=100,scale=10"},
    /* reductions, incl. > 8192 elements for the canonical sum's blocks */
    {"reduce", 53, true, "fn=sum,x=3x4x5,dims=2,adv=10"},
    {"reduce", 54, true, "fn=mean,x=3x4x5,dims=5,keepdim=1"},
    {"reduce", 55, true, "fn=var,x=6x7,dims=1,correction=1"},
    {"reduce", 56, true, "fn=std,x=6x7,dims=2,correction=0"},
    {"reduce", 57, true, "fn=max,x=5x6x7,dims=2,adv=8"},
    {"reduce", 58, true, "fn=min,x=5x6x7,dims=4,keepdim=1,adv=8"},
    {"reduce", 59, false, "fn=sum,x=20000,adv=500,scale=1000"},
    {"reduce", 60, false, "fn=mean,x=3x9000,dims=2"},
    {"reduce", 61, false, "fn=var,x=9000x3,dims=1,correction=1,shift=1000"},
    {"reduce", 62, false, "fn=max,x=10000"},
    /* softmax and losses */
    {"softmax", 63, true, "x=4x10,adv=12,scale=10"},
    {"softmax", 64, false, "x=3x40x5,dim=1,scale=30"},
    {"log_softmax", 65, true, "x=4x10,adv=12,scale=10"},
    {"log_softmax", 66, false, "x=2x9000,scale=50"},
    {"cross_entropy", 67, true, "x=8x10,reduction=1"},
    {"cross_entropy", 68, true, "x=7x5,reduction=0,smoothing=0.1,ignore=2"},
    {"cross_entropy", 69, false, "x=100x10,reduction=2,scale=20"},
    {"nll_loss", 70, true, "x=8x10,reduction=1,ignore=4"},
    {"nll_loss", 71, false, "x=33x7,reduction=0"},
    {"mse", 72, true, "x=3x11,reduction=1,adv=10"},
    {"mse", 73, true, "x=3x11,reduction=0"},
    {"mse", 74, false, "x=10000,reduction=2"},
    /* normalisation */
    {"batch_norm", 75, true, "x=4x3x5x5"},
    {"batch_norm", 76, true, "x=6x5,training=0"},
    {"batch_norm", 77, false, "x=8x6x14x14,shift=100,momentum=0.2"},
    {"layer_norm", 78, true, "x=4x10"},
    {"layer_norm", 79, false, "x=3x5x40,normalized=2,shift=-50,eps=0.001"},
    {"dropout", 80, true, "x=5x13,p=0.3,offset=17"},
    {"dropout", 81, false, "x=10000,p=0.5,offset=123456789"},
    /* optimizers */
    {"sgd", 82, true, "x=37,steps=3,momentum=0.9,wd=0.01"},
    {"sgd", 83, false, "x=100,steps=4,momentum=0.5,nesterov=1,maximize=0"},
    {"adam", 84, true, "x=37,steps=3"},
    {"adam", 85, false, "x=100,steps=5,amsgrad=1,wd=0.1"},
    {"adam", 86, false, "x=100,steps=5,decoupled=1,wd=0.01"},
    /* random numbers */
    {"rng", 87, true, "n=100,index=0"},
    {"rng", 88, false, "n=10000,index=72057594037917000"},
    /* correctly rounded functions: hard inputs and a Philox sweep */
    {"math", 89, true, "fn=expf,hard=1"},
    {"math", 90, true, "fn=expm1f,hard=1"},
    {"math", 91, true, "fn=logf,hard=1"},
    {"math", 92, true, "fn=log1pf,hard=1"},
    {"math", 93, true, "fn=tanhf,hard=1"},
    {"math", 94, true, "fn=erff,hard=1"},
    {"math", 95, true, "fn=expf,n=2000"},
    {"math", 96, true, "fn=expm1f,n=2000"},
    {"math", 97, true, "fn=logf,n=2000"},
    {"math", 98, true, "fn=log1pf,n=2000"},
    {"math", 99, true, "fn=tanhf,n=2000"},
    {"math", 100, true, "fn=erff,n=2000"},
    {"math", 101, false, "fn=expf,n=200000"},
    {"math", 102, false, "fn=expm1f,n=200000"},
    {"math", 103, false, "fn=logf,n=200000"},
    {"math", 104, false, "fn=log1pf,n=200000"},
    {"math", 105, false, "fn=tanhf,n=200000"},
    {"math", 106, false, "fn=erff,n=200000"},
    /* the canonical sum over more than 8192 elements */
    {"ssum", 107, true, "n=9000,inc=1,adv=300,scale=1000"},
    {"ssum", 108, false, "n=100000,inc=3"},
    {"ssum", 109, true, "n=8193,inc=2,shift=1e6"},
    /* autograd: every sb_ag_* op in one graph, forward and backward */
    {"autograd", 112, true, "n=2,c=3,hw=8"},
    {"autograd", 113, false, "n=5,c=2,hw=11,scale=3"},
    /* whole training steps through autograd */
    {"train_lenet5", 110, true, "steps=2,batch=3"},
    {"train_lenet5", 111, false, "steps=3,batch=32"},
    {"train_fmnist", 0, false, "steps=2,batch=100"},
};
#define N_SPECS (sizeof specs / sizeof specs[0])

/* ---- the vector file ------------------------------------------------------ */

static int hexval(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
}

/* One line: OP SEED TIER PARAMS NAME=HASH... ; comments (#) and blank lines
 * are skipped (returns 0); 1 for a case; -1 with a message on error. */
static int parse_line(char *line, vcase *c, const char *src, int lineno) {
    char *save, *tok[4 + MAX_OUT + 1];
    int n = 0;
    for (char *t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
        if (n == 0 && t[0] == '#') return 0;
        if (n == 4 + MAX_OUT) { fprintf(stderr, "samebits verify: %s:%d: too many fields\n", src, lineno); return -1; }
        tok[n++] = t;
    }
    if (n == 0) return 0;
    memset(c, 0, sizeof *c);
    char *end;
    if (n < 5 || strlen(tok[0]) >= sizeof c->op || strlen(tok[3]) >= sizeof c->params || !find_runner(tok[0])) {
        fprintf(stderr, "samebits verify: %s:%d: expected 'OP SEED quick|full PARAMS NAME=SHA256...' with a known op\n",
                src, lineno);
        return -1;
    }
    strcpy(c->op, tok[0]);
    c->seed = strtoull(tok[1], &end, 10);
    if (!*tok[1] || *end || (strcmp(tok[2], "quick") && strcmp(tok[2], "full"))) {
        fprintf(stderr, "samebits verify: %s:%d: bad seed or tier\n", src, lineno);
        return -1;
    }
    c->quick = !strcmp(tok[2], "quick");
    c->lineno = lineno;
    strcpy(c->params, strcmp(tok[3], "-") ? tok[3] : "");
    for (int i = 4; i < n; i++) {
        char *eq = strchr(tok[i], '=');
        if (!eq || eq == tok[i] || eq - tok[i] >= 32 || strlen(eq + 1) != 64) {
            fprintf(stderr, "samebits verify: %s:%d: bad output '%s' (NAME=64 hex digits)\n", src, lineno, tok[i]);
            return -1;
        }
        memcpy(c->out_name[c->n_out], tok[i], (size_t)(eq - tok[i]));
        for (int b = 0; b < 32; b++) {
            int hi = hexval(eq[1 + 2 * b]), lo = hexval(eq[2 + 2 * b]);
            if (hi < 0 || lo < 0) {
                fprintf(stderr, "samebits verify: %s:%d: bad hex digest for '%s'\n", src, lineno,
                        c->out_name[c->n_out]);
                return -1;
            }
            c->out_hash[c->n_out][b] = (unsigned char)(hi << 4 | lo);
        }
        c->n_out++;
    }
    return 1;
}

static int parse_vectors(const char *text, const char *src, vcase **out, int *count) {
    *out = NULL;
    *count = 0;
    size_t len = strlen(text);
    char *copy = malloc(len + 1);
    if (!copy) return 0;
    memcpy(copy, text, len + 1);
    int cap = 0, lineno = 0, ok = 1;
    for (char *line = copy, *next; line && ok; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        lineno++;
        vcase c;
        int r = parse_line(line, &c, src, lineno);
        if (r < 0) { ok = 0; break; }
        if (r == 0) continue;
        if (*count == cap) {
            cap = cap ? 2 * cap : 64;
            vcase *nv = realloc(*out, (size_t)cap * sizeof *nv);
            if (!nv) { ok = 0; break; }
            *out = nv;
        }
        (*out)[(*count)++] = c;
    }
    free(copy);
    if (ok && *count == 0) {
        fprintf(stderr, "samebits verify: %s holds no vectors\n", src);
        ok = 0;
    }
    if (!ok) { free(*out); *out = NULL; }
    return ok;
}

static char *read_file(const char *path) {
    FILE *f;
    /* a regular file of at most 64 MiB: a FIFO would block forever */
    if (sb_fopen_regular("samebits verify", path, (uint64_t)64 << 20, &f, NULL) != SB_OK) {
        fprintf(stderr, "%s\n", sb_last_error());
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (n + 1 == cap) {
            if (cap > ((size_t)64 << 20)) { fprintf(stderr, "samebits verify: %s is too large\n", path); free(buf); buf = NULL; break; }
            char *nb = realloc(buf, cap *= 2);
            if (!nb) { free(buf); buf = NULL; }
            buf = nb;
        }
    }
    if (buf && ferror(f)) { fprintf(stderr, "samebits verify: error reading %s\n", path); free(buf); buf = NULL; }
    fclose(f);
    if (buf) buf[n] = 0;
    if (buf && strlen(buf) != n) { fprintf(stderr, "samebits verify: %s contains NUL bytes\n", path); free(buf); buf = NULL; }
    return buf;
}

static void line_of(const vcase *c, const run_ctx *r, FILE *f) {
    fprintf(f, "%s %" PRIu64 " %s %s", c->op, c->seed, c->quick ? "quick" : "full", c->params[0] ? c->params : "-");
    for (int i = 0; i < r->n_out; i++) {
        char hex[65];
        sb_hex_digest(r->out_hash[i], hex);
        fprintf(f, " %s=%s", r->out_name[i], hex);
    }
    fputc('\n', f);
}

static sb_status run_case(const vcase *c, run_ctx *r, sb_arena *arena, const char *data_dir, size_t max_bytes) {
    memset(r, 0, sizeof *r);
    r->c = c;
    r->arena = arena;
    r->data_dir = data_dir;
    r->max_bytes = max_bytes;
    sb_arena_reset(arena);
    sb_clear_error();
    return find_runner(c->op)->run(r);
}

static int generate(const char *data_dir) {
    /* The reference path: portable scalar kernels on one thread. */
    if (sb_set_isa(SB_ISA_SCALAR) != SB_OK || sb_set_num_threads(1) != SB_OK) {
        fprintf(stderr, "samebits verify: cannot select the reference path: %s\n", sb_last_error());
        return 1;
    }
    sb_arena *arena;
    if (sb_arena_new(&arena, (size_t)4 << 20) != SB_OK) return 1;
    printf("# samebits op test vectors (docs/VERIFY-AND-TRACE.md).\n"
           "# Generated from the reference path (scalar kernels, one thread) by\n"
           "#   samebits verify --generate > tests/vectors/ops.txt\n"
           "#   samebits verify --emit-c tests/vectors/ops.txt > src/cli/verify_vectors.c\n"
           "# Each line: OP SEED quick|full PARAMS OUTPUT=SHA256...\n");
    int rc = 0;
    for (size_t i = 0; i < N_SPECS && !rc; i++) {
        vcase c;
        memset(&c, 0, sizeof c);
        snprintf(c.op, sizeof c.op, "%s", specs[i].op);
        c.seed = specs[i].seed;
        c.quick = specs[i].quick;
        snprintf(c.params, sizeof c.params, "%s", specs[i].params);
        run_ctx r;
        if (run_case(&c, &r, arena, data_dir, (size_t)DEFAULT_MAX_MIB << 20) != SB_OK) {
            fprintf(stderr, "samebits verify: generating %s %s failed: %s\n", c.op, c.params, sb_last_error());
            rc = 1;
        } else if (r.skipped) {
            fprintf(stderr, "samebits verify: cannot generate %s: %s\n", c.op, r.skip_why);
            rc = 1;
        } else {
            line_of(&c, &r, stdout);
        }
    }
    sb_arena_free(arena);
    return rc;
}

static int emit_c(const char *path) {
    char *text = read_file(path);
    if (!text) return 1;
    vcase *cases;
    int count;
    if (!parse_vectors(text, path, &cases, &count)) { free(text); return 1; }
    free(cases);
    printf("/* Generated by `samebits verify --emit-c tests/vectors/ops.txt`: the op test\n"
           " * vectors built into `samebits verify`. Do not edit; regenerate. */\n"
           "extern const char sb_verify_vectors_text[];\n"
           "const char sb_verify_vectors_text[] =\n");
    for (char *line = text, *next; *line; line = next) {
        next = strchr(line, '\n');
        size_t len = next ? (size_t)(next - line) : strlen(line);
        printf("    \"");
        for (size_t i = 0; i < len; i++) {
            char ch = line[i];
            if (ch == '"' || ch == '\\') printf("\\%c", ch);
            else if (ch >= 0x20 && ch < 0x7f) putchar(ch);
            else printf("\\%03o", (unsigned char)ch);
        }
        printf("%s\"\n", next ? "\\n" : "");
        if (!next) break;
        next++;
    }
    printf("    ;\n");
    free(text);
    return 0;
}

static void describe(const vcase *c, const char *out_name, char *buf, size_t cap) {
    snprintf(buf, cap, "%s.%s (%s%sseed %" PRIu64 ")", c->op, out_name, c->params, c->params[0] ? ", " : "",
             c->seed);
}

typedef struct {
    int checked, passed, skipped;
    char failed[1024]; /* "op.output, ..." for the verdict, cut with "..." */
    size_t len;
} tally;

static void add_failure(tally *t, const char *name, const char *config) {
    char item[160];
    int n = snprintf(item, sizeof item, "%s%s%s%s", t->len ? ", " : "", name, config ? "@" : "", config ? config : "");
    if (n < 0) return;
    if (t->len + (size_t)n + 6 < sizeof t->failed) {
        memcpy(t->failed + t->len, item, (size_t)n + 1);
        t->len += (size_t)n;
    } else if (t->len < sizeof t->failed) {
        memcpy(t->failed + t->len, ", ...", 6);
        t->len = sizeof t->failed; /* full: add nothing more */
    }
}

/* How a vector file is run: where from (for messages), the Fashion-MNIST
 * directory, the memory budget of one vector. */
typedef struct {
    const char *src, *data;
    size_t max_bytes;
} run_opts;

/* Runs the cases at the current ISA and thread count; prints FAIL and SKIP
 * lines, PASS lines too when print_pass. config (e.g. "avx2/1") tags failures.
 * Returns false, with a message, at a vector the file may not contain. */
static bool run_cases(const vcase *cases, int count, bool quick, const run_opts *o, sb_arena *arena,
                      bool print_pass, const char *config, tally *t) {
    for (int i = 0; i < count; i++) {
        const vcase *c = &cases[i];
        if (quick && !c->quick) continue;
        char desc[512], name[80];
        run_ctx r;
        sb_status s = run_case(c, &r, arena, o->data, o->max_bytes);
        if (s != SB_OK && r.refused) {
            fflush(stdout);
            fprintf(stderr, "samebits verify: %s:%d: %s\n", o->src, c->lineno, sb_last_error());
            return false;
        }
        if (s == SB_OK && r.skipped) {
            describe(c, "*", desc, sizeof desc);
            if (print_pass) printf("SKIP  %s: %s\n", desc, r.skip_why);
            t->skipped++;
            continue;
        }
        for (int k = 0; k < c->n_out; k++) {
            describe(c, c->out_name[k], desc, sizeof desc);
            t->checked++;
            bool produced = s == SB_OK && k < r.n_out && !strcmp(r.out_name[k], c->out_name[k]);
            if (produced && !memcmp(r.out_hash[k], c->out_hash[k], 32)) {
                t->passed++;
                if (print_pass) printf("PASS  %s\n", desc);
                continue;
            }
            if (config) printf("[%s] ", config);
            if (s != SB_OK) {
                printf("FAIL  %s: %s\n", desc, sb_last_error());
            } else if (!produced) {
                printf("FAIL  %s: the op did not produce this output\n", desc);
            } else {
                char got[65], want[65];
                sb_hex_digest(r.out_hash[k], got);
                sb_hex_digest(c->out_hash[k], want);
                printf("FAIL  %s: got %s, expected %s\n", desc, got, want);
            }
            snprintf(name, sizeof name, "%s.%s", c->op, c->out_name[k]);
            add_failure(t, name, config);
        }
        if (s == SB_OK && r.n_out != c->n_out) {
            printf("%s%s%sFAIL  %s.*: produced %d outputs, the vectors list %d\n", config ? "[" : "",
                   config ? config : "", config ? "] " : "", c->op, r.n_out, c->n_out);
            t->checked++;
            snprintf(name, sizeof name, "%s (output count)", c->op);
            add_failure(t, name, config);
        }
    }
    return true;
}

static int usage_error(const char *a) {
    fprintf(stderr, "samebits verify: unknown or incomplete option '%s'\n"
            "usage: samebits verify [--quick] [--vectors FILE] [--data DIR] [--list]\n"
            "                       [--isa NAME] [--threads N] [--all-isa] [--max-memory MIB]\n"
            "       samebits verify --generate [--data DIR]   (print vectors from the reference path)\n"
            "       samebits verify --emit-c FILE              (C source embedding FILE)\n"
            "       samebits verify --print-vectors            (the embedded vectors)\n", a);
    return 2;
}

int sb_cli_verify(int argc, char **argv) {
    const char *vectors = NULL, *data = "/usr/share/datasets/fashion-mnist", *isa = NULL;
    bool quick = false, list = false, all_isa = false;
    long threads = 0;
    long long max_mib = DEFAULT_MAX_MIB;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--quick")) quick = true;
        else if (!strcmp(a, "--list")) list = true;
        else if (!strcmp(a, "--all-isa")) all_isa = true;
        else if (!strcmp(a, "--vectors") && i + 1 < argc) vectors = argv[++i];
        else if (!strcmp(a, "--data") && i + 1 < argc) data = argv[++i];
        else if (!strcmp(a, "--isa") && i + 1 < argc) isa = argv[++i];
        else if (!strcmp(a, "--threads") && i + 1 < argc) {
            char *end;
            threads = strtol(argv[++i], &end, 10);
            if (*end || threads < 1 || threads > SB_MAX_THREADS) return usage_error(a);
        }
        else if (!strcmp(a, "--max-memory") && i + 1 < argc) {
            char *end;
            errno = 0;
            max_mib = strtoll(argv[++i], &end, 10);
            /* at most 2^40 MiB, so the byte count fits in 64 bits */
            if (!*argv[i] || *end || errno || max_mib < 1 || max_mib > (1LL << 40)) return usage_error(a);
        }
        else if (!strcmp(a, "--generate") && argc == 1) return generate(data);
        else if (!strcmp(a, "--generate") && argc == 3 && !strcmp(argv[1], "--data")) return generate(argv[2]);
        else if (!strcmp(a, "--emit-c") && argc == 2) return emit_c(argv[1]);
        else if (!strcmp(a, "--print-vectors") && argc == 1) { fputs(sb_verify_vectors_text, stdout); return 0; }
        else return usage_error(a);
    }
    if (isa) {
        sb_isa_level level;
        if (sb_isa_from_name(isa, &level) != SB_OK || sb_set_isa(level) != SB_OK) {
            fprintf(stderr, "samebits verify: --isa %s: %s\n", isa, sb_last_error());
            return 2;
        }
    }
    if (threads && sb_set_num_threads((int)threads) != SB_OK) return usage_error("--threads");
    char *text = vectors ? read_file(vectors) : NULL;
    if (vectors && !text) return 2;
    vcase *cases;
    int count;
    if (!parse_vectors(text ? text : sb_verify_vectors_text, vectors ? vectors : "(built-in vectors)", &cases, &count)) {
        free(text);
        return 2;
    }
    free(text);
    if (list) {
        for (int i = 0; i < count; i++)
            for (int k = 0; k < cases[i].n_out && (!quick || cases[i].quick); k++) {
                char desc[512];
                describe(&cases[i], cases[i].out_name[k], desc, sizeof desc);
                printf("%s\n", desc);
            }
        free(cases);
        return 0;
    }
    sb_arena *arena;
    if (sb_arena_new(&arena, (size_t)4 << 20) != SB_OK) { free(cases); return 2; }
    tally t;
    memset(&t, 0, sizeof t);
    const char *src = vectors ? vectors : "built-in";
    run_opts opts = {vectors ? vectors : "(built-in vectors)", data, (size_t)max_mib << 20};
    bool refused = false;
    if (!all_isa) {
        printf("samebits %s verify: %s, %d thread%s, %s vectors%s\n", SB_VERSION_STRING, sb_isa_name(sb_isa()),
               sb_num_threads(), sb_num_threads() == 1 ? "" : "s", src, quick ? " (--quick subset)" : "");
        if (!run_cases(cases, count, quick, &opts, arena, true, NULL, &t)) refused = true;
    } else {
        /* Every instruction set this machine runs, on one thread and on the
         * default (or --threads) count: the contract says all agree. */
        printf("samebits %s verify --all-isa: %s vectors%s\n", SB_VERSION_STRING, src,
               quick ? " (--quick subset)" : "");
        sb_isa_level saved = sb_isa();
        int counts[2] = {1, sb_num_threads()};
        for (int level = 0; level < SB_ISA_COUNT; level++) {
            if (!sb_isa_supported((sb_isa_level)level)) continue;
            for (int j = 0; j < 2; j++) {
                if (j == 1 && counts[1] == 1) break;
                char config[48];
                snprintf(config, sizeof config, "%s/%d", sb_isa_name((sb_isa_level)level), counts[j]);
                if (sb_set_isa((sb_isa_level)level) != SB_OK || sb_set_num_threads(counts[j]) != SB_OK) continue;
                tally one;
                memset(&one, 0, sizeof one);
                if (!run_cases(cases, count, quick, &opts, arena, false, config, &one)) { refused = true; break; }
                printf("%s  %s, %d thread%s (%d of %d)\n", one.passed == one.checked ? "PASS" : "FAIL",
                       sb_isa_name((sb_isa_level)level), counts[j], counts[j] == 1 ? "" : "s", one.passed,
                       one.checked);
                t.checked += one.checked;
                t.passed += one.passed;
                t.skipped = one.skipped;
                if (one.len) add_failure(&t, one.failed, NULL);
            }
            if (refused) break;
        }
        sb_set_isa(saved);
        sb_set_num_threads(counts[1]);
    }
    sb_arena_free(arena);
    free(cases);
    if (refused) return 2;
    if (t.skipped) printf("(%d case%s skipped)\n", t.skipped, t.skipped == 1 ? "" : "s");
    if (t.passed == t.checked) {
        printf("verdict: PASS (%d of %d)\n", t.passed, t.checked);
        return 0;
    }
    printf("verdict: FAIL (%d of %d failed: %s)\n", t.checked - t.passed, t.checked, t.failed);
    return 1;
}
