/* samebits/norm.h - batch, layer, RMS and group normalisation.
 *
 * Forward and backward, with PyTorch's semantics (BatchNorm1d/2d/3d running
 * statistics, LayerNorm and RMSNorm over trailing dimensions) and one exact sequence of
 * IEEE float operations each (contract section "Normalisation"). Every
 * reduction is the canonical sum. All tensors are float32, contiguous, on the
 * CPU; outputs must not overlap inputs. Optional tensors may be NULL.
 * Backward functions WRITE their gradients (they do not accumulate).
 * On any validation error nothing is written.
 */
#ifndef SAMEBITS_NORM_H
#define SAMEBITS_NORM_H

#include <stdbool.h>
#include "samebits/export.h"
#include "samebits/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Batch norm over x of shape (N, C, spatial...) with 0 or more spatial dims:
 * (N,C), (N,C,L), (N,C,H,W), ... . Statistics are per channel c over the
 * count = N * prod(spatial) elements x[n, c, s...].
 *
 *   gamma, beta      (C) or NULL: affine scale / shift (each independently
 *                    optional; a missing one is skipped, not 1 or +0).
 *   running_mean,    (C), both or neither. training: updated in place as
 *   running_var      PyTorch does (momentum, unbiased variance); needs
 *                    count >= 2. eval (training == false): required, used as
 *                    the statistics.
 *   momentum         in [0, 1] (checked in both modes).
 *   eps              finite and > 0.
 *   y                same shape as x.
 *   save_mean,       (C) or NULL: the mean and 1/sqrt(var + eps) used, the
 *   save_rstd        inputs of sb_batch_norm_backward. In eval mode these are
 *                    running_mean and 1/sqrtf(running_var + eps).
 * training needs count >= 1. */
SB_API sb_status sb_batch_norm_forward(const sb_tensor *x, const sb_tensor *gamma,
                                const sb_tensor *beta, sb_tensor *running_mean,
                                sb_tensor *running_var, bool training, float momentum,
                                float eps, sb_tensor *y, sb_tensor *save_mean,
                                sb_tensor *save_rstd);

/* Gradients of sb_batch_norm_forward given dy (shape of x).
 *   gamma            as passed to the forward (NULL: no scale).
 *   save_mean,       required, (C): as written by the forward in the same
 *   save_rstd        mode.
 *   training         true: batch statistics (gradient flows through mean and
 *                    variance); false: fixed (running) statistics.
 *   dx (x's shape), dgamma (C), dbeta (C): outputs, each optional. */
SB_API sb_status sb_batch_norm_backward(const sb_tensor *dy, const sb_tensor *x,
                                 const sb_tensor *gamma, const sb_tensor *save_mean,
                                 const sb_tensor *save_rstd, bool training, sb_tensor *dx,
                                 sb_tensor *dgamma, sb_tensor *dbeta);

/* Layer norm of x over its last normalized_ndim dimensions (1..x->ndim):
 * rows are the leading dims (R = their product, 1 if none), each row has
 * D = prod(trailing dims) >= 1 elements.
 *   gamma, beta      shape = the trailing dims of x, or NULL (independently).
 *   eps              finite and > 0.
 *   y                same shape as x.
 *   save_mean,       shape = the leading dims of x (a 0-d scalar when
 *   save_rstd        normalized_ndim == x->ndim), or NULL. */
SB_API sb_status sb_layer_norm_forward(const sb_tensor *x, int normalized_ndim, const sb_tensor *gamma,
                                const sb_tensor *beta, float eps, sb_tensor *y,
                                sb_tensor *save_mean, sb_tensor *save_rstd);

/* Gradients of sb_layer_norm_forward given dy (shape of x). save_mean and
 * save_rstd are required; dx (x's shape), dgamma and dbeta (the trailing dims) are
 * each optional. */
SB_API sb_status sb_layer_norm_backward(const sb_tensor *dy, const sb_tensor *x, int normalized_ndim,
                                 const sb_tensor *gamma, const sb_tensor *save_mean,
                                 const sb_tensor *save_rstd, sb_tensor *dx, sb_tensor *dgamma,
                                 sb_tensor *dbeta);

/* RMS norm of x over its last normalized_ndim dimensions (1..x->ndim), rows
 * as for layer norm: y = x * rrms [* weight], rrms = 1/sqrt(mean(x^2) + eps)
 * per row (PyTorch's nn.RMSNorm / F.rms_norm; no bias, no mean subtracted).
 *   weight           shape = the trailing dims of x, or NULL.
 *   eps              finite and > 0 (PyTorch's eps=None is FLT_EPSILON).
 *   y                same shape as x (may be x itself).
 *   save_rrms        shape = the leading dims of x, or NULL: each row's rrms,
 *                    the input of sb_rms_norm_backward. */
SB_API sb_status sb_rms_norm_forward(const sb_tensor *x, int normalized_ndim,
                                     const sb_tensor *weight, float eps, sb_tensor *y,
                                     sb_tensor *save_rrms);

/* Gradients of sb_rms_norm_forward given dy (shape of x). save_rrms is
 * required; dx (x's shape) and dweight (the trailing dims) are each
 * optional. */
SB_API sb_status sb_rms_norm_backward(const sb_tensor *dy, const sb_tensor *x, int normalized_ndim,
                                      const sb_tensor *weight, const sb_tensor *save_rrms,
                                      sb_tensor *dx, sb_tensor *dweight);

/* Group norm of x of shape (N, C, spatial...) with 0 or more spatial dims:
 * the C channels are split into `groups` consecutive groups of C/groups
 * channels; statistics are per (n, group) over its (C/groups) * S elements,
 * S = prod(spatial) (InstanceNorm: groups = C).
 *   groups           >= 1 and divides C; (C/groups) * S >= 1.
 *   gamma, beta      (C) or NULL (independently): per-channel affine.
 *   eps              finite and > 0.
 *   y                same shape as x (may be x itself).
 *   save_mean,       (N, groups) or NULL: the statistics used, the inputs of
 *   save_rstd        sb_group_norm_backward. */
SB_API sb_status sb_group_norm_forward(const sb_tensor *x, int64_t groups, const sb_tensor *gamma,
                                       const sb_tensor *beta, float eps, sb_tensor *y,
                                       sb_tensor *save_mean, sb_tensor *save_rstd);

/* Gradients of sb_group_norm_forward given dy (shape of x). save_mean and
 * save_rstd (N, groups) are required; dx (x's shape), dgamma and dbeta (C)
 * are each optional. */
SB_API sb_status sb_group_norm_backward(const sb_tensor *dy, const sb_tensor *x, int64_t groups,
                                        const sb_tensor *gamma, const sb_tensor *save_mean,
                                        const sb_tensor *save_rstd, sb_tensor *dx,
                                        sb_tensor *dgamma, sb_tensor *dbeta);

#ifdef __cplusplus
}
#endif
#endif
