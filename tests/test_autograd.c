/* Tests for the autograd engine (src/autograd, contract "Autograd").
 *
 * 1. Every sb_ag_* op: the graph's gradient of a scalar loss against float64
 *    central finite differences of the (float) forward, and for linear,
 *    conv2d and mse against an independent float64 analytic gradient.
 * 2. The graph adds no numerics: its gradients are bitwise equal to calling
 *    the loss's and the op's own tensor-level backward by hand.
 * 3. The accumulation rule (first contribution written, later ones added in
 *    reverse tape order, one IEEE add each), zero gradients for unreached
 *    parameters, determinism across sb_graph_reset, and bad inputs.
 *
 * Finite-difference tolerance. The forward runs in float32, so a central
 * difference with step h (h = 1e-2 * max(1, |x|), the step actually taken
 * is recomputed from the rounded float arguments) carries a rounding noise
 * of about |loss| * 2^-24 / h (~1e-5 here) plus a truncation error
 * O(h^2 * f''') (~1e-4). We accept |fd - g| <= 2e-3 * scale + 1e-2 * |g| + 1e-3,
 * scale = the largest |g| of that tensor. A wrong rule (missing factor,
 * sign, term) misses by O(scale), far outside that.
 */
#include <math.h>
#include <string.h>
#include "harness.h"
#include "samebits/autograd.h"
#include "samebits/conv.h"
#include "samebits/dropout.h"
#include "samebits/elementwise.h"
#include "samebits/linalg.h"
#include "samebits/loss.h"
#include "samebits/norm.h"

#define TRY(call)                          \
    do {                                   \
        sb_status s_try_ = (call);         \
        if (s_try_ != SB_OK) return s_try_; \
    } while (0)

/* ---- small helpers ---- */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double urand(void) { /* [-1, 1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

static sb_tensor *tnew(int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    int64_t s[4] = {d0, d1, d2, d3};
    sb_tensor *t = NULL;
    sb_status st = sb_tensor_new(&t, SB_F32, ndim, s);
    if (st != SB_OK) { fprintf(stderr, "tensor_new failed: %s\n", sb_last_error()); exit(2); }
    return t;
}
static sb_tensor *tlike(const sb_tensor *like) {
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, like->dtype, like->ndim, like->shape) != SB_OK) exit(2);
    return t;
}
static float *F(const sb_tensor *t) { return (float *)t->data; }
static int64_t N(const sb_tensor *t) { return sb_tensor_numel(t); }
static void fill_rand(sb_tensor *t, double scale) {
    for (int64_t i = 0; i < N(t); i++) F(t)[i] = (float)(scale * urand());
}
/* Random values with |x| >= 0.1 (keeps relu's kink away from the FD steps). */
static void fill_away_from_zero(sb_tensor *t) {
    for (int64_t i = 0; i < N(t); i++) {
        double u = urand();
        F(t)[i] = (float)(u < 0 ? u - 0.1 : u + 0.1);
    }
}
/* Distinct values at least 0.05 apart in a random order (no max-pool ties
 * and no FD step changes a window's winner). */
static void fill_distinct(sb_tensor *t) {
    int64_t n = N(t);
    for (int64_t i = 0; i < n; i++) F(t)[i] = (float)(0.05 * (double)(i - n / 2));
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)((urand() + 1.0) * 0.5 * (double)(i + 1));
        if (j > i) j = i;
        float tmp = F(t)[i]; F(t)[i] = F(t)[j]; F(t)[j] = tmp;
    }
}
static sb_tensor *scalar_one(void) {
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, SB_F32, 0, NULL) != SB_OK) exit(2);
    F(t)[0] = 1.0f;
    return t;
}
static int count_bit_mismatch(const sb_tensor *a, const sb_tensor *b) {
    int bad = 0;
    for (int64_t i = 0; i < N(a); i++)
        if (sb_test_bits(F(a)[i]) != sb_test_bits(F(b)[i])) bad++;
    return bad;
}

/* ---- one generic op case: inputs t[0..2], a loss built on the op ---- */
typedef enum {
    K_LINEAR, K_CONV, K_MAXPOOL, K_AVGPOOL, K_RELU, K_TANH, K_SIGMOID, K_GELU, K_GELU_TANH,
    K_FLATTEN, K_ADD, K_BN, K_LN, K_GN, K_DROPOUT, K_CE, K_MSE, K_RMS, K_MATMUL, K_BINARY,
    K_RESHAPE, K_TRANSPOSE, K_SOFTMAX, K_LOG_SOFTMAX, K_SUM, K_MEAN
} kind;

static const char *kind_name[] = {"linear", "conv2d", "max_pool2d", "avg_pool2d", "relu", "tanh",
                                  "sigmoid", "gelu", "gelu_tanh", "flatten", "add", "batch_norm",
                                  "layer_norm", "group_norm", "dropout", "cross_entropy", "mse",
                                  "rms_norm", "matmul", "binary", "reshape", "transpose",
                                  "softmax", "log_softmax", "sum", "mean"};

typedef struct {
    kind k;
    sb_tensor *t[3];    /* op inputs (x, w, b) / (a, b) / (x, gamma, beta); NULL = absent */
    sb_tensor *grad[3]; /* graph gradient for each differentiated input */
    bool param[3];      /* differentiated (sb_graph_param) or constant (sb_graph_input) */
    sb_tensor *target;  /* mse target of the op output, or class indices for CE */
    sb_conv2d_params conv;
    sb_pool2d_params pool;
    sb_tensor *rm, *rv; /* batch norm running stats (may be NULL in training) */
    bool training;
    float eps, p, ls, momentum;
    int ln_ndim, fs, fe;
    int64_t groups;
    sb_loss_reduction red;
    sb_binary_op bop;           /* K_BINARY */
    bool ta, tb, keepdim;       /* K_MATMUL trans flags; K_SUM/K_MEAN */
    int dims[4], ndims, d0, d1; /* K_SUM/K_MEAN dims; K_TRANSPOSE dims, K_SOFTMAX dim d0 */
    int rnd;                    /* K_RESHAPE: the new shape */
    int64_t rshape[4];
} ocase;

/* Runs the forward of case c in g: the op, then (unless the op is a loss)
 * loss = mse(y, target, SUM). */
static sb_status build(ocase *c, sb_graph *g, sb_variable **loss, sb_variable **yout) {
    sb_variable *v[3] = {NULL, NULL, NULL}, *y = NULL;
    for (int i = 0; i < 3; i++) {
        if (!c->t[i]) continue;
        if (c->param[i]) TRY(sb_graph_param(g, c->t[i], c->grad[i], &v[i]));
        else TRY(sb_graph_input(g, c->t[i], &v[i]));
    }
    switch (c->k) {
    case K_LINEAR: TRY(sb_ag_linear(g, v[0], v[1], v[2], &y)); break;
    case K_CONV: TRY(sb_ag_conv2d(g, v[0], v[1], v[2], &c->conv, &y)); break;
    case K_MAXPOOL: TRY(sb_ag_max_pool2d(g, v[0], &c->pool, &y)); break;
    case K_AVGPOOL: TRY(sb_ag_avg_pool2d(g, v[0], &c->pool, &y)); break;
    case K_RELU: TRY(sb_ag_relu(g, v[0], &y)); break;
    case K_TANH: TRY(sb_ag_tanh(g, v[0], &y)); break;
    case K_SIGMOID: TRY(sb_ag_sigmoid(g, v[0], &y)); break;
    case K_GELU: TRY(sb_ag_gelu(g, v[0], false, &y)); break;
    case K_GELU_TANH: TRY(sb_ag_gelu(g, v[0], true, &y)); break;
    case K_FLATTEN: TRY(sb_ag_flatten(g, v[0], c->fs, c->fe, &y)); break;
    case K_ADD: TRY(sb_ag_add(g, v[0], v[1], &y)); break;
    case K_BN:
        TRY(sb_ag_batch_norm(g, v[0], v[1], v[2], c->rm, c->rv, c->training, c->momentum, c->eps, &y));
        break;
    case K_LN: TRY(sb_ag_layer_norm(g, v[0], c->ln_ndim, v[1], v[2], c->eps, &y)); break;
    case K_GN: TRY(sb_ag_group_norm(g, v[0], c->groups, v[1], v[2], c->eps, &y)); break;
    case K_DROPOUT: TRY(sb_ag_dropout(g, v[0], c->p, c->training, 11, 3, 100, &y)); break;
    case K_CE: TRY(sb_ag_cross_entropy(g, v[0], c->target, c->red, c->ls, loss)); break;
    case K_MSE: TRY(sb_ag_mse(g, v[0], c->target, c->red, loss)); break;
    case K_RMS: TRY(sb_ag_rms_norm(g, v[0], c->ln_ndim, v[1], c->eps, &y)); break;
    case K_MATMUL: TRY(sb_ag_matmul(g, v[0], v[1], c->ta, c->tb, &y)); break;
    /* t[1] NULL: the op of x with itself (one variable used twice) */
    case K_BINARY: TRY(sb_ag_binary(g, c->bop, v[0], v[1] ? v[1] : v[0], &y)); break;
    case K_RESHAPE: TRY(sb_ag_reshape(g, v[0], c->rnd, c->rshape, &y)); break;
    case K_TRANSPOSE: TRY(sb_ag_transpose(g, v[0], c->d0, c->d1, &y)); break;
    case K_SOFTMAX: TRY(sb_ag_softmax(g, v[0], c->d0, &y)); break;
    case K_LOG_SOFTMAX: TRY(sb_ag_log_softmax(g, v[0], c->d0, &y)); break;
    case K_SUM: TRY(sb_ag_sum(g, v[0], c->dims, c->ndims, c->keepdim, &y)); break;
    case K_MEAN: TRY(sb_ag_mean(g, v[0], c->dims, c->ndims, c->keepdim, &y)); break;
    }
    if (yout) *yout = y;
    if (c->k != K_CE && c->k != K_MSE) TRY(sb_ag_mse(g, y, c->target, SB_LOSS_SUM, loss));
    return SB_OK;
}

static float eval_loss(ocase *c, sb_graph *g) {
    sb_graph_reset(g);
    sb_variable *loss = NULL;
    sb_status s = build(c, g, &loss, NULL);
    if (s != SB_OK) { fprintf(stderr, "forward failed: %s\n", sb_last_error()); exit(2); }
    return F(loss->value)[0];
}

/* The op's own backward, called by hand from the loss's tensor-level
 * backward; writes d[i] for each differentiated input. */
static void manual_backward(ocase *c, const sb_tensor *y, sb_tensor *d[3]) {
    sb_tensor *one = scalar_one(), *dy = NULL;
    for (int i = 0; i < 3; i++) d[i] = c->t[i] && c->param[i] ? tlike(c->t[i]) : NULL;
    if (c->k != K_CE && c->k != K_MSE) {
        dy = tlike(y);
        CHECK_OK(sb_mse_backward(y, c->target, SB_LOSS_SUM, one, dy, NULL));
    }
    switch (c->k) {
    case K_LINEAR: CHECK_OK(sb_linear_backward(dy, c->t[0], c->t[1], d[0], d[1], d[2])); break;
    case K_CONV: CHECK_OK(sb_conv2d_backward(dy, c->t[0], c->t[1], &c->conv, d[0], d[1], d[2])); break;
    case K_MAXPOOL: {
        sb_tensor *y2 = tlike(y), *idx = NULL;
        CHECK_OK(sb_tensor_new(&idx, SB_I64, y->ndim, y->shape));
        CHECK_OK(sb_max_pool2d_forward(c->t[0], &c->pool, y2, idx));
        CHECK_OK(sb_max_pool2d_backward(dy, idx, &c->pool, d[0]));
        sb_tensor_free(y2); sb_tensor_free(idx);
        break;
    }
    case K_AVGPOOL: CHECK_OK(sb_avg_pool2d_backward(dy, &c->pool, d[0])); break;
    case K_RELU: CHECK_OK(sb_relu_backward(c->t[0], dy, d[0])); break;
    case K_TANH: CHECK_OK(sb_tanh_backward(y, dy, d[0])); break;
    case K_SIGMOID: CHECK_OK(sb_sigmoid_backward(y, dy, d[0])); break;
    case K_GELU: CHECK_OK(sb_gelu_backward(c->t[0], dy, false, d[0])); break;
    case K_GELU_TANH: CHECK_OK(sb_gelu_backward(c->t[0], dy, true, d[0])); break;
    case K_FLATTEN: memcpy(d[0]->data, dy->data, (size_t)N(dy) * sizeof(float)); break;
    case K_ADD: CHECK_OK(sb_binary_backward(SB_BINARY_ADD, dy, c->t[0], c->t[1], d[0], d[1])); break;
    case K_BN: {
        int64_t C = c->t[0]->shape[1];
        sb_tensor *y2 = tlike(y), *mean = tnew(1, C, 0, 0, 0), *rstd = tnew(1, C, 0, 0, 0);
        sb_tensor *rm = c->rm ? tlike(c->rm) : NULL, *rv = c->rv ? tlike(c->rv) : NULL;
        if (rm) { memcpy(rm->data, c->rm->data, (size_t)C * 4); memcpy(rv->data, c->rv->data, (size_t)C * 4); }
        CHECK_OK(sb_batch_norm_forward(c->t[0], c->t[1], c->t[2], rm, rv, c->training, c->momentum, c->eps,
                                       y2, mean, rstd));
        CHECK(count_bit_mismatch(y2, y) == 0, "batch_norm forward differs from the graph's");
        CHECK_OK(sb_batch_norm_backward(dy, c->t[0], c->t[1], mean, rstd, c->training, d[0], d[1], d[2]));
        sb_tensor_free(y2); sb_tensor_free(mean); sb_tensor_free(rstd); sb_tensor_free(rm); sb_tensor_free(rv);
        break;
    }
    case K_LN: {
        int rows = c->t[0]->ndim - c->ln_ndim;
        sb_tensor *y2 = tlike(y), *mean = NULL, *rstd = NULL;
        CHECK_OK(sb_tensor_new(&mean, SB_F32, rows, c->t[0]->shape));
        CHECK_OK(sb_tensor_new(&rstd, SB_F32, rows, c->t[0]->shape));
        CHECK_OK(sb_layer_norm_forward(c->t[0], c->ln_ndim, c->t[1], c->t[2], c->eps, y2, mean, rstd));
        CHECK_OK(sb_layer_norm_backward(dy, c->t[0], c->ln_ndim, c->t[1], mean, rstd, d[0], d[1], d[2]));
        sb_tensor_free(y2); sb_tensor_free(mean); sb_tensor_free(rstd);
        break;
    }
    case K_GN: {
        const int64_t st[2] = {c->t[0]->shape[0], c->groups};
        sb_tensor *y2 = tlike(y), *mean = NULL, *rstd = NULL;
        CHECK_OK(sb_tensor_new(&mean, SB_F32, 2, st));
        CHECK_OK(sb_tensor_new(&rstd, SB_F32, 2, st));
        CHECK_OK(sb_group_norm_forward(c->t[0], c->groups, c->t[1], c->t[2], c->eps, y2, mean, rstd));
        CHECK(count_bit_mismatch(y2, y) == 0, "group_norm forward differs from the graph's");
        CHECK_OK(sb_group_norm_backward(dy, c->t[0], c->groups, c->t[1], mean, rstd, d[0], d[1], d[2]));
        sb_tensor_free(y2); sb_tensor_free(mean); sb_tensor_free(rstd);
        break;
    }
    case K_DROPOUT: {
        sb_tensor *y2 = tlike(y), *mask = tlike(y);
        CHECK_OK(sb_dropout_forward(c->t[0], c->p, c->training, 11, 3, 100, y2, mask));
        CHECK_OK(sb_dropout_backward(dy, mask, c->p, c->training, d[0]));
        sb_tensor_free(y2); sb_tensor_free(mask);
        break;
    }
    case K_CE: CHECK_OK(sb_cross_entropy_backward(c->t[0], c->target, c->red, c->ls, -100, one, d[0])); break;
    case K_MSE: CHECK_OK(sb_mse_backward(c->t[0], c->target, c->red, one, d[0], NULL)); break;
    case K_RMS: {
        sb_tensor *y2 = tlike(y), *rrms = NULL;
        CHECK_OK(sb_tensor_new(&rrms, SB_F32, c->t[0]->ndim - c->ln_ndim, c->t[0]->shape));
        CHECK_OK(sb_rms_norm_forward(c->t[0], c->ln_ndim, c->t[1], c->eps, y2, rrms));
        CHECK(count_bit_mismatch(y2, y) == 0, "rms_norm forward differs from the graph's");
        CHECK_OK(sb_rms_norm_backward(dy, c->t[0], c->ln_ndim, c->t[1], rrms, d[0], d[1]));
        sb_tensor_free(y2); sb_tensor_free(rrms);
        break;
    }
    case K_MATMUL: CHECK_OK(sb_matmul_backward(dy, c->t[0], c->t[1], c->ta, c->tb, d[0], d[1])); break;
    case K_BINARY:
        if (c->t[1]) {
            CHECK_OK(sb_binary_backward(c->bop, dy, c->t[0], c->t[1], d[0], d[1]));
        } else { /* x op x: the second use's contribution is added to the first's */
            sb_tensor *d2 = tlike(c->t[0]);
            CHECK_OK(sb_binary_backward(c->bop, dy, c->t[0], c->t[0], d[0], d2));
            CHECK_OK(sb_add(d[0], d2, d[0]));
            sb_tensor_free(d2);
        }
        break;
    case K_RESHAPE: memcpy(d[0]->data, dy->data, (size_t)N(dy) * sizeof(float)); break;
    case K_TRANSPOSE: {
        sb_tensor *back = NULL;
        CHECK_OK(sb_tensor_transpose(&back, dy, c->d0, c->d1));
        CHECK_OK(sb_tensor_copy(d[0], back));
        sb_tensor_free(back);
        break;
    }
    case K_SOFTMAX: CHECK_OK(sb_softmax_backward(y, dy, c->d0, d[0])); break;
    case K_LOG_SOFTMAX: CHECK_OK(sb_log_softmax_backward(y, dy, c->d0, d[0])); break;
    case K_SUM: CHECK_OK(sb_sum_backward(dy, c->dims, c->ndims, c->keepdim, d[0])); break;
    case K_MEAN: CHECK_OK(sb_mean_backward(dy, c->dims, c->ndims, c->keepdim, d[0])); break;
    }
    sb_tensor_free(dy);
    sb_tensor_free(one);
}

/* Analytic gradient from the graph, bitwise check against the manual chain,
 * a determinism re-run, then central finite differences. */
static void check_case(ocase *c, const char *label) {
    sb_graph *g = NULL;
    CHECK_OK(sb_graph_new(&g));
    for (int i = 0; i < 3; i++) c->grad[i] = c->t[i] && c->param[i] ? tlike(c->t[i]) : NULL;
    sb_tensor *rm0 = c->rm ? tlike(c->rm) : NULL, *rv0 = c->rv ? tlike(c->rv) : NULL;
    if (rm0) { memcpy(rm0->data, c->rm->data, (size_t)N(rm0) * 4); memcpy(rv0->data, c->rv->data, (size_t)N(rv0) * 4); }

    sb_variable *loss = NULL, *y = NULL;
    CHECK_OK(build(c, g, &loss, &y));
    if (!loss) { CHECK(0, "%s: no loss", label); sb_graph_free(g); return; }
    CHECK_OK(sb_graph_backward(g, loss));
    float loss0 = F(loss->value)[0];

    /* bitwise: the graph adds no numerics */
    if (rm0) { /* the manual forward must see the running stats the graph saw */
        memcpy(c->rm->data, rm0->data, (size_t)N(rm0) * 4);
        memcpy(c->rv->data, rv0->data, (size_t)N(rv0) * 4);
    }
    sb_tensor *d[3];
    manual_backward(c, y ? y->value : NULL, d);
    for (int i = 0; i < 3; i++)
        if (d[i]) CHECK(count_bit_mismatch(c->grad[i], d[i]) == 0,
                        "%s: graph gradient of input %d differs from the op's own backward", label, i);

    /* determinism: reset, run again, same bits */
    sb_tensor *keep[3];
    for (int i = 0; i < 3; i++) {
        keep[i] = c->grad[i] ? tlike(c->grad[i]) : NULL;
        if (keep[i]) memcpy(keep[i]->data, c->grad[i]->data, (size_t)N(keep[i]) * 4);
    }
    sb_graph_reset(g);
    CHECK(sb_graph_num_nodes(g) == 0, "%s: reset leaves %zu nodes", label, sb_graph_num_nodes(g));
    CHECK_OK(build(c, g, &loss, NULL));
    CHECK_OK(sb_graph_backward(g, loss));
    CHECK_BITS(F(loss->value)[0], loss0, "%s: loss differs on a second step", label);
    for (int i = 0; i < 3; i++)
        if (keep[i]) CHECK(count_bit_mismatch(c->grad[i], keep[i]) == 0, "%s: gradient %d differs on a second step",
                           label, i);

    /* finite differences on up to 24 elements of each differentiated input */
    int budget = sb_test_quick() ? 8 : 24;
    for (int i = 0; i < 3; i++) {
        if (!keep[i]) continue;
        double scale = 0;
        for (int64_t j = 0; j < N(keep[i]); j++) scale = fmax(scale, fabs(F(keep[i])[j]));
        int64_t n = N(keep[i]), stride = n > budget ? n / budget : 1;
        for (int64_t j = 0; j < n; j += stride) {
            float x0 = F(c->t[i])[j];
            float h = 1e-2f * fmaxf(1.0f, fabsf(x0));
            float xp = x0 + h, xm = x0 - h;
            F(c->t[i])[j] = xp;
            float lp = eval_loss(c, g);
            F(c->t[i])[j] = xm;
            float lm = eval_loss(c, g);
            F(c->t[i])[j] = x0;
            double fd = ((double)lp - (double)lm) / ((double)xp - (double)xm);
            double an = F(keep[i])[j];
            double tol = 2e-3 * scale + 1e-2 * fabs(an) + 1e-3;
            CHECK(fabs(fd - an) <= tol, "%s: input %d element %lld: graph %.7g vs finite difference %.7g", label,
                  i, (long long)j, an, fd);
        }
    }
    for (int i = 0; i < 3; i++) {
        sb_tensor_free(keep[i]); sb_tensor_free(d[i]); sb_tensor_free(c->grad[i]);
        c->grad[i] = NULL;
    }
    sb_tensor_free(rm0); sb_tensor_free(rv0);
    sb_graph_free(g);
}

static void free_case(ocase *c) {
    for (int i = 0; i < 3; i++) sb_tensor_free(c->t[i]);
    sb_tensor_free(c->target); sb_tensor_free(c->rm); sb_tensor_free(c->rv);
    memset(c, 0, sizeof *c);
}

static sb_tensor *target_like(int ndim, const int64_t *shape) {
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, SB_F32, ndim, shape) != SB_OK) exit(2);
    fill_rand(t, 1.0);
    return t;
}

/* ---- per-op cases ---- */
static void test_linear(void) {
    for (int withb = 0; withb < 2; withb++) {
        ocase c = {.k = K_LINEAR};
        c.t[0] = tnew(3, 2, 3, 5, 0); fill_rand(c.t[0], 1.0); /* x (2,3,5): rank 3 rows */
        c.t[1] = tnew(2, 4, 5, 0, 0); fill_rand(c.t[1], 0.5);
        if (withb) { c.t[2] = tnew(1, 4, 0, 0, 0); fill_rand(c.t[2], 0.5); }
        c.param[0] = c.param[1] = c.param[2] = true;
        int64_t ys[3] = {2, 3, 4};
        c.target = target_like(3, ys);
        check_case(&c, withb ? "linear+bias" : "linear");

        /* float64 analytic gradient of sum((x w^T + b - t)^2) */
        sb_graph *g = NULL;
        CHECK_OK(sb_graph_new(&g));
        for (int i = 0; i < 3; i++) c.grad[i] = c.t[i] ? tlike(c.t[i]) : NULL;
        sb_variable *loss;
        CHECK_OK(build(&c, g, &loss, NULL));
        CHECK_OK(sb_graph_backward(g, loss));
        const float *x = F(c.t[0]), *w = F(c.t[1]), *t = F(c.target);
        double dyd[6][4], dx[6][5] = {{0}}, dw[4][5] = {{0}}, db[4] = {0}, adx[6][5] = {{0}}, adw[4][5] = {{0}};
        for (int r = 0; r < 6; r++)
            for (int o = 0; o < 4; o++) {
                double acc = withb ? F(c.t[2])[o] : 0;
                for (int i = 0; i < 5; i++) acc += (double)x[r * 5 + i] * w[o * 5 + i];
                dyd[r][o] = 2 * (acc - t[r * 4 + o]);
            }
        for (int r = 0; r < 6; r++)
            for (int o = 0; o < 4; o++) {
                db[o] += dyd[r][o];
                for (int i = 0; i < 5; i++) {
                    dx[r][i] += dyd[r][o] * w[o * 5 + i]; adx[r][i] += fabs(dyd[r][o] * w[o * 5 + i]);
                    dw[o][i] += dyd[r][o] * x[r * 5 + i]; adw[o][i] += fabs(dyd[r][o] * x[r * 5 + i]);
                }
            }
        /* relative to the sum of |terms|: float y rounding and fma chains give ~1e-6 */
        for (int r = 0; r < 6; r++)
            for (int i = 0; i < 5; i++)
                CHECK(fabs(F(c.grad[0])[r * 5 + i] - dx[r][i]) <= 1e-5 * (adx[r][i] + 1),
                      "linear dx[%d][%d] %.9g vs f64 %.9g", r, i, F(c.grad[0])[r * 5 + i], dx[r][i]);
        for (int o = 0; o < 4; o++) {
            for (int i = 0; i < 5; i++)
                CHECK(fabs(F(c.grad[1])[o * 5 + i] - dw[o][i]) <= 1e-5 * (adw[o][i] + 1),
                      "linear dw[%d][%d] %.9g vs f64 %.9g", o, i, F(c.grad[1])[o * 5 + i], dw[o][i]);
            if (withb) CHECK(fabs(F(c.grad[2])[o] - db[o]) <= 1e-5 * 50, "linear db[%d]", o);
        }
        for (int i = 0; i < 3; i++) { sb_tensor_free(c.grad[i]); c.grad[i] = NULL; }
        sb_graph_free(g);

        /* x as a constant input: no gradient for it, the others unchanged */
        c.param[0] = false;
        check_case(&c, "linear, x constant");
        free_case(&c);
    }
}

/* float64 conv2d: y = conv(x, w) + b, and its gradients for dy. */
static void conv_f64(const sb_tensor *xt, const sb_tensor *wt, const sb_tensor *bt, const sb_conv2d_params *p,
                     const sb_tensor *target, const sb_tensor *gx, const sb_tensor *gw, const sb_tensor *gb,
                     const char *label) {
    int64_t Nn = xt->shape[0], C = xt->shape[1], H = xt->shape[2], W = xt->shape[3];
    int64_t O = wt->shape[0], Cg = wt->shape[1], KH = wt->shape[2], KW = wt->shape[3];
    int64_t OH, OW;
    CHECK_OK(sb_conv2d_output_size(H, W, KH, KW, p, &OH, &OW));
    int64_t Og = O / p->groups;
    double *dy = calloc((size_t)(Nn * O * OH * OW), sizeof *dy);
    double *dx = calloc((size_t)N(xt), sizeof *dx), *adx = calloc((size_t)N(xt), sizeof *dx);
    double *dw = calloc((size_t)N(wt), sizeof *dw), *adw = calloc((size_t)N(wt), sizeof *dw);
    double db[16] = {0};
    const float *x = F(xt), *w = F(wt);
#define XI(n, c, h, ww) ((((n) * C + (c)) * H + (h)) * W + (ww))
#define WI(o, c, i, j) ((((o) * Cg + (c)) * KH + (i)) * KW + (j))
    for (int pass = 0; pass < 2; pass++)
        for (int64_t n = 0; n < Nn; n++)
            for (int64_t o = 0; o < O; o++)
                for (int64_t r = 0; r < OH; r++)
                    for (int64_t s = 0; s < OW; s++) {
                        int64_t yi = ((n * O + o) * OH + r) * OW + s, gI = o / Og;
                        double acc = bt ? F(bt)[o] : 0;
                        for (int64_t c = 0; c < Cg; c++)
                            for (int64_t i = 0; i < KH; i++)
                                for (int64_t j = 0; j < KW; j++) {
                                    int64_t h = r * p->stride_h - p->pad_h + i * p->dilation_h;
                                    int64_t ww = s * p->stride_w - p->pad_w + j * p->dilation_w;
                                    if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                                    int64_t xi = XI(n, gI * Cg + c, h, ww), wi = WI(o, c, i, j);
                                    if (pass == 0) acc += (double)x[xi] * w[wi];
                                    else {
                                        dx[xi] += dy[yi] * w[wi]; adx[xi] += fabs(dy[yi] * w[wi]);
                                        dw[wi] += dy[yi] * x[xi]; adw[wi] += fabs(dy[yi] * x[xi]);
                                    }
                                }
                        if (pass == 0) dy[yi] = 2 * (acc - F(target)[yi]);
                        else db[o] += dy[yi];
                    }
#undef XI
#undef WI
    int bad = 0;
    for (int64_t i = 0; i < N(xt); i++) bad += fabs(F(gx)[i] - dx[i]) > 1e-5 * (adx[i] + 1);
    for (int64_t i = 0; i < N(wt); i++) bad += fabs(F(gw)[i] - dw[i]) > 1e-5 * (adw[i] + 1);
    if (gb) for (int64_t o = 0; o < O; o++) bad += fabs(F(gb)[o] - db[o]) > 1e-4 * 10;
    CHECK(bad == 0, "%s: %d gradient elements differ from the float64 analytic gradient", label, bad);
    free(dy); free(dx); free(adx); free(dw); free(adw);
}

static void test_conv(void) {
    struct { int64_t n, c, h, w, o, kh, kw; sb_conv2d_params p; bool bias; } cfgs[] = {
        {2, 3, 5, 6, 4, 3, 3, {1, 1, 0, 0, 1, 1, 1}, true},
        {1, 4, 7, 5, 6, 3, 2, {2, 1, 1, 2, 1, 1, 2}, true},  /* stride, padding, groups 2 */
        {2, 4, 6, 6, 4, 2, 3, {1, 2, 1, 0, 2, 1, 4}, false}, /* depthwise, dilation */
    };
    for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++) {
        ocase c = {.k = K_CONV, .conv = cfgs[k].p};
        c.t[0] = tnew(4, cfgs[k].n, cfgs[k].c, cfgs[k].h, cfgs[k].w); fill_rand(c.t[0], 1.0);
        c.t[1] = tnew(4, cfgs[k].o, cfgs[k].c / cfgs[k].p.groups, cfgs[k].kh, cfgs[k].kw); fill_rand(c.t[1], 0.5);
        if (cfgs[k].bias) { c.t[2] = tnew(1, cfgs[k].o, 0, 0, 0); fill_rand(c.t[2], 0.5); }
        c.param[0] = c.param[1] = c.param[2] = true;
        int64_t ys[4] = {cfgs[k].n, cfgs[k].o, 0, 0};
        CHECK_OK(sb_conv2d_output_size(cfgs[k].h, cfgs[k].w, cfgs[k].kh, cfgs[k].kw, &c.conv, &ys[2], &ys[3]));
        c.target = target_like(4, ys);
        char label[64];
        snprintf(label, sizeof label, "conv2d case %zu", k);
        check_case(&c, label);

        sb_graph *g = NULL;
        CHECK_OK(sb_graph_new(&g));
        for (int i = 0; i < 3; i++) c.grad[i] = c.t[i] ? tlike(c.t[i]) : NULL;
        sb_variable *loss;
        CHECK_OK(build(&c, g, &loss, NULL));
        CHECK_OK(sb_graph_backward(g, loss));
        conv_f64(c.t[0], c.t[1], c.t[2], &c.conv, c.target, c.grad[0], c.grad[1], c.grad[2], label);
        for (int i = 0; i < 3; i++) { sb_tensor_free(c.grad[i]); c.grad[i] = NULL; }
        sb_graph_free(g);
        free_case(&c);
    }
}

static void test_pool(void) {
    sb_pool2d_params ps[] = {SB_POOL2D_PARAMS(2, 2), {3, 2, 2, 1, 1, 0, false, true, 0, 0, 0},
                             {3, 3, 2, 2, 1, 1, true, false, 0, 0, 0}};
    for (int avg = 0; avg < 2; avg++)
        for (size_t k = 0; k < 3; k++) {
            ocase c = {.k = avg ? K_AVGPOOL : K_MAXPOOL, .pool = ps[k]};
            c.t[0] = tnew(4, 2, 2, 5, 6);
            fill_distinct(c.t[0]);
            c.param[0] = true;
            int64_t ys[4] = {2, 2, 0, 0};
            CHECK_OK(sb_pool2d_output_size(5, 6, &c.pool, &ys[2], &ys[3]));
            c.target = target_like(4, ys);
            char label[64];
            snprintf(label, sizeof label, "%s case %zu", kind_name[c.k], k);
            check_case(&c, label);
            free_case(&c);
        }
}

static void test_activations(void) {
    kind ks[] = {K_RELU, K_TANH, K_SIGMOID, K_GELU, K_GELU_TANH};
    for (size_t k = 0; k < 5; k++) {
        ocase c = {.k = ks[k]};
        c.t[0] = tnew(2, 3, 7, 0, 0);
        if (ks[k] == K_RELU) fill_away_from_zero(c.t[0]);
        else fill_rand(c.t[0], 2.5);
        c.param[0] = true;
        c.target = target_like(2, c.t[0]->shape);
        check_case(&c, kind_name[ks[k]]);
        free_case(&c);
    }
}

static void test_flatten(void) {
    int se[][2] = {{1, -1}, {0, 1}, {1, 2}, {-2, -1}};
    for (size_t k = 0; k < 4; k++) {
        ocase c = {.k = K_FLATTEN, .fs = se[k][0], .fe = se[k][1]};
        c.t[0] = tnew(4, 2, 3, 2, 2); fill_rand(c.t[0], 1.0);
        c.param[0] = true;
        sb_tensor *view = NULL;
        CHECK_OK(sb_tensor_flatten(&view, c.t[0], c.fs, c.fe));
        c.target = target_like(view->ndim, view->shape);
        sb_tensor_free(view);
        check_case(&c, "flatten");
        free_case(&c);
    }
}

static void test_add(void) {
    int64_t shapes[][2][4] = {
        {{3, 4, 0, 0}, {3, 4, 0, 0}}, /* same shape (stored as ndim 2) */
        {{3, 4, 0, 0}, {4, 0, 0, 0}}, /* row broadcast */
        {{3, 1, 0, 0}, {1, 5, 0, 0}}, /* both stretch */
    };
    int nds[][2] = {{2, 2}, {2, 1}, {2, 2}};
    for (size_t k = 0; k < 3; k++) {
        ocase c = {.k = K_ADD};
        c.t[0] = tnew(nds[k][0], shapes[k][0][0], shapes[k][0][1], 0, 0); fill_rand(c.t[0], 1.0);
        c.t[1] = tnew(nds[k][1], shapes[k][1][0], shapes[k][1][1], 0, 0); fill_rand(c.t[1], 1.0);
        c.param[0] = c.param[1] = true;
        int64_t ys[2] = {shapes[k][0][0] == 1 ? shapes[k][1][0] : shapes[k][0][0], 0};
        if (nds[k][1] == 1) ys[1] = shapes[k][1][0];
        else ys[1] = shapes[k][0][1] == 1 ? shapes[k][1][1] : shapes[k][0][1];
        c.target = target_like(2, ys);
        check_case(&c, "add");
        free_case(&c);
    }
}

/* ---- the building blocks of a transformer ---- */

static void run_new(ocase *c, const char *label) {
    /* the op's output shape, from a throwaway forward */
    sb_graph *g = NULL;
    CHECK_OK(sb_graph_new(&g));
    sb_variable *y = NULL;
    sb_tensor *dummy = NULL;
    CHECK_OK(sb_tensor_new(&dummy, SB_F32, 0, NULL));
    ocase probe = *c;
    probe.target = dummy; /* build() needs one */
    for (int i = 0; i < 3; i++) probe.param[i] = false;
    sb_variable *loss = NULL;
    /* build's trailing mse fails on the shape: only y matters here */
    (void)build(&probe, g, &loss, &y);
    CHECK(y != NULL, "%s: the forward failed: %s", label, sb_last_error());
    if (!y) { sb_graph_free(g); return; }
    c->target = target_like(y->value->ndim, y->value->shape);
    sb_tensor_free(dummy);
    sb_graph_free(g);
    check_case(c, label);
}

static void test_transformer_blocks(void) {
    struct { int nda; int64_t a[3]; int ndb; int64_t b[3]; bool ta, tb; } mm[] = {
        {2, {3, 4}, 2, {4, 5}, false, false},
        {2, {4, 3}, 2, {5, 4}, true, true},
        {3, {2, 3, 4}, 3, {2, 4, 5}, false, false},
        {3, {2, 3, 4}, 3, {2, 5, 4}, false, true},  /* q k^T */
        {3, {2, 3, 4}, 2, {4, 5}, false, false},    /* a shared 2-D operand */
        {2, {3, 4}, 3, {2, 5, 4}, false, true},
    };
    for (size_t k = 0; k < sizeof mm / sizeof *mm; k++) {
        ocase c = {.k = K_MATMUL, .ta = mm[k].ta, .tb = mm[k].tb};
        c.t[0] = tnew(mm[k].nda, mm[k].a[0], mm[k].a[1], mm[k].a[2], 0); fill_rand(c.t[0], 1.0);
        c.t[1] = tnew(mm[k].ndb, mm[k].b[0], mm[k].b[1], mm[k].b[2], 0); fill_rand(c.t[1], 1.0);
        c.param[0] = c.param[1] = true;
        char label[64];
        snprintf(label, sizeof label, "matmul case %zu", k);
        run_new(&c, label);
        free_case(&c);
    }
    const sb_binary_op ops[] = {SB_BINARY_ADD, SB_BINARY_SUB, SB_BINARY_MUL, SB_BINARY_DIV};
    for (size_t o = 0; o < 4; o++)
        for (int shape = 0; shape < 3; shape++) {
            /* 0: same shape, 1: (2,3,4) op (4): a broadcast row, 2: x op x */
            ocase c = {.k = K_BINARY, .bop = ops[o]};
            c.t[0] = tnew(3, 2, 3, 4, 0); fill_away_from_zero(c.t[0]);
            if (shape == 0) { c.t[1] = tnew(3, 2, 3, 4, 0); fill_away_from_zero(c.t[1]); }
            if (shape == 1) { c.t[1] = tnew(1, 4, 0, 0, 0); fill_away_from_zero(c.t[1]); }
            /* a divisor of magnitude >= 1 keeps the FD step's truncation small */
            for (int i = 0; ops[o] == SB_BINARY_DIV && i < 2; i++)
                for (int64_t j = 0; c.t[i] && (i == 1 || shape == 2) && j < N(c.t[i]); j++)
                    F(c.t[i])[j] += copysignf(1.0f, F(c.t[i])[j]);
            c.param[0] = true;
            c.param[1] = shape != 2;
            char label[64];
            snprintf(label, sizeof label, "binary op %d shape case %d", (int)ops[o], shape);
            run_new(&c, label);
            free_case(&c);
        }
    {
        ocase c = {.k = K_RESHAPE, .rnd = 3, .rshape = {3, -1, 2}};
        c.t[0] = tnew(2, 4, 6, 0, 0); fill_rand(c.t[0], 1.0);
        c.param[0] = true;
        run_new(&c, "reshape");
        free_case(&c);
    }
    int tr[][2] = {{0, 1}, {1, 2}, {-1, -2}, {0, 2}};
    for (size_t k = 0; k < 4; k++) {
        ocase c = {.k = K_TRANSPOSE, .d0 = tr[k][0], .d1 = tr[k][1]};
        c.t[0] = tnew(3, 2, 3, 4, 0); fill_rand(c.t[0], 1.0);
        c.param[0] = true;
        run_new(&c, "transpose");
        free_case(&c);
    }
    for (int lg = 0; lg < 2; lg++)
        for (int dim = -1; dim <= 1; dim++) {
            ocase c = {.k = lg ? K_LOG_SOFTMAX : K_SOFTMAX, .d0 = dim};
            c.t[0] = tnew(3, 2, 3, 5, 0); fill_rand(c.t[0], 2.0);
            c.param[0] = true;
            run_new(&c, lg ? "log_softmax" : "softmax");
            free_case(&c);
        }
    struct { int nd; int dims[2]; bool keep; } rd[] = {
        {0, {0, 0}, false}, {1, {-1, 0}, true}, {2, {0, 2}, false}, {1, {1, 0}, false}};
    for (int mean = 0; mean < 2; mean++)
        for (size_t k = 0; k < 4; k++) {
            ocase c = {.k = mean ? K_MEAN : K_SUM, .ndims = rd[k].nd, .keepdim = rd[k].keep};
            memcpy(c.dims, rd[k].dims, sizeof rd[k].dims);
            c.t[0] = tnew(3, 2, 3, 4, 0); fill_rand(c.t[0], 1.0);
            c.param[0] = true;
            run_new(&c, mean ? "mean" : "sum");
            free_case(&c);
        }
    for (int weighted = 0; weighted < 2; weighted++) {
        ocase c = {.k = K_RMS, .ln_ndim = 1, .eps = 1e-5f};
        c.t[0] = tnew(3, 2, 3, 6, 0); fill_rand(c.t[0], 1.0);
        if (weighted) { c.t[1] = tnew(1, 6, 0, 0, 0); fill_rand(c.t[1], 1.0); }
        c.param[0] = c.param[1] = true;
        run_new(&c, "rms_norm");
        free_case(&c);
    }
}

static void test_batch_norm(void) {
    for (int mode = 0; mode < 4; mode++) {
        /* 0: train (N,C), 1: train (N,C,H,W), 2: eval (N,C,H,W), 3: train, no affine, no running stats */
        ocase c = {.k = K_BN, .eps = 1e-5f, .momentum = 0.1f, .training = mode != 2};
        int64_t C = 3;
        if (mode == 0) c.t[0] = tnew(2, 6, C, 0, 0);
        else c.t[0] = tnew(4, 2, C, 3, 2);
        fill_rand(c.t[0], 2.0);
        if (mode != 3) {
            c.t[1] = tnew(1, C, 0, 0, 0); fill_rand(c.t[1], 1.0);
            c.t[2] = tnew(1, C, 0, 0, 0); fill_rand(c.t[2], 1.0);
            c.rm = tnew(1, C, 0, 0, 0); fill_rand(c.rm, 0.3);
            c.rv = tnew(1, C, 0, 0, 0);
            for (int64_t i = 0; i < C; i++) F(c.rv)[i] = 0.5f + 0.25f * (float)i;
        }
        c.param[0] = c.param[1] = c.param[2] = true;
        c.target = target_like(c.t[0]->ndim, c.t[0]->shape);
        const char *labels[] = {"batch_norm train 2-D", "batch_norm train 4-D", "batch_norm eval 4-D",
                                "batch_norm train, no affine"};
        check_case(&c, labels[mode]);
        free_case(&c);
    }
}

static void test_group_norm(void) {
    for (int64_t groups = 1; groups <= 4; groups *= 2) {
        ocase c = {.k = K_GN, .eps = 1e-5f, .groups = groups};
        c.t[0] = tnew(4, 2, 4, 3, 5); fill_rand(c.t[0], 2.0);
        c.t[1] = tnew(1, 4, 0, 0, 0); fill_rand(c.t[1], 1.0);
        c.t[2] = tnew(1, 4, 0, 0, 0); fill_rand(c.t[2], 1.0);
        c.param[0] = c.param[1] = c.param[2] = true;
        c.target = target_like(4, c.t[0]->shape);
        check_case(&c, groups == 4 ? "group_norm (instance norm)" : "group_norm");
        free_case(&c);
    }
}

static void test_layer_norm(void) {
    for (int nd = 1; nd <= 3; nd++) {
        ocase c = {.k = K_LN, .eps = 1e-5f, .ln_ndim = nd};
        c.t[0] = tnew(3, 2, 3, 5, 0); fill_rand(c.t[0], 2.0);
        int64_t *tr = &c.t[0]->shape[3 - nd];
        sb_tensor *w = NULL, *b = NULL;
        CHECK_OK(sb_tensor_new(&w, SB_F32, nd, tr)); fill_rand(w, 1.0);
        CHECK_OK(sb_tensor_new(&b, SB_F32, nd, tr)); fill_rand(b, 1.0);
        c.t[1] = w; c.t[2] = b;
        c.param[0] = c.param[1] = c.param[2] = true;
        c.target = target_like(3, c.t[0]->shape);
        check_case(&c, "layer_norm");
        free_case(&c);
    }
}

static void test_dropout(void) {
    float ps[] = {0.0f, 0.3f, 0.5f, 1.0f};
    for (int tr = 0; tr < 2; tr++)
        for (size_t k = 0; k < 4; k++) {
            ocase c = {.k = K_DROPOUT, .p = ps[k], .training = tr};
            c.t[0] = tnew(2, 4, 9, 0, 0); fill_rand(c.t[0], 1.0);
            c.param[0] = true;
            c.target = target_like(2, c.t[0]->shape);
            check_case(&c, tr ? "dropout train" : "dropout eval");
            free_case(&c);
        }
}

static void test_losses(void) {
    struct { sb_loss_reduction r; float ls; } ce[] = {{SB_LOSS_MEAN, 0}, {SB_LOSS_SUM, 0}, {SB_LOSS_MEAN, 0.1f},
                                                      {SB_LOSS_SUM, 0.25f}};
    for (size_t k = 0; k < 4; k++) {
        ocase c = {.k = K_CE, .red = ce[k].r, .ls = ce[k].ls};
        c.t[0] = tnew(2, 5, 4, 0, 0); fill_rand(c.t[0], 2.0);
        c.param[0] = true;
        int64_t n = 5;
        CHECK_OK(sb_tensor_new(&c.target, SB_I64, 1, &n));
        int64_t lab[5] = {0, 3, 1, -100, 3}; /* one ignored row */
        memcpy(c.target->data, lab, sizeof lab);
        check_case(&c, "cross_entropy");
        free_case(&c);
    }
    for (int r = 1; r <= 2; r++) {
        ocase c = {.k = K_MSE, .red = (sb_loss_reduction)r};
        c.t[0] = tnew(3, 2, 3, 4, 0); fill_rand(c.t[0], 1.0);
        c.param[0] = true;
        c.target = target_like(3, c.t[0]->shape);
        check_case(&c, r == 1 ? "mse mean" : "mse sum");
        /* float64: d/dx of mean/sum of (x - t)^2 = norm * (x - t) */
        sb_graph *g = NULL;
        CHECK_OK(sb_graph_new(&g));
        c.grad[0] = tlike(c.t[0]);
        sb_variable *loss;
        CHECK_OK(build(&c, g, &loss, NULL));
        CHECK_OK(sb_graph_backward(g, loss));
        int bad = 0;
        for (int64_t i = 0; i < N(c.t[0]); i++) {
            double want = (r == 1 ? 2.0 / 24 : 2.0) * ((double)F(c.t[0])[i] - F(c.target)[i]);
            bad += fabs(F(c.grad[0])[i] - want) > 4e-7 * fabs(want) + 1e-30;
        }
        CHECK(bad == 0, "mse: %d elements differ from the float64 gradient beyond 3 roundings", bad);
        sb_tensor_free(c.grad[0]); c.grad[0] = NULL;
        sb_graph_free(g);
        free_case(&c);
    }
}

/* ---- the accumulation rule ---- */
static void test_accumulation(void) {
    sb_graph *g = NULL;
    CHECK_OK(sb_graph_new(&g));
    /* w used by three linears: y = (L1 + L2) + L3. Tape L1 L2 A1 L3 A2 mse;
     * reverse order reaches L3, L2, L1, so dw = (c3 + c2) + c1. */
    sb_tensor *x[3], *w = tnew(2, 4, 6, 0, 0), *gw = tnew(2, 4, 6, 0, 0), *t = tnew(2, 5, 4, 0, 0);
    fill_rand(w, 1.0); fill_rand(t, 1.0);
    for (int i = 0; i < 3; i++) { x[i] = tnew(2, 5, 6, 0, 0); fill_rand(x[i], (double)(1 << (4 * i))); }
    sb_variable *vw, *vx[3], *l[3], *a1, *a2, *loss;
    CHECK_OK(sb_graph_param(g, w, gw, &vw));
    for (int i = 0; i < 3; i++) CHECK_OK(sb_graph_input(g, x[i], &vx[i]));
    CHECK_OK(sb_ag_linear(g, vx[0], vw, NULL, &l[0]));
    CHECK_OK(sb_ag_linear(g, vx[1], vw, NULL, &l[1]));
    CHECK_OK(sb_ag_add(g, l[0], l[1], &a1));
    CHECK_OK(sb_ag_linear(g, vx[2], vw, NULL, &l[2]));
    CHECK_OK(sb_ag_add(g, a1, l[2], &a2));
    CHECK_OK(sb_ag_mse(g, a2, t, SB_LOSS_SUM, &loss));
    CHECK(sb_graph_num_nodes(g) == 6, "tape has %zu nodes, want 6", sb_graph_num_nodes(g));
    CHECK_OK(sb_graph_backward(g, loss));

    sb_tensor *one = scalar_one(), *dy = tnew(2, 5, 4, 0, 0), *c[3];
    CHECK_OK(sb_mse_backward(a2->value, t, SB_LOSS_SUM, one, dy, NULL));
    for (int i = 0; i < 3; i++) {
        c[i] = tnew(2, 4, 6, 0, 0);
        CHECK_OK(sb_linear_backward(dy, x[i], w, NULL, c[i], NULL)); /* add passes dy through */
    }
    int order_matters = 0;
    for (int64_t j = 0; j < N(w); j++) {
        float want = (F(c[2])[j] + F(c[1])[j]) + F(c[0])[j];
        float fwd = (F(c[0])[j] + F(c[1])[j]) + F(c[2])[j];
        order_matters += sb_test_bits(want) != sb_test_bits(fwd);
        CHECK_BITS(F(gw)[j], want, "dw[%lld] = (c3 + c2) + c1", (long long)j);
    }
    CHECK(order_matters > 0, "inputs do not tell the accumulation order apart");

    /* x feeding three branches: tape T S A1 G A2 mse -> dx = (cg + cs) + ct */
    sb_graph_reset(g);
    sb_tensor *xp = tnew(2, 3, 5, 0, 0), *gx = tnew(2, 3, 5, 0, 0), *t2 = tnew(2, 3, 5, 0, 0);
    fill_rand(xp, 2.0); fill_rand(t2, 3.0);
    sb_variable *vx2, *yt, *ys, *yg, *b1, *b2;
    CHECK_OK(sb_graph_param(g, xp, gx, &vx2));
    CHECK_OK(sb_ag_tanh(g, vx2, &yt));
    CHECK_OK(sb_ag_sigmoid(g, vx2, &ys));
    CHECK_OK(sb_ag_add(g, yt, ys, &b1));
    CHECK_OK(sb_ag_gelu(g, vx2, false, &yg));
    CHECK_OK(sb_ag_add(g, b1, yg, &b2));
    CHECK_OK(sb_ag_mse(g, b2, t2, SB_LOSS_SUM, &loss));
    CHECK_OK(sb_graph_backward(g, loss));
    sb_tensor *dy2 = tnew(2, 3, 5, 0, 0), *ct = tnew(2, 3, 5, 0, 0), *cs = tnew(2, 3, 5, 0, 0), *cg = tnew(2, 3, 5, 0, 0);
    CHECK_OK(sb_mse_backward(b2->value, t2, SB_LOSS_SUM, one, dy2, NULL));
    CHECK_OK(sb_tanh_backward(yt->value, dy2, ct));
    CHECK_OK(sb_sigmoid_backward(ys->value, dy2, cs));
    CHECK_OK(sb_gelu_backward(xp, dy2, false, cg));
    for (int64_t j = 0; j < N(xp); j++)
        CHECK_BITS(F(gx)[j], (F(cg)[j] + F(cs)[j]) + F(ct)[j], "dx[%lld] = (gelu + sigmoid) + tanh", (long long)j);

    /* one variable twice in one node: add(x, x) gives dy + dy */
    sb_graph_reset(g);
    sb_variable *vx3, *y3;
    CHECK_OK(sb_graph_param(g, xp, gx, &vx3));
    CHECK_OK(sb_ag_add(g, vx3, vx3, &y3));
    CHECK_OK(sb_ag_mse(g, y3, t2, SB_LOSS_SUM, &loss));
    CHECK_OK(sb_graph_backward(g, loss));
    CHECK_OK(sb_mse_backward(y3->value, t2, SB_LOSS_SUM, one, dy2, NULL));
    for (int64_t j = 0; j < N(xp); j++)
        CHECK_BITS(F(gx)[j], F(dy2)[j] + F(dy2)[j], "add(x, x): dx[%lld] = dy + dy", (long long)j);

    /* an intermediate used twice: h = tanh(x); y = add(h, relu(h)) */
    sb_graph_reset(g);
    sb_variable *vx4, *h, *r, *y4;
    CHECK_OK(sb_graph_param(g, xp, gx, &vx4));
    CHECK_OK(sb_ag_tanh(g, vx4, &h));
    CHECK_OK(sb_ag_relu(g, h, &r));
    CHECK_OK(sb_ag_add(g, h, r, &y4));
    CHECK_OK(sb_ag_mse(g, y4, t2, SB_LOSS_SUM, &loss));
    CHECK_OK(sb_graph_backward(g, loss));
    sb_tensor *dh = tnew(2, 3, 5, 0, 0), *dr = tnew(2, 3, 5, 0, 0), *want = tnew(2, 3, 5, 0, 0);
    CHECK_OK(sb_mse_backward(y4->value, t2, SB_LOSS_SUM, one, dy2, NULL));
    CHECK_OK(sb_relu_backward(h->value, dy2, dr));
    for (int64_t j = 0; j < N(xp); j++) F(dh)[j] = F(dy2)[j] + F(dr)[j]; /* add's dy first, relu's added */
    CHECK_OK(sb_tanh_backward(h->value, dh, want));
    CHECK(count_bit_mismatch(gx, want) == 0, "intermediate used twice: accumulated gradient differs");
    CHECK(count_bit_mismatch(h->grad, dh) == 0, "h's gradient is not add's dy + relu's contribution");

    for (int i = 0; i < 3; i++) { sb_tensor_free(x[i]); sb_tensor_free(c[i]); }
    sb_tensor_free(w); sb_tensor_free(gw); sb_tensor_free(t); sb_tensor_free(one); sb_tensor_free(dy);
    sb_tensor_free(xp); sb_tensor_free(gx); sb_tensor_free(t2); sb_tensor_free(dy2);
    sb_tensor_free(ct); sb_tensor_free(cs); sb_tensor_free(cg);
    sb_tensor_free(dh); sb_tensor_free(dr); sb_tensor_free(want);
    sb_graph_free(g);
}

/* Parameters the loss does not reach get +0.0f, not their old contents. */
static void test_unreached(void) {
    sb_graph *g = NULL;
    CHECK_OK(sb_graph_new(&g));
    sb_tensor *x = tnew(2, 2, 3, 0, 0), *w = tnew(2, 4, 3, 0, 0), *gw = tnew(2, 4, 3, 0, 0);
    sb_tensor *u = tnew(1, 4, 0, 0, 0), *gu = tnew(1, 4, 0, 0, 0), *v = tnew(1, 4, 0, 0, 0), *gv = tnew(1, 4, 0, 0, 0);
    sb_tensor *t = tnew(2, 2, 4, 0, 0);
    fill_rand(x, 1); fill_rand(w, 1); fill_rand(u, 1); fill_rand(v, 1); fill_rand(t, 1);
    sb_tensor_fill(gu, 7.0f);
    sb_tensor_fill(gv, -3.0f);
    sb_variable *vx, *vw, *vu, *vv, *y, *dead, *loss;
    CHECK_OK(sb_graph_input(g, x, &vx));
    CHECK_OK(sb_graph_param(g, w, gw, &vw));
    CHECK_OK(sb_graph_param(g, u, gu, &vu)); /* never used */
    CHECK_OK(sb_graph_param(g, v, gv, &vv)); /* used in a branch that misses the loss */
    CHECK_OK(sb_ag_tanh(g, vv, &dead));
    CHECK_OK(sb_ag_linear(g, vx, vw, NULL, &y));
    CHECK_OK(sb_ag_mse(g, y, t, SB_LOSS_MEAN, &loss));
    CHECK_OK(sb_graph_backward(g, loss));
    for (int j = 0; j < 4; j++) {
        CHECK_BITS(F(gu)[j], 0.0f, "unused parameter gradient");
        CHECK_BITS(F(gv)[j], 0.0f, "unreached parameter gradient");
    }
    CHECK(vx->grad == NULL, "a constant input got a gradient");
    CHECK(dead->grad == NULL || !dead->grad_written, "a dead branch was walked");
    sb_tensor *tensors[] = {x, w, gw, u, gu, v, gv, t};
    for (size_t i = 0; i < 8; i++) sb_tensor_free(tensors[i]);
    sb_graph_free(g);
}

static void test_bad_inputs(void) {
    CHECK_ERROR(sb_graph_new(NULL), SB_ERR_NULL, "sb_graph_new");
    sb_graph *g = NULL;
    CHECK_OK(sb_graph_new(&g));
    sb_tensor *x = tnew(2, 2, 3, 0, 0), *w = tnew(2, 4, 3, 0, 0), *gw = tnew(2, 4, 3, 0, 0), *bad = tnew(2, 3, 4, 0, 0);
    sb_tensor *t = tnew(2, 2, 4, 0, 0), *wrong_w = tnew(2, 4, 5, 0, 0);
    fill_rand(x, 1); fill_rand(w, 1); fill_rand(t, 1);
    sb_variable *vx, *vw, *y = (sb_variable *)1, *loss;
    CHECK_ERROR(sb_graph_input(NULL, x, &vx), SB_ERR_NULL, "graph is NULL");
    CHECK_ERROR(sb_graph_input(g, NULL, &vx), SB_ERR_NULL, "value is NULL");
    CHECK_ERROR(sb_graph_input(g, x, NULL), SB_ERR_NULL, "out is NULL");
    CHECK_ERROR(sb_graph_param(g, w, bad, &vw), SB_ERR_SHAPE, "sb_graph_param");
    CHECK_ERROR(sb_graph_param(g, w, NULL, &vw), SB_ERR_NULL, "grad");
    CHECK_OK(sb_graph_input(g, x, &vx));
    CHECK_OK(sb_graph_param(g, w, gw, &vw));

    CHECK_ERROR(sb_ag_linear(NULL, vx, vw, NULL, &y), SB_ERR_NULL, "sb_ag_linear: graph is NULL");
    CHECK(y == NULL, "y not cleared on error");
    CHECK_ERROR(sb_ag_linear(g, NULL, vw, NULL, &y), SB_ERR_NULL, "sb_ag_linear: x is NULL");
    CHECK_ERROR(sb_ag_linear(g, vx, vw, NULL, NULL), SB_ERR_NULL, "y is NULL");
    sb_variable *vbad;
    CHECK_OK(sb_graph_input(g, wrong_w, &vbad));
    CHECK_ERROR(sb_ag_linear(g, vx, vbad, NULL, &y), SB_ERR_SHAPE, "sb_linear");
    CHECK_ERROR(sb_ag_add(g, vx, vbad, &y), SB_ERR_SHAPE, "do not broadcast");
    CHECK_ERROR(sb_ag_relu(g, NULL, &y), SB_ERR_NULL, "sb_ag_relu: x is NULL");
    CHECK_ERROR(sb_ag_tanh(NULL, vx, &y), SB_ERR_NULL, "sb_ag_tanh: graph is NULL");
    CHECK_ERROR(sb_ag_layer_norm(g, vx, 3, NULL, NULL, 1e-5f, &y), SB_ERR_ARG, "normalized_ndim");
    CHECK_ERROR(sb_ag_batch_norm(g, vw, NULL, NULL, NULL, NULL, false, 0.1f, 1e-5f, &y), SB_ERR_NULL,
                "sb_batch_norm"); /* eval needs running stats */
    sb_variable *v1;
    sb_tensor *one1 = tnew(1, 3, 0, 0, 0);
    CHECK_OK(sb_graph_input(g, one1, &v1));
    CHECK_ERROR(sb_ag_batch_norm(g, v1, NULL, NULL, NULL, NULL, true, 0.1f, 1e-5f, &y), SB_ERR_SHAPE, "2 dims");
    CHECK_ERROR(sb_ag_dropout(g, vx, 1.5f, true, 1, 2, 0, &y), SB_ERR_ARG, "sb_dropout");
    CHECK_ERROR(sb_ag_max_pool2d(g, vx, NULL, &y), SB_ERR_NULL, "params is NULL");
    sb_pool2d_params pp = SB_POOL2D_PARAMS(2, 2);
    CHECK_ERROR(sb_ag_avg_pool2d(g, vx, &pp, &y), SB_ERR_SHAPE, "(N,C,H,W)");
    sb_conv2d_params cp = SB_CONV2D_PARAMS_DEFAULT;
    CHECK_ERROR(sb_ag_conv2d(g, vx, vw, NULL, &cp, &y), SB_ERR_SHAPE, "need 4 dims");
    CHECK_ERROR(sb_ag_flatten(g, vx, 3, 5, &y), SB_ERR_ARG, "flatten");

    /* conv groups that do not divide the channels */
    sb_tensor *x4 = tnew(4, 1, 3, 4, 4), *w4 = tnew(4, 2, 1, 2, 2);
    sb_variable *vx4, *vw4;
    CHECK_OK(sb_graph_input(g, x4, &vx4));
    CHECK_OK(sb_graph_input(g, w4, &vw4));
    cp.groups = 2;
    CHECK_ERROR(sb_ag_conv2d(g, vx4, vw4, NULL, &cp, &y), SB_ERR_SHAPE, "sb_conv2d");

    /* losses */
    int64_t two = 2;
    sb_tensor *lab = NULL;
    CHECK_OK(sb_tensor_new(&lab, SB_I64, 1, &two));
    ((int64_t *)lab->data)[0] = 1; ((int64_t *)lab->data)[1] = 3; /* 3 >= C */
    CHECK_ERROR(sb_ag_cross_entropy(g, vx, lab, SB_LOSS_MEAN, 0, &loss), SB_ERR_RANGE, "sb_cross_entropy");
    CHECK_ERROR(sb_ag_cross_entropy(g, vx, NULL, SB_LOSS_MEAN, 0, &loss), SB_ERR_NULL, "sb_cross_entropy");
    CHECK_ERROR(sb_ag_mse(g, vx, t, SB_LOSS_SUM, &loss), SB_ERR_SHAPE, "sb_mse");

    /* backward */
    CHECK_OK(sb_ag_linear(g, vx, vw, NULL, &y));
    CHECK_ERROR(sb_graph_backward(NULL, y), SB_ERR_NULL, "sb_graph_backward: graph is NULL");
    CHECK_ERROR(sb_graph_backward(g, NULL), SB_ERR_NULL, "sb_graph_backward: loss is NULL");
    CHECK_ERROR(sb_graph_backward(g, y), SB_ERR_SHAPE, "exactly one element");
    CHECK_OK(sb_ag_mse(g, y, t, SB_LOSS_NONE, &loss));
    CHECK_ERROR(sb_graph_backward(g, loss), SB_ERR_SHAPE, "exactly one element");
    CHECK_OK(sb_ag_mse(g, vx, x, SB_LOSS_SUM, &loss)); /* depends on no parameter */
    CHECK(loss->requires_grad == false && sb_graph_num_nodes(g) == 2, "a constant loss was recorded");
    CHECK_ERROR(sb_graph_backward(g, loss), SB_ERR_ARG, "does not depend on any parameter");

    /* one backward per step: a second needs sb_graph_reset first */
    CHECK_OK(sb_ag_mse(g, y, t, SB_LOSS_SUM, &loss));
    CHECK_OK(sb_graph_backward(g, loss));
    float g0 = F(gw)[0];
    CHECK_ERROR(sb_graph_backward(g, loss), SB_ERR_ARG, "sb_graph_reset");
    CHECK_BITS(F(gw)[0], g0, "a refused second backward changed a gradient");

    sb_graph_reset(NULL); /* harmless */
    sb_graph_free(NULL);
    CHECK(sb_graph_num_nodes(NULL) == 0 && sb_graph_arena(NULL) == NULL, "NULL graph queries");
    sb_tensor *tensors[] = {x, w, gw, bad, t, wrong_w, one1, x4, w4, lab};
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) sb_tensor_free(tensors[i]);
    sb_graph_free(g);
}

/* A loss that is a parameter itself: its gradient is the seed 1.0f. */
static void test_seed(void) {
    sb_graph *g = NULL;
    CHECK_OK(sb_graph_new(&g));
    sb_tensor *p = NULL, *gp = NULL;
    CHECK_OK(sb_tensor_new(&p, SB_F32, 0, NULL));
    CHECK_OK(sb_tensor_new(&gp, SB_F32, 0, NULL));
    F(p)[0] = 3.0f;
    sb_variable *v;
    CHECK_OK(sb_graph_param(g, p, gp, &v));
    CHECK_OK(sb_graph_backward(g, v));
    CHECK_BITS(F(gp)[0], 1.0f, "seed d(loss) = 1.0f");
    sb_tensor_free(p); sb_tensor_free(gp);
    sb_graph_free(g);
}

/* ---- results made on memory the arena does not clear ---------------------
 * The ops whose public forward defines every output element (y = f(x):
 * binary, matmul, linear, conv2d, the activations, softmax, log-softmax,
 * the four norms, sdpa, reshape, transpose) take their output from the
 * graph's arena without a zero fill (sb_ag_result). One step through all
 * of them runs twice on one graph: the second time on arena memory filled
 * with NaN by a tensor the step before left there. An op that left an
 * element unwritten, or read its output before writing it, would give a
 * NaN or other bits the second time. */

enum { UNFILLED_OUTS = 16 };

typedef struct {
    sb_tensor *x, *img, *w, *b, *cw, *g, *q;
    float out[UNFILLED_OUTS];   /* one element of every op's result */
    uint32_t grad_bits[3];      /* and the gradients' */
    uint32_t sum_bits[UNFILLED_OUTS];
} unfilled_step;

static uint32_t bits_of(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

/* The XOR of all of t's float bits: any changed element changes it (a NaN
 * in place of a value too). */
static uint32_t xor_bits(const sb_tensor *t) {
    uint32_t h = 0;
    for (int64_t i = 0; i < N(t); i++) h ^= bits_of(F(t)[i]) * (uint32_t)(2 * i + 1);
    return h;
}

static sb_status unfilled_run(sb_graph *g, unfilled_step *u) {
    sb_variable *x, *img, *w, *b, *cw, *gam, *q, *v[UNFILLED_OUTS];
    sb_tensor *gw = tlike(u->w), *gcw = tlike(u->cw), *gg = tlike(u->g);
    TRY(sb_graph_input(g, u->x, &x));
    TRY(sb_graph_input(g, u->img, &img));
    TRY(sb_graph_input(g, u->q, &q));
    TRY(sb_graph_param(g, u->w, gw, &w));
    TRY(sb_graph_input(g, u->b, &b));
    TRY(sb_graph_param(g, u->cw, gcw, &cw));
    TRY(sb_graph_param(g, u->g, gg, &gam));
    int n = 0;
    TRY(sb_ag_linear(g, x, w, b, &v[n++]));                          /* (6, 8) */
    TRY(sb_ag_gelu(g, v[0], false, &v[n++]));
    TRY(sb_ag_tanh(g, v[1], &v[n++]));
    TRY(sb_ag_binary(g, SB_BINARY_MUL, v[2], v[0], &v[n++]));
    TRY(sb_ag_softmax(g, v[3], 1, &v[n++]));
    TRY(sb_ag_log_softmax(g, v[3], 1, &v[n++]));
    TRY(sb_ag_layer_norm(g, v[5], 1, gam, NULL, 1e-5f, &v[n++]));
    TRY(sb_ag_rms_norm(g, v[6], 1, gam, 1e-5f, &v[n++]));
    TRY(sb_ag_matmul(g, v[7], v[6], false, true, &v[n++]));            /* (6, 6) */
    TRY(sb_ag_transpose(g, v[8], 0, 1, &v[n++]));
    const int64_t shape3[3] = {2, 3, 6};
    TRY(sb_ag_reshape(g, v[9], 3, shape3, &v[n++]));                    /* (2, 3, 6) */
    TRY(sb_ag_sdpa(g, q, v[10], v[10], NULL, SB_SDPA_CAUSAL_TOP_LEFT, 0.5f, 0.0f, 0, 0, 0,
                   &v[n++]));                                           /* (2, 3, 6) */
    sb_conv2d_params cp = {1, 1, 2, 2, 2, 2, 1};                        /* padded, dilated */
    TRY(sb_ag_conv2d(g, img, cw, NULL, &cp, &v[n++]));                  /* (2, 4, 5, 5) */
    TRY(sb_ag_group_norm(g, v[12], 2, NULL, NULL, 1e-5f, &v[n++]));
    TRY(sb_ag_batch_norm(g, v[13], NULL, NULL, NULL, NULL, true, 0.1f, 1e-5f, &v[n++]));
    TRY(sb_ag_sigmoid(g, v[14], &v[n++]));
    sb_variable *s1, *s2, *s3, *loss;
    const int all3[3] = {0, 1, 2}, all4[4] = {0, 1, 2, 3};
    TRY(sb_ag_sum(g, v[11], all3, 3, false, &s1));
    TRY(sb_ag_sum(g, v[15], all4, 4, false, &s2));
    TRY(sb_ag_add(g, s1, s2, &s3));
    TRY(sb_ag_add(g, s3, s3, &loss));
    TRY(sb_graph_backward(g, loss));
    for (int i = 0; i < UNFILLED_OUTS; i++) {
        u->out[i] = F(v[i]->value)[N(v[i]->value) - 1];
        u->sum_bits[i] = xor_bits(v[i]->value);
    }
    u->grad_bits[0] = xor_bits(gw);
    u->grad_bits[1] = xor_bits(gcw);
    u->grad_bits[2] = xor_bits(gg);
    sb_tensor_free(gw);
    sb_tensor_free(gcw);
    sb_tensor_free(gg);
    return SB_OK;
}

static void test_unfilled_results(void) {
    unfilled_step a = {0}, b;
    a.x = tnew(2, 6, 5, 0, 0);
    a.w = tnew(2, 8, 5, 0, 0);
    a.b = tnew(1, 8, 0, 0, 0);
    a.g = tnew(1, 8, 0, 0, 0);
    a.q = tnew(3, 2, 3, 6, 0);
    a.img = tnew(4, 2, 3, 5, 5);
    a.cw = tnew(4, 4, 3, 3, 3);
    sb_tensor *ts[] = {a.x, a.w, a.b, a.g, a.q, a.img, a.cw};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) fill_rand(ts[i], 1.0);
    sb_graph *g;
    CHECK_OK(sb_graph_new(&g));
    CHECK_OK(unfilled_run(g, &a));
    size_t used = sb_arena_used(sb_graph_arena(g));
    sb_graph_reset(g); /* one chunk now holds a whole step */
    /* fill what the step used with NaN, and hand it back */
    int64_t poison_n = (int64_t)(used / sizeof(float));
    sb_tensor *poison;
    CHECK_OK(sb_tensor_new_in(&poison, sb_graph_arena(g), SB_F32, 1, &poison_n));
    for (int64_t i = 0; i < poison_n; i++) F(poison)[i] = NAN;
    sb_graph_reset(g);
    b = a;
    CHECK_OK(unfilled_run(g, &b));
    for (int i = 0; i < UNFILLED_OUTS; i++) {
        CHECK(!isnan(b.out[i]), "op %d's result read unwritten arena memory", i);
        CHECK(bits_of(a.out[i]) == bits_of(b.out[i]) && a.sum_bits[i] == b.sum_bits[i],
              "op %d: a step on NaN-filled arena memory changed the result", i);
    }
    for (int i = 0; i < 3; i++)
        CHECK(a.grad_bits[i] == b.grad_bits[i], "gradient %d changed on NaN-filled memory", i);
    sb_graph_free(g);
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) sb_tensor_free(ts[i]);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_linear();
    test_conv();
    test_pool();
    test_activations();
    test_flatten();
    test_add();
    test_transformer_blocks();
    test_batch_norm();
    test_layer_norm();
    test_group_norm();
    test_dropout();
    test_losses();
    test_accumulation();
    test_unreached();
    test_seed();
    test_bad_inputs();
    test_unfilled_results();
    return sb_test_finish();
}
