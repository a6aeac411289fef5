/* src/cuda/backend.cu - the CUDA device behind the backend table
 * (src/backend/backend.h): memory through the context's caching allocator,
 * and each op family the GPU has a kernel for mapped to its raw kernel.
 * Families without one stay NULL, so the tensor-level ops report
 * SB_ERR_UNSUPPORTED naming the op and the device (docs/GPU.md, "Not yet on
 * the GPU"). Validation is src/ops's: entries get validated arguments. */
#include <stdlib.h>
#include "cuda/common.cuh"
extern "C" {
#include "backend/backend.h"
}

namespace {

sb_cuda_context *ctx_of(const sb_backend *be) { return (sb_cuda_context *)be->ctx; }

bool dense(const sb_tensor *t) { return sb_tensor_is_contiguous(t); }

} // namespace

extern "C" {

/* ---- memory ---- */

static sb_status cuda_alloc(const sb_backend *be, size_t bytes, void **out) {
    void *p = NULL;
    SB_TRY(sb_cuda_malloc(ctx_of(be), bytes ? bytes : 1, &p));
    sb_status st = sb_cuda_memset0(ctx_of(be), p, bytes);
    if (st != SB_OK) { sb_cuda_free(ctx_of(be), p); return st; }
    *out = p;
    return SB_OK;
}

static void cuda_release(const sb_backend *be, void *p) { (void)sb_cuda_free(ctx_of(be), p); }

static sb_status cuda_upload(const sb_backend *be, void *dst, const void *src, size_t bytes) {
    return sb_cuda_memcpy_h2d(ctx_of(be), dst, src, bytes);
}

static sb_status cuda_download(const sb_backend *be, void *dst, const void *src, size_t bytes) {
    return sb_cuda_memcpy_d2h(ctx_of(be), dst, src, bytes);
}

static sb_status cuda_copy(const sb_backend *be, const sb_tensor *src, sb_tensor *dst) {
    if (!dense(src) || !dense(dst))
        return sb_fail(SB_ERR_UNSUPPORTED, "%s: the cuda device has no strided copy kernel "
                       "(copy a contiguous tensor)", be->name);
    return sb_cuda_memcpy_d2d(ctx_of(be), dst->data, src->data,
                              (size_t)sb_tensor_numel(src) * sb_dtype_size(src->dtype));
}

/* Zero is a memset; any other value is uploaded from a host buffer. */
static sb_status cuda_fill(const sb_backend *be, sb_tensor *t, float value) {
    if (!dense(t))
        return sb_fail(SB_ERR_UNSUPPORTED, "%s: the cuda device has no strided fill kernel",
                       be->name);
    int64_t n = sb_tensor_numel(t);
    if (sb_f32_bits(value) == 0) return sb_cuda_memset0(ctx_of(be), t->data, (size_t)n * 4);
    float *host = (float *)sb_malloc("sb_tensor_fill", (size_t)(n ? n : 1) * sizeof(float));
    if (!host) return SB_ERR_NOMEM;
    for (int64_t i = 0; i < n; i++) host[i] = value;
    sb_status st = sb_cuda_memcpy_h2d(ctx_of(be), t->data, host, (size_t)n * sizeof(float));
    free(host);
    return st;
}

static sb_status cuda_synchronize(const sb_backend *be) { return sb_cuda_synchronize(ctx_of(be)); }

/* ---- ops with a GPU kernel ---- */

static sb_status cuda_sgemm(const sb_backend *be, char transa, char transb, int64_t m, int64_t n,
                            int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                            float *c, int64_t ldc, bool continue_chain) {
    return sb_cuda_sgemm(ctx_of(be), transa, transb, m, n, k, a, lda, b, ldb, c, ldc,
                         continue_chain);
}

static sb_status cuda_linear_forward(const sb_backend *be, int64_t rows, int64_t in, int64_t out,
                                     const float *x, const float *w, const float *bias, float *y) {
    return sb_cuda_linear_forward_raw(ctx_of(be), rows, in, out, x, w, bias, y);
}

static sb_status cuda_linear_backward(const sb_backend *be, int64_t rows, int64_t in, int64_t out,
                                      const float *dy, const float *x, const float *w, float *dx,
                                      float *dw, float *db) {
    return sb_cuda_linear_backward_raw(ctx_of(be), rows, in, out, dy, x, w, dx, dw, db);
}

static sb_status cuda_conv2d_forward(const sb_backend *be, const sb_conv2d_geom *g,
                                     const float *x, const float *w, const float *bias, float *y) {
    return sb_cuda_conv2d_forward_raw(ctx_of(be), g, x, w, bias, y);
}

static sb_status cuda_conv2d_backward(const sb_backend *be, const sb_conv2d_geom *g,
                                      const float *dy, const float *x, const float *w, float *dx,
                                      float *dw, float *db) {
    if (dx) SB_TRY(sb_cuda_conv2d_backward_input_raw(ctx_of(be), g, dy, w, dx));
    if (dw) SB_TRY(sb_cuda_conv2d_backward_weight_raw(ctx_of(be), g, dy, x, dw));
    if (db) SB_TRY(sb_cuda_conv2d_backward_bias_raw(ctx_of(be), g, dy, db));
    return SB_OK;
}

static sb_status cuda_max_pool2d_forward(const sb_backend *be, const sb_pool2d_geom *g,
                                         const float *x, float *y, int64_t *indices) {
    return sb_cuda_max_pool2d_forward_raw(ctx_of(be), g, x, y, indices);
}

static sb_status cuda_max_pool2d_backward(const sb_backend *be, const sb_pool2d_geom *g,
                                          const float *dy, const int64_t *indices, float *dx) {
    return sb_cuda_max_pool2d_backward_raw(ctx_of(be), g, dy, indices, dx);
}

static sb_status cuda_avg_pool2d_forward(const sb_backend *be, const sb_pool2d_geom *g,
                                         const float *x, float *y) {
    return sb_cuda_avg_pool2d_forward_raw(ctx_of(be), g, x, y);
}

static sb_status cuda_avg_pool2d_backward(const sb_backend *be, const sb_pool2d_geom *g,
                                          const float *dy, float *dx) {
    return sb_cuda_avg_pool2d_backward_raw(ctx_of(be), g, dy, dx);
}

/* The GPU's activation kernels take dense arrays. */
static sb_status cuda_activation(const sb_backend *be, const sb_act_args *a, const sb_tensor *in,
                                 sb_tensor *out) {
    int nin = a->backward ? 2 : 1;
    bool ok = dense(out);
    for (int k = 0; k < nin; k++) ok = ok && dense(&in[k]);
    if (!ok)
        return sb_fail(SB_ERR_UNSUPPORTED, "%s: the cuda device's activation kernels need "
                       "contiguous tensors", be->name);
    sb_cuda_act act = SB_CUDA_ACT_RELU;
    float p0 = a->p0, p1 = a->p1;
    switch (a->kind) {
    case SB_ACT_RELU: act = SB_CUDA_ACT_RELU; break;
    case SB_ACT_LEAKY_RELU: act = SB_CUDA_ACT_LEAKY_RELU; break;
    case SB_ACT_TANH: act = SB_CUDA_ACT_TANH; break;
    case SB_ACT_SIGMOID: act = SB_CUDA_ACT_SIGMOID; break;
    case SB_ACT_SILU: act = SB_CUDA_ACT_SILU; break;
    case SB_ACT_GELU: act = SB_CUDA_ACT_GELU; p0 = a->approximate ? 1.0f : 0.0f; break;
    case SB_ACT_SOFTPLUS: act = SB_CUDA_ACT_SOFTPLUS; break;
    default:
        return sb_fail(SB_ERR_UNSUPPORTED, "%s: the cuda device has no kernel for activation "
                       "kind %d", be->name, (int)a->kind);
    }
    int64_t n = sb_tensor_numel(out);
    if (!a->backward)
        return sb_cuda_act_forward_raw(ctx_of(be), act, n, (const float *)in[0].data, p0, p1,
                                       (float *)out->data);
    return sb_cuda_act_backward_raw(ctx_of(be), act, n, (const float *)in[0].data,
                                    (const float *)in[1].data, p0, p1, (float *)out->data);
}

static sb_status cuda_softmax_forward(const sb_backend *be, const float *x, int64_t outer,
                                      int64_t n, int64_t inner, bool log, float *y) {
    return sb_cuda_softmax_forward_raw(ctx_of(be), log, x, outer, n, inner, y);
}

static sb_status cuda_softmax_backward(const sb_backend *be, const float *y, const float *dy,
                                       int64_t outer, int64_t n, int64_t inner, bool log,
                                       float *dx) {
    return sb_cuda_softmax_backward_raw(ctx_of(be), log, y, dy, outer, n, inner, dx);
}

static sb_status cuda_class_loss_forward(const sb_backend *be, bool logits, const float *a,
                                         const int64_t *targets, int64_t N, int64_t C,
                                         sb_loss_reduction reduction, float eps,
                                         int64_t ignore_index, float *loss) {
    if (!logits) return sb_backend_unsupported("sb_nll_loss_forward", be, "nll_loss");
    return sb_cuda_cross_entropy_forward_raw(ctx_of(be), a, targets, N, C, reduction, eps,
                                             ignore_index, loss);
}

static sb_status cuda_class_loss_backward(const sb_backend *be, bool logits, const float *a,
                                          const int64_t *targets, int64_t N, int64_t C,
                                          sb_loss_reduction reduction, float eps,
                                          int64_t ignore_index, const float *dloss, float *da) {
    if (!logits) return sb_backend_unsupported("sb_nll_loss_backward", be, "nll_loss");
    return sb_cuda_cross_entropy_backward_raw(ctx_of(be), a, targets, N, C, reduction, eps,
                                              ignore_index, dloss, da);
}

static sb_status cuda_sgd(const sb_backend *be, const sb_sgd_factors *f, bool nesterov,
                          bool maximize, bool first, int64_t n, float *param, const float *grad,
                          float *momentum_buf) {
    return sb_cuda_sgd_raw(ctx_of(be), f, nesterov, maximize, first, n, param, grad, momentum_buf);
}

static sb_status cuda_adam(const sb_backend *be, const sb_adam_factors *f, bool first, int64_t n,
                           float *param, const float *grad, float *exp_avg, float *exp_avg_sq,
                           float *max_exp_avg_sq) {
    return sb_cuda_adam_raw(ctx_of(be), f, first, n, param, grad, exp_avg, exp_avg_sq,
                            max_exp_avg_sq);
}

} // extern "C"

namespace {

/* Entries the GPU has no kernel for stay NULL (value-initialised). */
sb_backend_ops make_ops() {
    sb_backend_ops ops = {};
    ops.sgemm = cuda_sgemm;
    ops.linear_forward = cuda_linear_forward;
    ops.linear_backward = cuda_linear_backward;
    ops.conv2d_forward = cuda_conv2d_forward;
    ops.conv2d_backward = cuda_conv2d_backward;
    ops.max_pool2d_forward = cuda_max_pool2d_forward;
    ops.max_pool2d_backward = cuda_max_pool2d_backward;
    ops.avg_pool2d_forward = cuda_avg_pool2d_forward;
    ops.avg_pool2d_backward = cuda_avg_pool2d_backward;
    ops.activation = cuda_activation;
    ops.softmax_forward = cuda_softmax_forward;
    ops.softmax_backward = cuda_softmax_backward;
    ops.class_loss_forward = cuda_class_loss_forward;
    ops.class_loss_backward = cuda_class_loss_backward;
    ops.sgd = cuda_sgd;
    ops.adam = cuda_adam;
    return ops;
}

const sb_backend_ops cuda_ops = make_ops();
sb_backend cuda_backend;

} // namespace

extern "C" {

sb_status sb_cuda_register(sb_cuda_context *ctx) {
    const char *fn = "sb_cuda_register";
    SB_TRY(sb_cuda_enter(fn, ctx));
    if (cuda_backend.ctx == ctx && sb_device_available(SB_DEVICE_CUDA)) return SB_OK;
    cuda_backend.name = "cuda";
    cuda_backend.device = SB_DEVICE_CUDA;
    cuda_backend.host_addressable = false;
    cuda_backend.ctx = ctx;
    cuda_backend.alloc = cuda_alloc;
    cuda_backend.release = cuda_release;
    cuda_backend.upload = cuda_upload;
    cuda_backend.download = cuda_download;
    cuda_backend.copy = cuda_copy;
    cuda_backend.fill = cuda_fill;
    cuda_backend.synchronize = cuda_synchronize;
    cuda_backend.ops = &cuda_ops;
    sb_backend_register(SB_DEVICE_CUDA, &cuda_backend);
    return SB_OK;
}

void sb_cuda_unregister(void) {
    sb_backend_register(SB_DEVICE_CUDA, NULL);
    cuda_backend.ctx = NULL;
}

void sb_cuda_backend_forget(sb_cuda_context *ctx) {
    if (ctx && cuda_backend.ctx == ctx) sb_cuda_unregister();
}

} // extern "C"
