/* Differential tests of the fast non-GEMM backend (src/cpu/pointwise*.c,
 * softmax.c, optim.c, sum_*.c): for every ISA level x thread count of
 * tests/support/fastpath.h, the public op must give the reference kernel's
 * bits (src/ref/, src/optim/) and the canonical sum an independent plain
 * restatement of the contract's rule.
 *
 * Arithmetic NaNs compare as "both NaN" (their payload is not part of the
 * contract, section "Elementwise"); NaNs that an op returns unchanged
 * (relu, maximum, neg) must keep their exact bits. */
#include <math.h>
#include "core/canonical_sum.h"
#include "cpu/kernels.h"
#include "cpu/ops_internal.h"
#include "harness.h"
#include "ref/ref_loss.h"
#include "ref/ref_optim.h"
#include "ref/ref_pointwise.h"
#include "ops/validate.h"
#include "samebits.h"
#include "support/fastpath.h"

/* ---- helpers ---------------------------------------------------------------- */


static void fill(float *x, int64_t n, bool adv) {
    for (int64_t i = 0; i < n; i++) x[i] = adv ? sb_test_adversarial(4.0f) : sb_test_unif(-3.0f, 3.0f);
}

static bool same(float a, float b, bool exact_nan) {
    if (sb_test_bits(a) == sb_test_bits(b)) return true;
    return !exact_nan && isnan(a) && isnan(b);
}

/* Counts one check for a whole buffer; reports the first difference. */
static void check_buf(const float *got, const float *want, int64_t n, bool exact_nan,
                      const char *what, const char *cfg) {
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++)
        if (!same(got[i], want[i], exact_nan)) bad = i;
    CHECK(bad < 0, "%s [%s]: element %lld: got %a (0x%08x) want %a (0x%08x)", what, cfg,
          (long long)bad, bad >= 0 ? got[bad] : 0.0f, bad >= 0 ? sb_test_bits(got[bad]) : 0u,
          bad >= 0 ? want[bad] : 0.0f, bad >= 0 ? sb_test_bits(want[bad]) : 0u);
}

static sb_tensor view(float *data, int ndim, const int64_t *shape) {
    sb_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = SB_F32;
    t.ndim = ndim;
    t.data = data;
    int64_t st = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        t.shape[d] = shape[d];
        t.strides[d] = st;
        st *= shape[d];
    }
    return t;
}

static float *alloc(int64_t n) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    return p;
}

/* ---- canonical sum ---------------------------------------------------------------- */

/* The rule restated as plainly as possible (contract "The canonical sum"). */
static float plain_block(const float *x, int64_t n, int64_t stride) {
    float lane[32];
    for (int j = 0; j < 32; j++) lane[j] = -0.0f;
    for (int64_t i = 0; i < n; i++) lane[i % 32] = lane[i % 32] + x[i * stride];
    for (int s = 16; s >= 1; s /= 2)
        for (int j = 0; j < s; j++) lane[j] = lane[j] + lane[j + s];
    return lane[0];
}

static float plain_canonical(const float *x, int64_t n, int64_t stride) {
    if (n == 0) return 0.0f;
    if (n <= 8192) return plain_block(x, n, stride);
    int64_t nb = (n + 8191) / 8192;
    float *sums = alloc(nb);
    for (int64_t b = 0; b < nb; b++) {
        int64_t len = n - b * 8192 < 8192 ? n - b * 8192 : 8192;
        sums[b] = plain_block(x + b * 8192 * stride, len, stride);
    }
    float r = plain_canonical(sums, nb, 1);
    free(sums);
    return r;
}

static void test_canonical_sum(void) {
    /* every ragged-row length 1..31 (the vector blocks' masked lanes) */
    const int64_t sizes[] = {0,    1,    2,    3,    4,    5,    6,    7,     8,     9,
                             15,   16,   17,   23,   24,   25,   31,   32,    33,    40,
                             47,   48,   49,   55,   56,   57,   63,   64,    65,    100,
                             127,  128,  1000, 8191, 8192, 8193, 16384 + 31, 32 * 8192,
                             32 * 8192 + 17, 300007};
    const int nsizes = sizeof sizes / sizeof sizes[0];
    int64_t maxn = 300007 * 3;
    float *x = alloc(maxn);
    /* Values of wildly different magnitudes: any other order of additions
     * changes the bits. */
    for (int64_t i = 0; i < maxn; i++) {
        int k = (int)(sb_test_rand32() % 8);
        x[i] = k == 0 ? sb_test_unif(-1e8f, 1e8f) : k == 1 ? sb_test_adversarial(4.0f) : sb_test_unif(-1.0f, 1.0f);
        if (!isfinite(x[i])) x[i] = sb_test_unif(-1e3f, 1e3f);
    }
    float *flat = alloc(maxn);
    for (int64_t i = 0; i < maxn; i++) flat[i] = sb_test_unif(0.5f, 1.0f);
    /* the order matters on this data: a sequential sum differs */
    {
        float seq = 0.0f;
        for (int64_t i = 0; i < 300007; i++) seq += x[i];
        CHECK(sb_test_bits(seq) != sb_test_bits(plain_canonical(x, 300007, 1)),
              "test data must make the summation order visible");
    }
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        const char *cfg = sb_test_config_name(c);
        for (int s = 0; s < nsizes; s++) {
            int64_t n = sizes[s];
            for (int64_t stride = 1; stride <= 3; stride += 2) {
                float want = plain_canonical(x, n, stride);
                CHECK_BITS(sb_test_ssum(n, x, stride), want, "sb_ssum n=%lld stride=%lld [%s]",
                           (long long)n, (long long)stride, cfg);
                /* terms of one magnitude, where a term left out or added
                 * twice always shows (x's huge terms absorb small ones) */
                CHECK_BITS(sb_test_ssum(n, flat, stride), plain_canonical(flat, n, stride),
                           "sb_ssum of flat terms n=%lld stride=%lld [%s]", (long long)n,
                           (long long)stride, cfg);
            }
            /* streaming with ragged pieces must equal the whole */
            sb_sum_acc acc;
            sb_sum_init(&acc);
            int64_t i = 0;
            while (i < n) {
                int64_t k = 1 + (int64_t)(sb_test_rand32() % 700);
                if (sb_test_rand32() % 5 == 0) k = 1 + (int64_t)(sb_test_rand32() % 20000);
                if (k > n - i) k = n - i;
                if (sb_test_rand32() % 3 == 0) {
                    for (int64_t j = 0; j < k; j++) sb_sum_add(&acc, x[i + j]);
                } else {
                    sb_sum_add_n(&acc, x + i, k);
                }
                i += k;
            }
            CHECK_BITS(sb_sum_result(&acc), plain_canonical(x, n, 1),
                       "sb_sum_add_n pieces n=%lld [%s]", (long long)n, cfg);
        }
    }
    sb_test_config_reset();
    free(flat);
    /* A sum past one batch of 1024 blocks (8M elements), on two settings. */
    if (!sb_test_quick()) {
        int64_t n = 1024 * 8192 + 4099;
        float *big = alloc(n);
        for (int64_t i = 0; i < n; i++) big[i] = x[i % maxn] * (float)(1 + i % 7);
        float want = plain_canonical(big, n, 1);
        sb_set_num_threads(1);
        CHECK_BITS(sb_test_ssum(n, big, 1), want, "8M sum, 1 thread");
        sb_set_num_threads(4);
        CHECK_BITS(sb_test_ssum(n, big, 1), want, "8M sum, 4 threads");
        sb_test_config_reset();
        free(big);
    }
    /* signed zeros and NaN */
    float z[100];
    for (int i = 0; i < 100; i++) z[i] = -0.0f;
    CHECK_BITS(sb_test_ssum(100, z, 1), -0.0f, "sum of -0 is -0");
    z[77] = sb_test_from_bits(0x7fc00000u);
    CHECK(isnan(sb_test_ssum(100, z, 1)), "NaN propagates");
    /* the ragged row's untouched lanes must stay -0: a sum of -0 and +0
     * terms is +0 only where a +0 lands in a lane, and -0 where none does */
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        for (int n = 1; n <= 70; n++) {
            for (int i = 0; i < n; i++) z[i] = -0.0f;
            CHECK_BITS(sb_test_ssum(n, z, 1), -0.0f, "%d negative zeros [%s]", n,
                       sb_test_config_name(c));
            z[n - 1] = 0.0f;
            CHECK_BITS(sb_test_ssum(n, z, 1), plain_canonical(z, n, 1),
                       "%d zeros, the last +0 [%s]", n, sb_test_config_name(c));
            z[n - 1] = sb_test_from_bits(0x7fc00000u);
            CHECK(isnan(sb_test_ssum(n, z, 1)), "%d terms, NaN last [%s]", n,
                  sb_test_config_name(c));
        }
    }
    sb_test_config_reset();
    free(x);
}

/* ---- relu, binary, unary, activations ------------------------------------------- */

static void test_relu(void) {
    const int64_t sizes[] = {1, 7, 17, 100, 4703, 100 * 6 * 28 * 28 + 3};
    int64_t maxn = 100 * 6 * 28 * 28 + 3;
    float *x = alloc(maxn), *dy = alloc(maxn), *want = alloc(maxn), *got = alloc(maxn);
    fill(x, maxn, true);
    fill(dy, maxn, true);
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        const char *cfg = sb_test_config_name(c);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            int64_t n = sizes[s];
            sb_tensor tx = view(x, 1, &n), tdy = view(dy, 1, &n), tg = view(got, 1, &n);
            sb_ref_relu_forward(n, x, want);
            CHECK_OK(sb_relu_forward(&tx, &tg));
            check_buf(got, want, n, true, "relu forward", cfg);
            sb_ref_relu_backward(n, x, dy, want);
            CHECK_OK(sb_relu_backward(&tx, &tdy, &tg));
            check_buf(got, want, n, true, "relu backward", cfg);
        }
        /* a transposed input (strided path) */
        int64_t shape[2] = {37, 53}, tshape[2] = {53, 37};
        sb_tensor tx = view(x, 2, shape), tt = tx;
        tt.shape[0] = 53; tt.shape[1] = 37; tt.strides[0] = 1; tt.strides[1] = 53;
        sb_tensor tg = view(got, 2, tshape);
        CHECK_OK(sb_relu_forward(&tt, &tg));
        for (int64_t i = 0; i < 53; i++)
            for (int64_t j = 0; j < 37; j++) want[i * 37 + j] = sb_pw_relu1(x[j * 53 + i]);
        check_buf(got, want, 53 * 37, true, "relu forward transposed", cfg);
    }
    sb_test_config_reset();
    free(x); free(dy); free(want); free(got);
}

/* Materialises a broadcast view into a contiguous buffer of out's shape. */
static void materialise(const float *src, int nd, const int64_t *shape, const int64_t *strides,
                        float *dst) {
    int64_t n = 1, idx[SB_MAX_DIMS] = {0};
    for (int d = 0; d < nd; d++) n *= shape[d];
    for (int64_t e = 0; e < n; e++) {
        int64_t off = 0;
        for (int d = 0; d < nd; d++) off += idx[d] * strides[d];
        dst[e] = src[off];
        for (int d = nd - 1; d >= 0; d--) {
            if (++idx[d] < shape[d]) break;
            idx[d] = 0;
        }
    }
}

static void test_binary(void) {
    /* (a shape, b shape) pairs with broadcasting; out shape is the first
     * unless noted */
    typedef struct { int nda; int64_t a[3]; int ndb; int64_t b[3]; int nd; int64_t o[3]; } bcase;
    const bcase cases[] = {
        {1, {100003}, 1, {100003}, 1, {100003}},
        {3, {5, 7, 13}, 2, {7, 1}, 3, {5, 7, 13}},
        {2, {1, 129}, 2, {67, 1}, 2, {67, 129}},
        {3, {64, 3, 200}, 0, {0}, 3, {64, 3, 200}},
        {0, {0}, 2, {9, 11}, 2, {9, 11}},
        {2, {300, 301}, 1, {301}, 2, {300, 301}},
    };
    int64_t maxn = 100003 * 2;
    float *a = alloc(maxn), *b = alloc(maxn), *got = alloc(maxn), *want = alloc(maxn);
    float *ma = alloc(maxn), *mb = alloc(maxn);
    fill(a, maxn, true);
    fill(b, maxn, true);
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        const char *cfg = sb_test_config_name(c);
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            const bcase *bc = &cases[k];
            sb_tensor ta = view(a, bc->nda, bc->a), tb = view(b, bc->ndb, bc->b);
            sb_tensor to = view(got, bc->nd, bc->o);
            int64_t n = sb_tensor_numel(&to);
            sb_tensor va, vb;
            CHECK_OK(sb_pw_broadcast_view("test", "a", &ta, bc->nd, bc->o, &va));
            CHECK_OK(sb_pw_broadcast_view("test", "b", &tb, bc->nd, bc->o, &vb));
            materialise(a, bc->nd, bc->o, va.strides, ma);
            materialise(b, bc->nd, bc->o, vb.strides, mb);
            for (int op = SB_BINARY_ADD; op <= SB_BINARY_POW; op++) {
                char what[64];
                snprintf(what, sizeof what, "binary op %d case %zu", op, k);
                sb_ref_binary((sb_binary_op)op, n, ma, mb, want);
                CHECK_OK(sb_binary((sb_binary_op)op, &ta, &tb, &to));
                bool exact = op >= SB_BINARY_MAXIMUM;
                check_buf(got, want, n, exact, what, cfg);
            }
        }
        /* scalar forms and in place */
        int64_t n = 77777;
        sb_tensor tx = view(a, 1, &n), to = view(got, 1, &n);
        float s = b[5];
        for (int op = SB_BINARY_ADD; op <= SB_BINARY_POW; op++) {
            for (int64_t i = 0; i < n; i++) want[i] = sb_ref_binary1((sb_binary_op)op, a[i], s);
            CHECK_OK(sb_binary_scalar((sb_binary_op)op, &tx, s, &to));
            check_buf(got, want, n, op >= SB_BINARY_MAXIMUM, "binary scalar", cfg);
            memcpy(got, a, (size_t)n * sizeof *got);
            CHECK_OK(sb_binary_scalar((sb_binary_op)op, &to, s, &to));
            check_buf(got, want, n, op >= SB_BINARY_MAXIMUM, "binary scalar in place", cfg);
        }
        /* backward without broadcasting: the raw per-element gradients */
        for (int op = SB_BINARY_ADD; op <= SB_BINARY_POW; op++) {
            int64_t m = 20011;
            sb_tensor tdy = view(ma, 1, &m), t1 = view(a, 1, &m), t2 = view(b, 1, &m);
            sb_tensor tga = view(got, 1, &m), tgb = view(mb, 1, &m);
            float *wa = want, *wb = want + m;
            fill(ma, m, false);
            sb_ref_binary_backward((sb_binary_op)op, m, ma, a, b, wa, wb);
            CHECK_OK(sb_binary_backward((sb_binary_op)op, &tdy, &t1, &t2, &tga, &tgb));
            check_buf(got, wa, m, false, "binary backward da", cfg);
            check_buf(mb, wb, m, false, "binary backward db", cfg);
        }
    }
    sb_test_config_reset();
    free(a); free(b); free(got); free(want); free(ma); free(mb);
}

/* Every kink of the piecewise-linear activations tested below (hardtanh's
 * (-2, 1.5) and (0, 6), hardsigmoid's and hardswish's -3 and 3, x + 3
 * reaching 0 and 6), its float neighbours, and signed zeros, planted at
 * scattered positions so that both the vector lanes and the scalar tails
 * meet them. */
static void plant_kinks(float *x, int64_t n) {
    static const float kinks[] = {-3.0f, 3.0f, -2.0f, 1.5f, 0.0f, 6.0f};
    int64_t at = 5;
    for (size_t k = 0; k < sizeof kinks / sizeof kinks[0]; k++) {
        float v = kinks[k];
        float near[] = {v, nextafterf(v, -INFINITY), nextafterf(v, INFINITY), -v};
        for (size_t j = 0; j < 4 && at < n; j++, at += 7919) x[at] = near[j];
    }
    for (int64_t i = n - 5; i < n; i++) x[i] = (i % 2) ? -3.0f : 3.0f; /* the tail */
}

static void test_unary_and_activations(void) {
    int64_t n = 40009;
    float *x = alloc(n), *y = alloc(n), *dy = alloc(n), *got = alloc(n), *want = alloc(n);
    fill(x, n, true);
    plant_kinks(x, n);
    fill(dy, n, true);
    sb_tensor tx = view(x, 1, &n), ty = view(y, 1, &n), tdy = view(dy, 1, &n);
    sb_tensor tg = view(got, 1, &n);
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        const char *cfg = sb_test_config_name(c);
        for (int op = SB_UNARY_NEG; op <= SB_UNARY_RSQRT; op++) {
            sb_ref_unary((sb_unary_op)op, n, x, want);
            CHECK_OK(sb_unary((sb_unary_op)op, &tx, &tg));
            check_buf(got, want, n, op == SB_UNARY_NEG || op == SB_UNARY_ABS, "unary", cfg);
            sb_ref_unary((sb_unary_op)op, n, x, y);
            sb_ref_unary_backward((sb_unary_op)op, n, x, y, dy, want);
            CHECK_OK(sb_unary_backward((sb_unary_op)op, &tx, &ty, &tdy, &tg));
            check_buf(got, want, n, false, "unary backward", cfg);
        }
        sb_ref_leaky_relu_forward(n, x, 0.01f, want);
        CHECK_OK(sb_leaky_relu_forward(&tx, 0.01f, &tg));
        check_buf(got, want, n, true, "leaky relu", cfg);
        sb_ref_leaky_relu_backward(n, x, dy, 0.01f, want);
        CHECK_OK(sb_leaky_relu_backward(&tx, &tdy, 0.01f, &tg));
        check_buf(got, want, n, false, "leaky relu backward", cfg);
        sb_ref_tanh_forward(n, x, want);
        CHECK_OK(sb_tanh_forward(&tx, &tg));
        check_buf(got, want, n, false, "tanh", cfg);
        sb_ref_sigmoid_forward(n, x, want);
        CHECK_OK(sb_sigmoid_forward(&tx, &tg));
        check_buf(got, want, n, false, "sigmoid", cfg);
        /* the backward rules read the forward's output y: here x itself,
         * which covers every sign, zero, subnormal, inf and NaN */
        sb_ref_tanh_backward(n, x, dy, want);
        CHECK_OK(sb_tanh_backward(&tx, &tdy, &tg));
        check_buf(got, want, n, false, "tanh backward", cfg);
        sb_ref_sigmoid_backward(n, x, dy, want);
        CHECK_OK(sb_sigmoid_backward(&tx, &tdy, &tg));
        check_buf(got, want, n, false, "sigmoid backward", cfg);
        memcpy(got, dy, (size_t)n * sizeof *got);
        sb_ref_sigmoid_backward(n, x, dy, want);
        CHECK_OK(sb_sigmoid_backward(&tx, &tg, &tg));
        check_buf(got, want, n, false, "sigmoid backward in place", cfg);
        sb_ref_silu_forward(n, x, want);
        CHECK_OK(sb_silu_forward(&tx, &tg));
        check_buf(got, want, n, false, "silu", cfg);
        sb_ref_silu_backward(n, x, dy, want);
        CHECK_OK(sb_silu_backward(&tx, &tdy, &tg));
        check_buf(got, want, n, false, "silu backward", cfg);
        for (int tanh_form = 0; tanh_form < 2; tanh_form++) {
            sb_ref_gelu_forward(n, x, tanh_form, want);
            CHECK_OK(sb_gelu_forward(&tx, tanh_form, &tg));
            check_buf(got, want, n, false, tanh_form ? "gelu tanh" : "gelu", cfg);
            sb_ref_gelu_backward(n, x, dy, tanh_form, want);
            CHECK_OK(sb_gelu_backward(&tx, &tdy, tanh_form, &tg));
            check_buf(got, want, n, false, tanh_form ? "gelu tanh backward" : "gelu backward",
                      cfg);
        }
        /* in place: dx over dy, y over x (each element's inputs are read
         * before its output is written) */
        memcpy(got, dy, (size_t)n * sizeof *got);
        sb_ref_gelu_backward(n, x, dy, false, want);
        CHECK_OK(sb_gelu_backward(&tx, &tg, false, &tg));
        check_buf(got, want, n, false, "gelu backward in place", cfg);
        memcpy(got, x, (size_t)n * sizeof *got);
        sb_ref_gelu_forward(n, x, false, want);
        CHECK_OK(sb_gelu_forward(&tg, false, &tg));
        check_buf(got, want, n, false, "gelu in place", cfg);
        sb_ref_softplus_backward(n, x, dy, 1.0f, 20.0f, want);
        CHECK_OK(sb_softplus_backward(&tx, &tdy, 1.0f, 20.0f, &tg));
        check_buf(got, want, n, false, "softplus backward", cfg);
        /* the piecewise-linear ones: hardtanh as relu6 too */
        for (int r = 0; r < 2; r++) {
            float lo = r ? 0.0f : -2.0f, hi = r ? 6.0f : 1.5f;
            sb_ref_hardtanh_forward(n, x, lo, hi, want);
            CHECK_OK(sb_hardtanh_forward(&tx, lo, hi, &tg));
            check_buf(got, want, n, true, "hardtanh", cfg);
            sb_ref_hardtanh_backward(n, x, dy, lo, hi, want);
            CHECK_OK(sb_hardtanh_backward(&tx, &tdy, lo, hi, &tg));
            check_buf(got, want, n, false, "hardtanh backward", cfg);
        }
        sb_ref_hardsigmoid_forward(n, x, want);
        CHECK_OK(sb_hardsigmoid_forward(&tx, &tg));
        check_buf(got, want, n, false, "hardsigmoid", cfg);
        sb_ref_hardsigmoid_backward(n, x, dy, want);
        CHECK_OK(sb_hardsigmoid_backward(&tx, &tdy, &tg));
        check_buf(got, want, n, false, "hardsigmoid backward", cfg);
        sb_ref_hardswish_forward(n, x, want);
        CHECK_OK(sb_hardswish_forward(&tx, &tg));
        check_buf(got, want, n, false, "hardswish", cfg);
        sb_ref_hardswish_backward(n, x, dy, want);
        CHECK_OK(sb_hardswish_backward(&tx, &tdy, &tg));
        check_buf(got, want, n, false, "hardswish backward", cfg);
        /* ELU as elu(1.5), SELU's coefficients and celu(2) = (2, 1, 0.5) */
        static const float elu_p[3][3] = {{1.5f, 1.0f, 1.0f},
                                          {0x1.ac5afap+0f, 0x1.0cfabep+0f, 1.0f},
                                          {2.0f, 1.0f, 0.5f}};
        for (int e = 0; e < 3; e++) {
            const float *p = elu_p[e];
            sb_ref_elu_forward(n, x, p[0], p[1], p[2], want);
            CHECK_OK(sb_elu_forward(&tx, p[0], p[1], p[2], &tg));
            check_buf(got, want, n, false, "elu", cfg);
            sb_ref_elu_backward(n, x, dy, p[0], p[1], p[2], want);
            CHECK_OK(sb_elu_backward(&tx, &tdy, p[0], p[1], p[2], &tg));
            check_buf(got, want, n, false, "elu backward", cfg);
        }
        sb_ref_mish_forward(n, x, want);
        CHECK_OK(sb_mish_forward(&tx, &tg));
        check_buf(got, want, n, false, "mish", cfg);
        sb_ref_mish_backward(n, x, dy, want);
        CHECK_OK(sb_mish_backward(&tx, &tdy, &tg));
        check_buf(got, want, n, false, "mish backward", cfg);
        sb_ref_logsigmoid_forward(n, x, want);
        CHECK_OK(sb_logsigmoid_forward(&tx, &tg));
        check_buf(got, want, n, false, "logsigmoid", cfg);
        sb_ref_logsigmoid_backward(n, x, dy, want);
        CHECK_OK(sb_logsigmoid_backward(&tx, &tdy, &tg));
        check_buf(got, want, n, false, "logsigmoid backward", cfg);
        sb_ref_softshrink_forward(n, x, 0.5f, want);
        CHECK_OK(sb_softshrink_forward(&tx, 0.5f, &tg));
        check_buf(got, want, n, false, "softshrink", cfg);
        sb_ref_threshold_forward(n, x, 0.25f, -2.0f, want);
        CHECK_OK(sb_threshold_forward(&tx, 0.25f, -2.0f, &tg));
        check_buf(got, want, n, false, "threshold", cfg);
    }
    sb_test_config_reset();
    free(x); free(y); free(dy); free(got); free(want);
}

/* ---- softmax and cross-entropy ------------------------------------------------------ */

/* The softmax family's row maximum (the pointwise table's row_max) against
 * the scalar scan, bit for bit, for every length up to 5 vectors of 16:
 * random rows; rows whose largest value is zero with -0 before +0 and the
 * reverse (the scan keeps the first one's sign), the zeros in different
 * lanes and in the tail; a NaN first, in the middle and last (the first
 * NaN wins); rows of -inf; adversarial values. */
static void test_row_max(void) {
    enum { N = 80 };
    float x[N];
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        const char *cfg = sb_test_config_name(c);
        const sb_pwv_table *pw = sb_kernels()->pointwise;
        for (int64_t n = 0; n <= N; n++)
            for (int pattern = 0; pattern < 9; pattern++) {
                sb_test_seed(77 + (uint64_t)(n * 9 + pattern));
                for (int64_t j = 0; j < n; j++)
                    x[j] = pattern == 8 ? sb_test_adversarial(4.0f)
                           : pattern == 7 ? -INFINITY
                           : pattern == 0 ? sb_test_unif(-3.0f, 3.0f)
                                          : sb_test_unif(-3.0f, -0.5f);
                if (n > 0 && (pattern == 1 || pattern == 2)) {
                    x[n / 3] = pattern == 1 ? -0.0f : 0.0f;
                    x[n - 1 - n / 5] = pattern == 1 ? 0.0f : -0.0f;
                    if (n / 3 > n - 1 - n / 5) x[n / 3] = pattern == 1 ? 0.0f : -0.0f;
                }
                if (n > 0 && pattern >= 3 && pattern <= 5) {
                    int64_t at = pattern == 3 ? 0 : pattern == 4 ? n / 2 : n - 1;
                    x[at] = sb_test_bits(x[0]) & 1 ? NAN : -NAN;
                    if (pattern == 4 && at + 3 < n) x[at + 3] = NAN; /* a later NaN loses */
                }
                if (n > 0 && pattern == 6) x[n - 1] = 5.0f; /* the largest in the tail */
                CHECK_BITS(pw->row_max(n, x), sb_pwv_row_max_scalar(n, x, 1),
                           "row_max n=%lld pattern %d [%s]", (long long)n, pattern, cfg);
            }
    }
    sb_test_config_reset();
}

static void test_softmax(void) {
    typedef struct { int64_t s[3]; int dim; bool adv; } scase;
    const scase cases[] = {
        {{100, 10, 1}, 1, false}, {{100, 10, 1}, 1, true}, {{3, 9000, 1}, 1, false},
        {{4, 33, 7}, 1, true}, {{5, 6, 7}, 0, false}, {{2, 3, 2049}, -1, true},
        {{1, 1, 1}, 2, true},
    };
    int64_t maxn = 3 * 9000 * 2;
    float *x = alloc(maxn), *y = alloc(maxn), *dy = alloc(maxn), *got = alloc(maxn),
          *want = alloc(maxn);
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        const char *cfg = sb_test_config_name(c);
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            const scase *sc = &cases[k];
            int64_t n = sc->s[0] * sc->s[1] * sc->s[2];
            sb_test_seed(1234 + k);
            fill(x, n, sc->adv);
            fill(dy, n, false);
            int d = sc->dim < 0 ? sc->dim + 3 : sc->dim;
            int64_t outer = 1, len = sc->s[d], inner = 1;
            for (int i = 0; i < d; i++) outer *= sc->s[i];
            for (int i = d + 1; i < 3; i++) inner *= sc->s[i];
            sb_tensor tx = view(x, 3, sc->s), ty = view(y, 3, sc->s), tdy = view(dy, 3, sc->s);
            sb_tensor tg = view(got, 3, sc->s);
            for (int lg = 0; lg < 2; lg++) {
                if (lg) sb_ref_log_softmax_forward(x, outer, len, inner, want);
                else sb_ref_softmax_forward(x, outer, len, inner, want);
                CHECK_OK(lg ? sb_log_softmax_forward(&tx, sc->dim, &tg)
                            : sb_softmax_forward(&tx, sc->dim, &tg));
                check_buf(got, want, n, false, lg ? "log_softmax" : "softmax", cfg);
                memcpy(y, want, (size_t)n * sizeof *y);
                if (lg) sb_ref_log_softmax_backward(y, dy, outer, len, inner, want);
                else sb_ref_softmax_backward(y, dy, outer, len, inner, want);
                CHECK_OK(lg ? sb_log_softmax_backward(&ty, &tdy, sc->dim, &tg)
                            : sb_softmax_backward(&ty, &tdy, sc->dim, &tg));
                check_buf(got, want, n, false, lg ? "log_softmax backward" : "softmax backward",
                          cfg);
            }
        }
    }
    sb_test_config_reset();
    free(x); free(y); free(dy); free(got); free(want);
}

/* Rows built to catch a wrong x - m folded into the exp kernel (the
 * subtraction, the lanes it hands to the scalar function, the ragged end):
 * lengths around the vector widths and beyond the chunk, and per row the
 * largest value in the middle or last, not first; a largest +0 after -0
 * and the reverse (x - m of the zeros: +0 either way, but of every other
 * element not); -inf entries, a row of only -inf (NaN), a NaN, a +inf;
 * values spread so widely that x - m rounds and exp(x - m) underflows to
 * subnormals and 0; every row's terms as softmax and log-softmax, forward
 * and backward, in place too. */
static void test_softmax_rows(void) {
    enum { PATTERNS = 9 };
    const int64_t lens[] = {1, 2, 3, 5, 15, 16, 17, 31, 33, 100, 129, 1023, 1025, 3001};
    int64_t maxn = PATTERNS * 3001;
    float *x = alloc(maxn), *y = alloc(maxn), *dy = alloc(maxn), *got = alloc(maxn),
          *want = alloc(maxn);
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        const char *cfg = sb_test_config_name(c);
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            int64_t n = lens[li], rows = PATTERNS, total = rows * n, shape[2] = {rows, n};
            sb_test_seed(4321 + (uint64_t)n);
            for (int64_t p = 0; p < rows; p++) {
                float *r = x + p * n;
                for (int64_t j = 0; j < n; j++)
                    r[j] = p == 7 ? sb_test_unif(-150.0f, 60.0f) * (1.0f + sb_test_unif(0.0f, 1.0f))
                           : p == 1 || p == 2 ? sb_test_unif(-3.0f, -0.5f)
                                              : sb_test_unif(-3.0f, 3.0f);
                int64_t mid = n / 2;
                switch (p) {
                case 0: r[mid] = 7.5f; break;         /* largest in the middle */
                case 1: r[mid] = -0.0f; r[n - 1] = 0.0f; break; /* largest zero, -0 first */
                case 2: r[mid] = 0.0f; r[n - 1] = -0.0f; break; /* and +0 first */
                case 3: r[0] = -INFINITY; r[n - 1] = -INFINITY; r[mid] = 4.0f; break;
                case 4: for (int64_t j = 0; j < n; j++) r[j] = -INFINITY; break;
                case 5: r[mid] = NAN; break;
                case 6: r[n - 1] = INFINITY; break;
                case 7: r[n - 1] = 130.0f; break;     /* largest last, wide spread */
                case 8: r[n - 1] = 3.5f; break;       /* largest in the ragged end */
                }
                for (int64_t j = 0; j < n; j++) dy[p * n + j] = sb_test_unif(-1.0f, 1.0f);
            }
            sb_tensor tx = view(x, 2, shape), ty = view(y, 2, shape), tdy = view(dy, 2, shape);
            sb_tensor tg = view(got, 2, shape);
            for (int lg = 0; lg < 2; lg++) {
                const char *what = lg ? "log_softmax rows" : "softmax rows";
                if (lg) sb_ref_log_softmax_forward(x, rows, n, 1, want);
                else sb_ref_softmax_forward(x, rows, n, 1, want);
                CHECK_OK(lg ? sb_log_softmax_forward(&tx, 1, &tg) : sb_softmax_forward(&tx, 1, &tg));
                check_buf(got, want, total, false, what, cfg);
                /* in place: each e_j is written over its own x_j */
                memcpy(got, x, (size_t)total * sizeof *got);
                CHECK_OK(lg ? sb_log_softmax_forward(&tg, 1, &tg) : sb_softmax_forward(&tg, 1, &tg));
                check_buf(got, want, total, false, what, cfg);
                memcpy(y, want, (size_t)total * sizeof *y);
                if (lg) sb_ref_log_softmax_backward(y, dy, rows, n, 1, want);
                else sb_ref_softmax_backward(y, dy, rows, n, 1, want);
                CHECK_OK(lg ? sb_log_softmax_backward(&ty, &tdy, 1, &tg)
                            : sb_softmax_backward(&ty, &tdy, 1, &tg));
                check_buf(got, want, total, false, lg ? "log_softmax rows backward"
                                                      : "softmax rows backward", cfg);
            }
        }
    }
    sb_test_config_reset();
    free(x); free(y); free(dy); free(got); free(want);
}

static void test_cross_entropy(void) {
    typedef struct { int64_t N, C; } ccase;
    const ccase cases[] = {{100, 10}, {1, 1}, {37, 3001}, {2000, 10}, {5, 9000}};
    const float smooth[] = {0.0f, 0.1f, 1.0f};
    int64_t maxn = 2000 * 10 + 37 * 3001 + 5 * 9000;
    float *x = alloc(maxn), *got = alloc(maxn), *want = alloc(maxn), dl[2000];
    int64_t tg[2000];
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        const char *cfg = sb_test_config_name(c);
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            int64_t N = cases[k].N, C = cases[k].C, shape[2] = {N, C};
            sb_test_seed(99 + k);
            fill(x, N * C, false);
            if (N > 3) x[C + 1] = -INFINITY; /* a -inf logit off the target */
            for (int64_t r = 0; r < N; r++) {
                tg[r] = (int64_t)(sb_test_rand32() % (uint32_t)C);
                if (r % 7 == 3) tg[r] = -100; /* ignored */
                dl[r] = sb_test_unif(-1.0f, 1.0f);
            }
            if (N > 3) tg[1] = (C + 1) % C == 1 && C > 2 ? 2 : 0;
            sb_tensor tx = view(x, 2, shape), tgr = view(got, 2, shape);
            sb_tensor tt = {.dtype = SB_I64, .ndim = 1, .shape = {N}, .strides = {1}, .data = tg};
            for (size_t e = 0; e < 3; e++)
                for (int red = SB_LOSS_NONE; red <= SB_LOSS_SUM; red++) {
                    sb_loss_reduction rd = (sb_loss_reduction)red;
                    sb_tensor tl = view(got, rd == SB_LOSS_NONE ? 1 : 0, &N);
                    sb_tensor td = view(dl, rd == SB_LOSS_NONE ? 1 : 0, &N);
                    char what[96];
                    snprintf(what, sizeof what, "CE forward N=%lld C=%lld eps=%g red=%d",
                             (long long)N, (long long)C, (double)smooth[e], red);
                    sb_ref_cross_entropy_forward(x, tg, N, C, rd, smooth[e], -100, want);
                    CHECK_OK(sb_cross_entropy_forward(&tx, &tt, rd, smooth[e], -100, &tl));
                    check_buf(got, want, rd == SB_LOSS_NONE ? N : 1, false, what, cfg);
                    snprintf(what, sizeof what, "CE backward N=%lld C=%lld eps=%g red=%d",
                             (long long)N, (long long)C, (double)smooth[e], red);
                    sb_ref_cross_entropy_backward(x, tg, N, C, rd, smooth[e], -100, dl, want);
                    CHECK_OK(sb_cross_entropy_backward(&tx, &tt, rd, smooth[e], -100, &td, &tgr));
                    check_buf(got, want, N * C, false, what, cfg);
                }
        }
    }
    sb_test_config_reset();
    /* arguments are still validated */
    int64_t shape[2] = {2, 3}, two = 2;
    float xx[6] = {0}, loss;
    int64_t bad[2] = {0, 3};
    sb_tensor tx = view(xx, 2, shape), tl = view(&loss, 0, NULL);
    sb_tensor tt = {.dtype = SB_I64, .ndim = 1, .shape = {two}, .strides = {1}, .data = bad};
    CHECK_ERROR(sb_cross_entropy_forward(&tx, &tt, SB_LOSS_MEAN, 0.0f, -100, &tl), SB_ERR_RANGE,
                "targets[1] = 3");
    CHECK_ERROR(sb_relu_forward(NULL, &tx), SB_ERR_NULL, "sb_relu_forward");
    free(x); free(got); free(want);
}

/* ---- optimizers ------------------------------------------------------------------------ */

static void test_optim(void) {
    const int64_t sizes[] = {1, 15, 61706, 100003};
    int64_t maxn = 100003;
    float *g = alloc(maxn);
    float *p0 = alloc(maxn), *s0[3], *p1 = alloc(maxn), *s1[3];
    for (int k = 0; k < 3; k++) { s0[k] = alloc(maxn); s1[k] = alloc(maxn); }
    for (int variant = 0; variant < 6; variant++) {
        sb_adam_config cfg = sb_adam_default_config(1e-3);
        if (variant == 1) cfg = sb_adamw_default_config(3e-3);
        if (variant == 2) { cfg.amsgrad = true; cfg.weight_decay = 0.01; }
        if (variant == 3) { cfg.beta1 = 0.3; cfg.maximize = true; } /* lerp's other form */
        if (variant == 4) { cfg.amsgrad = true; cfg.decoupled_weight_decay = true; cfg.weight_decay = 0.1; }
        sb_sgd_config scfg = sb_sgd_default_config(0.05);
        if (variant == 1) { scfg.momentum = 0.9; }
        if (variant == 2) { scfg.momentum = 0.9; scfg.nesterov = true; scfg.weight_decay = 1e-4; }
        if (variant == 3) { scfg.momentum = 0.5; scfg.dampening = 0.3; scfg.maximize = true; }
        if (variant == 4) { scfg.weight_decay = 0.01; }
        for (int c = 0; c < sb_test_config_count(); c++) {
            sb_test_config_apply(c);
            const char *cname = sb_test_config_name(c);
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                int64_t n = sizes[s];
                sb_test_seed(7 + variant * 31 + s);
                fill(p0, n, variant == 5);
                memcpy(p1, p0, (size_t)n * sizeof *p0);
                for (int k = 0; k < 3; k++) {
                    fill(s0[k], n, false); /* garbage: step 1 must ignore it */
                    memcpy(s1[k], s0[k], (size_t)n * sizeof *p0);
                }
                for (int64_t step = 1; step <= 4; step++) {
                    fill(g, n, variant == 5 || (step == 3 && variant == 2));
                    sb_adam_factors f;
                    CHECK_OK(sb_adam_factors_for(&cfg, step, &f));
                    sb_ref_adam_update(&f, step == 1, n, p0, g, s0[0], s0[1], s0[2]);
                    CHECK_OK(sb_adam_step(&cfg, step, n, p1, g, s1[0], s1[1], s1[2]));
                }
                char what[64];
                snprintf(what, sizeof what, "adam variant %d n=%lld", variant, (long long)n);
                check_buf(p1, p0, n, false, what, cname);
                for (int k = 0; k < (cfg.amsgrad ? 3 : 2); k++) check_buf(s1[k], s0[k], n, false, what, cname);

                fill(p0, n, variant == 5);
                memcpy(p1, p0, (size_t)n * sizeof *p0);
                for (int64_t step = 1; step <= 4; step++) {
                    fill(g, n, variant == 5);
                    sb_sgd_factors f;
                    CHECK_OK(sb_sgd_factors_for(&scfg, &f));
                    sb_ref_sgd_update(&f, scfg.nesterov, scfg.maximize, step == 1, n, p0, g, s0[0]);
                    CHECK_OK(sb_sgd_step(&scfg, step, n, p1, g, s1[0]));
                }
                snprintf(what, sizeof what, "sgd variant %d n=%lld", variant, (long long)n);
                check_buf(p1, p0, n, false, what, cname);
                if (scfg.momentum != 0) check_buf(s1[0], s0[0], n, false, what, cname);
            }
        }
    }
    sb_test_config_reset();
    free(g); free(p0); free(p1);
    for (int k = 0; k < 3; k++) { free(s0[k]); free(s1[k]); }
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    sb_test_seed(0x9e3779b97f4a7c15ull);
    test_canonical_sum();
    test_relu();
    test_binary();
    test_unary_and_activations();
    test_row_max();
    test_softmax();
    test_softmax_rows();
    test_cross_entropy();
    test_optim();
    return sb_test_finish();
}
