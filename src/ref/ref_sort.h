/* src/ref/ref_sort.h - reference kernels of the selection family: sort,
 * topk, kthvalue and median with indices, and their common backward
 * (contract section 18, "Sort, topk, kthvalue and median"). Internal: not
 * installed.
 *
 * A column is the set of positions that differ only along `dim`. Every
 * column is ordered by one total order on (key, position) (see
 * sb_ref_sort_key), so the ordered column is unique and any correct sorting
 * method gives it; the kernels then write the ranks [start, start + count)
 * of that order. Strides are in elements and may be anything the caller
 * validated. */
#ifndef SAMEBITS_REF_SORT_H
#define SAMEBITS_REF_SORT_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/tensor.h"

typedef struct sb_ref_sort_geom {
    int ndim;                       /* >= 1 */
    int dim;                        /* in [0, ndim) */
    int64_t shape[SB_MAX_DIMS];     /* x's (forward) or dx's (backward) shape; n = shape[dim] */
    int64_t count;                  /* ranks written per column (values/indices, or dy/indices
                                     * of the backward, along dim) */
    int64_t x_stride[SB_MAX_DIMS];  /* x (forward) or dx (backward) */
    int64_t v_stride[SB_MAX_DIMS];  /* values (forward) or dy (backward) */
    int64_t i_stride[SB_MAX_DIMS];  /* indices */
    bool descending;                /* forward: largest first */
    bool median;                    /* forward: start is the column's median rank */
    int64_t start;                  /* forward: first rank written (unless median) */
} sb_ref_sort_geom;

/* The sort key of a float: an unsigned integer whose order is the value's
 * order with -0 equal to +0 and every NaN equal and above +inf; complemented
 * for a descending order. Ties are broken by position (smaller first). */
uint32_t sb_ref_sort_key(float v, bool descending);

/* The first rank a column writes: g->start, or for the median the lower
 * middle (n - 1) / 2 when the column has no NaN and the rank of its first
 * NaN (n minus the number of NaNs) when it has. */
int64_t sb_ref_sort_start(const sb_ref_sort_geom *g, const float *x, int64_t xs);

/* Number of columns, and the offsets of column `col` (row-major over the
 * axes other than dim). */
int64_t sb_ref_sort_columns(const sb_ref_sort_geom *g);
void sb_ref_sort_column_at(const sb_ref_sort_geom *g, int64_t col, int64_t *xo, int64_t *vo,
                           int64_t *io);

/* One column of the forward, by the definition: the element at position i
 * has rank r = the number of positions j whose (key, j) is below (key, i);
 * when start <= r < start + count it is written to values[r - start] (bits
 * copied) and i to indices[r - start]. Needs no memory; O(n^2). */
void sb_ref_sort_column(const sb_ref_sort_geom *g, const float *x, int64_t xs, float *values,
                        int64_t vs, int64_t *indices, int64_t is);

/* Every column in turn. */
void sb_ref_sort(const sb_ref_sort_geom *g, const float *x, float *values, int64_t *indices);

/* The backward's scatter, into a dx already filled with +0: in every
 * column, for p = 0 .. count-1 ascending, dx[indices[p]] = dy[p] (bits
 * copied; a repeated index keeps the later p). Indices are validated by the
 * caller. */
void sb_ref_sort_scatter(const sb_ref_sort_geom *g, const float *dy, const int64_t *indices,
                         float *dx);

#endif
