/* Autograd for batch, layer, RMS and group norm: the forward saves mean and rstd
 * so the backward rule reuses exactly the forward's statistics. */
#include "core/fpenv.h"
#include "autograd/graph_internal.h"
#include "samebits/norm.h"

static sb_status batch_norm_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    SB_TRY(sb_batch_norm_backward(n->out->grad, n->in[0]->value, n->in[1] ? n->in[1]->value : NULL,
                                  n->saved[0], n->saved[1], n->p.s.b0, d[0], d[1], d[2]));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_batch_norm(sb_graph *g, sb_variable *x, sb_variable *gamma, sb_variable *beta,
                           sb_tensor *running_mean, sb_tensor *running_var, bool training,
                           float momentum, float eps, sb_variable **y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_batch_norm";
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "x", x));
    if (x->value->ndim < 2) return sb_fail(SB_ERR_SHAPE, "%s: x needs at least 2 dims (N, C, ...)", fn);
    sb_variable *in[3] = {x, gamma, beta}, *out;
    SB_TRY(sb_ag_result(g, x->value->ndim, x->value->shape, in, 3, &out));
    sb_tensor *mean, *rstd;
    SB_TRY(sb_ag_new_tensor(g, x->value->device, SB_F32, 1, &x->value->shape[1], &mean));
    SB_TRY(sb_ag_new_tensor(g, x->value->device, SB_F32, 1, &x->value->shape[1], &rstd));
    SB_TRY(sb_batch_norm_forward(x->value, gamma ? gamma->value : NULL, beta ? beta->value : NULL,
                                 running_mean, running_var, training, momentum, eps, out->value,
                                 mean, rstd));
    sb_node *node;
    SB_TRY(sb_ag_finish(g, "batch_norm", batch_norm_backward, in, 3, out, y, &node));
    if (node) {
        node->saved[0] = mean;
        node->saved[1] = rstd;
        node->p.s.b0 = training;
    }
    return SB_OK;
}

static sb_status layer_norm_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    SB_TRY(sb_layer_norm_backward(n->out->grad, n->in[0]->value, (int)n->p.s.i0,
                                  n->in[1] ? n->in[1]->value : NULL, n->saved[0], n->saved[1],
                                  d[0], d[1], d[2]));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_layer_norm(sb_graph *g, sb_variable *x, int normalized_ndim, sb_variable *gamma,
                           sb_variable *beta, float eps, sb_variable **y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_layer_norm";
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "x", x));
    if (normalized_ndim < 1 || normalized_ndim > x->value->ndim)
        return sb_fail(SB_ERR_ARG, "%s: normalized_ndim %d is outside 1..%d", fn, normalized_ndim,
                       x->value->ndim);
    int rows_ndim = x->value->ndim - normalized_ndim;
    sb_variable *in[3] = {x, gamma, beta}, *out;
    SB_TRY(sb_ag_result(g, x->value->ndim, x->value->shape, in, 3, &out));
    sb_tensor *mean, *rstd;
    SB_TRY(sb_ag_new_tensor(g, x->value->device, SB_F32, rows_ndim, x->value->shape, &mean));
    SB_TRY(sb_ag_new_tensor(g, x->value->device, SB_F32, rows_ndim, x->value->shape, &rstd));
    SB_TRY(sb_layer_norm_forward(x->value, normalized_ndim, gamma ? gamma->value : NULL,
                                 beta ? beta->value : NULL, eps, out->value, mean, rstd));
    sb_node *node;
    SB_TRY(sb_ag_finish(g, "layer_norm", layer_norm_backward, in, 3, out, y, &node));
    if (node) {
        node->saved[0] = mean;
        node->saved[1] = rstd;
        node->p.s.i0 = normalized_ndim;
    }
    return SB_OK;
}

static sb_status rms_norm_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    SB_TRY(sb_rms_norm_backward(n->out->grad, n->in[0]->value, (int)n->p.s.i0,
                                n->in[1] ? n->in[1]->value : NULL, n->saved[0], d[0], d[1]));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_rms_norm(sb_graph *g, sb_variable *x, int normalized_ndim, sb_variable *weight,
                         float eps, sb_variable **y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_rms_norm";
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "x", x));
    if (normalized_ndim < 1 || normalized_ndim > x->value->ndim)
        return sb_fail(SB_ERR_ARG, "%s: normalized_ndim %d is outside 1..%d", fn, normalized_ndim,
                       x->value->ndim);
    int rows_ndim = x->value->ndim - normalized_ndim;
    sb_variable *in[2] = {x, weight}, *out;
    SB_TRY(sb_ag_result(g, x->value->ndim, x->value->shape, in, 2, &out));
    sb_tensor *rrms;
    SB_TRY(sb_ag_new_tensor(g, x->value->device, SB_F32, rows_ndim, x->value->shape, &rrms));
    SB_TRY(sb_rms_norm_forward(x->value, normalized_ndim, weight ? weight->value : NULL, eps,
                               out->value, rrms));
    sb_node *node;
    SB_TRY(sb_ag_finish(g, "rms_norm", rms_norm_backward, in, 2, out, y, &node));
    if (node) {
        node->saved[0] = rrms;
        node->p.s.i0 = normalized_ndim;
    }
    return SB_OK;
}

static sb_status group_norm_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    SB_TRY(sb_group_norm_backward(n->out->grad, n->in[0]->value, n->p.s.i0,
                                  n->in[1] ? n->in[1]->value : NULL, n->saved[0], n->saved[1],
                                  d[0], d[1], d[2]));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_group_norm(sb_graph *g, sb_variable *x, int64_t groups, sb_variable *gamma,
                           sb_variable *beta, float eps, sb_variable **y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_group_norm";
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "x", x));
    if (x->value->ndim < 2) return sb_fail(SB_ERR_SHAPE, "%s: x needs at least 2 dims (N, C, ...)", fn);
    if (groups < 1 || x->value->shape[1] % groups != 0)
        return sb_fail(SB_ERR_ARG, "%s: groups = %lld must be >= 1 and divide C = %lld", fn,
                       (long long)groups, (long long)x->value->shape[1]);
    sb_variable *in[3] = {x, gamma, beta}, *out;
    SB_TRY(sb_ag_result(g, x->value->ndim, x->value->shape, in, 3, &out));
    const int64_t stat[2] = {x->value->shape[0], groups};
    sb_tensor *mean, *rstd;
    SB_TRY(sb_ag_new_tensor(g, x->value->device, SB_F32, 2, stat, &mean));
    SB_TRY(sb_ag_new_tensor(g, x->value->device, SB_F32, 2, stat, &rstd));
    SB_TRY(sb_group_norm_forward(x->value, groups, gamma ? gamma->value : NULL,
                                 beta ? beta->value : NULL, eps, out->value, mean, rstd));
    sb_node *node;
    SB_TRY(sb_ag_finish(g, "group_norm", group_norm_backward, in, 3, out, y, &node));
    if (node) {
        node->saved[0] = mean;
        node->saved[1] = rstd;
        node->p.s.i0 = groups;
    }
    return SB_OK;
}
