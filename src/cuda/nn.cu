/* src/cuda/nn.cu - activations, softmax / log-softmax, cross-entropy,
 * pooling and optimizer updates on the GPU, each the exact operation
 * sequence of its contract section (9, 11, 8, 14) and of src/ref/.
 * The build's --fmad=false keeps every a*b + c below two roundings; the
 * optimizers' fused steps are written as __fmaf_rn as the contract says. */
#include "cuda/common.cuh"
#include "cuda/device_math.cuh"
extern "C" {
#include "ref/ref_pointwise.h" /* the GELU constants */
}

namespace {

/* ---- sequential canonical sum in one thread (windows of pooling) ------- */

struct SeqSum { /* src/core/canonical_sum.c's streaming state, per thread */
    float lane[SB_DEV_LEVELS][32];
    int64_t count[SB_DEV_LEVELS];
    __device__ SeqSum() {
        for (int l = 0; l < SB_DEV_LEVELS; l++) reset(l);
    }
    __device__ void reset(int l) {
        for (int j = 0; j < 32; j++) lane[l][j] = -0.0f;
        count[l] = 0;
    }
    __device__ static float tree(const float *in) {
        float v[32];
        for (int j = 0; j < 32; j++) v[j] = in[j];
        for (int s = 16; s >= 1; s /= 2)
            for (int j = 0; j < s; j++) v[j] = v[j] + v[j + s];
        return v[0];
    }
    __device__ void push(int l, float x) {
        for (;;) {
            int64_t c = count[l];
            lane[l][c % 32] = lane[l][c % 32] + x;
            count[l] = c + 1;
            if (c + 1 != SB_SUM_BLOCK || l + 1 >= SB_DEV_LEVELS) return;
            x = tree(lane[l]);
            reset(l);
            l++;
        }
    }
    __device__ void add(float x) { push(0, x); }
    __device__ float result() {
        int top = -1;
        for (int l = 0; l < SB_DEV_LEVELS; l++)
            if (count[l] > 0) top = l;
        if (top < 0) return 0.0f;
        for (int l = 0; l < top; l++) {
            if (count[l] == 0) continue;
            float p = tree(lane[l]);
            reset(l);
            push(l + 1, p);
        }
        for (int l = SB_DEV_LEVELS - 1; l >= 0; l--)
            if (count[l] > 0) return tree(lane[l]);
        return 0.0f;
    }
};

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

/* ---- softmax rows ---------------------------------------------------------
 * One warp per row. m: the reference's scan (first NaN, else first strict
 * maximum) as a (value, position) warp reduction; s: canonical sum of
 * exp(x_j - m). */

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

__global__ void softmax_fwd_kernel(bool log, const float *x, int64_t outer, int64_t n,
                                   int64_t inner, float *y) {
    int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (row >= outer * inner) return;
    int64_t base = (row / inner) * n * inner + row % inner;
    const float *xr = x + base;
    float *yr = y + base;
    auto xs = [=](int64_t j) { return xr[j * inner]; };
    RowStats st = row_stats(xs, n);
    const int lane = threadIdx.x & 31;
    if (log) {
        float ls = sb_dev_logf(st.s);
        for (int64_t j = lane; j < n; j += 32) yr[j * inner] = (xr[j * inner] - st.m) - ls;
    } else {
        for (int64_t j = lane; j < n; j += 32)
            yr[j * inner] = sb_dev_expf(xr[j * inner] - st.m) / st.s;
    }
}

__global__ void softmax_bwd_kernel(bool log, const float *y, const float *dy, int64_t outer,
                                   int64_t n, int64_t inner, float *dx) {
    int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (row >= outer * inner) return;
    int64_t base = (row / inner) * n * inner + row % inner;
    const float *yr = y + base, *dyr = dy + base;
    float *dxr = dx + base;
    const int lane = threadIdx.x & 31;
    if (log) {
        float g = sb_warp_canonical_sum([=](int64_t j) { return dyr[j * inner]; }, n);
        for (int64_t j = lane; j < n; j += 32)
            dxr[j * inner] = dyr[j * inner] - sb_dev_expf(yr[j * inner]) * g;
    } else {
        float dot = sb_warp_canonical_sum(
            [=](int64_t j) { return dyr[j * inner] * yr[j * inner]; }, n);
        for (int64_t j = lane; j < n; j += 32)
            dxr[j * inner] = yr[j * inner] * (dyr[j * inner] - dot);
    }
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

__device__ __forceinline__ void clip(int64_t start, int64_t k, int64_t size, int64_t *lo,
                                     int64_t *hi) {
    *lo = start < 0 ? 0 : start;
    *hi = start + k < size ? start + k : size;
}
__device__ __forceinline__ void windows_of(int64_t pos, int64_t k, int64_t stride, int64_t pad,
                                           int64_t out_size, int64_t *lo, int64_t *hi) {
    int64_t first = pos + pad - k + 1;
    *lo = first <= 0 ? 0 : (first + stride - 1) / stride;
    int64_t last = (pos + pad) / stride;
    *hi = last + 1 < out_size ? last + 1 : out_size;
}
__device__ float avg_divisor(const sb_pool2d_geom &g, int64_t r, int64_t s) {
    int64_t h0, h1, w0, w1;
    int64_t sh = r * g.stride_h - g.pad_h, sw = s * g.stride_w - g.pad_w;
    if (g.count_include_pad) {
        clip(sh + g.pad_h, g.kh, g.h + 2 * g.pad_h, &h0, &h1);
        clip(sw + g.pad_w, g.kw, g.w + 2 * g.pad_w, &w0, &w1);
    } else {
        clip(sh, g.kh, g.h, &h0, &h1);
        clip(sw, g.kw, g.w, &w0, &w1);
    }
    return (float)((h1 - h0) * (w1 - w0));
}

__global__ void maxpool_fwd(sb_pool2d_geom g, const float *x, float *y, int64_t *indices,
                            int64_t total) {
    SB_GRID_STRIDE(q, total) {
        int64_t s = q % g.ow, r = (q / g.ow) % g.oh, p = q / (g.ow * g.oh);
        const float *xp = x + p * g.h * g.w;
        int64_t h0, h1, w0, w1;
        clip(r * g.stride_h - g.pad_h, g.kh, g.h, &h0, &h1);
        clip(s * g.stride_w - g.pad_w, g.kw, g.w, &w0, &w1);
        int64_t best = h0 * g.w + w0;
        for (int64_t ih = h0; ih < h1; ih++)
            for (int64_t iw = w0; iw < w1; iw++) {
                float v = xp[ih * g.w + iw], b = xp[best];
                if (!isnan(b) && (isnan(v) || v > b)) best = ih * g.w + iw;
            }
        y[q] = xp[best];
        if (indices) indices[q] = best;
    }
}

__global__ void maxpool_bwd(sb_pool2d_geom g, const float *dy, const int64_t *indices, float *dx,
                            int64_t total) {
    SB_GRID_STRIDE(e, total) {
        int64_t me = e % (g.h * g.w), p = e / (g.h * g.w), ih = me / g.w, iw = me % g.w;
        const float *dyp = dy + p * g.oh * g.ow;
        const int64_t *ip = indices + p * g.oh * g.ow;
        int64_t r0, r1, s0, s1;
        windows_of(ih, g.kh, g.stride_h, g.pad_h, g.oh, &r0, &r1);
        windows_of(iw, g.kw, g.stride_w, g.pad_w, g.ow, &s0, &s1);
        SeqSum acc;
        for (int64_t r = r0; r < r1; r++)
            for (int64_t s = s0; s < s1; s++)
                if (ip[r * g.ow + s] == me) acc.add(dyp[r * g.ow + s]);
        dx[e] = acc.result();
    }
}

__global__ void avgpool_fwd(sb_pool2d_geom g, const float *x, float *y, int64_t total) {
    SB_GRID_STRIDE(q, total) {
        int64_t s = q % g.ow, r = (q / g.ow) % g.oh, p = q / (g.ow * g.oh);
        const float *xp = x + p * g.h * g.w;
        int64_t h0, h1, w0, w1;
        clip(r * g.stride_h - g.pad_h, g.kh, g.h, &h0, &h1);
        clip(s * g.stride_w - g.pad_w, g.kw, g.w, &w0, &w1);
        SeqSum acc;
        for (int64_t ih = h0; ih < h1; ih++)
            for (int64_t iw = w0; iw < w1; iw++) acc.add(xp[ih * g.w + iw]);
        y[q] = acc.result() / avg_divisor(g, r, s);
    }
}

__global__ void avgpool_bwd(sb_pool2d_geom g, const float *dy, float *dx, int64_t total) {
    SB_GRID_STRIDE(e, total) {
        int64_t me = e % (g.h * g.w), p = e / (g.h * g.w), ih = me / g.w, iw = me % g.w;
        const float *dyp = dy + p * g.oh * g.ow;
        int64_t r0, r1, s0, s1;
        windows_of(ih, g.kh, g.stride_h, g.pad_h, g.oh, &r0, &r1);
        windows_of(iw, g.kw, g.stride_w, g.pad_w, g.ow, &s0, &s1);
        SeqSum acc;
        for (int64_t r = r0; r < r1; r++)
            for (int64_t s = s0; s < s1; s++)
                acc.add(dyp[r * g.ow + s] / avg_divisor(g, r, s));
        dx[e] = acc.result();
    }
}

/* ---- optimizers (src/optim/sgd.c, adam.c element loops) ---------------------- */

__global__ void sgd_kernel(sb_sgd_factors f, bool nesterov, bool maximize, bool first, int64_t n,
                           float *param, const float *grad, float *buf) {
    SB_GRID_STRIDE(i, n) {
        float p = param[i];
        float g = maximize ? -grad[i] : grad[i];
        if (f.use_weight_decay) g = __fmaf_rn(p, f.weight_decay, g);
        if (f.use_momentum) {
            float b = first ? g : __fmaf_rn(g, f.one_minus_dampening, buf[i] * f.momentum);
            buf[i] = b;
            g = nesterov ? __fmaf_rn(b, f.momentum, g) : b;
        }
        param[i] = __fmaf_rn(g, f.neg_lr, p);
    }
}

__device__ __forceinline__ float maximum_f32(float a, float b) {
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    if (a == b) return signbit(a) ? b : a;
    return a > b ? a : b;
}

__global__ void adam_kernel(sb_adam_factors f, bool first, int64_t n, float *param,
                            const float *grad, float *m_buf, float *v_buf, float *vmax_buf) {
    const float w1 = f.one_minus_beta1;
    const bool lerp_small = w1 < 0.5f;
    const float w1_minus_1 = w1 - 1.0f;
    SB_GRID_STRIDE(i, n) {
        float p = param[i];
        float g = f.maximize ? -grad[i] : grad[i];
        float m = first ? 0.0f : m_buf[i];
        float v = first ? 0.0f : v_buf[i];
        if (f.use_weight_decay) {
            if (f.decoupled) p = p * f.decay;
            else g = __fmaf_rn(p, f.weight_decay, g);
        }
        float d = g - m;
        m = lerp_small ? __fmaf_rn(w1, d, m) : __fmaf_rn(w1_minus_1, d, g);
        v = v * f.beta2;
        v = v + (f.one_minus_beta2 * g) * g;
        float s = v;
        if (f.amsgrad) {
            float vmax = first ? 0.0f : vmax_buf[i];
            s = maximum_f32(vmax, v);
            vmax_buf[i] = s;
        }
        float denom = sqrtf(s) / f.bias_correction2_sqrt + f.eps;
        m_buf[i] = m;
        v_buf[i] = v;
        param[i] = p + (f.neg_step_size * m) / denom;
    }
}

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
    softmax_fwd_kernel<<<warps_grid(outer * inner), 256, 0, ctx->stream>>>(log, x, outer, n,
                                                                           inner, y);
    return sb_cuda_launched(fn);
}

sb_status sb_cuda_softmax_backward_raw(sb_cuda_context *ctx, bool log, const float *y,
                                       const float *dy, int64_t outer, int64_t n, int64_t inner,
                                       float *dx) {
    const char *fn = "sb_cuda_softmax_backward";
    SB_TRY(sb_cuda_enter(fn, ctx));
    if (outer < 0 || n < 0 || inner < 0) return sb_fail(SB_ERR_ARG, "%s: negative size", fn);
    if (outer * inner == 0 || n == 0) return SB_OK;
    softmax_bwd_kernel<<<warps_grid(outer * inner), 256, 0, ctx->stream>>>(log, y, dy, outer, n,
                                                                           inner, dx);
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

#define POOL_ENTRY(name, total_expr, launch)                                   \
    {                                                                          \
        const char *fn = name;                                                 \
        SB_TRY(sb_cuda_enter(fn, ctx));                                        \
        if (!g) return sb_fail(SB_ERR_NULL, "%s: geometry is NULL", fn);       \
        int64_t total = (total_expr);                                          \
        if (total == 0) return SB_OK;                                          \
        launch;                                                                \
        return sb_cuda_launched(fn);                                           \
    }

sb_status sb_cuda_max_pool2d_forward_raw(sb_cuda_context *ctx, const sb_pool2d_geom *g,
                                         const float *x, float *y, int64_t *indices)
    POOL_ENTRY("sb_cuda_max_pool2d_forward", g->planes * g->oh * g->ow,
               (maxpool_fwd<<<sb_cuda_blocks(total, 256), 256, 0, ctx->stream>>>(*g, x, y, indices,
                                                                                total)))

sb_status sb_cuda_max_pool2d_backward_raw(sb_cuda_context *ctx, const sb_pool2d_geom *g,
                                          const float *dy, const int64_t *indices, float *dx)
    POOL_ENTRY("sb_cuda_max_pool2d_backward", g->planes * g->h * g->w,
               (maxpool_bwd<<<sb_cuda_blocks(total, 256), 256, 0, ctx->stream>>>(*g, dy, indices,
                                                                                dx, total)))

sb_status sb_cuda_avg_pool2d_forward_raw(sb_cuda_context *ctx, const sb_pool2d_geom *g,
                                         const float *x, float *y)
    POOL_ENTRY("sb_cuda_avg_pool2d_forward", g->planes * g->oh * g->ow,
               (avgpool_fwd<<<sb_cuda_blocks(total, 256), 256, 0, ctx->stream>>>(*g, x, y, total)))

sb_status sb_cuda_avg_pool2d_backward_raw(sb_cuda_context *ctx, const sb_pool2d_geom *g,
                                          const float *dy, float *dx)
    POOL_ENTRY("sb_cuda_avg_pool2d_backward", g->planes * g->h * g->w,
               (avgpool_bwd<<<sb_cuda_blocks(total, 256), 256, 0, ctx->stream>>>(*g, dy, dx,
                                                                                total)))

sb_status sb_cuda_sgd_raw(sb_cuda_context *ctx, const sb_sgd_factors *f, bool nesterov,
                          bool maximize, bool first, int64_t n, float *param, const float *grad,
                          float *momentum_buf) {
    const char *fn = "sb_cuda_sgd_step";
    SB_TRY(check_n(fn, ctx, n));
    if (!f) return sb_fail(SB_ERR_NULL, "%s: factors are NULL", fn);
    if (n == 0) return SB_OK;
    sgd_kernel<<<sb_cuda_blocks(n, 256), 256, 0, ctx->stream>>>(*f, nesterov, maximize, first, n,
                                                                param, grad, momentum_buf);
    return sb_cuda_launched(fn);
}

sb_status sb_cuda_adam_raw(sb_cuda_context *ctx, const sb_adam_factors *f, bool first, int64_t n,
                           float *param, const float *grad, float *exp_avg, float *exp_avg_sq,
                           float *max_exp_avg_sq) {
    const char *fn = "sb_cuda_adam_step";
    SB_TRY(check_n(fn, ctx, n));
    if (!f) return sb_fail(SB_ERR_NULL, "%s: factors are NULL", fn);
    if (n == 0) return SB_OK;
    adam_kernel<<<sb_cuda_blocks(n, 256), 256, 0, ctx->stream>>>(*f, first, n, param, grad,
                                                                 exp_avg, exp_avg_sq,
                                                                 max_exp_avg_sq);
    return sb_cuda_launched(fn);
}

} // extern "C"
