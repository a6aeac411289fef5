/* Fast cumsum / cumprod, forward and backward (contract section 10,
 * "Cumulative sum and product"; reference src/ref/cumulative.c).
 *
 * Each output element depends on its own column only (the positions that
 * differ along dim), and a column is one sequential chain, so the columns
 * are split over threads and each is run by the reference's column kernel:
 * the bits are the reference's at every thread count. There is no SIMD
 * form of a sequential chain, so no ISA-dependent code. */
#include "cpu/ops_internal.h"

enum { MIN_WORK = 16384 /* elements per thread range, at least */ };

typedef struct job {
    sb_ref_cum_kind kind;
    const sb_ref_cum_geom *g;
    const float *x, *y, *dy;
    float *out;
} job;

static void run_columns(void *ctx, int64_t begin, int64_t end) {
    const job *j = ctx;
    const sb_ref_cum_geom *g = j->g;
    int d = g->dim;
    for (int64_t c = begin; c < end; c++) {
        int64_t xo, yo, dyo, oo;
        sb_ref_cum_column_at(g, c, &xo, &yo, &dyo, &oo);
        sb_ref_cum_column(j->kind, g->shape[d], j->x + xo, g->x_stride[d], j->y ? j->y + yo : NULL,
                          g->y_stride[d], j->dy ? j->dy + dyo : NULL, g->dy_stride[d],
                          j->out + oo, g->out_stride[d]);
    }
}

void sb_cpu_cumulative(sb_ref_cum_kind kind, const sb_ref_cum_geom *g, const float *x,
                       const float *y, const float *dy, float *out) {
    int64_t cols = sb_ref_cum_columns(g), len = g->shape[g->dim];
    if (cols == 0 || len == 0) return;
    job j = {.kind = kind, .g = g, .x = x, .y = y, .dy = dy, .out = out};
    sb_parallel_for(cols, sb_parallel_grain(cols, MIN_WORK / len + 1), run_columns, &j);
}
