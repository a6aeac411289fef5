/* Differential tests of the fast GEMM (src/cpu/gemm.c): at every ISA level
 * this machine runs and every thread count of tests/support/fastpath.h,
 * sb_cpu_sgemm, sb_sgemm, sb_matmul(_backward) and sb_linear_forward/backward
 * must give exactly the bits of the reference loops (sb_ref_sgemm, the
 * contract). The inputs cover every transpose combination, padded leading
 * dimensions, odd and prime sizes, sizes around the kernel's tile and block
 * boundaries (MR, NR, MC = 144, NC = 512, KC = 256), continued chains, and
 * values where any other summation order gives other bits. */
#include <math.h>
#include "core/canonical_sum.h"
#include "harness.h"
#include "cpu/cpu.h"
#include "ref/ref_linalg.h"
#include "support/fastpath.h"
#include "support/oracle.h"

static float *F(const sb_tensor *t) { return (float *)t->data; }

/* Bitwise, except that every NaN is the same NaN (docs/CONTRACT.md). */
static long count_diff(const float *got, const float *want, int64_t count, int64_t *first) {
    long bad = 0;
    for (int64_t i = 0; i < count; i++)
        if (!oracle_same(got[i], want[i]) && bad++ == 0) *first = i;
    return bad;
}

enum { VAL_RANDOM, VAL_SPECIAL, VAL_CANCEL };

static float special_value(void) {
    static const float pool[] = {0.0f, -0.0f, 1.0f, -1.0f, 0x1p-149f, -0x1p-140f, 0x1.8p-127f,
                                 0x1p-126f, 3e38f, -3e38f, INFINITY, -INFINITY, NAN, 0x1p100f,
                                 -0x1p-100f, 1.5f, 0x1.000002p0f};
    uint64_t r = oracle_rand();
    /* mostly ordinary values, so that NaN does not swamp every chain */
    if (r % 8 != 0) return oracle_rand_float();
    return pool[(r >> 8) % (sizeof pool / sizeof pool[0])];
}

/* op(A) is m x k stored as ar x ac with row stride lda (likewise B, C). */
typedef struct gcase {
    char ta, tb;
    int64_t m, n, k, lda, ldb, ldc, ar, ac, br, bc;
    float *a, *b, *c0; /* c0: C before the call (read under continue_chain) */
} gcase;

static int64_t max1(int64_t v) { return v > 1 ? v : 1; }

static void make_case(gcase *g, char ta, char tb, int64_t m, int64_t n, int64_t k, int64_t pad,
                      int kind) {
    bool tra = ta == 'T' || ta == 't', trb = tb == 'T' || tb == 't';
    *g = (gcase){.ta = ta, .tb = tb, .m = m, .n = n, .k = k};
    g->ar = tra ? k : m; g->ac = tra ? m : k;
    g->br = trb ? n : k; g->bc = trb ? k : n;
    g->lda = max1(g->ac) + pad; g->ldb = max1(g->bc) + pad; g->ldc = max1(n) + pad;
    size_t na = (size_t)(g->ar * g->lda + 1), nb = (size_t)(g->br * g->ldb + 1),
           nc = (size_t)(m * g->ldc + 1);
    g->a = malloc(na * 4); g->b = malloc(nb * 4); g->c0 = malloc(nc * 4);
    if (!g->a || !g->b || !g->c0) exit(2);
    for (size_t i = 0; i < na; i++) g->a[i] = kind == VAL_SPECIAL ? special_value() : oracle_rand_float();
    for (size_t i = 0; i < nb; i++) g->b[i] = kind == VAL_SPECIAL ? special_value() : oracle_rand_float();
    for (size_t i = 0; i < nc; i++) g->c0[i] = kind == VAL_SPECIAL ? special_value() : oracle_rand_float();
    if (kind == VAL_CANCEL) {
        /* op(A) all 1; op(B)[0][j] = 2^24 (+ j), every later term 1. The
         * chain sticks at 2^24 + j (each +1 is a tie to even, or lost), but
         * any k block started from zero adds its terms exactly first. */
        for (int64_t i = 0; i < m; i++)
            for (int64_t p = 0; p < k; p++) g->a[tra ? p * g->lda + i : i * g->lda + p] = 1.0f;
        for (int64_t p = 0; p < k; p++)
            for (int64_t j = 0; j < n; j++)
                g->b[trb ? j * g->ldb + p : p * g->ldb + j] =
                    p == 0 ? 0x1p24f + (float)(2 * (j % 8)) : 1.0f;
        for (size_t i = 0; i < nc; i++) g->c0[i] = 0x1p24f;
    }
}

static void free_case(gcase *g) { free(g->a); free(g->b); free(g->c0); }

/* Runs the case at every configuration against the reference. */
static void check_case(const gcase *g, bool cont, const char *what) {
    size_t nc = (size_t)(g->m * g->ldc + 1);
    float *want = malloc(nc * 4), *got = malloc(nc * 4);
    if (!want || !got) exit(2);
    memcpy(want, g->c0, nc * 4);
    sb_ref_sgemm(g->ta, g->tb, g->m, g->n, g->k, g->a, g->lda, g->b, g->ldb, want, g->ldc, cont);
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        memcpy(got, g->c0, nc * 4);
        sb_cpu_sgemm(g->ta, g->tb, g->m, g->n, g->k, g->a, g->lda, g->b, g->ldb, got, g->ldc, cont);
        int64_t first = 0;
        /* the whole buffer: the padding between rows must be untouched */
        long bad = count_diff(got, want, (int64_t)nc, &first);
        CHECK(bad == 0, "%s: sb_cpu_sgemm %c%c m=%lld n=%lld k=%lld lda=%lld ldb=%lld ldc=%lld cont=%d: "
              "%ld of %zu floats differ, first at %lld: got %a want %a", sb_test_config_name(c), g->ta,
              g->tb, (long long)g->m, (long long)g->n, (long long)g->k, (long long)g->lda,
              (long long)g->ldb, (long long)g->ldc, cont, bad, nc, (long long)first, got[first],
              want[first]);
        if (!cont) {
            memcpy(got, g->c0, nc * 4);
            CHECK_OK(sb_sgemm(g->ta, g->tb, g->m, g->n, g->k, g->a, g->lda, g->b, g->ldb, got, g->ldc));
            bad = count_diff(got, want, (int64_t)nc, &first);
            CHECK(bad == 0, "%s: sb_sgemm %c%c %lldx%lldx%lld (%s): %ld floats differ", sb_test_config_name(c),
                  g->ta, g->tb, (long long)g->m, (long long)g->n, (long long)g->k, what, bad);
        }
    }
    sb_test_config_reset();
    free(want); free(got);
}

static void run_shape(int64_t m, int64_t n, int64_t k, int kind, int variant) {
    static const char tr[] = "NTnt";
    for (int t = 0; t < 4; t++) {
        char ta = tr[(t >> 1) + (variant & 1) * 2], tb = tr[(t & 1) + (variant & 1) * 2];
        int64_t pad = (t + variant) % 3 == 0 ? 0 : (t + variant) % 3 == 1 ? 1 : 7;
        gcase g;
        make_case(&g, ta, tb, m, n, k, pad, kind);
        check_case(&g, (t + variant) % 2 == 1, kind == VAL_SPECIAL ? "special" : "random");
        if (kind != VAL_RANDOM) check_case(&g, (t + variant) % 2 == 0, "special");
        free_case(&g);
    }
}

static void test_shapes(void) {
    oracle_seed(1);
    static const int64_t shapes[][3] = {
        /* m, n, k */
        {1, 1, 1}, {2, 3, 5}, {3, 2, 7}, {5, 7, 13}, {7, 5, 17}, {13, 17, 31}, {17, 13, 33},
        {31, 33, 63}, {33, 31, 97}, {63, 97, 33}, {97, 63, 5}, {97, 97, 97},
        {1, 400, 120}, {100, 1, 120}, {100, 120, 400}, {100, 84, 120}, /* LeNet-like skinny */
        {12, 32, 1}, {13, 33, 2}, {11, 31, 3}, {6, 16, 4}, {7, 17, 9}, {24, 64, 8}, {8, 12, 5},
        /* block boundaries: MC = 144, NC = 512, KC = 256 */
        {143, 33, 255}, {144, 32, 256}, {145, 34, 257}, {37, 511, 20}, {29, 513, 19},
        {20, 40, 513}, {9, 17, 600},
        /* a few rows times B^T (read in place, eight columns at a time): column
         * and term counts off and on multiples of 8, a decode step's shape */
        {1, 9, 21}, {2, 8, 8}, {3, 47, 300}, {4, 100, 7}, {1, 1536, 384}, {4, 385, 1033},
        /* fewer terms than one transposed block (NEON's are 4 x 4): k = 1, 2, 3 */
        {3, 13, 1}, {4, 12, 2}, {2, 21, 3},
    };
    static const int64_t quick_skip = 4; /* the biggest ones */
    int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
    for (int s = 0; s < nshapes; s++) {
        if (sb_test_quick() && (shapes[s][0] * shapes[s][1] * shapes[s][2] > 1000000) &&
            s % quick_skip != 0)
            continue;
        run_shape(shapes[s][0], shapes[s][1], shapes[s][2], VAL_RANDOM, s);
    }
    /* one shape past every block at once, fewer transposes */
    if (!sb_test_quick()) {
        gcase g;
        make_case(&g, 'T', 'N', 150, 520, 260, 3, VAL_RANDOM);
        check_case(&g, false, "all blocks");
        free_case(&g);
    }
}

static void test_specials(void) {
    oracle_seed(2);
    static const int64_t shapes[][3] = {{1, 1, 9}, {7, 19, 33}, {13, 35, 260}, {50, 70, 40},
                                        {1, 23, 45}, {4, 17, 9}};
    for (int s = 0; s < 6; s++) run_shape(shapes[s][0], shapes[s][1], shapes[s][2], VAL_SPECIAL, s);
}

/* The chain must cross k blocks from C, not restart at zero: shows that
 * these inputs tell the two apart, then that the kernel chains. */
static void test_block_chaining(void) {
    int64_t m = 14, n = 35, k = 700; /* several k blocks of every kernel */
    gcase g;
    make_case(&g, 'N', 'N', m, n, k, 2, VAL_CANCEL);
    /* C[0][0]: 2^24, every +1 is a tie that rounds back to the even 2^24 */
    float chain = 0.0f, split = 0.0f, tail = 0.0f;
    for (int64_t p = 0; p < k; p++) chain = fmaf(g.a[p], g.b[p * g.ldb], chain);
    for (int64_t p = 0; p < 256; p++) split = fmaf(g.a[p], g.b[p * g.ldb], split);
    for (int64_t p = 256; p < k; p++) tail = fmaf(g.a[p], g.b[p * g.ldb], tail);
    split = split + tail;
    CHECK(chain == 0x1p24f, "chain = %a", chain);
    CHECK(split != chain, "a zero-started second block must differ: %a vs %a", split, chain);
    check_case(&g, false, "cancel");
    check_case(&g, true, "cancel");
    free_case(&g);
    run_shape(5, 40, 513, VAL_CANCEL, 1);
}

static void test_empty(void) {
    float c[12], want[12];
    for (int i = 0; i < 12; i++) c[i] = want[i] = -3.0f;
    for (int cfg = 0; cfg < sb_test_config_count(); cfg++) {
        sb_test_config_apply(cfg);
        /* k == 0: C = +0, or unchanged when the chain continues; NULL operands */
        for (int i = 0; i < 12; i++) c[i] = -3.0f;
        sb_cpu_sgemm('N', 'T', 3, 4, 0, NULL, 1, NULL, 1, c, 4, true);
        CHECK(memcmp(c, want, sizeof c) == 0, "%s: k=0 continue changed C", sb_test_config_name(cfg));
        sb_cpu_sgemm('T', 'N', 3, 3, 0, NULL, 1, NULL, 1, c, 4, false);
        bool ok = true;
        for (int i = 0; i < 12; i++)
            ok &= sb_test_bits(c[i]) == (i % 4 == 3 ? sb_test_bits(-3.0f) : 0u);
        CHECK(ok, "%s: k=0 must give +0 in C and leave the row padding", sb_test_config_name(cfg));
        for (int i = 0; i < 12; i++) c[i] = -3.0f;
        CHECK_OK(sb_sgemm('N', 'N', 2, 2, 0, NULL, 1, NULL, 2, c, 2));
        CHECK(sb_test_bits(c[0]) == 0 && sb_test_bits(c[3]) == 0 && c[4] == -3.0f,
              "%s: sb_sgemm k=0", sb_test_config_name(cfg));
        /* m or n == 0: nothing is written */
        for (int i = 0; i < 12; i++) c[i] = -3.0f;
        float one = 1.0f;
        sb_cpu_sgemm('N', 'N', 0, 4, 1, &one, 1, &one, 4, c, 4, false);
        sb_cpu_sgemm('N', 'N', 3, 0, 1, &one, 1, &one, 1, c, 1, false);
        CHECK_OK(sb_sgemm('N', 'N', 0, 4, 1, NULL, 1, &one, 4, c, 4));
        CHECK(memcmp(c, want, sizeof c) == 0, "%s: an empty C was written", sb_test_config_name(cfg));
    }
    sb_test_config_reset();
}

/* ---- tensor-level callers ---- */

static void check_tensor_bits(const sb_tensor *got, const float *want, const char *cfg,
                              const char *what) {
    int64_t first = 0, numel = sb_tensor_numel(got);
    long bad = count_diff(F(got), want, numel, &first);
    CHECK(bad == 0, "%s: %s: %ld of %lld differ, first at %lld: got %a want %a", cfg, what, bad,
          (long long)numel, (long long)first, bad ? F(got)[first] : 0.0f, bad ? want[first] : 0.0f);
}

static void test_matmul(void) {
    oracle_seed(3);
    int64_t B = 3, m = sb_test_quick() ? 37 : 75, k = sb_test_quick() ? 150 : 270, n = 41;
    sb_tensor *a = oracle_tensor(SB_F32, 3, B, k, m, 0); /* trans_a: a[t] is (k, m) */
    sb_tensor *b = oracle_tensor(SB_F32, 2, n, k, 0, 0); /* trans_b: b is (n, k) */
    sb_tensor *out = oracle_tensor(SB_F32, 3, B, m, n, 0);
    sb_tensor *dout = oracle_tensor(SB_F32, 3, B, m, n, 0);
    sb_tensor *da = oracle_tensor(SB_F32, 3, B, k, m, 0), *db = oracle_tensor(SB_F32, 2, n, k, 0, 0);
    oracle_fill_rand(a); oracle_fill_rand(b); oracle_fill_rand(dout);
    float *want = malloc((size_t)(B * m * n) * 4), *wda = malloc((size_t)(B * k * m) * 4),
          *wdb = calloc((size_t)(n * k), 4);
    for (int64_t t = 0; t < B; t++) {
        sb_ref_sgemm('T', 'T', m, n, k, F(a) + t * k * m, m, F(b), k, want + t * m * n, n, false);
        /* da[t] (k, m) = op(b) . dout[t]^T; db (n, k) chains over batches */
        sb_ref_sgemm('T', 'T', k, m, n, F(b), k, F(dout) + t * m * n, n, wda + t * k * m, m, false);
        sb_ref_sgemm('T', 'T', n, k, m, F(dout) + t * m * n, n, F(a) + t * k * m, m, wdb, k, true);
    }
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        CHECK_OK(sb_matmul(a, b, true, true, out));
        check_tensor_bits(out, want, sb_test_config_name(c), "sb_matmul");
        CHECK_OK(sb_matmul_backward(dout, a, b, true, true, da, db));
        check_tensor_bits(da, wda, sb_test_config_name(c), "sb_matmul_backward da");
        check_tensor_bits(db, wdb, sb_test_config_name(c), "sb_matmul_backward db (chained over batches)");
    }
    sb_test_config_reset();
    free(want); free(wda); free(wdb);
    sb_tensor_free(a); sb_tensor_free(b); sb_tensor_free(out); sb_tensor_free(dout);
    sb_tensor_free(da); sb_tensor_free(db);
}

static void test_linear(void) {
    oracle_seed(4);
    int64_t rows = sb_test_quick() ? 50 : 100, in = sb_test_quick() ? 200 : 400, out = 120;
    sb_tensor *x = oracle_tensor(SB_F32, 2, rows, in, 0, 0), *w = oracle_tensor(SB_F32, 2, out, in, 0, 0);
    sb_tensor *bias = oracle_tensor(SB_F32, 1, out, 0, 0, 0), *y = oracle_tensor(SB_F32, 2, rows, out, 0, 0);
    sb_tensor *dy = oracle_tensor(SB_F32, 2, rows, out, 0, 0);
    sb_tensor *dx = oracle_tensor(SB_F32, 2, rows, in, 0, 0), *dw = oracle_tensor(SB_F32, 2, out, in, 0, 0);
    sb_tensor *db = oracle_tensor(SB_F32, 1, out, 0, 0, 0);
    oracle_fill_rand(x); oracle_fill_rand(w); oracle_fill_rand(bias); oracle_fill_rand(dy);
    float *wy = malloc((size_t)(rows * out) * 4), *wdx = malloc((size_t)(rows * in) * 4),
          *wdw = malloc((size_t)(out * in) * 4), *wdb = malloc((size_t)out * 4);
    sb_ref_sgemm('N', 'T', rows, out, in, F(x), in, F(w), in, wy, out, false);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t o = 0; o < out; o++) wy[r * out + o] = wy[r * out + o] + F(bias)[o];
    sb_ref_sgemm('N', 'N', rows, in, out, F(dy), out, F(w), in, wdx, in, false);
    sb_ref_sgemm('T', 'N', out, in, rows, F(dy), out, F(x), in, wdw, in, false);
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        CHECK_OK(sb_linear_forward(x, w, bias, y));
        check_tensor_bits(y, wy, sb_test_config_name(c), "sb_linear_forward");
        CHECK_OK(sb_linear_backward(dy, x, w, dx, dw, db));
        check_tensor_bits(dx, wdx, sb_test_config_name(c), "sb_linear_backward dx");
        check_tensor_bits(dw, wdw, sb_test_config_name(c), "sb_linear_backward dw");
        /* db is a canonical sum, not a GEMM: the same at every configuration */
        if (c == 0) memcpy(wdb, F(db), (size_t)out * 4);
        check_tensor_bits(db, wdb, sb_test_config_name(c), "sb_linear_backward db");
    }
    sb_test_config_reset();
    free(wy); free(wdx); free(wdw); free(wdb);
    sb_tensor *ts[] = {x, w, bias, y, dy, dx, dw, db};
    for (int i = 0; i < 8; i++) sb_tensor_free(ts[i]);
}

/* The bias gradient of linear (the canonical sum of each column of dy,
 * computed a tile of columns at a time) against the reference's sum of
 * each column, at every configuration: fewer rows than the 32 lanes, a
 * partial lane row, a column count that leaves a partial tile, and more
 * rows than one 8192-element block. */
static void test_linear_bias_gradient(void) {
    static const int64_t shapes[][2] = {{1, 5}, {31, 17}, {33, 16}, {300, 37}, {8193 + 40, 19}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t rows = shapes[s][0], out = shapes[s][1], in = 3;
        sb_tensor *x = oracle_tensor(SB_F32, 2, rows, in, 0, 0), *w = oracle_tensor(SB_F32, 2, out, in, 0, 0);
        sb_tensor *dy = oracle_tensor(SB_F32, 2, rows, out, 0, 0);
        sb_tensor *db = oracle_tensor(SB_F32, 1, out, 0, 0, 0);
        oracle_seed(40 + (uint64_t)s);
        oracle_fill_rand(x); oracle_fill_rand(w); oracle_fill_rand(dy);
        float *want = malloc((size_t)out * 4);
        for (int64_t o = 0; o < out; o++) want[o] = sb_sum_canonical(F(dy) + o, rows, out);
        for (int c = 0; c < sb_test_config_count(); c++) {
            sb_test_config_apply(c);
            CHECK_OK(sb_linear_backward(dy, x, w, NULL, NULL, db));
            check_tensor_bits(db, want, sb_test_config_name(c), "sb_linear_backward db");
        }
        sb_test_config_reset();
        free(want);
        sb_tensor *ts[] = {x, w, dy, db};
        for (int i = 0; i < 4; i++) sb_tensor_free(ts[i]);
    }
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    printf("test_fast_gemm: %d configurations (best: %s)\n", sb_test_config_count(),
           sb_isa_name(sb_isa_best()));
    test_empty();
    test_block_chaining();
    test_specials();
    test_shapes();
    test_matmul();
    test_linear();
    test_linear_bias_gradient();
    return sb_test_finish();
}
