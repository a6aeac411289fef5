/* The canonical sum with AVX-512: the 32 lanes are 2 registers of 16. */
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

/* Rule 2 whole in registers over the terms of x[0..n): x[i] itself, or
 * (sqdev) d * d with d = x[i] - m, the two IEEE operations of the
 * pointwise table's sqdev (the variance's terms, computed here instead of
 * stored and read back). The lanes start at -0, whole rows, the ragged row
 * added to its first n % 32 lanes only (masked: the others keep their
 * value, -0 included), then the tree s = 16, 8, 4, 2, 1 as register halves,
 * lane[j] + lane[j + s]. For n < 32 the rule folds only the touched lanes;
 * folding the others too adds -0 to a lane, which leaves every value a
 * lane can hold unchanged (sb_sum_few_terms' argument), so the tree is the
 * same. Which operand's NaN an addition of two NaNs returns follows the
 * instruction's operand order, which the compiler may swap in register
 * code: so when a lane or a ragged-row term is a NaN this returns false
 * with the lanes in lane[], for the scalar code's end (sb_sum_block_finish)
 * over the terms. Without one, every NaN that arises is the default NaN of
 * an inf - inf, and the order is moot. */
static inline __attribute__((always_inline)) bool block_terms(const float *x, int64_t n,
                                                              bool sqdev, float m,
                                                              float lane[SB_SUM_LANES],
                                                              float *sum) {
    const __m512 vm = _mm512_set1_ps(m);
#define TERM(v) (sqdev ? _mm512_mul_ps(_mm512_sub_ps(v, vm), _mm512_sub_ps(v, vm)) : (v))
    __m512 a0 = _mm512_set1_ps(-0.0f), a1 = a0;
    const float *row = x;
    for (int64_t r = 0; r < n / SB_SUM_LANES; r++, row += SB_SUM_LANES) {
        a0 = _mm512_add_ps(a0, TERM(_mm512_loadu_ps(row + 0)));
        a1 = _mm512_add_ps(a1, TERM(_mm512_loadu_ps(row + 16)));
    }
    int tail = (int)(n % SB_SUM_LANES);
    __mmask16 m0 = tail >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << tail) - 1);
    __mmask16 m1 = tail > 16 ? (__mmask16)((1u << (tail - 16)) - 1) : 0;
    __m512 t0 = TERM(_mm512_maskz_loadu_ps(m0, row)), t1 = TERM(_mm512_maskz_loadu_ps(m1, row + 16));
#undef TERM
    if (_mm512_cmp_ps_mask(a0, a1, _CMP_UNORD_Q) | _mm512_mask_cmp_ps_mask(m0, t0, t0, _CMP_UNORD_Q) |
        _mm512_mask_cmp_ps_mask(m1, t1, t1, _CMP_UNORD_Q)) {
        _mm512_storeu_ps(lane, a0);
        _mm512_storeu_ps(lane + 16, a1);
        return false;
    }
    a0 = _mm512_mask_add_ps(a0, m0, a0, t0);
    a1 = _mm512_mask_add_ps(a1, m1, a1, t1);
    __m512 s16 = _mm512_add_ps(a0, a1);
    __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(s16), _mm512_extractf32x8_ps(s16, 1));
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
    *sum = _mm_cvtss_f32(s1);
    return true;
}

SB_SUM_BLOCK_ENTRIES(avx512)
#endif
