/* src/ref/ref_ctc.h - the reference CTC loss (contract section 11,
 * "Connectionist temporal classification"), over raw buffers (internal; the
 * public API is sb_ctc_loss_* in samebits/loss.h). The tensor-level wrapper
 * in src/ops/ctc.c validates everything first. */
#ifndef SAMEBITS_REF_CTC_H
#define SAMEBITS_REF_CTC_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/loss.h"

/* A checked CTC problem. log_probs is (T, N, C) contiguous; item b has
 * in_len[b] <= R <= T time steps and tg_len[b] labels, targets[offset[b] +
 * i], each in [0, C) and not blank. An item's alpha (and beta) block is R
 * rows of W = 2 * S_max + 1 floats (S_max >= every tg_len[b], R >= 1). */
typedef struct sb_ctc_problem {
    int64_t T, N, C, R, W, blank;
    bool zero_infinity;
    sb_loss_reduction reduction;
    const int64_t *in_len, *tg_len, *offset, *targets;
} sb_ctc_problem;

/* Item b alone (the unit of work of every implementation). alpha (and
 * beta) hold R * W floats of scratch. Returns the item's negative
 * log-likelihood, before zero_infinity. */
float sb_ref_ctc_item_forward(const sb_ctc_problem *p, const float *log_probs, int64_t b,
                              float *alpha);
/* The item's value: its nll, +0.0f instead of +inf under zero_infinity. */
float sb_ref_ctc_item_loss(const sb_ctc_problem *p, const float *log_probs, int64_t b,
                           float *alpha);
/* Writes dlog_probs[t, b, :] for every t (rows t >= in_len[b] are +0.0f),
 * g the item's upstream gradient. */
void sb_ref_ctc_item_backward(const sb_ctc_problem *p, const float *log_probs, int64_t b,
                              float g, float *alpha, float *beta, float *dlog_probs);
/* The reductions of the per-item values v (N): NONE copies them, SUM and
 * MEAN as the contract states. */
void sb_ref_ctc_reduce(const sb_ctc_problem *p, const float *v, float *loss);
/* Item b's upstream gradient from dloss (N values for NONE, else one). */
float sb_ref_ctc_item_grad(const sb_ctc_problem *p, const float *dloss, int64_t b);

/* The whole loss, item after item; work holds N * R * W + N floats
 * (forward) or 2 * N * R * W (backward): each item's alpha and beta rows,
 * the per-item values. loss: N values for NONE, else one. */
void sb_ref_ctc_loss_forward(const sb_ctc_problem *p, const float *log_probs, float *work,
                             float *loss);
void sb_ref_ctc_loss_backward(const sb_ctc_problem *p, const float *log_probs,
                              const float *dloss, float *work, float *dlog_probs);

#endif
