/* Math: sb_expf, sb_expm1f, sb_logf, sb_log1pf, sb_tanhf, sb_erff, sb_exp2f,
 * sb_log2f, sb_sinf, sb_cosf must be the correctly rounded (RN-even) binary32 result for every
 * input.  The full proof is tools/verify_math.c (all 2^32 inputs); this test
 * samples quickly:
 *  - special values with the exact bits the contract fixes (signed zeros,
 *    infinities, the NaN conventions, exact points);
 *  - every exponent of both signs, with edge and pseudo-random mantissas,
 *    and windows around each overflow/underflow/saturation threshold, all
 *    compared directly with MPFR;
 *  - the inputs closest to a rounding boundary found by the exhaustive run
 *    (they exercise the double-double slow paths), compared with MPFR;
 *  - millions of LCG-sampled bit patterns, decided by a sound filter (a
 *    binary64 glibc value whose +-2^-40 enclosure rounds to one float)
 *    and MPFR for everything the filter cannot decide;
 *  - sinf/cosf's Cody-Waite reduction (|x| < 2^28) against the exact one:
 *    the error bound its fast path relies on, on random inputs and on the
 *    floats nearest to k pi/2 (the smallest reduced arguments), where the
 *    functions are compared with MPFR too.
 */
#include <math.h>
#include <mpfr.h>
#include "harness.h"
#include "math/math_internal.h"

typedef struct {
    const char *name;
    float (*sb)(float);
    double (*ref)(double);
    int (*mp)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t);
} fn_info;

static const fn_info fns[] = {
    {"expf", sb_expf, exp, mpfr_exp},     {"expm1f", sb_expm1f, expm1, mpfr_expm1},
    {"logf", sb_logf, log, mpfr_log},     {"log1pf", sb_log1pf, log1p, mpfr_log1p},
    {"tanhf", sb_tanhf, tanh, mpfr_tanh}, {"erff", sb_erff, erf, mpfr_erf},
    {"exp2f", sb_exp2f, exp2, mpfr_exp2}, {"log2f", sb_log2f, log2, mpfr_log2},
    {"sinf", sb_sinf, sin, mpfr_sin},     {"cosf", sb_cosf, cos, mpfr_cos},
};
#define NFNS (int)(sizeof fns / sizeof fns[0])

static mpfr_t mx, my;

static float u2f(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

/* The contract's answer for x, straight from MPFR (NaN conventions apart). */
static uint32_t want_bits(const fn_info *fn, float x) {
    if (isnan(x)) return sb_test_bits(x) | 0x00400000u;
    mpfr_set_flt(mx, x, MPFR_RNDN);
    int t = fn->mp(my, mx, MPFR_RNDN);
    t = mpfr_check_range(my, t, MPFR_RNDN);
    mpfr_subnormalize(my, t, MPFR_RNDN);
    if (mpfr_nan_p(my)) return 0x7fc00000u;
    return sb_test_bits(mpfr_get_flt(my, MPFR_RNDN));
}

/* Compare one input with MPFR. */
static void check_one(int f, float x, const char *why) {
    uint32_t got = sb_test_bits(fns[f].sb(x)), want = want_bits(&fns[f], x);
    CHECK(got == want, "%s %s(%a [0x%08x]) = 0x%08x, want 0x%08x", why, fns[f].name,
          (double)x, sb_test_bits(x), got, want);
}

/* ---- special values: exact bits fixed by the contract ---------------------- */

#define PINF 0x7f800000u
#define NINF 0xff800000u
#define QNAN 0x7fc00000u
#define PZERO 0x00000000u
#define NZERO 0x80000000u
#define ONE 0x3f800000u
#define MONE 0xbf800000u

static void expect(float (*f)(float), const char *name, uint32_t in, uint32_t out) {
    float y = f(u2f(in));
    CHECK(sb_test_bits(y) == out, "%s(0x%08x) = 0x%08x, want 0x%08x", name, in,
          sb_test_bits(y), out);
}

static void test_specials(void) {
    static const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u,
                                    0x7fa00000u, 0x7fffffffu, 0xffffffffu, 0x7fc12345u};
    for (int f = 0; f < NFNS; f++)
        for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++)
            expect(fns[f].sb, fns[f].name, nans[i], nans[i] | 0x00400000u);

    expect(sb_expf, "expf", PZERO, ONE);
    expect(sb_expf, "expf", NZERO, ONE);
    expect(sb_expf, "expf", PINF, PINF);
    expect(sb_expf, "expf", NINF, PZERO);
    expect(sb_expf, "expf", 0x7f7fffffu, PINF);   /* FLT_MAX */
    expect(sb_expf, "expf", 0xff7fffffu, PZERO);  /* -FLT_MAX */
    expect(sb_expf, "expf", 0x42b17218u, PINF);   /* first overflowing input */
    expect(sb_expf, "expf", 0x42b17217u, 0x7f7fff84u);
    expect(sb_expf, "expf", 0x00000001u, ONE);    /* e^(2^-149) */
    expect(sb_expf, "expf", 0x80000001u, ONE);

    expect(sb_expm1f, "expm1f", PZERO, PZERO);
    expect(sb_expm1f, "expm1f", NZERO, NZERO);
    expect(sb_expm1f, "expm1f", PINF, PINF);
    expect(sb_expm1f, "expm1f", NINF, MONE);
    expect(sb_expm1f, "expm1f", 0xff7fffffu, MONE);
    expect(sb_expm1f, "expm1f", 0x00000001u, 0x00000001u); /* expm1(x) ~ x */
    expect(sb_expm1f, "expm1f", 0x80000001u, 0x80000001u);

    expect(sb_logf, "logf", ONE, PZERO); /* log(1) = +0 */
    expect(sb_logf, "logf", PZERO, NINF);
    expect(sb_logf, "logf", NZERO, NINF);
    expect(sb_logf, "logf", PINF, PINF);
    expect(sb_logf, "logf", NINF, QNAN);
    expect(sb_logf, "logf", MONE, QNAN);
    expect(sb_logf, "logf", 0x80000001u, QNAN);
    expect(sb_logf, "logf", 0x00000001u, 0xc2ce8ed0u); /* log(2^-149) */
    expect(sb_logf, "logf", 0x7f7fffffu, 0x42b17218u); /* log(FLT_MAX) */

    expect(sb_log1pf, "log1pf", PZERO, PZERO);
    expect(sb_log1pf, "log1pf", NZERO, NZERO);
    expect(sb_log1pf, "log1pf", PINF, PINF);
    expect(sb_log1pf, "log1pf", MONE, NINF);
    expect(sb_log1pf, "log1pf", 0xbf800001u, QNAN); /* just below -1 */
    expect(sb_log1pf, "log1pf", NINF, QNAN);
    expect(sb_log1pf, "log1pf", 0x00000001u, 0x00000001u);
    expect(sb_log1pf, "log1pf", 0x80000001u, 0x80000001u);

    expect(sb_tanhf, "tanhf", PZERO, PZERO);
    expect(sb_tanhf, "tanhf", NZERO, NZERO);
    expect(sb_tanhf, "tanhf", PINF, ONE);
    expect(sb_tanhf, "tanhf", NINF, MONE);
    expect(sb_tanhf, "tanhf", 0x00000001u, 0x00000001u);
    expect(sb_tanhf, "tanhf", 0x80000001u, 0x80000001u);

    expect(sb_erff, "erff", PZERO, PZERO);
    expect(sb_erff, "erff", NZERO, NZERO);
    expect(sb_erff, "erff", PINF, ONE);
    expect(sb_erff, "erff", NINF, MONE);
    expect(sb_erff, "erff", 0x00000001u, 0x00000001u); /* 1.128 * 2^-149 */
    expect(sb_erff, "erff", 0x00000002u, 0x00000002u); /* 2.257 * 2^-149 */
    expect(sb_erff, "erff", 0x00000004u, 0x00000005u); /* 4.514 * 2^-149 */
    expect(sb_erff, "erff", 0x80000004u, 0x80000005u);

    expect(sb_exp2f, "exp2f", PZERO, ONE);
    expect(sb_exp2f, "exp2f", NZERO, ONE);
    expect(sb_exp2f, "exp2f", PINF, PINF);
    expect(sb_exp2f, "exp2f", NINF, PZERO);
    expect(sb_exp2f, "exp2f", 0x43000000u, PINF);       /* 2^128 overflows */
    expect(sb_exp2f, "exp2f", 0x7f7fffffu, PINF);
    expect(sb_exp2f, "exp2f", 0xc3160000u, PZERO);      /* 2^-150: a tie, to even 0 */
    expect(sb_exp2f, "exp2f", 0xc315ffffu, 0x00000001u); /* just above the tie */
    expect(sb_exp2f, "exp2f", 0xc3160001u, PZERO);
    expect(sb_exp2f, "exp2f", 0xff7fffffu, PZERO);
    expect(sb_exp2f, "exp2f", 0x00000001u, ONE);
    expect(sb_exp2f, "exp2f", 0x80000001u, ONE);

    expect(sb_log2f, "log2f", ONE, PZERO); /* log2(1) = +0 */
    expect(sb_log2f, "log2f", PZERO, NINF);
    expect(sb_log2f, "log2f", NZERO, NINF);
    expect(sb_log2f, "log2f", PINF, PINF);
    expect(sb_log2f, "log2f", NINF, QNAN);
    expect(sb_log2f, "log2f", MONE, QNAN);
    expect(sb_log2f, "log2f", 0x80000001u, QNAN);
    expect(sb_log2f, "log2f", 0x7f7fffffu, 0x43000000u); /* log2(FLT_MAX) rounds to 128 */

    /* Exact cases: 2^n for every integer n >= -149 that does not overflow,
     * and log2 of every power of two (normal and subnormal). */
    for (int n = -149; n <= 127; n++) {
        uint32_t p2 = n >= -126 ? (uint32_t)(n + 127) << 23 : 1u << (n + 149);
        float nf = (float)n;
        expect(sb_exp2f, "exp2f", sb_test_bits(nf), p2);
        expect(sb_log2f, "log2f", p2, sb_test_bits(nf));
    }

    expect(sb_sinf, "sinf", PZERO, PZERO);
    expect(sb_sinf, "sinf", NZERO, NZERO);
    expect(sb_sinf, "sinf", PINF, QNAN);
    expect(sb_sinf, "sinf", NINF, QNAN);
    expect(sb_sinf, "sinf", 0x00000001u, 0x00000001u); /* sin x ~ x */
    expect(sb_sinf, "sinf", 0x80000001u, 0x80000001u);
    expect(sb_cosf, "cosf", PZERO, ONE);
    expect(sb_cosf, "cosf", NZERO, ONE);
    expect(sb_cosf, "cosf", PINF, QNAN);
    expect(sb_cosf, "cosf", NINF, QNAN);
    expect(sb_cosf, "cosf", 0x00000001u, ONE);
    expect(sb_cosf, "cosf", 0x80000001u, ONE);

    /* The same specials against MPFR, as a cross-check of the table above. */
    static const uint32_t pts[] = {PZERO, NZERO, PINF, NINF, ONE, MONE, 0x00000001u,
                                   0x80000001u, 0x007fffffu, 0x807fffffu, 0x00800000u,
                                   0x80800000u, 0x7f7fffffu, 0xff7fffffu, 0x40000000u,
                                   0xc0000000u, 0x3f000000u, 0xbf000000u};
    for (int f = 0; f < NFNS; f++)
        for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++)
            check_one(f, u2f(pts[i]), "special");
}

/* ---- thresholds: windows of 200 ulps around each, both sides -------------- */

static void window(int f, float centre) {
    uint32_t c = sb_test_bits(centre);
    for (uint32_t d = 0; d < 200; d++) {
        check_one(f, u2f(c + d - 100), "threshold");
    }
}

static void test_thresholds(void) {
    window(0, 88.7228391f);   /* exp overflow */
    window(0, -103.972077f);  /* exp underflow to 0 */
    window(0, -87.3365448f);  /* exp enters the subnormal range */
    window(1, 88.7228391f);
    window(1, -17.3286795f);  /* expm1 saturates at -1 */
    window(3, -0.99999994f);  /* log1p near -1 */
    window(4, 9.01091334f);   /* tanh saturates */
    window(4, -9.01091334f);
    window(4, 10.0f);         /* tanh: start of the +-1 shortcut */
    window(5, 3.91920584f);   /* erf saturates */
    window(5, 4.0f);          /* erf: start of the +-1 shortcut */
    window(5, 0.5f);          /* erf: piece boundaries */
    window(5, 0.75f);
    window(5, 3.75f);
    window(6, 128.0f);        /* exp2 overflow */
    window(6, -150.0f);       /* exp2 underflow to 0 (a tie at -150) */
    window(6, -126.0f);       /* exp2 enters the subnormal range */
    window(6, -0x1p-7f);      /* exp2 reduction switches k */
    window(7, 0.5f);          /* log2 result crosses -1 */
    window(7, 2.0f);
    window(7, 0x1p-126f);     /* log2 of the smallest normals and largest subnormals */
    for (int f = 8; f <= 9; f++) {
        window(f, 0.785398185f);  /* sin/cos: first reduced input (pi/4) */
        window(f, 1.57079637f);   /* near pi/2, pi, 3pi/2: q changes */
        window(f, 3.14159274f);
        window(f, 4.71238899f);
        window(f, 0x1p57f);       /* the first 2/pi word drops out of the reduction */
        window(f, 0x1p89f);
        window(f, 0x1p121f);
        window(f, -0x1.fffffep127f);
        window(f, 0x1p-12f);      /* cos leaves 1 */
        window(f, 0x1p28f);       /* end of the Cody-Waite reduction */
        window(f, 0x1p24f);       /* floats become even integers */
    }
    for (int f = 0; f < NFNS; f++) {
        window(f, 1.0f);
        window(f, -1.0f + 0x1p-20f);
        window(f, 0x1p-7f); /* table / polynomial switches in exp, log1p */
        window(f, -0x1p-8f);
        window(f, 0.00541521f); /* ln2/128: exp reduction switches k */
    }
}

/* ---- every exponent, both signs -------------------------------------------- */

static uint32_t lcg = 0x2545f491u;
static uint32_t next_rand(void) {
    lcg = lcg * 1664525u + 1013904223u;
    return lcg ^ (lcg >> 16);
}

static void test_exponents(int quick) {
    int per = quick ? 8 : 48;
    for (int f = 0; f < NFNS; f++)
        for (uint32_t s = 0; s < 2; s++)
            for (uint32_t e = 0; e < 255; e++) {
                uint32_t base = (s << 31) | (e << 23);
                check_one(f, u2f(base), "exponent");
                check_one(f, u2f(base | 1u), "exponent");
                check_one(f, u2f(base | 0x7fffffu), "exponent");
                check_one(f, u2f(base | 0x400000u), "exponent");
                for (int k = 0; k < per; k++)
                    check_one(f, u2f(base | (next_rand() & 0x7fffffu)), "exponent");
            }
}

/* ---- hard cases: closest to a rounding boundary in the exhaustive run ------ */

static const uint32_t hard[NFNS][12] = {
    /* expf */ {0xc16912cdu, 0xbbf0edf1u, 0xb3000000u, 0xbae0e25cu, 0x377eff81u, 0x40315b33u,
                0x4001b249u, 0x39c6be5bu, 0x38e69cc1u, 0x3d1a274eu, 0x383a3ef1u, 0xbc2a461au},
    /* expm1f */ {0x3dc252ddu, 0x34ca62c1u, 0x3a254e7au, 0xb675cbfcu, 0x33b504f3u, 0xbb7b3b6cu,
                  0x36322b1bu, 0xb3800000u, 0x40315b33u, 0x4001b249u, 0x3b643f1bu, 0xc169ee19u},
    /* logf */ {0x1f116ab8u, 0x3c413d3au, 0x4c5d65a5u, 0x41178febu, 0x4d604ebeu, 0x65d890d3u,
                0x66a8c860u, 0x6f31a8ecu, 0x2c4c24b7u, 0x5ee8984eu, 0x79e7ec37u, 0x3bf86ef0u},
    /* log1pf */ {0x3710001bu, 0x3efd81adu, 0x55185f82u, 0x66a8c860u, 0x6f31a8ecu, 0xb70fffe5u,
                  0x35400003u, 0x41078febu, 0x65d890d3u, 0xb53ffffdu, 0xbb0ec8c4u, 0xb76fffb5u},
    /* tanhf */ {0x3ac37de2u, 0xbac37de2u, 0x3eee0566u, 0xbeee0566u, 0xc0acb4d0u, 0x40acb4d0u,
                 0x3cd41b91u, 0xbcd41b91u, 0xc0c5e8cau, 0x40c5e8cau, 0x3d7c3055u, 0xbd7c3055u},
    /* erff */ {0x3940ead6u, 0xb940ead6u, 0x39c0057du, 0xb9c0057du, 0x36aea466u, 0xb6aea466u,
                0x358e9d2du, 0xb58e9d2du, 0x122a320cu, 0x12aa320cu, 0x132a320cu, 0x13aa320cu},
    /* exp2f */ {0x3b429d37u, 0xb52d1f9au, 0xbcf3a937u, 0xc3160000u, 0xb8d3d026u, 0xbaec2b40u,
                 0x3a07857cu, 0xbe1f29deu, 0x3c02a9adu, 0x36879cf7u, 0xb466d4cbu, 0x33b8aa3bu},
    /* log2f */ {0x3ea07ab9u, 0x002452a4u, 0x7f114a90u, 0x0048a548u, 0x7e914a90u, 0x00914a90u,
                 0x7e114a90u, 0x01114a90u, 0x7d914a90u, 0x01914a90u, 0x7d114a90u, 0x02114a90u},
    /* sinf */ {0x73243f06u, 0xc6199998u, 0xf3243f06u, 0x46199998u, 0x67a9242bu, 0xe7a9242bu,
                0x55cafb2au, 0xd5cafb2au, 0x4371ade3u, 0xc371ade3u, 0x5f208d82u, 0xdf208d82u},
    /* cosf */ {0x7a4b1a27u, 0xd9443c0au, 0xe115cb11u, 0xfa4b1a27u, 0x59443c0au, 0x5f18b878u,
                0x6115cb11u, 0xdf18b878u, 0xb9800000u, 0x39800000u, 0xbc107fe6u, 0x3c107fe6u},
};

/* The hard cases of the Cody-Waite range (pi/4 < |x| < 2^28) in the run of
 * verify_math --magnitudes 3f490fdb:4d800000 that proved it, besides those
 * listed above (each with its negation). */
static const uint32_t hard_cw[2][8] = {
    /* sinf */ {0x45a8abb3u, 0xc5a8abb3u, 0x4967cb9bu, 0xc967cb9bu, 0x4aa5a796u, 0xcaa5a796u,
                0x42d44528u, 0xc2d44528u},
    /* cosf */ {0x424790ceu, 0xc24790ceu, 0x47a0e238u, 0xc7a0e238u, 0x4a01dca4u, 0xca01dca4u,
                0x42378db8u, 0xc2378db8u},
};

static void test_hard(void) {
    for (int f = 0; f < NFNS; f++)
        for (int i = 0; i < 12; i++)
            check_one(f, u2f(hard[f][i]), "hard");
    for (int f = 0; f < 2; f++)
        for (int i = 0; i < 8; i++)
            check_one(8 + f, u2f(hard_cw[f][i]), "hard (Cody-Waite range)");
}

/* ---- sinf/cosf: the Cody-Waite reduction's error bound -------------------- */

/* The Cody-Waite r of a (pi/4 < a < 2^28) against the exact reduction's
 * double-double: same quadrant, and |r - r_exact| <= 2^-53|r| + 2^-78 (the
 * bound proven in math_internal.h; the exact r is within 2^-103 relative).
 * k may differ by one where a*2/pi is within rounding of a half-integer;
 * there the two r lie near -+pi/4 and describe the same angle. */
static void check_cw(float a, double *min_r) {
    uint32_t ix = sb_test_bits(a);
    int q;
    double r = sb_trig_reduce_cw((double)a, &q);
    sb_trig_parts t = sb_trig_reduce(ix);
    if (q != t.q) {
        CHECK(fabs(t.r.hi) > 0.785398, "cw reduction of %a: quadrant %d, exact %d (r %a)",
              (double)a, q, t.q, t.r.hi);
        return;
    }
    double err = fabs((r - t.r.hi) - t.r.lo);
    double bound = 0x1.02p-53 * fabs(r) + 0x1p-78;
    CHECK(err <= bound, "cw reduction of %a [0x%08x]: r %a, exact %a + %a, error %a > %a",
          (double)a, ix, r, t.r.hi, t.r.lo, err, bound);
    if (fabs(t.r.hi) < *min_r) *min_r = fabs(t.r.hi);
}

static void test_trig_reduction(int quick) {
    double min_r = 1.0;
    long n = quick ? 100000 : 2000000;
    uint32_t u = 0x6a09e667u;
    for (long i = 0; i < n; i++) { /* random bits in [pi/4, 2^28) */
        u = u * 1664525u + 1013904223u;
        uint32_t ix = SB_TRIG_PIO4_BITS + u % (SB_TRIG_CW_BITS - SB_TRIG_PIO4_BITS);
        check_cw(u2f(ix), &min_r);
    }
    /* The floats around k pi/2 for k = 1..64 and for random k up to 2^27.4:
     * their tiny reduced arguments stress the absolute part of the bound and
     * the fall back to the exact reduction below |r| = 2^-22. */
    long nk = quick ? 2000 : 40000;
    for (long i = 0; i < nk; i++) {
        u = u * 1664525u + 1013904223u;
        double k = i < 64 ? (double)(i + 1) : (double)(1 + (u >> 5) % 170891318u);
        float c = (float)(k * 0x1.921fb54442d18p0);
        uint32_t cb = sb_test_bits(c);
        for (uint32_t d = 0; d < 5; d++) {
            float x = u2f(cb + d - 2);
            if (sb_test_bits(x) >= SB_TRIG_CW_BITS) continue;
            check_cw(x, &min_r);
            check_one(8, x, "near k pi/2");
            check_one(9, x, "near k pi/2");
        }
    }
    CHECK(min_r < 0x1p-22, "no sampled input below 2^28 reached |r| < 2^-22 (min %a)", min_r);
}

/* ---- bulk: LCG bit patterns through the sound filter ------------------------ */

static void test_bulk(int quick) {
    long n = quick ? 300000 : 4000000;
    for (int f = 0; f < NFNS; f++) {
        long mpfr_calls = 0, bad = 0;
        uint32_t u = 0x9e3779b9u * (uint32_t)(f + 1);
        for (long i = 0; i < n; i++) {
            u = u * 1664525u + 1013904223u;
            float x = u2f(u);
            uint32_t got = sb_test_bits(fns[f].sb(x));
            if (isnan(x)) {
                bad += got != (u | 0x00400000u);
                continue;
            }
            double y = fns[f].ref((double)x);
            if (isnan(y)) {
                bad += got != 0x7fc00000u;
                continue;
            }
            if (!isinf(y) && y != 0) {
                double d = y * 0x1p-40;
                uint32_t lo = sb_test_bits((float)(y - d)), hi = sb_test_bits((float)(y + d));
                if (lo == hi && lo == got) continue;
            } else if (got == sb_test_bits((float)y)) {
                continue;
            }
            mpfr_calls++;
            if (got != want_bits(&fns[f], x)) {
                if (bad < 5)
                    fprintf(stderr, "bulk %s(%a [0x%08x]) misrounded: 0x%08x\n", fns[f].name,
                            (double)x, u, got);
                bad++;
            }
        }
        CHECK(bad == 0, "%s: %ld of %ld sampled inputs misrounded (%ld MPFR calls)",
              fns[f].name, bad, n, mpfr_calls);
    }
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    int quick = sb_test_quick();
    mpfr_set_emin(-148);
    mpfr_set_emax(128);
    mpfr_init2(mx, 24);
    mpfr_init2(my, 24);
    test_specials();
    test_thresholds();
    test_exponents(quick);
    test_hard();
    test_trig_reduction(quick);
    test_bulk(quick);
    mpfr_clear(mx);
    mpfr_clear(my);
    mpfr_free_cache();
    return sb_test_finish();
}
