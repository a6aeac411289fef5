/* Reference cumsum / cumprod, forward and backward (contract section 10,
 * "Cumulative sum and product"). Each column is a sequential chain in a
 * fixed index order with one float32 rounding per operation; nothing here
 * depends on how columns are scheduled. The chains themselves are
 * ref/cumulative_chain.h, the text the OpenCL kernel embeds too. */
#include "ref/ref_cumulative.h"
#include "ref/cumulative_chain.h"

void sb_ref_cum_column(sb_ref_cum_kind kind, int64_t n, const float *a, int64_t as, const float *b,
                       int64_t bs, const float *c, int64_t cs, float *out, int64_t os) {
    sb_cum_column((int)kind, n, a, as, b, bs, c, cs, out, os);
}

int64_t sb_ref_cum_columns(const sb_ref_cum_geom *g) {
    int64_t cols = 1;
    for (int k = 0; k < g->ndim; k++)
        if (k != g->dim) cols *= g->shape[k];
    return cols;
}

void sb_ref_cum_column_at(const sb_ref_cum_geom *g, int64_t col, int64_t *xo, int64_t *yo,
                          int64_t *dyo, int64_t *oo) {
    int64_t o[4];
    sb_cum_column_offsets(g->ndim, g->dim, g->shape, g->x_stride, g->y_stride, g->dy_stride,
                          g->out_stride, col, o);
    *xo = o[0];
    *yo = o[1];
    *dyo = o[2];
    *oo = o[3];
}

void sb_ref_cumulative(sb_ref_cum_kind kind, const sb_ref_cum_geom *g, const float *x,
                       const float *y, const float *dy, float *out) {
    int d = g->dim;
    int64_t n = g->shape[d], cols = sb_ref_cum_columns(g);
    if (n == 0) return;
    for (int64_t c = 0; c < cols; c++) {
        int64_t xo, yo, dyo, oo;
        sb_ref_cum_column_at(g, c, &xo, &yo, &dyo, &oo);
        sb_ref_cum_column(kind, n, x + xo, g->x_stride[d], y ? y + yo : NULL, g->y_stride[d],
                          dy ? dy + dyo : NULL, g->dy_stride[d], out + oo, g->out_stride[d]);
    }
}
