/* samebits/cuda.h - the optional CUDA backend (docs/GPU.md).
 *
 * Available only in builds made with nvcc (libsamebits_cuda.a, linked before
 * libsamebits.a and with -lcudart). Every result is the bit pattern of the
 * CPU reference (docs/CONTRACT.md): the GPU changes speed, never bits.
 *
 * A context owns one device, one CUDA stream and a caching allocator. All
 * work of a context is queued on its stream in call order; the functions
 * that return data to the host (sb_cuda_memcpy_d2h, sb_cuda_tensor_to_host,
 * sb_cuda_synchronize) wait for it. A context is used by one host thread at
 * a time.
 *
 * The CUDA device plugs into the library's backend table: after
 * sb_cuda_register(ctx), tensors on SB_DEVICE_CUDA (sb_tensor_new_on,
 * sb_tensor_to, sb_cuda_tensor_new) pass through the ordinary tensor ops,
 * autograd, modules (sb_module_to) and optimizers, validated by the same
 * code and with the same messages as on the CPU; ops the GPU has no kernel
 * for yet fail with SB_ERR_UNSUPPORTED naming the op. sb_tensor_free
 * releases a device tensor through the context's allocator.
 *
 * Every function validates its arguments and returns an sb_status with a
 * readable message (sb_last_error()); without a usable GPU they return
 * SB_ERR_UNSUPPORTED with "no CUDA device: <reason>".
 */
#ifndef SAMEBITS_CUDA_H
#define SAMEBITS_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "samebits/export.h"
#include "samebits/status.h"
#include "samebits/tensor.h"
#include "samebits/conv.h"
#include "samebits/loss.h"
#include "samebits/optim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- devices ------------------------------------------------------------ */

/* True when at least one CUDA device can run this build's kernels. When
 * false, `why` (if not NULL) receives the reason (no driver, no device, too
 * old a driver...). */
SB_API bool sb_cuda_available(const char **why);

typedef struct sb_cuda_device_info {
    int device_count;
    int driver_version;  /* e.g. 12040 for 12.4 */
    int runtime_version; /* the libcudart this program links */
    int cc_major, cc_minor;
    char name[256];
    size_t total_memory;
} sb_cuda_device_info;

SB_API sb_status sb_cuda_query(int device, sb_cuda_device_info *info);

/* ---- contexts, memory, copies ----------------------------------------- */

typedef struct sb_cuda_context sb_cuda_context;

SB_API sb_status sb_cuda_context_new(sb_cuda_context **out, int device);
/* NULL is ignored; a context serving SB_DEVICE_CUDA is unregistered first
 * (free its tensors before). */
SB_API void sb_cuda_context_free(sb_cuda_context *ctx);

/* Makes ctx the one context serving SB_DEVICE_CUDA (replacing another:
 * tensors made through the old one must be freed before). */
SB_API sb_status sb_cuda_register(sb_cuda_context *ctx);
SB_API void sb_cuda_unregister(void);
/* The context's cudaStream_t, as a void pointer (for interop). */
SB_API void *sb_cuda_stream(sb_cuda_context *ctx);
/* Waits for all queued work; reports an asynchronous kernel error. */
SB_API sb_status sb_cuda_synchronize(sb_cuda_context *ctx);

/* Caching allocator: blocks are rounded up to a size class (powers of two
 * from 512 bytes, then multiples of 2 MiB) and kept on per-class free lists
 * when freed; a failed cudaMalloc empties the cache and retries once.
 * Memory is 256-byte aligned. bytes == 0 gives *out = NULL. */
SB_API sb_status sb_cuda_malloc(sb_cuda_context *ctx, size_t bytes, void **out);
SB_API sb_status sb_cuda_free(sb_cuda_context *ctx, void *p); /* NULL is ignored */
SB_API sb_status sb_cuda_empty_cache(sb_cuda_context *ctx);
SB_API void sb_cuda_memory_stats(const sb_cuda_context *ctx, size_t *in_use, size_t *cached);

SB_API sb_status sb_cuda_memcpy_h2d(sb_cuda_context *ctx, void *dst, const void *src, size_t bytes);
SB_API sb_status sb_cuda_memcpy_d2h(sb_cuda_context *ctx, void *dst, const void *src, size_t bytes);
SB_API sb_status sb_cuda_memcpy_d2d(sb_cuda_context *ctx, void *dst, const void *src, size_t bytes);
SB_API sb_status sb_cuda_memset0(sb_cuda_context *ctx, void *dst, size_t bytes);

/* ---- device tensors ----------------------------------------------------- */

/* A contiguous, zero-filled device tensor (registers ctx, then
 * sb_tensor_new_on(SB_DEVICE_CUDA)); sb_cuda_tensor_free is sb_tensor_free. */
SB_API sb_status sb_cuda_tensor_new(sb_cuda_context *ctx, sb_tensor **out, sb_dtype dtype, int ndim,
                             const int64_t *shape);
SB_API void sb_cuda_tensor_free(sb_cuda_context *ctx, sb_tensor *t); /* NULL is ignored */
/* Copies between a CPU tensor and a device tensor of the same dtype and
 * shape; both contiguous. */
SB_API sb_status sb_cuda_tensor_to_device(sb_cuda_context *ctx, sb_tensor *dst, const sb_tensor *src);
SB_API sb_status sb_cuda_tensor_to_host(sb_cuda_context *ctx, sb_tensor *dst, const sb_tensor *src);

/* ---- correctly rounded functions, batched -------------------------------- */

typedef enum sb_cuda_math_fn {
    SB_CUDA_EXPF = 0,
    SB_CUDA_EXPM1F,
    SB_CUDA_LOGF,
    SB_CUDA_LOG1PF,
    SB_CUDA_TANHF,
    SB_CUDA_ERFF,
    SB_CUDA_MATH_COUNT
} sb_cuda_math_fn;

/* y[i] = f(x[i]) for device arrays of n floats (same bits as sb_expf ...). */
SB_API sb_status sb_cuda_math(sb_cuda_context *ctx, sb_cuda_math_fn fn, const float *x, float *y,
                       int64_t n);
/* y[i] = f(bits(first + i)) for i < n: the exhaustive checker's generator. */
SB_API sb_status sb_cuda_math_range(sb_cuda_context *ctx, sb_cuda_math_fn fn, uint32_t first, float *y,
                             int64_t n);

/* ---- raw device-pointer kernels (contract section in brackets) ----------- */

/* [7] C = op(A) op(B) as sequential fmaf chains along k; with
 * continue_chain each chain starts from C's current value instead of +0
 * (used for batched shared-operand gradients). Pointers are device memory. */
SB_API sb_status sb_cuda_sgemm(sb_cuda_context *ctx, char transa, char transb, int64_t m, int64_t n,
                        int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                        float *c, int64_t ldc, bool continue_chain);

/* [3.2] *out (device) = canonical sum of x[0], x[stride], ... (n >= 0). */
SB_API sb_status sb_cuda_sum_canonical(sb_cuda_context *ctx, const float *x, int64_t n, int64_t stride,
                                float *out);

/* ---- tensor-level ops on device tensors ---------------------------------
 * Register ctx, require every tensor on SB_DEVICE_CUDA, then run the
 * function of the same name without `cuda_`: the same semantics, the same
 * validation and messages. Gradients are written, never accumulated. */

SB_API sb_status sb_cuda_linear_forward(sb_cuda_context *ctx, const sb_tensor *x, const sb_tensor *w,
                                 const sb_tensor *bias, sb_tensor *y);
SB_API sb_status sb_cuda_linear_backward(sb_cuda_context *ctx, const sb_tensor *dy, const sb_tensor *x,
                                  const sb_tensor *w, sb_tensor *dx, sb_tensor *dw,
                                  sb_tensor *db);
SB_API sb_status sb_cuda_conv2d_forward(sb_cuda_context *ctx, const sb_tensor *x, const sb_tensor *w,
                                 const sb_tensor *bias, const sb_conv2d_params *params, sb_tensor *y);
SB_API sb_status sb_cuda_conv2d_backward(sb_cuda_context *ctx, const sb_tensor *dy, const sb_tensor *x,
                                  const sb_tensor *w, const sb_conv2d_params *params, sb_tensor *dx,
                                  sb_tensor *dw, sb_tensor *db);
/* indices: I64 device tensor of y's shape, or NULL (forward only). */
SB_API sb_status sb_cuda_max_pool2d_forward(sb_cuda_context *ctx, const sb_tensor *x,
                                     const sb_pool2d_params *params, sb_tensor *y, sb_tensor *indices);
SB_API sb_status sb_cuda_max_pool2d_backward(sb_cuda_context *ctx, const sb_tensor *dy,
                                      const sb_tensor *indices, const sb_pool2d_params *params,
                                      sb_tensor *dx);
SB_API sb_status sb_cuda_avg_pool2d_forward(sb_cuda_context *ctx, const sb_tensor *x,
                                     const sb_pool2d_params *params, sb_tensor *y);
SB_API sb_status sb_cuda_avg_pool2d_backward(sb_cuda_context *ctx, const sb_tensor *dy,
                                      const sb_pool2d_params *params, sb_tensor *dx);
SB_API sb_status sb_cuda_relu_forward(sb_cuda_context *ctx, const sb_tensor *x, sb_tensor *y);
SB_API sb_status sb_cuda_relu_backward(sb_cuda_context *ctx, const sb_tensor *x, const sb_tensor *dy,
                                sb_tensor *dx);
/* logits (N, C); targets (N) I64 device tensor; loss 0-d (MEAN/SUM) or (N);
 * dloss of loss's shape. ignore_index as in loss.h. */
SB_API sb_status sb_cuda_cross_entropy_forward(sb_cuda_context *ctx, const sb_tensor *logits,
                                        const sb_tensor *targets, sb_loss_reduction reduction,
                                        float label_smoothing, int64_t ignore_index,
                                        sb_tensor *loss);
SB_API sb_status sb_cuda_cross_entropy_backward(sb_cuda_context *ctx, const sb_tensor *logits,
                                         const sb_tensor *targets, sb_loss_reduction reduction,
                                         float label_smoothing, int64_t ignore_index,
                                         const sb_tensor *dloss, sb_tensor *dlogits);
/* Optimizer steps: factors computed on the host by sb_sgd_factors_for /
 * sb_adam_factors_for (contract section 14), elements on the device. */
SB_API sb_status sb_cuda_sgd_step(sb_cuda_context *ctx, const sb_sgd_config *cfg, int64_t step,
                           sb_tensor *param, const sb_tensor *grad, sb_tensor *momentum_buf);
SB_API sb_status sb_cuda_adam_step(sb_cuda_context *ctx, const sb_adam_config *cfg, int64_t step,
                            sb_tensor *param, const sb_tensor *grad, sb_tensor *exp_avg,
                            sb_tensor *exp_avg_sq, sb_tensor *max_exp_avg_sq);

#ifdef __cplusplus
}
#endif

#endif
