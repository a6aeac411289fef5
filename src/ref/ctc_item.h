/* src/ref/ctc_item.h - one batch item of the CTC loss (contract section 11,
 * "Connectionist temporal classification"; ref_ctc.h states the problem):
 * PyTorch's alpha / beta recursions in log space, every log-add-exp built
 * on the correctly rounded sb_expf / sb_logf in one stated order, the
 * item's upstream gradient and the reductions over items. One text for
 * every implementation: the reference (and through it the CPU kernels)
 * includes it as C, and the OpenCL math program embeds it before ctc.cl
 * (its #include lines are dropped there; log_probs, the index arrays, the
 * alpha / beta rows and dlog_probs are then in global memory). Not
 * installed. */
#ifndef SAMEBITS_CTC_ITEM_H
#define SAMEBITS_CTC_ITEM_H

#ifdef __OPENCL_VERSION__
#ifndef SB_OPENCL_INT64_T
#define SB_OPENCL_INT64_T
typedef long int64_t;
#endif
#define SB_CTC_MEM __global
/* sb_loss_reduction's values (include/samebits/loss.h). */
typedef int sb_loss_reduction;
#define SB_LOSS_NONE 0
#define SB_LOSS_MEAN 1
#define SB_LOSS_SUM 2
/* sb_ctc_problem (src/ref/ref_ctc.h) with its arrays in global memory. */
typedef struct sb_ctc_problem {
    long T, N, C, R, W, blank;
    bool zero_infinity;
    sb_loss_reduction reduction;
    __global const long *in_len, *tg_len, *offset, *targets;
} sb_ctc_problem;
#else
#include <math.h>
#include "samebits/math.h"
#include "core/canonical_sum.h"
#include "ref/ref_ctc.h"
#define SB_CTC_MEM
#endif

/* The canonical sum of the reductions: src/core/canonical_sum.c's
 * accumulator, or sum_acc.cl's (the same levels) on OpenCL. */
#ifdef __OPENCL_VERSION__
#define SB_CTC_SUM sb_acc
#define SB_CTC_SUM_INIT sb_acc_init
#define SB_CTC_SUM_ADD sb_acc_add
#define SB_CTC_SUM_RESULT sb_acc_result
#else
#define SB_CTC_SUM sb_sum_acc
#define SB_CTC_SUM_INIT sb_sum_init
#define SB_CTC_SUM_ADD sb_sum_add
#define SB_CTC_SUM_RESULT sb_sum_result
#endif

/* l'_s: the extended label sequence, blanks at even s. */
static inline int64_t sb_ctc_label(const sb_ctc_problem *p, int64_t b, int64_t s) {
    return s % 2 == 0 ? p->blank : p->targets[p->offset[b] + s / 2];
}

/* log(e^a + e^b + e^c): m the first largest of a, b, c (a, then b if b >
 * m, then c if c > m; a NaN never wins), m = 0 when it is -inf, then
 * (sb_logf((e^(a-m) + e^(b-m)) + e^(c-m))) + m. */
static inline float sb_ctc_log_add3(float a, float b, float c) {
    float m = a;
    if (b > m) m = b;
    if (c > m) m = c;
    if (m == -INFINITY) m = 0.0f;
    return sb_logf((sb_expf(a - m) + sb_expf(b - m)) + sb_expf(c - m)) + m;
}

/* log(e^a + e^b): m = a < b ? b : a, 0 when -inf. */
static inline float sb_ctc_log_add2(float a, float b) {
    float m = a < b ? b : a;
    if (m == -INFINITY) m = 0.0f;
    return sb_logf(sb_expf(a - m) + sb_expf(b - m)) + m;
}

static inline float sb_ctc_lp(const sb_ctc_problem *p, SB_CTC_MEM const float *log_probs,
                              int64_t t, int64_t b, int64_t c) {
    return log_probs[(t * p->N + b) * p->C + c];
}

/* sb_ref_ctc_item_forward (ref_ctc.h). */
static inline float sb_ctc_item_forward(const sb_ctc_problem *p, SB_CTC_MEM const float *log_probs,
                                        int64_t b, SB_CTC_MEM float *alpha) {
    int64_t Tb = p->in_len[b], L = p->tg_len[b], S = 2 * L + 1, W = p->W;
    if (Tb == 0) return -(L == 0 ? 0.0f : -INFINITY); /* -0.0f or +inf, as PyTorch */
    for (int64_t s = 0; s < S; s++) alpha[s] = -INFINITY;
    alpha[0] = sb_ctc_lp(p, log_probs, 0, b, p->blank);
    if (L > 0) alpha[1] = sb_ctc_lp(p, log_probs, 0, b, sb_ctc_label(p, b, 1));
    for (int64_t t = 1; t < Tb; t++) {
        SB_CTC_MEM const float *prev = alpha + (t - 1) * W;
        SB_CTC_MEM float *cur = alpha + t * W;
        for (int64_t s = 0; s < S; s++) {
            int64_t l = sb_ctc_label(p, b, s);
            float a2 = s > 0 ? prev[s - 1] : -INFINITY;
            float a3 = s > 1 && sb_ctc_label(p, b, s - 2) != l ? prev[s - 2] : -INFINITY;
            cur[s] = sb_ctc_log_add3(prev[s], a2, a3) + sb_ctc_lp(p, log_probs, t, b, l);
        }
    }
    SB_CTC_MEM const float *last = alpha + (Tb - 1) * W;
    if (L == 0) return -last[0];
    return -sb_ctc_log_add2(last[2 * L], last[2 * L - 1]);
}

/* sb_ref_ctc_item_loss: +0.0f instead of +inf under zero_infinity. */
static inline float sb_ctc_item_loss(const sb_ctc_problem *p, SB_CTC_MEM const float *log_probs,
                                     int64_t b, SB_CTC_MEM float *alpha) {
    float nll = sb_ctc_item_forward(p, log_probs, b, alpha);
    return p->zero_infinity && nll == INFINITY ? 0.0f : nll;
}

/* sb_ref_ctc_item_grad. */
static inline float sb_ctc_item_grad(const sb_ctc_problem *p, SB_CTC_MEM const float *dloss,
                                     int64_t b) {
    if (p->reduction == SB_LOSS_NONE) return dloss[b];
    if (p->reduction == SB_LOSS_SUM) return dloss[0];
    int64_t L = p->tg_len[b] > 1 ? p->tg_len[b] : 1;
    return (dloss[0] / (float)p->N) / (float)L;
}

/* sb_ref_ctc_item_backward. */
static inline void sb_ctc_item_backward(const sb_ctc_problem *p, SB_CTC_MEM const float *log_probs,
                                        int64_t b, float g, SB_CTC_MEM float *alpha,
                                        SB_CTC_MEM float *beta, SB_CTC_MEM float *dlog_probs) {
    int64_t Tb = p->in_len[b], L = p->tg_len[b], S = 2 * L + 1, W = p->W, C = p->C, N = p->N;
    float nll = sb_ctc_item_forward(p, log_probs, b, alpha);
    SB_CTC_MEM float *grad0 = dlog_probs + b * C; /* row t: grad0 + t * N * C */
    if (p->zero_infinity && nll == INFINITY) Tb = 0; /* the whole item gets +0 */
    for (int64_t t = 0; t < Tb; t++)
        for (int64_t c = 0; c < C; c++) grad0[t * N * C + c] = -INFINITY;
    if (Tb > 0) {
        /* beta's last row and the two alpha * beta terms it holds */
        SB_CTC_MEM float *bl = beta + (Tb - 1) * W;
        SB_CTC_MEM const float *al = alpha + (Tb - 1) * W;
        SB_CTC_MEM float *gl = grad0 + (Tb - 1) * N * C;
        for (int64_t s = 0; s < S; s++) bl[s] = -INFINITY;
        bl[2 * L] = sb_ctc_lp(p, log_probs, Tb - 1, b, p->blank);
        gl[p->blank] = al[2 * L] + bl[2 * L];
        if (L > 0) {
            int64_t l = sb_ctc_label(p, b, 2 * L - 1);
            bl[2 * L - 1] = sb_ctc_lp(p, log_probs, Tb - 1, b, l);
            gl[l] = al[2 * L - 1] + bl[2 * L - 1];
        }
    }
    for (int64_t t = Tb - 2; t >= 0; t--) {
        SB_CTC_MEM const float *next = beta + (t + 1) * W;
        SB_CTC_MEM float *cur = beta + t * W;
        SB_CTC_MEM const float *at = alpha + t * W;
        SB_CTC_MEM float *gt = grad0 + t * N * C;
        for (int64_t s = S - 1; s >= 0; s--) {
            int64_t l = sb_ctc_label(p, b, s);
            float b2 = s < 2 * L ? next[s + 1] : -INFINITY;
            float b3 = s < 2 * L - 1 && sb_ctc_label(p, b, s + 2) != l ? next[s + 2] : -INFINITY;
            cur[s] = sb_ctc_log_add3(next[s], b2, b3) + sb_ctc_lp(p, log_probs, t, b, l);
            float ab = at[s] + cur[s];
            gt[l] = gt[l] == -INFINITY ? ab : sb_ctc_log_add2(gt[l], ab);
        }
    }
    for (int64_t t = 0; t < p->T; t++)
        for (int64_t c = 0; c < C; c++) {
            SB_CTC_MEM float *d = grad0 + t * N * C + c;
            if (t >= Tb) {
                *d = 0.0f;
                continue;
            }
            float lp = sb_ctc_lp(p, log_probs, t, b, c);
            *d = (sb_expf(lp) - sb_expf((*d + nll) - lp)) * g;
        }
}

/* Item b's term of the reduction, v its loss: v / max(target length, 1)
 * for MEAN, v itself otherwise. The GPU writes the terms a work-item per
 * item and sums them with its canonical sum, in item order. */
static inline float sb_ctc_item_term(const sb_ctc_problem *p, float v, int64_t b) {
    if (p->reduction != SB_LOSS_MEAN) return v;
    int64_t L = p->tg_len[b] > 1 ? p->tg_len[b] : 1;
    return v / (float)L;
}

/* sb_ref_ctc_reduce: NONE copies the losses; SUM is the canonical sum of
 * the terms in item order, MEAN that sum / (float)N. */
static inline void sb_ctc_reduce(const sb_ctc_problem *p, SB_CTC_MEM const float *v,
                                 SB_CTC_MEM float *loss) {
    if (p->reduction == SB_LOSS_NONE) {
        for (int64_t b = 0; b < p->N; b++) loss[b] = v[b];
        return;
    }
    SB_CTC_SUM acc;
    SB_CTC_SUM_INIT(&acc);
    for (int64_t b = 0; b < p->N; b++) SB_CTC_SUM_ADD(&acc, sb_ctc_item_term(p, v[b], b));
    float sum = SB_CTC_SUM_RESULT(&acc);
    loss[0] = p->reduction == SB_LOSS_MEAN ? sum / (float)p->N : sum;
}

#endif
