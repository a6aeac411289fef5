/* sb_tanhf - hyperbolic tangent correctly rounded to binary32 (ties to even).
 *
 * Algorithm: tanh(|x|) = E / (E + 2) with E = e^(2|x|) - 1 from the exp
 * kernel of math_internal.h (2|x| is exact and has 24 significant bits);
 * the sign is applied last (RN is symmetric).  The quotient never cancels:
 * E keeps full relative accuracy for tiny x (k = 0 gives E = p), and
 * E + 2 >= 2.
 *  - Fast path: binary64, E within 2^-50 relative, y = E/(E + 2) within
 *    2^-49; accepted when y*(1 +- 2^-44) round to the same float.
 *  - Slow path (~1 in 2^19): E in double-double and a double-double
 *    division, relative error below 2^-97, rounded exactly.
 * Special cases: NaN -> same NaN quieted; +-0 -> +-0; |x| >= 10 (incl.
 * +-inf) -> +-1 (1 - tanh(x) < 2^-25 from x = 9.0109 on).
 * Proven correctly rounded on all 2^32 inputs: docs/MATH-VERIFICATION.md.
 */
#include "core/fpenv.h"
#include "math/math_internal.h"

static float sb_tanh_abs(double a) { /* tanh(a/2), 0 < a < 20 */
    sb_exp_fast_parts f = sb_exp_fast(a);
    double e = (f.s * f.t - 1.0) + f.s * f.tail;
    float res;
    if (sb_round_check(e / (e + 2.0), SB_FAST_EPS, &res)) return res;
    sb_dd E = sb_expm1_dd(a);
    return sb_dd_to_float(sb_dd_div(E, sb_dd_add_d(E, 2.0)));
}

float sb_tanhf(float x) {
    SB_FPENV_GUARD();
    if (x != x) return sb_m_quiet(x);
    if (x == 0.0f) return x;
    float ax = sb_m_u2f(sb_m_f2u(x) & 0x7fffffffu);
    float r = ax >= SB_TANHF_SATURATE ? 1.0f : sb_tanh_abs(2.0 * (double)ax);
    return x < 0.0f ? -r : r;
}
