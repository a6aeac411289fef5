/* Reference batch, layer, group and RMS norm (contract section
 * "Normalisation").
 *
 * Each statement below is one IEEE binary32 operation of the contract, in
 * the contract's order; the build's -ffp-contract=off keeps a*b+c as two
 * roundings. Every reduction streams its elements, in the contract's index
 * order, through the canonical sum. */
#include "ref/ref_norm.h"
#include <math.h>
#include <stddef.h>
#include "core/canonical_sum.h"

/* The statistics of one group of n elements (a batch-norm channel or a
 * layer-norm row): the elements are at base[i * stride_outer + j] for
 * i < outer, j < inner, enumerated with j fastest, n = outer * inner.
 * Two passes: the mean first, then the biased variance of the deviations,
 * which avoids the cancellation of E[x^2] - E[x]^2. *sumsq is returned for
 * batch norm's unbiased variance. */
static void group_stats(const float *base, int64_t outer, int64_t inner, int64_t stride_outer,
                        float n_f, float *mean_out, float *sumsq_out) {
    sb_sum_acc acc;
    sb_sum_init(&acc);
    for (int64_t i = 0; i < outer; i++)
        for (int64_t j = 0; j < inner; j++) sb_sum_add(&acc, base[i * stride_outer + j]);
    float mean = sb_sum_result(&acc) / n_f;

    sb_sum_init(&acc);
    for (int64_t i = 0; i < outer; i++)
        for (int64_t j = 0; j < inner; j++) {
            float d = base[i * stride_outer + j] - mean;
            sb_sum_add(&acc, d * d);
        }
    *mean_out = mean;
    *sumsq_out = sb_sum_result(&acc);
}

/* ---- batch norm ---- */

// x, y are (N,C,S); gamma, beta, running_mean, running_var, save_mean,
// save_rstd are (C).
void sb_ref_batch_norm_forward(const float *x, const float *gamma, const float *beta,
                               float *running_mean, float *running_var, bool training,
                               float momentum, float eps, float *y, float *save_mean,
                               float *save_rstd, int64_t N, int64_t C, int64_t S) {
    int64_t count = N * S;
    /* Integer -> float conversions round to nearest, ties to even. The
     * unbiased divisor converts the integer count - 1, not count_f - 1. */
    float count_f = (float)count;
    float count_m1_f = (float)(count - 1);
    float one_minus_momentum = 1.0f - momentum;

    for (int64_t c = 0; c < C; c++) {
        float mean, rstd;
        if (training) {
            float sumsq;
            group_stats(x + c * S, N, S, C * S, count_f, &mean, &sumsq);
            float var_biased = sumsq / count_f;
            rstd = 1.0f / sqrtf(var_biased + eps);
            if (running_mean) {
                float var_unbiased = sumsq / count_m1_f;
                running_mean[c] = one_minus_momentum * running_mean[c] + momentum * mean;
                running_var[c] = one_minus_momentum * running_var[c] + momentum * var_unbiased;
            }
        } else {
            mean = running_mean[c];
            rstd = 1.0f / sqrtf(running_var[c] + eps);
        }
        if (save_mean) save_mean[c] = mean;
        if (save_rstd) save_rstd[c] = rstd;

        for (int64_t n = 0; n < N; n++) {
            const float *xp = x + (n * C + c) * S;
            float *yp = y + (n * C + c) * S;
            for (int64_t s = 0; s < S; s++) {
                float v = (xp[s] - mean) * rstd;
                if (gamma) v = v * gamma[c];
                if (beta) v = v + beta[c];
                yp[s] = v;
            }
        }
    }
}

// dy, x, dx are (N,C,S); gamma, mean, rstd, dgamma, dbeta are (C).
void sb_ref_batch_norm_backward(const float *dy, const float *x, const float *gamma,
                                const float *mean, const float *rstd, bool training,
                                float *dx, float *dgamma, float *dbeta, int64_t N,
                                int64_t C, int64_t S) {
    float count_f = (float)(N * S);
    for (int64_t c = 0; c < C; c++) {
        float m = mean[c], r = rstd[c];
        /* Both sums in one pass, each in (n, s) order. */
        sb_sum_acc acc_dy, acc_dyx;
        sb_sum_init(&acc_dy);
        sb_sum_init(&acc_dyx);
        for (int64_t n = 0; n < N; n++) {
            const float *xp = x + (n * C + c) * S, *dyp = dy + (n * C + c) * S;
            for (int64_t s = 0; s < S; s++) {
                float xhat = (xp[s] - m) * r;
                sb_sum_add(&acc_dy, dyp[s]);
                sb_sum_add(&acc_dyx, dyp[s] * xhat);
            }
        }
        float sum_dy = sb_sum_result(&acc_dy);
        float sum_dy_xhat = sb_sum_result(&acc_dyx);
        if (dgamma) dgamma[c] = sum_dy_xhat;
        if (dbeta) dbeta[c] = sum_dy;
        if (!dx) continue;

        float k = gamma ? gamma[c] * r : r;
        float a = sum_dy / count_f, b = sum_dy_xhat / count_f;
        for (int64_t n = 0; n < N; n++) {
            const float *xp = x + (n * C + c) * S, *dyp = dy + (n * C + c) * S;
            float *dxp = dx + (n * C + c) * S;
            for (int64_t s = 0; s < S; s++) {
                if (training) {
                    float xhat = (xp[s] - m) * r;
                    dxp[s] = k * ((dyp[s] - a) - xhat * b);
                } else {
                    dxp[s] = dyp[s] * k;
                }
            }
        }
    }
}

/* ---- layer norm and group norm: per-row statistics ---- */

/* Both normalise rows: R rows of D contiguous elements, statistics per row.
 * They differ only in which affine parameter element i of row r uses:
 *   p(r, i) = (r % G) * (D / S) + i / S
 * layer norm: G = 1, S = 1 (p = i, one parameter per trailing position);
 * group norm: rows are (n, g) of x (N,C,S) with D = (C/G) * S, so p is the
 * channel c = g * (C/G) + i / S.
 * A parameter gradient dw[p] is one canonical sum over every (r, i) with
 * p(r, i) = p, r slowest and i fastest: for layer norm the rows in order, for
 * group norm (n, s) in order, as batch norm's per-channel sums. */
typedef struct row_geom {
    int64_t R, D, G, S;
    /* false for RMS norm: no mean is subtracted. The shared code then runs
     * with mean = +0 and skips the sums that only the mean needs; x - (+0)
     * is x exactly for every float (-0 included), so each step below is the
     * contract's RMS sequence bit for bit. */
    bool centred;
} row_geom;

static int64_t param_of(const row_geom *q, int64_t r, int64_t i) {
    return (r % q->G) * (q->D / q->S) + i / q->S;
}

static void rows_forward(const float *x, const float *w, const float *b, float eps, float *y,
                         float *save_mean, float *save_rstd, const row_geom *q) {
    int64_t D = q->D;
    float d_f = (float)D;
    for (int64_t r = 0; r < q->R; r++) {
        const float *xr = x + r * D;
        float *yr = y + r * D;
        float mean = 0.0f, sumsq;
        if (q->centred) {
            group_stats(xr, 1, D, D, d_f, &mean, &sumsq);
        } else {
            sb_sum_acc acc; /* the mean of squares: sum(x_i * x_i) */
            sb_sum_init(&acc);
            for (int64_t i = 0; i < D; i++) sb_sum_add(&acc, xr[i] * xr[i]);
            sumsq = sb_sum_result(&acc);
        }
        float var = sumsq / d_f;
        float rstd = 1.0f / sqrtf(var + eps);
        if (save_mean) save_mean[r] = mean;
        if (save_rstd) save_rstd[r] = rstd;
        for (int64_t i = 0; i < D; i++) {
            float v = (xr[i] - mean) * rstd;
            if (w) v = v * w[param_of(q, r, i)];
            if (b) v = v + b[param_of(q, r, i)];
            yr[i] = v;
        }
    }
}

static void rows_backward(const float *dy, const float *x, const float *w, const float *mean,
                          const float *rstd, float *dx, float *dw, float *db,
                          const row_geom *q) {
    int64_t D = q->D;
    float d_f = (float)D;
    if (dx) {
        for (int64_t r = 0; r < q->R; r++) {
            const float *xr = x + r * D, *dyr = dy + r * D;
            float *dxr = dx + r * D;
            float m = mean ? mean[r] : 0.0f, rs = rstd[r];
            /* g = dy * w is the gradient with respect to xhat. */
            sb_sum_acc acc_g, acc_gx;
            sb_sum_init(&acc_g);
            sb_sum_init(&acc_gx);
            for (int64_t i = 0; i < D; i++) {
                float xhat = (xr[i] - m) * rs;
                float g = w ? dyr[i] * w[param_of(q, r, i)] : dyr[i];
                sb_sum_add(&acc_g, g);
                sb_sum_add(&acc_gx, g * xhat);
            }
            float a = q->centred ? sb_sum_result(&acc_g) / d_f : 0.0f;
            float bb = sb_sum_result(&acc_gx) / d_f;
            for (int64_t i = 0; i < D; i++) {
                float xhat = (xr[i] - m) * rs;
                float g = w ? dyr[i] * w[param_of(q, r, i)] : dyr[i];
                dxr[i] = rs * ((g - a) - xhat * bb);
            }
        }
    }
    /* Parameter gradients: one canonical sum per parameter over the (r, i)
     * that use it, r slowest. A parameter at a time keeps one accumulator
     * pair live; this is the reference, not the fast path. */
    if (dw || db) {
        int64_t per_group = q->D / q->S, P = q->G * per_group;
        for (int64_t p = 0; p < P; p++) {
            int64_t g = p / per_group, i0 = (p % per_group) * q->S;
            sb_sum_acc acc_w, acc_b;
            sb_sum_init(&acc_w);
            sb_sum_init(&acc_b);
            for (int64_t r = g; r < q->R; r += q->G)
                for (int64_t i = i0; i < i0 + q->S; i++) {
                    float d = dy[r * D + i];
                    float xhat = (x[r * D + i] - (mean ? mean[r] : 0.0f)) * rstd[r];
                    sb_sum_add(&acc_w, d * xhat);
                    sb_sum_add(&acc_b, d);
                }
            if (dw) dw[p] = sb_sum_result(&acc_w);
            if (db) db[p] = sb_sum_result(&acc_b);
        }
    }
}

// x, y are (R,D); w, b are (D); save_mean, save_rstd are (R).
void sb_ref_layer_norm_forward(const float *x, const float *w, const float *b, float eps,
                               float *y, float *save_mean, float *save_rstd, int64_t R,
                               int64_t D) {
    row_geom q = {R, D, 1, 1, true};
    rows_forward(x, w, b, eps, y, save_mean, save_rstd, &q);
}

// dy, x, dx are (R,D); w, dw, db are (D); mean, rstd are (R).
void sb_ref_layer_norm_backward(const float *dy, const float *x, const float *w,
                                const float *mean, const float *rstd, float *dx, float *dw,
                                float *db, int64_t R, int64_t D) {
    row_geom q = {R, D, 1, 1, true};
    rows_backward(dy, x, w, mean, rstd, dx, dw, db, &q);
}

/* ---- group norm ---- */

// x, y are (N,C,S); gamma, beta are (C); save_mean, save_rstd are (N,G).
void sb_ref_group_norm_forward(const float *x, const float *gamma, const float *beta, float eps,
                               float *y, float *save_mean, float *save_rstd, int64_t N,
                               int64_t C, int64_t S, int64_t G) {
    row_geom q = {N * G, (C / G) * S, G, S, true};
    rows_forward(x, gamma, beta, eps, y, save_mean, save_rstd, &q);
}

// dy, x, dx are (N,C,S); gamma, dgamma, dbeta are (C); mean, rstd are (N,G).
void sb_ref_group_norm_backward(const float *dy, const float *x, const float *gamma,
                                const float *mean, const float *rstd, float *dx, float *dgamma,
                                float *dbeta, int64_t N, int64_t C, int64_t S, int64_t G) {
    row_geom q = {N * G, (C / G) * S, G, S, true};
    rows_backward(dy, x, gamma, mean, rstd, dx, dgamma, dbeta, &q);
}

/* ---- RMS norm ---- */

/* Layer norm's rows without the mean (row_geom.centred). The shared backward
 * reads a mean per row: RMS norm's is +0 for every row. */

// x, y are (R,D); w is (D); save_rrms is (R).
void sb_ref_rms_norm_forward(const float *x, const float *w, float eps, float *y,
                             float *save_rrms, int64_t R, int64_t D) {
    row_geom q = {R, D, 1, 1, false};
    rows_forward(x, w, NULL, eps, y, NULL, save_rrms, &q);
}

// dy, x, dx are (R,D); w, dw are (D); rrms is (R).
void sb_ref_rms_norm_backward(const float *dy, const float *x, const float *w, const float *rrms,
                              float *dx, float *dw, int64_t R, int64_t D) {
    row_geom q = {R, D, 1, 1, false};
    rows_backward(dy, x, w, NULL, rrms, dx, dw, NULL, &q);
}
