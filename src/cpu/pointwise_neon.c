/* Pointwise vector loops with NEON (4 lanes, fused vfmaq); see
 * pointwise_simd.h. */
#include "cpu/ops_internal.h"

typedef int sb_pointwise_neon_unit_not_empty;

#if SB_HAVE_NEON_KERNELS
#include <arm_neon.h>

typedef float32x4_t V;
#define VN 4
#define SFX(name) name##_neon
#define VHAVE_FMA 1
#define VLOAD vld1q_f32
#define VSTORE vst1q_f32
#define VSET1 vdupq_n_f32
#define VZERO() vdupq_n_f32(0.0f)
#define VADD vaddq_f32
#define VSUB vsubq_f32
#define VMUL vmulq_f32
#define VDIV vdivq_f32
#define VSQRT vsqrtq_f32
#define VFMA(a, b, c) vfmaq_f32(c, a, b)
#define VGT(a, b) vcgtq_f32(a, b)
#define VLE(a, b) vcleq_f32(a, b)
#define VEQ(a, b) vceqq_f32(a, b)
#define VUNORD(a) vmvnq_u32(vceqq_f32(a, a))
#define VSIGN(a) vreinterpretq_u32_s32(vshrq_n_s32(vreinterpretq_s32_f32(a), 31))
#define VMOR vorrq_u32
#define VMAND vandq_u32
#define VSEL(m, a, b) vbslq_f32(m, a, b)
#define VNEG vnegq_f32

#include "cpu/pointwise_simd.h"
#endif
