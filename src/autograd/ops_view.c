/* Autograd for the ops that only move bits: flatten, reshape, transpose.
 * Each output is a contiguous copy (the copy is exact), so every graph value
 * is a dense arena tensor the next op can take; the backward moves the
 * gradient back the same way (contract section 16: no arithmetic). */
#include "core/fpenv.h"
#include "autograd/graph_internal.h"

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

static sb_status copy_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (d[0]) SB_TRY(copy_dense(d[0], n->out->grad));
    return sb_ag_commit(g, n, d);
}

/* The common start: y NULL-checked and cleared, graph and x checked, x a
 * contiguous float32 tensor. */
static sb_status check_args(const char *fn, sb_graph *g, sb_variable *x, sb_variable **y) {
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "x", x));
    SB_TRY(sb_check_tensor(fn, "x", x->value, SB_F32, -1));
    return sb_check_contiguous(fn, "x", x->value);
}

/* y = a copy of x with view's shape (view: x seen with another shape). */
static sb_status copy_as(sb_graph *g, const char *name, sb_variable *x, sb_tensor *view,
                         sb_variable **y) {
    sb_variable *in[1] = {x}, *out;
    sb_status s = sb_ag_result(g, view->ndim, view->shape, in, 1, &out);
    sb_tensor_free(view);
    SB_TRY(s);
    SB_TRY(copy_dense(out->value, x->value));
    return sb_ag_finish(g, name, copy_backward, in, 1, out, y, NULL);
}

sb_status sb_ag_flatten(sb_graph *g, sb_variable *x, int start_dim, int end_dim, sb_variable **y) {
    SB_FPENV_GUARD();
    SB_TRY(check_args("sb_ag_flatten", g, x, y));
    sb_tensor *view;
    SB_TRY(sb_tensor_flatten(&view, x->value, start_dim, end_dim));
    return copy_as(g, "flatten", x, view, y);
}

sb_status sb_ag_reshape(sb_graph *g, sb_variable *x, int ndim, const int64_t *shape,
                        sb_variable **y) {
    SB_FPENV_GUARD();
    SB_TRY(check_args("sb_ag_reshape", g, x, y));
    sb_tensor *view;
    SB_TRY(sb_tensor_reshape(&view, x->value, ndim, shape));
    return copy_as(g, "reshape", x, view, y);
}

/* The transposed copy; its backward copies dy transposed back. */
static sb_status transpose_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (d[0]) {
        sb_tensor *back;
        SB_TRY(sb_tensor_transpose(&back, n->out->grad, (int)n->p.s.i0, (int)n->p.s.i1));
        sb_status s = sb_tensor_copy(d[0], back);
        sb_tensor_free(back);
        SB_TRY(s);
    }
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_transpose(sb_graph *g, sb_variable *x, int dim0, int dim1, sb_variable **y) {
    SB_FPENV_GUARD();
    SB_TRY(check_args("sb_ag_transpose", g, x, y));
    sb_tensor *view;
    SB_TRY(sb_tensor_transpose(&view, x->value, dim0, dim1));
    sb_variable *in[1] = {x}, *out;
    sb_status s = sb_ag_result(g, view->ndim, view->shape, in, 1, &out);
    if (s == SB_OK) s = sb_tensor_copy(out->value, view);
    sb_tensor_free(view);
    SB_TRY(s);
    sb_node *node;
    SB_TRY(sb_ag_finish(g, "transpose", transpose_backward, in, 1, out, y, &node));
    if (node) {
        /* negative dims as the view took them: wrapped once here */
        int nd = x->value->ndim;
        node->p.s.i0 = dim0 < 0 ? dim0 + nd : dim0;
        node->p.s.i1 = dim1 < 0 ? dim1 + nd : dim1;
    }
    return SB_OK;
}
