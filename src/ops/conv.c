/* Tensor-level conv2d and 2-D pooling (include/samebits/conv.h): argument
 * checks, then the device's kernels (on the CPU the fast kernels of
 * src/cpu/conv2d.c and pool2d.c, which reproduce the reference kernels of
 * src/ref/conv2d.c and pool2d.c bit for bit). */
#include <stdio.h>
#include "samebits/conv.h"
#include <stdlib.h>
#include "core/checked.h"
#include "core/fpenv.h"
#include "ops/validate.h"
#include "samebits/elementwise.h"

/* Geometry parameters are capped so that every index computation of the
 * kernels fits easily in int64 (tensor sizes are capped by sb_tensor_new). */
#define PARAM_MAX INT32_MAX

static sb_status check_param(const char *fn, const char *name, int64_t v, int64_t min) {
    if (v < min || v > PARAM_MAX)
        return sb_fail(SB_ERR_ARG, "%s: %s = %lld must be in %lld..%lld", fn, name, (long long)v,
                       (long long)min, (long long)PARAM_MAX);
    return SB_OK;
}

/* A dense 4-D tensor of `dtype`, of exactly `shape` when shape is not NULL. */
static sb_status check4(const char *fn, const char *name, const sb_tensor *t, sb_dtype dtype,
                        const int64_t *shape) {
    SB_TRY(sb_check_tensor(fn, name, t, dtype, 4));
    if (shape) SB_TRY(sb_expect_shape(fn, name, t, 4, shape));
    return sb_check_contig(fn, name, t);
}

/* ---- conv2d ---- */

static sb_status check_conv_params(const char *fn, const sb_conv2d_params *p) {
    SB_TRY(check_param(fn, "params->stride_h", p->stride_h, 1));
    SB_TRY(check_param(fn, "params->stride_w", p->stride_w, 1));
    SB_TRY(check_param(fn, "params->pad_h", p->pad_h, 0));
    SB_TRY(check_param(fn, "params->pad_w", p->pad_w, 0));
    SB_TRY(check_param(fn, "params->dilation_h", p->dilation_h, 1));
    SB_TRY(check_param(fn, "params->dilation_w", p->dilation_w, 1));
    return check_param(fn, "params->groups", p->groups, 1);
}

/* One axis: floor((in + 2*pad - dilation*(k-1) - 1) / stride) + 1. */
static sb_status conv_axis(const char *fn, const char *axis, int64_t in, int64_t k, int64_t stride,
                           int64_t pad, int64_t dilation, int64_t *out) {
    /* k, dilation, pad <= PARAM_MAX: span fits; in comes from the caller. */
    int64_t span = dilation * (k - 1) + 1, padded;
    if (!sb_checked_add(in, 2 * pad, &padded))
        return sb_fail(SB_ERR_ARG, "%s: input %s %lld plus padding overflows int64", fn, axis,
                       (long long)in);
    if (span > padded)
        return sb_fail(SB_ERR_SHAPE,
                       "%s: the dilated kernel %s (%lld) is larger than the padded input %s (%lld)",
                       fn, axis, (long long)span, axis, (long long)padded);
    *out = (padded - span) / stride + 1;
    return SB_OK;
}

static sb_status conv_output_size(const char *fn, int64_t in_h, int64_t in_w, int64_t kh,
                                  int64_t kw, const sb_conv2d_params *p, int64_t *oh, int64_t *ow) {
    SB_TRY(check_conv_params(fn, p));
    if (in_h < 0 || in_w < 0)
        return sb_fail(SB_ERR_ARG, "%s: input size %lld x %lld is negative", fn, (long long)in_h,
                       (long long)in_w);
    SB_TRY(check_param(fn, "kernel_h", kh, 1));
    SB_TRY(check_param(fn, "kernel_w", kw, 1));
    SB_TRY(conv_axis(fn, "height", in_h, kh, p->stride_h, p->pad_h, p->dilation_h, oh));
    return conv_axis(fn, "width", in_w, kw, p->stride_w, p->pad_w, p->dilation_w, ow);
}

sb_status sb_conv2d_output_size(int64_t in_h, int64_t in_w, int64_t kernel_h, int64_t kernel_w,
                                const sb_conv2d_params *params, int64_t *out_h, int64_t *out_w) {
    const char *fn = "sb_conv2d_output_size";
    if (!out_h || !out_w) return sb_fail(SB_ERR_NULL, "%s: out_h or out_w is NULL", fn);
    sb_conv2d_params def = SB_CONV2D_PARAMS_DEFAULT;
    int64_t oh = 0, ow = 0;
    SB_TRY(conv_output_size(fn, in_h, in_w, kernel_h, kernel_w, params ? params : &def, &oh, &ow));
    *out_h = oh;
    *out_w = ow;
    return SB_OK;
}

/* Checks x, w and params and fills the geometry (output size included). */
static sb_status plan_conv(const char *fn, const sb_tensor *x, const sb_tensor *w,
                           const sb_conv2d_params *params, sb_conv2d_geom *g) {
    sb_conv2d_params p = params ? *params : SB_CONV2D_PARAMS_DEFAULT;
    SB_TRY(check4(fn, "x", x, SB_F32, NULL));
    SB_TRY(check4(fn, "w", w, SB_F32, NULL));
    SB_TRY(check_conv_params(fn, &p));
    *g = (sb_conv2d_geom){.n = x->shape[0], .c_in = x->shape[1], .h = x->shape[2],
                          .w = x->shape[3], .c_out = w->shape[0], .kh = w->shape[2],
                          .kw = w->shape[3], .stride_h = p.stride_h, .stride_w = p.stride_w,
                          .pad_h = p.pad_h, .pad_w = p.pad_w, .dilation_h = p.dilation_h,
                          .dilation_w = p.dilation_w, .groups = p.groups};
    if (g->c_in % g->groups != 0)
        return sb_fail(SB_ERR_SHAPE, "%s: x has %lld channels, not divisible by groups = %lld", fn,
                       (long long)g->c_in, (long long)g->groups);
    if (g->c_out % g->groups != 0)
        return sb_fail(SB_ERR_SHAPE, "%s: w has %lld output channels, not divisible by groups = %lld",
                       fn, (long long)g->c_out, (long long)g->groups);
    int64_t wshape[4] = {g->c_out, g->c_in / g->groups, g->kh, g->kw};
    if (g->kh < 1 || g->kw < 1 || w->shape[1] != wshape[1]) {
        char buf[160];
        return sb_fail(SB_ERR_SHAPE,
                       "%s: w has shape %s, expected [out, in/groups = %lld, kh >= 1, kw >= 1]", fn,
                       sb_shape_str(w, buf, sizeof buf), (long long)wshape[1]);
    }
    return conv_output_size(fn, g->h, g->w, g->kh, g->kw, &p, &g->oh, &g->ow);
}

static sb_status check_bias(const char *fn, const char *name, const sb_tensor *b, int64_t c_out) {
    SB_TRY(sb_check_tensor(fn, name, b, SB_F32, -1));
    SB_TRY(sb_expect_shape(fn, name, b, 1, &c_out));
    return sb_check_contig(fn, name, b);
}

sb_status sb_conv2d_forward(const sb_tensor *x, const sb_tensor *w, const sb_tensor *bias,
                            const sb_conv2d_params *params, sb_tensor *y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_conv2d_forward";
    sb_conv2d_geom g;
    SB_TRY(plan_conv(fn, x, w, params, &g));
    if (bias) SB_TRY(check_bias(fn, "bias", bias, g.c_out));
    int64_t yshape[4] = {g.n, g.c_out, g.oh, g.ow};
    SB_TRY(check4(fn, "y", y, SB_F32, yshape));
    SB_TRY(sb_check_no_alias(fn, "y", y, "x", x));
    SB_TRY(sb_check_no_alias(fn, "y", y, "w", w));
    SB_TRY(sb_check_no_alias(fn, "y", y, "bias", bias));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, w, bias, y));
    return SB_BACKEND_RUN(fn, be, conv2d_forward, &g, x->data, w->data, bias ? bias->data : NULL,
                          y->data);
}

sb_status sb_conv2d_backward(const sb_tensor *dy, const sb_tensor *x, const sb_tensor *w,
                             const sb_conv2d_params *params, sb_tensor *dx, sb_tensor *dw,
                             sb_tensor *db) {
    SB_FPENV_GUARD();
    const char *fn = "sb_conv2d_backward";
    sb_conv2d_geom g;
    SB_TRY(plan_conv(fn, x, w, params, &g));
    int64_t yshape[4] = {g.n, g.c_out, g.oh, g.ow};
    SB_TRY(check4(fn, "dy", dy, SB_F32, yshape));
    if (dx) SB_TRY(check4(fn, "dx", dx, SB_F32, x->shape));
    if (dw) SB_TRY(check4(fn, "dw", dw, SB_F32, w->shape));
    if (db) SB_TRY(check_bias(fn, "db", db, g.c_out));
    const sb_tensor *ins[3] = {dy, x, w}, *outs[3] = {dx, dw, db};
    const char *in_names[3] = {"dy", "x", "w"}, *out_names[3] = {"dx", "dw", "db"};
    for (int o = 0; o < 3; o++) {
        for (int i = 0; i < 3; i++)
            SB_TRY(sb_check_no_alias(fn, out_names[o], outs[o], in_names[i], ins[i]));
        for (int o2 = o + 1; o2 < 3; o2++)
            SB_TRY(sb_check_no_alias(fn, out_names[o], outs[o], out_names[o2], outs[o2]));
    }
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, x, w, dx, dw, db));
    return SB_BACKEND_RUN(fn, be, conv2d_backward, &g, dy->data, x->data, w->data,
                          dx ? dx->data : NULL, dw ? dw->data : NULL, db ? db->data : NULL);
}

/* ---- conv_transpose2d ----
 * Composed of conv2d's own backend entries on the adjoint geometry (no
 * kernel of its own): the conv2d whose input is the transposed conv's
 * output (N, O, OH, OW), whose weight is w read as (C, O/groups, KH, KW)
 * (C "output" channels) and whose output is the transposed conv's input
 * (N, C, H, W). Its oh, ow are set to H, W: with output_pad >= stride
 * (allowed when output_pad < dilation) conv2d's own output-size rule would
 * give one row more, which no input element feeds. */

static sb_status check_transpose_params(const char *fn, const sb_conv_transpose2d_params *p) {
    sb_conv2d_params c = {p->stride_h, p->stride_w, p->pad_h, p->pad_w, p->dilation_h,
                          p->dilation_w, p->groups};
    SB_TRY(check_conv_params(fn, &c));
    SB_TRY(check_param(fn, "params->output_pad_h", p->output_pad_h, 0));
    SB_TRY(check_param(fn, "params->output_pad_w", p->output_pad_w, 0));
    if ((p->output_pad_h >= p->stride_h && p->output_pad_h >= p->dilation_h) ||
        (p->output_pad_w >= p->stride_w && p->output_pad_w >= p->dilation_w))
        return sb_fail(SB_ERR_ARG,
                       "%s: params->output_pad (%lld, %lld) must be smaller than either stride "
                       "(%lld, %lld) or dilation (%lld, %lld) per axis",
                       fn, (long long)p->output_pad_h, (long long)p->output_pad_w,
                       (long long)p->stride_h, (long long)p->stride_w, (long long)p->dilation_h,
                       (long long)p->dilation_w);
    return SB_OK;
}

/* One axis: (in - 1)*stride - 2*pad + dilation*(k - 1) + output_pad + 1. */
static sb_status transpose_axis(const char *fn, const char *axis, int64_t in, int64_t k,
                                int64_t stride, int64_t pad, int64_t dilation, int64_t out_pad,
                                int64_t *out) {
    if (in < 1)
        return sb_fail(SB_ERR_SHAPE, "%s: input %s is %lld, must be >= 1", fn, axis, (long long)in);
    /* k, dilation, pad, out_pad <= PARAM_MAX: span - 2*pad fits. */
    int64_t span = dilation * (k - 1) + out_pad + 1 - 2 * pad, strided, o;
    if (!sb_checked_mul(in - 1, stride, &strided) || !sb_checked_add(strided, span, &o))
        return sb_fail(SB_ERR_ARG, "%s: output %s for input %lld overflows int64", fn, axis,
                       (long long)in);
    if (o < 1)
        return sb_fail(SB_ERR_SHAPE, "%s: output %s would be %lld (padding %lld is too large)", fn,
                       axis, (long long)o, (long long)pad);
    *out = o;
    return SB_OK;
}

static sb_status transpose_output_size(const char *fn, int64_t in_h, int64_t in_w, int64_t kh,
                                       int64_t kw, const sb_conv_transpose2d_params *p,
                                       int64_t *oh, int64_t *ow) {
    SB_TRY(check_transpose_params(fn, p));
    SB_TRY(check_param(fn, "kernel_h", kh, 1));
    SB_TRY(check_param(fn, "kernel_w", kw, 1));
    SB_TRY(transpose_axis(fn, "height", in_h, kh, p->stride_h, p->pad_h, p->dilation_h,
                          p->output_pad_h, oh));
    return transpose_axis(fn, "width", in_w, kw, p->stride_w, p->pad_w, p->dilation_w,
                          p->output_pad_w, ow);
}

sb_status sb_conv_transpose2d_output_size(int64_t in_h, int64_t in_w, int64_t kernel_h,
                                          int64_t kernel_w,
                                          const sb_conv_transpose2d_params *params,
                                          int64_t *out_h, int64_t *out_w) {
    const char *fn = "sb_conv_transpose2d_output_size";
    if (!out_h || !out_w) return sb_fail(SB_ERR_NULL, "%s: out_h or out_w is NULL", fn);
    sb_conv_transpose2d_params def = SB_CONV_TRANSPOSE2D_PARAMS_DEFAULT;
    int64_t oh = 0, ow = 0;
    SB_TRY(transpose_output_size(fn, in_h, in_w, kernel_h, kernel_w, params ? params : &def, &oh,
                                 &ow));
    *out_h = oh;
    *out_w = ow;
    return SB_OK;
}

/* Checks x (N, C, H, W), w (C, O/groups, KH, KW) and params; fills the
 * adjoint conv2d geometry g (input (N, O, OH, OW), output (N, C, H, W)). */
static sb_status plan_transpose(const char *fn, const sb_tensor *x, const sb_tensor *w,
                                const sb_conv_transpose2d_params *params, sb_conv2d_geom *g) {
    sb_conv_transpose2d_params p = params ? *params : SB_CONV_TRANSPOSE2D_PARAMS_DEFAULT;
    SB_TRY(check4(fn, "x", x, SB_F32, NULL));
    SB_TRY(check4(fn, "w", w, SB_F32, NULL));
    SB_TRY(check_transpose_params(fn, &p));
    int64_t c = x->shape[1];
    if (w->shape[0] != c || c % p.groups != 0 || w->shape[2] < 1 || w->shape[3] < 1) {
        char buf[160];
        return sb_fail(SB_ERR_SHAPE,
                       "%s: w has shape %s, expected [in = %lld (divisible by groups = %lld), "
                       "out/groups, kh >= 1, kw >= 1]",
                       fn, sb_shape_str(w, buf, sizeof buf), (long long)c, (long long)p.groups);
    }
    int64_t o;
    if (!sb_checked_mul(w->shape[1], p.groups, &o))
        return sb_fail(SB_ERR_ARG, "%s: out channels %lld * groups %lld overflow int64", fn,
                       (long long)w->shape[1], (long long)p.groups);
    *g = (sb_conv2d_geom){.n = x->shape[0], .c_in = o, .c_out = c, .oh = x->shape[2],
                          .ow = x->shape[3], .kh = w->shape[2], .kw = w->shape[3],
                          .stride_h = p.stride_h, .stride_w = p.stride_w, .pad_h = p.pad_h,
                          .pad_w = p.pad_w, .dilation_h = p.dilation_h,
                          .dilation_w = p.dilation_w, .groups = p.groups};
    return transpose_output_size(fn, g->oh, g->ow, g->kh, g->kw, &p, &g->h, &g->w);
}

/* The conv2d geometry whose backward bias sum runs over dy (N, O, OH, OW):
 * a 1x1 convolution of dy's own size. */
static sb_conv2d_geom bias_geom(const sb_conv2d_geom *g) {
    return (sb_conv2d_geom){.n = g->n, .c_in = g->c_in, .h = g->h, .w = g->w, .c_out = g->c_in,
                            .kh = 1, .kw = 1, .oh = g->h, .ow = g->w, .stride_h = 1,
                            .stride_w = 1, .dilation_h = 1, .dilation_w = 1, .groups = 1};
}

sb_status sb_conv_transpose2d_forward(const sb_tensor *x, const sb_tensor *w,
                                      const sb_tensor *bias,
                                      const sb_conv_transpose2d_params *params, sb_tensor *y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_conv_transpose2d_forward";
    sb_conv2d_geom g;
    SB_TRY(plan_transpose(fn, x, w, params, &g));
    if (bias) SB_TRY(check_bias(fn, "bias", bias, g.c_in));
    int64_t yshape[4] = {g.n, g.c_in, g.h, g.w};
    SB_TRY(check4(fn, "y", y, SB_F32, yshape));
    SB_TRY(sb_check_no_alias(fn, "y", y, "x", x));
    SB_TRY(sb_check_no_alias(fn, "y", y, "w", w));
    SB_TRY(sb_check_no_alias(fn, "y", y, "bias", bias));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, w, bias, y));
    /* y = conv2d's input gradient with x as its dy */
    SB_TRY(SB_BACKEND_RUN(fn, be, conv2d_backward, &g, x->data, NULL, w->data, y->data, NULL,
                          NULL));
    if (!bias || sb_tensor_numel(y) == 0) return SB_OK;
    /* then + bias[o], one IEEE addition per element, as conv2d adds it:
     * bias viewed as (1, O, 1, 1) broadcast to y's shape */
    sb_tensor bview = *y;
    bview.data = bias->data;
    bview.strides[0] = bview.strides[2] = bview.strides[3] = 0;
    bview.strides[1] = 1;
    return SB_BACKEND_RUN(fn, be, binary, SB_BINARY_ADD, y, &bview, y);
}

sb_status sb_conv_transpose2d_backward(const sb_tensor *dy, const sb_tensor *x, const sb_tensor *w,
                                       const sb_conv_transpose2d_params *params, sb_tensor *dx,
                                       sb_tensor *dw, sb_tensor *db) {
    SB_FPENV_GUARD();
    const char *fn = "sb_conv_transpose2d_backward";
    sb_conv2d_geom g;
    SB_TRY(plan_transpose(fn, x, w, params, &g));
    int64_t yshape[4] = {g.n, g.c_in, g.h, g.w};
    SB_TRY(check4(fn, "dy", dy, SB_F32, yshape));
    if (dx) SB_TRY(check4(fn, "dx", dx, SB_F32, x->shape));
    if (dw) SB_TRY(check4(fn, "dw", dw, SB_F32, w->shape));
    if (db) SB_TRY(check_bias(fn, "db", db, g.c_in));
    const sb_tensor *ins[3] = {dy, x, w}, *outs[3] = {dx, dw, db};
    const char *in_names[3] = {"dy", "x", "w"}, *out_names[3] = {"dx", "dw", "db"};
    for (int o = 0; o < 3; o++) {
        for (int i = 0; i < 3; i++)
            SB_TRY(sb_check_no_alias(fn, out_names[o], outs[o], in_names[i], ins[i]));
        for (int o2 = o + 1; o2 < 3; o2++)
            SB_TRY(sb_check_no_alias(fn, out_names[o], outs[o], out_names[o2], outs[o2]));
    }
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, x, w, dx, dw, db));
    /* dx = conv2d forward of dy; dw = conv2d's weight gradient with x as
     * its dy and dy as its input */
    if (dx)
        SB_TRY(SB_BACKEND_RUN(fn, be, conv2d_forward, &g, dy->data, w->data, NULL, dx->data));
    if (dw)
        SB_TRY(SB_BACKEND_RUN(fn, be, conv2d_backward, &g, x->data, dy->data, NULL, NULL,
                              dw->data, NULL));
    if (!db) return SB_OK;
    sb_conv2d_geom bg = bias_geom(&g);
    return SB_BACKEND_RUN(fn, be, conv2d_backward, &bg, dy->data, NULL, NULL, NULL, NULL,
                          db->data);
}

/* ---- pooling ---- */

/* One axis of the pooling output size (PyTorch's rule). k, dil <= PARAM_MAX,
 * so the dilated extent dil*(k-1)+1 fits int64. */
static sb_status pool_axis(const char *fn, const char *axis, int64_t in, int64_t k, int64_t stride,
                           int64_t pad, int64_t dil, bool ceil_mode, int64_t *out) {
    if (in < 1)
        return sb_fail(SB_ERR_SHAPE, "%s: input %s is %lld, must be >= 1", fn, axis, (long long)in);
    int64_t padded, span, rounded, extent = dil * (k - 1) + 1;
    if (!sb_checked_add(in, 2 * pad, &padded))
        return sb_fail(SB_ERR_ARG, "%s: input %s %lld plus padding overflows int64", fn, axis,
                       (long long)in);
    span = padded - extent;
    if (span < 0 && dil == 1)
        return sb_fail(SB_ERR_SHAPE, "%s: kernel %s (%lld) is larger than the padded input %s (%lld)",
                       fn, axis, (long long)k, axis, (long long)padded);
    if (span < 0)
        return sb_fail(SB_ERR_SHAPE,
                       "%s: kernel %s (%lld, dilated extent %lld) is larger than the padded input %s (%lld)",
                       fn, axis, (long long)k, (long long)extent, axis, (long long)padded);
    if (!sb_checked_add(span, ceil_mode ? stride - 1 : 0, &rounded))
        return sb_fail(SB_ERR_ARG, "%s: input %s %lld is too large for ceil_mode", fn, axis,
                       (long long)in);
    /* (o - 1) * stride <= rounded, so the ceil_mode test below cannot overflow. */
    int64_t o = rounded / stride + 1;
    /* The last window must start inside the input or its left padding. */
    if (ceil_mode && (o - 1) * stride >= in + pad) o--;
    /* Every window starts before `in`, so one starting at or after 0 holds
     * its first tap; a dilated window starting in the left padding may step
     * over the whole input (PyTorch would return -inf there): refused. Its
     * first tap at or after 0 is below dil (pad <= k/2 leaves it a tap of
     * the window), so that happens only when in < dil. */
    for (int64_t r = 0; dil > in && r < o && r * stride < pad; r++) {
        sb_pool_axis a = {in, o, k, stride, pad, dil, false};
        int64_t lo, hi;
        sb_pool_window(&a, r, &lo, &hi);
        if (lo >= hi)
            return sb_fail(SB_ERR_SHAPE,
                           "%s: %s window %lld (kernel %lld, dilation %lld, padding %lld) holds no "
                           "input element",
                           fn, axis, (long long)r, (long long)k, (long long)dil, (long long)pad);
    }
    *out = o;
    return SB_OK;
}

/* Which pooling a plan is for: dilation is max pooling's, divisor_override
 * average pooling's (PyTorch has each only there); the output size takes
 * either. */
typedef enum { POOL_ANY, POOL_MAX, POOL_AVG } pool_kind;

/* Largest |divisor_override|: every integer up to 2^24 is exact as a float. */
#define DIVISOR_MAX (INT64_C(1) << 24)

/* Checks params, resolves stride 0 and dilation 0 and computes the geometry
 * for an input of planes x in_h x in_w. */
static sb_status plan_pool(const char *fn, pool_kind kind, const sb_pool2d_params *params,
                           int64_t planes, int64_t in_h, int64_t in_w, sb_pool2d_geom *g) {
    if (!params) return sb_fail(SB_ERR_NULL, "%s: params is NULL", fn);
    const sb_pool2d_params *p = params;
    SB_TRY(check_param(fn, "params->kernel_h", p->kernel_h, 1));
    SB_TRY(check_param(fn, "params->kernel_w", p->kernel_w, 1));
    SB_TRY(check_param(fn, "params->stride_h", p->stride_h, 0));
    SB_TRY(check_param(fn, "params->stride_w", p->stride_w, 0));
    SB_TRY(check_param(fn, "params->pad_h", p->pad_h, 0));
    SB_TRY(check_param(fn, "params->pad_w", p->pad_w, 0));
    SB_TRY(check_param(fn, "params->dilation_h", p->dilation_h, 0));
    SB_TRY(check_param(fn, "params->dilation_w", p->dilation_w, 0));
    if (p->divisor_override < -DIVISOR_MAX || p->divisor_override > DIVISOR_MAX)
        return sb_fail(SB_ERR_ARG, "%s: params->divisor_override = %lld must be in -%lld..%lld",
                       fn, (long long)p->divisor_override, (long long)DIVISOR_MAX,
                       (long long)DIVISOR_MAX);
    if (p->pad_h > p->kernel_h / 2 || p->pad_w > p->kernel_w / 2)
        return sb_fail(SB_ERR_ARG, "%s: padding (%lld, %lld) must be at most half the kernel (%lld, %lld)",
                       fn, (long long)p->pad_h, (long long)p->pad_w, (long long)p->kernel_h,
                       (long long)p->kernel_w);
    int64_t dil_h = p->dilation_h ? p->dilation_h : 1, dil_w = p->dilation_w ? p->dilation_w : 1;
    if (kind == POOL_AVG && (dil_h != 1 || dil_w != 1))
        return sb_fail(SB_ERR_ARG,
                       "%s: params->dilation (%lld, %lld) must be 1 (or 0): average pooling has no "
                       "dilation",
                       fn, (long long)p->dilation_h, (long long)p->dilation_w);
    if (kind == POOL_MAX && p->divisor_override != 0)
        return sb_fail(SB_ERR_ARG,
                       "%s: params->divisor_override = %lld must be 0: max pooling divides nothing",
                       fn, (long long)p->divisor_override);
    *g = (sb_pool2d_geom){.planes = planes, .h = in_h, .w = in_w, .kh = p->kernel_h,
                          .kw = p->kernel_w, .stride_h = p->stride_h ? p->stride_h : p->kernel_h,
                          .stride_w = p->stride_w ? p->stride_w : p->kernel_w, .pad_h = p->pad_h,
                          .pad_w = p->pad_w, .dil_h = dil_h, .dil_w = dil_w,
                          .divisor = kind == POOL_AVG ? p->divisor_override : 0,
                          .count_include_pad = p->count_include_pad};
    SB_TRY(pool_axis(fn, "height", in_h, g->kh, g->stride_h, g->pad_h, g->dil_h, p->ceil_mode,
                     &g->oh));
    return pool_axis(fn, "width", in_w, g->kw, g->stride_w, g->pad_w, g->dil_w, p->ceil_mode,
                     &g->ow);
}

sb_status sb_pool2d_output_size(int64_t in_h, int64_t in_w, const sb_pool2d_params *params,
                                int64_t *out_h, int64_t *out_w) {
    const char *fn = "sb_pool2d_output_size";
    if (!out_h || !out_w) return sb_fail(SB_ERR_NULL, "%s: out_h or out_w is NULL", fn);
    sb_pool2d_geom g;
    SB_TRY(plan_pool(fn, POOL_ANY, params, 0, in_h, in_w, &g));
    *out_h = g.oh;
    *out_w = g.ow;
    return SB_OK;
}

/* x-side tensor `xname` (N, C, H, W) and output-side `yname` (N, C, OH, OW):
 * validates both and the geometry linking them. */
static sb_status plan_pool_pair(const char *fn, pool_kind kind, const sb_pool2d_params *params,
                                const char *xname, const sb_tensor *x, const char *yname,
                                const sb_tensor *y, sb_pool2d_geom *g) {
    SB_TRY(check4(fn, xname, x, SB_F32, NULL));
    SB_TRY(plan_pool(fn, kind, params, x->shape[0] * x->shape[1], x->shape[2], x->shape[3], g));
    int64_t yshape[4] = {x->shape[0], x->shape[1], g->oh, g->ow};
    SB_TRY(check4(fn, yname, y, SB_F32, yshape));
    return sb_check_no_alias(fn, yname, y, xname, x);
}

/* An index outside its window could not have come from the forward pass,
 * and the gather would silently drop its gradient: refused, for either
 * geometry. The check runs on every backward step, so it avoids a division
 * per element: each output row's and column's window is found once (the
 * window arithmetic divides), and each plane position's row once (row_of,
 * up to ROW_OF_MAX positions; past that, the window's rows ih in [h0, h1),
 * which are few, are tried in turn). v is inside iff its row ih and column
 * iw = v - ih*w lie in the window's spans (and, with dilation, on its
 * taps). */
#define ROW_OF_MAX (1 << 22)

static bool index_in_window(const sb_pool2d_geom *g, const int32_t *row_of, int64_t dh,
                            int64_t dw, const int64_t *rw, const int64_t *cw, int64_t v) {
    int64_t h0 = rw[0], h1 = rw[1], w0 = cw[0], w1 = cw[1];
    if (row_of) {
        if (v < 0 || v >= g->h * g->w) return false;
        int64_t ih = row_of[v], iw = v - ih * g->w;
        return ih >= h0 && ih < h1 && iw >= w0 && iw < w1 && (dh == 1 || (ih - h0) % dh == 0) &&
               (dw == 1 || (iw - w0) % dw == 0);
    }
    for (int64_t ih = h0; ih < h1; ih += dh)
        if (v >= ih * g->w + w0 && v < ih * g->w + w1)
            return dw == 1 || (v - ih * g->w - w0) % dw == 0;
    return false;
}

static sb_status check_indices(const char *fn, const sb_backend *be, const sb_pool2d_geom *g,
                               const sb_tensor *indices) {
    const void *host;
    void *owned;
    SB_TRY(sb_ops_read_host(fn, be, indices, &host, &owned));
    const int64_t *idx = host;
    sb_pool_axis rows = sb_pool_rows(g), cols = sb_pool_cols(g);
    int64_t dh = sb_pool_step(&rows), dw = sb_pool_step(&cols);
    /* [lo, hi) of each output row, then of each output column */
    int64_t *win = sb_calloc(fn, (size_t)(g->oh + g->ow), 2 * sizeof *win);
    if (!win) {
        free(owned);
        return SB_ERR_NOMEM;
    }
    int64_t *rw = win, *cw = win + 2 * g->oh;
    for (int64_t r = 0; r < g->oh; r++) sb_pool_window(&rows, r, &rw[2 * r], &rw[2 * r + 1]);
    for (int64_t s = 0; s < g->ow; s++) sb_pool_window(&cols, s, &cw[2 * s], &cw[2 * s + 1]);
    int32_t *row_of = g->h * g->w <= ROW_OF_MAX ? malloc((size_t)(g->h * g->w) * sizeof *row_of)
                                                : NULL;
    for (int64_t ih = 0; row_of && ih < g->h; ih++)
        for (int64_t iw = 0; iw < g->w; iw++) row_of[ih * g->w + iw] = (int32_t)ih;
    sb_status st = SB_OK;
    for (int64_t p = 0; p < g->planes && st == SB_OK; p++)
        for (int64_t r = 0; r < g->oh && st == SB_OK; r++)
            for (int64_t s = 0; s < g->ow; s++) {
                int64_t v = idx[(p * g->oh + r) * g->ow + s];
                if (!index_in_window(g, row_of, dh, dw, &rw[2 * r], &cw[2 * s], v)) {
                    st = sb_fail(SB_ERR_RANGE,
                                 "%s: indices[plane %lld][%lld][%lld] = %lld is outside its window",
                                 fn, (long long)p, (long long)r, (long long)s, (long long)v);
                    break;
                }
            }
    free(row_of);
    free(win);
    free(owned);
    return st;
}

sb_status sb_max_pool2d_forward(const sb_tensor *x, const sb_pool2d_params *params, sb_tensor *y,
                                sb_tensor *indices) {
    SB_FPENV_GUARD();
    const char *fn = "sb_max_pool2d_forward";
    sb_pool2d_geom g;
    SB_TRY(plan_pool_pair(fn, POOL_MAX, params, "x", x, "y", y, &g));
    if (indices) {
        SB_TRY(check4(fn, "indices", indices, SB_I64, y->shape));
        SB_TRY(sb_check_no_alias(fn, "indices", indices, "x", x));
        SB_TRY(sb_check_no_alias(fn, "indices", indices, "y", y));
    }
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, y, indices));
    return SB_BACKEND_RUN(fn, be, max_pool2d_forward, &g, x->data, y->data,
                          indices ? indices->data : NULL);
}

sb_status sb_max_pool2d_backward(const sb_tensor *dy, const sb_tensor *indices,
                                 const sb_pool2d_params *params, sb_tensor *dx) {
    SB_FPENV_GUARD();
    const char *fn = "sb_max_pool2d_backward";
    sb_pool2d_geom g;
    SB_TRY(plan_pool_pair(fn, POOL_MAX, params, "dx", dx, "dy", dy, &g));
    SB_TRY(check4(fn, "indices", indices, SB_I64, dy->shape));
    SB_TRY(sb_check_no_alias(fn, "dx", dx, "indices", indices));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, indices, dx));
    SB_TRY(check_indices(fn, be, &g, indices));
    return SB_BACKEND_RUN(fn, be, max_pool2d_backward, &g, dy->data, indices->data, dx->data);
}

sb_status sb_avg_pool2d_forward(const sb_tensor *x, const sb_pool2d_params *params, sb_tensor *y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_avg_pool2d_forward";
    sb_pool2d_geom g;
    SB_TRY(plan_pool_pair(fn, POOL_AVG, params, "x", x, "y", y, &g));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, y));
    return SB_BACKEND_RUN(fn, be, avg_pool2d_forward, &g, x->data, y->data);
}

sb_status sb_avg_pool2d_backward(const sb_tensor *dy, const sb_pool2d_params *params,
                                 sb_tensor *dx) {
    SB_FPENV_GUARD();
    const char *fn = "sb_avg_pool2d_backward";
    sb_pool2d_geom g;
    SB_TRY(plan_pool_pair(fn, POOL_AVG, params, "dx", dx, "dy", dy, &g));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, dx));
    return SB_BACKEND_RUN(fn, be, avg_pool2d_backward, &g, dy->data, dx->data);
}

/* ---- padding ---- */

/* One axis of a padding: pads and the size they need for the mode. */
static sb_status pad_axis(const char *fn, const char *axis, const char *before_name,
                          const char *after_name, sb_pad_mode mode, int64_t size, int64_t before,
                          int64_t after, int64_t *out) {
    SB_TRY(check_param(fn, before_name, before, 0));
    SB_TRY(check_param(fn, after_name, after, 0));
    int64_t most = before > after ? before : after;
    if (mode != SB_PAD_CONSTANT && size < 1)
        return sb_fail(SB_ERR_SHAPE, "%s: input %s is %lld; reflect, replicate and circular "
                       "padding need >= 1", fn, axis, (long long)size);
    if (mode == SB_PAD_REFLECT && most >= size)
        return sb_fail(SB_ERR_ARG, "%s: reflect padding (%lld, %lld) must be less than the input "
                       "%s %lld", fn, (long long)before, (long long)after, axis, (long long)size);
    if (mode == SB_PAD_CIRCULAR && most > size)
        return sb_fail(SB_ERR_ARG, "%s: circular padding (%lld, %lld) must be at most the input "
                       "%s %lld", fn, (long long)before, (long long)after, axis, (long long)size);
    /* size <= the tensor's extent and pads <= PARAM_MAX: no overflow */
    *out = size + before + after;
    return SB_OK;
}

/* x-side tensor `xname` (N, C, H, W) and padded `yname`: validates both and
 * the geometry linking them. */
static sb_status plan_pad(const char *fn, const sb_pad2d_params *params, const char *xname,
                          const sb_tensor *x, const char *yname, const sb_tensor *y,
                          sb_pad2d_geom *g) {
    if (!params) return sb_fail(SB_ERR_NULL, "%s: params is NULL", fn);
    const sb_pad2d_params *p = params;
    if ((int)p->mode < SB_PAD_CONSTANT || (int)p->mode > SB_PAD_CIRCULAR)
        return sb_fail(SB_ERR_ARG, "%s: params->mode = %d is not an sb_pad_mode", fn, (int)p->mode);
    SB_TRY(check4(fn, xname, x, SB_F32, NULL));
    *g = (sb_pad2d_geom){.planes = x->shape[0] * x->shape[1], .h = x->shape[2], .w = x->shape[3],
                         .top = p->top, .left = p->left, .mode = p->mode,
                         .value = p->mode == SB_PAD_CONSTANT ? p->value : 0.0f};
    SB_TRY(pad_axis(fn, "height", "params->top", "params->bottom", p->mode, g->h, p->top,
                    p->bottom, &g->oh));
    SB_TRY(pad_axis(fn, "width", "params->left", "params->right", p->mode, g->w, p->left, p->right,
                    &g->ow));
    int64_t yshape[4] = {x->shape[0], x->shape[1], g->oh, g->ow};
    int64_t numel;
    if (!sb_checked_mul(g->planes, g->oh, &numel) || !sb_checked_mul(numel, g->ow, &numel))
        return sb_fail(SB_ERR_SHAPE, "%s: the padded %s is too large", fn, yname);
    SB_TRY(check4(fn, yname, y, SB_F32, yshape));
    return sb_check_no_alias(fn, yname, y, xname, x);
}

sb_status sb_pad2d_forward(const sb_tensor *x, const sb_pad2d_params *params, sb_tensor *y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_pad2d_forward";
    sb_pad2d_geom g;
    SB_TRY(plan_pad(fn, params, "x", x, "y", y, &g));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, y));
    return SB_BACKEND_RUN(fn, be, pad2d_forward, &g, x->data, y->data);
}

sb_status sb_pad2d_backward(const sb_tensor *dy, const sb_pad2d_params *params, sb_tensor *dx) {
    SB_FPENV_GUARD();
    const char *fn = "sb_pad2d_backward";
    sb_pad2d_geom g;
    SB_TRY(plan_pad(fn, params, "dx", dx, "dy", dy, &g));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, dx));
    return SB_BACKEND_RUN(fn, be, pad2d_backward, &g, dy->data, dx->data);
}

/* ---- adaptive pooling ---- */

/* x-side tensor `xname` (N, C, H, W) and output-side `yname` (N, C, OH, OW),
 * whose shape is the output size. When OH divides H and OW divides W, every
 * window is the fixed window of kernel = stride = H/OH, W/OW without
 * padding: the same elements in the same order and the same divisor, so the
 * geometry becomes the ordinary one and the ordinary pooling entries (of
 * every device) run it. */
static sb_status plan_adaptive(const char *fn, const char *xname, const sb_tensor *x,
                               const char *yname, const sb_tensor *y, sb_pool2d_geom *g) {
    SB_TRY(check4(fn, xname, x, SB_F32, NULL));
    SB_TRY(sb_check_tensor(fn, yname, y, SB_F32, 4));
    int64_t yshape[4] = {x->shape[0], x->shape[1], y->shape[2], y->shape[3]};
    SB_TRY(check4(fn, yname, y, SB_F32, yshape));
    static const char *const axes[2] = {"height", "width"};
    for (int a = 0; a < 2; a++) {
        int64_t in = x->shape[2 + a], out = y->shape[2 + a];
        if (in < 1)
            return sb_fail(SB_ERR_SHAPE, "%s: %s %s is %lld, must be >= 1", fn, xname, axes[a],
                           (long long)in);
        /* r * in and pos * out must fit int64 */
        if (in > PARAM_MAX || out > PARAM_MAX)
            return sb_fail(SB_ERR_SHAPE, "%s: %s %s %lld and output %s %lld must each be at most %lld",
                           fn, xname, axes[a], (long long)in, axes[a], (long long)out,
                           (long long)PARAM_MAX);
    }
    SB_TRY(sb_check_no_alias(fn, yname, y, xname, x));
    int64_t h = x->shape[2], w = x->shape[3], oh = y->shape[2], ow = y->shape[3];
    *g = (sb_pool2d_geom){.planes = x->shape[0] * x->shape[1], .h = h, .w = w, .oh = oh,
                          .ow = ow, .dil_h = 1, .dil_w = 1, .adaptive = true};
    if (oh > 0 && ow > 0 && h % oh == 0 && w % ow == 0) {
        g->adaptive = false;
        g->kh = g->stride_h = h / oh;
        g->kw = g->stride_w = w / ow;
    }
    return SB_OK;
}

sb_status sb_adaptive_max_pool2d_forward(const sb_tensor *x, sb_tensor *y, sb_tensor *indices) {
    SB_FPENV_GUARD();
    const char *fn = "sb_adaptive_max_pool2d_forward";
    sb_pool2d_geom g;
    SB_TRY(plan_adaptive(fn, "x", x, "y", y, &g));
    if (indices) {
        SB_TRY(check4(fn, "indices", indices, SB_I64, y->shape));
        SB_TRY(sb_check_no_alias(fn, "indices", indices, "x", x));
        SB_TRY(sb_check_no_alias(fn, "indices", indices, "y", y));
    }
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, y, indices));
    void *idx = indices ? indices->data : NULL;
    if (g.adaptive)
        return SB_BACKEND_RUN(fn, be, adaptive_max_pool2d_forward, &g, x->data, y->data, idx);
    return SB_BACKEND_RUN(fn, be, max_pool2d_forward, &g, x->data, y->data, idx);
}

sb_status sb_adaptive_max_pool2d_backward(const sb_tensor *dy, const sb_tensor *indices,
                                          sb_tensor *dx) {
    SB_FPENV_GUARD();
    const char *fn = "sb_adaptive_max_pool2d_backward";
    sb_pool2d_geom g;
    SB_TRY(plan_adaptive(fn, "dx", dx, "dy", dy, &g));
    SB_TRY(check4(fn, "indices", indices, SB_I64, dy->shape));
    SB_TRY(sb_check_no_alias(fn, "dx", dx, "indices", indices));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, indices, dx));
    SB_TRY(check_indices(fn, be, &g, indices));
    if (g.adaptive)
        return SB_BACKEND_RUN(fn, be, adaptive_max_pool2d_backward, &g, dy->data, indices->data,
                              dx->data);
    return SB_BACKEND_RUN(fn, be, max_pool2d_backward, &g, dy->data, indices->data, dx->data);
}

sb_status sb_adaptive_avg_pool2d_forward(const sb_tensor *x, sb_tensor *y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_adaptive_avg_pool2d_forward";
    sb_pool2d_geom g;
    SB_TRY(plan_adaptive(fn, "x", x, "y", y, &g));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, y));
    if (g.adaptive) return SB_BACKEND_RUN(fn, be, adaptive_avg_pool2d_forward, &g, x->data, y->data);
    return SB_BACKEND_RUN(fn, be, avg_pool2d_forward, &g, x->data, y->data);
}

sb_status sb_adaptive_avg_pool2d_backward(const sb_tensor *dy, sb_tensor *dx) {
    SB_FPENV_GUARD();
    const char *fn = "sb_adaptive_avg_pool2d_backward";
    sb_pool2d_geom g;
    SB_TRY(plan_adaptive(fn, "dx", dx, "dy", dy, &g));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, dx));
    if (g.adaptive)
        return SB_BACKEND_RUN(fn, be, adaptive_avg_pool2d_backward, &g, dy->data, dx->data);
    return SB_BACKEND_RUN(fn, be, avg_pool2d_backward, &g, dy->data, dx->data);
}
