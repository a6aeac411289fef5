/* Tests of adaptive 2-D max and average pooling, forward and backward
 * (contract section "Adaptive pooling").
 *
 * The oracle restates the contract independently of src/ref/pool2d.c: the
 * windows come from PyTorch's rule evaluated in float64 (floor(r*H/OH),
 * ceil((r+1)*H/OH), exact for these sizes); max finds the window's first
 * NaN, else its maximum and then the first position equal to it; the
 * backward passes scatter every output's gradient into per-input lists in
 * (r, s) order and sum each list with the test-local canonical sum. Every
 * case also runs at every ISA level and thread count against the reference
 * kernels bit for bit, and against float64 sums. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "harness.h"
#include "ref/ref_linalg.h"
#include "support/fastpath.h"
#include "support/oracle.h"

static float *F(const sb_tensor *t) { return (float *)t->data; }
static int64_t *I(const sb_tensor *t) { return (int64_t *)t->data; }

typedef struct acase {
    const char *name;
    int64_t n, c, h, w, oh, ow;
} acase;

/* PyTorch's window [lo, hi) of output r along an axis, in float64. */
static void window(int64_t r, int64_t in, int64_t out, int64_t *lo, int64_t *hi) {
    *lo = (int64_t)floor((double)r * (double)in / (double)out);
    *hi = (int64_t)ceil((double)(r + 1) * (double)in / (double)out);
}

/* Growing per-input lists of terms, in arrival order. */
typedef struct lists {
    int64_t count;
    int64_t *len;
    float **item;
} lists;
static lists lists_new(int64_t count) {
    lists l = {count, calloc((size_t)count + 1, 8), calloc((size_t)count + 1, sizeof(float *))};
    return l;
}
static void lists_push(lists *l, int64_t at, float v) {
    l->item[at] = realloc(l->item[at], (size_t)(l->len[at] + 1) * 4);
    l->item[at][l->len[at]++] = v;
}
static void lists_free(lists *l) {
    for (int64_t i = 0; i < l->count; i++) free(l->item[i]);
    free(l->len);
    free(l->item);
}

/* Checks dx against the canonical sum of each list and against float64. */
static void check_lists(const char *what, const acase *k, const float *dx, lists *L) {
    long bad = 0, far = 0;
    for (int64_t i = 0; i < L->count; i++) {
        bad += !oracle_same(dx[i], oracle_canonical_sum(L->item[i], L->len[i]));
        double s64 = 0, mag = 0;
        for (int64_t j = 0; j < L->len[i]; j++) {
            s64 += L->item[i][j];
            mag += fabs(L->item[i][j]);
        }
        far += !(fabs(dx[i] - s64) <= 8 * FLT_EPSILON * mag);
    }
    CHECK(bad == 0 && far == 0, "%s %s: %ld inputs differ from the oracle, %ld far from float64",
          k->name, what, bad, far);
}

/* x values: few distinct ones (ties, +-0) or random, with a NaN and infs. */
static void fill_x(sb_tensor *x, bool ties) {
    for (int64_t i = 0; i < sb_tensor_numel(x); i++) {
        F(x)[i] = ties ? (float)((int64_t)(oracle_rand() % 5) - 2) : oracle_rand_float();
        if (ties && F(x)[i] == 0.0f && (oracle_rand() & 1)) F(x)[i] = -0.0f;
    }
}

static void check_case(const acase *k, bool ties) {
    int64_t P = k->n * k->c, H = k->h, W = k->w, OH = k->oh, OW = k->ow;
    sb_tensor *x = oracle_tensor(SB_F32, 4, k->n, k->c, H, W);
    sb_tensor *dx = oracle_tensor(SB_F32, 4, k->n, k->c, H, W);
    sb_tensor *y = oracle_tensor(SB_F32, 4, k->n, k->c, OH, OW);
    sb_tensor *dy = oracle_tensor(SB_F32, 4, k->n, k->c, OH, OW);
    sb_tensor *ix = oracle_tensor(SB_I64, 4, k->n, k->c, OH, OW);
    fill_x(x, ties);
    if (!ties && P * H * W > 3) {
        F(x)[1] = NAN;
        F(x)[2] = INFINITY;
        F(x)[P * H * W - 1] = -INFINITY;
    }
    for (int64_t i = 0; i < P * OH * OW; i++) F(dy)[i] = oracle_rand_float();

    /* ---- max forward ---- */
    CHECK_OK(sb_adaptive_max_pool2d_forward(x, y, ix));
    long bad = 0;
    for (int64_t q = 0; q < P; q++)
        for (int64_t r = 0; r < OH; r++)
            for (int64_t s = 0; s < OW; s++) {
                const float *xq = F(x) + q * H * W;
                int64_t h0, h1, w0, w1, want = -1;
                window(r, H, OH, &h0, &h1);
                window(s, W, OW, &w0, &w1);
                for (int64_t i = h0; i < h1 && want < 0; i++)
                    for (int64_t j = w0; j < w1 && want < 0; j++)
                        if (isnan(xq[i * W + j])) want = i * W + j;
                if (want < 0) {
                    float best = -INFINITY;
                    for (int64_t i = h0; i < h1; i++)
                        for (int64_t j = w0; j < w1; j++) best = fmaxf(best, xq[i * W + j]);
                    for (int64_t i = h0; i < h1 && want < 0; i++)
                        for (int64_t j = w0; j < w1 && want < 0; j++)
                            if (xq[i * W + j] == best) want = i * W + j;
                }
                int64_t o = (q * OH + r) * OW + s;
                bad += I(ix)[o] != want || sb_test_bits(F(y)[o]) != sb_test_bits(xq[want]);
            }
    CHECK(bad == 0, "%s%s max forward: %ld windows differ", k->name, ties ? " (ties)" : "", bad);

    /* ---- max backward ---- */
    sb_tensor_fill(dx, NAN);
    CHECK_OK(sb_adaptive_max_pool2d_backward(dy, ix, dx));
    lists L = lists_new(P * H * W);
    for (int64_t q = 0; q < P; q++)
        for (int64_t o = 0; o < OH * OW; o++)
            lists_push(&L, q * H * W + I(ix)[q * OH * OW + o], F(dy)[q * OH * OW + o]);
    check_lists("max backward", k, F(dx), &L);
    lists_free(&L);

    /* ---- avg forward: canonical sum / window size, one division ---- */
    sb_tensor_fill(y, NAN);
    CHECK_OK(sb_adaptive_avg_pool2d_forward(x, y));
    float *buf = malloc((size_t)(H * W + 1) * 4);
    bad = 0;
    long far = 0;
    for (int64_t q = 0; q < P; q++)
        for (int64_t r = 0; r < OH; r++)
            for (int64_t s = 0; s < OW; s++) {
                int64_t h0, h1, w0, w1, len = 0;
                window(r, H, OH, &h0, &h1);
                window(s, W, OW, &w0, &w1);
                double s64 = 0, mag = 0;
                for (int64_t i = h0; i < h1; i++)
                    for (int64_t j = w0; j < w1; j++) {
                        buf[len++] = F(x)[(q * H + i) * W + j];
                        s64 += buf[len - 1];
                        mag += fabs(buf[len - 1]);
                    }
                float got = F(y)[(q * OH + r) * OW + s];
                bad += !oracle_same(got, oracle_canonical_sum(buf, len) / (float)len);
                if (isfinite(s64)) far += !(fabs(got - s64 / len) <= 4 * FLT_EPSILON * mag / len);
            }
    free(buf);
    CHECK(bad == 0 && far == 0, "%s%s avg forward: %ld outputs differ, %ld far from float64",
          k->name, ties ? " (ties)" : "", bad, far);

    /* ---- avg backward: dy / size scattered in (r, s) order ---- */
    sb_tensor_fill(dx, NAN);
    CHECK_OK(sb_adaptive_avg_pool2d_backward(dy, dx));
    lists A = lists_new(P * H * W);
    for (int64_t q = 0; q < P; q++)
        for (int64_t r = 0; r < OH; r++)
            for (int64_t s = 0; s < OW; s++) {
                int64_t h0, h1, w0, w1;
                window(r, H, OH, &h0, &h1);
                window(s, W, OW, &w0, &w1);
                float v = F(dy)[(q * OH + r) * OW + s] / (float)((h1 - h0) * (w1 - w0));
                for (int64_t i = h0; i < h1; i++)
                    for (int64_t j = w0; j < w1; j++) lists_push(&A, (q * H + i) * W + j, v);
            }
    check_lists("avg backward", k, F(dx), &A);
    lists_free(&A);

    sb_tensor *list[] = {x, dx, y, dy, ix};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

/* The public ops at every ISA level and thread count against the reference
 * kernels run directly on the adaptive geometry. */
static void check_fast(const acase *k) {
    int64_t P = k->n * k->c, nx = P * k->h * k->w, ny = P * k->oh * k->ow;
    sb_pool2d_geom g = {.planes = P, .h = k->h, .w = k->w, .oh = k->oh, .ow = k->ow,
                        .adaptive = true};
    sb_tensor *x = oracle_tensor(SB_F32, 4, k->n, k->c, k->h, k->w);
    sb_tensor *dx = oracle_tensor(SB_F32, 4, k->n, k->c, k->h, k->w);
    sb_tensor *y = oracle_tensor(SB_F32, 4, k->n, k->c, k->oh, k->ow);
    sb_tensor *dy = oracle_tensor(SB_F32, 4, k->n, k->c, k->oh, k->ow);
    sb_tensor *ix = oracle_tensor(SB_I64, 4, k->n, k->c, k->oh, k->ow);
    for (int64_t i = 0; i < nx; i++) F(x)[i] = sb_test_adversarial(3.0f);
    for (int64_t i = 0; i < ny; i++) F(dy)[i] = sb_test_adversarial(1.0f);
    float *ry = malloc((size_t)ny * 4 + 4), *rdx = malloc((size_t)nx * 4 + 4);
    float *ray = malloc((size_t)ny * 4 + 4), *radx = malloc((size_t)nx * 4 + 4);
    int64_t *ridx = malloc((size_t)ny * 8 + 8);
    sb_ref_max_pool2d_forward(&g, F(x), ry, ridx);
    sb_ref_max_pool2d_backward(&g, F(dy), ridx, rdx);
    sb_ref_avg_pool2d_forward(&g, F(x), ray);
    sb_ref_avg_pool2d_backward(&g, F(dy), radx);
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        long bad = 0;
        sb_tensor_fill(y, 1234.5f);
        CHECK_OK(sb_adaptive_max_pool2d_forward(x, y, ix));
        for (int64_t i = 0; i < ny; i++)
            bad += I(ix)[i] != ridx[i] || sb_test_bits(F(y)[i]) != sb_test_bits(ry[i]);
        sb_tensor_fill(dx, 1234.5f);
        CHECK_OK(sb_adaptive_max_pool2d_backward(dy, ix, dx));
        for (int64_t i = 0; i < nx; i++) bad += !oracle_same(F(dx)[i], rdx[i]);
        sb_tensor_fill(y, 1234.5f);
        CHECK_OK(sb_adaptive_avg_pool2d_forward(x, y));
        for (int64_t i = 0; i < ny; i++) bad += !oracle_same(F(y)[i], ray[i]);
        sb_tensor_fill(dx, 1234.5f);
        CHECK_OK(sb_adaptive_avg_pool2d_backward(dy, dx));
        for (int64_t i = 0; i < nx; i++) bad += !oracle_same(F(dx)[i], radx[i]);
        CHECK(bad == 0, "%s [%s]: %ld elements differ from the reference", k->name,
              sb_test_config_name(c), bad);
    }
    sb_test_config_reset();
    free(ry), free(rdx), free(ray), free(radx), free(ridx);
    sb_tensor *list[] = {x, dx, y, dy, ix};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

static const acase cases[] = {
    {"7x5 -> 3x4 (uneven, overlapping)", 2, 3, 7, 5, 3, 4},
    {"10x9 -> 4x3", 2, 4, 10, 9, 4, 3},
    {"5x5 -> 7x9 (out > in)", 1, 3, 5, 5, 7, 9},
    {"8x8 -> 2x2 (divides: fixed windows)", 2, 2, 8, 8, 2, 2},
    {"8x6 -> 4x4 (one axis divides)", 1, 2, 8, 6, 4, 4},
    {"13x11 -> 5x1", 3, 2, 13, 11, 5, 1},
    {"3x3 -> 1x1 (global)", 4, 5, 3, 3, 1, 1},
    {"1x1 -> 3x2", 2, 2, 1, 1, 3, 2},
    {"2x2 -> 1x1 (resnet head)", 2, 64, 2, 2, 1, 1},
    {"29x31 -> 7x7", 2, 3, 29, 31, 7, 7},
};

static void test_empty(void) {
    /* N = 0, C = 0 and a zero-size output: nothing to compute, no error; a
     * zero-size output leaves dx +0. */
    acase empties[] = {{"N = 0", 0, 3, 5, 4, 2, 3}, {"C = 0", 2, 0, 5, 4, 2, 3},
                       {"out 0x3", 1, 2, 5, 4, 0, 3}};
    for (size_t e = 0; e < 3; e++) {
        const acase *k = &empties[e];
        sb_tensor *x = oracle_tensor(SB_F32, 4, k->n, k->c, k->h, k->w);
        sb_tensor *dx = oracle_tensor(SB_F32, 4, k->n, k->c, k->h, k->w);
        sb_tensor *y = oracle_tensor(SB_F32, 4, k->n, k->c, k->oh, k->ow);
        sb_tensor *ix = oracle_tensor(SB_I64, 4, k->n, k->c, k->oh, k->ow);
        sb_tensor_fill(dx, 5.0f);
        CHECK_OK(sb_adaptive_max_pool2d_forward(x, y, ix));
        CHECK_OK(sb_adaptive_avg_pool2d_forward(x, y));
        CHECK_OK(sb_adaptive_avg_pool2d_backward(y, dx));
        long bad = 0;
        for (int64_t i = 0; i < sb_tensor_numel(dx); i++) bad += sb_test_bits(F(dx)[i]) != 0;
        sb_tensor_fill(dx, 5.0f);
        CHECK_OK(sb_adaptive_max_pool2d_backward(y, ix, dx));
        for (int64_t i = 0; i < sb_tensor_numel(dx); i++) bad += sb_test_bits(F(dx)[i]) != 0;
        CHECK(bad == 0, "%s: %ld gradients are not +0", k->name, bad);
        sb_tensor *list[] = {x, dx, y, ix};
        for (size_t i = 0; i < 4; i++) sb_tensor_free(list[i]);
    }
}

static void test_errors(void) {
    sb_tensor *x = oracle_tensor(SB_F32, 4, 2, 3, 5, 4), *y = oracle_tensor(SB_F32, 4, 2, 3, 2, 3);
    sb_tensor *ybad = oracle_tensor(SB_F32, 4, 2, 2, 2, 3), *ix = oracle_tensor(SB_I64, 4, 2, 3, 2, 3);
    sb_tensor *x0 = oracle_tensor(SB_F32, 4, 2, 3, 0, 4), *x3 = oracle_tensor(SB_F32, 3, 3, 5, 4, 0);
    sb_tensor *ixbad = oracle_tensor(SB_I64, 4, 2, 3, 3, 3);
    fill_x(x, false);
    sb_tensor_fill(y, 7.0f);
    CHECK_ERROR(sb_adaptive_max_pool2d_forward(NULL, y, ix), SB_ERR_NULL, "x is NULL");
    CHECK_ERROR(sb_adaptive_max_pool2d_forward(x, NULL, ix), SB_ERR_NULL, "y is NULL");
    CHECK_ERROR(sb_adaptive_avg_pool2d_forward(x, ybad), SB_ERR_SHAPE,
                "y has shape [2, 2, 2, 3], expected [2, 3, 2, 3]");
    CHECK_ERROR(sb_adaptive_avg_pool2d_forward(x3, y), SB_ERR_SHAPE, "x must have 4 dimensions");
    CHECK_ERROR(sb_adaptive_avg_pool2d_forward(x0, y), SB_ERR_SHAPE, "x height is 0, must be >= 1");
    CHECK_ERROR(sb_adaptive_max_pool2d_forward(x, y, ixbad), SB_ERR_SHAPE, "indices has shape");
    CHECK_ERROR(sb_adaptive_avg_pool2d_forward(x, x), SB_ERR_ARG, "y shares memory with x");
    long bad = 0;
    for (int64_t i = 0; i < sb_tensor_numel(y); i++) bad += F(y)[i] != 7.0f;
    CHECK(bad == 0, "y written on error");
    /* An index outside its own window is refused, nothing written. Window
     * (0, 0) of 5x4 -> 2x3 covers rows 0..2 and columns 0..1. */
    CHECK_OK(sb_adaptive_max_pool2d_forward(x, y, ix));
    sb_tensor *dx = oracle_tensor(SB_F32, 4, 2, 3, 5, 4);
    sb_tensor_fill(dx, 7.0f);
    I(ix)[0] = 2 * 4 + 1; /* row 2, column 1: inside */
    CHECK_OK(sb_adaptive_max_pool2d_backward(y, ix, dx));
    sb_tensor_fill(dx, 7.0f);
    I(ix)[0] = 2 * 4 + 2; /* column 2: outside */
    CHECK_ERROR(sb_adaptive_max_pool2d_backward(y, ix, dx), SB_ERR_RANGE, "outside its window");
    I(ix)[0] = 3 * 4; /* row 3: outside */
    CHECK_ERROR(sb_adaptive_max_pool2d_backward(y, ix, dx), SB_ERR_RANGE, "outside its window");
    I(ix)[0] = -1;
    CHECK_ERROR(sb_adaptive_max_pool2d_backward(y, ix, dx), SB_ERR_RANGE, "outside its window");
    bad = 0;
    for (int64_t i = 0; i < sb_tensor_numel(dx); i++) bad += F(dx)[i] != 7.0f;
    CHECK(bad == 0, "dx written on error");
    sb_tensor *list[] = {x, y, ybad, ix, x0, x3, ixbad, dx};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

/* Autograd: x (1,1,7,5) -> adaptive (3,4) -> adaptive (1,1), the one-element
 * loss; the wrappers must give the tensor ops' bits both ways. */
static void test_autograd(void) {
    sb_tensor *x = oracle_tensor(SB_F32, 4, 1, 1, 7, 5), *gx = oracle_tensor(SB_F32, 4, 1, 1, 7, 5);
    fill_x(x, false);
    for (int is_max = 0; is_max < 2; is_max++) {
        sb_graph *g = NULL;
        CHECK_OK(sb_graph_new(&g));
        sb_variable *vx = NULL, *vy = NULL, *loss = NULL;
        CHECK_OK(sb_graph_param(g, x, gx, &vx));
        CHECK_OK(is_max ? sb_ag_adaptive_max_pool2d(g, vx, 3, 4, &vy)
                        : sb_ag_adaptive_avg_pool2d(g, vx, 3, 4, &vy));
        CHECK_OK(is_max ? sb_ag_adaptive_max_pool2d(g, vy, 1, 1, &loss)
                        : sb_ag_adaptive_avg_pool2d(g, vy, 1, 1, &loss));
        CHECK_OK(sb_graph_backward(g, loss));
        sb_tensor *y = oracle_tensor(SB_F32, 4, 1, 1, 3, 4), *dy = oracle_tensor(SB_F32, 4, 1, 1, 3, 4);
        sb_tensor *l = oracle_tensor(SB_F32, 4, 1, 1, 1, 1), *dl = oracle_tensor(SB_F32, 4, 1, 1, 1, 1);
        sb_tensor *ix = oracle_tensor(SB_I64, 4, 1, 1, 3, 4), *il = oracle_tensor(SB_I64, 4, 1, 1, 1, 1);
        sb_tensor *dx = oracle_tensor(SB_F32, 4, 1, 1, 7, 5);
        sb_tensor_fill(dl, 1.0f);
        if (is_max) {
            CHECK_OK(sb_adaptive_max_pool2d_forward(x, y, ix));
            CHECK_OK(sb_adaptive_max_pool2d_forward(y, l, il));
            CHECK_OK(sb_adaptive_max_pool2d_backward(dl, il, dy));
            CHECK_OK(sb_adaptive_max_pool2d_backward(dy, ix, dx));
        } else {
            CHECK_OK(sb_adaptive_avg_pool2d_forward(x, y));
            CHECK_OK(sb_adaptive_avg_pool2d_forward(y, l));
            CHECK_OK(sb_adaptive_avg_pool2d_backward(dl, dy));
            CHECK_OK(sb_adaptive_avg_pool2d_backward(dy, dx));
        }
        long bad = !oracle_same(F(loss->value)[0], F(l)[0]);
        for (int64_t i = 0; i < sb_tensor_numel(y); i++) bad += !oracle_same(F(vy->value)[i], F(y)[i]);
        for (int64_t i = 0; i < sb_tensor_numel(dx); i++) bad += !oracle_same(F(gx)[i], F(dx)[i]);
        CHECK(bad == 0, "autograd adaptive %s: %ld elements differ", is_max ? "max" : "avg", bad);
        CHECK_ERROR(sb_ag_adaptive_avg_pool2d(g, vx, -1, 2, &vy), SB_ERR_ARG, "must not be negative");
        sb_tensor *list[] = {y, dy, l, dl, ix, il, dx};
        for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
        sb_graph_free(g);
    }
    sb_tensor_free(x);
    sb_tensor_free(gx);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    oracle_seed(0x3c6ef372fe94f82bull);
    sb_test_seed(0x510e527fade682d1ull);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_case(&cases[i], false);
        check_case(&cases[i], true);
        check_fast(&cases[i]);
    }
    test_empty();
    test_errors();
    test_autograd();
    return sb_test_finish();
}
