/* Fast interpolation (src/cpu/interp_internal.h), bit-identical to
 * src/ref/interpolate.c.
 *
 * Forward of the linear and cubic modes: separable. The reference nests the
 * axes per output, so the innermost sums of a given input row and output
 * column are recomputed for every output that reaches them; here each axis
 * is one pass, innermost first, over a whole tensor of rows:
 *     t[r][o][i] = v_0 * w_0,  then  t[r][o][i] = t[r][o][i] + v_j * w_j,
 * v_j = src[r][idx_j(o)][i], which are the reference's own operations on
 * the same values (the value of tap j of axis k is the interpolation along
 * the axes inside it). The leading axes the call does not have (one tap of
 * weight 1 in the reference, a multiplication that changes no bit) are
 * skipped. Each pass splits its independent (row, output) units over the
 * thread pool. The nearest modes copy, as the reference does, over units of
 * (plane, outermost output row).
 *
 * Backward: the reference's gather (each input sums its own terms in the
 * contract's order) over units of (plane, outermost input row). */
#include <stdlib.h>
#include "core/internal.h"
#include "cpu/cpu.h"
#include "cpu/interp_internal.h"

typedef struct {
    const sb_interp_geom *g;
    const sb_interp_tables *t;
    const float *in;
    float *out;
} interp_ctx;

static void fwd_range(void *vctx, int64_t u0, int64_t u1) {
    const interp_ctx *c = vctx;
    sb_ref_interp_forward_units(c->g, c->t, u0, u1, c->in, c->out);
}

static void bwd_range(void *vctx, int64_t u0, int64_t u1) {
    const interp_ctx *c = vctx;
    sb_ref_interp_backward_units(c->g, c->t, u0, u1, c->in, c->out);
}

/* units of `per_unit` elements each, ranges of at least ~4096 elements */
static void run(int64_t units, int64_t per_unit, sb_range_fn fn, void *c) {
    sb_parallel_for(units, sb_parallel_grain(units, 4096 / (per_unit + 1) + 1), fn, c);
}

/* One axis pass: src is (rows, a->in, inner), dst (rows, a->out, inner). */
typedef struct {
    const sb_interp_axis *a;
    const float *src;
    float *dst;
    int64_t inner;
} pass_ctx;

static void pass_range(void *vctx, int64_t u0, int64_t u1) {
    const pass_ctx *c = vctx;
    const sb_interp_axis *a = c->a;
    const int64_t inner = c->inner, taps = a->taps;
    for (int64_t u = u0; u < u1; u++) { /* u = (row r, output o) */
        int64_t r = u / a->out, o = u % a->out;
        const int64_t *idx = a->idx + o * taps;
        const float *w = a->w + o * taps;
        const float *rows = c->src + r * a->in * inner;
        float *d = c->dst + u * inner;
        const float *s = rows + idx[0] * inner;
        const float w0 = w[0];
        for (int64_t i = 0; i < inner; i++) d[i] = s[i] * w0;
        for (int64_t j = 1; j < taps; j++) {
            s = rows + idx[j] * inner;
            const float wj = w[j];
            for (int64_t i = 0; i < inner; i++) d[i] = d[i] + s[i] * wj;
        }
    }
}

/* dst = the pass of axis a over src viewed as (rows, a->in, inner). */
static void pass(const sb_interp_axis *a, const float *src, float *dst, int64_t rows,
                 int64_t inner) {
    pass_ctx c = {a, src, dst, inner};
    run(rows * a->out, inner * a->taps, pass_range, &c);
}

/* The separable forward; false when its intermediates do not fit in memory
 * (the caller then runs the reference's per-output nest). Pass k (innermost
 * first) reads (P * in[first..k-1], in[k], out[k+1..2]) and writes
 * (P * in[first..k-1], out[k], out[k+1..2]); the outermost pass writes y. */
static bool separable_forward(const sb_interp_geom *g, const sb_interp_tables *t, const float *x,
                              float *y) {
    const int first = 3 - g->nd; /* the call's outermost axis */
    int64_t rows[3], inner[3];
    float *tmp[3] = {NULL, NULL, NULL};
    bool ok = true;
    for (int k = first; k < 3; k++) {
        rows[k] = g->planes, inner[k] = 1;
        for (int q = first; q < k; q++) rows[k] *= g->in[q];
        for (int q = k + 1; q < 3; q++) inner[k] *= g->out[q];
        if (k > first) { /* sizes bounded by x's and y's element counts */
            tmp[k] = malloc((size_t)(rows[k] * g->out[k] * inner[k] + 1) * sizeof(float));
            ok = ok && tmp[k];
        }
    }
    if (ok) {
        const float *src = x;
        for (int k = 2; k >= first; k--) {
            float *dst = k == first ? y : tmp[k];
            pass(&t->axis[k], src, dst, rows[k], inner[k]);
            src = dst;
        }
    }
    for (int k = 0; k < 3; k++) free(tmp[k]);
    return ok;
}

sb_status sb_cpu_interpolate_forward(const sb_interp_geom *g, const float *x, float *y) {
    sb_interp_tables t;
    SB_TRY(sb_interp_tables_build(g, false, &t));
    bool nearest = g->mode == SB_INTERP_NEAREST || g->mode == SB_INTERP_NEAREST_EXACT;
    if (nearest || !separable_forward(g, &t, x, y)) {
        interp_ctx c = {g, &t, x, y};
        run(g->planes * g->out[0], g->out[1] * g->out[2], fwd_range, &c);
    }
    sb_interp_tables_free(&t);
    return SB_OK;
}

sb_status sb_cpu_interpolate_backward(const sb_interp_geom *g, const float *dy, float *dx) {
    sb_interp_tables t;
    SB_TRY(sb_interp_tables_build(g, true, &t));
    interp_ctx c = {g, &t, dy, dx};
    run(g->planes * g->in[0], g->in[1] * g->in[2], bwd_range, &c);
    sb_interp_tables_free(&t);
    return SB_OK;
}
