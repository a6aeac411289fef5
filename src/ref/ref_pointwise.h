/* src/ref/ref_pointwise.h - raw reference kernels for elementwise ops,
 * activations and reductions, plus the strided pointwise engine the tensor
 * wrappers share. Internal: not installed.
 *
 * The raw kernels ARE the contract (docs/CONTRACT.md "Elementwise",
 * "Activations", "Reductions"): each computes element i from element i of
 * its inputs only, so any loop order, vector width or thread split gives the
 * same bits, and out[i] may be the same memory as an input's [i].
 */
#ifndef SAMEBITS_REF_POINTWISE_H
#define SAMEBITS_REF_POINTWISE_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/elementwise.h"

/* ---- elementwise (src/ref/elementwise.c); all buffers have n elements ---- */

/* The scalar definitions every kernel and the engine use. */
float sb_ref_binary1(sb_binary_op op, float a, float b);
float sb_ref_unary1(sb_unary_op op, float x);

void sb_ref_binary(sb_binary_op op, int64_t n, const float *a, const float *b, float *out);
void sb_ref_unary(sb_unary_op op, int64_t n, const float *x, float *out);
/* Per-element gradients of out = a op b in the broadcast shape (before the
 * sum back to each input's shape). ga or gb may be NULL. */
void sb_ref_binary_backward(sb_binary_op op, int64_t n, const float *dy, const float *a,
                            const float *b, float *ga, float *gb);
void sb_ref_unary_backward(sb_unary_op op, int64_t n, const float *x, const float *y,
                           const float *dy, float *dx);

/* ---- activations (src/ref/activation.c); x, y, dy, dx have n elements ---- */

void sb_ref_relu_forward(int64_t n, const float *x, float *y);
void sb_ref_relu_backward(int64_t n, const float *x, const float *dy, float *dx);
void sb_ref_leaky_relu_forward(int64_t n, const float *x, float slope, float *y);
void sb_ref_leaky_relu_backward(int64_t n, const float *x, const float *dy, float slope, float *dx);
void sb_ref_tanh_forward(int64_t n, const float *x, float *y);
void sb_ref_tanh_backward(int64_t n, const float *y, const float *dy, float *dx);
void sb_ref_sigmoid_forward(int64_t n, const float *x, float *y);
void sb_ref_sigmoid_backward(int64_t n, const float *y, const float *dy, float *dx);
void sb_ref_silu_forward(int64_t n, const float *x, float *y);
void sb_ref_silu_backward(int64_t n, const float *x, const float *dy, float *dx);
void sb_ref_gelu_forward(int64_t n, const float *x, bool approximate, float *y);
void sb_ref_gelu_backward(int64_t n, const float *x, const float *dy, bool approximate, float *dx);
void sb_ref_softplus_forward(int64_t n, const float *x, float beta, float threshold, float *y);
void sb_ref_softplus_backward(int64_t n, const float *x, const float *dy, float beta,
                              float threshold, float *dx);
void sb_ref_hardtanh_forward(int64_t n, const float *x, float min_val, float max_val, float *y);
void sb_ref_hardtanh_backward(int64_t n, const float *x, const float *dy, float min_val,
                              float max_val, float *dx);
void sb_ref_hardsigmoid_forward(int64_t n, const float *x, float *y);
void sb_ref_hardsigmoid_backward(int64_t n, const float *x, const float *dy, float *dx);
void sb_ref_hardswish_forward(int64_t n, const float *x, float *y);
void sb_ref_hardswish_backward(int64_t n, const float *x, const float *dy, float *dx);
/* ELU with PyTorch's three coefficients (SELU and CELU are instances). */
void sb_ref_elu_forward(int64_t n, const float *x, float alpha, float scale, float input_scale,
                        float *y);
void sb_ref_elu_backward(int64_t n, const float *x, const float *dy, float alpha, float scale,
                         float input_scale, float *dx);
void sb_ref_mish_forward(int64_t n, const float *x, float *y);
void sb_ref_mish_backward(int64_t n, const float *x, const float *dy, float *dx);
void sb_ref_logsigmoid_forward(int64_t n, const float *x, float *y);
void sb_ref_logsigmoid_backward(int64_t n, const float *x, const float *dy, float *dx);
void sb_ref_hardshrink_forward(int64_t n, const float *x, float lambd, float *y);
void sb_ref_hardshrink_backward(int64_t n, const float *x, const float *dy, float lambd, float *dx);
void sb_ref_softshrink_forward(int64_t n, const float *x, float lambd, float *y);
void sb_ref_softshrink_backward(int64_t n, const float *x, const float *dy, float lambd, float *dx);
void sb_ref_threshold_forward(int64_t n, const float *x, float threshold, float value, float *y);
void sb_ref_threshold_backward(int64_t n, const float *x, const float *dy, float threshold,
                               float *dx);
/* PReLU (src/ref/prelu.c): x, y, dy, dx are (outer, c, inner), w is (c,);
 * a shared weight is the geometry (1, 1, n). dx, dw may be NULL. dx may be
 * dy and y may be x. */
void sb_ref_prelu_forward(int64_t outer, int64_t c, int64_t inner, const float *x,
                          const float *w, float *y);
void sb_ref_prelu_backward(int64_t outer, int64_t c, int64_t inner, const float *x,
                           const float *w, const float *dy, float *dx, float *dw);

/* 1.0f / 6.0f rounded (0x3e2aaaab): hardsigmoid's gradient factor. */
#define SB_ONE_SIXTH 0x1.555556p-3f
/* ln 2 rounded to float (0x3f317218): PyTorch's M_LN2 in the float
 * gradients of exp2 and log2. */
#define SB_LN2F 0x1.62e43p-1f

/* GELU constants (bits stated in the contract). */
#define SB_GELU_SQRT1_2 0x1.6a09e6p-1f     /* 1/sqrt(2)        0x3f3504f3 */
#define SB_GELU_INV_SQRT_2PI 0x1.988454p-2f /* 1/sqrt(2*pi)     0x3ecc422a */
#define SB_GELU_SQRT_2_PI 0x1.988454p-1f   /* sqrt(2/pi)       0x3f4c422a */
#define SB_GELU_KAPPA 0x1.6e4e26p-5f       /* 0.044715         0x3d372713 */
#define SB_GELU_KAPPA3 0x1.12ba9cp-3f      /* 3.0f * KAPPA     0x3e095d4e */

/* ---- reductions over axes (src/ref/reduce.c) -----------------------------
 * The problem, stripped of tensors: output element o runs over the kept
 * dims (row-major), and its inputs over the reduced dims (row-major, in
 * increasing axis order). Strides are in elements; out/idx strides are
 * over the kept dims. */
typedef struct sb_ref_reduce_geom {
    int nkeep;
    int64_t keep_shape[SB_MAX_DIMS];
    int64_t keep_xstride[SB_MAX_DIMS];
    int64_t keep_ostride[SB_MAX_DIMS];
    int64_t keep_istride[SB_MAX_DIMS]; /* for the int64 indices output */
    int nred;
    int64_t red_shape[SB_MAX_DIMS];
    int64_t red_xstride[SB_MAX_DIMS];
} sb_ref_reduce_geom;

typedef enum sb_ref_reduce_kind {
    SB_REF_REDUCE_SUM,
    SB_REF_REDUCE_MEAN,
    SB_REF_REDUCE_VAR,
    SB_REF_REDUCE_STD
} sb_ref_reduce_kind;

/* sb_reduce_to_shape's geometry, for every backend: grad's shape is a
 * broadcast of out's (aligned at the last dim); a dim of grad is kept when
 * out has it with the same extent, and summed otherwise (grad's extra
 * leading dims and those where out has 1). */
sb_ref_reduce_geom sb_ref_reduce_to_shape_geom(const sb_tensor *grad, const sb_tensor *out);

/* sum / mean / var / std (correction used by var and std only). */
void sb_ref_reduce(sb_ref_reduce_kind kind, const sb_ref_reduce_geom *g, const float *x,
                   int64_t correction, float *out);
/* max (is_max) or min with first-occurrence indices; out or idx may be NULL.
 * The reduced count must be >= 1. */
void sb_ref_reduce_extreme(bool is_max, const sb_ref_reduce_geom *g, const float *x, float *out,
                           int64_t *idx);
/* Backward of max/min: for each output element o, every reduced element of
 * dx (read through g's x strides) becomes +0.0f except the idx[o]-th in the
 * enumeration, which becomes dy[o] (dy through g's out strides, idx through
 * its idx strides). Every idx value must be in [0, reduced count). */
void sb_ref_reduce_scatter(const sb_ref_reduce_geom *g, const float *dy, const int64_t *idx,
                           float *dx);
/* Orders used by max/min: true if v (at a later position) replaces best. */
bool sb_ref_extreme_better(bool is_max, float v, float best);

/* ---- the strided pointwise engine (src/ref/pw_engine.c) ----------------
 * Applies a contiguous raw kernel to tensors of any strides: in[k] are views
 * already broadcast to out's shape (stride 0 where broadcast). Rows are
 * gathered into small buffers when not unit-stride. */
typedef void (*sb_pw_kernel)(const void *ctx, int64_t n, const float *const *in, float *out);

#define SB_PW_MAX_IN 3
void sb_pw_run(int nin, const sb_tensor *in, sb_tensor *out, sb_pw_kernel kernel, const void *ctx);

#endif
