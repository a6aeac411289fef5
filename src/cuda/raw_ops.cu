/* src/cuda/raw_ops.cu - the raw device-pointer entry points of
 * include/samebits/cuda.h (sb_cuda_sgemm, sb_cuda_sum_canonical): their
 * arguments validated here, then the CUDA device's op table, which is the
 * GPU host layer's (src/gpu/ops.c). Pointers must lie in memory of ctx's
 * allocator (sb_cuda_malloc, device tensors); anything else is refused
 * with a message. */
#include "cuda/common.cuh"
extern "C" {
#include "backend/backend.h"
}

namespace {

bool is_t(char t) { return t == 'T' || t == 't'; }

/* ctx serves the CUDA device; its backend table. */
sb_status backend_of(const char *fn, sb_cuda_context *ctx, const sb_backend **out) {
    SB_TRY(sb_cuda_enter(fn, ctx));
    SB_TRY(sb_cuda_register(ctx));
    *out = sb_backend_get(fn, SB_DEVICE_CUDA);
    return *out ? SB_OK : SB_ERR_DEVICE;
}

} // namespace

extern "C" {

sb_status sb_cuda_sgemm(sb_cuda_context *ctx, char transa, char transb, int64_t m, int64_t n,
                        int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                        float *c, int64_t ldc, bool continue_chain) {
    const char *fn = "sb_cuda_sgemm";
    SB_TRY(sb_cuda_enter(fn, ctx));
    if (!is_t(transa) && transa != 'N' && transa != 'n')
        return sb_fail(SB_ERR_ARG, "%s: transa = 0x%02x must be 'N', 'n', 'T' or 't'", fn,
                       (unsigned char)transa);
    if (!is_t(transb) && transb != 'N' && transb != 'n')
        return sb_fail(SB_ERR_ARG, "%s: transb = 0x%02x must be 'N', 'n', 'T' or 't'", fn,
                       (unsigned char)transb);
    if (m < 0 || n < 0 || k < 0)
        return sb_fail(SB_ERR_ARG, "%s: sizes m = %lld, n = %lld, k = %lld must be >= 0", fn,
                       (long long)m, (long long)n, (long long)k);
    bool ta = is_t(transa), tb = is_t(transb);
    int64_t acols = ta ? m : k, bcols = tb ? k : n;
    if (lda < (acols > 1 ? acols : 1))
        return sb_fail(SB_ERR_ARG, "%s: lda = %lld must be >= max(1, %lld)", fn, (long long)lda,
                       (long long)acols);
    if (ldb < (bcols > 1 ? bcols : 1))
        return sb_fail(SB_ERR_ARG, "%s: ldb = %lld must be >= max(1, %lld)", fn, (long long)ldb,
                       (long long)bcols);
    if (ldc < (n > 1 ? n : 1))
        return sb_fail(SB_ERR_ARG, "%s: ldc = %lld must be >= max(1, %lld)", fn, (long long)ldc,
                       (long long)n);
    if (m > 0 && n > 0 && !c) return sb_fail(SB_ERR_NULL, "%s: c is NULL", fn);
    if (m > 0 && n > 0 && k > 0 && (!a || !b))
        return sb_fail(SB_ERR_NULL, "%s: %s is NULL", fn, a ? "b" : "a");
    const sb_backend *be = NULL;
    SB_TRY(backend_of(fn, ctx, &be));
    return be->ops->sgemm(be, transa, transb, m, n, k, a, lda, b, ldb, c, ldc, continue_chain);
}

sb_status sb_cuda_sum_canonical(sb_cuda_context *ctx, const float *x, int64_t n, int64_t stride,
                                float *out) {
    const char *fn = "sb_cuda_sum_canonical";
    SB_TRY(sb_cuda_enter(fn, ctx));
    if (n < 0) return sb_fail(SB_ERR_ARG, "%s: n = %lld must be >= 0", fn, (long long)n);
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    if (n > 0 && !x) return sb_fail(SB_ERR_NULL, "%s: x is NULL", fn);
    const sb_backend *be = NULL;
    SB_TRY(backend_of(fn, ctx, &be));
    sb_ref_reduce_geom g = {};
    g.nred = 1;
    g.red_shape[0] = n;
    g.red_xstride[0] = stride;
    return be->ops->reduce(be, SB_REF_REDUCE_SUM, &g, x, 0, out);
}

} // extern "C"
