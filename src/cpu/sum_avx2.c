/* The canonical sum with AVX2: the 32 lanes are 4 registers of 8. */
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

/* Adds x[i] to lane i of a for the lanes i < len (len may be <= 0 or past
 * 8): maskload reads nothing outside them, the blend keeps the other lanes'
 * values (-0 included). */
static __m256 add_first(__m256 a, const float *x, int len) {
    if (len <= 0) return a;
    if (len >= 8) return _mm256_add_ps(a, _mm256_loadu_ps(x));
    __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(len), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 sum = _mm256_add_ps(a, _mm256_maskload_ps(x, m));
    return _mm256_blendv_ps(a, sum, _mm256_castsi256_ps(m));
}

/* Rule 2 whole in registers, as sb_sum_block_avx512 (whose comment has the
 * argument): rows, the ragged row on its first lanes, the tree as register
 * halves. */
float sb_sum_block_avx2(const float *x, int64_t n) {
    __m256 a0 = _mm256_set1_ps(-0.0f), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t r = 0; r < n / SB_SUM_LANES; r++, x += SB_SUM_LANES) {
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + 0));
        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + 8));
        a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + 16));
        a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + 24));
    }
    int tail = (int)(n % SB_SUM_LANES);
    if (tail) {
        a0 = add_first(a0, x + 0, tail);
        a1 = add_first(a1, x + 8, tail - 8);
        a2 = add_first(a2, x + 16, tail - 16);
        a3 = add_first(a3, x + 24, tail - 24);
    }
    __m256 s8 = _mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a1, a3));
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
    return _mm_cvtss_f32(s1);
}
#endif
