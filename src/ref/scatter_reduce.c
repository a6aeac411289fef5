/* Reference scatter_reduce (contract section 18, "scatter_reduce"): per
 * column, the terms combined into their destinations in ascending source
 * position, one float32 rounding per operation, as PyTorch's CPU kernel does
 * on one thread (its identity fill without include_self and its division
 * of a mean by the count included). */
#include <math.h>
#include "ref/ref_scatter_reduce.h"

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

static float identity(sb_scatter_reduce_op op) {
    switch (op) {
    case SB_SCATTER_PROD: return 1.0f;
    case SB_SCATTER_AMAX: return -INFINITY;
    case SB_SCATTER_AMIN: return INFINITY;
    default: return 0.0f;
    }
}

/* PyTorch's combine rules: a NaN term always wins amax/amin, a NaN already
 * there stays (no comparison with it is true), and of equal values (-0 and
 * +0 included) the one already there stays. */
static float combine(sb_scatter_reduce_op op, float d, float t) {
    switch (op) {
    case SB_SCATTER_PROD: return d * t;
    case SB_SCATTER_AMAX: return (t != t || d < t) ? t : d;
    case SB_SCATTER_AMIN: return (t != t || t < d) ? t : d;
    default: return d + t;
    }
}

void sb_ref_scatter_reduce_column(sb_scatter_reduce_op op, bool include_self, int64_t len,
                                  const float *src, int64_t ss, const int64_t *index,
                                  int64_t is, float *table, int64_t ts, int64_t table_len,
                                  int64_t *counts) {
    if (!include_self)
        for (int64_t i = 0; i < len; i++) table[index[i * is] * ts] = identity(op);
    for (int64_t i = 0; i < len; i++) {
        float *d = &table[index[i * is] * ts];
        *d = combine(op, *d, src[i * ss]);
    }
    if (op != SB_SCATTER_MEAN) return;
    int64_t self = include_self ? 1 : 0;
    if (counts) {
        for (int64_t j = 0; j < table_len; j++) counts[j] = self;
        for (int64_t i = 0; i < len; i++) counts[index[i * is]]++;
        for (int64_t j = 0; j < table_len; j++)
            if (counts[j] > 1) table[j * ts] = table[j * ts] / (float)counts[j];
        return;
    }
    /* no scratch: each destination once, at its first term */
    for (int64_t i = 0; i < len; i++) {
        int64_t j = index[i * is], c = self, first = 1;
        for (int64_t q = 0; q < i && first; q++) first = index[q * is] != j;
        if (!first) continue;
        for (int64_t q = i; q < len; q++) c += index[q * is] == j;
        if (c > 1) table[j * ts] = table[j * ts] / (float)c;
    }
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
