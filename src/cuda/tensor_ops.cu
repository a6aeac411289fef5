/* src/cuda/tensor_ops.cu - tensor-level entry points on device tensors:
 * validation (device, dtype, contiguity, exact shapes; nothing is queued on
 * an error), then the raw kernels. Semantics as the CPU functions of the
 * same name without `cuda_`. */
#include "cuda/common.cuh"

namespace {

/* t must be a contiguous device tensor of dtype; ndim -1 means any. */
sb_status dev(const char *fn, const char *name, const sb_tensor *t, sb_dtype dtype, int ndim) {
    if (!t) return sb_fail(SB_ERR_NULL, "%s: %s is NULL", fn, name);
    if (t->device != SB_DEVICE_CUDA)
        return sb_fail(SB_ERR_DEVICE, "%s: %s is not a CUDA tensor (use sb_cuda_tensor_new)", fn,
                       name);
    if (t->dtype != dtype)
        return sb_fail(SB_ERR_DTYPE, "%s: %s is %s, expected %s", fn, name,
                       sb_dtype_name(t->dtype), sb_dtype_name(dtype));
    if (ndim >= 0 && t->ndim != ndim)
        return sb_fail(SB_ERR_SHAPE, "%s: %s has %d dimensions, expected %d", fn, name, t->ndim,
                       ndim);
    if (!sb_tensor_is_contiguous(t))
        return sb_fail(SB_ERR_ARG, "%s: %s must be contiguous", fn, name);
    return SB_OK;
}

sb_status shape_is(const char *fn, const char *name, const sb_tensor *t, int nd,
                   const int64_t *shape) {
    bool ok = t->ndim == nd;
    for (int i = 0; ok && i < nd; i++) ok = t->shape[i] == shape[i];
    if (!ok) {
        char got[128];
        return sb_fail(SB_ERR_SHAPE, "%s: %s has shape %s, expected %d dims starting [%lld%s]",
                       fn, name, sb_shape_str(t, got, sizeof got), nd,
                       nd > 0 ? (long long)shape[0] : 0LL, nd > 1 ? ", ..." : "");
    }
    return SB_OK;
}

float *F(const sb_tensor *t) { return t ? (float *)t->data : NULL; }

sb_status conv_geom_of(const char *fn, const sb_tensor *x, const sb_tensor *w,
                       const sb_conv2d_params *p, sb_conv2d_geom *g) {
    SB_TRY(dev(fn, "x", x, SB_F32, 4));
    SB_TRY(dev(fn, "w", w, SB_F32, 4));
    if (!p) return sb_fail(SB_ERR_NULL, "%s: params is NULL", fn);
    if (p->groups < 1 || x->shape[1] % p->groups || w->shape[0] % p->groups ||
        w->shape[1] != x->shape[1] / p->groups)
        return sb_fail(SB_ERR_SHAPE, "%s: w's channels do not fit x and groups = %lld", fn,
                       (long long)p->groups);
    int64_t oh, ow;
    SB_TRY(sb_conv2d_output_size(x->shape[2], x->shape[3], w->shape[2], w->shape[3], p, &oh, &ow));
    *g = (sb_conv2d_geom){x->shape[0], x->shape[1], x->shape[2], x->shape[3], w->shape[0],
                          w->shape[2], w->shape[3], oh, ow, p->stride_h, p->stride_w, p->pad_h,
                          p->pad_w, p->dilation_h, p->dilation_w, p->groups};
    return SB_OK;
}

sb_status pool_geom_of(const char *fn, const sb_tensor *x_like, const sb_pool2d_params *p,
                       sb_pool2d_geom *g) {
    if (!p) return sb_fail(SB_ERR_NULL, "%s: params is NULL", fn);
    int64_t oh, ow;
    SB_TRY(sb_pool2d_output_size(x_like->shape[2], x_like->shape[3], p, &oh, &ow));
    *g = (sb_pool2d_geom){x_like->shape[0] * x_like->shape[1], x_like->shape[2],
                          x_like->shape[3], oh, ow, p->kernel_h, p->kernel_w,
                          p->stride_h ? p->stride_h : p->kernel_h,
                          p->stride_w ? p->stride_w : p->kernel_w, p->pad_h, p->pad_w,
                          p->count_include_pad};
    return SB_OK;
}

} // namespace

extern "C" {

sb_status sb_cuda_linear_forward(sb_cuda_context *ctx, const sb_tensor *x, const sb_tensor *w,
                                 const sb_tensor *bias, sb_tensor *y) {
    const char *fn = "sb_cuda_linear_forward";
    SB_TRY(dev(fn, "x", x, SB_F32, -1));
    SB_TRY(dev(fn, "w", w, SB_F32, 2));
    SB_TRY(dev(fn, "y", y, SB_F32, x->ndim));
    if (x->ndim < 1) return sb_fail(SB_ERR_SHAPE, "%s: x must have at least 1 dimension", fn);
    int64_t out = w->shape[0], in = w->shape[1];
    if (x->shape[x->ndim - 1] != in)
        return sb_fail(SB_ERR_SHAPE, "%s: x's last dimension %lld is not w's in = %lld", fn,
                       (long long)x->shape[x->ndim - 1], (long long)in);
    int64_t ys[SB_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) ys[i] = x->shape[i];
    ys[x->ndim - 1] = out;
    SB_TRY(shape_is(fn, "y", y, x->ndim, ys));
    if (bias) {
        SB_TRY(dev(fn, "bias", bias, SB_F32, 1));
        SB_TRY(shape_is(fn, "bias", bias, 1, &out));
    }
    int64_t R = in ? sb_tensor_numel(x) / in : sb_tensor_numel(y) / (out ? out : 1);
    return sb_cuda_linear_forward_raw(ctx, R, in, out, F(x), F(w), F(bias), F(y));
}

sb_status sb_cuda_linear_backward(sb_cuda_context *ctx, const sb_tensor *dy, const sb_tensor *x,
                                  const sb_tensor *w, sb_tensor *dx, sb_tensor *dw,
                                  sb_tensor *db) {
    const char *fn = "sb_cuda_linear_backward";
    SB_TRY(dev(fn, "dy", dy, SB_F32, -1));
    SB_TRY(dev(fn, "x", x, SB_F32, dy->ndim));
    SB_TRY(dev(fn, "w", w, SB_F32, 2));
    int64_t out = w->shape[0], in = w->shape[1];
    if (dy->ndim < 1 || dy->shape[dy->ndim - 1] != out || x->shape[x->ndim - 1] != in)
        return sb_fail(SB_ERR_SHAPE, "%s: dy (..., %lld) and x (..., %lld) do not fit w", fn,
                       (long long)out, (long long)in);
    if (dx) { SB_TRY(dev(fn, "dx", dx, SB_F32, x->ndim)); SB_TRY(shape_is(fn, "dx", dx, x->ndim, x->shape)); }
    if (dw) { SB_TRY(dev(fn, "dw", dw, SB_F32, 2)); SB_TRY(shape_is(fn, "dw", dw, 2, w->shape)); }
    if (db) { SB_TRY(dev(fn, "db", db, SB_F32, 1)); SB_TRY(shape_is(fn, "db", db, 1, &out)); }
    int64_t R = out ? sb_tensor_numel(dy) / out : (in ? sb_tensor_numel(x) / in : 0);
    return sb_cuda_linear_backward_raw(ctx, R, in, out, F(dy), F(x), F(w), F(dx), F(dw), F(db));
}

sb_status sb_cuda_conv2d_forward(sb_cuda_context *ctx, const sb_tensor *x, const sb_tensor *w,
                                 const sb_tensor *bias, const sb_conv2d_params *p, sb_tensor *y) {
    const char *fn = "sb_cuda_conv2d_forward";
    sb_conv2d_geom g;
    SB_TRY(conv_geom_of(fn, x, w, p, &g));
    SB_TRY(dev(fn, "y", y, SB_F32, 4));
    int64_t ys[4] = {g.n, g.c_out, g.oh, g.ow};
    SB_TRY(shape_is(fn, "y", y, 4, ys));
    if (bias) {
        SB_TRY(dev(fn, "bias", bias, SB_F32, 1));
        SB_TRY(shape_is(fn, "bias", bias, 1, &g.c_out));
    }
    return sb_cuda_conv2d_forward_raw(ctx, &g, F(x), F(w), F(bias), F(y));
}

sb_status sb_cuda_conv2d_backward(sb_cuda_context *ctx, const sb_tensor *dy, const sb_tensor *x,
                                  const sb_tensor *w, const sb_conv2d_params *p, sb_tensor *dx,
                                  sb_tensor *dw, sb_tensor *db) {
    const char *fn = "sb_cuda_conv2d_backward";
    sb_conv2d_geom g;
    SB_TRY(conv_geom_of(fn, x, w, p, &g));
    SB_TRY(dev(fn, "dy", dy, SB_F32, 4));
    int64_t ys[4] = {g.n, g.c_out, g.oh, g.ow};
    SB_TRY(shape_is(fn, "dy", dy, 4, ys));
    if (dx) { SB_TRY(dev(fn, "dx", dx, SB_F32, 4)); SB_TRY(shape_is(fn, "dx", dx, 4, x->shape)); }
    if (dw) { SB_TRY(dev(fn, "dw", dw, SB_F32, 4)); SB_TRY(shape_is(fn, "dw", dw, 4, w->shape)); }
    if (db) { SB_TRY(dev(fn, "db", db, SB_F32, 1)); SB_TRY(shape_is(fn, "db", db, 1, &g.c_out)); }
    if (dx) SB_TRY(sb_cuda_conv2d_backward_input_raw(ctx, &g, F(dy), F(w), F(dx)));
    if (dw) SB_TRY(sb_cuda_conv2d_backward_weight_raw(ctx, &g, F(dy), F(x), F(dw)));
    if (db) SB_TRY(sb_cuda_conv2d_backward_bias_raw(ctx, &g, F(dy), F(db)));
    return SB_OK;
}

sb_status sb_cuda_max_pool2d_forward(sb_cuda_context *ctx, const sb_tensor *x,
                                     const sb_pool2d_params *p, sb_tensor *y,
                                     sb_tensor *indices) {
    const char *fn = "sb_cuda_max_pool2d_forward";
    SB_TRY(dev(fn, "x", x, SB_F32, 4));
    sb_pool2d_geom g;
    SB_TRY(pool_geom_of(fn, x, p, &g));
    int64_t ys[4] = {x->shape[0], x->shape[1], g.oh, g.ow};
    SB_TRY(dev(fn, "y", y, SB_F32, 4));
    SB_TRY(shape_is(fn, "y", y, 4, ys));
    if (indices) { SB_TRY(dev(fn, "indices", indices, SB_I64, 4)); SB_TRY(shape_is(fn, "indices", indices, 4, ys)); }
    return sb_cuda_max_pool2d_forward_raw(ctx, &g, F(x), F(y),
                                          indices ? (int64_t *)indices->data : NULL);
}

/* Indices are trusted to come from sb_cuda_max_pool2d_forward with the same
 * params (checking them would need a device pass; see docs/CUDA.md). */
sb_status sb_cuda_max_pool2d_backward(sb_cuda_context *ctx, const sb_tensor *dy,
                                      const sb_tensor *indices, const sb_pool2d_params *p,
                                      sb_tensor *dx) {
    const char *fn = "sb_cuda_max_pool2d_backward";
    SB_TRY(dev(fn, "dx", dx, SB_F32, 4));
    sb_pool2d_geom g;
    SB_TRY(pool_geom_of(fn, dx, p, &g));
    int64_t ys[4] = {dx->shape[0], dx->shape[1], g.oh, g.ow};
    SB_TRY(dev(fn, "dy", dy, SB_F32, 4));
    SB_TRY(shape_is(fn, "dy", dy, 4, ys));
    SB_TRY(dev(fn, "indices", indices, SB_I64, 4));
    SB_TRY(shape_is(fn, "indices", indices, 4, ys));
    return sb_cuda_max_pool2d_backward_raw(ctx, &g, F(dy), (const int64_t *)indices->data, F(dx));
}

sb_status sb_cuda_avg_pool2d_forward(sb_cuda_context *ctx, const sb_tensor *x,
                                     const sb_pool2d_params *p, sb_tensor *y) {
    const char *fn = "sb_cuda_avg_pool2d_forward";
    SB_TRY(dev(fn, "x", x, SB_F32, 4));
    sb_pool2d_geom g;
    SB_TRY(pool_geom_of(fn, x, p, &g));
    int64_t ys[4] = {x->shape[0], x->shape[1], g.oh, g.ow};
    SB_TRY(dev(fn, "y", y, SB_F32, 4));
    SB_TRY(shape_is(fn, "y", y, 4, ys));
    return sb_cuda_avg_pool2d_forward_raw(ctx, &g, F(x), F(y));
}

sb_status sb_cuda_avg_pool2d_backward(sb_cuda_context *ctx, const sb_tensor *dy,
                                      const sb_pool2d_params *p, sb_tensor *dx) {
    const char *fn = "sb_cuda_avg_pool2d_backward";
    SB_TRY(dev(fn, "dx", dx, SB_F32, 4));
    sb_pool2d_geom g;
    SB_TRY(pool_geom_of(fn, dx, p, &g));
    int64_t ys[4] = {dx->shape[0], dx->shape[1], g.oh, g.ow};
    SB_TRY(dev(fn, "dy", dy, SB_F32, 4));
    SB_TRY(shape_is(fn, "dy", dy, 4, ys));
    return sb_cuda_avg_pool2d_backward_raw(ctx, &g, F(dy), F(dx));
}

sb_status sb_cuda_relu_forward(sb_cuda_context *ctx, const sb_tensor *x, sb_tensor *y) {
    const char *fn = "sb_cuda_relu_forward";
    SB_TRY(dev(fn, "x", x, SB_F32, -1));
    SB_TRY(dev(fn, "y", y, SB_F32, x->ndim));
    SB_TRY(shape_is(fn, "y", y, x->ndim, x->shape));
    return sb_cuda_act_forward_raw(ctx, SB_CUDA_ACT_RELU, sb_tensor_numel(x), F(x), 0, 0, F(y));
}

sb_status sb_cuda_relu_backward(sb_cuda_context *ctx, const sb_tensor *x, const sb_tensor *dy,
                                sb_tensor *dx) {
    const char *fn = "sb_cuda_relu_backward";
    SB_TRY(dev(fn, "x", x, SB_F32, -1));
    SB_TRY(dev(fn, "dy", dy, SB_F32, x->ndim));
    SB_TRY(dev(fn, "dx", dx, SB_F32, x->ndim));
    SB_TRY(shape_is(fn, "dy", dy, x->ndim, x->shape));
    SB_TRY(shape_is(fn, "dx", dx, x->ndim, x->shape));
    return sb_cuda_act_backward_raw(ctx, SB_CUDA_ACT_RELU, sb_tensor_numel(x), F(x), F(dy), 0, 0,
                                    F(dx));
}

static sb_status ce_check(const char *fn, const sb_tensor *logits, const sb_tensor *targets,
                          sb_loss_reduction reduction, float eps) {
    SB_TRY(dev(fn, "logits", logits, SB_F32, 2));
    SB_TRY(dev(fn, "targets", targets, SB_I64, 1));
    if (targets->shape[0] != logits->shape[0])
        return sb_fail(SB_ERR_SHAPE, "%s: targets has %lld rows, logits %lld", fn,
                       (long long)targets->shape[0], (long long)logits->shape[0]);
    if (logits->shape[0] < 1 || logits->shape[1] < 1)
        return sb_fail(SB_ERR_SHAPE, "%s: logits must be (N, C) with N, C >= 1", fn);
    if (reduction != SB_LOSS_NONE && reduction != SB_LOSS_MEAN && reduction != SB_LOSS_SUM)
        return sb_fail(SB_ERR_ARG, "%s: reduction = %d is not an sb_loss_reduction", fn,
                       (int)reduction);
    if (!(eps >= 0.0f && eps <= 1.0f))
        return sb_fail(SB_ERR_ARG, "%s: label_smoothing = %g must be in [0, 1]", fn, (double)eps);
    return SB_OK;
}

/* Targets live on the device; they are range-checked here with one copy to
 * the host, so a bad label is an SB_ERR_RANGE before any kernel runs. */
static sb_status ce_targets(const char *fn, sb_cuda_context *ctx, const sb_tensor *targets,
                            int64_t C, int64_t ignore) {
    int64_t N = targets->shape[0];
    int64_t *h = (int64_t *)sb_malloc(fn, (size_t)N * sizeof(int64_t));
    if (!h) return SB_ERR_NOMEM;
    sb_status st = sb_cuda_memcpy_d2h(ctx, h, targets->data, (size_t)N * sizeof(int64_t));
    for (int64_t r = 0; st == SB_OK && r < N; r++)
        if (h[r] != ignore && (h[r] < 0 || h[r] >= C))
            st = sb_fail(SB_ERR_RANGE, "%s: targets[%lld] = %lld is outside [0, %lld)", fn,
                         (long long)r, (long long)h[r], (long long)C);
    free(h);
    return st;
}

sb_status sb_cuda_cross_entropy_forward(sb_cuda_context *ctx, const sb_tensor *logits,
                                        const sb_tensor *targets, sb_loss_reduction reduction,
                                        float label_smoothing, int64_t ignore_index,
                                        sb_tensor *loss) {
    const char *fn = "sb_cuda_cross_entropy_forward";
    SB_TRY(ce_check(fn, logits, targets, reduction, label_smoothing));
    int64_t N = logits->shape[0], C = logits->shape[1];
    SB_TRY(dev(fn, "loss", loss, SB_F32, reduction == SB_LOSS_NONE ? 1 : 0));
    if (reduction == SB_LOSS_NONE) SB_TRY(shape_is(fn, "loss", loss, 1, &N));
    SB_TRY(ce_targets(fn, ctx, targets, C, ignore_index));
    return sb_cuda_cross_entropy_forward_raw(ctx, F(logits), (const int64_t *)targets->data, N,
                                             C, reduction, label_smoothing, ignore_index,
                                             F(loss));
}

sb_status sb_cuda_cross_entropy_backward(sb_cuda_context *ctx, const sb_tensor *logits,
                                         const sb_tensor *targets, sb_loss_reduction reduction,
                                         float label_smoothing, int64_t ignore_index,
                                         const sb_tensor *dloss, sb_tensor *dlogits) {
    const char *fn = "sb_cuda_cross_entropy_backward";
    SB_TRY(ce_check(fn, logits, targets, reduction, label_smoothing));
    int64_t N = logits->shape[0], C = logits->shape[1];
    SB_TRY(dev(fn, "dloss", dloss, SB_F32, reduction == SB_LOSS_NONE ? 1 : 0));
    if (reduction == SB_LOSS_NONE) SB_TRY(shape_is(fn, "dloss", dloss, 1, &N));
    SB_TRY(dev(fn, "dlogits", dlogits, SB_F32, 2));
    SB_TRY(shape_is(fn, "dlogits", dlogits, 2, logits->shape));
    SB_TRY(ce_targets(fn, ctx, targets, C, ignore_index));
    return sb_cuda_cross_entropy_backward_raw(ctx, F(logits), (const int64_t *)targets->data, N,
                                              C, reduction, label_smoothing, ignore_index,
                                              F(dloss), F(dlogits));
}

static sb_status same_as_param(const char *fn, const char *name, const sb_tensor *t,
                               const sb_tensor *param) {
    SB_TRY(dev(fn, name, t, SB_F32, param->ndim));
    SB_TRY(shape_is(fn, name, t, param->ndim, param->shape));
    if (t != param && t->data == param->data && sb_tensor_numel(t) > 0)
        return sb_fail(SB_ERR_ARG, "%s: %s shares memory with param", fn, name);
    return SB_OK;
}

sb_status sb_cuda_sgd_step(sb_cuda_context *ctx, const sb_sgd_config *cfg, int64_t step,
                           sb_tensor *param, const sb_tensor *grad, sb_tensor *momentum_buf) {
    const char *fn = "sb_cuda_sgd_step";
    if (!cfg) return sb_fail(SB_ERR_NULL, "%s: cfg is NULL", fn);
    if (step < 1) return sb_fail(SB_ERR_ARG, "%s: step = %lld must be >= 1", fn, (long long)step);
    sb_sgd_factors f;
    SB_TRY(sb_sgd_factors_for(cfg, &f)); /* validates cfg */
    SB_TRY(dev(fn, "param", param, SB_F32, -1));
    SB_TRY(same_as_param(fn, "grad", grad, param));
    if (f.use_momentum) SB_TRY(same_as_param(fn, "momentum_buf", momentum_buf, param));
    return sb_cuda_sgd_raw(ctx, &f, cfg->nesterov, cfg->maximize, step == 1,
                           sb_tensor_numel(param), F(param), F(grad),
                           f.use_momentum ? F(momentum_buf) : NULL);
}

sb_status sb_cuda_adam_step(sb_cuda_context *ctx, const sb_adam_config *cfg, int64_t step,
                            sb_tensor *param, const sb_tensor *grad, sb_tensor *exp_avg,
                            sb_tensor *exp_avg_sq, sb_tensor *max_exp_avg_sq) {
    const char *fn = "sb_cuda_adam_step";
    if (!cfg) return sb_fail(SB_ERR_NULL, "%s: cfg is NULL", fn);
    sb_adam_factors f;
    SB_TRY(sb_adam_factors_for(cfg, step, &f)); /* validates cfg and step */
    SB_TRY(dev(fn, "param", param, SB_F32, -1));
    SB_TRY(same_as_param(fn, "grad", grad, param));
    SB_TRY(same_as_param(fn, "exp_avg", exp_avg, param));
    SB_TRY(same_as_param(fn, "exp_avg_sq", exp_avg_sq, param));
    if (cfg->amsgrad) SB_TRY(same_as_param(fn, "max_exp_avg_sq", max_exp_avg_sq, param));
    return sb_cuda_adam_raw(ctx, &f, step == 1, sb_tensor_numel(param), F(param), F(grad),
                            F(exp_avg), F(exp_avg_sq), cfg->amsgrad ? F(max_exp_avg_sq) : NULL);
}

} // extern "C"
