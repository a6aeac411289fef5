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
    free(a->gfirst);
    free(a->gout);
    free(a->gbeg);
    free(a->gw);
    *a = (sb_interp_axis){0};
}

void sb_interp_tables_free(sb_interp_tables *t) {
    for (int k = 0; k < 3; k++) axis_free(&t->axis[k]);
}

static sb_status no_memory(sb_interp_axis *a, int64_t *scratch) {
    free(scratch);
    axis_free(a);
    return sb_fail(SB_ERR_NOMEM, "interpolation: no memory for the tap tables");
}

/* The readers of every input, grouped by output (see sb_interp_axis): a
 * counting sort of the (o, j) pairs by input, which keeps them in ascending
 * (o, j) order, then one group per run of one o. */
static sb_status axis_readers(sb_interp_axis *a) {
    size_t n = (size_t)a->out * (size_t)a->taps;
    int64_t *entry = malloc((n + (size_t)a->in + 1) * sizeof *entry);
    a->gfirst = calloc((size_t)a->in + 1, sizeof *a->gfirst);
    a->gout = malloc(n * sizeof *a->gout);
    a->gbeg = malloc((n + 1) * sizeof *a->gbeg);
    a->gw = malloc(n * sizeof *a->gw);
    if (!entry || !a->gfirst || !a->gout || !a->gbeg || !a->gw) return no_memory(a, entry);
    int64_t *cursor = entry + n; /* in + 1 counters */
    for (int64_t i = 0; i <= a->in; i++) cursor[i] = 0;
    for (size_t e = 0; e < n; e++) cursor[a->idx[e] + 1]++;
    for (int64_t i = 0; i < a->in; i++) cursor[i + 1] += cursor[i];
    for (size_t e = 0; e < n; e++) entry[cursor[a->idx[e]]++] = (int64_t)e;
    /* cursor[i] is now the end of input i's entries */
    int64_t groups = 0, e = 0;
    for (int64_t i = 0; i < a->in; i++) {
        a->gfirst[i] = groups;
        for (int64_t prev = -1; e < cursor[i]; e++) {
            int64_t o = entry[e] / a->taps;
            if (o != prev) {
                a->gout[groups] = o;
                a->gbeg[groups++] = e;
                prev = o;
            }
            a->gw[e] = a->w[entry[e]];
        }
    }
    a->gfirst[a->in] = groups;
    a->gbeg[groups] = (int64_t)n;
    free(entry);
    return SB_OK;
}

static sb_status axis_build(const sb_interp_geom *g, int k, bool inverse, sb_interp_axis *a) {
    int64_t in = g->in[k], out = g->out[k];
    /* a leading axis the call does not have: one tap of weight 1 */
    bool present = k >= 3 - g->nd;
    *a = (sb_interp_axis){.in = in, .out = out, .taps = present ? sb_interp_taps(g->mode) : 1};
    size_t n = (size_t)out * (size_t)a->taps; /* <= 4 * y's element count */
    a->idx = malloc(n * sizeof *a->idx);
    a->w = malloc(n * sizeof *a->w);
    if (!a->idx || !a->w) return no_memory(a, NULL);
    if (!present) {
        a->idx[0] = 0;
        a->w[0] = 1.0f;
    } else {
        float scale = sb_interp_scale(g->mode, g->align_corners, in, out, g->scales[k]);
        for (int64_t o = 0; o < out; o++)
            sb_interp_axis_taps(g->mode, g->align_corners, scale, in, out, o, a->idx + o * a->taps,
                                a->w + o * a->taps);
    }
    return inverse ? axis_readers(a) : SB_OK;
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

/* One axis's reader groups as plain arrays (locals the compiler need not
 * reload after every store into dx). */
typedef struct {
    const int64_t *gfirst, *gout, *gbeg;
    const float *gw;
} readers;

static readers readers_of(const sb_interp_axis *a) {
    return (readers){a->gfirst, a->gout, a->gbeg, a->gw};
}

void sb_ref_interp_backward_units(const sb_interp_geom *g, const sb_interp_tables *t, int64_t u0,
                                  int64_t u1, const float *dy, float *dx) {
    const readers r0 = readers_of(&t->axis[0]), r1 = readers_of(&t->axis[1]),
                  r2 = readers_of(&t->axis[2]);
    const int64_t in0 = g->in[0], in1 = g->in[1], in2 = g->in[2];
    const int64_t out1 = g->out[1], out2 = g->out[2];
    const int64_t plane_out = g->out[0] * out1 * out2;
    for (int64_t u = u0; u < u1; u++) {
        int64_t p = u / in0, i0 = u % in0;
        const float *dyp = dy + p * plane_out;
        float *dxr = dx + u * in1 * in2;
        const int64_t b0 = r0.gfirst[i0], end0 = r0.gfirst[i0 + 1];
        const int64_t terms0 = r0.gbeg[end0] - r0.gbeg[b0];
        for (int64_t i1 = 0; i1 < in1; i1++) {
            const int64_t b1 = r1.gfirst[i1], end1 = r1.gfirst[i1 + 1];
            const int64_t terms01 = terms0 * (r1.gbeg[end1] - r1.gbeg[b1]);
            for (int64_t i2 = 0; i2 < in2; i2++) {
                const int64_t b2 = r2.gfirst[i2], end2 = r2.gfirst[i2 + 1];
                /* up to one block of terms: the rule's lanes directly (from
                 * -0, term k into lane k mod 32, the fixed tree); more: the
                 * streaming accumulator */
                const int64_t n = terms01 * (r2.gbeg[end2] - r2.gbeg[b2]);
                const bool one_block = n <= SB_SUM_BLOCK;
                float lane[SB_SUM_LANES];
                sb_sum_acc acc;
                if (one_block)
                    for (int j = 0; j < SB_SUM_LANES; j++) lane[j] = -0.0f;
                else
                    sb_sum_init(&acc);
                int k = 0;
                /* outputs in row-major order; within one output, its taps */
                for (int64_t g0 = b0; g0 < end0; g0++)
                    for (int64_t g1 = b1; g1 < end1; g1++) {
                        const float *dyr = dyp + (r0.gout[g0] * out1 + r1.gout[g1]) * out2;
                        for (int64_t g2 = b2; g2 < end2; g2++) {
                            const float d = dyr[r2.gout[g2]];
                            for (int64_t e0 = r0.gbeg[g0]; e0 < r0.gbeg[g0 + 1]; e0++)
                                for (int64_t e1 = r1.gbeg[g1]; e1 < r1.gbeg[g1 + 1]; e1++) {
                                    const float w01 = r0.gw[e0] * r1.gw[e1];
                                    for (int64_t e2 = r2.gbeg[g2]; e2 < r2.gbeg[g2 + 1]; e2++) {
                                        const float term = d * (w01 * r2.gw[e2]);
                                        if (one_block) {
                                            lane[k] += term;
                                            k = (k + 1) & (SB_SUM_LANES - 1);
                                        } else {
                                            sb_sum_add(&acc, term);
                                        }
                                    }
                                }
                        }
                    }
                *dxr++ = n == 0 ? 0.0f : one_block ? sb_sum_tree32(lane) : sb_sum_result(&acc);
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
