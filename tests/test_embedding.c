/* Tests for the C embedding lookup (sb_embedding_forward/backward,
 * sb_ag_embedding; contract section 18, "Embedding"):
 *   - the forward copies weight rows bit for bit, for indices of any rank
 *     (0-d, 2-D, empty) with duplicates;
 *   - the weight gradient equals a restatement of the contract written here
 *     (+0, then dy's rows added one at a time in ascending position, the
 *     padding positions left out), on data where another order gives other
 *     bits, at every ISA level x thread count;
 *   - sb_ag_embedding's gradient is the tensor backward's bits, and close to
 *     the float64 gradient;
 *   - bad indices and padding_idx are refused with nothing written. */
#include <math.h>
#include "harness.h"
#include "support/fastpath.h"

static uint64_t rng_state = 0x1234567887654321ull;
static uint64_t rng_next(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}
static float urand(void) { return (float)(rng_next() >> 40) * 0x1p-23f - 1.0f; }

static sb_tensor *mk(sb_dtype dt, int nd, const int64_t *shape) {
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, dt, nd, shape) != SB_OK) {
        fprintf(stderr, "sb_tensor_new: %s\n", sb_last_error());
        exit(2);
    }
    return t;
}
static float *F(const sb_tensor *t) { return (float *)t->data; }
static int64_t *I(const sb_tensor *t) { return (int64_t *)t->data; }

/* dweight restated: +0, then row adds in ascending position, pad left out. */
static void model_backward(const float *dy, const int64_t *ix, int64_t K, int64_t pad, float *dw,
                           int64_t num, int64_t D) {
    for (int64_t i = 0; i < num * D; i++) dw[i] = 0.0f;
    for (int64_t k = 0; k < K; k++) {
        if (ix[k] == pad) continue;
        for (int64_t j = 0; j < D; j++) dw[ix[k] * D + j] = dw[ix[k] * D + j] + dy[k * D + j];
    }
}

static int64_t mismatches(const float *a, const float *b, int64_t n) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += sb_test_bits(a[i]) != sb_test_bits(b[i]);
    return bad;
}

static void test_forward_and_backward(void) {
    enum { NUM = 7, D = 5 };
    struct { int nd; int64_t shape[3]; int64_t pad; } cases[] = {
        {2, {4, 9}, SB_NO_PADDING}, {2, {4, 9}, 2}, {2, {4, 9}, -1}, {1, {0}, SB_NO_PADDING},
        {0, {0}, 3}, {3, {2, 3, 33}, 0}, {1, {200}, SB_NO_PADDING},
    };
    sb_tensor *w = mk(SB_F32, 2, (const int64_t[]){NUM, D});
    for (int64_t i = 0; i < NUM * D; i++) F(w)[i] = urand();
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        sb_tensor *ix = mk(SB_I64, cases[c].nd, cases[c].shape);
        int64_t K = sb_tensor_numel(ix), yshape[4];
        for (int i = 0; i < cases[c].nd; i++) yshape[i] = cases[c].shape[i];
        yshape[cases[c].nd] = D;
        /* few distinct rows: many duplicates; the first rows repeat most */
        for (int64_t k = 0; k < K; k++) I(ix)[k] = (int64_t)(rng_next() % (k % 3 ? NUM : 3));
        sb_tensor *y = mk(SB_F32, cases[c].nd + 1, yshape), *dy = mk(SB_F32, cases[c].nd + 1, yshape);
        sb_tensor *dw = mk(SB_F32, 2, (const int64_t[]){NUM, D});
        /* magnitudes that make the order of the adds visible */
        for (int64_t i = 0; i < K * D; i++) F(dy)[i] = urand() * (i % 5 ? 1.0f : 4096.0f);
        float want[NUM * D];
        int64_t pad = cases[c].pad == SB_NO_PADDING ? -1 : (cases[c].pad + NUM) % NUM;
        model_backward(F(dy), I(ix), K, pad, want, NUM, D);
        if (K >= 100) { /* the same adds in descending position give other bits */
            float rev[NUM * D];
            for (int64_t i = 0; i < NUM * D; i++) rev[i] = 0.0f;
            for (int64_t k = K - 1; k >= 0; k--)
                for (int64_t j = 0; j < D; j++) rev[I(ix)[k] * D + j] += F(dy)[k * D + j];
            CHECK(mismatches(rev, want, NUM * D) > 0, "case %zu: the order is not visible", c);
        }
        for (int cf = 0; cf < sb_test_config_count(); cf++) {
            sb_test_config_apply(cf);
            sb_tensor_fill(y, 7.0f);
            sb_tensor_fill(dw, 7.0f);
            CHECK_OK(sb_embedding_forward(w, ix, y));
            int64_t bad = 0;
            for (int64_t k = 0; k < K; k++)
                bad += mismatches(F(y) + k * D, F(w) + I(ix)[k] * D, D);
            CHECK(bad == 0, "case %zu [%s]: %lld forward elements are not the weight's bits", c,
                  sb_test_config_name(cf), (long long)bad);
            CHECK_OK(sb_embedding_backward(dy, ix, cases[c].pad, dw));
            CHECK(mismatches(F(dw), want, NUM * D) == 0,
                  "case %zu [%s]: dweight differs from the ordered adds", c, sb_test_config_name(cf));
            if (pad >= 0) {
                int zero = 0;
                for (int j = 0; j < D; j++) zero += sb_test_bits(F(dw)[pad * D + j]) == 0u;
                CHECK(zero == D, "case %zu: the padding row's gradient is not +0", c);
            }
        }
        sb_test_config_reset();
        sb_tensor_free(ix); sb_tensor_free(y); sb_tensor_free(dy); sb_tensor_free(dw);
    }
    sb_tensor_free(w);
}

static void test_autograd(void) {
    enum { NUM = 6, D = 4, K = 10 };
    sb_tensor *w = mk(SB_F32, 2, (const int64_t[]){NUM, D}), *gw = mk(SB_F32, 2, (const int64_t[]){NUM, D});
    sb_tensor *ix = mk(SB_I64, 2, (const int64_t[]){2, K / 2});
    sb_tensor *t = mk(SB_F32, 3, (const int64_t[]){2, K / 2, D});
    for (int64_t i = 0; i < NUM * D; i++) F(w)[i] = urand();
    for (int64_t i = 0; i < K * D; i++) F(t)[i] = urand();
    for (int64_t k = 0; k < K; k++) I(ix)[k] = (k * 5) % NUM;
    sb_graph *g = NULL;
    CHECK_OK(sb_graph_new(&g));
    sb_variable *vw, *y, *loss;
    CHECK_OK(sb_graph_param(g, w, gw, &vw));
    CHECK_OK(sb_ag_embedding(g, vw, ix, 1, &y));
    CHECK(y && y->value->ndim == 3 && y->value->shape[2] == D, "y has shape indices + (D)");
    CHECK_OK(sb_ag_mse(g, y, t, SB_LOSS_SUM, &loss));
    CHECK_OK(sb_graph_backward(g, loss));
    /* the expected bits: mse's backward, then the embedding's */
    sb_tensor *dy = mk(SB_F32, 3, (const int64_t[]){2, K / 2, D}), *one = mk(SB_F32, 0, NULL);
    sb_tensor *dw = mk(SB_F32, 2, (const int64_t[]){NUM, D});
    F(one)[0] = 1.0f;
    CHECK_OK(sb_mse_backward(y->value, t, SB_LOSS_SUM, one, dy, NULL));
    CHECK_OK(sb_embedding_backward(dy, ix, 1, dw));
    CHECK(mismatches(F(gw), F(dw), NUM * D) == 0, "sb_ag_embedding's gradient is not the tensor "
          "backward's");
    /* float64: dL/dw[r] = sum over positions naming r (not the padding row 1) of 2 (w[r] - t) */
    double worst = 0;
    for (int64_t r = 0; r < NUM; r++)
        for (int64_t j = 0; j < D; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                if (I(ix)[k] == r && r != 1) s += 2.0 * ((double)F(w)[r * D + j] - F(t)[k * D + j]);
            worst = fmax(worst, fabs(s - F(gw)[r * D + j]));
        }
    CHECK(worst < 1e-5, "gradient vs float64: worst error %g", worst);
    sb_graph_free(g);
    sb_tensor *all[] = {w, gw, ix, t, dy, one, dw};
    for (size_t i = 0; i < 7; i++) sb_tensor_free(all[i]);
}

static void test_bad_inputs(void) {
    sb_tensor *w = mk(SB_F32, 2, (const int64_t[]){3, 2}), *ix = mk(SB_I64, 1, (const int64_t[]){4});
    sb_tensor *y = mk(SB_F32, 2, (const int64_t[]){4, 2}), *dw = mk(SB_F32, 2, (const int64_t[]){3, 2});
    sb_tensor *y3 = mk(SB_F32, 2, (const int64_t[]){4, 3});
    for (int k = 0; k < 4; k++) I(ix)[k] = k % 3;
    sb_tensor_fill(y, 9.0f);
    sb_tensor_fill(dw, 9.0f);
    I(ix)[2] = 3;
    CHECK_ERROR(sb_embedding_forward(w, ix, y), SB_ERR_RANGE, "indices element 2 is 3");
    CHECK_ERROR(sb_embedding_backward(y, ix, SB_NO_PADDING, dw), SB_ERR_RANGE, "indices element 2");
    I(ix)[2] = -1;
    CHECK_ERROR(sb_embedding_forward(w, ix, y), SB_ERR_RANGE, "is -1");
    I(ix)[2] = 0;
    CHECK_ERROR(sb_embedding_backward(y, ix, 3, dw), SB_ERR_ARG, "padding_idx = 3");
    CHECK_ERROR(sb_embedding_backward(y, ix, -4, dw), SB_ERR_ARG, "padding_idx = -4");
    CHECK_ERROR(sb_embedding_forward(w, ix, y3), SB_ERR_SHAPE, "out must have shape");
    CHECK_ERROR(sb_embedding_forward(w, y, y), SB_ERR_DTYPE, "indices");
    int untouched = 0;
    for (int i = 0; i < 8; i++) untouched += F(y)[i] == 9.0f;
    for (int i = 0; i < 6; i++) untouched += F(dw)[i] == 9.0f;
    CHECK(untouched == 14, "a refused call wrote (%d of 14 untouched)", untouched);
    sb_tensor *all[] = {w, ix, y, dw, y3};
    for (size_t i = 0; i < 5; i++) sb_tensor_free(all[i]);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_forward_and_backward();
    test_autograd();
    test_bad_inputs();
    return sb_test_finish();
}
