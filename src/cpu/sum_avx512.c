/* Canonical-sum lane rows with AVX-512: the 32 lanes are 2 registers of 16. */
#include "cpu/sum_internal.h"

typedef int sb_sum_avx512_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#include <immintrin.h>

void sb_sum_rows_avx512(float lane[SB_SUM_LANES], const float *x, int64_t rows) {
    __m512 a0 = _mm512_loadu_ps(lane + 0), a1 = _mm512_loadu_ps(lane + 16);
    for (int64_t r = 0; r < rows; r++, x += SB_SUM_LANES) {
        a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + 0));
        a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + 16));
    }
    _mm512_storeu_ps(lane + 0, a0);
    _mm512_storeu_ps(lane + 16, a1);
}
#endif
