/* src/cuda/reduce.cu - the canonical sum on the GPU (contract section 3.2),
 * from the single-source kernel src/gpu/kernels/sum.cl: the very text the
 * OpenCL backend runs under PoCL in make test. One block of 32 threads per
 * row: thread l is the contract's lane l, thread 0 folds the lanes in the
 * contract's order and streams the sums of 8192-blocks into the levels
 * above exactly as src/core/canonical_sum.c, so a row of any length has the
 * reference's bits in one launch. */
#include "cuda/common.cuh"

/* Included here only (the kernels have external linkage); sum_acc.cl holds
 * static inline helpers and is included by nn.cu as well. */
#include "gpu/kernels/dialect.h"
#include "gpu/kernels/sum_acc.cl"
#include "gpu/kernels/sum.cl"

extern "C" {

sb_status sb_cuda_sum_strided(sb_cuda_context *ctx, const float *x, int nkeep,
                              const int64_t *keep_shape, const int64_t *keep_xstride,
                              const int64_t *keep_ostride, int nred, const int64_t *red_shape,
                              const int64_t *red_xstride, float *out) {
    const char *fn = "sb_cuda_sum_strided";
    SB_TRY(sb_cuda_enter(fn, ctx));
    if (nkeep < 0 || nkeep > 8 || nred < 0 || nred > 8)
        return sb_fail(SB_ERR_ARG, "%s: %d kept and %d reduced dims (at most 8 each)", fn, nkeep,
                       nred);
    /* sum.cl's geometry: v[0] nkeep, v[1..] kept shape, v[9..] their x
     * strides, v[17..] their out strides, v[25] nred, v[26..] reduced
     * shape, v[34..] their x strides */
    int64_t gv[SB_SUM_GEOM] = {0}, rows = 1, n = 1;
    gv[0] = nkeep;
    for (int d = 0; d < nkeep; d++) {
        if (keep_shape[d] < 0) return sb_fail(SB_ERR_ARG, "%s: a negative size", fn);
        gv[1 + d] = keep_shape[d];
        gv[9 + d] = keep_xstride[d];
        gv[17 + d] = keep_ostride[d];
        rows *= keep_shape[d];
    }
    gv[25] = nred;
    for (int d = 0; d < nred; d++) {
        if (red_shape[d] < 0) return sb_fail(SB_ERR_ARG, "%s: a negative size", fn);
        gv[26 + d] = red_shape[d];
        gv[34 + d] = red_xstride[d];
        n *= red_shape[d];
    }
    if (rows == 0) return SB_OK;
    if (!out || (n > 0 && !x)) return sb_fail(SB_ERR_NULL, "%s: x or out is NULL", fn);
    if (rows > INT32_MAX)
        return sb_fail(SB_ERR_UNSUPPORTED, "%s: %lld outputs is too many", fn, (long long)rows);
    SB_LONG *dg = NULL;
    SB_TRY(sb_cuda_upload_geom(ctx, gv, SB_SUM_GEOM, &dg));
    /* kind 0: the plain sum (nf, denom and nan_result serve mean/var/std) */
    sb_sum_reduce<<<(unsigned)rows, SB_SUM_LANES_DEV, 0, ctx->stream>>>(0, 1.0f, 1.0f, 0, n, dg,
                                                                         x, 0, out, 0);
    sb_status st = sb_cuda_launched(fn);
    sb_cuda_free(ctx, dg); /* stream-ordered: freed after the kernel ran */
    return st;
}

sb_status sb_cuda_sum_rows(sb_cuda_context *ctx, const float *x, int64_t rows, int64_t n,
                           int64_t row_stride, int64_t elem_stride, float *out,
                           int64_t out_stride) {
    if (rows < 0 || n < 0)
        return sb_fail(SB_ERR_ARG, "sb_cuda_sum_rows: rows and n must be >= 0");
    return sb_cuda_sum_strided(ctx, x, 1, &rows, &row_stride, &out_stride, 1, &n, &elem_stride,
                               out);
}

sb_status sb_cuda_sum_canonical(sb_cuda_context *ctx, const float *x, int64_t n, int64_t stride,
                                float *out) {
    const char *fn = "sb_cuda_sum_canonical";
    SB_TRY(sb_cuda_enter(fn, ctx));
    if (n < 0) return sb_fail(SB_ERR_ARG, "%s: n = %lld must be >= 0", fn, (long long)n);
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    return sb_cuda_sum_rows(ctx, x, 1, n, 0, stride, out, 1);
}

} // extern "C"
