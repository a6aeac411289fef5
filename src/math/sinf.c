/* sb_sinf - sine correctly rounded to binary32 (ties to even), all inputs.
 *
 * Algorithm (the sin/cos kernel of math_internal.h), on a = |x| (sin is odd;
 * the sign is applied last):
 *  - Reduction, a = k pi/2 + r with q = k mod 4:
 *    . a < pi/4: r = a (exact), q = 0;
 *    . pi/4 < a < 2^28, fast path only: Cody-Waite, k = RN(a 2/pi) and
 *      r = ((a - k P1) - k P2) - k P3 with pi/2 = P1 + P2 + P3 (25-bit P1,
 *      P2: the first two products are exact, a - k P1 is exact by
 *      Sterbenz, the second difference is an exact two_sum); one double r
 *      with |r - r*| <= 2^-53 |r| + 2^-78, used only when |r| > 2^-22
 *      (relative error < 2^-52.8); proof in sb_trig_reduce_cw;
 *    . otherwise, and for every slow path: an exact Payne-Hanek
 *      reduction with 320 bits of 2/pi in integer arithmetic (no
 *      cancellation whatever the size of a, up to FLT_MAX): q and f to 160
 *      bits, r = f pi/2 as a double-double with relative error below
 *      2^-103.
 *  - sin a = sin r, cos r, -sin r, -cos r for q = 0, 1, 2, 3.
 *  - Fast path: the Taylor polynomial of sin (to r^17) or cos (to r^18) in
 *    binary64, accepted when y*(1 +- 2^-44) round to the same float. On
 *    the Cody-Waite r by Estrin's scheme, one branch-free code for both (the
 *    quadrant picks the coefficients and the sign): y within 2^-49.3 of the
 *    result (reduction, evaluation and truncation; sb_sincos_poly and
 *    sb_sincos_eval). Elsewhere by Horner on r = a or the exact r_hi (y
 *    within 2^-51), the code proven before the Cody-Waite reduction.
 *  - Slow path (~1 input in 2^19): the same polynomials to r^29/r^30 in
 *    double-double on the exact reduction's double-double r (relative error
 *    below 2^-100), rounded exactly.  sin a is irrational for every float
 *    a != 0, so no result lies on a rounding boundary; how close the hard
 *    cases come (and that every reduced |f| stays far above 2^-50) is
 *    settled by the exhaustive run.
 * Special cases: NaN -> same NaN quieted; +-inf -> NaN 0x7fc00000;
 * +-0 -> +-0.
 * Checked against MPFR by tests/test_math.c (specials, thresholds, every
 * exponent, hard cases, the fast reduction's error bound, LCG samples) and
 * on all 2^32 inputs by make verify-math VERIFY_ARGS="sinf cosf"
 * (docs/MATH-VERIFICATION.md).
 */
#include "core/fpenv.h"
#include "math/math_internal.h"

float sb_sinf(float x) {
    SB_FPENV_GUARD();
    if (x != x) return sb_m_quiet(x);
    uint32_t ix = sb_m_f2u(x) & 0x7fffffffu;
    if (ix == SB_INF_BITS) return sb_m_u2f(SB_NAN_BITS);
    float r = sb_sincos_eval(ix, 0);
    return (sb_m_f2u(x) >> 31) ? -r : r; /* sin(-a) = -sin(a), -0 too */
}
