/* src/cuda/tensor_ops.cu - the sb_cuda_* tensor-level entry points, kept
 * for callers that hold a context: each makes `ctx` the CUDA device's
 * backend (sb_cuda_register), requires its tensors on the GPU, and runs the
 * device-independent op of the same name without `cuda_`. Validation is
 * therefore the shared one of src/ops/validate.c (NULL conv params mean the
 * defaults, aliasing is refused, a max-pool index outside its window is
 * SB_ERR_RANGE), with the CPU's messages. */
#include <initializer_list>
#include "cuda/common.cuh"
#include "samebits.h"

namespace {

/* ctx serves the CUDA device, and every non-NULL tensor lives on it. */
sb_status on_gpu(const char *fn, sb_cuda_context *ctx, std::initializer_list<const sb_tensor *> ts,
                 std::initializer_list<const char *> names) {
    SB_TRY(sb_cuda_register(ctx));
    const char *const *name = names.begin();
    for (const sb_tensor *t : ts) {
        if (t && t->device != SB_DEVICE_CUDA)
            return sb_fail(SB_ERR_DEVICE, "%s: %s is on the %s device, not the GPU (make it with "
                           "sb_cuda_tensor_new or sb_tensor_to)", fn, *name,
                           sb_device_name(t->device));
        ++name;
    }
    return SB_OK;
}

} // namespace

extern "C" {

sb_status sb_cuda_linear_forward(sb_cuda_context *ctx, const sb_tensor *x, const sb_tensor *w,
                                 const sb_tensor *bias, sb_tensor *y) {
    SB_TRY(on_gpu("sb_cuda_linear_forward", ctx, {x, w, bias, y}, {"x", "w", "bias", "y"}));
    return sb_linear_forward(x, w, bias, y);
}

sb_status sb_cuda_linear_backward(sb_cuda_context *ctx, const sb_tensor *dy, const sb_tensor *x,
                                  const sb_tensor *w, sb_tensor *dx, sb_tensor *dw,
                                  sb_tensor *db) {
    SB_TRY(on_gpu("sb_cuda_linear_backward", ctx, {dy, x, w, dx, dw, db},
                  {"dy", "x", "w", "dx", "dw", "db"}));
    return sb_linear_backward(dy, x, w, dx, dw, db);
}

sb_status sb_cuda_conv2d_forward(sb_cuda_context *ctx, const sb_tensor *x, const sb_tensor *w,
                                 const sb_tensor *bias, const sb_conv2d_params *p, sb_tensor *y) {
    SB_TRY(on_gpu("sb_cuda_conv2d_forward", ctx, {x, w, bias, y}, {"x", "w", "bias", "y"}));
    return sb_conv2d_forward(x, w, bias, p, y);
}

sb_status sb_cuda_conv2d_backward(sb_cuda_context *ctx, const sb_tensor *dy, const sb_tensor *x,
                                  const sb_tensor *w, const sb_conv2d_params *p, sb_tensor *dx,
                                  sb_tensor *dw, sb_tensor *db) {
    SB_TRY(on_gpu("sb_cuda_conv2d_backward", ctx, {dy, x, w, dx, dw, db},
                  {"dy", "x", "w", "dx", "dw", "db"}));
    return sb_conv2d_backward(dy, x, w, p, dx, dw, db);
}

sb_status sb_cuda_max_pool2d_forward(sb_cuda_context *ctx, const sb_tensor *x,
                                     const sb_pool2d_params *p, sb_tensor *y,
                                     sb_tensor *indices) {
    SB_TRY(on_gpu("sb_cuda_max_pool2d_forward", ctx, {x, y, indices}, {"x", "y", "indices"}));
    return sb_max_pool2d_forward(x, p, y, indices);
}

sb_status sb_cuda_max_pool2d_backward(sb_cuda_context *ctx, const sb_tensor *dy,
                                      const sb_tensor *indices, const sb_pool2d_params *p,
                                      sb_tensor *dx) {
    SB_TRY(on_gpu("sb_cuda_max_pool2d_backward", ctx, {dy, indices, dx}, {"dy", "indices", "dx"}));
    return sb_max_pool2d_backward(dy, indices, p, dx);
}

sb_status sb_cuda_avg_pool2d_forward(sb_cuda_context *ctx, const sb_tensor *x,
                                     const sb_pool2d_params *p, sb_tensor *y) {
    SB_TRY(on_gpu("sb_cuda_avg_pool2d_forward", ctx, {x, y}, {"x", "y"}));
    return sb_avg_pool2d_forward(x, p, y);
}

sb_status sb_cuda_avg_pool2d_backward(sb_cuda_context *ctx, const sb_tensor *dy,
                                      const sb_pool2d_params *p, sb_tensor *dx) {
    SB_TRY(on_gpu("sb_cuda_avg_pool2d_backward", ctx, {dy, dx}, {"dy", "dx"}));
    return sb_avg_pool2d_backward(dy, p, dx);
}

sb_status sb_cuda_relu_forward(sb_cuda_context *ctx, const sb_tensor *x, sb_tensor *y) {
    SB_TRY(on_gpu("sb_cuda_relu_forward", ctx, {x, y}, {"x", "y"}));
    return sb_relu_forward(x, y);
}

sb_status sb_cuda_relu_backward(sb_cuda_context *ctx, const sb_tensor *x, const sb_tensor *dy,
                                sb_tensor *dx) {
    SB_TRY(on_gpu("sb_cuda_relu_backward", ctx, {x, dy, dx}, {"x", "dy", "dx"}));
    return sb_relu_backward(x, dy, dx);
}

sb_status sb_cuda_cross_entropy_forward(sb_cuda_context *ctx, const sb_tensor *logits,
                                        const sb_tensor *targets, sb_loss_reduction reduction,
                                        float label_smoothing, int64_t ignore_index,
                                        sb_tensor *loss) {
    SB_TRY(on_gpu("sb_cuda_cross_entropy_forward", ctx, {logits, targets, loss},
                  {"logits", "targets", "loss"}));
    return sb_cross_entropy_forward(logits, targets, reduction, label_smoothing, ignore_index,
                                    loss);
}

sb_status sb_cuda_cross_entropy_backward(sb_cuda_context *ctx, const sb_tensor *logits,
                                         const sb_tensor *targets, sb_loss_reduction reduction,
                                         float label_smoothing, int64_t ignore_index,
                                         const sb_tensor *dloss, sb_tensor *dlogits) {
    SB_TRY(on_gpu("sb_cuda_cross_entropy_backward", ctx, {logits, targets, dloss, dlogits},
                  {"logits", "targets", "dloss", "dlogits"}));
    return sb_cross_entropy_backward(logits, targets, reduction, label_smoothing, ignore_index,
                                     dloss, dlogits);
}

sb_status sb_cuda_sgd_step(sb_cuda_context *ctx, const sb_sgd_config *cfg, int64_t step,
                           sb_tensor *param, const sb_tensor *grad, sb_tensor *momentum_buf) {
    SB_TRY(on_gpu("sb_cuda_sgd_step", ctx, {param, grad, momentum_buf},
                  {"param", "grad", "momentum_buf"}));
    return sb_sgd_step_tensor(cfg, step, param, grad, momentum_buf);
}

sb_status sb_cuda_adam_step(sb_cuda_context *ctx, const sb_adam_config *cfg, int64_t step,
                            sb_tensor *param, const sb_tensor *grad, sb_tensor *exp_avg,
                            sb_tensor *exp_avg_sq, sb_tensor *max_exp_avg_sq) {
    SB_TRY(on_gpu("sb_cuda_adam_step", ctx, {param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq},
                  {"param", "grad", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}));
    return sb_adam_step_tensor(cfg, step, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq);
}

} // extern "C"
