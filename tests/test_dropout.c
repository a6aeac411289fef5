/* Tests for samebits/dropout.h: the keep rule u_i >= p against the uniform
 * stream, y = x * (mask * scale) bit for bit, p = 0 / p = 1 / eval,
 * replay from (seed, stream, offset), strided tensors, backward, and
 * argument errors. */
#include <math.h>
#include "harness.h"

static sb_tensor *wrap(float *data, int ndim, const int64_t *shape, const int64_t *strides) {
    sb_tensor *t = NULL;
    if (sb_tensor_wrap(&t, data, SB_F32, ndim, shape, strides) != SB_OK) abort();
    return t;
}

static float scale_of(float p) {
    if (p == 1.0f) return 0.0f;
    float keep = 1.0f - p;
    return 1.0f / keep;
}

static void test_keep_rule(void) {
    int64_t n = sb_test_quick() ? 100000 : 1000000;
    float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4), *m = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) x[i] = (float)((i % 1999) - 999) * 0.37f;
    const float ps[] = {0.1f, 0.3f, 0.5f, 0.9f};
    for (int pi = 0; pi < 4; pi++) {
        float p = ps[pi], scale = scale_of(p);
        sb_tensor *tx = wrap(x, 1, &n, NULL), *ty = wrap(y, 1, &n, NULL), *tm = wrap(m, 1, &n, NULL);
        CHECK_OK(sb_dropout_forward(tx, p, true, 31337, 5, 1000, ty, tm));
        int64_t kept = 0, bad = 0;
        for (int64_t i = 0; i < n; i++) {
            float u = sb_rng_uniform_at(31337, 5, 1000 + (uint64_t)i);
            float k = u >= p ? 1.0f : 0.0f;
            float mult = k * scale;
            if (sb_test_bits(m[i]) != sb_test_bits(k) ||
                sb_test_bits(y[i]) != sb_test_bits(x[i] * mult))
                bad++;
            kept += k == 1.0f;
        }
        double rate = (double)kept / (double)n, want = 1.0 - p;
        double sigma = sqrt(want * (1 - want) / (double)n);
        CHECK(bad == 0, "p = %g: %lld elements differ from the contract", (double)p, (long long)bad);
        CHECK(fabs(rate - want) < 5 * sigma, "p = %g: keep rate %.5f", (double)p, rate);
        sb_tensor_free(tx); sb_tensor_free(ty); sb_tensor_free(tm);
    }
    free(x); free(y); free(m);
}

static void test_special_p(void) {
    float x[8] = {1.5f, -2.0f, 0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0x1p-140f};
    float y[8], m[8];
    int64_t n = 8;
    sb_tensor *tx = wrap(x, 1, &n, NULL), *ty = wrap(y, 1, &n, NULL), *tm = wrap(m, 1, &n, NULL);
    /* p = 0: identity (x * 1) */
    CHECK_OK(sb_dropout_forward(tx, 0.0f, true, 1, 2, 0, ty, tm));
    for (int i = 0; i < 8; i++) {
        CHECK(isnan(x[i]) ? isnan(y[i]) : sb_test_bits(y[i]) == sb_test_bits(x[i]), "p=0 %d", i);
        CHECK_BITS(m[i], 1.0f, "p=0 mask %d", i);
    }
    /* p = 1: x * 0, so signed zeros and NaN for inf/NaN, as PyTorch */
    CHECK_OK(sb_dropout_forward(tx, 1.0f, true, 1, 2, 0, ty, tm));
    for (int i = 0; i < 8; i++) {
        float want = x[i] * 0.0f;
        CHECK(isnan(want) ? isnan(y[i]) : sb_test_bits(y[i]) == sb_test_bits(want), "p=1 %d", i);
        CHECK_BITS(m[i], 0.0f, "p=1 mask %d", i);
    }
    CHECK_BITS(y[1], -0.0f, "p=1 keeps the sign of zero");
    /* eval: bit-exact copy (NaN payload included), mask of ones */
    float odd_nan;
    uint32_t nan_bits = 0x7fc12345u;
    memcpy(&odd_nan, &nan_bits, 4);
    x[6] = odd_nan;
    CHECK_OK(sb_dropout_forward(tx, 0.7f, false, 1, 2, 0, ty, tm));
    for (int i = 0; i < 8; i++) {
        CHECK(sb_test_bits(y[i]) == sb_test_bits(x[i]), "eval %d", i);
        CHECK_BITS(m[i], 1.0f, "eval mask %d", i);
    }
    CHECK_OK(sb_dropout_forward(tx, 0.7f, false, 1, 2, 0, ty, NULL));
    /* a dropped inf becomes NaN (x * 0), a kept one stays inf */
    float big[64], out[64], mk[64];
    int64_t nb = 64;
    for (int i = 0; i < 64; i++) big[i] = INFINITY;
    sb_tensor *tb = wrap(big, 1, &nb, NULL), *to = wrap(out, 1, &nb, NULL), *tk = wrap(mk, 1, &nb, NULL);
    CHECK_OK(sb_dropout_forward(tb, 0.5f, true, 8, 8, 0, to, tk));
    int dropped = 0, kept = 0;
    for (int i = 0; i < 64; i++) {
        if (mk[i] == 0.0f) { dropped++; CHECK(isnan(out[i]), "dropped inf %d", i); }
        else { kept++; CHECK(out[i] == INFINITY, "kept inf %d", i); }
    }
    CHECK(dropped > 0 && kept > 0, "p = 0.5 over 64 elements: %d dropped", dropped);
    sb_tensor_free(tx); sb_tensor_free(ty); sb_tensor_free(tm);
    sb_tensor_free(tb); sb_tensor_free(to); sb_tensor_free(tk);
}

static void test_replay_and_strides(void) {
    enum { R = 7, C = 45 };
    float x[R * C], y1[R * C], y2[R * C], m1[R * C], m2[R * C];
    for (int i = 0; i < R * C; i++) x[i] = (float)i - 100.5f;
    int64_t shape[2] = {R, C}, n = R * C;
    sb_tensor *tx = wrap(x, 2, shape, NULL), *ty1 = wrap(y1, 2, shape, NULL),
              *tm1 = wrap(m1, 2, shape, NULL), *ty2 = wrap(y2, 2, shape, NULL),
              *tm2 = wrap(m2, 2, shape, NULL);
    CHECK_OK(sb_dropout_forward(tx, 0.25f, true, 77, 1, 50, ty1, tm1));
    CHECK_OK(sb_dropout_forward(tx, 0.25f, true, 77, 1, 50, ty2, tm2));
    CHECK(memcmp(y1, y2, sizeof y1) == 0 && memcmp(m1, m2, sizeof m1) == 0, "replay differs");
    CHECK_OK(sb_dropout_forward(tx, 0.25f, true, 77, 2, 50, ty2, tm2));
    CHECK(memcmp(m1, m2, sizeof m1) != 0, "another stream gives the same mask");
    /* offset addressing: the tail of a bigger call equals a call at offset */
    float xb[R * C + 50], yb[R * C + 50], mb[R * C + 50];
    int64_t nb = R * C + 50;
    for (int i = 0; i < 50; i++) xb[i] = 1.0f;
    memcpy(xb + 50, x, sizeof x);
    sb_tensor *txb = wrap(xb, 1, &nb, NULL), *tyb = wrap(yb, 1, &nb, NULL), *tmb = wrap(mb, 1, &nb, NULL);
    CHECK_OK(sb_dropout_forward(txb, 0.25f, true, 77, 1, 0, tyb, tmb));
    CHECK(memcmp(yb + 50, y1, sizeof y1) == 0 && memcmp(mb + 50, m1, sizeof m1) == 0,
          "offset 50 differs from the tail of a call at 0");
    /* strided x (a transposed view) and strided outputs: element order is
     * logical row-major order of the view */
    float xt[C * R];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) xt[c * R + r] = x[r * C + c];
    int64_t tstr[2] = {1, R};
    sb_tensor *txt = wrap(xt, 2, shape, tstr);
    float yt[C * R], mt[C * R];
    sb_tensor *tyt = wrap(yt, 2, shape, tstr), *tmt = wrap(mt, 2, shape, tstr);
    CHECK_OK(sb_dropout_forward(txt, 0.25f, true, 77, 1, 50, tyt, tmt));
    int bad = 0;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++)
            bad += sb_test_bits(yt[c * R + r]) != sb_test_bits(y1[r * C + c]) ||
                   mt[c * R + r] != m1[r * C + c];
    CHECK(bad == 0, "strided dropout: %d elements differ", bad);
    /* backward: dx = dy * (mask * scale); eval: dx = dy */
    float dy[R * C], dx[R * C];
    for (int i = 0; i < R * C; i++) dy[i] = 0.1f * (float)(i % 13) - 0.6f;
    sb_tensor *tdy = wrap(dy, 2, shape, NULL), *tdx = wrap(dx, 2, shape, NULL);
    CHECK_OK(sb_dropout_backward(tdy, tm1, 0.25f, true, tdx));
    float scale = scale_of(0.25f);
    bad = 0;
    for (int i = 0; i < R * C; i++) bad += sb_test_bits(dx[i]) != sb_test_bits(dy[i] * (m1[i] * scale));
    CHECK(bad == 0, "backward: %d elements differ", bad);
    CHECK_OK(sb_dropout_backward(tdy, NULL, 0.25f, false, tdx));
    CHECK(memcmp(dx, dy, sizeof dx) == 0, "eval backward is not the identity");
    CHECK_OK(sb_dropout_backward(tdy, tm1, 1.0f, true, tdx));
    bad = 0;
    for (int i = 0; i < R * C; i++) bad += sb_test_bits(dx[i]) != sb_test_bits(dy[i] * 0.0f);
    CHECK(bad == 0, "p = 1 backward");
    (void)n;
    sb_tensor *all[] = {tx, ty1, tm1, ty2, tm2, txb, tyb, tmb, txt, tyt, tmt, tdy, tdx};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) sb_tensor_free(all[i]);
}

static void test_errors(void) {
    float a[6] = {0}, b[6] = {0}, c[6] = {0.5f, 0, 0, 0, 0, 0};
    int64_t s6 = 6, s5 = 5, s23[2] = {2, 3};
    sb_tensor *x = wrap(a, 1, &s6, NULL), *y = wrap(b, 1, &s6, NULL), *y5 = wrap(b, 1, &s5, NULL);
    sb_tensor *m23 = wrap(c, 2, s23, NULL), *half = wrap(c, 1, &s6, NULL);
    sb_tensor *xi = NULL;
    int32_t ints[6] = {0};
    sb_tensor_wrap(&xi, ints, SB_I32, 1, &s6, NULL);
    CHECK_ERROR(sb_dropout_forward(NULL, 0.5f, true, 0, 0, 0, y, NULL), SB_ERR_NULL, "sb_dropout_forward: x is NULL");
    CHECK_ERROR(sb_dropout_forward(x, 0.5f, true, 0, 0, 0, NULL, NULL), SB_ERR_NULL, "y is NULL");
    CHECK_ERROR(sb_dropout_forward(xi, 0.5f, true, 0, 0, 0, y, NULL), SB_ERR_DTYPE, "x has dtype int32");
    CHECK_ERROR(sb_dropout_forward(x, 0.5f, true, 0, 0, 0, y5, NULL), SB_ERR_SHAPE, "y has shape [5]");
    CHECK_ERROR(sb_dropout_forward(x, 0.5f, true, 0, 0, 0, y, m23), SB_ERR_SHAPE, "mask has shape [2, 3]");
    CHECK_ERROR(sb_dropout_forward(x, -0.1f, true, 0, 0, 0, y, NULL), SB_ERR_ARG, "p = -0.1 is outside [0, 1]");
    CHECK_ERROR(sb_dropout_forward(x, 1.5f, true, 0, 0, 0, y, NULL), SB_ERR_ARG, "outside [0, 1]");
    CHECK_ERROR(sb_dropout_forward(x, NAN, false, 0, 0, 0, y, NULL), SB_ERR_ARG, "p = nan");
    CHECK_ERROR(sb_dropout_forward(x, 0.5f, true, 0, 0, SB_RNG_INDEX_LIMIT - 3, y, NULL), SB_ERR_RANGE, "index limit");
    b[0] = 42.0f;
    CHECK_ERROR(sb_dropout_forward(x, 2.0f, true, 0, 0, 0, y, NULL), SB_ERR_ARG, "p = 2");
    CHECK(b[0] == 42.0f, "output written on a validation error");
    CHECK_ERROR(sb_dropout_backward(NULL, half, 0.5f, true, y), SB_ERR_NULL, "sb_dropout_backward: dy is NULL");
    CHECK_ERROR(sb_dropout_backward(x, NULL, 0.5f, true, y), SB_ERR_NULL, "mask is NULL");
    CHECK_ERROR(sb_dropout_backward(x, half, 0.5f, true, NULL), SB_ERR_NULL, "dx is NULL");
    CHECK_ERROR(sb_dropout_backward(xi, half, 0.5f, true, y), SB_ERR_DTYPE, "dy has dtype int32");
    CHECK_ERROR(sb_dropout_backward(x, half, 0.5f, true, y5), SB_ERR_SHAPE, "dx has shape [5]");
    CHECK_ERROR(sb_dropout_backward(x, m23, 0.5f, true, y), SB_ERR_SHAPE, "mask has shape [2, 3]");
    CHECK_ERROR(sb_dropout_backward(x, half, -1.0f, true, y), SB_ERR_ARG, "p = -1");
    CHECK_ERROR(sb_dropout_backward(x, half, 0.5f, true, y), SB_ERR_ARG, "mask element 0 is 0.5");
    CHECK(b[0] == 42.0f, "dx written on a bad mask");
    sb_tensor_free(x); sb_tensor_free(y); sb_tensor_free(y5); sb_tensor_free(m23);
    sb_tensor_free(half); sb_tensor_free(xi);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_keep_rule();
    test_special_p();
    test_replay_and_strides();
    test_errors();
    return sb_test_finish();
}
