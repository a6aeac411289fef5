/* Autograd for the GEMM family: matmul, linear, conv2d and conv_transpose2d. */
#include "core/fpenv.h"
#include "autograd/graph_internal.h"
#include "samebits/conv.h"
#include "samebits/linalg.h"

static sb_status matmul_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (d[0] || d[1])
        SB_TRY(sb_matmul_backward(n->out->grad, n->in[0]->value, n->in[1]->value, n->p.s.b0,
                                  n->p.s.i0 != 0, d[0], d[1]));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_matmul(sb_graph *g, sb_variable *a, sb_variable *b, bool trans_a, bool trans_b,
                       sb_variable **y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_matmul";
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "a", a));
    SB_TRY(sb_ag_check_var(fn, "b", b));
    const sb_tensor *ta = a->value, *tb = b->value;
    if (ta->ndim < 2 || ta->ndim > 3 || tb->ndim < 2 || tb->ndim > 3 ||
        (ta->ndim == 3 && tb->ndim == 3 && ta->shape[0] != tb->shape[0]))
        return sb_fail(SB_ERR_SHAPE, "%s: a and b must be 2-D or 3-D (one 3-D operand, or two "
                       "with the same batch size); got %d-D and %d-D", fn, ta->ndim, tb->ndim);
    // out is (M, N), or (B, M, N) when an operand is batched; sb_matmul checks K
    int64_t m = ta->shape[ta->ndim - (trans_a ? 1 : 2)];
    int64_t n = tb->shape[tb->ndim - (trans_b ? 2 : 1)];
    int64_t shape[3];
    int nd = ta->ndim == 3 || tb->ndim == 3 ? 3 : 2;
    if (nd == 3) shape[0] = ta->ndim == 3 ? ta->shape[0] : tb->shape[0];
    shape[nd - 2] = m;
    shape[nd - 1] = n;
    sb_variable *in[2] = {a, b}, *out;
    SB_TRY(sb_ag_result(g, nd, shape, in, 2, &out));
    SB_TRY(sb_matmul(ta, tb, trans_a, trans_b, out->value));
    sb_node *node;
    SB_TRY(sb_ag_finish(g, "matmul", matmul_backward, in, 2, out, y, &node));
    if (node) {
        node->p.s.b0 = trans_a;
        node->p.s.i0 = trans_b;
    }
    return SB_OK;
}

static sb_status linear_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    SB_TRY(sb_linear_backward(n->out->grad, n->in[0]->value, n->in[1]->value, d[0], d[1], d[2]));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_linear(sb_graph *g, sb_variable *x, sb_variable *w, sb_variable *b, sb_variable **y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_linear";
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "x", x));
    SB_TRY(sb_ag_check_var(fn, "w", w));
    if (b) SB_TRY(sb_ag_check_var(fn, "b", b));
    if (x->value->ndim < 1 || w->value->ndim != 2)
        return sb_fail(SB_ERR_SHAPE, "%s: x needs >= 1 dims and w exactly 2", fn);
    int64_t shape[SB_MAX_DIMS];
    memcpy(shape, x->value->shape, sizeof shape);
    shape[x->value->ndim - 1] = w->value->shape[0];
    sb_variable *in[3] = {x, w, b}, *out;
    SB_TRY(sb_ag_result(g, x->value->ndim, shape, in, 3, &out));
    SB_TRY(sb_linear_forward(x->value, w->value, b ? b->value : NULL, out->value));
    return sb_ag_finish(g, "linear", linear_backward, in, 3, out, y, NULL);
}

static sb_status conv2d_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    SB_TRY(sb_conv2d_backward(n->out->grad, n->in[0]->value, n->in[1]->value, &n->p.conv, d[0], d[1],
                              d[2]));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_conv2d(sb_graph *g, sb_variable *x, sb_variable *w, sb_variable *b, const sb_conv2d_params *p,
                       sb_variable **y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_conv2d";
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    if (!p) return sb_fail(SB_ERR_NULL, "%s: params is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "x", x));
    SB_TRY(sb_ag_check_var(fn, "w", w));
    if (b) SB_TRY(sb_ag_check_var(fn, "b", b));
    if (x->value->ndim != 4 || w->value->ndim != 4)
        return sb_fail(SB_ERR_SHAPE, "%s: x (N,C,H,W) and w (O,C/groups,KH,KW) need 4 dims", fn);
    int64_t shape[4] = {x->value->shape[0], w->value->shape[0], 0, 0};
    SB_TRY(sb_conv2d_output_size(x->value->shape[2], x->value->shape[3], w->value->shape[2],
                                 w->value->shape[3], p, &shape[2], &shape[3]));
    sb_variable *in[3] = {x, w, b}, *out;
    SB_TRY(sb_ag_result(g, 4, shape, in, 3, &out));
    SB_TRY(sb_conv2d_forward(x->value, w->value, b ? b->value : NULL, p, out->value));
    sb_node *node;
    SB_TRY(sb_ag_finish(g, "conv2d", conv2d_backward, in, 3, out, y, &node));
    if (node) node->p.conv = *p;
    return SB_OK;
}

static sb_status conv_transpose2d_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    SB_TRY(sb_conv_transpose2d_backward(n->out->grad, n->in[0]->value, n->in[1]->value,
                                        &n->p.conv_t, d[0], d[1], d[2]));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_conv_transpose2d(sb_graph *g, sb_variable *x, sb_variable *w, sb_variable *b,
                                 const sb_conv_transpose2d_params *p, sb_variable **y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_conv_transpose2d";
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    if (!p) return sb_fail(SB_ERR_NULL, "%s: params is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "x", x));
    SB_TRY(sb_ag_check_var(fn, "w", w));
    if (b) SB_TRY(sb_ag_check_var(fn, "b", b));
    if (x->value->ndim != 4 || w->value->ndim != 4)
        return sb_fail(SB_ERR_SHAPE, "%s: x (N,C,H,W) and w (C,O/groups,KH,KW) need 4 dims", fn);
    /* O = w's dim 1 times groups; the forward call validates the rest */
    int64_t shape[4] = {x->value->shape[0], 0, 0, 0};
    if (p->groups < 1 || p->groups > INT32_MAX || w->value->shape[1] > INT64_MAX / p->groups)
        return sb_fail(SB_ERR_ARG, "%s: params->groups = %lld is out of range for w", fn,
                       (long long)p->groups);
    shape[1] = w->value->shape[1] * p->groups;
    SB_TRY(sb_conv_transpose2d_output_size(x->value->shape[2], x->value->shape[3],
                                           w->value->shape[2], w->value->shape[3], p, &shape[2],
                                           &shape[3]));
    sb_variable *in[3] = {x, w, b}, *out;
    SB_TRY(sb_ag_output(g, 4, shape, in, 3, &out));
    SB_TRY(sb_conv_transpose2d_forward(x->value, w->value, b ? b->value : NULL, p, out->value));
    sb_node *node;
    SB_TRY(sb_ag_finish(g, "conv_transpose2d", conv_transpose2d_backward, in, 3, out, y, &node));
    if (node) node->p.conv_t = *p;
    return SB_OK;
}
