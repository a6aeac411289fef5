/* Batch correctly rounded math, NEON level (src/cpu/vmath.h): 4 floats per
 * block, evaluated as two vectors of 2 binary64 lanes (aarch64 Advanced
 * SIMD).
 *
 * The argument is src/cpu/vmath_avx2.c's header comment, in its simplest
 * form: here no step is fused, every lane performs the scalar fast path's IEEE binary64
 * operations (math_internal.h) in the same order on the same operands (the
 * NEON multiply and add intrinsics are separate FMUL/FADD; the build
 * forbids contracting them), so its y is bitwise the scalar y; the rounding
 * test is the same pair of conversions to float (FCVTN rounds by FPCR:
 * nearest-even, no flush to zero in the contract's environment); lanes it
 * does not settle, NaNs and the specials the scalar code treats apart get
 * the scalar code's constant or the scalar function itself. Table entries
 * are loaded lane by lane at indices computed in the vector; erf's piece
 * index is FRINTZ (truncation, C's (int) conversion) clamped with
 * FMAXNM/FMINNM so NaN and inf lanes index inside the table.
 */
#include "cpu/cpu.h"

typedef int sb_vmath_neon_unit; /* keeps the unit non-empty elsewhere */

#if SB_HAVE_NEON_KERNELS
#include <arm_neon.h>
#include "cpu/vmath_internal.h"
#include "math/math_internal.h"

#define W 4

typedef float64x2_t vd;
typedef uint64x2_t vu;

static inline vd d2(double v) { return vdupq_n_f64(v); }
static inline vu u2(uint64_t v) { return vdupq_n_u64(v); }
static inline float32x4_t f4(float v) { return vdupq_n_f32(v); }
static inline vd add(vd a, vd b) { return vaddq_f64(a, b); }
static inline vd sub(vd a, vd b) { return vsubq_f64(a, b); }
static inline vd mul(vd a, vd b) { return vmulq_f64(a, b); }
static inline vu bits(vd a) { return vreinterpretq_u64_f64(a); }
static inline vd dbl(vu a) { return vreinterpretq_f64_u64(a); }

/* ---- the exp kernel: sb_exp_fast, lane by lane (see vmath_avx2.c) -------- */

typedef struct {
    vd s, t, tail;
} vexp_parts;

static inline vexp_parts vexp_fast(vd a) {
    const vd shifter = d2(0x1.8p52);
    vd z = add(mul(a, d2(SB_EXP_INVL)), shifter);
    vd kd = sub(z, shifter);
    vu zi = bits(z);
    vu j = vandq_u64(zi, u2(63));
    vu sbits = vaddq_u64(vshlq_n_u64(vbicq_u64(zi, u2(63)), 46), u2(0x3ff0000000000000));
    vd r = sub(sub(a, mul(kd, d2(SB_EXP_L1))), mul(kd, d2(SB_EXP_L2)));
    vd p = d2(SB_VM_EXP_C6);
    p = add(mul(p, r), d2(sb_exp_coef[5][0]));
    p = add(mul(p, r), d2(sb_exp_coef[4][0]));
    p = add(mul(p, r), d2(sb_exp_coef[3][0]));
    p = add(mul(p, r), d2(0.5));
    p = add(r, mul(mul(r, r), p));
    /* one 16-byte load per lane gives (t, tlo); unzip into t and tlo */
    vd e0 = vld1q_f64(sb_exp_tab[vgetq_lane_u64(j, 0)]);
    vd e1 = vld1q_f64(sb_exp_tab[vgetq_lane_u64(j, 1)]);
    vexp_parts f;
    f.s = dbl(sbits);
    f.t = vzip1q_f64(e0, e1);
    f.tail = add(mul(f.t, p), vzip2q_f64(e0, e1));
    return f;
}

/* ---- the log kernel: sb_log_fast(a, a_lo), lane by lane -------------------- */

static inline vd vlog_fast(vd a, vd a_lo) {
    vu u = bits(a);
    vu bin = vandq_u64(vshrq_n_u64(u, 45), u2(127));
    vu up = vshrq_n_u64(bin, 6); /* bins >= 64 use m/2 */
    vu mbits = vorrq_u64(vandq_u64(u, u2(0x000fffffffffffff)),
                         vsubq_u64(u2(0x3ff0000000000000), vshlq_n_u64(up, 52)));
    vu ebits = vaddq_u64(vshrq_n_u64(u, 52), up);
    vd e = sub(dbl(vorrq_u64(ebits, u2(0x4330000000000000))), d2(0x1p52 + 1023));
    const double *t0 = sb_log_tab[vgetq_lane_u64(bin, 0)];
    const double *t1 = sb_log_tab[vgetq_lane_u64(bin, 1)];
    vd c = vsetq_lane_f64(t1[0], vdupq_n_f64(t0[0]), 1);
    vd l1 = vsetq_lane_f64(t1[1], vdupq_n_f64(t0[1]), 1);
    vd l2 = vsetq_lane_f64(t1[2], vdupq_n_f64(t0[2]), 1);
    vd r = sub(mul(dbl(mbits), c), d2(1.0));
    vd small = add(add(mul(e, d2(SB_LN2_LO)), l2), vdivq_f64(a_lo, a));
    vd p = d2(sb_log1p_coef[8][0]);
    for (int n = 7; n >= 2; n--) p = add(mul(p, r), d2(sb_log1p_coef[n][0]));
    p = add(r, mul(mul(r, r), p));
    return add(add(mul(e, d2(SB_LN2_HI)), l1), add(small, p));
}

/* ---- rounding test and block plumbing -------------------------------------- */

/* sb_round_check on both halves: 4 floats and the mask of settled lanes. */
static inline float32x4_t vround4(vd y0, vd y1, uint32x4_t *ok) {
    vd d0 = mul(y0, d2(SB_FAST_EPS)), d1 = mul(y1, d2(SB_FAST_EPS));
    float32x4_t lo = vcvt_high_f32_f64(vcvt_f32_f64(sub(y0, d0)), sub(y1, d1));
    float32x4_t hi = vcvt_high_f32_f64(vcvt_f32_f64(add(y0, d0)), add(y1, d1));
    *ok = vceqq_u32(vreinterpretq_u32_f32(lo), vreinterpretq_u32_f32(hi));
    return lo;
}

static inline vd lo2(float32x4_t v) { return vcvt_f64_f32(vget_low_f32(v)); }
static inline vd hi2(float32x4_t v) { return vcvt_high_f64_f32(v); }

static inline float32x4_t self(uint32x4_t m, float32x4_t a, float32x4_t b) { /* m ? b : a */
    return vbslq_f32(m, b, a);
}

static inline uint32_t finish(float32x4_t xv, float32x4_t res, uint32x4_t ok, float *y,
                              float *xsave) {
    static const uint32_t lane_bit[4] = {1, 2, 4, 8};
    ok = vandq_u32(ok, vceqq_f32(xv, xv)); /* NaNs: the scalar code */
    uint32_t bad = vaddvq_u32(vbicq_u32(vld1q_u32(lane_bit), ok));
    if (bad) vst1q_f32(xsave, xv);
    vst1q_f32(y, res);
    return bad;
}

static inline float32x4_t absf(float32x4_t x) { return vabsq_f32(x); }
static inline float32x4_t with_sign(float32x4_t r, float32x4_t x) { /* r >= 0 */
    return vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(r),
                                           vandq_u32(vreinterpretq_u32_f32(x), vdupq_n_u32(0x80000000u))));
}

/* ---- expf ------------------------------------------------------------------ */

static inline vd exp_y(vd a) {
    vexp_parts f = vexp_fast(a);
    return mul(f.s, add(f.t, f.tail));
}

SB_VM_BLOCK expf_block(const float *x, float *y, float *xsave) {
    float32x4_t xv = vld1q_f32(x);
    uint32x4_t ok;
    float32x4_t res = vround4(exp_y(lo2(xv)), exp_y(hi2(xv)), &ok);
    uint32x4_t over = vcgtq_f32(xv, f4(89.0f)), under = vcltq_f32(xv, f4(-104.0f));
    res = self(over, res, f4(__builtin_inff()));
    res = self(under, res, f4(0.0f));
    return finish(xv, res, vorrq_u32(ok, vorrq_u32(over, under)), y, xsave);
}

/* ---- expm1f ---------------------------------------------------------------- */

static inline vd expm1_y(vd a) {
    vexp_parts f = vexp_fast(a);
    return add(sub(mul(f.s, f.t), d2(1.0)), mul(f.s, f.tail));
}

SB_VM_BLOCK expm1f_block(const float *x, float *y, float *xsave) {
    float32x4_t xv = vld1q_f32(x);
    uint32x4_t ok;
    float32x4_t res = vround4(expm1_y(lo2(xv)), expm1_y(hi2(xv)), &ok);
    uint32x4_t zero = vceqq_f32(xv, f4(0.0f));
    uint32x4_t over = vcgtq_f32(xv, f4(89.0f)), under = vcltq_f32(xv, f4(-18.0f));
    res = self(zero, res, xv); /* expm1(-0) = -0 */
    res = self(over, res, f4(__builtin_inff()));
    res = self(under, res, f4(-1.0f));
    ok = vorrq_u32(ok, vorrq_u32(zero, vorrq_u32(over, under)));
    return finish(xv, res, ok, y, xsave);
}

/* ---- logf: 0 < x < inf here, the rest by the scalar function ---------------- */

SB_VM_BLOCK logf_block(const float *x, float *y, float *xsave) {
    float32x4_t xv = vld1q_f32(x);
    uint32x4_t ok;
    vd zero = d2(0.0);
    float32x4_t res = vround4(vlog_fast(lo2(xv), zero), vlog_fast(hi2(xv), zero), &ok);
    uint32x4_t normal = vandq_u32(vcgtq_f32(xv, f4(0.0f)), vcltq_f32(xv, f4(__builtin_inff())));
    return finish(xv, res, vandq_u32(ok, normal), y, xsave);
}

/* ---- log1pf: both scalar branches, the lane's own kept (see vmath_avx2.c) ---- */

static inline vd log1p_y(vd a) {
    vd p = d2(sb_log1p_coef[8][0]);
    for (int n = 7; n >= 2; n--) p = add(mul(p, a), d2(sb_log1p_coef[n][0]));
    vd direct = add(a, mul(mul(a, a), p));
    vd one = d2(1.0);
    vd s = add(one, a), bb = sub(s, one);
    vd s_lo = add(sub(one, sub(s, bb)), sub(a, bb));
    vd via_log = vlog_fast(s, s_lo);
    vu near = vandq_u64(vcgeq_f64(a, d2(-0x1p-8)), vcltq_f64(a, d2(0x1p-7)));
    return vbslq_f64(near, direct, via_log);
}

SB_VM_BLOCK log1pf_block(const float *x, float *y, float *xsave) {
    float32x4_t xv = vld1q_f32(x);
    uint32x4_t ok;
    float32x4_t res = vround4(log1p_y(lo2(xv)), log1p_y(hi2(xv)), &ok);
    uint32x4_t inside = vandq_u32(vcgtq_f32(xv, f4(-1.0f)), vcltq_f32(xv, f4(__builtin_inff())));
    uint32x4_t zero = vceqq_f32(xv, f4(0.0f));
    res = self(zero, res, xv); /* log1p(-0) = -0 */
    return finish(xv, res, vorrq_u32(vandq_u32(ok, inside), zero), y, xsave);
}

/* ---- tanhf: on |x|, sign last; +-0 needs no special lane (vmath_avx2.c) ----- */

static inline vd tanh_y(vd ax) {
    vexp_parts f = vexp_fast(mul(d2(2.0), ax));
    vd e = add(sub(mul(f.s, f.t), d2(1.0)), mul(f.s, f.tail));
    return vdivq_f64(e, add(e, d2(2.0)));
}

SB_VM_BLOCK tanhf_block(const float *x, float *y, float *xsave) {
    float32x4_t xv = vld1q_f32(x), ax = absf(xv);
    uint32x4_t ok;
    float32x4_t res = vround4(tanh_y(lo2(ax)), tanh_y(hi2(ax)), &ok);
    uint32x4_t sat = vcgeq_f32(ax, f4(10.0f));
    res = self(sat, res, f4(1.0f));
    return finish(xv, with_sign(res, xv), vorrq_u32(ok, sat), y, xsave);
}

/* ---- erff: both scalar branches, piece coefficients loaded per lane ---------- */

static inline vd erf_y(vd a) {
    vd u = mul(a, a);
    vd p0 = d2(sb_erf_p0[8]);
    for (int k = 7; k >= 0; k--) p0 = add(mul(p0, u), d2(sb_erf_p0[k]));
    p0 = mul(a, p0);
    vd fi = vrndq_f64(mul(sub(a, d2(0.5)), d2(4.0)));
    fi = vminnmq_f64(vmaxnmq_f64(fi, d2(0.0)), d2(13.0));
    vd t = sub(a, add(d2(0.625), mul(d2(0.25), fi)));
    const double *c0 = sb_erf_p[(int)vgetq_lane_f64(fi, 0)];
    const double *c1 = sb_erf_p[(int)vgetq_lane_f64(fi, 1)];
    vd p = vsetq_lane_f64(c1[11], vdupq_n_f64(c0[11]), 1);
    for (int k = 10; k >= 0; k--) p = add(mul(p, t), vsetq_lane_f64(c1[k], vdupq_n_f64(c0[k]), 1));
    return vbslq_f64(vcltq_f64(a, d2(0.5)), p0, p);
}

SB_VM_BLOCK erff_block(const float *x, float *y, float *xsave) {
    float32x4_t xv = vld1q_f32(x), ax = absf(xv);
    uint32x4_t ok;
    float32x4_t res = vround4(erf_y(lo2(ax)), erf_y(hi2(ax)), &ok);
    uint32x4_t sat = vcgeq_f32(ax, f4(4.0f));
    res = self(sat, res, f4(1.0f));
    return finish(xv, with_sign(res, xv), vorrq_u32(ok, sat), y, xsave);
}

/* ---- entry points ----------------------------------------------------------------- */

#define SB_VM_DEFINE(name)                                                    \
    static void name##_n(const float *x, float *y, int64_t n) {              \
        sb_vm_drive(x, y, n, W, name##_block, sb_##name);                     \
    }
SB_VM_DEFINE(expf)
SB_VM_DEFINE(logf)
SB_VM_DEFINE(tanhf)
SB_VM_DEFINE(expm1f)
SB_VM_DEFINE(log1pf)
SB_VM_DEFINE(erff)

const sb_vmath_table sb_vmath_neon = {expf_n, logf_n, tanhf_n, expm1f_n, log1pf_n, erff_n};

#endif
