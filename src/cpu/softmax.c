/* The fast softmax family and cross-entropy (contract "Softmax, losses and
 * dropout"), with the exact sequences of src/ref/softmax.c and
 * src/ref/loss.c.
 *
 * Rows are independent, so they are split over threads. Inside a row the
 * terms of every canonical sum are produced a chunk at a time into a
 * buffer (exp through the batch sb_cpu_expf_sub_n, bit-identical to
 * sb_expf(x - m) with the subtraction in the vector registers) and fed to
 * the canonical sum in increasing j, so the sums see the same elements in
 * the same order as the reference's one-at-a-time stream; where the terms
 * are the output anyway (softmax and cross-entropy's gradient of a
 * contiguous row), they go straight there and the sum reads them back, and
 * a sum of the input itself (log-softmax's gradient) reads the input. The
 * row maximum's sign of zero and first-NaN rule are part of the bits (x - m
 * of -0 and +-0 differ in sign): the vector scan (the pointwise table's
 * row_max) hands rows where they matter to the scalar one. */
#include <stdlib.h>
#include <string.h>
#include "samebits/loss.h"
#include "samebits/math.h"
#include "core/internal.h"
#include "cpu/fused_internal.h"
#include "cpu/kernels.h"
#include "cpu/sum_internal.h"
#include "cpu/ops_internal.h"
#include "cpu/vmath.h"
#include "ref/ref_loss.h"

enum {
    CHUNK = 1024,      /* terms produced per batch */
    MIN_WORK = 8192    /* elements per thread range, at least */
};

/* Fills buf[0..k-1] with terms j0..j0+k-1 of a row sum. */
typedef void (*term_fn)(const void *ctx, int64_t j0, int64_t k, float *buf);

/* The canonical sum of n terms produced chunk by chunk in buf (CHUNK
 * floats, the caller's: one per row range, not a 4 KB clear per row). */
static float canonical_terms(term_fn f, const void *ctx, int64_t n, float *buf) {
    if (n <= CHUNK) {
        f(ctx, 0, n, buf);
        return sb_cpu_sum_canonical(buf, n, 1);
    }
    sb_sum_acc acc;
    sb_sum_init(&acc);
    for (int64_t j0 = 0; j0 < n; j0 += CHUNK) {
        int64_t k = n - j0 < CHUNK ? n - j0 : CHUNK;
        f(ctx, j0, k, buf);
        sb_cpu_sum_add_n(&acc, buf, k);
    }
    return sb_sum_result(&acc);
}

/* One row x[j * stride], j < n, and what its terms need. */
typedef struct row {
    const float *x, *y, *dy;
    float *out; /* exp terms are also stored here when not NULL */
    int64_t stride;
    float m, ls;
} row;

/* out[i] = a[i] op s for i < n: the
 * pointwise table's vector loops, one IEEE operation per element as the
 * scalar statements of a row would do it. */
static void with_scalar(sb_binary_op op, int64_t n, const float *a, float s, float *out) {
    sb_kernels()->pointwise->binary(op, n, a, 1, &s, 0, out);
}

/* e_j = exp(x_j - m) */
static void exp_terms(const void *vr, int64_t j0, int64_t k, float *buf) {
    const row *r = vr;
    if (r->stride == 1) {
        sb_cpu_expf_sub_n(r->x + j0, r->m, buf, k);
        if (r->out) memcpy(r->out + j0, buf, (size_t)k * sizeof *buf);
        return;
    }
    for (int64_t i = 0; i < k; i++) buf[i] = r->x[(j0 + i) * r->stride] - r->m;
    sb_cpu_expf_n(buf, buf, k);
    if (r->out)
        for (int64_t i = 0; i < k; i++) r->out[(j0 + i) * r->stride] = buf[i];
}

/* s = sum_j e_j, e_j = exp(x_j - m) also stored to r->out when it is set.
 * A contiguous row's terms go straight to the output in one pass, and the
 * canonical sum reads them there: the same terms in the same order as the
 * chunks through buf, without the copy. (out may be x: each e_j is written
 * after its x_j is read.) */
static float exp_sum(const row *r, int64_t n, float *buf) {
    if (r->stride == 1 && r->out) {
        sb_cpu_expf_sub_n(r->x, r->m, r->out, n);
        return sb_cpu_sum_canonical(r->out, n, 1);
    }
    return canonical_terms(exp_terms, r, n, buf);
}

/* lp_j = (x_j - m) - ls */
static void logp_terms(const void *vr, int64_t j0, int64_t k, float *buf) {
    const row *r = vr;
    for (int64_t i = 0; i < k; i++) buf[i] = (r->x[(j0 + i) * r->stride] - r->m) - r->ls;
}

/* dy_j * y_j */
static void dot_terms(const void *vr, int64_t j0, int64_t k, float *buf) {
    const row *r = vr;
    if (r->stride == 1) {
        sb_kernels()->pointwise->binary(SB_BINARY_MUL, k, r->dy + j0, 1, r->y + j0, 1, buf);
        return;
    }
    for (int64_t i = 0; i < k; i++) {
        int64_t at = (j0 + i) * r->stride;
        buf[i] = r->dy[at] * r->y[at];
    }
}

/* sb_ref_softmax_row_stats' maximum: first NaN wins, ties keep the first. */
static float row_max(const float *x, int64_t n, int64_t stride) {
    if (stride == 1) return sb_kernels()->pointwise->row_max(n, x);
    return sb_pwv_row_max_scalar(n, x, stride);
}

/* ---- softmax / log-softmax ---------------------------------------------------- */

typedef struct sm_job {
    const float *x, *y, *dy;
    float *out;
    int64_t outer, n, inner;
    bool log;
} sm_job;

static void sm_forward_range(void *vjob, int64_t r0, int64_t r1) {
    const sm_job *job = vjob;
    float buf[CHUNK];
    int64_t n = job->n, inner = job->inner;
    for (int64_t rr = r0; rr < r1; rr++) {
        int64_t at = (rr / inner) * n * inner + rr % inner;
        row r = {.x = job->x + at, .stride = inner};
        r.m = row_max(r.x, n, inner);
        float *y = job->out + at;
        if (job->log) {
            float s = canonical_terms(exp_terms, &r, n, buf);
            float ls = sb_logf(s);
            if (inner == 1) {
                sb_kernels()->fused->sub_sub(n, r.x, r.m, ls, y);
            } else {
                for (int64_t j = 0; j < n; j++) y[j * inner] = (r.x[j * inner] - r.m) - ls;
            }
        } else {
            r.out = y; /* e_j first, divided in place once s is known */
            float s = exp_sum(&r, n, buf);
            if (inner == 1)
                with_scalar(SB_BINARY_DIV, n, y, s, y);
            else
                for (int64_t j = 0; j < n; j++) y[j * inner] = y[j * inner] / s;
        }
    }
}

static void sm_backward_range(void *vjob, int64_t r0, int64_t r1) {
    const sm_job *job = vjob;
    int64_t n = job->n, inner = job->inner;
    float buf[CHUNK];
    for (int64_t rr = r0; rr < r1; rr++) {
        int64_t at = (rr / inner) * n * inner + rr % inner;
        row r = {.y = job->y + at, .dy = job->dy + at, .stride = inner};
        float *dx = job->out + at;
        if (job->log) {
            float g = sb_cpu_sum_canonical(r.dy, n, inner);
            /* dx_j = dy_j - exp(y_j) * g, through buf chunk by chunk: dx may
             * be y's or dy's memory */
            for (int64_t j0 = 0; j0 < n; j0 += CHUNK) {
                int64_t k = n - j0 < CHUNK ? n - j0 : CHUNK;
                if (inner == 1) {
                    sb_cpu_expf_n(r.y + j0, buf, k);
                    sb_kernels()->fused->sub_mul(k, r.dy + j0, buf, g, dx + j0);
                    continue;
                }
                for (int64_t i = 0; i < k; i++) buf[i] = r.y[(j0 + i) * inner];
                sb_cpu_expf_n(buf, buf, k);
                for (int64_t i = 0; i < k; i++) {
                    int64_t a = (j0 + i) * inner;
                    dx[a] = r.dy[a] - buf[i] * g;
                }
            }
        } else {
            float dot = canonical_terms(dot_terms, &r, n, buf);
            if (inner == 1) {
                /* one pass; dx may be y's or dy's memory (each element's
                 * inputs are read before its output is written) */
                sb_kernels()->fused->mul_sub(n, r.y, r.dy, dot, dx);
            } else {
                for (int64_t j = 0; j < n; j++)
                    dx[j * inner] = r.y[j * inner] * (r.dy[j * inner] - dot);
            }
        }
    }
}

static int64_t rows_grain(int64_t rows, int64_t n) {
    int64_t per = n > 0 ? n : 1;
    int64_t min_rows = MIN_WORK / per > 0 ? MIN_WORK / per : 1;
    return sb_parallel_grain(rows, min_rows);
}

void sb_cpu_softmax_forward(const float *x, int64_t outer, int64_t n, int64_t inner, bool log,
                            float *y) {
    sm_job job = {.x = x, .out = y, .outer = outer, .n = n, .inner = inner, .log = log};
    int64_t rows = outer * inner;
    sb_parallel_for(rows, rows_grain(rows, n), sm_forward_range, &job);
}

void sb_cpu_softmax_backward(const float *y, const float *dy, int64_t outer, int64_t n,
                             int64_t inner, bool log, float *dx) {
    sm_job job = {.y = y, .dy = dy, .out = dx, .outer = outer, .n = n, .inner = inner, .log = log};
    int64_t rows = outer * inner;
    sb_parallel_for(rows, rows_grain(rows, n), sm_backward_range, &job);
}

/* ---- cross-entropy and NLL (sb_ref_class_loss_* of src/ref/loss.c) ----------- */

typedef struct ce_job {
    const sb_class_problem *p;
    const float *input, *dloss;
    const int64_t *targets;
    float mean_grad, S; /* backward: MEAN's shared gradient, the weights' sum */
    float *out;         /* forward: one value per row; backward: dinput */
} ce_job;

/* w_j * lp_j, lp_j = (x_j - m) - ls */
static void weighted_logp_terms(const void *vr, int64_t j0, int64_t k, float *buf) {
    const row *r = vr;
    logp_terms(vr, j0, k, buf);
    if (r->y) /* the class weights */
        for (int64_t i = 0; i < k; i++) buf[i] = r->y[j0 + i] * buf[i];
}

static float class_weight(const sb_class_problem *p, int64_t c) {
    return p->weight ? p->weight[c] : 1.0f;
}

/* sb_ref_class_row_loss for cross-entropy, its sums chunked */
static float ce_row_loss(const sb_class_problem *p, const float *x, int64_t stride, int64_t t,
                         float *buf) {
    row r = {.x = x, .y = p->weight, .stride = stride};
    r.m = row_max(x, p->C, stride);
    r.ls = sb_logf(canonical_terms(exp_terms, &r, p->C, buf));
    float nll = class_weight(p, t) * -((x[t * stride] - r.m) - r.ls);
    if (p->eps == 0.0f) return nll;
    float smooth = -canonical_terms(weighted_logp_terms, &r, p->C, buf);
    return (1.0f - p->eps) * nll + smooth * (p->eps / (float)p->C);
}

static void ce_forward_range(void *vjob, int64_t r0, int64_t r1) {
    const ce_job *job = vjob;
    float buf[CHUNK];
    const sb_class_problem *p = job->p;
    int64_t C = p->C, inner = p->inner;
    for (int64_t rr = r0; rr < r1; rr++) {
        const float *x = job->input + (rr / inner) * C * inner + rr % inner;
        int64_t t = job->targets[rr];
        float v = 0.0f;
        if (t != p->ignore_index)
            v = p->logits ? ce_row_loss(p, x, inner, t, buf) : sb_ref_class_row_loss(p, x, inner, t);
        job->out[rr] = v;
    }
}

/* cross_entropy_grad_row of src/ref/loss.c */
static void ce_backward_range(void *vjob, int64_t r0, int64_t r1) {
    const ce_job *job = vjob;
    float buf[CHUNK];
    const sb_class_problem *p = job->p;
    int64_t C = p->C, inner = p->inner;
    float eps = p->eps, c = eps / (float)C;
    for (int64_t rr = r0; rr < r1; rr++) {
        int64_t at = (rr / inner) * C * inner + rr % inner;
        float *dx = job->out + at;
        int64_t t = job->targets[rr];
        if (t == p->ignore_index || !p->logits) {
            for (int64_t j = 0; j < C; j++) dx[j * inner] = 0.0f;
            if (t == p->ignore_index) continue;
        }
        float g = p->reduction == SB_LOSS_NONE ? job->dloss[rr]
                  : p->reduction == SB_LOSS_MEAN ? job->mean_grad : job->dloss[0];
        float w_t = class_weight(p, t);
        if (!p->logits) {
            dx[t * inner] = -g * w_t;
            continue;
        }
        float q_t = eps == 0.0f ? w_t : (1.0f - eps) * w_t + c * w_t;
        float W = !p->weight ? 1.0f : eps == 0.0f ? w_t : (1.0f - eps) * w_t + c * job->S;
        row r = {.x = job->input + at, .stride = inner, .out = dx};
        r.m = row_max(r.x, C, inner);
        float s = exp_sum(&r, C, buf); /* dx holds exp(d_j) */
        for (int64_t j = 0; j < C; j++) {
            float pj = dx[j * inner] / s;
            float q = j == t ? q_t : eps == 0.0f ? 0.0f : c * class_weight(p, j);
            dx[j * inner] = (pj * W - q) * g;
        }
    }
}

void sb_cpu_class_loss_forward(const sb_class_problem *p, const float *input,
                               const int64_t *targets, float *loss) {
    int64_t rows_n = p->N * p->inner;
    float *rows = loss;
    if (p->reduction != SB_LOSS_NONE) {
        rows = malloc((size_t)rows_n * sizeof *rows);
        if (!rows) { /* the reference needs no memory and gives the same bits */
            sb_ref_class_loss_forward(p, input, targets, loss);
            return;
        }
    }
    ce_job job = {.p = p, .input = input, .targets = targets, .out = rows};
    sb_parallel_for(rows_n, rows_grain(rows_n, p->C), ce_forward_range, &job);
    if (p->reduction != SB_LOSS_NONE) {
        /* ignored rows are +0 in place: SUM is the canonical sum of NONE */
        float sum = sb_cpu_sum_canonical(rows, rows_n, 1);
        loss[0] = p->reduction == SB_LOSS_MEAN ? sum / sb_ref_class_mean_divisor(p, targets) : sum;
        free(rows);
    }
}

void sb_cpu_class_loss_backward(const sb_class_problem *p, const float *input,
                                const int64_t *targets, const float *dloss, float *dinput) {
    ce_job job = {.p = p, .input = input, .dloss = dloss, .targets = targets, .out = dinput};
    if (p->reduction == SB_LOSS_MEAN)
        job.mean_grad = dloss[0] / sb_ref_class_mean_divisor(p, targets);
    if (p->logits && p->weight && p->eps != 0.0f)
        job.S = sb_cpu_sum_canonical(p->weight, p->C, 1);
    int64_t rows_n = p->N * p->inner;
    sb_parallel_for(rows_n, rows_grain(rows_n, p->C), ce_backward_range, &job);
}
