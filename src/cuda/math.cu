/* src/cuda/math.cu - batched correctly rounded functions on the device,
 * compiled from the CPU library's own sources (src/cuda/device_math.cuh). */
#include "cuda/common.cuh"
#include "cuda/device_math.cuh"

namespace {

__device__ __forceinline__ float apply(int fn, float x) {
    switch (fn) {
    case SB_CUDA_EXPF: return sb_dev_expf(x);
    case SB_CUDA_EXPM1F: return sb_dev_expm1f(x);
    case SB_CUDA_LOGF: return sb_dev_logf(x);
    case SB_CUDA_LOG1PF: return sb_dev_log1pf(x);
    case SB_CUDA_TANHF: return sb_dev_tanhf(x);
    default: return sb_dev_erff(x);
    }
}

__global__ void math_kernel(int fn, const float *x, float *y, int64_t n) {
    SB_GRID_STRIDE(i, n) y[i] = apply(fn, x[i]);
}

__global__ void math_range_kernel(int fn, uint32_t first, float *y, int64_t n) {
    SB_GRID_STRIDE(i, n) {
        uint32_t u = first + (uint32_t)i;
        float x;
        memcpy(&x, &u, 4);
        y[i] = apply(fn, x);
    }
}

sb_status check(const char *fn, sb_cuda_context *ctx, sb_cuda_math_fn f, const void *x,
                float *y, int64_t n) {
    SB_TRY(sb_cuda_enter(fn, ctx));
    if ((int)f < 0 || f >= SB_CUDA_MATH_COUNT)
        return sb_fail(SB_ERR_ARG, "%s: fn = %d is not an sb_cuda_math_fn", fn, (int)f);
    if (n < 0) return sb_fail(SB_ERR_ARG, "%s: n = %lld must be >= 0", fn, (long long)n);
    if (n > 0 && (!x || !y)) return sb_fail(SB_ERR_NULL, "%s: %s is NULL", fn, y ? "x" : "y");
    return SB_OK;
}

} // namespace

extern "C" {

sb_status sb_cuda_math(sb_cuda_context *ctx, sb_cuda_math_fn fn, const float *x, float *y,
                       int64_t n) {
    const char *name = "sb_cuda_math";
    SB_TRY(check(name, ctx, fn, x, y, n));
    if (n == 0) return SB_OK;
    math_kernel<<<sb_cuda_blocks(n, 256), 256, 0, ctx->stream>>>((int)fn, x, y, n);
    return sb_cuda_launched(name);
}

sb_status sb_cuda_math_range(sb_cuda_context *ctx, sb_cuda_math_fn fn, uint32_t first, float *y,
                             int64_t n) {
    const char *name = "sb_cuda_math_range";
    SB_TRY(check(name, ctx, fn, y, y, n));
    if (n > ((int64_t)1 << 32) - (int64_t)first)
        return sb_fail(SB_ERR_ARG, "%s: first + n passes 2^32", name);
    if (n == 0) return SB_OK;
    math_range_kernel<<<sb_cuda_blocks(n, 256), 256, 0, ctx->stream>>>((int)fn, first, y, n);
    return sb_cuda_launched(name);
}

} // extern "C"
