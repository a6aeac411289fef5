/* Reference CTC loss, forward and backward (contract: docs/CONTRACT.md
 * section 11, "Connectionist temporal classification"): PyTorch's alpha /
 * beta recursions in log space, with every log-add-exp built on the
 * correctly rounded sb_expf / sb_logf in one stated order. */
#include <math.h>
#include "samebits/math.h"
#include "core/canonical_sum.h"
#include "core/internal.h"
#include "ref/ref_ctc.h"

/* l'_s: the extended label sequence, blanks at even s. */
static int64_t label(const sb_ctc_problem *p, int64_t b, int64_t s) {
    return s % 2 == 0 ? p->blank : p->targets[p->offset[b] + s / 2];
}

/* log(e^a + e^b + e^c): m the first largest of a, b, c (a, then b if b >
 * m, then c if c > m; a NaN never wins), m = 0 when it is -inf, then
 * (sb_logf((e^(a-m) + e^(b-m)) + e^(c-m))) + m. */
static float log_add3(float a, float b, float c) {
    float m = a;
    if (b > m) m = b;
    if (c > m) m = c;
    if (m == -INFINITY) m = 0.0f;
    return sb_logf((sb_expf(a - m) + sb_expf(b - m)) + sb_expf(c - m)) + m;
}

/* log(e^a + e^b): m = a < b ? b : a, 0 when -inf. */
static float log_add2(float a, float b) {
    float m = a < b ? b : a;
    if (m == -INFINITY) m = 0.0f;
    return sb_logf(sb_expf(a - m) + sb_expf(b - m)) + m;
}

static float lp_at(const sb_ctc_problem *p, const float *log_probs, int64_t t, int64_t b,
                   int64_t c) {
    return log_probs[(t * p->N + b) * p->C + c];
}

float sb_ref_ctc_item_forward(const sb_ctc_problem *p, const float *log_probs, int64_t b,
                              float *alpha) {
    int64_t Tb = p->in_len[b], L = p->tg_len[b], S = 2 * L + 1, W = p->W;
    if (Tb == 0) return -(L == 0 ? 0.0f : -INFINITY); /* -0.0f or +inf, as PyTorch */
    for (int64_t s = 0; s < S; s++) alpha[s] = -INFINITY;
    alpha[0] = lp_at(p, log_probs, 0, b, p->blank);
    if (L > 0) alpha[1] = lp_at(p, log_probs, 0, b, label(p, b, 1));
    for (int64_t t = 1; t < Tb; t++) {
        const float *prev = alpha + (t - 1) * W;
        float *cur = alpha + t * W;
        for (int64_t s = 0; s < S; s++) {
            int64_t l = label(p, b, s);
            float a2 = s > 0 ? prev[s - 1] : -INFINITY;
            float a3 = s > 1 && label(p, b, s - 2) != l ? prev[s - 2] : -INFINITY;
            cur[s] = log_add3(prev[s], a2, a3) + lp_at(p, log_probs, t, b, l);
        }
    }
    const float *last = alpha + (Tb - 1) * W;
    if (L == 0) return -last[0];
    return -log_add2(last[2 * L], last[2 * L - 1]);
}

float sb_ref_ctc_item_grad(const sb_ctc_problem *p, const float *dloss, int64_t b) {
    if (p->reduction == SB_LOSS_NONE) return dloss[b];
    if (p->reduction == SB_LOSS_SUM) return dloss[0];
    int64_t L = p->tg_len[b] > 1 ? p->tg_len[b] : 1;
    return (dloss[0] / (float)p->N) / (float)L;
}

void sb_ref_ctc_item_backward(const sb_ctc_problem *p, const float *log_probs, int64_t b,
                              float g, float *alpha, float *beta, float *dlog_probs) {
    int64_t Tb = p->in_len[b], L = p->tg_len[b], S = 2 * L + 1, W = p->W, C = p->C, N = p->N;
    float nll = sb_ref_ctc_item_forward(p, log_probs, b, alpha);
    float *grad0 = dlog_probs + b * C; /* row t: grad0 + t * N * C */
    if (p->zero_infinity && nll == INFINITY) Tb = 0; /* the whole item gets +0 */
    for (int64_t t = 0; t < Tb; t++)
        for (int64_t c = 0; c < C; c++) grad0[t * N * C + c] = -INFINITY;
    if (Tb > 0) {
        /* beta's last row and the two alpha * beta terms it holds */
        float *bl = beta + (Tb - 1) * W;
        const float *al = alpha + (Tb - 1) * W;
        float *gl = grad0 + (Tb - 1) * N * C;
        for (int64_t s = 0; s < S; s++) bl[s] = -INFINITY;
        bl[2 * L] = lp_at(p, log_probs, Tb - 1, b, p->blank);
        gl[p->blank] = al[2 * L] + bl[2 * L];
        if (L > 0) {
            int64_t l = label(p, b, 2 * L - 1);
            bl[2 * L - 1] = lp_at(p, log_probs, Tb - 1, b, l);
            gl[l] = al[2 * L - 1] + bl[2 * L - 1];
        }
    }
    for (int64_t t = Tb - 2; t >= 0; t--) {
        const float *next = beta + (t + 1) * W;
        float *cur = beta + t * W;
        const float *at = alpha + t * W;
        float *gt = grad0 + t * N * C;
        for (int64_t s = S - 1; s >= 0; s--) {
            int64_t l = label(p, b, s);
            float b2 = s < 2 * L ? next[s + 1] : -INFINITY;
            float b3 = s < 2 * L - 1 && label(p, b, s + 2) != l ? next[s + 2] : -INFINITY;
            cur[s] = log_add3(next[s], b2, b3) + lp_at(p, log_probs, t, b, l);
            float ab = at[s] + cur[s];
            gt[l] = gt[l] == -INFINITY ? ab : log_add2(gt[l], ab);
        }
    }
    for (int64_t t = 0; t < p->T; t++)
        for (int64_t c = 0; c < C; c++) {
            float *d = grad0 + t * N * C + c;
            if (t >= Tb) { *d = 0.0f; continue; }
            float lp = lp_at(p, log_probs, t, b, c);
            *d = (sb_expf(lp) - sb_expf((*d + nll) - lp)) * g;
        }
}

void sb_ref_ctc_reduce(const sb_ctc_problem *p, const float *v, float *loss) {
    if (p->reduction == SB_LOSS_NONE) {
        for (int64_t b = 0; b < p->N; b++) loss[b] = v[b];
        return;
    }
    sb_sum_acc acc;
    sb_sum_init(&acc);
    for (int64_t b = 0; b < p->N; b++) {
        int64_t L = p->tg_len[b] > 1 ? p->tg_len[b] : 1;
        sb_sum_add(&acc, p->reduction == SB_LOSS_MEAN ? v[b] / (float)L : v[b]);
    }
    float sum = sb_sum_result(&acc);
    loss[0] = p->reduction == SB_LOSS_MEAN ? sum / (float)p->N : sum;
}

float sb_ref_ctc_item_loss(const sb_ctc_problem *p, const float *log_probs, int64_t b,
                           float *alpha) {
    float nll = sb_ref_ctc_item_forward(p, log_probs, b, alpha);
    return p->zero_infinity && nll == INFINITY ? 0.0f : nll;
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
