/* Tests for PReLU (contract section 9, "PReLU"), forward and backward:
 * exact bits against the contract restated here (a test-local canonical sum
 * for the weight gradient, the channel of each element derived from its flat
 * index), at every ISA level and thread count; shared and per-channel
 * weights, ranks 1 to 4, NaN/inf/-0, sizes where the channel sum spans
 * several 8192-element blocks (another order gives other bits), in-place
 * calls, float64 finite differences for dx and dweight, and bad input with
 * nothing written. */
#include <float.h>
#include <math.h>
#include "harness.h"
#include "support/fastpath.h"

/* ---- the contract restated ---- */

/* Rule 2 of the canonical sum on x[0..n-1] (1 <= n <= 8192). */
static float lanes_sum(const float *x, int64_t n) {
    float lane[32];
    for (int j = 0; j < 32; j++) lane[j] = -0.0f;
    for (int64_t i = 0; i < n; i++) lane[i % 32] = lane[i % 32] + x[i];
    for (int s = 16; s >= 1; s /= 2)
        for (int j = 0; j < s; j++) lane[j] = lane[j] + lane[j + s];
    return lane[0];
}

/* Rules 1-3; overwrites x with the block sums. */
static float canon_sum(float *x, int64_t n) {
    if (n == 0) return 0.0f;
    while (n > 8192) {
        int64_t blocks = (n + 8191) / 8192;
        for (int64_t b = 0; b < blocks; b++) {
            int64_t len = b == blocks - 1 ? n - b * 8192 : 8192;
            x[b] = lanes_sum(x + b * 8192, len);
        }
        n = blocks;
    }
    return lanes_sum(x, n);
}

typedef struct geom {
    int nd;
    int64_t shape[4];
    int64_t nw; /* 1 or shape[1] */
} geom;

static int64_t numel(const geom *g) {
    int64_t n = 1;
    for (int d = 0; d < g->nd; d++) n *= g->shape[d];
    return n;
}

/* The weight index of flat element i: its index along dim 1 (row-major). */
static int64_t channel_of(const geom *g, int64_t i) {
    if (g->nw == 1) return 0;
    int64_t inner = 1;
    for (int d = 2; d < g->nd; d++) inner *= g->shape[d];
    return (i / inner) % g->shape[1];
}

static void want_forward(const geom *g, const float *x, const float *w, float *y) {
    for (int64_t i = 0, n = numel(g); i < n; i++) {
        float v = x[i], wc = w[channel_of(g, i)];
        y[i] = isnan(v) ? v : (v > 0.0f ? v : wc * v);
    }
}

static void want_backward(const geom *g, const float *x, const float *w, const float *dy, float *dx,
                          float *dw) {
    int64_t n = numel(g);
    float *terms = malloc((size_t)(n ? n : 1) * sizeof *terms);
    for (int64_t c = 0; c < g->nw; c++) {
        int64_t k = 0;
        for (int64_t i = 0; i < n; i++) /* row-major order over channel c's positions */
            if (channel_of(g, i) == c) terms[k++] = x[i] > 0.0f ? 0.0f : x[i] * dy[i];
        dw[c] = canon_sum(terms, k);
    }
    for (int64_t i = 0; i < n; i++) dx[i] = x[i] > 0.0f ? dy[i] : w[channel_of(g, i)] * dy[i];
    free(terms);
}

/* ---- tensors over test buffers ---- */

static sb_tensor *wrap(float *data, int nd, const int64_t *shape) {
    sb_tensor *t = NULL;
    if (sb_tensor_wrap(&t, data, SB_F32, nd, shape, NULL) != SB_OK) {
        fprintf(stderr, "%s\n", sb_last_error());
        exit(2);
    }
    return t;
}

static const geom cases[] = {
    {4, {2, 3, 4, 5}, 3}, {4, {2, 3, 4, 5}, 1}, {1, {37, 0, 0, 0}, 1}, {2, {5, 3, 0, 0}, 3},
    {2, {4, 1, 0, 0}, 1}, {3, {3, 2, 6000, 0}, 2}, {3, {1, 1, 20000, 0}, 1},
    {3, {2, 0, 3, 0}, 1}, {3, {0, 4, 3, 0}, 4},
};

/* ---- tests ---- */

static void test_bits(void) {
    sb_test_seed(0x5eed13);
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const geom *g = &cases[k];
        int64_t n = numel(g), m = n ? n : 1;
        float *x = malloc(m * 4), *dy = malloc(m * 4), *w = malloc(g->nw * 4);
        float *y = malloc(m * 4), *dx = malloc(m * 4), *dw = malloc(g->nw * 4);
        float *wy = malloc(m * 4), *wdx = malloc(m * 4), *wdw = malloc(g->nw * 4);
        for (int64_t i = 0; i < n; i++) {
            /* mostly ordinary values with a few specials (none in the large cases,
             * whose sums test the order); about half negative */
            int special = n < 12000;
            x[i] = special && i % 97 == 5 ? sb_test_adversarial(4.0f) : sb_test_unif(-4.0f, 4.0f);
            dy[i] = special && i % 89 == 3 ? sb_test_adversarial(2.0f) : sb_test_unif(-2.0f, 2.0f);
        }
        for (int64_t c = 0; c < g->nw; c++) w[c] = sb_test_unif(-1.0f, 1.0f);
        want_forward(g, x, w, wy);
        want_backward(g, x, w, dy, wdx, wdw);
        int64_t wshape[1] = {g->nw};
        sb_tensor *tx = wrap(x, g->nd, g->shape), *tw = wrap(w, 1, wshape);
        sb_tensor *ty = wrap(y, g->nd, g->shape), *tdy = wrap(dy, g->nd, g->shape);
        sb_tensor *tdx = wrap(dx, g->nd, g->shape), *tdw = wrap(dw, 1, wshape);
        for (int c = 0; c < sb_test_config_count(); c++) {
            sb_test_config_apply(c);
            memset(y, 0xa5, m * 4);
            memset(dx, 0xa5, m * 4);
            memset(dw, 0xa5, g->nw * 4);
            CHECK_OK(sb_prelu_forward(tx, tw, ty));
            CHECK_OK(sb_prelu_backward(tx, tw, tdy, tdx, tdw));
            int64_t bad_y = -1, bad_dx = -1;
            for (int64_t i = 0; i < n; i++) {
                if (bad_y < 0 && sb_test_bits(y[i]) != sb_test_bits(wy[i])) bad_y = i;
                if (bad_dx < 0 && sb_test_bits(dx[i]) != sb_test_bits(wdx[i])) bad_dx = i;
            }
            CHECK(bad_y < 0, "case %zu %s: y[%lld] = %a, want %a", k, sb_test_config_name(c),
                  (long long)bad_y, bad_y < 0 ? 0.0 : y[bad_y], bad_y < 0 ? 0.0 : wy[bad_y]);
            CHECK(bad_dx < 0, "case %zu %s: dx[%lld] differs", k, sb_test_config_name(c),
                  (long long)bad_dx);
            for (int64_t ch = 0; ch < g->nw; ch++)
                CHECK_BITS(dw[ch], wdw[ch], "case %zu %s: dweight[%lld]", k, sb_test_config_name(c),
                           (long long)ch);
        }
        sb_test_config_reset();
        /* the large cases: a plain left-to-right sum gives other bits, so the order is tested */
        if (n >= 12000) {
            double plain = 0.0f;
            float plainf = 0.0f;
            for (int64_t i = 0; i < n; i++)
                if (channel_of(g, i) == 0) plainf = plainf + (x[i] > 0.0f ? 0.0f : x[i] * dy[i]);
            plain = plainf;
            CHECK(sb_test_bits(plainf) != sb_test_bits(wdw[0]),
                  "case %zu: sequential sum %a equals the canonical one; the data tests no order",
                  k, plain);
        }
        sb_tensor_free(tx); sb_tensor_free(tw); sb_tensor_free(ty);
        sb_tensor_free(tdy); sb_tensor_free(tdx); sb_tensor_free(tdw);
        free(x); free(dy); free(w); free(y); free(dx); free(dw); free(wy); free(wdx); free(wdw);
    }
}

static void test_specials(void) {
    const float nan_p = sb_test_from_bits(0x7fc01234u), ninf = -INFINITY;
    float x[8] = {-0.0f, 0.0f, nan_p, ninf, INFINITY, -1.0f, FLT_MIN / 4, -FLT_MIN / 4};
    float w[1], y[8], dy[8], dx[8], dw[1];
    int64_t s8[1] = {8}, s1[1] = {1};
    sb_tensor *tx = wrap(x, 1, s8), *tw = wrap(w, 1, s1), *ty = wrap(y, 1, s8);
    sb_tensor *tdy = wrap(dy, 1, s8), *tdx = wrap(dx, 1, s8), *tdw = wrap(dw, 1, s1);
    w[0] = 0.25f;
    CHECK_OK(sb_prelu_forward(tx, tw, ty));
    CHECK_BITS(y[0], -0.0f, "prelu(-0, 0.25) = 0.25 * -0");
    CHECK_BITS(y[1], 0.0f, "prelu(+0, 0.25) = +0");
    CHECK_BITS(y[2], nan_p, "prelu(NaN) keeps the NaN and its payload");
    CHECK_BITS(y[3], ninf, "prelu(-inf, 0.25)");
    CHECK_BITS(y[4], INFINITY, "prelu(+inf)");
    CHECK_BITS(y[5], -0.25f, "prelu(-1, 0.25)");
    CHECK_BITS(y[6], FLT_MIN / 4, "positive subnormal passes");
    CHECK_BITS(y[7], -FLT_MIN / 16, "negative subnormal times 0.25 (exact)");
    w[0] = -0.5f;
    CHECK_OK(sb_prelu_forward(tx, tw, ty));
    CHECK_BITS(y[0], 0.0f, "prelu(-0, -0.5) = +0");
    CHECK_BITS(y[3], INFINITY, "prelu(-inf, -0.5) = +inf");
    w[0] = 0.0f;
    CHECK_OK(sb_prelu_forward(tx, tw, ty));
    CHECK(isnan(y[3]), "prelu(-inf, 0) = 0 * -inf is NaN");
    w[0] = NAN;
    CHECK_OK(sb_prelu_forward(tx, tw, ty));
    CHECK(isnan(y[5]) && y[4] == INFINITY, "NaN weight: NaN for x <= 0, x for x > 0");
    /* backward: dx = x > 0 ? dy : w * dy; the NaN x takes the w branch */
    for (int i = 0; i < 8; i++) dy[i] = 2.0f;
    w[0] = 0.25f;
    CHECK_OK(sb_prelu_backward(tx, tw, tdy, tdx, tdw));
    CHECK_BITS(dx[0], 0.5f, "dx at -0 takes the slope");
    CHECK_BITS(dx[1], 0.5f, "dx at +0 takes the slope (0 is not > 0)");
    CHECK_BITS(dx[2], 0.5f, "dx at NaN x takes the slope branch");
    CHECK_BITS(dx[4], 2.0f, "dx at +inf");
    CHECK(isnan(dw[0]), "dweight sums the NaN x's term x * dy");
    x[2] = 1.0f;
    x[3] = -1.0f;
    CHECK_OK(sb_prelu_backward(tx, tw, tdy, NULL, tdw));
    /* terms: -0*2 = -0, +0, +0, -2, +0, -2, +0, -FLT_MIN/2 */
    CHECK_BITS(dw[0], -4.0f - FLT_MIN / 2, "dweight of the finite row (dx not requested)");
    sb_tensor_free(tx); sb_tensor_free(tw); sb_tensor_free(ty);
    sb_tensor_free(tdy); sb_tensor_free(tdx); sb_tensor_free(tdw);
}

/* In place: y = x and dx = dy give the out-of-place bits. */
static void test_in_place(void) {
    int64_t shape[3] = {2, 3, 5}, ws[1] = {3};
    float x[30], x2[30], dy[30], dy2[30], w[3] = {0.5f, -0.75f, 0.1f}, y[30], dx[30], dw[3], dw2[3];
    sb_test_seed(77);
    for (int i = 0; i < 30; i++) { x[i] = x2[i] = sb_test_unif(-3, 3); dy[i] = dy2[i] = sb_test_unif(-1, 1); }
    sb_tensor *tx = wrap(x, 3, shape), *tx2 = wrap(x2, 3, shape), *tw = wrap(w, 1, ws);
    sb_tensor *ty = wrap(y, 3, shape), *tdy = wrap(dy, 3, shape), *tdy2 = wrap(dy2, 3, shape);
    sb_tensor *tdx = wrap(dx, 3, shape), *tdw = wrap(dw, 1, ws), *tdw2 = wrap(dw2, 1, ws);
    CHECK_OK(sb_prelu_backward(tx, tw, tdy, tdx, tdw));
    CHECK_OK(sb_prelu_backward(tx2, tw, tdy2, tdy2, tdw2));
    CHECK(memcmp(dx, dy2, sizeof dx) == 0, "dx in place of dy");
    CHECK(memcmp(dw, dw2, sizeof dw) == 0, "dweight with dx in place of dy");
    CHECK_OK(sb_prelu_forward(tx, tw, ty));
    CHECK_OK(sb_prelu_forward(tx2, tw, tx2));
    CHECK(memcmp(y, x2, sizeof y) == 0, "y in place of x");
    sb_tensor_free(tx); sb_tensor_free(tx2); sb_tensor_free(tw); sb_tensor_free(ty);
    sb_tensor_free(tdy); sb_tensor_free(tdy2); sb_tensor_free(tdx); sb_tensor_free(tdw);
    sb_tensor_free(tdw2);
}

/* dx and dweight against float64 central differences of L = sum(dy * y). */
static void test_gradcheck(void) {
    int64_t shape[3] = {3, 4, 7}, ws[1] = {4};
    enum { N = 84 };
    float x[N], dy[N], w[4] = {0.2f, -0.3f, 0.9f, 0.05f}, dx[N], dw[4];
    sb_test_seed(4242);
    for (int i = 0; i < N; i++) {
        do x[i] = sb_test_unif(-2, 2); while (fabsf(x[i]) < 0.01f); /* away from the kink */
        dy[i] = sb_test_unif(-1, 1);
    }
    sb_tensor *tx = wrap(x, 3, shape), *tw = wrap(w, 1, ws), *tdy = wrap(dy, 3, shape);
    sb_tensor *tdx = wrap(dx, 3, shape), *tdw = wrap(dw, 1, ws);
    CHECK_OK(sb_prelu_backward(tx, tw, tdy, tdx, tdw));
    const double h = 1e-4;
    for (int c = 0; c < 4; c++) {
        double lp = 0, lm = 0;
        for (int i = 0; i < N; i++) {
            int ch = (i / 7) % 4;
            double wv = (double)w[ch] + (ch == c ? h : 0), wm = (double)w[ch] - (ch == c ? h : 0);
            lp += dy[i] * (x[i] > 0 ? x[i] : wv * x[i]);
            lm += dy[i] * (x[i] > 0 ? x[i] : wm * x[i]);
        }
        double fd = (lp - lm) / (2 * h);
        CHECK(fabs(dw[c] - fd) <= 1e-5 * (1 + fabs(fd)), "dweight[%d] = %g, finite difference %g", c,
              (double)dw[c], fd);
    }
    for (int i = 0; i < N; i++) {
        int ch = (i / 7) % 4;
        double xp = x[i] + h, xm = x[i] - h;
        double fd = dy[i] * ((xp > 0 ? xp : w[ch] * xp) - (xm > 0 ? xm : w[ch] * xm)) / (2 * h);
        CHECK(fabs(dx[i] - fd) <= 1e-5 * (1 + fabs(fd)), "dx[%d] = %g, finite difference %g", i,
              (double)dx[i], fd);
    }
    sb_tensor_free(tx); sb_tensor_free(tw); sb_tensor_free(tdy); sb_tensor_free(tdx);
    sb_tensor_free(tdw);
}

static int untouched(const float *p, int n) {
    for (int i = 0; i < n; i++)
        if (sb_test_bits(p[i]) != 0xa5a5a5a5u) return 0;
    return 1;
}

static void test_bad_inputs(void) {
    int64_t s3[2] = {2, 3}, s4[2] = {2, 4}, s1d[1] = {3}, w2[1] = {2}, w3[1] = {3}, w1[1] = {1};
    float x[12] = {0}, y[12], w[3] = {0.1f, 0.2f, 0.3f}, dx[12], dw[3];
    sb_tensor *tx = wrap(x, 2, s3), *tw2 = wrap(w, 1, w2), *tw3 = wrap(w, 1, w3);
    sb_tensor *ty = wrap(y, 2, s3), *ty4 = wrap(y, 2, s4), *tdx = wrap(dx, 2, s3);
    sb_tensor *x1 = wrap(x, 1, s1d), *y1 = wrap(y, 1, s1d), *tdw1 = wrap(dw, 1, w1);
    memset(y, 0xa5, sizeof y); memset(dx, 0xa5, sizeof dx); memset(dw, 0xa5, sizeof dw);
    CHECK_ERROR(sb_prelu_forward(tx, tw2, ty), SB_ERR_SHAPE, "expected 1 or x's channel count 3");
    CHECK_ERROR(sb_prelu_forward(x1, tw3, y1), SB_ERR_SHAPE, "channel count 1");
    CHECK_ERROR(sb_prelu_forward(tx, tw3, ty4), SB_ERR_SHAPE, "y");
    CHECK_ERROR(sb_prelu_forward(NULL, tw3, ty), SB_ERR_NULL, "x");
    CHECK_ERROR(sb_prelu_forward(tx, NULL, ty), SB_ERR_NULL, "weight");
    CHECK_ERROR(sb_prelu_forward(tx, tw3, tw3), SB_ERR_SHAPE, "y");
    CHECK_ERROR(sb_prelu_backward(tx, tw3, NULL, tdx, NULL), SB_ERR_NULL, "dy");
    CHECK_ERROR(sb_prelu_backward(tx, tw3, tx, tdx, tdw1), SB_ERR_SHAPE, "dweight");
    CHECK_ERROR(sb_prelu_backward(tx, tw3, tx, tdx, tw3), SB_ERR_ARG, "dweight");
    CHECK(untouched(y, 12) && untouched(dx, 12) && untouched(dw, 3), "refused calls wrote nothing");
    sb_tensor_free(tx); sb_tensor_free(tw2); sb_tensor_free(tw3); sb_tensor_free(ty);
    sb_tensor_free(ty4); sb_tensor_free(tdx); sb_tensor_free(x1); sb_tensor_free(y1);
    sb_tensor_free(tdw1);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_bits();
    test_specials();
    test_in_place();
    test_gradcheck();
    test_bad_inputs();
    return sb_test_finish();
}
