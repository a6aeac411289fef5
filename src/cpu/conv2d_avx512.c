/* Short strided row copies for conv2d's im2row (AVX-512): each output
 * position takes kw consecutive floats of a padded input row, so one masked
 * load and one masked store replace kw scalar copies. Copies only: no
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
#endif
