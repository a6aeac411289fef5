/* src/gpu/kernels/loss.cl - the elementwise losses (contract section 11):
 * every kind's per-element term and gradient from src/ref/loss_terms.h,
 * which the math program embeds before this file (after src/math, whose
 * correctly rounded functions the terms call). Operands are dense; w and pw
 * are read only when has_w / has_pw say they are there. The terms of SUM
 * and MEAN are summed by the canonical sum of sum.cl, as the reference's
 * sb_sum_acc does. */

SB_INLINE sb_elementwise_loss sb_loss_params(int kind, float beta, int log_target) {
    sb_elementwise_loss p;
    p.kind = kind;
    p.beta = beta;
    p.log_target = log_target != 0;
    return p;
}

// q[i] = term(x[i], y[i], pw[i]) (* w[i]): src/ref/loss.c's forward loop
SB_KERNEL sb_loss_terms(int kind, float beta, int log_target, int has_w, int has_pw, SB_LONG n,
                        SB_GLOBAL const float *x, SB_LONG x0, SB_GLOBAL const float *y,
                        SB_LONG y0, SB_GLOBAL const float *w, SB_LONG w0,
                        SB_GLOBAL const float *pw, SB_LONG pw0, SB_GLOBAL float *q, SB_LONG q0) {
    sb_elementwise_loss p = sb_loss_params(kind, beta, log_target);
    SB_FOR_EACH(i, n) {
        float v = sb_loss_term(&p, x[x0 + i], y[y0 + i], has_pw != 0, has_pw ? pw[pw0 + i] : 1.0f);
        if (has_w) v = v * w[w0 + i];
        q[q0 + i] = v;
    }
}

// dx[i] = grad(x[i], y[i], pw[i], g) (* w[i]), dy[i] = -dx[i] when wanted;
// g = dloss[i] (reduction 0, none), else dloss[0], divided by count for
// MEAN (reduction 1) except MSE, whose norm carries the count: src/ref/loss.c
SB_KERNEL sb_loss_grad_all(int kind, float beta, int log_target, int has_w, int has_pw,
                           int reduction, float norm, float count, int want_dy, SB_LONG n,
                           SB_GLOBAL const float *x, SB_LONG x0, SB_GLOBAL const float *y,
                           SB_LONG y0, SB_GLOBAL const float *w, SB_LONG w0,
                           SB_GLOBAL const float *pw, SB_LONG pw0, SB_GLOBAL const float *dloss,
                           SB_LONG l0, SB_GLOBAL float *dx, SB_LONG dx0, SB_GLOBAL float *dy,
                           SB_LONG dy0) {
    sb_elementwise_loss p = sb_loss_params(kind, beta, log_target);
    float mean_grad = reduction == 1 ? dloss[l0] / count : 0.0f;
    SB_FOR_EACH(i, n) {
        float g = reduction == 0 ? dloss[l0 + i] : dloss[l0];
        if (kind != SB_LOSS_MSE && reduction == 1) g = mean_grad;
        float v = sb_loss_grad(&p, x[x0 + i], y[y0 + i], has_pw != 0, has_pw ? pw[pw0 + i] : 1.0f,
                               g, norm);
        if (has_w) v = v * w[w0 + i];
        dx[dx0 + i] = v;
        if (want_dy) dy[dy0 + i] = -v;
    }
}
