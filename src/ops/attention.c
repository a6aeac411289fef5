/* Tensor-level scaled dot-product attention (include/samebits/attention.h):
 * validation, the geometry (src/ref/ref_attention.h), and the device's
 * attention entries (on the CPU the fast kernels of src/cpu/attention.c,
 * bit for bit src/ref/attention.c). */
#include <math.h>
#include "samebits/attention.h"
#include "samebits/random.h"
#include "core/checked.h"
#include "core/fpenv.h"
#include "ops/validate.h"

sb_status sb_sdpa_default_scale(int64_t e, float *scale) {
    SB_FPENV_GUARD();
    const char *fn = "sb_sdpa_default_scale";
    if (!scale) return sb_fail(SB_ERR_NULL, "%s: scale is NULL", fn);
    if (e < 1) return sb_fail(SB_ERR_ARG, "%s: e = %lld (the head size must be >= 1)", fn, (long long)e);
    /* Two binary64 IEEE operations (sqrt is one), then one rounding: the
     * value PyTorch computes in binary64, as the float32 nearest to it. */
    *scale = (float)(1.0 / sqrt((double)e));
    return SB_OK;
}

/* The (..., L, D) operand t with the leading dims of q: sets *l and *d. */
static sb_status check_operand(const char *fn, const char *name, const sb_tensor *t,
                               const sb_tensor *q, int64_t *l, int64_t *d) {
    SB_TRY(sb_check_dense(fn, name, t, 2, SB_MAX_DIMS));
    if (q && t != q) {
        if (t->ndim != q->ndim)
            return sb_fail(SB_ERR_SHAPE, "%s: %s has %d dimensions but q has %d (they must match)", fn,
                           name, t->ndim, q->ndim);
        for (int a = 0; a < t->ndim - 2; a++)
            if (t->shape[a] != q->shape[a])
                return sb_fail(SB_ERR_SHAPE,
                               "%s: %s has size %lld along leading dimension %d but q has %lld "
                               "(the leading dimensions must be equal)",
                               fn, name, (long long)t->shape[a], a, (long long)q->shape[a]);
    }
    *l = t->shape[t->ndim - 2];
    *d = t->shape[t->ndim - 1];
    return SB_OK;
}

/* t must be (q's leading dims, rows, cols), float32, contiguous. */
static sb_status check_result(const char *fn, const char *name, const sb_tensor *t,
                              const sb_tensor *q, int64_t rows, int64_t cols, const char *what) {
    SB_TRY(sb_check_dense(fn, name, t, 2, SB_MAX_DIMS));
    int64_t want[SB_MAX_DIMS];
    for (int a = 0; a < q->ndim - 2; a++) want[a] = q->shape[a];
    want[q->ndim - 2] = rows;
    want[q->ndim - 1] = cols;
    return sb_pw_check_shape(fn, name, t, q->ndim, want, what);
}

/* Everything both passes share: operands, mask, causal, scale, dropout. */
static sb_status plan(const char *fn, const sb_tensor *q, const sb_tensor *k, const sb_tensor *v,
                      const sb_tensor *mask, sb_sdpa_causal causal, float scale, float dropout_p,
                      uint64_t seed, uint64_t stream, uint64_t offset, sb_ref_sdpa_geom *g) {
    int64_t lq, e, lk, ek, lv, ev;
    SB_TRY(check_operand(fn, "q", q, NULL, &lq, &e));
    SB_TRY(check_operand(fn, "k", k, q, &lk, &ek));
    SB_TRY(check_operand(fn, "v", v, q, &lv, &ev));
    if (ek != e)
        return sb_fail(SB_ERR_SHAPE, "%s: k has %lld features per key but q has %lld per query", fn,
                       (long long)ek, (long long)e);
    if (lv != lk)
        return sb_fail(SB_ERR_SHAPE, "%s: v has %lld rows but k has %lld keys (they must match)", fn,
                       (long long)lv, (long long)lk);
    *g = (sb_ref_sdpa_geom){.nlead = q->ndim - 2, .batch = 1, .lq = lq, .lk = lk, .e = e, .ev = ev,
                            .causal = causal, .scale = scale, .dropout_p = dropout_p,
                            .seed = seed, .stream = stream, .offset = offset};
    for (int a = 0; a < g->nlead; a++) {
        g->lead[a] = q->shape[a];
        g->batch *= q->shape[a]; /* q's numel was checked, so no overflow */
    }
    if (mask) {
        SB_TRY(sb_check_header(fn, "mask", mask));
        if (mask->dtype != SB_F32 && mask->dtype != SB_I32)
            return sb_fail(SB_ERR_DTYPE, "%s: mask has dtype %s (expected float32, added, or int32, "
                           "boolean)", fn, sb_dtype_name(mask->dtype));
        SB_TRY(sb_check_tensor(fn, "mask", mask, mask->dtype, -1));
        if (mask->ndim > q->ndim)
            return sb_fail(SB_ERR_SHAPE, "%s: mask has %d dimensions, more than q's %d", fn, mask->ndim,
                           q->ndim);
        SB_TRY(sb_check_contig(fn, "mask", mask));
        /* Aligned from the right against (lead..., lq, lk); size 1 broadcasts. */
        int64_t strides[SB_MAX_DIMS] = {0};
        for (int a = 0; a < q->ndim; a++) {
            int m = a - (q->ndim - mask->ndim); /* mask's dimension, < 0: absent */
            int64_t full = a < g->nlead ? g->lead[a] : a == g->nlead ? lq : lk;
            if (m < 0) continue;
            if (mask->shape[m] != full && mask->shape[m] != 1)
                return sb_fail(SB_ERR_SHAPE,
                               "%s: mask has size %lld along its dimension %d, which broadcasts "
                               "neither to %lld nor from 1",
                               fn, (long long)mask->shape[m], m, (long long)full);
            strides[a] = mask->shape[m] == 1 ? 0 : mask->strides[m];
        }
        g->mask_kind = mask->dtype == SB_F32 ? SB_REF_SDPA_MASK_ADD : SB_REF_SDPA_MASK_BOOL;
        for (int a = 0; a < g->nlead; a++) g->mask_lead_stride[a] = strides[a];
        g->mask_stride_i = strides[g->nlead];
        g->mask_stride_j = strides[g->nlead + 1];
    }
    if (causal != SB_SDPA_NOT_CAUSAL && causal != SB_SDPA_CAUSAL_TOP_LEFT &&
        causal != SB_SDPA_CAUSAL_BOTTOM_RIGHT)
        return sb_fail(SB_ERR_ARG, "%s: causal = %d is not a sb_sdpa_causal value", fn, (int)causal);
    if (!isfinite(scale))
        return sb_fail(SB_ERR_ARG, "%s: scale = %g is not finite", fn, (double)scale);
    if (!(dropout_p >= 0.0f && dropout_p <= 1.0f))
        return sb_fail(SB_ERR_ARG, "%s: dropout_p = %g is outside [0, 1]", fn, (double)dropout_p);
    int64_t n;
    if (!sb_checked_mul(g->batch, lq, &n) || !sb_checked_mul(n, lk, &n))
        return sb_fail(SB_ERR_SHAPE, "%s: the attention matrix (%lld, %lld, %lld) is too large", fn,
                       (long long)g->batch, (long long)lq, (long long)lk);
    if (dropout_p > 0.0f && (offset > SB_RNG_INDEX_LIMIT || (uint64_t)n > SB_RNG_INDEX_LIMIT - offset))
        return sb_fail(SB_ERR_RANGE, "%s: offset %llu + %lld probabilities passes the index limit 2^56",
                       fn, (unsigned long long)offset, (long long)n);
    return SB_OK;
}

sb_status sb_sdpa_forward(const sb_tensor *q, const sb_tensor *k, const sb_tensor *v,
                          const sb_tensor *mask, sb_sdpa_causal causal, float scale,
                          float dropout_p, uint64_t seed, uint64_t stream, uint64_t offset,
                          sb_tensor *out, sb_tensor *probs) {
    SB_FPENV_GUARD();
    const char *fn = "sb_sdpa_forward";
    sb_ref_sdpa_geom g;
    SB_TRY(plan(fn, q, k, v, mask, causal, scale, dropout_p, seed, stream, offset, &g));
    SB_TRY(check_result(fn, "out", out, q, g.lq, g.ev, "(..., Lq, Ev),"));
    if (probs) SB_TRY(check_result(fn, "probs", probs, q, g.lq, g.lk, "(..., Lq, Lk),"));
    SB_TRY(sb_check_disjoint(fn, 2, (const char *const[]){"out", "probs"},
                             (const sb_tensor *const[]){out, probs}, 4,
                             (const char *const[]){"q", "k", "v", "mask"},
                             (const sb_tensor *const[]){q, k, v, mask}));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, q, k, v, mask, out, probs));
    return SB_BACKEND_RUN(fn, be, sdpa_forward, &g, q->data, k->data, v->data,
                          mask ? mask->data : NULL, out->data, probs ? probs->data : NULL);
}

sb_status sb_sdpa_backward(const sb_tensor *dout, const sb_tensor *q, const sb_tensor *k,
                           const sb_tensor *v, const sb_tensor *mask, sb_sdpa_causal causal,
                           float scale, float dropout_p, uint64_t seed, uint64_t stream,
                           uint64_t offset, const sb_tensor *probs, sb_tensor *dq, sb_tensor *dk,
                           sb_tensor *dv) {
    SB_FPENV_GUARD();
    const char *fn = "sb_sdpa_backward";
    SB_TRY(sb_check_dense(fn, "dout", dout, 2, SB_MAX_DIMS));
    sb_ref_sdpa_geom g;
    SB_TRY(plan(fn, q, k, v, mask, causal, scale, dropout_p, seed, stream, offset, &g));
    SB_TRY(check_result(fn, "dout", dout, q, g.lq, g.ev, "(..., Lq, Ev),"));
    if (!probs) return sb_fail(SB_ERR_NULL, "%s: probs is NULL (the forward pass's probabilities)", fn);
    SB_TRY(check_result(fn, "probs", probs, q, g.lq, g.lk, "(..., Lq, Lk),"));
    if (dq) SB_TRY(check_result(fn, "dq", dq, q, g.lq, g.e, "q's shape,"));
    if (dk) SB_TRY(check_result(fn, "dk", dk, q, g.lk, g.e, "k's shape,"));
    if (dv) SB_TRY(check_result(fn, "dv", dv, q, g.lk, g.ev, "v's shape,"));
    SB_TRY(sb_check_disjoint(fn, 3, (const char *const[]){"dq", "dk", "dv"},
                             (const sb_tensor *const[]){dq, dk, dv}, 6,
                             (const char *const[]){"dout", "q", "k", "v", "mask", "probs"},
                             (const sb_tensor *const[]){dout, q, k, v, mask, probs}));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dout, q, k, v, mask, probs, dq, dk, dv));
    return SB_BACKEND_RUN(fn, be, sdpa_backward, &g, dout->data, q->data, k->data, v->data,
                          mask ? mask->data : NULL, probs->data, dq ? dq->data : NULL,
                          dk ? dk->data : NULL, dv ? dv->data : NULL);
}
