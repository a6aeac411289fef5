/* Tests of 2-D padding (constant, reflect, replicate, circular), forward and
 * backward.
 *
 * The oracle restates the contract differently from src/ref/pad2d.c: the
 * forward index of every mode is computed the way PyTorch documents it
 * (reflect as a bounce over the period 2*(size-1), circular as a remainder,
 * replicate as a clamp), and the backward scatters every output's gradient
 * into per-input lists in (r, s) order and sums each list with the canonical
 * sum restated from its definition (test-local, tests/support/oracle.c).
 * The public op is run in every configuration of tests/support/fastpath.h
 * (ISA level x thread count) and compared bit for bit. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "harness.h"
#include "support/fastpath.h"
#include "support/oracle.h"

static float *F(const sb_tensor *t) { return (float *)t->data; }

/* The input index output o copies, per PyTorch's description; -1 for
 * constant padding. */
static int64_t oracle_source(sb_pad_mode mode, int64_t o, int64_t size, int64_t before) {
    int64_t i = o - before;
    switch (mode) {
    case SB_PAD_REFLECT: {
        if (size == 1) return 0;
        int64_t period = 2 * (size - 1), m = ((i % period) + period) % period;
        return m < size ? m : period - m;
    }
    case SB_PAD_REPLICATE: return i < 0 ? 0 : i >= size ? size - 1 : i;
    case SB_PAD_CIRCULAR: return ((i % size) + size) % size;
    default: return i >= 0 && i < size ? i : -1;
    }
}

typedef struct {
    const char *name;
    int64_t n, c, h, w;
    sb_pad2d_params p;
} pad_case;

static void check_case(const pad_case *k, bool specials) {
    const sb_pad2d_params *p = &k->p;
    int64_t P = k->n * k->c, H = k->h, W = k->w;
    int64_t OH = H + p->top + p->bottom, OW = W + p->left + p->right;
    sb_tensor *x = oracle_tensor(SB_F32, 4, k->n, k->c, H, W);
    sb_tensor *dx = oracle_tensor(SB_F32, 4, k->n, k->c, H, W);
    sb_tensor *y = oracle_tensor(SB_F32, 4, k->n, k->c, OH, OW);
    sb_tensor *dy = oracle_tensor(SB_F32, 4, k->n, k->c, OH, OW);
    for (int64_t i = 0; i < P * H * W; i++)
        F(x)[i] = specials ? sb_test_adversarial(3.0f) : oracle_rand_float();
    for (int64_t i = 0; i < P * OH * OW; i++)
        F(dy)[i] = specials ? sb_test_adversarial(3.0f) : oracle_rand_float();

    /* oracle forward: bits of the source element or of the constant */
    uint32_t *want_y = malloc((size_t)(P * OH * OW + 1) * 4);
    for (int64_t q = 0; q < P; q++)
        for (int64_t r = 0; r < OH; r++)
            for (int64_t s = 0; s < OW; s++) {
                int64_t h = oracle_source(p->mode, r, H, p->top);
                int64_t w = oracle_source(p->mode, s, W, p->left);
                float v = h < 0 || w < 0 ? p->value : F(x)[(q * H + h) * W + w];
                want_y[(q * OH + r) * OW + s] = sb_test_bits(v);
            }
    /* oracle backward: scatter in (r, s) order, canonical sum per input */
    int64_t *len = calloc((size_t)(P * H * W + 1), 8);
    float **item = calloc((size_t)(P * H * W + 1), sizeof(float *));
    for (int64_t q = 0; q < P; q++)
        for (int64_t r = 0; r < OH; r++)
            for (int64_t s = 0; s < OW; s++) {
                int64_t h = oracle_source(p->mode, r, H, p->top);
                int64_t w = oracle_source(p->mode, s, W, p->left);
                if (h < 0 || w < 0) continue;
                int64_t at = (q * H + h) * W + w;
                item[at] = realloc(item[at], (size_t)(len[at] + 1) * 4);
                item[at][len[at]++] = F(dy)[(q * OH + r) * OW + s];
            }
    float *want_dx = malloc((size_t)(P * H * W + 1) * 4);
    long far = 0;
    for (int64_t i = 0; i < P * H * W; i++) {
        want_dx[i] = oracle_canonical_sum(item[i], len[i]);
        double s64 = 0, mag = 0;
        for (int64_t j = 0; j < len[i]; j++) {
            s64 += item[i][j];
            mag += fabs(item[i][j]);
        }
        if (!specials) far += fabs(want_dx[i] - s64) > 8 * FLT_EPSILON * mag;
        CHECK(len[i] >= 1, "%s: input %lld is copied at least once", k->name, (long long)i);
    }
    CHECK(far == 0, "%s: %ld backward sums far from float64", k->name, far);

    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        const char *cn = sb_test_config_name(c);
        sb_tensor_fill(y, 1234.5f);
        sb_tensor_fill(dx, 1234.5f);
        CHECK_OK(sb_pad2d_forward(x, p, y));
        CHECK_OK(sb_pad2d_backward(dy, p, dx));
        long by = 0, bdx = 0;
        for (int64_t i = 0; i < P * OH * OW; i++) by += sb_test_bits(F(y)[i]) != want_y[i];
        for (int64_t i = 0; i < P * H * W; i++) bdx += !oracle_same(F(dx)[i], want_dx[i]);
        CHECK(by == 0 && bdx == 0, "pad %s%s [%s]: %ld forward, %ld backward differ", k->name,
              specials ? " (specials)" : "", cn, by, bdx);
    }
    sb_test_config_reset();
    for (int64_t i = 0; i < P * H * W; i++) free(item[i]);
    free(item), free(len), free(want_y), free(want_dx);
    sb_tensor *list[] = {x, dx, y, dy};
    for (size_t i = 0; i < 4; i++) sb_tensor_free(list[i]);
}

#define PD(l, r, t, b, mode, v) ((sb_pad2d_params){l, r, t, b, mode, v})

static void test_pad_cases(void) {
    const pad_case cases[] = {
        {"reflect 1 (conv 3x3 'same')", 2, 3, 7, 9, PD(1, 1, 1, 1, SB_PAD_REFLECT, 0)},
        {"reflect size-1 asymmetric", 1, 2, 5, 6, PD(5, 2, 4, 1, SB_PAD_REFLECT, 0)},
        {"reflect width 2", 3, 1, 3, 2, PD(1, 1, 2, 0, SB_PAD_REFLECT, 0)},
        {"replicate wide pads", 2, 2, 4, 5, PD(7, 3, 6, 9, SB_PAD_REPLICATE, 0)},
        {"replicate 1x1 input", 2, 3, 1, 1, PD(3, 2, 2, 4, SB_PAD_REPLICATE, 0)},
        {"circular pad = size", 1, 3, 4, 5, PD(5, 5, 4, 4, SB_PAD_CIRCULAR, 0)},
        {"circular 1 (conv)", 2, 4, 8, 8, PD(1, 1, 1, 1, SB_PAD_CIRCULAR, 0)},
        {"circular asymmetric", 2, 2, 6, 3, PD(0, 3, 2, 1, SB_PAD_CIRCULAR, 0)},
        {"constant zeros", 3, 2, 5, 7, PD(2, 1, 0, 3, SB_PAD_CONSTANT, 0)},
        {"constant -0 value", 1, 2, 3, 3, PD(1, 1, 1, 1, SB_PAD_CONSTANT, -0.0f)},
        {"constant nan value", 1, 1, 2, 4, PD(2, 0, 1, 0, SB_PAD_CONSTANT, NAN)},
        {"constant empty width", 1, 2, 3, 0, PD(2, 1, 1, 1, SB_PAD_CONSTANT, 7.0f)},
        {"no padding", 2, 3, 4, 4, PD(0, 0, 0, 0, SB_PAD_REFLECT, 0)},
        {"empty batch", 0, 3, 4, 4, PD(1, 2, 3, 1, SB_PAD_REFLECT, 0)},
        {"one axis only (1-D)", 2, 3, 1, 11, PD(3, 4, 0, 0, SB_PAD_REFLECT, 0)},
        {"many planes", 7, 33, 6, 5, PD(2, 2, 2, 2, SB_PAD_REPLICATE, 0)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_case(&cases[i], false);
        check_case(&cases[i], true);
    }
}

static void test_pad_specials(void) {
    /* replicate: the corner input takes (pad+1)^2 gradients; their canonical
     * sum differs from a sequential one on this data */
    sb_pad2d_params p = PD(3, 0, 3, 0, SB_PAD_REPLICATE, 0);
    sb_tensor *x = oracle_tensor(SB_F32, 4, 1, 1, 2, 2), *y = oracle_tensor(SB_F32, 4, 1, 1, 5, 5);
    sb_tensor *dy = oracle_tensor(SB_F32, 4, 1, 1, 5, 5), *dx = oracle_tensor(SB_F32, 4, 1, 1, 2, 2);
    sb_tensor_fill(dy, 1.0f);
    F(dy)[0] = 1e8f;
    F(dy)[8] = -1e8f; /* (1, 3): in the corner's 4x4 block */
    CHECK_OK(sb_pad2d_backward(dy, &p, dx));
    float seq = 0.0f, terms[16];
    int n = 0;
    for (int r = 0; r < 4; r++)
        for (int s = 0; s < 4; s++) terms[n++] = F(dy)[r * 5 + s];
    for (int i = 0; i < 16; i++) seq += terms[i];
    CHECK_BITS(F(dx)[0], oracle_canonical_sum(terms, 16), "replicate corner: canonical sum");
    CHECK(F(dx)[0] != seq, "the example is order-sensitive (sequential %g, canonical %g)", seq,
          F(dx)[0]);
    /* a single -0 gradient keeps its sign; NaN payloads are copied */
    sb_pad2d_params c = PD(1, 1, 1, 1, SB_PAD_CONSTANT, 0);
    sb_tensor *x1 = oracle_tensor(SB_F32, 4, 1, 1, 1, 1), *y1 = oracle_tensor(SB_F32, 4, 1, 1, 3, 3);
    sb_tensor *dy1 = oracle_tensor(SB_F32, 4, 1, 1, 3, 3), *dx1 = oracle_tensor(SB_F32, 4, 1, 1, 1, 1);
    sb_tensor_fill(dy1, 5.0f);
    F(dy1)[4] = -0.0f;
    CHECK_OK(sb_pad2d_backward(dy1, &c, dx1));
    CHECK_BITS(F(dx1)[0], -0.0f, "constant backward passes -0 through");
    F(x1)[0] = sb_test_from_bits(0x7fc01234u);
    CHECK_OK(sb_pad2d_forward(x1, &c, y1));
    CHECK(sb_test_bits(F(y1)[4]) == 0x7fc01234u, "forward copies a NaN's payload");
    CHECK_BITS(F(y1)[0], 0.0f, "constant 0 pads with +0");
    /* reflect does not repeat the edge: [a b c] padded 2 left -> [c b a b c] */
    sb_pad2d_params rf = PD(2, 0, 0, 0, SB_PAD_REFLECT, 0);
    sb_tensor *x3 = oracle_tensor(SB_F32, 4, 1, 1, 1, 3), *y3 = oracle_tensor(SB_F32, 4, 1, 1, 1, 5);
    F(x3)[0] = 1.0f, F(x3)[1] = 2.0f, F(x3)[2] = 3.0f;
    CHECK_OK(sb_pad2d_forward(x3, &rf, y3));
    CHECK(F(y3)[0] == 3.0f && F(y3)[1] == 2.0f && F(y3)[2] == 1.0f && F(y3)[4] == 3.0f,
          "reflect [1 2 3] by 2: %g %g %g %g %g", F(y3)[0], F(y3)[1], F(y3)[2], F(y3)[3], F(y3)[4]);
    /* value is ignored outside constant mode */
    sb_pad2d_params rv = PD(2, 0, 0, 0, SB_PAD_REFLECT, 99.0f);
    CHECK_OK(sb_pad2d_forward(x3, &rv, y3));
    CHECK(F(y3)[0] == 3.0f, "reflect ignores value");
    sb_tensor *list[] = {x, y, dy, dx, x1, y1, dy1, dx1, x3, y3};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

static void test_pad_errors(void) {
    sb_pad2d_params p = PD(1, 1, 1, 1, SB_PAD_REFLECT, 0);
    sb_tensor *x = oracle_tensor(SB_F32, 4, 2, 3, 4, 4), *y = oracle_tensor(SB_F32, 4, 2, 3, 6, 6);
    sb_tensor *ybad = oracle_tensor(SB_F32, 4, 2, 3, 6, 5), *xi = oracle_tensor(SB_I32, 4, 2, 3, 4, 4);
    sb_tensor *x0 = oracle_tensor(SB_F32, 4, 1, 1, 0, 4), *y0 = oracle_tensor(SB_F32, 4, 1, 1, 2, 6);
    CHECK_OK(sb_pad2d_forward(x, &p, y));
    CHECK_OK(sb_pad2d_backward(y, &p, x));
    CHECK_ERROR(sb_pad2d_forward(NULL, &p, y), SB_ERR_NULL, "x is NULL");
    CHECK_ERROR(sb_pad2d_forward(x, NULL, y), SB_ERR_NULL, "params is NULL");
    CHECK_ERROR(sb_pad2d_forward(x, &p, NULL), SB_ERR_NULL, "y is NULL");
    CHECK_ERROR(sb_pad2d_forward(x, &p, ybad), SB_ERR_SHAPE, "expected [2, 3, 6, 6]");
    CHECK_ERROR(sb_pad2d_forward(xi, &p, y), SB_ERR_DTYPE, "x has dtype int32");
    CHECK_ERROR(sb_pad2d_backward(ybad, &p, x), SB_ERR_SHAPE, "dy has shape");
    sb_pad2d_params q = p;
    q.left = -1;
    CHECK_ERROR(sb_pad2d_forward(x, &q, y), SB_ERR_ARG, "params->left = -1");
    q = p; q.bottom = (int64_t)INT32_MAX + 1;
    CHECK_ERROR(sb_pad2d_forward(x, &q, y), SB_ERR_ARG, "params->bottom");
    q = p; q.mode = (sb_pad_mode)4;
    CHECK_ERROR(sb_pad2d_forward(x, &q, y), SB_ERR_ARG, "params->mode = 4");
    q = PD(4, 0, 1, 1, SB_PAD_REFLECT, 0);
    sb_tensor *yw = oracle_tensor(SB_F32, 4, 2, 3, 6, 8);
    CHECK_ERROR(sb_pad2d_forward(x, &q, yw), SB_ERR_ARG, "must be less than the input width 4");
    q.mode = SB_PAD_CIRCULAR;
    CHECK_OK(sb_pad2d_forward(x, &q, yw)); /* circular allows pad = size */
    q = PD(5, 0, 1, 1, SB_PAD_CIRCULAR, 0);
    sb_tensor *yw5 = oracle_tensor(SB_F32, 4, 2, 3, 6, 9);
    CHECK_ERROR(sb_pad2d_forward(x, &q, yw5), SB_ERR_ARG, "at most the input width 4");
    q.mode = SB_PAD_REPLICATE;
    CHECK_OK(sb_pad2d_forward(x, &q, yw5)); /* replicate pads any width */
    q = PD(1, 1, 1, 1, SB_PAD_REPLICATE, 0);
    CHECK_ERROR(sb_pad2d_forward(x0, &q, y0), SB_ERR_SHAPE, "input height is 0");
    q.mode = SB_PAD_CONSTANT;
    CHECK_OK(sb_pad2d_forward(x0, &q, y0)); /* constant pads an empty axis */
    sb_tensor *ya = NULL;
    int64_t ys[4] = {2, 3, 6, 6};
    sb_tensor *big = oracle_tensor(SB_F32, 1, 2 * 3 * 6 * 6 + 8, 0, 0, 0);
    CHECK_OK(sb_tensor_wrap(&ya, F(big), SB_F32, 4, ys, NULL));
    sb_tensor *xa = NULL;
    int64_t xs[4] = {2, 3, 4, 4};
    CHECK_OK(sb_tensor_wrap(&xa, F(big) + 8, SB_F32, 4, xs, NULL));
    CHECK_ERROR(sb_pad2d_forward(xa, &p, ya), SB_ERR_ARG, "y shares memory with x");
    F(y)[0] = 42.0f;
    q = p; q.top = -3;
    CHECK_ERROR(sb_pad2d_forward(x, &q, y), SB_ERR_ARG, "params->top");
    CHECK_BITS(F(y)[0], 42.0f, "y untouched after an error");
    sb_tensor *list[] = {x, y, ybad, xi, x0, y0, yw, yw5, ya, xa, big};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

int main(int argc, char **argv) {
    oracle_seed(0x5a17c0de2b3e4f61ull);
    sb_test_seed(0x2d358dccaa6c78a5ull);
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_pad_cases();
    test_pad_specials();
    test_pad_errors();
    return sb_test_finish();
}
