/* Autograd for the activations. */
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
    SB_TRY(sb_ag_result(g, x->value->ndim, x->value->shape, in, 1, &out));
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
