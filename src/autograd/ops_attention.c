/* Autograd for scaled dot-product attention (contract section 19). The
 * forward keeps its probabilities (before dropout) for the backward, which
 * redraws the dropout decisions from the same Philox key; the mask is held
 * by reference, like a loss's targets, and gets no gradient. */
#include "core/fpenv.h"
#include "autograd/graph_internal.h"
#include "samebits/attention.h"

static sb_status sdpa_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (d[0] || d[1] || d[2])
        SB_TRY(sb_sdpa_backward(n->out->grad, n->in[0]->value, n->in[1]->value, n->in[2]->value,
                                n->target, (sb_sdpa_causal)n->p.sdpa.causal, n->p.sdpa.scale,
                                n->p.sdpa.dropout_p, n->p.sdpa.seed, n->p.sdpa.stream,
                                n->p.sdpa.offset, n->saved[0], d[0], d[1], d[2]));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_sdpa(sb_graph *g, sb_variable *q, sb_variable *k, sb_variable *v,
                     const sb_tensor *mask, sb_sdpa_causal causal, float scale, float dropout_p,
                     uint64_t seed, uint64_t stream, uint64_t offset, sb_variable **y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_sdpa";
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "q", q));
    SB_TRY(sb_ag_check_var(fn, "k", k));
    SB_TRY(sb_ag_check_var(fn, "v", v));
    const sb_tensor *qt = q->value, *vt = v->value, *kt = k->value;
    if (qt->ndim < 2 || vt->ndim < 2 || kt->ndim < 2)
        return sb_fail(SB_ERR_SHAPE, "%s: q, k and v need at least 2 dimensions (got %d, %d, %d)", fn,
                       qt->ndim, kt->ndim, vt->ndim);
    // out is (..., Lq, Ev), probs (..., Lq, Lk); sb_sdpa_forward checks the rest
    int64_t shape[SB_MAX_DIMS], pshape[SB_MAX_DIMS];
    for (int a = 0; a < qt->ndim; a++) shape[a] = pshape[a] = qt->shape[a];
    shape[qt->ndim - 1] = vt->shape[vt->ndim - 1];
    pshape[qt->ndim - 1] = kt->shape[kt->ndim - 2];
    sb_variable *in[3] = {q, k, v}, *out;
    SB_TRY(sb_ag_result(g, qt->ndim, shape, in, 3, &out));
    sb_tensor *probs = NULL;
    if (out->requires_grad) SB_TRY(sb_ag_new_tensor(g, qt->device, SB_F32, qt->ndim, pshape, &probs));
    SB_TRY(sb_sdpa_forward(qt, kt, vt, mask, causal, scale, dropout_p, seed, stream, offset,
                           out->value, probs));
    sb_node *node;
    SB_TRY(sb_ag_finish(g, "sdpa", sdpa_backward, in, 3, out, y, &node));
    if (node) {
        node->saved[0] = probs;
        node->target = mask;
        node->p.sdpa.scale = scale;
        node->p.sdpa.dropout_p = dropout_p;
        node->p.sdpa.causal = (int)causal;
        node->p.sdpa.seed = seed;
        node->p.sdpa.stream = stream;
        node->p.sdpa.offset = offset;
    }
    return SB_OK;
}
