/* The layers: each a constructor that declares parameters/buffers and a
 * forward that runs the matching autograd op. */
#include <math.h>
#include <stdlib.h>
#include "core/checked.h"
#include "core/fpenv.h"
#include "nn/nn_internal.h"

/* Parameter leaf i, or NULL when the module has fewer parameters. */
static sb_status param_or_null(sb_module *m, sb_graph *g, size_t i, sb_variable **out) {
    *out = NULL;
    return i < m->n_params ? sb_module_param_var(m, g, i, out) : SB_OK;
}

/* ---- Linear ---- */
static sb_status linear_forward(sb_module *m, sb_graph *g, sb_variable *x, sb_variable **y) {
    sb_variable *w, *b;
    SB_TRY(param_or_null(m, g, 0, &w));
    SB_TRY(param_or_null(m, g, 1, &b));
    return sb_ag_linear(g, x, w, b, y);
}

sb_status sb_nn_linear(sb_module **out, int64_t in_features, int64_t out_features, bool bias) {
    SB_FPENV_GUARD();
    if (in_features <= 0 || out_features <= 0) {
        if (out) *out = NULL;
        return sb_fail(SB_ERR_ARG, "sb_nn_linear: features must be positive, got in %lld, out %lld",
                       (long long)in_features, (long long)out_features);
    }
    SB_TRY(sb_module_alloc("linear", linear_forward, out));
    sb_module *m = *out;
    m->fan_in = in_features;
    int64_t ws[2] = {out_features, in_features};
    sb_status s = sb_module_add_param(m, "weight", 2, ws, SB_INIT_FAN_IN_UNIFORM);
    if (s == SB_OK && bias) s = sb_module_add_param(m, "bias", 1, &out_features, SB_INIT_FAN_IN_UNIFORM);
    if (s != SB_OK) { sb_module_free(m); *out = NULL; }
    return s;
}

/* ---- Conv2d ---- */
static sb_status conv2d_forward(sb_module *m, sb_graph *g, sb_variable *x, sb_variable **y) {
    sb_variable *w, *b;
    SB_TRY(param_or_null(m, g, 0, &w));
    SB_TRY(param_or_null(m, g, 1, &b));
    return sb_ag_conv2d(g, x, w, b, &m->cfg.conv, y);
}

sb_status sb_nn_conv2d(sb_module **out, int64_t in_channels, int64_t out_channels,
                       int64_t kernel_h, int64_t kernel_w, const sb_conv2d_params *params,
                       bool bias) {
    SB_FPENV_GUARD();
    sb_conv2d_params p = params ? *params : (sb_conv2d_params){0};
    if (p.stride_h == 0) p.stride_h = 1;
    if (p.stride_w == 0) p.stride_w = 1;
    if (p.dilation_h == 0) p.dilation_h = 1;
    if (p.dilation_w == 0) p.dilation_w = 1;
    if (p.groups == 0) p.groups = 1;
    if (p.stride_h < 1 || p.stride_w < 1 || p.pad_h < 0 || p.pad_w < 0 || p.dilation_h < 1 ||
        p.dilation_w < 1 || p.groups < 1) {
        if (out) *out = NULL;
        return sb_fail(SB_ERR_ARG,
                       "sb_nn_conv2d: need stride >= 1, pad >= 0, dilation >= 1, groups >= 1 "
                       "(0 means the default)");
    }
    if (in_channels <= 0 || out_channels <= 0 || kernel_h <= 0 || kernel_w <= 0 ||
        in_channels % p.groups || out_channels % p.groups) {
        if (out) *out = NULL;
        return sb_fail(SB_ERR_ARG,
                       "sb_nn_conv2d: need positive channels and kernel, channels divisible by "
                       "groups (in %lld, out %lld, kernel %lldx%lld, groups %lld)",
                       (long long)in_channels, (long long)out_channels, (long long)kernel_h,
                       (long long)kernel_w, (long long)p.groups);
    }
    int64_t ws[4] = {out_channels, in_channels / p.groups, kernel_h, kernel_w}, numel;
    /* The weight's size bounds fan_in, so fan_in cannot overflow once it is checked. */
    if (!sb_checked_numel(4, ws, &numel)) {
        if (out) *out = NULL;
        return sb_fail(SB_ERR_SHAPE, "sb_nn_conv2d: the weight [%lld, %lld, %lld, %lld] is too large",
                       (long long)ws[0], (long long)ws[1], (long long)ws[2], (long long)ws[3]);
    }
    SB_TRY(sb_module_alloc("conv2d", conv2d_forward, out));
    sb_module *m = *out;
    m->cfg.conv = p;
    m->fan_in = in_channels / p.groups * kernel_h * kernel_w;
    sb_status s = sb_module_add_param(m, "weight", 4, ws, SB_INIT_FAN_IN_UNIFORM);
    if (s == SB_OK && bias) s = sb_module_add_param(m, "bias", 1, &out_channels, SB_INIT_FAN_IN_UNIFORM);
    if (s != SB_OK) { sb_module_free(m); *out = NULL; }
    return s;
}

static sb_status conv_transpose2d_forward(sb_module *m, sb_graph *g, sb_variable *x,
                                          sb_variable **y) {
    sb_variable *w, *b;
    SB_TRY(param_or_null(m, g, 0, &w));
    SB_TRY(param_or_null(m, g, 1, &b));
    return sb_ag_conv_transpose2d(g, x, w, b, &m->cfg.conv_t, y);
}

sb_status sb_nn_conv_transpose2d(sb_module **out, int64_t in_channels, int64_t out_channels,
                                 int64_t kernel_h, int64_t kernel_w,
                                 const sb_conv_transpose2d_params *params, bool bias) {
    SB_FPENV_GUARD();
    const char *fn = "sb_nn_conv_transpose2d";
    if (out) *out = NULL;
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    sb_conv_transpose2d_params p = params ? *params : SB_CONV_TRANSPOSE2D_PARAMS_DEFAULT;
    if (p.groups < 1 || in_channels <= 0 || out_channels <= 0 || kernel_h <= 0 || kernel_w <= 0 ||
        in_channels % p.groups || out_channels % p.groups)
        return sb_fail(SB_ERR_ARG,
                       "%s: need positive channels and kernel, channels divisible by groups (in "
                       "%lld, out %lld, kernel %lldx%lld, groups %lld)",
                       fn, (long long)in_channels, (long long)out_channels, (long long)kernel_h,
                       (long long)kernel_w, (long long)p.groups);
    bool op_ok = (p.output_pad_h < p.stride_h || p.output_pad_h < p.dilation_h) &&
                 (p.output_pad_w < p.stride_w || p.output_pad_w < p.dilation_w);
    if (p.stride_h < 1 || p.stride_w < 1 || p.pad_h < 0 || p.pad_w < 0 || p.dilation_h < 1 ||
        p.dilation_w < 1 || p.output_pad_h < 0 || p.output_pad_w < 0 || !op_ok)
        return sb_fail(SB_ERR_ARG,
                       "%s: need stride >= 1, pad >= 0, dilation >= 1 and 0 <= output_pad < "
                       "stride or dilation",
                       fn);
    int64_t ws[4] = {in_channels, out_channels / p.groups, kernel_h, kernel_w}, numel;
    if (!sb_checked_numel(4, ws, &numel))
        return sb_fail(SB_ERR_SHAPE, "%s: the weight [%lld, %lld, %lld, %lld] is too large", fn,
                       (long long)ws[0], (long long)ws[1], (long long)ws[2], (long long)ws[3]);
    SB_TRY(sb_module_alloc("conv_transpose2d", conv_transpose2d_forward, out));
    sb_module *m = *out;
    m->cfg.conv_t = p;
    m->fan_in = ws[1] * kernel_h * kernel_w; /* PyTorch's fan_in: weight dim 1 x kernel */
    sb_status s = sb_module_add_param(m, "weight", 4, ws, SB_INIT_FAN_IN_UNIFORM);
    if (s == SB_OK && bias)
        s = sb_module_add_param(m, "bias", 1, &out_channels, SB_INIT_FAN_IN_UNIFORM);
    if (s != SB_OK) {
        sb_module_free(m);
        *out = NULL;
    }
    return s;
}

/* ---- pooling ---- */
static sb_status max_pool_forward(sb_module *m, sb_graph *g, sb_variable *x, sb_variable **y) {
    return sb_ag_max_pool2d(g, x, &m->cfg.pool, y);
}
static sb_status avg_pool_forward(sb_module *m, sb_graph *g, sb_variable *x, sb_variable **y) {
    return sb_ag_avg_pool2d(g, x, &m->cfg.pool, y);
}

static sb_status pool_new(const char *kind, sb_forward_fn fwd, sb_module **out,
                          const sb_pool2d_params *params) {
    if (!params) {
        if (out) *out = NULL;
        return sb_fail(SB_ERR_NULL, "sb_nn_%s: params is NULL", kind);
    }
    SB_TRY(sb_module_alloc(kind, fwd, out));
    (*out)->cfg.pool = *params;
    return SB_OK;
}

sb_status sb_nn_max_pool2d(sb_module **out, const sb_pool2d_params *params) {
    return pool_new("max_pool2d", max_pool_forward, out, params);
}
sb_status sb_nn_avg_pool2d(sb_module **out, const sb_pool2d_params *params) {
    return pool_new("avg_pool2d", avg_pool_forward, out, params);
}

/* ---- activations ---- */
static sb_status relu_forward(sb_module *m, sb_graph *g, sb_variable *x, sb_variable **y) {
    (void)m;
    return sb_ag_relu(g, x, y);
}
static sb_status tanh_forward(sb_module *m, sb_graph *g, sb_variable *x, sb_variable **y) {
    (void)m;
    return sb_ag_tanh(g, x, y);
}
static sb_status sigmoid_forward(sb_module *m, sb_graph *g, sb_variable *x, sb_variable **y) {
    (void)m;
    return sb_ag_sigmoid(g, x, y);
}
static sb_status gelu_forward(sb_module *m, sb_graph *g, sb_variable *x, sb_variable **y) {
    return sb_ag_gelu(g, x, m->cfg.gelu_tanh, y);
}

sb_status sb_nn_relu(sb_module **out) { return sb_module_alloc("relu", relu_forward, out); }
sb_status sb_nn_tanh(sb_module **out) { return sb_module_alloc("tanh", tanh_forward, out); }
sb_status sb_nn_sigmoid(sb_module **out) { return sb_module_alloc("sigmoid", sigmoid_forward, out); }
sb_status sb_nn_gelu(sb_module **out, bool approximate_tanh) {
    SB_TRY(sb_module_alloc("gelu", gelu_forward, out));
    (*out)->cfg.gelu_tanh = approximate_tanh;
    return SB_OK;
}

/* ---- Flatten ---- */
static sb_status flatten_forward(sb_module *m, sb_graph *g, sb_variable *x, sb_variable **y) {
    return sb_ag_flatten(g, x, m->cfg.flatten.start, m->cfg.flatten.end, y);
}

sb_status sb_nn_flatten(sb_module **out, int start_dim, int end_dim) {
    SB_TRY(sb_module_alloc("flatten", flatten_forward, out));
    (*out)->cfg.flatten.start = start_dim;
    (*out)->cfg.flatten.end = end_dim;
    return SB_OK;
}

/* ---- BatchNorm ---- */

/* num_batches_tracked += 1, on the host or through a host copy. */
static sb_status count_batch(sb_tensor *t) {
    if (t->device == SB_DEVICE_CPU) {
        ((int64_t *)t->data)[0] += 1;
        return SB_OK;
    }
    sb_tensor *host = NULL;
    SB_TRY(sb_tensor_to(&host, t, SB_DEVICE_CPU));
    ((int64_t *)host->data)[0] += 1;
    sb_status st = sb_tensor_copy(t, host);
    sb_tensor_free(host);
    return st;
}

static sb_status batch_norm_forward(sb_module *m, sb_graph *g, sb_variable *x, sb_variable **y) {
    sb_variable *gamma, *beta;
    SB_TRY(param_or_null(m, g, 0, &gamma));
    SB_TRY(param_or_null(m, g, 1, &beta));
    SB_TRY(sb_ag_batch_norm(g, x, gamma, beta, m->buffers[0].value, m->buffers[1].value,
                            m->training, m->cfg.bn.momentum, m->cfg.bn.eps, y));
    /* counted only after a successful forward: a rejected input changes nothing */
    if (m->training) SB_TRY(count_batch(m->buffers[2].value)); /* num_batches_tracked */
    return SB_OK;
}

sb_status sb_nn_batch_norm(sb_module **out, int64_t num_features, float eps, float momentum,
                           bool affine) {
    SB_FPENV_GUARD();
    if (num_features <= 0 || !(eps > 0.0f) || !(momentum >= 0.0f && momentum <= 1.0f)) {
        if (out) *out = NULL;
        return sb_fail(SB_ERR_ARG,
                       "sb_nn_batch_norm: need num_features > 0, eps > 0, momentum in [0, 1] "
                       "(got %lld, %g, %g)", (long long)num_features, (double)eps, (double)momentum);
    }
    SB_TRY(sb_module_alloc("batch_norm", batch_norm_forward, out));
    sb_module *m = *out;
    m->cfg.bn.eps = eps;
    m->cfg.bn.momentum = momentum;
    sb_status s = SB_OK;
    if (affine) {
        s = sb_module_add_param(m, "weight", 1, &num_features, SB_INIT_ONES);
        if (s == SB_OK) s = sb_module_add_param(m, "bias", 1, &num_features, SB_INIT_ZEROS);
    }
    if (s == SB_OK) s = sb_module_add_buffer(m, "running_mean", SB_F32, 1, &num_features, SB_INIT_ZEROS);
    if (s == SB_OK) s = sb_module_add_buffer(m, "running_var", SB_F32, 1, &num_features, SB_INIT_ONES);
    if (s == SB_OK) s = sb_module_add_buffer(m, "num_batches_tracked", SB_I64, 0, NULL, SB_INIT_ZEROS);
    if (s == SB_OK) {
        sb_tensor_fill(m->buffers[1].value, 1.0f);
        if (affine) sb_tensor_fill(m->params[0].value, 1.0f);
    }
    if (s != SB_OK) { sb_module_free(m); *out = NULL; }
    return s;
}

/* ---- LayerNorm ---- */
static sb_status layer_norm_forward(sb_module *m, sb_graph *g, sb_variable *x, sb_variable **y) {
    sb_variable *w, *b;
    SB_TRY(param_or_null(m, g, 0, &w));
    SB_TRY(param_or_null(m, g, 1, &b));
    return sb_ag_layer_norm(g, x, m->cfg.ln.ndim, w, b, m->cfg.ln.eps, y);
}

sb_status sb_nn_layer_norm(sb_module **out, int normalized_ndim, const int64_t *normalized_shape,
                           float eps, bool elementwise_affine) {
    SB_FPENV_GUARD();
    bool shape_ok = normalized_shape != NULL;
    for (int i = 0; shape_ok && i < normalized_ndim && i < SB_MAX_DIMS; i++)
        shape_ok = normalized_shape[i] > 0;
    if (normalized_ndim < 1 || normalized_ndim > SB_MAX_DIMS || !shape_ok || !(eps > 0.0f)) {
        if (out) *out = NULL;
        return sb_fail(SB_ERR_ARG,
                       "sb_nn_layer_norm: need 1..%d normalized dims, a shape of positive sizes "
                       "and eps > 0", SB_MAX_DIMS);
    }
    SB_TRY(sb_module_alloc("layer_norm", layer_norm_forward, out));
    sb_module *m = *out;
    m->cfg.ln.ndim = normalized_ndim;
    m->cfg.ln.eps = eps;
    sb_status s = SB_OK;
    if (elementwise_affine) {
        s = sb_module_add_param(m, "weight", normalized_ndim, normalized_shape, SB_INIT_ONES);
        if (s == SB_OK) s = sb_module_add_param(m, "bias", normalized_ndim, normalized_shape, SB_INIT_ZEROS);
        if (s == SB_OK) sb_tensor_fill(m->params[0].value, 1.0f);
    }
    if (s != SB_OK) { sb_module_free(m); *out = NULL; }
    return s;
}

/* ---- RMSNorm (PyTorch's nn.RMSNorm: a weight of ones, no bias) ---- */
static sb_status rms_norm_forward(sb_module *m, sb_graph *g, sb_variable *x, sb_variable **y) {
    sb_variable *w;
    SB_TRY(param_or_null(m, g, 0, &w));
    return sb_ag_rms_norm(g, x, m->cfg.ln.ndim, w, m->cfg.ln.eps, y);
}

sb_status sb_nn_rms_norm(sb_module **out, int normalized_ndim, const int64_t *normalized_shape,
                         float eps, bool elementwise_affine) {
    SB_FPENV_GUARD();
    bool shape_ok = normalized_shape != NULL;
    for (int i = 0; shape_ok && i < normalized_ndim && i < SB_MAX_DIMS; i++)
        shape_ok = normalized_shape[i] > 0;
    if (normalized_ndim < 1 || normalized_ndim > SB_MAX_DIMS || !shape_ok || !(eps > 0.0f) ||
        isinf(eps)) {
        if (out) *out = NULL;
        return sb_fail(SB_ERR_ARG,
                       "sb_nn_rms_norm: need 1..%d normalized dims, a shape of positive sizes "
                       "and a finite eps > 0", SB_MAX_DIMS);
    }
    SB_TRY(sb_module_alloc("rms_norm", rms_norm_forward, out));
    sb_module *m = *out;
    m->cfg.ln.ndim = normalized_ndim;
    m->cfg.ln.eps = eps;
    sb_status s = SB_OK;
    if (elementwise_affine) {
        s = sb_module_add_param(m, "weight", normalized_ndim, normalized_shape, SB_INIT_ONES);
        if (s == SB_OK) sb_tensor_fill(m->params[0].value, 1.0f);
    }
    if (s != SB_OK) { sb_module_free(m); *out = NULL; }
    return s;
}

/* ---- Dropout ---- */
static sb_status dropout_forward(sb_module *m, sb_graph *g, sb_variable *x, sb_variable **y) {
    SB_TRY(sb_ag_dropout(g, x, m->cfg.dropout.p, m->training, m->cfg.dropout.seed,
                         m->cfg.dropout.stream, m->cfg.dropout.offset, y));
    /* advanced only after a successful forward: a rejected input draws nothing */
    if (m->training) m->cfg.dropout.offset += (uint64_t)sb_tensor_numel(x->value);
    return SB_OK;
}

sb_status sb_nn_dropout(sb_module **out, float p, uint64_t seed, uint64_t stream) {
    if (!(p >= 0.0f && p <= 1.0f)) {
        if (out) *out = NULL;
        return sb_fail(SB_ERR_ARG, "sb_nn_dropout: p = %g is outside [0, 1]", (double)p);
    }
    SB_TRY(sb_module_alloc("dropout", dropout_forward, out));
    (*out)->cfg.dropout.p = p;
    (*out)->cfg.dropout.seed = seed;
    (*out)->cfg.dropout.stream = stream;
    return SB_OK;
}

/* ---- Sequential ---- */
static sb_status sequential_forward(sb_module *m, sb_graph *g, sb_variable *x, sb_variable **y) {
    sb_variable *h = x;
    for (size_t i = 0; i < m->n_children; i++) {
        sb_status s = sb_module_forward(m->children[i], g, h, &h);
        if (s != SB_OK) return s;
    }
    *y = h;
    return SB_OK;
}

sb_status sb_nn_sequential(sb_module **out, sb_module *const *children, size_t n) {
    sb_status s = sb_module_alloc("sequential", sequential_forward, out);
    if (s == SB_OK && n && !children) s = sb_fail(SB_ERR_NULL, "sb_nn_sequential: children is NULL");
    for (size_t i = 0; s == SB_OK && i < n; i++)
        if (!children[i]) s = sb_fail(SB_ERR_NULL, "sb_nn_sequential: child %zu is NULL", i);
    if (s == SB_OK) {
        (*out)->children = sb_calloc("sb_nn_sequential", n, sizeof *children); /* count checked */
        if (!(*out)->children) s = SB_ERR_NOMEM;
    }
    if (s != SB_OK) {
        for (size_t i = 0; children && i < n; i++) sb_module_free(children[i]);
        if (out && *out) { free(*out); *out = NULL; }
        return s;
    }
    memcpy((*out)->children, children, n * sizeof *children);
    (*out)->n_children = n;
    return SB_OK;
}
