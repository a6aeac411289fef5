/* Tests for bincount and histc (contract section 18, "bincount and histc").
 *
 * The expected results come from restatements written here: bincount's
 * counts and its weighted sums added one at a time in ascending position,
 * and histc's bin of each element computed with explicit float32 steps.
 * Checked at every ISA level and thread count of this machine (nothing may
 * depend on them), with odd and empty inputs, NaN/inf, elements on the bin
 * edges, the min == max range rule, and every refusal with nothing
 * written. */
#include <inttypes.h>
#include <math.h>
#include "harness.h"
#include "support/fastpath.h"

static sb_tensor *tnew(sb_dtype dt, int nd, const int64_t *shape) {
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, dt, nd, shape) != SB_OK) { fprintf(stderr, "%s\n", sb_last_error()); exit(2); }
    return t;
}
static float *F(const sb_tensor *t) { return t->data; }
static int64_t *L(const sb_tensor *t) { return t->data; }

static void test_bincount(void) {
    enum { N = 1000, BINS = 13 };
    int64_t n[1] = {N}, b[1] = {BINS};
    sb_tensor *x = tnew(SB_I64, 1, n), *w = tnew(SB_F32, 1, n);
    sb_tensor *cnt = tnew(SB_I64, 1, b), *sum = tnew(SB_F32, 1, b);
    sb_test_seed(41);
    for (int i = 0; i < N; i++) {
        L(x)[i] = (int64_t)(sb_test_rand32() % 11); /* bins 11 and 12 stay empty */
        F(w)[i] = sb_test_adversarial(100.0f);
    }
    int64_t want_c[BINS] = {0};
    float want_s[BINS];
    for (int k = 0; k < BINS; k++) want_s[k] = 0.0f;
    for (int i = 0; i < N; i++) {
        want_c[L(x)[i]]++;
        want_s[L(x)[i]] = want_s[L(x)[i]] + F(w)[i];
    }
    for (int cfg = 0; cfg < sb_test_config_count(); cfg++) {
        sb_test_config_apply(cfg);
        CHECK_OK(sb_bincount(x, NULL, cnt));
        CHECK_OK(sb_bincount(x, w, sum));
        for (int k = 0; k < BINS; k++) {
            CHECK(L(cnt)[k] == want_c[k], "count of %d at %s: %" PRId64 " want %" PRId64, k,
                  sb_test_config_name(cfg), L(cnt)[k], want_c[k]);
            if (!(isnan(F(sum)[k]) && isnan(want_s[k])))
                CHECK_BITS(F(sum)[k], want_s[k], "weighted bin %d at %s", k, sb_test_config_name(cfg));
        }
    }
    sb_test_config_reset();
    /* the order shows: 2^25, 1, -2^25, 1 into one bin gives 1 */
    int64_t four[1] = {4}, one[1] = {1};
    sb_tensor *x4 = tnew(SB_I64, 1, four), *w4 = tnew(SB_F32, 1, four), *s1 = tnew(SB_F32, 1, one);
    const float terms[4] = {0x1p25f, 1.0f, -0x1p25f, 1.0f};
    for (int i = 0; i < 4; i++) { L(x4)[i] = 0; F(w4)[i] = terms[i]; }
    CHECK_OK(sb_bincount(x4, w4, s1));
    CHECK_BITS(F(s1)[0], 1.0f, "weights added in ascending position");
    /* empty x: every bin +0 */
    int64_t zero[1] = {0};
    sb_tensor *x0 = tnew(SB_I64, 1, zero), *w0 = tnew(SB_F32, 1, zero);
    F(s1)[0] = 5.0f;
    CHECK_OK(sb_bincount(x0, w0, s1));
    CHECK_BITS(F(s1)[0], 0.0f, "an empty weighted bincount");
    /* refusals leave out as it was */
    for (int k = 0; k < BINS; k++) L(cnt)[k] = 42;
    L(x)[7] = -1;
    CHECK_ERROR(sb_bincount(x, NULL, cnt), SB_ERR_RANGE, "x element 7 is -1");
    L(x)[7] = BINS;
    CHECK_ERROR(sb_bincount(x, NULL, cnt), SB_ERR_RANGE, "outside [0, 13)");
    L(x)[7] = 0;
    CHECK_ERROR(sb_bincount(x, w4, sum), SB_ERR_SHAPE, "weights has 4 elements");
    CHECK_ERROR(sb_bincount(x, w, cnt), SB_ERR_DTYPE, "out");
    CHECK_ERROR(sb_bincount(x, NULL, sum), SB_ERR_DTYPE, "out");
    for (int k = 0; k < BINS; k++) CHECK(L(cnt)[k] == 42, "bin %d written by a refused call", k);
    sb_tensor_free(x); sb_tensor_free(w); sb_tensor_free(cnt); sb_tensor_free(sum);
    sb_tensor_free(x4); sb_tensor_free(w4); sb_tensor_free(s1); sb_tensor_free(x0); sb_tensor_free(w0);
}

/* The bin rule restated: three float32 steps, the top edge in the last bin. */
static int64_t bin_of(float v, int64_t bins, float lo, float hi) {
    if (isnan(v) || v < lo || v > hi) return -1;
    float scaled = (v - lo) * (float)bins;
    float q = scaled / (hi - lo);
    int64_t b = (int64_t)q;
    return b == bins ? bins - 1 : b;
}

static void histc_expect(const float *x, int64_t n, int64_t bins, float lo, float hi, float *want) {
    for (int64_t k = 0; k < bins; k++) want[k] = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        int64_t b = bin_of(x[i], bins, lo, hi);
        if (b >= 0) want[b] += 1.0f; /* exact: the counts here stay far below 2^24 */
    }
}

static void test_histc(void) {
    enum { N = 2000 };
    int64_t s[2] = {40, 50};
    sb_tensor *x = tnew(SB_F32, 2, s);
    sb_test_seed(43);
    static const int64_t bin_counts[] = {1, 3, 7, 64, 257};
    for (size_t bi = 0; bi < sizeof bin_counts / sizeof *bin_counts; bi++) {
        int64_t bins = bin_counts[bi], ob[1] = {bins};
        sb_tensor *out = tnew(SB_F32, 1, ob);
        float *want = malloc((size_t)bins * sizeof *want);
        float lo = sb_test_unif(-3.0f, 0.0f), hi = lo + sb_test_unif(0.01f, 5.0f);
        for (int i = 0; i < N; i++) {
            uint32_t r = sb_test_rand32() % 16;
            /* edges of the bins, both ends, outside, NaN, inf */
            F(x)[i] = r == 0   ? lo + (hi - lo) * (float)(sb_test_rand32() % (uint32_t)(bins + 1)) / (float)bins
                      : r == 1 ? hi
                      : r == 2 ? lo
                      : r == 3 ? (float)NAN
                      : r == 4 ? INFINITY
                               : sb_test_unif(lo - 0.5f, hi + 0.5f);
        }
        histc_expect(F(x), N, bins, lo, hi, want);
        for (int cfg = 0; cfg < sb_test_config_count(); cfg++) {
            sb_test_config_apply(cfg);
            CHECK_OK(sb_histc(x, bins, lo, hi, out));
            for (int64_t k = 0; k < bins; k++)
                CHECK_BITS(F(out)[k], want[k], "histc bins %" PRId64 " bin %" PRId64 " at %s", bins, k,
                           sb_test_config_name(cfg));
        }
        sb_test_config_reset();
        free(want);
        sb_tensor_free(out);
    }
    /* min == max: x's own range, [v - 1, v + 1] when x is constant */
    int64_t three[1] = {3}, four[1] = {4};
    sb_tensor *x3 = tnew(SB_F32, 1, three), *o4 = tnew(SB_F32, 1, four);
    float want[4];
    const float spread[3] = {1.0f, 2.0f, 3.0f};
    memcpy(F(x3), spread, sizeof spread);
    CHECK_OK(sb_histc(x3, 4, 0.0f, 0.0f, o4));
    histc_expect(spread, 3, 4, 1.0f, 3.0f, want);
    for (int k = 0; k < 4; k++) CHECK_BITS(F(o4)[k], want[k], "range from x, bin %d", k);
    F(x3)[0] = F(x3)[1] = F(x3)[2] = 1.0f;
    CHECK_OK(sb_histc(x3, 4, 5.0f, 5.0f, o4));
    for (int k = 0; k < 4; k++) CHECK_BITS(F(o4)[k], k == 2 ? 3.0f : 0.0f, "constant x, bin %d", k);
    /* refusals leave out as it was */
    for (int k = 0; k < 4; k++) F(o4)[k] = 42.0f;
    CHECK_ERROR(sb_histc(x3, 4, 2.0f, 1.0f, o4), SB_ERR_ARG, "max must not be below min");
    CHECK_ERROR(sb_histc(x3, 0, 0.0f, 1.0f, o4), SB_ERR_ARG, "bins = 0");
    CHECK_ERROR(sb_histc(x3, 3, 0.0f, 1.0f, o4), SB_ERR_SHAPE, "expected bins = 3");
    F(x3)[1] = INFINITY;
    CHECK_ERROR(sb_histc(x3, 4, 0.0f, 0.0f, o4), SB_ERR_ARG, "element 1");
    F(x3)[1] = NAN;
    CHECK_ERROR(sb_histc(x3, 4, 0.0f, 0.0f, o4), SB_ERR_ARG, "finite");
    CHECK_ERROR(sb_histc(x3, 4, 0.0f, 1.0f, x3), SB_ERR_SHAPE, "out");
    for (int k = 0; k < 4; k++) CHECK_BITS(F(o4)[k], 42.0f, "bin %d written by a refused call", k);
    sb_tensor_free(x); sb_tensor_free(x3); sb_tensor_free(o4);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_bincount();
    test_histc();
    return sb_test_finish();
}
