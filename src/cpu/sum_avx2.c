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

/* x[i] for i < len (len may be <= 0 or past 8), +0 elsewhere: maskload
 * reads nothing outside them. */
static __m256 load_first(const float *x, int len, __m256i *mask) {
    *mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(len), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_maskload_ps(x, *mask);
}

/* Rule 2 whole in registers over x or its sqdev terms, as block_terms of
 * sum_avx512.c (whose comment has the argument, NaNs included): rows, the
 * ragged row on its first lanes (the blend keeps the other lanes' values,
 * -0 included), the tree as register halves. */
static inline __attribute__((always_inline)) bool block_terms(const float *x, int64_t n,
                                                              bool sqdev, float m,
                                                              float lane[SB_SUM_LANES],
                                                              float *sum) {
    const __m256 vm = _mm256_set1_ps(m);
#define TERM(v) (sqdev ? _mm256_mul_ps(_mm256_sub_ps(v, vm), _mm256_sub_ps(v, vm)) : (v))
    __m256 a[4];
    for (int q = 0; q < 4; q++) a[q] = _mm256_set1_ps(-0.0f);
    const float *row = x;
    for (int64_t r = 0; r < n / SB_SUM_LANES; r++, row += SB_SUM_LANES)
        for (int q = 0; q < 4; q++) a[q] = _mm256_add_ps(a[q], TERM(_mm256_loadu_ps(row + 8 * q)));
    int tail = (int)(n % SB_SUM_LANES);
    __m256 t[4], nan = _mm256_setzero_ps();
    __m256i mk[4];
    for (int q = 0; q < 4; q++) {
        t[q] = TERM(load_first(row + 8 * q, tail - 8 * q, &mk[q]));
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(a[q], a[q], _CMP_UNORD_Q));
        nan = _mm256_or_ps(nan, _mm256_and_ps(_mm256_cmp_ps(t[q], t[q], _CMP_UNORD_Q),
                                              _mm256_castsi256_ps(mk[q])));
    }
#undef TERM
    if (_mm256_movemask_ps(nan)) {
        for (int q = 0; q < 4; q++) _mm256_storeu_ps(lane + 8 * q, a[q]);
        return false;
    }
    for (int q = 0; q < 4; q++)
        a[q] = _mm256_blendv_ps(a[q], _mm256_add_ps(a[q], t[q]), _mm256_castsi256_ps(mk[q]));
    __m256 s8 = _mm256_add_ps(_mm256_add_ps(a[0], a[2]), _mm256_add_ps(a[1], a[3]));
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
    *sum = _mm_cvtss_f32(s1);
    return true;
}

SB_SUM_BLOCK_ENTRIES(avx2)
#endif
