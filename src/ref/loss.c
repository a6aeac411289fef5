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

/* The upstream gradient of one row: a per-row value for NONE, the scalar
 * for SUM, the scalar divided by the divisor for MEAN (one division, shared). */
static float row_grad(const float *dloss, int64_t r, sb_loss_reduction reduction,
                      float mean_grad) {
    if (reduction == SB_LOSS_NONE) return dloss[r];
    return reduction == SB_LOSS_MEAN ? mean_grad : dloss[0];
}

/* Without a weight tensor every class weighs 1.0f: w * v is then v bit for
 * bit, so the weighted formulas reproduce the unweighted ones. */
static float class_weight(const sb_class_problem *p, int64_t c) {
    return p->weight ? p->weight[c] : 1.0f;
}

/* One row's loss: NLL w_t * -x_t; cross-entropy the log-softmax lp_j =
 * (x_j - m) - log(s) at the target times w_t, plus eps/C times -(sum_j w_j *
 * lp_j) when smoothing. eps == 0 skips the smoothing term entirely, so a
 * -inf logit cannot turn 0 * inf into NaN. */
float sb_ref_class_row_loss(const sb_class_problem *p, const float *x, int64_t stride,
                            int64_t t) {
    float w_t = class_weight(p, t);
    if (!p->logits) return w_t * -x[t * stride];
    int64_t C = p->C;
    float m, s;
    sb_ref_softmax_row_stats(x, C, stride, &m, &s);
    float ls = sb_logf(s);
    float nll = w_t * -((x[t * stride] - m) - ls);
    if (p->eps == 0.0f) return nll;
    sb_sum_acc acc;
    sb_sum_init(&acc);
    for (int64_t j = 0; j < C; j++) sb_sum_add(&acc, class_weight(p, j) * ((x[j * stride] - m) - ls));
    float smooth = -sb_sum_result(&acc);
    return (1.0f - p->eps) * nll + smooth * (p->eps / (float)C);
}

/* MEAN's divisor: (float)count without weights; with weights the canonical
 * sum, in row order, of w[t_r], an ignored row adding +0.0f in its place. */
float sb_ref_class_mean_divisor(const sb_class_problem *p, const int64_t *targets) {
    int64_t rows = p->N * p->inner, count = 0;
    sb_sum_acc acc;
    sb_sum_init(&acc);
    for (int64_t r = 0; r < rows; r++) {
        bool counted = targets[r] != p->ignore_index;
        count += counted;
        if (p->weight) sb_sum_add(&acc, counted ? p->weight[targets[r]] : 0.0f);
    }
    return p->weight ? sb_sum_result(&acc) : (float)count;
}

void sb_ref_class_loss_forward(const sb_class_problem *p, const float *input,
                               const int64_t *targets, float *loss) {
    int64_t C = p->C, inner = p->inner, rows = p->N * inner;
    sb_sum_acc acc;
    sb_sum_init(&acc);
    for (int64_t r = 0; r < rows; r++) {
        const float *x = input + (r / inner) * C * inner + r % inner; /* row r, stride inner */
        int64_t t = targets[r];
        float v = t == p->ignore_index ? 0.0f : sb_ref_class_row_loss(p, x, inner, t);
        if (p->reduction == SB_LOSS_NONE) loss[r] = v;
        else sb_sum_add(&acc, v);
    }
    if (p->reduction == SB_LOSS_SUM) loss[0] = sb_sum_result(&acc);
    if (p->reduction == SB_LOSS_MEAN) loss[0] = sb_sum_result(&acc) / sb_ref_class_mean_divisor(p, targets);
}

/* Cross-entropy's gradient row: q the weighted smoothed one-hot target,
 *   q_t = (1 - eps) * w_t + c * w_t,  q_j = c * w_j  (c = eps / C; eps == 0:
 *   q_t = w_t, q_j = +0), W = sum of q: 1 without weights, w_t when eps ==
 *   0, (1 - eps) * w_t + c * S otherwise (S the canonical sum of w),
 *   dx_j = (p_j * W - q_j) * g. */
static void cross_entropy_grad_row(const sb_class_problem *p, const float *x, int64_t stride,
                                   int64_t t, float g, float S, float *dx) {
    int64_t C = p->C;
    float eps = p->eps, c = eps / (float)C, w_t = class_weight(p, t);
    float q_t = eps == 0.0f ? w_t : (1.0f - eps) * w_t + c * w_t;
    float W = !p->weight ? 1.0f : eps == 0.0f ? w_t : (1.0f - eps) * w_t + c * S;
    float m, s;
    sb_ref_softmax_row_stats(x, C, stride, &m, &s);
    for (int64_t j = 0; j < C; j++) {
        float pj = sb_expf(x[j * stride] - m) / s;
        float q = j == t ? q_t : eps == 0.0f ? 0.0f : c * class_weight(p, j);
        dx[j * stride] = (pj * W - q) * g;
    }
}

void sb_ref_class_loss_backward(const sb_class_problem *p, const float *input,
                                const int64_t *targets, const float *dloss, float *dinput) {
    int64_t C = p->C, inner = p->inner, rows = p->N * inner;
    float mean_grad =
        p->reduction == SB_LOSS_MEAN ? dloss[0] / sb_ref_class_mean_divisor(p, targets) : 0.0f;
    float S = 0.0f; /* the weights' canonical sum, only where W needs it */
    if (p->logits && p->weight && p->eps != 0.0f) {
        sb_sum_acc acc;
        sb_sum_init(&acc);
        for (int64_t j = 0; j < C; j++) sb_sum_add(&acc, p->weight[j]);
        S = sb_sum_result(&acc);
    }
    for (int64_t r = 0; r < rows; r++) {
        int64_t at = (r / inner) * C * inner + r % inner;
        float *dx = dinput + at;
        int64_t t = targets[r];
        for (int64_t j = 0; j < C; j++) dx[j * inner] = 0.0f;
        if (t == p->ignore_index) continue;
        float g = row_grad(dloss, r, p->reduction, mean_grad);
        if (p->logits) cross_entropy_grad_row(p, input + at, inner, t, g, S, dx);
        else dx[t * inner] = -g * class_weight(p, t);
    }
}

/* The unweighted (N, C) entry points: the general kernels with no weight
 * and one position per row. */
static sb_class_problem plain(bool logits, int64_t N, int64_t C, sb_loss_reduction reduction,
                              float eps, int64_t ignore_index) {
    return (sb_class_problem){.logits = logits, .N = N, .C = C, .inner = 1,
                              .reduction = reduction, .eps = eps, .ignore_index = ignore_index};
}

void sb_ref_cross_entropy_forward(const float *logits, const int64_t *targets, int64_t N,
                                  int64_t C, sb_loss_reduction reduction, float label_smoothing,
                                  int64_t ignore_index, float *loss) {
    sb_class_problem p = plain(true, N, C, reduction, label_smoothing, ignore_index);
    sb_ref_class_loss_forward(&p, logits, targets, loss);
}

void sb_ref_nll_loss_forward(const float *logp, const int64_t *targets, int64_t N, int64_t C,
                             sb_loss_reduction reduction, int64_t ignore_index, float *loss) {
    sb_class_problem p = plain(false, N, C, reduction, 0.0f, ignore_index);
    sb_ref_class_loss_forward(&p, logp, targets, loss);
}

void sb_ref_cross_entropy_backward(const float *logits, const int64_t *targets, int64_t N,
                                   int64_t C, sb_loss_reduction reduction, float label_smoothing,
                                   int64_t ignore_index, const float *dloss, float *dlogits) {
    sb_class_problem p = plain(true, N, C, reduction, label_smoothing, ignore_index);
    sb_ref_class_loss_backward(&p, logits, targets, dloss, dlogits);
}

void sb_ref_nll_loss_backward(const float *logp, const int64_t *targets, int64_t N, int64_t C,
                              sb_loss_reduction reduction, int64_t ignore_index,
                              const float *dloss, float *dlogp) {
    sb_class_problem p = plain(false, N, C, reduction, 0.0f, ignore_index);
    sb_ref_class_loss_backward(&p, logp, targets, dloss, dlogp);
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
