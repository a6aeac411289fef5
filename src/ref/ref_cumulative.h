/* src/ref/ref_cumulative.h - reference kernels of cumsum and cumprod,
 * forward and backward (contract section 10, "Cumulative sum and product").
 * Internal: not installed.
 *
 * A column is the set of positions that differ only along `dim`; every
 * output element depends on its own column alone, so the kernels are stated
 * per column (sb_ref_cum_column) and the tensor walk only enumerates the
 * columns. Strides are in elements and may be anything the caller
 * validated. */
#ifndef SAMEBITS_REF_CUMULATIVE_H
#define SAMEBITS_REF_CUMULATIVE_H

#include <stdint.h>
#include "samebits/tensor.h"

typedef enum sb_ref_cum_kind {
    SB_CUM_SUM = 0,      /* out = cumsum(x) */
    SB_CUM_SUM_BACKWARD, /* out = reverse cumsum(dy) */
    SB_CUM_PROD,         /* out = cumprod(x) */
    SB_CUM_PROD_BACKWARD /* out = dx from x, y = cumprod(x), dy */
} sb_ref_cum_kind;

typedef struct sb_ref_cum_geom {
    int ndim;                      /* >= 1 */
    int dim;                       /* in [0, ndim) */
    int64_t shape[SB_MAX_DIMS];    /* every tensor's shape */
    int64_t x_stride[SB_MAX_DIMS]; /* x (SUM, PROD, PROD_BACKWARD) or dy (SUM_BACKWARD) */
    int64_t y_stride[SB_MAX_DIMS]; /* PROD_BACKWARD: y */
    int64_t dy_stride[SB_MAX_DIMS]; /* PROD_BACKWARD: dy */
    int64_t out_stride[SB_MAX_DIMS];
} sb_ref_cum_geom;

/* One column of n elements: a (x, or dy for SUM_BACKWARD), b (y) and c (dy)
 * with their strides along dim; b and c are read by PROD_BACKWARD only. */
void sb_ref_cum_column(sb_ref_cum_kind kind, int64_t n, const float *a, int64_t as, const float *b,
                       int64_t bs, const float *c, int64_t cs, float *out, int64_t os);

/* Offsets of column `col` (row-major over the axes other than dim). */
void sb_ref_cum_column_at(const sb_ref_cum_geom *g, int64_t col, int64_t *xo, int64_t *yo,
                          int64_t *dyo, int64_t *oo);

/* The number of columns (product of the sizes other than dim). */
int64_t sb_ref_cum_columns(const sb_ref_cum_geom *g);

/* Every column in turn. x is x (or dy for SUM_BACKWARD); y and dy may be
 * NULL except for PROD_BACKWARD. */
void sb_ref_cumulative(sb_ref_cum_kind kind, const sb_ref_cum_geom *g, const float *x,
                       const float *y, const float *dy, float *out);

#endif
