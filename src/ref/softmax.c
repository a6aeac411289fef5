/* Reference softmax and log-softmax, forward and backward (contract:
 * docs/CONTRACT.md, "Softmax" and "Log-softmax").
 *
 * Every row reduction is the canonical sum in increasing row index, and
 * every elementary function is sb_expf / sb_logf, so a row's bits depend
 * only on the row. */
#include <math.h>
#include "samebits/math.h"
#include "core/canonical_sum.h"
#include "core/internal.h"
#include "ref/ref_loss.h"

void sb_ref_softmax_row_stats(const float *x, int64_t n, int64_t stride, float *m_out,
                              float *s_out) {
    /* Subtracting the maximum keeps sb_expf from overflowing; a NaN
     * anywhere makes m NaN so the whole row is NaN, as in PyTorch. */
    float m = n > 0 ? x[0] : -INFINITY;
    for (int64_t j = 1; j < n; j++) {
        float v = x[j * stride];
        if (sb_isnanf(v) || v > m) m = sb_isnanf(m) ? m : v;
    }
    sb_sum_acc acc;
    sb_sum_init(&acc);
    for (int64_t j = 0; j < n; j++) sb_sum_add(&acc, sb_expf(x[j * stride] - m));
    *m_out = m;
    *s_out = sb_sum_result(&acc);
}

/* The forward row of either op: log selects log-softmax. */
static void forward_row(const float *x, int64_t n, int64_t stride, bool log, float *y) {
    float m, s;
    sb_ref_softmax_row_stats(x, n, stride, &m, &s);
    if (log) {
        float ls = sb_logf(s);
        for (int64_t j = 0; j < n; j++) y[j * stride] = (x[j * stride] - m) - ls;
    } else {
        for (int64_t j = 0; j < n; j++) y[j * stride] = sb_expf(x[j * stride] - m) / s;
    }
}

static void forward(const float *x, int64_t outer, int64_t n, int64_t inner, bool log, float *y) {
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++)
            forward_row(x + o * n * inner + k, n, inner, log, y + o * n * inner + k);
}

void sb_ref_softmax_forward(const float *x, int64_t outer, int64_t n, int64_t inner, float *y) {
    forward(x, outer, n, inner, false, y);
}

void sb_ref_log_softmax_forward(const float *x, int64_t outer, int64_t n, int64_t inner,
                                float *y) {
    forward(x, outer, n, inner, true, y);
}

/* dx_j = y_j * (dy_j - sum_k dy_k y_k): products rounded, then summed. */
static void softmax_backward_row(const float *y, const float *dy, int64_t n, int64_t stride,
                                 float *dx) {
    sb_sum_acc acc;
    sb_sum_init(&acc);
    for (int64_t j = 0; j < n; j++) sb_sum_add(&acc, dy[j * stride] * y[j * stride]);
    float dot = sb_sum_result(&acc);
    for (int64_t j = 0; j < n; j++) dx[j * stride] = y[j * stride] * (dy[j * stride] - dot);
}

/* dx_j = dy_j - exp(y_j) * sum_k dy_k: exp(y_j) recomputes the softmax from
 * the saved log-softmax instead of storing it. */
static void log_softmax_backward_row(const float *y, const float *dy, int64_t n, int64_t stride,
                                     float *dx) {
    float g = sb_sum_canonical(dy, n, stride);
    for (int64_t j = 0; j < n; j++) dx[j * stride] = dy[j * stride] - sb_expf(y[j * stride]) * g;
}

static void backward(const float *y, const float *dy, int64_t outer, int64_t n, int64_t inner,
                     bool log, float *dx) {
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            int64_t at = o * n * inner + k;
            if (log) log_softmax_backward_row(y + at, dy + at, n, inner, dx + at);
            else softmax_backward_row(y + at, dy + at, n, inner, dx + at);
        }
}

void sb_ref_softmax_backward(const float *y, const float *dy, int64_t outer, int64_t n,
                             int64_t inner, float *dx) {
    backward(y, dy, outer, n, inner, false, dx);
}

void sb_ref_log_softmax_backward(const float *y, const float *dy, int64_t outer, int64_t n,
                                 int64_t inner, float *dx) {
    backward(y, dy, outer, n, inner, true, dx);
}
