/* Tensor-level activations: validation and dispatch through the threaded
 * strided pointwise engine (sb_cpu_pw_run) of the fast kernels of
 * src/cpu/ (bit-identical to the reference kernels of src/ref/activation.c,
 * which the ones without a transcendental still use directly). One table-
 * driven path serves every activation, forward and backward. */
#include <math.h>
#include "samebits/elementwise.h"
#include "core/fpenv.h"
#include "core/internal.h"
#include "cpu/ops_internal.h"
#include "ref/ref_pointwise.h"

typedef enum act_kind { ACT_RELU, ACT_LEAKY, ACT_TANH, ACT_SIGMOID, ACT_SILU, ACT_GELU, ACT_SOFTPLUS } act_kind;

typedef struct act_ctx {
    act_kind kind;
    bool backward;
    bool approximate; /* gelu */
    float p0, p1;     /* leaky: slope; softplus: beta, threshold */
} act_ctx;

/* in[0] is x (or y for tanh/sigmoid backward), in[1] is dy when backward. */
static void act_kernel(const void *ctx, int64_t n, const float *const *in, float *out) {
    const act_ctx *c = ctx;
    if (!c->backward) {
        switch (c->kind) {
        case ACT_RELU: sb_cpu_relu_forward(n, in[0], out); break;
        case ACT_LEAKY: sb_ref_leaky_relu_forward(n, in[0], c->p0, out); break;
        case ACT_TANH: sb_cpu_tanh_forward(n, in[0], out); break;
        case ACT_SIGMOID: sb_cpu_sigmoid_forward(n, in[0], out); break;
        case ACT_SILU: sb_cpu_silu_forward(n, in[0], out); break;
        case ACT_GELU: sb_cpu_gelu_forward(n, in[0], c->approximate, out); break;
        case ACT_SOFTPLUS: sb_cpu_softplus_forward(n, in[0], c->p0, c->p1, out); break;
        }
        return;
    }
    switch (c->kind) {
    case ACT_RELU: sb_cpu_relu_backward(n, in[0], in[1], out); break;
    case ACT_LEAKY: sb_ref_leaky_relu_backward(n, in[0], in[1], c->p0, out); break;
    case ACT_TANH: sb_ref_tanh_backward(n, in[0], in[1], out); break;
    case ACT_SIGMOID: sb_ref_sigmoid_backward(n, in[0], in[1], out); break;
    case ACT_SILU: sb_cpu_silu_backward(n, in[0], in[1], out); break;
    case ACT_GELU: sb_cpu_gelu_backward(n, in[0], in[1], c->approximate, out); break;
    case ACT_SOFTPLUS: sb_cpu_softplus_backward(n, in[0], in[1], c->p0, c->p1, out); break;
    }
}

/* Forward: (src = x, out = y). Backward: (src = x or y, dy, out = dx). */
static sb_status act_run(const char *fn, const act_ctx *c, const sb_tensor *src,
                         const char *src_name, const sb_tensor *dy, sb_tensor *out) {
    const sb_tensor *in[2] = { src, dy };
    const char *names[2] = { src_name, "dy" };
    int nin = c->backward ? 2 : 1;
    SB_TRY(sb_pw_check_same(fn, nin, in, names, out, c->backward ? "dx" : "y"));
    sb_tensor v[2];
    for (int k = 0; k < nin; k++) v[k] = *in[k];
    sb_cpu_pw_run(nin, v, out, act_kernel, c);
    return SB_OK;
}

sb_status sb_relu_forward(const sb_tensor *x, sb_tensor *y) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = ACT_RELU };
    return act_run("sb_relu_forward", &c, x, "x", NULL, y);
}
sb_status sb_relu_backward(const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = ACT_RELU, .backward = true };
    return act_run("sb_relu_backward", &c, x, "x", dy, dx);
}

static sb_status check_slope(const char *fn, float slope) {
    if (!isfinite(slope))
        return sb_fail(SB_ERR_ARG, "%s: negative_slope = %g must be finite", fn, (double)slope);
    return SB_OK;
}
sb_status sb_leaky_relu_forward(const sb_tensor *x, float negative_slope, sb_tensor *y) {
    SB_FPENV_GUARD();
    SB_TRY(check_slope("sb_leaky_relu_forward", negative_slope));
    act_ctx c = { .kind = ACT_LEAKY, .p0 = negative_slope };
    return act_run("sb_leaky_relu_forward", &c, x, "x", NULL, y);
}
sb_status sb_leaky_relu_backward(const sb_tensor *x, const sb_tensor *dy, float negative_slope,
                                 sb_tensor *dx) {
    SB_FPENV_GUARD();
    SB_TRY(check_slope("sb_leaky_relu_backward", negative_slope));
    act_ctx c = { .kind = ACT_LEAKY, .backward = true, .p0 = negative_slope };
    return act_run("sb_leaky_relu_backward", &c, x, "x", dy, dx);
}

sb_status sb_tanh_forward(const sb_tensor *x, sb_tensor *y) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = ACT_TANH };
    return act_run("sb_tanh_forward", &c, x, "x", NULL, y);
}
sb_status sb_tanh_backward(const sb_tensor *y, const sb_tensor *dy, sb_tensor *dx) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = ACT_TANH, .backward = true };
    return act_run("sb_tanh_backward", &c, y, "y", dy, dx);
}

sb_status sb_sigmoid_forward(const sb_tensor *x, sb_tensor *y) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = ACT_SIGMOID };
    return act_run("sb_sigmoid_forward", &c, x, "x", NULL, y);
}
sb_status sb_sigmoid_backward(const sb_tensor *y, const sb_tensor *dy, sb_tensor *dx) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = ACT_SIGMOID, .backward = true };
    return act_run("sb_sigmoid_backward", &c, y, "y", dy, dx);
}

sb_status sb_silu_forward(const sb_tensor *x, sb_tensor *y) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = ACT_SILU };
    return act_run("sb_silu_forward", &c, x, "x", NULL, y);
}
sb_status sb_silu_backward(const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = ACT_SILU, .backward = true };
    return act_run("sb_silu_backward", &c, x, "x", dy, dx);
}

sb_status sb_gelu_forward(const sb_tensor *x, bool approximate_tanh, sb_tensor *y) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = ACT_GELU, .approximate = approximate_tanh };
    return act_run("sb_gelu_forward", &c, x, "x", NULL, y);
}
sb_status sb_gelu_backward(const sb_tensor *x, const sb_tensor *dy, bool approximate_tanh,
                           sb_tensor *dx) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = ACT_GELU, .backward = true, .approximate = approximate_tanh };
    return act_run("sb_gelu_backward", &c, x, "x", dy, dx);
}

static sb_status check_softplus(const char *fn, float beta, float threshold) {
    if (!isfinite(beta) || beta == 0.0f)
        return sb_fail(SB_ERR_ARG, "%s: beta = %g must be finite and non-zero", fn, (double)beta);
    if (isnan(threshold)) return sb_fail(SB_ERR_ARG, "%s: threshold is NaN", fn);
    return SB_OK;
}
sb_status sb_softplus_forward(const sb_tensor *x, float beta, float threshold, sb_tensor *y) {
    SB_FPENV_GUARD();
    SB_TRY(check_softplus("sb_softplus_forward", beta, threshold));
    act_ctx c = { .kind = ACT_SOFTPLUS, .p0 = beta, .p1 = threshold };
    return act_run("sb_softplus_forward", &c, x, "x", NULL, y);
}
sb_status sb_softplus_backward(const sb_tensor *x, const sb_tensor *dy, float beta,
                               float threshold, sb_tensor *dx) {
    SB_FPENV_GUARD();
    SB_TRY(check_softplus("sb_softplus_backward", beta, threshold));
    act_ctx c = { .kind = ACT_SOFTPLUS, .backward = true, .p0 = beta, .p1 = threshold };
    return act_run("sb_softplus_backward", &c, x, "x", dy, dx);
}
