/* Elementwise losses (sb_elementwise_loss_forward/backward): L1, smooth L1,
 * Huber, BCE, BCE with logits, KL divergence (MSE keeps its own tests in
 * test_loss.c and is the same entry point's kind 0).
 *  - every term and derivative against an independent binary64 evaluation
 *    of the formula (a few float roundings apart);
 *  - the reductions: SUM is the canonical sum of the NONE terms, MEAN that
 *    sum / numel, and MEAN's gradient is the NONE gradient with
 *    dloss / numel as every element's upstream value, bit for bit;
 *  - weight (a zero-stride broadcast view) and pos_weight;
 *  - the special points PyTorch fixes (BCE's -100 clamp at x = 0 and 1,
 *    KL's 0 log 0 = 0, smooth L1 with beta 0 = L1);
 *  - the same bits at 1 and 3 threads;
 *  - bad arguments: each refused with its error and nothing written. */
#include <math.h>
#include "harness.h"
#include "support/fastpath.h"

static sb_tensor *vec(int64_t n, const float *v) {
    sb_tensor *t = NULL;
    CHECK_OK(sb_tensor_new(&t, SB_F32, 1, &n));
    if (v) memcpy(t->data, v, (size_t)n * sizeof(float));
    return t;
}

static sb_tensor *scalar(float v) {
    sb_tensor *t = NULL;
    CHECK_OK(sb_tensor_new(&t, SB_F32, 0, NULL));
    *(float *)t->data = v;
    return t;
}

/* The term and derivative in binary64 (p->beta as delta or beta). */
static double term64(const sb_elementwise_loss *p, double x, double t, double pw, bool has_pw) {
    double d = x - t, z = fabs(d);
    switch (p->kind) {
    case SB_LOSS_L1: return z;
    case SB_LOSS_SMOOTH_L1: return z < p->beta ? 0.5 * z * z / p->beta : z - 0.5 * p->beta;
    case SB_LOSS_HUBER: return z < p->beta ? 0.5 * z * z : p->beta * (z - 0.5 * p->beta);
    case SB_LOSS_BCE: return (t - 1) * fmax(log1p(-x), -100) - t * fmax(log(x), -100);
    case SB_LOSS_BCE_WITH_LOGITS: {
        double ls = fmin(x, 0) - log1p(exp(-fabs(x)));
        return (1 - t) * x - (has_pw ? (pw - 1) * t + 1 : 1) * ls;
    }
    case SB_LOSS_KL_DIV:
        return p->log_target ? exp(t) * (t - x) : (t == 0 ? 0 : t * log(t)) - t * x;
    default: return NAN;
    }
}

static double grad64(const sb_elementwise_loss *p, double x, double t, double pw, bool has_pw) {
    double d = x - t;
    switch (p->kind) {
    case SB_LOSS_L1: return d > 0 ? 1 : d < 0 ? -1 : 0;
    case SB_LOSS_SMOOTH_L1: return d <= -p->beta ? -1 : d >= p->beta ? 1 : d / p->beta;
    case SB_LOSS_HUBER: return d <= -p->beta ? -p->beta : d >= p->beta ? p->beta : d;
    case SB_LOSS_BCE: return (x - t) / fmax((1 - x) * x, 1e-12);
    case SB_LOSS_BCE_WITH_LOGITS: {
        double s = 1 / (1 + exp(-x));
        return has_pw ? (pw * t + 1 - t) * s - pw * t : s - t;
    }
    case SB_LOSS_KL_DIV: return p->log_target ? -exp(t) : -t;
    default: return NAN;
    }
}

static int close_to(float got, double want) {
    if (isnan(want)) return isnan(got);
    return fabs((double)got - want) <= 1e-5 * fabs(want) + 1e-6;
}

#define N 257

static void inputs(const sb_elementwise_loss *p, float *x, float *t, float *pw) {
    for (int i = 0; i < N; i++) {
        float a = sb_test_unif(-3.0f, 3.0f), b = sb_test_unif(-3.0f, 3.0f);
        if (p->kind == SB_LOSS_BCE) a = a * a / (1.0f + a * a), b = (b + 3.0f) / 6.0f;
        if (p->kind == SB_LOSS_KL_DIV && !p->log_target) b = (b + 3.0f) / 6.0f;
        x[i] = a;
        t[i] = b;
        pw[i] = sb_test_unif(0.25f, 4.0f);
    }
    x[0] = t[0]; /* d = 0 */
    if (p->kind == SB_LOSS_BCE) x[1] = 0.0f, x[2] = 1.0f;
    if (p->kind == SB_LOSS_KL_DIV && !p->log_target) t[3] = 0.0f;
}

static void test_kind(const sb_elementwise_loss *p, const char *name) {
    float x[N], t[N], pw[N];
    inputs(p, x, t, pw);
    bool has_pw = p->kind == SB_LOSS_BCE_WITH_LOGITS;
    sb_tensor *tx = vec(N, x), *tt = vec(N, t), *tpw = has_pw ? vec(N, pw) : NULL;
    sb_tensor *none = vec(N, NULL), *sum = scalar(0), *mean = scalar(0);
    CHECK_OK(sb_elementwise_loss_forward(p, tx, tt, NULL, tpw, SB_LOSS_NONE, none));
    CHECK_OK(sb_elementwise_loss_forward(p, tx, tt, NULL, tpw, SB_LOSS_SUM, sum));
    CHECK_OK(sb_elementwise_loss_forward(p, tx, tt, NULL, tpw, SB_LOSS_MEAN, mean));
    const float *l = none->data;
    int bad = 0;
    for (int i = 0; i < N; i++) bad += !close_to(l[i], term64(p, x[i], t[i], pw[i], has_pw));
    CHECK(bad == 0, "%s: %d of %d terms differ from binary64", name, bad, N);
    float s = sb_test_ssum(N, l, 1);
    CHECK_BITS(*(float *)sum->data, s, "%s: SUM is the canonical sum of the terms", name);
    CHECK_BITS(*(float *)mean->data, s / (float)N, "%s: MEAN is SUM / numel", name);
    /* gradients: NONE with per-element upstream values, MEAN against NONE */
    float g[N], gm[N];
    for (int i = 0; i < N; i++) g[i] = sb_test_unif(-2.0f, 2.0f);
    sb_tensor *tg = vec(N, g), *dx = vec(N, NULL), *dxm = vec(N, NULL), *dl = scalar(1.5f);
    CHECK_OK(sb_elementwise_loss_backward(p, tx, tt, NULL, tpw, SB_LOSS_NONE, tg, dx, NULL));
    const float *d = dx->data;
    bad = 0;
    for (int i = 0; i < N; i++) bad += !close_to(d[i], grad64(p, x[i], t[i], pw[i], has_pw) * g[i]);
    CHECK(bad == 0, "%s: %d of %d gradients differ from binary64", name, bad, N);
    CHECK_OK(sb_elementwise_loss_backward(p, tx, tt, NULL, tpw, SB_LOSS_MEAN, dl, dxm, NULL));
    for (int i = 0; i < N; i++) gm[i] = 1.5f / (float)N;
    sb_tensor *tgm = vec(N, gm);
    CHECK_OK(sb_elementwise_loss_backward(p, tx, tt, NULL, tpw, SB_LOSS_NONE, tgm, dx, NULL));
    CHECK(memcmp(dx->data, dxm->data, sizeof(float) * N) == 0,
          "%s: MEAN's gradient is NONE's with dloss / numel everywhere", name);
    /* a weight broadcast from one element (stride 0) multiplies each term */
    int64_t one = 1, n = N, zero_stride = 0;
    float wv = 0.75f;
    sb_tensor *w1 = NULL, *wb = NULL, *lw = vec(N, NULL);
    CHECK_OK(sb_tensor_wrap(&w1, &wv, SB_F32, 1, &one, NULL));
    CHECK_OK(sb_tensor_wrap(&wb, &wv, SB_F32, 1, &n, &zero_stride));
    CHECK_OK(sb_elementwise_loss_forward(p, tx, tt, wb, tpw, SB_LOSS_NONE, lw));
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += sb_test_bits(((float *)lw->data)[i]) != sb_test_bits(l[i] * 0.75f);
    CHECK(bad == 0, "%s: %d weighted terms are not term * weight", name, bad);
    /* the same bits at 3 threads */
    CHECK_OK(sb_set_num_threads(3));
    sb_tensor *sum3 = scalar(0);
    CHECK_OK(sb_elementwise_loss_forward(p, tx, tt, NULL, tpw, SB_LOSS_SUM, sum3));
    CHECK_BITS(*(float *)sum3->data, *(float *)sum->data, "%s: SUM at 3 threads", name);
    CHECK_OK(sb_set_num_threads(1));
    sb_tensor *all[] = {tx, tt, tpw, none, sum, mean, tg, dx, dxm, dl, tgm, w1, wb, lw, sum3};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) sb_tensor_free(all[i]);
}

static void test_special_points(void) {
    sb_elementwise_loss bce = {SB_LOSS_BCE, 0.0f, false};
    float x[4] = {0.0f, 1.0f, 0.0f, 1.0f}, t[4] = {1.0f, 0.0f, 0.0f, 1.0f};
    sb_tensor *tx = vec(4, x), *tt = vec(4, t), *l = vec(4, NULL);
    CHECK_OK(sb_elementwise_loss_forward(&bce, tx, tt, NULL, NULL, SB_LOSS_NONE, l));
    const float *v = l->data;
    CHECK(v[0] == 100.0f && v[1] == 100.0f, "BCE clamps log(0) at -100: %g %g", v[0], v[1]);
    CHECK(v[2] == 0.0f && v[3] == 0.0f, "BCE of a sure right answer is 0: %g %g", v[2], v[3]);
    sb_elementwise_loss kl = {SB_LOSS_KL_DIV, 0.0f, false};
    float kx[1] = {-2.0f}, kt[1] = {0.0f};
    sb_tensor *kxt = vec(1, kx), *ktt = vec(1, kt), *kl_l = vec(1, NULL);
    CHECK_OK(sb_elementwise_loss_forward(&kl, kxt, ktt, NULL, NULL, SB_LOSS_NONE, kl_l));
    CHECK(*(float *)kl_l->data == 0.0f, "KL: 0 log 0 - 0 x = 0, got %g", *(float *)kl_l->data);
    /* smooth L1 with beta 0 is L1, forward and backward, bit for bit */
    sb_elementwise_loss s0 = {SB_LOSS_SMOOTH_L1, 0.0f, false}, l1 = {SB_LOSS_L1, 0.0f, false};
    float a[3] = {1.5f, -0.25f, 2.0f}, b[3] = {0.5f, 0.5f, 2.0f};
    sb_tensor *ta = vec(3, a), *tb = vec(3, b), *r0 = vec(3, NULL), *r1 = vec(3, NULL),
              *one = vec(3, (const float[]){1, 1, 1});
    CHECK_OK(sb_elementwise_loss_forward(&s0, ta, tb, NULL, NULL, SB_LOSS_NONE, r0));
    CHECK_OK(sb_elementwise_loss_forward(&l1, ta, tb, NULL, NULL, SB_LOSS_NONE, r1));
    CHECK(memcmp(r0->data, r1->data, 12) == 0, "smooth L1 with beta 0 is L1");
    CHECK_OK(sb_elementwise_loss_backward(&s0, ta, tb, NULL, NULL, SB_LOSS_NONE, one, r0, NULL));
    CHECK_OK(sb_elementwise_loss_backward(&l1, ta, tb, NULL, NULL, SB_LOSS_NONE, one, r1, NULL));
    CHECK(memcmp(r0->data, r1->data, 12) == 0, "smooth L1's gradient with beta 0 is L1's");
    CHECK(((float *)r1->data)[2] == 0.0f, "L1's gradient at x = t is 0");
    sb_tensor *all[] = {tx, tt, l, kxt, ktt, kl_l, ta, tb, r0, r1, one};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) sb_tensor_free(all[i]);
}

static void test_errors(void) {
    float x[2] = {0.5f, 1.5f}, t[2] = {0.0f, 1.0f};
    sb_tensor *tx = vec(2, x), *tt = vec(2, t), *loss = scalar(-7.0f), *dx = vec(2, t);
    sb_elementwise_loss bce = {SB_LOSS_BCE, 0.0f, false}, huber = {SB_LOSS_HUBER, 0.0f, false},
                        smooth = {SB_LOSS_SMOOTH_L1, -1.0f, false}, mse = {SB_LOSS_MSE, 0, false},
                        l1 = {SB_LOSS_L1, 0.0f, false}, odd = {(sb_elementwise_loss_kind)9, 0, 0};
    CHECK_ERROR(sb_elementwise_loss_forward(&bce, tx, tt, NULL, NULL, SB_LOSS_SUM, loss),
                SB_ERR_RANGE, "x[1] = 1.5");
    CHECK_ERROR(sb_elementwise_loss_forward(&huber, tx, tt, NULL, NULL, SB_LOSS_SUM, loss),
                SB_ERR_ARG, "delta");
    CHECK_ERROR(sb_elementwise_loss_forward(&smooth, tx, tt, NULL, NULL, SB_LOSS_SUM, loss),
                SB_ERR_ARG, "beta");
    CHECK_ERROR(sb_elementwise_loss_forward(&mse, tx, tt, NULL, tx, SB_LOSS_SUM, loss), SB_ERR_ARG,
                "takes no pos_weight");
    CHECK_ERROR(sb_elementwise_loss_forward(&l1, tx, tt, NULL, tx, SB_LOSS_SUM, loss), SB_ERR_ARG,
                "takes no pos_weight");
    CHECK_ERROR(sb_elementwise_loss_forward(&odd, tx, tt, NULL, NULL, SB_LOSS_SUM, loss),
                SB_ERR_ARG, "kind");
    CHECK_ERROR(sb_elementwise_loss_forward(NULL, tx, tt, NULL, NULL, SB_LOSS_SUM, loss),
                SB_ERR_NULL, "params");
    CHECK(*(float *)loss->data == -7.0f, "nothing written on failure");
    sb_tensor *dl = scalar(1.0f), *dt = vec(2, t);
    sb_elementwise_loss bcel = {SB_LOSS_BCE_WITH_LOGITS, 0.0f, false};
    CHECK_ERROR(sb_elementwise_loss_backward(&bcel, tx, tt, NULL, NULL, SB_LOSS_SUM, dl, dx, dt),
                SB_ERR_UNSUPPORTED, "no target gradient");
    CHECK(((float *)dx->data)[1] == 1.0f, "nothing written on failure (dx)");
    sb_tensor *all[] = {tx, tt, loss, dx, dl, dt};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) sb_tensor_free(all[i]);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    const sb_elementwise_loss kinds[] = {
        {SB_LOSS_L1, 0.0f, false},    {SB_LOSS_SMOOTH_L1, 0.5f, false},
        {SB_LOSS_SMOOTH_L1, 1.0f, false}, {SB_LOSS_HUBER, 0.7f, false},
        {SB_LOSS_BCE, 0.0f, false},   {SB_LOSS_BCE_WITH_LOGITS, 0.0f, false},
        {SB_LOSS_KL_DIV, 0.0f, false}, {SB_LOSS_KL_DIV, 0.0f, true}};
    const char *names[] = {"l1", "smooth_l1 0.5", "smooth_l1 1", "huber 0.7",
                           "bce", "bce_with_logits (pos_weight)", "kl_div", "kl_div log_target"};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) test_kind(&kinds[k], names[k]);
    test_special_points();
    test_errors();
    return sb_test_finish();
}
