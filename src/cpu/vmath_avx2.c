/* Batch correctly rounded math, AVX2 level (src/cpu/vmath.h): 8 floats per
 * block, evaluated as two vectors of 4 binary64 lanes.
 *
 * Why the result is the scalar function's, bit for bit. Each sb_<f>f in
 * src/math/ computes a binary64 value y of f(x) with relative error below
 * about 2^-50 (the bound in math_internal.h, sb_exp_fast, sb_log_fast, and
 * the file's header), returns (float)(y - y*eps) when it equals
 * (float)(y + y*eps), eps = 2^-44 (sb_round_check), and otherwise goes to
 * its double-double slow path; it is correctly rounded on all 2^32 inputs
 * (make verify-math). Every lane below computes its own y' of f(x) and
 * applies the same test. When the test passes, f(x) lies in the enclosure
 * and the float it returns is RN(f(x)), which is exactly the scalar
 * function's result; when it fails, or the input is NaN or another special
 * case, the lane gets the scalar code's constant (exp overflow/underflow,
 * tanh/erf saturation, expm1 below -18, signed zeros) or the scalar function
 * itself (src/cpu/vmath_internal.h). So all that matters is that y' obeys
 * the scalar bound:
 *  - most steps are the scalar code's IEEE operations on the same operands
 *    in the same order, with the same constants and table entries (read at
 *    the same index), hence bitwise the same values. The integer steps are
 *    re-expressed exactly: k = RN(a*64/ln2) is read from the bits of
 *    z = a*64/ln2 + 1.5*2^52 (low bits = k in two's complement), j = k & 63,
 *    and 2^e = 2^((k-j)/64) is the bits ((z & ~63) << 46) + (1023 << 52),
 *    which is (e + 1023) << 52 modulo 2^64 since 1.5*2^52 << 46 vanishes;
 *    log's exponent e goes to double exactly as bits(2^52 + E) - (2^52+1023).
 *  - the exp reduction r = (a - kd*L1) - kd*L2 is done with two fused
 *    negated multiply-adds; kd*L1 and kd*L2 are exact in the scalar code
 *    (a has 24 significant bits, |k| < 2^14), so fused and unfused round
 *    the same exact value once: r is bitwise the scalar r.
 *  - the polynomial steps p*r + c (exp, log1p, erf Horner) and the
 *    combinations t*p + tlo, e*ln2 + L are fused (FMA): one rounding where
 *    the scalar code has two. The scalar bound is derived in the standard
 *    model fl(a op b) = (a op b)(1 + d), |d| <= 2^-53, for every operation;
 *    a fused step is the instance of that model with the product's d = 0,
 *    so the same bound holds for y'. (The values may differ from the scalar
 *    y in the last bits; the returned floats cannot.)
 * The test is the same pair of conversions to float (vcvtpd2ps rounds by
 * MXCSR: nearest-even with subnormals kept in the contract's environment).
 * `make verify-vmath` confirms equality with the scalar functions on all
 * 2^32 inputs of every function at every x86 level (docs/perf/vmath.md).
 *
 * Tables are read with per-lane loads at the indices computed in the
 * vector, then transposed (gathers are microcoded and slower on AMD): one
 * 16-byte load per lane for exp's (t, tlo), 16 + 8 bytes for log's
 * (c, L_hi, L_lo), three 32-byte loads for an erf piece's 12 coefficients.
 * Every index is masked or clamped to its table's range first, so special
 * lanes (inf, NaN, huge) never read outside a table.
 */
#include "cpu/cpu.h"

typedef int sb_vmath_avx2_unit; /* keeps the unit non-empty elsewhere */

#if SB_HAVE_X86_KERNELS
#include <immintrin.h>
#include "cpu/vmath_internal.h"
#include "math/math_internal.h"

#define W 8

static inline __m256d d4(double v) { return _mm256_set1_pd(v); }
static inline __m256i i4(int64_t v) { return _mm256_set1_epi64x(v); }
static inline __m256 f8(float v) { return _mm256_set1_ps(v); }
static inline __m256d add(__m256d a, __m256d b) { return _mm256_add_pd(a, b); }
static inline __m256d sub(__m256d a, __m256d b) { return _mm256_sub_pd(a, b); }
static inline __m256d mul(__m256d a, __m256d b) { return _mm256_mul_pd(a, b); }
/* a*b + c and c - a*b rounded once (see the header: an instance of the
 * scalar error analysis with the product's rounding error set to 0) */
static inline __m256d vfma(__m256d a, __m256d b, __m256d c) { return _mm256_fmadd_pd(a, b, c); }
static inline __m256d vfnma(__m256d a, __m256d b, __m256d c) { return _mm256_fnmadd_pd(a, b, c); }

/* ---- the exp kernel: sb_exp_fast, lane by lane ---------------------------- */

/* (t, tlo) = sb_exp_tab[j] for the 4 lanes' j (given as 2j): one 16-byte
 * load per lane, then a transpose. Faster than two gathers on CPUs whose
 * gathers are microcoded (AMD). */
static inline void exp_table(__m256i j2, __m256d *t, __m256d *tlo) {
    __m128i lo = _mm256_castsi256_si128(j2), hi = _mm256_extracti128_si256(j2, 1);
    const double *base = &sb_exp_tab[0][0];
    __m128d e0 = _mm_loadu_pd(base + _mm_cvtsi128_si64(lo));
    __m128d e1 = _mm_loadu_pd(base + _mm_extract_epi64(lo, 1));
    __m128d e2 = _mm_loadu_pd(base + _mm_cvtsi128_si64(hi));
    __m128d e3 = _mm_loadu_pd(base + _mm_extract_epi64(hi, 1));
    __m256d v02 = _mm256_set_m128d(e2, e0), v13 = _mm256_set_m128d(e3, e1);
    *t = _mm256_unpacklo_pd(v02, v13);
    *tlo = _mm256_unpackhi_pd(v02, v13);
}

typedef struct {
    __m256d s, t, tail;
} vexp_parts;

static inline vexp_parts vexp_fast(__m256d a) {
    const __m256d shifter = d4(0x1.8p52);
    __m256d z = add(mul(a, d4(SB_EXP_INVL)), shifter);
    __m256d kd = sub(z, shifter);
    __m256i zi = _mm256_castpd_si256(z);
    __m256i j2 = _mm256_slli_epi64(_mm256_and_si256(zi, i4(63)), 1);
    __m256i sbits = _mm256_add_epi64(_mm256_slli_epi64(_mm256_andnot_si256(i4(63), zi), 46),
                                     i4(0x3ff0000000000000));
    __m256d r = vfnma(kd, d4(SB_EXP_L2), vfnma(kd, d4(SB_EXP_L1), a));
    __m256d p = d4(SB_VM_EXP_C6);
    p = vfma(p, r, d4(sb_exp_coef[5][0]));
    p = vfma(p, r, d4(sb_exp_coef[4][0]));
    p = vfma(p, r, d4(sb_exp_coef[3][0]));
    p = vfma(p, r, d4(0.5));
    p = vfma(mul(r, r), p, r);
    vexp_parts f;
    f.s = _mm256_castsi256_pd(sbits);
    exp_table(j2, &f.t, &f.tail);
    f.tail = vfma(f.t, p, f.tail);
    return f;
}

/* ---- the log kernel: sb_log_fast(a, a_lo), lane by lane -------------------- */

/* (c, -log c hi, lo) = sb_log_tab[i] for the 4 lanes' i (given as 3i): a
 * 16-byte and an 8-byte load per lane, then a transpose (cheaper than three
 * gathers on AMD). */
static inline void log_table(__m256i i3, __m256d *c, __m256d *l1, __m256d *l2) {
    __m128i lo = _mm256_castsi256_si128(i3), hi = _mm256_extracti128_si256(i3, 1);
    const double *t0 = &sb_log_tab[0][0] + _mm_cvtsi128_si64(lo);
    const double *t1 = &sb_log_tab[0][0] + _mm_extract_epi64(lo, 1);
    const double *t2 = &sb_log_tab[0][0] + _mm_cvtsi128_si64(hi);
    const double *t3 = &sb_log_tab[0][0] + _mm_extract_epi64(hi, 1);
    __m256d v02 = _mm256_set_m128d(_mm_loadu_pd(t2), _mm_loadu_pd(t0));
    __m256d v13 = _mm256_set_m128d(_mm_loadu_pd(t3), _mm_loadu_pd(t1));
    *c = _mm256_unpacklo_pd(v02, v13);
    *l1 = _mm256_unpackhi_pd(v02, v13);
    *l2 = _mm256_set_pd(t3[2], t2[2], t1[2], t0[2]);
}

static inline __m256d vlog_fast(__m256d a, __m256d a_lo) {
    __m256i u = _mm256_castpd_si256(a);
    __m256i bin = _mm256_and_si256(_mm256_srli_epi64(u, 45), i4(127));
    __m256i i3 = _mm256_add_epi64(_mm256_slli_epi64(bin, 1), bin);
    __m256i up = _mm256_srli_epi64(bin, 6); /* bins >= 64 use m/2 */
    __m256i mbits = _mm256_or_si256(_mm256_and_si256(u, i4(0x000fffffffffffff)),
                                    _mm256_sub_epi64(i4(0x3ff0000000000000),
                                                     _mm256_slli_epi64(up, 52)));
    __m256i ebits = _mm256_add_epi64(_mm256_srli_epi64(u, 52), up);
    __m256d e = sub(_mm256_castsi256_pd(_mm256_or_si256(ebits, i4(0x4330000000000000))),
                    d4(0x1p52 + 1023));
    __m256d c, l1, l2;
    log_table(i3, &c, &l1, &l2);
    __m256d r = sub(mul(_mm256_castsi256_pd(mbits), c), d4(1.0));
    __m256d small = add(vfma(e, d4(SB_LN2_LO), l2), _mm256_div_pd(a_lo, a));
    __m256d p = d4(sb_log1p_coef[8][0]);
    for (int n = 7; n >= 2; n--) p = vfma(p, r, d4(sb_log1p_coef[n][0]));
    p = vfma(mul(r, r), p, r);
    return add(vfma(e, d4(SB_LN2_HI), l1), add(small, p));
}

/* ---- rounding test and block plumbing ---------------------------------------- */

/* sb_round_check on 4 lanes: the float, and all-ones where it is settled. */
static inline __m128 vround(__m256d y, __m128i *ok) {
    __m256d d = mul(y, d4(SB_FAST_EPS));
    __m128 lo = _mm256_cvtpd_ps(sub(y, d)), hi = _mm256_cvtpd_ps(add(y, d));
    *ok = _mm_cmpeq_epi32(_mm_castps_si128(lo), _mm_castps_si128(hi));
    return lo;
}

static inline __m256d lo4(__m256 v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
static inline __m256d hi4(__m256 v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }

/* Rounds the two halves' y, returning 8 floats and the settled mask. */
static inline __m256 vround8(__m256d y0, __m256d y1, __m256 *ok) {
    __m128i ok0, ok1;
    __m128 r0 = vround(y0, &ok0), r1 = vround(y1, &ok1);
    *ok = _mm256_castsi256_ps(_mm256_set_m128i(ok1, ok0));
    return _mm256_set_m128(r1, r0);
}

static inline __m256 sel(__m256 mask, __m256 a, __m256 b) { /* mask ? b : a */
    return _mm256_blendv_ps(a, b, mask);
}

/* Stores the block; returns the lanes left to the scalar function. NaN
 * inputs always are (the scalar code quiets them). */
static inline uint32_t finish(__m256 xv, __m256 res, __m256 ok, float *y, float *xsave) {
    ok = _mm256_and_ps(ok, _mm256_cmp_ps(xv, xv, _CMP_ORD_Q));
    uint32_t bad = ~(uint32_t)_mm256_movemask_ps(ok) & 0xffu;
    if (bad) _mm256_storeu_ps(xsave, xv);
    _mm256_storeu_ps(y, res);
    return bad;
}

/* ---- expf: sb_expf ------------------------------------------------------------ */

static inline __m256d exp_y(__m256d a) {
    vexp_parts f = vexp_fast(a);
    return mul(f.s, add(f.t, f.tail));
}

SB_VM_BLOCK expf_block(const float *x, float *y, float *xsave) {
    __m256 xv = _mm256_loadu_ps(x), ok;
    __m256 res = vround8(exp_y(lo4(xv)), exp_y(hi4(xv)), &ok);
    __m256 over = _mm256_cmp_ps(xv, f8(89.0f), _CMP_GT_OQ);
    __m256 under = _mm256_cmp_ps(xv, f8(-104.0f), _CMP_LT_OQ);
    res = sel(over, res, f8(__builtin_inff()));
    res = sel(under, res, _mm256_setzero_ps());
    ok = _mm256_or_ps(ok, _mm256_or_ps(over, under));
    return finish(xv, res, ok, y, xsave);
}

/* ---- expm1f: sb_expm1f ------------------------------------------------------- */

static inline __m256d expm1_y(__m256d a) {
    vexp_parts f = vexp_fast(a);
    return add(sub(mul(f.s, f.t), d4(1.0)), mul(f.s, f.tail));
}

SB_VM_BLOCK expm1f_block(const float *x, float *y, float *xsave) {
    __m256 xv = _mm256_loadu_ps(x), ok;
    __m256 res = vround8(expm1_y(lo4(xv)), expm1_y(hi4(xv)), &ok);
    __m256 zero = _mm256_cmp_ps(xv, _mm256_setzero_ps(), _CMP_EQ_OQ);
    __m256 over = _mm256_cmp_ps(xv, f8(89.0f), _CMP_GT_OQ);
    __m256 under = _mm256_cmp_ps(xv, f8(-18.0f), _CMP_LT_OQ);
    res = sel(zero, res, xv); /* expm1(-0) = -0 */
    res = sel(over, res, f8(__builtin_inff()));
    res = sel(under, res, f8(-1.0f));
    ok = _mm256_or_ps(ok, _mm256_or_ps(zero, _mm256_or_ps(over, under)));
    return finish(xv, res, ok, y, xsave);
}

/* ---- logf: sb_logf --------------------------------------------------------------
 * Only 0 < x < inf is computed here; 0, negatives, inf and NaN go to the
 * scalar function. */

SB_VM_BLOCK logf_block(const float *x, float *y, float *xsave) {
    __m256 xv = _mm256_loadu_ps(x), ok;
    __m256d zero = _mm256_setzero_pd();
    __m256 res = vround8(vlog_fast(lo4(xv), zero), vlog_fast(hi4(xv), zero), &ok);
    __m256 normal = _mm256_and_ps(_mm256_cmp_ps(xv, _mm256_setzero_ps(), _CMP_GT_OQ),
                                  _mm256_cmp_ps(xv, f8(__builtin_inff()), _CMP_LT_OQ));
    return finish(xv, res, _mm256_and_ps(ok, normal), y, xsave);
}

/* ---- log1pf: sb_log1pf -----------------------------------------------------------
 * Both of the scalar code's branches are computed and the lane's own one
 * kept: for -2^-8 <= a < 2^-7 the log1p polynomial of a, otherwise the log
 * kernel of the exact sum 1 + a = s_hi + s_lo (two_sum). Only -1 < x < inf,
 * x != 0 is computed here. */

static inline __m256d log1p_y(__m256d a) {
    __m256d p = d4(sb_log1p_coef[8][0]);
    for (int n = 7; n >= 2; n--) p = vfma(p, a, d4(sb_log1p_coef[n][0]));
    __m256d direct = vfma(mul(a, a), p, a);
    __m256d one = d4(1.0);
    __m256d s = add(one, a), bb = sub(s, one);
    __m256d s_lo = add(sub(one, sub(s, bb)), sub(a, bb));
    __m256d viaLog = vlog_fast(s, s_lo);
    __m256d near = _mm256_and_pd(_mm256_cmp_pd(a, d4(-0x1p-8), _CMP_GE_OQ),
                                 _mm256_cmp_pd(a, d4(0x1p-7), _CMP_LT_OQ));
    return _mm256_blendv_pd(viaLog, direct, near);
}

SB_VM_BLOCK log1pf_block(const float *x, float *y, float *xsave) {
    __m256 xv = _mm256_loadu_ps(x), ok;
    __m256 res = vround8(log1p_y(lo4(xv)), log1p_y(hi4(xv)), &ok);
    __m256 inside = _mm256_and_ps(_mm256_cmp_ps(xv, f8(-1.0f), _CMP_GT_OQ),
                                  _mm256_cmp_ps(xv, f8(__builtin_inff()), _CMP_LT_OQ));
    __m256 zero = _mm256_cmp_ps(xv, _mm256_setzero_ps(), _CMP_EQ_OQ);
    res = sel(zero, res, xv); /* log1p(-0) = -0 */
    ok = _mm256_or_ps(_mm256_and_ps(ok, inside), zero);
    return finish(xv, res, ok, y, xsave);
}

/* ---- tanhf: sb_tanhf ------------------------------------------------------------
 * On |x|, sign copied last. x = +-0 needs no special lane: a = 0 gives
 * e = 0, y = 0/2 = +0, which passes the test and takes x's sign. */

static inline __m256d tanh_y(__m256d ax) {
    vexp_parts f = vexp_fast(mul(d4(2.0), ax));
    __m256d e = add(sub(mul(f.s, f.t), d4(1.0)), mul(f.s, f.tail));
    return _mm256_div_pd(e, add(e, d4(2.0)));
}

SB_VM_BLOCK tanhf_block(const float *x, float *y, float *xsave) {
    __m256 xv = _mm256_loadu_ps(x), ok;
    __m256 sign = _mm256_and_ps(xv, f8(-0.0f));
    __m256 ax = _mm256_andnot_ps(f8(-0.0f), xv);
    __m256 res = vround8(tanh_y(lo4(ax)), tanh_y(hi4(ax)), &ok);
    __m256 sat = _mm256_cmp_ps(ax, f8(10.0f), _CMP_GE_OQ);
    res = sel(sat, res, f8(1.0f));
    ok = _mm256_or_ps(ok, sat);
    return finish(xv, _mm256_or_ps(res, sign), ok, y, xsave);
}

/* ---- erff: sb_erff ----------------------------------------------------------------
 * Both fast-path branches are computed: a < 1/2, erf(a) = a*P0(a^2); else
 * piece i = (int)((a - 1/2)*4) (0..13 for a < 4; clamped so other lanes
 * read inside the table), t = a - (0.625 + 0.25*i), degree-11 Horner with
 * the piece's coefficients gathered. On |x|, sign copied last; +-0 gives
 * 0*P0(0) = +0, passes the test and takes x's sign. */

/* The 12 coefficients of the 4 lanes' erf pieces (piece number in the low
 * bits of each lane of `piece`): each lane's row is 12 contiguous doubles,
 * loaded as three 4-vectors and transposed 4x4 (cheaper than 12 gathers). */
static inline void erf_coefs(__m256i piece, __m256d cf[12]) {
    __m128i lo = _mm256_castsi256_si128(piece), hi = _mm256_extracti128_si256(piece, 1);
    const double *r0 = sb_erf_p[(uint32_t)_mm_cvtsi128_si32(lo)];
    const double *r1 = sb_erf_p[(uint32_t)_mm_extract_epi32(lo, 2)];
    const double *r2 = sb_erf_p[(uint32_t)_mm_cvtsi128_si32(hi)];
    const double *r3 = sb_erf_p[(uint32_t)_mm_extract_epi32(hi, 2)];
    for (int b = 0; b < 3; b++) {
        __m256d A = _mm256_loadu_pd(r0 + 4 * b), B = _mm256_loadu_pd(r1 + 4 * b);
        __m256d C = _mm256_loadu_pd(r2 + 4 * b), D = _mm256_loadu_pd(r3 + 4 * b);
        __m256d ab0 = _mm256_unpacklo_pd(A, B), ab1 = _mm256_unpackhi_pd(A, B);
        __m256d cd0 = _mm256_unpacklo_pd(C, D), cd1 = _mm256_unpackhi_pd(C, D);
        cf[4 * b + 0] = _mm256_permute2f128_pd(ab0, cd0, 0x20);
        cf[4 * b + 1] = _mm256_permute2f128_pd(ab1, cd1, 0x20);
        cf[4 * b + 2] = _mm256_permute2f128_pd(ab0, cd0, 0x31);
        cf[4 * b + 3] = _mm256_permute2f128_pd(ab1, cd1, 0x31);
    }
}

static inline __m256d erf_y(__m256d a) {
    __m256d u = mul(a, a);
    __m256d p0 = d4(sb_erf_p0[8]);
    for (int k = 7; k >= 0; k--) p0 = vfma(p0, u, d4(sb_erf_p0[k]));
    p0 = mul(a, p0);
    __m256d fi = _mm256_round_pd(mul(sub(a, d4(0.5)), d4(4.0)), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    fi = _mm256_min_pd(_mm256_max_pd(fi, d4(0.0)), d4(13.0));
    __m256d t = sub(a, add(d4(0.625), mul(d4(0.25), fi)));
    __m256d cf[12];
    erf_coefs(_mm256_castpd_si256(add(fi, d4(0x1p52))), cf);
    __m256d p = cf[11];
    for (int k = 10; k >= 0; k--) p = vfma(p, t, cf[k]);
    return _mm256_blendv_pd(p, p0, _mm256_cmp_pd(a, d4(0.5), _CMP_LT_OQ));
}

SB_VM_BLOCK erff_block(const float *x, float *y, float *xsave) {
    __m256 xv = _mm256_loadu_ps(x), ok;
    __m256 sign = _mm256_and_ps(xv, f8(-0.0f));
    __m256 ax = _mm256_andnot_ps(f8(-0.0f), xv);
    __m256 res = vround8(erf_y(lo4(ax)), erf_y(hi4(ax)), &ok);
    __m256 sat = _mm256_cmp_ps(ax, f8(4.0f), _CMP_GE_OQ);
    res = sel(sat, res, f8(1.0f));
    ok = _mm256_or_ps(ok, sat);
    return finish(xv, _mm256_or_ps(res, sign), ok, y, xsave);
}

/* ---- entry points ------------------------------------------------------------------ */

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

const sb_vmath_table sb_vmath_avx2 = {expf_n, logf_n, tanhf_n, expm1f_n, log1pf_n, erff_n};

#endif
