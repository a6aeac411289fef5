/* Reference interpolation, forward and backward (contract section 8,
 * "Interpolation").
 *
 * Forward: PyTorch's generic CPU kernel. Per output, the axes nest from the
 * outermost: the value at a tap of axis k is, for the innermost axis, the
 * input element, else the interpolation along axis k + 1 at that row; each
 * axis sums value * weight over its taps from left to right (the first
 * product as it is, then acc + product). Nearest modes copy the element.
 *
 * Backward: a gather. Each input element sums, with the canonical sum, the
 * terms dy[o] * W of the (output, tap) pairs that read it, outputs in
 * row-major order and, within one output, its taps in row-major order; W is
 * the product of the axis weights from the outermost. Threads or devices that
 * scatter-add in arrival order would give other bits; this order does not
 * depend on them. */
#include <stdlib.h>
#include "core/canonical_sum.h"
#include "core/internal.h"
#include "ref/ref_interp.h"

static void axis_free(sb_interp_axis *a) {
    free(a->idx);
    free(a->w);
    free(a->first);
    free(a->entry);
    a->idx = a->first = a->entry = NULL;
    a->w = NULL;
}

void sb_interp_tables_free(sb_interp_tables *t) {
    for (int k = 0; k < 3; k++) axis_free(&t->axis[k]);
}

static sb_status axis_build(const sb_interp_geom *g, int k, bool inverse, sb_interp_axis *a) {
    int64_t in = g->in[k], out = g->out[k];
    /* a leading axis the call does not have: one tap of weight 1 */
    bool present = k >= 3 - g->nd;
    *a = (sb_interp_axis){.in = in, .out = out, .taps = present ? sb_interp_taps(g->mode) : 1};
    size_t n = (size_t)out * (size_t)a->taps; /* <= 4 * y's element count */
    a->idx = malloc(n * sizeof *a->idx);
    a->w = malloc(n * sizeof *a->w);
    if (inverse) {
        a->first = calloc((size_t)in + 1, sizeof *a->first);
        a->entry = malloc(n * sizeof *a->entry);
    }
    if (!a->idx || !a->w || (inverse && (!a->first || !a->entry))) {
        axis_free(a);
        return sb_fail(SB_ERR_NOMEM, "interpolation: no memory for the tap tables");
    }
    if (!present) {
        a->idx[0] = 0;
        a->w[0] = 1.0f;
    } else {
        float scale = sb_interp_scale(g->mode, g->align_corners, in, out, g->scales[k]);
        for (int64_t o = 0; o < out; o++)
            sb_interp_axis_taps(g->mode, g->align_corners, scale, in, out, o, a->idx + o * a->taps,
                                a->w + o * a->taps);
    }
    if (inverse) { /* counting sort: readers of each input in ascending (o, j) */
        for (size_t e = 0; e < n; e++) a->first[a->idx[e] + 1]++;
        for (int64_t i = 0; i < in; i++) a->first[i + 1] += a->first[i];
        int64_t *cursor = malloc((size_t)in * sizeof *cursor);
        if (!cursor) {
            axis_free(a);
            return sb_fail(SB_ERR_NOMEM, "interpolation: no memory for the tap tables");
        }
        for (int64_t i = 0; i < in; i++) cursor[i] = a->first[i];
        for (size_t e = 0; e < n; e++) a->entry[cursor[a->idx[e]]++] = (int64_t)e;
        free(cursor);
    }
    return SB_OK;
}

sb_status sb_interp_tables_build(const sb_interp_geom *g, bool inverse, sb_interp_tables *t) {
    *t = (sb_interp_tables){0};
    for (int k = 0; k < 3; k++) {
        sb_status s = axis_build(g, k, inverse, &t->axis[k]);
        if (s != SB_OK) {
            sb_interp_tables_free(t);
            return s;
        }
    }
    return SB_OK;
}

/* The interpolation along axes k..2 at output position o[], x pointing at
 * the row the outer axes selected (stride[k] between positions of axis k). */
static float nest(const sb_interp_tables *t, int k, const int64_t *o, const int64_t *stride,
                  const float *x) {
    const sb_interp_axis *a = &t->axis[k];
    const int64_t *idx = a->idx + o[k] * a->taps;
    const float *w = a->w + o[k] * a->taps;
    float acc = 0.0f;
    for (int j = 0; j < a->taps; j++) {
        const float *xj = x + idx[j] * stride[k];
        float v = k == 2 ? *xj : nest(t, k + 1, o, stride, xj);
        float p = v * w[j];
        acc = j == 0 ? p : acc + p;
    }
    return acc;
}

void sb_ref_interp_forward_units(const sb_interp_geom *g, const sb_interp_tables *t, int64_t u0,
                                 int64_t u1, const float *x, float *y) {
    const int64_t stride[3] = {g->in[1] * g->in[2], g->in[2], 1};
    const int64_t plane_in = g->in[0] * stride[0];
    const int64_t row_out = g->out[1] * g->out[2];
    bool nearest = g->mode == SB_INTERP_NEAREST || g->mode == SB_INTERP_NEAREST_EXACT;
    for (int64_t u = u0; u < u1; u++) {
        int64_t p = u / g->out[0];
        int64_t o[3] = {u % g->out[0], 0, 0};
        const float *xp = x + p * plane_in;
        float *yr = y + u * row_out;
        for (o[1] = 0; o[1] < g->out[1]; o[1]++)
            for (o[2] = 0; o[2] < g->out[2]; o[2]++) {
                if (nearest) { /* a bit copy of the one tap */
                    *yr++ = xp[t->axis[0].idx[o[0]] * stride[0] + t->axis[1].idx[o[1]] * stride[1] +
                               t->axis[2].idx[o[2]]];
                } else {
                    *yr++ = nest(t, 0, o, stride, xp);
                }
            }
    }
}

/* The readers of input i along axis a, grouped by output: entries
 * [first[i], first[i+1]) sorted by (o, j); a group is a run of one o. */
static int64_t group_end(const sb_interp_axis *a, int64_t e, int64_t end) {
    int64_t o = a->entry[e] / a->taps;
    while (++e < end && a->entry[e] / a->taps == o) {
    }
    return e;
}

void sb_ref_interp_backward_units(const sb_interp_geom *g, const sb_interp_tables *t, int64_t u0,
                                  int64_t u1, const float *dy, float *dx) {
    const sb_interp_axis *a0 = &t->axis[0], *a1 = &t->axis[1], *a2 = &t->axis[2];
    const int64_t plane_out = g->out[0] * g->out[1] * g->out[2];
    const int64_t row_in = g->in[1] * g->in[2];
    for (int64_t u = u0; u < u1; u++) {
        int64_t p = u / g->in[0], i0 = u % g->in[0];
        const float *dyp = dy + p * plane_out;
        float *dxr = dx + u * row_in;
        int64_t b0 = a0->first[i0], end0 = a0->first[i0 + 1];
        for (int64_t i1 = 0; i1 < g->in[1]; i1++) {
            int64_t b1 = a1->first[i1], end1 = a1->first[i1 + 1];
            for (int64_t i2 = 0; i2 < g->in[2]; i2++) {
                int64_t b2 = a2->first[i2], end2 = a2->first[i2 + 1];
                sb_sum_acc acc;
                sb_sum_init(&acc);
                /* outputs in row-major order; within one output, its taps */
                for (int64_t g0 = b0, n0; g0 < end0; g0 = n0) {
                    n0 = group_end(a0, g0, end0);
                    int64_t o0 = a0->entry[g0] / a0->taps;
                    for (int64_t g1 = b1, n1; g1 < end1; g1 = n1) {
                        n1 = group_end(a1, g1, end1);
                        int64_t o1 = a1->entry[g1] / a1->taps;
                        const float *dyr = dyp + (o0 * g->out[1] + o1) * g->out[2];
                        for (int64_t g2 = b2, n2; g2 < end2; g2 = n2) {
                            n2 = group_end(a2, g2, end2);
                            float d = dyr[a2->entry[g2] / a2->taps];
                            for (int64_t e0 = g0; e0 < n0; e0++)
                                for (int64_t e1 = g1; e1 < n1; e1++) {
                                    float w01 = a0->w[a0->entry[e0]] * a1->w[a1->entry[e1]];
                                    for (int64_t e2 = g2; e2 < n2; e2++)
                                        sb_sum_add(&acc, d * (w01 * a2->w[a2->entry[e2]]));
                                }
                        }
                    }
                }
                *dxr++ = sb_sum_result(&acc);
            }
        }
    }
}

sb_status sb_ref_interpolate_forward(const sb_interp_geom *g, const float *x, float *y) {
    sb_interp_tables t;
    SB_TRY(sb_interp_tables_build(g, false, &t));
    sb_ref_interp_forward_units(g, &t, 0, g->planes * g->out[0], x, y);
    sb_interp_tables_free(&t);
    return SB_OK;
}

sb_status sb_ref_interpolate_backward(const sb_interp_geom *g, const float *dy, float *dx) {
    sb_interp_tables t;
    SB_TRY(sb_interp_tables_build(g, true, &t));
    sb_ref_interp_backward_units(g, &t, 0, g->planes * g->in[0], dy, dx);
    sb_interp_tables_free(&t);
    return SB_OK;
}
