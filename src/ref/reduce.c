/* Reference kernels for reductions over axes (contract "Reductions").
 *
 * For each output element (kept dims, row-major) the reduced elements are
 * enumerated in row-major order over the reduced dims, in increasing axis
 * order, and fed in that order to the canonical sum (core/canonical_sum.h)
 * or to the max/min scan. The enumeration is fixed by the contract, not by
 * memory layout, so a transposed input gives the same bits as a copy. */
#include <math.h>
#include "core/internal.h"
#include "core/canonical_sum.h"
#include "ref/ref_pointwise.h"

sb_ref_reduce_geom sb_ref_reduce_to_shape_geom(const sb_tensor *grad, const sb_tensor *out) {
    sb_ref_reduce_geom g = {0};
    int lead = grad->ndim - out->ndim;
    for (int i = 0; i < grad->ndim; i++) {
        int io = i - lead;
        if (io >= 0 && out->shape[io] == grad->shape[i]) {
            g.keep_shape[g.nkeep] = grad->shape[i];
            g.keep_xstride[g.nkeep] = grad->strides[i];
            g.keep_ostride[g.nkeep] = out->strides[io];
            g.nkeep++;
        } else {
            g.red_shape[g.nred] = grad->shape[i];
            g.red_xstride[g.nred] = grad->strides[i];
            g.nred++;
        }
    }
    return g;
}

/* Advances a row-major odometer over shape[0..nd-1] by one and moves each
 * of the nstr offsets off[j] along its strides stride[j]. */
static void advance(int nd, const int64_t *shape, int64_t *idx, int nstr,
                    const int64_t *const *stride, int64_t *off) {
    for (int k = nd - 1; k >= 0; k--) {
        if (++idx[k] < shape[k]) {
            for (int j = 0; j < nstr; j++) off[j] += stride[j][k];
            return;
        }
        idx[k] = 0;
        for (int j = 0; j < nstr; j++) off[j] -= (shape[k] - 1) * stride[j][k];
    }
}

static int64_t count_of(int nd, const int64_t *shape) {
    int64_t n = 1;
    for (int k = 0; k < nd; k++) n *= shape[k];
    return n;
}

/* The canonical sum of f(x[e]) over the reduced elements e from base, where
 * f is the identity (center is NULL) or (x - *center)^2. */
static float sum_reduced(const sb_ref_reduce_geom *g, const float *base, const float *center) {
    sb_sum_acc acc;
    sb_sum_init(&acc);
    int64_t n = count_of(g->nred, g->red_shape), idx[SB_MAX_DIMS] = {0}, off = 0;
    for (int64_t e = 0; e < n; e++) {
        float v = base[off];
        if (center) {
            float d = v - *center;
            v = d * d;
        }
        sb_sum_add(&acc, v);
        const int64_t *st[1] = { g->red_xstride };
        advance(g->nred, g->red_shape, idx, 1, st, &off);
    }
    return sb_sum_result(&acc);
}

/* The quiet NaN with no payload (0x7fc00000): the defined result of var/std
 * when n - correction <= 0. */
static float default_nan(void) {
    union { uint32_t u; float f; } v = { 0x7fc00000u };
    return v.f;
}

// x is read through g; out is (kept dims) with g->keep_ostride
void sb_ref_reduce(sb_ref_reduce_kind kind, const sb_ref_reduce_geom *g, const float *x,
                   int64_t correction, float *out) {
    int64_t nout = count_of(g->nkeep, g->keep_shape);
    int64_t n = count_of(g->nred, g->red_shape);
    /* (float)n rounds to nearest-even when n > 2^24: the divisor is that
     * rounded value, fixed by the contract. */
    float nf = (float)n;
    int64_t kidx[SB_MAX_DIMS] = {0}, off[2] = {0, 0}; /* x, out */
    const int64_t *st[2] = { g->keep_xstride, g->keep_ostride };
    for (int64_t o = 0; o < nout; o++) {
        const float *xo = x ? x + off[0] : x; /* x is NULL only when n == 0 */
        float s = sum_reduced(g, xo, NULL), r;
        if (kind == SB_REF_REDUCE_SUM) {
            r = s;
        } else if (kind == SB_REF_REDUCE_MEAN) {
            r = s / nf;
        } else {
            float mean = s / nf;
            if (n - correction <= 0) {
                r = default_nan();
            } else {
                float ss = sum_reduced(g, xo, &mean);
                r = ss / (float)(n - correction);
                if (kind == SB_REF_REDUCE_STD) r = sqrtf(r);
            }
        }
        out[off[1]] = r;
        advance(g->nkeep, g->keep_shape, kidx, 2, st, off);
    }
}

bool sb_ref_extreme_better(bool is_max, float v, float best) {
    /* Strictly better in the total order of maximum/minimum (NaN on top for
     * both, -0 < +0): ties keep the earlier element, and the first NaN stays
     * once found because nothing is better than a NaN. */
    if (sb_isnanf(best)) return false;
    if (sb_isnanf(v)) return true;
    if (v == best) return is_max ? (signbit(best) && !signbit(v)) : (!signbit(best) && signbit(v));
    return is_max ? v > best : v < best;
}

void sb_ref_reduce_extreme(bool is_max, const sb_ref_reduce_geom *g, const float *x, float *out,
                           int64_t *idx) {
    int64_t nout = count_of(g->nkeep, g->keep_shape);
    int64_t n = count_of(g->nred, g->red_shape);
    int64_t kidx[SB_MAX_DIMS] = {0}, off[3] = {0, 0, 0}; /* x, out, idx */
    const int64_t *st[3] = { g->keep_xstride, g->keep_ostride, g->keep_istride };
    const int64_t *rst[1] = { g->red_xstride };
    for (int64_t o = 0; o < nout; o++) {
        const float *xo = x + off[0];
        int64_t ridx[SB_MAX_DIMS] = {0}, roff = 0, best_e = 0;
        float best = xo[0];
        for (int64_t e = 0; e < n; e++) {
            float v = xo[roff];
            if (e > 0 && sb_ref_extreme_better(is_max, v, best)) { best = v; best_e = e; }
            advance(g->nred, g->red_shape, ridx, 1, rst, &roff);
        }
        if (out) out[off[1]] = best;
        if (idx) idx[off[2]] = best_e;
        advance(g->nkeep, g->keep_shape, kidx, 3, st, off);
    }
}

void sb_ref_reduce_scatter(const sb_ref_reduce_geom *g, const float *dy, const int64_t *idx,
                           float *dx) {
    int64_t nout = count_of(g->nkeep, g->keep_shape);
    int64_t n = count_of(g->nred, g->red_shape);
    int64_t kidx[SB_MAX_DIMS] = {0}, off[3] = {0, 0, 0}; /* dx, dy, idx */
    const int64_t *st[3] = { g->keep_xstride, g->keep_ostride, g->keep_istride };
    const int64_t *rst[1] = { g->red_xstride };
    for (int64_t o = 0; o < nout; o++) {
        float *xo = dx + off[0];
        int64_t ridx[SB_MAX_DIMS] = {0}, roff = 0, chosen = idx[off[2]];
        for (int64_t e = 0; e < n; e++) {
            xo[roff] = e == chosen ? dy[off[1]] : 0.0f;
            advance(g->nred, g->red_shape, ridx, 1, rst, &roff);
        }
        advance(g->nkeep, g->keep_shape, kidx, 3, st, off);
    }
}
