/* src/ref/ref_loss.h - raw-buffer reference kernels for softmax,
 * log-softmax, the losses and dropout (internal; the public API is
 * samebits/loss.h and samebits/dropout.h). These kernels ARE the contract of
 * docs/CONTRACT.md. They take contiguous buffers, validate nothing
 * and never fail; the tensor-level wrappers in src/ops/ check arguments. */
#ifndef SAMEBITS_REF_LOSS_H
#define SAMEBITS_REF_LOSS_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/loss.h"
#include "samebits/dropout.h"

/* ---- softmax family: src/ref/softmax.c ----
 * x, y, dy, dx are (outer, n, inner) contiguous; a row is the n elements
 * x[(o * n + j) * inner + k], j = 0..n-1, for fixed (o, k). */
void sb_ref_softmax_forward(const float *x, int64_t outer, int64_t n, int64_t inner, float *y);
void sb_ref_softmax_backward(const float *y, const float *dy, int64_t outer, int64_t n,
                             int64_t inner, float *dx);
void sb_ref_log_softmax_forward(const float *x, int64_t outer, int64_t n, int64_t inner,
                                float *y);
void sb_ref_log_softmax_backward(const float *y, const float *dy, int64_t outer, int64_t n,
                                 int64_t inner, float *dx);

/* The two row statistics every softmax-based op shares: m = max (first
 * NaN wins, NaN propagates) and s = canonical sum of sb_expf(x_j - m). */
void sb_ref_softmax_row_stats(const float *x, int64_t n, int64_t stride, float *m, float *s);

/* ---- losses: src/ref/loss.c ----
 * logits / logp / dlogits are (N, C) contiguous; targets (N) are already
 * range-checked (each is ignore_index or in [0, C)). loss and dloss hold N
 * values for SB_LOSS_NONE and one value otherwise. */
void sb_ref_cross_entropy_forward(const float *logits, const int64_t *targets, int64_t N,
                                  int64_t C, sb_loss_reduction reduction, float label_smoothing,
                                  int64_t ignore_index, float *loss);
void sb_ref_cross_entropy_backward(const float *logits, const int64_t *targets, int64_t N,
                                   int64_t C, sb_loss_reduction reduction, float label_smoothing,
                                   int64_t ignore_index, const float *dloss, float *dlogits);
void sb_ref_nll_loss_forward(const float *logp, const int64_t *targets, int64_t N, int64_t C,
                             sb_loss_reduction reduction, int64_t ignore_index, float *loss);
void sb_ref_nll_loss_backward(const float *logp, const int64_t *targets, int64_t N, int64_t C,
                              sb_loss_reduction reduction, int64_t ignore_index,
                              const float *dloss, float *dlogp);
/* The general class loss (sb_class_loss_*): input (N, C, inner) contiguous,
 * row r = n * inner + k holds input[(n * C + j) * inner + k], j < C;
 * targets hold N * inner range-checked values in row order; weight is C
 * class weights or NULL (every weight 1.0f). loss / dloss hold N * inner
 * values for SB_LOSS_NONE and one otherwise. The four functions above are
 * this with weight NULL and inner 1. */
typedef struct sb_class_problem {
    bool logits;           /* cross-entropy (true) or NLL of log-probabilities */
    const float *weight;   /* (C) or NULL */
    int64_t N, C, inner;
    sb_loss_reduction reduction;
    float eps;             /* label smoothing; 0 for NLL */
    int64_t ignore_index;
} sb_class_problem;
void sb_ref_class_loss_forward(const sb_class_problem *p, const float *input,
                               const int64_t *targets, float *loss);
void sb_ref_class_loss_backward(const sb_class_problem *p, const float *input,
                                const int64_t *targets, const float *dloss, float *dinput);
/* Shared with the fast kernel: one row's value (t not ignored; x the row's
 * first entry, its entries stride apart) and the MEAN denominator. */
float sb_ref_class_row_loss(const sb_class_problem *p, const float *x, int64_t stride,
                            int64_t t);
float sb_ref_class_mean_divisor(const sb_class_problem *p, const int64_t *targets);
/* Elementwise losses (sb_elementwise_loss_*; MSE is one kind): x, y, w,
 * pw, dx, dy hold n contiguous elements; w, pw and dy may be NULL. */
void sb_ref_elementwise_loss_forward(const sb_elementwise_loss *p, const float *x,
                                     const float *y, const float *w, const float *pw, int64_t n,
                                     sb_loss_reduction reduction, float *loss);
void sb_ref_elementwise_loss_backward(const sb_elementwise_loss *p, const float *x,
                                      const float *y, const float *w, const float *pw, int64_t n,
                                      sb_loss_reduction reduction, const float *dloss, float *dx,
                                      float *dy);

/* ---- dropout: src/ref/dropout.c ---- (n contiguous elements; mask may
 * be NULL in the forward pass and in the eval-mode backward pass) */
float sb_dropout_scale(float p);
void sb_ref_dropout_forward(const float *x, int64_t n, float p, bool train, uint64_t seed,
                            uint64_t stream, uint64_t offset, float *y, float *mask);
void sb_ref_dropout_backward(const float *dy, const float *mask, int64_t n, float p, bool train,
                             float *dx);

#endif
