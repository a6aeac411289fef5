/* sb_erff - error function correctly rounded to binary32 (ties to even).
 * (Exact GELU needs it: gelu(x) = x/2 * (1 + erf(x/sqrt 2)).)
 *
 * Algorithm, on a = |x| (erf is odd; the sign is applied last):
 *  - Fast path: for a < 1/2, erf(a) = a * P0(a^2) with a degree-8 Chebyshev
 *    fit of erf(a)/a in a^2 (a^2 is exact); for 1/2 <= a < 4, fourteen
 *    pieces of width 1/4 (rows 2..15 of sb_erf_p), each a degree-11
 *    Chebyshev fit in t = a - mid
 *    (t is exact).  Fit errors are below 2^-57 relative (math_tables.h);
 *    binary64 Horner adds below 2^-51 (every piece is dominated by its
 *    constant term), so y is within 2^-50; accepted when y*(1 +- 2^-44)
 *    round to the same float.
 *  - Slow path (~1 in 2^19): the positive series
 *      erf(a) = 2/sqrt(pi) * a * e^(-a^2) * sum_n (2a^2)^n / (2n+1)!!
 *    in double-double (no cancellation; e^(-a^2) from the accurate exp
 *    kernel), summed until a term falls below 2^-110 of the sum; relative
 *    error below 2^-95 for a < 4, rounded exactly.
 * Special cases: NaN -> same NaN quieted; +-0 -> +-0; |x| >= 4 (incl. +-inf)
 * -> +-1 (1 - erf(x) < 2^-25 from x = 3.9192 on).
 * Proven correctly rounded on all 2^32 inputs: docs/MATH-VERIFICATION.md.
 */
#include "core/fpenv.h"
#include "math/math_internal.h"

static double sb_erf_fast(double a) {
    if (a < SB_ERF_SMALL) {
        double u = a * a;
        double p = sb_erf_p0[8];
        for (int i = 7; i >= 0; i--) p = p * u + sb_erf_p0[i];
        return a * p;
    }
    int i = (int)(a * SB_ERF_PIECE_SCALE);
    double t = a - (SB_ERF_PIECE_WIDTH * i + SB_ERF_PIECE_MID_OFFSET);
    SB_MATH_TABLE_PTR const double *c = sb_erf_p[i];
    double p = c[11];
    for (int k = 10; k >= 0; k--) p = p * t + c[k];
    return p;
}

static sb_dd sb_erf_dd(double a) {
    double a2 = a * a; /* exact: 48 significant bits at most */
    sb_dd term = sb_dd_make(1.0, 0.0), sum = term;
    for (int n = 0; n < 400; n++) {
        term = sb_dd_mul_d(term, 2.0 * a2);
        double d = (double)(2 * n + 3);
        double q1 = term.hi / d; /* term /= d, to double-double accuracy */
        sb_dd r = sb_dd_add(term, sb_dd_mul_d(sb_dd_make(q1, 0.0), -d));
        term = sb_fast_two_sum(q1, r.hi / d);
        sum = sb_dd_add(sum, term);
        if (term.hi < sum.hi * 0x1p-110) break;
    }
    sb_exp_dd_parts p = sb_exp_dd(-a2);
    sb_dd ex = sb_dd_add(p.t, sb_dd_mul(p.t, p.q));
    ex = sb_dd_make(ex.hi * sb_m_pow2(p.e), ex.lo * sb_m_pow2(p.e));
    sb_dd v = sb_dd_mul(sum, ex);
    v = sb_dd_mul(v, sb_dd_make(SB_TWO_OVER_SQRTPI_HI, SB_TWO_OVER_SQRTPI_LO));
    return sb_dd_mul_d(v, a);
}

float sb_erff(float x) {
    SB_FPENV_GUARD();
    if (x != x) return sb_m_quiet(x);
    if (x == 0.0f) return x;
    float ax = sb_m_u2f(sb_m_f2u(x) & 0x7fffffffu);
    float r;
    if (ax >= SB_ERFF_SATURATE) {
        r = 1.0f;
    } else {
        double a = (double)ax;
        if (!sb_round_check(sb_erf_fast(a), SB_FAST_EPS, &r))
            r = sb_dd_to_float(sb_erf_dd(a));
    }
    return x < 0.0f ? -r : r;
}
