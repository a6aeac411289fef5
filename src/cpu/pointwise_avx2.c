/* Pointwise vector loops with AVX2 + FMA (8 lanes); see pointwise_simd.h. */
#include "cpu/ops_internal.h"

typedef int sb_pointwise_avx2_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#include <immintrin.h>

typedef __m256 V;
#define VN 8
#define SFX(name) name##_avx2
#define VHAVE_FMA 1
#define VLOAD _mm256_loadu_ps
#define VSTORE _mm256_storeu_ps
#define VSET1 _mm256_set1_ps
#define VZERO _mm256_setzero_ps
#define VADD _mm256_add_ps
#define VSUB _mm256_sub_ps
#define VMUL _mm256_mul_ps
#define VDIV _mm256_div_ps
#define VSQRT _mm256_sqrt_ps
#define VFMA _mm256_fmadd_ps
#define VGT(a, b) _mm256_cmp_ps(a, b, _CMP_GT_OQ)
#define VLE(a, b) _mm256_cmp_ps(a, b, _CMP_LE_OQ)
#define VEQ(a, b) _mm256_cmp_ps(a, b, _CMP_EQ_OQ)
#define VUNORD(a) _mm256_cmp_ps(a, a, _CMP_UNORD_Q)
#define VSIGN(a) (a) /* blendv reads the sign bit only */
#define VMOR _mm256_or_ps
#define VMAND _mm256_and_ps
#define VSEL(m, a, b) _mm256_blendv_ps(b, a, m)
#define VNEG(v) _mm256_xor_ps(v, _mm256_set1_ps(-0.0f))

#include "cpu/pointwise_simd.h"
#endif
