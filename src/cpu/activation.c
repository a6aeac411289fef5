/* The fast activations whose contract formula calls an elementary function
 * (contract "Activations", reference src/ref/activation.c).
 *
 * Each kernel works a chunk at a time: the argument of the transcendental
 * is computed per element exactly as the reference computes it, the whole
 * chunk goes through the batch function of cpu/vmath.h (bit-identical to
 * sb_expf/sb_tanhf/sb_erff/sb_log1pf, NaN payloads included), and the rest
 * of the reference's per-element sequence then runs unchanged. The
 * operations and their order per element are the reference's, so the bits
 * are too; only the grouping of elements differs, which the elementwise
 * contract leaves free. Threads come from the caller (sb_cpu_pw_run).
 *
 * Outputs may alias an input exactly (y == x): every element's inputs are
 * read before its output is written, and the buffers hold only values
 * derived from the element itself. */
#include <math.h>
#include "cpu/fused_internal.h"
#include "cpu/kernels.h"
#include "cpu/ops_internal.h"
#include "cpu/vmath.h"

enum { CHUNK = 512 };

static int64_t chunk_len(int64_t n, int64_t i0) { return n - i0 < CHUNK ? n - i0 : CHUNK; }

/* out[i] = a[i*sa] op b[i*sb], i < k (sa, sb: 1, or 0 for one value): the
 * level's vector loop for one IEEE operation per element. This file is
 * compiled for the baseline ISA, so the reference's per-element steps
 * around the transcendental run through these, one step of the sequence
 * per pass over the chunk (in L1), in the reference's order. */
static void step(sb_binary_op op, int64_t k, const float *a, int64_t sa, const float *b,
                 int64_t sb, float *out) {
    sb_kernels()->pointwise->binary(op, k, a, sa, b, sb, out);
}

void sb_cpu_tanh_forward(int64_t n, const float *x, float *y) { sb_cpu_tanhf_n(x, y, n); }

/* dx = dy * (1.0f - y * y), y the forward's output. */
void sb_cpu_tanh_backward(int64_t n, const float *y, const float *dy, float *dx) {
    const float one = 1.0f;
    float t[CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t k = chunk_len(n, i0);
        step(SB_BINARY_MUL, k, y + i0, 1, y + i0, 1, t);
        step(SB_BINARY_SUB, k, &one, 0, t, 1, t);
        step(SB_BINARY_MUL, k, dy + i0, 1, t, 1, dx + i0);
    }
}

/* dx = (dy * (1.0f - y)) * y, y the forward's output. */
void sb_cpu_sigmoid_backward(int64_t n, const float *y, const float *dy, float *dx) {
    const float one = 1.0f;
    float t[CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t k = chunk_len(n, i0);
        step(SB_BINARY_SUB, k, &one, 0, y + i0, 1, t);
        step(SB_BINARY_MUL, k, dy + i0, 1, t, 1, t);
        step(SB_BINARY_MUL, k, t, 1, y + i0, 1, dx + i0);
    }
}

/* e[i] = 1.0f + exp(-x[i]), the denominator of the logistic function. */
static void one_plus_exp_neg(int64_t k, const float *x, float *e) {
    const float one = 1.0f;
    for (int64_t i = 0; i < k; i++) e[i] = -x[i];
    sb_cpu_expf_n(e, e, k);
    step(SB_BINARY_ADD, k, &one, 0, e, 1, e);
}

void sb_cpu_sigmoid_forward(int64_t n, const float *x, float *y) {
    const float one = 1.0f;
    float e[CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t k = chunk_len(n, i0);
        one_plus_exp_neg(k, x + i0, e);
        step(SB_BINARY_DIV, k, &one, 0, e, 1, y + i0); /* y = 1.0f / (1.0f + e) */
    }
}

void sb_cpu_silu_forward(int64_t n, const float *x, float *y) {
    float e[CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t k = chunk_len(n, i0);
        one_plus_exp_neg(k, x + i0, e);
        step(SB_BINARY_DIV, k, x + i0, 1, e, 1, y + i0); /* y = v / (1.0f + e) */
    }
}

void sb_cpu_silu_backward(int64_t n, const float *x, const float *dy, float *dx) {
    const float one = 1.0f;
    float s[CHUNK], t[CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t k = chunk_len(n, i0);
        /* s = 1.0f / (1.0f + e); dx = (dy * s) * (1.0f + v * (1.0f - s)) */
        one_plus_exp_neg(k, x + i0, s);
        step(SB_BINARY_DIV, k, &one, 0, s, 1, s);
        step(SB_BINARY_SUB, k, &one, 0, s, 1, t);
        step(SB_BINARY_MUL, k, x + i0, 1, t, 1, t);
        step(SB_BINARY_ADD, k, &one, 0, t, 1, t);
        step(SB_BINARY_MUL, k, dy + i0, 1, s, 1, s);
        step(SB_BINARY_MUL, k, s, 1, t, 1, dx + i0);
    }
}

/* GELU: per chunk, the transcendental's argument, the batch function, and
 * the rest of the reference's statements, each a single pass of the level's
 * fused loops (cpu/fused_internal.h) or of a vmath kernel that forms its
 * argument itself (erf(v * sqrt(1/2))). */
void sb_cpu_gelu_forward(int64_t n, const float *x, bool approximate, float *y) {
    const sb_cpu_kernels *kern = sb_kernels();
    float t[CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t k = chunk_len(n, i0);
        if (approximate) {
            kern->fused->gelu_tanh_arg(k, x + i0, t);
            kern->vmath->tanhf_n(t, t, k);
        } else {
            kern->vmath->erff_mul_n(x + i0, SB_GELU_SQRT1_2, t, k);
        }
        kern->fused->gelu_fwd(k, x + i0, t, y + i0);
    }
}

void sb_cpu_gelu_backward(int64_t n, const float *x, const float *dy, bool approximate,
                          float *dx) {
    const sb_cpu_kernels *kern = sb_kernels();
    float t[CHUNK], u[CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t k = chunk_len(n, i0);
        if (approximate) {
            kern->fused->gelu_tanh_arg(k, x + i0, t);
            kern->vmath->tanhf_n(t, t, k);
            kern->fused->gelu_tanh_bwd(k, x + i0, t, dy + i0, dx + i0);
        } else {
            kern->vmath->erff_mul_n(x + i0, SB_GELU_SQRT1_2, t, k);
            kern->fused->gelu_exp_arg(k, x + i0, u);
            kern->vmath->expf_n(u, u, k);
            kern->fused->gelu_exact_bwd(k, x + i0, t, u, dy + i0, dx + i0);
        }
    }
}

/* Elements above the threshold do not use the transcendental; computing it
 * for them anyway costs less than compacting the chunk, and its value is
 * discarded. */
void sb_cpu_softplus_forward(int64_t n, const float *x, float beta, float threshold, float *y) {
    float e[CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t k = chunk_len(n, i0);
        for (int64_t i = 0; i < k; i++) e[i] = x[i0 + i] * beta;
        sb_cpu_expf_n(e, e, k);
        sb_cpu_log1pf_n(e, e, k);
        for (int64_t i = 0; i < k; i++) {
            float v = x[i0 + i];
            float z = v * beta;
            y[i0 + i] = z > threshold ? v : e[i] / beta;
        }
    }
}

void sb_cpu_softplus_backward(int64_t n, const float *x, const float *dy, float beta,
                              float threshold, float *dx) {
    float e[CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t k = chunk_len(n, i0);
        for (int64_t i = 0; i < k; i++) e[i] = x[i0 + i] * beta;
        sb_cpu_expf_n(e, e, k);
        for (int64_t i = 0; i < k; i++) {
            float z = x[i0 + i] * beta;
            dx[i0 + i] = z > threshold ? dy[i0 + i] : (dy[i0 + i] * e[i]) / (e[i] + 1.0f);
        }
    }
}

/* ELU: expm1 of the whole chunk (its value is discarded where x > 0). */
void sb_cpu_elu_forward(int64_t n, const float *x, float alpha, float scale, float input_scale,
                        float *y) {
    float e[CHUNK];
    float negcoef = alpha * scale;
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t k = chunk_len(n, i0);
        for (int64_t i = 0; i < k; i++) e[i] = x[i0 + i] * input_scale;
        sb_cpu_expm1f_n(e, e, k);
        for (int64_t i = 0; i < k; i++) {
            float v = x[i0 + i];
            y[i0 + i] = v > 0.0f ? v * scale : e[i] * negcoef;
        }
    }
}

void sb_cpu_elu_backward(int64_t n, const float *x, const float *dy, float alpha, float scale,
                         float input_scale, float *dx) {
    float e[CHUNK];
    float negcoef = alpha * scale;
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t k = chunk_len(n, i0);
        for (int64_t i = 0; i < k; i++) e[i] = x[i0 + i] * input_scale;
        sb_cpu_expf_n(e, e, k);
        for (int64_t i = 0; i < k; i++) {
            float v = x[i0 + i], g = dy[i0 + i];
            dx[i0 + i] = v > 0.0f ? g * scale : ((g * input_scale) * negcoef) * e[i];
        }
    }
}

/* tanh(log1p(exp(x))) of a chunk into t: three batch calls in place. */
static void mish_tanh_softplus(const float *x, float *t, int64_t k) {
    sb_cpu_expf_n(x, t, k);
    sb_cpu_log1pf_n(t, t, k);
    sb_cpu_tanhf_n(t, t, k);
}

void sb_cpu_mish_forward(int64_t n, const float *x, float *y) {
    float t[CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t k = chunk_len(n, i0);
        mish_tanh_softplus(x + i0, t, k);
        for (int64_t i = 0; i < k; i++) y[i0 + i] = x[i0 + i] * t[i];
    }
}

void sb_cpu_mish_backward(int64_t n, const float *x, const float *dy, float *dx) {
    float t[CHUNK], e[CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t k = chunk_len(n, i0);
        mish_tanh_softplus(x + i0, t, k);
        for (int64_t i = 0; i < k; i++) e[i] = -x[i0 + i];
        sb_cpu_expf_n(e, e, k);
        for (int64_t i = 0; i < k; i++) {
            float v = x[i0 + i], th = t[i];
            float s = 1.0f / (1.0f + e[i]);
            dx[i0 + i] = dy[i0 + i] * (th + (v * s) * (1.0f - th * th));
        }
    }
}

void sb_cpu_logsigmoid_forward(int64_t n, const float *x, float *y) {
    float z[CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t k = chunk_len(n, i0);
        for (int64_t i = 0; i < k; i++) z[i] = -fabsf(x[i0 + i]);
        sb_cpu_expf_n(z, z, k);
        sb_cpu_log1pf_n(z, z, k);
        for (int64_t i = 0; i < k; i++) {
            float v = x[i0 + i];
            float m = 0.0f < v ? 0.0f : v;
            y[i0 + i] = m - z[i];
        }
    }
}

void sb_cpu_logsigmoid_backward(int64_t n, const float *x, const float *dy, float *dx) {
    float z[CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t k = chunk_len(n, i0);
        for (int64_t i = 0; i < k; i++) z[i] = -fabsf(x[i0 + i]);
        sb_cpu_expf_n(z, z, k);
        for (int64_t i = 0; i < k; i++) {
            float q = z[i] / (1.0f + z[i]);
            dx[i0 + i] = dy[i0 + i] * (x[i0 + i] < 0.0f ? 1.0f - q : q);
        }
    }
}
