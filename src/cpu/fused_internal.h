/* src/cpu/fused_internal.h - the fused element loops around the
 * transcendentals of the activations and softmax (src/cpu/activation.c,
 * src/cpu/softmax.c): the reference's per-element arithmetic before and
 * after the batch function (cpu/vmath.h), several IEEE steps per element in
 * one pass instead of one pass per step. Internal.
 *
 * Every lane performs the reference's operations on the same operands in
 * the same order (no FMA: the build's -ffp-contract=off applies to vector
 * code too), so the bits are the reference's at every level; the level
 * only sets how many elements a step handles at once. Any n >= 0 (n <= 0
 * does nothing); an output may be one of the inputs exactly (each element's
 * inputs are read before its output is written), no other overlap.
 * v = x[i] below, the constants those of cpu/ops_internal.h. */
#ifndef SAMEBITS_CPU_FUSED_INTERNAL_H
#define SAMEBITS_CPU_FUSED_INTERNAL_H

#include <stdint.h>
#include "cpu/cpu.h"

typedef struct sb_fused_kernels {
    /* GELU, tanh form: t[i] = SB_GELU_SQRT_2_PI * (v + SB_GELU_KAPPA * ((v * v) * v)),
     * the argument of tanh */
    void (*gelu_tanh_arg)(int64_t n, const float *x, float *t);
    /* GELU forward, both forms: y[i] = (v * 0.5f) * (1.0f + t[i]), t = erf(v *
     * sqrt(1/2)) or tanh of the argument above */
    void (*gelu_fwd)(int64_t n, const float *x, const float *t, float *y);
    /* GELU backward, tanh form, from th[i] = tanh of the argument:
     * dx[i] = dy[i] * (0.5f * (1.0f + th) + ((0.5f * v) * (1.0f - th * th)) *
     *         (SB_GELU_SQRT_2_PI * (1.0f + SB_GELU_KAPPA3 * (v * v)))) */
    void (*gelu_tanh_bwd)(int64_t n, const float *x, const float *th, const float *dy, float *dx);
    /* GELU backward, exact form: u[i] = (v * v) * -0.5f, the argument of exp */
    void (*gelu_exp_arg)(int64_t n, const float *x, float *u);
    /* GELU backward, exact form, from t[i] = erf(v * sqrt(1/2)) and
     * e[i] = exp(u[i]): dx[i] = dy[i] * (0.5f * (1.0f + t) + v * (SB_GELU_INV_SQRT_2PI * e)) */
    void (*gelu_exact_bwd)(int64_t n, const float *x, const float *t, const float *e,
                           const float *dy, float *dx);
    /* log-softmax forward: y[i] = (x[i] - m) - ls */
    void (*sub_sub)(int64_t n, const float *x, float m, float ls, float *y);
    /* log-softmax backward: dx[i] = dy[i] - e[i] * g */
    void (*sub_mul)(int64_t n, const float *dy, const float *e, float g, float *dx);
    /* softmax backward: dx[i] = y[i] * (dy[i] - dot) */
    void (*mul_sub)(int64_t n, const float *y, const float *dy, float dot, float *dx);
} sb_fused_kernels;

extern const sb_fused_kernels sb_fused_scalar;
#if SB_HAVE_X86_KERNELS
extern const sb_fused_kernels sb_fused_sse2, sb_fused_avx2, sb_fused_avx512;
#endif
#if SB_HAVE_NEON_KERNELS
extern const sb_fused_kernels sb_fused_neon;
#endif

#endif
