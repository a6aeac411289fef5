/* Autograd for max and average pooling. */
#include "core/fpenv.h"
#include "autograd/graph_internal.h"
#include "samebits/conv.h"

static sb_status pool_output(const char *fn, sb_graph *g, sb_variable *x, const sb_pool2d_params *p,
                             sb_variable **out) {
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    if (!p) return sb_fail(SB_ERR_NULL, "%s: params is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "x", x));
    if (x->value->ndim != 4) return sb_fail(SB_ERR_SHAPE, "%s: x must be (N,C,H,W)", fn);
    int64_t shape[4] = {x->value->shape[0], x->value->shape[1], 0, 0};
    SB_TRY(sb_pool2d_output_size(x->value->shape[2], x->value->shape[3], p, &shape[2], &shape[3]));
    sb_variable *in[1] = {x};
    return sb_ag_output(g, 4, shape, in, 1, out);
}

static sb_status max_pool2d_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (d[0]) SB_TRY(sb_max_pool2d_backward(n->out->grad, n->saved[0], &n->p.pool, d[0]));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_max_pool2d(sb_graph *g, sb_variable *x, const sb_pool2d_params *p, sb_variable **y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_max_pool2d";
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    sb_variable *out = NULL;
    SB_TRY(pool_output(fn, g, x, p, &out));
    sb_tensor *indices = NULL;
    SB_TRY(sb_ag_new_tensor(g, x->value->device, SB_I64, 4, out->value->shape, &indices));
    SB_TRY(sb_max_pool2d_forward(x->value, p, out->value, indices));
    sb_variable *in[1] = {x};
    sb_node *node = NULL;
    SB_TRY(sb_ag_finish(g, "max_pool2d", max_pool2d_backward, in, 1, out, y, &node));
    if (node) {
        node->saved[0] = indices;
        node->p.pool = *p;
    }
    return SB_OK;
}

static sb_status avg_pool2d_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (d[0]) SB_TRY(sb_avg_pool2d_backward(n->out->grad, &n->p.pool, d[0]));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_avg_pool2d(sb_graph *g, sb_variable *x, const sb_pool2d_params *p, sb_variable **y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_avg_pool2d";
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    sb_variable *out = NULL;
    SB_TRY(pool_output(fn, g, x, p, &out));
    SB_TRY(sb_avg_pool2d_forward(x->value, p, out->value));
    sb_variable *in[1] = {x};
    sb_node *node = NULL;
    SB_TRY(sb_ag_finish(g, "avg_pool2d", avg_pool2d_backward, in, 1, out, y, &node));
    if (node) node->p.pool = *p;
    return SB_OK;
}

/* ---- adaptive pooling: the output size is given, not derived ---- */

static sb_status adaptive_output(const char *fn, sb_graph *g, sb_variable *x, int64_t out_h,
                                 int64_t out_w, sb_variable **out) {
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "x", x));
    if (x->value->ndim != 4) return sb_fail(SB_ERR_SHAPE, "%s: x must be (N,C,H,W)", fn);
    if (out_h < 0 || out_w < 0)
        return sb_fail(SB_ERR_ARG, "%s: output size (%lld, %lld) must not be negative", fn,
                       (long long)out_h, (long long)out_w);
    int64_t shape[4] = {x->value->shape[0], x->value->shape[1], out_h, out_w};
    sb_variable *in[1] = {x};
    return sb_ag_output(g, 4, shape, in, 1, out);
}

static sb_status adaptive_max_pool2d_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (d[0]) SB_TRY(sb_adaptive_max_pool2d_backward(n->out->grad, n->saved[0], d[0]));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_adaptive_max_pool2d(sb_graph *g, sb_variable *x, int64_t out_h, int64_t out_w,
                                    sb_variable **y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_adaptive_max_pool2d";
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    sb_variable *out = NULL;
    SB_TRY(adaptive_output(fn, g, x, out_h, out_w, &out));
    sb_tensor *indices = NULL;
    SB_TRY(sb_ag_new_tensor(g, x->value->device, SB_I64, 4, out->value->shape, &indices));
    SB_TRY(sb_adaptive_max_pool2d_forward(x->value, out->value, indices));
    sb_variable *in[1] = {x};
    sb_node *node = NULL;
    SB_TRY(sb_ag_finish(g, "adaptive_max_pool2d", adaptive_max_pool2d_backward, in, 1, out, y,
                        &node));
    if (node) node->saved[0] = indices;
    return SB_OK;
}

static sb_status adaptive_avg_pool2d_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (d[0]) SB_TRY(sb_adaptive_avg_pool2d_backward(n->out->grad, d[0]));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_adaptive_avg_pool2d(sb_graph *g, sb_variable *x, int64_t out_h, int64_t out_w,
                                    sb_variable **y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_adaptive_avg_pool2d";
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    sb_variable *out = NULL;
    SB_TRY(adaptive_output(fn, g, x, out_h, out_w, &out));
    SB_TRY(sb_adaptive_avg_pool2d_forward(x->value, out->value));
    sb_variable *in[1] = {x};
    sb_node *node = NULL;
    return sb_ag_finish(g, "adaptive_avg_pool2d", adaptive_avg_pool2d_backward, in, 1, out, y,
                        &node);
}
