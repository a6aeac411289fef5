/* src/ref/ref_index.h - reference kernels of the index family (gather,
 * index_select, scatter_add, index_add and their backward). Internal: not
 * installed.
 *
 * One geometry serves all four ops: an iteration shape (index's shape, or
 * the broadcast of a 1-D index along `dim` for index_select/index_add), the
 * strides of the dense side (gather's out, scatter's src) and of the index
 * (0 along broadcast axes), and the strides of the indexed side (gather's x,
 * scatter's out), whose coordinate along `dim` is the index value instead of
 * the iteration position. Index values are validated by the caller. */
#ifndef SAMEBITS_REF_INDEX_H
#define SAMEBITS_REF_INDEX_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/tensor.h"

typedef struct sb_ref_index_geom {
    int ndim;                          /* >= 1 */
    int dim;                           /* in [0, ndim) */
    int64_t shape[SB_MAX_DIMS];        /* the iteration shape */
    int64_t dense_stride[SB_MAX_DIMS]; /* gather: out; scatter: src */
    int64_t index_stride[SB_MAX_DIMS];
    int64_t table_stride[SB_MAX_DIMS]; /* gather: x; scatter: out */
} sb_ref_index_geom;

/* dense[p] = table[p with p[dim] = index[p]], for every p of the shape. */
void sb_ref_index_gather(const sb_ref_index_geom *g, const float *table, const int64_t *index,
                         float *dense);

/* For every p of the shape in ascending row-major order:
 * table[p with p[dim] = index[p]] = that + t, t = dense[p] (scale false) or
 * alpha * dense[p] (scale true, one rounding), one rounding per add. */
void sb_ref_index_scatter_add(const sb_ref_index_geom *g, const float *dense,
                              const int64_t *index, bool scale, float alpha, float *table);

#endif
