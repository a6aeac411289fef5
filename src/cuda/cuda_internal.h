/* src/cuda/cuda_internal.h - raw device-pointer kernels of the CUDA backend,
 * one per reference kernel of src/ref/ with the same arguments (geometry
 * structs from ref/ref_linalg.h) plus the context. Each has exactly its
 * reference's semantics and bits; the tests (tests/cuda/) call both on the
 * same inputs. Pointers are device memory; the call only queues work on
 * the context's stream. Not installed. */
#ifndef SB_CUDA_INTERNAL_H
#define SB_CUDA_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/cuda.h"
#include "samebits/elementwise.h"
#include "ref/ref_linalg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GEMM family (contract section 7). */
sb_status sb_cuda_conv2d_forward_raw(sb_cuda_context *ctx, const sb_conv2d_geom *g,
                                     const float *x, const float *w, const float *bias, float *y);
sb_status sb_cuda_conv2d_backward_input_raw(sb_cuda_context *ctx, const sb_conv2d_geom *g,
                                            const float *dy, const float *w, float *dx);
sb_status sb_cuda_conv2d_backward_weight_raw(sb_cuda_context *ctx, const sb_conv2d_geom *g,
                                             const float *dy, const float *x, float *dw);
sb_status sb_cuda_conv2d_backward_bias_raw(sb_cuda_context *ctx, const sb_conv2d_geom *g,
                                           const float *dy, float *db);
/* linear: x (R, in), w (out, in), bias (out) or NULL, y (R, out). */
sb_status sb_cuda_linear_forward_raw(sb_cuda_context *ctx, int64_t R, int64_t in, int64_t out,
                                     const float *x, const float *w, const float *bias, float *y);
sb_status sb_cuda_linear_backward_raw(sb_cuda_context *ctx, int64_t R, int64_t in, int64_t out,
                                      const float *dy, const float *x, const float *w, float *dx,
                                      float *dw, float *db);

/* Canonical sums of `rows` independent rows: row r's elements are
 * x[r*row_stride + j*elem_stride], j = 0..n-1; out[r*out_stride]. */
sb_status sb_cuda_sum_rows(sb_cuda_context *ctx, const float *x, int64_t rows, int64_t n,
                           int64_t row_stride, int64_t elem_stride, float *out,
                           int64_t out_stride);
/* The canonical sum over any reduced dims (sum.cl): output o (kept dims
 * row-major, at most 8 each) is out[sum of o's coordinates * keep_ostride],
 * the sum of x over the reduced dims enumerated row-major. */
sb_status sb_cuda_sum_strided(sb_cuda_context *ctx, const float *x, int nkeep,
                              const int64_t *keep_shape, const int64_t *keep_xstride,
                              const int64_t *keep_ostride, int nred, const int64_t *red_shape,
                              const int64_t *red_xstride, float *out);

/* Pooling (section 8). */
sb_status sb_cuda_max_pool2d_forward_raw(sb_cuda_context *ctx, const sb_pool2d_geom *g,
                                         const float *x, float *y, int64_t *indices);
sb_status sb_cuda_max_pool2d_backward_raw(sb_cuda_context *ctx, const sb_pool2d_geom *g,
                                          const float *dy, const int64_t *indices, float *dx);
sb_status sb_cuda_avg_pool2d_forward_raw(sb_cuda_context *ctx, const sb_pool2d_geom *g,
                                         const float *x, float *y);
sb_status sb_cuda_avg_pool2d_backward_raw(sb_cuda_context *ctx, const sb_pool2d_geom *g,
                                          const float *dy, float *dx);

/* Pointwise (section 9), contiguous arrays of n elements. */
typedef enum sb_cuda_act {
    SB_CUDA_ACT_RELU = 0,
    SB_CUDA_ACT_LEAKY_RELU, /* param0 = slope */
    SB_CUDA_ACT_TANH,
    SB_CUDA_ACT_SIGMOID,
    SB_CUDA_ACT_SILU,
    SB_CUDA_ACT_GELU,      /* param0 != 0: tanh approximation */
    SB_CUDA_ACT_SOFTPLUS,  /* param0 = beta, param1 = threshold */
    SB_CUDA_ACT_COUNT
} sb_cuda_act;
/* Forward y = f(x). Backward: `in` is x, or y for tanh and sigmoid (as the
 * reference backward takes them). */
sb_status sb_cuda_act_forward_raw(sb_cuda_context *ctx, sb_cuda_act act, int64_t n,
                                  const float *x, float param0, float param1, float *y);
sb_status sb_cuda_act_backward_raw(sb_cuda_context *ctx, sb_cuda_act act, int64_t n,
                                   const float *in, const float *dy, float param0, float param1,
                                   float *dx);
/* Softmax family and losses (section 11); layouts as src/ref/ref_loss.h. */
sb_status sb_cuda_softmax_forward_raw(sb_cuda_context *ctx, bool log, const float *x,
                                      int64_t outer, int64_t n, int64_t inner, float *y);
sb_status sb_cuda_softmax_backward_raw(sb_cuda_context *ctx, bool log, const float *y,
                                       const float *dy, int64_t outer, int64_t n, int64_t inner,
                                       float *dx);
/* targets are validated by the caller (in [0, C) or == ignore_index). */
sb_status sb_cuda_cross_entropy_forward_raw(sb_cuda_context *ctx, const float *logits,
                                            const int64_t *targets, int64_t N, int64_t C,
                                            sb_loss_reduction reduction, float label_smoothing,
                                            int64_t ignore_index, float *loss);
sb_status sb_cuda_cross_entropy_backward_raw(sb_cuda_context *ctx, const float *logits,
                                             const int64_t *targets, int64_t N, int64_t C,
                                             sb_loss_reduction reduction, float label_smoothing,
                                             int64_t ignore_index, const float *dloss,
                                             float *dlogits);
/* Not yet on the GPU (docs/GPU.md, "Remaining ops"): unary/binary
 * elementwise and their broadcasting backward, reductions over axes, dropout,
 * batch norm and layer norm. */

/* Unregisters the CUDA backend when ctx is the context serving it (called
 * by sb_cuda_context_free). */
void sb_cuda_backend_forget(sb_cuda_context *ctx);

/* Optimizer element loops with host-computed factors (section 14). */
sb_status sb_cuda_sgd_raw(sb_cuda_context *ctx, const sb_sgd_factors *f, bool nesterov,
                          bool maximize, bool first, int64_t n, float *param, const float *grad,
                          float *momentum_buf);
sb_status sb_cuda_adam_raw(sb_cuda_context *ctx, const sb_adam_factors *f, bool first,
                           int64_t n, float *param, const float *grad, float *exp_avg,
                           float *exp_avg_sq, float *max_exp_avg_sq);

#ifdef __cplusplus
}
#endif

#endif
