/* Tests of sb_sgemm, sb_matmul(_backward) and sb_linear_forward/backward
 * against an independent emulation of the contract's FMA chain in MPFR
 * (binary32: 24-bit precision, emin -148, emax 128, gradual underflow by
 * mpfr_subnormalize), against float64, and with inputs whose result depends
 * on the chain order. */
#include <float.h>
#include <math.h>
#include <mpfr.h>
#include "harness.h"
#include "support/oracle.h"

/* ---- oracles ---- */

static float *F(const sb_tensor *t) { return (float *)t->data; }

/* ---- sb_sgemm ---- */

/* Element (r, c) of op(X) for X stored with row stride ld, written directly
 * from the definition of the transpose. */
static float op_at(char t, const float *x, int64_t ld, int64_t r, int64_t c) {
    return (t == 'N' || t == 'n') ? x[r * ld + c] : x[c * ld + r];
}

static void check_sgemm_case(char ta, char tb, int64_t m, int64_t n, int64_t k, int64_t extra) {
    int64_t ar = (ta == 'N' || ta == 'n') ? m : k, ac = (ta == 'N' || ta == 'n') ? k : m;
    int64_t br = (tb == 'N' || tb == 'n') ? k : n, bc = (tb == 'N' || tb == 'n') ? n : k;
    int64_t lda = (ac > 1 ? ac : 1) + extra, ldb = (bc > 1 ? bc : 1) + extra,
            ldc = (n > 1 ? n : 1) + extra;
    float *a = malloc((size_t)(ar * lda + 1) * 4), *b = malloc((size_t)(br * ldb + 1) * 4);
    float *c = malloc((size_t)(m * ldc + 1) * 4);
    for (int64_t i = 0; i < ar * lda; i++) a[i] = oracle_rand_float();
    for (int64_t i = 0; i < br * ldb; i++) b[i] = oracle_rand_float();
    float sentinel = -1234.5f;
    for (int64_t i = 0; i < m * ldc; i++) c[i] = sentinel;
    CHECK_OK(sb_sgemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc));
    float *av = malloc((size_t)(k + 1) * 4), *bv = malloc((size_t)(k + 1) * 4);
    long bad = 0, far = 0, pad_touched = 0;
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double ref = 0.0, mag = 0.0;
            for (int64_t p = 0; p < k; p++) {
                av[p] = op_at(ta, a, lda, i, p);
                bv[p] = op_at(tb, b, ldb, p, j);
                ref += (double)av[p] * bv[p];
                mag += fabs((double)av[p] * bv[p]);
            }
            float want = oracle_fma_chain(k, av, bv), got = c[i * ldc + j];
            if (!oracle_same(got, want)) {
                if (bad++ < 3)
                    fprintf(stderr, "sgemm %c%c %lldx%lldx%lld [%lld,%lld]: got %a want %a\n", ta, tb,
                            (long long)m, (long long)n, (long long)k, (long long)i, (long long)j,
                            got, want);
            }
            /* A sequential float chain is within k ulps-of-magnitude of the
             * exact sum (a loose but real bound). */
            if (fabs((double)got - ref) > (double)(k + 1) * FLT_EPSILON * mag + 1e-30) far++;
        }
        for (int64_t j = n; j < ldc; j++) pad_touched += c[i * ldc + j] != sentinel;
    }
    CHECK(bad == 0, "sgemm %c%c m=%lld n=%lld k=%lld: %ld elements differ from the MPFR chain", ta,
          tb, (long long)m, (long long)n, (long long)k, bad);
    CHECK(far == 0, "sgemm %c%c m=%lld n=%lld k=%lld: %ld elements far from float64", ta, tb,
          (long long)m, (long long)n, (long long)k, far);
    CHECK(pad_touched == 0, "sgemm wrote %ld elements between rows of C", pad_touched);
    free(a); free(b); free(c); free(av); free(bv);
}

static void test_sgemm_random(void) {
    static const int64_t shapes[][3] = {
        {1, 1, 1}, {7, 33, 65}, {130, 7, 33}, {33, 130, 7}, {65, 65, 130}, {1, 130, 1},
        {5, 3, 0}, {3, 1, 300}, {2, 2, 1}, {0, 4, 3}, {4, 0, 3}, {130, 65, 257},
    };
    const char *tr = "NTnt";
    int nshapes = sb_test_quick() ? 8 : (int)(sizeof shapes / sizeof shapes[0]);
    for (int s = 0; s < nshapes; s++)
        for (int t = 0; t < 4; t++) {
            int64_t extra = (s + t) % 3; /* leading dims 0..2 larger than needed */
            check_sgemm_case(tr[t], tr[(t + s) % 4], shapes[s][0], shapes[s][1], shapes[s][2], extra);
        }
    if (!sb_test_quick()) check_sgemm_case('T', 'N', 65, 65, 130, 5);
}

/* One 1 x 1 product with k terms: C = a (1 x k) . b (k x 1). */
static float dot1(int64_t k, const float *a, const float *b) {
    float c = NAN;
    int rc = sb_sgemm('N', 'N', 1, 1, k, a, k > 0 ? k : 1, b, 1, &c, 1);
    CHECK(rc == SB_OK, "sgemm dot failed: %s", sb_last_error());
    return c;
}

static void test_sgemm_order_and_specials(void) {
    /* Ascending chain: 1e8, 1e8+1 -> 1e8, 1e8-1e8 -> 0, 0+1 -> 1. Pairwise
     * or descending order gives 0, float64 gives 2. */
    float row[4] = {1e8f, 1.0f, -1e8f, 1.0f}, ones[4] = {1, 1, 1, 1};
    CHECK_BITS(dot1(4, row, ones), 1.0f, "[1e8, 1, -1e8, 1] . ones");
    CHECK_BITS(oracle_fma_chain(4, row, ones), 1.0f, "the MPFR oracle agrees on the order example");

    /* Fused: (1+2^-12)^2 - 1 = 2^-11 + 2^-24 exactly; a separately rounded
     * product would lose the 2^-24. */
    float e = 1.0f + ldexpf(1.0f, -12);
    float fa[2] = {1.0f, e}, fb[2] = {-1.0f, e};
    CHECK_BITS(dot1(2, fa, fb), ldexpf(1.0f, -11) + ldexpf(1.0f, -24), "each step is one fmaf");

    /* Zero signs: every product -0, the chain from +0 stays +0. */
    float nz[3] = {-0.0f, 0.0f, -0.0f}, pm[3] = {1.0f, -1.0f, 2.0f};
    CHECK_BITS(dot1(3, nz, pm), 0.0f, "sum of -0 products from +0");
    /* k = 0: the empty chain is +0 and no operand is read (NULL is fine). */
    float c0 = -0.0f;
    CHECK_OK(sb_sgemm('T', 'T', 1, 1, 0, NULL, 1, NULL, 1, &c0, 1));
    CHECK_BITS(c0, 0.0f, "k = 0 gives +0");
    /* A negative product that underflows leaves -0; a later +0 term makes +0. */
    float u1[2] = {-ldexpf(1.0f, -75), 0.0f}, u2[2] = {ldexpf(1.0f, -76), 3.0f};
    CHECK_BITS(dot1(1, u1, u2), -0.0f, "underflow to -0");
    CHECK_BITS(oracle_fma_chain(1, u1, u2), -0.0f, "MPFR oracle: underflow to -0");
    CHECK_BITS(dot1(2, u1, u2), 0.0f, "-0 + (+0 * 3) = +0");
    /* Exact cancellation gives +0 under round-to-nearest. */
    float cx[2] = {3.0f, -3.0f}, cy[2] = {-0.5f, -0.5f};
    CHECK_BITS(dot1(2, cx, cy), 0.0f, "exact cancellation");

    /* Subnormals: products below 2^-126 and a gradual-underflow result. */
    float s1[3] = {ldexpf(1.0f, -70), ldexpf(1.5f, -75), -ldexpf(1.0f, -140)};
    float s2[3] = {ldexpf(1.25f, -72), ldexpf(1.0f, -70), 1.0f};
    CHECK(oracle_same(dot1(3, s1, s2), oracle_fma_chain(3, s1, s2)), "subnormal chain matches MPFR");
    CHECK(dot1(3, s1, s2) != 0.0f && fabsf(dot1(3, s1, s2)) < FLT_MIN, "subnormal result kept");
    float tiny[2] = {ldexpf(1.0f, -149), ldexpf(1.0f, -149)}, half[2] = {0.5f, 0.5f};
    /* 2^-150 rounds to even (0), then 0 + 2^-150 rounds to 0 again. */
    CHECK_BITS(dot1(2, tiny, half), 0.0f, "2^-150 twice rounds to +0 each step");
    float three[2] = {1.5f, 1.5f};
    CHECK_BITS(dot1(2, tiny, three), ldexpf(1.0f, -147), "1.5*2^-149 rounds to 2^-148, twice");

    /* inf and NaN. */
    float i1[3] = {INFINITY, 1.0f, 2.0f}, i2[3] = {0.0f, 1.0f, 1.0f};
    CHECK(isnan(dot1(3, i1, i2)), "inf * 0 is NaN");
    float j2[3] = {2.0f, 1.0f, 1.0f};
    CHECK_BITS(dot1(3, i1, j2), INFINITY, "inf stays inf");
    float k1[2] = {INFINITY, -INFINITY}, k2[2] = {1.0f, 1.0f};
    CHECK(isnan(dot1(2, k1, k2)), "inf - inf is NaN");
    float n1[2] = {NAN, 1.0f}, n2[2] = {1.0f, 1.0f};
    CHECK(isnan(dot1(2, n1, n2)), "NaN propagates");
    float o1[2] = {3e38f, 3e38f}, o2[2] = {1.0f, 1.0f};
    CHECK_BITS(dot1(2, o1, o2), INFINITY, "overflow gives inf");
    float q1[2] = {3e38f, -3e38f}, q2[2] = {2.0f, 2.0f};
    /* 6e38 overflows to inf at the first step and stays there (the next
     * fmaf adds the exact -6e38 to inf); a wider accumulator would give 0. */
    CHECK_BITS(dot1(2, q1, q2), INFINITY, "overflow is sticky");
}

static void test_sgemm_errors(void) {
    float a[16] = {0}, b[16] = {0}, c[16] = {0};
    CHECK_ERROR(sb_sgemm('X', 'N', 2, 2, 2, a, 2, b, 2, c, 2), SB_ERR_ARG, "transa");
    CHECK_ERROR(sb_sgemm('N', 'C', 2, 2, 2, a, 2, b, 2, c, 2), SB_ERR_ARG, "transb");
    CHECK_ERROR(sb_sgemm('N', 'N', -1, 2, 2, a, 2, b, 2, c, 2), SB_ERR_ARG, "must be >= 0");
    CHECK_ERROR(sb_sgemm('N', 'N', 2, 2, -3, a, 2, b, 2, c, 2), SB_ERR_ARG, "k = -3");
    CHECK_ERROR(sb_sgemm('N', 'N', 2, 2, 3, a, 2, b, 2, c, 2), SB_ERR_ARG, "lda = 2");
    CHECK_ERROR(sb_sgemm('T', 'N', 3, 2, 2, a, 2, b, 2, c, 2), SB_ERR_ARG, "lda = 2");
    CHECK_ERROR(sb_sgemm('N', 'T', 2, 3, 2, a, 2, b, 1, c, 3), SB_ERR_ARG, "ldb = 1");
    CHECK_ERROR(sb_sgemm('N', 'N', 2, 3, 2, a, 2, b, 3, c, 2), SB_ERR_ARG, "ldc = 2");
    CHECK_ERROR(sb_sgemm('N', 'N', 2, 2, 0, a, 0, b, 2, c, 2), SB_ERR_ARG, "lda = 0");
    CHECK_ERROR(sb_sgemm('N', 'N', 2, 2, 2, NULL, 2, b, 2, c, 2), SB_ERR_NULL, "a is NULL");
    CHECK_ERROR(sb_sgemm('N', 'N', 2, 2, 2, a, 2, NULL, 2, c, 2), SB_ERR_NULL, "b is NULL");
    CHECK_ERROR(sb_sgemm('N', 'N', 2, 2, 2, a, 2, b, 2, NULL, 2), SB_ERR_NULL, "c is NULL");
    CHECK_ERROR(sb_sgemm('N', 'N', 2, 2, 2, a, 2, b, 2, a + 1, 2), SB_ERR_ARG, "c overlaps a");
    CHECK_ERROR(sb_sgemm('N', 'N', 2, 2, 2, a, 2, b, 2, b, 2), SB_ERR_ARG, "c overlaps b");
    CHECK_ERROR(sb_sgemm('N', 'N', INT64_MAX / 2, 2, 2, a, 2, b, 2, c, INT64_MAX / 2), SB_ERR_ARG,
                "too large");
    /* Nothing written on failure. */
    c[0] = 7.0f;
    (void)sb_sgemm('N', 'N', 2, 2, 3, a, 2, b, 2, c, 2);
    CHECK_BITS(c[0], 7.0f, "C untouched after a validation error");
    /* Empty products need no buffers at all. */
    CHECK_OK(sb_sgemm('N', 'N', 0, 0, 5, NULL, 5, NULL, 1, NULL, 1));
}

/* ---- sb_matmul ---- */

/* out[t][i][j] chains computed from explicit op() matrices. */
static void check_matmul_case(int64_t batch_a, int64_t batch_b, int64_t m, int64_t n, int64_t k,
                              bool ta, bool tb) {
    /* batch_x == 0 means "2-D operand". */
    int64_t B = batch_a ? batch_a : (batch_b ? batch_b : 1);
    bool out3 = batch_a || batch_b;
    sb_tensor *a = batch_a ? oracle_tensor(SB_F32, 3, batch_a, ta ? k : m, ta ? m : k, 0)
                           : oracle_tensor(SB_F32, 2, ta ? k : m, ta ? m : k, 0, 0);
    sb_tensor *b = batch_b ? oracle_tensor(SB_F32, 3, batch_b, tb ? n : k, tb ? k : n, 0)
                           : oracle_tensor(SB_F32, 2, tb ? n : k, tb ? k : n, 0, 0);
    sb_tensor *out = out3 ? oracle_tensor(SB_F32, 3, B, m, n, 0) : oracle_tensor(SB_F32, 2, m, n, 0, 0);
    sb_tensor *dout = out3 ? oracle_tensor(SB_F32, 3, B, m, n, 0) : oracle_tensor(SB_F32, 2, m, n, 0, 0);
    sb_tensor *da = batch_a ? oracle_tensor(SB_F32, 3, batch_a, ta ? k : m, ta ? m : k, 0)
                            : oracle_tensor(SB_F32, 2, ta ? k : m, ta ? m : k, 0, 0);
    sb_tensor *db = batch_b ? oracle_tensor(SB_F32, 3, batch_b, tb ? n : k, tb ? k : n, 0)
                            : oracle_tensor(SB_F32, 2, tb ? n : k, tb ? k : n, 0, 0);
    oracle_fill_rand(a); oracle_fill_rand(b); oracle_fill_rand(dout);
    CHECK_OK(sb_matmul(a, b, ta, tb, out));
    CHECK_OK(sb_matmul_backward(dout, a, b, ta, tb, da, db));
    /* OA[t][i][p], OB[t][p][j] as explicit dense arrays. */
    float *OA = malloc((size_t)(B * m * k + 1) * 4), *OB = malloc((size_t)(B * k * n + 1) * 4);
    for (int64_t t = 0; t < B; t++) {
        const float *at = F(a) + (batch_a ? t * m * k : 0), *bt = F(b) + (batch_b ? t * k * n : 0);
        for (int64_t i = 0; i < m; i++)
            for (int64_t p = 0; p < k; p++) OA[(t * m + i) * k + p] = ta ? at[p * m + i] : at[i * k + p];
        for (int64_t p = 0; p < k; p++)
            for (int64_t j = 0; j < n; j++) OB[(t * k + p) * n + j] = tb ? bt[j * k + p] : bt[p * n + j];
    }
    int64_t maxlen = (B * (m + n + k)) + 1;
    float *u = malloc((size_t)maxlen * 4), *v = malloc((size_t)maxlen * 4);
    long bad_f = 0, bad_a = 0, bad_b = 0;
    for (int64_t t = 0; t < B; t++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                for (int64_t p = 0; p < k; p++) { u[p] = OA[(t * m + i) * k + p]; v[p] = OB[(t * k + p) * n + j]; }
                bad_f += !oracle_same(F(out)[(t * m + i) * n + j], oracle_fma_chain(k, u, v));
            }
    /* d op(a)[t][i][p]: terms j (and t first when a is shared). */
    for (int64_t ta_ = 0; ta_ < (batch_a ? B : 1); ta_++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t p = 0; p < k; p++) {
                int64_t len = 0;
                for (int64_t t = batch_a ? ta_ : 0; t < (batch_a ? ta_ + 1 : B); t++)
                    for (int64_t j = 0; j < n; j++) {
                        u[len] = F(dout)[(t * m + i) * n + j];
                        v[len++] = OB[(t * k + p) * n + j];
                    }
                float want = oracle_fma_chain(len, u, v);
                const float *g = F(da) + ta_ * m * k;
                bad_a += !oracle_same(ta ? g[p * m + i] : g[i * k + p], want);
            }
    for (int64_t tb_ = 0; tb_ < (batch_b ? B : 1); tb_++)
        for (int64_t p = 0; p < k; p++)
            for (int64_t j = 0; j < n; j++) {
                int64_t len = 0;
                for (int64_t t = batch_b ? tb_ : 0; t < (batch_b ? tb_ + 1 : B); t++)
                    for (int64_t i = 0; i < m; i++) {
                        u[len] = OA[(t * m + i) * k + p];
                        v[len++] = F(dout)[(t * m + i) * n + j];
                    }
                float want = oracle_fma_chain(len, u, v);
                const float *g = F(db) + tb_ * k * n;
                bad_b += !oracle_same(tb ? g[j * k + p] : g[p * n + j], want);
            }
    CHECK(bad_f == 0 && bad_a == 0 && bad_b == 0,
          "matmul a%lld b%lld m=%lld n=%lld k=%lld ta=%d tb=%d: %ld out, %ld da, %ld db differ",
          (long long)batch_a, (long long)batch_b, (long long)m, (long long)n, (long long)k, ta, tb,
          bad_f, bad_a, bad_b);
    free(OA); free(OB); free(u); free(v);
    sb_tensor_free(a); sb_tensor_free(b); sb_tensor_free(out); sb_tensor_free(dout);
    sb_tensor_free(da); sb_tensor_free(db);
}

static void test_matmul(void) {
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t & 2;
        check_matmul_case(0, 0, 7, 5, 33, ta, tb);
        check_matmul_case(3, 3, 4, 6, 9, ta, tb);
        check_matmul_case(3, 0, 5, 2, 7, ta, tb);  /* shared b */
        check_matmul_case(0, 4, 3, 5, 6, ta, tb);  /* shared a */
        check_matmul_case(2, 2, 1, 1, 0, ta, tb);  /* k = 0 */
        check_matmul_case(0, 2, 2, 3, 2, ta, tb);
    }
    check_matmul_case(0, 0, 1, 65, 130, false, true);
    check_matmul_case(0, 3, 0, 3, 2, false, false); /* m = 0: shared da empty, db is +0 */

    /* The shared-operand gradient is ONE chain over (batch, row): with rows
     * [1e8], [1], [-1e8], [1] in four batches db is 1, not 0 or 2. */
    sb_tensor *a = oracle_tensor(SB_F32, 3, 4, 1, 1, 0), *b = oracle_tensor(SB_F32, 2, 1, 1, 0, 0);
    sb_tensor *d = oracle_tensor(SB_F32, 3, 4, 1, 1, 0), *db = oracle_tensor(SB_F32, 2, 1, 1, 0, 0);
    float av[4] = {1e8f, 1.0f, -1e8f, 1.0f};
    for (int i = 0; i < 4; i++) { F(a)[i] = av[i]; F(d)[i] = 1.0f; }
    F(b)[0] = 2.0f;
    F(db)[0] = NAN;
    CHECK_OK(sb_matmul_backward(d, a, b, false, false, NULL, db));
    CHECK_BITS(F(db)[0], 1.0f, "shared db chains over batches in order");

    /* Errors. */
    sb_tensor *m23 = oracle_tensor(SB_F32, 2, 2, 3, 0, 0), *m34 = oracle_tensor(SB_F32, 2, 3, 4, 0, 0);
    sb_tensor *m24 = oracle_tensor(SB_F32, 2, 2, 4, 0, 0), *m44 = oracle_tensor(SB_F32, 2, 4, 4, 0, 0);
    sb_tensor *i24 = oracle_tensor(SB_I32, 2, 2, 4, 0, 0), *v3 = oracle_tensor(SB_F32, 1, 3, 0, 0, 0);
    sb_tensor *b23 = oracle_tensor(SB_F32, 3, 2, 2, 3, 0), *b334 = oracle_tensor(SB_F32, 3, 3, 3, 4, 0);
    CHECK_OK(sb_matmul(m23, m34, false, false, m24));
    CHECK_ERROR(sb_matmul(NULL, m34, false, false, m24), SB_ERR_NULL, "sb_matmul: a is NULL");
    CHECK_ERROR(sb_matmul(m23, NULL, false, false, m24), SB_ERR_NULL, "b is NULL");
    CHECK_ERROR(sb_matmul(m23, m34, false, false, NULL), SB_ERR_NULL, "out is NULL");
    CHECK_ERROR(sb_matmul(m23, m34, true, false, m24), SB_ERR_SHAPE, "inner dimensions differ");
    CHECK_ERROR(sb_matmul(m23, m34, false, false, m44), SB_ERR_SHAPE, "out has shape [4, 4]");
    CHECK_ERROR(sb_matmul(m23, m34, false, false, i24), SB_ERR_DTYPE, "out has dtype int32");
    CHECK_ERROR(sb_matmul(v3, m34, false, false, m24), SB_ERR_SHAPE, "a must have 2 to 3");
    CHECK_ERROR(sb_matmul(b23, b334, false, false, m24), SB_ERR_SHAPE, "batch sizes differ");
    CHECK_OK(sb_matmul(m34, m34, true, false, m44)); /* (4,3).(3,4) */
    sb_tensor *tv = NULL;
    CHECK_OK(sb_tensor_transpose(&tv, m34, 0, 1));
    CHECK_ERROR(sb_matmul(m23, tv, false, true, m24), SB_ERR_ARG, "b must be contiguous");
    sb_tensor *alias = NULL;
    int64_t s24[2] = {2, 4};
    CHECK_OK(sb_tensor_wrap(&alias, m34->data, SB_F32, 2, s24, NULL));
    CHECK_ERROR(sb_matmul(m23, m34, false, false, alias), SB_ERR_ARG, "out shares memory with b");
    CHECK_ERROR(sb_matmul_backward(m24, m23, m34, false, false, m23, NULL), SB_ERR_ARG,
                "da shares memory with a");
    CHECK_ERROR(sb_matmul_backward(m44, m23, m34, false, false, NULL, NULL), SB_ERR_SHAPE,
                "dout has shape [4, 4]");
    CHECK_ERROR(sb_matmul_backward(m24, m23, m34, false, false, m24, NULL), SB_ERR_SHAPE,
                "da has shape [2, 4]");
    CHECK_ERROR(sb_matmul_backward(m24, m23, m34, false, false, NULL, i24), SB_ERR_DTYPE, "db");
    CHECK_ERROR(sb_matmul_backward(NULL, m23, m34, false, false, NULL, NULL), SB_ERR_NULL,
                "dout is NULL");
    sb_tensor *list[] = {a, b, d, db, m23, m34, m24, m44, i24, v3, b23, b334, tv, alias};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

/* ---- linear ---- */

static void check_linear_case(int nd, const int64_t *lead, int64_t in, int64_t out, bool bias) {
    int64_t xs[4], ys[4], rows = 1;
    for (int i = 0; i < nd - 1; i++) { xs[i] = ys[i] = lead[i]; rows *= lead[i]; }
    xs[nd - 1] = in; ys[nd - 1] = out;
    sb_tensor *x, *y, *dy, *dx, *w = oracle_tensor(SB_F32, 2, out, in, 0, 0), *dw = oracle_tensor(SB_F32, 2, out, in, 0, 0);
    sb_tensor *b = oracle_tensor(SB_F32, 1, out, 0, 0, 0), *db = oracle_tensor(SB_F32, 1, out, 0, 0, 0);
    sb_tensor_new(&x, SB_F32, nd, xs); sb_tensor_new(&dx, SB_F32, nd, xs);
    sb_tensor_new(&y, SB_F32, nd, ys); sb_tensor_new(&dy, SB_F32, nd, ys);
    oracle_fill_rand(x); oracle_fill_rand(w); oracle_fill_rand(b); oracle_fill_rand(dy);
    sb_tensor_fill(dx, NAN); sb_tensor_fill(dw, NAN); sb_tensor_fill(db, NAN);
    CHECK_OK(sb_linear_forward(x, w, bias ? b : NULL, y));
    CHECK_OK(sb_linear_backward(dy, x, w, dx, dw, db));
    int64_t big = (rows > in ? rows : in) + out + 1;
    float *u = malloc((size_t)big * 4), *v = malloc((size_t)big * 4);
    long bad_y = 0, bad_dx = 0, bad_dw = 0, bad_db = 0, far = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t o = 0; o < out; o++) {
            for (int64_t i = 0; i < in; i++) { u[i] = F(x)[r * in + i]; v[i] = F(w)[o * in + i]; }
            float want = oracle_fma_chain(in, u, v);
            if (bias) want = want + F(b)[o];
            bad_y += !oracle_same(F(y)[r * out + o], want);
        }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < in; i++) {
            double ref = 0, mag = 0;
            for (int64_t o = 0; o < out; o++) {
                u[o] = F(dy)[r * out + o]; v[o] = F(w)[o * in + i];
                ref += (double)u[o] * v[o]; mag += fabs((double)u[o] * v[o]);
            }
            float got = F(dx)[r * in + i];
            bad_dx += !oracle_same(got, oracle_fma_chain(out, u, v));
            far += fabs(got - ref) > (out + 1) * FLT_EPSILON * mag + 1e-30;
        }
    for (int64_t o = 0; o < out; o++) {
        for (int64_t i = 0; i < in; i++) {
            for (int64_t r = 0; r < rows; r++) { u[r] = F(dy)[r * out + o]; v[r] = F(x)[r * in + i]; }
            bad_dw += !oracle_same(F(dw)[o * in + i], oracle_fma_chain(rows, u, v));
        }
        double ref = 0, mag = 0;
        for (int64_t r = 0; r < rows; r++) { u[r] = F(dy)[r * out + o]; ref += u[r]; mag += fabs(u[r]); }
        bad_db += !oracle_same(F(db)[o], oracle_canonical_sum(u, rows));
        far += fabs(F(db)[o] - ref) > 4 * FLT_EPSILON * mag * (1 + log2((double)rows + 1)) + 1e-30;
    }
    CHECK(bad_y + bad_dx + bad_dw + bad_db == 0 && far == 0,
          "linear nd=%d rows=%lld in=%lld out=%lld: y %ld, dx %ld, dw %ld, db %ld differ; %ld far",
          nd, (long long)rows, (long long)in, (long long)out, bad_y, bad_dx, bad_dw, bad_db, far);
    free(u); free(v);
    sb_tensor *list[] = {x, y, dy, dx, w, dw, b, db};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

static void test_linear(void) {
    int64_t l1[1] = {0}, l2[1] = {7}, l3[2] = {3, 5}, l4[3] = {2, 1, 3}, l5[1] = {70};
    check_linear_case(1, l1, 33, 5, true);    /* 1-D x: one row */
    check_linear_case(2, l2, 13, 9, true);
    check_linear_case(3, l3, 65, 4, false);
    check_linear_case(4, l4, 1, 130, true);
    check_linear_case(2, l5, 3, 2, true);     /* 70 rows: db uses all 32 lanes */
    check_linear_case(2, l2, 0, 3, true);     /* in = 0: y = +0 + b */
    int64_t l6[1] = {sb_test_quick() ? 8200 : 20000};
    check_linear_case(2, l6, 2, 2, true);     /* db over > 8192 rows: two levels */

    /* db is the canonical sum, not a sequential one: with 33 rows the 33rd
     * element shares lane 0 with the first. */
    sb_tensor *x = oracle_tensor(SB_F32, 2, 33, 1, 0, 0), *w = oracle_tensor(SB_F32, 2, 1, 1, 0, 0);
    sb_tensor *dy = oracle_tensor(SB_F32, 2, 33, 1, 0, 0), *db = oracle_tensor(SB_F32, 1, 1, 0, 0, 0);
    for (int i = 0; i < 33; i++) F(dy)[i] = 1.0f;
    F(dy)[0] = 1e8f; F(dy)[32] = -1e8f;
    CHECK_OK(sb_linear_backward(dy, x, w, NULL, NULL, db));
    float seq = 0.0f;
    for (int i = 0; i < 33; i++) seq += F(dy)[i];
    CHECK_BITS(F(db)[0], 31.0f, "db = canonical sum (lane 0: 1e8 - 1e8, then 31 ones)");
    CHECK(seq != 31.0f, "the example is order-sensitive (sequential gives %g)", seq);

    /* Bias is added after the chain: x.w = 1e8 + 1 (chain rounds to 1e8) and
     * bias -1e8 gives 0; folding the bias in first would give 1. */
    sb_tensor *x2 = oracle_tensor(SB_F32, 2, 1, 2, 0, 0), *w2 = oracle_tensor(SB_F32, 2, 1, 2, 0, 0);
    sb_tensor *b2 = oracle_tensor(SB_F32, 1, 1, 0, 0, 0), *y2 = oracle_tensor(SB_F32, 2, 1, 1, 0, 0);
    F(x2)[0] = 1e8f; F(x2)[1] = 1.0f; F(w2)[0] = 1.0f; F(w2)[1] = 1.0f; F(b2)[0] = -1e8f;
    CHECK_OK(sb_linear_forward(x2, w2, b2, y2));
    CHECK_BITS(F(y2)[0], 0.0f, "bias added after the chain");
    /* -0 chain result plus bias: chain is +0, +0 + -0 = +0. */
    F(x2)[0] = -0.0f; F(x2)[1] = 0.0f; F(b2)[0] = -0.0f;
    CHECK_OK(sb_linear_forward(x2, w2, b2, y2));
    CHECK_BITS(F(y2)[0], 0.0f, "+0 chain + (-0) bias");

    /* Errors. */
    sb_tensor *x3 = oracle_tensor(SB_F32, 2, 4, 3, 0, 0), *w3 = oracle_tensor(SB_F32, 2, 5, 3, 0, 0);
    sb_tensor *b3 = oracle_tensor(SB_F32, 1, 5, 0, 0, 0), *y3 = oracle_tensor(SB_F32, 2, 4, 5, 0, 0);
    sb_tensor *bad_b = oracle_tensor(SB_F32, 1, 4, 0, 0, 0), *bad_y = oracle_tensor(SB_F32, 2, 5, 4, 0, 0);
    sb_tensor *i3 = oracle_tensor(SB_I64, 2, 4, 3, 0, 0), *s0 = oracle_tensor(SB_F32, 0, 0, 0, 0, 0);
    sb_tensor *dx3 = oracle_tensor(SB_F32, 2, 4, 3, 0, 0), *dw3 = oracle_tensor(SB_F32, 2, 5, 3, 0, 0);
    sb_tensor *w4 = oracle_tensor(SB_F32, 2, 5, 4, 0, 0), *w3d = oracle_tensor(SB_F32, 3, 5, 3, 1, 0);
    CHECK_OK(sb_linear_forward(x3, w3, b3, y3));
    CHECK_ERROR(sb_linear_forward(NULL, w3, b3, y3), SB_ERR_NULL, "sb_linear_forward: x is NULL");
    CHECK_ERROR(sb_linear_forward(x3, NULL, b3, y3), SB_ERR_NULL, "w is NULL");
    CHECK_ERROR(sb_linear_forward(x3, w3, b3, NULL), SB_ERR_NULL, "y is NULL");
    CHECK_ERROR(sb_linear_forward(x3, w4, b3, y3), SB_ERR_SHAPE, "in_features = 4");
    CHECK_ERROR(sb_linear_forward(x3, w3d, b3, y3), SB_ERR_SHAPE, "w must have 2 dimensions");
    CHECK_ERROR(sb_linear_forward(x3, w3, bad_b, y3), SB_ERR_SHAPE, "bias has shape [4]");
    CHECK_ERROR(sb_linear_forward(x3, w3, b3, bad_y), SB_ERR_SHAPE, "y has shape [5, 4]");
    CHECK_ERROR(sb_linear_forward(i3, w3, b3, y3), SB_ERR_DTYPE, "x has dtype int64");
    CHECK_ERROR(sb_linear_forward(s0, w3, b3, y3), SB_ERR_SHAPE, "x must have 1 to");
    sb_tensor *tv = NULL;
    CHECK_OK(sb_tensor_transpose(&tv, w3, 0, 1));
    sb_tensor *tv2 = NULL;
    CHECK_OK(sb_tensor_transpose(&tv2, tv, 0, 1)); /* contiguous again */
    CHECK_OK(sb_linear_forward(x3, tv2, b3, y3));
    sb_tensor *xt = NULL;
    int64_t shp[2] = {4, 3}, str[2] = {1, 4};
    CHECK_OK(sb_tensor_wrap(&xt, F(y3), SB_F32, 2, shp, str));
    CHECK_ERROR(sb_linear_forward(xt, w3, b3, y3), SB_ERR_ARG, "x must be contiguous");
    F(y3)[0] = 42.0f;
    CHECK_ERROR(sb_linear_forward(x3, w3, b3, x3), SB_ERR_SHAPE, "y has shape [4, 3]");
    CHECK_BITS(F(y3)[0], 42.0f, "y untouched after an error");
    CHECK_OK(sb_linear_backward(y3, x3, w3, dx3, dw3, b3));
    CHECK_ERROR(sb_linear_backward(NULL, x3, w3, dx3, dw3, b3), SB_ERR_NULL, "dy is NULL");
    CHECK_ERROR(sb_linear_backward(y3, x3, w3, dw3, NULL, NULL), SB_ERR_SHAPE, "dx has shape [5, 3]");
    CHECK_ERROR(sb_linear_backward(y3, x3, w3, NULL, dx3, NULL), SB_ERR_SHAPE, "dw has shape [4, 3]");
    CHECK_ERROR(sb_linear_backward(y3, x3, w3, NULL, NULL, bad_b), SB_ERR_SHAPE, "db has shape [4]");
    CHECK_ERROR(sb_linear_backward(bad_y, x3, w3, NULL, NULL, NULL), SB_ERR_SHAPE, "dy has shape [5, 4]");
    CHECK_ERROR(sb_linear_backward(y3, x3, w3, x3, NULL, NULL), SB_ERR_ARG, "dx shares memory with x");
    CHECK_ERROR(sb_linear_backward(y3, x3, w3, dx3, dx3, NULL), SB_ERR_SHAPE, "dw");
    sb_tensor *alias_db = NULL;
    int64_t s5[1] = {5};
    CHECK_OK(sb_tensor_wrap(&alias_db, F(dw3), SB_F32, 1, s5, NULL));
    CHECK_ERROR(sb_linear_backward(y3, x3, w3, NULL, dw3, alias_db), SB_ERR_ARG, "dw shares memory with db");
    sb_tensor *list[] = {x, w, dy, db, x2, w2, b2, y2, x3, w3, b3, y3, bad_b, bad_y, i3, s0, dx3,
                         dw3, w4, w3d, tv, tv2, xt, alias_db};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

int main(int argc, char **argv) {
    oracle_seed(0x9e3779b97f4a7c15ull);
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    mpfr_set_emin(-148);
    mpfr_set_emax(128);
    test_sgemm_random();
    test_sgemm_order_and_specials();
    test_sgemm_errors();
    test_matmul();
    test_linear();
    return sb_test_finish();
}
