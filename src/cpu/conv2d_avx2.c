/* Short strided row copies for conv2d's im2row (AVX2; see conv2d_avx512.c):
 * one masked load and store (vmaskmovps) per output position. Copies only. */
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
#endif
