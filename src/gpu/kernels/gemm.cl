/* src/gpu/kernels/gemm.cl - SGEMM (contract section 7) in the portable
 * dialect: C (M x N) = op(A) (M x K) . op(B) (K x N), every output the
 * contract's chain acc = fma(op(A)[i][p], op(B)[p][j], acc) for
 * p = 0, 1, ..., K-1, starting from +0.0f or, with cont, from C's value;
 * an optional bias[j] is added after the chain (one IEEE addition: linear).
 *
 * Variants are built with -D options (one program each):
 *   SB_GEMM_MODE            0: matrices; 1: conv2d forward; 2: conv2d's
 *                           weight gradient (the operands are read through
 *                           the conv geometry: im2col is implicit, padded
 *                           taps being the contract's +0.0f terms)
 *   SB_GEMM_TA, SB_GEMM_TB  mode 0: 0 or 1, op(A) = A^T, op(B) = B^T
 *   SB_GEMM_NAME            the kernel's name (CUDA includes the file once
 *                           per variant)
 *
 * Register tiles as in the CUDA design: a 64 x 64 tile of C per work-group
 * of 256 work-items, each owning a 4 x 4 register tile (rows ty + 16u,
 * columns tx + 16v); k is walked in order, BK = 8 at a time through local
 * memory. Slots past K are loaded as 0 but never enter a chain: the inner
 * loop stops at the real K (a fma with 0*0 would turn -0 into +0). No
 * split-k, no atomics. Launch: groups (ceil(N/64), ceil(M/64), batch) of
 * 256; batch z is group dimension 2.
 *
 * Conv geometry `cg` (longs): n, c_in, h, w, c_out, kh, kw, oh, ow,
 * stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups.
 *   mode 1, z = n*groups + g: Y_z (ocg x oh*ow) = W_g (ocg x kdim) . im2col,
 *           A = weight, B = x, C = y, bias[oc] after the chain;
 *   mode 2, z = g: dW_g (ocg x kdim) = dY_g (ocg x n*oh*ow) . im2col^T, the
 *           chain over (n, r, s) in order; A = dy, B = x, C = dweight. */

#ifndef SB_GEMM_MODE
#define SB_GEMM_MODE 0
#endif
#ifndef SB_GEMM_TA
#define SB_GEMM_TA 0
#endif
#ifndef SB_GEMM_TB
#define SB_GEMM_TB 0
#endif
#ifndef SB_GEMM_NAME
#define SB_GEMM_NAME sb_gemm
#endif

/* x_pad[n][ch][ih][iw] of im2col tap column p = (c, i, j), output q. */
SB_INLINE float sb_gemm_im2col(SB_GLOBAL const SB_LONG *cg, SB_GLOBAL const float *x, SB_LONG x0,
                               SB_LONG n, SB_LONG ch0, SB_LONG p, SB_LONG q) {
    const SB_LONG taps = cg[5] * cg[6];
    SB_LONG c = p / taps, t = p % taps, i = t / cg[6], j = t % cg[6];
    SB_LONG r = q / cg[8], s = q % cg[8];
    SB_LONG ih = r * cg[9] - cg[11] + i * cg[13], iw = s * cg[10] - cg[12] + j * cg[14];
    if (ih < 0 || ih >= cg[2] || iw < 0 || iw >= cg[3]) return 0.0f;
    return x[x0 + (((n * cg[1] + ch0 + c) * cg[2] + ih) * cg[3] + iw)];
}

#if SB_GEMM_MODE == 0
#define SB_GEMM_A_KCONTIG (!SB_GEMM_TA)
#define SB_GEMM_B_JCONTIG (!SB_GEMM_TB)
#define SB_GEMM_LOAD_A(z, i, p) (SB_GEMM_TA ? A[a0 + (p) * lda + (i)] : A[a0 + (i) * lda + (p)])
#define SB_GEMM_LOAD_B(z, p, j) (SB_GEMM_TB ? B[b0 + (j) * ldb + (p)] : B[b0 + (p) * ldb + (j)])
#define SB_GEMM_START(z, i, j) (cont ? C[c0 + (i) * ldc + (j)] : 0.0f)
#define SB_GEMM_STORE(z, i, j, v) \
    C[c0 + (i) * ldc + (j)] = has_bias ? (v) + bias[bias0 + (j)] : (v)
#elif SB_GEMM_MODE == 1
#define SB_GEMM_A_KCONTIG 1
#define SB_GEMM_B_JCONTIG 1
#define SB_GEMM_LOAD_A(z, i, p) A[a0 + (((z) % cg[15]) * ocg + (i)) * K + (p)]
#define SB_GEMM_LOAD_B(z, p, q) \
    sb_gemm_im2col(cg, B, b0, (z) / cg[15], ((z) % cg[15]) * icg, (p), (q))
#define SB_GEMM_START(z, i, j) 0.0f
#define SB_GEMM_STORE(z, i, q, v)                                                     \
    do {                                                                              \
        SB_LONG oc_ = ((z) % cg[15]) * ocg + (i);                                      \
        C[c0 + (((z) / cg[15]) * cg[4] + oc_) * N + (q)] =                            \
            has_bias ? (v) + bias[bias0 + oc_] : (v);                                 \
    } while (0)
#else
#define SB_GEMM_A_KCONTIG 1
#define SB_GEMM_B_JCONTIG 0
#define SB_GEMM_LOAD_A(z, i, p) \
    A[a0 + (((p) / ohw) * cg[4] + (z) * ocg + (i)) * ohw + (p) % ohw]
#define SB_GEMM_LOAD_B(z, p, col) \
    sb_gemm_im2col(cg, B, b0, (p) / ohw, (z) * icg, (col), (p) % ohw)
#define SB_GEMM_START(z, i, j) 0.0f
#define SB_GEMM_STORE(z, i, col, v) C[c0 + ((z) * ocg + (i)) * N + (col)] = (v)
#endif

#define SB_GEMM_BM 64
#define SB_GEMM_BN 64
#define SB_GEMM_BK 8
#define SB_GEMM_TM 4
#define SB_GEMM_TN 4
#define SB_GEMM_THREADS 256

SB_KERNEL SB_GEMM_NAME(SB_LONG M, SB_LONG N, SB_LONG K, SB_GLOBAL const float *A, SB_LONG a0,
                       SB_LONG lda, SB_GLOBAL const float *B, SB_LONG b0, SB_LONG ldb,
                       SB_GLOBAL float *C, SB_LONG c0, SB_LONG ldc, int cont,
                       SB_GLOBAL const float *bias, SB_LONG bias0, int has_bias,
                       SB_GLOBAL const SB_LONG *cg) {
    SB_LOCAL_ARRAY(float, As, SB_GEMM_BK * SB_GEMM_BM); /* As[p][i] */
    SB_LOCAL_ARRAY(float, Bs, SB_GEMM_BK * SB_GEMM_BN); /* Bs[p][j] */
    const int tid = SB_LOCAL_ID();
    const int tx = tid % 16, ty = tid / 16;
    const SB_LONG j0 = SB_GROUP_ID(0) * SB_GEMM_BN, i0 = SB_GROUP_ID(1) * SB_GEMM_BM;
    const SB_LONG z = SB_GROUP_ID(2);
#if SB_GEMM_MODE != 0
    const SB_LONG icg = cg[1] / cg[15], ocg = cg[4] / cg[15], ohw = cg[7] * cg[8];
    (void)icg; (void)ohw;
#endif
    (void)lda; (void)ldb; (void)ldc; (void)cont; (void)z;

    float acc[SB_GEMM_TM][SB_GEMM_TN];
    for (int u = 0; u < SB_GEMM_TM; u++)
        for (int v = 0; v < SB_GEMM_TN; v++) {
            SB_LONG gi = i0 + ty + 16 * u, gj = j0 + tx + 16 * v;
            acc[u][v] = (gi < M && gj < N) ? SB_GEMM_START(z, gi, gj) : 0.0f;
        }

    for (SB_LONG k0 = 0; k0 < K; k0 += SB_GEMM_BK) {
        /* 512 slots of each operand tile, two per work-item; the mapping
         * follows the contiguous direction of memory. */
        for (int r = 0; r < 2; r++) {
            int e = tid + r * SB_GEMM_THREADS;
            int p = SB_GEMM_A_KCONTIG ? e % SB_GEMM_BK : e / SB_GEMM_BM;
            int i = SB_GEMM_A_KCONTIG ? e / SB_GEMM_BK : e % SB_GEMM_BM;
            SB_LONG gi = i0 + i, gp = k0 + p;
            As[p * SB_GEMM_BM + i] = (gi < M && gp < K) ? SB_GEMM_LOAD_A(z, gi, gp) : 0.0f;
            int j = SB_GEMM_B_JCONTIG ? e % SB_GEMM_BN : e / SB_GEMM_BK;
            int q = SB_GEMM_B_JCONTIG ? e / SB_GEMM_BN : e % SB_GEMM_BK;
            SB_LONG gj = j0 + j, gq = k0 + q;
            Bs[q * SB_GEMM_BN + j] = (gj < N && gq < K) ? SB_GEMM_LOAD_B(z, gq, gj) : 0.0f;
        }
        SB_BARRIER();
        const int kmax = K - k0 < SB_GEMM_BK ? (int)(K - k0) : SB_GEMM_BK;
        for (int kk = 0; kk < kmax; kk++) {
            float a[SB_GEMM_TM], b[SB_GEMM_TN];
            for (int u = 0; u < SB_GEMM_TM; u++) a[u] = As[kk * SB_GEMM_BM + ty + 16 * u];
            for (int v = 0; v < SB_GEMM_TN; v++) b[v] = Bs[kk * SB_GEMM_BN + tx + 16 * v];
            for (int u = 0; u < SB_GEMM_TM; u++)
                for (int v = 0; v < SB_GEMM_TN; v++) acc[u][v] = SB_FMA(a[u], b[v], acc[u][v]);
        }
        SB_BARRIER();
    }

    for (int u = 0; u < SB_GEMM_TM; u++)
        for (int v = 0; v < SB_GEMM_TN; v++) {
            SB_LONG gi = i0 + ty + 16 * u, gj = j0 + tx + 16 * v;
            if (gi < M && gj < N) SB_GEMM_STORE(z, gi, gj, acc[u][v]);
        }
}
