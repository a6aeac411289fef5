/* Autograd for the index family: index_select, gather and the embedding
 * lookup. The index is held by reference, like a loss's targets; the
 * backward is the tensor-level scatter-add into the input's gradient, in
 * ascending source position (contract section 18). */
#include "core/fpenv.h"
#include "autograd/graph_internal.h"
#include "samebits/index.h"

/* Checks the common arguments and wraps dim into [0, ndim) (0-dim x: 0). */
static sb_status check_args(const char *fn, sb_graph *g, sb_variable *x, int dim,
                            const sb_tensor *index, sb_variable **y, int *d) {
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "x", x));
    SB_TRY(sb_check_tensor(fn, "index", index, SB_I64, -1));
    int nd = x->value->ndim ? x->value->ndim : 1;
    if (dim < -nd || dim >= nd)
        return sb_fail(SB_ERR_ARG, "%s: dim = %d is out of range for x with %d dimensions", fn,
                       dim, x->value->ndim);
    *d = dim < 0 ? dim + nd : dim;
    return SB_OK;
}

static sb_status index_select_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (d[0]) SB_TRY(sb_index_select_backward(n->out->grad, (int)n->p.s.i0, n->target, d[0]));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_index_select(sb_graph *g, sb_variable *x, int dim, const sb_tensor *index,
                             sb_variable **y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_index_select";
    int d;
    SB_TRY(check_args(fn, g, x, dim, index, y, &d));
    // y is x's shape with numel(index) along dim
    int64_t shape[SB_MAX_DIMS];
    for (int k = 0; k < x->value->ndim; k++) shape[k] = x->value->shape[k];
    if (x->value->ndim) shape[d] = sb_tensor_numel(index);
    sb_variable *in[1] = {x}, *out;
    SB_TRY(sb_ag_output(g, x->value->ndim, shape, in, 1, &out));
    SB_TRY(sb_index_select(x->value, d, index, out->value));
    sb_node *node;
    SB_TRY(sb_ag_finish(g, "index_select", index_select_backward, in, 1, out, y, &node));
    if (node) {
        node->target = index;
        node->p.s.i0 = d;
    }
    return SB_OK;
}

static sb_status gather_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (d[0]) SB_TRY(sb_gather_backward(n->out->grad, (int)n->p.s.i0, n->target, d[0]));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_gather(sb_graph *g, sb_variable *x, int dim, const sb_tensor *index,
                       sb_variable **y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_gather";
    int d;
    SB_TRY(check_args(fn, g, x, dim, index, y, &d));
    sb_variable *in[1] = {x}, *out;
    SB_TRY(sb_ag_output(g, index->ndim, index->shape, in, 1, &out));
    SB_TRY(sb_gather(x->value, d, index, out->value));
    sb_node *node;
    SB_TRY(sb_ag_finish(g, "gather", gather_backward, in, 1, out, y, &node));
    if (node) {
        node->target = index;
        node->p.s.i0 = d;
    }
    return SB_OK;
}

static sb_status embedding_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (d[0]) SB_TRY(sb_embedding_backward(n->out->grad, n->target, n->p.s.i0, d[0]));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_embedding(sb_graph *g, sb_variable *weight, const sb_tensor *indices,
                          int64_t padding_idx, sb_variable **y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_embedding";
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "weight", weight));
    SB_TRY(sb_check_tensor(fn, "weight", weight->value, SB_F32, 2));
    SB_TRY(sb_check_tensor(fn, "indices", indices, SB_I64, -1));
    if (indices->ndim >= SB_MAX_DIMS)
        return sb_fail(SB_ERR_SHAPE, "%s: indices have %d dims; at most %d", fn, indices->ndim,
                       SB_MAX_DIMS - 1);
    int64_t num = weight->value->shape[0];
    if (padding_idx != SB_NO_PADDING && (padding_idx < -num || padding_idx >= num))
        return sb_fail(SB_ERR_ARG, "%s: padding_idx = %lld is outside [-%lld, %lld)", fn,
                       (long long)padding_idx, (long long)num, (long long)num);
    // y is indices.shape + (D)
    int64_t shape[SB_MAX_DIMS];
    for (int k = 0; k < indices->ndim; k++) shape[k] = indices->shape[k];
    shape[indices->ndim] = weight->value->shape[1];
    sb_variable *in[1] = {weight}, *out;
    SB_TRY(sb_ag_output(g, indices->ndim + 1, shape, in, 1, &out));
    SB_TRY(sb_embedding_forward(weight->value, indices, out->value));
    sb_node *node;
    SB_TRY(sb_ag_finish(g, "embedding", embedding_backward, in, 1, out, y, &node));
    if (node) {
        node->target = indices;
        node->p.s.i0 = padding_idx;
    }
    return SB_OK;
}
