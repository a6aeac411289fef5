/* samebits/elementwise.h - elementwise arithmetic with broadcasting, unary
 * maps and activations, forward and backward (docs/CONTRACT.md sections
 * "Elementwise" and "Activations").
 *
 * Every function here is float32 only and computes each output element by a
 * fixed, short sequence of IEEE-754 binary32 operations (no FMA) given in the
 * contract, so results are the same bits on every machine.
 *
 * Layout rules shared by all functions here:
 *   - inputs may have any strides (including 0 and negative);
 *   - the output must have exactly the expected shape (the broadcast shape for
 *     binary ops, the input shape otherwise) and may be strided, but must not
 *     overlap itself (no stride-0 dimension of size > 1);
 *   - the output may alias an input only with identical layout (same data
 *     pointer and strides over the output's shape), which gives in-place
 *     operation; any other overlap is rejected with SB_ERR_ARG.
 * Broadcasting follows NumPy/PyTorch: shapes are aligned at the last
 * dimension; a missing or size-1 dimension stretches to the other's size.
 * On any validation error nothing is written.
 */
#ifndef SAMEBITS_ELEMENTWISE_H
#define SAMEBITS_ELEMENTWISE_H
#include <stdbool.h>
#include "samebits/export.h"
#include "samebits/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- binary ops ---------------------------------------------------------- */

typedef enum sb_binary_op {
    SB_BINARY_ADD = 0, /* a + b */
    SB_BINARY_SUB,     /* a - b */
    SB_BINARY_MUL,     /* a * b */
    SB_BINARY_DIV,     /* a / b */
    SB_BINARY_MAXIMUM, /* NaN-propagating maximum, -0 < +0 (see contract) */
    SB_BINARY_MINIMUM, /* NaN-propagating minimum, -0 < +0 (see contract) */
    SB_BINARY_POW      /* sb_powf(a, b), correctly rounded (include/samebits/math.h) */
} sb_binary_op;

/* out = a op b, broadcasting a and b to out's shape. */
SB_API sb_status sb_binary(sb_binary_op op, const sb_tensor *a, const sb_tensor *b, sb_tensor *out);
SB_API sb_status sb_add(const sb_tensor *a, const sb_tensor *b, sb_tensor *out);
SB_API sb_status sb_sub(const sb_tensor *a, const sb_tensor *b, sb_tensor *out);
SB_API sb_status sb_mul(const sb_tensor *a, const sb_tensor *b, sb_tensor *out);
SB_API sb_status sb_div(const sb_tensor *a, const sb_tensor *b, sb_tensor *out);
/* maximum(a, b): a NaN operand is returned unchanged (a's NaN if both are
 * NaN); otherwise the larger value, with -0 ordered below +0, so
 * maximum(+0, -0) = maximum(-0, +0) = +0 and minimum of them is -0. */
SB_API sb_status sb_maximum(const sb_tensor *a, const sb_tensor *b, sb_tensor *out);
SB_API sb_status sb_minimum(const sb_tensor *a, const sb_tensor *b, sb_tensor *out);

/* out = x op s for a float scalar s (x is the left operand: sub_scalar is
 * x - s, div_scalar is x / s). Same bits as sb_binary with a 0-dim tensor. */
SB_API sb_status sb_binary_scalar(sb_binary_op op, const sb_tensor *x, float s, sb_tensor *out);
SB_API sb_status sb_add_scalar(const sb_tensor *x, float s, sb_tensor *out);
SB_API sb_status sb_sub_scalar(const sb_tensor *x, float s, sb_tensor *out);
SB_API sb_status sb_mul_scalar(const sb_tensor *x, float s, sb_tensor *out);
SB_API sb_status sb_div_scalar(const sb_tensor *x, float s, sb_tensor *out);

/* Backward of out = a op b. dy has the broadcast shape; da (shape of a) and
 * db (shape of b) receive the gradients, either may be NULL when not needed.
 * Per broadcast element (contract "Elementwise backward"):
 *   add: ga = dy,       gb = dy
 *   sub: ga = dy,       gb = -dy
 *   mul: ga = dy * b,   gb = dy * a
 *   div: ga = dy / b,   gb = -dy * ((a / b) / b)
 *   maximum/minimum: dy to the winning operand, dy * 0.5f to each on a tie
 *        (a == b), NaN operands win (a first).
 *   pow: ga = b == 0 ? +0 : dy * (b * sb_powf(a, b - 1.0f)),
 *        gb = (a == 0 && b >= 0) ? +0 : dy * (sb_powf(a, b) * sb_logf(a))
 * then each of ga, gb is summed back to its input's shape by
 * sb_reduce_to_shape. da/db must not overlap dy, a or b. */
SB_API sb_status sb_binary_backward(sb_binary_op op, const sb_tensor *dy, const sb_tensor *a,
                             const sb_tensor *b, sb_tensor *da, sb_tensor *db);

/* Sums a gradient of a broadcast shape back to out's shape (out's shape must
 * broadcast to grad's). Each out element is the canonical sum (contract
 * "Canonical sum") of the grad elements that map to it, enumerated in
 * row-major order of the grad index. A dimension that is not reduced is a
 * sum of one element, which is that element (-0.0f + v == v). */
SB_API sb_status sb_reduce_to_shape(const sb_tensor *grad, sb_tensor *out);

/* ---- unary ops ----------------------------------------------------------- */

typedef enum sb_unary_op {
    SB_UNARY_NEG = 0,    /* -x (sign bit flipped, also for NaN) */
    SB_UNARY_ABS,        /* |x| (sign bit cleared, also for NaN) */
    SB_UNARY_SQRT,       /* sqrtf(x), IEEE correctly rounded */
    SB_UNARY_EXP,        /* sb_expf(x) */
    SB_UNARY_LOG,        /* sb_logf(x) */
    SB_UNARY_SQUARE,     /* x * x */
    SB_UNARY_RECIPROCAL, /* 1.0f / x */
    SB_UNARY_SIN,        /* sb_sinf(x) */
    SB_UNARY_COS,        /* sb_cosf(x) */
    SB_UNARY_EXP2,       /* sb_exp2f(x) */
    SB_UNARY_LOG2,       /* sb_log2f(x) */
    SB_UNARY_RSQRT       /* 1.0f / sqrtf(x): two roundings, as PyTorch's CPU rsqrt */
} sb_unary_op;

SB_API sb_status sb_unary(sb_unary_op op, const sb_tensor *x, sb_tensor *out);
SB_API sb_status sb_neg(const sb_tensor *x, sb_tensor *out);
SB_API sb_status sb_abs(const sb_tensor *x, sb_tensor *out);
SB_API sb_status sb_sqrt(const sb_tensor *x, sb_tensor *out);
SB_API sb_status sb_exp(const sb_tensor *x, sb_tensor *out);
SB_API sb_status sb_log(const sb_tensor *x, sb_tensor *out);
SB_API sb_status sb_square(const sb_tensor *x, sb_tensor *out);
SB_API sb_status sb_reciprocal(const sb_tensor *x, sb_tensor *out);
SB_API sb_status sb_sin(const sb_tensor *x, sb_tensor *out);
SB_API sb_status sb_cos(const sb_tensor *x, sb_tensor *out);
SB_API sb_status sb_exp2(const sb_tensor *x, sb_tensor *out);
SB_API sb_status sb_log2(const sb_tensor *x, sb_tensor *out);
SB_API sb_status sb_rsqrt(const sb_tensor *x, sb_tensor *out);

/* Backward of y = op(x): x, y (the forward output) and dy have one shape,
 * dx receives the gradient (may alias dy). Per element:
 *   neg: -dy           abs: dy * sgn(x) (sgn: +-1, 0 for +-0, x for NaN)
 *   sqrt: dy / (2.0f * y)   exp: dy * y   log: dy / x
 *   square: dy * (2.0f * x)  reciprocal: -dy * (y * y)
 *   sin: dy * sb_cosf(x)     cos: dy * -sb_sinf(x)
 *   exp2: (dy * y) * LN2     log2: dy / (x * LN2)   (LN2 = 0x1.62e43p-1f)
 *   rsqrt: (-0.5f * dy) * ((y * y) * y)                                 */
SB_API sb_status sb_unary_backward(sb_unary_op op, const sb_tensor *x, const sb_tensor *y,
                            const sb_tensor *dy, sb_tensor *dx);

/* ---- activations ---------------------------------------------------------
 * Forward: y = f(x), same shape. Backward: dx from dy and the saved tensor
 * named in the signature (x, or y where the derivative is a function of the
 * output like PyTorch's tanh/sigmoid). dx may alias dy. Exact sequences in
 * the contract; each mirrors PyTorch's CPU formula in its evaluation order. */

/* y = NaN ? x : (x > 0 ? x : +0.0f);  dx = x <= 0 ? +0.0f : dy (NaN x passes dy) */
SB_API sb_status sb_relu_forward(const sb_tensor *x, sb_tensor *y);
SB_API sb_status sb_relu_backward(const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx);

/* y = x > 0 ? x : x * slope;  dx = x > 0 ? dy : dy * slope. slope finite. */
SB_API sb_status sb_leaky_relu_forward(const sb_tensor *x, float negative_slope, sb_tensor *y);
SB_API sb_status sb_leaky_relu_backward(const sb_tensor *x, const sb_tensor *dy, float negative_slope,
                                 sb_tensor *dx);

/* y = sb_tanhf(x);  dx = dy * (1.0f - y * y) */
SB_API sb_status sb_tanh_forward(const sb_tensor *x, sb_tensor *y);
SB_API sb_status sb_tanh_backward(const sb_tensor *y, const sb_tensor *dy, sb_tensor *dx);

/* y = 1.0f / (1.0f + sb_expf(-x));  dx = (dy * (1.0f - y)) * y */
SB_API sb_status sb_sigmoid_forward(const sb_tensor *x, sb_tensor *y);
SB_API sb_status sb_sigmoid_backward(const sb_tensor *y, const sb_tensor *dy, sb_tensor *dx);

/* y = x / (1.0f + sb_expf(-x));  s = 1.0f / (1.0f + sb_expf(-x)),
 * dx = (dy * s) * (1.0f + x * (1.0f - s)) */
SB_API sb_status sb_silu_forward(const sb_tensor *x, sb_tensor *y);
SB_API sb_status sb_silu_backward(const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx);

/* GELU; approximate_tanh = false: erf form, true: tanh form (PyTorch's
 * approximate='none' / 'tanh'). Sequences and constant bits in the contract. */
SB_API sb_status sb_gelu_forward(const sb_tensor *x, bool approximate_tanh, sb_tensor *y);
SB_API sb_status sb_gelu_backward(const sb_tensor *x, const sb_tensor *dy, bool approximate_tanh,
                           sb_tensor *dx);

/* Softplus like PyTorch: z = x * beta; y = z > threshold ? x
 * : sb_log1pf(sb_expf(z)) / beta;  dx = z > threshold ? dy
 * : (dy * e) / (e + 1.0f) with e = sb_expf(z). beta finite and non-zero,
 * threshold not NaN. */
SB_API sb_status sb_softplus_forward(const sb_tensor *x, float beta, float threshold, sb_tensor *y);
SB_API sb_status sb_softplus_backward(const sb_tensor *x, const sb_tensor *dy, float beta,
                               float threshold, sb_tensor *dx);

/* Hardtanh (min_val <= max_val, neither NaN; ReLU6 is hardtanh(0, 6)):
 * y = x < min_val ? min_val : (x > max_val ? max_val : x) (NaN and -0 kept);
 * dx = (x > min_val && x < max_val) ? dy : +0.0f (+0 for NaN x). */
SB_API sb_status sb_hardtanh_forward(const sb_tensor *x, float min_val, float max_val, sb_tensor *y);
SB_API sb_status sb_hardtanh_backward(const sb_tensor *x, const sb_tensor *dy, float min_val,
                                      float max_val, sb_tensor *dx);

/* Hardsigmoid: y = c(x + 3.0f) / 6.0f with c(v) = v < 0 ? 0 : (v > 6 ? 6 : v);
 * dx = (x > -3 && x < 3) ? dy * (1.0f/6.0f rounded) : +0.0f (NaN x gives +0). */
SB_API sb_status sb_hardsigmoid_forward(const sb_tensor *x, sb_tensor *y);
SB_API sb_status sb_hardsigmoid_backward(const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx);

/* Hardswish: y = (x * c(x + 3.0f)) / 6.0f; dx = x < -3 ? +0.0f : (x >= 3 ?
 * dy : dy * (x / 3.0f + 0.5f)) (NaN x gives NaN). */
SB_API sb_status sb_hardswish_forward(const sb_tensor *x, sb_tensor *y);
SB_API sb_status sb_hardswish_backward(const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx);

/* ELU with PyTorch's coefficients (all finite): negcoef = alpha * scale;
 * y = x > 0 ? x * scale : sb_expm1f(x * input_scale) * negcoef;
 * dx = x > 0 ? dy * scale : ((dy * input_scale) * negcoef) * sb_expf(x * input_scale).
 * elu(alpha) is (alpha, 1, 1); SELU and CELU(alpha) are (SELU_ALPHA,
 * SELU_SCALE, 1) and (alpha, 1, 1/alpha) with the bits in the contract. */
SB_API sb_status sb_elu_forward(const sb_tensor *x, float alpha, float scale, float input_scale,
                                sb_tensor *y);
SB_API sb_status sb_elu_backward(const sb_tensor *x, const sb_tensor *dy, float alpha, float scale,
                                 float input_scale, sb_tensor *dx);

/* Mish: t = sb_tanhf(sb_log1pf(sb_expf(x))), y = x * t;
 * dx = dy * (t + (x * s) * (1.0f - t * t)) with s = 1.0f / (1.0f + sb_expf(-x)). */
SB_API sb_status sb_mish_forward(const sb_tensor *x, sb_tensor *y);
SB_API sb_status sb_mish_backward(const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx);

/* LogSigmoid: z = sb_expf(-|x|), y = min(x, 0) - sb_log1pf(z);
 * q = z / (1.0f + z), dx = dy * (x < 0 ? 1.0f - q : q). */
SB_API sb_status sb_logsigmoid_forward(const sb_tensor *x, sb_tensor *y);
SB_API sb_status sb_logsigmoid_backward(const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx);

/* Hardshrink (lambd not NaN): y = (x >= -lambd && x <= lambd) ? +0.0f : x;
 * dx = (x < -lambd || x > lambd) ? dy : +0.0f (+0 for NaN x). */
SB_API sb_status sb_hardshrink_forward(const sb_tensor *x, float lambd, sb_tensor *y);
SB_API sb_status sb_hardshrink_backward(const sb_tensor *x, const sb_tensor *dy, float lambd,
                                        sb_tensor *dx);

/* Softshrink (lambd >= 0): y = x > lambd ? x - lambd : (x < -lambd ? x + lambd
 * : (isnan(x) ? x : +0.0f)); dx as hardshrink's. */
SB_API sb_status sb_softshrink_forward(const sb_tensor *x, float lambd, sb_tensor *y);
SB_API sb_status sb_softshrink_backward(const sb_tensor *x, const sb_tensor *dy, float lambd,
                                        sb_tensor *dx);

/* Threshold (threshold not NaN): y = x <= threshold ? value : x;
 * dx = x <= threshold ? +0.0f : dy. */
SB_API sb_status sb_threshold_forward(const sb_tensor *x, float threshold, float value,
                                      sb_tensor *y);
SB_API sb_status sb_threshold_backward(const sb_tensor *x, const sb_tensor *dy, float threshold,
                                       sb_tensor *dx);

/* PReLU like PyTorch's F.prelu (contract section 9, "PReLU"). x is
 * (N, C, ...) with rank >= 1; weight is 1-D with 1 element (shared) or C =
 * x.shape[1] elements (one per channel; a 1-D x has one channel, so its
 * weight has 1 element). x, weight, y, dy, dx contiguous float32.
 *   y = NaN ? x : (x > 0 ? x : w_c * x)          y may be x (in place)
 *   dx = x > 0 ? dy : w_c * dy                    dx may be dy
 *   dweight_c = canonical sum, in row-major order over the positions of
 *               channel c (all positions for a shared weight), of
 *               (x > 0 ? +0.0f : x * dy)
 * dx and dweight may each be NULL (not computed). Runs on the CPU (and the
 * CPU mirror) and OpenCL; CUDA answers SB_ERR_UNSUPPORTED. */
SB_API sb_status sb_prelu_forward(const sb_tensor *x, const sb_tensor *weight, sb_tensor *y);
SB_API sb_status sb_prelu_backward(const sb_tensor *x, const sb_tensor *weight, const sb_tensor *dy,
                                   sb_tensor *dx, sb_tensor *dweight);

#ifdef __cplusplus
}
#endif
#endif
