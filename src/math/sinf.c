/* sb_sinf - sine correctly rounded to binary32 (ties to even), all inputs.
 *
 * Algorithm (the sin/cos kernel of math_internal.h), on a = |x| (sin is odd;
 * the sign is applied last):
 *  - Reduction: for a < pi/4, r = a (exact) and q = 0; otherwise a =
 *    (q + f) pi/2 by an exact Payne-Hanek reduction with 320 bits of 2/pi
 *    in integer arithmetic (no cancellation whatever the size of a, up to
 *    FLT_MAX): q mod 4 and f to 160 bits, r = f pi/2 as a double-double
 *    with relative error below 2^-103.
 *  - sin a = sin r, cos r, -sin r, -cos r for q = 0, 1, 2, 3.
 *  - Fast path: the Taylor polynomial of sin (to r^17) or cos (to r^18) in
 *    binary64 on r_hi (dropping r_lo costs < 2^-53 relative): y within
 *    2^-51 of the result, accepted when y*(1 +- 2^-44) round to the same
 *    float.
 *  - Slow path (~1 input in 2^19): the same polynomials to r^29/r^30 in
 *    double-double on the double-double r (relative error below 2^-100),
 *    rounded exactly.  sin a is irrational for every float a != 0, so no
 *    result lies on a rounding boundary; how close the hard cases come
 *    (and that every reduced |f| stays far above 2^-50) is settled by the
 *    exhaustive run.
 * Special cases: NaN -> same NaN quieted; +-inf -> NaN 0x7fc00000;
 * +-0 -> +-0.
 * Checked against MPFR by tests/test_math.c (specials, thresholds, every
 * exponent, LCG samples); the exhaustive 2^32 run (make verify-math
 * VERIFY_ARGS="sinf cosf") is not yet recorded: docs/MATH-VERIFICATION.md.
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
