/* sb_log1pf - log(1 + x) correctly rounded to binary32 (ties to even).
 *
 * Algorithm: for -2^-8 <= x < 2^-7, log1p(x) directly by the log1p
 * polynomial of the log kernel (r = x exactly).  Otherwise 1 + x is formed
 * exactly as a double-double s_hi + s_lo (s_lo != 0 only for x >= 2^53) and
 * log(s_hi + s_lo) = log(s_hi) + s_lo/s_hi by the log kernel of
 * math_internal.h (table of 128 reciprocals, r = m*c - 1, e*ln2 - log(c) +
 * log1p(r)).  s_hi has at most 31 significant bits unless x >= 2^29, so m*c
 * is exact in the cases where the result can be small.
 *  - Fast path: binary64, relative error below 2^-50, accepted when
 *    y*(1 +- 2^-44) round to the same float.
 *  - Slow path (~1 in 2^19): double-double, relative error below 2^-98,
 *    rounded exactly.
 * Special cases: NaN -> same NaN quieted; +-0 -> +-0; x = -1 -> -inf;
 * x < -1 (incl. -inf) -> NaN 0x7fc00000; +inf -> +inf.
 * Proven correctly rounded on all 2^32 inputs: docs/MATH-VERIFICATION.md.
 */
#include "core/fpenv.h"
#include "math/math_internal.h"

float sb_log1pf(float x) {
    SB_FPENV_GUARD();
    if (x != x) return sb_m_quiet(x);
    if (x == 0.0f) return x;
    if (x < -1.0f) return sb_m_u2f(SB_NAN_BITS);
    if (x == -1.0f) return sb_m_u2f(SB_INF_BITS | 0x80000000u);
    if (x == sb_m_u2f(SB_INF_BITS)) return x;
    double a = (double)x;
    float res;
    if (a >= SB_LOG1P_NEAR_LO && a < SB_LOG1P_NEAR_HI) {
        if (sb_round_check(sb_log1p_poly(a), SB_FAST_EPS, &res)) return res;
        return sb_dd_to_float(sb_dd_poly(sb_log1p_coef, 18, sb_dd_make(a, 0.0)));
    }
    sb_dd s = sb_two_sum(1.0, a);
    if (sb_round_check(sb_log_fast(s.hi, s.lo), SB_FAST_EPS, &res)) return res;
    return sb_dd_to_float(sb_log_dd(s.hi, s.lo));
}
