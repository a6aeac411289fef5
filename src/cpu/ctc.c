/* The CTC loss on the CPU: the reference's per-item recursions
 * (src/ref/ctc.c), one batch item per thread. Items share nothing but
 * read-only inputs (each owns its alpha/beta rows and its dlog_probs[:, b, :]
 * slices), and the reduction over items is the reference's canonical sum
 * in item order, so no bit depends on the thread count. */
#include <stdlib.h>
#include "core/internal.h"
#include "cpu/cpu.h"
#include "cpu/ops_internal.h"

typedef struct ctc_job {
    const sb_ctc_problem *p;
    const float *log_probs, *dloss;
    float *work, *out;
} ctc_job;

static void forward_range(void *vjob, int64_t b0, int64_t b1) {
    const ctc_job *job = vjob;
    const sb_ctc_problem *p = job->p;
    for (int64_t b = b0; b < b1; b++)
        job->out[b] = sb_ref_ctc_item_loss(p, job->log_probs, b, job->work + b * p->R * p->W);
}

static void backward_range(void *vjob, int64_t b0, int64_t b1) {
    const ctc_job *job = vjob;
    const sb_ctc_problem *p = job->p;
    int64_t block = p->R * p->W;
    for (int64_t b = b0; b < b1; b++) {
        float *alpha = job->work + 2 * b * block;
        sb_ref_ctc_item_backward(p, job->log_probs, b, sb_ref_ctc_item_grad(p, job->dloss, b),
                                 alpha, alpha + block, job->out);
    }
}

sb_status sb_cpu_ctc_loss_forward(const sb_ctc_problem *p, const float *log_probs, float *loss) {
    /* the sizes were checked against overflow by src/ops/ctc.c */
    float *work = sb_malloc("sb_ctc_loss_forward",
                            (size_t)(p->N * p->R * p->W + p->N) * sizeof *work);
    if (!work) return SB_ERR_NOMEM;
    float *v = work + p->N * p->R * p->W;
    ctc_job job = {.p = p, .log_probs = log_probs, .work = work, .out = v};
    sb_parallel_for(p->N, 1, forward_range, &job);
    sb_ref_ctc_reduce(p, v, loss);
    free(work);
    return SB_OK;
}

sb_status sb_cpu_ctc_loss_backward(const sb_ctc_problem *p, const float *log_probs,
                                   const float *dloss, float *dlog_probs) {
    float *work = sb_malloc("sb_ctc_loss_backward",
                            (size_t)(2 * p->N * p->R * p->W) * sizeof *work);
    if (!work) return SB_ERR_NOMEM;
    ctc_job job = {.p = p, .log_probs = log_probs, .dloss = dloss, .work = work,
                   .out = dlog_probs};
    sb_parallel_for(p->N, 1, backward_range, &job);
    free(work);
    return SB_OK;
}
