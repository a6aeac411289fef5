/* Tests for batch, layer and group norm (contract section "Normalisation").
 *
 * Three kinds of evidence:
 *   1. bitwise equality with an independent restatement of each contract
 *      sequence written here (gather a channel/row into an array, sum it with
 *      a test-local recursive canonical sum, apply the stated operations);
 *   2. closeness to float64 (values, running statistics with PyTorch's
 *      momentum/unbiased-variance semantics, and gradients checked against
 *      float64 central finite differences of L = sum(y * r));
 *   3. adversarial inputs (constant channels, huge offsets, NaN/inf, counts
 *      of 1, 33 and > 8192) and bad arguments with the error message.
 * Order tests also show that a different summation or FMA order would give
 * different bits for the same inputs, so the bitwise checks can fail. */
#include <math.h>
#include "harness.h"
#include "support/oracle.h"

/* ---- test-local tools ---- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng_next(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}
/* Uniform in [-1, 1), 24 random bits: exact in float. */
static float urand(void) { return (float)(rng_next() >> 40) * 0x1p-23f - 1.0f; }

static sb_tensor *mk(int ndim, const int64_t *shape) {
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, SB_F32, ndim, shape) != SB_OK) {
        fprintf(stderr, "sb_tensor_new failed: %s\n", sb_last_error());
        exit(2);
    }
    return t;
}
static sb_tensor *mkvec(int64_t n) { return mk(1, &n); }
static float *F(const sb_tensor *t) { return t ? (float *)t->data : NULL; }
static void fill_rand(sb_tensor *t, float offset, float spread) {
    int64_t n = sb_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) F(t)[i] = offset + spread * urand();
}

static int same(float a, float b) {
    /* A NaN result may be any NaN (the contract leaves payload/sign open). */
    return sb_test_bits(a) == sb_test_bits(b) || (isnan(a) && isnan(b));
}
static void check_same(const char *label, const char *what, const float *got,
                       const float *want, int64_t n) {
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++)
        if (!same(got[i], want[i])) { if (first < 0) first = i; bad++; }
    CHECK(bad == 0, "%s: %s: %lld of %lld differ from the restated contract, first [%lld]: "
          "got %a want %a", label, what, (long long)bad, (long long)n, (long long)first,
          first >= 0 ? got[first] : 0.0f, first >= 0 ? want[first] : 0.0f);
}

/* ---- restated contract: batch norm, per channel over gathered arrays ---- */

typedef struct {
    int64_t N, C, S;
} bn_dims;

static void gather_channel(const float *x, bn_dims d, int64_t c, float *out) {
    int64_t k = 0;
    for (int64_t n = 0; n < d.N; n++)
        for (int64_t s = 0; s < d.S; s++) out[k++] = x[(n * d.C + c) * d.S + s];
}
static void scatter_channel(float *x, bn_dims d, int64_t c, const float *in) {
    int64_t k = 0;
    for (int64_t n = 0; n < d.N; n++)
        for (int64_t s = 0; s < d.S; s++) x[(n * d.C + c) * d.S + s] = in[k++];
}

static void model_bn_forward(const float *x, const float *g, const float *b, float *rm,
                             float *rv, int train, float mom, float eps, float *y, float *smean,
                             float *srstd, bn_dims d) {
    int64_t cnt = d.N * d.S;
    float *v = malloc((size_t)(cnt + 1) * sizeof *v), *sq = malloc((size_t)(cnt + 1) * sizeof *sq);
    for (int64_t c = 0; c < d.C; c++) {
        gather_channel(x, d, c, v);
        float mean, rstd;
        if (train) {
            mean = oracle_canonical_sum(v, cnt) / (float)cnt;
            for (int64_t i = 0; i < cnt; i++) {
                float dev = v[i] - mean;
                sq[i] = dev * dev;
            }
            float ss = oracle_canonical_sum(sq, cnt);
            float var = ss / (float)cnt;
            float sd = sqrtf(var + eps);
            rstd = 1.0f / sd;
            if (rm) {
                float vu = ss / (float)(cnt - 1);
                float keep = 1.0f - mom;
                float a1 = keep * rm[c], a2 = mom * mean;
                rm[c] = a1 + a2;
                float b1 = keep * rv[c], b2 = mom * vu;
                rv[c] = b1 + b2;
            }
        } else {
            mean = rm[c];
            float sd = sqrtf(rv[c] + eps);
            rstd = 1.0f / sd;
        }
        if (smean) smean[c] = mean;
        if (srstd) srstd[c] = rstd;
        for (int64_t i = 0; i < cnt; i++) {
            float t = v[i] - mean;
            t = t * rstd;
            if (g) t = t * g[c];
            if (b) t = t + b[c];
            v[i] = t;
        }
        scatter_channel(y, d, c, v);
    }
    free(v);
    free(sq);
}

static void model_bn_backward(const float *dy, const float *x, const float *g, const float *m,
                              const float *r, int train, float *dx, float *dg, float *db,
                              bn_dims d) {
    int64_t cnt = d.N * d.S;
    size_t bytes = (size_t)(cnt + 1) * sizeof(float);
    float *xv = malloc(bytes), *dyv = malloc(bytes), *xh = malloc(bytes), *p = malloc(bytes);
    for (int64_t c = 0; c < d.C; c++) {
        gather_channel(x, d, c, xv);
        gather_channel(dy, d, c, dyv);
        for (int64_t i = 0; i < cnt; i++) {
            xh[i] = (xv[i] - m[c]) * r[c];
            p[i] = dyv[i] * xh[i];
        }
        float sdy = oracle_canonical_sum(dyv, cnt), sdyx = oracle_canonical_sum(p, cnt);
        dg[c] = sdyx;
        db[c] = sdy;
        float k = g ? g[c] * r[c] : r[c];
        float a = sdy / (float)cnt, bq = sdyx / (float)cnt;
        for (int64_t i = 0; i < cnt; i++) {
            if (train) {
                float u = dyv[i] - a, w = xh[i] * bq;
                xv[i] = k * (u - w);
            } else {
                xv[i] = dyv[i] * k;
            }
        }
        scatter_channel(dx, d, c, xv);
    }
    free(xv); free(dyv); free(xh); free(p);
}

/* ---- restated contract: layer norm ---- */

static void model_ln_forward(const float *x, const float *w, const float *b, float eps,
                             float *y, float *sm, float *sr, int64_t R, int64_t D) {
    float *sq = malloc((size_t)D * sizeof *sq);
    for (int64_t r = 0; r < R; r++) {
        const float *row = x + r * D;
        float mean = oracle_canonical_sum(row, D) / (float)D;
        for (int64_t i = 0; i < D; i++) {
            float dev = row[i] - mean;
            sq[i] = dev * dev;
        }
        float var = oracle_canonical_sum(sq, D) / (float)D;
        float rstd = 1.0f / sqrtf(var + eps);
        sm[r] = mean;
        sr[r] = rstd;
        for (int64_t i = 0; i < D; i++) {
            float t = (row[i] - mean) * rstd;
            if (w) t = t * w[i];
            if (b) t = t + b[i];
            y[r * D + i] = t;
        }
    }
    free(sq);
}

static void model_ln_backward(const float *dy, const float *x, const float *w, const float *m,
                              const float *rs, float *dx, float *dw, float *db, int64_t R,
                              int64_t D) {
    size_t bytes = (size_t)(D > R ? D : R) * sizeof(float) + 4;
    float *g = malloc(bytes), *gx = malloc(bytes), *xh = malloc(bytes), *col = malloc(bytes),
          *col2 = malloc(bytes);
    for (int64_t r = 0; r < R; r++) {
        for (int64_t i = 0; i < D; i++) {
            xh[i] = (x[r * D + i] - m[r]) * rs[r];
            g[i] = w ? dy[r * D + i] * w[i] : dy[r * D + i];
            gx[i] = g[i] * xh[i];
        }
        float a = oracle_canonical_sum(g, D) / (float)D, bq = oracle_canonical_sum(gx, D) / (float)D;
        for (int64_t i = 0; i < D; i++) {
            float u = g[i] - a, v = xh[i] * bq;
            dx[r * D + i] = rs[r] * (u - v);
        }
    }
    for (int64_t i = 0; i < D; i++) {
        for (int64_t r = 0; r < R; r++) {
            float xhat = (x[r * D + i] - m[r]) * rs[r];
            col[r] = dy[r * D + i] * xhat;
            col2[r] = dy[r * D + i];
        }
        dw[i] = oracle_canonical_sum(col, R);
        db[i] = oracle_canonical_sum(col2, R);
    }
    free(g); free(gx); free(xh); free(col); free(col2);
}

/* ---- float64 oracles ---- */

/* y in float64 from the same float inputs; train: batch stats, else running.
 * Also returns the float64 batch mean and unbiased variance per channel. */
static void f64_bn_forward(const double *x, const double *g, const double *b, const double *rm,
                           const double *rv, int train, double eps, double *y, double *mean_out,
                           double *varu_out, bn_dims d) {
    int64_t cnt = d.N * d.S;
    for (int64_t c = 0; c < d.C; c++) {
        double mean = 0, ss = 0;
        for (int64_t n = 0; n < d.N; n++)
            for (int64_t s = 0; s < d.S; s++) mean += x[(n * d.C + c) * d.S + s];
        mean /= (double)cnt;
        for (int64_t n = 0; n < d.N; n++)
            for (int64_t s = 0; s < d.S; s++) {
                double dv = x[(n * d.C + c) * d.S + s] - mean;
                ss += dv * dv;
            }
        if (mean_out) mean_out[c] = mean;
        if (varu_out) varu_out[c] = cnt > 1 ? ss / (double)(cnt - 1) : NAN;
        double mu = train ? mean : rm[c];
        double var = train ? ss / (double)cnt : rv[c];
        double rstd = 1.0 / sqrt(var + eps);
        for (int64_t n = 0; n < d.N; n++)
            for (int64_t s = 0; s < d.S; s++) {
                int64_t i = (n * d.C + c) * d.S + s;
                y[i] = (x[i] - mu) * rstd * (g ? g[c] : 1.0) + (b ? b[c] : 0.0);
            }
    }
}

static void f64_ln_forward(const double *x, const double *w, const double *b, double eps,
                           double *y, int64_t R, int64_t D) {
    for (int64_t r = 0; r < R; r++) {
        double mean = 0, ss = 0;
        for (int64_t i = 0; i < D; i++) mean += x[r * D + i];
        mean /= (double)D;
        for (int64_t i = 0; i < D; i++) ss += (x[r * D + i] - mean) * (x[r * D + i] - mean);
        double rstd = 1.0 / sqrt(ss / (double)D + eps);
        for (int64_t i = 0; i < D; i++)
            y[r * D + i] = (x[r * D + i] - mean) * rstd * (w ? w[i] : 1.0) + (b ? b[i] : 0.0);
    }
}

static double *to_f64(const float *v, int64_t n) {
    double *o = malloc((size_t)(n + 1) * sizeof *o);
    for (int64_t i = 0; i < n; i++) o[i] = v ? (double)v[i] : 0.0;
    return v ? o : (free(o), (double *)NULL);
}

/* ---- batch norm: one configuration, all checks ---- */

enum { AFF_NONE, AFF_BOTH, AFF_GAMMA, AFF_BETA };

typedef struct {
    const char *label;
    int ndim;
    int64_t shape[5];
    int affine;
    int train;
    int running;      /* pass running stats */
    float offset, spread;
    float momentum, eps;
    double tol_rel;   /* float64 closeness: |y - y64| <= tol_rel * (1 + |y64|) + tol_cancel */
} bn_case;

static void run_bn_case(const bn_case *k) {
    bn_dims d = {k->shape[0], k->shape[1], 1};
    for (int i = 2; i < k->ndim; i++) d.S *= k->shape[i];
    int64_t n = d.N * d.C * d.S, C = d.C;
    sb_tensor *x = mk(k->ndim, k->shape), *y = mk(k->ndim, k->shape), *dy = mk(k->ndim, k->shape),
              *dx = mk(k->ndim, k->shape);
    sb_tensor *g = NULL, *b = NULL, *rm = NULL, *rv = NULL;
    sb_tensor *sm = mkvec(C), *sr = mkvec(C), *dg = mkvec(C), *db = mkvec(C);
    fill_rand(x, k->offset, k->spread);
    fill_rand(dy, 0.0f, 1.0f);
    if (k->affine == AFF_BOTH || k->affine == AFF_GAMMA) { g = mkvec(C); fill_rand(g, 1.0f, 0.5f); }
    if (k->affine == AFF_BOTH || k->affine == AFF_BETA) { b = mkvec(C); fill_rand(b, 0.0f, 0.5f); }
    if (k->running) {
        rm = mkvec(C); rv = mkvec(C);
        fill_rand(rm, k->train ? 0.0f : k->offset, 0.5f);
        fill_rand(rv, 1.0f, 0.5f);
    }
    /* Garbage in the outputs: the functions must write, not accumulate. */
    for (int64_t i = 0; i < n; i++) F(y)[i] = F(dx)[i] = 1234.5f;
    for (int64_t c = 0; c < C; c++) F(dg)[c] = F(db)[c] = F(sm)[c] = F(sr)[c] = -77.0f;

    float *rm0 = malloc((size_t)(C + 1) * 4), *rv0 = malloc((size_t)(C + 1) * 4);
    for (int64_t c = 0; c < C; c++) { rm0[c] = rm ? F(rm)[c] : 0; rv0[c] = rv ? F(rv)[c] : 0; }

    CHECK_OK(sb_batch_norm_forward(x, g, b, rm, rv, k->train, k->momentum, k->eps, y, sm, sr));
    CHECK_OK(sb_batch_norm_backward(dy, x, g, sm, sr, k->train, dx, dg, db));

    /* 1. Bitwise against the restatement. */
    float *wy = malloc((size_t)n * 4), *wdx = malloc((size_t)n * 4);
    float *wsm = malloc((size_t)C * 4 + 4), *wsr = malloc((size_t)C * 4 + 4);
    float *wdg = malloc((size_t)C * 4 + 4), *wdb = malloc((size_t)C * 4 + 4);
    float *wrm = malloc((size_t)C * 4 + 4), *wrv = malloc((size_t)C * 4 + 4);
    memcpy(wrm, rm0, (size_t)C * 4);
    memcpy(wrv, rv0, (size_t)C * 4);
    model_bn_forward(F(x), F(g), F(b), rm ? wrm : NULL, rv ? wrv : NULL, k->train, k->momentum,
                     k->eps, wy, wsm, wsr, d);
    model_bn_backward(F(dy), F(x), F(g), wsm, wsr, k->train, wdx, wdg, wdb, d);
    check_same(k->label, "y", F(y), wy, n);
    check_same(k->label, "save_mean", F(sm), wsm, C);
    check_same(k->label, "save_rstd", F(sr), wsr, C);
    if (rm) {
        check_same(k->label, "running_mean", F(rm), wrm, C);
        check_same(k->label, "running_var", F(rv), wrv, C);
    }
    check_same(k->label, "dx", F(dx), wdx, n);
    check_same(k->label, "dgamma", F(dg), wdg, C);
    check_same(k->label, "dbeta", F(db), wdb, C);

    /* 2. Close to float64 (finite data only). */
    double *x64 = to_f64(F(x), n), *g64 = to_f64(F(g), C), *b64 = to_f64(F(b), C);
    double *rm64 = to_f64(rm0, C), *rv64 = to_f64(rv0, C);
    double *y64 = malloc((size_t)n * 8), *mean64 = malloc((size_t)C * 8 + 8),
           *varu64 = malloc((size_t)C * 8 + 8);
    f64_bn_forward(x64, g64, b64, rm64, rv64, k->train, k->eps, y64, mean64, varu64, d);
    double worst = 0;
    for (int64_t c = 0; c < C; c++) {
        /* The float mean is only known to a few ulp of the channel's largest
         * |x|; x - mean turns that into an absolute error, scaled by rstd and
         * gamma (cancellation, inherent to any float32 algorithm). */
        double rstd = F(sr)[c], big = 0;
        double gamma = g ? fabs(F(g)[c]) : 1.0;
        for (int64_t nn = 0; nn < d.N; nn++)
            for (int64_t s = 0; s < d.S; s++) big = fmax(big, fabs(F(x)[(nn * C + c) * d.S + s]));
        double cancel = 4.0 * big * 0x1p-24 * rstd * gamma;
        for (int64_t nn = 0; nn < d.N; nn++)
            for (int64_t s = 0; s < d.S; s++) {
                int64_t i = (nn * C + c) * d.S + s;
                double err = fabs(F(y)[i] - y64[i]) / (k->tol_rel * (1 + fabs(y64[i])) + cancel);
                if (err > worst) worst = err;
            }
    }
    CHECK(worst <= 1.0, "%s: y vs float64: worst error is %.3g x the tolerance", k->label, worst);
    if (rm && k->train) {
        /* PyTorch semantics in float64: (1 - m) * old + m * stat, unbiased var. */
        double m = k->momentum, worst_rs = 0;
        for (int64_t c = 0; c < C; c++) {
            double want_m = (1 - m) * rm0[c] + m * mean64[c];
            double want_v = (1 - m) * rv0[c] + m * varu64[c];
            double scale_m = fabs(want_m) + fabs(k->offset) * 4e-7 * m + 1e-7;
            double em = fabs(F(rm)[c] - want_m) / scale_m;
            double ev = fabs(F(rv)[c] - want_v) / (fabs(want_v) + 1e-30);
            if (em > worst_rs) worst_rs = em;
            if (ev / 8 > worst_rs) worst_rs = ev / 8;
        }
        CHECK(worst_rs <= 4e-6, "%s: running stats vs float64 PyTorch semantics: rel err %.3g",
              k->label, worst_rs);
    }

    free(rm0); free(rv0); free(wy); free(wdx); free(wsm); free(wsr); free(wdg); free(wdb);
    free(wrm); free(wrv); free(x64); free(g64); free(b64); free(rm64); free(rv64); free(y64);
    free(mean64); free(varu64);
    sb_tensor *all[] = {x, y, dy, dx, g, b, rm, rv, sm, sr, dg, db};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) sb_tensor_free(all[i]);
}

static void test_bn_configurations(void) {
    const float M = 0.1f, E = 1e-5f;
    const bn_case cases[] = {
        {"bn (4,3) train affine", 2, {4, 3}, AFF_BOTH, 1, 1, 0, 1, M, E, 4e-6},
        {"bn (2,33) train no affine", 2, {2, 33}, AFF_NONE, 1, 1, 0.5f, 2, M, E, 4e-6},
        {"bn (33,2) train gamma only, no running", 2, {33, 2}, AFF_GAMMA, 1, 0, 0, 1, M, E, 4e-6},
        {"bn (5,2,7) train beta only", 3, {5, 2, 7}, AFF_BETA, 1, 1, 0, 1, M, E, 4e-6},
        {"bn (2,3,4,5) train affine", 4, {2, 3, 4, 5}, AFF_BOTH, 1, 1, 0, 1, 0.3f, 1e-3f, 4e-6},
        {"bn (1,1,33) train 33 per channel", 3, {1, 1, 33}, AFF_BOTH, 1, 1, 0, 1, M, E, 4e-6},
        {"bn (3,2,60,60) train >8192 per channel", 4, {3, 2, 60, 60}, AFF_BOTH, 1, 1, 0, 1, M, E,
         4e-6},
        {"bn (3,1,60,60) train huge offset", 4, {3, 1, 60, 60}, AFF_BOTH, 1, 1, 1e4f, 1, M, E, 4e-6},
        {"bn (40,3,2) train offset 1e4", 3, {40, 3, 2}, AFF_NONE, 1, 1, 1e4f, 0.01f, M, E, 4e-6},
        {"bn (2,2,3,3,3) train 3-D spatial", 5, {2, 2, 3, 3, 3}, AFF_BOTH, 1, 1, 0, 1, 1.0f, E,
         4e-6},
        {"bn (4,3) eval affine", 2, {4, 3}, AFF_BOTH, 0, 1, 0, 1, M, E, 4e-6},
        {"bn (5,2,7) eval no affine", 3, {5, 2, 7}, AFF_NONE, 0, 1, 3, 1, M, E, 4e-6},
        {"bn (3,2,60,60) eval", 4, {3, 2, 60, 60}, AFF_BOTH, 0, 1, 0, 1, 0.0f, E, 4e-6},
        {"bn (0,3) eval empty batch", 2, {0, 3}, AFF_BOTH, 0, 1, 0, 1, M, E, 4e-6},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_bn_case(&cases[i]);
}

/* ---- batch norm: adversarial values ---- */

static void test_bn_special_values(void) {
    /* Constant channel: exact sums, var = 0, rstd = 1/sqrtf(eps), y = beta. */
    {
        int64_t shape[4] = {3, 2, 60, 60};
        int64_t n = 3 * 2 * 3600;
        sb_tensor *x = mk(4, shape), *y = mk(4, shape), *g = mkvec(2), *b = mkvec(2),
                  *rm = mkvec(2), *rv = mkvec(2), *sm = mkvec(2), *sr = mkvec(2);
        for (int64_t i = 0; i < n; i++) F(x)[i] = ((i / 3600) % 2) ? -2.5f : 3.0f;
        F(g)[0] = 1.5f; F(g)[1] = -0.75f; F(b)[0] = 0.25f; F(b)[1] = -3.0f;
        F(rv)[0] = F(rv)[1] = 1.0f;
        CHECK_OK(sb_batch_norm_forward(x, g, b, rm, rv, true, 0.1f, 1e-5f, y, sm, sr));
        CHECK_BITS(F(sm)[0], 3.0f, "constant channel mean");
        CHECK_BITS(F(sm)[1], -2.5f, "constant channel mean");
        CHECK_BITS(F(sr)[0], 1.0f / sqrtf(1e-5f), "rstd of a zero variance");
        int bad = 0;
        for (int64_t i = 0; i < n; i++) bad += !same(F(y)[i], F(b)[(i / 3600) % 2]);
        CHECK(bad == 0, "constant input: %d outputs differ from beta", bad);
        CHECK_BITS(F(rv)[0], 0.9f * 1.0f, "running_var decays toward a zero variance");
        CHECK_BITS(F(rm)[1], 0.1f * -2.5f, "running_mean from 0");
        sb_tensor *all[] = {x, y, g, b, rm, rv, sm, sr};
        for (size_t i = 0; i < 8; i++) sb_tensor_free(all[i]);
    }
    /* NaN and inf poison only their own channel; others keep exact bits. */
    {
        int64_t shape[3] = {4, 3, 5};
        bn_dims d = {4, 3, 5};
        sb_tensor *x = mk(3, shape), *y = mk(3, shape), *rm = mkvec(3), *rv = mkvec(3),
                  *sm = mkvec(3), *sr = mkvec(3), *dy = mk(3, shape), *dx = mk(3, shape),
                  *dg = mkvec(3), *db = mkvec(3);
        fill_rand(x, 0, 1);
        fill_rand(dy, 0, 1);
        F(rv)[0] = F(rv)[1] = F(rv)[2] = 1.0f;
        F(x)[(2 * 3 + 0) * 5 + 3] = NAN;      /* channel 0 */
        F(x)[(1 * 3 + 2) * 5 + 0] = INFINITY; /* channel 2 */
        float wy[60], wsm[3], wsr[3], wrm[3] = {0, 0, 0}, wrv[3] = {1, 1, 1};
        float wdx[60], wdg[3], wdb[3];
        CHECK_OK(sb_batch_norm_forward(x, NULL, NULL, rm, rv, true, 0.1f, 1e-5f, y, sm, sr));
        CHECK_OK(sb_batch_norm_backward(dy, x, NULL, sm, sr, true, dx, dg, db));
        model_bn_forward(F(x), NULL, NULL, wrm, wrv, 1, 0.1f, 1e-5f, wy, wsm, wsr, d);
        model_bn_backward(F(dy), F(x), NULL, wsm, wsr, 1, wdx, wdg, wdb, d);
        int nan0 = 0, nan2 = 0, fin1 = 0;
        for (int64_t nn = 0; nn < 4; nn++)
            for (int s = 0; s < 5; s++) {
                nan0 += isnan(F(y)[(nn * 3 + 0) * 5 + s]) && isnan(F(dx)[(nn * 3 + 0) * 5 + s]);
                nan2 += isnan(F(y)[(nn * 3 + 2) * 5 + s]) && isnan(F(dx)[(nn * 3 + 2) * 5 + s]);
                fin1 += isfinite(F(y)[(nn * 3 + 1) * 5 + s]) != 0;
            }
        CHECK(nan0 == 20 && nan2 == 20 && fin1 == 20, "NaN/inf channels: %d %d NaN, %d finite",
              nan0, nan2, fin1);
        CHECK(isnan(F(rm)[0]) && isnan(F(rv)[2]) && isfinite(F(rm)[1]),
              "running stats: NaN only in poisoned channels");
        check_same("bn NaN/inf", "y", F(y), wy, 60);
        check_same("bn NaN/inf", "dx", F(dx), wdx, 60);
        check_same("bn NaN/inf", "dgamma", F(dg), wdg, 3);
        check_same("bn NaN/inf", "running_var", F(rv), wrv, 3);
        sb_tensor *all[] = {x, y, rm, rv, sm, sr, dy, dx, dg, db};
        for (size_t i = 0; i < 10; i++) sb_tensor_free(all[i]);
    }
    /* count == 1 in training without running stats: y == beta exactly. */
    {
        int64_t shape[2] = {1, 3};
        sb_tensor *x = mk(2, shape), *y = mk(2, shape), *b = mkvec(3), *sr = mkvec(3);
        F(x)[0] = 1e30f; F(x)[1] = -0.0f; F(x)[2] = 0x1p-149f;
        F(b)[0] = 0.5f; F(b)[1] = -2.0f; F(b)[2] = 7.0f;
        CHECK_OK(sb_batch_norm_forward(x, NULL, b, NULL, NULL, true, 0.1f, 1e-5f, y, NULL, sr));
        for (int c = 0; c < 3; c++) CHECK_BITS(F(y)[c], F(b)[c], "count 1: y = beta, c = %d", c);
        CHECK_BITS(F(sr)[0], 1.0f / sqrtf(1e-5f), "count 1: var = 0");
        sb_tensor_free(x); sb_tensor_free(y); sb_tensor_free(b); sb_tensor_free(sr);
    }
    /* Subnormal / signed-zero inputs follow the restated sequence exactly. */
    {
        int64_t shape[2] = {40, 2};
        bn_dims d = {40, 2, 1};
        sb_tensor *x = mk(2, shape), *y = mk(2, shape), *sm = mkvec(2), *sr = mkvec(2);
        for (int i = 0; i < 80; i++)
            F(x)[i] = (i % 3 == 0) ? -0.0f : (i % 3 == 1 ? 0x1p-140f * (float)(i + 1) : 0.0f);
        float wy[80], wsm[2], wsr[2];
        CHECK_OK(sb_batch_norm_forward(x, NULL, NULL, NULL, NULL, true, 0.1f, 1e-30f, y, sm, sr));
        model_bn_forward(F(x), NULL, NULL, NULL, NULL, 1, 0.1f, 1e-30f, wy, wsm, wsr, d);
        check_same("bn subnormal", "y", F(y), wy, 80);
        check_same("bn subnormal", "save_mean", F(sm), wsm, 2);
        sb_tensor_free(x); sb_tensor_free(y); sb_tensor_free(sm); sb_tensor_free(sr);
    }
}

/* ---- the order is the contract: alternatives give different bits ---- */

static void test_bn_order_matters(void) {
    /* Summation order: 2^25 absorbs each 1 in a sequential sum, not in lanes. */
    int64_t shape[2] = {64, 1};
    sb_tensor *x = mk(2, shape), *y = mk(2, shape), *sm = mkvec(1), *sr = mkvec(1);
    for (int i = 0; i < 64; i++) F(x)[i] = 1.0f;
    F(x)[0] = 0x1p25f;
    F(x)[63] = -0x1p25f;
    float seq = 0.0f;
    for (int i = 0; i < 64; i++) seq += F(x)[i];
    float canon_mean = oracle_canonical_sum(F(x), 64) / 64.0f;
    CHECK(seq / 64.0f != canon_mean, "sequential and canonical means must differ here");
    CHECK_OK(sb_batch_norm_forward(x, NULL, NULL, NULL, NULL, true, 0.1f, 1e-5f, y, sm, sr));
    CHECK_BITS(F(sm)[0], canon_mean, "mean uses the canonical sum");
    sb_tensor_free(x); sb_tensor_free(y); sb_tensor_free(sm); sb_tensor_free(sr);

    /* Two roundings vs fma in the affine step, rsqrt vs 1/sqrtf, and the
     * backward sequence vs the textbook (k/count)*(count*dy - ...) form. */
    /* count = 105, not a power of two, so dividing by it is inexact. */
    int64_t shp[3] = {15, 4, 7};
    bn_dims d = {15, 4, 7};
    int64_t n = 15 * 4 * 7;
    sb_tensor *x2 = mk(3, shp), *y2 = mk(3, shp), *g = mkvec(4), *b = mkvec(4), *sm2 = mkvec(4),
              *sr2 = mkvec(4), *dy = mk(3, shp), *dx = mk(3, shp);
    fill_rand(x2, 0.3f, 1);
    fill_rand(dy, 0, 1);
    fill_rand(g, 1, 0.5f);
    fill_rand(b, 0, 1);
    CHECK_OK(sb_batch_norm_forward(x2, g, b, NULL, NULL, true, 0.1f, 1e-5f, y2, sm2, sr2));
    CHECK_OK(sb_batch_norm_backward(dy, x2, g, sm2, sr2, true, dx, NULL, NULL));
    int fma_differs = 0, fma_matches_lib = 0, text_differs = 0, text_matches_lib = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t c = (i / 7) % 4;
        float xh = (F(x2)[i] - F(sm2)[c]) * F(sr2)[c];
        float with_fma = fmaf(xh, F(g)[c], F(b)[c]);
        float two = xh * F(g)[c] + F(b)[c];
        fma_differs += sb_test_bits(with_fma) != sb_test_bits(two);
        fma_matches_lib += sb_test_bits(with_fma) == sb_test_bits(F(y2)[i]) &&
                           sb_test_bits(with_fma) != sb_test_bits(two);
    }
    float wy[420], wsm[4], wsr[4], wdx[420], wdg[4], wdb[4];
    model_bn_forward(F(x2), F(g), F(b), NULL, NULL, 1, 0.1f, 1e-5f, wy, wsm, wsr, d);
    model_bn_backward(F(dy), F(x2), F(g), wsm, wsr, 1, wdx, wdg, wdb, d);
    for (int64_t i = 0; i < n; i++) {
        int64_t c = (i / 7) % 4;
        float xh = (F(x2)[i] - wsm[c]) * wsr[c];
        float cnt = 105.0f;
        float textbook = (F(g)[c] * wsr[c] / cnt) * ((cnt * F(dy)[i] - wdb[c]) - xh * wdg[c]);
        text_differs += sb_test_bits(textbook) != sb_test_bits(wdx[i]);
        text_matches_lib += sb_test_bits(textbook) == sb_test_bits(F(dx)[i]) &&
                            sb_test_bits(textbook) != sb_test_bits(wdx[i]);
    }
    CHECK(fma_differs > 0, "fma and two roundings never differ: the test cannot discriminate");
    CHECK(fma_matches_lib == 0, "library y follows the fma variant at %d elements",
          fma_matches_lib);
    CHECK(text_differs > 0, "textbook backward never differs: the test cannot discriminate");
    CHECK(text_matches_lib == 0, "library dx follows the textbook form at %d elements",
          text_matches_lib);
    check_same("bn order", "y", F(y2), wy, n);
    check_same("bn order", "dx", F(dx), wdx, n);
    /* 1/sqrtf(v) differs from the correctly rounded 1/sqrt(v) for some v: the
     * contract's rstd is the former. */
    int rsqrt_differs = 0;
    for (int i = 1; i < 2000; i++) {
        float v = 1.0f + (float)i * 0x1p-12f;
        rsqrt_differs += sb_test_bits(1.0f / sqrtf(v)) != sb_test_bits((float)(1.0 / sqrt((double)v)));
    }
    CHECK(rsqrt_differs > 0, "1/sqrtf and a correctly rounded rsqrt never differ");
    sb_tensor *all[] = {x2, y2, g, b, sm2, sr2, dy, dx};
    for (size_t i = 0; i < 8; i++) sb_tensor_free(all[i]);
}

/* ---- gradients vs float64 finite differences of L = sum(y * r) ---- */

typedef struct {
    double *x, *g, *b, *rm, *rv, *r, *ybuf;
    int train;
    double eps;
    bn_dims d;
} bn_ctx;

static double bn_loss64(void *p) {
    bn_ctx *k = p;
    f64_bn_forward(k->x, k->g, k->b, k->rm, k->rv, k->train, k->eps, k->ybuf, NULL, NULL, k->d);
    double L = 0;
    for (int64_t i = 0; i < k->d.N * k->d.C * k->d.S; i++) L += k->ybuf[i] * k->r[i];
    return L;
}

/* Central difference of loss(ctx) with respect to v[i]. */
static double fd(double (*loss)(void *), void *ctx, double *v, int64_t i) {
    double h = 1e-5 * (fabs(v[i]) > 1 ? fabs(v[i]) : 1), s = v[i];
    v[i] = s + h;
    double lp = loss(ctx);
    v[i] = s - h;
    double lm = loss(ctx);
    v[i] = s;
    return (lp - lm) / (2 * h);
}

static double max_abs(const double *v, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) if (fabs(v[i]) > m) m = fabs(v[i]);
    return m;
}

static void check_grad(const char *label, const char *what, const float *got,
                       const double *fd, int64_t n) {
    double scale = max_abs(fd, n) + 1e-3, worst = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(got[i] - fd[i]) / scale;
        if (e > worst) { worst = e; at = i; }
    }
    CHECK(worst <= 2e-4, "%s: %s vs finite differences: rel err %.3g at %lld (got %.9g, fd %.9g)",
          label, what, worst, (long long)at, (double)got[at], fd[at]);
}

static void test_bn_gradients(void) {
    for (int train = 1; train >= 0; train--) {
        int64_t shape[3] = {4, 3, 5};
        bn_dims d = {4, 3, 5};
        int64_t n = 60, C = 3;
        sb_tensor *x = mk(3, shape), *y = mk(3, shape), *r = mk(3, shape), *dx = mk(3, shape),
                  *g = mkvec(C), *b = mkvec(C), *rm = mkvec(C), *rv = mkvec(C), *sm = mkvec(C),
                  *sr = mkvec(C), *dg = mkvec(C), *db = mkvec(C);
        fill_rand(x, 0.5f, 2);
        fill_rand(r, 0, 1);
        fill_rand(g, 1, 0.5f);
        fill_rand(b, 0, 1);
        fill_rand(rm, 0.5f, 0.3f);
        fill_rand(rv, 1.5f, 0.5f);
        double *rm64 = to_f64(F(rm), C), *rv64 = to_f64(F(rv), C);
        float eps = 1e-3f;
        CHECK_OK(sb_batch_norm_forward(x, g, b, train ? NULL : rm, train ? NULL : rv, train, 0.1f,
                                       eps, y, sm, sr));
        CHECK_OK(sb_batch_norm_backward(r, x, g, sm, sr, train, dx, dg, db));
        double *x64 = to_f64(F(x), n), *g64 = to_f64(F(g), C), *b64 = to_f64(F(b), C);
        double *r64 = to_f64(F(r), n), *ybuf = malloc(n * 8), *fdv = malloc(n * 8);
        bn_ctx ctx = {x64, g64, b64, rm64, rv64, r64, ybuf, train, eps, d};
        for (int64_t i = 0; i < n; i++) fdv[i] = fd(bn_loss64, &ctx, x64, i);
        const char *label = train ? "bn grad train" : "bn grad eval";
        check_grad(label, "dx", F(dx), fdv, n);
        for (int64_t c = 0; c < C; c++) fdv[c] = fd(bn_loss64, &ctx, g64, c);
        check_grad(label, "dgamma", F(dg), fdv, C);
        for (int64_t c = 0; c < C; c++) fdv[c] = fd(bn_loss64, &ctx, b64, c);
        check_grad(label, "dbeta", F(db), fdv, C);
        free(rm64); free(rv64); free(x64); free(g64); free(b64); free(r64); free(ybuf); free(fdv);
        sb_tensor *all[] = {x, y, r, dx, g, b, rm, rv, sm, sr, dg, db};
        for (size_t i = 0; i < 12; i++) sb_tensor_free(all[i]);
    }
}

/* ---- running statistics over several steps, PyTorch semantics ---- */

static void test_bn_running_steps(void) {
    int64_t shape[3] = {6, 2, 9};
    bn_dims d = {6, 2, 9};
    sb_tensor *x = mk(3, shape), *y = mk(3, shape), *rm = mkvec(2), *rv = mkvec(2);
    F(rv)[0] = F(rv)[1] = 1.0f; /* PyTorch's initial running_var */
    double rm64[2] = {0, 0}, rv64[2] = {1, 1};
    float wrm[2] = {0, 0}, wrv[2] = {1, 1}, wy[108], wsm[2], wsr[2];
    for (int step = 0; step < 5; step++) {
        fill_rand(x, (float)step, 1.0f + (float)step);
        CHECK_OK(sb_batch_norm_forward(x, NULL, NULL, rm, rv, true, 0.1f, 1e-5f, y, NULL, NULL));
        model_bn_forward(F(x), NULL, NULL, wrm, wrv, 1, 0.1f, 1e-5f, wy, wsm, wsr, d);
        double *x64 = to_f64(F(x), 108), y64[108], mean64[2], varu64[2];
        f64_bn_forward(x64, NULL, NULL, NULL, NULL, 1, 1e-5, y64, mean64, varu64, d);
        for (int c = 0; c < 2; c++) {
            rm64[c] = 0.9 * rm64[c] + 0.1 * mean64[c];
            rv64[c] = 0.9 * rv64[c] + 0.1 * varu64[c];
        }
        free(x64);
    }
    check_same("bn 5 steps", "running_mean", F(rm), wrm, 2);
    check_same("bn 5 steps", "running_var", F(rv), wrv, 2);
    for (int c = 0; c < 2; c++) {
        CHECK(fabs(F(rm)[c] - rm64[c]) <= 1e-6 * (1 + fabs(rm64[c])),
              "running_mean[%d] %.9g vs float64 %.9g", c, (double)F(rm)[c], rm64[c]);
        CHECK(fabs(F(rv)[c] - rv64[c]) <= 1e-6 * fabs(rv64[c]),
              "running_var[%d] %.9g vs float64 %.9g", c, (double)F(rv)[c], rv64[c]);
    }
    /* momentum 0 keeps, momentum 1 replaces (1 - 1 = 0, 0 * old = +0). */
    float keep_m = F(rm)[0], keep_v = F(rv)[0];
    CHECK_OK(sb_batch_norm_forward(x, NULL, NULL, rm, rv, true, 0.0f, 1e-5f, y, NULL, NULL));
    CHECK_BITS(F(rm)[0], keep_m, "momentum 0 keeps running_mean");
    CHECK_BITS(F(rv)[0], keep_v, "momentum 0 keeps running_var");
    sb_tensor *sm = mkvec(2);
    CHECK_OK(sb_batch_norm_forward(x, NULL, NULL, rm, rv, true, 1.0f, 1e-5f, y, sm, NULL));
    CHECK_BITS(F(rm)[1], F(sm)[1], "momentum 1 replaces running_mean by the batch mean");
    sb_tensor_free(x); sb_tensor_free(y); sb_tensor_free(rm); sb_tensor_free(rv);
    sb_tensor_free(sm);
}

/* ---- layer norm ---- */

typedef struct {
    const char *label;
    int ndim;
    int64_t shape[4];
    int nd;
    int affine; /* AFF_* with gamma = w, beta = b */
    float offset, spread, eps;
} ln_case;

static void run_ln_case(const ln_case *k) {
    int lead = k->ndim - k->nd;
    int64_t R = 1, D = 1;
    for (int i = 0; i < lead; i++) R *= k->shape[i];
    for (int i = lead; i < k->ndim; i++) D *= k->shape[i];
    int64_t n = R * D;
    sb_tensor *x = mk(k->ndim, k->shape), *y = mk(k->ndim, k->shape), *dy = mk(k->ndim, k->shape),
              *dx = mk(k->ndim, k->shape);
    sb_tensor *w = NULL, *b = NULL, *sm = mk(lead, k->shape), *sr = mk(lead, k->shape);
    sb_tensor *dw = mk(k->nd, k->shape + lead), *db = mk(k->nd, k->shape + lead);
    fill_rand(x, k->offset, k->spread);
    fill_rand(dy, 0, 1);
    if (k->affine == AFF_BOTH || k->affine == AFF_GAMMA) {
        w = mk(k->nd, k->shape + lead);
        fill_rand(w, 1, 0.5f);
    }
    if (k->affine == AFF_BOTH || k->affine == AFF_BETA) {
        b = mk(k->nd, k->shape + lead);
        fill_rand(b, 0, 0.5f);
    }
    for (int64_t i = 0; i < n; i++) F(dx)[i] = F(y)[i] = 99.0f;
    for (int64_t i = 0; i < D; i++) F(dw)[i] = F(db)[i] = -5.0f;
    CHECK_OK(sb_layer_norm_forward(x, k->nd, w, b, k->eps, y, sm, sr));
    CHECK_OK(sb_layer_norm_backward(dy, x, k->nd, w, sm, sr, dx, dw, db));

    float *wy = malloc((size_t)n * 4 + 4), *wdx = malloc((size_t)n * 4 + 4);
    float *wsm = malloc((size_t)R * 4 + 4), *wsr = malloc((size_t)R * 4 + 4);
    float *wdw = malloc((size_t)D * 4 + 4), *wdb = malloc((size_t)D * 4 + 4);
    model_ln_forward(F(x), F(w), F(b), k->eps, wy, wsm, wsr, R, D);
    model_ln_backward(F(dy), F(x), F(w), wsm, wsr, wdx, wdw, wdb, R, D);
    check_same(k->label, "y", F(y), wy, n);
    check_same(k->label, "save_mean", F(sm), wsm, R);
    check_same(k->label, "save_rstd", F(sr), wsr, R);
    check_same(k->label, "dx", F(dx), wdx, n);
    check_same(k->label, "dw", F(dw), wdw, D);
    check_same(k->label, "db", F(db), wdb, D);

    double *x64 = to_f64(F(x), n), *w64 = to_f64(F(w), D), *b64 = to_f64(F(b), D);
    double *y64 = malloc((size_t)n * 8 + 8), worst = 0;
    f64_ln_forward(x64, w64, b64, k->eps, y64, R, D);
    for (int64_t i = 0; i < n; i++) {
        /* As for batch norm: mean error ~ ulp of the row's largest |x|. */
        double big = 0;
        for (int64_t j = i / D * D; j < i / D * D + D; j++) big = fmax(big, fabs(F(x)[j]));
        double cancel = 4.0 * big * 0x1p-24 * F(sr)[i / D] * (w ? fabs(F(w)[i % D]) : 1.0);
        double e = fabs(F(y)[i] - y64[i]) / (4e-6 * (1 + fabs(y64[i])) + cancel);
        if (e > worst) worst = e;
    }
    CHECK(worst <= 1.0, "%s: y vs float64: worst error %.3g x the tolerance", k->label, worst);
    free(wy); free(wdx); free(wsm); free(wsr); free(wdw); free(wdb);
    free(x64); free(w64); free(b64); free(y64);
    sb_tensor *all[] = {x, y, dy, dx, w, b, sm, sr, dw, db};
    for (size_t i = 0; i < 10; i++) sb_tensor_free(all[i]);
}

static void test_ln_configurations(void) {
    const ln_case cases[] = {
        {"ln (4,33) affine", 2, {4, 33}, 1, AFF_BOTH, 0, 1, 1e-5f},
        {"ln (2,3,5) nd=2 affine", 3, {2, 3, 5}, 2, AFF_BOTH, 0.5f, 1, 1e-5f},
        {"ln (3,7) no affine", 2, {3, 7}, 1, AFF_NONE, 0, 3, 1e-5f},
        {"ln (5,1) D=1", 2, {5, 1}, 1, AFF_BOTH, 0, 1, 1e-5f},
        {"ln (6,) whole tensor, w only", 1, {6}, 1, AFF_GAMMA, 0, 1, 1e-5f},
        {"ln (2,2,4) nd=3 b only", 3, {2, 2, 4}, 3, AFF_BETA, 0, 1, 1e-3f},
        {"ln (2,9000) D > 8192", 2, {2, 9000}, 1, AFF_BOTH, 0, 1, 1e-5f},
        {"ln (8200,3) R > 8192 rows in dw", 2, {8200, 3}, 1, AFF_BOTH, 0, 1, 1e-5f},
        {"ln (3,64) offset 1e4", 2, {3, 64}, 1, AFF_BOTH, 1e4f, 1, 1e-5f},
        {"ln (0,5) no rows", 2, {0, 5}, 1, AFF_BOTH, 0, 1, 1e-5f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_ln_case(&cases[i]);
}

typedef struct {
    double *x, *w, *b, *r, *ybuf;
    double eps;
    int64_t R, D;
} ln_ctx;

static double ln_loss64(void *p) {
    ln_ctx *k = p;
    f64_ln_forward(k->x, k->w, k->b, k->eps, k->ybuf, k->R, k->D);
    double L = 0;
    for (int64_t i = 0; i < k->R * k->D; i++) L += k->ybuf[i] * k->r[i];
    return L;
}

static void test_ln_gradients_and_special(void) {
    int64_t shape[2] = {4, 9}, R = 4, D = 9, n = 36;
    sb_tensor *x = mk(2, shape), *y = mk(2, shape), *r = mk(2, shape), *dx = mk(2, shape),
              *w = mkvec(D), *b = mkvec(D), *dw = mkvec(D), *db = mkvec(D), *sm = mkvec(R),
              *sr = mkvec(R);
    fill_rand(x, 0.2f, 2);
    fill_rand(r, 0, 1);
    fill_rand(w, 1, 0.5f);
    fill_rand(b, 0, 1);
    CHECK_OK(sb_layer_norm_forward(x, 1, w, b, 1e-3f, y, sm, sr));
    CHECK_OK(sb_layer_norm_backward(r, x, 1, w, sm, sr, dx, dw, db));
    double *x64 = to_f64(F(x), n), *w64 = to_f64(F(w), D), *b64 = to_f64(F(b), D);
    double *r64 = to_f64(F(r), n), ybuf[36], fdv[36];
    ln_ctx ctx = {x64, w64, b64, r64, ybuf, (double)1e-3f, R, D};
    for (int64_t i = 0; i < n; i++) fdv[i] = fd(ln_loss64, &ctx, x64, i);
    check_grad("ln grad", "dx", F(dx), fdv, n);
    for (int64_t i = 0; i < D; i++) fdv[i] = fd(ln_loss64, &ctx, w64, i);
    check_grad("ln grad", "dw", F(dw), fdv, D);
    for (int64_t i = 0; i < D; i++) fdv[i] = fd(ln_loss64, &ctx, b64, i);
    check_grad("ln grad", "db", F(db), fdv, D);
    free(x64); free(w64); free(b64); free(r64);

    /* Constant row -> y = b exactly; NaN row -> NaN row, others untouched. */
    for (int64_t i = 0; i < D; i++) F(x)[i] = 6.0f;
    F(x)[2 * D + 4] = NAN;
    CHECK_OK(sb_layer_norm_forward(x, 1, w, b, 1e-5f, y, sm, sr));
    int eq = 0, nanrow = 0;
    for (int64_t i = 0; i < D; i++) {
        eq += same(F(y)[i], F(b)[i]);
        nanrow += isnan(F(y)[2 * D + i]) != 0;
    }
    CHECK(eq == D, "constant row: %d of %lld equal b", eq, (long long)D);
    CHECK(nanrow == D && isfinite(F(y)[D]) && isfinite(F(y)[3 * D]), "NaN row poisons only itself");
    CHECK_BITS(F(sr)[0], 1.0f / sqrtf(1e-5f), "constant row rstd");
    sb_tensor *all[] = {x, y, r, dx, w, b, dw, db, sm, sr};
    for (size_t i = 0; i < 10; i++) sb_tensor_free(all[i]);
}

/* ---- bad arguments ---- */

static void test_bad_inputs(void) {
    int64_t s3[3] = {4, 3, 5}, s2[2] = {4, 3}, s1[1] = {12}, bad_s[3] = {4, 3, 6};
    sb_tensor *x = mk(3, s3), *y = mk(3, s3), *g = mkvec(3), *b = mkvec(3), *rm = mkvec(3),
              *rv = mkvec(3), *sm = mkvec(3), *sr = mkvec(3), *g4 = mkvec(4), *x1 = mk(1, s1),
              *ybad = mk(3, bad_s), *x2 = mk(2, s2), *dx = mk(3, s3), *dg = mkvec(3);
    sb_tensor *xi = NULL;
    CHECK_OK(sb_tensor_new(&xi, SB_I32, 3, s3));
    fill_rand(x, 0, 1);
    for (int i = 0; i < 3; i++) F(rv)[i] = 1.0f;
    for (int64_t i = 0; i < 60; i++) F(y)[i] = 7.0f;

    CHECK_ERROR(sb_batch_norm_forward(NULL, g, b, rm, rv, true, 0.1f, 1e-5f, y, sm, sr),
                SB_ERR_NULL, "sb_batch_norm_forward: x is NULL");
    CHECK_ERROR(sb_batch_norm_forward(x, g, b, rm, rv, true, 0.1f, 1e-5f, NULL, sm, sr),
                SB_ERR_NULL, "y is NULL");
    CHECK_ERROR(sb_batch_norm_forward(xi, g, b, rm, rv, true, 0.1f, 1e-5f, y, sm, sr),
                SB_ERR_DTYPE, "x has dtype int32");
    CHECK_ERROR(sb_batch_norm_forward(x1, NULL, NULL, NULL, NULL, true, 0.1f, 1e-5f, x1, NULL, NULL),
                SB_ERR_SHAPE, "at least 2 dimensions");
    CHECK_ERROR(sb_batch_norm_forward(x, g, b, rm, rv, true, 0.1f, 1e-5f, ybad, sm, sr),
                SB_ERR_SHAPE, "y must have shape [4, 3, 5]");
    CHECK_ERROR(sb_batch_norm_forward(x, g4, b, rm, rv, true, 0.1f, 1e-5f, y, sm, sr),
                SB_ERR_SHAPE, "gamma must have shape [3]");
    CHECK_ERROR(sb_batch_norm_forward(x, g, g4, rm, rv, true, 0.1f, 1e-5f, y, sm, sr),
                SB_ERR_SHAPE, "beta must have shape [3]");
    CHECK_ERROR(sb_batch_norm_forward(x, g, b, g4, rv, true, 0.1f, 1e-5f, y, sm, sr),
                SB_ERR_SHAPE, "running_mean must have shape [3]");
    CHECK_ERROR(sb_batch_norm_forward(x, g, b, rm, x2, true, 0.1f, 1e-5f, y, sm, sr),
                SB_ERR_SHAPE, "running_var must have shape [3]");
    CHECK_ERROR(sb_batch_norm_forward(x, g, b, rm, rv, true, 0.1f, 1e-5f, y, g4, sr),
                SB_ERR_SHAPE, "save_mean must have shape [3]");
    CHECK_ERROR(sb_batch_norm_forward(x, g, b, rm, NULL, true, 0.1f, 1e-5f, y, sm, sr),
                SB_ERR_NULL, "running_var is NULL but running_mean is given");
    CHECK_ERROR(sb_batch_norm_forward(x, g, b, NULL, NULL, false, 0.1f, 1e-5f, y, sm, sr),
                SB_ERR_NULL, "eval mode");
    CHECK_ERROR(sb_batch_norm_forward(x, g, b, rm, rv, true, 0.1f, 0.0f, y, sm, sr),
                SB_ERR_ARG, "eps = 0 must be finite and > 0");
    CHECK_ERROR(sb_batch_norm_forward(x, g, b, rm, rv, true, 0.1f, -1e-5f, y, sm, sr),
                SB_ERR_ARG, "must be finite and > 0");
    CHECK_ERROR(sb_batch_norm_forward(x, g, b, rm, rv, true, 0.1f, NAN, y, sm, sr),
                SB_ERR_ARG, "eps");
    CHECK_ERROR(sb_batch_norm_forward(x, g, b, rm, rv, true, 0.1f, INFINITY, y, sm, sr),
                SB_ERR_ARG, "eps");
    CHECK_ERROR(sb_batch_norm_forward(x, g, b, rm, rv, true, -0.1f, 1e-5f, y, sm, sr),
                SB_ERR_ARG, "momentum = -0.1 must be in [0, 1]");
    CHECK_ERROR(sb_batch_norm_forward(x, g, b, rm, rv, true, 1.5f, 1e-5f, y, sm, sr),
                SB_ERR_ARG, "momentum");
    CHECK_ERROR(sb_batch_norm_forward(x, g, b, rm, rv, true, NAN, 1e-5f, y, sm, sr),
                SB_ERR_ARG, "momentum");
    {
        int64_t one[3] = {1, 3, 1};
        sb_tensor *xo = mk(3, one), *yo = mk(3, one);
        CHECK_ERROR(sb_batch_norm_forward(xo, g, b, rm, rv, true, 0.1f, 1e-5f, yo, sm, sr),
                    SB_ERR_SHAPE, "more than 1 value per channel");
        int64_t zero[2] = {0, 3};
        sb_tensor *xz = mk(2, zero), *yz = mk(2, zero);
        CHECK_ERROR(sb_batch_norm_forward(xz, g, b, NULL, NULL, true, 0.1f, 1e-5f, yz, sm, sr),
                    SB_ERR_SHAPE, "at least 1 value per channel");
        sb_tensor_free(xo); sb_tensor_free(yo); sb_tensor_free(xz); sb_tensor_free(yz);
    }
    /* Non-contiguous x: a transposed view. */
    {
        sb_tensor *xt = NULL;
        CHECK_OK(sb_tensor_transpose(&xt, x, 0, 2));
        int64_t st[3] = {5, 3, 4};
        sb_tensor *yt = mk(3, st);
        CHECK_ERROR(sb_batch_norm_forward(xt, NULL, NULL, NULL, NULL, true, 0.1f, 1e-5f, yt, NULL,
                                          NULL),
                    SB_ERR_ARG, "x must be contiguous");
        sb_tensor_free(xt); sb_tensor_free(yt);
    }
    /* Nothing was written by any failing call. */
    int untouched = 1;
    for (int64_t i = 0; i < 60; i++) untouched &= F(y)[i] == 7.0f;
    for (int i = 0; i < 3; i++) untouched &= F(rm)[i] == 0.0f && F(rv)[i] == 1.0f;
    CHECK(untouched, "a failing sb_batch_norm_forward wrote output or running stats");

    /* Backward. */
    CHECK_ERROR(sb_batch_norm_backward(y, x, g, NULL, sr, true, dx, dg, NULL), SB_ERR_NULL,
                "save_mean is NULL");
    CHECK_ERROR(sb_batch_norm_backward(y, x, g, sm, NULL, true, dx, dg, NULL), SB_ERR_NULL,
                "save_rstd is NULL");
    CHECK_ERROR(sb_batch_norm_backward(NULL, x, g, sm, sr, true, dx, dg, NULL), SB_ERR_NULL,
                "dy is NULL");
    CHECK_ERROR(sb_batch_norm_backward(ybad, x, g, sm, sr, true, dx, dg, NULL), SB_ERR_SHAPE,
                "dy must have shape");
    CHECK_ERROR(sb_batch_norm_backward(y, x, g, sm, sr, true, ybad, dg, NULL), SB_ERR_SHAPE,
                "dx must have shape");
    CHECK_ERROR(sb_batch_norm_backward(y, x, g4, sm, sr, true, dx, dg, NULL), SB_ERR_SHAPE,
                "gamma must have shape [3]");
    CHECK_ERROR(sb_batch_norm_backward(y, x, g, sm, sr, true, dx, g4, NULL), SB_ERR_SHAPE,
                "dgamma must have shape [3]");
    CHECK_ERROR(sb_batch_norm_backward(y, x1, g, sm, sr, true, dx, dg, NULL), SB_ERR_SHAPE,
                "sb_batch_norm_backward: x must have at least 2 dimensions");
    CHECK_ERROR(sb_batch_norm_backward(y, xi, g, sm, sr, true, dx, dg, NULL), SB_ERR_DTYPE,
                "x has dtype int32");

    /* Layer norm. */
    sb_tensor *w5 = mkvec(5), *w4 = mkvec(4), *lsm = mk(2, s2), *lsr = mk(2, s2);
    int64_t s35[2] = {3, 5};
    sb_tensor *w35 = mk(2, s35);
    CHECK_ERROR(sb_layer_norm_forward(NULL, 1, w5, w5, 1e-5f, y, lsm, lsr), SB_ERR_NULL,
                "sb_layer_norm_forward: x is NULL");
    CHECK_ERROR(sb_layer_norm_forward(x, 0, w5, w5, 1e-5f, y, lsm, lsr), SB_ERR_ARG,
                "normalized_ndim = 0 must be in 1..x.ndim = 3");
    CHECK_ERROR(sb_layer_norm_forward(x, 4, w5, w5, 1e-5f, y, lsm, lsr), SB_ERR_ARG,
                "normalized_ndim = 4");
    CHECK_ERROR(sb_layer_norm_forward(x, 1, w4, w5, 1e-5f, y, lsm, lsr), SB_ERR_SHAPE,
                "gamma must have shape [5]");
    CHECK_ERROR(sb_layer_norm_forward(x, 2, w35, w5, 1e-5f, y, sm, sr), SB_ERR_SHAPE,
                "beta must have shape [3, 5]");
    CHECK_ERROR(sb_layer_norm_forward(x, 1, w5, w5, 1e-5f, y, sm, lsr), SB_ERR_SHAPE,
                "save_mean must have shape [4, 3]");
    CHECK_ERROR(sb_layer_norm_forward(x, 1, w5, w5, 0.0f, y, lsm, lsr), SB_ERR_ARG,
                "eps = 0 must be finite and > 0");
    CHECK_ERROR(sb_layer_norm_forward(x, 1, w5, w5, 1e-5f, ybad, lsm, lsr), SB_ERR_SHAPE,
                "y must have shape [4, 3, 5]");
    CHECK_ERROR(sb_layer_norm_forward(xi, 1, w5, w5, 1e-5f, y, lsm, lsr), SB_ERR_DTYPE,
                "x has dtype int32");
    CHECK_ERROR(sb_layer_norm_forward(x, 1, w5, w5, 1e-5f, NULL, lsm, lsr), SB_ERR_NULL,
                "y is NULL");
    {
        int64_t z[2] = {3, 0};
        sb_tensor *xz = mk(2, z);
        CHECK_ERROR(sb_layer_norm_forward(xz, 1, NULL, NULL, 1e-5f, xz, NULL, NULL), SB_ERR_SHAPE,
                    "0 elements");
        sb_tensor_free(xz);
    }
    for (int64_t i = 0; i < 60; i++) untouched &= F(y)[i] == 7.0f;
    CHECK(untouched, "a failing sb_layer_norm_forward wrote output");
    CHECK_ERROR(sb_layer_norm_backward(y, x, 1, w5, NULL, lsr, dx, NULL, NULL), SB_ERR_NULL,
                "save_mean is NULL");
    CHECK_ERROR(sb_layer_norm_backward(y, x, 1, w5, lsm, NULL, dx, NULL, NULL), SB_ERR_NULL,
                "save_rstd is NULL");
    CHECK_ERROR(sb_layer_norm_backward(y, x, 1, w5, lsm, lsr, dx, w4, NULL), SB_ERR_SHAPE,
                "dgamma must have shape [5]");
    CHECK_ERROR(sb_layer_norm_backward(y, x, 1, w5, lsm, sr, dx, NULL, NULL), SB_ERR_SHAPE,
                "save_rstd must have shape [4, 3]");
    CHECK_ERROR(sb_layer_norm_backward(ybad, x, 1, w5, lsm, lsr, dx, NULL, NULL), SB_ERR_SHAPE,
                "dy must have shape");
    CHECK_ERROR(sb_layer_norm_backward(y, x, 1, w5, lsm, lsr, dx, NULL, w4), SB_ERR_SHAPE,
                "dbeta must have shape [5]");

    sb_tensor *all[] = {x, y, g, b, rm, rv, sm, sr, g4, x1, ybad, x2, dx, dg, xi, w5, w4, lsm,
                        lsr, w35};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) sb_tensor_free(all[i]);
}

/* ---- group norm ---- */

/* The contract restated for group norm: rows (n, g) of D = (C/G) * S
 * contiguous elements with layer norm's statistics and per-channel affine;
 * parameter gradients gathered per channel over (n, s) and summed with tsum. */
static void model_gn(const float *x, const float *gm, const float *bt, const float *dy, float eps,
                     int64_t N, int64_t C, int64_t S, int64_t G, float *y, float *sm, float *sr,
                     float *dx, float *dg, float *db) {
    int64_t cg = C / G, D = cg * S;
    float *t1 = malloc((size_t)(D + N * S) * sizeof(float) + 4);
    float *t2 = malloc((size_t)(D + N * S) * sizeof(float) + 4);
    for (int64_t r = 0; r < N * G; r++) {
        const float *row = x + r * D;
        float mean = oracle_canonical_sum(row, D) / (float)D;
        for (int64_t i = 0; i < D; i++) t1[i] = (row[i] - mean) * (row[i] - mean);
        float rstd = 1.0f / sqrtf(oracle_canonical_sum(t1, D) / (float)D + eps);
        sm[r] = mean;
        sr[r] = rstd;
        for (int64_t i = 0; i < D; i++) {
            int64_t c = (r % G) * cg + i / S;
            float t = (row[i] - mean) * rstd;
            if (gm) t = t * gm[c];
            if (bt) t = t + bt[c];
            y[r * D + i] = t;
        }
        for (int64_t i = 0; i < D; i++) {
            int64_t c = (r % G) * cg + i / S;
            float xh = (row[i] - mean) * rstd;
            t1[i] = gm ? dy[r * D + i] * gm[c] : dy[r * D + i];
            t2[i] = t1[i] * xh;
        }
        float a = oracle_canonical_sum(t1, D) / (float)D, bq = oracle_canonical_sum(t2, D) / (float)D;
        for (int64_t i = 0; i < D; i++) {
            float xh = (row[i] - mean) * rstd;
            dx[r * D + i] = rstd * ((t1[i] - a) - xh * bq);
        }
    }
    for (int64_t c = 0; c < C; c++) {
        int64_t k = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t s = 0; s < S; s++) {
                int64_t r = n * G + c / cg, e = (n * C + c) * S + s;
                t1[k] = dy[e] * ((x[e] - sm[r]) * sr[r]);
                t2[k++] = dy[e];
            }
        dg[c] = oracle_canonical_sum(t1, k);
        db[c] = oracle_canonical_sum(t2, k);
    }
    free(t1);
    free(t2);
}

typedef struct {
    const char *label;
    int ndim;
    int64_t shape[4];
    int64_t G;
    int affine;
    float offset, spread, eps;
} gn_case;

static void run_gn_case(const gn_case *k) {
    int64_t N = k->shape[0], C = k->shape[1], S = 1;
    for (int i = 2; i < k->ndim; i++) S *= k->shape[i];
    int64_t n = N * C * S, st[2] = {N, k->G};
    sb_tensor *x = mk(k->ndim, k->shape), *y = mk(k->ndim, k->shape), *dy = mk(k->ndim, k->shape),
              *dx = mk(k->ndim, k->shape), *sm = mk(2, st), *sr = mk(2, st), *dg = mkvec(C),
              *db = mkvec(C), *g = NULL, *b = NULL;
    fill_rand(x, k->offset, k->spread);
    fill_rand(dy, 0, 1);
    if (k->affine == AFF_BOTH || k->affine == AFF_GAMMA) {
        g = mkvec(C);
        fill_rand(g, 1, 0.5f);
    }
    if (k->affine == AFF_BOTH || k->affine == AFF_BETA) {
        b = mkvec(C);
        fill_rand(b, 0, 0.5f);
    }
    CHECK_OK(sb_group_norm_forward(x, k->G, g, b, k->eps, y, sm, sr));
    CHECK_OK(sb_group_norm_backward(dy, x, k->G, g, sm, sr, dx, dg, db));
    size_t big = (size_t)(n + N * k->G + C) * 4 + 4;
    float *wy = malloc(big), *wsm = malloc(big), *wsr = malloc(big), *wdx = malloc(big),
          *wdg = malloc(big), *wdb = malloc(big);
    model_gn(F(x), F(g), F(b), F(dy), k->eps, N, C, S, k->G, wy, wsm, wsr, wdx, wdg, wdb);
    check_same(k->label, "y", F(y), wy, n);
    check_same(k->label, "save_mean", F(sm), wsm, N * k->G);
    check_same(k->label, "save_rstd", F(sr), wsr, N * k->G);
    check_same(k->label, "dx", F(dx), wdx, n);
    check_same(k->label, "dgamma", F(dg), wdg, C);
    check_same(k->label, "dbeta", F(db), wdb, C);

    /* In place: y = x gives the same bits. */
    sb_tensor *xi = mk(k->ndim, k->shape);
    memcpy(F(xi), F(x), (size_t)n * 4);
    CHECK_OK(sb_group_norm_forward(xi, k->G, g, b, k->eps, xi, NULL, NULL));
    check_same(k->label, "in-place y", F(xi), F(y), n);

    /* Close to float64: per row mean and variance in double. */
    double worst = 0;
    int64_t D = C / k->G * S;
    for (int64_t r = 0; r < N * k->G; r++) {
        double m = 0, v = 0, big_x = 0;
        for (int64_t i = 0; i < D; i++) m += F(x)[r * D + i];
        m /= (double)D;
        for (int64_t i = 0; i < D; i++) {
            double d = F(x)[r * D + i] - m;
            v += d * d;
            big_x = fmax(big_x, fabs(F(x)[r * D + i]));
        }
        double rs = 1.0 / sqrt(v / (double)D + k->eps);
        for (int64_t i = 0; i < D; i++) {
            int64_t c = (r % k->G) * (C / k->G) + i / S;
            double w = g ? F(g)[c] : 1.0, want = (F(x)[r * D + i] - m) * rs * w + (b ? F(b)[c] : 0);
            double cancel = 4.0 * big_x * 0x1p-24 * rs * fabs(w);
            double e = fabs(F(y)[r * D + i] - want) / (4e-6 * (1 + fabs(want)) + cancel);
            if (e > worst) worst = e;
        }
    }
    CHECK(worst <= 1.0, "%s: y vs float64: worst error %.3g x the tolerance", k->label, worst);
    free(wy); free(wsm); free(wsr); free(wdx); free(wdg); free(wdb);
    sb_tensor *all[] = {x, y, dy, dx, sm, sr, dg, db, g, b, xi};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) sb_tensor_free(all[i]);
}

static void test_gn_configurations(void) {
    const gn_case cases[] = {
        {"gn (2,6,4,5) G=2 affine", 4, {2, 6, 4, 5}, 2, AFF_BOTH, 0, 1, 1e-5f},
        {"gn (3,4,7) G=4 instance norm", 3, {3, 4, 7}, 4, AFF_BOTH, 0.5f, 2, 1e-5f},
        {"gn (2,6) G=3 no spatial", 2, {2, 6}, 3, AFF_GAMMA, 0, 1, 1e-3f},
        {"gn (2,8,3,3) G=1 no affine", 4, {2, 8, 3, 3}, 1, AFF_NONE, 0, 3, 1e-5f},
        {"gn (2,4,50,50) G=2 groups > 8192", 4, {2, 4, 50, 50}, 2, AFF_BOTH, 0, 1, 1e-5f},
        {"gn (1,2,1,1) D=1 beta only", 4, {1, 2, 1, 1}, 2, AFF_BETA, 0, 1, 1e-5f},
        {"gn (2,32,9,9) G=8 offset 1e4", 4, {2, 32, 9, 9}, 8, AFF_BOTH, 1e4f, 1, 1e-5f},
        {"gn (0,4,3) no samples", 3, {0, 4, 3}, 2, AFF_BOTH, 0, 1, 1e-5f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_gn_case(&cases[i]);
}

/* A group's statistics run over its channels in memory order, so another
 * grouping (G = C) gives other bits for the same x: the checks can fail. */
static void test_gn_grouping_matters(void) {
    int64_t shape[3] = {1, 4, 40}, st1[2] = {1, 1}, st4[2] = {1, 4};
    sb_tensor *x = mk(3, shape), *y1 = mk(3, shape), *y4 = mk(3, shape), *m1 = mk(2, st1),
              *r1 = mk(2, st1), *m4 = mk(2, st4), *r4 = mk(2, st4);
    fill_rand(x, 0, 1);
    CHECK_OK(sb_group_norm_forward(x, 1, NULL, NULL, 1e-5f, y1, m1, r1));
    CHECK_OK(sb_group_norm_forward(x, 4, NULL, NULL, 1e-5f, y4, m4, r4));
    int differ = 0;
    for (int i = 0; i < 160; i++) differ += sb_test_bits(F(y1)[i]) != sb_test_bits(F(y4)[i]);
    CHECK(differ > 0, "group norm with 1 and 4 groups must differ");
    sb_tensor *all[] = {x, y1, y4, m1, r1, m4, r4};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) sb_tensor_free(all[i]);
}

static void test_gn_bad_inputs(void) {
    int64_t shape[3] = {2, 6, 3}, st[2] = {2, 2}, st3[2] = {2, 3}, s0[3] = {2, 6, 0};
    sb_tensor *x = mk(3, shape), *y = mk(3, shape), *g = mkvec(6), *g5 = mkvec(5),
              *sm = mk(2, st), *sr = mk(2, st), *sm3 = mk(2, st3), *x0 = mk(3, s0),
              *y0 = mk(3, s0), *dx = mk(3, shape);
    fill_rand(x, 0, 1);
    for (int i = 0; i < 36; i++) F(y)[i] = 7.0f;
    CHECK_ERROR(sb_group_norm_forward(x, 4, g, NULL, 1e-5f, y, NULL, NULL), SB_ERR_ARG,
                "groups = 4 must be >= 1 and divide");
    CHECK_ERROR(sb_group_norm_forward(x, 0, g, NULL, 1e-5f, y, NULL, NULL), SB_ERR_ARG,
                "groups = 0");
    CHECK_ERROR(sb_group_norm_forward(x, 2, g5, NULL, 1e-5f, y, NULL, NULL), SB_ERR_SHAPE,
                "gamma must have shape [6]");
    CHECK_ERROR(sb_group_norm_forward(x, 2, g, NULL, 1e-5f, y, sm3, NULL), SB_ERR_SHAPE,
                "save_mean must have shape [2, 2]");
    CHECK_ERROR(sb_group_norm_forward(x, 2, g, NULL, 0.0f, y, NULL, NULL), SB_ERR_ARG, "eps");
    CHECK_ERROR(sb_group_norm_forward(x0, 2, NULL, NULL, 1e-5f, y0, NULL, NULL), SB_ERR_SHAPE,
                "0 elements");
    for (int i = 0; i < 36; i++) CHECK_BITS(F(y)[i], 7.0f, "a failed call writes nothing");
    CHECK_ERROR(sb_group_norm_backward(y, x, 2, g, NULL, sr, dx, NULL, NULL), SB_ERR_NULL,
                "save_mean is NULL");
    CHECK_ERROR(sb_group_norm_backward(y, x, 3, g, sm, sr, dx, NULL, NULL), SB_ERR_SHAPE,
                "save_mean must have shape [2, 3]");
    sb_tensor *all[] = {x, y, g, g5, sm, sr, sm3, x0, y0, dx};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) sb_tensor_free(all[i]);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_bn_configurations();
    test_bn_special_values();
    test_bn_order_matters();
    test_bn_gradients();
    test_bn_running_steps();
    test_ln_configurations();
    test_ln_gradients_and_special();
    test_bad_inputs();
    test_gn_configurations();
    test_gn_grouping_matters();
    test_gn_bad_inputs();
    return sb_test_finish();
}
