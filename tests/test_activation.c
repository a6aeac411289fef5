/* Tests for activations, forward and backward: exact bits against the
 * contract's sequences restated here in terms of sb_expf/sb_tanhf/sb_erff/
 * sb_log1pf, closeness to float64 formulas (libm double), float64 central
 * differences for every backward, special values, strides, in-place use and
 * bad inputs. */
#include <float.h>
#include <math.h>
#include "harness.h"

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}
static float frand(float lo, float hi) { return lo + (hi - lo) * (float)(rnd() % 1000000) / 1e6f; }
static float bits_f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static sb_tensor *tnew(int nd, const int64_t *shape) {
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, SB_F32, nd, shape) != SB_OK) { fprintf(stderr, "%s\n", sb_last_error()); exit(2); }
    return t;
}

enum { RELU, LEAKY, TANH, SIGMOID, SILU, GELU, GELU_TANH, SOFTPLUS, HARDTANH, HARDSIGMOID, HARDSWISH,
       ELU, SELU, CELU, MISH, LOGSIGMOID, HARDSHRINK, SOFTSHRINK, THRESHOLD, NACT };
static const char *names[NACT] = { "relu", "leaky_relu", "tanh", "sigmoid", "silu", "gelu", "gelu_tanh", "softplus",
                                   "hardtanh", "hardsigmoid", "hardswish", "elu", "selu", "celu", "mish",
                                   "logsigmoid", "hardshrink", "softshrink", "threshold" };
static const float SLOPE = 0.01f, BETA = 1.5f, THRESH = 20.0f, HT_MIN = -2.0f, HT_MAX = 1.5f;
static const float LAMBD = 0.5f, TH = 0.25f, TH_VALUE = -2.0f;

/* ELU's (alpha, scale, input_scale) for elu(1.5), selu and celu(1.7) as
 * PyTorch derives them: SELU's constants are the float32 nearest to its
 * double constants, CELU's input_scale is (float)(1.0 / (double)alpha). */
#define C_SELU_ALPHA ((float)1.6732632423543772848170429916717)
#define C_SELU_SCALE ((float)1.0507009873554804934193349852946)
static void elu_params(int k, float p[3]) {
    p[0] = k == ELU ? 1.5f : k == SELU ? C_SELU_ALPHA : 1.7f;
    p[1] = k == SELU ? C_SELU_SCALE : 1.0f;
    p[2] = k == CELU ? (float)(1.0 / (double)1.7f) : 1.0f;
}
static int is_elu(int k) { return k == ELU || k == SELU || k == CELU; }

/* The kinks of the piecewise-linear activations, where float64 central
 * differences say nothing. */
static int near_kink(int k, double x) {
    if (k == HARDSHRINK || k == SOFTSHRINK) return fabs(fabs(x) - LAMBD) < 1e-3;
    if (k == THRESHOLD) return fabs(x - TH) < 1e-3;
    double d = k == HARDTANH ? fmin(fabs(x - HT_MIN), fabs(x - HT_MAX)) : fmin(fabs(x + 3), fabs(x - 3));
    return (k == HARDTANH || k == HARDSIGMOID || k == HARDSWISH) && d < 1e-3;
}

/* The constants, from their decimal definitions (checked against the
 * contract's bit patterns in test_constants). */
#define C_SQRT1_2 ((float)0.70710678118654752440)
#define C_INV_SQRT_2PI ((float)0.39894228040143267794)
#define C_SQRT_2_PI ((float)0.79788456080286535588)
#define C_KAPPA ((float)0.044715)

/* The contract's forward sequences. */
static float want_fwd(int k, float x) {
    switch (k) {
    case RELU: return x != x ? x : (x > 0.0f ? x : 0.0f);
    case LEAKY: return x != x ? x : (x > 0.0f ? x : x * SLOPE);
    case TANH: return sb_tanhf(x);
    case SIGMOID: { float e = sb_expf(-x); float d = 1.0f + e; return 1.0f / d; }
    case SILU: { float e = sb_expf(-x); float d = 1.0f + e; return x / d; }
    case GELU: { float t = sb_erff(x * C_SQRT1_2); float h = x * 0.5f; return h * (1.0f + t); }
    case GELU_TANH: {
        float c = x * x; c = c * x;
        float in = C_KAPPA * c; in = x + in; in = C_SQRT_2_PI * in;
        float t = sb_tanhf(in);
        float h = x * 0.5f;
        return h * (1.0f + t);
    }
    case SOFTPLUS: { float z = x * BETA; if (z > THRESH) return x; float l = sb_log1pf(sb_expf(z)); return l / BETA; }
    /* written with fminf/fmaxf, not the reference's comparisons: equal for
     * non-NaN x except at a signed zero, which only hardtanh can return */
    case HARDTANH: return x != x ? x : (x == 0.0f ? x : fminf(fmaxf(x, HT_MIN), HT_MAX));
    case HARDSIGMOID: return x != x ? x : fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f;
    case HARDSWISH: return x != x ? x : (x * fminf(fmaxf(x + 3.0f, 0.0f), 6.0f)) / 6.0f;
    case ELU: case SELU: case CELU: {
        float p[3];
        elu_params(k, p);
        if (x > 0.0f) return x * p[1];
        float t = x * p[2];
        float negcoef = p[0] * p[1];
        return sb_expm1f(t) * negcoef;
    }
    case MISH: { float e = sb_expf(x); float l = sb_log1pf(e); float t = sb_tanhf(l); return x * t; }
    case LOGSIGMOID: {
        float ax = x < 0.0f ? -x : x;
        float l = sb_log1pf(sb_expf(-ax));
        float m = x > 0.0f ? 0.0f : x;
        return m - l;
    }
    case HARDSHRINK: return fabsf(x) <= LAMBD ? 0.0f : x;
    case SOFTSHRINK:
        if (x != x) return x;
        return fabsf(x) <= LAMBD ? 0.0f : (x > 0.0f ? x - LAMBD : x + LAMBD);
    case THRESHOLD: return (x > TH || x != x) ? x : TH_VALUE;
    }
    return 0.0f;
}

/* The contract's backward sequences; s is x, or y for tanh/sigmoid. */
static float want_bwd(int k, float s, float g) {
    switch (k) {
    case RELU: return s <= 0.0f ? 0.0f : g;
    case LEAKY: return s > 0.0f ? g : g * SLOPE;
    case TANH: { float yy = s * s; return g * (1.0f - yy); }
    case SIGMOID: { float t = g * (1.0f - s); return t * s; }
    case SILU: {
        float sg = 1.0f / (1.0f + sb_expf(-s));
        float a = g * sg, b = 1.0f - sg;
        b = s * b;
        return a * (1.0f + b);
    }
    case GELU: {
        float cdf = 1.0f + sb_erff(s * C_SQRT1_2); cdf = 0.5f * cdf;
        float q = s * s; q = q * -0.5f;
        float pdf = C_INV_SQRT_2PI * sb_expf(q);
        float d = s * pdf; d = cdf + d;
        return g * d;
    }
    case GELU_TANH: {
        float sq = s * s, cube = sq * s;
        float in = C_SQRT_2_PI * (s + C_KAPPA * cube);
        float th = sb_tanhf(in);
        float kappa3 = 3.0f * C_KAPPA;
        float ld = 0.5f * (1.0f + th);
        float td = 1.0f - th * th;
        float id = C_SQRT_2_PI * (1.0f + kappa3 * sq);
        float rd = ((0.5f * s) * td) * id;
        return g * (ld + rd);
    }
    case SOFTPLUS: {
        float z = s * BETA;
        if (z > THRESH) return g;
        float e = sb_expf(z);
        return (g * e) / (e + 1.0f);
    }
    case HARDTANH: return (s > HT_MIN && s < HT_MAX) ? g : 0.0f;
    case HARDSIGMOID: return (s > -3.0f && s < 3.0f) ? g * (float)(1.0 / 6.0) : 0.0f;
    case HARDSWISH:
        if (s != s) return g * s;
        return s < -3.0f ? 0.0f : (s >= 3.0f ? g : g * (s / 3.0f + 0.5f));
    case ELU: case SELU: case CELU: {
        float p[3];
        elu_params(k, p);
        if (s > 0.0f) return g * p[1];
        float negcoef = p[0] * p[1];
        float a = g * p[2];
        a = a * negcoef;
        return a * sb_expf(s * p[2]);
    }
    case MISH: {
        float sg = 1.0f / (1.0f + sb_expf(-s));
        float t = sb_tanhf(sb_log1pf(sb_expf(s)));
        float a = s * sg, b = 1.0f - t * t;
        return g * (t + a * b);
    }
    case LOGSIGMOID: {
        /* PyTorch's form: dy * (max_deriv - sign * (z / (1 + z))) */
        float ax = s < 0.0f ? -s : s;
        float z = sb_expf(-ax);
        float q = z / (1.0f + z);
        float max_deriv = s < 0.0f ? 1.0f : 0.0f, sign = s < 0.0f ? 1.0f : -1.0f;
        return g * (max_deriv - sign * q);
    }
    case HARDSHRINK: case SOFTSHRINK: return fabsf(s) > LAMBD ? g : 0.0f;
    case THRESHOLD: return (s > TH || s != s) ? g : 0.0f;
    }
    return 0.0f;
}

/* float64 definitions for closeness and finite differences. */
static double f64(int k, double x) {
    switch (k) {
    case RELU: return x > 0 ? x : 0;
    case LEAKY: return x > 0 ? x : x * (double)SLOPE;
    case TANH: return tanh(x);
    case SIGMOID: return 1.0 / (1.0 + exp(-x));
    case SILU: return x / (1.0 + exp(-x));
    case GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case GELU_TANH: return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
    case SOFTPLUS: return x * BETA > THRESH ? x : log1p(exp(x * (double)BETA)) / BETA;
    case HARDTANH: return fmin(fmax(x, HT_MIN), HT_MAX);
    case HARDSIGMOID: return fmin(fmax(x + 3, 0), 6) / 6;
    case HARDSWISH: return x * fmin(fmax(x + 3, 0), 6) / 6;
    case ELU: case SELU: case CELU: {
        float p[3];
        elu_params(k, p);
        return x > 0 ? x * p[1] : (double)p[0] * p[1] * expm1(x * p[2]);
    }
    case MISH: return x * tanh(log1p(exp(x)));
    case LOGSIGMOID: return x < 0 ? x - log1p(exp(x)) : -log1p(exp(-x));
    case HARDSHRINK: return fabs(x) <= LAMBD ? 0 : x;
    case SOFTSHRINK: return fabs(x) <= LAMBD ? 0 : x - copysign(LAMBD, x);
    case THRESHOLD: return x <= TH ? TH_VALUE : x;
    }
    return 0;
}

static sb_status run_fwd(int k, const sb_tensor *x, sb_tensor *y) {
    switch (k) {
    case RELU: return sb_relu_forward(x, y);
    case LEAKY: return sb_leaky_relu_forward(x, SLOPE, y);
    case TANH: return sb_tanh_forward(x, y);
    case SIGMOID: return sb_sigmoid_forward(x, y);
    case SILU: return sb_silu_forward(x, y);
    case GELU: return sb_gelu_forward(x, false, y);
    case GELU_TANH: return sb_gelu_forward(x, true, y);
    case HARDTANH: return sb_hardtanh_forward(x, HT_MIN, HT_MAX, y);
    case HARDSIGMOID: return sb_hardsigmoid_forward(x, y);
    case HARDSWISH: return sb_hardswish_forward(x, y);
    case ELU: case SELU: case CELU: {
        float p[3];
        elu_params(k, p);
        return sb_elu_forward(x, p[0], p[1], p[2], y);
    }
    case MISH: return sb_mish_forward(x, y);
    case LOGSIGMOID: return sb_logsigmoid_forward(x, y);
    case HARDSHRINK: return sb_hardshrink_forward(x, LAMBD, y);
    case SOFTSHRINK: return sb_softshrink_forward(x, LAMBD, y);
    case THRESHOLD: return sb_threshold_forward(x, TH, TH_VALUE, y);
    default: return sb_softplus_forward(x, BETA, THRESH, y);
    }
}

/* s is x, or y for tanh/sigmoid */
static sb_status run_bwd(int k, const sb_tensor *s, const sb_tensor *dy, sb_tensor *dx) {
    switch (k) {
    case RELU: return sb_relu_backward(s, dy, dx);
    case LEAKY: return sb_leaky_relu_backward(s, dy, SLOPE, dx);
    case TANH: return sb_tanh_backward(s, dy, dx);
    case SIGMOID: return sb_sigmoid_backward(s, dy, dx);
    case SILU: return sb_silu_backward(s, dy, dx);
    case GELU: return sb_gelu_backward(s, dy, false, dx);
    case GELU_TANH: return sb_gelu_backward(s, dy, true, dx);
    case HARDTANH: return sb_hardtanh_backward(s, dy, HT_MIN, HT_MAX, dx);
    case HARDSIGMOID: return sb_hardsigmoid_backward(s, dy, dx);
    case HARDSWISH: return sb_hardswish_backward(s, dy, dx);
    case ELU: case SELU: case CELU: {
        float p[3];
        elu_params(k, p);
        return sb_elu_backward(s, dy, p[0], p[1], p[2], dx);
    }
    case MISH: return sb_mish_backward(s, dy, dx);
    case LOGSIGMOID: return sb_logsigmoid_backward(s, dy, dx);
    case HARDSHRINK: return sb_hardshrink_backward(s, dy, LAMBD, dx);
    case SOFTSHRINK: return sb_softshrink_backward(s, dy, LAMBD, dx);
    case THRESHOLD: return sb_threshold_backward(s, dy, TH, dx);
    default: return sb_softplus_backward(s, dy, BETA, THRESH, dx);
    }
}
static int uses_y(int k) { return k == TANH || k == SIGMOID; }

static int same(float a, float b) { return sb_test_bits(a) == sb_test_bits(b) || (a != a && b != b); }

static void test_constants(void) {
    CHECK(sb_test_bits(C_SQRT1_2) == 0x3f3504f3u, "1/sqrt2 bits");
    CHECK(sb_test_bits(C_INV_SQRT_2PI) == 0x3ecc422au, "1/sqrt(2pi) bits");
    CHECK(sb_test_bits(C_SQRT_2_PI) == 0x3f4c422au, "sqrt(2/pi) bits");
    CHECK(sb_test_bits(C_KAPPA) == 0x3d372713u, "kappa bits");
    CHECK(sb_test_bits(3.0f * C_KAPPA) == 0x3e095d4eu, "3*kappa bits");
    CHECK(sb_test_bits(C_SELU_ALPHA) == 0x3fd62d7du, "SELU alpha bits");
    CHECK(sb_test_bits(C_SELU_SCALE) == 0x3f867d5fu, "SELU scale bits");
    CHECK(sb_test_bits(C_SELU_ALPHA * C_SELU_SCALE) == 0x3fe10966u, "SELU negcoef bits");
}

static void test_values(void) {
    static const float sp[] = { 0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, 1e-45f, -1e-45f, 1e-40f,
                                -1e-40f, FLT_MIN, 88.0f, -88.0f, 89.0f, -104.0f, 13.3f, -9.5f, 20.0f,
                                13.333333f, 14.0f, 1e10f, -1e10f, 3.0e38f, -3.0e38f, 0.5f, -5.5f };
    int nsp = (int)(sizeof sp / sizeof sp[0]);
    int64_t n = nsp + (sb_test_quick() ? 2000 : 20000);
    sb_tensor *x = tnew(1, &n), *y = tnew(1, &n), *dy = tnew(1, &n), *dx = tnew(1, &n);
    float *xv = x->data, *yv = y->data, *dyv = dy->data, *dxv = dx->data;
    memcpy(xv, sp, sizeof sp);
    for (int64_t i = nsp; i < n; i++) xv[i] = i % 3 ? frand(-8.0f, 8.0f) : frand(-40.0f, 40.0f);
    for (int64_t i = 0; i < n; i++) dyv[i] = frand(-2.0f, 2.0f);
    for (int k = 0; k < NACT; k++) {
        int bad = 0;
        CHECK_OK(run_fwd(k, x, y));
        for (int64_t i = 0; i < n && bad < 5; i++) {
            float w = want_fwd(k, xv[i]);
            int ok = same(yv[i], w);
            double t = f64(k, xv[i]);
            /* absolute error scaled by |x| for the cancelling tails of
             * gelu/silu, relative elsewhere */
            double tol = 2e-7 * fabs(t) + 1e-6 * fmin(fabs((double)xv[i]), 1e3) * (k == GELU || k == GELU_TANH || k == SILU) + 1e-38;
            /* softplus: rounding z = x * beta moves e^z by |z| ulps */
            if (k == SOFTPLUS) tol += 1.2e-7 * fabs((double)xv[i] * BETA) * fabs(t);
            /* elu: rounding x * input_scale moves expm1 by up to (1 + |x|)
             * ulps; mish and logsigmoid: three rounded functions in a row */
            if (is_elu(k)) tol += 1.2e-7 * (1 + fabs((double)xv[i])) * fabs(t);
            if (k == MISH || k == LOGSIGMOID) tol += 3e-7 * fabs(t);
            if (isfinite(t) && fabs(xv[i]) < 1e6) ok = ok && fabs(yv[i] - t) <= tol;
            if (!ok) bad++;
            CHECK(ok, "%s(%a) = %a, sequence %a, float64 %.9g", names[k], xv[i], yv[i], w, t);
        }
        /* backward: bits against the sequence, float64 central differences */
        const sb_tensor *s = uses_y(k) ? y : x;
        CHECK_OK(run_bwd(k, s, dy, dx));
        for (int64_t i = 0; i < n && bad < 10; i++) {
            float sv = uses_y(k) ? yv[i] : xv[i];
            float w = want_bwd(k, sv, dyv[i]);
            int ok = same(dxv[i], w);
            double xd = xv[i];
            if (isfinite(xd) && fabs(xd) < 30 && fabs(xd) > 1e-3 && !near_kink(k, xd) &&
                (k != SOFTPLUS || fabs(xd * BETA - THRESH) > 0.1)) {
                double h = 1e-5 * fmax(1.0, fabs(xd));
                double fd = dyv[i] * (f64(k, xd + h) - f64(k, xd - h)) / (2 * h);
                ok = ok && fabs(dxv[i] - fd) <= 2e-5 * (1 + fabs(fd));
                if (!ok) fprintf(stderr, "  fd %.9g\n", fd);
            }
            if (!ok) bad++;
            CHECK(ok, "%s backward at x=%a dy=%a: %a, sequence %a", names[k], xv[i], dyv[i], dxv[i], w);
        }
    }
    sb_tensor_free(x); sb_tensor_free(y); sb_tensor_free(dy); sb_tensor_free(dx);
}

/* The piecewise-linear activations at their kinks, at +-0, +-inf and NaN:
 * the values PyTorch 1.13's vectorised CPU kernels give (the contract). */
static void test_hard_conventions(void) {
    enum { N = 12 };
    int64_t n = N;
    sb_tensor *x = tnew(1, &n), *y = tnew(1, &n), *dy = tnew(1, &n), *dx = tnew(1, &n);
    float *xv = x->data, *yv = y->data, *dxv = dx->data;
    const float in[N] = { -4.0f, -3.0f, -0.0f, 0.0f, 3.0f, 4.0f, 6.0f, NAN, -1.0f, 1.0f, INFINITY, -INFINITY };
    memcpy(xv, in, sizeof in);
    sb_tensor_fill(dy, 2.0f);
    /* relu6 = hardtanh(0, 6) */
    const float r6[N] = { 0, 0, -0.0f, 0, 3, 4, 6, NAN, 0, 1, 6, 0 }, dr6[N] = { 0, 0, 0, 0, 2, 2, 0, 0, 0, 2, 0, 0 };
    CHECK_OK(sb_hardtanh_forward(x, 0.0f, 6.0f, y));
    CHECK_OK(sb_hardtanh_backward(x, dy, 0.0f, 6.0f, dx));
    for (int i = 0; i < N; i++) {
        CHECK(same(yv[i], r6[i]), "relu6(%g) = %a, want %a", (double)in[i], yv[i], r6[i]);
        CHECK(same(dxv[i], dr6[i]), "relu6'(%g) = %a, want %a", (double)in[i], dxv[i], dr6[i]);
    }
    const float hs[N] = { 0, 0, 0.5f, 0.5f, 1, 1, 1, NAN, 1.0f / 3.0f, 2.0f / 3.0f, 1, 0 };
    const float dhs[N] = { 0, 0, 2 * 0x1.555556p-3f, 2 * 0x1.555556p-3f, 0, 0, 0, 0, 2 * 0x1.555556p-3f,
                           2 * 0x1.555556p-3f, 0, 0 };
    CHECK_OK(sb_hardsigmoid_forward(x, y));
    CHECK_OK(sb_hardsigmoid_backward(x, dy, dx));
    for (int i = 0; i < N; i++) {
        CHECK(same(yv[i], hs[i]), "hardsigmoid(%g) = %a, want %a", (double)in[i], yv[i], hs[i]);
        CHECK(same(dxv[i], dhs[i]), "hardsigmoid'(%g) = %a, want %a", (double)in[i], dxv[i], dhs[i]);
    }
    /* hardswish(-4) = -4 * 0 / 6 = -0; hardswish(-inf) = -inf * 0 is NaN */
    const float hw[N] = { -0.0f, -0.0f, -0.0f, 0, 3, 4, 6, NAN, -1.0f / 3.0f, 2.0f / 3.0f, INFINITY, NAN };
    const float dhw[N] = { 0, -1, 1, 1, 2, 2, 2, NAN, 2 * (-1.0f / 3.0f + 0.5f), 2 * (1.0f / 3.0f + 0.5f),
                           2, 0 };
    CHECK_OK(sb_hardswish_forward(x, y));
    CHECK_OK(sb_hardswish_backward(x, dy, dx));
    for (int i = 0; i < N; i++) {
        CHECK(same(yv[i], hw[i]), "hardswish(%g) = %a, want %a", (double)in[i], yv[i], hw[i]);
        CHECK(same(dxv[i], dhw[i]), "hardswish'(%g) = %a, want %a", (double)in[i], dxv[i], dhw[i]);
    }
    sb_tensor_free(x); sb_tensor_free(y); sb_tensor_free(dy); sb_tensor_free(dx);
}

static void test_conventions(void) {
    int64_t n = 8;
    sb_tensor *x = tnew(1, &n), *y = tnew(1, &n), *dy = tnew(1, &n), *dx = tnew(1, &n);
    float *xv = x->data, *yv = y->data, *dyv = dy->data, *dxv = dx->data;
    float nan1 = bits_f(0x7fc12345u), nan2 = bits_f(0xffc00abcu);
    float in[8] = { -0.0f, 0.0f, nan1, nan2, -INFINITY, INFINITY, 1e-45f, -1e-45f };
    memcpy(xv, in, sizeof in);
    for (int i = 0; i < 8; i++) dyv[i] = 2.0f;
    CHECK_OK(sb_relu_forward(x, y));
    CHECK_BITS(yv[0], 0.0f, "relu(-0) is +0");
    CHECK_BITS(yv[1], 0.0f, "relu(+0)");
    CHECK_BITS(yv[2], nan1, "relu(NaN) returns the NaN bits");
    CHECK_BITS(yv[3], nan2, "relu(-NaN) returns the NaN bits");
    CHECK_BITS(yv[4], 0.0f, "relu(-inf)");
    CHECK_BITS(yv[5], INFINITY, "relu(inf)");
    CHECK_BITS(yv[6], 1e-45f, "relu(subnormal)");
    CHECK_BITS(yv[7], 0.0f, "relu(-subnormal)");
    CHECK_OK(sb_relu_backward(x, dy, dx));
    CHECK_BITS(dxv[0], 0.0f, "relu grad at -0 is 0");
    CHECK_BITS(dxv[1], 0.0f, "relu grad at +0 is 0");
    CHECK_BITS(dxv[2], 2.0f, "relu grad at NaN passes dy");
    CHECK_BITS(dxv[6], 2.0f, "relu grad at +subnormal");
    dyv[0] = NAN;
    CHECK_OK(sb_relu_backward(x, dy, dx));
    CHECK_BITS(dxv[0], 0.0f, "relu grad where x <= 0 is +0 even for NaN dy");
    CHECK_OK(sb_leaky_relu_forward(x, 0.5f, y));
    CHECK_BITS(yv[0], -0.0f, "leaky(-0) = -0 * slope");
    CHECK_BITS(yv[2], nan1, "leaky(NaN) keeps the NaN");
    CHECK_BITS(yv[4], -INFINITY, "leaky(-inf)");
    CHECK_OK(sb_sigmoid_forward(x, y));
    CHECK_BITS(yv[4], 0.0f, "sigmoid(-inf) = +0");
    CHECK_BITS(yv[5], 1.0f, "sigmoid(inf) = 1");
    CHECK_BITS(yv[0], 0.5f, "sigmoid(-0) = 0.5");
    CHECK(yv[2] != yv[2], "sigmoid(NaN) is NaN");
    CHECK_OK(sb_tanh_forward(x, y));
    CHECK_BITS(yv[0], -0.0f, "tanh(-0)");
    CHECK_BITS(yv[4], -1.0f, "tanh(-inf)");
    CHECK_OK(sb_gelu_forward(x, false, y));
    CHECK_BITS(yv[0], -0.0f, "gelu(-0)");
    CHECK_BITS(yv[5], INFINITY, "gelu(inf)");
    CHECK(yv[4] != yv[4], "gelu(-inf) = -inf * 0 is NaN, as in the float sequence");
    test_hard_conventions();
    CHECK_OK(sb_silu_forward(x, y));
    CHECK(yv[4] != yv[4], "silu(-inf) = -inf / (1 + inf) is NaN, as in the float sequence");
    CHECK_BITS(yv[5], INFINITY, "silu(inf)");
    /* in = { -0, +0, NaN, -NaN, -inf, inf, 1e-45, -1e-45 } */
    CHECK_OK(sb_elu_forward(x, 1.5f, 2.0f, 1.0f, y));
    CHECK_BITS(yv[0], -0.0f, "elu(-0) = expm1(-0) * negcoef = -0");
    CHECK_BITS(yv[1], 0.0f, "elu(+0) = +0 (the expm1 branch)");
    CHECK_BITS(yv[4], -3.0f, "elu(-inf) = -alpha * scale");
    CHECK_BITS(yv[5], INFINITY, "elu(inf)");
    CHECK_BITS(yv[6], 1e-45f * 2.0f, "elu(subnormal) = x * scale");
    CHECK_BITS(yv[7], -1e-45f * 3.0f, "elu(-subnormal) = expm1(x) * negcoef, exact");
    CHECK(yv[2] != yv[2], "elu(NaN) is NaN");
    CHECK_OK(sb_elu_backward(x, dy, 1.5f, 2.0f, 1.0f, dx));
    CHECK_BITS(dxv[1], 6.0f, "elu'(+0) = dy * alpha * scale (x > 0 is false)");
    CHECK_BITS(dxv[4], 0.0f, "elu'(-inf) = dy * negcoef * exp(-inf) = +0");
    CHECK_BITS(dxv[5], 4.0f, "elu'(inf) = dy * scale");
    CHECK_OK(sb_mish_forward(x, y));
    CHECK_BITS(yv[0], -0.0f, "mish(-0)");
    CHECK(yv[4] != yv[4], "mish(-inf) = -inf * tanh(log1p(0)) is NaN, as in the float sequence");
    CHECK_BITS(yv[5], INFINITY, "mish(inf) = inf * tanh(inf)");
    CHECK_OK(sb_logsigmoid_forward(x, y));
    CHECK_BITS(yv[4], -INFINITY, "logsigmoid(-inf)");
    CHECK_BITS(yv[5], 0.0f, "logsigmoid(inf) = 0 - log1p(0) = +0");
    CHECK(yv[2] != yv[2], "logsigmoid(NaN) is NaN");
    CHECK_OK(sb_logsigmoid_backward(x, dy, dx));
    CHECK_BITS(dxv[4], 2.0f, "logsigmoid'(-inf) = dy");
    CHECK_BITS(dxv[5], 0.0f, "logsigmoid'(inf) = +0");
    CHECK_OK(sb_softshrink_forward(x, 0.5f, y));
    CHECK_BITS(yv[0], 0.0f, "softshrink(-0) = +0");
    CHECK_BITS(yv[7], 0.0f, "softshrink(-subnormal) = +0");
    CHECK_BITS(yv[2], nan1, "softshrink(NaN) keeps the NaN");
    CHECK_BITS(yv[4], -INFINITY, "softshrink(-inf)");
    CHECK_OK(sb_hardshrink_forward(x, 0.5f, y));
    CHECK_BITS(yv[0], 0.0f, "hardshrink(-0) = +0");
    CHECK_BITS(yv[3], nan2, "hardshrink(NaN) keeps the NaN");
    CHECK_OK(sb_hardshrink_backward(x, dy, 0.5f, dx));
    CHECK_BITS(dxv[2], 0.0f, "hardshrink'(NaN) is +0 (PyTorch's vectorised mask)");
    CHECK_BITS(dxv[0], 0.0f, "hardshrink'(-0) = +0");
    CHECK_OK(sb_threshold_forward(x, 0.0f, 7.0f, y));
    CHECK_BITS(yv[0], 7.0f, "threshold(-0, 0) takes value");
    CHECK_BITS(yv[6], 1e-45f, "threshold(subnormal, 0) keeps x");
    CHECK_BITS(yv[2], nan1, "threshold(NaN) keeps the NaN");
    sb_tensor_free(x); sb_tensor_free(y); sb_tensor_free(dy); sb_tensor_free(dx);
}

/* Strided inputs and outputs, and in-place use, give the contiguous bits. */
static void test_layouts(void) {
    int64_t s[2] = { 13, 37 }, st[2] = { 37, 13 };
    sb_tensor *x = tnew(2, s), *y = tnew(2, s), *dy = tnew(2, s), *dx = tnew(2, s);
    sb_tensor *xc = tnew(2, st), *yc = tnew(2, st), *dyc = tnew(2, st), *dxc = tnew(2, st);
    sb_tensor *xt, *yt, *dyt, *dxt;
    CHECK_OK(sb_tensor_transpose(&xt, xc, 0, 1));
    CHECK_OK(sb_tensor_transpose(&yt, yc, 0, 1));
    CHECK_OK(sb_tensor_transpose(&dyt, dyc, 0, 1));
    CHECK_OK(sb_tensor_transpose(&dxt, dxc, 0, 1));
    float *xv = x->data, *dyv = dy->data;
    for (int i = 0; i < 13 * 37; i++) { xv[i] = frand(-6.0f, 6.0f); dyv[i] = frand(-1.0f, 1.0f); }
    CHECK_OK(sb_tensor_copy(xt, x));
    CHECK_OK(sb_tensor_copy(dyt, dy));
    sb_tensor *back = tnew(2, s);
    for (int k = 0; k < NACT; k++) {
        CHECK_OK(run_fwd(k, x, y));
        CHECK_OK(run_fwd(k, xt, yt));
        CHECK_OK(sb_tensor_copy(back, yt));
        CHECK(memcmp(back->data, y->data, 13 * 37 * 4) == 0, "%s strided forward differs", names[k]);
        CHECK_OK(run_bwd(k, uses_y(k) ? y : x, dy, dx));
        CHECK_OK(run_bwd(k, uses_y(k) ? yt : xt, dyt, dxt));
        CHECK_OK(sb_tensor_copy(back, dxt));
        CHECK(memcmp(back->data, dx->data, 13 * 37 * 4) == 0, "%s strided backward differs", names[k]);
        /* in place: y over x, dx over dy */
        CHECK_OK(sb_tensor_copy(back, x));
        CHECK_OK(run_fwd(k, back, back));
        CHECK(memcmp(back->data, y->data, 13 * 37 * 4) == 0, "%s in-place forward differs", names[k]);
        CHECK_OK(sb_tensor_copy(back, dy));
        CHECK_OK(run_bwd(k, uses_y(k) ? y : x, back, back));
        CHECK(memcmp(back->data, dx->data, 13 * 37 * 4) == 0, "%s in-place backward differs", names[k]);
    }
    /* 0-dim and empty tensors */
    sb_tensor *z0 = tnew(0, NULL), *z1 = tnew(0, NULL);
    ((float *)z0->data)[0] = 1.0f;
    CHECK_OK(sb_sigmoid_forward(z0, z1));
    CHECK_BITS(((float *)z1->data)[0], want_fwd(SIGMOID, 1.0f), "0-dim sigmoid");
    int64_t e[2] = { 0, 5 };
    sb_tensor *ea = tnew(2, e), *eb = tnew(2, e);
    CHECK_OK(sb_gelu_forward(ea, true, eb));
    sb_tensor_free(z0); sb_tensor_free(z1); sb_tensor_free(ea); sb_tensor_free(eb);
    sb_tensor_free(back);
    sb_tensor_free(xt); sb_tensor_free(yt); sb_tensor_free(dyt); sb_tensor_free(dxt);
    sb_tensor_free(x); sb_tensor_free(y); sb_tensor_free(dy); sb_tensor_free(dx);
    sb_tensor_free(xc); sb_tensor_free(yc); sb_tensor_free(dyc); sb_tensor_free(dxc);
}

static void test_bad_inputs(void) {
    int64_t s[2] = { 2, 3 }, w[2] = { 3, 2 };
    sb_tensor *a = tnew(2, s), *b = tnew(2, s), *c = tnew(2, w), *ii = NULL, *at;
    CHECK_OK(sb_tensor_new(&ii, SB_I64, 2, s));
    CHECK_OK(sb_tensor_transpose(&at, a, 0, 1));
    int64_t s33[2] = { 3, 3 };
    sb_tensor *q = tnew(2, s33), *b3 = tnew(2, s33), *qt;
    CHECK_OK(sb_tensor_transpose(&qt, q, 0, 1));
    static const char *fwd_names[NACT] = { "sb_relu_forward", "sb_leaky_relu_forward", "sb_tanh_forward",
                                           "sb_sigmoid_forward", "sb_silu_forward", "sb_gelu_forward",
                                           "sb_gelu_forward", "sb_softplus_forward", "sb_hardtanh_forward",
                                           "sb_hardsigmoid_forward", "sb_hardswish_forward",
                                           "sb_elu_forward", "sb_elu_forward", "sb_elu_forward",
                                           "sb_mish_forward", "sb_logsigmoid_forward",
                                           "sb_hardshrink_forward", "sb_softshrink_forward",
                                           "sb_threshold_forward" };
    static const char *bwd_names[NACT] = { "sb_relu_backward", "sb_leaky_relu_backward", "sb_tanh_backward",
                                           "sb_sigmoid_backward", "sb_silu_backward", "sb_gelu_backward",
                                           "sb_gelu_backward", "sb_softplus_backward", "sb_hardtanh_backward",
                                           "sb_hardsigmoid_backward", "sb_hardswish_backward",
                                           "sb_elu_backward", "sb_elu_backward", "sb_elu_backward",
                                           "sb_mish_backward", "sb_logsigmoid_backward",
                                           "sb_hardshrink_backward", "sb_softshrink_backward",
                                           "sb_threshold_backward" };
    for (int k = 0; k < NACT; k++) {
        char m[96];
        const char *src = uses_y(k) ? "y" : "x";
        snprintf(m, sizeof m, "%s: x is NULL", fwd_names[k]);
        CHECK_ERROR(run_fwd(k, NULL, b), SB_ERR_NULL, m);
        snprintf(m, sizeof m, "%s: y is NULL", fwd_names[k]);
        CHECK_ERROR(run_fwd(k, a, NULL), SB_ERR_NULL, m);
        snprintf(m, sizeof m, "%s: y has shape [3, 2] but x has shape [2, 3]", fwd_names[k]);
        CHECK_ERROR(run_fwd(k, a, c), SB_ERR_SHAPE, m);
        CHECK_ERROR(run_fwd(k, ii, b), SB_ERR_DTYPE, "x has dtype int64");
        CHECK_ERROR(run_fwd(k, a, at), SB_ERR_SHAPE, "y has shape [3, 2]");
        CHECK_ERROR(run_fwd(k, q, qt), SB_ERR_ARG, "y overlaps x without the identical layout");
        CHECK_ERROR(run_bwd(k, q, b3, qt), SB_ERR_ARG, "dx overlaps");
        snprintf(m, sizeof m, "%s: %s is NULL", bwd_names[k], src);
        CHECK_ERROR(run_bwd(k, NULL, a, b), SB_ERR_NULL, m);
        snprintf(m, sizeof m, "%s: dy is NULL", bwd_names[k]);
        CHECK_ERROR(run_bwd(k, a, NULL, b), SB_ERR_NULL, m);
        snprintf(m, sizeof m, "%s: dx is NULL", bwd_names[k]);
        CHECK_ERROR(run_bwd(k, a, b, NULL), SB_ERR_NULL, m);
        CHECK_ERROR(run_bwd(k, a, c, b), SB_ERR_SHAPE, "dx has shape [2, 3] but dy has shape [3, 2]");
        CHECK_ERROR(run_bwd(k, a, ii, b), SB_ERR_DTYPE, "dy has dtype int64");
    }
    CHECK_ERROR(sb_leaky_relu_forward(a, NAN, b), SB_ERR_ARG, "negative_slope");
    CHECK_ERROR(sb_leaky_relu_backward(a, a, INFINITY, b), SB_ERR_ARG, "must be finite");
    CHECK_ERROR(sb_softplus_forward(a, 0.0f, 20.0f, b), SB_ERR_ARG, "beta = 0");
    CHECK_ERROR(sb_softplus_backward(a, a, 1.0f, NAN, b), SB_ERR_ARG, "threshold is NaN");
    CHECK_ERROR(sb_hardtanh_forward(a, 1.0f, -1.0f, b), SB_ERR_ARG, "min_val <= max_val");
    CHECK_ERROR(sb_hardtanh_forward(a, NAN, 1.0f, b), SB_ERR_ARG, "must not be NaN");
    CHECK_ERROR(sb_hardtanh_backward(a, a, 0.0f, NAN, b), SB_ERR_ARG, "must not be NaN");
    CHECK_ERROR(sb_elu_forward(a, INFINITY, 1.0f, 1.0f, b), SB_ERR_ARG, "must be finite");
    CHECK_ERROR(sb_elu_backward(a, a, 1.0f, 1.0f, NAN, b), SB_ERR_ARG, "input_scale = nan");
    CHECK_ERROR(sb_hardshrink_forward(a, NAN, b), SB_ERR_ARG, "must not be NaN");
    CHECK_ERROR(sb_softshrink_forward(a, -0.5f, b), SB_ERR_ARG, "lambd = -0.5 must be >= 0");
    CHECK_ERROR(sb_softshrink_backward(a, a, NAN, b), SB_ERR_ARG, "must be >= 0");
    CHECK_ERROR(sb_threshold_forward(a, NAN, 0.0f, b), SB_ERR_ARG, "threshold is NaN");
    CHECK_ERROR(sb_threshold_backward(a, a, NAN, b), SB_ERR_ARG, "threshold is NaN");
    sb_tensor_free(at); sb_tensor_free(qt); sb_tensor_free(q); sb_tensor_free(b3);
    sb_tensor_free(a); sb_tensor_free(b); sb_tensor_free(c); sb_tensor_free(ii);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_constants();
    test_values();
    test_conventions();
    test_layouts();
    test_bad_inputs();
    return sb_test_finish();
}
