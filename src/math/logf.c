/* sb_logf - natural logarithm correctly rounded to binary32 (ties to even).
 *
 * Algorithm: x = 2^e * m, m in [1, 1.5) or [0.75, 1) chosen from the top 7
 * mantissa bits (so x just below 1 gets e = 0), c ~ 1/m with 21 significant
 * bits from a 128-entry table (m*c is exact), r = m*c - 1 (|r| < 2^-7),
 * log(x) = e*ln2 - log(c) + log1p(r), with -log(c) and ln2 as double-double.
 *  - Fast path: log1p(r) by a degree-8 polynomial in binary64, relative error
 *    below 2^-50 (math_internal.h, sb_log_fast), accepted when
 *    y*(1 +- 2^-44) round to the same float.
 *  - Slow path (~1 in 2^19): everything in double-double with a degree-18
 *    polynomial, relative error below 2^-98, rounded exactly.
 * Subnormal inputs need no scaling: they are normal binary64 numbers.
 * Special cases: NaN -> same NaN quieted; x < 0 (incl. -inf) -> NaN
 * 0x7fc00000; +-0 -> -inf; +inf -> +inf; log(1) = +0 (r = 0 exactly).
 * Proven correctly rounded on all 2^32 inputs: docs/MATH-VERIFICATION.md.
 */
#include "core/fpenv.h"
#include "math/math_internal.h"

float sb_logf(float x) {
    SB_FPENV_GUARD();
    if (x != x) return sb_m_quiet(x);
    if (x < 0.0f) return sb_m_u2f(SB_NAN_BITS);
    if (x == 0.0f) return sb_m_u2f(SB_INF_BITS | 0x80000000u);
    if (x == sb_m_u2f(SB_INF_BITS)) return x;
    double a = (double)x;
    double y = sb_log_fast(a, 0.0);
    float res;
    if (sb_round_check(y, SB_FAST_EPS, &res)) return res;
    return sb_dd_to_float(sb_log_dd(a, 0.0));
}
