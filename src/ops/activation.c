/* Tensor-level activations: validation, then the device's activation entry
 * (on the CPU the threaded strided pointwise engine sb_cpu_pw_run over the
 * fast kernels of src/cpu/, bit-identical to the reference kernels of
 * src/ref/activation.c). One table-driven path serves every activation,
 * forward and backward. */
#include <math.h>
#include "samebits/elementwise.h"
#include "core/fpenv.h"
#include "ops/validate.h"

typedef sb_act_args act_ctx;
enum { ACT_RELU = SB_ACT_RELU, ACT_LEAKY = SB_ACT_LEAKY_RELU, ACT_TANH = SB_ACT_TANH,
       ACT_SIGMOID = SB_ACT_SIGMOID, ACT_SILU = SB_ACT_SILU, ACT_GELU = SB_ACT_GELU,
       ACT_SOFTPLUS = SB_ACT_SOFTPLUS, ACT_HARDTANH = SB_ACT_HARDTANH,
       ACT_HARDSIGMOID = SB_ACT_HARDSIGMOID, ACT_HARDSWISH = SB_ACT_HARDSWISH,
       ACT_ELU = SB_ACT_ELU, ACT_MISH = SB_ACT_MISH, ACT_LOGSIGMOID = SB_ACT_LOGSIGMOID,
       ACT_HARDSHRINK = SB_ACT_HARDSHRINK, ACT_SOFTSHRINK = SB_ACT_SOFTSHRINK,
       ACT_THRESHOLD = SB_ACT_THRESHOLD };

/* Forward: (src = x, out = y). Backward: (src = x or y, dy, out = dx). */
static sb_status act_run(const char *fn, const act_ctx *c, const sb_tensor *src,
                         const char *src_name, const sb_tensor *dy, sb_tensor *out) {
    const sb_tensor *in[2] = { src, dy };
    const char *names[2] = { src_name, "dy" };
    int nin = c->backward ? 2 : 1;
    SB_TRY(sb_pw_check_same(fn, nin, in, names, out, c->backward ? "dx" : "y"));
    const sb_backend *be;
    const char *devnames = !c->backward ? "x, y" : src_name[0] == 'y' ? "y, dy, dx" : "x, dy, dx";
    SB_TRY(sb_ops_backend_of(fn, devnames, nin + 1,
                             (const sb_tensor *[]){src, c->backward ? dy : out, out}, &be));
    sb_tensor v[2];
    for (int k = 0; k < nin; k++) v[k] = *in[k];
    return SB_BACKEND_RUN(fn, be, activation, c, v, out);
}

sb_status sb_relu_forward(const sb_tensor *x, sb_tensor *y) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = (sb_act_kind)ACT_RELU };
    return act_run("sb_relu_forward", &c, x, "x", NULL, y);
}
sb_status sb_relu_backward(const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = (sb_act_kind)ACT_RELU, .backward = true };
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
    act_ctx c = { .kind = (sb_act_kind)ACT_LEAKY, .p0 = negative_slope };
    return act_run("sb_leaky_relu_forward", &c, x, "x", NULL, y);
}
sb_status sb_leaky_relu_backward(const sb_tensor *x, const sb_tensor *dy, float negative_slope,
                                 sb_tensor *dx) {
    SB_FPENV_GUARD();
    SB_TRY(check_slope("sb_leaky_relu_backward", negative_slope));
    act_ctx c = { .kind = (sb_act_kind)ACT_LEAKY, .backward = true, .p0 = negative_slope };
    return act_run("sb_leaky_relu_backward", &c, x, "x", dy, dx);
}

sb_status sb_tanh_forward(const sb_tensor *x, sb_tensor *y) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = (sb_act_kind)ACT_TANH };
    return act_run("sb_tanh_forward", &c, x, "x", NULL, y);
}
sb_status sb_tanh_backward(const sb_tensor *y, const sb_tensor *dy, sb_tensor *dx) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = (sb_act_kind)ACT_TANH, .backward = true };
    return act_run("sb_tanh_backward", &c, y, "y", dy, dx);
}

sb_status sb_sigmoid_forward(const sb_tensor *x, sb_tensor *y) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = (sb_act_kind)ACT_SIGMOID };
    return act_run("sb_sigmoid_forward", &c, x, "x", NULL, y);
}
sb_status sb_sigmoid_backward(const sb_tensor *y, const sb_tensor *dy, sb_tensor *dx) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = (sb_act_kind)ACT_SIGMOID, .backward = true };
    return act_run("sb_sigmoid_backward", &c, y, "y", dy, dx);
}

sb_status sb_silu_forward(const sb_tensor *x, sb_tensor *y) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = (sb_act_kind)ACT_SILU };
    return act_run("sb_silu_forward", &c, x, "x", NULL, y);
}
sb_status sb_silu_backward(const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = (sb_act_kind)ACT_SILU, .backward = true };
    return act_run("sb_silu_backward", &c, x, "x", dy, dx);
}

sb_status sb_gelu_forward(const sb_tensor *x, bool approximate_tanh, sb_tensor *y) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = (sb_act_kind)ACT_GELU, .approximate = approximate_tanh };
    return act_run("sb_gelu_forward", &c, x, "x", NULL, y);
}
sb_status sb_gelu_backward(const sb_tensor *x, const sb_tensor *dy, bool approximate_tanh,
                           sb_tensor *dx) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = (sb_act_kind)ACT_GELU, .backward = true, .approximate = approximate_tanh };
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
    act_ctx c = { .kind = (sb_act_kind)ACT_SOFTPLUS, .p0 = beta, .p1 = threshold };
    return act_run("sb_softplus_forward", &c, x, "x", NULL, y);
}
sb_status sb_softplus_backward(const sb_tensor *x, const sb_tensor *dy, float beta,
                               float threshold, sb_tensor *dx) {
    SB_FPENV_GUARD();
    SB_TRY(check_softplus("sb_softplus_backward", beta, threshold));
    act_ctx c = { .kind = (sb_act_kind)ACT_SOFTPLUS, .backward = true, .p0 = beta, .p1 = threshold };
    return act_run("sb_softplus_backward", &c, x, "x", dy, dx);
}

static sb_status check_hardtanh(const char *fn, float min_val, float max_val) {
    if (isnan(min_val) || isnan(max_val) || !(min_val <= max_val))
        return sb_fail(SB_ERR_ARG, "%s: min_val = %g and max_val = %g must not be NaN, with "
                       "min_val <= max_val", fn, (double)min_val, (double)max_val);
    return SB_OK;
}
sb_status sb_hardtanh_forward(const sb_tensor *x, float min_val, float max_val, sb_tensor *y) {
    SB_FPENV_GUARD();
    SB_TRY(check_hardtanh("sb_hardtanh_forward", min_val, max_val));
    act_ctx c = { .kind = (sb_act_kind)ACT_HARDTANH, .p0 = min_val, .p1 = max_val };
    return act_run("sb_hardtanh_forward", &c, x, "x", NULL, y);
}
sb_status sb_hardtanh_backward(const sb_tensor *x, const sb_tensor *dy, float min_val,
                               float max_val, sb_tensor *dx) {
    SB_FPENV_GUARD();
    SB_TRY(check_hardtanh("sb_hardtanh_backward", min_val, max_val));
    act_ctx c = { .kind = (sb_act_kind)ACT_HARDTANH, .backward = true, .p0 = min_val, .p1 = max_val };
    return act_run("sb_hardtanh_backward", &c, x, "x", dy, dx);
}

sb_status sb_hardsigmoid_forward(const sb_tensor *x, sb_tensor *y) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = (sb_act_kind)ACT_HARDSIGMOID };
    return act_run("sb_hardsigmoid_forward", &c, x, "x", NULL, y);
}
sb_status sb_hardsigmoid_backward(const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = (sb_act_kind)ACT_HARDSIGMOID, .backward = true };
    return act_run("sb_hardsigmoid_backward", &c, x, "x", dy, dx);
}

sb_status sb_hardswish_forward(const sb_tensor *x, sb_tensor *y) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = (sb_act_kind)ACT_HARDSWISH };
    return act_run("sb_hardswish_forward", &c, x, "x", NULL, y);
}
sb_status sb_hardswish_backward(const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = (sb_act_kind)ACT_HARDSWISH, .backward = true };
    return act_run("sb_hardswish_backward", &c, x, "x", dy, dx);
}

/* alpha, scale and input_scale finite (PyTorch accepts any; an infinite
 * coefficient only makes inf * 0 NaNs). */
static sb_status check_elu(const char *fn, float alpha, float scale, float input_scale) {
    if (!isfinite(alpha) || !isfinite(scale) || !isfinite(input_scale))
        return sb_fail(SB_ERR_ARG, "%s: alpha = %g, scale = %g and input_scale = %g must be "
                       "finite", fn, (double)alpha, (double)scale, (double)input_scale);
    return SB_OK;
}
sb_status sb_elu_forward(const sb_tensor *x, float alpha, float scale, float input_scale,
                         sb_tensor *y) {
    SB_FPENV_GUARD();
    SB_TRY(check_elu("sb_elu_forward", alpha, scale, input_scale));
    act_ctx c = { .kind = (sb_act_kind)ACT_ELU, .p0 = alpha, .p1 = scale, .p2 = input_scale };
    return act_run("sb_elu_forward", &c, x, "x", NULL, y);
}
sb_status sb_elu_backward(const sb_tensor *x, const sb_tensor *dy, float alpha, float scale,
                          float input_scale, sb_tensor *dx) {
    SB_FPENV_GUARD();
    SB_TRY(check_elu("sb_elu_backward", alpha, scale, input_scale));
    act_ctx c = { .kind = (sb_act_kind)ACT_ELU, .backward = true, .p0 = alpha, .p1 = scale,
                  .p2 = input_scale };
    return act_run("sb_elu_backward", &c, x, "x", dy, dx);
}

sb_status sb_mish_forward(const sb_tensor *x, sb_tensor *y) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = (sb_act_kind)ACT_MISH };
    return act_run("sb_mish_forward", &c, x, "x", NULL, y);
}
sb_status sb_mish_backward(const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = (sb_act_kind)ACT_MISH, .backward = true };
    return act_run("sb_mish_backward", &c, x, "x", dy, dx);
}

sb_status sb_logsigmoid_forward(const sb_tensor *x, sb_tensor *y) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = (sb_act_kind)ACT_LOGSIGMOID };
    return act_run("sb_logsigmoid_forward", &c, x, "x", NULL, y);
}
sb_status sb_logsigmoid_backward(const sb_tensor *x, const sb_tensor *dy, sb_tensor *dx) {
    SB_FPENV_GUARD();
    act_ctx c = { .kind = (sb_act_kind)ACT_LOGSIGMOID, .backward = true };
    return act_run("sb_logsigmoid_backward", &c, x, "x", dy, dx);
}

/* hardshrink: lambd not NaN (a negative one keeps every x, as in PyTorch);
 * softshrink: lambd >= 0 (PyTorch refuses a negative one). */
static sb_status check_lambd(const char *fn, float lambd, bool soft) {
    if (isnan(lambd) || (soft && lambd < 0.0f))
        return sb_fail(SB_ERR_ARG, "%s: lambd = %g must %s", fn, (double)lambd,
                       soft ? "be >= 0" : "not be NaN");
    return SB_OK;
}
sb_status sb_hardshrink_forward(const sb_tensor *x, float lambd, sb_tensor *y) {
    SB_FPENV_GUARD();
    SB_TRY(check_lambd("sb_hardshrink_forward", lambd, false));
    act_ctx c = { .kind = (sb_act_kind)ACT_HARDSHRINK, .p0 = lambd };
    return act_run("sb_hardshrink_forward", &c, x, "x", NULL, y);
}
sb_status sb_hardshrink_backward(const sb_tensor *x, const sb_tensor *dy, float lambd,
                                 sb_tensor *dx) {
    SB_FPENV_GUARD();
    SB_TRY(check_lambd("sb_hardshrink_backward", lambd, false));
    act_ctx c = { .kind = (sb_act_kind)ACT_HARDSHRINK, .backward = true, .p0 = lambd };
    return act_run("sb_hardshrink_backward", &c, x, "x", dy, dx);
}
sb_status sb_softshrink_forward(const sb_tensor *x, float lambd, sb_tensor *y) {
    SB_FPENV_GUARD();
    SB_TRY(check_lambd("sb_softshrink_forward", lambd, true));
    act_ctx c = { .kind = (sb_act_kind)ACT_SOFTSHRINK, .p0 = lambd };
    return act_run("sb_softshrink_forward", &c, x, "x", NULL, y);
}
sb_status sb_softshrink_backward(const sb_tensor *x, const sb_tensor *dy, float lambd,
                                 sb_tensor *dx) {
    SB_FPENV_GUARD();
    SB_TRY(check_lambd("sb_softshrink_backward", lambd, true));
    act_ctx c = { .kind = (sb_act_kind)ACT_SOFTSHRINK, .backward = true, .p0 = lambd };
    return act_run("sb_softshrink_backward", &c, x, "x", dy, dx);
}

/* threshold not NaN (every comparison with it would be false). */
static sb_status check_threshold(const char *fn, float threshold) {
    if (isnan(threshold)) return sb_fail(SB_ERR_ARG, "%s: threshold is NaN", fn);
    return SB_OK;
}
sb_status sb_threshold_forward(const sb_tensor *x, float threshold, float value, sb_tensor *y) {
    SB_FPENV_GUARD();
    SB_TRY(check_threshold("sb_threshold_forward", threshold));
    act_ctx c = { .kind = (sb_act_kind)ACT_THRESHOLD, .p0 = threshold, .p1 = value };
    return act_run("sb_threshold_forward", &c, x, "x", NULL, y);
}
sb_status sb_threshold_backward(const sb_tensor *x, const sb_tensor *dy, float threshold,
                                sb_tensor *dx) {
    SB_FPENV_GUARD();
    SB_TRY(check_threshold("sb_threshold_backward", threshold));
    act_ctx c = { .kind = (sb_act_kind)ACT_THRESHOLD, .backward = true, .p0 = threshold };
    return act_run("sb_threshold_backward", &c, x, "x", dy, dx);
}
