/* The depthwise convolution's inner loops with AVX2 + FMA: 8 chains per
 * vector (conv2d_dw_simd.h). */
#include "cpu/cpu.h"

typedef int sb_conv2d_dw_avx2_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#include <immintrin.h>
#include "cpu/conv_internal.h"

typedef __m256 V;
#define VN 8
#define SFX(name) name##_avx2
#define VLOAD _mm256_loadu_ps
#define VSTORE _mm256_storeu_ps
#define VSET1 _mm256_set1_ps
#define VZERO _mm256_setzero_ps
#define VFMA _mm256_fmadd_ps
#define DW_U 8
#define DW_G 12

#include "cpu/conv2d_dw_simd.h"
#endif
