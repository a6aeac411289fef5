/* Autograd for sum and mean over dims (contract sections 10 and 16): the
 * forward is sb_sum / sb_mean, the backward sb_sum_backward /
 * sb_mean_backward, which broadcast dy back over the reduced axes. */
#include "core/fpenv.h"
#include "autograd/graph_internal.h"
#include "samebits/reduce.h"

/* The reduced axes as a bit mask (ndims == 0: all), checked as reduce.h
 * states: in range (negative counts from the end), none repeated. */
static sb_status reduced_mask(const char *fn, const sb_tensor *x, const int *dims, int ndims,
                              unsigned *mask) {
    int nd = x->ndim ? x->ndim : 1; /* a 0-dim input takes dims 0 and -1 */
    if (ndims < 0 || ndims > nd || (ndims > 0 && !dims))
        return sb_fail(SB_ERR_ARG, "%s: ndims = %d with dims %s for x with %d dimensions", fn,
                       ndims, dims ? "given" : "NULL", x->ndim);
    *mask = ndims == 0 ? (1u << nd) - 1u : 0u;
    for (int i = 0; i < ndims; i++) {
        int d = dims[i] < 0 ? dims[i] + nd : dims[i];
        if (d < 0 || d >= nd)
            return sb_fail(SB_ERR_ARG, "%s: dims[%d] = %d is out of range for x with %d "
                           "dimensions", fn, i, dims[i], x->ndim);
        if (*mask & (1u << d))
            return sb_fail(SB_ERR_ARG, "%s: dims[%d] = %d repeats an axis", fn, i, dims[i]);
        *mask |= 1u << d;
    }
    return SB_OK;
}

/* dims (ascending) of a mask; returns their number. */
static int dims_of(unsigned mask, int nd, int dims[SB_MAX_DIMS]) {
    int k = 0;
    for (int d = 0; d < nd; d++)
        if (mask & (1u << d)) dims[k++] = d;
    return k;
}

static sb_status reduce_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (d[0]) {
        const sb_tensor *x = n->in[0]->value;
        int dims[SB_MAX_DIMS];
        int k = dims_of((unsigned)n->p.s.i0, x->ndim ? x->ndim : 1, dims);
        if (n->p.s.i1) SB_TRY(sb_mean_backward(n->out->grad, dims, k, n->p.s.b0, d[0]));
        else SB_TRY(sb_sum_backward(n->out->grad, dims, k, n->p.s.b0, d[0]));
    }
    return sb_ag_commit(g, n, d);
}

static sb_status reduce_forward(const char *fn, const char *name, bool mean, sb_graph *g,
                                sb_variable *x, const int *dims, int ndims, bool keepdim,
                                sb_variable **y) {
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "x", x));
    unsigned mask = 0;
    SB_TRY(reduced_mask(fn, x->value, dims, ndims, &mask));
    // y: x's shape with the reduced axes kept as 1 (keepdim) or removed
    int64_t shape[SB_MAX_DIMS];
    int ynd = 0;
    for (int d = 0; d < x->value->ndim; d++) {
        if (!(mask & (1u << d))) shape[ynd++] = x->value->shape[d];
        else if (keepdim) shape[ynd++] = 1;
    }
    sb_variable *in[1] = {x}, *out;
    SB_TRY(sb_ag_output(g, ynd, shape, in, 1, &out));
    if (mean) SB_TRY(sb_mean(x->value, dims, ndims, keepdim, out->value));
    else SB_TRY(sb_sum(x->value, dims, ndims, keepdim, out->value));
    sb_node *node;
    SB_TRY(sb_ag_finish(g, name, reduce_backward, in, 1, out, y, &node));
    if (node) {
        node->p.s.i0 = mask;
        node->p.s.i1 = mean;
        node->p.s.b0 = keepdim;
    }
    return SB_OK;
}

sb_status sb_ag_sum(sb_graph *g, sb_variable *x, const int *dims, int ndims, bool keepdim,
                    sb_variable **y) {
    SB_FPENV_GUARD();
    return reduce_forward("sb_ag_sum", "sum", false, g, x, dims, ndims, keepdim, y);
}

sb_status sb_ag_mean(sb_graph *g, sb_variable *x, const int *dims, int ndims, bool keepdim,
                     sb_variable **y) {
    SB_FPENV_GUARD();
    return reduce_forward("sb_ag_mean", "mean", true, g, x, dims, ndims, keepdim, y);
}
