/* Tests of sb_conv2d_forward/backward and sb_conv2d_output_size.
 *
 * The oracle restates the contract independently: the input is copied into
 * an explicitly zero-padded buffer, every chain is gathered as a list of
 * terms in the contract's order (grad_input by brute-force search over all
 * output positions instead of index arithmetic) and evaluated by an exact
 * binary32 FMA emulation in MPFR. The analytic gradients are also checked
 * against float64 central finite differences of a float64 convolution. */
#include <float.h>
#include <math.h>
#include <mpfr.h>
#include "harness.h"
#include "support/oracle.h"

static float *F(const sb_tensor *t) { return (float *)t->data; }

typedef struct cfg {
    int64_t n, c, h, w, o, kh, kw;
    sb_conv2d_params p;
} cfg;

/* Output size by counting: the number of r with r*s + span <= in + 2*pad. */
static int64_t count_out(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t d) {
    int64_t r = 0;
    while (r * s + d * (k - 1) + 1 <= in + 2 * pad) r++;
    return r;
}

/* x copied into a buffer with pad zeros on every side: xp[n][c][H+2ph][W+2pw]. */
static float *padded(const cfg *q, const float *x) {
    int64_t H = q->h + 2 * q->p.pad_h, W = q->w + 2 * q->p.pad_w;
    float *xp = calloc((size_t)(q->n * q->c * H * W + 1), 4);
    for (int64_t n = 0; n < q->n; n++)
        for (int64_t c = 0; c < q->c; c++)
            for (int64_t i = 0; i < q->h; i++)
                memcpy(xp + ((n * q->c + c) * H + i + q->p.pad_h) * W + q->p.pad_w,
                       x + ((n * q->c + c) * q->h + i) * q->w, (size_t)q->w * 4);
    return xp;
}

static void check_conv(const cfg *q, bool with_bias, bool grad_check) {
    const sb_conv2d_params *p = &q->p;
    int64_t G = p->groups, icg = q->c / G, ocg = q->o / G;
    int64_t OH = count_out(q->h, q->kh, p->stride_h, p->pad_h, p->dilation_h);
    int64_t OW = count_out(q->w, q->kw, p->stride_w, p->pad_w, p->dilation_w);
    int64_t oh = -1, ow = -1;
    CHECK_OK(sb_conv2d_output_size(q->h, q->w, q->kh, q->kw, p, &oh, &ow));
    CHECK(oh == OH && ow == OW, "output size %lldx%lld, expected %lldx%lld", (long long)oh,
          (long long)ow, (long long)OH, (long long)OW);
    sb_tensor *x = oracle_tensor(SB_F32, 4, q->n, q->c, q->h, q->w), *dx = oracle_tensor(SB_F32, 4, q->n, q->c, q->h, q->w);
    sb_tensor *w = oracle_tensor(SB_F32, 4, q->o, icg, q->kh, q->kw), *dw = oracle_tensor(SB_F32, 4, q->o, icg, q->kh, q->kw);
    sb_tensor *b = oracle_tensor(SB_F32, 1, q->o, 0, 0, 0), *db = oracle_tensor(SB_F32, 1, q->o, 0, 0, 0);
    sb_tensor *y = oracle_tensor(SB_F32, 4, q->n, q->o, OH, OW), *dy = oracle_tensor(SB_F32, 4, q->n, q->o, OH, OW);
    oracle_fill_rand(x); oracle_fill_rand(w); oracle_fill_rand(b); oracle_fill_rand(dy);
    sb_tensor_fill(y, NAN); sb_tensor_fill(dx, NAN); sb_tensor_fill(dw, NAN); sb_tensor_fill(db, NAN);
    CHECK_OK(sb_conv2d_forward(x, w, with_bias ? b : NULL, p, y));
    CHECK_OK(sb_conv2d_backward(dy, x, w, p, dx, dw, db));

    float *xp = padded(q, F(x));
    int64_t PH = q->h + 2 * p->pad_h, PW = q->w + 2 * p->pad_w;
    int64_t maxlen = icg * q->kh * q->kw + ocg * q->kh * q->kw + q->n * OH * OW + 1;
    float *u = malloc((size_t)maxlen * 4), *v = malloc((size_t)maxlen * 4);
    const float *X = F(x), *Wt = F(w), *DY = F(dy);
    long bad_y = 0, bad_dx = 0, bad_dw = 0, bad_db = 0;
    /* Forward: terms (c, i, j) from the padded buffer, padding included. */
    for (int64_t n = 0; n < q->n; n++)
        for (int64_t oc = 0; oc < q->o; oc++)
            for (int64_t r = 0; r < OH; r++)
                for (int64_t s = 0; s < OW; s++) {
                    int64_t len = 0, g = oc / ocg;
                    for (int64_t c = 0; c < icg; c++)
                        for (int64_t i = 0; i < q->kh; i++)
                            for (int64_t j = 0; j < q->kw; j++) {
                                u[len] = xp[((n * q->c + g * icg + c) * PH + r * p->stride_h + i * p->dilation_h) * PW +
                                            s * p->stride_w + j * p->dilation_w];
                                v[len++] = Wt[((oc * icg + c) * q->kh + i) * q->kw + j];
                            }
                    float want = oracle_fma_chain(len, u, v);
                    if (with_bias) want = want + F(b)[oc];
                    bad_y += !oracle_same(F(y)[((n * q->o + oc) * OH + r) * OW + s], want);
                }
    /* grad_input: terms (o, i, j) for which some output (r, s) reads this
     * input position, found by searching all (r, s). */
    for (int64_t n = 0; n < q->n; n++)
        for (int64_t ch = 0; ch < q->c; ch++)
            for (int64_t hh = 0; hh < q->h; hh++)
                for (int64_t ww = 0; ww < q->w; ww++) {
                    int64_t len = 0, g = ch / icg;
                    for (int64_t o = 0; o < ocg; o++)
                        for (int64_t i = 0; i < q->kh; i++)
                            for (int64_t j = 0; j < q->kw; j++)
                                for (int64_t r = 0; r < OH; r++)
                                    for (int64_t s = 0; s < OW; s++)
                                        if (r * p->stride_h - p->pad_h + i * p->dilation_h == hh &&
                                            s * p->stride_w - p->pad_w + j * p->dilation_w == ww) {
                                            u[len] = DY[((n * q->o + g * ocg + o) * OH + r) * OW + s];
                                            v[len++] = Wt[(((g * ocg + o) * icg + ch % icg) * q->kh + i) * q->kw + j];
                                        }
                    bad_dx += !oracle_same(F(dx)[((n * q->c + ch) * q->h + hh) * q->w + ww], oracle_fma_chain(len, u, v));
                }
    /* grad_weight: terms (n, r, s), padding included. */
    for (int64_t oc = 0; oc < q->o; oc++)
        for (int64_t c = 0; c < icg; c++)
            for (int64_t i = 0; i < q->kh; i++)
                for (int64_t j = 0; j < q->kw; j++) {
                    int64_t len = 0, ch = (oc / ocg) * icg + c;
                    for (int64_t n = 0; n < q->n; n++)
                        for (int64_t r = 0; r < OH; r++)
                            for (int64_t s = 0; s < OW; s++) {
                                u[len] = DY[((n * q->o + oc) * OH + r) * OW + s];
                                v[len++] = xp[((n * q->c + ch) * PH + r * p->stride_h + i * p->dilation_h) * PW +
                                              s * p->stride_w + j * p->dilation_w];
                            }
                    bad_dw += !oracle_same(F(dw)[((oc * icg + c) * q->kh + i) * q->kw + j], oracle_fma_chain(len, u, v));
                }
    for (int64_t oc = 0; oc < q->o; oc++) {
        int64_t len = 0;
        for (int64_t n = 0; n < q->n; n++)
            for (int64_t r = 0; r < OH * OW; r++) u[len++] = DY[(n * q->o + oc) * OH * OW + r];
        bad_db += !oracle_same(F(db)[oc], oracle_canonical_sum(u, len));
    }
    CHECK(bad_y + bad_dx + bad_dw + bad_db == 0,
          "conv n%lld c%lld %lldx%lld o%lld k%lldx%lld s%lld,%lld p%lld,%lld d%lld,%lld g%lld: "
          "y %ld, dx %ld, dw %ld, db %ld elements differ",
          (long long)q->n, (long long)q->c, (long long)q->h, (long long)q->w, (long long)q->o,
          (long long)q->kh, (long long)q->kw, (long long)p->stride_h, (long long)p->stride_w,
          (long long)p->pad_h, (long long)p->pad_w, (long long)p->dilation_h,
          (long long)p->dilation_w, (long long)G, bad_y, bad_dx, bad_dw, bad_db);

    if (grad_check) {
        /* L = sum(dy * conv64(x, w)); dL/dx and dL/dw by central differences
         * of a float64 convolution (exact up to float64 rounding since L is
         * linear in each), compared with the float32 analytic gradients. */
        int64_t nx = sb_tensor_numel(x), nw = sb_tensor_numel(w);
        double *x64 = malloc((size_t)(nx + 1) * 8), *w64 = malloc((size_t)(nw + 1) * 8);
        for (int64_t i = 0; i < nx; i++) x64[i] = X[i];
        for (int64_t i = 0; i < nw; i++) w64[i] = Wt[i];
        long far = 0;
        int probes = 12;
        for (int t = 0; t < 2 * probes; t++) {
            bool on_x = t < probes;
            int64_t idx = (int64_t)(oracle_rand() % (uint64_t)(on_x ? nx : nw));
            double *arr = on_x ? x64 : w64, save = arr[idx], hstep = 0.5, Lp = 0, Lm = 0, gmag = 0;
            for (int side = 0; side < 2; side++) {
                arr[idx] = save + (side ? -hstep : hstep);
                double L = 0;
                for (int64_t n = 0; n < q->n; n++)
                    for (int64_t oc = 0; oc < q->o; oc++)
                        for (int64_t r = 0; r < OH; r++)
                            for (int64_t s = 0; s < OW; s++) {
                                double acc = 0;
                                int64_t g = oc / ocg;
                                for (int64_t c = 0; c < icg; c++)
                                    for (int64_t i = 0; i < q->kh; i++)
                                        for (int64_t j = 0; j < q->kw; j++) {
                                            int64_t hh = r * p->stride_h - p->pad_h + i * p->dilation_h;
                                            int64_t ww = s * p->stride_w - p->pad_w + j * p->dilation_w;
                                            if (hh < 0 || hh >= q->h || ww < 0 || ww >= q->w) continue;
                                            int64_t xi = ((n * q->c + g * icg + c) * q->h + hh) * q->w + ww;
                                            int64_t wi = ((oc * icg + c) * q->kh + i) * q->kw + j;
                                            double xv = x64[xi], wv = w64[wi];
                                            double d = DY[((n * q->o + oc) * OH + r) * OW + s];
                                            acc += xv * wv;
                                            /* |terms| of this probe's derivative */
                                            if (side == 0 && on_x && xi == idx) gmag += fabs(wv * d);
                                            if (side == 0 && !on_x && wi == idx) gmag += fabs(xv * d);
                                        }
                                L += acc * DY[((n * q->o + oc) * OH + r) * OW + s];
                            }
                if (side) Lm = L; else Lp = L;
            }
            arr[idx] = save;
            double fd = (Lp - Lm) / (2 * hstep);
            double got = on_x ? F(dx)[idx] : F(dw)[idx];
            if (fabs(got - fd) > 1e-4 * gmag + 1e-6 * fabs(fd)) {
                if (far++ < 3)
                    fprintf(stderr, "grad check %s[%lld]: analytic %g, finite difference %g\n",
                            on_x ? "x" : "w", (long long)idx, got, fd);
            }
        }
        CHECK(far == 0, "conv gradients disagree with float64 finite differences at %ld probes", far);
        free(x64); free(w64);
    }
    free(xp); free(u); free(v);
    sb_tensor *list[] = {x, dx, w, dw, b, db, y, dy};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

static void test_conv_shapes(void) {
    static const cfg cases[] = {
        {2, 4, 7, 5, 6, 3, 2, {2, 1, 1, 0, 1, 2, 2}},   /* stride/pad/dilation mix, 2 groups */
        {1, 3, 9, 9, 3, 3, 3, {1, 1, 2, 2, 2, 2, 3}},   /* depthwise, dilated */
        {3, 1, 1, 1, 2, 1, 1, {1, 1, 0, 0, 1, 1, 1}},   /* 1x1 everything */
        {1, 8, 6, 6, 2, 3, 3, {1, 1, 1, 1, 1, 1, 1}},   /* 72-term chains */
        {2, 2, 5, 7, 4, 5, 7, {1, 1, 0, 0, 1, 1, 2}},   /* kernel = whole input */
        {1, 6, 11, 10, 4, 3, 3, {3, 2, 1, 1, 1, 1, 2}}, /* strides skip inputs: dx terms vary */
        {2, 2, 4, 4, 2, 2, 2, {2, 2, 1, 1, 3, 1, 1}},   /* dilation with padding */
        {1, 2, 1, 8, 3, 1, 3, {1, 1, 0, 1, 1, 1, 1}},   /* one row */
        {2, 3, 5, 5, 6, 3, 3, {1, 1, 1, 1, 1, 1, 3}},   /* 2 output channels per group */
        {0, 2, 4, 4, 2, 3, 3, {1, 1, 1, 1, 1, 1, 1}},   /* empty batch: dw = db = +0 */
        {1, 0, 3, 3, 2, 2, 2, {1, 1, 0, 0, 1, 1, 1}},   /* no input channels: y = +0 + b */
    };
    int n = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < n; i++) {
        check_conv(&cases[i], true, i < 6);
        if (i < 3) check_conv(&cases[i], false, false);
    }
    if (!sb_test_quick()) {
        /* grad_weight chains of 2*17*17 = 578 terms. */
        cfg big = {2, 2, 17, 17, 2, 3, 3, {1, 1, 1, 1, 1, 1, 1}};
        check_conv(&big, true, false);
    }
}

static void test_conv_specials(void) {
    /* x is 1x1x3x3 of ones, w is zero except an inf in its top-left tap, pad 1.
     * Output (0, 0) reads padding with that tap: fmaf(0, inf) = NaN. Output
     * (1, 1) reads x[0][0] = 1 with it: inf. Skipping padded taps would give
     * 0 at (0, 0). */
    sb_tensor *x = oracle_tensor(SB_F32, 4, 1, 1, 3, 3), *w = oracle_tensor(SB_F32, 4, 1, 1, 3, 3);
    sb_tensor *y = oracle_tensor(SB_F32, 4, 1, 1, 3, 3);
    sb_tensor_fill(x, 1.0f);
    F(w)[0] = INFINITY;
    sb_conv2d_params p = {1, 1, 1, 1, 1, 1, 1};
    CHECK_OK(sb_conv2d_forward(x, w, NULL, &p, y));
    CHECK(isnan(F(y)[0]), "padding tap times inf weight is NaN, got %g", F(y)[0]);
    CHECK_BITS(F(y)[4], INFINITY, "inf weight on a real input");
    /* Those padded outputs stay NaN in dw too: dw's chain has padded terms,
     * so an inf gradient facing padding makes NaN. */
    sb_tensor *dy = oracle_tensor(SB_F32, 4, 1, 1, 3, 3), *dw = oracle_tensor(SB_F32, 4, 1, 1, 3, 3);
    sb_tensor *dx = oracle_tensor(SB_F32, 4, 1, 1, 3, 3);
    F(dy)[0] = INFINITY; /* output (0,0): its tap (0,0) faces padding */
    CHECK_OK(sb_conv2d_backward(dy, x, w, &p, dx, dw, NULL));
    CHECK(isnan(F(dw)[0]), "dw[0][0]: inf dy times padded zero is NaN");
    CHECK_BITS(F(dw)[4], INFINITY, "dw centre tap reads x[0][0] = 1");
    /* dx has no padding terms: dx[0][0] is read by output (0,0) via the
     * centre tap (w = 0: inf*0 = NaN) and by outputs (1,1) via tap (0,0). */
    CHECK(isnan(F(dx)[0]), "dx[0][0] includes inf*0");
    F(dy)[0] = 0.0f;
    F(w)[0] = 2.0f;
    F(dy)[8] = 3.0f; /* output (2,2): reads x[1][1] through tap (0,0) */
    CHECK_OK(sb_conv2d_backward(dy, x, w, &p, dx, NULL, NULL));
    CHECK_BITS(F(dx)[4], 6.0f, "dx[1][1] = dy(2,2) * w(0,0)");
    CHECK_BITS(F(dx)[8], 0.0f, "dx[2][2] is read only with zero weights/grad");

    /* Order of the forward chain: channels first, then rows, then columns.
     * Terms 1e8, 1, -1e8, 1 in (c, i, j) order give 1 (see test_gemm). */
    sb_tensor *x2 = oracle_tensor(SB_F32, 4, 1, 2, 1, 2), *w2 = oracle_tensor(SB_F32, 4, 1, 2, 1, 2);
    sb_tensor *y2 = oracle_tensor(SB_F32, 4, 1, 1, 1, 1), *b2 = oracle_tensor(SB_F32, 1, 1, 0, 0, 0);
    float xv[4] = {1e8f, 1.0f, -1e8f, 1.0f};
    for (int i = 0; i < 4; i++) { F(x2)[i] = xv[i]; F(w2)[i] = 1.0f; }
    CHECK_OK(sb_conv2d_forward(x2, w2, NULL, NULL, y2));
    CHECK_BITS(F(y2)[0], 1.0f, "conv chain order (c, kh, kw)");
    F(b2)[0] = -1.0f;
    CHECK_OK(sb_conv2d_forward(x2, w2, b2, NULL, y2));
    CHECK_BITS(F(y2)[0], 0.0f, "bias after the chain");
    /* All-negative-zero products: chain from +0 stays +0, and a -0 bias
     * then keeps +0. */
    for (int i = 0; i < 4; i++) { F(x2)[i] = -0.0f; F(w2)[i] = 5.0f; }
    F(b2)[0] = -0.0f;
    CHECK_OK(sb_conv2d_forward(x2, w2, b2, NULL, y2));
    CHECK_BITS(F(y2)[0], 0.0f, "+0 from -0 products");
    /* Padded taps are terms even for finite weights: they can turn an
     * underflowed -0 into +0. x = [-2^-75], w = [2^-76, 2^-76], pad_w = 1:
     * y[0] = chain(pad, x) = -0, y[1] = chain(x, pad) = +0 (skipping the
     * padded term would leave -0). */
    sb_tensor *x5 = oracle_tensor(SB_F32, 4, 1, 1, 1, 1), *w5 = oracle_tensor(SB_F32, 4, 1, 1, 1, 2);
    sb_tensor *y5 = oracle_tensor(SB_F32, 4, 1, 1, 1, 2);
    F(x5)[0] = -ldexpf(1.0f, -75);
    F(w5)[0] = F(w5)[1] = ldexpf(1.0f, -76);
    sb_conv2d_params p5 = {1, 1, 0, 1, 1, 1, 1};
    CHECK_OK(sb_conv2d_forward(x5, w5, NULL, &p5, y5));
    CHECK_BITS(F(y5)[0], -0.0f, "padded term first, then the underflowing product");
    CHECK_BITS(F(y5)[1], 0.0f, "padded term after an underflowed -0 gives +0");
    sb_tensor_free(x5); sb_tensor_free(w5); sb_tensor_free(y5);
    /* Subnormal products, exact through the fused chain. */
    for (int i = 0; i < 4; i++) { F(x2)[i] = ldexpf(1.0f + i, -75); F(w2)[i] = ldexpf(1.5f, -70); }
    float u[4], v[4];
    for (int i = 0; i < 4; i++) { u[i] = F(x2)[i]; v[i] = F(w2)[i]; }
    CHECK_OK(sb_conv2d_forward(x2, w2, NULL, NULL, y2));
    CHECK_BITS(F(y2)[0], oracle_fma_chain(4, u, v), "subnormal conv chain");
    /* db: the canonical sum over (n, r, s), order-sensitive example. */
    sb_tensor *x3 = oracle_tensor(SB_F32, 4, 1, 1, 1, 33), *w3 = oracle_tensor(SB_F32, 4, 1, 1, 1, 1);
    sb_tensor *dy3 = oracle_tensor(SB_F32, 4, 1, 1, 1, 33), *db3 = oracle_tensor(SB_F32, 1, 1, 0, 0, 0);
    for (int i = 0; i < 33; i++) F(dy3)[i] = 1.0f;
    F(dy3)[0] = 1e8f; F(dy3)[32] = -1e8f;
    CHECK_OK(sb_conv2d_backward(dy3, x3, w3, NULL, NULL, NULL, db3));
    CHECK_BITS(F(db3)[0], 31.0f, "conv db is the canonical sum");
    /* db over 2 x 1 x 4700 = 9400 > 8192 positions: two levels of blocks. */
    sb_tensor *x4 = oracle_tensor(SB_F32, 4, 2, 1, 1, 4700), *w4 = oracle_tensor(SB_F32, 4, 3, 1, 1, 1);
    sb_tensor *dy4 = oracle_tensor(SB_F32, 4, 2, 3, 1, 4700), *db4 = oracle_tensor(SB_F32, 1, 3, 0, 0, 0);
    for (int64_t i = 0; i < sb_tensor_numel(dy4); i++) F(dy4)[i] = oracle_rand_float();
    CHECK_OK(sb_conv2d_backward(dy4, x4, w4, NULL, NULL, NULL, db4));
    for (int64_t oc = 0; oc < 3; oc++) {
        float *buf = malloc(9400 * 4);
        for (int64_t n = 0; n < 2; n++) memcpy(buf + n * 4700, F(dy4) + (n * 3 + oc) * 4700, 4700 * 4);
        CHECK_BITS(F(db4)[oc], oracle_canonical_sum(buf, 9400), "conv db over 9400 positions, channel %lld", (long long)oc);
        free(buf);
    }
    sb_tensor *list[] = {x, w, y, dy, dw, dx, x2, w2, y2, b2, x3, w3, dy3, db3, x4, w4, dy4, db4};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

static void test_conv_errors(void) {
    sb_tensor *x = oracle_tensor(SB_F32, 4, 2, 4, 5, 5), *w = oracle_tensor(SB_F32, 4, 6, 2, 3, 3);
    sb_tensor *b = oracle_tensor(SB_F32, 1, 6, 0, 0, 0), *y = oracle_tensor(SB_F32, 4, 2, 6, 5, 5);
    sb_tensor *dx = oracle_tensor(SB_F32, 4, 2, 4, 5, 5), *dw = oracle_tensor(SB_F32, 4, 6, 2, 3, 3);
    sb_tensor *db = oracle_tensor(SB_F32, 1, 6, 0, 0, 0), *ybad = oracle_tensor(SB_F32, 4, 2, 6, 3, 3);
    sb_tensor *x3 = oracle_tensor(SB_F32, 3, 4, 5, 5, 0), *xi = oracle_tensor(SB_I32, 4, 2, 4, 5, 5);
    sb_tensor *w1 = oracle_tensor(SB_F32, 4, 6, 4, 3, 3), *w5 = oracle_tensor(SB_F32, 4, 5, 2, 3, 3);
    sb_tensor *b5 = oracle_tensor(SB_F32, 1, 5, 0, 0, 0), *big = oracle_tensor(SB_F32, 4, 6, 2, 9, 9);
    sb_conv2d_params p = {1, 1, 1, 1, 1, 1, 2};
    CHECK_OK(sb_conv2d_forward(x, w, b, &p, y));
    CHECK_OK(sb_conv2d_backward(y, x, w, &p, dx, dw, db));
    CHECK_ERROR(sb_conv2d_forward(NULL, w, b, &p, y), SB_ERR_NULL, "sb_conv2d_forward: x is NULL");
    CHECK_ERROR(sb_conv2d_forward(x, NULL, b, &p, y), SB_ERR_NULL, "w is NULL");
    CHECK_ERROR(sb_conv2d_forward(x, w, b, &p, NULL), SB_ERR_NULL, "y is NULL");
    CHECK_ERROR(sb_conv2d_forward(x3, w, b, &p, y), SB_ERR_SHAPE, "x must have 4 dimensions");
    CHECK_ERROR(sb_conv2d_forward(xi, w, b, &p, y), SB_ERR_DTYPE, "x has dtype int32");
    CHECK_ERROR(sb_conv2d_forward(x, w1, b, &p, y), SB_ERR_SHAPE, "in/groups = 2");
    CHECK_ERROR(sb_conv2d_forward(x, w5, b5, &p, y), SB_ERR_SHAPE, "not divisible by groups = 2");
    CHECK_ERROR(sb_conv2d_forward(x, w, b5, &p, y), SB_ERR_SHAPE, "bias has shape [5]");
    CHECK_ERROR(sb_conv2d_forward(x, w, b, &p, ybad), SB_ERR_SHAPE, "y has shape [2, 6, 3, 3], expected [2, 6, 5, 5]");
    CHECK_ERROR(sb_conv2d_forward(x, big, b, &p, y), SB_ERR_SHAPE, "larger than the padded input");
    sb_conv2d_params q = p;
    q.groups = 3;
    CHECK_ERROR(sb_conv2d_forward(x, w, b, &q, y), SB_ERR_SHAPE, "x has 4 channels, not divisible by groups = 3");
    q = p; q.stride_h = 0;
    CHECK_ERROR(sb_conv2d_forward(x, w, b, &q, y), SB_ERR_ARG, "params->stride_h = 0");
    q = p; q.pad_w = -1;
    CHECK_ERROR(sb_conv2d_forward(x, w, b, &q, y), SB_ERR_ARG, "params->pad_w = -1");
    q = p; q.dilation_w = 0;
    CHECK_ERROR(sb_conv2d_forward(x, w, b, &q, y), SB_ERR_ARG, "params->dilation_w = 0");
    q = p; q.groups = 0;
    CHECK_ERROR(sb_conv2d_forward(x, w, b, &q, y), SB_ERR_ARG, "params->groups = 0");
    q = p; q.dilation_h = INT64_MAX;
    CHECK_ERROR(sb_conv2d_forward(x, w, b, &q, y), SB_ERR_ARG, "params->dilation_h");
    sb_tensor *xt = NULL;
    CHECK_OK(sb_tensor_transpose(&xt, x, 2, 3));
    CHECK_ERROR(sb_conv2d_forward(xt, w, b, &p, y), SB_ERR_ARG, "x must be contiguous");
    F(y)[0] = 42.0f;
    CHECK_ERROR(sb_conv2d_forward(x, w, b, &p, dx), SB_ERR_SHAPE, "y has shape");
    CHECK_BITS(F(y)[0], 42.0f, "y untouched");
    sb_tensor *ya = NULL;
    int64_t ys[4] = {2, 6, 5, 5};
    float *mem = calloc(2 * 6 * 5 * 5, 4);
    CHECK_OK(sb_tensor_wrap(&ya, mem, SB_F32, 4, ys, NULL));
    CHECK_OK(sb_conv2d_forward(x, w, b, &p, ya));
    sb_tensor *wa = NULL;
    int64_t wsh[4] = {6, 2, 3, 3};
    CHECK_OK(sb_tensor_wrap(&wa, mem + 10, SB_F32, 4, wsh, NULL));
    CHECK_ERROR(sb_conv2d_forward(x, wa, b, &p, ya), SB_ERR_ARG, "y shares memory with w");
    CHECK_ERROR(sb_conv2d_backward(NULL, x, w, &p, dx, dw, db), SB_ERR_NULL, "sb_conv2d_backward: dy is NULL");
    CHECK_ERROR(sb_conv2d_backward(ybad, x, w, &p, dx, dw, db), SB_ERR_SHAPE, "dy has shape");
    CHECK_ERROR(sb_conv2d_backward(y, x, w, &p, y, NULL, NULL), SB_ERR_SHAPE, "dx has shape");
    CHECK_ERROR(sb_conv2d_backward(y, x, w, &p, NULL, big, NULL), SB_ERR_SHAPE, "dw has shape");
    CHECK_ERROR(sb_conv2d_backward(y, x, w, &p, NULL, NULL, b5), SB_ERR_SHAPE, "db has shape [5]");
    CHECK_ERROR(sb_conv2d_backward(y, x, w, &p, x, NULL, NULL), SB_ERR_ARG, "dx shares memory with x");
    sb_tensor *dba = NULL;
    int64_t s6[1] = {6};
    CHECK_OK(sb_tensor_wrap(&dba, F(dw) + 3, SB_F32, 1, s6, NULL));
    CHECK_ERROR(sb_conv2d_backward(y, x, w, &p, NULL, dw, dba), SB_ERR_ARG, "dw shares memory with db");
    int64_t oh, ow;
    CHECK_OK(sb_conv2d_output_size(5, 5, 3, 3, NULL, &oh, &ow));
    CHECK(oh == 3 && ow == 3, "default params: valid convolution");
    CHECK_ERROR(sb_conv2d_output_size(5, 5, 3, 3, &p, NULL, &ow), SB_ERR_NULL, "out_h or out_w is NULL");
    CHECK_ERROR(sb_conv2d_output_size(5, 5, 0, 3, &p, &oh, &ow), SB_ERR_ARG, "kernel_h = 0");
    CHECK_ERROR(sb_conv2d_output_size(-1, 5, 3, 3, &p, &oh, &ow), SB_ERR_ARG, "negative");
    CHECK_ERROR(sb_conv2d_output_size(2, 5, 3, 3, NULL, &oh, &ow), SB_ERR_SHAPE, "kernel height (3) is larger");
    q = p; q.stride_w = -2;
    CHECK_ERROR(sb_conv2d_output_size(5, 5, 3, 3, &q, &oh, &ow), SB_ERR_ARG, "stride_w = -2");
    sb_tensor *list[] = {x, w, b, y, dx, dw, db, ybad, x3, xi, w1, w5, b5, big, xt, ya, wa, dba};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
    free(mem);
}

int main(int argc, char **argv) {
    oracle_seed(0x2545f4914f6cdd1dull);
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    mpfr_set_emin(-148);
    mpfr_set_emax(128);
    test_conv_shapes();
    test_conv_specials();
    test_conv_errors();
    return sb_test_finish();
}
