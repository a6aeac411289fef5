/* Autograd for dropout and the losses. */
#include "core/fpenv.h"
#include "autograd/graph_internal.h"
#include "samebits/dropout.h"
#include "samebits/loss.h"

static sb_status dropout_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (d[0]) SB_TRY(sb_dropout_backward(n->out->grad, n->saved[0], n->p.s.f0, n->p.s.b0, d[0]));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_dropout(sb_graph *g, sb_variable *x, float p, bool training, uint64_t seed,
                        uint64_t stream, uint64_t offset, sb_variable **y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_dropout";
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    *y = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "x", x));
    sb_variable *in[1] = {x}, *out;
    SB_TRY(sb_ag_output(g, x->value->ndim, x->value->shape, in, 1, &out));
    sb_tensor *mask;
    SB_TRY(sb_ag_temp(g, x->value, &mask));
    SB_TRY(sb_dropout_forward(x->value, p, training, seed, stream, offset, out->value, mask));
    sb_node *node;
    SB_TRY(sb_ag_finish(g, "dropout", dropout_backward, in, 1, out, y, &node));
    if (node) {
        node->saved[0] = mask;
        node->p.s.f0 = p;
        node->p.s.b0 = training;
    }
    return SB_OK;
}

/* The loss value is 0-d for MEAN and SUM, (N) for NONE. */
static sb_status loss_output(sb_graph *g, sb_variable *input, sb_loss_reduction reduction, sb_variable **out) {
    sb_variable *in[1] = {input};
    int64_t n = input->value->ndim ? input->value->shape[0] : 1;
    return reduction == SB_LOSS_NONE ? sb_ag_output(g, 1, &n, in, 1, out)
                                     : sb_ag_output(g, 0, NULL, in, 1, out);
}

static sb_status cross_entropy_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (d[0])
        SB_TRY(sb_cross_entropy_backward(n->in[0]->value, n->target, (sb_loss_reduction)n->p.s.i0,
                                         n->p.s.f0, n->p.s.i1, n->out->grad, d[0]));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_cross_entropy(sb_graph *g, sb_variable *logits, const sb_tensor *targets,
                              sb_loss_reduction reduction, float label_smoothing, sb_variable **loss) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_cross_entropy";
    if (!loss) return sb_fail(SB_ERR_NULL, "%s: loss is NULL", fn);
    *loss = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "logits", logits));
    const int64_t ignore_index = -100; /* PyTorch's default */
    sb_variable *out;
    SB_TRY(loss_output(g, logits, reduction, &out));
    SB_TRY(sb_cross_entropy_forward(logits->value, targets, reduction, label_smoothing, ignore_index,
                                    out->value));
    sb_variable *in[1] = {logits};
    sb_node *node;
    SB_TRY(sb_ag_finish(g, "cross_entropy", cross_entropy_backward, in, 1, out, loss, &node));
    if (node) {
        node->target = targets;
        node->p.s.i0 = reduction;
        node->p.s.i1 = ignore_index;
        node->p.s.f0 = label_smoothing;
    }
    return SB_OK;
}

static sb_status mse_backward(sb_graph *g, sb_node *n) {
    sb_tensor *d[SB_NODE_MAX_INPUTS];
    SB_TRY(sb_ag_targets(g, n, d));
    if (d[0])
        SB_TRY(sb_mse_backward(n->in[0]->value, n->target, (sb_loss_reduction)n->p.s.i0,
                               n->out->grad, d[0], NULL));
    return sb_ag_commit(g, n, d);
}

sb_status sb_ag_mse(sb_graph *g, sb_variable *x, const sb_tensor *target, sb_loss_reduction reduction,
                    sb_variable **loss) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ag_mse";
    if (!loss) return sb_fail(SB_ERR_NULL, "%s: loss is NULL", fn);
    *loss = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "x", x));
    sb_variable *out, *in[1] = {x};
    if (reduction == SB_LOSS_NONE) SB_TRY(sb_ag_output(g, x->value->ndim, x->value->shape, in, 1, &out));
    else SB_TRY(sb_ag_output(g, 0, NULL, in, 1, &out));
    SB_TRY(sb_mse_forward(x->value, target, reduction, out->value));
    sb_node *node;
    SB_TRY(sb_ag_finish(g, "mse", mse_backward, in, 1, out, loss, &node));
    if (node) {
        node->target = target;
        node->p.s.i0 = reduction;
    }
    return SB_OK;
}
