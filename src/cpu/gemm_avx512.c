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
/* The flexible and implicit-GEMM kernels (gemm_flex.h): MR x 32 tiles for
 * MR in {4, 6, 8, 12}, edges masked in place, B read in place or through a
 * per-step offset table. Lane for lane the same chain steps as the fixed
 * kernel above. */
#define FLEX_ISA avx512
#define FLEX_VEC __m512
#define FLEX_W 16
#define FLEX_NV 2
#define FLEX_MASK __mmask16
#define FLEX_MASK_FIRST(n) ((__mmask16)((1u << (n)) - 1u))
#define FLEX_LOADM(m, p) _mm512_maskz_loadu_ps((m), (p))
#define FLEX_STOREM(m, p, v) _mm512_mask_storeu_ps((p), (m), (v))
#define FLEX_ZERO() _mm512_setzero_ps()
#define FLEX_SET1(x) _mm512_set1_ps(x)
#define FLEX_FMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#include "cpu/gemm_flex.h"

FLEX_KERNELS(4)
FLEX_KERNELS(6)
FLEX_KERNELS(8)
FLEX_KERNELS(12)
#endif
