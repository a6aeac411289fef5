/* src/cpu/fused_simd.h - the fused element loops (cpu/fused_internal.h),
 * written once with the compiler's generic vector type (as exact_simd.h)
 * and included by fused_scalar.c (vectors of one float) and fused_<isa>.c,
 * each of which defines
 *
 *   SFX(name)   name with the level's suffix
 *   FUSED_VB    bytes of one vector (4, 16, 32, 64)
 *
 * and is compiled with its instruction set, so each vector operation below
 * is one of that set's per-lane IEEE binary32 instructions (vaddps, FADD,
 * ...), rounded to nearest as the scalar statement it restates. The
 * formulas are written once, on vectors: the ragged end of an array goes
 * through the same code in a zero-padded vector whose extra lanes are
 * computed and dropped. */
#include <string.h>
#include "cpu/fused_internal.h"
#include "ref/ref_pointwise.h"

typedef float SFX(vf) __attribute__((vector_size(FUSED_VB)));
#define FUSED_VN ((int64_t)(FUSED_VB / 4))

/* Lanes 0..k-1 from p (k <= FUSED_VN), the others 0; with k the constant
 * FUSED_VN (the loops' whole vectors, after inlining) a plain unaligned
 * load. */
static inline __attribute__((always_inline)) SFX(vf) SFX(fused_load)(const float *p, int64_t k) {
    SFX(vf) v = {0};
    memcpy(&v, p, (size_t)k * sizeof(float));
    return v;
}

static inline __attribute__((always_inline)) void SFX(fused_store)(float *p, SFX(vf) v, int64_t k) {
    memcpy(p, &v, (size_t)k * sizeof(float));
}

/* STEP for the whole vectors at i (k = FUSED_VN, a constant), then once
 * for the ragged end (k = n - i < FUSED_VN); LD and ST read and write the
 * k elements at i. */
#define FUSED_FOR(n, STEP)                                                                         \
    do {                                                                                           \
        int64_t i = 0;                                                                             \
        for (; i + FUSED_VN <= (n); i += FUSED_VN) {                                               \
            const int64_t k = FUSED_VN;                                                            \
            STEP;                                                                                  \
        }                                                                                          \
        if (i < (n)) {                                                                             \
            const int64_t k = (n) - i;                                                             \
            STEP;                                                                                  \
        }                                                                                          \
    } while (0)

#define LD(p) SFX(fused_load)((p) + i, k)
#define ST(p, v) SFX(fused_store)((p) + i, (v), k)

/* ---- GELU ------------------------------------------------------------------------- */

static void SFX(gelu_tanh_arg)(int64_t n, const float *x, float *t) {
#define STEP                                                                                       \
    do {                                                                                           \
        SFX(vf) v = LD(x);                                                                         \
        SFX(vf) cube = (v * v) * v;                                                                \
        ST(t, SB_GELU_SQRT_2_PI * (v + SB_GELU_KAPPA * cube));                                     \
    } while (0)
    FUSED_FOR(n, STEP);
#undef STEP
}

static void SFX(gelu_fwd)(int64_t n, const float *x, const float *t, float *y) {
#define STEP                                                                                       \
    do {                                                                                           \
        SFX(vf) v = LD(x), tv = LD(t);                                                             \
        ST(y, (v * 0.5f) * (1.0f + tv));                                                           \
    } while (0)
    FUSED_FOR(n, STEP);
#undef STEP
}

static void SFX(gelu_tanh_bwd)(int64_t n, const float *x, const float *th, const float *dy,
                               float *dx) {
#define STEP                                                                                       \
    do {                                                                                           \
        SFX(vf) v = LD(x), t = LD(th), g = LD(dy);                                                 \
        SFX(vf) sq = v * v;                                                                        \
        SFX(vf) left = 0.5f * v;                                                                   \
        SFX(vf) right = 1.0f + t;                                                                  \
        SFX(vf) left_d = 0.5f * right;                                                             \
        SFX(vf) tanh_d = 1.0f - t * t;                                                             \
        SFX(vf) inner_d = SB_GELU_SQRT_2_PI * (1.0f + SB_GELU_KAPPA3 * sq);                        \
        SFX(vf) right_d = (left * tanh_d) * inner_d;                                               \
        ST(dx, g * (left_d + right_d));                                                            \
    } while (0)
    FUSED_FOR(n, STEP);
#undef STEP
}

static void SFX(gelu_exp_arg)(int64_t n, const float *x, float *u) {
#define STEP                                                                                       \
    do {                                                                                           \
        SFX(vf) v = LD(x);                                                                         \
        ST(u, (v * v) * -0.5f);                                                                    \
    } while (0)
    FUSED_FOR(n, STEP);
#undef STEP
}

static void SFX(gelu_exact_bwd)(int64_t n, const float *x, const float *t, const float *e,
                                const float *dy, float *dx) {
#define STEP                                                                                       \
    do {                                                                                           \
        SFX(vf) v = LD(x), tv = LD(t), ev = LD(e), g = LD(dy);                                     \
        SFX(vf) cdf = 0.5f * (1.0f + tv);                                                          \
        SFX(vf) pdf = SB_GELU_INV_SQRT_2PI * ev;                                                   \
        ST(dx, g * (cdf + v * pdf));                                                               \
    } while (0)
    FUSED_FOR(n, STEP);
#undef STEP
}

/* ---- softmax family ------------------------------------------------------------- */

static void SFX(sub_sub)(int64_t n, const float *x, float m, float ls, float *y) {
#define STEP ST(y, (LD(x) - m) - ls)
    FUSED_FOR(n, STEP);
#undef STEP
}

static void SFX(sub_mul)(int64_t n, const float *dy, const float *e, float g, float *dx) {
#define STEP ST(dx, LD(dy) - LD(e) * g)
    FUSED_FOR(n, STEP);
#undef STEP
}

static void SFX(mul_sub)(int64_t n, const float *y, const float *dy, float dot, float *dx) {
#define STEP ST(dx, LD(y) * (LD(dy) - dot))
    FUSED_FOR(n, STEP);
#undef STEP
}

#undef LD
#undef ST
#undef FUSED_FOR

const sb_fused_kernels SFX(sb_fused) = {
    .gelu_tanh_arg = SFX(gelu_tanh_arg),
    .gelu_fwd = SFX(gelu_fwd),
    .gelu_tanh_bwd = SFX(gelu_tanh_bwd),
    .gelu_exp_arg = SFX(gelu_exp_arg),
    .gelu_exact_bwd = SFX(gelu_exact_bwd),
    .sub_sub = SFX(sub_sub),
    .sub_mul = SFX(sub_mul),
    .mul_sub = SFX(mul_sub),
};
