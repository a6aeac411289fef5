/* The depthwise convolution's inner loops with AVX-512: 16 chains per
 * vector (conv2d_dw_simd.h). */
#include "cpu/cpu.h"

typedef int sb_conv2d_dw_avx512_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#include <immintrin.h>
#include "cpu/conv_internal.h"

typedef __m512 V;
#define VN 16
#define SFX(name) name##_avx512
#define VLOAD _mm512_loadu_ps
#define VSTORE _mm512_storeu_ps
#define VSET1 _mm512_set1_ps
#define VZERO _mm512_setzero_ps
#define VFMA _mm512_fmadd_ps
#define VADD _mm512_add_ps
#define DW_U 8
#define DW_G 24

#include "cpu/conv2d_dw_simd.h"
#endif
