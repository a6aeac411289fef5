/* Canonical-sum lane rows with SSE2: the 32 lanes are 8 registers of 4. */
#include "cpu/sum_internal.h"

typedef int sb_sum_sse2_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#include <emmintrin.h>

void sb_sum_rows_sse2(float lane[SB_SUM_LANES], const float *x, int64_t rows) {
    __m128 a0 = _mm_loadu_ps(lane + 0), a1 = _mm_loadu_ps(lane + 4);
    __m128 a2 = _mm_loadu_ps(lane + 8), a3 = _mm_loadu_ps(lane + 12);
    __m128 a4 = _mm_loadu_ps(lane + 16), a5 = _mm_loadu_ps(lane + 20);
    __m128 a6 = _mm_loadu_ps(lane + 24), a7 = _mm_loadu_ps(lane + 28);
    for (int64_t r = 0; r < rows; r++, x += SB_SUM_LANES) {
        a0 = _mm_add_ps(a0, _mm_loadu_ps(x + 0));
        a1 = _mm_add_ps(a1, _mm_loadu_ps(x + 4));
        a2 = _mm_add_ps(a2, _mm_loadu_ps(x + 8));
        a3 = _mm_add_ps(a3, _mm_loadu_ps(x + 12));
        a4 = _mm_add_ps(a4, _mm_loadu_ps(x + 16));
        a5 = _mm_add_ps(a5, _mm_loadu_ps(x + 20));
        a6 = _mm_add_ps(a6, _mm_loadu_ps(x + 24));
        a7 = _mm_add_ps(a7, _mm_loadu_ps(x + 28));
    }
    _mm_storeu_ps(lane + 0, a0); _mm_storeu_ps(lane + 4, a1);
    _mm_storeu_ps(lane + 8, a2); _mm_storeu_ps(lane + 12, a3);
    _mm_storeu_ps(lane + 16, a4); _mm_storeu_ps(lane + 20, a5);
    _mm_storeu_ps(lane + 24, a6); _mm_storeu_ps(lane + 28, a7);
}
#endif
