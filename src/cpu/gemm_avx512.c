/* The AVX-512 GEMM micro-kernel: a 12 x 32 tile of C held in 24 zmm
 * accumulators (src/cpu/gemm_internal.h). Per k step: two vector loads of
 * the packed B row, then for each of the 12 rows one broadcast of A and two
 * vfmadd231ps, i.e. C[i][j] = fma(A[i][p], B[p][j], C[i][j]) lane by lane,
 * which is the contract's chain step exactly (one rounding, p ascending). */
#include "cpu/cpu.h"

typedef int sb_gemm_avx512_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#include <immintrin.h>
#include "cpu/gemm_internal.h"

#define MR SB_GEMM_MR_AVX512
#define NR SB_GEMM_NR_AVX512

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

#define DECL(r) __m512 c##r##a, c##r##b;
#define ZERO(r) c##r##a = _mm512_setzero_ps(); c##r##b = _mm512_setzero_ps();
#define LOAD(r) c##r##a = _mm512_loadu_ps(c + (r) * ldc); \
                c##r##b = _mm512_loadu_ps(c + (r) * ldc + 16);
#define STORE(r) _mm512_storeu_ps(c + (r) * ldc, c##r##a); \
                 _mm512_storeu_ps(c + (r) * ldc + 16, c##r##b);
/* One k step at offset `o` steps from the current panel pointers. */
#define FMA_ROW(r, o) { __m512 ar = _mm512_set1_ps(a[(o) * MR + (r)]); \
                        c##r##a = _mm512_fmadd_ps(ar, b0, c##r##a);      \
                        c##r##b = _mm512_fmadd_ps(ar, b1, c##r##b); }
#define STEP(o) { __m512 b0 = _mm512_loadu_ps(b + (o) * NR);        \
                  __m512 b1 = _mm512_loadu_ps(b + (o) * NR + 16);   \
                  FMA_ROW(0, o) FMA_ROW(1, o) FMA_ROW(2, o) FMA_ROW(3, o)      \
                  FMA_ROW(4, o) FMA_ROW(5, o) FMA_ROW(6, o) FMA_ROW(7, o)      \
                  FMA_ROW(8, o) FMA_ROW(9, o) FMA_ROW(10, o) FMA_ROW(11, o) }

void sb_gemm_ukernel_avx512(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                            bool load_c) {
    ROWS(DECL)
    if (load_c) {
        ROWS(LOAD)
    } else {
        ROWS(ZERO)
    }
    int64_t p = 0;
    /* Unrolled by 4 for fewer loop branches; the steps stay in p order. */
    for (; p + 4 <= kc; p += 4) {
        _mm_prefetch((const char *)(b + 8 * NR), _MM_HINT_T0);
        _mm_prefetch((const char *)(b + 8 * NR + 16), _MM_HINT_T0);
        STEP(0) STEP(1) STEP(2) STEP(3)
        a += 4 * MR;
        b += 4 * NR;
    }
    for (; p < kc; p++) {
        STEP(0)
        a += MR;
        b += NR;
    }
    ROWS(STORE)
}
#endif

#if SB_HAVE_X86_KERNELS
/* The flexible AVX-512 kernels (sb_gemm_flex_fn in gemm_internal.h): MR x 32
 * tiles for MR in {4, 6, 8, 12}, a B operand read `bstride` floats apart per
 * k step (a packed panel, or op(B) itself when it is row-major), and edge
 * tiles handled in place: only the first `rows` rows of C are loaded and
 * stored, and only the first `cols` columns, through lane masks. Every lane
 * still runs its own chain step by step, so the bits are those of the fixed
 * 12 x 32 kernel above; the flexibility only removes the padded-scratch
 * copies and the packing of B, which dominate for LeNet's skinny products
 * (m = 6 or 16 output channels). Masked-off lanes of a masked load are not
 * read, so a B row may end anywhere. */
#define FLEX_KERNEL(MRF)                                                                  \
    void sb_gemm_flex_avx512_##MRF(int64_t kc, const float *a, const float *b,             \
                                   int64_t bstride, float *c, int64_t ldc, bool load_c,    \
                                   int rows, int cols) {                                  \
        __mmask16 m0 = cols >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << cols) - 1u);   \
        __mmask16 m1 = cols >= 32   ? (__mmask16)0xffff                                   \
                       : cols > 16 ? (__mmask16)((1u << (cols - 16)) - 1u)                \
                                   : (__mmask16)0;                                        \
        __m512 acc0[MRF], acc1[MRF];                                                      \
        _Pragma("GCC unroll 12") for (int r = 0; r < MRF; r++) {                          \
            if (load_c && r < rows) {                                                     \
                acc0[r] = _mm512_maskz_loadu_ps(m0, c + r * ldc);                         \
                acc1[r] = _mm512_maskz_loadu_ps(m1, c + r * ldc + 16);                    \
            } else {                                                                      \
                acc0[r] = _mm512_setzero_ps();                                            \
                acc1[r] = _mm512_setzero_ps();                                            \
            }                                                                             \
        }                                                                                 \
        if (cols <= 16) {                                                                 \
            /* one vector of columns: the second accumulators stay unused */              \
            for (int64_t p = 0; p < kc; p++, a += MRF, b += bstride) {                    \
                __m512 b0 = _mm512_maskz_loadu_ps(m0, b);                                 \
                _Pragma("GCC unroll 12") for (int r = 0; r < MRF; r++)                    \
                    acc0[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r]), b0, acc0[r]);         \
            }                                                                             \
        } else {                                                                          \
            for (int64_t p = 0; p < kc; p++, a += MRF, b += bstride) {                    \
                __m512 b0 = _mm512_maskz_loadu_ps(m0, b);                                 \
                __m512 b1 = _mm512_maskz_loadu_ps(m1, b + 16);                            \
                _Pragma("GCC unroll 12") for (int r = 0; r < MRF; r++) {                  \
                    __m512 ar = _mm512_set1_ps(a[r]);                                     \
                    acc0[r] = _mm512_fmadd_ps(ar, b0, acc0[r]);                           \
                    acc1[r] = _mm512_fmadd_ps(ar, b1, acc1[r]);                           \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
        _Pragma("GCC unroll 12") for (int r = 0; r < MRF; r++) {                          \
            if (r < rows) {                                                               \
                _mm512_mask_storeu_ps(c + r * ldc, m0, acc0[r]);                          \
                _mm512_mask_storeu_ps(c + r * ldc + 16, m1, acc1[r]);                     \
            }                                                                             \
        }                                                                                 \
    }

FLEX_KERNEL(4)
FLEX_KERNEL(6)
FLEX_KERNEL(8)
FLEX_KERNEL(12)
#endif

#if SB_HAVE_X86_KERNELS
/* The implicit-GEMM kernels (sb_gemm_offset_fn in gemm_internal.h): the
 * flexible kernels above with B row p read at b + boff[p] instead of
 * b + p*bstride. A stride-1 convolution over a zero-padded plane is such a
 * product with no im2col matrix at all: boff[p] is where tap p of the
 * first output sits, and consecutive outputs are consecutive floats. */
#define OFFSET_KERNEL(MRF)                                                                \
    void sb_gemm_offset_avx512_##MRF(int64_t kc, const float *a, const float *b,           \
                                     const int64_t *boff, float *c, int64_t ldc,           \
                                     bool load_c, int rows, int cols) {                    \
        __mmask16 m0 = cols >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << cols) - 1u);   \
        __mmask16 m1 = cols >= 32   ? (__mmask16)0xffff                                   \
                       : cols > 16 ? (__mmask16)((1u << (cols - 16)) - 1u)                \
                                   : (__mmask16)0;                                        \
        __m512 acc0[MRF], acc1[MRF];                                                      \
        _Pragma("GCC unroll 12") for (int r = 0; r < MRF; r++) {                          \
            if (load_c && r < rows) {                                                     \
                acc0[r] = _mm512_maskz_loadu_ps(m0, c + r * ldc);                         \
                acc1[r] = _mm512_maskz_loadu_ps(m1, c + r * ldc + 16);                    \
            } else {                                                                      \
                acc0[r] = _mm512_setzero_ps();                                            \
                acc1[r] = _mm512_setzero_ps();                                            \
            }                                                                             \
        }                                                                                 \
        for (int64_t p = 0; p < kc; p++, a += MRF) {                                      \
            const float *bp = b + boff[p];                                                \
            __m512 b0 = _mm512_maskz_loadu_ps(m0, bp);                                    \
            __m512 b1 = _mm512_maskz_loadu_ps(m1, bp + 16);                               \
            _Pragma("GCC unroll 12") for (int r = 0; r < MRF; r++) {                      \
                __m512 ar = _mm512_set1_ps(a[r]);                                         \
                acc0[r] = _mm512_fmadd_ps(ar, b0, acc0[r]);                               \
                acc1[r] = _mm512_fmadd_ps(ar, b1, acc1[r]);                               \
            }                                                                             \
        }                                                                                 \
        _Pragma("GCC unroll 12") for (int r = 0; r < MRF; r++) {                          \
            if (r < rows) {                                                               \
                _mm512_mask_storeu_ps(c + r * ldc, m0, acc0[r]);                          \
                _mm512_mask_storeu_ps(c + r * ldc + 16, m1, acc1[r]);                     \
            }                                                                             \
        }                                                                                 \
    }

OFFSET_KERNEL(4)
OFFSET_KERNEL(6)
OFFSET_KERNEL(8)
OFFSET_KERNEL(12)
#endif
