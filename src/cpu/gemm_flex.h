/* src/cpu/gemm_flex.h - the flexible GEMM micro-kernel, written once for
 * every ISA file (gemm_avx512.c, gemm_avx2.c, gemm_neon.c). Not installed;
 * include it only from such a file, after defining:
 *
 *   FLEX_ISA             the suffix of the generated names (avx512, avx2, neon)
 *   FLEX_VEC             the float vector type, FLEX_W its lanes
 *   FLEX_NV              vectors of columns per tile (1 to 3): NR = FLEX_NV * FLEX_W
 *   FLEX_MASK            the lane-mask type
 *   FLEX_MASK_FIRST(n)   a mask of the first n lanes (0 <= n <= FLEX_W)
 *   FLEX_LOADM(m, p)     masked load (masked-off lanes read nothing, are 0)
 *   FLEX_STOREM(m, p, v) masked store
 *   FLEX_ZERO(), FLEX_SET1(x), FLEX_FMA(a, b, c) = a*b + c rounded once
 *   FLEX_FULL_TILE       optional, 1: a tile of all NR columns gets its own
 *                        copy of the loop with constant full masks (for an
 *                        ISA without masked loads, where FLEX_LOADM of a
 *                        mask known to be full can become a plain load)
 *
 * A kernel computes an MR x NR tile of C in place at `rows` x `cols`
 * (rows <= MR, cols <= NR): every lane runs its own chain
 *     acc = load_c ? C[i][j] : +0.0f;  acc = fma(A[i][p], B[p][j], acc), p = 0..kc-1
 * (the contract's chain step, in p order), reading A from a packed panel
 * (MR values per k step) and B row p at b + p*bstride ("flex") or at
 * b + boff[p] ("offset": the implicit GEMM of stride-1 convolutions); the
 * "gather" kernel also takes A's MR values of step p at a + aoff[p] (a
 * product over a subset of a panel's k terms: a convolution's position
 * class, whose taps are a subset of the kernel's). Only
 * the first `rows` rows and `cols` columns of C are loaded and stored, so
 * edge tiles need no padded copy; masked loads let a B row end anywhere.
 * Vectors of columns wholly past `cols` are not computed at all. */
#ifndef SB_CPU_GEMM_FLEX_H
#define SB_CPU_GEMM_FLEX_H

#if FLEX_NV < 1 || FLEX_NV > 3
#error "gemm_flex.h: FLEX_NV must be 1, 2 or 3"
#endif
#ifndef FLEX_FULL_TILE
#define FLEX_FULL_TILE 0
#endif

#define FLEX_CAT_(a, b, c) a##b##c
#define FLEX_CAT(a, b, c) FLEX_CAT_(a, b, c)

/* The tile with its first nv vectors of columns computed (nv a constant
 * after inlining, so the loops over v unroll away and acc stays in
 * registers); vector v's mask covers columns v*W .. min(cols, (v+1)*W). */
static inline __attribute__((always_inline)) void
flex_tile(int mrf, int nv, int64_t kc, const float *a, const int64_t *aoff, const float *b,
          int64_t bstride, const int64_t *boff, float *c, int64_t ldc, bool load_c, int rows,
          int cols) {
    FLEX_MASK m[FLEX_NV];
    _Pragma("GCC unroll 3") for (int v = 0; v < nv; v++) {
        int left = cols - v * FLEX_W;
        m[v] = FLEX_MASK_FIRST(left < FLEX_W ? left : FLEX_W);
    }
    FLEX_VEC acc[FLEX_NV][12];
    _Pragma("GCC unroll 12") for (int r = 0; r < mrf; r++)
        _Pragma("GCC unroll 3") for (int v = 0; v < nv; v++)
            acc[v][r] = load_c && r < rows ? FLEX_LOADM(m[v], c + r * ldc + v * FLEX_W)
                                           : FLEX_ZERO();
    for (int64_t p = 0; p < kc; p++) {
        const float *ap = aoff ? a + aoff[p] : a + p * mrf;
        const float *bp = boff ? b + boff[p] : b + p * bstride;
        FLEX_VEC bv[FLEX_NV];
        _Pragma("GCC unroll 3") for (int v = 0; v < nv; v++)
            bv[v] = FLEX_LOADM(m[v], bp + v * FLEX_W);
        _Pragma("GCC unroll 12") for (int r = 0; r < mrf; r++) {
            FLEX_VEC ar = FLEX_SET1(ap[r]);
            _Pragma("GCC unroll 3") for (int v = 0; v < nv; v++)
                acc[v][r] = FLEX_FMA(ar, bv[v], acc[v][r]);
        }
    }
    _Pragma("GCC unroll 12") for (int r = 0; r < mrf; r++) {
        if (r >= rows) continue;
        _Pragma("GCC unroll 3") for (int v = 0; v < nv; v++)
            FLEX_STOREM(m[v], c + r * ldc + v * FLEX_W, acc[v][r]);
    }
}

/* Dispatches on the number of column vectors the tile touches. */
static inline __attribute__((always_inline)) void
flex_body(int mrf, int64_t kc, const float *a, const int64_t *aoff, const float *b,
          int64_t bstride, const int64_t *boff, float *c, int64_t ldc, bool load_c, int rows,
          int cols) {
#if FLEX_FULL_TILE
    if (cols == FLEX_NV * FLEX_W) {
        flex_tile(mrf, FLEX_NV, kc, a, aoff, b, bstride, boff, c, ldc, load_c, rows,
                  FLEX_NV * FLEX_W);
        return;
    }
#endif
    if (cols > (FLEX_NV - 1) * FLEX_W)
        flex_tile(mrf, FLEX_NV, kc, a, aoff, b, bstride, boff, c, ldc, load_c, rows, cols);
#if FLEX_NV == 3
    else if (cols > FLEX_W)
        flex_tile(mrf, 2, kc, a, aoff, b, bstride, boff, c, ldc, load_c, rows, cols);
#endif
#if FLEX_NV > 1
    else
        flex_tile(mrf, 1, kc, a, aoff, b, bstride, boff, c, ldc, load_c, rows, cols);
#endif
}

/* The three entry points of one row count (declared in gemm_internal.h). */
#define FLEX_KERNELS(MRF)                                                                     \
    void FLEX_CAT(sb_gemm_flex_, FLEX_ISA, _##MRF)(int64_t kc, const float *a, const float *b,  \
                                                  int64_t bstride, float *c, int64_t ldc,      \
                                                  bool load_c, int rows, int cols) {           \
        flex_body(MRF, kc, a, NULL, b, bstride, NULL, c, ldc, load_c, rows, cols);            \
    }                                                                                         \
    void FLEX_CAT(sb_gemm_offset_, FLEX_ISA, _##MRF)(int64_t kc, const float *a,              \
                                                    const float *b, const int64_t *boff,       \
                                                    float *c, int64_t ldc, bool load_c,        \
                                                    int rows, int cols) {                      \
        flex_body(MRF, kc, a, NULL, b, 0, boff, c, ldc, load_c, rows, cols);                  \
    }                                                                                         \
    void FLEX_CAT(sb_gemm_gather_, FLEX_ISA, _##MRF)(int64_t kc, const float *a,              \
                                                    const int64_t *aoff, const float *b,       \
                                                    const int64_t *boff, float *c,             \
                                                    int64_t ldc, bool load_c, int rows,        \
                                                    int cols) {                                \
        flex_body(MRF, kc, a, aoff, b, 0, boff, c, ldc, load_c, rows, cols);                  \
    }

#endif
