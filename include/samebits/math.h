/* samebits/math.h - correctly rounded binary32 elementary functions.
 *
 * Each function returns the exact mathematical result rounded to the nearest
 * binary32 value (ties to even), for every one of the 2^32 inputs, with IEEE
 * special cases (NaN in -> NaN out; overflow -> inf; exact zeros keep their
 * sign where the function is odd). Proven exhaustively against MPFR by
 * `make verify-math` (docs/MATH-VERIFICATION.md); sb_powf, with two
 * arguments, by sampled families against MPFR. The same source compiles
 * for the GPU. One function per file in src/math/.
 *
 * NaN bits are fixed too, so results are bitwise identical on every device:
 * a NaN input is returned with its quiet bit (0x00400000) set and sign and
 * payload kept; an invalid operation (log or log2 of x < 0, log1p of x < -1,
 * sin or cos of +-inf) returns 0x7fc00000. Signed zeros follow C99 Annex F: expm1, log1p, tanh
 * erf and sin return -0 for -0; log(+-0) = log2(+-0) = -inf; exp(-inf) =
 * exp2(-inf) = +0.
 * Full contract: docs/CONTRACT.md.
 */
#ifndef SAMEBITS_MATH_H
#define SAMEBITS_MATH_H

#include "samebits/export.h"

#ifdef __cplusplus
extern "C" {
#endif

SB_API float sb_expf(float x);   /* e^x */
SB_API float sb_expm1f(float x); /* e^x - 1 */
SB_API float sb_logf(float x);   /* natural log; log(-x) = NaN, log(+-0) = -inf */
SB_API float sb_log1pf(float x); /* log(1 + x) */
SB_API float sb_tanhf(float x);  /* hyperbolic tangent */
SB_API float sb_erff(float x);   /* error function (exact GELU) */
SB_API float sb_exp2f(float x);  /* 2^x */
SB_API float sb_log2f(float x);  /* base-2 log; log2(-x) = NaN, log2(+-0) = -inf */
SB_API float sb_sinf(float x);   /* sine (exact reduction for every |x|) */
SB_API float sb_cosf(float x);   /* cosine */
/* x^y (C99 Annex F special cases; (-x)^y = NaN for non-integer y). Two
 * arguments: checked on sampled families against MPFR, not exhaustively. */
SB_API float sb_powf(float x, float y);

#ifdef __cplusplus
}
#endif
#endif
