/* src/cuda/gemm.cu - the GEMM family on the GPU (contract section 7):
 * sgemm, linear and conv2d, forward and backward.
 *
 * The kernels are the single-source src/gpu/kernels/gemm.cl, the very text
 * the OpenCL backend runs under PoCL in make test, included once per
 * variant: the four transposes of a matrix product, conv2d's forward
 * (implicit im2col, the padded taps the contract's +0.0f terms) and its
 * weight gradient (the chain over (n, r, s)). Every output runs exactly the
 * contract's chain acc = fma(a_p, b_p, acc) for p = 0, 1, ..., K-1
 * (__fmaf_rn: no split-k, no atomics, no tensor cores); the bias is one
 * IEEE add after the chain. 64 x 64 tiles per block of 256 threads, 4 x 4
 * register tiles (gemm.cl).
 *
 * conv2d's grad_input chains have a data-dependent length ("only taps that
 * read"), so they run in a direct kernel, one output element per thread:
 * the single-source sb_conv_backward_input (src/gpu/kernels/conv.cl),
 * launched from nn.cu; its bias gradient is the canonical sum of sum.cl
 * (reduce.cu). */
#include "cuda/common.cuh"
#include "gpu/kernels/dialect.h"

/* gemm.cl once per variant, each in a namespace of its own (its helpers
 * are file-static); gemm_variant_reset.cuh clears the variant's macros
 * between inclusions. */
namespace gemm_nn {
#include "gpu/kernels/gemm.cl"
}
#include "cuda/gemm_variant_reset.cuh"
#define SB_GEMM_TB 1
namespace gemm_nt {
#include "gpu/kernels/gemm.cl"
}
#include "cuda/gemm_variant_reset.cuh"
#define SB_GEMM_TA 1
namespace gemm_tn {
#include "gpu/kernels/gemm.cl"
}
#include "cuda/gemm_variant_reset.cuh"
#define SB_GEMM_TA 1
#define SB_GEMM_TB 1
namespace gemm_tt {
#include "gpu/kernels/gemm.cl"
}
#include "cuda/gemm_variant_reset.cuh"
#define SB_GEMM_MODE 1
namespace gemm_conv_forward {
#include "gpu/kernels/gemm.cl"
}
#include "cuda/gemm_variant_reset.cuh"
#define SB_GEMM_MODE 2
namespace gemm_conv_weight {
#include "gpu/kernels/gemm.cl"
}

namespace {

typedef void (*gemm_kernel)(SB_LONG, SB_LONG, SB_LONG, const float *, SB_LONG, SB_LONG,
                            const float *, SB_LONG, SB_LONG, float *, SB_LONG, SB_LONG, int,
                            const float *, SB_LONG, int, const SB_LONG *);

/* `batch` products of M x N with chains of K: blocks (ceil(N/64),
 * ceil(M/64), batch) of 256 threads, gemm.cl's launch. cg: the conv
 * geometry on the device (modes 1 and 2), else NULL. */
sb_status launch_gemm(const char *fn, sb_cuda_context *ctx, gemm_kernel kernel, int64_t batch,
                      int64_t M, int64_t N, int64_t K, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float *c, int64_t ldc, bool cont,
                      const float *bias, const SB_LONG *cg) {
    if (batch == 0 || M == 0 || N == 0) return SB_OK;
    if ((M + SB_GEMM_BM - 1) / SB_GEMM_BM > 65535 || batch > 65535 ||
        (N + SB_GEMM_BN - 1) / SB_GEMM_BN > INT32_MAX)
        return sb_fail(SB_ERR_UNSUPPORTED, "%s: a %lld x %lld (x %lld) product is beyond this "
                       "kernel's grid", fn, (long long)M, (long long)N, (long long)batch);
    dim3 grid((unsigned)((N + SB_GEMM_BN - 1) / SB_GEMM_BN),
              (unsigned)((M + SB_GEMM_BM - 1) / SB_GEMM_BM), (unsigned)batch);
    kernel<<<grid, SB_GEMM_THREADS, 0, ctx->stream>>>(M, N, K, a, 0, lda, b, 0, ldb, c, 0, ldc,
                                                      (int)cont, bias, 0, bias != NULL, cg);
    return sb_cuda_launched(fn);
}

sb_status sgemm_any(const char *fn, sb_cuda_context *ctx, bool ta, bool tb, int64_t m, int64_t n,
                    int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                    int64_t ldc, bool cont, const float *bias) {
    gemm_kernel kernel = ta ? (tb ? gemm_tt::sb_gemm : gemm_tn::sb_gemm)
                            : (tb ? gemm_nt::sb_gemm : gemm_nn::sb_gemm);
    return launch_gemm(fn, ctx, kernel, 1, m, n, k, a, lda, b, ldb, c, ldc, cont, bias, NULL);
}

bool is_t(char t) { return t == 'T' || t == 't'; }

/* ---- conv2d ------------------------------------------------------------------ */

/* gemm.cl's conv geometry, uploaded for one launch (sb_cuda_free after). */
sb_status upload_conv_geom(sb_cuda_context *ctx, const sb_conv2d_geom *g, SB_LONG **out) {
    const int64_t v[16] = {g->n,        g->c_in,  g->h,     g->w,          g->c_out,
                           g->kh,       g->kw,    g->oh,    g->ow,         g->stride_h,
                           g->stride_w, g->pad_h, g->pad_w, g->dilation_h, g->dilation_w,
                           g->groups};
    return sb_cuda_upload_geom(ctx, v, 16, out);
}

/* A conv2d GEMM (gemm.cl mode 1 or 2) with its geometry on the device. */
sb_status conv_gemm(const char *fn, sb_cuda_context *ctx, const sb_conv2d_geom *g,
                    gemm_kernel kernel, int64_t batch, int64_t M, int64_t N, int64_t K,
                    const float *a, const float *b, float *c, const float *bias) {
    if (batch == 0 || M == 0 || N == 0) return SB_OK;
    SB_LONG *cg = NULL;
    SB_TRY(upload_conv_geom(ctx, g, &cg));
    sb_status st = launch_gemm(fn, ctx, kernel, batch, M, N, K, a, 1, b, 1, c, 1, false, bias, cg);
    sb_cuda_free(ctx, cg); /* stream-ordered: freed after the kernel ran */
    return st;
}

sb_status check_geom(const char *fn, const sb_conv2d_geom *g) {
    if (!g) return sb_fail(SB_ERR_NULL, "%s: geometry is NULL", fn);
    if (g->n < 0 || g->c_in < 1 || g->c_out < 1 || g->h < 1 || g->w < 1 || g->kh < 1 ||
        g->kw < 1 || g->oh < 0 || g->ow < 0 || g->stride_h < 1 || g->stride_w < 1 ||
        g->pad_h < 0 || g->pad_w < 0 || g->dilation_h < 1 || g->dilation_w < 1 ||
        g->groups < 1 || g->c_in % g->groups || g->c_out % g->groups)
        return sb_fail(SB_ERR_ARG, "%s: invalid conv2d geometry", fn);
    return SB_OK;
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
    return sgemm_any(fn, ctx, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, continue_chain, NULL);
}

sb_status sb_cuda_linear_forward_raw(sb_cuda_context *ctx, int64_t R, int64_t in, int64_t out,
                                     const float *x, const float *w, const float *bias,
                                     float *y) {
    const char *fn = "sb_cuda_linear_forward";
    SB_TRY(sb_cuda_enter(fn, ctx));
    /* y[r][o] = chain over i of (x[r][i], w[o][i]), then + bias[o] */
    return sgemm_any(fn, ctx, false, true, R, out, in, x, in > 1 ? in : 1, w, in > 1 ? in : 1, y,
                     out > 1 ? out : 1, false, bias);
}

sb_status sb_cuda_linear_backward_raw(sb_cuda_context *ctx, int64_t R, int64_t in, int64_t out,
                                      const float *dy, const float *x, const float *w, float *dx,
                                      float *dw, float *db) {
    const char *fn = "sb_cuda_linear_backward";
    SB_TRY(sb_cuda_enter(fn, ctx));
    int64_t ldi = in > 1 ? in : 1, ldo = out > 1 ? out : 1;
    if (dx) /* dx = dy . w: chain over o */
        SB_TRY(sgemm_any(fn, ctx, false, false, R, in, out, dy, ldo, w, ldi, dx, ldi, false, NULL));
    if (dw) /* dw = dy^T . x: chain over r */
        SB_TRY(sgemm_any(fn, ctx, true, false, out, in, R, dy, ldo, x, ldi, dw, ldi, false, NULL));
    if (db) SB_TRY(sb_cuda_sum_rows(ctx, dy, out, R, 1, out, db, 1));
    return SB_OK;
}

sb_status sb_cuda_conv2d_forward_raw(sb_cuda_context *ctx, const sb_conv2d_geom *g,
                                     const float *x, const float *w, const float *bias,
                                     float *y) {
    const char *fn = "sb_cuda_conv2d_forward";
    SB_TRY(sb_cuda_enter(fn, ctx));
    SB_TRY(check_geom(fn, g));
    int64_t ocg = g->c_out / g->groups, kdim = g->c_in / g->groups * g->kh * g->kw;
    /* batch z = n*G + g: Y_z (ocg x OH*OW) = W_g (ocg x kdim) . im2col */
    return conv_gemm(fn, ctx, g, gemm_conv_forward::sb_gemm, g->n * g->groups, ocg, g->oh * g->ow,
                     kdim, w, x, y, bias);
}

sb_status sb_cuda_conv2d_backward_weight_raw(sb_cuda_context *ctx, const sb_conv2d_geom *g,
                                             const float *dy, const float *x, float *dw) {
    const char *fn = "sb_cuda_conv2d_backward_weight";
    SB_TRY(sb_cuda_enter(fn, ctx));
    SB_TRY(check_geom(fn, g));
    int64_t ocg = g->c_out / g->groups, kdim = g->c_in / g->groups * g->kh * g->kw;
    /* batch z = g: dW_g (ocg x kdim) = dY_g (ocg x N*OH*OW) . im2col^T */
    return conv_gemm(fn, ctx, g, gemm_conv_weight::sb_gemm, g->groups, ocg, kdim,
                     g->n * g->oh * g->ow, dy, x, dw, NULL);
}

sb_status sb_cuda_conv2d_backward_bias_raw(sb_cuda_context *ctx, const sb_conv2d_geom *g,
                                           const float *dy, float *db) {
    const char *fn = "sb_cuda_conv2d_backward_bias";
    SB_TRY(sb_cuda_enter(fn, ctx));
    SB_TRY(check_geom(fn, g));
    /* db[o] = canonical sum over (n, r, s) of dy[n][o][r][s] (sum.cl) */
    int64_t ohw = g->oh * g->ow;
    const int64_t keep_shape[1] = {g->c_out}, keep_x[1] = {ohw}, keep_out[1] = {1};
    const int64_t red_shape[2] = {g->n, ohw}, red_x[2] = {g->c_out * ohw, 1};
    return sb_cuda_sum_strided(ctx, dy, 1, keep_shape, keep_x, keep_out, 2, red_shape, red_x, db);
}

} // extern "C"
