/* Pointwise vector loops with SSE2 (4 lanes); see pointwise_simd.h. */
#include "cpu/ops_internal.h"

typedef int sb_pointwise_sse2_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#include <emmintrin.h>

typedef __m128 V;
#define VN 4
#define SFX(name) name##_sse2
#define VHAVE_FMA 0
#define VLOAD _mm_loadu_ps
#define VSTORE _mm_storeu_ps
#define VSET1 _mm_set1_ps
#define VZERO _mm_setzero_ps
#define VADD _mm_add_ps
#define VSUB _mm_sub_ps
#define VMUL _mm_mul_ps
#define VDIV _mm_div_ps
#define VSQRT _mm_sqrt_ps
#define VGT(a, b) _mm_cmpgt_ps(a, b)
#define VLE(a, b) _mm_cmple_ps(a, b)
#define VEQ(a, b) _mm_cmpeq_ps(a, b)
#define VUNORD(a) _mm_cmpunord_ps(a, a)
#define VSIGN(a) _mm_castsi128_ps(_mm_srai_epi32(_mm_castps_si128(a), 31))
#define VMOR _mm_or_ps
#define VMAND _mm_and_ps
#define VSEL(m, a, b) _mm_or_ps(_mm_and_ps(m, a), _mm_andnot_ps(m, b))
#define VNEG(v) _mm_xor_ps(v, _mm_set1_ps(-0.0f))

#include "cpu/pointwise_simd.h"
#endif
