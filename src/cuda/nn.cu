/* src/cuda/nn.cu - activations, softmax / log-softmax, cross-entropy,
 * pooling and optimizer updates on the GPU, each the exact operation
 * sequence of its contract section (9, 11, 8, 14) and of src/ref/.
 * Softmax, pooling and the optimizers are the single-source kernels of
 * src/gpu/kernels (softmax.cl, conv.cl, pointwise.cl), included below.
 * The build's --fmad=false keeps every a*b + c below two roundings; the
 * optimizers' fused steps are written as __fmaf_rn as the contract says. */
#include "cuda/common.cuh"
#include "cuda/device_math.cuh"
extern "C" {
#include "ref/ref_pointwise.h" /* the GELU constants */
}

/* The single-source kernels (src/gpu/kernels, docs/GPU.md): the very text
 * the OpenCL backend runs under PoCL in make test. Included here only (the
 * kernels have external linkage): softmax, pooling, conv2d's input
 * gradient and the optimizers launch from this file. */
#include "gpu/kernels/dialect.h"
#include "gpu/kernels/pointwise.cl"
#include "gpu/kernels/sum_acc.cl"
#include "ref/pool_geometry.h" /* conv.cl's windows */
#include "gpu/kernels/conv.cl"
/* softmax.cl calls src/math's functions by their C names; on CUDA they are
 * device_math.cuh's sb_dev_* copies of the same source. */
#define sb_expf sb_dev_expf
#define sb_logf sb_dev_logf
#include "gpu/kernels/softmax.cl"
#undef sb_expf
#undef sb_logf

namespace {


/* ---- activations ---------------------------------------------------------- */

__device__ float act_fwd(int act, float x, float p0, float p1) {
    switch (act) {
    case SB_CUDA_ACT_RELU: return isnan(x) ? x : (x > 0.0f ? x : 0.0f);
    case SB_CUDA_ACT_LEAKY_RELU: return isnan(x) ? x : (x > 0.0f ? x : x * p0);
    case SB_CUDA_ACT_TANH: return sb_dev_tanhf(x);
    case SB_CUDA_ACT_SIGMOID: return 1.0f / (1.0f + sb_dev_expf(-x));
    case SB_CUDA_ACT_SILU: return x / (1.0f + sb_dev_expf(-x));
    case SB_CUDA_ACT_GELU:
        if (p0 != 0.0f) {
            float inner = SB_GELU_SQRT_2_PI * (x + SB_GELU_KAPPA * ((x * x) * x));
            return (x * 0.5f) * (1.0f + sb_dev_tanhf(inner));
        }
        return (x * 0.5f) * (1.0f + sb_dev_erff(x * SB_GELU_SQRT1_2));
    default: { /* softplus */
        float z = x * p0;
        return z > p1 ? x : sb_dev_log1pf(sb_dev_expf(z)) / p0;
    }
    }
}

__device__ float act_bwd(int act, float v, float dy, float p0, float p1) {
    switch (act) {
    case SB_CUDA_ACT_RELU: return v <= 0.0f ? 0.0f : dy;
    case SB_CUDA_ACT_LEAKY_RELU: return v > 0.0f ? dy : dy * p0;
    case SB_CUDA_ACT_TANH: return dy * (1.0f - v * v);
    case SB_CUDA_ACT_SIGMOID: return (dy * (1.0f - v)) * v;
    case SB_CUDA_ACT_SILU: {
        float s = 1.0f / (1.0f + sb_dev_expf(-v));
        return (dy * s) * (1.0f + v * (1.0f - s));
    }
    case SB_CUDA_ACT_GELU:
        if (p0 != 0.0f) {
            float x = v, sq = x * x, cube = sq * x;
            float inner = SB_GELU_SQRT_2_PI * (x + SB_GELU_KAPPA * cube);
            float t = sb_dev_tanhf(inner);
            float left = 0.5f * x, right = 1.0f + t, left_d = 0.5f * right;
            float tanh_d = 1.0f - t * t;
            float inner_d = SB_GELU_SQRT_2_PI * (1.0f + SB_GELU_KAPPA3 * sq);
            float right_d = (left * tanh_d) * inner_d;
            return dy * (left_d + right_d);
        } else {
            float x = v;
            float cdf = 0.5f * (1.0f + sb_dev_erff(x * SB_GELU_SQRT1_2));
            float pdf = SB_GELU_INV_SQRT_2PI * sb_dev_expf((x * x) * -0.5f);
            return dy * (cdf + x * pdf);
        }
    default: {
        float z = v * p0;
        if (z > p1) return dy;
        float e = sb_dev_expf(z);
        return (dy * e) / (e + 1.0f);
    }
    }
}

__global__ void act_fwd_kernel(int act, int64_t n, const float *x, float p0, float p1, float *y) {
    SB_GRID_STRIDE(i, n) y[i] = act_fwd(act, x[i], p0, p1);
}
__global__ void act_bwd_kernel(int act, int64_t n, const float *in, const float *dy, float p0,
                               float p1, float *dx) {
    SB_GRID_STRIDE(i, n) dx[i] = act_bwd(act, in[i], dy[i], p0, p1);
}

/* ---- the row statistics of cross-entropy ----------------------------------
 * One warp per row. m: the reference's scan (first NaN, else first strict
 * maximum) as a (value, position) warp reduction; s: canonical sum of
 * exp(x_j - m). (Softmax itself is softmax.cl's, one thread per row.) */

struct RowStats { float m, s; };

template <class X>
__device__ RowStats row_stats(X x, int64_t n) {
    const int lane = threadIdx.x & 31;
    float m = -INFINITY;
    int64_t mi = INT64_MAX;
    for (int64_t j = lane; j < n; j += 32) sb_max_combine(m, mi, x(j), j);
    for (int s = 16; s >= 1; s >>= 1) {
        float om = __shfl_down_sync(0xffffffffu, m, s);
        int64_t oi = __shfl_down_sync(0xffffffffu, mi, s);
        sb_max_combine(m, mi, om, oi);
    }
    m = __shfl_sync(0xffffffffu, m, 0);
    RowStats r;
    r.m = m;
    r.s = sb_warp_canonical_sum([&](int64_t j) { return sb_dev_expf(x(j) - m); }, n);
    return r;
}

/* ---- cross-entropy ---------------------------------------------------------- */

__global__ void ce_rows_kernel(const float *logits, const int64_t *targets, int64_t N, int64_t C,
                               float eps, int64_t ignore, float *r_out) {
    int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (r >= N) return;
    int64_t t = targets[r];
    float v = 0.0f;
    if (t != ignore) {
        const float *x = logits + r * C;
        RowStats st = row_stats([=](int64_t j) { return x[j]; }, C);
        float ls = sb_dev_logf(st.s);
        float nll = -((x[t] - st.m) - ls);
        v = nll;
        if (eps != 0.0f) {
            float m = st.m;
            float smooth =
                -sb_warp_canonical_sum([=](int64_t j) { return (x[j] - m) - ls; }, C);
            float eps_c = eps / (float)C;
            v = (1.0f - eps) * nll + smooth * eps_c;
        }
    }
    if ((threadIdx.x & 31) == 0) r_out[r] = v;
}

/* One warp: count = non-ignored rows (integers, order-free); writes
 * out[0] = sum / (float)count (MEAN), the mean gradient dloss / count
 * (backward), or leaves the sum (SUM). */
__global__ void ce_count_kernel(const int64_t *targets, int64_t N, int64_t ignore, int mode,
                                const float *num, float *out) {
    const int lane = threadIdx.x & 31;
    long long c = 0;
    for (int64_t r = lane; r < N; r += 32) c += targets[r] != ignore;
    for (int s = 16; s >= 1; s >>= 1) c += __shfl_down_sync(0xffffffffu, c, s);
    if (lane == 0) out[0] = num[0] / (float)c;
    (void)mode;
}

__global__ void ce_bwd_kernel(const float *logits, const int64_t *targets, int64_t N, int64_t C,
                              int reduction, float eps, int64_t ignore, const float *dloss,
                              const float *mean_grad, float *dlogits) {
    int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (r >= N) return;
    const int lane = threadIdx.x & 31;
    const float *x = logits + r * C;
    float *dx = dlogits + r * C;
    int64_t t = targets[r];
    if (t == ignore) {
        for (int64_t j = lane; j < C; j += 32) dx[j] = 0.0f;
        return;
    }
    float eps_c = eps / (float)C;
    float q_target = (1.0f - eps) + eps_c;
    float g = reduction == SB_LOSS_NONE ? dloss[r]
              : reduction == SB_LOSS_MEAN ? mean_grad[0] : dloss[0];
    RowStats st = row_stats([=](int64_t j) { return x[j]; }, C);
    for (int64_t j = lane; j < C; j += 32) {
        float p = sb_dev_expf(x[j] - st.m) / st.s;
        float q = j == t ? q_target : eps_c;
        dx[j] = (p - q) * g;
    }
}

/* ---- pooling (src/ref/pool2d.c) ------------------------------------------------ */

unsigned warps_grid(int64_t rows) { return (unsigned)((rows * 32 + 255) / 256); }

sb_status check_n(const char *fn, sb_cuda_context *ctx, int64_t n) {
    SB_TRY(sb_cuda_enter(fn, ctx));
    if (n < 0) return sb_fail(SB_ERR_ARG, "%s: n = %lld must be >= 0", fn, (long long)n);
    return SB_OK;
}

} // namespace

extern "C" {

sb_status sb_cuda_act_forward_raw(sb_cuda_context *ctx, sb_cuda_act act, int64_t n,
                                  const float *x, float p0, float p1, float *y) {
    const char *fn = "sb_cuda_act_forward";
    SB_TRY(check_n(fn, ctx, n));
    if ((int)act < 0 || act >= SB_CUDA_ACT_COUNT)
        return sb_fail(SB_ERR_ARG, "%s: act = %d is not an sb_cuda_act", fn, (int)act);
    if (n == 0) return SB_OK;
    if (!x || !y) return sb_fail(SB_ERR_NULL, "%s: x or y is NULL", fn);
    act_fwd_kernel<<<sb_cuda_blocks(n, 256), 256, 0, ctx->stream>>>((int)act, n, x, p0, p1, y);
    return sb_cuda_launched(fn);
}

sb_status sb_cuda_act_backward_raw(sb_cuda_context *ctx, sb_cuda_act act, int64_t n,
                                   const float *in, const float *dy, float p0, float p1,
                                   float *dx) {
    const char *fn = "sb_cuda_act_backward";
    SB_TRY(check_n(fn, ctx, n));
    if ((int)act < 0 || act >= SB_CUDA_ACT_COUNT)
        return sb_fail(SB_ERR_ARG, "%s: act = %d is not an sb_cuda_act", fn, (int)act);
    if (n == 0) return SB_OK;
    if (!in || !dy || !dx) return sb_fail(SB_ERR_NULL, "%s: an array is NULL", fn);
    act_bwd_kernel<<<sb_cuda_blocks(n, 256), 256, 0, ctx->stream>>>((int)act, n, in, dy, p0, p1,
                                                                      dx);
    return sb_cuda_launched(fn);
}

sb_status sb_cuda_softmax_forward_raw(sb_cuda_context *ctx, bool log, const float *x,
                                      int64_t outer, int64_t n, int64_t inner, float *y) {
    const char *fn = "sb_cuda_softmax_forward";
    SB_TRY(sb_cuda_enter(fn, ctx));
    if (outer < 0 || n < 0 || inner < 0) return sb_fail(SB_ERR_ARG, "%s: negative size", fn);
    if (outer * inner == 0 || n == 0) return SB_OK;
    /* softmax.cl: one thread per row scans it in the reference's order */
    sb_softmax_forward<<<sb_cuda_blocks(outer * inner, 64), 64, 0, ctx->stream>>>(
        (int)log, outer, n, inner, x, 0, y, 0);
    return sb_cuda_launched(fn);
}

sb_status sb_cuda_softmax_backward_raw(sb_cuda_context *ctx, bool log, const float *y,
                                       const float *dy, int64_t outer, int64_t n, int64_t inner,
                                       float *dx) {
    const char *fn = "sb_cuda_softmax_backward";
    SB_TRY(sb_cuda_enter(fn, ctx));
    if (outer < 0 || n < 0 || inner < 0) return sb_fail(SB_ERR_ARG, "%s: negative size", fn);
    if (outer * inner == 0 || n == 0) return SB_OK;
    sb_softmax_backward<<<sb_cuda_blocks(outer * inner, 64), 64, 0, ctx->stream>>>(
        (int)log, outer, n, inner, y, 0, dy, 0, dx, 0);
    return sb_cuda_launched(fn);
}

sb_status sb_cuda_cross_entropy_forward_raw(sb_cuda_context *ctx, const float *logits,
                                            const int64_t *targets, int64_t N, int64_t C,
                                            sb_loss_reduction reduction, float eps,
                                            int64_t ignore_index, float *loss) {
    const char *fn = "sb_cuda_cross_entropy_forward";
    SB_TRY(sb_cuda_enter(fn, ctx));
    if (N < 1 || C < 1) return sb_fail(SB_ERR_SHAPE, "%s: N and C must be >= 1", fn);
    if (reduction == SB_LOSS_NONE) {
        ce_rows_kernel<<<warps_grid(N), 256, 0, ctx->stream>>>(logits, targets, N, C, eps,
                                                               ignore_index, loss);
        return sb_cuda_launched(fn);
    }
    float *rows = NULL;
    SB_TRY(sb_cuda_malloc(ctx, (size_t)N * sizeof(float), (void **)&rows));
    ce_rows_kernel<<<warps_grid(N), 256, 0, ctx->stream>>>(logits, targets, N, C, eps,
                                                           ignore_index, rows);
    sb_status st = sb_cuda_launched(fn);
    if (st == SB_OK) st = sb_cuda_sum_canonical(ctx, rows, N, 1, loss);
    if (st == SB_OK && reduction == SB_LOSS_MEAN) {
        ce_count_kernel<<<1, 32, 0, ctx->stream>>>(targets, N, ignore_index, 0, loss, loss);
        st = sb_cuda_launched(fn);
    }
    sb_cuda_free(ctx, rows);
    return st;
}

sb_status sb_cuda_cross_entropy_backward_raw(sb_cuda_context *ctx, const float *logits,
                                             const int64_t *targets, int64_t N, int64_t C,
                                             sb_loss_reduction reduction, float eps,
                                             int64_t ignore_index, const float *dloss,
                                             float *dlogits) {
    const char *fn = "sb_cuda_cross_entropy_backward";
    SB_TRY(sb_cuda_enter(fn, ctx));
    if (N < 1 || C < 1) return sb_fail(SB_ERR_SHAPE, "%s: N and C must be >= 1", fn);
    float *mg = NULL;
    if (reduction == SB_LOSS_MEAN) {
        SB_TRY(sb_cuda_malloc(ctx, sizeof(float), (void **)&mg));
        ce_count_kernel<<<1, 32, 0, ctx->stream>>>(targets, N, ignore_index, 1, dloss, mg);
    }
    ce_bwd_kernel<<<warps_grid(N), 256, 0, ctx->stream>>>(logits, targets, N, C, (int)reduction,
                                                          eps, ignore_index, dloss, mg, dlogits);
    sb_status st = sb_cuda_launched(fn);
    sb_cuda_free(ctx, mg);
    return st;
}

/* conv.cl's pool geometry on the device (freed stream-ordered after the
 * launch). */
static sb_status pool_entry(const char *fn, sb_cuda_context *ctx, const sb_pool2d_geom *g,
                            int64_t total, SB_LONG **dg) {
    *dg = NULL;
    SB_TRY(sb_cuda_enter(fn, ctx));
    if (!g) return sb_fail(SB_ERR_NULL, "%s: geometry is NULL", fn);
    if (total == 0) return SB_OK;
    const SB_LONG v[SB_POOL_GEOM] = {g->planes,   g->h,        g->w,        g->oh,
                                    g->ow,       g->kh,       g->kw,       g->stride_h,
                                    g->stride_w, g->pad_h,    g->pad_w,    g->count_include_pad,
                                    g->adaptive, g->dil_h > 1 ? g->dil_h : 1,
                                    g->dil_w > 1 ? g->dil_w : 1, g->divisor};
    return sb_cuda_upload_geom(ctx, v, SB_POOL_GEOM, dg);
}

/* After a launch with an uploaded geometry. */
static sb_status pool_done(const char *fn, sb_cuda_context *ctx, SB_LONG *dg) {
    sb_status st = sb_cuda_launched(fn);
    sb_cuda_free(ctx, dg);
    return st;
}

sb_status sb_cuda_max_pool2d_forward_raw(sb_cuda_context *ctx, const sb_pool2d_geom *g,
                                         const float *x, float *y, int64_t *indices) {
    const char *fn = "sb_cuda_max_pool2d_forward";
    SB_LONG *dg = NULL;
    int64_t total = g ? g->planes * g->oh * g->ow : 0;
    SB_TRY(pool_entry(fn, ctx, g, total, &dg));
    if (!dg) return SB_OK;
    sb_max_pool_forward<<<sb_cuda_blocks(total, 256), 256, 0, ctx->stream>>>(
        dg, x, 0, y, 0, indices, 0, indices != NULL);
    return pool_done(fn, ctx, dg);
}

sb_status sb_cuda_max_pool2d_backward_raw(sb_cuda_context *ctx, const sb_pool2d_geom *g,
                                          const float *dy, const int64_t *indices, float *dx) {
    const char *fn = "sb_cuda_max_pool2d_backward";
    SB_LONG *dg = NULL;
    int64_t total = g ? g->planes * g->h * g->w : 0;
    SB_TRY(pool_entry(fn, ctx, g, total, &dg));
    if (!dg) return SB_OK;
    sb_max_pool_backward<<<sb_cuda_blocks(total, 256), 256, 0, ctx->stream>>>(dg, dy, 0, indices,
                                                                               0, dx, 0);
    return pool_done(fn, ctx, dg);
}

sb_status sb_cuda_avg_pool2d_forward_raw(sb_cuda_context *ctx, const sb_pool2d_geom *g,
                                         const float *x, float *y) {
    const char *fn = "sb_cuda_avg_pool2d_forward";
    SB_LONG *dg = NULL;
    int64_t total = g ? g->planes * g->oh * g->ow : 0;
    SB_TRY(pool_entry(fn, ctx, g, total, &dg));
    if (!dg) return SB_OK;
    sb_avg_pool_forward<<<sb_cuda_blocks(total, 256), 256, 0, ctx->stream>>>(dg, x, 0, y, 0);
    return pool_done(fn, ctx, dg);
}

sb_status sb_cuda_avg_pool2d_backward_raw(sb_cuda_context *ctx, const sb_pool2d_geom *g,
                                          const float *dy, float *dx) {
    const char *fn = "sb_cuda_avg_pool2d_backward";
    SB_LONG *dg = NULL;
    int64_t total = g ? g->planes * g->h * g->w : 0;
    SB_TRY(pool_entry(fn, ctx, g, total, &dg));
    if (!dg) return SB_OK;
    sb_avg_pool_backward<<<sb_cuda_blocks(total, 256), 256, 0, ctx->stream>>>(dg, dy, 0, dx, 0);
    return pool_done(fn, ctx, dg);
}

sb_status sb_cuda_conv2d_backward_input_raw(sb_cuda_context *ctx, const sb_conv2d_geom *g,
                                            const float *dy, const float *w, float *dx) {
    const char *fn = "sb_cuda_conv2d_backward_input";
    SB_TRY(sb_cuda_enter(fn, ctx));
    if (!g) return sb_fail(SB_ERR_NULL, "%s: geometry is NULL", fn);
    int64_t total = g->n * g->c_in * g->h * g->w;
    if (total == 0) return SB_OK;
    const SB_LONG v[SB_CONV_GEOM] = {g->n,        g->c_in,  g->h,     g->w,          g->c_out,
                                    g->kh,       g->kw,    g->oh,    g->ow,         g->stride_h,
                                    g->stride_w, g->pad_h, g->pad_w, g->dilation_h, g->dilation_w,
                                    g->groups};
    SB_LONG *dg = NULL;
    SB_TRY(sb_cuda_upload_geom(ctx, v, SB_CONV_GEOM, &dg));
    sb_conv_backward_input<<<sb_cuda_blocks(total, 256), 256, 0, ctx->stream>>>(dg, dy, 0, w, 0,
                                                                                 dx, 0);
    return pool_done(fn, ctx, dg);
}

sb_status sb_cuda_sgd_raw(sb_cuda_context *ctx, const sb_sgd_factors *f, bool nesterov,
                          bool maximize, bool first, int64_t n, float *param, const float *grad,
                          float *momentum_buf) {
    const char *fn = "sb_cuda_sgd_step";
    SB_TRY(check_n(fn, ctx, n));
    if (!f) return sb_fail(SB_ERR_NULL, "%s: factors are NULL", fn);
    if (n == 0) return SB_OK;
    sb_opt_sgd<<<sb_cuda_blocks(n, 256), 256, 0, ctx->stream>>>(
        f->weight_decay, f->momentum, f->one_minus_dampening, f->neg_lr, f->use_weight_decay,
        f->use_momentum, nesterov, maximize, first, n, param, 0, grad, 0, momentum_buf, 0);
    return sb_cuda_launched(fn);
}

sb_status sb_cuda_adam_raw(sb_cuda_context *ctx, const sb_adam_factors *f, bool first, int64_t n,
                           float *param, const float *grad, float *exp_avg, float *exp_avg_sq,
                           float *max_exp_avg_sq) {
    const char *fn = "sb_cuda_adam_step";
    SB_TRY(check_n(fn, ctx, n));
    if (!f) return sb_fail(SB_ERR_NULL, "%s: factors are NULL", fn);
    if (n == 0) return SB_OK;
    sb_opt_adam<<<sb_cuda_blocks(n, 256), 256, 0, ctx->stream>>>(
        f->weight_decay, f->decay, f->one_minus_beta1, f->beta2, f->one_minus_beta2,
        f->bias_correction2_sqrt, f->eps, f->neg_step_size, f->use_weight_decay, f->decoupled,
        f->amsgrad, f->maximize, first, n, param, 0, grad, 0, exp_avg, 0, exp_avg_sq, 0,
        max_exp_avg_sq, 0);
    return sb_cuda_launched(fn);
}

} // extern "C"
