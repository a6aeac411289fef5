/* sb_expf - e^x correctly rounded to binary32 (ties to even), all inputs.
 *
 * Algorithm: x = k*ln2/64 + r with |r| <= ln2/128 (Cody-Waite with a
 * three-part ln2/64, exact for float x), e^x = 2^(k/64 integer part) *
 * 2^(j/64) * e^r with a 64-entry double-double table of 2^(j/64).
 *  - Fast path: e^r - 1 by a degree-6 polynomial in binary64; relative
 *    error of y = 2^e * (t + (t*p + tlo)) below 2^-51 (math_internal.h,
 *    sb_exp_fast); accepted when y*(1 +- 2^-44) round to the same float.
 *  - Slow path (~1 input in 2^19): reduction and a degree-13 polynomial in
 *    double-double, relative error below 2^-100, rounded exactly.
 * Special cases: NaN -> same NaN quieted; x > 89 (incl. +inf) -> +inf
 * (e^88.7228... = 2^128 (1 - 2^-25) is the overflow threshold);
 * x < -104 (incl. -inf) -> +0 (e^x < 2^-150 rounds to 0); subnormal
 * results come out of the double->float conversion on the subnormal grid.
 * Proven correctly rounded on all 2^32 inputs: docs/MATH-VERIFICATION.md.
 */
#include "core/fpenv.h"
#include "math/math_internal.h"

float sb_expf(float x) {
    SB_FPENV_GUARD();
    if (x != x) return sb_m_quiet(x);
    if (x > SB_EXPF_OVERFLOW) return sb_m_u2f(SB_INF_BITS);
    if (x < SB_EXPF_UNDERFLOW) return 0.0f;
    double a = (double)x;
    sb_exp_fast_parts f = sb_exp_fast(a);
    double y = f.s * (f.t + f.tail);
    float res;
    if (sb_round_check(y, SB_FAST_EPS, &res)) return res;
    sb_exp_dd_parts p = sb_exp_dd(a);
    double s = sb_m_pow2(p.e);
    sb_dd v = sb_dd_add(p.t, sb_dd_mul(p.t, p.q));
    return sb_dd_to_float(sb_dd_make(s * v.hi, s * v.lo));
}
