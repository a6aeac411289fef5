/* src/cpu/gemm_flex.h - the flexible GEMM micro-kernel, written once for
 * every ISA file that has masked vector loads and stores (gemm_avx512.c,
 * gemm_avx2.c). Not installed; include it only from such a file, after
 * defining:
 *
 *   FLEX_ISA             the suffix of the generated names (avx512, avx2)
 *   FLEX_VEC             the float vector type, FLEX_W its lanes
 *   FLEX_MASK            the lane-mask type
 *   FLEX_MASK_FIRST(n)   a mask of the first n lanes (0 <= n <= FLEX_W)
 *   FLEX_LOADM(m, p)     masked load (masked-off lanes read nothing, are 0)
 *   FLEX_STOREM(m, p, v) masked store
 *   FLEX_ZERO(), FLEX_SET1(x), FLEX_FMA(a, b, c) = a*b + c rounded once
 *
 * A kernel computes an MR x (2*FLEX_W) tile of C in place at `rows` x
 * `cols` (rows <= MR, cols <= 2*FLEX_W): every lane runs its own chain
 *     acc = load_c ? C[i][j] : +0.0f;  acc = fma(A[i][p], B[p][j], acc), p = 0..kc-1
 * (the contract's chain step, in p order), reading A from a packed panel
 * (MR values per k step) and B row p at b + p*bstride ("flex") or at
 * b + boff[p] ("offset": the implicit GEMM of stride-1 convolutions). Only
 * the first `rows` rows and `cols` columns of C are loaded and stored, so
 * edge tiles need no padded copy; masked loads let a B row end anywhere.
 * With cols <= FLEX_W the second vector of columns is not computed at all. */
#ifndef SB_CPU_GEMM_FLEX_H
#define SB_CPU_GEMM_FLEX_H

#define FLEX_CAT_(a, b, c) a##b##c
#define FLEX_CAT(a, b, c) FLEX_CAT_(a, b, c)

static inline __attribute__((always_inline)) void
flex_body(int mrf, int64_t kc, const float *a, const float *b, int64_t bstride,
          const int64_t *boff, float *c, int64_t ldc, bool load_c, int rows, int cols) {
    FLEX_MASK m0 = FLEX_MASK_FIRST(cols < FLEX_W ? cols : FLEX_W);
    FLEX_MASK m1 = FLEX_MASK_FIRST(cols > FLEX_W ? cols - FLEX_W : 0);
    bool two = cols > FLEX_W;
    FLEX_VEC acc0[12], acc1[12];
    _Pragma("GCC unroll 12") for (int r = 0; r < mrf; r++) {
        acc0[r] = load_c && r < rows ? FLEX_LOADM(m0, c + r * ldc) : FLEX_ZERO();
        acc1[r] = load_c && r < rows && two ? FLEX_LOADM(m1, c + r * ldc + FLEX_W) : FLEX_ZERO();
    }
    if (two) {
        for (int64_t p = 0; p < kc; p++, a += mrf) {
            const float *bp = boff ? b + boff[p] : b + p * bstride;
            FLEX_VEC b0 = FLEX_LOADM(m0, bp), b1 = FLEX_LOADM(m1, bp + FLEX_W);
            _Pragma("GCC unroll 12") for (int r = 0; r < mrf; r++) {
                FLEX_VEC ar = FLEX_SET1(a[r]);
                acc0[r] = FLEX_FMA(ar, b0, acc0[r]);
                acc1[r] = FLEX_FMA(ar, b1, acc1[r]);
            }
        }
    } else {
        for (int64_t p = 0; p < kc; p++, a += mrf) {
            const float *bp = boff ? b + boff[p] : b + p * bstride;
            FLEX_VEC b0 = FLEX_LOADM(m0, bp);
            _Pragma("GCC unroll 12") for (int r = 0; r < mrf; r++)
                acc0[r] = FLEX_FMA(FLEX_SET1(a[r]), b0, acc0[r]);
        }
    }
    _Pragma("GCC unroll 12") for (int r = 0; r < mrf; r++) {
        if (r >= rows) continue;
        FLEX_STOREM(m0, c + r * ldc, acc0[r]);
        if (two) FLEX_STOREM(m1, c + r * ldc + FLEX_W, acc1[r]);
    }
}

/* The two entry points of one row count (declared in gemm_internal.h). */
#define FLEX_KERNELS(MRF)                                                                     \
    void FLEX_CAT(sb_gemm_flex_, FLEX_ISA, _##MRF)(int64_t kc, const float *a, const float *b,  \
                                                  int64_t bstride, float *c, int64_t ldc,      \
                                                  bool load_c, int rows, int cols) {           \
        flex_body(MRF, kc, a, b, bstride, NULL, c, ldc, load_c, rows, cols);                  \
    }                                                                                         \
    void FLEX_CAT(sb_gemm_offset_, FLEX_ISA, _##MRF)(int64_t kc, const float *a,              \
                                                    const float *b, const int64_t *boff,       \
                                                    float *c, int64_t ldc, bool load_c,        \
                                                    int rows, int cols) {                      \
        flex_body(MRF, kc, a, b, 0, boff, c, ldc, load_c, rows, cols);                        \
    }

#endif
