/* Tests of the order-free exact reduction (src/dist/exact_sum.h):
 * identical bits under every permutation and grouping of the inputs (groups
 * stand for processes: each forms partial codes and sums, combined in a
 * shuffled order), the stated error bound against an exact MPFR sum, the
 * correctly rounded sum when the inputs span at most G binades, K = 1
 * returning its input bit for bit, signed zeros, subnormals, inf/NaN,
 * cancellation, overflow, partial sums that fit the stated word width, and
 * the largest K; the fast loops of the CPU backend (cpu/exact_internal.h)
 * give the reference loops' codes, sums and results at every ISA level and
 * thread count. */
#include <math.h>
#include <mpfr.h>
#include "harness.h"
#include "cpu/exact_internal.h"
#include "dist/exact_sum.h"
#include "samebits/runtime.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}
static float from_bits(uint32_t u) { float x; memcpy(&x, &u, sizeof x); return x; }

/* A float of random sign and significand whose exponent lies in [lo, hi]
 * (biased; 0 gives a subnormal or zero). */
static float rand_float(int lo, int hi) {
    uint32_t b = (uint32_t)(lo + (int)(rnd() % (uint32_t)(hi - lo + 1)));
    return from_bits((rnd() & 0x80000000u) | (b << 23) | (rnd() & 0x7fffffu));
}

/* The reduction done by `groups` processes: input j belongs to group
 * owner[j]; each group forms its own codes and sums; the partials are
 * combined (max, then sum) in the order `perm` of the groups. Also checks
 * that every group's partial sum fits the stated word width. */
static void reduce_grouped(const float *const *xs, int64_t k, size_t n, const int *owner, int groups,
                           const int *perm, float *out) {
    uint8_t *codes = calloc(n * (size_t)groups, 1), *all = calloc(n, 1);
    int64_t *acc = calloc(n * (size_t)groups, sizeof *acc), *sum = calloc(n, sizeof *sum);
    for (int64_t j = 0; j < k; j++) sb_exact_codes_max(xs[j], n, codes + (size_t)owner[j] * n);
    for (int g = 0; g < groups; g++)
        for (size_t i = 0; i < n; i++)
            if (codes[(size_t)perm[g] * n + i] > all[i]) all[i] = codes[(size_t)perm[g] * n + i];
    for (int64_t j = 0; j < k; j++) sb_exact_add(xs[j], n, all, k, acc + (size_t)owner[j] * n);
    int wide = sb_exact_word_bits(k) == 64;
    for (int g = 0; g < groups; g++)
        for (size_t i = 0; i < n; i++) {
            int64_t a = acc[(size_t)perm[g] * n + i];
            CHECK(wide || (a >= INT32_MIN && a <= INT32_MAX), "partial sum %lld does not fit 32 bits (k=%lld)",
                  (long long)a, (long long)k);
            sum[i] += a;
        }
    sb_exact_finish(sum, all, n, k, out);
    free(codes); free(all); free(acc); free(sum);
}

static void shuffle_ints(int *v, int n) {
    for (int i = n - 1; i > 0; i--) { int j = (int)(rnd() % (uint32_t)(i + 1)), t = v[i]; v[i] = v[j]; v[j] = t; }
}

/* Bits must not depend on the order of the inputs nor on their grouping. */
static void check_order_free(float **xs, int64_t k, size_t n, const char *what) {
    float *ref = malloc(n * sizeof *ref), *got = malloc(n * sizeof *got);
    const float **perm = malloc((size_t)k * sizeof *perm);
    int *owner = malloc((size_t)k * sizeof *owner), gperm[64];
    CHECK(sb_exact_sum((const float *const *)xs, k, n, ref) == SB_OK, "%s: %s", what, sb_last_error());
    for (int trial = 0; trial < 8; trial++) {
        for (int64_t j = 0; j < k; j++) perm[j] = xs[j];
        for (int64_t j = k - 1; j > 0; j--) {
            int64_t r = (int64_t)(rnd() % (uint32_t)(j + 1));
            const float *t = perm[j]; perm[j] = perm[r]; perm[r] = t;
        }
        CHECK(sb_exact_sum(perm, k, n, got) == SB_OK, "%s", sb_last_error());
        size_t diff = 0;
        for (size_t i = 0; i < n; i++) diff += sb_test_bits(got[i]) != sb_test_bits(ref[i]);
        CHECK(diff == 0, "%s: permutation %d changes %zu results", what, trial, diff);
        int groups = 1 + (int)(rnd() % 16);
        for (int64_t j = 0; j < k; j++) owner[j] = (int)(rnd() % (uint32_t)groups);
        for (int g = 0; g < groups; g++) gperm[g] = g;
        shuffle_ints(gperm, groups);
        reduce_grouped(perm, k, n, owner, groups, gperm, got);
        diff = 0;
        for (size_t i = 0; i < n; i++) diff += sb_test_bits(got[i]) != sb_test_bits(ref[i]);
        CHECK(diff == 0, "%s: %d groups change %zu results", what, groups, diff);
    }
    free(ref); free(got); free(perm); free(owner);
}

/* All groupings of 4 inputs into contiguous or arbitrary subsets: every
 * set partition of {0,1,2,3} (15 of them), each combined in every order
 * of its groups. */
static void check_all_groupings(void) {
    enum { K = 4, N = 64 };
    float *xs[K];
    for (int j = 0; j < K; j++) {
        xs[j] = malloc(N * sizeof(float));
        for (int i = 0; i < N; i++) xs[j][i] = rand_float(100 + (int)(rnd() % 8), 140);
    }
    float ref[N], got[N];
    CHECK(sb_exact_sum((const float *const *)xs, K, N, ref) == SB_OK, "%s", sb_last_error());
    int partitions = 0;
    /* restricted growth strings a0=0, a_j <= 1 + max(a_0..a_{j-1}) */
    for (int code = 0; code < 256; code++) {
        int owner[K], mx = -1, ok = 1;
        for (int j = 0; j < K; j++) {
            owner[j] = (code >> (2 * j)) & 3;
            if (owner[j] > mx + 1) ok = 0;
            if (owner[j] > mx) mx = owner[j];
        }
        if (!ok) continue;
        partitions++;
        int groups = mx + 1, gp[4] = {0, 1, 2, 3};
        for (int r = 0; r < 24; r++) { /* every order of up to 4 groups (some repeat) */
            int a[4] = {0, 1, 2, 3}, rr = r;
            for (int i = 3; i > 0; i--) { int j = rr % (i + 1); rr /= i + 1; int t = a[i]; a[i] = a[j]; a[j] = t; }
            int m = 0;
            for (int i = 0; i < 4; i++) if (a[i] < groups) gp[m++] = a[i];
            reduce_grouped((const float *const *)xs, K, N, owner, groups, gp, got);
            int diff = 0;
            for (int i = 0; i < N; i++) diff += sb_test_bits(got[i]) != sb_test_bits(ref[i]);
            CHECK(diff == 0, "partition %d (%d groups), order %d: %d results differ", code, groups, r, diff);
        }
    }
    CHECK(partitions == 15, "enumerated %d set partitions of 4 inputs, expected 15", partitions);
    for (int j = 0; j < K; j++) free(xs[j]);
}

/* x correctly rounded to float32 from an exact MPFR value (subnormals
 * honoured, overflow to inf). */
static float mpfr_to_f32(const mpfr_t s) {
    mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
    mpfr_set_emin(-148);
    mpfr_set_emax(128);
    mpfr_t r;
    mpfr_init2(r, 24);
    int t = mpfr_set(r, s, MPFR_RNDN);
    t = mpfr_subnormalize(r, t, MPFR_RNDN);
    float f = mpfr_get_flt(r, MPFR_RNDN);
    mpfr_clear(r);
    mpfr_set_emin(emin);
    mpfr_set_emax(emax);
    return f;
}

static int ceil_log2(int64_t k) { int l = 0; while ((INT64_C(1) << l) < k) l++; return l; }

/* The ulp exponent of finite x: 2^(e-24) for |x| in [2^(e-1), 2^e), at least 2^-149. */
static int ulp_exp(float x) {
    int e;
    if (x == 0.0f) return -149;
    frexpf(x, &e);
    return e - 24 > -149 ? e - 24 : -149;
}

/* |out - s| <= 1/2 ulp(out) + (K-1) u 2^-(G+1) for each element of finite
 * inputs; and out is the correctly rounded sum when all inputs lie within G
 * binades of the largest. Returns how many elements were in that case. */
static int check_bound(float **xs, int64_t k, size_t n, const char *what) {
    float *out = malloc(n * sizeof *out);
    CHECK(sb_exact_sum((const float *const *)xs, k, n, out) == SB_OK, "%s", sb_last_error());
    int w = k <= 128 ? 32 : 64, g = w - 25 - ceil_log2(k), exact_cases = 0;
    mpfr_t s, err, lim, t;
    mpfr_inits2(600, s, err, lim, t, (mpfr_ptr)0);
    for (size_t i = 0; i < n; i++) {
        mpfr_set_zero(s, 1);
        int umax = -149, umin = 1000;
        for (int64_t j = 0; j < k; j++) {
            mpfr_add_d(s, s, (double)xs[j][i], MPFR_RNDN); /* exact at 600 bits */
            int u = ulp_exp(xs[j][i]);
            if (u > umax) umax = u;
            if (xs[j][i] != 0.0f && u < umin) umin = u;
        }
        if (isinf(out[i])) { /* only when the rounded sum overflows */
            mpfr_set_ui_2exp(t, 1, 127, MPFR_RNDN);
            CHECK(mpfr_cmpabs(s, t) >= 0, "%s[%zu]: inf for a sum below 2^127", what, i);
            continue;
        }
        mpfr_sub_d(err, s, (double)out[i], MPFR_RNDN);
        mpfr_abs(err, err, MPFR_RNDN);
        mpfr_set_ui_2exp(lim, 1, ulp_exp(out[i]) - 1, MPFR_RNDN);
        mpfr_set_si_2exp(t, (long)(k - 1), umax - g - 1, MPFR_RNDN);
        mpfr_add(lim, lim, t, MPFR_RNDN);
        CHECK(mpfr_lessequal_p(err, lim), "%s[%zu]: error above the stated bound (k=%lld)", what, i, (long long)k);
        if (umin == 1000 || umax - umin <= g) {
            exact_cases++;
            CHECK_BITS(out[i], mpfr_to_f32(s), "%s[%zu]: inputs within G=%d binades: correctly rounded sum", what, i, g);
        }
    }
    mpfr_clears(s, err, lim, t, (mpfr_ptr)0);
    free(out);
    return exact_cases;
}

static float **alloc_inputs(int64_t k, size_t n) {
    float **xs = malloc((size_t)k * sizeof *xs);
    for (int64_t j = 0; j < k; j++) xs[j] = malloc(n * sizeof **xs);
    return xs;
}
static void free_inputs(float **xs, int64_t k) { for (int64_t j = 0; j < k; j++) free(xs[j]); free(xs); }

static void check_random(int64_t k, size_t n, int lo, int hi) {
    float **xs = alloc_inputs(k, n);
    for (int64_t j = 0; j < k; j++)
        for (size_t i = 0; i < n; i++) xs[j][i] = rand_float(lo, hi);
    char what[64];
    snprintf(what, sizeof what, "k=%lld exponents %d..%d", (long long)k, lo, hi);
    check_order_free(xs, k, n, what);
    check_bound(xs, k, n, what);
    free_inputs(xs, k);
}

static float sum2(float a, float b) {
    const float *xs[2] = {&a, &b};
    float out;
    CHECK(sb_exact_sum(xs, 2, 1, &out) == SB_OK, "%s", sb_last_error());
    return out;
}
static float sum3(float a, float b, float c) {
    const float *xs[3] = {&a, &b, &c};
    float out;
    CHECK(sb_exact_sum(xs, 3, 1, &out) == SB_OK, "%s", sb_last_error());
    return out;
}

static void check_identity(void) {
    int quick = sb_test_quick();
    size_t n = quick ? 1 << 16 : 1 << 20;
    float *x = malloc(n * sizeof *x), *out = malloc(n * sizeof *out);
    const uint32_t special[] = {0, 0x80000000u, 1, 0x80000001u, 0x007fffffu, 0x00800000u, 0x7f7fffffu,
                                0xff7fffffu, 0x7f800000u, 0xff800000u, 0x3f800000u, 0x4b800001u};
    size_t ns = sizeof special / sizeof *special;
    for (size_t i = 0; i < n; i++) x[i] = from_bits(i < ns ? special[i] : (uint32_t)rnd() << 16 ^ rnd());
    const float *xs[1] = {x};
    CHECK(sb_exact_sum(xs, 1, n, out) == SB_OK, "%s", sb_last_error());
    size_t diff = 0;
    for (size_t i = 0; i < n; i++)
        if (isnan(x[i])) diff += sb_test_bits(out[i]) != 0x7fc00000u;
        else diff += sb_test_bits(out[i]) != sb_test_bits(x[i]);
    CHECK(diff == 0, "K=1: %zu of %zu results differ from their input", diff, n);
    free(x); free(out);
}

static void check_special(void) {
    const float inf = from_bits(0x7f800000u), nan = from_bits(0x7fc00000u);
    CHECK_BITS(sum2(-0.0f, -0.0f), -0.0f, "-0 + -0 = -0");
    CHECK_BITS(sum2(-0.0f, 0.0f), 0.0f, "-0 + +0 = +0");
    CHECK_BITS(sum2(0.0f, -0.0f), 0.0f, "+0 + -0 = +0");
    CHECK_BITS(sum2(1.5f, -1.5f), 0.0f, "x + -x = +0");
    CHECK_BITS(sum2(-1e-45f, -0.0f), -1e-45f, "-subnormal + -0");
    CHECK_BITS(sum2(from_bits(1), from_bits(1)), from_bits(2), "subnormals add exactly");
    CHECK_BITS(sum2(from_bits(0x007fffffu), from_bits(1)), from_bits(0x00800000u), "subnormal carry into the normal range");
    CHECK_BITS(sum2(from_bits(0x7f7fffffu), from_bits(0x7f7fffffu)), inf, "overflow to +inf");
    CHECK_BITS(sum2(from_bits(0xff7fffffu), from_bits(0xff7fffffu)), -inf, "overflow to -inf");
    CHECK_BITS(sum2(from_bits(0x7f7fffffu), from_bits(0x72800000u)), from_bits(0x7f7fffffu), "FLT_MAX + a quarter of its ulp stays");
    CHECK_BITS(sum2(from_bits(0x7f7fffffu), from_bits(0x73000000u)), inf, "FLT_MAX + half its ulp: the tie goes to even, inf");
    CHECK_BITS(sum2(inf, 1.0f), inf, "inf + finite");
    CHECK_BITS(sum2(-inf, 1.0f), -inf, "-inf + finite");
    CHECK_BITS(sum2(inf, inf), inf, "inf + inf");
    CHECK_BITS(sum2(inf, -inf), nan, "inf + -inf = NaN");
    CHECK_BITS(sum2(from_bits(0x7fa00001u), 1.0f), nan, "signalling NaN + 1 = the canonical NaN");
    CHECK_BITS(sum2(from_bits(0xffc00123u), inf), nan, "NaN + inf = NaN");
    CHECK_BITS(sum3(-inf, -inf, 7.0f), -inf, "-inf twice");
    /* cancellation: (2^24 + 1) - 2^24 in float is 0; the exact sum is 1 */
    CHECK_BITS(sum3(16777216.0f, 1.0f, -16777216.0f), 1.0f, "cancellation keeps the small term");
    CHECK_BITS(sum3(1.0f, 16777216.0f, -16777216.0f), 1.0f, "cancellation, other order");
    /* ties: 1 + 2^-24 is a tie between 1 and 1+2^-23: to even, 1 */
    CHECK_BITS(sum2(1.0f, from_bits(0x33800000u)), 1.0f, "tie to even");
    CHECK_BITS(sum3(1.0f, from_bits(0x33800000u), from_bits(0x32000000u)), from_bits(0x3f800001u),
               "1 + 2^-24 + 2^-27: just above the tie rounds up (the term within G binades is kept)");
    /* a term far below the largest's ulp is rounded away, as the bound allows */
    CHECK_BITS(sum2(1e30f, 1.0f), 1e30f, "1e30 + 1");
    CHECK(sb_exact_check_terms("t", 0) == SB_ERR_ARG && sb_exact_check_terms("t", SB_EXACT_MAX_TERMS + 1) == SB_ERR_ARG,
          "k out of range refused");
    float out;
    const float *none[1] = {NULL};
    CHECK_ERROR(sb_exact_sum(none, 0, 1, &out), SB_ERR_ARG, "must be 1..");
    CHECK_ERROR(sb_exact_sum(none, 1, 1, &out), SB_ERR_NULL, "input 0 is NULL");
}

/* Every one of K equal largest inputs of the widest significand: the sums
 * reach the stated word limit and must neither wrap nor lose bits. */
static void check_extremes(void) {
    int64_t ks[] = {2, 3, 64, 127, 128, 129, 1000};
    for (size_t t = 0; t < sizeof ks / sizeof *ks; t++) {
        int64_t k = ks[t];
        float **xs = alloc_inputs(k, 4);
        for (int64_t j = 0; j < k; j++) {
            xs[j][0] = from_bits(0xcb7fffffu);                      /* -(2^24 - 1) */
            xs[j][1] = from_bits(0x7f7fffffu);                      /* FLT_MAX: inf when k > 1 */
            xs[j][2] = j == 0 ? from_bits(0x4b7fffffu) : from_bits(0x337fffffu); /* one big, many tiny */
            xs[j][3] = from_bits(0x00000001u);                      /* the smallest subnormal */
        }
        float out[4];
        CHECK(sb_exact_sum((const float *const *)xs, k, 4, out) == SB_OK, "%s", sb_last_error());
        mpfr_t s;
        mpfr_init2(s, 128);
        mpfr_set_si(s, -(16777215L), MPFR_RNDN);
        mpfr_mul_si(s, s, (long)k, MPFR_RNDN);
        CHECK_BITS(out[0], mpfr_to_f32(s), "k=%lld copies of -(2^24-1)", (long long)k);
        mpfr_clear(s);
        CHECK_BITS(out[1], from_bits(0x7f800000u), "k=%lld copies of FLT_MAX", (long long)k);
        CHECK_BITS(out[3], from_bits((uint32_t)k), "k=%lld smallest subnormals", (long long)k);
        check_order_free(xs, k, 4, "extremes");
        check_bound(xs, k, 4, "extremes");
        free_inputs(xs, k);
    }
}

/* The largest K the reduction takes, on a few elements. */
static void check_huge_k(void) {
    int quick = sb_test_quick();
    int64_t k = quick ? 1 << 16 : SB_EXACT_MAX_TERMS;
    size_t n = 3;
    float **xs = alloc_inputs(k, n);
    for (int64_t j = 0; j < k; j++) {
        xs[j][0] = rand_float(120, 130);
        xs[j][1] = j % 2 ? 1.0f : -1.0f;          /* cancels exactly */
        xs[j][2] = j == k / 3 ? from_bits(0xff800000u) : rand_float(1, 254);
    }
    const float **r = malloc((size_t)k * sizeof *r);
    for (int64_t j = 0; j < k; j++) r[j] = xs[k - 1 - j];
    float a[3], b[3];
    CHECK(sb_exact_sum((const float *const *)xs, k, n, a) == SB_OK, "%s", sb_last_error());
    CHECK(sb_exact_sum(r, k, n, b) == SB_OK, "%s", sb_last_error());
    for (size_t i = 0; i < n; i++) CHECK_BITS(a[i], b[i], "huge k=%lld reversed, element %zu", (long long)k, i);
    CHECK_BITS(a[1], 0.0f, "k=%lld alternating +-1 cancel to +0", (long long)k);
    CHECK_BITS(a[2], from_bits(0xff800000u), "one -inf among k=%lld finite", (long long)k);
    /* the bound on element 0 (finite, random) */
    float **col = alloc_inputs(k, 1);
    for (int64_t j = 0; j < k; j++) col[j][0] = xs[j][0];
    check_bound(col, k, 1, "huge k");
    free_inputs(col, k);
    free(r);
    free_inputs(xs, k);
}

/* One element of input row j for the fast-vs-reference comparison: each
 * column i has its own kind of values, so vector blocks hold plain blocks,
 * blocks with a -0-only column (code 0) and blocks with inf/NaN (code 255). */
static float mixed_value(int64_t j, size_t i) {
    if (i % 1009 == 7) return from_bits(0x80000000u);                    /* every input -0 */
    if (i % 997 == 3 && j == 0) return from_bits(0x7f800000u);           /* +inf */
    if (i % 991 == 5 && j == 0) return from_bits(0x7fc00001u);           /* NaN */
    if (i % 983 == 9) return from_bits(j % 2 ? 0xff800000u : 0x7f800000u); /* +inf and -inf */
    switch (i % 8) {
    case 0: return rand_float(120, 130);                                 /* gradient-like */
    case 1: return rand_float(1, 254);                                   /* any normal */
    case 2: return rand_float(0, 3);                                     /* subnormals */
    case 3: return rand_float(250, 254);                                 /* sums that overflow */
    case 4: return j % 3 ? 0.0f : from_bits(0x80000000u);               /* zeros of both signs */
    case 5: return j % 2 ? 1.5f : -1.5f;                                 /* cancels to +0 */
    case 6: return from_bits((j % 2 ? 0x80000000u : 0u) | (rnd() & 0x7fffffu)); /* subnormals, both signs */
    default: return rand_float(100, 150);
    }
}

/* The fast loops at every supported ISA level and 1, 2, 3, 7 threads
 * against the reference loops: the same codes, the same integer sums, the
 * same result bits. The inputs are one (k, n) matrix, several chunks of
 * elements long, with tails that are no multiple of any vector width. */
static void check_fast(int64_t k) {
    size_t n = 3 * 4096 + 37;
    float *x = malloc((size_t)k * n * sizeof *x), *ref = malloc(n * sizeof *ref), *got = malloc(n * sizeof *got);
    uint8_t *rc = calloc(n, 1), *fc = malloc(n);
    int64_t *ra = calloc(n, sizeof *ra), *fa = malloc(n * sizeof *fa);
    for (int64_t j = 0; j < k; j++)
        for (size_t i = 0; i < n; i++) x[(size_t)j * n + i] = mixed_value(j, i);
    for (int64_t j = 0; j < k; j++) sb_exact_codes_max(x + (size_t)j * n, n, rc);
    for (int64_t j = 0; j < k; j++) sb_exact_add(x + (size_t)j * n, n, rc, k, ra);
    sb_exact_finish(ra, rc, n, k, ref);
    sb_isa_level was = sb_isa();
    int threads_were = sb_num_threads(), levels = 0;
    static const int threads[] = {1, 2, 3, 7};
    for (int lv = 0; lv < SB_ISA_COUNT; lv++) {
        if (!sb_isa_supported((sb_isa_level)lv)) continue;
        levels++;
        CHECK(sb_set_isa((sb_isa_level)lv) == SB_OK, "%s", sb_last_error());
        for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
            CHECK(sb_set_num_threads(threads[t]) == SB_OK, "%s", sb_last_error());
            memset(fc, 0, n);
            memset(fa, 0, n * sizeof *fa);
            sb_cpu_exact_codes_max(x, k, (int64_t)n, (int64_t)n, fc);
            sb_cpu_exact_add(x, k, (int64_t)n, (int64_t)n, fc, k, fa);
            sb_cpu_exact_finish(fa, fc, (int64_t)n, k, got);
            size_t bad_c = 0, bad_a = 0, bad_r = 0, first = n;
            for (size_t i = 0; i < n; i++) {
                int wrong = fc[i] != rc[i] || fa[i] != ra[i] || memcmp(&got[i], &ref[i], sizeof *got);
                bad_c += fc[i] != rc[i];
                bad_a += fa[i] != ra[i];
                bad_r += memcmp(&got[i], &ref[i], sizeof *got) != 0;
                if (wrong && first == n) first = i;
            }
            CHECK(bad_c + bad_a + bad_r == 0,
                  "fast exact sum, isa %s, %d threads, k=%lld: %zu codes, %zu sums, %zu results differ "
                  "from the reference (first at element %zu)", sb_isa_name((sb_isa_level)lv), threads[t],
                  (long long)k, bad_c, bad_a, bad_r, first);
        }
    }
    CHECK(levels >= 1, "no ISA level was compared");
    sb_set_isa(was);
    sb_set_num_threads(threads_were);
    free(x); free(ref); free(got); free(rc); free(fc); free(ra); free(fa);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    check_identity();
    check_special();
    check_all_groupings();
    check_extremes();
    int64_t ks[] = {1, 2, 3, 5, 8, 17, 100, 128, 129, 300};
    for (size_t t = 0; t < sizeof ks / sizeof *ks; t++) {
        check_random(ks[t], 257, 120, 130);  /* gradient-like: a few binades */
        check_random(ks[t], 257, 1, 254);    /* every normal exponent */
        check_random(ks[t], 65, 0, 3);       /* subnormals and the smallest normals */
    }
    /* inputs within G binades of each other: the sum is correctly rounded
     * (counted so the test fails if no case exercised it) */
    float **xs = alloc_inputs(8, 512);
    for (int j = 0; j < 8; j++)
        for (int i = 0; i < 512; i++) xs[j][i] = rand_float(126, 128);
    CHECK(check_bound(xs, 8, 512, "narrow") == 512, "every narrow element was checked for correct rounding");
    free_inputs(xs, 8);
    check_huge_k();
    int64_t fast_ks[] = {1, 2, 3, 4, 7, 8, 64, 127, 128, 129, 300};
    for (size_t t = 0; t < sizeof fast_ks / sizeof *fast_ks; t++) check_fast(fast_ks[t]);
    return sb_test_finish();
}
