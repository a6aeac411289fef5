/* Tests for RMS norm (contract section "Normalisation", "RMS norm").
 *
 * Evidence:
 *   1. bitwise equality with an independent restatement of the contract
 *      sequence written here (a test-local recursive canonical sum and the
 *      stated operations), at every ISA level x thread count of
 *      tests/support/fastpath.h, on odd shapes, rows of more than 8192
 *      elements, more than 8192 rows (dweight's row sums), empty tensors and
 *      adversarial values (NaN, inf, subnormals, +-0);
 *   2. closeness of y to float64 and gradients (dx, dweight) against
 *      float64 central finite differences;
 *   3. inputs where another summation order gives other bits (so the
 *      bitwise checks can fail), PyTorch's semantics (zero rows, in place),
 *      the autograd op and the module against the tensor op, and bad input
 *      with nothing written. */
#include <float.h>
#include <math.h>
#include "harness.h"
#include "support/oracle.h"
#include "support/fastpath.h"

/* ---- test-local tools ---- */

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
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
static float *F(const sb_tensor *t) { return t ? (float *)t->data : NULL; }
static float *fbuf(int64_t n) { return malloc((size_t)(n > 0 ? n : 1) * sizeof(float)); }

static int same(float a, float b) {
    /* A NaN result may be any NaN (the contract leaves payload/sign open). */
    return sb_test_bits(a) == sb_test_bits(b) || (isnan(a) && isnan(b));
}
static void check_same(const char *label, const char *what, const float *got, const float *want,
                       int64_t n) {
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++)
        if (!same(got[i], want[i])) { if (first < 0) first = i; bad++; }
    CHECK(bad == 0, "%s: %s: %lld of %lld differ from the restated contract, first [%lld]: "
          "got %a want %a", label, what, (long long)bad, (long long)n, (long long)first,
          first >= 0 ? got[first] : 0.0f, first >= 0 ? want[first] : 0.0f);
}

/* ---- the contract, restated ----
 *   ms   = sum(x_i * x_i) / (float)D
 *   rrms = 1.0f / sqrtf(ms + eps)
 *   y_i  = (x_i * rrms) [* w_i]
 * backward:
 *   xhat_i = x_i * rrms;  g_i = dy_i [* w_i]
 *   c      = sum(g_i * xhat_i) / (float)D
 *   dx_i   = rrms * (g_i - xhat_i * c)
 *   dw_i   = sum over rows r in order of (dy_ri * xhat_ri) */
static void model_forward(const float *x, const float *w, float eps, float *y, float *rrms,
                          int64_t R, int64_t D) {
    float *t = fbuf(D);
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * D;
        for (int64_t i = 0; i < D; i++) t[i] = xr[i] * xr[i];
        float ms = oracle_canonical_sum(t, D) / (float)D;
        float rr = 1.0f / sqrtf(ms + eps);
        rrms[r] = rr;
        for (int64_t i = 0; i < D; i++) {
            float v = xr[i] * rr;
            y[r * D + i] = w ? v * w[i] : v;
        }
    }
    free(t);
}

static void model_backward(const float *dy, const float *x, const float *w, const float *rrms,
                           float *dx, float *dw, int64_t R, int64_t D) {
    float *t = fbuf(D > R ? D : R);
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * D, *dyr = dy + r * D;
        float rr = rrms[r];
        for (int64_t i = 0; i < D; i++) {
            float g = w ? dyr[i] * w[i] : dyr[i];
            t[i] = g * (xr[i] * rr);
        }
        float c = oracle_canonical_sum(t, D) / (float)D;
        for (int64_t i = 0; i < D; i++) {
            float g = w ? dyr[i] * w[i] : dyr[i];
            dx[r * D + i] = rr * (g - (xr[i] * rr) * c);
        }
    }
    for (int64_t i = 0; i < D; i++) {
        for (int64_t r = 0; r < R; r++) t[r] = dy[r * D + i] * (x[r * D + i] * rrms[r]);
        dw[i] = oracle_canonical_sum(t, R);
    }
    free(t);
}

static void f64_forward(const double *x, const double *w, double eps, double *y, int64_t R,
                        int64_t D) {
    for (int64_t r = 0; r < R; r++) {
        double s = 0;
        for (int64_t i = 0; i < D; i++) s += x[r * D + i] * x[r * D + i];
        double rr = 1.0 / sqrt(s / (double)D + eps);
        for (int64_t i = 0; i < D; i++) y[r * D + i] = x[r * D + i] * rr * (w ? w[i] : 1.0);
    }
}

static double *to_f64(const float *v, int64_t n) {
    if (!v) return NULL;
    double *d = malloc((size_t)(n > 0 ? n : 1) * sizeof *d);
    for (int64_t i = 0; i < n; i++) d[i] = v[i];
    return d;
}

/* ---- bitwise at every configuration ---- */

typedef struct {
    const char *label;
    int ndim;
    int64_t shape[4];
    int nd;
    bool weight;
    int values; /* 0: offset + spread * uniform, 1: adversarial (inf/NaN/subnormal/+-0) */
    float offset, spread, eps;
} rms_case;

static void run_case(const rms_case *k) {
    int lead = k->ndim - k->nd;
    int64_t R = 1, D = 1;
    for (int i = 0; i < lead; i++) R *= k->shape[i];
    for (int i = lead; i < k->ndim; i++) D *= k->shape[i];
    int64_t n = R * D;
    sb_tensor *x = mk(k->ndim, k->shape), *y = mk(k->ndim, k->shape), *dy = mk(k->ndim, k->shape),
              *dx = mk(k->ndim, k->shape), *sr = mk(lead, k->shape);
    sb_tensor *w = k->weight ? mk(k->nd, k->shape + lead) : NULL, *dw = mk(k->nd, k->shape + lead);
    sb_test_seed(0x5eed0000u + (uint64_t)n);
    for (int64_t i = 0; i < n; i++) {
        F(x)[i] = k->values ? sb_test_adversarial(3.0f) : k->offset + k->spread * urand();
        F(dy)[i] = urand();
    }
    if (w)
        for (int64_t i = 0; i < D; i++) F(w)[i] = 1.0f + 0.5f * urand();

    float *wy = fbuf(n), *wsr = fbuf(R), *wdx = fbuf(n), *wdw = fbuf(D);
    model_forward(F(x), F(w), k->eps, wy, wsr, R, D);
    model_backward(F(dy), F(x), F(w), wsr, wdx, wdw, R, D);

    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        char label[160];
        snprintf(label, sizeof label, "%s [%s]", k->label, sb_test_config_name(c));
        for (int64_t i = 0; i < n; i++) F(dx)[i] = F(y)[i] = 99.0f;
        for (int64_t i = 0; i < D; i++) F(dw)[i] = -5.0f;
        CHECK_OK(sb_rms_norm_forward(x, k->nd, w, k->eps, y, sr));
        CHECK_OK(sb_rms_norm_backward(dy, x, k->nd, w, sr, dx, dw));
        check_same(label, "y", F(y), wy, n);
        check_same(label, "save_rrms", F(sr), wsr, R);
        check_same(label, "dx", F(dx), wdx, n);
        if (w) check_same(label, "dweight", F(dw), wdw, D);
    }
    sb_test_config_reset();

    if (!k->values && n > 0) {
        double *x64 = to_f64(F(x), n), *w64 = to_f64(F(w), D), *y64 = malloc((size_t)n * 8);
        f64_forward(x64, w64, (double)k->eps, y64, R, D);
        double worst = 0;
        for (int64_t i = 0; i < n; i++) {
            double e = fabs(F(y)[i] - y64[i]) / (1e-6 * (1 + fabs(y64[i])));
            if (e > worst) worst = e;
        }
        CHECK(worst <= 1.0, "%s: y vs float64: worst error %.3g x the tolerance", k->label, worst);
        free(x64); free(w64); free(y64);
    }
    free(wy); free(wsr); free(wdx); free(wdw);
    sb_tensor *all[] = {x, y, dy, dx, sr, w, dw};
    for (size_t i = 0; i < 7; i++) sb_tensor_free(all[i]);
}

static void test_configurations(void) {
    const rms_case cases[] = {
        {"rms (4,33) weight", 2, {4, 33}, 1, true, 0, 0, 1, 1e-5f},
        {"rms (2,3,5) nd=2 weight", 3, {2, 3, 5}, 2, true, 0, 0.5f, 1, 1e-5f},
        {"rms (3,7) no weight", 2, {3, 7}, 1, false, 0, 0, 3, 1e-5f},
        {"rms (5,1) D=1", 2, {5, 1}, 1, true, 0, 0, 1, 1e-5f},
        {"rms (6,) whole tensor", 1, {6}, 1, true, 0, 0, 1, FLT_EPSILON},
        {"rms (2,2,4) nd=3", 3, {2, 2, 4}, 3, false, 0, 0, 1, 1e-3f},
        {"rms (2,9000) D > 8192", 2, {2, 9000}, 1, true, 0, 0, 1, 1e-5f},
        {"rms (8200,3) R > 8192 rows in dweight", 2, {8200, 3}, 1, true, 0, 0, 1, 1e-5f},
        {"rms (37,19) many rows, odd D", 2, {37, 19}, 1, true, 0, 0, 1, 1e-6f},
        {"rms (3,64) offset 1e4", 2, {3, 64}, 1, true, 0, 1e4f, 1, 1e-5f},
        {"rms (0,5) no rows", 2, {0, 5}, 1, true, 0, 0, 1, 1e-5f},
        {"rms (9,17) adversarial values", 2, {9, 17}, 1, true, 1, 0, 1, 1e-5f},
        {"rms (5,40) adversarial no weight", 2, {5, 40}, 1, false, 1, 0, 1, 1e-5f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&cases[i]);
}

/* ---- the order of the sums is visible ---- */

/* A row whose sum of squares in plain sequential order differs from the
 * canonical sum: the same data under another order gives other bits, so the
 * bitwise checks above can fail. */
static void test_order_matters(void) {
    enum { D = 97 };
    float x[D], sq[D];
    int found = 0;
    for (int attempt = 0; attempt < 100 && !found; attempt++) {
        for (int i = 0; i < D; i++) {
            x[i] = (i % 7 == 0 ? 3000.0f : 1.0f) * urand();
            sq[i] = x[i] * x[i];
        }
        float seq = 0.0f;
        for (int i = 0; i < D; i++) seq += sq[i];
        float canon = oracle_canonical_sum(sq, D);
        if (sb_test_bits(seq) == sb_test_bits(canon)) continue;
        found = 1;
        int64_t shape[2] = {1, D};
        sb_tensor *tx = mk(2, shape), *ty = mk(2, shape), *tr = mk(1, shape);
        memcpy(F(tx), x, sizeof x);
        CHECK_OK(sb_rms_norm_forward(tx, 1, NULL, 1e-5f, ty, tr));
        CHECK_BITS(F(tr)[0], 1.0f / sqrtf(canon / (float)D + 1e-5f), "rrms from the canonical sum");
        float other = 1.0f / sqrtf(seq / (float)D + 1e-5f);
        CHECK(sb_test_bits(other) != sb_test_bits(F(tr)[0]) ||
                  sb_test_bits(seq) != sb_test_bits(canon),
              "the sequential order differs in the sum");
        sb_tensor_free(tx); sb_tensor_free(ty); sb_tensor_free(tr);
    }
    CHECK(found, "no row found whose sequential and canonical sums of squares differ");
}

/* ---- gradients against float64 finite differences ---- */

typedef struct {
    double *x, *w, *r, *ybuf;
    double eps;
    int64_t R, D;
} fd_ctx;

static double loss64(fd_ctx *k) {
    f64_forward(k->x, k->w, k->eps, k->ybuf, k->R, k->D);
    double L = 0;
    for (int64_t i = 0; i < k->R * k->D; i++) L += k->ybuf[i] * k->r[i];
    return L;
}

static double fd(fd_ctx *k, double *v, int64_t i) {
    double h = 1e-5 * (fabs(v[i]) > 1 ? fabs(v[i]) : 1), s = v[i];
    v[i] = s + h;
    double lp = loss64(k);
    v[i] = s - h;
    double lm = loss64(k);
    v[i] = s;
    return (lp - lm) / (2 * h);
}

static void check_grad(const char *what, const float *got, const double *want, int64_t n) {
    double scale = 1e-3, worst = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(got[i] - want[i]) / scale;
        if (e > worst) { worst = e; at = i; }
    }
    CHECK(worst <= 2e-4, "rms grad: %s vs finite differences: rel err %.3g at %lld (got %.9g, "
          "fd %.9g)", what, worst, (long long)at, (double)got[at], want[at]);
}

static void test_gradients(void) {
    enum { R = 4, D = 9, N = R * D };
    int64_t shape[2] = {R, D};
    sb_tensor *x = mk(2, shape), *y = mk(2, shape), *r = mk(2, shape), *dx = mk(2, shape),
              *w = mk(1, shape + 1), *dw = mk(1, shape + 1), *sr = mk(1, shape);
    for (int64_t i = 0; i < N; i++) {
        F(x)[i] = 0.2f + 2 * urand();
        F(r)[i] = urand();
    }
    for (int64_t i = 0; i < D; i++) F(w)[i] = 1 + 0.5f * urand();
    CHECK_OK(sb_rms_norm_forward(x, 1, w, 1e-3f, y, sr));
    CHECK_OK(sb_rms_norm_backward(r, x, 1, w, sr, dx, dw));
    double *x64 = to_f64(F(x), N), *w64 = to_f64(F(w), D), *r64 = to_f64(F(r), N), ybuf[N], fdv[N];
    fd_ctx ctx = {x64, w64, r64, ybuf, (double)1e-3f, R, D};
    for (int64_t i = 0; i < N; i++) fdv[i] = fd(&ctx, x64, i);
    check_grad("dx", F(dx), fdv, N);
    for (int64_t i = 0; i < D; i++) fdv[i] = fd(&ctx, w64, i);
    check_grad("dweight", F(dw), fdv, D);
    free(x64); free(w64); free(r64);
    sb_tensor *all[] = {x, y, r, dx, w, dw, sr};
    for (size_t i = 0; i < 7; i++) sb_tensor_free(all[i]);
}

/* ---- PyTorch's semantics and special rows ---- */

static void test_special_rows(void) {
    enum { R = 3, D = 5 };
    int64_t shape[2] = {R, D};
    sb_tensor *x = mk(2, shape), *y = mk(2, shape), *sr = mk(1, shape);
    for (int64_t i = 0; i < R * D; i++) F(x)[i] = urand();
    for (int64_t i = 0; i < D; i++) F(x)[i] = (i % 2) ? -0.0f : 0.0f; /* a zero row */
    F(x)[2 * D + 1] = INFINITY;
    CHECK_OK(sb_rms_norm_forward(x, 1, NULL, FLT_EPSILON, y, sr));
    /* zero row: rrms = 1/sqrt(eps), y = x * rrms keeps the signed zeros */
    CHECK_BITS(F(sr)[0], 1.0f / sqrtf(FLT_EPSILON), "zero row rrms");
    for (int64_t i = 0; i < D; i++) CHECK_BITS(F(y)[i], F(x)[i], "zero row element %lld", (long long)i);
    /* an inf makes its row's rrms 0: inf * 0 is NaN, the others 0 (PyTorch's too) */
    CHECK_BITS(F(sr)[2], 0.0f, "inf row rrms");
    CHECK(isnan(F(y)[2 * D + 1]) && F(y)[2 * D] == 0.0f, "inf row: NaN at the inf, 0 elsewhere");
    for (int64_t i = D; i < 2 * D; i++) CHECK(isfinite(F(y)[i]), "the middle row stays finite");

    /* in place (y = x) gives the out-of-place bits */
    float keep[R * D];
    for (int64_t i = 0; i < R * D; i++) F(x)[i] = urand();
    CHECK_OK(sb_rms_norm_forward(x, 1, NULL, 1e-5f, y, sr));
    memcpy(keep, F(y), sizeof keep);
    CHECK_OK(sb_rms_norm_forward(x, 1, NULL, 1e-5f, x, NULL));
    check_same("in place", "y", F(x), keep, R * D);
    sb_tensor_free(x); sb_tensor_free(y); sb_tensor_free(sr);
}

/* ---- autograd op and module: the tensor op's bits ---- */

static void test_autograd_and_module(void) {
    enum { R = 6, D = 10 };
    int64_t shape[2] = {R, D};
    sb_tensor *x = mk(2, shape), *t = mk(2, shape), *w = mk(1, shape + 1), *gw = mk(1, shape + 1),
              *gx = mk(2, shape);
    for (int64_t i = 0; i < R * D; i++) {
        F(x)[i] = urand();
        F(t)[i] = urand();
    }
    for (int64_t i = 0; i < D; i++) F(w)[i] = 1 + 0.25f * urand();

    /* the expected bits: forward, mse(sum) backward, rms backward */
    sb_tensor *y = mk(2, shape), *sr = mk(1, shape), *dy = mk(2, shape), *dx = mk(2, shape),
              *dw = mk(1, shape + 1), *one = mk(0, NULL);
    F(one)[0] = 1.0f;
    CHECK_OK(sb_rms_norm_forward(x, 1, w, 1e-5f, y, sr));
    CHECK_OK(sb_mse_backward(y, t, SB_LOSS_SUM, one, dy, NULL));
    CHECK_OK(sb_rms_norm_backward(dy, x, 1, w, sr, dx, dw));

    sb_graph *g = NULL;
    CHECK_OK(sb_graph_new(&g));
    sb_variable *vx, *vw, *vy, *loss;
    CHECK_OK(sb_graph_param(g, x, gx, &vx));
    CHECK_OK(sb_graph_param(g, w, gw, &vw));
    CHECK_OK(sb_ag_rms_norm(g, vx, 1, vw, 1e-5f, &vy));
    CHECK_OK(sb_ag_mse(g, vy, t, SB_LOSS_SUM, &loss));
    CHECK_OK(sb_graph_backward(g, loss));
    check_same("sb_ag_rms_norm", "y", F(vy->value), F(y), R * D);
    check_same("sb_ag_rms_norm", "dx", F(gx), F(dx), R * D);
    check_same("sb_ag_rms_norm", "dweight", F(gw), F(dw), D);
    sb_graph_reset(g);

    /* the module: one weight of ones, PyTorch's nn.RMSNorm */
    sb_module *m = NULL;
    int64_t ns[1] = {D};
    CHECK_OK(sb_nn_rms_norm(&m, 1, ns, 1e-5f, true));
    sb_named p[2];
    size_t count = 0;
    CHECK_OK(sb_module_parameters(m, p, 2, &count));
    CHECK(count == 1 && strcmp(p[0].name, "weight") == 0, "one parameter named weight, got %zu",
          count);
    CHECK(m && strcmp(sb_module_kind(m), "rms_norm") == 0, "module kind rms_norm");
    int ones = 0;
    for (int64_t i = 0; count == 1 && i < D; i++) ones += F(p[0].value)[i] == 1.0f;
    CHECK(ones == D, "weight initialised to ones (%d of %d)", ones, D);
    sb_variable *in, *out;
    CHECK_OK(sb_graph_input(g, x, &in));
    CHECK_OK(sb_module_forward(m, g, in, &out));
    CHECK_OK(sb_rms_norm_forward(x, 1, NULL, 1e-5f, y, NULL));
    check_same("sb_nn_rms_norm", "y", F(out->value), F(y), R * D); /* w = 1: x * rrms * 1 */
    sb_module_free(m);
    sb_graph_free(g);
    sb_tensor *all[] = {x, t, w, gw, gx, y, sr, dy, dx, dw, one};
    for (size_t i = 0; i < 11; i++) sb_tensor_free(all[i]);
}

/* ---- bad arguments: refused with a message, nothing written ---- */

static void test_bad_inputs(void) {
    int64_t shape[2] = {2, 3}, bad_w[1] = {4}, bad_r[1] = {3};
    sb_tensor *x = mk(2, shape), *y = mk(2, shape), *w = mk(1, shape + 1), *sr = mk(1, shape),
              *w4 = mk(1, bad_w), *r3 = mk(1, bad_r), *dx = mk(2, shape), *dw = mk(1, shape + 1);
    for (int i = 0; i < 6; i++) F(x)[i] = urand();
    for (int i = 0; i < 3; i++) F(w)[i] = 1.0f;
    for (int i = 0; i < 6; i++) F(y)[i] = F(dx)[i] = 42.0f;
    for (int i = 0; i < 2; i++) F(sr)[i] = 42.0f;
    CHECK_ERROR(sb_rms_norm_forward(x, 0, w, 1e-5f, y, sr), SB_ERR_ARG, "normalized_ndim");
    CHECK_ERROR(sb_rms_norm_forward(x, 3, w, 1e-5f, y, sr), SB_ERR_ARG, "normalized_ndim");
    CHECK_ERROR(sb_rms_norm_forward(x, 1, w, 0.0f, y, sr), SB_ERR_ARG, "eps");
    CHECK_ERROR(sb_rms_norm_forward(x, 1, w, INFINITY, y, sr), SB_ERR_ARG, "eps");
    CHECK_ERROR(sb_rms_norm_forward(x, 1, w, NAN, y, sr), SB_ERR_ARG, "eps");
    CHECK_ERROR(sb_rms_norm_forward(x, 1, w4, 1e-5f, y, sr), SB_ERR_SHAPE, "weight");
    CHECK_ERROR(sb_rms_norm_forward(x, 1, w, 1e-5f, y, r3), SB_ERR_SHAPE, "save_rrms");
    CHECK_ERROR(sb_rms_norm_forward(x, 1, w, 1e-5f, NULL, sr), SB_ERR_NULL, "y");
    CHECK_ERROR(sb_rms_norm_forward(x, 1, w, 1e-5f, y, y), SB_ERR_SHAPE, "save_rrms");
    CHECK_ERROR(sb_rms_norm_backward(y, x, 1, w, NULL, dx, dw), SB_ERR_NULL, "save_rrms");
    CHECK_ERROR(sb_rms_norm_backward(y, x, 1, w, r3, dx, dw), SB_ERR_SHAPE, "save_rrms");
    CHECK_ERROR(sb_rms_norm_backward(y, x, 1, w, sr, dx, w4), SB_ERR_SHAPE, "dweight");
    CHECK_ERROR(sb_rms_norm_backward(y, x, 1, w, sr, y, dw), SB_ERR_ARG, "dx");
    int untouched = 0;
    for (int i = 0; i < 6; i++) untouched += F(y)[i] == 42.0f && F(dx)[i] == 42.0f;
    for (int i = 0; i < 2; i++) untouched += F(sr)[i] == 42.0f;
    CHECK(untouched == 8, "a refused call wrote its outputs (%d of 8 untouched)", untouched);
    sb_tensor *all[] = {x, y, w, sr, w4, r3, dx, dw};
    for (size_t i = 0; i < 8; i++) sb_tensor_free(all[i]);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_configurations();
    test_order_matters();
    test_gradients();
    test_special_rows();
    test_autograd_and_module();
    test_bad_inputs();
    return sb_test_finish();
}
