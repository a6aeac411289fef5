/* Autograd for activations, flatten and broadcasting add. */
#include "core/fpenv.h"
#include "autograd/graph_internal.h"
#include "samebits/elementwise.h"

typedef enum { ACT_RELU, ACT_TANH, ACT_SIGMOID, ACT_GELU, ACT_GELU_TANH } activation;

static sb_status activation_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (!d[0]) return SB_OK;
    const sb_tensor *x = n->in[0]->value, *y = n->out->value, *dy = n->out->grad;
    switch ((activation)n->p.s.i0) {
    case ACT_RELU: SB_TRY(sb_relu_backward(x, dy, d[0])); break;
    case ACT_TANH: SB_TRY(sb_tanh_backward(y, dy, d[0])); break;
    case ACT_SIGMOID: SB_TRY(sb_sigmoid_backward(y, dy, d[0])); break;
    case ACT_GELU: SB_TRY(sb_gelu_backward(x, dy, false, d[0])); break;
    case ACT_GELU_TANH: SB_TRY(sb_gelu_backward(x, dy, true, d[0])); break;
    }
    return sb_ag_commit(g, n, d);
}

static sb_status activation_forward(const char *fn, sb_graph *g, sb_variable *x, activation kind,
                                    sb_variable **y) {
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "x", x));
    sb_variable *in[1] = {x}, *out;
    SB_TRY(sb_ag_output(g, x->value->ndim, x->value->shape, in, 1, &out));
    switch (kind) {
    case ACT_RELU: SB_TRY(sb_relu_forward(x->value, out->value)); break;
    case ACT_TANH: SB_TRY(sb_tanh_forward(x->value, out->value)); break;
    case ACT_SIGMOID: SB_TRY(sb_sigmoid_forward(x->value, out->value)); break;
    case ACT_GELU: SB_TRY(sb_gelu_forward(x->value, false, out->value)); break;
    case ACT_GELU_TANH: SB_TRY(sb_gelu_forward(x->value, true, out->value)); break;
    }
    sb_node *node;
    SB_TRY(sb_ag_finish(g, fn, activation_backward, in, 1, out, y, &node));
    if (node) node->p.s.i0 = kind;
    return SB_OK;
}

sb_status sb_ag_relu(sb_graph *g, sb_variable *x, sb_variable **y) {
    SB_FPENV_GUARD();
    return activation_forward("sb_ag_relu", g, x, ACT_RELU, y);
}
sb_status sb_ag_tanh(sb_graph *g, sb_variable *x, sb_variable **y) {
    SB_FPENV_GUARD();
    return activation_forward("sb_ag_tanh", g, x, ACT_TANH, y);
}
sb_status sb_ag_sigmoid(sb_graph *g, sb_variable *x, sb_variable **y) {
    SB_FPENV_GUARD();
    return activation_forward("sb_ag_sigmoid", g, x, ACT_SIGMOID, y);
}
sb_status sb_ag_gelu(sb_graph *g, sb_variable *x, bool approximate_tanh, sb_variable **y) {
    SB_FPENV_GUARD();
    return activation_forward("sb_ag_gelu", g, x, approximate_tanh ? ACT_GELU_TANH : ACT_GELU, y);
}

/* dst = src, both contiguous with the same number of elements (shapes may
 * differ), on one device. */
static sb_status copy_dense(sb_tensor *dst, const sb_tensor *src) {
    if (dst->device == SB_DEVICE_CPU) {
        memcpy(dst->data, src->data, (size_t)sb_tensor_numel(dst) * sizeof(float));
        return SB_OK;
    }
    sb_tensor *view = NULL; /* src seen with dst's shape */
    SB_TRY(sb_tensor_reshape(&view, src, dst->ndim, dst->shape));
    sb_status st = sb_tensor_copy(dst, view);
    sb_tensor_free(view);
    return st;
}

/* Flatten copies (the copy is exact) so that every graph value is a
 * contiguous arena tensor; its backward copies the gradient back. */
static sb_status flatten_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (d[0]) SB_TRY(copy_dense(d[0], n->out->grad));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_flatten(sb_graph *g, sb_variable *x, int start_dim, int end_dim, sb_variable **y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_flatten";
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "x", x));
    SB_TRY(sb_check_tensor(fn, "x", x->value, SB_F32, -1));
    SB_TRY(sb_check_contiguous(fn, "x", x->value));
    sb_tensor *view;
    SB_TRY(sb_tensor_flatten(&view, x->value, start_dim, end_dim));
    sb_variable *in[1] = {x}, *out;
    sb_status s = sb_ag_output(g, view->ndim, view->shape, in, 1, &out);
    sb_tensor_free(view);
    SB_TRY(s);
    SB_TRY(copy_dense(out->value, x->value));
    return sb_ag_finish(g, "flatten", flatten_backward, in, 1, out, y, NULL);
}

static sb_status add_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (d[0] || d[1])
        SB_TRY(sb_binary_backward(SB_BINARY_ADD, n->out->grad, n->in[0]->value, n->in[1]->value, d[0], d[1]));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_add(sb_graph *g, sb_variable *a, sb_variable *b, sb_variable **y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_add";
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "a", a));
    SB_TRY(sb_ag_check_var(fn, "b", b));
    /* broadcast shape: right-aligned, 1 stretches */
    const sb_tensor *ta = a->value, *tb = b->value;
    int nd = ta->ndim > tb->ndim ? ta->ndim : tb->ndim;
    int64_t shape[SB_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        int ia = i - (nd - ta->ndim), ib = i - (nd - tb->ndim);
        int64_t da = ia >= 0 ? ta->shape[ia] : 1, db = ib >= 0 ? tb->shape[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return sb_fail(SB_ERR_SHAPE, "%s: shapes do not broadcast at dim %d (%lld vs %lld)", fn, i,
                           (long long)da, (long long)db);
        shape[i] = da == 1 ? db : da;
    }
    sb_variable *in[2] = {a, b}, *out;
    SB_TRY(sb_ag_output(g, nd, shape, in, 2, &out));
    SB_TRY(sb_add(ta, tb, out->value));
    return sb_ag_finish(g, "add", add_backward, in, 2, out, y, NULL);
}
