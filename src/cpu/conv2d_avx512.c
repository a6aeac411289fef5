/* Short strided row copies for conv2d's im2row (AVX-512): each output
 * position takes kw consecutive floats of a padded input row, so one masked
 * load and one masked store replace kw scalar copies; and the stride-2
 * gathers of its im2col rows and phase planes. Copies only: no
 * arithmetic, so nothing here can change a bit. */
#include "cpu/cpu.h"

typedef int sb_conv2d_avx512_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#include <immintrin.h>
#include "cpu/conv_internal.h"

void sb_copy_rows_avx512(float *dst, int64_t ldd, const float *src, int64_t lds, int64_t count,
                         int len) {
    __mmask16 m = (__mmask16)((1u << len) - 1u);
    for (int64_t q = 0; q < count; q++, dst += ldd, src += lds)
        _mm512_mask_storeu_ps(dst, m, _mm512_maskz_loadu_ps(m, src));
}

/* Sixteen even floats of two vectors by one two-source permute. Whole
 * blocks run while their last load stays at or below src[2*count - 2], the
 * last one (up to 16 floats: phase-plane rows are often under 32) with
 * masked loads of the 2*left - 1 floats it reads and a masked store. */
void sb_gather_stride2_avx512(const float *src, int64_t count, float *dst) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    int64_t s = 0;
    for (; s + 16 < count; s += 16)
        _mm512_storeu_ps(dst + s, _mm512_permutex2var_ps(_mm512_loadu_ps(src + 2 * s), even,
                                                         _mm512_loadu_ps(src + 2 * s + 16)));
    int64_t left = count - s, reads = 2 * left - 1; /* 1 <= left <= 16 when count > 0 */
    if (left <= 0) return;
    __mmask16 lo = (__mmask16)(reads >= 16 ? 0xffffu : (1u << reads) - 1u);
    __mmask16 hi = (__mmask16)(reads > 16 ? (1u << (reads - 16)) - 1u : 0u);
    __m512 v = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(lo, src + 2 * s), even,
                                      _mm512_maskz_loadu_ps(hi, src + 2 * s + 16));
    _mm512_mask_storeu_ps(dst + s, (__mmask16)((1u << left) - 1u), v);
}
#endif
