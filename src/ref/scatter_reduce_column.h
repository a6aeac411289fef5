/* src/ref/scatter_reduce_column.h - one column of scatter_reduce (contract
 * section 18, "scatter_reduce"; ref_scatter_reduce.h states the rules):
 * the identity fill, the combine of each term in ascending position and a
 * mean's division. One text for every implementation: the reference (and
 * through it the CPU kernels) includes it as C, and the OpenCL pointwise
 * program embeds it before index.cl (its #include lines are dropped there,
 * and column data is then in global memory). Not installed. */
#ifndef SAMEBITS_SCATTER_REDUCE_COLUMN_H
#define SAMEBITS_SCATTER_REDUCE_COLUMN_H

#ifdef __OPENCL_VERSION__
#ifndef SB_OPENCL_INT64_T
#define SB_OPENCL_INT64_T
typedef long int64_t;
#endif
#define SB_SR_MEM __global
/* sb_scatter_reduce_op's values (include/samebits/index.h). */
typedef int sb_scatter_reduce_op;
#define SB_SCATTER_SUM 0
#define SB_SCATTER_PROD 1
#define SB_SCATTER_MEAN 2
#define SB_SCATTER_AMAX 3
#define SB_SCATTER_AMIN 4
#else
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include "samebits/index.h"
#define SB_SR_MEM
#endif

/* The reduction's identity: +0 for sum and mean, 1 for prod, -inf for
 * amax, +inf for amin. */
static inline float sb_scatter_identity(sb_scatter_reduce_op op) {
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
static inline float sb_scatter_combine(sb_scatter_reduce_op op, float d, float t) {
    switch (op) {
    case SB_SCATTER_PROD: return d * t;
    case SB_SCATTER_AMAX: return (t != t || d < t) ? t : d;
    case SB_SCATTER_AMIN: return (t != t || t < d) ? t : d;
    default: return d + t;
    }
}

/* sb_ref_scatter_reduce_column's body (ref_scatter_reduce.h): counts is
 * NULL or scratch for table_len counts (mean only). */
static inline void sb_scatter_reduce_column_run(sb_scatter_reduce_op op, bool include_self,
                                                int64_t len, SB_SR_MEM const float *src,
                                                int64_t ss, SB_SR_MEM const int64_t *index,
                                                int64_t is, SB_SR_MEM float *table, int64_t ts,
                                                int64_t table_len, int64_t *counts) {
    if (!include_self)
        for (int64_t i = 0; i < len; i++) table[index[i * is] * ts] = sb_scatter_identity(op);
    for (int64_t i = 0; i < len; i++) {
        SB_SR_MEM float *d = &table[index[i * is] * ts];
        *d = sb_scatter_combine(op, *d, src[i * ss]);
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

#endif
