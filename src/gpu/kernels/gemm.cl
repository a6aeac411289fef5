/* src/gpu/kernels/gemm.cl - SGEMM (contract section 7) in the portable
 * dialect: C (M x N) = op(A) (M x K) . op(B) (K x N), every output the
 * contract's chain acc = fma(op(A)[i][p], op(B)[p][j], acc) for
 * p = 0, 1, ..., K-1, starting from +0.0f or, with cont, from C's value;
 * an optional bias[j] is added after the chain (one IEEE addition: linear).
 *
 * Variants are built with -D options (one program each):
 *   SB_GEMM_TA, SB_GEMM_TB  0 or 1: op(A) = A^T, op(B) = B^T
 *   SB_GEMM_NAME            the kernel's name (CUDA includes the file once
 *                           per variant)
 *
 * Register tiles as in the CUDA design: a 64 x 64 tile of C per work-group
 * of 256 work-items, each owning a 4 x 4 register tile (rows ty + 16u,
 * columns tx + 16v); k is walked in order, BK = 8 at a time through local
 * memory. Slots past K are loaded as 0 but never enter a chain: the inner
 * loop stops at the real K (a fma with 0*0 would turn -0 into +0). No
 * split-k, no atomics. Launch: groups (ceil(N/64), ceil(M/64)) of 256. */

#ifndef SB_GEMM_TA
#define SB_GEMM_TA 0
#endif
#ifndef SB_GEMM_TB
#define SB_GEMM_TB 0
#endif
#ifndef SB_GEMM_NAME
#define SB_GEMM_NAME sb_gemm
#endif

#define SB_GEMM_BM 64
#define SB_GEMM_BN 64
#define SB_GEMM_BK 8
#define SB_GEMM_TM 4
#define SB_GEMM_TN 4
#define SB_GEMM_THREADS 256

SB_KERNEL SB_GEMM_NAME(SB_I64 M, SB_I64 N, SB_I64 K, SB_GLOBAL const float *A, SB_I64 a0,
                       SB_I64 lda, SB_GLOBAL const float *B, SB_I64 b0, SB_I64 ldb,
                       SB_GLOBAL float *C, SB_I64 c0, SB_I64 ldc, int cont,
                       SB_GLOBAL const float *bias, SB_I64 bias0, int has_bias) {
    SB_LOCAL_ARRAY(float, As, SB_GEMM_BK * SB_GEMM_BM); /* As[p][i] */
    SB_LOCAL_ARRAY(float, Bs, SB_GEMM_BK * SB_GEMM_BN); /* Bs[p][j] */
    const int tid = SB_LOCAL_ID();
    const int tx = tid % 16, ty = tid / 16;
    const SB_I64 j0 = SB_GROUP_ID(0) * SB_GEMM_BN, i0 = SB_GROUP_ID(1) * SB_GEMM_BM;

    float acc[SB_GEMM_TM][SB_GEMM_TN];
    for (int u = 0; u < SB_GEMM_TM; u++)
        for (int v = 0; v < SB_GEMM_TN; v++) {
            SB_I64 gi = i0 + ty + 16 * u, gj = j0 + tx + 16 * v;
            acc[u][v] = (cont && gi < M && gj < N) ? C[c0 + gi * ldc + gj] : 0.0f;
        }

    for (SB_I64 k0 = 0; k0 < K; k0 += SB_GEMM_BK) {
        /* 512 slots of each operand tile, two per work-item; the mapping
         * follows the contiguous direction of memory. */
        for (int r = 0; r < 2; r++) {
            int e = tid + r * SB_GEMM_THREADS;
            int p = SB_GEMM_TA ? e / SB_GEMM_BM : e % SB_GEMM_BK;
            int i = SB_GEMM_TA ? e % SB_GEMM_BM : e / SB_GEMM_BK;
            SB_I64 gi = i0 + i, gp = k0 + p;
            float va = 0.0f;
            if (gi < M && gp < K) va = SB_GEMM_TA ? A[a0 + gp * lda + gi] : A[a0 + gi * lda + gp];
            As[p * SB_GEMM_BM + i] = va;
            int j = SB_GEMM_TB ? e / SB_GEMM_BK : e % SB_GEMM_BN;
            int q = SB_GEMM_TB ? e % SB_GEMM_BK : e / SB_GEMM_BN;
            SB_I64 gj = j0 + j, gq = k0 + q;
            float vb = 0.0f;
            if (gj < N && gq < K) vb = SB_GEMM_TB ? B[b0 + gj * ldb + gq] : B[b0 + gq * ldb + gj];
            Bs[q * SB_GEMM_BN + j] = vb;
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
            SB_I64 gi = i0 + ty + 16 * u, gj = j0 + tx + 16 * v;
            if (gi < M && gj < N)
                C[c0 + gi * ldc + gj] = has_bias ? acc[u][v] + bias[bias0 + gj] : acc[u][v];
        }
}
