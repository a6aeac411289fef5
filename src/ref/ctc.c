/* Reference CTC loss, forward and backward (contract: docs/CONTRACT.md
 * section 11, "Connectionist temporal classification"): PyTorch's alpha /
 * beta recursions in log space, with every log-add-exp built on the
 * correctly rounded sb_expf / sb_logf in one stated order. */
#include "ref/ref_ctc.h"
#include "ref/ctc_item.h"

/* The item recursions, the item's gradient and the reductions are
 * src/ref/ctc_item.h, one text with the OpenCL kernel. */

float sb_ref_ctc_item_forward(const sb_ctc_problem *p, const float *log_probs, int64_t b,
                              float *alpha) {
    return sb_ctc_item_forward(p, log_probs, b, alpha);
}

float sb_ref_ctc_item_grad(const sb_ctc_problem *p, const float *dloss, int64_t b) {
    return sb_ctc_item_grad(p, dloss, b);
}

void sb_ref_ctc_item_backward(const sb_ctc_problem *p, const float *log_probs, int64_t b,
                              float g, float *alpha, float *beta, float *dlog_probs) {
    sb_ctc_item_backward(p, log_probs, b, g, alpha, beta, dlog_probs);
}

void sb_ref_ctc_reduce(const sb_ctc_problem *p, const float *v, float *loss) {
    sb_ctc_reduce(p, v, loss);
}

float sb_ref_ctc_item_loss(const sb_ctc_problem *p, const float *log_probs, int64_t b,
                           float *alpha) {
    return sb_ctc_item_loss(p, log_probs, b, alpha);
}

void sb_ref_ctc_loss_forward(const sb_ctc_problem *p, const float *log_probs, float *work,
                             float *loss) {
    float *v = work + p->R * p->W; /* one alpha block, then the N values */
    for (int64_t b = 0; b < p->N; b++)
        v[b] = sb_ref_ctc_item_loss(p, log_probs, b, work);
    sb_ref_ctc_reduce(p, v, loss);
}

void sb_ref_ctc_loss_backward(const sb_ctc_problem *p, const float *log_probs,
                              const float *dloss, float *work, float *dlog_probs) {
    float *alpha = work, *beta = work + p->R * p->W;
    for (int64_t b = 0; b < p->N; b++)
        sb_ref_ctc_item_backward(p, log_probs, b, sb_ref_ctc_item_grad(p, dloss, b), alpha, beta,
                                 dlog_probs);
}
