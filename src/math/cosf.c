/* sb_cosf - cosine correctly rounded to binary32 (ties to even), all inputs.
 *
 * Algorithm: the sin/cos kernel of math_internal.h on a = |x| (cos is even):
 * a = k pi/2 + r with q = k mod 4 (r = a below pi/4; the Cody-Waite
 * reduction for the fast path below 2^28; the exact Payne-Hanek reduction
 * above it and for every slow path), then cos a = cos r, -sin r, -cos r,
 * sin r for q = 0, 1, 2, 3; binary64 Taylor polynomials (Estrin's scheme
 * after the Cody-Waite reduction, Horner elsewhere; fast path, error <
 * 2^-49.3 with the reduction's, accepted when
 * y*(1 +- 2^-44) round to the same float) and double-double ones (slow
 * path, ~1 input in 2^19, error < 2^-100, rounded exactly).  The algorithm
 * and its error bounds are written out in sb_sinf (src/math/sinf.c) and in
 * the kernel's comments.  cos a is irrational for every float a != 0 (and
 * cos 0 = 1), so no result lies on a rounding boundary; the exhaustive run
 * settles how close the hard cases come.
 * Special cases: NaN -> same NaN quieted; +-inf -> NaN 0x7fc00000;
 * +-0 -> 1; |x| < 2^-12 gives 1 through the fast path (cos x > 1 - 2^-25).
 * Checked against MPFR by tests/test_math.c (specials, thresholds, every
 * exponent, hard cases, the fast reduction's error bound, LCG samples) and
 * on all 2^32 inputs by make verify-math VERIFY_ARGS="sinf cosf"
 * (docs/MATH-VERIFICATION.md).
 */
#include "core/fpenv.h"
#include "math/math_internal.h"

float sb_cosf(float x) {
    SB_FPENV_GUARD();
    if (x != x) return sb_m_quiet(x);
    uint32_t ix = sb_m_f2u(x) & 0x7fffffffu;
    if (ix == SB_INF_BITS) return sb_m_u2f(SB_NAN_BITS);
    return sb_sincos_eval(ix, 1);
}
