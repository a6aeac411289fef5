/* samebits/loss.h - softmax, log-softmax and the losses, forward and backward.
 *
 * Every result is fixed bit for bit by docs/CONTRACT.md: row maxima,
 * sb_expf / sb_logf (correctly rounded), the canonical sum in row index
 * order, and the exact sequence of roundings written there. Inputs may
 * have any strides; outputs must have exactly the documented shape.
 */
#ifndef SAMEBITS_LOSS_H
#define SAMEBITS_LOSS_H
#include <stdbool.h>
#include <stdint.h>
#include "samebits/export.h"
#include "samebits/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sb_loss_reduction {
    SB_LOSS_NONE = 0, /* one loss per row (per element for MSE) */
    SB_LOSS_MEAN = 1, /* canonical sum / count, a 0-d tensor */
    SB_LOSS_SUM = 2   /* canonical sum, a 0-d tensor */
} sb_loss_reduction;

/* Softmax over dimension `dim` (negative counts from the end) of a float32
 * tensor of any rank; y has x's shape. A row is the n = shape[dim] elements
 * that share all other indices.
 *     m = max_j x_j (NaN if any x_j is NaN), e_j = sb_expf(x_j - m),
 *     s = canonical sum of e_j (j ascending), y_j = e_j / s.
 * A row of all -inf gives NaN (like PyTorch). */
SB_API sb_status sb_softmax_forward(const sb_tensor *x, int dim, sb_tensor *y);
/* dx_j = y_j * (dy_j - dot), dot = canonical sum of (dy_k * y_k). */
SB_API sb_status sb_softmax_backward(const sb_tensor *y, const sb_tensor *dy, int dim, sb_tensor *dx);

/* y_j = (x_j - m) - sb_logf(s), m and s as for softmax. */
SB_API sb_status sb_log_softmax_forward(const sb_tensor *x, int dim, sb_tensor *y);
/* dx_j = dy_j - sb_expf(y_j) * g, g = canonical sum of dy_k. y is the
 * forward output. */
SB_API sb_status sb_log_softmax_backward(const sb_tensor *y, const sb_tensor *dy, int dim,
                                  sb_tensor *dx);

/* Cross-entropy of logits (N, C) against class indices targets (N) of
 * dtype int32 or int64, N >= 1, C >= 1. Rows whose target equals
 * ignore_index (PyTorch's default is -100) contribute 0 and are not
 * counted; every other target must be in [0, C) (SB_ERR_RANGE otherwise).
 * label_smoothing eps in [0, 1]: row loss (1 - eps) * nll + smooth * (eps / C)
 * with smooth = -sum_j log_softmax_j. loss is 0-d for MEAN/SUM, (N) for NONE.
 * MEAN divides by the number of counted rows (0 counted rows give NaN). */
SB_API sb_status sb_cross_entropy_forward(const sb_tensor *logits, const sb_tensor *targets,
                                   sb_loss_reduction reduction, float label_smoothing,
                                   int64_t ignore_index, sb_tensor *loss);
/* dlogits (N, C) = (softmax - q) * g, q the smoothed one-hot target, g the
 * upstream gradient of the row (dloss, dloss / count, or dloss[n]: dloss is
 * 0-d for MEAN/SUM, (N) for NONE). Ignored rows get +0.0f. */
SB_API sb_status sb_cross_entropy_backward(const sb_tensor *logits, const sb_tensor *targets,
                                    sb_loss_reduction reduction, float label_smoothing,
                                    int64_t ignore_index, const sb_tensor *dloss,
                                    sb_tensor *dlogits);

/* Negative log-likelihood of log-probabilities logp (N, C): row loss
 * -logp[n, t_n]; reductions and ignore_index as for cross-entropy. */
SB_API sb_status sb_nll_loss_forward(const sb_tensor *logp, const sb_tensor *targets,
                              sb_loss_reduction reduction, int64_t ignore_index, sb_tensor *loss);
/* dlogp[n, j] = (j == t_n) ? -g : +0.0f. */
SB_API sb_status sb_nll_loss_backward(const sb_tensor *logp, const sb_tensor *targets,
                               sb_loss_reduction reduction, int64_t ignore_index,
                               const sb_tensor *dloss, sb_tensor *dlogp);

/* ---- class losses with weights and K dimensions ---------------------------
 * One entry point for cross-entropy and NLL (docs/CONTRACT.md section 11,
 * "Class weights and K-dimensional inputs"). input is (N, C) or
 * (N, C, d1, ..., dk) float32 (logits for CROSS_ENTROPY, log-probabilities
 * for NLL), every dimension >= 1; targets is (N) or (N, d1, ..., dk) int32 or
 * int64, each in [0, C) or equal to ignore_index. A row is the C entries
 * input[n, :, s...] of one target. weight (C) float32 or NULL (every class
 * weight 1). Row loss: w[t] * nll (plus the weighted smoothing term for
 * CROSS_ENTROPY); NONE: loss has targets' shape; SUM: the canonical sum in
 * row-major target order (0-d); MEAN: that sum / the canonical sum of the
 * counted rows' weights (without weight: / (float)count, as
 * sb_cross_entropy_forward). Without weight and with (N, C) input the bits
 * are those of sb_cross_entropy_* / sb_nll_loss_*. */
typedef enum sb_class_loss_kind {
    SB_LOSS_CROSS_ENTROPY = 0, /* input: logits */
    SB_LOSS_NLL = 1            /* input: log-probabilities */
} sb_class_loss_kind;

typedef struct sb_class_loss {
    sb_class_loss_kind kind;
    float label_smoothing; /* CROSS_ENTROPY only, in [0, 1]; NLL: 0 */
    int64_t ignore_index;  /* PyTorch's default is -100 */
} sb_class_loss;

SB_API sb_status sb_class_loss_forward(const sb_class_loss *params, const sb_tensor *input,
                                       const sb_tensor *targets, const sb_tensor *weight,
                                       sb_loss_reduction reduction, sb_tensor *loss);
/* dinput (input's shape): CROSS_ENTROPY (softmax * W - q) * g with q the
 * weighted smoothed one-hot and W its sum; NLL -g * w[t] at the target,
 * +0.0f elsewhere; ignored rows +0.0f. dloss has targets' shape (NONE) or
 * is 0-d. */
SB_API sb_status sb_class_loss_backward(const sb_class_loss *params, const sb_tensor *input,
                                        const sb_tensor *targets, const sb_tensor *weight,
                                        sb_loss_reduction reduction, const sb_tensor *dloss,
                                        sb_tensor *dinput);

/* Mean squared error of x against target (same shape, any rank, numel >= 1):
 * d_i = x_i - target_i, q_i = d_i * d_i; NONE: loss has x's shape, SUM/MEAN:
 * 0-d canonical sum of q in row-major order (MEAN then / (float)numel). */
SB_API sb_status sb_mse_forward(const sb_tensor *x, const sb_tensor *target, sb_loss_reduction reduction,
                         sb_tensor *loss);
/* dx_i = ((x_i - target_i) * norm) * g, norm = 2.0f / (float)numel for
 * MEAN and 2.0f otherwise, g = dloss (0-d) or dloss_i (NONE);
 * dtarget_i = -dx_i when dtarget is not NULL. */
SB_API sb_status sb_mse_backward(const sb_tensor *x, const sb_tensor *target, sb_loss_reduction reduction,
                          const sb_tensor *dloss, sb_tensor *dx, sb_tensor *dtarget);

/* ---- elementwise losses ------------------------------------------------
 * One term per element of x against target (same shape, any rank, numel >=
 * 1; exact sequences in docs/CONTRACT.md section 11, "Elementwise losses"),
 * times weight_i when a weight is given; NONE: loss has x's shape; SUM:
 * the canonical sum of the terms in row-major order (0-d); MEAN: that sum
 * / (float)numel. weight (any kind) and pos_weight (BCE_WITH_LOGITS only),
 * when not NULL, have x's shape (any strides: a broadcast view with zero
 * strides is fine). */
typedef enum sb_elementwise_loss_kind {
    SB_LOSS_MSE = 0,         /* (x - t)^2 (as sb_mse_forward) */
    SB_LOSS_L1,              /* |x - t| */
    SB_LOSS_SMOOTH_L1,       /* beta >= 0 (0: L1) */
    SB_LOSS_HUBER,           /* delta = beta > 0 */
    SB_LOSS_BCE,             /* x: probabilities in [0, 1] (SB_ERR_RANGE otherwise) */
    SB_LOSS_BCE_WITH_LOGITS, /* x: logits; pos_weight optional */
    SB_LOSS_KL_DIV           /* x: log-probabilities; t: probabilities or, with
                                log_target, log-probabilities */
} sb_elementwise_loss_kind;

typedef struct sb_elementwise_loss {
    sb_elementwise_loss_kind kind;
    float beta;      /* SMOOTH_L1's beta, HUBER's delta; finite */
    bool log_target; /* KL_DIV */
} sb_elementwise_loss;

SB_API sb_status sb_elementwise_loss_forward(const sb_elementwise_loss *params, const sb_tensor *x,
                                             const sb_tensor *target, const sb_tensor *weight,
                                             const sb_tensor *pos_weight,
                                             sb_loss_reduction reduction, sb_tensor *loss);
/* dx_i = the kind's derivative times g_i (times weight_i), g_i = dloss_i
 * (NONE), dloss (SUM) or dloss / (float)numel (MEAN); MSE keeps
 * sb_mse_backward's order. dtarget (may be NULL) = -dx for MSE, L1,
 * SMOOTH_L1 and HUBER; the other kinds have no target gradient
 * (SB_ERR_UNSUPPORTED when dtarget is given). */
SB_API sb_status sb_elementwise_loss_backward(const sb_elementwise_loss *params, const sb_tensor *x,
                                              const sb_tensor *target, const sb_tensor *weight,
                                              const sb_tensor *pos_weight,
                                              sb_loss_reduction reduction, const sb_tensor *dloss,
                                              sb_tensor *dx, sb_tensor *dtarget);

/* ---- CTC loss ------------------------------------------------------------
 * Connectionist temporal classification (docs/CONTRACT.md section 11,
 * "Connectionist temporal classification"): log_probs (T, N, C) float32
 * log-probabilities, T, N, C >= 1; targets int32/int64, padded (N, S) or the
 * N label sequences concatenated (1-D); input_lengths and target_lengths
 * (N) int32/int64 with 0 <= input_lengths[b] <= T, 0 <= target_lengths[b]
 * (<= S when padded; their sum <= targets' length when concatenated); every
 * used label in [0, C) and not blank (SB_ERR_RANGE otherwise, nothing
 * written). Item b's loss is -log p(target_b | log_probs[:in_len_b, b, :])
 * by PyTorch's alpha recursion; NONE: loss (N); SUM: the canonical sum;
 * MEAN: the canonical sum of loss_b / max(target_lengths[b], 1), / N. */
typedef struct sb_ctc_loss {
    int64_t blank;      /* in [0, C); PyTorch's default is 0 */
    bool zero_infinity; /* an infinite loss (no alignment) becomes 0, its gradient 0 */
} sb_ctc_loss;

SB_API sb_status sb_ctc_loss_forward(const sb_ctc_loss *params, const sb_tensor *log_probs,
                                     const sb_tensor *targets, const sb_tensor *input_lengths,
                                     const sb_tensor *target_lengths, sb_loss_reduction reduction,
                                     sb_tensor *loss);
/* dlog_probs (T, N, C), apart from every input: PyTorch's gradient
 * (exp(lp) - exp(log(alpha beta) + nll - lp)) * g_b for t < in_len_b, +0.0f
 * after; dloss (N) for NONE, else 0-d. */
SB_API sb_status sb_ctc_loss_backward(const sb_ctc_loss *params, const sb_tensor *log_probs,
                                      const sb_tensor *targets, const sb_tensor *input_lengths,
                                      const sb_tensor *target_lengths,
                                      sb_loss_reduction reduction, const sb_tensor *dloss,
                                      sb_tensor *dlog_probs);

#ifdef __cplusplus
}
#endif
#endif
