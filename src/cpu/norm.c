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
    MIN_WORK = 8192, /* elements per thread range, at least */
    DIRECT_RUN = 32  /* x's runs summed where they lie from this length */
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
    bool contiguous = g->outer == 1 || g->stride == g->inner;
    if (kind == T_X && g->outer == 1) {
        *sa = sb_cpu_sum_canonical(g->x, n, 1); /* one contiguous run, no copy */
        return;
    }
    /* the variance's terms summed as they are computed, not stored first */
    const sb_cpu_kernels *k = sb_kernels();
    if (kind == T_SQDEV && contiguous && n <= SB_SUM_BLOCK && k->sqdev_sum_block &&
        k->sqdev_sum_block(g->x, n, g->m, sa))
        return;
    if (n <= CHUNK) {
        terms(kind, g, 0, n, a, b);
        *sa = sb_cpu_sum_canonical(a, n, 1);
        if (two) *sb = sb_cpu_sum_canonical(b, n, 1);
        return;
    }
    sb_sum_acc acc_a, acc_b;
    sb_sum_init(&acc_a);
    if (two) sb_sum_init(&acc_b);
    if (kind == T_X && g->inner >= DIRECT_RUN) {
        /* contiguous runs of a lane row or more: straight into the
         * accumulator (the same stream as through the buffer) */
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

/* Channel c's statistics once its sum of squared deviations is known
 * (training: the running statistics updated too): stat[2c] = mean,
 * stat[2c + 1] = rstd. */
static void bn_finish_stats(const bn_job *j, int64_t c, float mean, float sumsq) {
    int64_t count = j->N * j->S;
    float rstd;
    if (j->training) {
        float var_biased = sumsq / (float)count;
        rstd = 1.0f / sqrtf(var_biased + j->eps);
        if (j->running_mean) {
            float one_minus_momentum = 1.0f - j->momentum;
            float var_unbiased = sumsq / (float)(count - 1);
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

static void bn_stats_range(void *vjob, int64_t c0, int64_t c1) {
    const bn_job *j = vjob;
    float count_f = (float)(j->N * j->S);
    for (int64_t c = c0; c < c1; c++) {
        float mean = 0.0f, sumsq = 0.0f;
        if (j->training) {
            group g = {.x = j->x + c * j->S, .outer = j->N, .inner = j->S, .stride = j->C * j->S};
            float s;
            group_sums(T_X, &g, &s, NULL);
            mean = s / count_f;
            g.m = mean;
            group_sums(T_SQDEV, &g, &sumsq, NULL);
        }
        bn_finish_stats(j, c, mean, sumsq);
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


/* Channel c's parameter gradients and the factors of its input gradient
 * (stat[5c ..]: mean, rstd, k, a, b) from its two sums. */
static void bn_finish_back_stats(const bn_job *j, int64_t c, float sum_dy, float sum_dy_xhat) {
    float count_f = (float)(j->N * j->S), r = j->save_rstd[c];
    if (j->dgamma) j->dgamma[c] = sum_dy_xhat;
    if (j->dbeta) j->dbeta[c] = sum_dy;
    float *st = j->stat + 5 * c;
    st[0] = j->save_mean[c];
    st[1] = r;
    st[2] = j->gamma ? j->gamma[c] * r : r;
    st[3] = sum_dy / count_f;
    st[4] = sum_dy_xhat / count_f;
}

static void bn_back_stats_range(void *vjob, int64_t c0, int64_t c1) {
    const bn_job *j = vjob;
    for (int64_t c = c0; c < c1; c++) {
        float m = j->save_mean[c], r = j->save_rstd[c];
        group g = {.x = j->x + c * j->S, .dy = j->dy + c * j->S, .outer = j->N,
                   .inner = j->S, .stride = j->C * j->S, .m = m, .r = r};
        float sum_dy, sum_dy_xhat;
        group_sums(T_DY_DYX, &g, &sum_dy, &sum_dy_xhat);
        bn_finish_back_stats(j, c, sum_dy, sum_dy_xhat);
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

/* ---- batch norm over few pixels per channel ----
 * A channel's sums run over (n, s), n slowest; with few s per n the group
 * walk is a call per run of S elements (one element at ResNet's last stage
 * at CIFAR size). Below BN_FEW_S they are column sums instead
 * (sb_cpu_sum_columns_of) of the matrix whose row k = n*S + s holds every
 * channel's element (n, c, s): each channel sees the same terms in the same
 * order. The maps run a sample at a time over its C*S elements with each
 * channel's factors repeated S times, one vector pass per IEEE step of the
 * reference's element sequence. */
enum { BN_FEW_S = 16 };

typedef enum { BN_COL_X, BN_COL_SQDEV, BN_COL_DY_DYX } bn_col_kind;

typedef struct bn_cols {
    const bn_job *j;
    bn_col_kind kind;
    const float *mean, *rstd; /* per channel */
} bn_cols;

/* Row k's elements of channels c0 .. c0+n-1 of t (N, C, S): in place when
 * S is 1, else gathered into buf. */
static const float *bn_row(const bn_job *j, const float *t, int64_t k, int64_t c0, int64_t n,
                           float *buf) {
    int64_t S = j->S;
    const float *p = t + ((k / S) * j->C + c0) * S + k % S;
    if (S == 1) return p;
    for (int64_t c = 0; c < n; c++) buf[c] = p[c * S];
    return buf;
}

static void bn_col_terms(const void *vctx, int64_t k, int64_t c0, int64_t n, float *const bufs[2],
                         const float *t[2]) {
    const bn_cols *b = vctx;
    const sb_pwv_table *pw = sb_kernels()->pointwise;
    const float *x = bn_row(b->j, b->j->x, k, c0, n, bufs[1]);
    switch (b->kind) {
    case BN_COL_X:
        t[0] = x;
        break;
    case BN_COL_SQDEV: /* d = x - mean; d * d */
        pw->binary(SB_BINARY_SUB, n, x, 1, b->mean + c0, 1, bufs[1]);
        pw->binary(SB_BINARY_MUL, n, bufs[1], 1, bufs[1], 1, bufs[1]);
        t[0] = bufs[1];
        break;
    case BN_COL_DY_DYX: /* dy; dy * ((x - mean) * rstd) */
        pw->binary(SB_BINARY_SUB, n, x, 1, b->mean + c0, 1, bufs[1]);
        pw->binary(SB_BINARY_MUL, n, bufs[1], 1, b->rstd + c0, 1, bufs[1]);
        t[0] = bn_row(b->j, b->j->dy, k, c0, n, bufs[0]);
        pw->binary(SB_BINARY_MUL, n, t[0], 1, bufs[1], 1, bufs[1]);
        t[1] = bufs[1];
        break;
    }
}

static void bn_col_sums(const bn_job *j, bn_col_kind kind, const float *mean, const float *rstd,
                        float *out0, float *out1) {
    bn_cols b = {j, kind, mean, rstd};
    sb_column_terms terms = {bn_col_terms, &b, kind == BN_COL_DY_DYX ? 2 : 1};
    float *const out[2] = {out0, out1};
    sb_cpu_sum_columns_of(&terms, j->N * j->S, j->C, out);
}

/* The maps of few-pixel channels, a sample at a time: fac holds nfac
 * factor vectors of C*S floats (each channel's value repeated S times). */
typedef struct bn_few_map {
    const bn_job *j;
    const float *fac;
    bool backward;
} bn_few_map;

static void bn_few_map_range(void *vctx, int64_t n0, int64_t n1) {
    const bn_few_map *f = vctx;
    const bn_job *j = f->j;
    const sb_pwv_table *pw = sb_kernels()->pointwise;
    int64_t len = j->C * j->S;
    const float *m = f->fac, *r = m + len, *third = r + len, *fourth = third + len,
                *fifth = fourth + len;
    for (int64_t n = n0; n < n1; n++) {
        const float *x = j->x + n * len;
        float *y = j->y + n * len;
        if (!f->backward) { /* y = ((x - m) * r) [* gamma] [+ beta] */
            pw->binary(SB_BINARY_SUB, len, x, 1, m, 1, y);
            pw->binary(SB_BINARY_MUL, len, y, 1, r, 1, y);
            if (j->gamma) pw->binary(SB_BINARY_MUL, len, y, 1, third, 1, y);
            if (j->beta) pw->binary(SB_BINARY_ADD, len, y, 1, fourth, 1, y);
            continue;
        }
        const float *dy = j->dy + n * len;
        if (!j->training) { /* dx = dy * k */
            pw->binary(SB_BINARY_MUL, len, dy, 1, third, 1, y);
            continue;
        }
        /* dx = k * ((dy - a) - xhat * b), xhat = (x - m) * r, through the
         * sample's scratch row */
        float *xb = sb_scratch(SB_SCRATCH_OPS, (size_t)len * sizeof *xb);
        if (!xb) {
            for (int64_t c = 0; c < j->C; c++)
                pw->norm_dx(j->S, x + c * j->S, dy + c * j->S, NULL, 0, m[c * j->S],
                            r[c * j->S], third[c * j->S], fourth[c * j->S], fifth[c * j->S],
                            y + c * j->S);
            continue;
        }
        pw->binary(SB_BINARY_SUB, len, x, 1, m, 1, xb);
        pw->binary(SB_BINARY_MUL, len, xb, 1, r, 1, xb);
        pw->binary(SB_BINARY_MUL, len, xb, 1, fifth, 1, xb);
        pw->binary(SB_BINARY_SUB, len, dy, 1, fourth, 1, y);
        pw->binary(SB_BINARY_SUB, len, y, 1, xb, 1, y);
        pw->binary(SB_BINARY_MUL, len, third, 1, y, 1, y);
    }
}

/* The factor vectors of the few-pixel maps from stat (stride floats per
 * channel: forward mean, rstd; backward mean, rstd, k, a, b), then gamma
 * and beta for the forward; runs the maps; false (nothing written) when
 * memory ran out. */
static bool bn_few_maps(const bn_job *j, int64_t stride, bool backward) {
    int64_t C = j->C, S = j->S, len = C * S, nfac = backward ? 5 : 4;
    float *fac = malloc((size_t)(nfac * len) * sizeof *fac);
    if (!fac) return false;
    for (int64_t c = 0; c < C; c++)
        for (int64_t f = 0; f < nfac; f++) {
            float v = f < stride                 ? j->stat[stride * c + f]
                      : f == 2                   ? (j->gamma ? j->gamma[c] : 0.0f)
                                                 : (j->beta ? j->beta[c] : 0.0f);
            for (int64_t s = 0; s < S; s++) fac[f * len + c * S + s] = v;
        }
    bn_few_map fm = {j, fac, backward};
    sb_parallel_for(j->N, grain_for(j->N, len), bn_few_map_range, &fm);
    free(fac);
    return true;
}

/* The forward's statistics of few-pixel channels (training) as column
 * sums; false when memory ran out. */
static bool bn_few_stats(const bn_job *j) {
    int64_t C = j->C;
    float *sum = malloc((size_t)(2 * C) * sizeof *sum);
    if (!sum) return false;
    float *mean = sum + C, count_f = (float)(j->N * j->S);
    bn_col_sums(j, BN_COL_X, NULL, NULL, sum, NULL);
    for (int64_t c = 0; c < C; c++) mean[c] = sum[c] / count_f;
    bn_col_sums(j, BN_COL_SQDEV, mean, NULL, sum, NULL);
    for (int64_t c = 0; c < C; c++) bn_finish_stats(j, c, mean[c], sum[c]);
    free(sum);
    return true;
}

/* The backward's sums of few-pixel channels; false when memory ran out. */
static bool bn_few_back_stats(const bn_job *j) {
    int64_t C = j->C;
    float *sum = malloc((size_t)(2 * C) * sizeof *sum);
    if (!sum) return false;
    bn_col_sums(j, BN_COL_DY_DYX, j->save_mean, j->save_rstd, sum, sum + C);
    for (int64_t c = 0; c < C; c++) bn_finish_back_stats(j, c, sum[c], sum[C + c]);
    free(sum);
    return true;
}

static bool bn_few_pixels(const bn_job *j) { return j->S < BN_FEW_S && j->N * j->S > 0; }

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
    bool few = bn_few_pixels(&j);
    if (!(few && training && bn_few_stats(&j)))
        sb_parallel_for(C, grain_for(C, training ? 2 * N * S : 1), bn_stats_range, &j);
    /* After the statistics: save_mean / save_rstd may alias the running
     * buffers or x only as in the reference, which writes them per channel
     * after reading that channel. */
    for (int64_t c = 0; c < C; c++) {
        if (save_mean) save_mean[c] = stat[2 * c];
        if (save_rstd) save_rstd[c] = stat[2 * c + 1];
    }
    if (!(few && bn_few_maps(&j, 2, false)))
        sb_parallel_for(N * C, grain_for(N * C, S), bn_map_range, &j);
    free(stat);
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
    bool few = bn_few_pixels(&j);
    if (!(few && bn_few_back_stats(&j)))
        sb_parallel_for(C, grain_for(C, N * S), bn_back_stats_range, &j);
    if (dx && !(few && bn_few_maps(&j, 5, true)))
        sb_parallel_for(N * C, grain_for(N * C, S), bn_back_map_range, &j);
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

/* The same sums over few pixels per channel (S < BN_FEW_S), as batch
 * norm's: column sums (sb_cpu_sum_columns_of) over rows k = (n, s) of every
 * channel's element, each normalised with its (n, group)'s statistics
 * (terms: dy, then dy * xhat, the reference's operations per element);
 * false when memory ran out. */
static void gn_col_terms(const void *vjob, int64_t k, int64_t c0, int64_t n, float *const bufs[2],
                         const float *t[2]) {
    const ln_job *j = vjob;
    int64_t S = j->S, cg = j->D / S, C = j->G * cg, smp = k / S;
    const float *xp = j->x + (smp * C + c0) * S + k % S, *dyp = j->dy + (smp * C + c0) * S + k % S;
    for (int64_t c = 0; c < n; c++) {
        int64_t r = smp * j->G + (c0 + c) / cg;
        float d = dyp[c * S], xhat = (xp[c * S] - j->mean[r]) * j->rstd[r];
        bufs[0][c] = d;
        bufs[1][c] = d * xhat;
    }
    t[0] = bufs[0];
    t[1] = bufs[1];
}

static bool gn_few_params(const ln_job *j, int64_t C) {
    float *tmp = (j->dw && j->db) ? NULL : malloc((size_t)C * sizeof *tmp);
    if (!(j->dw && j->db) && !tmp) return false;
    sb_column_terms terms = {gn_col_terms, j, 2};
    float *const out[2] = {j->db ? j->db : tmp, j->dw ? j->dw : tmp};
    sb_cpu_sum_columns_of(&terms, j->R / j->G * j->S, C, out);
    free(tmp);
    return true;
}

void sb_cpu_group_norm_backward(const float *dy, const float *x, const float *gamma,
                                const float *mean, const float *rstd, float *dx, float *dgamma,
                                float *dbeta, int64_t N, int64_t C, int64_t S, int64_t G) {
    ln_job j = {.x = x, .dy = dy, .w = gamma, .mean = mean, .rstd = rstd, .y = dx,
                .dw = dgamma, .db = dbeta, .R = N * G, .D = (C / G) * S, .G = G, .S = S};
    if (dx) sb_parallel_for(j.R, grain_for(j.R, 3 * j.D), ln_dx_range, &j);
    if ((dgamma || dbeta) && !(S < BN_FEW_S && N * S > 0 && gn_few_params(&j, C)))
        sb_parallel_for(C, grain_for(C, 2 * N * S), gn_param_range, &j);
}
