/* The op runners of `samebits verify`: one function per op of the vector
 * file that reads the vector's parameters, makes its inputs from the seed,
 * runs the public op(s) and hashes every output (docs/VERIFY-AND-TRACE.md
 * lists the ops and their parameters).
 *
 * Vector files are untrusted: every parameter is range-checked, products of
 * sizes are overflow-checked, and every tensor is sized against the
 * per-tensor bound and the vector's memory budget before it is allocated;
 * a vector that fails those checks is refused (run_ctx.refused). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/verify_internal.h"
#include "core/checked.h"
#include "core/internal.h"
#include "samebits/train.h"

#define MAX_ELEMS ((int64_t)1 << 24) /* per tensor: a hostile vector file cannot exhaust memory */

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
 * checked at every step (core/checked.h), so no hostile factor can wrap
 * around. */
static bool product_within(int64_t limit, int n, const int64_t *f) {
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        if (f[i] < 0 || !sb_checked_mul(p, f[i], &p) || p > limit) return false;
    return true;
}

/* Every tensor of a vector is made here: its size is checked against the
 * per-tensor bound and the vector's memory budget before anything is
 * allocated. */
static sb_status alloc_tensor(run_ctx *r, sb_tensor **t, sb_dtype dt, int nd, const int64_t *dims) {
    int64_t numel;
    if (!product_within(MAX_ELEMS, nd, dims) || !sb_checked_numel(nd, dims, &numel)) {
        r->refused = true;
        return sb_fail(SB_ERR_RANGE, "vector '%s %s': a tensor of more than %lld elements", r->c->op,
                       r->c->params, (long long)MAX_ELEMS);
    }
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
    sb_pool2d_params p = SB_POOL2D_PARAMS(2, 2);
    int64_t ceil_mode, cip;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pair(r, "kernel", 2, &p.kernel_h, &p.kernel_w));
    SB_TRY(pair(r, "stride", 0, &p.stride_h, &p.stride_w));
    SB_TRY(pair(r, "pad", 0, &p.pad_h, &p.pad_w));
    SB_TRY(pair(r, "dilation", 1, &p.dilation_h, &p.dilation_w));
    SB_TRY(pint(r, "divisor", 0, &p.divisor_override));
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

static sb_status pick(run_ctx *r, const char *key, const char *const *names, int n, int *out_i);

/* 2-D padding: x, lr=LEFTxRIGHT, tb=TOPxBOTTOM, mode, value (constant). */
static const char *const pad_names[] = {"constant", "reflect", "replicate", "circular"};
static sb_status run_pad2d(run_ctx *r) {
    shp sx;
    sb_pad2d_params p;
    int mode;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pair(r, "lr", 0, &p.left, &p.right));
    SB_TRY(pair(r, "tb", 0, &p.top, &p.bottom));
    SB_TRY(pick(r, "mode", pad_names, 4, &mode));
    SB_TRY(pflt(r, "value", 0.0f, &p.value));
    p.mode = (sb_pad_mode)mode;
    if (sx.nd != 4) return bad_param(r, "x");
    shp sy = {4, {sx.d[0], sx.d[1], 0, 0}};
    if (!sb_checked_add(sx.d[2], p.top, &sy.d[2]) || !sb_checked_add(sy.d[2], p.bottom, &sy.d[2]))
        return bad_param(r, "tb");
    if (!sb_checked_add(sx.d[3], p.left, &sy.d[3]) || !sb_checked_add(sy.d[3], p.right, &sy.d[3]))
        return bad_param(r, "lr");
    sb_tensor *x, *y, *dy, *dx;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(tnew(r, &y, SB_F32, &sy));
    SB_TRY(input(r, &dy, &sy, 2));
    SB_TRY(zeros_like(r, &dx, x));
    SB_TRY(sb_pad2d_forward(x, &p, y));
    SB_TRY(out(r, "forward", y));
    SB_TRY(sb_pad2d_backward(dy, &p, dx));
    return out(r, "backward", dx);
}

/* Interpolation: x (N, C, S...), out=O... (the spatial output size), mode,
 * align (0/1), scale (one scale factor for every axis, 0 for none; input()
 * multiplies the random inputs by the same parameter). */
static const char *const interp_names[] = {"nearest", "nearest-exact", "linear", "cubic"};
static sb_status run_interpolate(run_ctx *r) {
    shp sx, so;
    int mode;
    int64_t align;
    float scale;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pshape(r, "out", &so));
    SB_TRY(pick(r, "mode", interp_names, 4, &mode));
    SB_TRY(pint(r, "align", 0, &align));
    SB_TRY(pflt(r, "scale", 0.0f, &scale));
    if (sx.nd < 3 || sx.nd > 5) return bad_param(r, "x");
    if (so.nd != sx.nd - 2) return bad_param(r, "out");
    sb_interpolate_params p = {(sb_interp_mode)mode, align != 0, {0.0, 0.0, 0.0}};
    for (int k = 0; k < so.nd; k++) p.scales[k] = scale;
    shp sy = {sx.nd, {sx.d[0], sx.d[1]}};
    for (int k = 0; k < so.nd; k++) sy.d[2 + k] = so.d[k];
    sb_tensor *x, *y, *dy, *dx;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(tnew(r, &y, SB_F32, &sy));
    SB_TRY(input(r, &dy, &sy, 2));
    SB_TRY(zeros_like(r, &dx, x));
    SB_TRY(sb_interpolate_forward(x, &p, y));
    SB_TRY(out(r, "forward", y));
    SB_TRY(sb_interpolate_backward(dy, &p, dx));
    return out(r, "backward", dx);
}

/* Grid sampling: x (N, C, H, W), out=OHxOW (the grid's points), mode,
 * padding, align (0/1); the grid's values are normal draws (stream 3), so
 * some fall outside [-1, 1]. */
static const char *const grid_mode_names[] = {"bilinear", "nearest"};
static const char *const grid_pad_names[] = {"zeros", "border", "reflection"};
static sb_status run_grid_sample(run_ctx *r) {
    shp sx, so;
    int mode, pad;
    int64_t align;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pshape(r, "out", &so));
    SB_TRY(pick(r, "mode", grid_mode_names, 2, &mode));
    SB_TRY(pick(r, "padding", grid_pad_names, 3, &pad));
    SB_TRY(pint(r, "align", 0, &align));
    if (sx.nd != 4) return bad_param(r, "x");
    if (so.nd != 2) return bad_param(r, "out");
    sb_grid_sample_params p = {(sb_grid_mode)mode, (sb_grid_padding)pad, align != 0};
    shp sg = {4, {sx.d[0], so.d[0], so.d[1], 2}}, sy = {4, {sx.d[0], sx.d[1], so.d[0], so.d[1]}};
    sb_tensor *x, *grid, *y, *dy, *dx, *dgrid;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(input(r, &grid, &sg, 3));
    SB_TRY(tnew(r, &y, SB_F32, &sy));
    SB_TRY(input(r, &dy, &sy, 2));
    SB_TRY(zeros_like(r, &dx, x));
    SB_TRY(zeros_like(r, &dgrid, grid));
    SB_TRY(sb_grid_sample_forward(x, grid, &p, y));
    SB_TRY(out(r, "forward", y));
    SB_TRY(sb_grid_sample_backward(dy, x, grid, &p, dx, dgrid));
    SB_TRY(out(r, "backward_x", dx));
    return out(r, "backward_grid", dgrid);
}

static const char *const binary_names[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
static const char *const unary_names[] = {"neg", "abs", "sqrt", "exp", "log", "square", "reciprocal",
                                          "sin", "cos", "exp2", "log2", "rsqrt"};

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
    SB_TRY(pick(r, "op", unary_names, 12, &op));
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
                                        "softplus", "hardtanh", "hardsigmoid", "hardswish",
                                        "elu", "mish", "logsigmoid", "hardshrink", "softshrink",
                                        "threshold"};

static sb_status run_activation(run_ctx *r) {
    shp sx;
    int a = 0;
    float slope, beta, threshold, min_val, max_val, alpha, scale, input_scale, lambd, value;
    SB_TRY(pick(r, "fn", act_names, 17, &a));
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pflt(r, "slope", 0.01f, &slope));
    SB_TRY(pflt(r, "beta", 1.0f, &beta));
    SB_TRY(pflt(r, "threshold", 20.0f, &threshold));
    SB_TRY(pflt(r, "min", -1.0f, &min_val));
    SB_TRY(pflt(r, "max", 1.0f, &max_val));
    SB_TRY(pflt(r, "alpha", 1.0f, &alpha));
    SB_TRY(pflt(r, "elu_scale", 1.0f, &scale));
    SB_TRY(pflt(r, "input_scale", 1.0f, &input_scale));
    SB_TRY(pflt(r, "lambd", 0.5f, &lambd));
    SB_TRY(pflt(r, "value", 0.0f, &value));
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
    case 11:
        SB_TRY(sb_elu_forward(x, alpha, scale, input_scale, y));
        SB_TRY(sb_elu_backward(x, dy, alpha, scale, input_scale, dx));
        break;
    case 12: SB_TRY(sb_mish_forward(x, y)); SB_TRY(sb_mish_backward(x, dy, dx)); break;
    case 13: SB_TRY(sb_logsigmoid_forward(x, y)); SB_TRY(sb_logsigmoid_backward(x, dy, dx)); break;
    case 14:
        SB_TRY(sb_hardshrink_forward(x, lambd, y));
        SB_TRY(sb_hardshrink_backward(x, dy, lambd, dx));
        break;
    case 15:
        SB_TRY(sb_softshrink_forward(x, lambd, y));
        SB_TRY(sb_softshrink_backward(x, dy, lambd, dx));
        break;
    case 16:
        SB_TRY(sb_threshold_forward(x, threshold, value, y));
        SB_TRY(sb_threshold_backward(x, dy, threshold, dx));
        break;
    default: SB_TRY(sb_hardswish_forward(x, y)); SB_TRY(sb_hardswish_backward(x, dy, dx)); break;
    }
    SB_TRY(out(r, "forward", y));
    return out(r, "backward", dx);
}

/* PReLU with one weight per channel (channels=1: the shared weight). */
static sb_status run_prelu(run_ctx *r) {
    shp sx;
    int64_t shared;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pint(r, "shared", 0, &shared));
    if (sx.nd < 1) return bad_param(r, "x");
    shp sw = {1, {shared || sx.nd < 2 ? 1 : sx.d[1]}};
    sb_tensor *x, *w, *y, *dy, *dx, *dw;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(input(r, &w, &sw, 2));
    SB_TRY(zeros_like(r, &y, x));
    SB_TRY(sb_prelu_forward(x, w, y));
    SB_TRY(out(r, "forward", y));
    SB_TRY(input(r, &dy, &sx, 3));
    SB_TRY(zeros_like(r, &dx, x));
    SB_TRY(zeros_like(r, &dw, w));
    SB_TRY(sb_prelu_backward(x, w, dy, dx, dw));
    SB_TRY(out(r, "backward_x", dx));
    return out(r, "backward_weight", dw);
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

/* cumsum / cumprod along dim, forward and backward (contract section 10). */
static const char *const cumulative_names[] = {"cumsum", "cumprod"};

static sb_status run_cumulative(run_ctx *r) {
    shp sx;
    int64_t dim;
    int fn;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pick(r, "fn", cumulative_names, 2, &fn));
    SB_TRY(pint(r, "dim", 0, &dim));
    if (sx.nd < 1 || dim < -sx.nd || dim >= sx.nd) return bad_param(r, "dim");
    sb_tensor *x, *y, *dy, *dx;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(zeros_like(r, &y, x));
    SB_TRY(input(r, &dy, &sx, 2));
    SB_TRY(zeros_like(r, &dx, x));
    if (fn == 0) {
        SB_TRY(sb_cumsum(x, (int)dim, y));
        SB_TRY(sb_cumsum_backward(dy, (int)dim, dx));
    } else {
        SB_TRY(sb_cumprod(x, (int)dim, y));
        SB_TRY(sb_cumprod_backward(x, y, dy, (int)dim, dx));
    }
    SB_TRY(out(r, "forward", y));
    return out(r, "backward", dx);
}

/* Index positions (shape s) in [0, len), drawn from the case's seed. */
static sb_status positions(run_ctx *r, sb_tensor **t, const shp *s, int64_t len, uint64_t stream) {
    SB_TRY(tnew(r, t, SB_I64, s));
    int64_t *p = (*t)->data, n = sb_tensor_numel(*t);
    for (int64_t i = 0; i < n; i++)
        p[i] = (int64_t)sb_rng_bounded_at(r->c->seed, stream, (uint64_t)i, (uint32_t)len);
    return SB_OK;
}

/* scatter_reduce (contract section 18): src x (the terms), out with size
 * len along dim, index drawn in [0, len); reduce and include_self (self). */
static const char *const scatter_reduce_names[] = {"sum", "prod", "mean", "amax", "amin"};

static sb_status run_scatter_reduce(run_ctx *r) {
    shp sx;
    int64_t dim, len, self;
    int op;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pick(r, "reduce", scatter_reduce_names, 5, &op));
    SB_TRY(pint(r, "dim", 0, &dim));
    SB_TRY(pint(r, "len", 1, &len));
    SB_TRY(pint(r, "self", 1, &self));
    if (sx.nd < 1 || dim < 0 || dim >= sx.nd) return bad_param(r, "dim");
    if (len < 1 || len > 0xffffffffLL) return bad_param(r, "len");
    shp so = sx;
    so.d[dim] = len;
    sb_tensor *src, *index, *o;
    SB_TRY(input(r, &src, &sx, 1));
    SB_TRY(positions(r, &index, &sx, len, 2));
    SB_TRY(input(r, &o, &so, 3));
    SB_TRY(sb_scatter_reduce((int)dim, index, src, (sb_scatter_reduce_op)op, self != 0, o));
    return out(r, "forward", o);
}

/* sort / topk / kthvalue / median along dim (contract section 18; the
 * keepdim form), values, indices and the backward's scatter; k and flag
 * (descending / largest) where they apply. */
static const char *const sort_names[] = {"sort", "topk", "kthvalue", "median"};

static sb_status run_sort(run_ctx *r) {
    shp sx;
    int64_t dim, k, flag;
    int fn;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pick(r, "fn", sort_names, 4, &fn));
    SB_TRY(pint(r, "dim", 0, &dim));
    SB_TRY(pint(r, "k", 1, &k));
    SB_TRY(pint(r, "flag", 0, &flag));
    if (sx.nd < 1 || dim < 0 || dim >= sx.nd) return bad_param(r, "dim");
    int64_t n = sx.d[dim];
    if ((fn == 1 && (k < 0 || k > n)) || (fn == 2 && (k < 1 || k > n))) return bad_param(r, "k");
    if (n < 1) return bad_param(r, "x");
    shp so = sx;
    so.d[dim] = fn == 0 ? n : fn == 1 ? k : 1;
    sb_tensor *x, *v, *ix, *dy, *dx;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(tnew(r, &v, SB_F32, &so));
    SB_TRY(tnew(r, &ix, SB_I64, &so));
    if (fn == 0) SB_TRY(sb_sort(x, (int)dim, flag != 0, v, ix));
    if (fn == 1) SB_TRY(sb_topk(x, k, (int)dim, flag != 0, v, ix));
    if (fn == 2) SB_TRY(sb_kthvalue(x, k, (int)dim, true, v, ix));
    if (fn == 3) SB_TRY(sb_median(x, (int)dim, true, v, ix));
    SB_TRY(out(r, "values", v));
    SB_TRY(out(r, "indices", ix));
    SB_TRY(input(r, &dy, &so, 2));
    SB_TRY(zeros_like(r, &dx, x));
    SB_TRY(sb_sort_backward(dy, (int)dim, ix, dx));
    return out(r, "backward", dx);
}

/* bincount (n positions in [0, bins), counts and the weighted sums) and
 * histc (x over bins bins of [lo, hi]; lo == hi: x's range). */
static const char *const histogram_names[] = {"bincount", "histc"};

static sb_status run_histogram(run_ctx *r) {
    shp sx;
    int64_t bins;
    float lo, hi;
    int fn;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pick(r, "fn", histogram_names, 2, &fn));
    SB_TRY(pint(r, "bins", 1, &bins));
    SB_TRY(pflt(r, "lo", 0.0f, &lo));
    SB_TRY(pflt(r, "hi", 0.0f, &hi));
    if (bins < 1 || bins > 0xffffffffLL) return bad_param(r, "bins");
    shp sb = {1, {bins}};
    sb_tensor *o;
    SB_TRY(tnew(r, &o, SB_F32, &sb));
    if (fn == 1) {
        sb_tensor *x;
        SB_TRY(input(r, &x, &sx, 1));
        SB_TRY(sb_histc(x, bins, lo, hi, o));
        return out(r, "forward", o);
    }
    if (sx.nd != 1) return bad_param(r, "x");
    sb_tensor *x, *w, *counts;
    SB_TRY(positions(r, &x, &sx, bins, 1));
    SB_TRY(input(r, &w, &sx, 2));
    SB_TRY(tnew(r, &counts, SB_I64, &sb));
    SB_TRY(sb_bincount(x, NULL, counts));
    SB_TRY(out(r, "counts", counts));
    SB_TRY(sb_bincount(x, w, o));
    return out(r, "weighted", o);
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

/* sb_class_loss_*: cross-entropy (kind=ce) or NLL (kind=nll) of x (N, C,
 * d1..dk) against labels (N, d1..dk), with class weights in [0.25, 2.25)
 * when w=1. */
static const char *const class_kinds[] = {"ce", "nll"};

static sb_status run_class_loss(run_ctx *r) {
    shp sx, sl;
    int64_t red, ignore, use_w;
    int kind = 0;
    float smoothing;
    SB_TRY(loss_setup(r, &sx, &red, &ignore, &sl));
    SB_TRY(pick(r, "kind", class_kinds, 2, &kind));
    SB_TRY(pflt(r, "smoothing", 0.0f, &smoothing));
    SB_TRY(pint(r, "w", 0, &use_w));
    if (sx.nd < 2) return bad_param(r, "x");
    shp st = {sx.nd - 1, {sx.d[0]}}; /* x's shape without dim 1 */
    for (int i = 2; i < sx.nd; i++) st.d[i - 1] = sx.d[i];
    if (red == SB_LOSS_NONE) sl = st;
    sb_class_loss p = {kind ? SB_LOSS_NLL : SB_LOSS_CROSS_ENTROPY, smoothing, ignore};
    sb_tensor *x, *t, *w = NULL, *loss, *dloss, *dx;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(tnew(r, &t, SB_I64, &st));
    int64_t *y = t->data;
    for (int64_t i = 0; i < sb_tensor_numel(t); i++)
        y[i] = ignore >= 0 && i % 5 == 3 ? ignore
                                         : (int64_t)sb_rng_bounded_at(r->c->seed, 2, (uint64_t)i, (uint32_t)sx.d[1]);
    if (use_w) {
        shp sw = {1, {sx.d[1]}};
        SB_TRY(input(r, &w, &sw, 4));
        float *v = w->data;
        for (int64_t j = 0; j < sx.d[1]; j++) v[j] = 0.25f + sb_rng_uniform_at(r->c->seed, 4, (uint64_t)j) * 2.0f;
    }
    SB_TRY(tnew(r, &loss, SB_F32, &sl));
    SB_TRY(input(r, &dloss, &sl, 3));
    SB_TRY(zeros_like(r, &dx, x));
    SB_TRY(sb_class_loss_forward(&p, x, t, w, (sb_loss_reduction)red, loss));
    SB_TRY(sb_class_loss_backward(&p, x, t, w, (sb_loss_reduction)red, dloss, dx));
    SB_TRY(out(r, "forward", loss));
    return out(r, "backward", dx);
}

/* sb_ctc_loss_*: x = TxNxC log-probabilities (normal values: the loss needs
 * no normalisation), labels of up to s per item (never the blank), input
 * lengths T - (0..2), concatenated targets when concat=1. */
static sb_status run_ctc_loss(run_ctx *r) {
    shp sx, sl;
    int64_t red, ignore, S, blank, zero_inf, concat;
    SB_TRY(loss_setup(r, &sx, &red, &ignore, &sl));
    SB_TRY(pint(r, "s", 3, &S));
    SB_TRY(pint(r, "blank", 0, &blank));
    SB_TRY(pint(r, "zero_inf", 0, &zero_inf));
    SB_TRY(pint(r, "concat", 0, &concat));
    if (sx.nd != 3 || sx.d[2] < 2) return bad_param(r, "x");
    if (S < 0 || S > 64) return bad_param(r, "s");
    int64_t T = sx.d[0], N = sx.d[1], C = sx.d[2];
    sl = red == SB_LOSS_NONE ? (shp){1, {N}} : (shp){0, {0}};
    shp sn = {1, {N}}, st = concat ? (shp){1, {N * S}} : (shp){2, {N, S}};
    sb_tensor *x, *t, *il, *tl, *loss, *dloss, *dx;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(tnew(r, &il, SB_I64, &sn));
    SB_TRY(tnew(r, &tl, SB_I64, &sn));
    SB_TRY(tnew(r, &t, SB_I64, &st));
    int64_t *in_len = il->data, *tg_len = tl->data, *lab = t->data, at = 0;
    for (int64_t b = 0; b < N; b++) {
        in_len[b] = T - (int64_t)sb_rng_bounded_at(r->c->seed, 5, (uint64_t)b, 3);
        tg_len[b] = (int64_t)sb_rng_bounded_at(r->c->seed, 6, (uint64_t)b, (uint32_t)S + 1);
        if (!concat) at = b * S;
        for (int64_t i = 0; i < (concat ? tg_len[b] : S); i++) {
            int64_t v = (int64_t)sb_rng_bounded_at(r->c->seed, 7, (uint64_t)(b * S + i), (uint32_t)C - 1);
            lab[at++] = v >= blank ? v + 1 : v;
        }
    }
    for (; concat && at < N * S; at++) lab[at] = 0;
    if (blank < 0 || blank >= C) return bad_param(r, "blank");
    sb_ctc_loss p = {blank, zero_inf != 0};
    SB_TRY(tnew(r, &loss, SB_F32, &sl));
    SB_TRY(input(r, &dloss, &sl, 3));
    SB_TRY(zeros_like(r, &dx, x));
    SB_TRY(sb_ctc_loss_forward(&p, x, t, il, tl, (sb_loss_reduction)red, loss));
    SB_TRY(sb_ctc_loss_backward(&p, x, t, il, tl, (sb_loss_reduction)red, dloss, dx));
    SB_TRY(out(r, "forward", loss));
    return out(r, "backward", dx);
}

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

/* The elementwise losses by kind, with a weight and pos_weight when asked;
 * BCE's x is mapped into [0, 1) (v^2 / (1 + v^2)), as it requires. */
static const char *const loss_kinds[] = {"mse", "l1", "smooth_l1", "huber",
                                         "bce", "bce_with_logits", "kl_div"};

static sb_status run_elementwise_loss(run_ctx *r) {
    shp sx, sl;
    int64_t red, ignore, use_w, use_pw, log_target;
    int kind = 0;
    float beta;
    SB_TRY(loss_setup(r, &sx, &red, &ignore, &sl));
    SB_TRY(pick(r, "kind", loss_kinds, (int)(sizeof loss_kinds / sizeof *loss_kinds), &kind));
    SB_TRY(pflt(r, "beta", 1.0f, &beta));
    SB_TRY(pint(r, "w", 0, &use_w));
    SB_TRY(pint(r, "pw", 0, &use_pw));
    SB_TRY(pint(r, "log_target", 0, &log_target));
    sb_elementwise_loss p = {(sb_elementwise_loss_kind)kind, beta, log_target != 0};
    sb_tensor *x, *y, *w = NULL, *pw = NULL, *loss, *dloss, *dx, *dy = NULL;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(input(r, &y, &sx, 2));
    if (use_w) SB_TRY(input(r, &w, &sx, 4));
    if (use_pw) SB_TRY(input(r, &pw, &sx, 5));
    if (p.kind == SB_LOSS_BCE) {
        float *v = x->data;
        for (int64_t i = 0; i < sb_tensor_numel(x); i++) v[i] = v[i] * v[i] / (1.0f + v[i] * v[i]);
    }
    SB_TRY(tnew(r, &loss, SB_F32, &sl));
    SB_TRY(input(r, &dloss, &sl, 3));
    SB_TRY(zeros_like(r, &dx, x));
    if (p.kind < SB_LOSS_BCE) SB_TRY(zeros_like(r, &dy, x));
    SB_TRY(sb_elementwise_loss_forward(&p, x, y, w, pw, (sb_loss_reduction)red, loss));
    SB_TRY(sb_elementwise_loss_backward(&p, x, y, w, pw, (sb_loss_reduction)red, dloss, dx, dy));
    SB_TRY(out(r, "forward", loss));
    SB_TRY(out(r, "backward_x", dx));
    return dy ? out(r, "backward_y", dy) : SB_OK;
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

static sb_status run_rms_norm(run_ctx *r) {
    shp sx;
    int64_t nn, affine;
    float eps;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pint(r, "normalized", 1, &nn));
    SB_TRY(pint(r, "affine", 1, &affine));
    SB_TRY(pflt(r, "eps", 1e-5f, &eps));
    if (nn < 1 || nn > sx.nd) return bad_param(r, "normalized");
    shp sw = {(int)nn, {0}}, ss = {sx.nd - (int)nn, {0}};
    for (int k = 0; k < nn; k++) sw.d[k] = sx.d[sx.nd - nn + k];
    for (int k = 0; k < ss.nd; k++) ss.d[k] = sx.d[k];
    sb_tensor *x, *w = NULL, *y, *rrms, *dy, *dx, *dw = NULL;
    SB_TRY(input(r, &x, &sx, 1));
    if (affine) SB_TRY(input(r, &w, &sw, 2));
    SB_TRY(zeros_like(r, &y, x));
    SB_TRY(tnew(r, &rrms, SB_F32, &ss));
    SB_TRY(sb_rms_norm_forward(x, (int)nn, w, eps, y, rrms));
    SB_TRY(out(r, "forward", y));
    SB_TRY(out(r, "save_rrms", rrms));
    SB_TRY(input(r, &dy, &sx, 4));
    SB_TRY(zeros_like(r, &dx, x));
    if (affine) SB_TRY(zeros_like(r, &dw, w));
    SB_TRY(sb_rms_norm_backward(dy, x, (int)nn, w, rrms, dx, dw));
    SB_TRY(out(r, "backward_x", dx));
    return affine ? out(r, "backward_w", dw) : SB_OK;
}

static sb_status run_group_norm(run_ctx *r) {
    shp sx;
    int64_t groups;
    float eps;
    SB_TRY(pshape(r, "x", &sx));
    SB_TRY(pint(r, "groups", 1, &groups));
    SB_TRY(pflt(r, "eps", 1e-5f, &eps));
    if (sx.nd < 2) return bad_param(r, "x");
    shp sc = {1, {sx.d[1]}}, ss = {2, {sx.d[0], groups}};
    sb_tensor *x, *w, *b, *y, *mean, *rstd, *dy, *dx, *dw, *db;
    SB_TRY(input(r, &x, &sx, 1));
    SB_TRY(input(r, &w, &sc, 2));
    SB_TRY(input(r, &b, &sc, 3));
    SB_TRY(zeros_like(r, &y, x));
    SB_TRY(tnew(r, &mean, SB_F32, &ss));
    SB_TRY(tnew(r, &rstd, SB_F32, &ss));
    SB_TRY(sb_group_norm_forward(x, groups, w, b, eps, y, mean, rstd));
    SB_TRY(out(r, "forward", y));
    SB_TRY(out(r, "save_rstd", rstd));
    SB_TRY(input(r, &dy, &sx, 4));
    SB_TRY(zeros_like(r, &dx, x));
    SB_TRY(zeros_like(r, &dw, w));
    SB_TRY(zeros_like(r, &db, b));
    SB_TRY(sb_group_norm_backward(dy, x, groups, w, mean, rstd, dx, dw, db));
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

/* Scaled dot-product attention (contract section 19): q (B, H, Lq, E),
 * k (B, H, Lk, E), v (B, H, Lk, Ev); mask none, float (Lq, Lk) added, or
 * boolean (B, 1, 1, Lk) key padding; causal 0/1/2 as sb_sdpa_causal;
 * scale 0 means the default. */
static const char *const sdpa_masks[] = {"none", "float", "bool"};

static sb_status run_sdpa(run_ctx *r) {
    shp sq;
    int64_t lk, ev, causal, offset;
    float scale, p;
    int mask_kind;
    SB_TRY(pshape(r, "q", &sq));
    SB_TRY(pint(r, "lk", 0, &lk));
    SB_TRY(pint(r, "ev", 0, &ev));
    SB_TRY(pint(r, "causal", 0, &causal));
    SB_TRY(pint(r, "offset", 0, &offset));
    SB_TRY(pflt(r, "attn_scale", 0.0f, &scale));
    SB_TRY(pflt(r, "p", 0.0f, &p));
    SB_TRY(pick(r, "mask", sdpa_masks, 3, &mask_kind));
    if (sq.nd != 4) return bad_param(r, "q");
    if (lk < 1 || lk > 4096) return bad_param(r, "lk");
    if (ev < 1 || ev > 4096) return bad_param(r, "ev");
    if (causal < 0 || causal > 2) return bad_param(r, "causal");
    if (offset < 0) return bad_param(r, "offset");
    int64_t b = sq.d[0], h = sq.d[1], lq = sq.d[2], e = sq.d[3];
    if (scale == 0.0f) SB_TRY(sb_sdpa_default_scale(e, &scale));
    shp sk = {4, {b, h, lk, e}}, sv = {4, {b, h, lk, ev}}, so = {4, {b, h, lq, ev}},
        sp = {4, {b, h, lq, lk}}, sfm = {2, {lq, lk}}, sbm = {4, {b, 1, 1, lk}};
    sb_tensor *q, *k, *v, *mask = NULL, *o, *probs, *dout, *dq, *dk, *dv;
    SB_TRY(input(r, &q, &sq, 1));
    SB_TRY(input(r, &k, &sk, 2));
    SB_TRY(input(r, &v, &sv, 3));
    if (mask_kind == 1) SB_TRY(input(r, &mask, &sfm, 4));
    if (mask_kind == 2) {
        /* Keys kept or dropped from a Philox draw; key 0 always kept. */
        SB_TRY(tnew(r, &mask, SB_I32, &sbm));
        int32_t *m = mask->data;
        for (int64_t i = 0; i < b * lk; i++)
            m[i] = i % lk == 0 || sb_rng_bounded_at(r->c->seed, 5, (uint64_t)i, 4) != 0;
    }
    SB_TRY(tnew(r, &o, SB_F32, &so));
    SB_TRY(tnew(r, &probs, SB_F32, &sp));
    sb_sdpa_causal c = (sb_sdpa_causal)causal;
    uint64_t seed = r->c->seed, off = (uint64_t)offset;
    SB_TRY(sb_sdpa_forward(q, k, v, mask, c, scale, p, seed, 6, off, o, probs));
    SB_TRY(out(r, "forward", o));
    SB_TRY(out(r, "probs", probs));
    SB_TRY(input(r, &dout, &so, 7));
    SB_TRY(zeros_like(r, &dq, q));
    SB_TRY(zeros_like(r, &dk, k));
    SB_TRY(zeros_like(r, &dv, v));
    SB_TRY(sb_sdpa_backward(dout, q, k, v, mask, c, scale, p, seed, 6, off, probs, dq, dk, dv));
    SB_TRY(out(r, "backward_q", dq));
    SB_TRY(out(r, "backward_k", dk));
    return out(r, "backward_v", dv);
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

/* sb_powf over pairs: every pair of a grid of special and exact-case
 * values (signed zeros, infinities, NaN, +-1, negative bases, halfway
 * results such as 103041^1.5 and 2^-150), then a Philox sweep of n pairs:
 * x over [2^-8, 2^8] or any bit pattern, y scaled so that x^y stays in or
 * near the float range. */
static const uint32_t pow_grid[] = {
    0x00000000u, 0x80000000u, 0x3f800000u, 0xbf800000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
    0x3f000000u, 0x40000000u, 0xc0000000u, 0x40400000u, 0xc0400000u, 0x3fc00000u, 0xbf000000u,
    0x47c94080u, /* 103041 = 321^2 */
    0x1a000000u, /* 2^-75 */
    0x00000001u, 0x7f7fffffu, 0x4b800000u, 0x4b7fffffu, 0x42f00000u, 0xc2f00000u,
};
#define N_POW_GRID (int64_t)(sizeof pow_grid / sizeof pow_grid[0])

static sb_status run_powf(run_ctx *r) {
    int64_t n;
    SB_TRY(pint(r, "n", 0, &n));
    if (n < 0 || n > MAX_ELEMS - N_POW_GRID * N_POW_GRID) return bad_param(r, "n");
    int64_t count = N_POW_GRID * N_POW_GRID + n;
    shp s = {1, {count}};
    sb_tensor *x, *y, *z;
    SB_TRY(tnew(r, &x, SB_F32, &s));
    SB_TRY(tnew(r, &y, SB_F32, &s));
    SB_TRY(tnew(r, &z, SB_F32, &s));
    uint32_t *xb = x->data, *yb = y->data;
    int64_t k = 0;
    for (int64_t i = 0; i < N_POW_GRID; i++)
        for (int64_t j = 0; j < N_POW_GRID; j++, k++) {
            xb[k] = pow_grid[i];
            yb[k] = pow_grid[j];
        }
    for (int64_t i = 0; i < n; i++, k++) {
        uint32_t w[4];
        sb_rng_block(r->c->seed, 12, (uint64_t)i, 0, w);
        float xv = (float)(w[0] >> 8) * 0x1p-24f + 1.0f;           /* [1, 2) */
        xv *= (float)(1 << (w[1] % 9)) / (float)(1 << (w[1] / 9 % 9)); /* 2^-8 .. 2^8 */
        xb[k] = i % 4 == 3 ? w[2] : sb_f32_bits(xv);
        yb[k] = sb_f32_bits((float)(int32_t)w[3] * 0x1p-25f);         /* |y| < 64 */
    }
    float *xv = x->data, *yv = y->data, *zv = z->data;
    for (int64_t i = 0; i < count; i++) zv[i] = sb_powf(xv[i], yv[i]);
    return out(r, "scalar", z);
}

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

/* ---- the correctly rounded functions ---- */
static const char *const math_names[] = {"expf", "expm1f", "logf",  "log1pf", "tanhf",
                                         "erff", "exp2f",  "log2f", "sinf",   "cosf"};
static float (*const math_fns[])(float) = {sb_expf, sb_expm1f, sb_logf,  sb_log1pf, sb_tanhf,
                                           sb_erff, sb_exp2f,  sb_log2f, sb_sinf,   sb_cosf};
#define N_MATH (int)(sizeof math_names / sizeof math_names[0])

/* Inputs closest to a rounding boundary (found by the exhaustive run of
 * tests/test_math.c) and the edges where results overflow, become
 * subnormal, saturate or vanish; each edge is taken with its 4 neighbours
 * on both sides. */
static const uint32_t math_hard[N_MATH][12] = {
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
    {0x3b429d37u, 0xb52d1f9au, 0xbcf3a937u, 0xc3160000u, 0xb8d3d026u, 0xbaec2b40u, 0x3a07857cu,
     0xbe1f29deu, 0x3c02a9adu, 0x36879cf7u, 0xb466d4cbu, 0x33b8aa3bu},
    {0x3ea07ab9u, 0x002452a4u, 0x7f114a90u, 0x0048a548u, 0x7e914a90u, 0x00914a90u, 0x7e114a90u,
     0x01114a90u, 0x7d914a90u, 0x01914a90u, 0x7d114a90u, 0x02114a90u},
    /* sinf, cosf: no rows (all zero) in these vectors; their hard cases,
     * from the exhaustive run, are checked by tests/test_math.c. */
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
    SB_TRY(pick(r, "fn", math_names, N_MATH, &f));
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
    {"adaptive_avg_pool2d", run_adaptive_avg_pool2d}, {"pad2d", run_pad2d},
    {"interpolate", run_interpolate},
    {"grid_sample", run_grid_sample},
    {"binary", run_binary},         {"unary", run_unary},
    {"activation", run_activation}, {"reduce", run_reduce},
    {"softmax", run_softmax_op},    {"log_softmax", run_log_softmax},
    {"cross_entropy", run_ce},      {"nll_loss", run_nll},
    {"class_loss", run_class_loss}, {"ctc_loss", run_ctc_loss},
    {"mse", run_mse},               {"batch_norm", run_batch_norm},
    {"elementwise_loss", run_elementwise_loss},
    {"layer_norm", run_layer_norm}, {"group_norm", run_group_norm},
    {"rms_norm", run_rms_norm}, {"dropout", run_dropout},
    {"prelu", run_prelu},           {"cumulative", run_cumulative},
    {"sdpa", run_sdpa},
    {"scatter_reduce", run_scatter_reduce}, {"sort", run_sort},
    {"histogram", run_histogram},
    {"sgd", run_sgd},               {"adam", run_adam},
    {"rng", run_rng},               {"math", run_math},
    {"powf", run_powf},
    {"ssum", run_ssum},             {"train_lenet5", run_train_lenet5},
    {"train_fmnist", run_train_fmnist}, {"autograd", run_autograd},
};
#define N_RUNNERS (sizeof runners / sizeof runners[0])

static const runner *find_runner(const char *op) {
    for (size_t i = 0; i < N_RUNNERS; i++)
        if (!strcmp(runners[i].op, op)) return &runners[i];
    return NULL;
}

bool sb_verify_known_op(const char *op) { return find_runner(op) != NULL; }

sb_status sb_verify_run_case(const vcase *c, run_ctx *r, sb_arena *arena, const char *data_dir,
                             size_t max_bytes) {
    memset(r, 0, sizeof *r);
    r->c = c;
    r->arena = arena;
    r->data_dir = data_dir;
    r->max_bytes = max_bytes;
    sb_arena_reset(arena);
    sb_clear_error();
    return find_runner(c->op)->run(r);
}
