/* Autograd for softmax and log-softmax over one dim: the forward output is
 * what both backward rules read (contract sections 11 and 16). */
#include "core/fpenv.h"
#include "autograd/graph_internal.h"
#include "samebits/loss.h"

static sb_status softmax_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (d[0]) {
        if (n->p.s.b0)
            SB_TRY(sb_log_softmax_backward(n->out->value, n->out->grad, (int)n->p.s.i0, d[0]));
        else
            SB_TRY(sb_softmax_backward(n->out->value, n->out->grad, (int)n->p.s.i0, d[0]));
    }
    return sb_ag_commit(g, n, d);
}

static sb_status softmax_forward(const char *fn, const char *name, sb_graph *g, sb_variable *x,
                                 int dim, bool log, sb_variable **y) {
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "x", x));
    sb_variable *in[1] = {x}, *out;
    SB_TRY(sb_ag_result(g, x->value->ndim, x->value->shape, in, 1, &out));
    if (log) SB_TRY(sb_log_softmax_forward(x->value, dim, out->value));
    else SB_TRY(sb_softmax_forward(x->value, dim, out->value));
    sb_node *node;
    SB_TRY(sb_ag_finish(g, name, softmax_backward, in, 1, out, y, &node));
    if (node) {
        node->p.s.i0 = dim;
        node->p.s.b0 = log;
    }
    return SB_OK;
}

sb_status sb_ag_softmax(sb_graph *g, sb_variable *x, int dim, sb_variable **y) {
    SB_FPENV_GUARD();
    return softmax_forward("sb_ag_softmax", "softmax", g, x, dim, false, y);
}

sb_status sb_ag_log_softmax(sb_graph *g, sb_variable *x, int dim, sb_variable **y) {
    SB_FPENV_GUARD();
    return softmax_forward("sb_ag_log_softmax", "log_softmax", g, x, dim, true, y);
}
