/* sb_powf - x^y correctly rounded to binary32 (ties to even).
 *
 * Algorithm: |x|^y = 2^t with t = y * log2|x|, from the log and exp kernels
 * of math_internal.h.
 *  - Fast path: log|x| as a double-double with relative error below 2^-66:
 *    the log kernel's reduction (x = 2^e m, c ~ 1/m, r = m c - 1 exact,
 *    |r| < 2^-7) with r - r^2/2 formed exactly (Dekker's product) and only
 *    r^3 (1/3 - r/4 + ... - r^5/8) in binary64 (its rounding and the
 *    truncation r^9/9 stay below 2^-66 |log1p r|); e ln2 and -log c as
 *    double-doubles. Times 1/ln2 and y in double-double: t with relative
 *    error below 2^-65. Results that are neither +0 nor +inf have
 *    |t| < 152, so |t error| < 2^-57.7. Then 2^t = 2^(k/64) e^(u) with
 *    k = RN(64 t_hi), r = (t_hi - k/64) + t_lo (the difference is exact:
 *    both are multiples of ulp(t_hi) >= 2^-45 and it is at most 1/128) and
 *    u = RN(r ln2_hi); the exp kernel's degree-6 polynomial (< 2^-52) gives
 *    y with relative error below 2^-51.5, accepted when y (1 +- 2^-44)
 *    round to the same float.
 *  - Slow path: log|x| by the accurate log kernel (sb_log_dd, < 2^-98),
 *    times 1/ln2 and y in double-double, 2^t by the exp kernel's
 *    degree-13 double-double polynomial: relative error below 2^-90
 *    (|t| < 152 scales the 2^-97 of t), rounded exactly.
 *  - Exact cases first: a result that is a dyadic number of at most 25
 *    significant bits (a float, or a midpoint between two, which no
 *    approximation can round) is computed exactly. Such x^y have x = 2^a
 *    (then x^y = 2^(a y), exact when a y is an integer), or y = n / 2^j
 *    with n >= 1, j <= 3 (x^y rational needs x a perfect 2^j-th power,
 *    and x's odd part m >= 3 then has m^(1/2^j) >= 3, so 3^(2^j) <= 2^24),
 *    x a perfect 2^j-th power w^(2^j) (found by exact square roots) and
 *    the odd part of w^n below 2^25 (so n <= 15). Anything else is
 *    irrational or has more than 25 significant bits, so it is not a
 *    rounding boundary: the slow path's 2^-90 decides it unless it lies
 *    within 2^-90 of one. pow has 2^64 inputs, too many for the exhaustive
 *    check of the one-argument functions: docs/MATH-VERIFICATION.md records
 *    the sampled check against MPFR (random pairs, every exact and
 *    midpoint family above, x near 1 with large |y|, results near the
 *    overflow and underflow thresholds).
 * Special cases (C99 Annex F, IEEE 754 pow): y = +-0 -> 1 for every x (NaN
 * too); x = 1 -> 1 for every y (NaN too); otherwise a NaN input comes back
 * quieted (x's if x is NaN); x = -1, y = +-inf -> 1; |x| < 1: y = +inf ->
 * +0, y = -inf -> +inf; |x| > 1 the other way round; x = +-0: y < 0 -> inf
 * (-inf for x = -0 and y an odd integer), y > 0 -> +0 (-0 for -0 and odd
 * y); x = +-inf: y > 0 -> inf, y < 0 -> 0, signed as x when y is an odd
 * integer; x < 0 finite and y finite non-integer -> NaN 0x7fc00000; x < 0
 * and y an integer: |x|^y negated when y is odd.
 */
#include "core/fpenv.h"
#include "math/math_internal.h"

/* y is an integer; odd tells whether it is odd (|y| >= 2^24 is even). */
SB_MATH_FN int sb_pow_is_integer(float y, int *odd) {
    float ay = y < 0.0f ? -y : y;
    if (ay >= 0x1p24f) {
        *odd = 0;
        return 1;
    }
    int64_t n = (int64_t)ay;
    *odd = (int)(n & 1);
    return (float)n == ay;
}

/* log|x| (a = |x|, positive, finite) as a double-double with relative error
 * below 2^-66; see the header. */
SB_MATH_FN sb_dd sb_pow_log_fast(double a) {
    sb_log_parts p = sb_log_reduce(a);
    SB_MATH_TABLE_PTR const double *t = sb_log_tab[p.i];
    double r = p.m * t[0] - 1.0; /* m has 24 bits and c 21: exact */
    sb_dd r2 = sb_two_prod(r, r);
    sb_dd h = sb_two_sum(r, -0.5 * r2.hi); /* r - r^2/2, halving exact */
    h = sb_dd_add_d(h, -0.5 * r2.lo);
    double q = sb_log1p_coef[8][0];
    for (int n = 7; n >= 3; n--) q = q * r + sb_log1p_coef[n][0];
    double e = (double)p.e;
    sb_dd v = sb_dd_add_d(sb_two_prod(e, SB_LN2_HI), e * SB_LN2_LO);
    v = sb_dd_add(v, sb_dd_make(t[1], t[2]));
    v = sb_dd_add(v, h);
    return sb_dd_add_d(v, (r * r2.hi) * q);
}

/* k = RN(64 t) for |t| < 2^44 (the exp kernel's shifter). */
SB_MATH_FN double sb_pow_k64(double t) {
    const double shifter = SB_EXP_SHIFTER;
    return (t * 64.0 + shifter) - shifter;
}

/* The exact result m * 2^e (m an integer, 1 <= m < 2^26) rounded to
 * binary32: one IEEE conversion of an exact double, so ties go to even and
 * the subnormal grid and overflow are the conversion's own. */
SB_MATH_FN float sb_pow_exact_result(double m, int e) {
    if (e > 200) return sb_m_u2f(SB_INF_BITS);
    if (e < -300) return 0.0f;
    double s = 1.0;
    for (; e > 0; e--) s *= 2.0; /* exact: at most 2^200 */
    for (; e < 0; e++) s *= 0.5; /* exact: at least 2^-300 */
    return (float)(m * s);
}

/* When a^y (a = |x| > 0 finite, y finite and not 0) is a dyadic number with
 * at most 25 significant bits, its rounding (returns 1); else 0. */
SB_MATH_FN int sb_pow_exact(float a, float y, float *out) {
    uint32_t u = sb_m_f2u(a);
    int ex = (int)(u >> 23);
    uint32_t mx = u & 0x007fffffu;
    if (ex == 0) ex = 1; /* subnormal */
    else mx |= 0x00800000u;
    ex -= 150;           /* a = mx * 2^ex */
    while ((mx & 1u) == 0) {
        mx >>= 1;
        ex++;
    }
    if (mx == 1) { /* a = 2^ex: a^y = 2^(ex y), exact when that is an integer */
        double ey = (double)ex * (double)y; /* exact: 9 and 24 bits */
        if (ey > 1000.0 || ey < -1000.0) return 0; /* clamped by the caller */
        if ((double)(int)ey != ey) return 0;
        *out = sb_pow_exact_result(1.0, (int)ey);
        return 1;
    }
    /* y = n / 2^j with 1 <= n <= 15 and j <= 3, so 1/8 <= y <= 15 and 8y
     * is an integer (the range test keeps the conversions defined) */
    double yd = (double)y;
    if (yd < 0.125 || yd > 15.0 || (double)(int64_t)(yd * 8.0) != yd * 8.0) return 0;
    int j = 0;
    for (; (double)(int64_t)yd != yd; j++) yd *= 2.0; /* at most 3 times */
    int n = (int)yd;
    /* w = a^(1/2^j): the odd part mx and the exponent ex halve j times */
    for (int i = 0; i < j; i++) {
        if (ex % 2 != 0) return 0;
        double m = (double)mx;      /* its exact integer square root, or none */
        uint32_t lo = 1, hi = 4096; /* mx < 2^24: the root < 4096 */
        while (lo < hi) {
            uint32_t mid = (lo + hi + 1) / 2;
            if ((double)mid * (double)mid <= m) lo = mid;
            else hi = mid - 1;
        }
        if ((double)lo * (double)lo != m) return 0;
        mx = lo;
        ex /= 2;
    }
    /* w^n = mx^n * 2^(ex n), mx odd >= 3 */
    double p = 1.0;
    for (int i = 0; i < n; i++) {
        p *= (double)mx; /* exact while below 2^53; stop past 2^25 */
        if (p >= 0x1p25) return 0;
    }
    *out = sb_pow_exact_result(p, ex * n);
    return 1;
}

/* a^y for a = |x| positive finite, y finite non-zero, a != 1. */
SB_MATH_FN float sb_pow_abs(float a, float y) {
    double ad = (double)a, yd = (double)y;
    sb_dd l2 = sb_dd_mul(sb_pow_log_fast(ad), sb_dd_make(SB_INVLN2_HI, SB_INVLN2_LO));
    /* |t| >= 2^130 would overflow nothing, but such t are clamped below */
    sb_dd t = sb_dd_mul_d(l2, yd);
    if (t.hi > 129.0) return sb_m_u2f(SB_INF_BITS); /* a^y > 2^129 */
    if (t.hi < -152.0) return 0.0f;                 /* a^y < 2^-151 */
    double kd = sb_pow_k64(t.hi);
    double r = (t.hi - kd * 0x1p-6) + t.lo; /* the difference is exact */
    sb_exp_fast_parts f = sb_exp_fast_kr(kd, r * SB_LN2_HI);
    double v = f.s * (f.t + f.tail);
    float res;
    if (sb_round_check(v, SB_FAST_EPS, &res)) return res;
    if (sb_pow_exact(a, y, &res)) return res;
    /* slow path */
    sb_dd l2s = sb_dd_mul(sb_log_dd(ad, 0.0), sb_dd_make(SB_INVLN2_HI, SB_INVLN2_LO));
    sb_dd ts = sb_dd_mul_d(l2s, yd);
    double ks = sb_pow_k64(ts.hi);
    sb_dd rs = sb_dd_add_d(sb_two_sum(ts.hi, -ks * 0x1p-6), ts.lo);
    sb_exp_dd_parts p = sb_exp_dd_kr(ks, sb_dd_mul(rs, sb_dd_make(SB_LN2_HI, SB_LN2_LO)));
    double s = sb_m_pow2(p.e);
    sb_dd w = sb_dd_add(p.t, sb_dd_mul(p.t, p.q));
    return sb_dd_to_float(sb_dd_make(s * w.hi, s * w.lo));
}

float sb_powf(float x, float y) {
    SB_FPENV_GUARD();
    if (y == 0.0f || x == 1.0f) return 1.0f;
    if (x != x) return sb_m_quiet(x);
    if (y != y) return sb_m_quiet(y);
    int odd = 0, integer = sb_pow_is_integer(y, &odd);
    int x_negative = (int)(sb_m_f2u(x) >> 31); /* -0 included */
    int negate = x_negative && integer && odd;
    float ax = sb_m_u2f(sb_m_f2u(x) & 0x7fffffffu);
    const float inf = sb_m_u2f(SB_INF_BITS);
    if (y == inf || y == -inf) {
        if (ax == 1.0f) return 1.0f; /* x = -1 */
        return (ax < 1.0f) == (y > 0.0f) ? 0.0f : inf;
    }
    if (ax == 0.0f || ax == inf) {
        /* 0^y is 0 for y > 0 and inf for y < 0; inf^y the other way round */
        float r = (ax == 0.0f) == (y > 0.0f) ? 0.0f : inf;
        return negate ? -r : r;
    }
    if (x_negative && !integer) return sb_m_u2f(SB_NAN_BITS);
    if (ax == 1.0f) return negate ? -1.0f : 1.0f; /* x = -1 */
    float r = sb_pow_abs(ax, y);
    return negate ? -r : r;
}
