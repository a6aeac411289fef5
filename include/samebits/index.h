/* samebits/index.h - indexing ops that read or accumulate through int64
 * index tensors: gather, index_select, scatter_add, index_add, forward and
 * backward (docs/CONTRACT.md section "Index, scatter and embedding").
 *
 * Indices are SB_I64 tensors (as sb_argmax writes and the class losses
 * read). `dim` counts from the end when negative, like PyTorch (-1 is the
 * last axis). Every index value must lie in [0, size) of the indexed axis:
 * a negative or too large value is refused (SB_ERR_RANGE, naming the element
 * and the value) before anything is written, as PyTorch refuses it for
 * these ops. Tensors may have any strides (outputs must not overlap
 * themselves or any input); results do not depend on them.
 *
 * Accumulation order (the contract): every destination element receives its
 * terms in ascending row-major (flattened) position of the source, each term
 * added with one float32 rounding: d = d + t. For scatter_add and index_add
 * the terms landing on one destination element differ only in their
 * coordinate along `dim`, so this is ascending position along `dim`. The
 * result therefore does not depend on threads, ISA or device.
 */
#ifndef SAMEBITS_INDEX_H
#define SAMEBITS_INDEX_H
#include <stdbool.h>
#include <stdint.h>
#include "samebits/export.h"
#include "samebits/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out[p] = x[p with p[dim] replaced by index[p]] (bits copied).
 * index and out have one shape; x has that shape except along dim (any
 * size there, non-zero unless index is empty). */
SB_API sb_status sb_gather(const sb_tensor *x, int dim, const sb_tensor *index, sb_tensor *out);

/* The gradient of sb_gather: dx = +0, then sb_scatter_add(dim, index, dy)
 * into dx. dy and index have one shape; dx has the forward input's shape. */
SB_API sb_status sb_gather_backward(const sb_tensor *dy, int dim, const sb_tensor *index,
                                    sb_tensor *dx);

/* In place: for every position p of src in ascending row-major order,
 * out[p with p[dim] replaced by index[p]] += src[p].
 * index and src have one shape; out has that shape except along dim. */
SB_API sb_status sb_scatter_add(int dim, const sb_tensor *index, const sb_tensor *src,
                                sb_tensor *out);

/* The reductions of sb_scatter_reduce (PyTorch's reduce= strings). */
typedef enum sb_scatter_reduce_op {
    SB_SCATTER_SUM = 0,
    SB_SCATTER_PROD = 1,
    SB_SCATTER_MEAN = 2,
    SB_SCATTER_AMAX = 3,
    SB_SCATTER_AMIN = 4
} sb_scatter_reduce_op;

/* In place, PyTorch's out.scatter_reduce_(dim, index, src, reduce,
 * include_self): every term src[p] (p over index's shape; index and src have
 * one shape) goes to out[p with p[dim] = index[p]]. Per destination: without
 * include_self it is first set to the identity (+0, 1, -inf, +inf) when it
 * receives a term; then its terms are combined in ascending source position,
 * one rounding each (sum/mean d + t, prod d * t, amax/amin: a NaN term wins,
 * else the strictly larger/smaller, ties keep d); a mean is then divided by
 * its count of contributions (terms, plus one with include_self) when that
 * is above 1. out has src's shape except along dim. */
SB_API sb_status sb_scatter_reduce(int dim, const sb_tensor *index, const sb_tensor *src,
                                   sb_scatter_reduce_op reduce, bool include_self, sb_tensor *out);

/* out = x with axis dim taken at index[0..K-1]: out has x's shape with
 * size K along dim; index is 1-D (K) or 0-D (one element, and out keeps a
 * size-1 axis there). Bits copied. */
SB_API sb_status sb_index_select(const sb_tensor *x, int dim, const sb_tensor *index,
                                 sb_tensor *out);

/* The gradient of sb_index_select: dx = +0, then sb_index_add(dim, index,
 * dy, 1) into dx. */
SB_API sb_status sb_index_select_backward(const sb_tensor *dy, int dim, const sb_tensor *index,
                                          sb_tensor *dx);

/* In place: for i = 0..K-1 in ascending order, the slice i of source along
 * dim is added to the slice index[i] of out: out[.., index[i], ..] +=
 * t[.., i, ..], where t = source when alpha == 1 and t = alpha * source
 * (one rounding) otherwise. index is 1-D (K) or 0-D; source has out's shape
 * with size K along dim. */
SB_API sb_status sb_index_add(int dim, const sb_tensor *index, const sb_tensor *source,
                              float alpha, sb_tensor *out);

/* Embedding lookup (PyTorch's F.embedding without max_norm): out =
 * weight[indices], weight (num, D), indices int64 of any shape with values in
 * [0, num), out of shape indices.shape + (D) (bits copied: sb_index_select of
 * dim 0 over the flattened indices). */
SB_API sb_status sb_embedding_forward(const sb_tensor *weight, const sb_tensor *indices,
                                      sb_tensor *out);

/* No padding row (sb_embedding_backward's padding_idx). */
#define SB_NO_PADDING INT64_MIN

/* The weight gradient of sb_embedding_forward: dweight (num, D) = +0, then
 * dy's rows added to the rows their indices name, in ascending position
 * (sb_index_select_backward), the positions whose index is padding_idx
 * left out (that row's gradient stays +0). padding_idx is SB_NO_PADDING or
 * in [-num, num) (negative counts from the end, as PyTorch). All tensors on
 * the CPU. */
SB_API sb_status sb_embedding_backward(const sb_tensor *dy, const sb_tensor *indices,
                                       int64_t padding_idx, sb_tensor *dweight);

/* ---- counting: bincount and histc (contract section 18, "bincount and
 * histc"); forward only (PyTorch has no gradient for them). CPU tensors. */

/* x: SB_I64, 1-D, every value >= 0 and < out's length (the caller sizes out
 * as max(x) + 1 or minlength, whichever is larger). Without weights (NULL)
 * out is SB_I64 and out[b] counts the b's of x; with weights (SB_F32, x's
 * length) out is SB_F32 and out[b] = +0 plus the weights of the positions
 * holding b, added in ascending position, one rounding each. */
SB_API sb_status sb_bincount(const sb_tensor *x, const sb_tensor *weights, sb_tensor *out);

/* out (SB_F32, 1-D, bins >= 1 elements) = the histogram of x's elements
 * (any shape) over bins equal bins of [min, max], PyTorch's rule: an element
 * v in [min, max] (NaN never) goes to bin (int64)(((v - min) * bins) /
 * (max - min)) (three float32 roundings), the top edge to the last bin;
 * counts are exact integers converted to float32. min == max means x's own
 * minimum and maximum (refused when x has a NaN or an infinity), widened to
 * [v - 1, v + 1] if they are equal too; min > max is refused. */
SB_API sb_status sb_histc(const sb_tensor *x, int64_t bins, float min, float max, sb_tensor *out);

/* ---- selection: sort, topk, kthvalue, median with indices --------------
 * (contract section 18, "Sort, topk, kthvalue and median"). Each column
 * along dim is ordered by value with -0 equal to +0 and every NaN equal and
 * above +inf (descending: the reverse), equal values keeping ascending
 * position order (a stable sort). Values are bit copies of x's elements;
 * indices (SB_I64) are their positions along dim. x may be 0-dim (one
 * column of one element). Outputs must not overlap each other or x. */

/* values, indices: x's shape, each column ordered (descending: largest
 * first, NaN first). */
SB_API sb_status sb_sort(const sb_tensor *x, int dim, bool descending, sb_tensor *values,
                         sb_tensor *indices);

/* The first k of each column's order (largest: descending order, else
 * ascending): values and indices have x's shape with k along dim;
 * 0 <= k <= size of dim. */
SB_API sb_status sb_topk(const sb_tensor *x, int64_t k, int dim, bool largest, sb_tensor *values,
                         sb_tensor *indices);

/* The k-th smallest (1-based) of each column in ascending order; 1 <= k <=
 * size of dim. values and indices have x's shape with dim removed, or kept
 * with size 1 when keepdim. */
SB_API sb_status sb_kthvalue(const sb_tensor *x, int64_t k, int dim, bool keepdim,
                             sb_tensor *values, sb_tensor *indices);

/* The median of each column: the lower middle, rank (n - 1) / 2 of the
 * ascending order, or the first NaN (in position order) when the column
 * has one, as PyTorch. Shapes as sb_kthvalue; dim must not be empty. */
SB_API sb_status sb_median(const sb_tensor *x, int dim, bool keepdim, sb_tensor *values,
                           sb_tensor *indices);

/* The gradient of all four: dx = +0, then in every column along dim, for
 * p ascending, dx[indices[p]] = dy[p] (bits copied; a repeated index keeps
 * the later p). dy and indices have one shape, dx's rank and dx's shape
 * except along dim (keepdim form for kthvalue and median); every index in
 * [0, size of dx along dim). */
SB_API sb_status sb_sort_backward(const sb_tensor *dy, int dim, const sb_tensor *indices,
                                  sb_tensor *dx);

#ifdef __cplusplus
}
#endif
#endif
