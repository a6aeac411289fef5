/* Fast batch norm and layer norm (contract "Normalisation", reference
 * src/ref/norm.c).
 *
 * A group (a batch-norm channel, a layer-norm row) is enumerated as in the
 * reference: base[i * stride + j] for i < outer, j < inner, j fastest. Its
 * sums are canonical sums over that enumeration; the terms (x itself,
 * (x - mean)^2, dy, dy * xhat, ...) are produced a chunk at a time into a
 * buffer, with the reference's exact per-term operations, and fed to the
 * canonical sum in order, so every sum sees the reference's elements in the
 * reference's order and the bits are the reference's.
 *
 * Batch norm runs in two threaded phases: per-channel statistics (threaded
 * over channels), then the per-element map over (n, c) rows, which has
 * N * C independent rows even when C is small. Layer norm is threaded over
 * rows, and its parameter gradients over tiles of columns. Group norm is
 * layer norm's row walk with rows (n, g) and a per-channel affine (the
 * reference's p(r, i)); its parameter gradients are per-channel sums over
 * (n, s), threaded over channels. RMS norm is layer norm's walk with no
 * mean: the mean is taken as +0 (x - (+0) is x exactly, so the terms are the
 * contract's x * x and x * rrms) and the dx rule's mean term a as +0. */
#include <stdlib.h>
#include "cpu/sum_internal.h"
#include "cpu/kernels.h"
#include "cpu/ops_internal.h"
#include "ref/ref_norm.h"

enum {
    CHUNK = 1024,    /* terms per buffer */
    MIN_WORK = 8192  /* elements per thread range, at least */
};

typedef enum term_kind {
    T_X,      /* x */
    T_SQDEV,  /* d = x - m; d * d */
    T_DY_DYX, /* a: dy; b: dy * ((x - m) * r) (batch-norm backward) */
    T_G_GX    /* g = w ? dy * w[j] : dy; a: g; b: g * ((x - m) * r) */
} term_kind;

/* One group and what its terms need. */
typedef struct group {
    const float *x, *dy, *w; /* x and dy share the geometry; w is indexed by j */
    bool w_outer;            /* w is indexed by i instead (group norm's channels) */
    int64_t outer, inner, stride;
    float m, r;
} group;

/* Terms k0 .. k0+k-1 of the group's enumeration into a (and b), one
 * contiguous stretch of a row i at a time. */
static void terms(term_kind kind, const group *g, int64_t k0, int64_t k, float *a, float *b) {
    int64_t i = k0 / g->inner, j = k0 % g->inner;
    const float m = g->m, r = g->r;
    for (int64_t t = 0; t < k;) {
        int64_t len = g->inner - j < k - t ? g->inner - j : k - t;
        const float *xp = g->x + i * g->stride + j;
        const float *dyp = g->dy ? g->dy + i * g->stride + j : NULL;
        const float *wp = g->w && !g->w_outer ? g->w + j : NULL;
        const float *wo = g->w && g->w_outer ? g->w + i : NULL;
        float *ap = a + t, *bp = b + t;
        switch (kind) {
        case T_X:
            for (int64_t q = 0; q < len; q++) ap[q] = xp[q];
            break;
        case T_SQDEV:
            sb_kernels()->pointwise->sqdev(len, xp, m, ap);
            break;
        case T_DY_DYX:
            sb_kernels()->pointwise->norm_grad_terms(len, xp, dyp, NULL, 0, m, r, ap, bp);
            break;
        case T_G_GX:
            sb_kernels()->pointwise->norm_grad_terms(len, xp, dyp, wp ? wp : wo, wp ? 1 : 0, m, r,
                                                     ap, bp);
            break;
        }
        t += len;
        j = 0;
        i++;
    }
}

/* The canonical sum(s) of the group's terms: one for T_X and T_SQDEV, two
 * for the others. */
static void group_sums(term_kind kind, const group *g, float *sa, float *sb) {
    float a[CHUNK], b[CHUNK];
    bool two = kind == T_DY_DYX || kind == T_G_GX;
    int64_t n = g->outer * g->inner;
    if (kind == T_X && g->outer == 1) {
        *sa = sb_cpu_sum_canonical(g->x, n, 1); /* one contiguous run, no copy */
        return;
    }
    if (n <= CHUNK) {
        terms(kind, g, 0, n, a, b);
        *sa = sb_cpu_sum_canonical(a, n, 1);
        if (two) *sb = sb_cpu_sum_canonical(b, n, 1);
        return;
    }
    sb_sum_acc acc_a, acc_b;
    sb_sum_init(&acc_a);
    if (two) sb_sum_init(&acc_b);
    if (kind == T_X && g->inner >= CHUNK) {
        /* long contiguous runs: straight into the accumulator */
        for (int64_t i = 0; i < g->outer; i++) sb_cpu_sum_add_n(&acc_a, g->x + i * g->stride, g->inner);
    } else {
        for (int64_t k0 = 0; k0 < n; k0 += CHUNK) {
            int64_t k = n - k0 < CHUNK ? n - k0 : CHUNK;
            terms(kind, g, k0, k, a, b);
            sb_cpu_sum_add_n(&acc_a, a, k);
            if (two) sb_cpu_sum_add_n(&acc_b, b, k);
        }
    }
    *sa = sb_sum_result(&acc_a);
    if (two) *sb = sb_sum_result(&acc_b);
}

/* Streams the group's terms into the running sums acc_a (and acc_b), for
 * sums that span several groups. */
static void group_feed(term_kind kind, const group *g, sb_sum_acc *acc_a, sb_sum_acc *acc_b) {
    float a[CHUNK], b[CHUNK];
    int64_t n = g->outer * g->inner;
    for (int64_t k0 = 0; k0 < n; k0 += CHUNK) {
        int64_t k = n - k0 < CHUNK ? n - k0 : CHUNK;
        terms(kind, g, k0, k, a, b);
        sb_cpu_sum_add_n(acc_a, a, k);
        if (acc_b) sb_cpu_sum_add_n(acc_b, b, k);
    }
}

static int64_t grain_for(int64_t items, int64_t work_per_item) {
    int64_t min = work_per_item > 0 ? MIN_WORK / work_per_item : MIN_WORK;
    return sb_parallel_grain(items, min > 0 ? min : 1);
}

/* ---- batch norm ---------------------------------------------------------------- */

typedef struct bn_job {
    const float *x, *dy, *gamma, *beta;
    float *running_mean, *running_var, *y, *save_mean, *save_rstd, *dgamma, *dbeta;
    bool training;
    float momentum, eps;
    int64_t N, C, S;
    /* per channel, from the statistics phase: mean, rstd (forward) or
     * mean, rstd, k, a, b (backward) */
    float *stat;
} bn_job;

static void bn_stats_range(void *vjob, int64_t c0, int64_t c1) {
    const bn_job *j = vjob;
    int64_t count = j->N * j->S, C = j->C;
    float count_f = (float)count;
    float count_m1_f = (float)(count - 1);
    float one_minus_momentum = 1.0f - j->momentum;
    for (int64_t c = c0; c < c1; c++) {
        float mean, rstd;
        if (j->training) {
            group g = {.x = j->x + c * j->S, .outer = j->N, .inner = j->S, .stride = C * j->S};
            float s, sumsq;
            group_sums(T_X, &g, &s, NULL);
            mean = s / count_f;
            g.m = mean;
            group_sums(T_SQDEV, &g, &sumsq, NULL);
            float var_biased = sumsq / count_f;
            rstd = 1.0f / sqrtf(var_biased + j->eps);
            if (j->running_mean) {
                float var_unbiased = sumsq / count_m1_f;
                j->running_mean[c] = one_minus_momentum * j->running_mean[c] + j->momentum * mean;
                j->running_var[c] = one_minus_momentum * j->running_var[c] +
                                    j->momentum * var_unbiased;
            }
        } else {
            mean = j->running_mean[c];
            rstd = 1.0f / sqrtf(j->running_var[c] + j->eps);
        }
        j->stat[2 * c] = mean;
        j->stat[2 * c + 1] = rstd;
    }
}

/* Rows (n, c) in n-major order, S elements each. */
static void bn_map_range(void *vjob, int64_t r0, int64_t r1) {
    const bn_job *j = vjob;
    int64_t S = j->S;
    for (int64_t row = r0; row < r1; row++) {
        int64_t c = row % j->C;
        float mean = j->stat[2 * c], rstd = j->stat[2 * c + 1];
        sb_kernels()->pointwise->norm_map(S, j->x + row * S, mean, rstd,
                                          j->gamma ? j->gamma + c : NULL, 0,
                                          j->beta ? j->beta + c : NULL, 0, j->y + row * S);
    }
}

void sb_cpu_batch_norm_forward(const float *x, const float *gamma, const float *beta,
                               float *running_mean, float *running_var, bool training,
                               float momentum, float eps, float *y, float *save_mean,
                               float *save_rstd, int64_t N, int64_t C, int64_t S) {
    float *stat = C > 0 ? malloc((size_t)C * 2 * sizeof *stat) : NULL;
    if (C > 0 && !stat) {
        sb_ref_batch_norm_forward(x, gamma, beta, running_mean, running_var, training, momentum,
                                  eps, y, save_mean, save_rstd, N, C, S);
        return;
    }
    bn_job j = {.x = x, .gamma = gamma, .beta = beta, .running_mean = running_mean,
                .running_var = running_var, .y = y, .training = training,
                .momentum = momentum, .eps = eps, .N = N, .C = C, .S = S, .stat = stat};
    sb_parallel_for(C, grain_for(C, training ? 2 * N * S : 1), bn_stats_range, &j);
    /* After the statistics: save_mean / save_rstd may alias the running
     * buffers or x only as in the reference, which writes them per channel
     * after reading that channel. */
    for (int64_t c = 0; c < C; c++) {
        if (save_mean) save_mean[c] = stat[2 * c];
        if (save_rstd) save_rstd[c] = stat[2 * c + 1];
    }
    sb_parallel_for(N * C, grain_for(N * C, S), bn_map_range, &j);
    free(stat);
}

static void bn_back_stats_range(void *vjob, int64_t c0, int64_t c1) {
    const bn_job *j = vjob;
    float count_f = (float)(j->N * j->S);
    for (int64_t c = c0; c < c1; c++) {
        float m = j->save_mean[c], r = j->save_rstd[c];
        group g = {.x = j->x + c * j->S, .dy = j->dy + c * j->S, .outer = j->N,
                   .inner = j->S, .stride = j->C * j->S, .m = m, .r = r};
        float sum_dy, sum_dy_xhat;
        group_sums(T_DY_DYX, &g, &sum_dy, &sum_dy_xhat);
        if (j->dgamma) j->dgamma[c] = sum_dy_xhat;
        if (j->dbeta) j->dbeta[c] = sum_dy;
        float *st = j->stat + 5 * c;
        st[0] = m;
        st[1] = r;
        st[2] = j->gamma ? j->gamma[c] * r : r;
        st[3] = sum_dy / count_f;
        st[4] = sum_dy_xhat / count_f;
    }
}

static void bn_back_map_range(void *vjob, int64_t r0, int64_t r1) {
    const bn_job *j = vjob;
    int64_t S = j->S;
    for (int64_t row = r0; row < r1; row++) {
        const float *st = j->stat + 5 * (row % j->C);
        float m = st[0], r = st[1], k = st[2], a = st[3], b = st[4];
        const float *xp = j->x + row * S, *dyp = j->dy + row * S;
        float *dxp = j->y + row * S;
        if (j->training) {
            sb_kernels()->pointwise->norm_dx(S, xp, dyp, NULL, 0, m, r, k, a, b, dxp);
        } else {
            for (int64_t s = 0; s < S; s++) dxp[s] = dyp[s] * k;
        }
    }
}

void sb_cpu_batch_norm_backward(const float *dy, const float *x, const float *gamma,
                                const float *mean, const float *rstd, bool training,
                                float *dx, float *dgamma, float *dbeta, int64_t N,
                                int64_t C, int64_t S) {
    float *stat = C > 0 ? malloc((size_t)C * 5 * sizeof *stat) : NULL;
    if (C > 0 && !stat) {
        sb_ref_batch_norm_backward(dy, x, gamma, mean, rstd, training, dx, dgamma, dbeta, N, C,
                                   S);
        return;
    }
    bn_job j = {.x = x, .dy = dy, .gamma = gamma, .save_mean = (float *)mean,
                .save_rstd = (float *)rstd, .y = dx, .dgamma = dgamma, .dbeta = dbeta,
                .training = training, .N = N, .C = C, .S = S, .stat = stat};
    sb_parallel_for(C, grain_for(C, N * S), bn_back_stats_range, &j);
    if (dx) sb_parallel_for(N * C, grain_for(N * C, S), bn_back_map_range, &j);
    free(stat);
}

/* ---- layer norm and group norm ----------------------------------------------- */

/* Rows of D elements; the affine parameter of element i of row r is
 * w[(r % G) * (D / S) + i / S] (layer norm: G = S = 1). */
typedef struct ln_job {
    const float *x, *dy, *w, *b, *mean, *rstd;
    float *y, *save_mean, *save_rstd, *dw, *db;
    float eps;
    int64_t R, D, G, S;
    bool rms; /* RMS norm: no mean (mean and a are +0) */
} ln_job;

static void ln_forward_range(void *vjob, int64_t r0, int64_t r1) {
    const ln_job *j = vjob;
    int64_t D = j->D, S = j->S, blocks = D / S;
    float d_f = (float)D;
    for (int64_t r = r0; r < r1; r++) {
        const float *xr = j->x + r * D;
        float *yr = j->y + r * D;
        group g = {.x = xr, .outer = 1, .inner = D, .stride = D};
        float mean = 0.0f, sumsq;
        if (!j->rms) {
            float s;
            group_sums(T_X, &g, &s, NULL);
            mean = s / d_f;
        }
        g.m = mean;
        group_sums(T_SQDEV, &g, &sumsq, NULL);
        float var = sumsq / d_f;
        float rstd = 1.0f / sqrtf(var + j->eps);
        if (j->save_mean) j->save_mean[r] = mean;
        if (j->save_rstd) j->save_rstd[r] = rstd;
        /* the affine parameter of element (cb, q) is w[p0 + cb]: per element
         * when S = 1 (layer norm), one per block of S (group norm) */
        int64_t p0 = (r % j->G) * blocks;
        const float *w = j->w ? j->w + p0 : NULL, *b = j->b ? j->b + p0 : NULL;
        const sb_pwv_table *pw = sb_kernels()->pointwise;
        if (S == 1) {
            pw->norm_map(D, xr, mean, rstd, w, 1, b, 1, yr);
        } else {
            for (int64_t cb = 0; cb < blocks; cb++)
                pw->norm_map(S, xr + cb * S, mean, rstd, w ? w + cb : NULL, 0, b ? b + cb : NULL,
                             0, yr + cb * S);
        }
    }
}

static void rows_forward(const ln_job *j) {
    sb_parallel_for(j->R, grain_for(j->R, 3 * j->D), ln_forward_range, (void *)j);
}

void sb_cpu_layer_norm_forward(const float *x, const float *w, const float *b, float eps,
                               float *y, float *save_mean, float *save_rstd, int64_t R,
                               int64_t D) {
    ln_job j = {.x = x, .w = w, .b = b, .eps = eps, .y = y, .save_mean = save_mean,
                .save_rstd = save_rstd, .R = R, .D = D, .G = 1, .S = 1};
    rows_forward(&j);
}

void sb_cpu_group_norm_forward(const float *x, const float *gamma, const float *beta, float eps,
                               float *y, float *save_mean, float *save_rstd, int64_t N,
                               int64_t C, int64_t S, int64_t G) {
    ln_job j = {.x = x, .w = gamma, .b = beta, .eps = eps, .y = y, .save_mean = save_mean,
                .save_rstd = save_rstd, .R = N * G, .D = (C / G) * S, .G = G, .S = S};
    rows_forward(&j);
}

static void ln_dx_range(void *vjob, int64_t r0, int64_t r1) {
    const ln_job *j = vjob;
    int64_t D = j->D, S = j->S, blocks = D / S;
    float d_f = (float)D;
    for (int64_t r = r0; r < r1; r++) {
        const float *xr = j->x + r * D, *dyr = j->dy + r * D;
        float *dxr = j->y + r * D;
        float m = j->mean ? j->mean[r] : 0.0f, rs = j->rstd[r];
        const float *wr = j->w ? j->w + (r % j->G) * blocks : NULL;
        /* layer norm: w by position (inner); group norm: by channel block (outer) */
        group g = S == 1 ? (group){.x = xr, .dy = dyr, .w = wr, .outer = 1, .inner = D,
                                   .stride = D, .m = m, .r = rs}
                         : (group){.x = xr, .dy = dyr, .w = wr, .w_outer = true,
                                   .outer = blocks, .inner = S, .stride = S, .m = m, .r = rs};
        float sg, sgx;
        group_sums(T_G_GX, &g, &sg, &sgx);
        float a = j->rms ? 0.0f : sg / d_f;
        float bb = sgx / d_f;
        const sb_pwv_table *pw = sb_kernels()->pointwise;
        if (S == 1)
            pw->norm_dx(D, xr, dyr, wr, 1, m, rs, rs, a, bb, dxr);
        else
            for (int64_t cb = 0; cb < blocks; cb++)
                pw->norm_dx(S, xr + cb * S, dyr + cb * S, wr ? wr + cb : NULL, 0, m, rs, rs, a,
                            bb, dxr + cb * S);
    }
}

/* The parameter gradients: for each column i, dw[i] = sum_r(dy * xhat) and
 * db[i] = sum_r(dy), canonical sums over the rows in order, as column sums
 * (sb_cpu_sum_columns_of) whose dy * xhat terms are made a row stretch at a
 * time; dy's own are read in place. */
static void ln_param_row(const void *vjob, int64_t r, int64_t c0, int64_t n, float *const bufs[2],
                         const float *t[2]) {
    const ln_job *j = vjob;
    const float *dyr = j->dy + r * j->D + c0;
    int m = 0;
    if (j->dw) {
        sb_kernels()->pointwise->norm_grad_terms(n, j->x + r * j->D + c0, dyr, NULL, 0,
                                                 j->mean ? j->mean[r] : 0.0f, j->rstd[r], NULL,
                                                 bufs[m]);
        t[m++] = bufs[0];
    }
    if (j->db) t[m] = dyr;
}

static void rows_backward(const ln_job *j) {
    if (j->y) sb_parallel_for(j->R, grain_for(j->R, 3 * j->D), ln_dx_range, (void *)j);
    if (j->dw || j->db) {
        sb_column_terms terms = {ln_param_row, j, (j->dw != NULL) + (j->db != NULL)};
        float *const out[2] = {j->dw ? j->dw : j->db, j->db};
        sb_cpu_sum_columns_of(&terms, j->R, j->D, out);
    }
}

void sb_cpu_layer_norm_backward(const float *dy, const float *x, const float *w,
                                const float *mean, const float *rstd, float *dx, float *dw,
                                float *db, int64_t R, int64_t D) {
    ln_job j = {.x = x, .dy = dy, .w = w, .mean = mean, .rstd = rstd, .y = dx, .dw = dw,
                .db = db, .R = R, .D = D, .G = 1, .S = 1};
    rows_backward(&j);
}

void sb_cpu_rms_norm_forward(const float *x, const float *w, float eps, float *y,
                             float *save_rrms, int64_t R, int64_t D) {
    ln_job j = {.x = x, .w = w, .eps = eps, .y = y, .save_rstd = save_rrms, .R = R, .D = D,
                .G = 1, .S = 1, .rms = true};
    rows_forward(&j);
}

void sb_cpu_rms_norm_backward(const float *dy, const float *x, const float *w, const float *rrms,
                              float *dx, float *dw, int64_t R, int64_t D) {
    ln_job j = {.x = x, .dy = dy, .w = w, .rstd = rrms, .y = dx, .dw = dw, .R = R, .D = D,
                .G = 1, .S = 1, .rms = true};
    rows_backward(&j);
}

/* Channels [c0, c1): dgamma[c], dbeta[c] are canonical sums over (n, s), n
 * slowest, each (n, c) row normalised with the statistics of its group. */
static void gn_param_range(void *vjob, int64_t c0, int64_t c1) {
    const ln_job *j = vjob;
    int64_t G = j->G, S = j->S, cg = j->D / S, C = G * cg, N = j->R / G;
    for (int64_t c = c0; c < c1; c++) {
        sb_sum_acc acc_dy, acc_dyx;
        sb_sum_init(&acc_dy);
        sb_sum_init(&acc_dyx);
        for (int64_t n = 0; n < N; n++) {
            int64_t r = n * G + c / cg;
            group g = {.x = j->x + (n * C + c) * S, .dy = j->dy + (n * C + c) * S, .outer = 1,
                       .inner = S, .stride = S, .m = j->mean[r], .r = j->rstd[r]};
            group_feed(T_DY_DYX, &g, &acc_dy, &acc_dyx);
        }
        if (j->dw) j->dw[c] = sb_sum_result(&acc_dyx);
        if (j->db) j->db[c] = sb_sum_result(&acc_dy);
    }
}

void sb_cpu_group_norm_backward(const float *dy, const float *x, const float *gamma,
                                const float *mean, const float *rstd, float *dx, float *dgamma,
                                float *dbeta, int64_t N, int64_t C, int64_t S, int64_t G) {
    ln_job j = {.x = x, .dy = dy, .w = gamma, .mean = mean, .rstd = rstd, .y = dx,
                .dw = dgamma, .db = dbeta, .R = N * G, .D = (C / G) * S, .G = G, .S = S};
    if (dx) sb_parallel_for(j.R, grain_for(j.R, 3 * j.D), ln_dx_range, &j);
    if (dgamma || dbeta) sb_parallel_for(C, grain_for(C, 2 * N * S), gn_param_range, &j);
}
