/* Batch correctly rounded math, NEON level (src/cpu/vmath.h): the template
 * src/cpu/vmath_simd.h (whose header is the argument for the bits) over
 * aarch64 Advanced SIMD: 4 floats per block, evaluated as two vectors of 2
 * binary64 lanes.
 *
 * No step is fused: the NEON multiply and add intrinsics are separate
 * FMUL/FADD (the build forbids contracting them), so every lane performs
 * the scalar fast path's IEEE binary64 operations in the same order on the
 * same operands and its y is bitwise the scalar y; the rounding test is the
 * same pair of conversions to float (FCVTN rounds by FPCR: nearest-even, no
 * flush to zero in the contract's environment). Table entries are loaded
 * lane by lane at indices computed in the vector; erf's piece index is
 * FRINTZ (truncation, C's (int) conversion) clamped with FMAXNM/FMINNM so
 * NaN and inf lanes index inside the table. */
#include "cpu/cpu.h"

typedef int sb_vmath_neon_unit; /* keeps the unit non-empty elsewhere */

#if SB_HAVE_NEON_KERNELS
#include <arm_neon.h>
#include "cpu/vmath_internal.h"

typedef float64x2_t vm_d;
typedef uint64x2_t vm_dm;
typedef uint64x2_t vm_i;
typedef float32x4_t vm_f;
typedef uint32x4_t vm_fm;

#define VM_W 4
#define VM_SFX(name) name##_neon
#define VM_FUSED 0

#define VM_D(x) vdupq_n_f64(x)
#define VM_I(x) vdupq_n_u64((uint64_t)(x))
#define VM_F(x) vdupq_n_f32(x)
#define VM_ADD vaddq_f64
#define VM_SUB vsubq_f64
#define VM_MUL vmulq_f64
#define VM_DIV vdivq_f64
#define VM_FMA(a, b, c) vaddq_f64(vmulq_f64(a, b), c)
#define VM_ADDMUL(c, a, b) vaddq_f64(c, vmulq_f64(a, b))
#define VM_FNMA(a, b, c) vsubq_f64(c, vmulq_f64(a, b))
#define VM_ASI vreinterpretq_u64_f64
#define VM_ASD vreinterpretq_f64_u64
#define VM_IAND vandq_u64
#define VM_IOR vorrq_u64
#define VM_IADD vaddq_u64
#define VM_ISUB vsubq_u64
#define VM_ICLR vbicq_u64
#define VM_ISHL vshlq_n_u64
#define VM_ISHR vshrq_n_u64
#define VM_DGE vcgeq_f64
#define VM_DLT vcltq_f64
#define VM_DMAND vandq_u64
#define VM_DSEL vbslq_f64

#define VM_FLOAD vld1q_f32
#define VM_FSTORE vst1q_f32
#define VM_FSUB vsubq_f32
#define VM_FMUL vmulq_f32
#define VM_LO(v) vcvt_f64_f32(vget_low_f32(v))
#define VM_HI(v) vcvt_high_f64_f32(v)
#define VM_FGT vcgtq_f32
#define VM_FLT vcltq_f32
#define VM_FGE vcgeq_f32
#define VM_FEQ vceqq_f32
#define VM_FORD(a) vceqq_f32(a, a)
#define VM_FMOR vorrq_u32
#define VM_FMAND vandq_u32
#define VM_FSEL vbslq_f32
#define VM_FABS vabsq_f32
#define VM_FSIGNED(r, x)                                                                \
    vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(r),                            \
                                    vandq_u32(vreinterpretq_u32_f32(x), vdupq_n_u32(0x80000000u))))
#define VM_FXORSIGN(r, x)                                                               \
    vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(r),                            \
                                    vandq_u32(vreinterpretq_u32_f32(x), vdupq_n_u32(0x80000000u))))
#define VM_IXOR veorq_u64
#define VM_DMOR vorrq_u64
#define VM_IODD(i) vtstq_u64(i, vdupq_n_u64(1))

static inline uint32_t vm_fbits(uint32x4_t m) {
    static const uint32_t lane_bit[4] = {1, 2, 4, 8};
    return vaddvq_u32(vandq_u32(vld1q_u32(lane_bit), m));
}
#define VM_FBITS vm_fbits

/* sb_round_check on both halves: 4 floats and the mask of settled lanes. */
static inline float32x4_t vm_round(float64x2_t y0, float64x2_t y1, uint32x4_t *ok) {
    float64x2_t d0 = vmulq_f64(y0, vdupq_n_f64(SB_FAST_EPS)), d1 = vmulq_f64(y1, vdupq_n_f64(SB_FAST_EPS));
    float32x4_t lo = vcvt_high_f32_f64(vcvt_f32_f64(vsubq_f64(y0, d0)), vsubq_f64(y1, d1));
    float32x4_t hi = vcvt_high_f32_f64(vcvt_f32_f64(vaddq_f64(y0, d0)), vaddq_f64(y1, d1));
    *ok = vceqq_u32(vreinterpretq_u32_f32(lo), vreinterpretq_u32_f32(hi));
    return lo;
}
#define VM_ROUND vm_round

/* one 16-byte load per lane gives (t, tlo); unzip into t and tlo */
static inline void exp_tab(uint64x2_t j, float64x2_t *t, float64x2_t *tlo) {
    float64x2_t e0 = vld1q_f64(sb_exp_tab[vgetq_lane_u64(j, 0)]);
    float64x2_t e1 = vld1q_f64(sb_exp_tab[vgetq_lane_u64(j, 1)]);
    *t = vzip1q_f64(e0, e1);
    *tlo = vzip2q_f64(e0, e1);
}
#define VM_EXP_TAB exp_tab

/* RN(2^(j/16)) = sb_exp_tab[4j][0] for the 2 lanes' j < 16 */
static inline float64x2_t exp16_tab(uint64x2_t j) {
    float64x2_t t = vdupq_n_f64(sb_exp_tab[4 * vgetq_lane_u64(j, 0)][0]);
    return vsetq_lane_f64(sb_exp_tab[4 * vgetq_lane_u64(j, 1)][0], t, 1);
}
#define VM_EXP16_TAB exp16_tab

static inline void log_tab(uint64x2_t bin, float64x2_t *c, float64x2_t *l1, float64x2_t *l2) {
    const double *t0 = sb_log_tab[vgetq_lane_u64(bin, 0)];
    const double *t1 = sb_log_tab[vgetq_lane_u64(bin, 1)];
    *c = vsetq_lane_f64(t1[0], vdupq_n_f64(t0[0]), 1);
    *l1 = vsetq_lane_f64(t1[1], vdupq_n_f64(t0[1]), 1);
    *l2 = vsetq_lane_f64(t1[2], vdupq_n_f64(t0[2]), 1);
}
#define VM_LOG_TAB log_tab

#define VM_ERF_PIECE(v) \
    vminnmq_f64(vmaxnmq_f64(vrndq_f64(v), vdupq_n_f64(0.0)), vdupq_n_f64(SB_ERF_PIECES - 1))

/* the two lanes' coefficient rows, read lane by lane */
typedef struct {
    const double *c0, *c1;
} vm_erf_rows;

static inline void erf_rows(float64x2_t fi, vm_erf_rows *rows) {
    rows->c0 = sb_erf_p[(int)vgetq_lane_f64(fi, 0)];
    rows->c1 = sb_erf_p[(int)vgetq_lane_f64(fi, 1)];
}
#define VM_ERF_ROWS erf_rows
#define VM_ERF_COEF(rows, k) vsetq_lane_f64((rows).c1[k], vdupq_n_f64((rows).c0[k]), 1)

#include "cpu/vmath_simd.h"
#endif
