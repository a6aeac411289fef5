/* Tests for cumsum and cumprod, forward and backward (contract section 10,
 * "Cumulative sum and product").
 *
 * The expected bits come from a restatement of the contract written here
 * over 3-D tensors with explicit coordinates: each column along dim is
 * copied out, run as the contract's sequential chain with one float32
 * rounding per operation, and copied back. Checked at every ISA level and
 * thread count of this machine (tests/support/fastpath.h), for every dim
 * (negative ones too), odd and empty shapes, NaN/inf and zeros in cumprod,
 * on strided views, against float64 and float64 finite differences, and
 * every refusal with nothing written. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include "harness.h"
#include "support/fastpath.h"

static sb_tensor *tnew(int nd, const int64_t *shape) {
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, SB_F32, nd, shape) != SB_OK) { fprintf(stderr, "%s\n", sb_last_error()); exit(2); }
    return t;
}
static float *F(const sb_tensor *t) { return t->data; }

typedef enum { SUM, SUM_B, PROD, PROD_B } kind;
static const char *kind_name[] = {"cumsum", "cumsum_backward", "cumprod", "cumprod_backward"};

/* ---- the contract restated over 3-D shapes ---- */

enum { MAXN = 64 };

/* One column of n values: a (x or dy), b (y), c (dy) -> o. */
static void expect_column(kind k, int n, const float *a, const float *b, const float *c, float *o) {
    if (k == SUM || k == SUM_B) {
        float s = 0.0f; /* +0 first: a leading -0 gives +0, as PyTorch */
        for (int t = 0; t < n; t++) {
            int i = k == SUM ? t : n - 1 - t;
            s = s + a[i];
            o[i] = s;
        }
        return;
    }
    if (k == PROD) {
        float p = 1.0f;
        for (int i = 0; i < n; i++) o[i] = p = p * a[i];
        return;
    }
    /* cumprod backward; a = x, b = y, c = dy */
    if (n == 1) { o[0] = c[0]; return; }
    int zeros[MAXN], nz = 0;
    for (int i = 0; i < n; i++)
        if (a[i] == 0.0f) zeros[nz++] = i;
    int z = nz ? zeros[0] : n, z2 = nz > 1 ? zeros[1] : n;
    for (int i = 0; i < n; i++) o[i] = 0.0f;
    for (int k2 = 0; k2 < z; k2++) {
        float r = 0.0f;
        for (int i = z - 1; i >= k2; i--) r = r + b[i] * c[i];
        o[k2] = r / a[k2];
    }
    if (z < n) {
        float s = 0.0f, q = 1.0f;
        for (int i = z; i < z2; i++) {
            if (i > z) q = q * a[i];
            s = s + q * c[i];
        }
        o[z] = s * (z ? b[z - 1] : 1.0f);
    }
}

static int64_t at3(const int64_t *s, int64_t i0, int64_t i1, int64_t i2) { return (i0 * s[1] + i1) * s[2] + i2; }

static void expect(kind k, int dim, const int64_t *s, const float *a, const float *b, const float *c, float *o) {
    int64_t n = s[dim];
    int64_t o1 = dim == 0 ? 1 : 0, o2 = dim == 2 ? 1 : 2; /* the two other axes */
    if (dim == 1) { o1 = 0; o2 = 2; }
    float ca[MAXN], cb[MAXN], cc[MAXN], co[MAXN];
    for (int64_t u = 0; u < s[o1]; u++)
        for (int64_t v = 0; v < s[o2]; v++) {
            int64_t pos[MAXN];
            for (int64_t i = 0; i < n; i++) {
                int64_t q[3];
                q[o1] = u; q[o2] = v; q[dim] = i;
                pos[i] = at3(s, q[0], q[1], q[2]);
                ca[i] = a[pos[i]];
                cb[i] = b ? b[pos[i]] : 0.0f;
                cc[i] = c ? c[pos[i]] : 0.0f;
            }
            expect_column(k, (int)n, ca, cb, cc, co);
            for (int64_t i = 0; i < n; i++) o[pos[i]] = co[i];
        }
}

static sb_status call(kind k, int dim, const sb_tensor *a, const sb_tensor *b, const sb_tensor *c, sb_tensor *o) {
    switch (k) {
    case SUM: return sb_cumsum(a, dim, o);
    case SUM_B: return sb_cumsum_backward(a, dim, o);
    case PROD: return sb_cumprod(a, dim, o);
    default: return sb_cumprod_backward(a, b, c, dim, o);
    }
}

/* Factors near 1 (products stay finite over long columns), one in 8 zero,
 * one in 32 special (NaN, +-inf, -0). */
static float factor(void) {
    uint32_t r = sb_test_rand32() % 32;
    if (r < 4) return 0.0f;
    if (r == 4) return (float)NAN;
    if (r == 5) return INFINITY;
    if (r == 6) return -0.0f;
    if (r == 7) return -INFINITY;
    return sb_test_unif(0.5f, 1.5f) * (r % 2 ? 1.0f : -1.0f);
}

/* The first element whose bits differ; every NaN counts as 0x7fc00000
 * (contract section 1: which NaN an operation returns is not fixed). */
static int64_t first_diff(const float *x, const float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        if (isnan(x[i]) && isnan(y[i])) continue;
        if (sb_test_bits(x[i]) != sb_test_bits(y[i])) return i;
    }
    return -1;
}

static void test_configs(void) {
    static const int64_t shapes[][3] = {{5, 7, 9}, {1, 1, 1}, {3, 1, 37}, {2, 33, 1}, {0, 3, 4},
                                        {4, 0, 2}, {64, 3, 2}, {1, 2, 64}};
    sb_test_seed(11);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int64_t *s = shapes[si];
        int64_t n = s[0] * s[1] * s[2];
        sb_tensor *x = tnew(3, s), *y = tnew(3, s), *dy = tnew(3, s), *o = tnew(3, s);
        float *want = malloc((size_t)(n ? n : 1) * sizeof(float));
        for (int kk = 0; kk < 4; kk++) {
            kind k = (kind)kk;
            for (int64_t i = 0; i < n; i++) {
                F(x)[i] = k == SUM || k == SUM_B ? sb_test_adversarial(100.0f) : factor();
                F(dy)[i] = sb_test_unif(-2.0f, 2.0f);
            }
            for (int dim = -3; dim < 3; dim++) {
                int d = dim < 0 ? dim + 3 : dim;
                if (k == PROD_B) expect(PROD, d, s, F(x), NULL, NULL, F(y));
                expect(k, d, s, F(x), F(y), F(dy), want);
                for (int cfg = 0; cfg < sb_test_config_count(); cfg++) {
                    sb_test_config_apply(cfg);
                    for (int64_t i = 0; i < n; i++) F(o)[i] = -777.0f;
                    CHECK_OK(call(k, dim, x, y, dy, o));
                    int64_t w = first_diff(F(o), want, n);
                    CHECK(w < 0, "%s dim %d shape %" PRId64 "x%" PRId64 "x%" PRId64 " at %s: element %" PRId64
                          " got %a want %a", kind_name[k], dim, s[0], s[1], s[2], sb_test_config_name(cfg),
                          w, w < 0 ? 0.0 : F(o)[w], w < 0 ? 0.0 : want[w]);
                }
                sb_test_config_reset();
            }
        }
        free(want);
        sb_tensor_free(x); sb_tensor_free(y); sb_tensor_free(dy); sb_tensor_free(o);
    }
}

/* Inputs where another order or accumulation gives other bits. */
static void test_order_visible(void) {
    int64_t s[1] = {4};
    sb_tensor *x = tnew(1, s), *o = tnew(1, s);
    const float e = 0x1p-24f;
    float xv[4] = {1.0f, e, e, e};
    memcpy(F(x), xv, sizeof xv);
    CHECK_OK(sb_cumsum(x, 0, o));
    /* float32 steps: 1 + 2^-24 ties to 1 each time (a float64 running sum,
     * PyTorch's CPU accumulator, would reach 1 + 2^-23 at the third) */
    for (int i = 0; i < 4; i++) CHECK_BITS(F(o)[i], 1.0f, "cumsum element %d", i);
    /* backward runs from the last index down: e + e + e then + 1 */
    float dv[4] = {1.0f, e, e, e};
    memcpy(F(x), dv, sizeof dv);
    CHECK_OK(sb_cumsum_backward(x, 0, o));
    CHECK_BITS(F(o)[3], e, "reverse cumsum element 3");
    CHECK_BITS(F(o)[1], 3 * e, "reverse cumsum element 1");
    CHECK_BITS(F(o)[0], 1.0f + 0x1p-22f, "reverse cumsum element 0");
    /* a leading -0 becomes +0 */
    float zv[4] = {-0.0f, -0.0f, 1.0f, -1.0f};
    memcpy(F(x), zv, sizeof zv);
    CHECK_OK(sb_cumsum(x, 0, o));
    CHECK_BITS(F(o)[0], 0.0f, "cumsum of a leading -0");
    CHECK_OK(sb_cumprod(x, 0, o));
    CHECK_BITS(F(o)[0], -0.0f, "cumprod keeps -0");
    CHECK_BITS(F(o)[1], 0.0f, "-0 * -0");
    sb_tensor_free(x); sb_tensor_free(o);
}

/* Closeness to float64 and gradients against float64 finite differences. */
static void test_vs_float64(void) {
    enum { N = 9 };
    int64_t s[1] = {N};
    sb_tensor *x = tnew(1, s), *y = tnew(1, s), *dy = tnew(1, s), *dx = tnew(1, s);
    sb_test_seed(3);
    for (int zeros = 0; zeros < 3; zeros++) {
        double xd[N], dyd[N];
        for (int i = 0; i < N; i++) {
            F(x)[i] = sb_test_unif(0.5f, 1.5f);
            F(dy)[i] = sb_test_unif(-1.0f, 1.0f);
        }
        if (zeros > 0) F(x)[3] = 0.0f;
        if (zeros > 1) F(x)[6] = 0.0f;
        for (int i = 0; i < N; i++) { xd[i] = F(x)[i]; dyd[i] = F(dy)[i]; }
        CHECK_OK(sb_cumsum(x, 0, y));
        double acc = 0;
        for (int i = 0; i < N; i++) {
            acc += xd[i];
            CHECK(fabs(F(y)[i] - acc) <= 1e-6 * (1 + fabs(acc)), "cumsum %d: %g vs %g", i, F(y)[i], acc);
        }
        CHECK_OK(sb_cumsum_backward(dy, 0, dx));
        for (int i = 0; i < N; i++) {
            double g = 0;
            for (int k = i; k < N; k++) g += dyd[k];
            CHECK(fabs(F(dx)[i] - g) <= 1e-6 * (1 + fabs(g)), "cumsum grad %d: %g vs %g", i, F(dx)[i], g);
        }
        CHECK_OK(sb_cumprod(x, 0, y));
        CHECK_OK(sb_cumprod_backward(x, y, dy, 0, dx));
        for (int i = 0; i < N; i++) {
            /* L(x) = sum_k dy_k * prod_{j<=k} x_j is linear in x_i: the
             * central difference is exact up to float64 rounding */
            double h = 1e-3, lp = 0, lm = 0, pp = 1, pm = 1;
            for (int k = 0; k < N; k++) {
                pp *= k == i ? xd[k] + h : xd[k];
                pm *= k == i ? xd[k] - h : xd[k];
                lp += dyd[k] * pp;
                lm += dyd[k] * pm;
            }
            double g = (lp - lm) / (2 * h);
            CHECK(fabs(F(dx)[i] - g) <= 1e-5 * (1 + fabs(g)),
                  "cumprod grad %d with %d zeros: %.9g vs %.9g", i, zeros, F(dx)[i], g);
        }
    }
    sb_tensor_free(x); sb_tensor_free(y); sb_tensor_free(dy); sb_tensor_free(dx);
}

static void test_views_and_scalar(void) {
    /* a transposed view gives the bits of its contiguous copy */
    int64_t s[2] = {6, 5}, st[2] = {5, 6};
    sb_tensor *x = tnew(2, s), *xt = NULL, *xc = tnew(2, st), *a = tnew(2, st), *b = tnew(2, st);
    sb_test_seed(9);
    for (int i = 0; i < 30; i++) F(x)[i] = sb_test_adversarial(10.0f);
    CHECK_OK(sb_tensor_transpose(&xt, x, 0, 1));
    CHECK_OK(sb_tensor_copy(xc, xt));
    for (int dim = 0; dim < 2; dim++) {
        CHECK_OK(sb_cumsum(xt, dim, a));
        CHECK_OK(sb_cumsum(xc, dim, b));
        CHECK(first_diff(F(a), F(b), 30) < 0, "cumsum through a transposed view, dim %d", dim);
        CHECK_OK(sb_cumprod(xt, dim, a));
        CHECK_OK(sb_cumprod(xc, dim, b));
        CHECK(first_diff(F(a), F(b), 30) < 0, "cumprod through a transposed view, dim %d", dim);
    }
    /* 0-dim: dims 0 and -1; the one element (cumsum turns -0 into +0) */
    sb_tensor *x0 = tnew(0, NULL), *o0 = tnew(0, NULL), *d0 = tnew(0, NULL);
    F(x0)[0] = -3.5f;
    CHECK_OK(sb_cumsum(x0, -1, o0));
    CHECK_BITS(F(o0)[0], -3.5f, "0-dim cumsum");
    CHECK_OK(sb_cumprod(x0, 0, o0));
    CHECK_BITS(F(o0)[0], -3.5f, "0-dim cumprod");
    /* one element along dim: the gradient is dy's bits, whatever x is
     * (PyTorch returns grad unchanged there) */
    sb_tensor *g0 = tnew(0, NULL);
    F(d0)[0] = 0x1.000002p-3f;
    F(x0)[0] = 3.0f;
    CHECK_OK(sb_cumprod(x0, 0, o0));
    CHECK_OK(sb_cumprod_backward(x0, o0, d0, 0, g0));
    CHECK_BITS(F(g0)[0], 0x1.000002p-3f, "0-dim cumprod backward");
    sb_tensor_free(x); sb_tensor_free(xt); sb_tensor_free(xc); sb_tensor_free(a); sb_tensor_free(b);
    sb_tensor_free(x0); sb_tensor_free(o0); sb_tensor_free(d0); sb_tensor_free(g0);
}

/* Every refusal leaves the output as it was. */
static void test_refusals(void) {
    int64_t s[2] = {2, 3}, s2[2] = {3, 2};
    sb_tensor *x = tnew(2, s), *y = tnew(2, s), *dy = tnew(2, s), *o = tnew(2, s), *w = tnew(2, s2);
    sb_tensor *xl = NULL;
    CHECK_OK(sb_tensor_new(&xl, SB_I64, 2, s));
    for (int i = 0; i < 6; i++) { F(x)[i] = (float)i; F(y)[i] = F(dy)[i] = 1.0f; F(o)[i] = 42.0f; }
    CHECK_ERROR(sb_cumsum(x, 2, o), SB_ERR_ARG, "dim = 2 is out of range");
    CHECK_ERROR(sb_cumprod(x, -3, o), SB_ERR_ARG, "dim = -3 is out of range");
    CHECK_ERROR(sb_cumsum(x, 0, w), SB_ERR_SHAPE, "sb_cumsum");
    CHECK_ERROR(sb_cumsum_backward(w, 0, o), SB_ERR_SHAPE, "dy");
    CHECK_ERROR(sb_cumprod_backward(x, w, dy, 0, o), SB_ERR_SHAPE, "y");
    CHECK_ERROR(sb_cumsum(xl, 0, o), SB_ERR_DTYPE, "x");
    CHECK_ERROR(sb_cumsum(x, 0, x), SB_ERR_ARG, "out overlaps x");
    CHECK_ERROR(sb_cumprod_backward(x, y, dy, 0, dy), SB_ERR_ARG, "dx overlaps dy");
    CHECK_ERROR(sb_cumprod(NULL, 0, o), SB_ERR_NULL, "x");
    for (int i = 0; i < 6; i++) CHECK_BITS(F(o)[i], 42.0f, "out written by a refused call, element %d", i);
    sb_tensor_free(x); sb_tensor_free(y); sb_tensor_free(dy); sb_tensor_free(o); sb_tensor_free(w);
    sb_tensor_free(xl);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_order_visible();
    test_configs();
    test_vs_float64();
    test_views_and_scalar();
    test_refusals();
    return sb_test_finish();
}
