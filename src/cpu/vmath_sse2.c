/* Batch correctly rounded math, SSE2 level (src/cpu/vmath.h): 4 floats per
 * block, evaluated as two vectors of 2 binary64 lanes.
 *
 * The argument is src/cpu/vmath_avx2.c's header comment, in its simplest
 * form: here no step is fused, every lane performs the scalar fast path's IEEE binary64
 * operations (math_internal.h) in the same order on the same operands, so
 * its y is bitwise the scalar y; the rounding test is the same pair of
 * conversions to float (cvtpd2ps, by MXCSR); lanes it does not settle, NaNs
 * and the specials the scalar code treats apart get the scalar code's
 * constant or the scalar function itself. SSE2 has no gathers, blends or
 * rounding instructions: table entries are loaded lane by lane at the
 * indices computed in the vector, selects are and/andnot/or, and erf's
 * piece index (int)((a - 1/2)*4) is the truncating cvttpd2dq, which is C's
 * conversion.
 */
#include "cpu/cpu.h"

typedef int sb_vmath_sse2_unit; /* keeps the unit non-empty elsewhere */

#if SB_HAVE_X86_KERNELS
#include <emmintrin.h>
#include "cpu/vmath_internal.h"
#include "math/math_internal.h"

#define W 4

static inline __m128d d2(double v) { return _mm_set1_pd(v); }
static inline __m128i i2(int64_t v) { return _mm_set1_epi64x(v); }
static inline __m128 f4(float v) { return _mm_set1_ps(v); }
static inline __m128d add(__m128d a, __m128d b) { return _mm_add_pd(a, b); }
static inline __m128d sub(__m128d a, __m128d b) { return _mm_sub_pd(a, b); }
static inline __m128d mul(__m128d a, __m128d b) { return _mm_mul_pd(a, b); }
static inline __m128d seld(__m128d m, __m128d a, __m128d b) { /* m ? b : a */
    return _mm_or_pd(_mm_and_pd(m, b), _mm_andnot_pd(m, a));
}
static inline __m128 self(__m128 m, __m128 a, __m128 b) {
    return _mm_or_ps(_mm_and_ps(m, b), _mm_andnot_ps(m, a));
}

/* ---- the exp kernel: sb_exp_fast, lane by lane (see vmath_avx2.c) -------- */

typedef struct {
    __m128d s, t, tail;
} vexp_parts;

static inline vexp_parts vexp_fast(__m128d a) {
    const __m128d shifter = d2(0x1.8p52);
    __m128d z = add(mul(a, d2(SB_EXP_INVL)), shifter);
    __m128d kd = sub(z, shifter);
    __m128i zi = _mm_castpd_si128(z);
    __m128i j2 = _mm_slli_epi64(_mm_and_si128(zi, i2(63)), 1);
    __m128i sbits = _mm_add_epi64(_mm_slli_epi64(_mm_andnot_si128(i2(63), zi), 46),
                                  i2(0x3ff0000000000000));
    __m128d r = sub(sub(a, mul(kd, d2(SB_EXP_L1))), mul(kd, d2(SB_EXP_L2)));
    __m128d p = d2(SB_VM_EXP_C6);
    p = add(mul(p, r), d2(sb_exp_coef[5][0]));
    p = add(mul(p, r), d2(sb_exp_coef[4][0]));
    p = add(mul(p, r), d2(sb_exp_coef[3][0]));
    p = add(mul(p, r), d2(0.5));
    p = add(r, mul(mul(r, r), p));
    /* one 16-byte load per lane gives (t, tlo); unpack into t and tlo */
    int64_t j0 = _mm_cvtsi128_si64(j2), j1 = _mm_cvtsi128_si64(_mm_unpackhi_epi64(j2, j2));
    __m128d e0 = _mm_loadu_pd(&sb_exp_tab[0][0] + j0), e1 = _mm_loadu_pd(&sb_exp_tab[0][0] + j1);
    vexp_parts f;
    f.s = _mm_castsi128_pd(sbits);
    f.t = _mm_unpacklo_pd(e0, e1);
    f.tail = add(mul(f.t, p), _mm_unpackhi_pd(e0, e1));
    return f;
}

/* ---- the log kernel: sb_log_fast(a, a_lo), lane by lane -------------------- */

static inline __m128d vlog_fast(__m128d a, __m128d a_lo) {
    __m128i u = _mm_castpd_si128(a);
    __m128i bin = _mm_and_si128(_mm_srli_epi64(u, 45), i2(127));
    __m128i i3 = _mm_add_epi64(_mm_slli_epi64(bin, 1), bin);
    __m128i up = _mm_srli_epi64(bin, 6); /* bins >= 64 use m/2 */
    __m128i mbits = _mm_or_si128(_mm_and_si128(u, i2(0x000fffffffffffff)),
                                 _mm_sub_epi64(i2(0x3ff0000000000000), _mm_slli_epi64(up, 52)));
    __m128i ebits = _mm_add_epi64(_mm_srli_epi64(u, 52), up);
    __m128d e = sub(_mm_castsi128_pd(_mm_or_si128(ebits, i2(0x4330000000000000))),
                    d2(0x1p52 + 1023));
    int64_t k0 = _mm_cvtsi128_si64(i3), k1 = _mm_cvtsi128_si64(_mm_unpackhi_epi64(i3, i3));
    const double *t0 = &sb_log_tab[0][0] + k0, *t1 = &sb_log_tab[0][0] + k1;
    __m128d c = _mm_set_pd(t1[0], t0[0]);
    __m128d l1 = _mm_set_pd(t1[1], t0[1]);
    __m128d l2 = _mm_set_pd(t1[2], t0[2]);
    __m128d r = sub(mul(_mm_castsi128_pd(mbits), c), d2(1.0));
    __m128d small = add(add(mul(e, d2(SB_LN2_LO)), l2), _mm_div_pd(a_lo, a));
    __m128d p = d2(sb_log1p_coef[8][0]);
    for (int n = 7; n >= 2; n--) p = add(mul(p, r), d2(sb_log1p_coef[n][0]));
    p = add(r, mul(mul(r, r), p));
    return add(add(mul(e, d2(SB_LN2_HI)), l1), add(small, p));
}

/* ---- rounding test and block plumbing -------------------------------------- */

/* sb_round_check on both halves: 4 floats and the mask of settled lanes. */
static inline __m128 vround4(__m128d y0, __m128d y1, __m128 *ok) {
    __m128d d0 = mul(y0, d2(SB_FAST_EPS)), d1 = mul(y1, d2(SB_FAST_EPS));
    __m128 lo = _mm_movelh_ps(_mm_cvtpd_ps(sub(y0, d0)), _mm_cvtpd_ps(sub(y1, d1)));
    __m128 hi = _mm_movelh_ps(_mm_cvtpd_ps(add(y0, d0)), _mm_cvtpd_ps(add(y1, d1)));
    *ok = _mm_castsi128_ps(_mm_cmpeq_epi32(_mm_castps_si128(lo), _mm_castps_si128(hi)));
    return lo;
}

static inline __m128d lo2(__m128 v) { return _mm_cvtps_pd(v); }
static inline __m128d hi2(__m128 v) { return _mm_cvtps_pd(_mm_movehl_ps(v, v)); }

static inline uint32_t finish(__m128 xv, __m128 res, __m128 ok, float *y, float *xsave) {
    ok = _mm_and_ps(ok, _mm_cmpord_ps(xv, xv)); /* NaNs: the scalar code */
    uint32_t bad = ~(uint32_t)_mm_movemask_ps(ok) & 0xfu;
    if (bad) _mm_storeu_ps(xsave, xv);
    _mm_storeu_ps(y, res);
    return bad;
}

static inline __m128 absf(__m128 x) { return _mm_andnot_ps(f4(-0.0f), x); }
static inline __m128 signf(__m128 x) { return _mm_and_ps(f4(-0.0f), x); }

/* ---- expf ------------------------------------------------------------------ */

static inline __m128d exp_y(__m128d a) {
    vexp_parts f = vexp_fast(a);
    return mul(f.s, add(f.t, f.tail));
}

SB_VM_BLOCK expf_block(const float *x, float *y, float *xsave) {
    __m128 xv = _mm_loadu_ps(x), ok;
    __m128 res = vround4(exp_y(lo2(xv)), exp_y(hi2(xv)), &ok);
    __m128 over = _mm_cmpgt_ps(xv, f4(89.0f)), under = _mm_cmplt_ps(xv, f4(-104.0f));
    res = self(over, res, f4(__builtin_inff()));
    res = self(under, res, _mm_setzero_ps());
    return finish(xv, res, _mm_or_ps(ok, _mm_or_ps(over, under)), y, xsave);
}

/* ---- expm1f ---------------------------------------------------------------- */

static inline __m128d expm1_y(__m128d a) {
    vexp_parts f = vexp_fast(a);
    return add(sub(mul(f.s, f.t), d2(1.0)), mul(f.s, f.tail));
}

SB_VM_BLOCK expm1f_block(const float *x, float *y, float *xsave) {
    __m128 xv = _mm_loadu_ps(x), ok;
    __m128 res = vround4(expm1_y(lo2(xv)), expm1_y(hi2(xv)), &ok);
    __m128 zero = _mm_cmpeq_ps(xv, _mm_setzero_ps());
    __m128 over = _mm_cmpgt_ps(xv, f4(89.0f)), under = _mm_cmplt_ps(xv, f4(-18.0f));
    res = self(zero, res, xv); /* expm1(-0) = -0 */
    res = self(over, res, f4(__builtin_inff()));
    res = self(under, res, f4(-1.0f));
    ok = _mm_or_ps(ok, _mm_or_ps(zero, _mm_or_ps(over, under)));
    return finish(xv, res, ok, y, xsave);
}

/* ---- logf: 0 < x < inf here, the rest by the scalar function ---------------- */

SB_VM_BLOCK logf_block(const float *x, float *y, float *xsave) {
    __m128 xv = _mm_loadu_ps(x), ok;
    __m128d zero = _mm_setzero_pd();
    __m128 res = vround4(vlog_fast(lo2(xv), zero), vlog_fast(hi2(xv), zero), &ok);
    __m128 normal = _mm_and_ps(_mm_cmpgt_ps(xv, _mm_setzero_ps()),
                               _mm_cmplt_ps(xv, f4(__builtin_inff())));
    return finish(xv, res, _mm_and_ps(ok, normal), y, xsave);
}

/* ---- log1pf: both scalar branches, the lane's own kept (see vmath_avx2.c) ---- */

static inline __m128d log1p_y(__m128d a) {
    __m128d p = d2(sb_log1p_coef[8][0]);
    for (int n = 7; n >= 2; n--) p = add(mul(p, a), d2(sb_log1p_coef[n][0]));
    __m128d direct = add(a, mul(mul(a, a), p));
    __m128d one = d2(1.0);
    __m128d s = add(one, a), bb = sub(s, one);
    __m128d s_lo = add(sub(one, sub(s, bb)), sub(a, bb));
    __m128d via_log = vlog_fast(s, s_lo);
    __m128d near = _mm_and_pd(_mm_cmpge_pd(a, d2(-0x1p-8)), _mm_cmplt_pd(a, d2(0x1p-7)));
    return seld(near, via_log, direct);
}

SB_VM_BLOCK log1pf_block(const float *x, float *y, float *xsave) {
    __m128 xv = _mm_loadu_ps(x), ok;
    __m128 res = vround4(log1p_y(lo2(xv)), log1p_y(hi2(xv)), &ok);
    __m128 inside = _mm_and_ps(_mm_cmpgt_ps(xv, f4(-1.0f)), _mm_cmplt_ps(xv, f4(__builtin_inff())));
    __m128 zero = _mm_cmpeq_ps(xv, _mm_setzero_ps());
    res = self(zero, res, xv); /* log1p(-0) = -0 */
    return finish(xv, res, _mm_or_ps(_mm_and_ps(ok, inside), zero), y, xsave);
}

/* ---- tanhf: on |x|, sign last; +-0 needs no special lane (vmath_avx2.c) ----- */

static inline __m128d tanh_y(__m128d ax) {
    vexp_parts f = vexp_fast(mul(d2(2.0), ax));
    __m128d e = add(sub(mul(f.s, f.t), d2(1.0)), mul(f.s, f.tail));
    return _mm_div_pd(e, add(e, d2(2.0)));
}

SB_VM_BLOCK tanhf_block(const float *x, float *y, float *xsave) {
    __m128 xv = _mm_loadu_ps(x), ax = absf(xv), ok;
    __m128 res = vround4(tanh_y(lo2(ax)), tanh_y(hi2(ax)), &ok);
    __m128 sat = _mm_cmpge_ps(ax, f4(10.0f));
    res = self(sat, res, f4(1.0f));
    return finish(xv, _mm_or_ps(res, signf(xv)), _mm_or_ps(ok, sat), y, xsave);
}

/* ---- erff: both scalar branches, piece coefficients loaded per lane ---------- */

static inline __m128d erf_y(__m128d a) {
    __m128d u = mul(a, a);
    __m128d p0 = d2(sb_erf_p0[8]);
    for (int k = 7; k >= 0; k--) p0 = add(mul(p0, u), d2(sb_erf_p0[k]));
    p0 = mul(a, p0);
    /* (int) truncation; NaN, inf and huge give INT_MIN, clamped to piece 0 */
    __m128d fi = _mm_cvtepi32_pd(_mm_cvttpd_epi32(mul(sub(a, d2(0.5)), d2(4.0))));
    fi = _mm_min_pd(_mm_max_pd(fi, d2(0.0)), d2(13.0));
    __m128d t = sub(a, add(d2(0.625), mul(d2(0.25), fi)));
    __m128i ii = _mm_cvttpd_epi32(fi);
    const double *c0 = sb_erf_p[_mm_cvtsi128_si32(ii)];
    const double *c1 = sb_erf_p[_mm_cvtsi128_si32(_mm_srli_si128(ii, 4))];
    __m128d p = _mm_set_pd(c1[11], c0[11]);
    for (int k = 10; k >= 0; k--) p = add(mul(p, t), _mm_set_pd(c1[k], c0[k]));
    return seld(_mm_cmplt_pd(a, d2(0.5)), p, p0);
}

SB_VM_BLOCK erff_block(const float *x, float *y, float *xsave) {
    __m128 xv = _mm_loadu_ps(x), ax = absf(xv), ok;
    __m128 res = vround4(erf_y(lo2(ax)), erf_y(hi2(ax)), &ok);
    __m128 sat = _mm_cmpge_ps(ax, f4(4.0f));
    res = self(sat, res, f4(1.0f));
    return finish(xv, _mm_or_ps(res, signf(xv)), _mm_or_ps(ok, sat), y, xsave);
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

const sb_vmath_table sb_vmath_sse2 = {expf_n, logf_n, tanhf_n, expm1f_n, log1pf_n, erff_n};

#endif
