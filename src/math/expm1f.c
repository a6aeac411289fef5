/* sb_expm1f - e^x - 1 correctly rounded to binary32 (ties to even).
 *
 * Algorithm: the exp kernel of math_internal.h (x = k*ln2/64 + r,
 * e^x = s * t * e^r with s = 2^e, t = 2^(j/64)), then
 * e^x - 1 = (s*t - 1) + s*(t*p + tlo), p = e^r - 1.  For |x| < ln2/128,
 * k = 0 and the result is p itself, so tiny x keep full relative accuracy;
 * otherwise |e^x - 1| > 0.0054 and the sum cancels at most a factor ~2.5.
 *  - Fast path: binary64, relative error below 2^-50, accepted when
 *    y*(1 +- 2^-44) round to the same float.
 *  - Slow path (~1 in 2^19): double-double with s*t - 1 formed exactly,
 *    relative error below 2^-98, rounded exactly.
 * Special cases: NaN -> same NaN quieted; +-0 -> +-0 (expm1(-0) = -0);
 * x > 89 (incl. +inf) -> +inf; x < -18 (incl. -inf) -> -1 (e^x < 2^-25 there,
 * below half an ulp of 1 - 2^-24).
 * Proven correctly rounded on all 2^32 inputs: docs/MATH-VERIFICATION.md.
 */
#include "core/fpenv.h"
#include "math/math_internal.h"

float sb_expm1f(float x) {
    SB_FPENV_GUARD();
    if (x != x) return sb_m_quiet(x);
    if (x == 0.0f) return x;
    if (x > SB_EXPF_OVERFLOW) return sb_m_u2f(SB_INF_BITS);
    if (x < SB_EXPM1F_SATURATE) return -1.0f;
    double a = (double)x;
    sb_exp_fast_parts f = sb_exp_fast(a);
    double y = (f.s * f.t - 1.0) + f.s * f.tail;
    float res;
    if (sb_round_check(y, SB_FAST_EPS, &res)) return res;
    return sb_dd_to_float(sb_expm1_dd(a));
}
