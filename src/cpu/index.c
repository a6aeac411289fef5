/* Fast index family (contract "Index, scatter and embedding", reference
 * src/ref/index.c).
 *
 * A column is the set of positions that differ only along dim. Every
 * destination element of a scatter-add lies in exactly one column (its
 * other coordinates are the source's), so columns are split over threads
 * and each column is walked along dim in ascending order: each
 * destination's chain of adds is the reference's, in the reference's order,
 * whatever the thread count. The arithmetic is one scalar add (and the
 * alpha product) per term, so there is no ISA-dependent code. */
#include "cpu/ops_internal.h"

enum { MIN_WORK = 16384 /* terms per thread range, at least */ };

typedef struct job {
    const sb_ref_index_geom *g;
    const float *src;   /* gather: table; scatter: dense */
    const int64_t *index;
    float *dst;         /* gather: dense; scatter: table */
    bool scatter, scale;
    float alpha;
} job;

static void run_columns(void *ctx, int64_t begin, int64_t end) {
    const job *j = ctx;
    const sb_ref_index_geom *g = j->g;
    int d = g->dim;
    int64_t len = g->shape[d], ts = g->table_stride[d];
    int64_t ds = g->dense_stride[d], is = g->index_stride[d];
    for (int64_t c = begin; c < end; c++) {
        /* the column's coordinates: c in row-major order over the other axes */
        int64_t rest = c, dense = 0, index = 0, table = 0;
        for (int k = g->ndim - 1; k >= 0; k--) {
            if (k == d) continue;
            int64_t i = rest % g->shape[k];
            rest /= g->shape[k];
            dense += i * g->dense_stride[k];
            index += i * g->index_stride[k];
            table += i * g->table_stride[k];
        }
        if (j->scatter) {
            for (int64_t i = 0; i < len; i++) {
                float v = j->src[dense + i * ds];
                float t = j->scale ? j->alpha * v : v;
                float *p = &j->dst[table + j->index[index + i * is] * ts];
                *p = *p + t;
            }
        } else {
            for (int64_t i = 0; i < len; i++)
                j->dst[dense + i * ds] = j->src[table + j->index[index + i * is] * ts];
        }
    }
}

static void run(job *j) {
    const sb_ref_index_geom *g = j->g;
    int64_t cols = 1, len = g->shape[g->dim];
    for (int k = 0; k < g->ndim; k++)
        if (k != g->dim) cols *= g->shape[k];
    if (cols == 0 || len == 0) return;
    int64_t per = MIN_WORK / len + 1;
    sb_parallel_for(cols, sb_parallel_grain(cols, per), run_columns, j);
}

void sb_cpu_index_gather(const sb_ref_index_geom *g, const float *table, const int64_t *index,
                         float *dense) {
    job j = {.g = g, .src = table, .index = index, .dst = dense, .scatter = false};
    run(&j);
}

void sb_cpu_index_scatter_add(const sb_ref_index_geom *g, const float *dense,
                              const int64_t *index, bool scale, float alpha, float *table) {
    job j = {.g = g, .src = dense, .index = index, .dst = table, .scatter = true,
             .scale = scale, .alpha = alpha};
    run(&j);
}
