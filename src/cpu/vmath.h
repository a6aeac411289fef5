/* src/cpu/vmath.h - batch versions of samebits' correctly rounded binary32
 * functions (include/samebits/math.h) for the fast CPU backend. Not
 * installed.
 *
 *     sb_cpu_expf_n(x, y, n):  y[i] = sb_expf(x[i]) for 0 <= i < n
 *
 * and likewise logf, tanhf, expm1f, log1pf, erff, exp2f, log2f, sinf,
 * cosf, and two with the argument's one binary32 operation in front:
 *
 *     sb_cpu_expf_sub_n(x, c, y, n):  y[i] = sb_expf(x[i] - c)
 *     sb_cpu_erff_mul_n(x, c, y, n):  y[i] = sb_erff(x[i] * c)
 *
 * (softmax's exp(x - m), GELU's erf(x * sqrt(1/2)): the same block kernels,
 * the operation done in the vector registers, one pass instead of two).
 * The result is bit for bit
 * the scalar function's on every input (every NaN payload, signed zero and
 * subnormal included), at every ISA level: the vector code evaluates the
 * scalar function's binary64 fast path lane by lane (the same IEEE
 * operations, some fused into FMAs on AVX2/AVX-512, which the scalar error
 * bound covers), applies the same rounding test (sb_round_check), which
 * then yields the correctly rounded float, and hands every lane the test
 * does not settle, and every special input it does not handle itself, to
 * the scalar function (design: docs/perf/vmath.md; proof on all 2^32
 * inputs: `make verify-vmath`).
 *
 * Single-threaded: callers split big arrays over sb_parallel_for. Any n >= 0
 * (n <= 0 does nothing), any alignment; y == x (in place) is allowed, other
 * overlaps are not. Must run in the contract's floating-point environment
 * (round to nearest, no flush to zero), as every public entry point
 * (SB_FPENV_GUARD) and every pool worker guarantees. Arguments are not
 * validated: callers pass valid pointers.
 */
#ifndef SAMEBITS_CPU_VMATH_H
#define SAMEBITS_CPU_VMATH_H

#include <stdint.h>
#include "cpu/cpu.h"

void sb_cpu_expf_n(const float *x, float *y, int64_t n);
void sb_cpu_logf_n(const float *x, float *y, int64_t n);
void sb_cpu_tanhf_n(const float *x, float *y, int64_t n);
void sb_cpu_expm1f_n(const float *x, float *y, int64_t n);
void sb_cpu_log1pf_n(const float *x, float *y, int64_t n);
void sb_cpu_erff_n(const float *x, float *y, int64_t n);
void sb_cpu_exp2f_n(const float *x, float *y, int64_t n);
void sb_cpu_log2f_n(const float *x, float *y, int64_t n);
void sb_cpu_sinf_n(const float *x, float *y, int64_t n);
void sb_cpu_cosf_n(const float *x, float *y, int64_t n);
void sb_cpu_expf_sub_n(const float *x, float c, float *y, int64_t n);
void sb_cpu_erff_mul_n(const float *x, float c, float *y, int64_t n);

/* ---- per-ISA kernels (vmath_<isa>.c), reached through the kernel context
 * (cpu/kernels.h: sb_kernels()->vmath) ---- */

typedef void (*sb_vmath_fn)(const float *x, float *y, int64_t n);
/* y[i] = f(x[i] op c), the operation in binary32 as written above */
typedef void (*sb_vmath_arg_fn)(const float *x, float c, float *y, int64_t n);

/* One ISA level's kernels, every entry set. */
typedef struct sb_vmath_table {
    sb_vmath_fn expf_n, logf_n, tanhf_n, expm1f_n, log1pf_n, erff_n;
    sb_vmath_fn exp2f_n, log2f_n, sinf_n, cosf_n;
    sb_vmath_arg_fn expf_sub_n, erff_mul_n;
} sb_vmath_table;

/* The scalar level: the plain loops over the scalar functions (vmath.c),
 * the reference every vector level reproduces. */
extern const sb_vmath_table sb_vmath_scalar;
#if SB_HAVE_X86_KERNELS
extern const sb_vmath_table sb_vmath_sse2;
extern const sb_vmath_table sb_vmath_avx2;
extern const sb_vmath_table sb_vmath_avx512;
#endif
#if SB_HAVE_NEON_KERNELS
extern const sb_vmath_table sb_vmath_neon;
#endif


#endif
