/* Short strided row copies for conv2d's im2row (AVX2; see conv2d_avx512.c):
 * one masked load and store (vmaskmovps) per output position; and the
 * stride-2 gathers of its im2col rows and phase planes. Copies only. */
#include "cpu/cpu.h"

typedef int sb_conv2d_avx2_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#include <immintrin.h>
#include "cpu/conv_internal.h"

void sb_copy_rows_avx2(float *dst, int64_t ldd, const float *src, int64_t lds, int64_t count,
                       int len) {
    __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(len), idx);
    for (int64_t q = 0; q < count; q++, dst += ldd, src += lds)
        _mm256_maskstore_ps(dst, m, _mm256_maskload_ps(src, m));
}

/* Eight even floats of two vectors: shufps takes lanes 0 and 2 of each
 * 128-bit half of both, vpermpd puts the four pairs in order. A vector
 * block runs only while its last load stays at or below src[2*count - 2]. */
void sb_gather_stride2_avx2(const float *src, int64_t count, float *dst) {
    int64_t s = 0;
    for (; s + 8 < count; s += 8) {
        __m256 pairs = _mm256_shuffle_ps(_mm256_loadu_ps(src + 2 * s), _mm256_loadu_ps(src + 2 * s + 8),
                                         _MM_SHUFFLE(2, 0, 2, 0));
        _mm256_storeu_ps(dst + s, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(pairs),
                                                                         _MM_SHUFFLE(3, 1, 2, 0))));
    }
    for (; s < count; s++) dst[s] = src[2 * s];
}
#endif
