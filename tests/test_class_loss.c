/* Tests for sb_class_loss_forward/backward (samebits/loss.h): cross-entropy
 * and NLL with class weights, ignore_index, label smoothing and
 * K-dimensional inputs (N, C, d1, ..., dk), forward and backward.
 *
 * Expected bits come from a test-local restatement of docs/CONTRACT.md
 * (section 11, "Class weights and K-dimensional inputs") over gathered rows
 * and the shared independent canonical sum (support/oracle.h), at every ISA
 * level and thread count (support/fastpath.h). Closeness comes from float64
 * with PyTorch's formulas (weighted smoothing, MEAN over the weights of the
 * counted rows), gradients also from central differences of that float64
 * loss. */
#include <math.h>
#include "harness.h"
#include "support/fastpath.h"
#include "support/oracle.h"

typedef struct prob {
    int nll;             /* 0: cross-entropy of logits, 1: NLL of log-probabilities */
    float eps;           /* label smoothing */
    const float *w;      /* (C) or NULL */
    int64_t N, C, inner; /* rows = N * inner */
    sb_loss_reduction red;
    int64_t ignore;
} prob;

static float w_of(const prob *p, int64_t c) { return p->w ? p->w[c] : 1.0f; }

/* Row r's C entries, gathered from x (N, C, inner). */
static void gather(const prob *p, const float *x, int64_t r, float *row) {
    int64_t n = r / p->inner, k = r % p->inner;
    for (int64_t j = 0; j < p->C; j++) row[j] = x[(n * p->C + j) * p->inner + k];
}

static float t_max(const float *x, int64_t n) {
    float m = x[0];
    for (int64_t j = 1; j < n; j++) {
        if (isnan(m)) break;
        if (isnan(x[j]) || x[j] > m) m = x[j];
    }
    return m;
}

/* m and s of the row's softmax, and the terms buffer for reuse. */
static void t_stats(const float *row, int64_t C, float *m, float *s, float *tmp) {
    *m = t_max(row, C);
    for (int64_t j = 0; j < C; j++) tmp[j] = sb_expf(row[j] - *m);
    *s = oracle_canonical_sum(tmp, C);
}

static float t_row_loss(const prob *p, const float *row, int64_t t, float *tmp) {
    float w_t = w_of(p, t);
    if (p->nll) return w_t * -row[t];
    float m, s;
    t_stats(row, p->C, &m, &s, tmp);
    float ls = sb_logf(s);
    float nll = w_t * -((row[t] - m) - ls);
    if (p->eps == 0.0f) return nll;
    for (int64_t j = 0; j < p->C; j++) tmp[j] = w_of(p, j) * ((row[j] - m) - ls);
    float smooth = -oracle_canonical_sum(tmp, p->C);
    float a = (1.0f - p->eps) * nll;
    float b = smooth * (p->eps / (float)p->C);
    return a + b;
}

static float t_divisor(const prob *p, const int64_t *t) {
    int64_t rows = p->N * p->inner, count = 0;
    float *v = calloc((size_t)rows, sizeof *v);
    for (int64_t r = 0; r < rows; r++) {
        count += t[r] != p->ignore;
        v[r] = t[r] == p->ignore ? 0.0f : w_of(p, t[r]);
    }
    float d = p->w ? oracle_canonical_sum(v, rows) : (float)count;
    free(v);
    return d;
}

/* loss: rows values (NONE) or one */
static void t_forward(const prob *p, const float *x, const int64_t *t, float *loss) {
    int64_t rows = p->N * p->inner;
    float *v = calloc((size_t)rows, sizeof *v), *row = calloc((size_t)p->C, sizeof *row),
          *tmp = calloc((size_t)p->C, sizeof *tmp);
    for (int64_t r = 0; r < rows; r++) {
        gather(p, x, r, row);
        v[r] = t[r] == p->ignore ? 0.0f : t_row_loss(p, row, t[r], tmp);
    }
    if (p->red == SB_LOSS_NONE) memcpy(loss, v, (size_t)rows * sizeof *v);
    else {
        float sum = oracle_canonical_sum(v, rows);
        loss[0] = p->red == SB_LOSS_MEAN ? sum / t_divisor(p, t) : sum;
    }
    free(v);
    free(row);
    free(tmp);
}

static void t_backward(const prob *p, const float *x, const int64_t *t, const float *dloss,
                       float *dx) {
    int64_t rows = p->N * p->inner, C = p->C;
    float *row = calloc((size_t)C, sizeof *row), *e = calloc((size_t)C, sizeof *e);
    float G = p->red == SB_LOSS_MEAN ? dloss[0] / t_divisor(p, t) : 0.0f;
    float S = 0.0f;
    if (p->w) S = oracle_canonical_sum(p->w, C);
    float eps = p->eps, c = eps / (float)C;
    for (int64_t r = 0; r < rows; r++) {
        int64_t n = r / p->inner, k = r % p->inner, tr = t[r];
        float g = p->red == SB_LOSS_NONE ? dloss[r] : p->red == SB_LOSS_SUM ? dloss[0] : G;
        gather(p, x, r, row);
        float w_t = tr == p->ignore ? 0.0f : w_of(p, tr);
        float m = 0, s = 1;
        if (!p->nll && tr != p->ignore) t_stats(row, C, &m, &s, e);
        float W = !p->w ? 1.0f : eps == 0.0f ? w_t : (1.0f - eps) * w_t + c * S;
        for (int64_t j = 0; j < C; j++) {
            float v;
            if (tr == p->ignore) v = 0.0f;
            else if (p->nll) v = j == tr ? -g * w_t : 0.0f;
            else {
                float q = j == tr ? (eps == 0.0f ? w_t : (1.0f - eps) * w_t + c * w_t)
                                  : (eps == 0.0f ? 0.0f : c * w_of(p, j));
                float pj = e[j] / s;
                v = (pj * W - q) * g;
            }
            dx[(n * C + j) * p->inner + k] = v;
        }
    }
    free(row);
    free(e);
}

/* ---- float64, PyTorch's formulas ---- */
static double loss64(const prob *p, const double *x, const int64_t *t, const double *dl) {
    int64_t rows = p->N * p->inner, C = p->C;
    double total = 0, wsum = 0;
    for (int64_t r = 0; r < rows; r++) {
        if (t[r] == p->ignore) continue;
        int64_t n = r / p->inner, k = r % p->inner;
        const double *xr = x + n * C * p->inner + k;
        double wt = w_of(p, t[r]), v;
        if (p->nll) v = -wt * xr[t[r] * p->inner];
        else {
            double m = -INFINITY, s = 0, sm = 0;
            for (int64_t j = 0; j < C; j++) m = fmax(m, xr[j * p->inner]);
            for (int64_t j = 0; j < C; j++) s += exp(xr[j * p->inner] - m);
            double lse = m + log(s);
            for (int64_t j = 0; j < C; j++) sm -= w_of(p, j) * (xr[j * p->inner] - lse);
            v = (1 - p->eps) * (-wt * (xr[t[r] * p->inner] - lse)) + p->eps / (double)C * sm;
        }
        total += (p->red == SB_LOSS_NONE ? dl[r] : 1.0) * v;
        wsum += wt;
    }
    return p->red == SB_LOSS_MEAN ? total / wsum : total;
}

/* ---- the cases ---- */

typedef struct shape_case { int ndim; int64_t shape[4]; } shape_case;

/* uniform in [0, 1) */
static float unif(void) { return (float)(oracle_rand() >> 40) * 0x1p-24f; }

static void fill(float *x, int64_t n, float scale) {
    for (int64_t i = 0; i < n; i++) x[i] = (unif() * 2.0f - 1.0f) * scale;
}

static void run_case(const shape_case *sc, int nll, float eps, int weighted,
                     sb_loss_reduction red, int dtype32) {
    int64_t N = sc->shape[0], C = sc->shape[1], inner = 1;
    for (int i = 2; i < sc->ndim; i++) inner *= sc->shape[i];
    int64_t rows = N * inner, nx = rows * C;
    float *x = malloc((size_t)nx * sizeof *x), *w = malloc((size_t)C * sizeof *w);
    fill(x, nx, 4.0f);
    for (int64_t j = 0; j < C; j++) w[j] = 0.25f + unif() * 2.0f;
    int64_t *t = malloc((size_t)rows * sizeof *t);
    int32_t *t32 = malloc((size_t)rows * sizeof *t32);
    for (int64_t r = 0; r < rows; r++) {
        t[r] = r % 7 == 3 ? -100 : (int64_t)(oracle_rand() % (uint64_t)C);
        t32[r] = (int32_t)t[r];
    }
    prob p = {nll, eps, weighted ? w : NULL, N, C, inner, red, -100};
    int64_t nl = red == SB_LOSS_NONE ? rows : 1;
    float *want = malloc((size_t)nl * sizeof *want), *got = malloc((size_t)nl * sizeof *got);
    float *dl = malloc((size_t)nl * sizeof *dl);
    fill(dl, nl, 2.0f);
    float *dwant = malloc((size_t)nx * sizeof *dwant), *dgot = malloc((size_t)nx * sizeof *dgot);
    t_forward(&p, x, t, want);
    t_backward(&p, x, t, dl, dwant);

    sb_tensor *tx = NULL, *tt = NULL, *tw = NULL, *tl = NULL, *tdl = NULL, *tdx = NULL;
    int64_t ts[4] = {N};
    for (int i = 2; i < sc->ndim; i++) ts[i - 1] = sc->shape[i];
    CHECK_OK(sb_tensor_wrap(&tx, x, SB_F32, sc->ndim, sc->shape, NULL));
    CHECK_OK(sb_tensor_wrap(&tt, dtype32 ? (void *)t32 : (void *)t, dtype32 ? SB_I32 : SB_I64,
                            sc->ndim - 1, ts, NULL));
    CHECK_OK(sb_tensor_wrap(&tw, w, SB_F32, 1, &C, NULL));
    CHECK_OK(sb_tensor_wrap(&tl, got, SB_F32, red == SB_LOSS_NONE ? sc->ndim - 1 : 0, ts, NULL));
    CHECK_OK(sb_tensor_wrap(&tdl, dl, SB_F32, red == SB_LOSS_NONE ? sc->ndim - 1 : 0, ts, NULL));
    CHECK_OK(sb_tensor_wrap(&tdx, dgot, SB_F32, sc->ndim, sc->shape, NULL));
    sb_class_loss params = {nll ? SB_LOSS_NLL : SB_LOSS_CROSS_ENTROPY, eps, -100};
    char what[160];
    snprintf(what, sizeof what, "%s N=%lld C=%lld inner=%lld eps=%g w=%d red=%d i%d",
             nll ? "nll" : "ce", (long long)N, (long long)C, (long long)inner, (double)eps,
             weighted, (int)red, dtype32 ? 32 : 64);
    for (int cfg = 0; cfg < sb_test_config_count(); cfg++) {
        sb_test_config_apply(cfg);
        CHECK_OK(sb_class_loss_forward(&params, tx, tt, weighted ? tw : NULL, red, tl));
        CHECK_OK(sb_class_loss_backward(&params, tx, tt, weighted ? tw : NULL, red, tdl, tdx));
        int bad = 0, dbad = 0;
        for (int64_t i = 0; i < nl; i++) bad += !oracle_same(got[i], want[i]);
        for (int64_t i = 0; i < nx; i++) dbad += !oracle_same(dgot[i], dwant[i]);
        CHECK(bad == 0 && dbad == 0, "%s at %s: %d loss and %d gradient values differ from the "
              "contract", what, sb_test_config_name(cfg), bad, dbad);
    }
    sb_test_config_reset();

    /* closeness to float64 (PyTorch's formula), small cases only */
    if (nx <= 4096) {
        double *xd = malloc((size_t)nx * sizeof *xd), *dld = malloc((size_t)nl * sizeof *dld);
        for (int64_t i = 0; i < nx; i++) xd[i] = x[i];
        for (int64_t i = 0; i < nl; i++) dld[i] = dl[i];
        if (red == SB_LOSS_NONE) {
            int far = 0;
            for (int64_t r = 0; r < rows; r++) {
                double one[1];
                prob pr = p;
                pr.red = SB_LOSS_SUM; /* one row: the row's value */
                int64_t keep = t[r];
                int64_t *t1 = malloc((size_t)rows * sizeof *t1);
                for (int64_t q = 0; q < rows; q++) t1[q] = q == r ? keep : -100;
                one[0] = loss64(&pr, xd, t1, NULL);
                far += fabs(got[r] - one[0]) > 2e-5 * (1 + fabs(one[0]));
                free(t1);
            }
            CHECK(far == 0, "%s: %d rows far from float64", what, far);
        } else {
            double v = loss64(&p, xd, t, NULL);
            CHECK(fabs(got[0] - v) <= 2e-5 * (1 + fabs(v)), "%s: %.9g vs float64 %.9g", what,
                  (double)got[0], v);
        }
        /* gradient: central differences of the float64 loss (times dloss) */
        int far = 0;
        double h = 1e-6;
        for (int64_t i = 0; i < nx; i++) {
            double keep = xd[i];
            xd[i] = keep + h;
            double up = loss64(&p, xd, t, dld);
            xd[i] = keep - h;
            double down = loss64(&p, xd, t, dld);
            xd[i] = keep;
            double fd = (up - down) / (2 * h);
            if (red != SB_LOSS_NONE) fd *= dld[0];
            far += fabs(dgot[i] - fd) > 1e-4 * (1 + fabs(fd));
        }
        CHECK(far == 0, "%s: %d gradient entries far from float64 differences", what, far);
        free(xd);
        free(dld);
    }
    sb_tensor *all[] = {tx, tt, tw, tl, tdl, tdx};
    for (int i = 0; i < 6; i++) sb_tensor_free(all[i]);
    free(x); free(w); free(t); free(t32); free(want); free(got); free(dl); free(dwant); free(dgot);
}

static void test_against_contract(void) {
    const shape_case shapes[] = {
        {2, {7, 5}},      {3, {3, 4, 6}},    {4, {2, 3, 4, 5}},
        {3, {2, 37, 33}}, {2, {3, 2500}},    /* C above the fast kernel's chunk */
        {3, {5, 9, 700}}, /* enough rows for every thread count */
    };
    const float epss[] = {0.0f, 0.1f};
    const sb_loss_reduction reds[] = {SB_LOSS_NONE, SB_LOSS_MEAN, SB_LOSS_SUM};
    int nshapes = sb_test_quick() ? 4 : (int)(sizeof shapes / sizeof *shapes);
    oracle_seed(141);
    for (int s = 0; s < nshapes; s++)
        for (int nll = 0; nll < 2; nll++)
            for (int e = 0; e < (nll ? 1 : 2); e++)
                for (int wt = 0; wt < 2; wt++)
                    for (int r = 0; r < 3; r++)
                        run_case(&shapes[s], nll, epss[e], wt, reds[r], (s + r) % 2);
}

/* With no weight and (N, C) input the general entry point is the old one,
 * bit for bit; K-dimensional input is the (N * d, C) problem of its rows. */
static void test_same_as_plain_and_transposed(void) {
    enum { N = 4, C = 6, D = 5 };
    float x[N * C * D], xt[N * D * C], w[C];
    int64_t t[N * D];
    oracle_seed(142);
    fill(x, N * C * D, 5.0f);
    for (int j = 0; j < C; j++) w[j] = 0.5f + (float)j * 0.375f;
    for (int r = 0; r < N * D; r++) t[r] = r % 6 == 1 ? -100 : (int64_t)(oracle_rand() % C);
    for (int n = 0; n < N; n++) /* xt[(n * D + k) * C + j] = x[(n * C + j) * D + k] */
        for (int j = 0; j < C; j++)
            for (int k = 0; k < D; k++) xt[(n * D + k) * C + j] = x[(n * C + j) * D + k];
    int64_t s3[3] = {N, C, D}, s2[2] = {N * D, C}, st2[2] = {N, D}, st1 = N * D, sc = C;
    sb_tensor *tx = NULL, *txt = NULL, *tt2 = NULL, *tt1 = NULL, *tw = NULL;
    CHECK_OK(sb_tensor_wrap(&tx, x, SB_F32, 3, s3, NULL));
    CHECK_OK(sb_tensor_wrap(&txt, xt, SB_F32, 2, s2, NULL));
    CHECK_OK(sb_tensor_wrap(&tt2, t, SB_I64, 2, st2, NULL));
    CHECK_OK(sb_tensor_wrap(&tt1, t, SB_I64, 1, &st1, NULL));
    CHECK_OK(sb_tensor_wrap(&tw, w, SB_F32, 1, &sc, NULL));
    const sb_loss_reduction reds[] = {SB_LOSS_NONE, SB_LOSS_MEAN, SB_LOSS_SUM};
    for (int nll = 0; nll < 2; nll++)
        for (int ri = 0; ri < 3; ri++) {
            sb_loss_reduction red = reds[ri];
            float eps = nll ? 0.0f : 0.2f;
            sb_class_loss p = {nll ? SB_LOSS_NLL : SB_LOSS_CROSS_ENTROPY, eps, -100};
            float a[N * D], b[N * D], dl[N * D], da[N * C * D], db[N * D * C], dc[N * D * C];
            fill(dl, N * D, 1.0f);
            int64_t nd = red == SB_LOSS_NONE ? 1 : 0;
            sb_tensor *la = NULL, *lb = NULL, *la2 = NULL, *dla = NULL, *dlb = NULL, *ga = NULL,
                      *gb = NULL, *gc = NULL;
            CHECK_OK(sb_tensor_wrap(&la, a, SB_F32, nd ? 2 : 0, st2, NULL));
            CHECK_OK(sb_tensor_wrap(&la2, b, SB_F32, nd ? 1 : 0, &st1, NULL));
            CHECK_OK(sb_tensor_wrap(&dla, dl, SB_F32, nd ? 2 : 0, st2, NULL));
            CHECK_OK(sb_tensor_wrap(&dlb, dl, SB_F32, nd ? 1 : 0, &st1, NULL));
            CHECK_OK(sb_tensor_wrap(&ga, da, SB_F32, 3, s3, NULL));
            CHECK_OK(sb_tensor_wrap(&gb, db, SB_F32, 2, s2, NULL));
            CHECK_OK(sb_tensor_wrap(&gc, dc, SB_F32, 2, s2, NULL));
            (void)lb;
            /* weighted K-dim == weighted transposed 2-D */
            CHECK_OK(sb_class_loss_forward(&p, tx, tt2, tw, red, la));
            CHECK_OK(sb_class_loss_forward(&p, txt, tt1, tw, red, la2));
            int bad = 0;
            for (int i = 0; i < (nd ? N * D : 1); i++) bad += !oracle_same(a[i], b[i]);
            CHECK(bad == 0, "nll=%d red=%d: K-dim loss is not its rows' 2-D loss", nll, (int)red);
            CHECK_OK(sb_class_loss_backward(&p, tx, tt2, tw, red, dla, ga));
            CHECK_OK(sb_class_loss_backward(&p, txt, tt1, tw, red, dlb, gb));
            bad = 0;
            for (int n = 0; n < N; n++)
                for (int j = 0; j < C; j++)
                    for (int k = 0; k < D; k++)
                        bad += !oracle_same(da[(n * C + j) * D + k], db[(n * D + k) * C + j]);
            CHECK(bad == 0, "nll=%d red=%d: K-dim gradient is not its rows' 2-D gradient", nll,
                  (int)red);
            /* unweighted 2-D == sb_cross_entropy_* / sb_nll_loss_* */
            CHECK_OK(sb_class_loss_forward(&p, txt, tt1, NULL, red, la2));
            float old[N * D];
            sb_tensor *lo = NULL;
            CHECK_OK(sb_tensor_wrap(&lo, old, SB_F32, nd ? 1 : 0, &st1, NULL));
            if (nll) CHECK_OK(sb_nll_loss_forward(txt, tt1, red, -100, lo));
            else CHECK_OK(sb_cross_entropy_forward(txt, tt1, red, eps, -100, lo));
            bad = 0;
            for (int i = 0; i < (nd ? N * D : 1); i++) bad += !oracle_same(b[i], old[i]);
            CHECK(bad == 0, "nll=%d red=%d: unweighted loss differs from the old entry point", nll,
                  (int)red);
            CHECK_OK(sb_class_loss_backward(&p, txt, tt1, NULL, red, dlb, gb));
            if (nll) CHECK_OK(sb_nll_loss_backward(txt, tt1, red, -100, dlb, gc));
            else CHECK_OK(sb_cross_entropy_backward(txt, tt1, red, eps, -100, dlb, gc));
            bad = 0;
            for (int i = 0; i < N * D * C; i++) bad += !oracle_same(db[i], dc[i]);
            CHECK(bad == 0, "nll=%d red=%d: unweighted gradient differs from the old entry point",
                  nll, (int)red);
            sb_tensor *all[] = {la, la2, dla, dlb, ga, gb, gc, lo};
            for (int i = 0; i < 8; i++) sb_tensor_free(all[i]);
        }
    sb_tensor *all[] = {tx, txt, tt2, tt1, tw};
    for (int i = 0; i < 5; i++) sb_tensor_free(all[i]);
}

/* Special values: a -inf logit off the target without smoothing stays
 * finite; every row ignored gives MEAN 0/0 = NaN and zero gradients; a NaN
 * logit poisons only its own row; the weights' sum is the MEAN divisor. */
static void test_special(void) {
    float x[2 * 3] = {-INFINITY, 1.0f, 2.0f, NAN, 0.5f, 0.25f}, w[3] = {2.0f, 0.5f, 3.0f};
    int64_t t[2] = {1, 2}, tall[2] = {-100, -100}, s2[2] = {2, 3}, s1 = 2, s3 = 3;
    float loss[2], sc, dx[6];
    sb_tensor *tx = NULL, *tt = NULL, *ta = NULL, *tw = NULL, *tl = NULL, *ts = NULL, *td = NULL;
    CHECK_OK(sb_tensor_wrap(&tx, x, SB_F32, 2, s2, NULL));
    CHECK_OK(sb_tensor_wrap(&tt, t, SB_I64, 1, &s1, NULL));
    CHECK_OK(sb_tensor_wrap(&ta, tall, SB_I64, 1, &s1, NULL));
    CHECK_OK(sb_tensor_wrap(&tw, w, SB_F32, 1, &s3, NULL));
    CHECK_OK(sb_tensor_wrap(&tl, loss, SB_F32, 1, &s1, NULL));
    CHECK_OK(sb_tensor_wrap(&ts, &sc, SB_F32, 0, NULL, NULL));
    CHECK_OK(sb_tensor_wrap(&td, dx, SB_F32, 2, s2, NULL));
    sb_class_loss ce = {SB_LOSS_CROSS_ENTROPY, 0.0f, -100};
    CHECK_OK(sb_class_loss_forward(&ce, tx, tt, tw, SB_LOSS_NONE, tl));
    CHECK(isfinite(loss[0]) && loss[0] > 0.0f, "-inf logit off the target: loss %g", (double)loss[0]);
    CHECK(isnan(loss[1]), "NaN logit: its row is NaN (%g)", (double)loss[1]);
    double want = 0.5 * -(1.0 - (2.0 + log(1.0 + exp(-1.0))));
    CHECK(fabs(loss[0] - want) < 1e-6, "weighted row %g, want %g", (double)loss[0], want);
    CHECK_OK(sb_class_loss_forward(&ce, tx, ta, tw, SB_LOSS_MEAN, ts));
    CHECK(isnan(sc), "every row ignored: MEAN is 0/0 = NaN (%g)", (double)sc);
    CHECK_OK(sb_class_loss_forward(&ce, tx, ta, tw, SB_LOSS_SUM, ts));
    CHECK_BITS(sc, 0.0f, "every row ignored: SUM is +0");
    float one = 1.0f;
    sb_tensor *tone = NULL;
    CHECK_OK(sb_tensor_wrap(&tone, &one, SB_F32, 0, NULL, NULL));
    CHECK_OK(sb_class_loss_backward(&ce, tx, ta, tw, SB_LOSS_SUM, tone, td));
    int nz = 0;
    for (int i = 0; i < 6; i++) nz += sb_test_bits(dx[i]) != 0;
    CHECK(nz == 0, "ignored rows: gradient +0 everywhere (%d not)", nz);
    /* NLL MEAN = (w1 * -x1 + w2 * -x5) / (w1 + w2) */
    float lp[6] = {-1.0f, -2.0f, -3.0f, -0.5f, -0.25f, -4.0f};
    sb_tensor *tlp = NULL;
    CHECK_OK(sb_tensor_wrap(&tlp, lp, SB_F32, 2, s2, NULL));
    sb_class_loss nll = {SB_LOSS_NLL, 0.0f, -100};
    CHECK_OK(sb_class_loss_forward(&nll, tlp, tt, tw, SB_LOSS_MEAN, ts));
    float num = 0.5f * 2.0f + 3.0f * 4.0f, den = 0.5f + 3.0f;
    CHECK_BITS(sc, num / den, "NLL MEAN divides by the counted rows' weights");
    sb_tensor *all[] = {tx, tt, ta, tw, tl, ts, td, tone, tlp};
    for (int i = 0; i < 9; i++) sb_tensor_free(all[i]);
}

static void test_errors(void) {
    float x[2 * 3 * 4] = {0}, w[3] = {1, 1, 1}, w4[4] = {0}, loss[8], sc = 42.0f, dx[24];
    int64_t t[8] = {0, 1, 2, 0, 1, 2, 0, 1}, tbad[8] = {0, 1, 2, 3, 1, 2, 0, 1},
            tneg[8] = {0, 1, 2, 0, -5, 2, 0, 1};
    int64_t s3[3] = {2, 3, 4}, st[2] = {2, 4}, st33[2] = {2, 3}, sc3 = 3, sc4 = 4, s1 = 2;
    sb_tensor *tx = NULL, *tt = NULL, *tb = NULL, *tn = NULL, *tw = NULL, *tw4 = NULL,
              *tl = NULL, *ts = NULL, *td = NULL, *tt33 = NULL, *tt1 = NULL;
    CHECK_OK(sb_tensor_wrap(&tx, x, SB_F32, 3, s3, NULL));
    CHECK_OK(sb_tensor_wrap(&tt, t, SB_I64, 2, st, NULL));
    CHECK_OK(sb_tensor_wrap(&tb, tbad, SB_I64, 2, st, NULL));
    CHECK_OK(sb_tensor_wrap(&tn, tneg, SB_I64, 2, st, NULL));
    CHECK_OK(sb_tensor_wrap(&tw, w, SB_F32, 1, &sc3, NULL));
    CHECK_OK(sb_tensor_wrap(&tw4, w4, SB_F32, 1, &sc4, NULL));
    CHECK_OK(sb_tensor_wrap(&tl, loss, SB_F32, 2, st, NULL));
    CHECK_OK(sb_tensor_wrap(&ts, &sc, SB_F32, 0, NULL, NULL));
    CHECK_OK(sb_tensor_wrap(&td, dx, SB_F32, 3, s3, NULL));
    CHECK_OK(sb_tensor_wrap(&tt33, t, SB_I64, 2, st33, NULL));
    CHECK_OK(sb_tensor_wrap(&tt1, t, SB_I64, 1, &s1, NULL));
    sb_class_loss ce = {SB_LOSS_CROSS_ENTROPY, 0.1f, -100};
    for (int i = 0; i < 24; i++) dx[i] = 7.0f;
    CHECK_ERROR(sb_class_loss_forward(&ce, tx, tb, tw, SB_LOSS_MEAN, ts), SB_ERR_RANGE,
                "sb_class_loss_forward: targets[3] = 3 is outside [0, 3)");
    CHECK(sc == 42.0f, "loss written on a range error");
    CHECK_ERROR(sb_class_loss_backward(&ce, tx, tn, tw, SB_LOSS_MEAN, ts, td), SB_ERR_RANGE,
                "sb_class_loss_backward: targets[4] = -5");
    int touched = 0;
    for (int i = 0; i < 24; i++) touched += dx[i] != 7.0f;
    CHECK(touched == 0, "dinput written on a range error (%d)", touched);
    CHECK_ERROR(sb_class_loss_forward(&ce, tx, tt33, tw, SB_LOSS_MEAN, ts), SB_ERR_SHAPE,
                "targets has shape [2, 3]; expected input's shape without its class dimension");
    CHECK_ERROR(sb_class_loss_forward(&ce, tx, tt1, tw, SB_LOSS_MEAN, ts), SB_ERR_SHAPE,
                "targets must have 2 dimensions");
    CHECK_ERROR(sb_class_loss_forward(&ce, tx, tt, tw4, SB_LOSS_MEAN, ts), SB_ERR_SHAPE,
                "weight has 4 entries but there are C = 3 classes");
    CHECK_ERROR(sb_class_loss_forward(&ce, tx, tt, tw, SB_LOSS_MEAN, tl), SB_ERR_SHAPE,
                "expected a 0-d tensor for reduction MEAN");
    CHECK_ERROR(sb_class_loss_forward(&ce, tx, tt, tw, SB_LOSS_NONE, ts), SB_ERR_SHAPE,
                "loss has shape [], expected [2, 4] for reduction NONE");
    CHECK_ERROR(sb_class_loss_forward(NULL, tx, tt, tw, SB_LOSS_MEAN, ts), SB_ERR_NULL,
                "sb_class_loss_forward: params is NULL");
    sb_class_loss bad_kind = {(sb_class_loss_kind)5, 0.0f, -100};
    CHECK_ERROR(sb_class_loss_forward(&bad_kind, tx, tt, tw, SB_LOSS_MEAN, ts), SB_ERR_ARG,
                "params->kind = 5");
    sb_class_loss nll_smooth = {SB_LOSS_NLL, 0.1f, -100};
    CHECK_ERROR(sb_class_loss_backward(&nll_smooth, tx, tt, tw, SB_LOSS_MEAN, ts, td), SB_ERR_ARG,
                "NLL takes no label smoothing");
    sb_class_loss big_eps = {SB_LOSS_CROSS_ENTROPY, 1.5f, -100};
    CHECK_ERROR(sb_class_loss_forward(&big_eps, tx, tt, tw, SB_LOSS_MEAN, ts), SB_ERR_ARG,
                "label_smoothing = 1.5 is outside [0, 1]");
    CHECK_ERROR(sb_class_loss_backward(&ce, tx, tt, tw, SB_LOSS_NONE, ts, td), SB_ERR_SHAPE,
                "dloss has shape [], expected [2, 4]");
    CHECK(sc == 42.0f, "nothing written by refused calls");
    sb_tensor *all[] = {tx, tt, tb, tn, tw, tw4, tl, ts, td, tt33, tt1};
    for (int i = 0; i < 11; i++) sb_tensor_free(all[i]);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_against_contract();
    test_same_as_plain_and_transposed();
    test_special();
    test_errors();
    return sb_test_finish();
}
