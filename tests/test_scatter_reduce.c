/* Tests for scatter_reduce (contract section 18, "scatter_reduce").
 *
 * The expected bits come from a restatement written here, destination by
 * destination: over 3-D tensors with explicit coordinates, the terms that
 * name a destination are collected in row-major order of the source, the
 * start value is the destination itself (include_self) or the reduction's
 * identity, the terms are folded in with PyTorch's rules, and a mean is
 * divided by its count. Checked at every ISA level and thread count of this
 * machine (tests/support/fastpath.h) and for the reference kernel, for every
 * reduction, both include_self, every dim (negative too), duplicate indices,
 * destinations no term names, odd and empty shapes, NaN/inf/-0 terms and
 * inputs where another order gives other bits, and every refusal with
 * nothing written. */
#include <inttypes.h>
#include <math.h>
#include "harness.h"
#include "ref/ref_scatter_reduce.h"
#include "support/fastpath.h"

static sb_tensor *tnew(sb_dtype dt, int nd, const int64_t *shape) {
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, dt, nd, shape) != SB_OK) { fprintf(stderr, "%s\n", sb_last_error()); exit(2); }
    return t;
}
static float *F(const sb_tensor *t) { return t->data; }
static int64_t *L(const sb_tensor *t) { return t->data; }

static const char *op_name[] = {"sum", "prod", "mean", "amax", "amin"};

static int64_t at3(const int64_t *s, const int64_t *q) { return (q[0] * s[1] + q[1]) * s[2] + q[2]; }

/* PyTorch's CPU rules, written out. */
static float fold(sb_scatter_reduce_op op, float d, float t) {
    if (op == SB_SCATTER_SUM || op == SB_SCATTER_MEAN) return d + t;
    if (op == SB_SCATTER_PROD) return d * t;
    if (isnan(t)) return t;
    if (op == SB_SCATTER_AMAX) return d < t ? t : d;
    return t < d ? t : d;
}

static float start_of(sb_scatter_reduce_op op) {
    return op == SB_SCATTER_PROD ? 1.0f : op == SB_SCATTER_AMAX ? -INFINITY
                                       : op == SB_SCATTER_AMIN ? INFINITY : 0.0f;
}

/* want = out after scatter_reduce; s = src/index shape, os = out's. */
static void expect(sb_scatter_reduce_op op, bool self, int d, const int64_t *s, const int64_t *os,
                   const float *src, const int64_t *index, const float *out, float *want) {
    int64_t on = os[0] * os[1] * os[2];
    for (int64_t e = 0; e < on; e++) {
        int64_t q[3] = {e / (os[1] * os[2]), e / os[2] % os[1], e % os[2]};
        float acc = self ? out[e] : start_of(op);
        int64_t terms = 0;
        /* the source positions that can name e: e's coordinates off dim;
         * along dim in ascending order, which is row-major order among them */
        for (int64_t i = 0; i < s[d]; i++) {
            int64_t p[3] = {q[0], q[1], q[2]};
            p[d] = i;
            if (index[at3(s, p)] != q[d]) continue;
            acc = fold(op, acc, src[at3(s, p)]);
            terms++;
        }
        int64_t c = terms + (self ? 1 : 0);
        if (op == SB_SCATTER_MEAN && c > 1) acc = acc / (float)c;
        want[e] = terms ? acc : out[e];
    }
}

/* Terms that make the order visible: large magnitudes of both signs, ones
 * that cancel, NaN, +-inf, +-0, factors near 1 for prod. */
static float term(sb_scatter_reduce_op op) {
    uint32_t r = sb_test_rand32() % 24;
    if (r == 0) return NAN;
    if (r == 1) return INFINITY;
    if (r == 2) return -0.0f;
    if (r == 3) return 0.0f;
    if (r == 4) return 0x1p25f;
    if (r == 5) return -0x1p25f;
    if (r == 6) return -INFINITY;
    if (op == SB_SCATTER_PROD) return sb_test_unif(0.5f, 1.5f) * (r % 2 ? 1.0f : -1.0f);
    return sb_test_unif(-8.0f, 8.0f);
}

static int64_t first_diff(const float *x, const float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        if (isnan(x[i]) && isnan(y[i])) continue; /* which NaN is not fixed (section 1) */
        if (sb_test_bits(x[i]) != sb_test_bits(y[i])) return i;
    }
    return -1;
}

static void test_configs(void) {
    static const int64_t shapes[][3] = {{5, 7, 9}, {1, 1, 1}, {3, 1, 37}, {2, 33, 1}, {0, 3, 4},
                                        {4, 0, 2}, {30, 40, 20}, {1, 2, 64}};
    sb_test_seed(31);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int64_t *s = shapes[si];
        int64_t n = s[0] * s[1] * s[2];
        for (int d = 0; d < 3; d++) {
            /* out has 1 to 4 slots along dim: many duplicate indices, some
             * destinations without terms when the column is short */
            int64_t os[3] = {s[0], s[1], s[2]};
            os[d] = 1 + (int64_t)(sb_test_rand32() % 4);
            int64_t on = os[0] * os[1] * os[2];
            sb_tensor *src = tnew(SB_F32, 3, s), *ix = tnew(SB_I64, 3, s);
            sb_tensor *out = tnew(SB_F32, 3, os), *init = tnew(SB_F32, 3, os);
            float *want = malloc((size_t)(on ? on : 1) * sizeof *want);
            for (int64_t i = 0; i < n; i++) L(ix)[i] = (int64_t)(sb_test_rand32() % (uint32_t)os[d]);
            for (int o = 0; o <= SB_SCATTER_AMIN; o++)
                for (int self = 0; self < 2; self++) {
                    sb_scatter_reduce_op op = (sb_scatter_reduce_op)o;
                    for (int64_t i = 0; i < n; i++) F(src)[i] = term(op);
                    for (int64_t i = 0; i < on; i++) F(init)[i] = term(op);
                    expect(op, self, d, s, os, F(src), L(ix), F(init), want);
                    int dim = self ? d - 3 : d; /* negative dims too */
                    for (int cfg = 0; cfg < sb_test_config_count(); cfg++) {
                        sb_test_config_apply(cfg);
                        memcpy(F(out), F(init), (size_t)on * sizeof(float));
                        CHECK_OK(sb_scatter_reduce(dim, ix, src, op, self, out));
                        int64_t w = first_diff(F(out), want, on);
                        CHECK(w < 0, "%s include_self %d dim %d shape %" PRId64 "x%" PRId64 "x%" PRId64
                              " at %s: element %" PRId64 " got %a want %a", op_name[o], self, dim, s[0],
                              s[1], s[2], sb_test_config_name(cfg), w, w < 0 ? 0.0 : F(out)[w],
                              w < 0 ? 0.0 : want[w]);
                    }
                    sb_test_config_reset();
                    if (n <= 4096) { /* the reference states the same */
                        sb_ref_index_geom g = {.ndim = 3, .dim = d};
                        for (int k = 0; k < 3; k++) {
                            g.shape[k] = s[k];
                            g.dense_stride[k] = g.index_stride[k] = src->strides[k];
                            g.table_stride[k] = out->strides[k];
                        }
                        memcpy(F(out), F(init), (size_t)on * sizeof(float));
                        sb_ref_scatter_reduce(&g, op, self, os[d], F(src), L(ix), F(out));
                        CHECK(first_diff(F(out), want, on) < 0, "sb_ref_scatter_reduce %s self %d dim %d",
                              op_name[o], self, d);
                    }
                }
            free(want);
            sb_tensor_free(src); sb_tensor_free(ix); sb_tensor_free(out); sb_tensor_free(init);
        }
    }
}

/* Hand-made cases where the order, the identity fill and the ties show. */
static void test_rules(void) {
    int64_t s[1] = {4}, one[1] = {1};
    sb_tensor *src = tnew(SB_F32, 1, s), *ix = tnew(SB_I64, 1, s), *out = tnew(SB_F32, 1, one);
    for (int i = 0; i < 4; i++) L(ix)[i] = 0;
    float terms[4] = {0x1p25f, 1.0f, -0x1p25f, 1.0f};
    memcpy(F(src), terms, sizeof terms);
    /* ((0 + 2^25) + 1) - 2^25 + 1 = 1 in ascending order (other orders: 0 or 2) */
    F(out)[0] = 0.0f;
    CHECK_OK(sb_scatter_reduce(0, ix, src, SB_SCATTER_SUM, true, out));
    CHECK_BITS(F(out)[0], 1.0f, "sum in ascending source position");
    /* mean: self (+0) is one of five contributions: 1 / 5 */
    F(out)[0] = 0.0f;
    CHECK_OK(sb_scatter_reduce(0, ix, src, SB_SCATTER_MEAN, true, out));
    CHECK_BITS(F(out)[0], 1.0f / 5.0f, "mean includes self in sum and count");
    /* without include_self the destination starts at +0: a lone -0 term gives +0 */
    int64_t s1[1] = {1};
    sb_tensor *m0 = tnew(SB_F32, 1, s1), *i0 = tnew(SB_I64, 1, s1);
    F(m0)[0] = -0.0f;
    L(i0)[0] = 0;
    F(out)[0] = 7.0f;
    CHECK_OK(sb_scatter_reduce(0, i0, m0, SB_SCATTER_SUM, false, out));
    CHECK_BITS(F(out)[0], 0.0f, "sum without self: +0 + -0");
    /* amax: of -0 then +0 the first stays; a NaN term wins and stays */
    float zeros[4] = {-0.0f, 0.0f, 1.0f, NAN};
    memcpy(F(src), zeros, sizeof zeros);
    F(out)[0] = -5.0f;
    /* the first two terms alone, as views of the same buffers */
    int64_t two[1] = {2};
    sb_tensor *src2 = NULL, *ix2 = NULL;
    CHECK_OK(sb_tensor_wrap(&src2, src->data, SB_F32, 1, two, NULL));
    CHECK_OK(sb_tensor_wrap(&ix2, ix->data, SB_I64, 1, two, NULL));
    CHECK_OK(sb_scatter_reduce(0, ix2, src2, SB_SCATTER_AMAX, true, out));
    CHECK_BITS(F(out)[0], -0.0f, "amax of -0 then +0 keeps -0");
    F(out)[0] = -5.0f;
    CHECK_OK(sb_scatter_reduce(0, ix, src, SB_SCATTER_AMAX, true, out));
    CHECK(isnan(F(out)[0]), "a NaN term wins amax");
    F(out)[0] = 9.0f;
    CHECK_OK(sb_scatter_reduce(0, ix, src, SB_SCATTER_AMIN, false, out));
    CHECK(isnan(F(out)[0]), "a NaN term wins amin");
    /* a destination no term names keeps its bits, whatever the reduction */
    int64_t s3[1] = {3};
    sb_tensor *o3 = tnew(SB_F32, 1, s3);
    for (int o = 0; o <= SB_SCATTER_AMIN; o++) {
        F(o3)[0] = F(o3)[1] = F(o3)[2] = -0.0f;
        CHECK_OK(sb_scatter_reduce(0, ix, src, (sb_scatter_reduce_op)o, false, o3));
        CHECK_BITS(F(o3)[2], -0.0f, "%s leaves an untouched destination", op_name[o]);
    }
    sb_tensor_free(src); sb_tensor_free(ix); sb_tensor_free(out); sb_tensor_free(m0);
    sb_tensor_free(i0); sb_tensor_free(src2); sb_tensor_free(ix2); sb_tensor_free(o3);
}

/* Every refusal leaves out as it was. */
static void test_refusals(void) {
    int64_t s[2] = {2, 3}, s2[2] = {3, 3};
    sb_tensor *src = tnew(SB_F32, 2, s), *ix = tnew(SB_I64, 2, s), *out = tnew(SB_F32, 2, s);
    sb_tensor *bad = tnew(SB_F32, 2, s2);
    for (int i = 0; i < 6; i++) { F(src)[i] = 1.0f; L(ix)[i] = i % 3; F(out)[i] = 42.0f; }
    CHECK_ERROR(sb_scatter_reduce(2, ix, src, SB_SCATTER_SUM, true, out), SB_ERR_ARG, "dim = 2");
    CHECK_ERROR(sb_scatter_reduce(1, ix, src, (sb_scatter_reduce_op)9, true, out), SB_ERR_ARG, "reduce = 9");
    CHECK_ERROR(sb_scatter_reduce(1, ix, bad, SB_SCATTER_SUM, true, out), SB_ERR_SHAPE, "src");
    CHECK_ERROR(sb_scatter_reduce(1, ix, src, SB_SCATTER_SUM, true, src), SB_ERR_ARG, "overlaps");
    CHECK_ERROR(sb_scatter_reduce(1, ix, src, SB_SCATTER_PROD, false, NULL), SB_ERR_NULL, "out");
    L(ix)[5] = 3;
    CHECK_ERROR(sb_scatter_reduce(1, ix, src, SB_SCATTER_MEAN, true, out), SB_ERR_RANGE, "index element 5 is 3");
    L(ix)[5] = -1;
    CHECK_ERROR(sb_scatter_reduce(1, ix, src, SB_SCATTER_AMAX, false, out), SB_ERR_RANGE, "outside [0, 3)");
    for (int i = 0; i < 6; i++) CHECK_BITS(F(out)[i], 42.0f, "out written by a refused call, element %d", i);
    sb_tensor_free(src); sb_tensor_free(ix); sb_tensor_free(out); sb_tensor_free(bad);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_rules();
    test_configs();
    test_refusals();
    return sb_test_finish();
}
