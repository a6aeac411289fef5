/* Reference cross-entropy, NLL and the elementwise losses (MSE, L1,
 * smooth L1, Huber, BCE, BCE with logits, KL divergence), forward and backward
 * (contract: docs/CONTRACT.md).
 *
 * Reductions: the per-row (per-element for MSE) losses, ignored rows as
 * +0.0f in their own positions, are summed by the canonical sum in index
 * order, so SUM is exactly the canonical sum of the NONE output and MEAN
 * is that sum divided once by the count. */
#include "samebits/loss.h"
#include "samebits/math.h"
#include "core/canonical_sum.h"
#include "core/internal.h"
#include "ref/ref_loss.h"
#include "ref/loss_terms.h"

static float reduce_finish(const sb_sum_acc *acc, int64_t count, sb_loss_reduction reduction) {
    float sum = sb_sum_result(acc);
    return reduction == SB_LOSS_MEAN ? sum / (float)count : sum;
}

static int64_t counted_rows(const int64_t *targets, int64_t N, int64_t ignore_index) {
    int64_t count = 0;
    for (int64_t r = 0; r < N; r++) count += targets[r] != ignore_index;
    return count;
}

/* The upstream gradient of one row: a per-row value for NONE, the scalar
 * for SUM, the scalar divided by the count for MEAN (one division, shared). */
static float row_grad(const float *dloss, int64_t r, sb_loss_reduction reduction,
                      float mean_grad) {
    if (reduction == SB_LOSS_NONE) return dloss[r];
    return reduction == SB_LOSS_MEAN ? mean_grad : dloss[0];
}

/* One cross-entropy row: the log-softmax lp_j = (x_j - m) - log(s) at the
 * target, plus eps/C times -(sum_j lp_j) when smoothing. eps == 0 skips the
 * smoothing term entirely, so a -inf logit cannot turn 0 * inf into NaN. */
static float cross_entropy_row(const float *x, int64_t C, int64_t t, float eps, float eps_c) {
    float m, s;
    sb_ref_softmax_row_stats(x, C, 1, &m, &s);
    float ls = sb_logf(s);
    float nll = -((x[t] - m) - ls);
    if (eps == 0.0f) return nll;
    sb_sum_acc acc;
    sb_sum_init(&acc);
    for (int64_t j = 0; j < C; j++) sb_sum_add(&acc, (x[j] - m) - ls);
    float smooth = -sb_sum_result(&acc);
    return (1.0f - eps) * nll + smooth * eps_c;
}

/* Shared by cross-entropy (logits) and NLL (log-probabilities). */
static void rows_forward(const float *a, const int64_t *targets, int64_t N, int64_t C,
                         sb_loss_reduction reduction, bool logits, float eps,
                         int64_t ignore_index, float *loss) {
    float eps_c = eps / (float)C;
    sb_sum_acc acc;
    sb_sum_init(&acc);
    for (int64_t r = 0; r < N; r++) {
        int64_t t = targets[r];
        float v = 0.0f;
        if (t != ignore_index)
            v = logits ? cross_entropy_row(a + r * C, C, t, eps, eps_c) : -a[r * C + t];
        if (reduction == SB_LOSS_NONE) loss[r] = v;
        else sb_sum_add(&acc, v);
    }
    if (reduction != SB_LOSS_NONE)
        loss[0] = reduce_finish(&acc, counted_rows(targets, N, ignore_index), reduction);
}

void sb_ref_cross_entropy_forward(const float *logits, const int64_t *targets, int64_t N,
                                  int64_t C, sb_loss_reduction reduction, float label_smoothing,
                                  int64_t ignore_index, float *loss) {
    rows_forward(logits, targets, N, C, reduction, true, label_smoothing, ignore_index, loss);
}

void sb_ref_nll_loss_forward(const float *logp, const int64_t *targets, int64_t N, int64_t C,
                             sb_loss_reduction reduction, int64_t ignore_index, float *loss) {
    rows_forward(logp, targets, N, C, reduction, false, 0.0f, ignore_index, loss);
}

static float mean_grad_of(const float *dloss, const int64_t *targets, int64_t N,
                          sb_loss_reduction reduction, int64_t ignore_index) {
    if (reduction != SB_LOSS_MEAN) return 0.0f;
    return dloss[0] / (float)counted_rows(targets, N, ignore_index);
}

void sb_ref_cross_entropy_backward(const float *logits, const int64_t *targets, int64_t N,
                                   int64_t C, sb_loss_reduction reduction, float label_smoothing,
                                   int64_t ignore_index, const float *dloss, float *dlogits) {
    float eps = label_smoothing;
    float eps_c = eps / (float)C;
    float q_target = (1.0f - eps) + eps_c; /* smoothed one-hot: target entry */
    float mean_grad = mean_grad_of(dloss, targets, N, reduction, ignore_index);
    for (int64_t r = 0; r < N; r++) {
        const float *x = logits + r * C;
        float *dx = dlogits + r * C;
        int64_t t = targets[r];
        if (t == ignore_index) {
            for (int64_t j = 0; j < C; j++) dx[j] = 0.0f;
            continue;
        }
        float g = row_grad(dloss, r, reduction, mean_grad);
        float m, s;
        sb_ref_softmax_row_stats(x, C, 1, &m, &s);
        for (int64_t j = 0; j < C; j++) {
            float p = sb_expf(x[j] - m) / s;
            float q = j == t ? q_target : eps_c;
            dx[j] = (p - q) * g;
        }
    }
}

void sb_ref_nll_loss_backward(const float *logp, const int64_t *targets, int64_t N, int64_t C,
                              sb_loss_reduction reduction, int64_t ignore_index,
                              const float *dloss, float *dlogp) {
    (void)logp; /* the gradient does not depend on the values */
    float mean_grad = mean_grad_of(dloss, targets, N, reduction, ignore_index);
    for (int64_t r = 0; r < N; r++) {
        int64_t t = targets[r];
        float g = t == ignore_index ? 0.0f : row_grad(dloss, r, reduction, mean_grad);
        for (int64_t j = 0; j < C; j++) dlogp[r * C + j] = 0.0f;
        if (t != ignore_index) dlogp[r * C + t] = -g;
    }
}

void sb_ref_elementwise_loss_forward(const sb_elementwise_loss *p, const float *x,
                                     const float *y, const float *w, const float *pw, int64_t n,
                                     sb_loss_reduction reduction, float *loss) {
    sb_sum_acc acc;
    sb_sum_init(&acc);
    for (int64_t i = 0; i < n; i++) {
        float q = sb_loss_term(p, x[i], y[i], pw != NULL, pw ? pw[i] : 1.0f);
        if (w) q = q * w[i];
        if (reduction == SB_LOSS_NONE) loss[i] = q;
        else sb_sum_add(&acc, q);
    }
    if (reduction != SB_LOSS_NONE) loss[0] = reduce_finish(&acc, n, reduction);
}

void sb_ref_elementwise_loss_backward(const sb_elementwise_loss *p, const float *x,
                                      const float *y, const float *w, const float *pw, int64_t n,
                                      sb_loss_reduction reduction, const float *dloss, float *dx,
                                      float *dy) {
    /* MSE: PyTorch's order, (x - y) * norm, then * upstream. The others
     * take the upstream gradient divided once by the count for MEAN. */
    float norm = reduction == SB_LOSS_MEAN ? 2.0f / (float)n : 2.0f;
    float mean_grad = reduction == SB_LOSS_MEAN ? dloss[0] / (float)n : 0.0f;
    for (int64_t i = 0; i < n; i++) {
        float g = reduction == SB_LOSS_NONE ? dloss[i] : dloss[0];
        if (p->kind != SB_LOSS_MSE && reduction == SB_LOSS_MEAN) g = mean_grad;
        float v = sb_loss_grad(p, x[i], y[i], pw != NULL, pw ? pw[i] : 1.0f, g, norm);
        if (w) v = v * w[i];
        dx[i] = v;
        if (dy) dy[i] = -v;
    }
}
