/* Canonical-sum lane rows with AVX: the 32 lanes are 4 registers of 8. */
#include "cpu/sum_internal.h"

typedef int sb_sum_avx2_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#include <immintrin.h>

void sb_sum_rows_avx2(float lane[SB_SUM_LANES], const float *x, int64_t rows) {
    __m256 a0 = _mm256_loadu_ps(lane + 0), a1 = _mm256_loadu_ps(lane + 8);
    __m256 a2 = _mm256_loadu_ps(lane + 16), a3 = _mm256_loadu_ps(lane + 24);
    for (int64_t r = 0; r < rows; r++, x += SB_SUM_LANES) {
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + 0));
        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + 8));
        a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + 16));
        a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + 24));
    }
    _mm256_storeu_ps(lane + 0, a0); _mm256_storeu_ps(lane + 8, a1);
    _mm256_storeu_ps(lane + 16, a2); _mm256_storeu_ps(lane + 24, a3);
}
#endif
