/* sb_log2f - base-2 logarithm correctly rounded to binary32 (ties to even).
 *
 * Algorithm: the log kernel of math_internal.h: x = 2^e * m, m in [0.75, 1.5)
 * chosen from the top 7 mantissa bits, c ~ 1/m from the 128-entry table
 * (m*c exact), r = m*c - 1 (|r| < 2^-7), and
 *   log2(x) = e + (-log(c) + log1p(r)) / ln2.
 *  - Fast path: y = e + ((L_hi + (L_lo + P(r))) * (1/ln2)_hi) with P the
 *    degree-8 log1p polynomial (< 2^-52 |log1p r| with its evaluation).
 *    Outside bins 0 and 127 (which have c = 1, L = 0) |log(m)| is at least
 *    three times |log1p(r)| (each bin's half-width against its distance
 *    from 1), so the inner sum cancels at most a factor 1.5: its relative
 *    error is below 2^-50.4; the product adds 2^-52.4 (rounding and the
 *    dropped (1/ln2)_lo).  For e != 0 the result is at least 0.415 in
 *    magnitude and the term log2(m) at most 0.585, so the final sum keeps
 *    the error below 2^-49.5 relative: accepted when y*(1 +- 2^-44) round
 *    to the same float.
 *  - Slow path (~1 in 2^19): the log kernel in double-double (sb_log_dd,
 *    relative error below 2^-98) times 1/ln2 as a double-double, rounded
 *    exactly.  log2(x) is irrational unless x is a power of two, so no
 *    other result lies on a rounding boundary; how close the hard cases
 *    come is settled by the exhaustive run.
 * Exact cases: x = 2^e has m = 1 in bin 0, c = 1, r = 0, so y = e exactly
 * (log2(1) = +0).  Subnormal inputs need no scaling: they are normal
 * binary64 numbers.
 * Special cases: NaN -> same NaN quieted; x < 0 (incl. -inf) -> NaN
 * 0x7fc00000; +-0 -> -inf; +inf -> +inf.
 * Proven correctly rounded on all 2^32 inputs: docs/MATH-VERIFICATION.md.
 */
#include "core/fpenv.h"
#include "math/math_internal.h"

float sb_log2f(float x) {
    SB_FPENV_GUARD();
    if (x != x) return sb_m_quiet(x);
    if (x < 0.0f) return sb_m_u2f(SB_NAN_BITS);
    if (x == 0.0f) return sb_m_u2f(SB_INF_BITS | 0x80000000u);
    if (x == sb_m_u2f(SB_INF_BITS)) return x;
    double a = (double)x;
    sb_log_parts p = sb_log_reduce(a);
    SB_MATH_TABLE_PTR const double *t = sb_log_tab[p.i];
    double r = p.m * t[0] - 1.0;
    double y = (double)p.e + (t[1] + (t[2] + sb_log1p_poly(r))) * SB_INVLN2_HI;
    float res;
    if (sb_round_check(y, SB_FAST_EPS, &res)) return res;
    return sb_dd_to_float(sb_dd_mul(sb_log_dd(a, 0.0), sb_dd_make(SB_INVLN2_HI, SB_INVLN2_LO)));
}
