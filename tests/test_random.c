/* Tests for samebits/random.h: Philox4x32-10 known answers, the block
 * layout, and every mapping (uniform, range, normal, bounded, permutation)
 * against independent restatements of docs/CONTRACT.md, plus
 * statistical sanity and argument errors. */
#include <math.h>
#include "harness.h"

/* ---- independent restatements of the contract ---- */

/* The block (seed, stream, index, domain), spelled out from the contract. */
static void t_block(uint64_t seed, uint64_t stream, uint64_t index, unsigned domain,
                    uint32_t out[4]) {
    uint32_t key[2], ctr[4];
    key[0] = (uint32_t)(seed & 0xffffffffu);
    key[1] = (uint32_t)(seed >> 32);
    ctr[0] = (uint32_t)(index & 0xffffffffu);
    ctr[1] = (uint32_t)((index >> 32) % (1u << 24)) + ((uint32_t)domain << 24);
    ctr[2] = (uint32_t)(stream & 0xffffffffu);
    ctr[3] = (uint32_t)(stream >> 32);
    sb_philox4x32_10(ctr, key, out);
}

static float t_unit(uint32_t w) { return (float)(w / 256u) / 16777216.0f; }

static float t_uniform(uint64_t seed, uint64_t stream, uint64_t i) {
    uint32_t w[4];
    t_block(seed, stream, i, 0, w);
    return t_unit(w[0]);
}

/* Polar method; *attempts receives the 1-based accepted attempt. */
static float t_normal(uint64_t seed, uint64_t stream, uint64_t i, int *attempts) {
    for (int a = 0; a < 254; a++) {
        uint32_t w[4];
        t_block(seed, stream, i, 1u + (unsigned)(a / 2), w);
        float u0 = t_unit(w[(a % 2) * 2]), u1 = t_unit(w[(a % 2) * 2 + 1]);
        float u = u0 + u0 - 1.0f; /* 2*u0 is exact either way */
        float v = u1 + u1 - 1.0f;
        float p = u * u, q = v * v;
        float s = p + q;
        if (!(s < 1.0f) || s == 0.0f) continue;
        float l = sb_logf(s);
        float num = -2.0f * l;
        float quot = num / s;
        *attempts = a + 1;
        return u * sqrtf(quot);
    }
    *attempts = 0;
    return 0.0f;
}

static uint32_t t_bounded(uint64_t seed, uint64_t stream, uint64_t i, uint32_t bound, int *rejects) {
    uint64_t t = ((uint64_t)1 << 32) % bound;
    *rejects = 0;
    for (unsigned b = 0; b < 128; b++) {
        uint32_t w[4];
        t_block(seed, stream, i, 128u + b, w);
        for (int k = 0; k < 4; k++) {
            uint64_t m = (uint64_t)w[k] * bound;
            if ((m & 0xffffffffu) >= t) return (uint32_t)(m >> 32);
            (*rejects)++;
        }
    }
    return 0;
}

/* ---- tests ---- */

static void test_kat(void) {
    static const struct { uint32_t ctr[4], key[2], want[4]; } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (int v = 0; v < 3; v++) {
        uint32_t out[4];
        sb_philox4x32_10(kat[v].ctr, kat[v].key, out);
        for (int k = 0; k < 4; k++)
            CHECK(out[k] == kat[v].want[k], "KAT %d word %d: got %08x want %08x", v, k, out[k],
                  kat[v].want[k]);
    }
}

static void test_block_layout(void) {
    const uint64_t seeds[] = {0, 1, 0x0123456789abcdefull, UINT64_MAX};
    const uint64_t idx[] = {0, 1, 0xffffffffull, 0x100000000ull, SB_RNG_INDEX_LIMIT - 1};
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 5; b++)
            for (unsigned d = 0; d < 256; d += 85) {
                uint32_t got[4], want[4];
                sb_rng_block(seeds[a], seeds[3 - a], idx[b], d, got);
                t_block(seeds[a], seeds[3 - a], idx[b], d, want);
                CHECK(memcmp(got, want, sizeof got) == 0, "block seed %d idx %d domain %u", a, b, d);
            }
    /* index is taken modulo 2^56: the domain byte is never overwritten */
    uint32_t x[4], y[4];
    sb_rng_block(5, 6, SB_RNG_INDEX_LIMIT + 7, 0, x);
    sb_rng_block(5, 6, 7, 0, y);
    CHECK(memcmp(x, y, sizeof x) == 0, "index modulo 2^56");
    /* seed, stream and index each change the block */
    sb_rng_block(5, 7, 7, 0, x);
    CHECK(memcmp(x, y, sizeof x) != 0, "stream changes the block");
    sb_rng_block(5 + (1ull << 32), 6, 7, 0, x);
    CHECK(memcmp(x, y, sizeof x) != 0, "seed high word changes the block");
}

static void test_uniform(void) {
    int64_t n = sb_test_quick() ? 200000 : 1000000;
    float *u = malloc((size_t)n * sizeof *u);
    sb_rng rng = sb_rng_make(42, 7);
    CHECK_OK(sb_rng_uniform(&rng, 0, u, n));
    double sum = 0, sq = 0;
    float lo = 1, hi = 0;
    int64_t bad = 0, mism = 0;
    for (int64_t i = 0; i < n; i++) {
        float v = u[i];
        double k = (double)v * 16777216.0;
        if (!(v >= 0.0f && v < 1.0f) || k != floor(k)) bad++;
        if (i % 97 == 0 && sb_test_bits(v) != sb_test_bits(t_uniform(42, 7, (uint64_t)i))) mism++;
        sum += v; sq += (double)v * v;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
    }
    double mean = sum / (double)n, var = sq / (double)n - mean * mean;
    CHECK(bad == 0, "%lld values not a multiple of 2^-24 in [0,1)", (long long)bad);
    CHECK(mism == 0, "%lld values differ from the restatement", (long long)mism);
    CHECK(fabs(mean - 0.5) < 5.0 * sqrt(1.0 / 12.0 / (double)n), "mean %.6f", mean);
    CHECK(fabs(var - 1.0 / 12.0) < 0.002, "variance %.6f", var);
    CHECK(lo < 1e-4f && hi > 1.0f - 1e-4f, "range [%g, %g]", (double)lo, (double)hi);
    /* the extreme words map to 0 and 1 - 2^-24 */
    CHECK_BITS(t_unit(0), 0.0f, "word 0");
    CHECK_BITS(t_unit(0xffffffffu), 1.0f - 0x1p-24f, "word max");

    /* addressability: [0, n) at once == two chunks == sequential next */
    int64_t m = 1000, cut = 377;
    float a[1000], b[1000], c[1000];
    CHECK_OK(sb_rng_uniform(&rng, 123456, a, m));
    CHECK_OK(sb_rng_uniform(&rng, 123456, b, cut));
    CHECK_OK(sb_rng_uniform(&rng, 123456 + (uint64_t)cut, b + cut, m - cut));
    sb_rng seq = rng;
    seq.counter = 123456;
    CHECK_OK(sb_rng_next_uniform(&seq, c, cut));
    sb_rng checkpoint = seq; /* three integers */
    CHECK_OK(sb_rng_next_uniform(&seq, c + cut, m - cut));
    CHECK(seq.counter == 123456 + (uint64_t)m, "counter %llu", (unsigned long long)seq.counter);
    CHECK(memcmp(a, b, sizeof a) == 0, "chunked fill differs");
    CHECK(memcmp(a, c, sizeof a) == 0, "sequential fill differs");
    float again[1000];
    CHECK_OK(sb_rng_next_uniform(&checkpoint, again, m - cut));
    CHECK(memcmp(again, a + cut, (size_t)(m - cut) * sizeof(float)) == 0, "checkpoint replay");
    for (int64_t j = 0; j < m; j += 111)
        CHECK_BITS(a[j], sb_rng_uniform_at(42, 7, 123456 + (uint64_t)j), "uniform_at %lld", (long long)j);

    /* the range mapping, op by op */
    float r[1000];
    float rlo = -3.25f, rhi = 7.1f;
    CHECK_OK(sb_rng_uniform_range(&rng, 99, rlo, rhi, r, m));
    int64_t rbad = 0;
    for (int64_t j = 0; j < m; j++) {
        float d = rhi - rlo;
        float t = d * t_uniform(42, 7, 99 + (uint64_t)j);
        float want = rlo + t;
        if (sb_test_bits(r[j]) != sb_test_bits(want) || r[j] < rlo || r[j] > rhi) rbad++;
    }
    CHECK(rbad == 0, "%lld range values differ", (long long)rbad);
    free(u);
}

static void test_normal(void) {
    int64_t n = sb_test_quick() ? 100000 : 1000000;
    float *z = malloc((size_t)n * sizeof *z);
    sb_rng rng = sb_rng_make(2024, 3);
    CHECK_OK(sb_rng_normal(&rng, 0, 0.0f, 1.0f, z, n));
    double sum = 0, sq = 0, q4 = 0;
    int64_t mism = 0, second = 0, later_block = 0, negzero = 0;
    for (int64_t i = 0; i < n; i++) {
        sum += z[i]; sq += (double)z[i] * z[i]; q4 += (double)z[i] * z[i] * z[i] * z[i];
        if (sb_test_bits(z[i]) == 0x80000000u) negzero++;
        if (i % 7 == 0) {
            int att;
            float want = t_normal(2024, 3, (uint64_t)i, &att);
            if (sb_test_bits(z[i]) != sb_test_bits(want)) mism++;
            if (att == 2) second++;
            if (att >= 3) later_block++;
        }
    }
    double mean = sum / (double)n, var = sq / (double)n - mean * mean;
    CHECK(mism == 0, "%lld normals differ from the restated polar sequence", (long long)mism);
    CHECK(second > 0 && later_block > 0, "rejection paths not exercised: %lld %lld",
          (long long)second, (long long)later_block);
    CHECK(negzero == 0, "-0.0f produced");
    CHECK(fabs(mean) < 5.0 / sqrt((double)n), "normal mean %.6f", mean);
    CHECK(fabs(var - 1.0) < 5.0 * sqrt(2.0 / (double)n), "normal variance %.6f", var);
    CHECK(fabs(q4 / (double)n - 3.0) < 0.1, "normal 4th moment %.4f", q4 / (double)n);

    /* mean + std * z, two roundings; sequential use matches addressed use */
    float a[300], b[300];
    CHECK_OK(sb_rng_normal(&rng, 500, 1.5f, 0.3f, a, 300));
    sb_rng seq = rng;
    seq.counter = 500;
    CHECK_OK(sb_rng_next_normal(&seq, 1.5f, 0.3f, b, 100));
    CHECK_OK(sb_rng_next_normal(&seq, 1.5f, 0.3f, b + 100, 200));
    CHECK(memcmp(a, b, sizeof a) == 0, "sequential normals differ");
    for (int j = 0; j < 300; j += 13) {
        float t = 0.3f * z[500 + j];
        CHECK_BITS(a[j], 1.5f + t, "scaled normal %d", j);
        CHECK_BITS(z[500 + j], sb_rng_normal_at(2024, 3, 500 + (uint64_t)j), "normal_at %d", j);
    }
    /* normals and uniforms at one index are independent draws */
    CHECK(sb_rng_uniform_at(1, 1, 10) != fabsf(sb_rng_normal_at(1, 1, 10)), "domains");
    free(z);
}

static void test_bounded(void) {
    const uint32_t bounds[] = {1, 2, 3, 10, 1000003, 0x80000001u, 0xffffffffu};
    int64_t rejected = 0;
    for (int bi = 0; bi < 7; bi++) {
        uint32_t out[400];
        sb_rng rng = sb_rng_make(77, (uint64_t)bi);
        CHECK_OK(sb_rng_bounded(&rng, 1000, bounds[bi], out, 400));
        int64_t bad = 0;
        for (int j = 0; j < 400; j++) {
            int rej;
            uint32_t want = t_bounded(77, (uint64_t)bi, 1000 + (uint64_t)j, bounds[bi], &rej);
            rejected += rej;
            if (out[j] != want || out[j] >= bounds[bi]) bad++;
        }
        CHECK(bad == 0, "bound %u: %lld values differ", bounds[bi], (long long)bad);
    }
    CHECK(rejected > 50, "rejection path barely exercised (%lld)", (long long)rejected);
    /* chi-square over 10 buckets */
    int64_t n = sb_test_quick() ? 50000 : 200000, counts[10] = {0};
    sb_rng rng = sb_rng_make(9, 9);
    int64_t failed = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t v = 10;
        failed += sb_rng_next_bounded(&rng, 10, &v, 1) != SB_OK;
        if (v < 10) counts[v]++;
    }
    CHECK(failed == 0, "%lld next_bounded calls failed", (long long)failed);
    double chi = 0, e = (double)n / 10;
    for (int k = 0; k < 10; k++) chi += (counts[k] - e) * (counts[k] - e) / e;
    CHECK(chi < 33.7, "bounded chi-square %.2f (9 dof)", chi); /* p ~ 1e-4 */
    CHECK(rng.counter == (uint64_t)n, "counter after next_bounded");
}

static void test_permutation(void) {
    const int64_t sizes[] = {0, 1, 2, 5, 33, 1000};
    for (int si = 0; si < 6; si++) {
        int64_t n = sizes[si];
        int64_t *p = malloc((size_t)(n + 1) * sizeof *p), *q = malloc((size_t)(n + 1) * sizeof *q);
        char *seen = calloc((size_t)n + 1, 1);
        CHECK_OK(sb_rng_permutation(11, 4, n, p));
        CHECK_OK(sb_rng_permutation(11, 4, n, q));
        int ok = 1;
        for (int64_t k = 0; k < n; k++) {
            if (p[k] < 0 || p[k] >= n || seen[p[k]]) ok = 0;
            else seen[p[k]] = 1;
        }
        CHECK(ok, "n = %lld: not a permutation", (long long)n);
        CHECK(n == 0 || memcmp(p, q, (size_t)n * sizeof *p) == 0, "n = %lld: not deterministic",
              (long long)n);
        /* the written draw sequence */
        for (int64_t k = 0; k < n; k++) q[k] = k;
        for (int64_t i = n - 1; i > 0; i--) {
            int rej;
            int64_t j = t_bounded(11, 4, (uint64_t)i, (uint32_t)(i + 1), &rej);
            int64_t t = q[i]; q[i] = q[j]; q[j] = t;
        }
        CHECK(n == 0 || memcmp(p, q, (size_t)n * sizeof *p) == 0, "n = %lld: draw sequence",
              (long long)n);
        free(p); free(q); free(seen);
    }
    int64_t a[1000], b[1000];
    CHECK_OK(sb_rng_permutation(11, 4, 1000, a));
    CHECK_OK(sb_rng_permutation(11, 5, 1000, b));
    CHECK(memcmp(a, b, sizeof a) != 0, "streams give the same permutation");
    /* uniformity over the 6 permutations of 3 and the 24 of 4 */
    int trials = sb_test_quick() ? 12000 : 60000;
    long c3[6] = {0}, c4[24] = {0};
    for (int t = 0; t < trials; t++) {
        int64_t p[4];
        CHECK_OK(sb_rng_permutation(1234, (uint64_t)t, 3, p));
        c3[p[0] * 2 + (p[1] > p[2])]++;
        CHECK_OK(sb_rng_permutation(99, (uint64_t)t, 4, p));
        int code = 0;
        for (int k = 0; k < 4; k++) code = code * 4 + (int)p[k];
        /* rank among the 24 via a Lehmer code */
        int rank = 0, fact[4] = {6, 2, 1, 1};
        for (int k = 0; k < 4; k++) {
            int smaller = 0;
            for (int l = k + 1; l < 4; l++) smaller += p[l] < p[k];
            rank += smaller * fact[k];
        }
        (void)code;
        c4[rank]++;
    }
    double chi3 = 0, chi4 = 0, e3 = trials / 6.0, e4 = trials / 24.0;
    for (int k = 0; k < 6; k++) chi3 += (c3[k] - e3) * (c3[k] - e3) / e3;
    for (int k = 0; k < 24; k++) chi4 += (c4[k] - e4) * (c4[k] - e4) / e4;
    CHECK(chi3 < 25.7, "permutations of 3: chi-square %.2f (5 dof)", chi3);
    CHECK(chi4 < 56.0, "permutations of 4: chi-square %.2f (23 dof)", chi4);
}

static void test_errors(void) {
    sb_rng rng = sb_rng_make(1, 2);
    float f[4];
    uint32_t w[4];
    int64_t p[4];
    CHECK_ERROR(sb_rng_uniform(NULL, 0, f, 4), SB_ERR_NULL, "sb_rng_uniform: rng is NULL");
    CHECK_ERROR(sb_rng_uniform(&rng, 0, NULL, 4), SB_ERR_NULL, "out is NULL");
    CHECK_ERROR(sb_rng_uniform(&rng, 0, f, -1), SB_ERR_ARG, "n = -1 is negative");
    CHECK_ERROR(sb_rng_uniform(&rng, SB_RNG_INDEX_LIMIT - 2, f, 4), SB_ERR_RANGE, "index limit");
    CHECK_ERROR(sb_rng_uniform(&rng, UINT64_MAX, f, 1), SB_ERR_RANGE, "index limit");
    CHECK_OK(sb_rng_uniform(&rng, SB_RNG_INDEX_LIMIT - 4, f, 4));
    CHECK_OK(sb_rng_uniform(&rng, 0, NULL, 0));
    CHECK_ERROR(sb_rng_uniform_range(&rng, 0, 2.0f, 1.0f, f, 4), SB_ERR_ARG, "lo <= hi");
    CHECK_ERROR(sb_rng_uniform_range(&rng, 0, NAN, 1.0f, f, 4), SB_ERR_ARG, "sb_rng_uniform_range");
    CHECK_ERROR(sb_rng_uniform_range(&rng, 0, 0.0f, INFINITY, f, 4), SB_ERR_ARG, "finite");
    CHECK_ERROR(sb_rng_uniform_range(&rng, 0, -3e38f, 3e38f, f, 4), SB_ERR_ARG, "overflows");
    CHECK_ERROR(sb_rng_uniform_range(NULL, 0, 0.0f, 1.0f, f, 4), SB_ERR_NULL, "rng is NULL");
    CHECK_ERROR(sb_rng_normal(&rng, 0, 0.0f, -1.0f, f, 4), SB_ERR_ARG, "std >= 0");
    CHECK_ERROR(sb_rng_normal(&rng, 0, NAN, 1.0f, f, 4), SB_ERR_ARG, "sb_rng_normal");
    CHECK_ERROR(sb_rng_normal(&rng, 0, 0.0f, 1.0f, NULL, 4), SB_ERR_NULL, "sb_rng_normal: out");
    CHECK_ERROR(sb_rng_bounded(&rng, 0, 0, w, 4), SB_ERR_ARG, "bound is 0");
    CHECK_ERROR(sb_rng_bounded(&rng, 0, 5, NULL, 4), SB_ERR_NULL, "sb_rng_bounded: out");
    CHECK_ERROR(sb_rng_next_uniform(NULL, f, 4), SB_ERR_NULL, "sb_rng_next_uniform: rng");
    CHECK_ERROR(sb_rng_next_normal(NULL, 0.0f, 1.0f, f, 4), SB_ERR_NULL, "sb_rng_next_normal: rng");
    CHECK_ERROR(sb_rng_next_bounded(NULL, 3, w, 4), SB_ERR_NULL, "sb_rng_next_bounded: rng");
    rng.counter = 17;
    CHECK_ERROR(sb_rng_next_uniform(&rng, f, -2), SB_ERR_ARG, "negative");
    CHECK_ERROR(sb_rng_next_normal(&rng, 0.0f, -2.0f, f, 4), SB_ERR_ARG, "std");
    CHECK_ERROR(sb_rng_next_bounded(&rng, 0, w, 4), SB_ERR_ARG, "bound");
    CHECK(rng.counter == 17, "counter moved on error");
    CHECK_ERROR(sb_rng_permutation(1, 2, -1, p), SB_ERR_ARG, "sb_rng_permutation: n = -1");
    CHECK_ERROR(sb_rng_permutation(1, 2, (int64_t)1 << 32, p), SB_ERR_ARG, "outside");
    CHECK_ERROR(sb_rng_permutation(1, 2, 4, NULL), SB_ERR_NULL, "perm is NULL");
    CHECK(sb_rng_bounded_at(1, 2, 3, 0) == 0, "bound 0 gives 0");
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_kat();
    test_block_layout();
    test_uniform();
    test_normal();
    test_bounded();
    test_permutation();
    test_errors();
    return sb_test_finish();
}
