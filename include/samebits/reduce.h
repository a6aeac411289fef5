/* samebits/reduce.h - reductions over axes, forward and backward
 * (docs/CONTRACT.md section "Reductions").
 *
 * Axes: `dims` lists ndims axes to reduce; negative values count from the
 * end like PyTorch (-1 is the last axis); ndims == 0 reduces over all axes;
 * a repeated axis is an error. A 0-dim input accepts dims 0 and -1 (its one
 * element). keepdim keeps reduced axes as size 1; otherwise they are removed.
 * `out` must have exactly that shape (any non-self-overlapping strides) and
 * must not overlap x. Inputs may have any strides; results do not depend on
 * them.
 *
 * Enumeration order (the contract): for each output element, the reduced
 * elements are taken in row-major order of the reduced axes in increasing
 * axis number (whatever order `dims` lists them in). Sums feed that sequence
 * to the canonical sum (contract "Canonical sum").
 */
#ifndef SAMEBITS_REDUCE_H
#define SAMEBITS_REDUCE_H
#include <stdbool.h>
#include "samebits/export.h"
#include "samebits/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Canonical sum of the reduced elements; +0.0f over no elements. */
SB_API sb_status sb_sum(const sb_tensor *x, const int *dims, int ndims, bool keepdim, sb_tensor *out);

/* sum / (float)n, one IEEE division, n the number of reduced elements
 * converted to float with round-to-nearest-even (inexact above 2^24: the
 * divisor is then that rounded value). n == 0 gives 0/0 = NaN. */
SB_API sb_status sb_mean(const sb_tensor *x, const int *dims, int ndims, bool keepdim, sb_tensor *out);

/* var = S / (float)(n - correction) with mean as sb_mean, d = x - mean and S
 * the canonical sum of d * d in the enumeration order (no FMA). correction
 * >= 0 (PyTorch: 1 = unbiased). n - correction <= 0 gives the quiet NaN
 * 0x7fc00000. std = sqrtf(var). */
SB_API sb_status sb_var(const sb_tensor *x, const int *dims, int ndims, int64_t correction, bool keepdim,
                 sb_tensor *out);
SB_API sb_status sb_std(const sb_tensor *x, const int *dims, int ndims, int64_t correction, bool keepdim,
                 sb_tensor *out);

/* Max / min in the total order -inf < -0 < +0 < +inf, NaN above all: the
 * first NaN wins, and among equal values the first in enumeration order.
 * indices (int64, out's shape, may be NULL) receives the position of the
 * winner in the enumeration of the reduced elements: for one axis, its
 * coordinate along that axis; for all axes, the row-major flat index. The
 * reduced extent must be non-empty. */
SB_API sb_status sb_max(const sb_tensor *x, const int *dims, int ndims, bool keepdim, sb_tensor *out,
                 sb_tensor *indices);
SB_API sb_status sb_min(const sb_tensor *x, const int *dims, int ndims, bool keepdim, sb_tensor *out,
                 sb_tensor *indices);
/* The indices of sb_max / sb_min alone. */
SB_API sb_status sb_argmax(const sb_tensor *x, const int *dims, int ndims, bool keepdim,
                    sb_tensor *indices);
SB_API sb_status sb_argmin(const sb_tensor *x, const int *dims, int ndims, bool keepdim,
                    sb_tensor *indices);

/* Backward. dx has the forward input's shape; dy has the forward output's
 * shape for the same dims/keepdim. dx must not overlap dy or indices.
 *   sum:  dx = dy broadcast (bits copied)
 *   mean: dx = dy / (float)n (the same divisor as sb_mean)
 *   max/min: dx = dy at the element the forward indices name, +0.0f at
 *            every other element (indices out of range: SB_ERR_RANGE). */
SB_API sb_status sb_sum_backward(const sb_tensor *dy, const int *dims, int ndims, bool keepdim,
                          sb_tensor *dx);
SB_API sb_status sb_mean_backward(const sb_tensor *dy, const int *dims, int ndims, bool keepdim,
                           sb_tensor *dx);
SB_API sb_status sb_max_backward(const sb_tensor *dy, const sb_tensor *indices, const int *dims,
                          int ndims, bool keepdim, sb_tensor *dx);

/* Cumulative sum and product along one axis (contract section 10,
 * "Cumulative sum and product"). dim counts from the end when negative; a
 * 0-dim tensor accepts 0 and -1. Every tensor has x's shape (any strides);
 * the written one must not overlap the others. Per column along dim:
 *   cumsum:  s = +0, s = s + x_i for i ascending, out_i = s
 *   cumsum backward: the same from the last index down over dy
 *   cumprod: p = 1, p = p * x_i for i ascending, out_i = p
 *   cumprod backward: PyTorch's cumprod_backward as sequential chains
 *            (the contract states it, zeros included); y = cumprod(x). */
SB_API sb_status sb_cumsum(const sb_tensor *x, int dim, sb_tensor *out);
SB_API sb_status sb_cumsum_backward(const sb_tensor *dy, int dim, sb_tensor *dx);
SB_API sb_status sb_cumprod(const sb_tensor *x, int dim, sb_tensor *out);
SB_API sb_status sb_cumprod_backward(const sb_tensor *x, const sb_tensor *y, const sb_tensor *dy,
                                     int dim, sb_tensor *dx);

#ifdef __cplusplus
}
#endif
#endif
