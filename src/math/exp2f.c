/* sb_exp2f - 2^x correctly rounded to binary32 (ties to even), all inputs.
 *
 * Algorithm: x = k/64 + r with k = RN(64x) and |r| <= 1/128; both steps are
 * exact for a float x (64x only shifts the exponent; x - k/64 fits in 53
 * bits because x has at most 24 significant bits and |r| <= 1/128), so
 * 2^x = 2^(k/64 integer part) * 2^(j/64) * e^(r ln2) with the exp kernel's
 * 64-entry double-double table of 2^(j/64) (math_internal.h).
 *  - Fast path: u = RN(r * ln2_hi) is within 2^-52.9 |u| of r ln2, so
 *    |e^u - e^(r ln2)| < |u| 2^-52.9 e^u <= 2^-60.4 e^u (|u| <= ln2/128);
 *    e^u - 1 and the product with the table by the exp kernel's degree-6
 *    polynomial (sb_exp_fast_kr, < 2^-52 relative): y within 2^-51 of 2^x,
 *    accepted when y*(1 +- 2^-44) round to the same float.
 *  - Slow path (~1 input in 2^19): u = r * (ln2_hi + ln2_lo) as a
 *    double-double (error < 2^-104 |u|), the exp kernel's degree-13
 *    double-double polynomial (sb_exp_dd_kr); relative error below 2^-100,
 *    rounded exactly (sb_dd_to_float).  2^x is irrational for non-integer
 *    x, so no result lies exactly on a rounding boundary; how close the hard
 *    cases come is settled by the exhaustive run (below).
 * Special cases: NaN -> same NaN quieted; x >= 128 (incl. +inf) -> +inf
 * (the largest float below 128 gives 2^128 (1 - 5.3e-6), finite);
 * x < -150 (incl. -inf) -> +0 (2^x < 2^-150 rounds to 0; 2^-150 itself
 * is a tie and goes to the even 0 through the slow path); integers give
 * exact powers of two (r = 0, so y = 2^k exactly, normal or subnormal);
 * +-0 -> 1.
 * Proven correctly rounded on all 2^32 inputs: docs/MATH-VERIFICATION.md.
 */
#include "core/fpenv.h"
#include "math/math_internal.h"

float sb_exp2f(float x) {
    SB_FPENV_GUARD();
    if (x != x) return sb_m_quiet(x);
    if (x >= SB_EXP2F_OVERFLOW) return sb_m_u2f(SB_INF_BITS);
    if (x < SB_EXP2F_UNDERFLOW) return 0.0f;
    double a = (double)x;
    const double shifter = SB_EXP_SHIFTER;
    double kd = (a * 64.0 + shifter) - shifter; /* k = RN(64x), |k| <= 9600 */
    double r = a - kd * 0x1p-6;                  /* exact, |r| <= 1/128 */
    sb_exp_fast_parts f = sb_exp_fast_kr(kd, r * SB_LN2_HI);
    double y = f.s * (f.t + f.tail);
    float res;
    if (sb_round_check(y, SB_FAST_EPS, &res)) return res;
    sb_exp_dd_parts p = sb_exp_dd_kr(kd, sb_dd_mul_d(sb_dd_make(SB_LN2_HI, SB_LN2_LO), r));
    double s = sb_m_pow2(p.e);
    sb_dd v = sb_dd_add(p.t, sb_dd_mul(p.t, p.q));
    return sb_dd_to_float(sb_dd_make(s * v.hi, s * v.lo));
}
