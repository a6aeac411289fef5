/* 2x2, stride-2 max pooling with AVX-512 (LeNet's pooling), 16 outputs of
 * an output row at a time.
 *
 * The reference scans a window's four inputs in row-major order and lets a
 * candidate replace the best when the best is not NaN and the candidate is
 * NaN or strictly greater (src/ref/pool2d.c). Here the same four compares
 * run in the same order, lane by lane, as mask operations: the same winner
 * (value and index) for every window. The even and odd columns of an input
 * row are separated with one permute, so each candidate is a full vector;
 * windows are independent, so there is no chain from one output to the
 * next (a scalar scan's compare-and-select chain per window is what made it
 * slow). Only whole windows inside the plane reach this kernel. */
#include "cpu/cpu.h"

typedef int sb_pool2d_avx512_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#include <immintrin.h>
#include "cpu/conv_internal.h"

void sb_max_pool2x2_avx512(const float *xp, int64_t w, int64_t oh, int64_t ow, float *yp,
                           int64_t *ip) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const __m512i lane2 = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int64_t r = 0; r < oh; r++) {
        const float *row0 = xp + 2 * r * w, *row1 = row0 + w;
        for (int64_t s0 = 0; s0 < ow; s0 += 16) {
            int64_t n = ow - s0 < 16 ? ow - s0 : 16, cols = 2 * n;
            __mmask16 mlo = (__mmask16)(cols >= 16 ? 0xffff : (1u << cols) - 1u);
            __mmask16 mhi = (__mmask16)(cols <= 16 ? 0 : cols >= 32 ? 0xffff : (1u << (cols - 16)) - 1u);
            __mmask16 mout = (__mmask16)(n >= 16 ? 0xffff : (1u << n) - 1u);
            const float *a = row0 + 2 * s0, *b = row1 + 2 * s0;
            __m512 a_lo = _mm512_maskz_loadu_ps(mlo, a), a_hi = _mm512_maskz_loadu_ps(mhi, a + 16);
            __m512 b_lo = _mm512_maskz_loadu_ps(mlo, b), b_hi = _mm512_maskz_loadu_ps(mhi, b + 16);
            /* the window's candidates in the reference's order */
            __m512 v[4] = {_mm512_permutex2var_ps(a_lo, even, a_hi), _mm512_permutex2var_ps(a_lo, odd, a_hi),
                           _mm512_permutex2var_ps(b_lo, even, b_hi), _mm512_permutex2var_ps(b_lo, odd, b_hi)};
            __m512 best = v[0];
            __m512i which = _mm512_setzero_si512(); /* 0..3: di*2 + dj */
            for (int k = 1; k < 4; k++) {
                __mmask16 best_num = _mm512_cmp_ps_mask(best, best, _CMP_ORD_Q);
                __mmask16 take = best_num & (_mm512_cmp_ps_mask(v[k], v[k], _CMP_UNORD_Q) |
                                             _mm512_cmp_ps_mask(v[k], best, _CMP_GT_OQ));
                best = _mm512_mask_blend_ps(take, best, v[k]);
                which = _mm512_mask_blend_epi32(take, which, _mm512_set1_epi32(k));
            }
            _mm512_mask_storeu_ps(yp + r * ow + s0, mout, best);
            if (ip) {
                /* index = (2r + di)*w + 2(s0 + lane) + dj */
                __m512i di = _mm512_srli_epi32(which, 1), dj = _mm512_and_si512(which, _mm512_set1_epi32(1));
                __m512i col = _mm512_add_epi32(_mm512_add_epi32(lane2, _mm512_set1_epi32((int)(2 * s0))), dj);
                __m256i col_lo = _mm512_castsi512_si256(col), col_hi = _mm512_extracti64x4_epi64(col, 1);
                __m256i di_lo = _mm512_castsi512_si256(di), di_hi = _mm512_extracti64x4_epi64(di, 1);
                __m512i wv = _mm512_set1_epi64(w), rowbase = _mm512_set1_epi64(2 * r * w);
                __m512i lo = _mm512_add_epi64(_mm512_add_epi64(rowbase, _mm512_cvtepi32_epi64(col_lo)),
                                              _mm512_mullo_epi64(_mm512_cvtepi32_epi64(di_lo), wv));
                __m512i hi = _mm512_add_epi64(_mm512_add_epi64(rowbase, _mm512_cvtepi32_epi64(col_hi)),
                                              _mm512_mullo_epi64(_mm512_cvtepi32_epi64(di_hi), wv));
                _mm512_mask_storeu_epi64(ip + r * ow + s0, (__mmask8)(mout & 0xff), lo);
                _mm512_mask_storeu_epi64(ip + r * ow + s0 + 8, (__mmask8)(mout >> 8), hi);
            }
        }
    }
}

/* Any other fixed window (ResNet's 3x3 stride-2 pooling) by the plane's tap
 * table (kernels.h: sb_max_pool_taps_fn): 16 outputs at a time, each tap a
 * masked gather of the 16 windows' candidates, then the reference's
 * replacement rule as mask operations: a lane takes its candidate when the
 * tap exists and either it has no best yet (tap 0) or its best is not NaN
 * and the candidate is NaN or strictly greater. The windows' scans run side
 * by side, with no chain of branches from one candidate to the next. */
void sb_max_pool_taps_avx512(const float *xp, const int32_t *tab, int64_t taps, int64_t ohw,
                             float *yp, int64_t *ip) {
    for (int64_t q0 = 0; q0 < ohw; q0 += 16) {
        int64_t n = ohw - q0 < 16 ? ohw - q0 : 16;
        __mmask16 lanes = (__mmask16)(n >= 16 ? 0xffff : (1u << n) - 1u), have = 0;
        __m512 best = _mm512_setzero_ps();
        __m512i at = _mm512_setzero_si512();
        for (int64_t k = 0; k < taps; k++) {
            __m512i idx = _mm512_maskz_loadu_epi32(lanes, tab + k * ohw + q0);
            __mmask16 valid = _mm512_mask_cmpge_epi32_mask(lanes, idx, _mm512_setzero_si512());
            __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), valid, idx, xp, 4);
            __mmask16 better = _mm512_cmp_ps_mask(best, best, _CMP_ORD_Q) &
                               (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) |
                                _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ));
            __mmask16 take = valid & (__mmask16)(~have | better);
            best = _mm512_mask_blend_ps(take, best, v);
            at = _mm512_mask_blend_epi32(take, at, idx);
            have |= valid;
        }
        _mm512_mask_storeu_ps(yp + q0, lanes, best);
        if (ip) {
            _mm512_mask_storeu_epi64(ip + q0, (__mmask8)(lanes & 0xff),
                                     _mm512_cvtepi32_epi64(_mm512_castsi512_si256(at)));
            _mm512_mask_storeu_epi64(ip + q0 + 8, (__mmask8)(lanes >> 8),
                                     _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(at, 1)));
        }
    }
}
#endif
