/* Autograd for the elementwise binary ops with broadcasting (add, sub, mul,
 * div, maximum, minimum): one parameterised op. The forward is sb_binary,
 * the backward sb_binary_backward, which sums a broadcast input's gradient
 * back to its shape with sb_reduce_to_shape (contract sections 9 and 16). */
#include "core/fpenv.h"
#include "autograd/graph_internal.h"
#include "samebits/elementwise.h"

static sb_status binary_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (d[0] || d[1])
        SB_TRY(sb_binary_backward((sb_binary_op)n->p.s.i0, n->out->grad, n->in[0]->value,
                                  n->in[1]->value, d[0], d[1]));
    return sb_ag_commit(g, n, d);
}

/* y = a op b, recorded under `name`. */
static sb_status binary_forward(const char *fn, const char *name, sb_graph *g, sb_binary_op op,
                                sb_variable *a, sb_variable *b, sb_variable **y) {
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    if ((int)op < (int)SB_BINARY_ADD || (int)op > (int)SB_BINARY_POW)
        return sb_fail(SB_ERR_ARG, "%s: op = %d is not an sb_binary_op", fn, (int)op);
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
    SB_TRY(sb_ag_result(g, nd, shape, in, 2, &out));
    SB_TRY(sb_binary(op, ta, tb, out->value));
    sb_node *node;
    SB_TRY(sb_ag_finish(g, name, binary_backward, in, 2, out, y, &node));
    if (node) node->p.s.i0 = op;
    return SB_OK;
}

sb_status sb_ag_binary(sb_graph *g, sb_binary_op op, sb_variable *a, sb_variable *b,
                       sb_variable **y) {
    SB_FPENV_GUARD();
    return binary_forward("sb_ag_binary", "binary", g, op, a, b, y);
}

sb_status sb_ag_add(sb_graph *g, sb_variable *a, sb_variable *b, sb_variable **y) {
    SB_FPENV_GUARD();
    return binary_forward("sb_ag_add", "add", g, SB_BINARY_ADD, a, b, y);
}
