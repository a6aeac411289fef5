/* sb_powf must be the correctly rounded (RN-even) binary32 x^y for every
 * pair. Two arguments make 2^64 pairs, too many for the exhaustive proof of
 * the one-argument functions, so this samples, family by family, the pairs
 * most likely to break a pow:
 *  - the special cases of C99 Annex F with the exact bits the contract
 *    fixes (signed zeros, infinities, NaN conventions, negative bases);
 *  - exact results and midpoints (x = 2^a; y = n/2^j with x a perfect
 *    2^j-th power): the values no approximation can round, which sb_powf
 *    must recognise;
 *  - x near 1 with large |y|, results near the overflow and underflow
 *    thresholds (t = y log2 x near 128 and -150), small integer y, and
 *    random bit patterns of both arguments.
 * Every pair is decided by a sound filter (glibc's binary64 pow, error
 * below 2^-51 relative, whose +-2^-40 enclosure rounds to one float) or by
 * MPFR (precision 24, binary32's exponent range, subnormalised, RNDN).
 *
 *   test_powf [--pairs N]    N pairs per family (default 40000; 4000 quick)
 * docs/MATH-VERIFICATION.md records a large run.
 */
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include "harness.h"

static mpfr_t mx, my, mz;

static float u2f(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

/* The contract's answer, straight from MPFR (NaN conventions apart). */
static uint32_t want_bits(float x, float y) {
    if (y == 0.0f || x == 1.0f) return 0x3f800000u;
    if (isnan(x)) return sb_test_bits(x) | 0x00400000u;
    if (isnan(y)) return sb_test_bits(y) | 0x00400000u;
    mpfr_set_flt(mx, x, MPFR_RNDN);
    mpfr_set_flt(my, y, MPFR_RNDN);
    int t = mpfr_pow(mz, mx, my, MPFR_RNDN);
    t = mpfr_check_range(mz, t, MPFR_RNDN);
    mpfr_subnormalize(mz, t, MPFR_RNDN);
    if (mpfr_nan_p(mz)) return 0x7fc00000u;
    return sb_test_bits(mpfr_get_flt(mz, MPFR_RNDN));
}

static long mpfr_calls;

/* Whether sb_powf(x, y) is right: the filter first, MPFR when it cannot
 * decide or disagrees. */
static int right(float x, float y, uint32_t *got, uint32_t *want) {
    *got = sb_test_bits(sb_powf(x, y));
    if (!isnan(x) && !isnan(y) && x > 0.0f && y != 0.0f && !isinf(x) && !isinf(y)) {
        double v = pow((double)x, (double)y);
        if (v != 0.0 && !isinf(v) && v > 0x1p-1000 && v < 0x1p1000) {
            double d = v * 0x1p-40;
            uint32_t lo = sb_test_bits((float)(v - d)), hi = sb_test_bits((float)(v + d));
            if (lo == hi && lo == *got) {
                *want = lo;
                return 1;
            }
        }
    }
    mpfr_calls++;
    *want = want_bits(x, y);
    return *got == *want;
}

static void check_pair(float x, float y, const char *why) {
    uint32_t got, want;
    int ok = right(x, y, &got, &want);
    CHECK(ok, "%s: powf(%a [0x%08x], %a [0x%08x]) = 0x%08x, want 0x%08x", why, (double)x,
          sb_test_bits(x), (double)y, sb_test_bits(y), got, want);
}

/* ---- special cases ------------------------------------------------------- */

#define PINF 0x7f800000u
#define NINF 0xff800000u
#define QNAN 0x7fc00000u
#define PZERO 0x00000000u
#define NZERO 0x80000000u
#define ONE 0x3f800000u
#define MONE 0xbf800000u

static void expect(uint32_t x, uint32_t y, uint32_t want) {
    uint32_t got = sb_test_bits(sb_powf(u2f(x), u2f(y)));
    CHECK(got == want, "powf(0x%08x, 0x%08x) = 0x%08x, want 0x%08x", x, y, got, want);
}

static void test_specials(void) {
    const uint32_t snan = 0x7f800001u, nnan = 0xffc00005u;
    expect(snan, PZERO, ONE);  /* y = +-0: 1 even for NaN */
    expect(nnan, NZERO, ONE);
    expect(ONE, snan, ONE);    /* x = 1: 1 even for NaN */
    expect(ONE, NINF, ONE);
    expect(snan, ONE, 0x7fc00001u);     /* NaN x quieted, payload kept */
    expect(0x40000000u, nnan, nnan);    /* NaN y returned (already quiet) */
    expect(0x40000000u, 0x7f800002u, 0x7fc00002u);
    expect(MONE, PINF, ONE);   /* (-1)^+-inf = 1 */
    expect(MONE, NINF, ONE);
    expect(0x3f000000u, PINF, PZERO);   /* |x| < 1 */
    expect(0xbf000000u, NINF, PINF);
    expect(0x40000000u, PINF, PINF);    /* |x| > 1 */
    expect(0xc0000000u, NINF, PZERO);
    expect(PZERO, 0xbf800000u, PINF);   /* 0^-1 */
    expect(NZERO, 0xbf800000u, NINF);   /* -0^-1: odd */
    expect(NZERO, 0xc0000000u, PINF);   /* -0^-2 */
    expect(NZERO, 0xbf000000u, PINF);   /* -0^-0.5 */
    expect(NZERO, 0x40400000u, NZERO);  /* -0^3 */
    expect(NZERO, 0x40000000u, PZERO);  /* -0^2 */
    expect(PZERO, 0x3f000000u, PZERO);
    expect(NZERO, NINF, PINF);
    expect(NZERO, PINF, PZERO);
    expect(NINF, 0x40400000u, NINF);    /* (-inf)^3 */
    expect(NINF, 0x40000000u, PINF);
    expect(NINF, 0xc0400000u, NZERO);   /* (-inf)^-3 */
    expect(NINF, 0xc0000000u, PZERO);
    expect(NINF, 0x3f000000u, PINF);
    expect(PINF, 0xbf000000u, PZERO);
    expect(PINF, 0x3f000000u, PINF);
    expect(0xc0000000u, 0x3f000000u, QNAN); /* (-2)^0.5 */
    expect(0xc0000000u, 0x40400000u, 0xc1000000u); /* (-2)^3 = -8 */
    expect(0xc0000000u, 0x40000000u, 0x40800000u); /* (-2)^2 = 4 */
    expect(0xc0000000u, 0x4b800000u, PINF);        /* (-2)^(2^24): even */
    expect(MONE, 0x4b7fffffu, MONE);               /* (-1)^(2^24 - 1): odd */
    expect(0x7f7fffffu, 0x40000000u, PINF);        /* overflow */
    expect(0x00000001u, 0x40000000u, PZERO);       /* 2^-298 */
    expect(0x1a000000u, 0x40000000u, PZERO);       /* (2^-75)^2 = 2^-150: tie to even 0 */
    expect(0x65000000u, 0xc0000000u, PZERO);       /* (2^75)^-2 = 2^-150: tie to even 0 */
    expect(0x65000000u, 0xbffffffeu, 0x00000001u); /* just above 2^-150: 2^-149 */
}

/* Pairs whose x^y lies within 2^-46 (down to 2^-62) of a midpoint, relative
 * (found by a search over the families below with MPFR at 200 bits): each
 * takes sb_powf's slow path, whose rounding they test. */
static const uint32_t hard[][2] = {
    {0x3f80005fu, 0xc50c8040u}, /* 1.59e-16 */
    {0x3f7fe1dfu, 0x4707a595u}, /* 8.38e-15 */
    {0x3fe1368bu, 0xbf800000u}, /* 2.02e-15 */
    {0x3eeac8e2u, 0x420392a5u}, /* 2.66e-15 */
    {0x3f800bd6u, 0xc75af4a6u}, /* 1.42e-15 */
    {0x3ceb82a5u, 0xc0a3aa93u}, /* 5.10e-15 */
    {0x3fda002eu, 0xc1e00000u}, /* 4.62e-15 */
    {0x3bc5a688u, 0xc138da2fu}, /* 8.69e-15 */
    {0x43820afau, 0xc0ba2523u}, /* 2.32e-15 */
    {0x3ebaf23bu, 0x421035f2u}, /* 5.34e-15 */
    {0x3d406c9au, 0xc1871766u}, /* 6.79e-15 */
    {0x3fd433deu, 0xc3044768u}, /* 7.46e-15 */
    {0x419c884eu, 0xc0a00000u}, /* 1.18e-14 */
    {0x4267ef38u, 0xc1600000u}, /* 1.38e-14 */
    {0x420025d6u, 0xc1009a46u}, /* 5.59e-15 */
    {0x412fcf4au, 0xc1b2e8f3u}, /* 8.74e-15 */
    {0x3f7fe593u, 0xc545ea1cu}, /* 4.27e-15 */
    {0x3d4100c1u, 0xbf800000u}, /* 2.36e-15 */
    {0x40f3a6b3u, 0xc1be2249u}, /* 2.12e-15 */
    {0x3f297337u, 0xc1c80000u}, /* 4.27e-15 */
    {0x434d1f63u, 0x40e970ceu}, /* 8.19e-15 */
    {0x40b5bebeu, 0xc18468a7u}, /* 5.42e-15 */
    {0x3ee68ae6u, 0x41f66973u}, /* 9.06e-15 */
    {0x3ef271c3u, 0x41d00000u}, /* 6.04e-15 */
    {0x40ffb7e3u, 0xc1d5a66eu}, /* 5.08e-15 */
    {0x40771e60u, 0x41e80000u}, /* 6.58e-15 */
    {0x3f7ff9bau, 0xc63ce107u}, /* 3.64e-15 */
    {0x3cdb7b1bu, 0xc07686b3u}, /* 3.12e-15 */
    {0x3e382fb3u, 0x41200000u}, /* 1.27e-14 */
    {0x3fc85bceu, 0x430a2468u}, /* 1.34e-14 */
    {0x3ba15129u, 0xc15ba654u}, /* 6.93e-15 */
    {0x3e7c396eu, 0xc1d5aed0u}, /* 4.75e-15 */
    {0x3fd44f68u, 0x40400000u}, /* 1.21e-14 */
    {0x3bc6f190u, 0xc175b321u}, /* 1.73e-19 */
    {0x42f974cdu, 0xc0f97417u}, /* 8.24e-15 */
    {0x424e723cu, 0xc1a64285u}, /* 7.56e-15 */
    {0x3f800e8fu, 0x47121070u}, /* 4.07e-16 */
    {0x422f83cbu, 0xc1317397u}, /* 8.73e-15 */
    {0x4306575bu, 0xc095dabfu}, /* 1.39e-14 */
    {0x3f7fe5d9u, 0x452ffdbfu}, /* 6.39e-15 */
};

static void test_hard(void) {
    for (size_t i = 0; i < sizeof hard / sizeof *hard; i++)
        check_pair(u2f(hard[i][0]), u2f(hard[i][1]), "hard");
}

/* ---- families ------------------------------------------------------------ */

static uint64_t rng = 0x853c49e6748fea9bull;
static uint32_t next32(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 32);
}
static double unit(void) { return (double)next32() * 0x1p-32; }

/* Counts the misrounded pairs of a family (the first few are printed). */
typedef struct {
    const char *name;
    long pairs, bad;
} family;

static void judge(family *f, float x, float y) {
    uint32_t got, want;
    f->pairs++;
    if (right(x, y, &got, &want)) return;
    if (f->bad++ < 5)
        fprintf(stderr, "%s: powf(%a [0x%08x], %a [0x%08x]) = 0x%08x, want 0x%08x\n", f->name,
                (double)x, sb_test_bits(x), (double)y, sb_test_bits(y), got, want);
}

static void finish(family *f) {
    CHECK(f->bad == 0, "%s: %ld of %ld pairs misrounded", f->name, f->bad, f->pairs);
    printf("  %-22s %10ld pairs, %ld misrounded\n", f->name, f->pairs, f->bad);
}

/* y with y * log2(x) close to `t`, as a float. */
static float y_for(float x, double t) { return (float)(t / log2((double)x)); }

static void test_families(long n) {
    family random_bits = {"random bit patterns", 0, 0}, near_one = {"x near 1, large y", 0, 0},
           thresholds = {"near overflow/underflow", 0, 0}, integers = {"integer y", 0, 0},
           exact = {"exact and midpoints", 0, 0}, moderate = {"moderate results", 0, 0};
    for (long i = 0; i < n; i++) {
        judge(&random_bits, u2f(next32()), u2f(next32()));
        /* x = 1 +- k ulp, |y| up to 2^30 */
        float x1 = u2f(0x3f800000u + (next32() % 4096) - 2048);
        float y1 = (float)((unit() * 2.0 - 1.0) * ldexp(1.0, (int)(next32() % 31)));
        judge(&near_one, x1, y1);
        /* t = y log2 x within 2 of 128, -126 (the normal/subnormal edge) or -150 */
        float xt = u2f(0x3c000000u + next32() % 0x07000000u); /* 2^-7 .. 2^7 */
        static const double edges[] = {128.0, -126.0, -149.0, -150.0};
        float yt = y_for(xt, edges[i % 4] + (unit() - 0.5) * 4.0);
        if (xt != 1.0f) judge(&thresholds, xt, yt);
        /* y an integer in [-40, 40], x of any magnitude that keeps it finite */
        float xi = u2f((next32() & 0x807fffffu) | ((uint32_t)(120 + next32() % 16) << 23));
        judge(&integers, xi, (float)((int)(next32() % 81) - 40));
        /* x = w^(2^j) * 2^(2^j e) with w odd and small, y = n / 2^j */
        int j = (int)(next32() % 4), pw = 1 << j;
        int max_w = j == 0 ? 1 << 12 : j == 1 ? 1 << 12 : j == 2 ? 64 : 8;
        int w = (int)(next32() % (uint32_t)max_w) | 1;
        double wx = 1.0;
        for (int k = 0; k < pw; k++) wx *= w;
        if (wx < 0x1p24) {
            int e = (int)(next32() % 21) - 10;
            float xe = (float)ldexp(wx, e * pw);
            float ye = (float)(((int)(next32() % 16) + 1) / (double)pw);
            judge(&exact, xe, ye);
        }
        /* moderate: x in [2^-8, 2^8], |t| < 100 */
        float xm = (float)ldexp(1.0 + unit(), (int)(next32() % 17) - 8);
        if (xm != 1.0f) judge(&moderate, xm, y_for(xm, (unit() * 2.0 - 1.0) * 100.0));
    }
    /* every power of two x with integer and half-integer y reaching 2^-150
     * and the subnormal midpoints 9 * 2^-150 = (3 * 2^-75)^2 and friends */
    for (int a = -149; a <= 127; a++)
        for (int k = -300; k <= 300; k++)
            if (a != 0) judge(&exact, (float)ldexp(1.0, a), (float)(k / 2.0));
    for (int m = 1; m < 64; m += 2)
        for (int e = -90; e <= -60; e++) judge(&exact, (float)ldexp(m, e), 2.0f);
    family *all[] = {&random_bits, &near_one, &thresholds, &integers, &exact, &moderate};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++) finish(all[k]);
}

int main(int argc, char **argv) {
    SB_TEST_MAIN_NAME(argv[0]);
    long n = sb_test_quick() ? 4000 : 40000;
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--pairs") == 0) n = atol(argv[i + 1]);
    mpfr_set_emin(-148);
    mpfr_set_emax(128);
    mpfr_init2(mx, 24);
    mpfr_init2(my, 24);
    mpfr_init2(mz, 24);
    test_specials();
    check_pair(103041.0f, 1.5f, "midpoint"); /* 103041^1.5 = 321^3 = 33076161, between two floats */
    test_hard();
    test_families(n);
    printf("  MPFR consultations: %ld\n", mpfr_calls);
    mpfr_clear(mx);
    mpfr_clear(my);
    mpfr_clear(mz);
    mpfr_free_cache();
    return sb_test_finish();
}
