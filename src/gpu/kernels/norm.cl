/* src/gpu/kernels/norm.cl - batch, layer, group and RMS norm, forward and
 * backward (contract section 10, src/ref/norm.c), in the portable dialect.
 *
 * One work-item per group (a batch-norm channel, a layer-norm or group-norm row, or for
 * their parameter gradients a parameter) runs the reference's loops:
 * every statistic streams its elements in the contract's index order
 * through sb_acc (sum_acc.cl, included before this file), so each sum has
 * the canonical sum's bits, and every other step is the reference's IEEE
 * operation (two roundings for a*b + c: FP_CONTRACT is off). Groups are
 * independent, and a group writes only its own elements, so y may be x. */

/* Which optional operands a launch has (the `have` bit set). */
#define SB_NORM_GAMMA 1
#define SB_NORM_BETA 2
#define SB_NORM_RUNNING 4
#define SB_NORM_SAVE_MEAN 8
#define SB_NORM_SAVE_RSTD 16
#define SB_NORM_DX 32
#define SB_NORM_DGAMMA 64
#define SB_NORM_DBETA 128
/* RMS norm through the row kernels: no mean (taken as +0, and x - (+0) is
 * x exactly) and no mean term in dx, as src/ref/norm.c's row_geom.centred */
#define SB_NORM_RMS 256

/* The mean of a group of outer x inner elements at base[i * stride_outer
 * + j] (j fastest), then the sum of squared deviations from it: two
 * passes, as src/ref/norm.c's group_stats. */
SB_INLINE void sb_norm_stats(SB_GLOBAL const float *base, SB_LONG outer, SB_LONG inner,
                             SB_LONG stride_outer, float n_f, float *mean_out, float *sumsq_out) {
    sb_acc acc;
    sb_acc_init(&acc);
    for (SB_LONG i = 0; i < outer; i++)
        for (SB_LONG j = 0; j < inner; j++) sb_acc_add(&acc, base[i * stride_outer + j]);
    float mean = sb_acc_result(&acc) / n_f;
    sb_acc_init(&acc);
    for (SB_LONG i = 0; i < outer; i++)
        for (SB_LONG j = 0; j < inner; j++) {
            float d = base[i * stride_outer + j] - mean;
            sb_acc_add(&acc, d * d);
        }
    *mean_out = mean;
    *sumsq_out = sb_acc_result(&acc);
}

// x, y are (N,C,S); gamma, beta, running_*, save_* are (C); count_f and
// count_m1_f are (float)(N*S) and (float)(N*S - 1), converted on the host
SB_KERNEL sb_bn_forward(SB_LONG N, SB_LONG C, SB_LONG S, int have, int training, float momentum,
                        float eps, float count_f, float count_m1_f, SB_GLOBAL const float *x,
                        SB_LONG x0, SB_GLOBAL const float *gamma, SB_LONG g0,
                        SB_GLOBAL const float *beta, SB_LONG b0, SB_GLOBAL float *rmean,
                        SB_LONG rm0, SB_GLOBAL float *rvar, SB_LONG rv0, SB_GLOBAL float *y,
                        SB_LONG y0, SB_GLOBAL float *smean, SB_LONG sm0, SB_GLOBAL float *srstd,
                        SB_LONG sr0) {
    const float one_minus_momentum = 1.0f - momentum;
    SB_FOR_EACH(c, C) {
        float mean, rstd;
        if (training) {
            float sumsq;
            sb_norm_stats(x + x0 + c * S, N, S, C * S, count_f, &mean, &sumsq);
            float var_biased = sumsq / count_f;
            rstd = 1.0f / SB_SQRT(var_biased + eps);
            if (have & SB_NORM_RUNNING) {
                float var_unbiased = sumsq / count_m1_f;
                rmean[rm0 + c] = one_minus_momentum * rmean[rm0 + c] + momentum * mean;
                rvar[rv0 + c] = one_minus_momentum * rvar[rv0 + c] + momentum * var_unbiased;
            }
        } else {
            mean = rmean[rm0 + c];
            rstd = 1.0f / SB_SQRT(rvar[rv0 + c] + eps);
        }
        if (have & SB_NORM_SAVE_MEAN) smean[sm0 + c] = mean;
        if (have & SB_NORM_SAVE_RSTD) srstd[sr0 + c] = rstd;
        for (SB_LONG n = 0; n < N; n++) {
            const SB_LONG base = (n * C + c) * S;
            for (SB_LONG s = 0; s < S; s++) {
                float v = (x[x0 + base + s] - mean) * rstd;
                if (have & SB_NORM_GAMMA) v = v * gamma[g0 + c];
                if (have & SB_NORM_BETA) v = v + beta[b0 + c];
                y[y0 + base + s] = v;
            }
        }
    }
}

// dy, x, dx are (N,C,S); gamma, mean, rstd, dgamma, dbeta are (C)
SB_KERNEL sb_bn_backward(SB_LONG N, SB_LONG C, SB_LONG S, int have, int training, float count_f,
                         SB_GLOBAL const float *dy, SB_LONG dy0, SB_GLOBAL const float *x,
                         SB_LONG x0, SB_GLOBAL const float *gamma, SB_LONG g0,
                         SB_GLOBAL const float *mean, SB_LONG m0, SB_GLOBAL const float *rstd,
                         SB_LONG r0, SB_GLOBAL float *dx, SB_LONG dx0, SB_GLOBAL float *dgamma,
                         SB_LONG dg0, SB_GLOBAL float *dbeta, SB_LONG db0) {
    SB_FOR_EACH(c, C) {
        const float m = mean[m0 + c], r = rstd[r0 + c];
        /* both sums in one pass, each in (n, s) order */
        sb_acc acc_dy, acc_dyx;
        sb_acc_init(&acc_dy);
        sb_acc_init(&acc_dyx);
        for (SB_LONG n = 0; n < N; n++) {
            const SB_LONG base = (n * C + c) * S;
            for (SB_LONG s = 0; s < S; s++) {
                float g = dy[dy0 + base + s];
                float xhat = (x[x0 + base + s] - m) * r;
                sb_acc_add(&acc_dy, g);
                sb_acc_add(&acc_dyx, g * xhat);
            }
        }
        const float sum_dy = sb_acc_result(&acc_dy);
        const float sum_dy_xhat = sb_acc_result(&acc_dyx);
        if (have & SB_NORM_DGAMMA) dgamma[dg0 + c] = sum_dy_xhat;
        if (have & SB_NORM_DBETA) dbeta[db0 + c] = sum_dy;
        if (!(have & SB_NORM_DX)) continue;
        const float k = (have & SB_NORM_GAMMA) ? gamma[g0 + c] * r : r;
        const float a = sum_dy / count_f, b = sum_dy_xhat / count_f;
        for (SB_LONG n = 0; n < N; n++) {
            const SB_LONG base = (n * C + c) * S;
            for (SB_LONG s = 0; s < S; s++) {
                float g = dy[dy0 + base + s];
                if (training) {
                    float xhat = (x[x0 + base + s] - m) * r;
                    dx[dx0 + base + s] = k * ((g - a) - xhat * b);
                } else {
                    dx[dx0 + base + s] = g * k;
                }
            }
        }
    }
}

/* Layer norm and group norm normalise rows: R rows of D contiguous
 * elements with statistics per row (src/ref/norm.c's row_geom). Element i
 * of row r uses affine parameter p(r, i) = (r % G) * (D / S) + i / S:
 * layer norm is G = S = 1 (p = i), group norm has rows (n, g) of x (N,C,S)
 * with D = (C/G) * S, so p is the channel. */
SB_INLINE SB_LONG sb_row_param(SB_LONG r, SB_LONG i, SB_LONG D, SB_LONG G, SB_LONG S) {
    return (r % G) * (D / S) + i / S;
}

// y (R,D) of one row per work-item
SB_KERNEL sb_rows_forward(SB_LONG R, SB_LONG D, SB_LONG G, SB_LONG S, int have, float eps,
                          float d_f, SB_GLOBAL const float *x, SB_LONG x0,
                          SB_GLOBAL const float *w, SB_LONG w0, SB_GLOBAL const float *b,
                          SB_LONG b0, SB_GLOBAL float *y, SB_LONG y0, SB_GLOBAL float *smean,
                          SB_LONG sm0, SB_GLOBAL float *srstd, SB_LONG sr0) {
    SB_FOR_EACH(r, R) {
        float mean = 0.0f, sumsq;
        if (have & SB_NORM_RMS) {
            sb_acc acc;
            sb_acc_init(&acc);
            for (SB_LONG i = 0; i < D; i++) {
                float v = x[x0 + r * D + i];
                sb_acc_add(&acc, v * v);
            }
            sumsq = sb_acc_result(&acc);
        } else {
            sb_norm_stats(x + x0 + r * D, 1, D, D, d_f, &mean, &sumsq);
        }
        float var = sumsq / d_f;
        float rstd = 1.0f / SB_SQRT(var + eps);
        if (have & SB_NORM_SAVE_MEAN) smean[sm0 + r] = mean;
        if (have & SB_NORM_SAVE_RSTD) srstd[sr0 + r] = rstd;
        for (SB_LONG i = 0; i < D; i++) {
            float v = (x[x0 + r * D + i] - mean) * rstd;
            if (have & SB_NORM_GAMMA) v = v * w[w0 + sb_row_param(r, i, D, G, S)];
            if (have & SB_NORM_BETA) v = v + b[b0 + sb_row_param(r, i, D, G, S)];
            y[y0 + r * D + i] = v;
        }
    }
}

// dx (R,D) of one row per work-item; g = dy * w is the gradient of xhat
SB_KERNEL sb_rows_backward_dx(SB_LONG R, SB_LONG D, SB_LONG G, SB_LONG S, int have, float d_f,
                              SB_GLOBAL const float *dy, SB_LONG dy0, SB_GLOBAL const float *x,
                              SB_LONG x0, SB_GLOBAL const float *w, SB_LONG w0,
                              SB_GLOBAL const float *mean, SB_LONG m0,
                              SB_GLOBAL const float *rstd, SB_LONG r0, SB_GLOBAL float *dx,
                              SB_LONG dx0) {
    SB_FOR_EACH(r, R) {
        const float m = (have & SB_NORM_RMS) ? 0.0f : mean[m0 + r], rs = rstd[r0 + r];
        sb_acc acc_g, acc_gx;
        sb_acc_init(&acc_g);
        sb_acc_init(&acc_gx);
        for (SB_LONG i = 0; i < D; i++) {
            float xhat = (x[x0 + r * D + i] - m) * rs;
            float d = dy[dy0 + r * D + i];
            float g = (have & SB_NORM_GAMMA) ? d * w[w0 + sb_row_param(r, i, D, G, S)] : d;
            sb_acc_add(&acc_g, g);
            sb_acc_add(&acc_gx, g * xhat);
        }
        const float a = (have & SB_NORM_RMS) ? 0.0f : sb_acc_result(&acc_g) / d_f;
        const float bb = sb_acc_result(&acc_gx) / d_f;
        for (SB_LONG i = 0; i < D; i++) {
            float xhat = (x[x0 + r * D + i] - m) * rs;
            float d = dy[dy0 + r * D + i];
            float g = (have & SB_NORM_GAMMA) ? d * w[w0 + sb_row_param(r, i, D, G, S)] : d;
            dx[dx0 + r * D + i] = rs * ((g - a) - xhat * bb);
        }
    }
}

// dw, db (G * D/S): one canonical sum per parameter over the (r, i) that
// use it, r slowest (layer norm: the rows of one column)
SB_KERNEL sb_rows_backward_params(SB_LONG R, SB_LONG D, SB_LONG G, SB_LONG S, int have,
                                  SB_GLOBAL const float *dy, SB_LONG dy0,
                                  SB_GLOBAL const float *x, SB_LONG x0,
                                  SB_GLOBAL const float *mean, SB_LONG m0,
                                  SB_GLOBAL const float *rstd, SB_LONG r0, SB_GLOBAL float *dw,
                                  SB_LONG dw0, SB_GLOBAL float *db, SB_LONG db0) {
    const SB_LONG per_group = D / S;
    SB_FOR_EACH(p, G * per_group) {
        const SB_LONG g = p / per_group, i0 = (p % per_group) * S;
        sb_acc acc_w, acc_b;
        sb_acc_init(&acc_w);
        sb_acc_init(&acc_b);
        for (SB_LONG r = g; r < R; r += G)
            for (SB_LONG i = i0; i < i0 + S; i++) {
                float d = dy[dy0 + r * D + i];
                float m = (have & SB_NORM_RMS) ? 0.0f : mean[m0 + r];
                float xhat = (x[x0 + r * D + i] - m) * rstd[r0 + r];
                sb_acc_add(&acc_w, d * xhat);
                sb_acc_add(&acc_b, d);
            }
        if (have & SB_NORM_DGAMMA) dw[dw0 + p] = sb_acc_result(&acc_w);
        if (have & SB_NORM_DBETA) db[db0 + p] = sb_acc_result(&acc_b);
    }
}
