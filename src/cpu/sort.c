/* Fast sort / topk / kthvalue / median and the backward's scatter (contract
 * section 18, "Sort, topk, kthvalue and median"; reference src/ref/sort.c).
 *
 * Columns are independent, so they are split over threads. Within a column
 * the (key, position) pairs are packed into one 64-bit word each, key high,
 * position low: all words differ, so sorting them (qsort, any order of
 * comparisons) gives the one ordered column the reference defines by
 * ranks, at every thread count and ISA level (there is no vector code). A
 * column longer than 2^32, or no scratch memory, runs the reference's
 * column kernel, which needs none. */
#include <stdlib.h>
#include "cpu/ops_internal.h"

enum { MIN_WORK = 8192 /* elements per thread range, at least */ };

typedef struct sort_job {
    const sb_ref_sort_geom *g;
    const float *x;
    float *values;
    int64_t *indices;
} sort_job;

static int word_order(const void *a, const void *b) {
    uint64_t u = *(const uint64_t *)a, v = *(const uint64_t *)b;
    return (u > v) - (u < v);
}

static void sort_columns(void *ctx, int64_t begin, int64_t end) {
    const sort_job *j = ctx;
    const sb_ref_sort_geom *g = j->g;
    int d = g->dim;
    int64_t n = g->shape[d], xs = g->x_stride[d], vs = g->v_stride[d], is = g->i_stride[d];
    uint64_t *words = n <= (int64_t)UINT32_MAX + 1
                          ? sb_scratch(SB_SCRATCH_OPS, (size_t)n * sizeof *words)
                          : NULL;
    for (int64_t c = begin; c < end; c++) {
        int64_t xo, vo, io;
        sb_ref_sort_column_at(g, c, &xo, &vo, &io);
        const float *x = j->x + xo;
        if (!words) {
            sb_ref_sort_column(g, x, xs, j->values + vo, vs, j->indices + io, is);
            continue;
        }
        for (int64_t i = 0; i < n; i++)
            words[i] = (uint64_t)sb_ref_sort_key(x[i * xs], g->descending) << 32 | (uint64_t)i;
        qsort(words, (size_t)n, sizeof *words, word_order);
        int64_t start = sb_ref_sort_start(g, x, xs);
        for (int64_t r = 0; r < g->count; r++) {
            int64_t i = (int64_t)(words[start + r] & 0xffffffffu);
            j->values[vo + r * vs] = x[i * xs];
            j->indices[io + r * is] = i;
        }
    }
}

void sb_cpu_sort(const sb_ref_sort_geom *g, const float *x, float *values, int64_t *indices) {
    int64_t cols = sb_ref_sort_columns(g), n = g->shape[g->dim];
    if (cols == 0 || g->count == 0) return;
    sort_job j = {.g = g, .x = x, .values = values, .indices = indices};
    sb_parallel_for(cols, sb_parallel_grain(cols, MIN_WORK / (n + 1) + 1), sort_columns, &j);
}

typedef struct scatter_job {
    const sb_ref_sort_geom *g;
    const float *dy;
    const int64_t *indices;
    float *dx;
} scatter_job;

static void scatter_columns(void *ctx, int64_t begin, int64_t end) {
    const scatter_job *j = ctx;
    const sb_ref_sort_geom *g = j->g;
    int d = g->dim;
    for (int64_t c = begin; c < end; c++) {
        int64_t xo, vo, io;
        sb_ref_sort_column_at(g, c, &xo, &vo, &io);
        for (int64_t p = 0; p < g->count; p++)
            j->dx[xo + j->indices[io + p * g->i_stride[d]] * g->x_stride[d]] =
                j->dy[vo + p * g->v_stride[d]];
    }
}

void sb_cpu_sort_scatter(const sb_ref_sort_geom *g, const float *dy, const int64_t *indices,
                         float *dx) {
    int64_t cols = sb_ref_sort_columns(g);
    if (cols == 0 || g->count == 0) return;
    scatter_job j = {.g = g, .dy = dy, .indices = indices, .dx = dx};
    sb_parallel_for(cols, sb_parallel_grain(cols, MIN_WORK / (g->count + 1) + 1), scatter_columns,
                    &j);
}
