/* Tests for the index family: gather, index_select, scatter_add, index_add
 * and the backward of gather and index_select (contract section 18).
 *
 * The expected bits come from a restatement of the contract written here
 * over 3-D tensors with explicit coordinates: the source positions are
 * enumerated row-major (i0, i1, i2 ascending) and each term is added to its
 * destination with one float32 addition. Checked at every ISA level and
 * thread count of this machine (tests/support/fastpath.h), on the mirror
 * device, on strided views, against float64 sums, with NaN/inf and
 * duplicate indices, empty inputs, and every refusal. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include "harness.h"
#include "support/fastpath.h"
#include "ref/ref_index.h"

static sb_tensor *tnew(sb_dtype dt, int nd, const int64_t *shape) {
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, dt, nd, shape) != SB_OK) { fprintf(stderr, "%s\n", sb_last_error()); exit(2); }
    return t;
}
static float *F(const sb_tensor *t) { return t->data; }
static int64_t *I(const sb_tensor *t) { return t->data; }
static int64_t at3(const int64_t *s, int64_t a, int64_t b, int64_t c) { return (a * s[1] + b) * s[2] + c; }

/* ---- the contract restated over 3-D shapes ---- */

/* scatter_add: for (i0,i1,i2) row-major over index's shape, the destination
 * has coordinate index[i] along dim and i's coordinates elsewhere. */
static void expect_scatter_add(int dim, const int64_t *ishape, const int64_t *idx, const float *src,
                               const int64_t *oshape, float *out) {
    for (int64_t a = 0; a < ishape[0]; a++)
        for (int64_t b = 0; b < ishape[1]; b++)
            for (int64_t c = 0; c < ishape[2]; c++) {
                int64_t p = at3(ishape, a, b, c), q[3] = {a, b, c};
                q[dim] = idx[p];
                float *d = &out[at3(oshape, q[0], q[1], q[2])];
                *d = *d + src[p];
            }
}

static void expect_gather(int dim, const int64_t *xshape, const float *x, const int64_t *ishape,
                          const int64_t *idx, float *out) {
    for (int64_t a = 0; a < ishape[0]; a++)
        for (int64_t b = 0; b < ishape[1]; b++)
            for (int64_t c = 0; c < ishape[2]; c++) {
                int64_t p = at3(ishape, a, b, c), q[3] = {a, b, c};
                q[dim] = idx[p];
                out[p] = x[at3(xshape, q[0], q[1], q[2])];
            }
}

/* index_add: source (sshape, K along dim) into out; term alpha * s unless
 * alpha is 1. The source is enumerated row-major: for one destination this
 * is ascending i along dim. */
static void expect_index_add(int dim, const int64_t *idx, const int64_t *sshape, const float *src,
                             float alpha, const int64_t *oshape, float *out) {
    for (int64_t a = 0; a < sshape[0]; a++)
        for (int64_t b = 0; b < sshape[1]; b++)
            for (int64_t c = 0; c < sshape[2]; c++) {
                int64_t q[3] = {a, b, c};
                float t = src[at3(sshape, a, b, c)];
                if (alpha != 1.0f) t = alpha * t;
                q[dim] = idx[q[dim]];
                float *d = &out[at3(oshape, q[0], q[1], q[2])];
                *d = *d + t;
            }
}

/* ---- data ---- */

static void fill_values(sb_tensor *t, int special) {
    for (int64_t i = 0; i < sb_tensor_numel(t); i++)
        F(t)[i] = special ? sb_test_adversarial(100.0f) : sb_test_unif(-4.0f, 4.0f);
}
/* Indices drawn from [0, size) with few distinct values: many duplicates. */
static void fill_index(sb_tensor *t, int64_t size) {
    int64_t distinct = size < 3 ? size : 3;
    for (int64_t i = 0; i < sb_tensor_numel(t); i++)
        I(t)[i] = (int64_t)(sb_test_rand32() % (uint32_t)(sb_test_rand32() % 2 ? distinct : size));
}

static int same_bits(const float *a, const float *b, int64_t n, int64_t *where) {
    for (int64_t i = 0; i < n; i++)
        if (sb_test_bits(a[i]) != sb_test_bits(b[i])) { *where = i; return 0; }
    return 1;
}

/* ---- bitwise against the restatement, at every configuration ---- */

static void test_scatter_gather_configs(void) {
    /* shapes whose column count and length both vary; the last has enough
     * terms for several threads */
    static const int64_t shapes[][3] = {{1, 1, 1}, {2, 5, 3}, {3, 1, 7}, {5, 17, 2}, {40, 130, 9}};
    sb_test_seed(7);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int dim = 0; dim < 3; dim++) {
            const int64_t *ish = shapes[s];
            int64_t osh[3] = {ish[0], ish[1], ish[2]};
            osh[dim] = ish[dim] % 4 + 1; /* fewer slots than terms: duplicates */
            sb_tensor *idx = tnew(SB_I64, 3, ish), *src = tnew(SB_F32, 3, ish);
            sb_tensor *out = tnew(SB_F32, 3, osh), *g = tnew(SB_F32, 3, ish);
            fill_index(idx, osh[dim]);
            fill_values(src, s % 2);
            int64_t no = sb_tensor_numel(out), ni = sb_tensor_numel(idx);
            float *init = malloc((size_t)no * sizeof *init), *want = malloc((size_t)no * sizeof *want);
            float *wg = malloc((size_t)ni * sizeof *wg);
            for (int64_t i = 0; i < no; i++) init[i] = sb_test_adversarial(10.0f);
            memcpy(want, init, (size_t)no * sizeof *want);
            expect_scatter_add(dim, ish, I(idx), F(src), osh, want);
            expect_gather(dim, osh, init, ish, I(idx), wg);
            /* the reference kernel itself, over contiguous strides */
            sb_ref_index_geom geom = {.ndim = 3, .dim = dim};
            for (int k = 0; k < 3; k++) {
                geom.shape[k] = ish[k];
                geom.dense_stride[k] = geom.index_stride[k] = k == 2 ? 1 : (k == 1 ? ish[2] : ish[1] * ish[2]);
                geom.table_stride[k] = k == 2 ? 1 : (k == 1 ? osh[2] : osh[1] * osh[2]);
            }
            {
                int64_t w;
                memcpy(F(out), init, (size_t)no * sizeof *init);
                sb_ref_index_scatter_add(&geom, F(src), I(idx), false, 1.0f, F(out));
                CHECK(same_bits(F(out), want, no, &w), "sb_ref_index_scatter_add shape %d dim %d: element %" PRId64,
                      (int)s, dim, w);
                memcpy(F(out), init, (size_t)no * sizeof *init);
                sb_ref_index_gather(&geom, F(out), I(idx), F(g));
                CHECK(same_bits(F(g), wg, ni, &w), "sb_ref_index_gather: element %" PRId64, w);
            }
            for (int c = 0; c < sb_test_config_count(); c++) {
                sb_test_config_apply(c);
                int64_t w;
                memcpy(F(out), init, (size_t)no * sizeof *init);
                CHECK_OK(sb_scatter_add(dim, idx, src, out));
                CHECK(same_bits(F(out), want, no, &w), "scatter_add %s shape %d dim %d: element %" PRId64,
                      sb_test_config_name(c), (int)s, dim, w);
                /* gather_backward is the scatter-add into zeros */
                CHECK_OK(sb_gather_backward(src, dim - 3, idx, out));
                float *z = malloc((size_t)no * sizeof *z);
                for (int64_t i = 0; i < no; i++) z[i] = 0.0f;
                expect_scatter_add(dim, ish, I(idx), F(src), osh, z);
                CHECK(same_bits(F(out), z, no, &w), "gather_backward %s: element %" PRId64,
                      sb_test_config_name(c), w);
                free(z);
                memcpy(F(out), init, (size_t)no * sizeof *init);
                CHECK_OK(sb_gather(out, dim, idx, g));
                CHECK(same_bits(F(g), wg, ni, &w), "gather %s: element %" PRId64, sb_test_config_name(c), w);
            }
            sb_test_config_reset();
            free(init); free(want); free(wg);
            sb_tensor_free(idx); sb_tensor_free(src); sb_tensor_free(out); sb_tensor_free(g);
        }
}

static void test_index_add_select_configs(void) {
    static const int64_t shapes[][3] = {{1, 1, 1}, {2, 5, 3}, {4, 9, 1}, {30, 200, 11}};
    static const float alphas[] = {1.0f, 0.5f, -3.0f, 0.1f};
    sb_test_seed(11);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int dim = 0; dim < 3; dim++) {
            int64_t K = shapes[s][dim], osh[3] = {shapes[s][0], shapes[s][1], shapes[s][2]};
            osh[dim] = K % 5 + 1;
            int64_t ssh[3] = {osh[0], osh[1], osh[2]};
            ssh[dim] = K;
            sb_tensor *idx = tnew(SB_I64, 1, &K), *src = tnew(SB_F32, 3, ssh);
            sb_tensor *out = tnew(SB_F32, 3, osh), *sel = tnew(SB_F32, 3, ssh);
            fill_index(idx, osh[dim]);
            fill_values(src, s % 2);
            int64_t no = sb_tensor_numel(out), ns = sb_tensor_numel(src);
            float *init = malloc((size_t)no * sizeof *init), *want = malloc((size_t)no * sizeof *want);
            float *wsel = malloc((size_t)ns * sizeof *wsel);
            for (int64_t i = 0; i < no; i++) init[i] = sb_test_unif(-2.0f, 2.0f);
            for (int64_t a = 0; a < ssh[0]; a++)
                for (int64_t b = 0; b < ssh[1]; b++)
                    for (int64_t c = 0; c < ssh[2]; c++) {
                        int64_t q[3] = {a, b, c};
                        q[dim] = I(idx)[q[dim]];
                        wsel[at3(ssh, a, b, c)] = init[at3(osh, q[0], q[1], q[2])];
                    }
            for (size_t k = 0; k < sizeof alphas / sizeof *alphas; k++) {
                memcpy(want, init, (size_t)no * sizeof *want);
                expect_index_add(dim, I(idx), ssh, F(src), alphas[k], osh, want);
                for (int c = 0; c < sb_test_config_count(); c++) {
                    sb_test_config_apply(c);
                    int64_t w;
                    memcpy(F(out), init, (size_t)no * sizeof *init);
                    CHECK_OK(sb_index_add(dim, idx, src, alphas[k], out));
                    CHECK(same_bits(F(out), want, no, &w), "index_add %s alpha %g dim %d: element %" PRId64,
                          sb_test_config_name(c), alphas[k], dim, w);
                    if (k == 0) {
                        memcpy(F(out), init, (size_t)no * sizeof *init);
                        CHECK_OK(sb_index_select(out, dim, idx, sel));
                        CHECK(same_bits(F(sel), wsel, ns, &w), "index_select %s: element %" PRId64,
                              sb_test_config_name(c), w);
                        /* backward: index_add into zeros */
                        CHECK_OK(sb_index_select_backward(src, dim, idx, out));
                        float *z = calloc((size_t)no, sizeof *z);
                        expect_index_add(dim, I(idx), ssh, F(src), 1.0f, osh, z);
                        CHECK(same_bits(F(out), z, no, &w), "index_select_backward %s: element %" PRId64,
                              sb_test_config_name(c), w);
                        free(z);
                    }
                }
                sb_test_config_reset();
            }
            free(init); free(want); free(wsel);
            sb_tensor_free(idx); sb_tensor_free(src); sb_tensor_free(out); sb_tensor_free(sel);
        }
}

/* ---- the order is the contract's, not any other ---- */

static void test_order_sensitive(void) {
    /* terms 2^25, 1, -2^25, 1 on one slot: in ascending order
     * ((0 + 2^25) + 1) - 2^25 + 1 = 1 (the first 1 is absorbed); pairwise
     * or reversed orders give 0 or 2 */
    const float terms[4] = {33554432.0f, 1.0f, -33554432.0f, 1.0f};
    int64_t n = 4, one = 1, ish[2] = {1, 4}, osh[2] = {1, 1};
    sb_tensor *idx = tnew(SB_I64, 1, &n), *src = tnew(SB_F32, 1, &n), *out = tnew(SB_F32, 1, &one);
    memcpy(F(src), terms, sizeof terms);
    CHECK_OK(sb_index_add(0, idx, src, 1.0f, out));
    CHECK_BITS(F(out)[0], 1.0f, "index_add in ascending source order");
    sb_tensor *i2 = tnew(SB_I64, 2, ish), *s2 = tnew(SB_F32, 2, ish), *o2 = tnew(SB_F32, 2, osh);
    memcpy(F(s2), terms, sizeof terms);
    CHECK_OK(sb_scatter_add(1, i2, s2, o2));
    CHECK_BITS(F(o2)[0], 1.0f, "scatter_add in ascending source order");
    /* alpha: one rounding for the product, one for the add */
    F(out)[0] = 1.0f;
    F(src)[0] = 0.1f; F(src)[1] = F(src)[2] = F(src)[3] = 0.0f;
    CHECK_OK(sb_index_add(0, idx, src, 3.0f, out));
    CHECK_BITS(F(out)[0], 1.0f + 3.0f * 0.1f, "index_add alpha product rounded first");
    /* NaN and infinities propagate as in a plain sum */
    F(out)[0] = 0.0f;
    F(src)[0] = INFINITY; F(src)[1] = 1.0f; F(src)[2] = -INFINITY; F(src)[3] = 2.0f;
    CHECK_OK(sb_index_add(0, idx, src, 1.0f, out));
    CHECK(isnan(F(out)[0]), "inf + -inf is NaN");
    /* -0 stays -0 only if every addend is -0: the destination's +0 wins */
    F(out)[0] = -0.0f;
    for (int i = 0; i < 4; i++) F(src)[i] = -0.0f;
    CHECK_OK(sb_index_add(0, idx, src, 1.0f, out));
    CHECK_BITS(F(out)[0], -0.0f, "-0 + -0");
    sb_tensor_free(idx); sb_tensor_free(src); sb_tensor_free(out);
    sb_tensor_free(i2); sb_tensor_free(s2); sb_tensor_free(o2);
}

/* ---- close to the float64 sum (each add rounds once) ---- */

static void test_vs_float64(void) {
    int64_t ish[2] = {16, 1000}, osh[2] = {16, 7};
    sb_tensor *idx = tnew(SB_I64, 2, ish), *src = tnew(SB_F32, 2, ish), *out = tnew(SB_F32, 2, osh);
    sb_test_seed(3);
    fill_index(idx, 7);
    fill_values(src, 0);
    CHECK_OK(sb_scatter_add(1, idx, src, out));
    for (int64_t r = 0; r < 16; r++)
        for (int64_t j = 0; j < 7; j++) {
            double s = 0, a = 0;
            int64_t cnt = 0;
            for (int64_t i = 0; i < 1000; i++)
                if (I(idx)[r * 1000 + i] == j) { s += F(src)[r * 1000 + i]; a += fabs(F(src)[r * 1000 + i]); cnt++; }
            double bound = (double)cnt * FLT_EPSILON * a + 1e-30;
            CHECK(fabs(F(out)[r * 7 + j] - s) <= bound, "row %lld slot %lld: %g vs float64 %g",
                  (long long)r, (long long)j, F(out)[r * 7 + j], s);
        }
    sb_tensor_free(idx); sb_tensor_free(src); sb_tensor_free(out);
}

/* ---- layouts and devices ---- */

static void test_strided_and_mirror(void) {
    /* x is a transposed view: the bits are those of its contiguous copy */
    int64_t xs[2] = {6, 5}, ish[2] = {5, 9}, osh[2] = {5, 6};
    sb_tensor *x = tnew(SB_F32, 2, xs), *xt = NULL, *xc = tnew(SB_F32, 2, osh);
    sb_tensor *idx = tnew(SB_I64, 2, ish), *src = tnew(SB_F32, 2, ish);
    sb_tensor *a = tnew(SB_F32, 2, osh), *b = tnew(SB_F32, 2, osh);
    sb_test_seed(5);
    fill_values(x, 1);
    fill_values(src, 1);
    fill_index(idx, 6);
    CHECK_OK(sb_tensor_transpose(&xt, x, 0, 1));
    CHECK_OK(sb_tensor_copy(xc, xt));
    int64_t gs[2] = {5, 9};
    sb_tensor *g1 = tnew(SB_F32, 2, gs), *g2 = tnew(SB_F32, 2, gs);
    CHECK_OK(sb_gather(xt, 1, idx, g1));
    CHECK_OK(sb_gather(xc, 1, idx, g2));
    int64_t w;
    CHECK(same_bits(F(g1), F(g2), 45, &w), "gather through a transposed view: element %" PRId64, w);
    CHECK_OK(sb_tensor_copy(a, xc));
    CHECK_OK(sb_scatter_add(1, idx, src, a));
    CHECK_OK(sb_scatter_add(1, idx, src, xt)); /* in place through the view */
    CHECK_OK(sb_tensor_copy(b, xt));
    CHECK(same_bits(F(a), F(b), 30, &w), "scatter_add into a transposed view: element %" PRId64, w);

    /* the mirror device (device memory the host does not address) */
    sb_tensor *mi = NULL, *ms = NULL, *mo = NULL;
    CHECK_OK(sb_tensor_to(&mi, idx, SB_DEVICE_MIRROR));
    CHECK_OK(sb_tensor_to(&ms, src, SB_DEVICE_MIRROR));
    CHECK_OK(sb_tensor_to(&mo, xc, SB_DEVICE_MIRROR));
    if (mi && ms && mo) {
        CHECK_OK(sb_scatter_add(1, mi, ms, mo));
        sb_tensor *back = NULL;
        CHECK_OK(sb_tensor_to(&back, mo, SB_DEVICE_CPU));
        if (back) CHECK(same_bits(F(back), F(a), 30, &w), "mirror scatter_add: element %" PRId64, w);
        sb_tensor_free(back);
        I(idx)[3] = 6; /* out of range on the device: refused, nothing written */
        sb_tensor *mbad = NULL;
        CHECK_OK(sb_tensor_to(&mbad, idx, SB_DEVICE_MIRROR));
        CHECK_ERROR(sb_scatter_add(1, mbad, ms, mo), SB_ERR_RANGE, "index element 3 is 6");
        sb_tensor_free(mbad);
    }
    sb_tensor_free(mi); sb_tensor_free(ms); sb_tensor_free(mo);
    sb_tensor_free(x); sb_tensor_free(xt); sb_tensor_free(xc); sb_tensor_free(idx); sb_tensor_free(src);
    sb_tensor_free(a); sb_tensor_free(b); sb_tensor_free(g1); sb_tensor_free(g2);
}

/* ---- empty inputs and 0-dim tensors ---- */

static void test_empty_and_scalar(void) {
    int64_t z[2] = {3, 0}, osh[2] = {3, 4};
    sb_tensor *idx = tnew(SB_I64, 2, z), *src = tnew(SB_F32, 2, z), *out = tnew(SB_F32, 2, osh);
    for (int i = 0; i < 12; i++) F(out)[i] = (float)i;
    CHECK_OK(sb_scatter_add(1, idx, src, out));
    CHECK(F(out)[5] == 5.0f && F(out)[11] == 11.0f, "an empty scatter_add leaves out as it was");
    CHECK_OK(sb_gather_backward(src, 1, idx, out));
    CHECK(F(out)[5] == 0.0f && sb_test_bits(F(out)[11]) == 0, "an empty gather_backward gives +0");
    /* an empty table axis is fine as long as nothing indexes it */
    int64_t e[2] = {3, 0};
    sb_tensor *x0 = tnew(SB_F32, 2, e), *g = tnew(SB_F32, 2, z);
    CHECK_OK(sb_gather(x0, 1, idx, g));
    int64_t k0 = 0;
    sb_tensor *i0 = tnew(SB_I64, 1, &k0), *sel = tnew(SB_F32, 2, z);
    CHECK_OK(sb_index_select(out, 1, i0, sel));
    /* 0-dim: one index */
    sb_tensor *xs = tnew(SB_F32, 0, NULL), *is = tnew(SB_I64, 0, NULL), *os = tnew(SB_F32, 0, NULL);
    F(xs)[0] = 2.5f;
    F(os)[0] = 1.0f;
    CHECK_OK(sb_gather(xs, 0, is, os));
    CHECK_BITS(F(os)[0], 2.5f, "0-dim gather");
    CHECK_OK(sb_index_add(-1, is, xs, 2.0f, os));
    CHECK_BITS(F(os)[0], 7.5f, "0-dim index_add");
    /* a 0-dim index on a 2-D tensor selects one slice and keeps the axis */
    int64_t one[2] = {3, 1};
    sb_tensor *o1 = tnew(SB_F32, 2, one);
    I(is)[0] = 2;
    for (int i = 0; i < 12; i++) F(out)[i] = (float)i;
    CHECK_OK(sb_index_select(out, 1, is, o1));
    CHECK(F(o1)[0] == 2.0f && F(o1)[1] == 6.0f && F(o1)[2] == 10.0f, "0-dim index_select");
    sb_tensor *ts[] = {idx, src, out, x0, g, i0, sel, xs, is, os, o1};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) sb_tensor_free(ts[i]);
}

/* ---- refusals: nothing written ---- */

static void test_refusals(void) {
    int64_t ish[2] = {2, 3}, osh[2] = {2, 4}, k = 3;
    sb_tensor *idx = tnew(SB_I64, 2, ish), *src = tnew(SB_F32, 2, ish), *out = tnew(SB_F32, 2, osh);
    sb_tensor *i1 = tnew(SB_I64, 1, &k);
    for (int i = 0; i < 8; i++) F(out)[i] = (float)i;
    for (int i = 0; i < 6; i++) F(src)[i] = 1.0f;
    I(idx)[4] = -1;
    CHECK_ERROR(sb_scatter_add(1, idx, src, out), SB_ERR_RANGE, "index element 4 is -1, outside [0, 4)");
    I(idx)[4] = 4;
    CHECK_ERROR(sb_scatter_add(1, idx, src, out), SB_ERR_RANGE, "index element 4 is 4");
    CHECK_ERROR(sb_gather_backward(src, 1, idx, out), SB_ERR_RANGE, "sb_gather_backward: index element 4");
    int untouched = 1;
    for (int i = 0; i < 8; i++) untouched &= F(out)[i] == (float)i;
    CHECK(untouched, "a refused call wrote nothing");
    I(idx)[4] = 0;
    CHECK_ERROR(sb_scatter_add(2, idx, src, out), SB_ERR_ARG, "dim = 2 is out of range");
    CHECK_ERROR(sb_scatter_add(-3, idx, src, out), SB_ERR_ARG, "dim = -3 is out of range");
    CHECK_ERROR(sb_scatter_add(0, idx, src, out), SB_ERR_SHAPE, "along dimension 1");
    I(i1)[2] = -2;
    int64_t ssh[2] = {2, 3};
    sb_tensor *s2 = tnew(SB_F32, 2, ssh);
    CHECK_ERROR(sb_index_add(1, i1, s2, 1.0f, out), SB_ERR_RANGE, "index element 2 is -2");
    CHECK_ERROR(sb_index_select(out, 1, i1, s2), SB_ERR_RANGE, "sb_index_select: index element 2 is -2");
    I(i1)[2] = 1;
    CHECK_ERROR(sb_index_select(out, 1, idx, s2), SB_ERR_SHAPE, "index has 2 dimensions");
    CHECK_ERROR(sb_index_add(0, i1, s2, 1.0f, out), SB_ERR_SHAPE, "source has shape");
    CHECK_ERROR(sb_index_add(1, i1, s2, 1.0f, s2), SB_ERR_ARG, "out overlaps source");
    untouched = 1;
    for (int i = 0; i < 8; i++) untouched &= F(out)[i] == (float)i;
    CHECK(untouched, "refused calls wrote nothing");
    sb_tensor_free(idx); sb_tensor_free(src); sb_tensor_free(out); sb_tensor_free(i1); sb_tensor_free(s2);
}

/* ---- autograd: the embedding lookup and gather ---- */

/* The graph's weight gradient equals the tensor-level ops called by hand:
 * y = index_select / gather, dy = mse backward, dw = the op's backward. */
static void test_autograd(void) {
    int64_t wsh[2] = {5, 3}, n = 7, gsh[2] = {5, 4};
    sb_tensor *w = tnew(SB_F32, 2, wsh), *gw = tnew(SB_F32, 2, wsh), *tok = tnew(SB_I64, 1, &n);
    sb_tensor *gi = tnew(SB_I64, 2, gsh);
    static const int64_t toks[7] = {4, 1, 4, 4, 0, 1, 4};
    memcpy(I(tok), toks, sizeof toks);
    sb_test_seed(9);
    fill_values(w, 0);
    fill_index(gi, 3);
    for (int op = 0; op < 2; op++) {
        int64_t ysh[2] = {op ? 5 : 7, op ? 4 : 3};
        sb_tensor *t = tnew(SB_F32, 2, ysh), *y = tnew(SB_F32, 2, ysh), *dy = tnew(SB_F32, 2, ysh);
        sb_tensor *want = tnew(SB_F32, 2, wsh), *one = tnew(SB_F32, 0, NULL);
        fill_values(t, 0);
        F(one)[0] = 1.0f;
        sb_graph *g = NULL;
        CHECK_OK(sb_graph_new(&g));
        sb_variable *vw = NULL, *vy = NULL, *loss = NULL;
        CHECK_OK(sb_graph_param(g, w, gw, &vw));
        if (op == 0) {
            CHECK_OK(sb_ag_index_select(g, vw, -2, tok, &vy));
            CHECK_OK(sb_index_select(w, 0, tok, y));
        } else {
            CHECK_OK(sb_ag_gather(g, vw, 1, gi, &vy));
            CHECK_OK(sb_gather(w, 1, gi, y));
        }
        CHECK_OK(sb_ag_mse(g, vy, t, SB_LOSS_SUM, &loss));
        CHECK_OK(sb_graph_backward(g, loss));
        CHECK_OK(sb_mse_backward(y, t, SB_LOSS_SUM, one, dy, NULL));
        if (op == 0) CHECK_OK(sb_index_select_backward(dy, 0, tok, want));
        else CHECK_OK(sb_gather_backward(dy, 1, gi, want));
        int64_t at;
        if (vy) CHECK(same_bits(F(vy->value), F(y), ysh[0] * ysh[1], &at), "autograd %d forward: element %" PRId64, op, at);
        CHECK(same_bits(F(gw), F(want), 15, &at), "autograd %d weight gradient: element %" PRId64, op, at);
        sb_graph_free(g);
        sb_tensor_free(t); sb_tensor_free(y); sb_tensor_free(dy); sb_tensor_free(want); sb_tensor_free(one);
    }
    sb_tensor_free(w); sb_tensor_free(gw); sb_tensor_free(tok); sb_tensor_free(gi);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_order_sensitive();
    test_scatter_gather_configs();
    test_index_add_select_configs();
    test_vs_float64();
    test_strided_and_mirror();
    test_empty_and_scalar();
    test_refusals();
    test_autograd();
    return sb_test_finish();
}
