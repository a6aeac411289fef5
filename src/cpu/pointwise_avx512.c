/* Pointwise vector loops with AVX-512F/DQ (16 lanes, mask registers); see
 * pointwise_simd.h. */
#include "cpu/ops_internal.h"

typedef int sb_pointwise_avx512_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#include <immintrin.h>

typedef __m512 V;
#define VN 16
#define SFX(name) name##_avx512
#define VHAVE_FMA 1
#define VLOAD _mm512_loadu_ps
#define VSTORE _mm512_storeu_ps
#define VSET1 _mm512_set1_ps
#define VZERO _mm512_setzero_ps
#define VADD _mm512_add_ps
#define VSUB _mm512_sub_ps
#define VMUL _mm512_mul_ps
#define VDIV _mm512_div_ps
#define VSQRT _mm512_sqrt_ps
#define VFMA _mm512_fmadd_ps
#define VGT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ)
#define VLE(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ)
#define VEQ(a, b) _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ)
#define VUNORD(a) _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q)
#define VSIGN(a) _mm512_movepi32_mask(_mm512_castps_si512(a))
#define VMOR(m1, m2) ((__mmask16)((m1) | (m2)))
#define VMAND(m1, m2) ((__mmask16)((m1) & (m2)))
#define VSEL(m, a, b) _mm512_mask_blend_ps(m, b, a)
#define VNEG(v) _mm512_xor_ps(v, _mm512_set1_ps(-0.0f))

#include "cpu/pointwise_simd.h"
#endif
