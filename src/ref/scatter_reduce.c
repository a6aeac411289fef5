/* Reference scatter_reduce (contract section 18, "scatter_reduce"): per
 * column, the terms combined into their destinations in ascending source
 * position, one float32 rounding per operation, as PyTorch's CPU kernel does
 * on one thread (its identity fill without include_self and its division
 * of a mean by the count included). */
#include "ref/ref_scatter_reduce.h"
#include "ref/scatter_reduce_column.h"

int64_t sb_ref_scatter_columns(const sb_ref_index_geom *g) {
    int64_t cols = 1;
    for (int k = 0; k < g->ndim; k++)
        if (k != g->dim) cols *= g->shape[k];
    return cols;
}

void sb_ref_scatter_column_at(const sb_ref_index_geom *g, int64_t col, int64_t *dense,
                              int64_t *index, int64_t *table) {
    int64_t rest = col;
    *dense = *index = *table = 0;
    for (int k = g->ndim - 1; k >= 0; k--) {
        if (k == g->dim) continue;
        int64_t i = rest % g->shape[k];
        rest /= g->shape[k];
        *dense += i * g->dense_stride[k];
        *index += i * g->index_stride[k];
        *table += i * g->table_stride[k];
    }
}

/* The column's rules are src/ref/scatter_reduce_column.h, one text with
 * the OpenCL kernel. */
void sb_ref_scatter_reduce_column(sb_scatter_reduce_op op, bool include_self, int64_t len,
                                  const float *src, int64_t ss, const int64_t *index,
                                  int64_t is, float *table, int64_t ts, int64_t table_len,
                                  int64_t *counts) {
    sb_scatter_reduce_column_run(op, include_self, len, src, ss, index, is, table, ts, table_len,
                                 counts);
}

void sb_ref_scatter_reduce(const sb_ref_index_geom *g, sb_scatter_reduce_op op, bool include_self,
                           int64_t table_len, const float *src, const int64_t *index,
                           float *table) {
    int d = g->dim;
    for (int64_t c = 0, cols = sb_ref_scatter_columns(g); c < cols; c++) {
        int64_t so, io, to;
        sb_ref_scatter_column_at(g, c, &so, &io, &to);
        sb_ref_scatter_reduce_column(op, include_self, g->shape[d], src + so, g->dense_stride[d],
                                     index + io, g->index_stride[d], table + to,
                                     g->table_stride[d], table_len, NULL);
    }
}
