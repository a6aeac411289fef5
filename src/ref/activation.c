/* Reference kernels for activations, forward and backward (contract
 * "Activations"). Every sequence follows PyTorch's CPU formula in its
 * evaluation order so that results agree with it whenever the elementary
 * functions do; the elementary functions are samebits' correctly rounded
 * ones, never libm. No FMA anywhere (-ffp-contract=off). */
#include <math.h>
#include "samebits/math.h"
#include "core/internal.h"
#include "ref/ref_pointwise.h"

// x, y are (n,)
void sb_ref_relu_forward(int64_t n, const float *x, float *y) {
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        /* NaN is returned as is (a comparison alone would turn it into 0 and
         * hide it); -0 maps to +0 like max(x, 0) in PyTorch. */
        y[i] = sb_isnanf(v) ? v : (v > 0.0f ? v : 0.0f);
    }
}

// x, dy, dx are (n,)
void sb_ref_relu_backward(int64_t n, const float *x, const float *dy, float *dx) {
    /* PyTorch's threshold_backward: 0 where x <= 0 (the subgradient at 0 is
     * taken as 0), dy elsewhere, which includes NaN x. */
    for (int64_t i = 0; i < n; i++) dx[i] = x[i] <= 0.0f ? 0.0f : dy[i];
}

void sb_ref_leaky_relu_forward(int64_t n, const float *x, float slope, float *y) {
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = sb_isnanf(v) ? v : (v > 0.0f ? v : v * slope);
    }
}

void sb_ref_leaky_relu_backward(int64_t n, const float *x, const float *dy, float slope,
                                float *dx) {
    for (int64_t i = 0; i < n; i++) dx[i] = x[i] > 0.0f ? dy[i] : dy[i] * slope;
}

void sb_ref_tanh_forward(int64_t n, const float *x, float *y) {
    for (int64_t i = 0; i < n; i++) y[i] = sb_tanhf(x[i]);
}

// y is the forward output
void sb_ref_tanh_backward(int64_t n, const float *y, const float *dy, float *dx) {
    for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}

void sb_ref_sigmoid_forward(int64_t n, const float *x, float *y) {
    /* 1/(1+e^-x): for x -> -inf, e^-x overflows to inf and y is +0, never
     * NaN; for x -> +inf, y is exactly 1. */
    for (int64_t i = 0; i < n; i++) y[i] = 1.0f / (1.0f + sb_expf(-x[i]));
}

// y is the forward output
void sb_ref_sigmoid_backward(int64_t n, const float *y, const float *dy, float *dx) {
    for (int64_t i = 0; i < n; i++) dx[i] = (dy[i] * (1.0f - y[i])) * y[i];
}

void sb_ref_silu_forward(int64_t n, const float *x, float *y) {
    /* x / (1 + e^-x) rather than x * sigmoid(x): one rounding fewer. */
    for (int64_t i = 0; i < n; i++) y[i] = x[i] / (1.0f + sb_expf(-x[i]));
}

void sb_ref_silu_backward(int64_t n, const float *x, const float *dy, float *dx) {
    for (int64_t i = 0; i < n; i++) {
        float s = 1.0f / (1.0f + sb_expf(-x[i]));
        dx[i] = (dy[i] * s) * (1.0f + x[i] * (1.0f - s));
    }
}

/* Exact GELU: y = (0.5 x)(1 + erf(x / sqrt 2)); tanh GELU:
 * y = (0.5 x)(1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
void sb_ref_gelu_forward(int64_t n, const float *x, bool approximate, float *y) {
    for (int64_t i = 0; i < n; i++) {
        float v = x[i], t;
        if (approximate) {
            float cube = (v * v) * v;
            float inner = SB_GELU_SQRT_2_PI * (v + SB_GELU_KAPPA * cube);
            t = sb_tanhf(inner);
        } else {
            t = sb_erff(v * SB_GELU_SQRT1_2);
        }
        y[i] = (v * 0.5f) * (1.0f + t);
    }
}

void sb_ref_gelu_backward(int64_t n, const float *x, const float *dy, bool approximate,
                          float *dx) {
    for (int64_t i = 0; i < n; i++) {
        float v = x[i], d;
        if (approximate) {
            float sq = v * v;
            float cube = sq * v;
            float inner = SB_GELU_SQRT_2_PI * (v + SB_GELU_KAPPA * cube);
            float th = sb_tanhf(inner);
            float left = 0.5f * v;
            float right = 1.0f + th;
            float left_d = 0.5f * right;
            float tanh_d = 1.0f - th * th;
            float inner_d = SB_GELU_SQRT_2_PI * (1.0f + SB_GELU_KAPPA3 * sq);
            float right_d = (left * tanh_d) * inner_d;
            d = left_d + right_d;
        } else {
            /* cdf + x * pdf with pdf = e^(-x^2/2) / sqrt(2 pi); x*x*-0.5 is
             * exact scaling of the rounded square. */
            float cdf = 0.5f * (1.0f + sb_erff(v * SB_GELU_SQRT1_2));
            float pdf = SB_GELU_INV_SQRT_2PI * sb_expf((v * v) * -0.5f);
            d = cdf + v * pdf;
        }
        dx[i] = dy[i] * d;
    }
}

/* Above the threshold softplus is the identity to float precision, and
 * log1p(exp(z)) would overflow; PyTorch switches at the same point. */
void sb_ref_softplus_forward(int64_t n, const float *x, float beta, float threshold, float *y) {
    for (int64_t i = 0; i < n; i++) {
        float z = x[i] * beta;
        y[i] = z > threshold ? x[i] : sb_log1pf(sb_expf(z)) / beta;
    }
}

void sb_ref_softplus_backward(int64_t n, const float *x, const float *dy, float beta,
                              float threshold, float *dx) {
    for (int64_t i = 0; i < n; i++) {
        float z = x[i] * beta;
        if (z > threshold) {
            dx[i] = dy[i];
        } else {
            float e = sb_expf(z);
            dx[i] = (dy[i] * e) / (e + 1.0f);
        }
    }
}

/* ---- the piecewise-linear "hard" activations (PyTorch's CPU formulas) ---- */

// x, y are (n,); min_val <= max_val, neither NaN
void sb_ref_hardtanh_forward(int64_t n, const float *x, float min_val, float max_val, float *y) {
    /* x itself inside [min_val, max_val] (so -0 stays -0 when min_val is 0:
     * relu6(-0) = -0 as in PyTorch); NaN is returned as is. */
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = v < min_val ? min_val : (v > max_val ? max_val : v);
    }
}

void sb_ref_hardtanh_backward(int64_t n, const float *x, const float *dy, float min_val,
                              float max_val, float *dx) {
    /* PyTorch's vectorised hardtanh_backward: dy strictly inside, +0 at and
     * beyond both kinks and for NaN x (its scalar tail loop passes dy for
     * NaN instead; the vector rule is the one most elements get). */
    for (int64_t i = 0; i < n; i++)
        dx[i] = (x[i] > min_val && x[i] < max_val) ? dy[i] : 0.0f;
}

/* min(max(v, 0), 6) for v = x + 3: v is never -0 (x + 3 rounds to +0), and a
 * NaN v stays NaN. */
static inline float clamp_0_6(float v) { return v < 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v); }

void sb_ref_hardsigmoid_forward(int64_t n, const float *x, float *y) {
    for (int64_t i = 0; i < n; i++) y[i] = clamp_0_6(x[i] + 3.0f) / 6.0f;
}

void sb_ref_hardsigmoid_backward(int64_t n, const float *x, const float *dy, float *dx) {
    /* dy * (1/6 rounded) strictly inside (-3, 3); +0 elsewhere, NaN x included. */
    for (int64_t i = 0; i < n; i++)
        dx[i] = (x[i] > -3.0f && x[i] < 3.0f) ? dy[i] * SB_ONE_SIXTH : 0.0f;
}

void sb_ref_hardswish_forward(int64_t n, const float *x, float *y) {
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] * clamp_0_6(x[i] + 3.0f)) / 6.0f;
}

void sb_ref_hardswish_backward(int64_t n, const float *x, const float *dy, float *dx) {
    /* PyTorch's vectorised hardswish_backward: +0 below -3, dy from 3 up,
     * dy * (x / 3 + 0.5) on [-3, 3) and for NaN x (a NaN gradient). Its
     * scalar tail loop differs at x = 3 (1.5 dy) and NaN (dy). */
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        dx[i] = v < -3.0f ? 0.0f : (v >= 3.0f ? dy[i] : dy[i] * (v / 3.0f + 0.5f));
    }
}

/* ---- ELU (SELU and CELU), Mish, LogSigmoid (PyTorch's CPU formulas) ---- */

/* PyTorch's elu kernel: negcoef = alpha * scale (a float product),
 * poscoef = scale, negiptcoef = input_scale. The test is x > 0 as in its
 * vectorised loop, so NaN takes the expm1 branch (a NaN either way). */
void sb_ref_elu_forward(int64_t n, const float *x, float alpha, float scale, float input_scale,
                        float *y) {
    float negcoef = alpha * scale;
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = v > 0.0f ? v * scale : sb_expm1f(v * input_scale) * negcoef;
    }
}

/* elu_backward with is_result = false (from x): grad * negiptcoef * negcoef
 * * exp(x * negiptcoef), left to right. */
void sb_ref_elu_backward(int64_t n, const float *x, const float *dy, float alpha, float scale,
                         float input_scale, float *dx) {
    float negcoef = alpha * scale;
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        dx[i] = v > 0.0f ? dy[i] * scale
                         : ((dy[i] * input_scale) * negcoef) * sb_expf(v * input_scale);
    }
}

/* x * tanh(log1p(exp(x))), with no threshold: exp overflows to inf for
 * large x, log1p(inf) = inf, tanh(inf) = 1, so y = x there. */
void sb_ref_mish_forward(int64_t n, const float *x, float *y) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * sb_tanhf(sb_log1pf(sb_expf(x[i])));
}

void sb_ref_mish_backward(int64_t n, const float *x, const float *dy, float *dx) {
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        float s = 1.0f / (1.0f + sb_expf(-v));
        float t = sb_tanhf(sb_log1pf(sb_expf(v)));
        dx[i] = dy[i] * (t + (v * s) * (1.0f - t * t));
    }
}

/* min(x, 0) - log1p(exp(-|x|)): never overflows; min keeps -0 and NaN. */
void sb_ref_logsigmoid_forward(int64_t n, const float *x, float *y) {
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        float m = 0.0f < v ? 0.0f : v;
        y[i] = m - sb_log1pf(sb_expf(-fabsf(v)));
    }
}

/* dy * (max_deriv - sign * (z / (1 + z))) with z = exp(-|x|): for x < 0
 * that is 1 - q, otherwise 0 - (-1 * q) = q exactly. */
void sb_ref_logsigmoid_backward(int64_t n, const float *x, const float *dy, float *dx) {
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        float z = sb_expf(-fabsf(v));
        float q = z / (1.0f + z);
        dx[i] = dy[i] * (v < 0.0f ? 1.0f - q : q);
    }
}

/* ---- shrinkage and threshold (no elementary function) ---- */

/* +0 inside [-lambd, lambd] (the bounds included), x elsewhere and for NaN. */
void sb_ref_hardshrink_forward(int64_t n, const float *x, float lambd, float *y) {
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = (v >= -lambd && v <= lambd) ? 0.0f : v;
    }
}

/* PyTorch's shrink_backward, shared by hardshrink and softshrink, in its
 * vectorised form (outside mask AND dy): dy strictly outside [-lambd,
 * lambd], +0 inside and for NaN x (its scalar tail loop passes dy there). */
void sb_ref_hardshrink_backward(int64_t n, const float *x, const float *dy, float lambd,
                                float *dx) {
    for (int64_t i = 0; i < n; i++) dx[i] = (x[i] < -lambd || x[i] > lambd) ? dy[i] : 0.0f;
}

/* x - lambd above, x + lambd below, +0 inside (PyTorch's vectorised
 * masks, also -0 and negative x); NaN is kept as PyTorch 2.x keeps it
 * (1.13's masks turned it into +0 and hid it). */
void sb_ref_softshrink_forward(int64_t n, const float *x, float lambd, float *y) {
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = v > lambd ? v - lambd : (v < -lambd ? v + lambd : (sb_isnanf(v) ? v : 0.0f));
    }
}

void sb_ref_softshrink_backward(int64_t n, const float *x, const float *dy, float lambd,
                                float *dx) {
    sb_ref_hardshrink_backward(n, x, dy, lambd, dx);
}

/* value where x <= threshold, x elsewhere (NaN x kept). */
void sb_ref_threshold_forward(int64_t n, const float *x, float threshold, float value, float *y) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] <= threshold ? value : x[i];
}

void sb_ref_threshold_backward(int64_t n, const float *x, const float *dy, float threshold,
                               float *dx) {
    for (int64_t i = 0; i < n; i++) dx[i] = x[i] <= threshold ? 0.0f : dy[i];
}
