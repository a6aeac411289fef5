/* src/cuda/reduce.cu - the canonical sum on the GPU (contract section 3.2).
 * A warp is the rule's 32 lanes; a whole vector longer than 8192 is cut
 * into its blocks of 8192, one warp per block, and the block sums are
 * reduced again by the same rule (level by level), exactly the recursion
 * the contract states. */
#include "cuda/common.cuh"

namespace {

/* One warp per row: out[r*os] = canonical sum of x[r*rs + j*es], j < n. */
__global__ void sum_rows_kernel(const float *x, int64_t rows, int64_t n, int64_t rs, int64_t es,
                                float *out, int64_t os) {
    int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (r >= rows) return;
    const float *row = x + r * rs;
    float s = sb_warp_canonical_sum([=](int64_t j) { return row[j * es]; }, n);
    if ((threadIdx.x & 31) == 0) out[r * os] = s;
}

} // namespace

extern "C" {

sb_status sb_cuda_sum_rows(sb_cuda_context *ctx, const float *x, int64_t rows, int64_t n,
                           int64_t row_stride, int64_t elem_stride, float *out,
                           int64_t out_stride) {
    const char *fn = "sb_cuda_sum_rows";
    SB_TRY(sb_cuda_enter(fn, ctx));
    if (rows < 0 || n < 0) return sb_fail(SB_ERR_ARG, "%s: rows and n must be >= 0", fn);
    if (rows == 0) return SB_OK;
    if (!out || (n > 0 && !x)) return sb_fail(SB_ERR_NULL, "%s: x or out is NULL", fn);
    int64_t threads = rows * 32;
    if ((threads + 255) / 256 > INT32_MAX)
        return sb_fail(SB_ERR_UNSUPPORTED, "%s: %lld rows is too many", fn, (long long)rows);
    sum_rows_kernel<<<(unsigned)((threads + 255) / 256), 256, 0, ctx->stream>>>(
        x, rows, n, row_stride, elem_stride, out, out_stride);
    return sb_cuda_launched(fn);
}

sb_status sb_cuda_sum_canonical(sb_cuda_context *ctx, const float *x, int64_t n, int64_t stride,
                                float *out) {
    const char *fn = "sb_cuda_sum_canonical";
    SB_TRY(sb_cuda_enter(fn, ctx));
    if (n < 0) return sb_fail(SB_ERR_ARG, "%s: n = %lld must be >= 0", fn, (long long)n);
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    if (n <= SB_SUM_BLOCK) return sb_cuda_sum_rows(ctx, x, 1, n, 0, stride, out, 1);
    /* Level by level: the blocks of this level become the elements of the
     * next; the last, shorter block is a row of its own. */
    int64_t nb = (n + SB_SUM_BLOCK - 1) / SB_SUM_BLOCK;
    float *tmp = NULL;
    SB_TRY(sb_cuda_malloc(ctx, (size_t)nb * sizeof(float), (void **)&tmp));
    sb_status st = SB_OK;
    int64_t full = n / SB_SUM_BLOCK, rest = n % SB_SUM_BLOCK;
    if (full > 0)
        st = sb_cuda_sum_rows(ctx, x, full, SB_SUM_BLOCK, SB_SUM_BLOCK * stride, stride, tmp, 1);
    if (st == SB_OK && rest > 0)
        st = sb_cuda_sum_rows(ctx, x + full * SB_SUM_BLOCK * stride, 1, rest, 0, stride,
                              tmp + full, 1);
    if (st == SB_OK) st = sb_cuda_sum_canonical(ctx, tmp, nb, 1, out);
    sb_cuda_free(ctx, tmp); /* stream-ordered: later reuse runs after these kernels */
    return st;
}

} // extern "C"
