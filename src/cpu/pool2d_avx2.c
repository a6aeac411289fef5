/* Max pooling with AVX2: every window other than LeNet's 2x2/2 by the
 * plane's tap table (cpu/kernels.h: sb_max_pool_taps_fn), 8 outputs at a
 * time. The AVX-512 kernel (pool2d_avx512.c) with 8 lanes: each tap a
 * masked gather of the 8 windows' candidates, then the reference's
 * replacement rule as lane masks: a lane takes its candidate when the tap
 * exists and either it has no best yet (tap 0) or its best is not NaN and
 * the candidate is NaN or strictly greater. */
#include "cpu/cpu.h"

typedef int sb_pool2d_avx2_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#include <immintrin.h>
#include "cpu/conv_internal.h"

void sb_max_pool_taps_avx2(const float *xp, const int32_t *tab, int64_t taps, int64_t ohw,
                           float *yp, int64_t *ip) {
    const __m256i lane_no = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int64_t q0 = 0; q0 < ohw; q0 += 8) {
        int64_t n = ohw - q0 < 8 ? ohw - q0 : 8;
        __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), lane_no);
        __m256 have = _mm256_setzero_ps(), best = _mm256_setzero_ps();
        __m256i at = _mm256_setzero_si256();
        for (int64_t k = 0; k < taps; k++) {
            __m256i idx = _mm256_maskload_epi32(tab + k * ohw + q0, lanes);
            /* the lanes in use whose tap exists (idx >= 0) */
            __m256 valid = _mm256_castsi256_ps(
                _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), idx), lanes));
            __m256 v = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), xp, idx, valid, 4);
            __m256 better = _mm256_and_ps(_mm256_cmp_ps(best, best, _CMP_ORD_Q),
                                          _mm256_or_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q),
                                                       _mm256_cmp_ps(v, best, _CMP_GT_OQ)));
            __m256 take = _mm256_and_ps(valid, _mm256_or_ps(_mm256_xor_ps(have, valid), better));
            best = _mm256_blendv_ps(best, v, take);
            at = _mm256_castps_si256(
                _mm256_blendv_ps(_mm256_castsi256_ps(at), _mm256_castsi256_ps(idx), take));
            have = _mm256_or_ps(have, valid);
        }
        _mm256_maskstore_ps(yp + q0, lanes, best);
        if (ip) {
            int32_t a[8];
            _mm256_storeu_si256((__m256i *)(void *)a, at);
            for (int64_t l = 0; l < n; l++) ip[q0 + l] = a[l];
        }
    }
}
#endif
