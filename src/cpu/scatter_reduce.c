/* Fast scatter_reduce (contract section 18, "scatter_reduce"; reference
 * src/ref/scatter_reduce.c). Every destination lies in one column, so the
 * columns are split over threads and each runs the reference's column
 * kernel, terms in ascending position: the bits are the reference's at
 * every thread count. A mean counts its terms in per-thread scratch (the
 * reference's scan when there is none). No vector code, no ISA dependence. */
#include "cpu/ops_internal.h"

enum { MIN_WORK = 16384 /* terms per thread range, at least */ };

typedef struct job {
    const sb_ref_index_geom *g;
    sb_scatter_reduce_op op;
    bool include_self;
    int64_t table_len;
    const float *src;
    const int64_t *index;
    float *table;
} job;

static void run_columns(void *ctx, int64_t begin, int64_t end) {
    const job *j = ctx;
    const sb_ref_index_geom *g = j->g;
    int d = g->dim;
    int64_t *counts = j->op == SB_SCATTER_MEAN
                          ? sb_scratch(SB_SCRATCH_OPS, (size_t)j->table_len * sizeof(int64_t))
                          : NULL;
    for (int64_t c = begin; c < end; c++) {
        int64_t so, io, to;
        sb_ref_scatter_column_at(g, c, &so, &io, &to);
        sb_ref_scatter_reduce_column(j->op, j->include_self, g->shape[d], j->src + so,
                                     g->dense_stride[d], j->index + io, g->index_stride[d],
                                     j->table + to, g->table_stride[d], j->table_len, counts);
    }
}

void sb_cpu_scatter_reduce(const sb_ref_index_geom *g, sb_scatter_reduce_op op, bool include_self,
                           int64_t table_len, const float *src, const int64_t *index,
                           float *table) {
    int64_t cols = sb_ref_scatter_columns(g), len = g->shape[g->dim];
    if (cols == 0 || len == 0) return;
    job j = {.g = g, .op = op, .include_self = include_self, .table_len = table_len,
             .src = src, .index = index, .table = table};
    sb_parallel_for(cols, sb_parallel_grain(cols, MIN_WORK / len + 1), run_columns, &j);
}
