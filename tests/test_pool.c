/* Tests of 2-D max and average pooling, forward and backward.
 *
 * The oracle restates the contract differently from src/ref/pool2d.c: max
 * finds the window's first NaN, else its maximum value and then the first
 * position equal to it; the backward passes scatter each output's gradient
 * into per-input lists in (r, s) order and sum each list with the canonical
 * sum restated from its definition; divisors are counted position by
 * position. Output sizes are checked against values PyTorch documents. */
#include <float.h>
#include <math.h>
#include "harness.h"
#include "support/oracle.h"

static float *F(const sb_tensor *t) { return (float *)t->data; }
static int64_t *I(const sb_tensor *t) { return (int64_t *)t->data; }

/* Scatter lists: for each input position, the terms in arrival order. */
typedef struct lists {
    int64_t count, cap;
    int64_t *len;
    float **item;
} lists;
static lists lists_new(int64_t count) {
    lists l = {count, 0, calloc((size_t)count + 1, 8), calloc((size_t)count + 1, sizeof(float *))};
    return l;
}
static void lists_push(lists *l, int64_t at, float v) {
    l->item[at] = realloc(l->item[at], (size_t)(l->len[at] + 1) * 4);
    l->item[at][l->len[at]++] = v;
}
static void lists_free(lists *l) {
    for (int64_t i = 0; i < l->count; i++) free(l->item[i]);
    free(l->len); free(l->item);
}

typedef struct pcase {
    int64_t n, c, h, w;
    sb_pool2d_params p;
} pcase;

/* Output size from PyTorch's rule, written out; 0 if invalid. */
static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t d, bool ceil_mode) {
    if (s == 0) s = k;
    if (d == 0) d = 1;
    double q = (double)(in + 2 * pad - (d * (k - 1) + 1)) / (double)s;
    int64_t o = (int64_t)(ceil_mode ? ceil(q) : floor(q)) + 1;
    if (ceil_mode && (o - 1) * s >= in + pad) o--;
    return o;
}

static void check_pool(const pcase *pc, bool quiet_values) {
    const sb_pool2d_params *p = &pc->p;
    int64_t sh = p->stride_h ? p->stride_h : p->kernel_h, sw = p->stride_w ? p->stride_w : p->kernel_w;
    int64_t dh = p->dilation_h ? p->dilation_h : 1, dw = p->dilation_w ? p->dilation_w : 1;
    int64_t OH = out_size(pc->h, p->kernel_h, p->stride_h, p->pad_h, dh, p->ceil_mode);
    int64_t OW = out_size(pc->w, p->kernel_w, p->stride_w, p->pad_w, dw, p->ceil_mode);
    int64_t oh = -1, ow = -1;
    CHECK_OK(sb_pool2d_output_size(pc->h, pc->w, p, &oh, &ow));
    CHECK(oh == OH && ow == OW, "pool output %lldx%lld, expected %lldx%lld", (long long)oh,
          (long long)ow, (long long)OH, (long long)OW);
    int64_t P = pc->n * pc->c, H = pc->h, W = pc->w;
    sb_tensor *x = oracle_tensor(SB_F32, 4, pc->n, pc->c, H, W), *dx = oracle_tensor(SB_F32, 4, pc->n, pc->c, H, W);
    sb_tensor *y = oracle_tensor(SB_F32, 4, pc->n, pc->c, OH, OW), *dy = oracle_tensor(SB_F32, 4, pc->n, pc->c, OH, OW);
    sb_tensor *ix = oracle_tensor(SB_I64, 4, pc->n, pc->c, OH, OW);
    for (int64_t i = 0; i < P * H * W; i++) {
        /* Few distinct values make ties (and +-0 pairs) common. */
        F(x)[i] = quiet_values ? (float)((int64_t)(oracle_rand() % 5) - 2) : oracle_rand_float();
        if (quiet_values && F(x)[i] == 0.0f && (oracle_rand() & 1)) F(x)[i] = -0.0f;
    }
    for (int64_t i = 0; i < P * OH * OW; i++) F(dy)[i] = oracle_rand_float();
    sb_tensor_fill(dx, NAN);

    long bad = 0;
    /* ---- max forward ---- */
    CHECK_OK(sb_max_pool2d_forward(x, p, y, ix));
    for (int64_t q = 0; q < P; q++)
        for (int64_t r = 0; r < OH; r++)
            for (int64_t s = 0; s < OW; s++) {
                const float *xq = F(x) + q * H * W;
                int64_t want = -1;
                float best = -INFINITY;
                for (int64_t i = 0; i < p->kernel_h && want < 0; i++)
                    for (int64_t j = 0; j < p->kernel_w; j++) {
                        int64_t hh = r * sh - p->pad_h + i * dh, ww = s * sw - p->pad_w + j * dw;
                        if (hh >= 0 && hh < H && ww >= 0 && ww < W && isnan(xq[hh * W + ww])) {
                            want = hh * W + ww;
                            break;
                        }
                    }
                if (want < 0) {
                    for (int64_t i = 0; i < p->kernel_h; i++)
                        for (int64_t j = 0; j < p->kernel_w; j++) {
                            int64_t hh = r * sh - p->pad_h + i * dh, ww = s * sw - p->pad_w + j * dw;
                            if (hh >= 0 && hh < H && ww >= 0 && ww < W) best = fmaxf(best, xq[hh * W + ww]);
                        }
                    for (int64_t i = 0; i < p->kernel_h && want < 0; i++)
                        for (int64_t j = 0; j < p->kernel_w; j++) {
                            int64_t hh = r * sh - p->pad_h + i * dh, ww = s * sw - p->pad_w + j * dw;
                            if (hh >= 0 && hh < H && ww >= 0 && ww < W && xq[hh * W + ww] == best) {
                                want = hh * W + ww;
                                break;
                            }
                        }
                }
                int64_t o = (q * OH + r) * OW + s;
                bad += I(ix)[o] != want || sb_test_bits(F(y)[o]) != sb_test_bits(xq[want]);
            }
    CHECK(bad == 0, "max forward: %ld windows differ", bad);

    /* ---- max backward: scatter in (r, s) order, canonical sum per input ---- */
    CHECK_OK(sb_max_pool2d_backward(dy, ix, p, dx));
    lists L = lists_new(P * H * W);
    for (int64_t q = 0; q < P; q++)
        for (int64_t r = 0; r < OH; r++)
            for (int64_t s = 0; s < OW; s++) {
                int64_t o = (q * OH + r) * OW + s;
                lists_push(&L, q * H * W + I(ix)[o], F(dy)[o]);
            }
    bad = 0;
    long far = 0;
    for (int64_t i = 0; i < P * H * W; i++) {
        bad += !oracle_same(F(dx)[i], oracle_canonical_sum(L.item[i], L.len[i]));
        double s64 = 0, mag = 0;
        for (int64_t k = 0; k < L.len[i]; k++) { s64 += L.item[i][k]; mag += fabs(L.item[i][k]); }
        far += fabs(F(dx)[i] - s64) > 8 * FLT_EPSILON * mag;
    }
    lists_free(&L);
    CHECK(bad == 0 && far == 0, "max backward: %ld inputs differ, %ld far from float64", bad, far);

    /* ---- avg forward: counted divisors (cip 0, 1), then divisor_override ---- */
    sb_pool2d_params pa = *p;
    /* average pooling has no dilation: those cases are max-only */
    for (int cip = 0; cip < 3 && dh == 1 && dw == 1; cip++) {
        static const int64_t overrides[3] = {0, 0, -3};
        pa.count_include_pad = cip == 1;
        pa.divisor_override = overrides[cip];
        sb_tensor_fill(y, NAN);
        sb_tensor_fill(dx, NAN);
        CHECK_OK(sb_avg_pool2d_forward(x, &pa, y));
        CHECK_OK(sb_avg_pool2d_backward(dy, &pa, dx));
        float *div = malloc((size_t)(OH * OW + 1) * 4);
        for (int64_t r = 0; r < OH; r++)
            for (int64_t s = 0; s < OW; s++) {
                int64_t cnt = 0;
                for (int64_t i = 0; i < p->kernel_h; i++)
                    for (int64_t j = 0; j < p->kernel_w; j++) {
                        int64_t hh = r * sh - p->pad_h + i, ww = s * sw - p->pad_w + j;
                        bool inb = hh >= 0 && hh < H && ww >= 0 && ww < W;
                        bool inpad = hh >= -p->pad_h && hh < H + p->pad_h && ww >= -p->pad_w &&
                                     ww < W + p->pad_w;
                        cnt += pa.count_include_pad ? inpad : inb;
                    }
                div[r * OW + s] = pa.divisor_override ? (float)pa.divisor_override : (float)cnt;
            }
        bad = 0;
        far = 0;
        float *buf = malloc((size_t)(p->kernel_h * p->kernel_w + 1) * 4);
        for (int64_t q = 0; q < P; q++)
            for (int64_t r = 0; r < OH; r++)
                for (int64_t s = 0; s < OW; s++) {
                    int64_t len = 0;
                    double s64 = 0, mag = 0;
                    for (int64_t i = 0; i < p->kernel_h; i++)
                        for (int64_t j = 0; j < p->kernel_w; j++) {
                            int64_t hh = r * sh - p->pad_h + i, ww = s * sw - p->pad_w + j;
                            if (hh >= 0 && hh < H && ww >= 0 && ww < W) {
                                buf[len++] = F(x)[(q * H + hh) * W + ww];
                                s64 += buf[len - 1];
                                mag += fabs(buf[len - 1]);
                            }
                        }
                    float got = F(y)[(q * OH + r) * OW + s];
                    bad += !oracle_same(got, oracle_canonical_sum(buf, len) / div[r * OW + s]);
                    /* the sum's error scales with its terms' magnitudes, then the division */
                    far += fabs(got - s64 / div[r * OW + s]) >
                           1e-5 * (mag + 1e-3) / fabs(div[r * OW + s]);
                }
        CHECK(bad == 0 && far == 0,
              "avg forward (variant %d: excl. pad, incl. pad, divisor_override): %ld outputs differ, %ld far",
              cip, bad, far);
        far = 0;
        /* avg backward: scatter dy/div to every in-bounds position in order. */
        lists A = lists_new(P * H * W);
        for (int64_t q = 0; q < P; q++)
            for (int64_t r = 0; r < OH; r++)
                for (int64_t s = 0; s < OW; s++)
                    for (int64_t i = 0; i < p->kernel_h; i++)
                        for (int64_t j = 0; j < p->kernel_w; j++) {
                            int64_t hh = r * sh - p->pad_h + i, ww = s * sw - p->pad_w + j;
                            if (hh >= 0 && hh < H && ww >= 0 && ww < W)
                                lists_push(&A, (q * H + hh) * W + ww,
                                           F(dy)[(q * OH + r) * OW + s] / div[r * OW + s]);
                        }
        /* The scatter above visits (r, s) in order for each input, so each
         * list is already in the contract's order. */
        bad = 0;
        for (int64_t i = 0; i < P * H * W; i++) {
            bad += !oracle_same(F(dx)[i], oracle_canonical_sum(A.item[i], A.len[i]));
            double s64 = 0, mag = 0;
            for (int64_t k = 0; k < A.len[i]; k++) { s64 += A.item[i][k]; mag += fabs(A.item[i][k]); }
            far += fabs(F(dx)[i] - s64) > 8 * FLT_EPSILON * mag;
        }
        lists_free(&A);
        CHECK(bad == 0 && far == 0, "avg backward (variant %d): %ld differ, %ld far", cip,
              bad, far);
        free(div);
        free(buf);
    }
    sb_tensor *list[] = {x, dx, y, dy, ix};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

static void test_pool_shapes(void) {
    static const pcase cases[] = {
        {2, 3, 7, 9, {3, 3, 2, 2, 1, 1, false, true, 0, 0, 0}},
        {1, 2, 8, 8, {2, 2, 0, 0, 0, 0, false, true, 0, 0, 0}},   /* stride 0 = kernel */
        {1, 1, 9, 7, {3, 2, 1, 1, 1, 1, false, true, 0, 0, 0}},   /* heavy overlap */
        {2, 2, 5, 5, {2, 2, 2, 2, 0, 0, true, true, 0, 0, 0}},    /* ceil: windows past the edge */
        {1, 3, 6, 7, {3, 3, 2, 2, 1, 1, true, false, 0, 0, 0}},
        {1, 1, 5, 5, {3, 3, 3, 3, 1, 1, true, true, 0, 0, 0}},    /* ceil, last window dropped */
        {3, 1, 1, 1, {1, 1, 1, 1, 0, 0, false, true, 0, 0, 0}},   /* 1x1 */
        {1, 2, 4, 11, {4, 5, 1, 3, 2, 2, false, true, 0, 0, 0}},  /* pad = kernel/2 */
        {1, 1, 40, 40, {7, 7, 1, 1, 3, 3, false, true, 0, 0, 0}}, /* 49 overlapping windows: > 32 terms */
        {0, 2, 4, 4, {2, 2, 0, 0, 0, 0, false, true, 0, 0, 0}},   /* empty batch */
        /* dilation (max only): taps d apart, windows overlapping and interleaved */
        {2, 3, 9, 11, {3, 3, 1, 1, 1, 1, false, true, 2, 2, 0}},
        {1, 2, 13, 10, {3, 2, 2, 1, 1, 1, true, true, 3, 2, 0}},  /* ceil, d_h != d_w */
        {1, 1, 7, 7, {2, 2, 2, 2, 1, 1, true, true, 4, 4, 0}},    /* windows in the padding */
        {2, 1, 6, 17, {4, 3, 3, 2, 2, 0, false, true, 1, 5, 0}},  /* one axis dilated */
        {1, 1, 40, 40, {5, 5, 1, 1, 2, 2, false, true, 3, 3, 0}}, /* > 32 terms per input */
        {0, 2, 9, 9, {3, 3, 0, 0, 1, 1, false, true, 2, 2, 0}},   /* empty batch */
    };
    int n = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < n; i++) {
        check_pool(&cases[i], false);
        check_pool(&cases[i], true);
    }
}

static void test_pool_specials(void) {
    sb_pool2d_params p = SB_POOL2D_PARAMS(2, 2);
    sb_tensor *x = oracle_tensor(SB_F32, 4, 1, 1, 2, 2), *y = oracle_tensor(SB_F32, 4, 1, 1, 1, 1);
    sb_tensor *ix = oracle_tensor(SB_I64, 4, 1, 1, 1, 1);
    /* +0 and -0 tie: the first in (i, j) order wins. */
    float a[4] = {-0.0f, 0.0f, -1.0f, -2.0f};
    memcpy(F(x), a, 16);
    CHECK_OK(sb_max_pool2d_forward(x, &p, y, ix));
    CHECK_BITS(F(y)[0], -0.0f, "-0 before +0 wins");
    CHECK(I(ix)[0] == 0, "index of -0 is 0, got %lld", (long long)I(ix)[0]);
    F(x)[0] = 0.0f; F(x)[1] = -0.0f;
    CHECK_OK(sb_max_pool2d_forward(x, &p, y, ix));
    CHECK_BITS(F(y)[0], 0.0f, "+0 before -0 wins");
    /* Equal maxima: the first wins. */
    float b[4] = {1.0f, 3.0f, 3.0f, 2.0f};
    memcpy(F(x), b, 16);
    CHECK_OK(sb_max_pool2d_forward(x, &p, y, ix));
    CHECK(I(ix)[0] == 1, "first maximum wins, got index %lld", (long long)I(ix)[0]);
    /* NaN wins, and the first NaN is recorded. */
    float c[4] = {5.0f, NAN, INFINITY, -NAN};
    memcpy(F(x), c, 16);
    CHECK_OK(sb_max_pool2d_forward(x, &p, y, ix));
    CHECK(isnan(F(y)[0]) && I(ix)[0] == 1, "first NaN wins, index %lld", (long long)I(ix)[0]);
    CHECK(sb_test_bits(F(y)[0]) == sb_test_bits(c[1]), "y copies the NaN's bits");
    float d[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    memcpy(F(x), d, 16);
    CHECK_OK(sb_max_pool2d_forward(x, &p, y, ix));
    CHECK(F(y)[0] == -INFINITY && I(ix)[0] == 0, "all -inf: first element");
    /* Padding never wins: all inputs -5 with padding 1. */
    sb_pool2d_params pp = {3, 3, 1, 1, 1, 1, false, true, 0, 0, 0};
    sb_tensor *x3 = oracle_tensor(SB_F32, 4, 1, 1, 3, 3), *y3 = oracle_tensor(SB_F32, 4, 1, 1, 3, 3);
    sb_tensor_fill(x3, -5.0f);
    CHECK_OK(sb_max_pool2d_forward(x3, &pp, y3, NULL));
    CHECK_BITS(F(y3)[0], -5.0f, "padding is not a zero candidate");
    /* Avg with padding: corner window holds 4 in-bounds elements of 9. */
    for (int i = 0; i < 9; i++) F(x3)[i] = (float)(i + 1);
    CHECK_OK(sb_avg_pool2d_forward(x3, &pp, y3));
    CHECK_BITS(F(y3)[0], (1.0f + 2.0f + 4.0f + 5.0f) / 9.0f, "count_include_pad divides by 9");
    pp.count_include_pad = false;
    CHECK_OK(sb_avg_pool2d_forward(x3, &pp, y3));
    CHECK_BITS(F(y3)[0], 12.0f / 4.0f, "excluding pad divides by 4");
    /* All -0 window: the canonical sum keeps -0, and -0 / 4 = -0. */
    sb_tensor_fill(x, -0.0f);
    CHECK_OK(sb_avg_pool2d_forward(x, &p, y));
    CHECK_BITS(F(y)[0], -0.0f, "avg of -0 is -0");
    /* ceil mode: 5x5, k2 s2: 3x3 outputs, the last window holds one row and
     * column, and its divisor counts only positions inside the input. */
    sb_pool2d_params pc = {2, 2, 2, 2, 0, 0, true, true, 0, 0, 0};
    sb_tensor *x5 = oracle_tensor(SB_F32, 4, 1, 1, 5, 5), *y5 = oracle_tensor(SB_F32, 4, 1, 1, 3, 3);
    for (int i = 0; i < 25; i++) F(x5)[i] = (float)i;
    CHECK_OK(sb_avg_pool2d_forward(x5, &pc, y5));
    CHECK_BITS(F(y5)[8], 24.0f, "ceil-mode corner: x[4][4] / 1");
    CHECK_BITS(F(y5)[2], (4.0f + 9.0f) / 2.0f, "ceil-mode right edge: 2 positions");
    int64_t oh, ow;
    CHECK_OK(sb_pool2d_output_size(5, 5, &pc, &oh, &ow));
    CHECK(oh == 3 && ow == 3, "ceil 5/2");
    sb_pool2d_params pd = {3, 3, 3, 3, 1, 1, true, true, 0, 0, 0};
    CHECK_OK(sb_pool2d_output_size(5, 5, &pd, &oh, &ow));
    CHECK(oh == 2 && ow == 2, "ceil mode drops a window starting in the right padding: %lld", (long long)oh);
    sb_pool2d_params pe = {3, 3, 2, 2, 1, 1, true, true, 0, 0, 0};
    CHECK_OK(sb_pool2d_output_size(6, 6, &pe, &oh, &ow));
    CHECK(oh == 4 && ow == 4, "ceil(5/2)+1 = 4");
    pe.ceil_mode = false;
    CHECK_OK(sb_pool2d_output_size(6, 6, &pe, &oh, &ow));
    CHECK(oh == 3, "floor(5/2)+1 = 3");

    /* Max backward order: one element is the max of 9 overlapping windows
     * (k3 s1 p1 on 3x3 with a dominant centre); its dx is the canonical sum
     * of the 9 grads in (r, s) order, which differs from a sequential sum. */
    sb_pool2d_params po = {3, 3, 1, 1, 1, 1, false, true, 0, 0, 0};
    sb_tensor *xo = oracle_tensor(SB_F32, 4, 1, 1, 3, 3), *yo = oracle_tensor(SB_F32, 4, 1, 1, 3, 3);
    sb_tensor *io = oracle_tensor(SB_I64, 4, 1, 1, 3, 3), *dyo = oracle_tensor(SB_F32, 4, 1, 1, 3, 3);
    sb_tensor *dxo = oracle_tensor(SB_F32, 4, 1, 1, 3, 3);
    F(xo)[4] = 10.0f;
    float g[9] = {1e8f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, -1e8f};
    memcpy(F(dyo), g, sizeof g);
    CHECK_OK(sb_max_pool2d_forward(xo, &po, yo, io));
    CHECK_OK(sb_max_pool2d_backward(dyo, io, &po, dxo));
    float seq = 0.0f;
    for (int i = 0; i < 9; i++) seq += g[i];
    /* Lanes 0..8; fold 8: lane0 = 1e8 + -1e8 = 0; the seven ones add to 7. */
    CHECK_BITS(F(dxo)[4], 7.0f, "max backward uses the canonical sum");
    CHECK(seq != 7.0f, "example is order-sensitive (sequential: %g)", seq);
    CHECK_BITS(F(dxo)[0], 0.0f, "non-argmax inputs get +0");
    /* A single -0 gradient keeps its sign (canonical sum of one element). */
    sb_tensor_fill(dyo, -0.0f);
    F(xo)[4] = 0.0f;
    F(xo)[0] = 1.0f; /* max of window (0,0), (0,1), (1,0), (1,1) */
    CHECK_OK(sb_max_pool2d_forward(xo, &po, yo, io));
    CHECK_OK(sb_max_pool2d_backward(dyo, io, &po, dxo));
    CHECK_BITS(F(dxo)[0], -0.0f, "sum of -0 grads is -0");
    /* One 91x91 window: the avg sum has 8281 > 8192 terms (two levels). */
    sb_pool2d_params pb = SB_POOL2D_PARAMS(91, 91);
    sb_tensor *xb = oracle_tensor(SB_F32, 4, 1, 1, 91, 91), *yb = oracle_tensor(SB_F32, 4, 1, 1, 1, 1);
    for (int i = 0; i < 91 * 91; i++) F(xb)[i] = oracle_rand_float();
    CHECK_OK(sb_avg_pool2d_forward(xb, &pb, yb));
    CHECK_BITS(F(yb)[0], oracle_canonical_sum(F(xb), 91 * 91) / 8281.0f, "avg over 8281 elements");
    /* divisor_override replaces every window's divisor, padded corner included */
    sb_pool2d_params pv = {3, 3, 1, 1, 1, 1, false, true, 0, 0, 7};
    for (int i = 0; i < 9; i++) F(x3)[i] = (float)(i + 1);
    CHECK_OK(sb_avg_pool2d_forward(x3, &pv, y3));
    CHECK_BITS(F(y3)[0], (1.0f + 2.0f + 4.0f + 5.0f) / 7.0f, "divisor_override 7 at a corner");
    CHECK_BITS(F(y3)[4], 45.0f / 7.0f, "divisor_override 7 in the middle");
    /* dilation 2: the window of output 0 holds x[0][0], x[0][2], x[2][0], x[2][2] */
    sb_pool2d_params pdl = {2, 2, 1, 1, 0, 0, false, true, 2, 2, 0};
    sb_tensor *yl = oracle_tensor(SB_F32, 4, 1, 1, 1, 1);
    float e[9] = {1.0f, 9.0f, 2.0f, 9.0f, 9.0f, 9.0f, 3.0f, 9.0f, 0.5f};
    memcpy(F(x3), e, sizeof e);
    CHECK_OK(sb_max_pool2d_forward(x3, &pdl, yl, ix));
    CHECK(F(yl)[0] == 3.0f && I(ix)[0] == 6, "dilated max skips the 9s: %g at %lld", F(yl)[0],
          (long long)I(ix)[0]);
    sb_tensor *list[] = {x, y, ix, x3, y3, x5, y5, xo, yo, io, dyo, dxo, xb, yb, yl};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

static void test_pool_errors(void) {
    sb_pool2d_params p = {3, 3, 2, 2, 1, 1, false, true, 0, 0, 0};
    sb_tensor *x = oracle_tensor(SB_F32, 4, 2, 3, 7, 7), *y = oracle_tensor(SB_F32, 4, 2, 3, 4, 4);
    sb_tensor *ix = oracle_tensor(SB_I64, 4, 2, 3, 4, 4), *dx = oracle_tensor(SB_F32, 4, 2, 3, 7, 7);
    sb_tensor *ybad = oracle_tensor(SB_F32, 4, 2, 3, 3, 3), *x3 = oracle_tensor(SB_F32, 3, 3, 7, 7, 0);
    sb_tensor *xi = oracle_tensor(SB_I32, 4, 2, 3, 7, 7), *ixf = oracle_tensor(SB_F32, 4, 2, 3, 4, 4);
    sb_tensor *x0 = oracle_tensor(SB_F32, 4, 1, 1, 0, 4), *y0 = oracle_tensor(SB_F32, 4, 1, 1, 1, 1);
    CHECK_OK(sb_max_pool2d_forward(x, &p, y, ix));
    CHECK_OK(sb_max_pool2d_backward(y, ix, &p, dx));
    CHECK_OK(sb_avg_pool2d_forward(x, &p, y));
    CHECK_OK(sb_avg_pool2d_backward(y, &p, dx));
    CHECK_ERROR(sb_max_pool2d_forward(NULL, &p, y, ix), SB_ERR_NULL, "sb_max_pool2d_forward: x is NULL");
    CHECK_ERROR(sb_max_pool2d_forward(x, NULL, y, ix), SB_ERR_NULL, "params is NULL");
    CHECK_ERROR(sb_max_pool2d_forward(x, &p, NULL, ix), SB_ERR_NULL, "y is NULL");
    CHECK_ERROR(sb_max_pool2d_forward(x, &p, ybad, ix), SB_ERR_SHAPE, "y has shape [2, 3, 3, 3], expected [2, 3, 4, 4]");
    CHECK_ERROR(sb_max_pool2d_forward(x3, &p, y, ix), SB_ERR_SHAPE, "x must have 4 dimensions");
    CHECK_ERROR(sb_max_pool2d_forward(xi, &p, y, ix), SB_ERR_DTYPE, "x has dtype int32");
    CHECK_ERROR(sb_max_pool2d_forward(x, &p, y, ixf), SB_ERR_DTYPE, "indices has dtype float32");
    CHECK_ERROR(sb_max_pool2d_forward(x, &p, y, ybad), SB_ERR_DTYPE, "indices");
    CHECK_ERROR(sb_max_pool2d_forward(x0, &p, y0, NULL), SB_ERR_SHAPE, "input height is 0");
    sb_pool2d_params q = p;
    q.kernel_h = 0;
    CHECK_ERROR(sb_max_pool2d_forward(x, &q, y, ix), SB_ERR_ARG, "params->kernel_h = 0");
    q = p; q.stride_w = -1;
    CHECK_ERROR(sb_avg_pool2d_forward(x, &q, y), SB_ERR_ARG, "params->stride_w = -1");
    q = p; q.pad_h = 2;
    CHECK_ERROR(sb_avg_pool2d_forward(x, &q, y), SB_ERR_ARG, "at most half the kernel");
    q = p; q.pad_w = -1;
    CHECK_ERROR(sb_avg_pool2d_forward(x, &q, y), SB_ERR_ARG, "params->pad_w = -1");
    q = p; q.kernel_w = 10;
    CHECK_ERROR(sb_avg_pool2d_forward(x, &q, y), SB_ERR_SHAPE, "kernel width (10) is larger");
    sb_tensor *xt = NULL;
    CHECK_OK(sb_tensor_transpose(&xt, x, 2, 3));
    CHECK_ERROR(sb_avg_pool2d_forward(xt, &p, y), SB_ERR_ARG, "x must be contiguous");
    sb_tensor *ya = NULL;
    int64_t ys[4] = {2, 3, 4, 4};
    CHECK_OK(sb_tensor_wrap(&ya, F(x) + 5, SB_F32, 4, ys, NULL));
    CHECK_ERROR(sb_avg_pool2d_forward(x, &p, ya), SB_ERR_ARG, "y shares memory with x");
    CHECK_ERROR(sb_avg_pool2d_backward(NULL, &p, dx), SB_ERR_NULL, "dy is NULL");
    CHECK_ERROR(sb_avg_pool2d_backward(y, &p, NULL), SB_ERR_NULL, "dx is NULL");
    CHECK_ERROR(sb_avg_pool2d_backward(ybad, &p, dx), SB_ERR_SHAPE, "dy has shape");
    CHECK_ERROR(sb_max_pool2d_backward(y, NULL, &p, dx), SB_ERR_NULL, "indices is NULL");
    CHECK_ERROR(sb_max_pool2d_backward(y, ixf, &p, dx), SB_ERR_DTYPE, "indices has dtype float32");
    CHECK_ERROR(sb_max_pool2d_backward(y, ix, NULL, dx), SB_ERR_NULL, "params is NULL");
    /* Indices outside their window are rejected before anything is written. */
    F(dx)[0] = 42.0f;
    int64_t keep = I(ix)[5];
    I(ix)[5] = 0; /* window (1, 1) covers rows/cols 1..3 */
    CHECK_ERROR(sb_max_pool2d_backward(y, ix, &p, dx), SB_ERR_RANGE, "outside its window");
    I(ix)[5] = 2 * 7 + 4; /* row 2 inside, column 4 one past the window's last */
    CHECK_ERROR(sb_max_pool2d_backward(y, ix, &p, dx), SB_ERR_RANGE, "= 18 is outside");
    I(ix)[5] = 4 * 7 + 2; /* row 4 one past the window's last */
    CHECK_ERROR(sb_max_pool2d_backward(y, ix, &p, dx), SB_ERR_RANGE, "= 30 is outside");
    I(ix)[5] = -1;
    CHECK_ERROR(sb_max_pool2d_backward(y, ix, &p, dx), SB_ERR_RANGE, "= -1 is outside");
    I(ix)[5] = 49;
    CHECK_ERROR(sb_max_pool2d_backward(y, ix, &p, dx), SB_ERR_RANGE, "= 49 is outside");
    CHECK_BITS(F(dx)[0], 42.0f, "dx untouched after a range error");
    I(ix)[5] = keep;
    int64_t oh, ow;
    CHECK_ERROR(sb_pool2d_output_size(5, 5, NULL, &oh, &ow), SB_ERR_NULL, "params is NULL");
    CHECK_ERROR(sb_pool2d_output_size(5, 5, &p, &oh, NULL), SB_ERR_NULL, "out_h or out_w");
    CHECK_ERROR(sb_pool2d_output_size(0, 5, &p, &oh, &ow), SB_ERR_SHAPE, "input height is 0");

    /* dilation is max pooling's, divisor_override average pooling's */
    q = p; q.dilation_h = 2;
    CHECK_ERROR(sb_avg_pool2d_forward(x, &q, y), SB_ERR_ARG, "average pooling has no dilation");
    CHECK_ERROR(sb_avg_pool2d_backward(y, &q, dx), SB_ERR_ARG, "average pooling has no dilation");
    q = p; q.divisor_override = 4;
    CHECK_ERROR(sb_max_pool2d_forward(x, &q, y, ix), SB_ERR_ARG, "divisor_override = 4 must be 0");
    CHECK_ERROR(sb_max_pool2d_backward(y, ix, &q, dx), SB_ERR_ARG, "divisor_override = 4 must be 0");
    q = p; q.dilation_w = -1;
    CHECK_ERROR(sb_max_pool2d_forward(x, &q, y, ix), SB_ERR_ARG, "params->dilation_w = -1");
    q = p; q.divisor_override = (INT64_C(1) << 24) + 1;
    CHECK_ERROR(sb_avg_pool2d_forward(x, &q, y), SB_ERR_ARG, "divisor_override = 16777217");
    q = p; q.dilation_h = 5; /* extent 11 > 7 + 2 */
    CHECK_ERROR(sb_max_pool2d_forward(x, &q, y, ix), SB_ERR_SHAPE, "dilated extent 11");
    /* width 2, k 2, pad 1, dilation 3: the only window's taps are -1 and 2 */
    sb_pool2d_params pz = {2, 2, 1, 1, 1, 1, false, true, 3, 3, 0};
    CHECK_ERROR(sb_pool2d_output_size(2, 2, &pz, &oh, &ow), SB_ERR_SHAPE, "holds no input element");
    /* a dilated window's index must be one of its taps, not a position between them */
    sb_pool2d_params pt = {2, 2, 1, 1, 0, 0, false, true, 2, 2, 0};
    sb_tensor *xd = oracle_tensor(SB_F32, 4, 1, 1, 5, 5), *yd = oracle_tensor(SB_F32, 4, 1, 1, 3, 3);
    sb_tensor *id = oracle_tensor(SB_I64, 4, 1, 1, 3, 3), *dxd = oracle_tensor(SB_F32, 4, 1, 1, 5, 5);
    CHECK_OK(sb_max_pool2d_forward(xd, &pt, yd, id));
    CHECK_OK(sb_max_pool2d_backward(yd, id, &pt, dxd));
    I(id)[0] = 1; /* window (0, 0) taps columns 0 and 2 */
    CHECK_ERROR(sb_max_pool2d_backward(yd, id, &pt, dxd), SB_ERR_RANGE, "outside its window");
    I(id)[0] = 5; /* row 1 lies between the taps 0 and 2 */
    CHECK_ERROR(sb_max_pool2d_backward(yd, id, &pt, dxd), SB_ERR_RANGE, "outside its window");
    I(id)[0] = 12;
    CHECK_OK(sb_max_pool2d_backward(yd, id, &pt, dxd));
    sb_tensor *list[] = {x, y, ix, dx, ybad, x3, xi, ixf, x0, y0, xt, ya, xd, yd, id, dxd};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

int main(int argc, char **argv) {
    oracle_seed(0xd1b54a32d192ed03ull);
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_pool_shapes();
    test_pool_specials();
    test_pool_errors();
    return sb_test_finish();
}
