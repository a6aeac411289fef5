/* samebits/dropout.h - inverted dropout driven by counter-based randomness.
 *
 * Element i (row-major logical order of x) is kept iff u_i >= p, where
 * u_i = sb_rng_uniform_at(seed, stream, offset + i). With
 *     scale = (p == 1) ? 0.0f : 1.0f / (1.0f - p)      (float, computed once)
 *     m_i   = mask_i * scale,  mask_i = kept ? 1.0f : 0.0f
 *     y_i   = x_i * m_i
 * which is PyTorch's x * (bernoulli(1-p) / (1-p)): a dropped inf or NaN
 * gives NaN, a dropped negative x gives -0.0f. p = 0 gives y = x * 1;
 * eval mode (training == false) copies x unchanged and fills mask with 1.0f.
 * Contract: docs/CONTRACT.md, section "Dropout".
 */
#ifndef SAMEBITS_DROPOUT_H
#define SAMEBITS_DROPOUT_H
#include <stdbool.h>
#include <stdint.h>
#include "samebits/export.h"
#include "samebits/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x, y (and mask, if not NULL): float32 tensors of one shape, any strides.
 * p in [0, 1]; offset + numel(x) <= SB_RNG_INDEX_LIMIT. mask receives
 * 1.0f for kept and 0.0f for dropped elements (1.0f everywhere in eval). */
SB_API sb_status sb_dropout_forward(const sb_tensor *x, float p, bool training, uint64_t seed,
                             uint64_t stream, uint64_t offset, sb_tensor *y, sb_tensor *mask);

/* dx_i = dy_i * (mask_i * scale) in training; dx_i = dy_i in eval (mask
 * may then be NULL). mask values must be 0.0f or 1.0f. */
SB_API sb_status sb_dropout_backward(const sb_tensor *dy, const sb_tensor *mask, float p, bool training,
                              sb_tensor *dx);

#ifdef __cplusplus
}
#endif
#endif
