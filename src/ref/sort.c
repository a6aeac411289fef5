/* Reference sort / topk / kthvalue / median and their backward (contract
 * section 18, "Sort, topk, kthvalue and median"). The forward is stated by
 * ranks, which is the definition itself: no sorting algorithm, no memory,
 * and nothing that depends on how columns are scheduled. */
#include "ref/ref_sort.h"
#include "ref/sort_rank.h"

/* The key, the order, ranks and the first rank are src/ref/sort_rank.h,
 * one text with the OpenCL kernel. */
uint32_t sb_ref_sort_key(float v, bool descending) { return sb_sort_key_of(v, descending); }

int64_t sb_ref_sort_start(const sb_ref_sort_geom *g, const float *x, int64_t xs) {
    return sb_sort_first_rank(g->median, g->start, x, xs, g->shape[g->dim]);
}

void sb_ref_sort_column(const sb_ref_sort_geom *g, const float *x, int64_t xs, float *values,
                        int64_t vs, int64_t *indices, int64_t is) {
    int64_t n = g->shape[g->dim], start = sb_ref_sort_start(g, x, xs);
    for (int64_t i = 0; i < n; i++) {
        int64_t rank = sb_sort_rank(x, xs, n, i, g->descending);
        if (rank >= start && rank < start + g->count) {
            values[(rank - start) * vs] = x[i * xs];
            indices[(rank - start) * is] = i;
        }
    }
}

int64_t sb_ref_sort_columns(const sb_ref_sort_geom *g) {
    int64_t cols = 1;
    for (int k = 0; k < g->ndim; k++)
        if (k != g->dim) cols *= g->shape[k];
    return cols;
}

void sb_ref_sort_column_at(const sb_ref_sort_geom *g, int64_t col, int64_t *xo, int64_t *vo,
                           int64_t *io) {
    int64_t rest = col;
    *xo = *vo = *io = 0;
    for (int k = g->ndim - 1; k >= 0; k--) {
        if (k == g->dim) continue;
        int64_t i = rest % g->shape[k];
        rest /= g->shape[k];
        *xo += i * g->x_stride[k];
        *vo += i * g->v_stride[k];
        *io += i * g->i_stride[k];
    }
}

void sb_ref_sort(const sb_ref_sort_geom *g, const float *x, float *values, int64_t *indices) {
    int d = g->dim;
    if (g->count == 0) return;
    for (int64_t c = 0, cols = sb_ref_sort_columns(g); c < cols; c++) {
        int64_t xo, vo, io;
        sb_ref_sort_column_at(g, c, &xo, &vo, &io);
        sb_ref_sort_column(g, x + xo, g->x_stride[d], values + vo, g->v_stride[d], indices + io,
                           g->i_stride[d]);
    }
}

void sb_ref_sort_scatter(const sb_ref_sort_geom *g, const float *dy, const int64_t *indices,
                         float *dx) {
    int d = g->dim;
    for (int64_t c = 0, cols = sb_ref_sort_columns(g); c < cols; c++) {
        int64_t xo, vo, io;
        sb_ref_sort_column_at(g, c, &xo, &vo, &io);
        for (int64_t p = 0; p < g->count; p++)
            dx[xo + indices[io + p * g->i_stride[d]] * g->x_stride[d]] =
                dy[vo + p * g->v_stride[d]];
    }
}
