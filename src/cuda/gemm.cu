/* src/cuda/gemm.cu - the GEMM family on the GPU (contract section 7):
 * sgemm, linear and conv2d, forward and backward.
 *
 * One tiled kernel serves them all. Each thread owns a TM x TN register
 * tile of outputs; the k dimension is walked in order, tile by tile, and
 * every output runs exactly the contract's chain acc = fmaf(a_p, b_p, acc)
 * for p = 0, 1, ..., K-1 with __fmaf_rn (no split-k, no atomics, no tensor
 * cores). Out-of-range operand slots are loaded as 0 but never enter a
 * chain: the inner loop stops at the real K (a fmaf with 0*0 would turn a
 * -0 accumulator into +0). Operands are read through loader functors, so
 * conv2d's im2col is implicit (the padded taps are the +0.0f terms the
 * contract requires) and transposes cost nothing.
 *
 * conv2d's grad_input chains have a data-dependent length ("only taps that
 * read"), so they run in a direct kernel, one output element per thread:
 * the single-source sb_conv_backward_input (src/gpu/kernels/conv.cl),
 * launched from nn.cu. */
#include "cuda/common.cuh"

namespace {

constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int THREADS = (BM / TM) * (BN / TN); /* 256 */
constexpr int A_PER = BM * BK / THREADS;       /* 4 */
constexpr int B_PER = BK * BN / THREADS;       /* 4 */

/* LA: float operator()(z, i, p) = op(A)[i][p] of batch z; static constexpr
 *     bool k_contig says consecutive p are adjacent in memory (picks the
 *     coalesced load mapping).
 * LB: float operator()(z, p, j) = op(B)[p][j]; j_contig likewise.
 * EP: float start(z, i, j) (+0.0f or C's value), void store(z, i, j, acc). */
template <class LA, class LB, class EP>
__global__ void __launch_bounds__(THREADS)
chain_gemm(int64_t M, int64_t N, int64_t K, LA la, LB lb, EP ep) {
    __shared__ float As[2][BK][BM];
    __shared__ float Bs[2][BK][BN];
    const int tid = threadIdx.x;
    const int tx = tid % (BN / TN), ty = tid / (BN / TN);
    const int64_t z = blockIdx.z;
    const int64_t i0 = (int64_t)blockIdx.y * BM, j0 = (int64_t)blockIdx.x * BN;

    float ra[A_PER], rb[B_PER];
    auto fetch = [&](int64_t k0) {
        for (int r = 0; r < A_PER; r++) {
            int e = tid + r * THREADS;
            int p = LA::k_contig ? e % BK : e / BM;
            int i = LA::k_contig ? e / BK : e % BM;
            int64_t gi = i0 + i, gp = k0 + p;
            ra[r] = (gi < M && gp < K) ? la(z, gi, gp) : 0.0f;
        }
        for (int r = 0; r < B_PER; r++) {
            int e = tid + r * THREADS;
            int j = LB::j_contig ? e % BN : e / BK;
            int p = LB::j_contig ? e / BN : e % BK;
            int64_t gj = j0 + j, gp = k0 + p;
            rb[r] = (gj < N && gp < K) ? lb(z, gp, gj) : 0.0f;
        }
    };
    auto stash = [&](int buf) {
        for (int r = 0; r < A_PER; r++) {
            int e = tid + r * THREADS;
            int p = LA::k_contig ? e % BK : e / BM;
            int i = LA::k_contig ? e / BK : e % BM;
            As[buf][p][i] = ra[r];
        }
        for (int r = 0; r < B_PER; r++) {
            int e = tid + r * THREADS;
            int j = LB::j_contig ? e % BN : e / BK;
            int p = LB::j_contig ? e / BN : e % BK;
            Bs[buf][p][j] = rb[r];
        }
    };

    /* Rows ty + 16*u and columns tx + 16*v: neighbouring threads read
     * neighbouring shared words (no bank conflicts) and store coalesced. */
    float acc[TM][TN];
    for (int u = 0; u < TM; u++)
        for (int v = 0; v < TN; v++) {
            int64_t gi = i0 + ty + 16 * u, gj = j0 + tx + 16 * v;
            acc[u][v] = (gi < M && gj < N) ? ep.start(z, gi, gj) : 0.0f;
        }

    if (K > 0) {
        fetch(0);
        stash(0);
        __syncthreads();
        int buf = 0;
        for (int64_t k0 = 0; k0 < K; k0 += BK) {
            const bool more = k0 + BK < K;
            if (more) fetch(k0 + BK); /* global loads overlap the FMAs below */
            const int kmax = K - k0 < BK ? (int)(K - k0) : BK;
#pragma unroll
            for (int kk = 0; kk < BK; kk++) {
                if (kk < kmax) {
                    float a[TM], b[TN];
#pragma unroll
                    for (int u = 0; u < TM; u++) a[u] = As[buf][kk][ty + 16 * u];
#pragma unroll
                    for (int v = 0; v < TN; v++) b[v] = Bs[buf][kk][tx + 16 * v];
#pragma unroll
                    for (int u = 0; u < TM; u++)
#pragma unroll
                        for (int v = 0; v < TN; v++) acc[u][v] = __fmaf_rn(a[u], b[v], acc[u][v]);
                }
            }
            if (more) {
                stash(buf ^ 1);
                __syncthreads();
                buf ^= 1;
            }
        }
    }
    for (int u = 0; u < TM; u++)
        for (int v = 0; v < TN; v++) {
            int64_t gi = i0 + ty + 16 * u, gj = j0 + tx + 16 * v;
            if (gi < M && gj < N) ep.store(z, gi, gj, acc[u][v]);
        }
}

template <class LA, class LB, class EP>
sb_status launch_chain(const char *fn, sb_cuda_context *ctx, int64_t batch, int64_t M, int64_t N,
                       int64_t K, LA la, LB lb, EP ep) {
    if (batch == 0 || M == 0 || N == 0) return SB_OK;
    if ((M + BM - 1) / BM > 65535 || batch > 65535 || (N + BN - 1) / BN > INT32_MAX)
        return sb_fail(SB_ERR_UNSUPPORTED, "%s: a %lld x %lld (x %lld) product is beyond this "
                       "kernel's grid", fn, (long long)M, (long long)N, (long long)batch);
    dim3 grid((unsigned)((N + BN - 1) / BN), (unsigned)((M + BM - 1) / BM), (unsigned)batch);
    chain_gemm<<<grid, THREADS, 0, ctx->stream>>>(M, N, K, la, lb, ep);
    return sb_cuda_launched(fn);
}

/* ---- sgemm ------------------------------------------------------------------ */

template <bool T> struct MatA {
    static constexpr bool k_contig = !T;
    const float *a;
    int64_t lda;
    __device__ float operator()(int64_t, int64_t i, int64_t p) const {
        return T ? a[p * lda + i] : a[i * lda + p];
    }
};
template <bool T> struct MatB {
    static constexpr bool j_contig = !T;
    const float *b;
    int64_t ldb;
    __device__ float operator()(int64_t, int64_t p, int64_t j) const {
        return T ? b[j * ldb + p] : b[p * ldb + j];
    }
};
struct StoreC {
    float *c;
    int64_t ldc;
    bool cont;
    const float *bias; /* added after the chain, one IEEE add */
    __device__ float start(int64_t, int64_t i, int64_t j) const {
        return cont ? c[i * ldc + j] : 0.0f;
    }
    __device__ void store(int64_t, int64_t i, int64_t j, float acc) const {
        c[i * ldc + j] = bias ? __fadd_rn(acc, bias[j]) : acc;
    }
};

template <bool TA, bool TB>
sb_status sgemm_t(const char *fn, sb_cuda_context *ctx, int64_t m, int64_t n, int64_t k,
                  const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
                  bool cont, const float *bias) {
    return launch_chain(fn, ctx, 1, m, n, k, MatA<TA>{a, lda}, MatB<TB>{b, ldb},
                        StoreC{c, ldc, cont, bias});
}

sb_status sgemm_any(const char *fn, sb_cuda_context *ctx, bool ta, bool tb, int64_t m, int64_t n,
                    int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                    int64_t ldc, bool cont, const float *bias) {
    if (ta) {
        if (tb) return sgemm_t<true, true>(fn, ctx, m, n, k, a, lda, b, ldb, c, ldc, cont, bias);
        return sgemm_t<true, false>(fn, ctx, m, n, k, a, lda, b, ldb, c, ldc, cont, bias);
    }
    if (tb) return sgemm_t<false, true>(fn, ctx, m, n, k, a, lda, b, ldb, c, ldc, cont, bias);
    return sgemm_t<false, false>(fn, ctx, m, n, k, a, lda, b, ldb, c, ldc, cont, bias);
}

bool is_t(char t) { return t == 'T' || t == 't'; }

/* ---- conv2d ------------------------------------------------------------------ */

struct ConvGeom { /* the ref geometry with the derived sizes precomputed */
    int64_t n, c_in, h, w, c_out, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, groups;
    int64_t icg, ocg, taps, kdim, ohw;
};

ConvGeom conv_geom(const sb_conv2d_geom *g) {
    ConvGeom c;
    c.n = g->n; c.c_in = g->c_in; c.h = g->h; c.w = g->w; c.c_out = g->c_out;
    c.kh = g->kh; c.kw = g->kw; c.oh = g->oh; c.ow = g->ow;
    c.sh = g->stride_h; c.sw = g->stride_w; c.ph = g->pad_h; c.pw = g->pad_w;
    c.dh = g->dilation_h; c.dw = g->dilation_w; c.groups = g->groups;
    c.icg = g->c_in / g->groups; c.ocg = g->c_out / g->groups;
    c.taps = c.kh * c.kw; c.kdim = c.icg * c.taps; c.ohw = c.oh * c.ow;
    return c;
}

/* x_pad[n][ch][ih][iw]: +0.0f outside the input (padded taps are terms). */
__device__ __forceinline__ float x_pad(const ConvGeom &g, const float *x, int64_t n, int64_t ch,
                                       int64_t ih, int64_t iw) {
    if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) return 0.0f;
    return x[((n * g.c_in + ch) * g.h + ih) * g.w + iw];
}

/* The im2col element of tap column p = (c, i, j) and output position q. */
__device__ __forceinline__ float im2col(const ConvGeom &g, const float *x, int64_t n, int64_t ch0,
                                        int64_t p, int64_t q) {
    int64_t c = p / g.taps, t = p % g.taps, i = t / g.kw, j = t % g.kw;
    int64_t r = q / g.ow, s = q % g.ow;
    return x_pad(g, x, n, ch0 + c, r * g.sh - g.ph + i * g.dh, s * g.sw - g.pw + j * g.dw);
}

/* Forward, batch z = n*G + g: Y_z (ocg x OH*OW) = W_g (ocg x kdim) . im2col. */
struct FwdW {
    static constexpr bool k_contig = true;
    ConvGeom g; const float *w;
    __device__ float operator()(int64_t z, int64_t i, int64_t p) const {
        return w[((z % g.groups) * g.ocg + i) * g.kdim + p];
    }
};
struct FwdX {
    static constexpr bool j_contig = true;
    ConvGeom g; const float *x;
    __device__ float operator()(int64_t z, int64_t p, int64_t q) const {
        return im2col(g, x, z / g.groups, (z % g.groups) * g.icg, p, q);
    }
};
struct FwdY {
    ConvGeom g; float *y; const float *bias;
    __device__ float start(int64_t, int64_t, int64_t) const { return 0.0f; }
    __device__ void store(int64_t z, int64_t i, int64_t q, float acc) const {
        int64_t oc = (z % g.groups) * g.ocg + i;
        y[((z / g.groups) * g.c_out + oc) * g.ohw + q] = bias ? __fadd_rn(acc, bias[oc]) : acc;
    }
};

/* grad_weight, batch z = g: dW_g (ocg x kdim) = dY_g (ocg x N*OH*OW) .
 * im2col^T, the chain running over (n, r, s) lexicographically. */
struct WgtDy {
    static constexpr bool k_contig = true;
    ConvGeom g; const float *dy;
    __device__ float operator()(int64_t z, int64_t i, int64_t p) const {
        int64_t n = p / g.ohw, q = p % g.ohw;
        return dy[(n * g.c_out + z * g.ocg + i) * g.ohw + q];
    }
};
struct WgtX {
    static constexpr bool j_contig = false;
    ConvGeom g; const float *x;
    __device__ float operator()(int64_t z, int64_t p, int64_t col) const {
        return im2col(g, x, p / g.ohw, z * g.icg, col, p % g.ohw);
    }
};
struct WgtOut {
    ConvGeom g; float *dw;
    __device__ float start(int64_t, int64_t, int64_t) const { return 0.0f; }
    __device__ void store(int64_t z, int64_t i, int64_t col, float acc) const {
        dw[(z * g.ocg + i) * g.kdim + col] = acc;
    }
};

/* db[o]: canonical sum over (n, r, s) of dy[n][o][r][s], one warp per o. */
__global__ void conv_bwd_bias(ConvGeom g, const float *dy, float *db) {
    int64_t o = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (o >= g.c_out) return; /* whole warps leave together */
    int64_t ohw = g.ohw, cout = g.c_out;
    float s = sb_warp_canonical_sum(
        [=](int64_t e) { return dy[((e / ohw) * cout + o) * ohw + e % ohw]; },
        g.n * ohw);
    if ((threadIdx.x & 31) == 0) db[o] = s;
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
    ConvGeom c = conv_geom(g);
    return launch_chain(fn, ctx, c.n * c.groups, c.ocg, c.ohw, c.kdim, FwdW{c, w}, FwdX{c, x},
                        FwdY{c, y, bias});
}

sb_status sb_cuda_conv2d_backward_weight_raw(sb_cuda_context *ctx, const sb_conv2d_geom *g,
                                             const float *dy, const float *x, float *dw) {
    const char *fn = "sb_cuda_conv2d_backward_weight";
    SB_TRY(sb_cuda_enter(fn, ctx));
    SB_TRY(check_geom(fn, g));
    ConvGeom c = conv_geom(g);
    return launch_chain(fn, ctx, c.groups, c.ocg, c.kdim, c.n * c.ohw, WgtDy{c, dy}, WgtX{c, x},
                        WgtOut{c, dw});
}

sb_status sb_cuda_conv2d_backward_bias_raw(sb_cuda_context *ctx, const sb_conv2d_geom *g,
                                           const float *dy, float *db) {
    const char *fn = "sb_cuda_conv2d_backward_bias";
    SB_TRY(sb_cuda_enter(fn, ctx));
    SB_TRY(check_geom(fn, g));
    ConvGeom c = conv_geom(g);
    int64_t threads = c.c_out * 32;
    conv_bwd_bias<<<(unsigned)((threads + 255) / 256), 256, 0, ctx->stream>>>(c, dy, db);
    return sb_cuda_launched(fn);
}

} // extern "C"
