/* Tests for samebits/loss.h: softmax, log-softmax, cross-entropy (with label
 * smoothing and ignore_index), NLL and MSE, forward and backward.
 *
 * Expected bits come from an independent restatement of
 * docs/CONTRACT.md built on a test-local, recursive statement of the
 * canonical sum; closeness comes from float64 with libm's double functions,
 * and gradients are also checked against central finite differences of
 * the float64 losses. */
#include <math.h>
#include "harness.h"
#include "support/oracle.h"

/* ---- the contract, restated on a gathered row ---- */
static float t_max(const float *x, int64_t n) {
    float m = x[0];
    for (int64_t j = 1; j < n; j++) {
        if (isnan(m)) break;
        if (isnan(x[j]) || x[j] > m) m = x[j];
    }
    return m;
}

static void t_softmax(const float *x, int64_t n, int log, float *y) {
    float m = t_max(x, n);
    float *e = calloc((size_t)n + 1, sizeof *e);
    for (int64_t j = 0; j < n; j++) e[j] = sb_expf(x[j] - m);
    float s = oracle_canonical_sum(e, n);
    float ls = sb_logf(s);
    for (int64_t j = 0; j < n; j++) {
        float d = x[j] - m;
        y[j] = log ? d - ls : e[j] / s;
    }
    free(e);
}

static void t_softmax_back(const float *y, const float *dy, int64_t n, int log, float *dx) {
    float *p = calloc((size_t)n + 1, sizeof *p);
    if (log) {
        float g = oracle_canonical_sum(dy, n);
        for (int64_t j = 0; j < n; j++) {
            float q = sb_expf(y[j]) * g;
            dx[j] = dy[j] - q;
        }
    } else {
        for (int64_t j = 0; j < n; j++) p[j] = dy[j] * y[j];
        float dot = oracle_canonical_sum(p, n);
        for (int64_t j = 0; j < n; j++) {
            float t = dy[j] - dot;
            dx[j] = y[j] * t;
        }
    }
    free(p);
}

/* ---- helpers ---- */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(void) { /* xorshift: test data only */
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * 0x1p-53;
}

static sb_tensor *wrapd(void *data, sb_dtype dt, int ndim, const int64_t *shape,
                        const int64_t *strides) {
    sb_tensor *t = NULL;
    if (sb_tensor_wrap(&t, data, dt, ndim, shape, strides) != SB_OK) abort();
    return t;
}
static sb_tensor *wrap(float *data, int ndim, const int64_t *shape) {
    return wrapd(data, SB_F32, ndim, shape, NULL);
}

static double log_d(double v) { return log(v); }

static int same(float a, float b) { return isnan(a) ? isnan(b) : sb_test_bits(a) == sb_test_bits(b); }

/* ---- softmax / log-softmax ---- */
static void test_softmax_rows(void) {
    const int64_t lens[] = {1, 31, 32, 33, 8193, 20000};
    int nlens = sb_test_quick() ? 5 : 6;
    int order_matters = 0;
    for (int li = 0; li < nlens; li++) {
        int64_t n = lens[li];
        float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4), *w = malloc((size_t)n * 4);
        float *dy = malloc((size_t)n * 4), *dx = malloc((size_t)n * 4), *wdx = malloc((size_t)n * 4);
        for (int64_t j = 0; j < n; j++) x[j] = (float)(urand() * 40 - 20);
        for (int64_t j = 0; j < n; j++) dy[j] = (float)(urand() * 2 - 1);
        int64_t shape[2] = {1, n};
        sb_tensor *tx = wrap(x, 2, shape), *ty = wrap(y, 2, shape), *tdy = wrap(dy, 2, shape),
                  *tdx = wrap(dx, 2, shape);
        for (int log = 0; log < 2; log++) {
            if (log) CHECK_OK(sb_log_softmax_forward(tx, -1, ty));
            else CHECK_OK(sb_softmax_forward(tx, 1, ty));
            t_softmax(x, n, log, w);
            int64_t bad = 0, far = 0;
            double m = -INFINITY, s = 0;
            for (int64_t j = 0; j < n; j++) m = fmax(m, x[j]);
            for (int64_t j = 0; j < n; j++) s += exp((double)x[j] - m);
            for (int64_t j = 0; j < n; j++) {
                bad += !same(y[j], w[j]);
                double r = log ? ((double)x[j] - m) - log_d(s) : exp((double)x[j] - m) / s;
                /* canonical-sum error bound: about n/32 + 5 roundings */
                double tol = 2e-6 + (double)(n / 32 + 10) * 0x1p-24;
                double err = fabs(y[j] - r);
                if (log ? err > tol * (1 + fabs(r)) : err > tol * r + 1e-40) far++;
            }
            CHECK(bad == 0, "n = %lld log = %d: %lld outputs differ from the contract", (long long)n, log, (long long)bad);
            CHECK(far == 0, "n = %lld log = %d: %lld outputs far from float64", (long long)n, log, (long long)far);
            /* a sequential sum would differ somewhere: the test sees the order */
            if (!log && n > 32) {
                float m32 = t_max(x, n), seq = 0.0f;
                for (int64_t j = 0; j < n; j++) seq += sb_expf(x[j] - m32);
                float *e = malloc((size_t)n * 4);
                for (int64_t j = 0; j < n; j++) e[j] = sb_expf(x[j] - m32);
                if (sb_test_bits(seq) != sb_test_bits(oracle_canonical_sum(e, n))) order_matters++;
                free(e);
            }
            /* backward */
            if (log) CHECK_OK(sb_log_softmax_backward(ty, tdy, -1, tdx));
            else CHECK_OK(sb_softmax_backward(ty, tdy, 1, tdx));
            t_softmax_back(y, dy, n, log, wdx);
            bad = 0; far = 0;
            double dot = 0, g = 0;
            for (int64_t j = 0; j < n; j++) { dot += (double)dy[j] * y[j]; g += dy[j]; }
            for (int64_t j = 0; j < n; j++) {
                bad += !same(dx[j], wdx[j]);
                double r = log ? dy[j] - exp((double)y[j]) * g : (double)y[j] * (dy[j] - dot);
                if (fabs(dx[j] - r) > 1e-5 * (1 + fabs(r)) * (log ? 1 + fabs(g) : 1)) far++;
            }
            CHECK(bad == 0, "backward n = %lld log = %d: %lld differ", (long long)n, log, (long long)bad);
            CHECK(far == 0, "backward n = %lld log = %d: %lld far from float64", (long long)n, log, (long long)far);
        }
        sb_tensor_free(tx); sb_tensor_free(ty); sb_tensor_free(tdy); sb_tensor_free(tdx);
        free(x); free(y); free(w); free(dy); free(dx); free(wdx);
    }
    CHECK(order_matters > 0, "no row where the canonical sum differs from a sequential one");
}

/* softmax over every dim of a (3, 5, 4) tensor, and a strided input */
static void test_softmax_dims(void) {
    enum { A = 3, B = 5, D = 4 };
    float x[A * B * D], y[A * B * D];
    for (int i = 0; i < A * B * D; i++) x[i] = (float)(urand() * 10 - 5);
    int64_t shape[3] = {A, B, D}, strides[3] = {B * D, D, 1};
    sb_tensor *tx = wrap(x, 3, shape), *ty = wrap(y, 3, shape);
    for (int dim = -3; dim < 3; dim++) {
        int d = dim < 0 ? dim + 3 : dim;
        for (int log = 0; log < 2; log++) {
            CHECK_OK(log ? sb_log_softmax_forward(tx, dim, ty) : sb_softmax_forward(tx, dim, ty));
            int bad = 0;
            for (int i = 0; i < A * B * D; i++) {
                int idx[3] = {i / (B * D), (i / D) % B, i % D};
                if (idx[d] != 0) continue; /* one row per starting point */
                float row[5], want[5];
                for (int j = 0; j < shape[d]; j++) row[j] = x[i + j * strides[d]];
                t_softmax(row, shape[d], log, want);
                for (int j = 0; j < shape[d]; j++) bad += !same(y[i + j * strides[d]], want[j]);
            }
            CHECK(bad == 0, "dim %d log %d: %d differ", dim, log, bad);
        }
    }
    /* a transposed (non-contiguous) view gives the rows of the transpose */
    float xt[D * B], yt[D * B], rowbuf[B], want[B];
    int64_t s2[2] = {B, D}, st2[2] = {1, B}, s2t[2] = {B, D};
    for (int b = 0; b < B; b++)
        for (int dd = 0; dd < D; dd++) xt[dd * B + b] = x[b * D + dd];
    sb_tensor *tv = wrapd(xt, SB_F32, 2, s2, st2), *to = wrap(yt, 2, s2t);
    CHECK_OK(sb_softmax_forward(tv, 1, to));
    int bad = 0;
    for (int b = 0; b < B; b++) {
        for (int dd = 0; dd < D; dd++) rowbuf[dd] = x[b * D + dd];
        t_softmax(rowbuf, D, 0, want);
        for (int dd = 0; dd < D; dd++) bad += !same(yt[b * D + dd], want[dd]);
    }
    CHECK(bad == 0, "strided softmax: %d differ", bad);
    /* 0-d: one row of one element */
    float s = 3.0f, r = 7.0f;
    sb_tensor *ts = wrap(&s, 0, NULL), *tr = wrap(&r, 0, NULL);
    CHECK_OK(sb_softmax_forward(ts, 0, tr));
    CHECK_BITS(r, 1.0f, "0-d softmax");
    CHECK_OK(sb_log_softmax_forward(ts, -1, tr));
    CHECK_BITS(r, 0.0f, "0-d log_softmax");
    sb_tensor_free(tx); sb_tensor_free(ty); sb_tensor_free(tv); sb_tensor_free(to);
    sb_tensor_free(ts); sb_tensor_free(tr);
}

static void test_softmax_special(void) {
    const float inf = INFINITY;
    struct { float x[3]; float soft[3]; float logs[3]; } cases[] = {
        {{1e30f, -1e30f, 0.0f}, {1, 0, 0}, {0, -2e30f, -1e30f}},
        {{-inf, 0.0f, 0.0f}, {0, 0.5f, 0.5f}, {-inf, -0.69314718f, -0.69314718f}},
        {{-inf, -inf, -inf}, {NAN, NAN, NAN}, {NAN, NAN, NAN}},
        {{NAN, 1.0f, 2.0f}, {NAN, NAN, NAN}, {NAN, NAN, NAN}},
        {{1.0f, NAN, 2.0f}, {NAN, NAN, NAN}, {NAN, NAN, NAN}},
        {{inf, 1.0f, 2.0f}, {NAN, NAN, NAN}, {NAN, NAN, NAN}},
        {{0x1p-140f, -0.0f, 0.0f}, {1.0f / 3.0f, 1.0f / 3.0f, 1.0f / 3.0f}, {0, 0, 0}},
    };
    int64_t n = 3;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        float y[3], w[3];
        sb_tensor *tx = wrap(cases[c].x, 1, &n), *ty = wrap(y, 1, &n);
        for (int log = 0; log < 2; log++) {
            CHECK_OK(log ? sb_log_softmax_forward(tx, 0, ty) : sb_softmax_forward(tx, 0, ty));
            t_softmax(cases[c].x, 3, log, w);
            for (int j = 0; j < 3; j++) {
                float e = log ? cases[c].logs[j] : cases[c].soft[j];
                CHECK(same(y[j], w[j]), "case %zu log %d j %d: contract", c, log, j);
                if (c < 6)
                    CHECK(isnan(e) ? isnan(y[j]) : isinf(e) ? y[j] == e : fabsf(y[j] - e) <= 1e-7f * fabsf(e), "case %zu log %d j %d: %a vs %a", c, log, j, y[j], e);
            }
        }
        sb_tensor_free(tx); sb_tensor_free(ty);
    }
}

/* float64 reference for one cross-entropy row, and its gradient */
static double ce_row64(const double *x, int64_t C, int64_t t, double eps) {
    double m = -INFINITY, s = 0, sumlp = 0;
    for (int64_t j = 0; j < C; j++) m = fmax(m, x[j]);
    for (int64_t j = 0; j < C; j++) s += exp(x[j] - m);
    for (int64_t j = 0; j < C; j++) sumlp += x[j] - m - log(s);
    double nll = -(x[t] - m - log(s));
    return eps == 0 ? nll : (1 - eps) * nll - sumlp * eps / (double)C;
}

/* float64 loss over a batch with a reduction */
static double ce64(const double *x, const int64_t *t, int64_t N, int64_t C, double eps,
                   sb_loss_reduction red, int64_t ignore, const double *w) {
    double sum = 0;
    int64_t count = 0;
    for (int64_t r = 0; r < N; r++) {
        if (t[r] == ignore) continue;
        double v = ce_row64(x + r * C, C, t[r], eps);
        sum += red == SB_LOSS_NONE ? w[r] * v : v;
        count++;
    }
    return red == SB_LOSS_MEAN ? sum / (double)count : sum;
}

/* The cross-entropy contract restated (forward, per row). */
static float t_ce_row(const float *x, int64_t C, int64_t t, float eps) {
    float *lp = calloc((size_t)C + 1, 4);
    t_softmax(x, C, 1, lp);
    float nll = -lp[t];
    float r = nll;
    if (eps != 0.0f) {
        float smooth = -oracle_canonical_sum(lp, C);
        float c = eps / (float)C;
        float a = (1.0f - eps) * nll;
        float b = smooth * c;
        r = a + b;
    }
    free(lp);
    return r;
}

static void test_cross_entropy(void) {
    enum { N = 9, C = 37 };
    float x[N * C], loss[N], dl[N * C], p[N * C];
    double xd[N * C], wd[N];
    int64_t t64[N];
    int32_t t32[N];
    for (int i = 0; i < N * C; i++) { x[i] = (float)(urand() * 8 - 4); xd[i] = x[i]; }
    for (int r = 0; r < N; r++) { t64[r] = (int64_t)(urand() * C); t32[r] = (int32_t)t64[r]; wd[r] = 0.3 + r; }
    t64[4] = t32[4] = -100; /* ignored */
    t64[7] = t32[7] = C - 1;
    int64_t sx[2] = {N, C}, sn = N;
    sb_tensor *tx = wrap(x, 2, sx), *t64t = wrapd(t64, SB_I64, 1, &sn, NULL),
              *t32t = wrapd(t32, SB_I32, 1, &sn, NULL), *tl = wrap(loss, 1, &sn),
              *tdl = wrap(dl, 2, sx);
    const float epss[] = {0.0f, 0.1f, 1.0f};
    const sb_loss_reduction reds[] = {SB_LOSS_NONE, SB_LOSS_MEAN, SB_LOSS_SUM};
    for (int ei = 0; ei < 3; ei++)
        for (int ri = 0; ri < 3; ri++)
            for (int ti = 0; ti < 2; ti++) {
                float eps = epss[ei];
                sb_loss_reduction red = reds[ri];
                sb_tensor *tt = ti ? t32t : t64t;
                float scalar;
                sb_tensor *tsc = wrap(&scalar, 0, NULL);
                sb_tensor *out = red == SB_LOSS_NONE ? tl : tsc;
                CHECK_OK(sb_cross_entropy_forward(tx, tt, red, eps, -100, out));
                /* contract restated: per-row values, +0 for ignored rows,
                 * canonical sum, one division by the count */
                float rows[N];
                int64_t count = 0;
                for (int r = 0; r < N; r++) {
                    rows[r] = t64[r] == -100 ? 0.0f : t_ce_row(x + r * C, C, t64[r], eps);
                    count += t64[r] != -100;
                }
                double ref = ce64(xd, t64, N, C, eps, red, -100, wd);
                if (red == SB_LOSS_NONE) {
                    int bad = 0, far = 0;
                    for (int r = 0; r < N; r++) {
                        bad += !same(loss[r], rows[r]);
                        double v = t64[r] == -100 ? 0 : ce_row64(xd + r * C, C, t64[r], eps);
                        far += fabs(loss[r] - v) > 1e-5 * (1 + fabs(v));
                    }
                    CHECK(bad == 0 && far == 0, "CE NONE eps %g: %d differ, %d far", (double)eps, bad, far);
                    CHECK_BITS(loss[4], 0.0f, "ignored row is +0");
                } else {
                    float s = oracle_canonical_sum(rows, N);
                    float want = red == SB_LOSS_MEAN ? s / (float)count : s;
                    CHECK_BITS(scalar, want, "CE red %d eps %g targets %s", (int)red, (double)eps, ti ? "i32" : "i64");
                    CHECK(fabs(scalar - ref) < 1e-5 * (1 + fabs(ref)), "CE vs float64: %g vs %g", (double)scalar, ref);
                }
                /* backward: per-row upstream; (p - q) * g */
                float dls[N];
                for (int r = 0; r < N; r++) dls[r] = (float)wd[r];
                float dsc = 0.75f;
                sb_tensor *tdls = wrap(dls, 1, &sn), *tdsc = wrap(&dsc, 0, NULL);
                CHECK_OK(sb_cross_entropy_backward(tx, tt, red, eps, -100,
                                                   red == SB_LOSS_NONE ? tdls : tdsc, tdl));
                int bad = 0;
                float mean_g = dsc / (float)count;
                for (int r = 0; r < N; r++) {
                    float g = red == SB_LOSS_NONE ? dls[r] : red == SB_LOSS_MEAN ? mean_g : dsc;
                    t_softmax(x + r * C, C, 0, p + r * C);
                    for (int j = 0; j < C; j++) {
                        float c = eps / (float)C;
                        float q = j == t64[r] ? (1.0f - eps) + c : c;
                        float want = t64[r] == -100 ? 0.0f : (p[r * C + j] - q) * g;
                        bad += !same(dl[r * C + j], want);
                    }
                }
                CHECK(bad == 0, "CE backward red %d eps %g: %d differ", (int)red, (double)eps, bad);
                /* finite differences of the float64 loss */
                double up = red == SB_LOSS_NONE ? 1.0 : 0.75;
                int far = 0;
                for (int k = 0; k < N * C; k += 5) {
                    double h = 1e-6, save = xd[k];
                    xd[k] = save + h;
                    double lp = ce64(xd, t64, N, C, eps, red, -100, wd);
                    xd[k] = save - h;
                    double lm = ce64(xd, t64, N, C, eps, red, -100, wd);
                    xd[k] = save;
                    double fd = up * (lp - lm) / (2 * h);
                    if (fabs(dl[k] - fd) > 1e-4 * (1 + fabs(fd))) far++;
                }
                CHECK(far == 0, "CE backward vs finite differences: %d far (red %d eps %g)", far, (int)red, (double)eps);
                sb_tensor_free(tsc); sb_tensor_free(tdls); sb_tensor_free(tdsc);
            }
    /* eps = 0 is exactly NLL of log_softmax */
    float lsm[N * C], l1, l2;
    sb_tensor *tlsm = wrap(lsm, 2, sx), *tl1 = wrap(&l1, 0, NULL), *tl2 = wrap(&l2, 0, NULL);
    CHECK_OK(sb_log_softmax_forward(tx, 1, tlsm));
    CHECK_OK(sb_cross_entropy_forward(tx, t64t, SB_LOSS_MEAN, 0.0f, -100, tl1));
    CHECK_OK(sb_nll_loss_forward(tlsm, t64t, SB_LOSS_MEAN, -100, tl2));
    CHECK_BITS(l1, l2, "CE == NLL(log_softmax)");
    /* a -inf logit off target: finite without smoothing, +inf with it
     * (the smoothing term sums every log-probability), as in PyTorch */
    float save = x[0];
    x[0] = -INFINITY;
    int64_t keep = t64[0];
    t64[0] = 1;
    CHECK_OK(sb_cross_entropy_forward(tx, t64t, SB_LOSS_SUM, 0.0f, -100, tl1));
    CHECK(isfinite(l1), "-inf logit, eps 0: %g", (double)l1);
    CHECK_OK(sb_cross_entropy_forward(tx, t64t, SB_LOSS_SUM, 0.1f, -100, tl1));
    CHECK(l1 == INFINITY, "-inf logit, eps 0.1: %g", (double)l1);
    x[0] = save;
    t64[0] = keep;
    /* all rows ignored: MEAN is 0/0 = NaN, SUM is +0 */
    int64_t ign[N];
    for (int r = 0; r < N; r++) ign[r] = 5;
    sb_tensor *tign = wrapd(ign, SB_I64, 1, &sn, NULL);
    CHECK_OK(sb_cross_entropy_forward(tx, tign, SB_LOSS_MEAN, 0.0f, 5, tl1));
    CHECK(isnan(l1), "all ignored MEAN");
    CHECK_OK(sb_cross_entropy_forward(tx, tign, SB_LOSS_SUM, 0.0f, 5, tl1));
    CHECK_BITS(l1, 0.0f, "all ignored SUM");
    /* strided logits (transposed storage) give the same bits */
    float xt[C * N];
    for (int r = 0; r < N; r++)
        for (int j = 0; j < C; j++) xt[j * N + r] = x[r * C + j];
    int64_t st[2] = {1, N};
    sb_tensor *txt = wrapd(xt, SB_F32, 2, sx, st);
    CHECK_OK(sb_cross_entropy_forward(txt, t32t, SB_LOSS_MEAN, 0.1f, -100, tl1));
    CHECK_OK(sb_cross_entropy_forward(tx, t64t, SB_LOSS_MEAN, 0.1f, -100, tl2));
    CHECK_BITS(l1, l2, "strided logits");
    sb_tensor *all[] = {tx, t64t, t32t, tl, tdl, tlsm, tl1, tl2, tign, txt};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) sb_tensor_free(all[i]);
}

static void test_nll(void) {
    enum { N = 40, C = 6 };
    float lp[N * C], loss[N], d[N * C], sc, g = 2.5f, gs[N];
    int64_t t[N];
    for (int i = 0; i < N * C; i++) lp[i] = (float)(-urand() * 5);
    for (int r = 0; r < N; r++) { t[r] = r % C; gs[r] = (float)r * 0.25f - 3.0f; }
    t[3] = 17; /* ignore_index 17 */
    lp[10 * C + t[10]] = -INFINITY;
    int64_t sx[2] = {N, C}, sn = N;
    sb_tensor *tlp = wrap(lp, 2, sx), *tt = wrapd(t, SB_I64, 1, &sn, NULL), *tl = wrap(loss, 1, &sn),
              *tsc = wrap(&sc, 0, NULL), *td = wrap(d, 2, sx), *tg = wrap(&g, 0, NULL),
              *tgs = wrap(gs, 1, &sn);
    CHECK_OK(sb_nll_loss_forward(tlp, tt, SB_LOSS_NONE, 17, tl));
    float rows[N];
    int bad = 0;
    for (int r = 0; r < N; r++) {
        rows[r] = t[r] == 17 ? 0.0f : -lp[r * C + t[r]];
        bad += !same(loss[r], rows[r]);
    }
    CHECK(bad == 0, "NLL NONE: %d differ", bad);
    CHECK(loss[10] == INFINITY, "NLL of -inf log-probability");
    lp[10 * C + t[10]] = -1.0f;
    rows[10] = 1.0f;
    CHECK_OK(sb_nll_loss_forward(tlp, tt, SB_LOSS_SUM, 17, tsc));
    CHECK_BITS(sc, oracle_canonical_sum(rows, N), "NLL SUM");
    CHECK_OK(sb_nll_loss_forward(tlp, tt, SB_LOSS_MEAN, 17, tsc));
    CHECK_BITS(sc, oracle_canonical_sum(rows, N) / 39.0f, "NLL MEAN");
    CHECK_OK(sb_nll_loss_backward(tlp, tt, SB_LOSS_MEAN, 17, tg, td));
    bad = 0;
    for (int r = 0; r < N; r++)
        for (int j = 0; j < C; j++) {
            float want = (t[r] != 17 && j == t[r]) ? -(g / 39.0f) : 0.0f;
            bad += !same(d[r * C + j], want);
        }
    CHECK(bad == 0, "NLL MEAN backward: %d differ", bad);
    CHECK_OK(sb_nll_loss_backward(tlp, tt, SB_LOSS_NONE, 17, tgs, td));
    bad = 0;
    for (int r = 0; r < N; r++)
        for (int j = 0; j < C; j++) {
            float want = (t[r] != 17 && j == t[r]) ? -gs[r] : 0.0f;
            bad += !same(d[r * C + j], want);
        }
    CHECK(bad == 0, "NLL NONE backward: %d differ", bad);
    CHECK_OK(sb_nll_loss_backward(tlp, tt, SB_LOSS_SUM, 17, tg, td));
    CHECK_BITS(d[0 * C + 0], -2.5f, "NLL SUM backward");
    sb_tensor *all[] = {tlp, tt, tl, tsc, td, tg, tgs};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) sb_tensor_free(all[i]);
}

static void test_mse(void) {
    int64_t n = 8193 * 2 + 5;
    float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4), *q = malloc((size_t)n * 4);
    float *l = malloc((size_t)n * 4), *dx = malloc((size_t)n * 4), *dy = malloc((size_t)n * 4);
    float *g = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) {
        x[i] = (float)(urand() * 4 - 2);
        y[i] = (float)(urand() * 4 - 2);
        g[i] = (float)(urand() - 0.5);
        float d = x[i] - y[i];
        q[i] = d * d;
    }
    x[5] = 0x1p-140f; y[5] = -0x1p-141f; /* subnormal difference */
    q[5] = (x[5] - y[5]) * (x[5] - y[5]);
    int64_t shape[2] = {2, n / 2}; /* n is odd: use (1, n) and reshape-free 1-D */
    (void)shape;
    sb_tensor *tx = wrap(x, 1, &n), *ty = wrap(y, 1, &n), *tl = wrap(l, 1, &n),
              *tdx = wrap(dx, 1, &n), *tdy = wrap(dy, 1, &n), *tg = wrap(g, 1, &n);
    float sc, up = 1.25f;
    sb_tensor *tsc = wrap(&sc, 0, NULL), *tup = wrap(&up, 0, NULL);
    CHECK_OK(sb_mse_forward(tx, ty, SB_LOSS_NONE, tl));
    CHECK(memcmp(l, q, (size_t)n * 4) == 0, "MSE NONE");
    CHECK_OK(sb_mse_forward(tx, ty, SB_LOSS_SUM, tsc));
    CHECK_BITS(sc, oracle_canonical_sum(q, n), "MSE SUM is the canonical sum of NONE");
    float seq = 0;
    for (int64_t i = 0; i < n; i++) seq += q[i];
    CHECK(sb_test_bits(seq) != sb_test_bits(sc), "a sequential sum would have matched: weak test");
    CHECK_OK(sb_mse_forward(tx, ty, SB_LOSS_MEAN, tsc));
    CHECK_BITS(sc, oracle_canonical_sum(q, n) / (float)n, "MSE MEAN");
    double ref = 0;
    for (int64_t i = 0; i < n; i++) ref += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
    CHECK(fabs(sc - ref / (double)n) < 1e-5 * ref / (double)n, "MSE vs float64");
    /* backward: ((x - y) * norm) * g */
    CHECK_OK(sb_mse_backward(tx, ty, SB_LOSS_MEAN, tup, tdx, tdy));
    int64_t bad = 0, far = 0;
    float norm = 2.0f / (float)n;
    for (int64_t i = 0; i < n; i++) {
        float want = ((x[i] - y[i]) * norm) * up;
        bad += !same(dx[i], want) || !same(dy[i], -want);
        double fd = 2.0 * ((double)x[i] - y[i]) / (double)n * 1.25; /* d/dx of the float64 loss */
        far += fabs(dx[i] - fd) > 1e-6 * fabs(fd) + 1e-30;
    }
    CHECK(bad == 0 && far == 0, "MSE MEAN backward: %lld differ, %lld far", (long long)bad, (long long)far);
    CHECK_OK(sb_mse_backward(tx, ty, SB_LOSS_NONE, tg, tdx, NULL));
    bad = 0;
    for (int64_t i = 0; i < n; i++) bad += !same(dx[i], ((x[i] - y[i]) * 2.0f) * g[i]);
    CHECK(bad == 0, "MSE NONE backward: %lld differ", (long long)bad);
    CHECK_OK(sb_mse_backward(tx, ty, SB_LOSS_SUM, tup, tdx, NULL));
    CHECK_BITS(dx[7], ((x[7] - y[7]) * 2.0f) * 1.25f, "MSE SUM backward");
    /* finite differences on a small float64 problem through the public API */
    float xs[3] = {0.5f, -1.25f, 2.0f}, ys[3] = {0.25f, 1.0f, -1.0f}, ds[3];
    int64_t n3 = 3;
    sb_tensor *tx3 = wrap(xs, 1, &n3), *ty3 = wrap(ys, 1, &n3), *td3 = wrap(ds, 1, &n3);
    CHECK_OK(sb_mse_backward(tx3, ty3, SB_LOSS_MEAN, tup, td3, NULL));
    for (int k = 0; k < 3; k++) {
        double h = 1e-6, lp = 0, lm = 0;
        for (int i = 0; i < 3; i++) {
            double xi = xs[i] + (i == k ? h : 0), xm = xs[i] - (i == k ? h : 0);
            lp += (xi - ys[i]) * (xi - ys[i]);
            lm += (xm - ys[i]) * (xm - ys[i]);
        }
        double fd = 1.25 * (lp - lm) / 3.0 / (2 * h);
        CHECK(fabs(ds[k] - fd) < 1e-5, "MSE finite difference %d: %g vs %g", k, (double)ds[k], fd);
    }
    sb_tensor *all[] = {tx, ty, tl, tdx, tdy, tg, tsc, tup, tx3, ty3, td3};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) sb_tensor_free(all[i]);
    free(x); free(y); free(q); free(l); free(dx); free(dy); free(g);
}

static void test_errors(void) {
    float a[12] = {0}, b[12] = {0}, c[12] = {0}, s = 0;
    int64_t s34[2] = {3, 4}, s43[2] = {4, 3}, s3 = 3, s4 = 4, s0c[2] = {0, 4}, s30[2] = {3, 0};
    int64_t t64[3] = {0, 1, 2}, tbad[3] = {0, 4, 1}, tneg[3] = {0, -1, 1};
    int32_t t32bad[3] = {0, 1, 9};
    sb_tensor *x = wrap(a, 2, s34), *y = wrap(b, 2, s34), *z = wrap(c, 2, s34), *y43 = wrap(b, 2, s43);
    sb_tensor *sc = wrap(&s, 0, NULL), *v3 = wrap(c, 1, &s3), *v4 = wrap(c, 1, &s4);
    sb_tensor *x0 = wrap(a, 2, s0c), *xc0 = wrap(a, 2, s30);
    sb_tensor *t = wrapd(t64, SB_I64, 1, &s3, NULL), *tb = wrapd(tbad, SB_I64, 1, &s3, NULL);
    sb_tensor *tn = wrapd(tneg, SB_I64, 1, &s3, NULL), *t32 = wrapd(t32bad, SB_I32, 1, &s3, NULL);
    sb_tensor *tf = wrap(c, 1, &s3), *t4 = wrapd(t64, SB_I64, 1, &s4, NULL);
    sb_tensor *xi = wrapd(t64, SB_I32, 1, &s3, NULL);
    /* softmax family */
    CHECK_ERROR(sb_softmax_forward(NULL, -1, y), SB_ERR_NULL, "sb_softmax_forward: x is NULL");
    CHECK_ERROR(sb_softmax_forward(x, -1, NULL), SB_ERR_NULL, "sb_softmax_forward: y is NULL");
    CHECK_ERROR(sb_softmax_forward(xi, 0, v3), SB_ERR_DTYPE, "x has dtype int32");
    CHECK_ERROR(sb_softmax_forward(x, 1, y43), SB_ERR_SHAPE, "y has shape [4, 3]");
    CHECK_ERROR(sb_softmax_forward(x, 2, y), SB_ERR_ARG, "dim 2 is out of range");
    CHECK_ERROR(sb_softmax_forward(x, -3, y), SB_ERR_ARG, "dim -3 is out of range");
    CHECK_ERROR(sb_log_softmax_forward(x, 5, y), SB_ERR_ARG, "sb_log_softmax_forward: dim 5");
    CHECK_ERROR(sb_log_softmax_forward(NULL, 0, y), SB_ERR_NULL, "sb_log_softmax_forward: x is NULL");
    CHECK_ERROR(sb_log_softmax_forward(x, 0, y43), SB_ERR_SHAPE, "y has shape");
    CHECK_ERROR(sb_softmax_backward(x, y43, 1, z), SB_ERR_SHAPE, "dy has shape [4, 3]");
    CHECK_ERROR(sb_softmax_backward(x, y, 1, y43), SB_ERR_SHAPE, "dx has shape [4, 3]");
    CHECK_ERROR(sb_softmax_backward(x, NULL, 1, z), SB_ERR_NULL, "sb_softmax_backward: dy is NULL");
    CHECK_ERROR(sb_softmax_backward(x, y, 9, z), SB_ERR_ARG, "dim 9");
    CHECK_ERROR(sb_log_softmax_backward(NULL, y, 1, z), SB_ERR_NULL, "sb_log_softmax_backward: y is NULL");
    CHECK_ERROR(sb_log_softmax_backward(x, y, 1, xi), SB_ERR_DTYPE, "dx has dtype int32");
    /* cross-entropy */
    const char *ce = "sb_cross_entropy_forward";
    (void)ce;
    c[0] = 42.0f;
    CHECK_ERROR(sb_cross_entropy_forward(x, tb, SB_LOSS_NONE, 0.0f, -100, v3), SB_ERR_RANGE,
                "sb_cross_entropy_forward: targets[1] = 4 is outside [0, 4)");
    CHECK(c[0] == 42.0f, "loss written on a range error");
    CHECK_ERROR(sb_cross_entropy_forward(x, tn, SB_LOSS_MEAN, 0.0f, -100, sc), SB_ERR_RANGE, "targets[1] = -1");
    CHECK_ERROR(sb_cross_entropy_forward(x, t32, SB_LOSS_MEAN, 0.0f, -100, sc), SB_ERR_RANGE, "targets[2] = 9");
    CHECK_OK(sb_cross_entropy_forward(x, tn, SB_LOSS_MEAN, 0.0f, -1, sc));
    CHECK_ERROR(sb_cross_entropy_forward(NULL, t, SB_LOSS_MEAN, 0.0f, -100, sc), SB_ERR_NULL, "logits is NULL");
    CHECK_ERROR(sb_cross_entropy_forward(x, NULL, SB_LOSS_MEAN, 0.0f, -100, sc), SB_ERR_NULL, "targets is NULL");
    CHECK_ERROR(sb_cross_entropy_forward(x, t, SB_LOSS_MEAN, 0.0f, -100, NULL), SB_ERR_NULL, "loss is NULL");
    CHECK_ERROR(sb_cross_entropy_forward(x, tf, SB_LOSS_MEAN, 0.0f, -100, sc), SB_ERR_DTYPE, "targets has dtype float32");
    CHECK_ERROR(sb_cross_entropy_forward(xi, t, SB_LOSS_MEAN, 0.0f, -100, sc), SB_ERR_DTYPE, "logits has dtype int32");
    CHECK_ERROR(sb_cross_entropy_forward(v3, t, SB_LOSS_MEAN, 0.0f, -100, sc), SB_ERR_SHAPE, "logits must have 2 dimensions");
    CHECK_ERROR(sb_cross_entropy_forward(x, t4, SB_LOSS_MEAN, 0.0f, -100, sc), SB_ERR_SHAPE, "targets has 4 entries");
    CHECK_ERROR(sb_cross_entropy_forward(x0, t, SB_LOSS_MEAN, 0.0f, -100, sc), SB_ERR_SHAPE, "need N >= 1");
    CHECK_ERROR(sb_cross_entropy_forward(xc0, t, SB_LOSS_MEAN, 0.0f, -100, sc), SB_ERR_SHAPE, "C >= 1");
    CHECK_ERROR(sb_cross_entropy_forward(x, t, SB_LOSS_MEAN, 0.0f, -100, v3), SB_ERR_SHAPE, "expected a 0-d tensor for reduction MEAN");
    CHECK_ERROR(sb_cross_entropy_forward(x, t, SB_LOSS_NONE, 0.0f, -100, v4), SB_ERR_SHAPE, "loss has shape [4], expected [3]");
    CHECK_ERROR(sb_cross_entropy_forward(x, t, SB_LOSS_SUM, -0.5f, -100, sc), SB_ERR_ARG, "label_smoothing = -0.5");
    CHECK_ERROR(sb_cross_entropy_forward(x, t, SB_LOSS_SUM, NAN, -100, sc), SB_ERR_ARG, "label_smoothing");
    CHECK_ERROR(sb_cross_entropy_forward(x, t, SB_LOSS_SUM, 1.5f, -100, sc), SB_ERR_ARG, "outside [0, 1]");
    CHECK_ERROR(sb_cross_entropy_forward(x, t, (sb_loss_reduction)7, 0.0f, -100, sc), SB_ERR_ARG, "reduction 7");
    CHECK_ERROR(sb_cross_entropy_backward(x, tb, SB_LOSS_MEAN, 0.0f, -100, sc, z), SB_ERR_RANGE,
                "sb_cross_entropy_backward: targets[1] = 4");
    CHECK_ERROR(sb_cross_entropy_backward(x, t, SB_LOSS_MEAN, 0.0f, -100, v3, z), SB_ERR_SHAPE, "dloss has shape [3]");
    CHECK_ERROR(sb_cross_entropy_backward(x, t, SB_LOSS_NONE, 0.0f, -100, sc, z), SB_ERR_SHAPE, "dloss has shape []");
    CHECK_ERROR(sb_cross_entropy_backward(x, t, SB_LOSS_MEAN, 0.0f, -100, sc, y43), SB_ERR_SHAPE, "dlogits has shape [4, 3]");
    CHECK_ERROR(sb_cross_entropy_backward(x, t, SB_LOSS_MEAN, 0.0f, -100, NULL, z), SB_ERR_NULL, "dloss is NULL");
    CHECK_ERROR(sb_cross_entropy_backward(x, t, SB_LOSS_MEAN, 2.0f, -100, sc, z), SB_ERR_ARG, "label_smoothing = 2");
    CHECK_ERROR(sb_cross_entropy_backward(x, t, SB_LOSS_MEAN, 0.0f, -100, sc, NULL), SB_ERR_NULL, "dlogits is NULL");
    /* NLL */
    CHECK_ERROR(sb_nll_loss_forward(x, tb, SB_LOSS_SUM, -100, sc), SB_ERR_RANGE, "sb_nll_loss_forward: targets[1] = 4");
    CHECK_ERROR(sb_nll_loss_forward(NULL, t, SB_LOSS_SUM, -100, sc), SB_ERR_NULL, "logp is NULL");
    CHECK_ERROR(sb_nll_loss_forward(x, t32, SB_LOSS_SUM, -100, sc), SB_ERR_RANGE, "targets[2] = 9 is outside [0, 4)");
    CHECK_ERROR(sb_nll_loss_forward(x, tf, SB_LOSS_SUM, -100, sc), SB_ERR_DTYPE, "targets has dtype float32");
    CHECK_ERROR(sb_nll_loss_forward(x0, t, SB_LOSS_SUM, -100, sc), SB_ERR_SHAPE, "N >= 1");
    CHECK_ERROR(sb_nll_loss_backward(x, t, SB_LOSS_SUM, -100, sc, y43), SB_ERR_SHAPE, "dlogp has shape [4, 3]");
    CHECK_ERROR(sb_nll_loss_backward(x, tn, SB_LOSS_SUM, -100, sc, z), SB_ERR_RANGE, "sb_nll_loss_backward: targets[1] = -1");
    CHECK_ERROR(sb_nll_loss_backward(x, t, SB_LOSS_SUM, -100, NULL, z), SB_ERR_NULL, "dloss is NULL");
    /* MSE */
    CHECK_ERROR(sb_mse_forward(x, y43, SB_LOSS_MEAN, sc), SB_ERR_SHAPE, "sb_mse_forward: target has shape [4, 3]");
    CHECK_ERROR(sb_mse_forward(NULL, y, SB_LOSS_MEAN, sc), SB_ERR_NULL, "x is NULL");
    CHECK_ERROR(sb_mse_forward(x, y, SB_LOSS_MEAN, NULL), SB_ERR_NULL, "loss is NULL");
    CHECK_ERROR(sb_mse_forward(xi, xi, SB_LOSS_MEAN, sc), SB_ERR_DTYPE, "x has dtype int32");
    CHECK_ERROR(sb_mse_forward(x, y, SB_LOSS_NONE, sc), SB_ERR_SHAPE, "loss has shape [], expected [3, 4]");
    CHECK_ERROR(sb_mse_forward(x, y, SB_LOSS_SUM, z), SB_ERR_SHAPE, "expected a 0-d tensor for reduction SUM");
    CHECK_ERROR(sb_mse_forward(x0, x0, SB_LOSS_MEAN, sc), SB_ERR_SHAPE, "no elements");
    CHECK_ERROR(sb_mse_forward(x, y, (sb_loss_reduction)-1, sc), SB_ERR_ARG, "reduction -1");
    CHECK_ERROR(sb_mse_backward(x, y, SB_LOSS_MEAN, sc, y43, NULL), SB_ERR_SHAPE, "sb_mse_backward: dx has shape [4, 3]");
    CHECK_ERROR(sb_mse_backward(x, y, SB_LOSS_MEAN, sc, z, y43), SB_ERR_SHAPE, "dtarget has shape [4, 3]");
    CHECK_ERROR(sb_mse_backward(x, y, SB_LOSS_MEAN, v3, z, NULL), SB_ERR_SHAPE, "dloss has shape [3]");
    CHECK_ERROR(sb_mse_backward(x, y, SB_LOSS_MEAN, sc, NULL, NULL), SB_ERR_NULL, "dx is NULL");
    CHECK_ERROR(sb_mse_backward(x, y, SB_LOSS_NONE, sc, z, NULL), SB_ERR_SHAPE, "expected [3, 4]");
    sb_tensor *all[] = {x, y, z, y43, sc, v3, v4, x0, xc0, t, tb, tn, t32, tf, t4, xi};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) sb_tensor_free(all[i]);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_softmax_rows();
    test_softmax_dims();
    test_softmax_special();
    test_cross_entropy();
    test_nll();
    test_mse();
    test_errors();
    return sb_test_finish();
}
