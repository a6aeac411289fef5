/* src/math/math_internal.h - the shared kernel of samebits' correctly rounded
 * binary32 functions (sb_expf ... sb_erff, include/samebits/math.h).
 *
 * Every function follows the same two-step plan:
 *
 *  1. Fast path: evaluate f(x) in binary64 with a relative error below a
 *     proven bound (about 2^-50 for every function here).  Call the computed
 *     value y.  The true f(x) lies in [y - |y|eps, y + |y|eps] with
 *     eps = SB_FAST_EPS = 2^-44.  Rounding to binary32 is monotone, so if both
 *     ends of that interval round to the same float, f(x) rounds to it too and
 *     that float is the correctly rounded result.  sb_round_check() performs
 *     exactly that test with the IEEE double->float conversion, so the
 *     subnormal grid, the overflow threshold and ties-to-even are the real
 *     ones; no separate boundary formula can disagree with it.
 *  2. Slow path (about 1 input in 2^19 reaches it): evaluate f(x) in
 *     double-double (~2^-95 relative or better) and round the double-double
 *     to binary32 exactly (sb_dd_to_float: round-to-odd to 53 bits, then RN to
 *     24 bits, which is exact because 53 >= 2*24 + 2).
 *
 * Whether the slow path is accurate enough for every input is not argued
 * here: it is checked on all 2^32 inputs against MPFR by tools/verify_math.c
 * (docs/MATH-VERIFICATION.md).
 *
 * Portability rules (the same source must compile as CUDA device code and
 * give the same bits everywhere): binary64 arithmetic only, no FMA (the build
 * uses -ffp-contract=off; Dekker's product replaces fma), no long double,
 * no libm, no global mutable state, bit casts through memcpy.
 * NaN results are built from bits (hardware default NaNs differ: x86 makes
 * 0xffc00000, CUDA 0x7fffffff): a NaN input comes back with its quiet bit
 * set and everything else kept; an invalid operation returns 0x7fc00000.
 */
#ifndef SB_MATH_INTERNAL_H
#define SB_MATH_INTERNAL_H

#include <stdint.h>
#include <string.h>
#include "samebits/math.h"

/* SB_MATH_TABLE places the tables; SB_MATH_TABLE_PTR qualifies a pointer
 * into them (OpenCL C keeps them in its constant address space; the OpenCL
 * program text is described in src/gpu/kernels/math_prelude.cl). */
#ifdef __CUDACC__
#define SB_MATH_FN __host__ __device__ static inline
#define SB_MATH_TABLE __device__
#define SB_MATH_TABLE_PTR
#elif defined(__OPENCL_VERSION__)
#define SB_MATH_FN static inline
#define SB_MATH_TABLE __constant
#define SB_MATH_TABLE_PTR __constant
#else
#define SB_MATH_FN static inline
#define SB_MATH_TABLE
#define SB_MATH_TABLE_PTR
#endif

#include "math/math_tables.h"

/* Relative enclosure radius used by every fast path (see above). */
#define SB_FAST_EPS 0x1p-44
/* The NaN produced by invalid operations (log of a negative number). */
#define SB_NAN_BITS 0x7fc00000u
#define SB_INF_BITS 0x7f800000u

/* ---- thresholds and branch points ---------------------------------------
 * Where the functions leave their fast path for a constant result, and
 * where they switch approximations. The batch kernels (src/cpu/vmath_simd.h)
 * branch at exactly the same places: a lane on the wrong side would take
 * another formula or constant than the scalar function. */
#define SB_EXPF_OVERFLOW 89.0f     /* x > this: expf, expm1f = +inf */
#define SB_EXPF_UNDERFLOW (-104.0f) /* x < this: expf = +0 (e^x < 2^-150) */
#define SB_EXPM1F_SATURATE (-18.0f) /* x < this: expm1f = -1 (e^x < 2^-25) */
#define SB_EXP2F_OVERFLOW 128.0f    /* x >= this: exp2f = +inf */
#define SB_EXP2F_UNDERFLOW (-150.0f) /* x < this: exp2f = +0 (2^x < 2^-150) */
#define SB_TANHF_SATURATE 10.0f    /* |x| >= this: tanhf = +-1 */
#define SB_ERFF_SATURATE 4.0f      /* |x| >= this: erff = +-1 */
#define SB_TRIG_PIO4_BITS 0x3f490fdbu /* |x| bits >= this: |x| > pi/4, sinf/cosf reduce */
#define SB_TRIG_CW_BITS 0x4d800000u /* |x| bits < this: |x| < 2^28, Cody-Waite fast path */
/* erf's fast path: a < SB_ERF_SMALL, the odd series a*P0(a^2); else piece
 * i = (int)(a * SB_ERF_PIECE_SCALE) of sb_erf_p (SB_ERF_PIECES pieces of
 * width SB_ERF_PIECE_WIDTH over [0, 4); the scalar code's a >= 1/2 use
 * i >= 2), a polynomial in t = a - (SB_ERF_PIECE_WIDTH * i +
 * SB_ERF_PIECE_MID_OFFSET), the piece's midpoint; piece 0 (the batch
 * kernels') is a polynomial in t = a itself. */
#define SB_ERF_SMALL 0.5
#define SB_ERF_PIECE_SCALE 4.0
#define SB_ERF_PIECE_WIDTH 0.25
#define SB_ERF_PIECE_MID_OFFSET 0.125
#define SB_ERF_PIECES 16
/* log1p's fast path: SB_LOG1P_NEAR_LO <= a < SB_LOG1P_NEAR_HI, the log1p
 * series of a; elsewhere the log kernel of 1 + a. */
#define SB_LOG1P_NEAR_LO (-0x1p-8)
#define SB_LOG1P_NEAR_HI 0x1p-7
/* exp's reduction: k = RN(a * 64/ln2) as (a * SB_EXP_INVL + SHIFTER) -
 * SHIFTER, whose low bits are k; and the leading coefficient of its
 * polynomial, RN(1/720) (sb_exp_fast writes 1.0 / 720, evaluated at run
 * time under -frounding-math; tests/test_fast_vmath.c checks they agree). */
#define SB_EXP_SHIFTER 0x1.8p52
#define SB_EXP_C6 0x1.6c16c16c16c17p-10

/* ---- bit casts ---------------------------------------------------------- */

SB_MATH_FN uint32_t sb_m_f2u(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
SB_MATH_FN float sb_m_u2f(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
SB_MATH_FN uint64_t sb_m_d2u(double x) { uint64_t u; memcpy(&u, &x, 8); return u; }
SB_MATH_FN double sb_m_u2d(uint64_t u) { double x; memcpy(&x, &u, 8); return x; }

/* NaN in, NaN out: the same NaN, made quiet, on every platform. */
SB_MATH_FN float sb_m_quiet(float x) { return sb_m_u2f(sb_m_f2u(x) | 0x00400000u); }

/* 2^e for -1022 <= e <= 1023, exactly. */
SB_MATH_FN double sb_m_pow2(int e) { return sb_m_u2d((uint64_t)(e + 1023) << 52); }

/* ---- rounding to binary32 ---------------------------------------------- */

/* Fast-path test: y approximates f(x) with relative error < eps - 2^-53 (the
 * 2^-53 pays for rounding y +- y*eps).  Returns 1 and the correctly rounded
 * float when the whole enclosure rounds to one float, 0 otherwise. */
SB_MATH_FN int sb_round_check(double y, double eps, float *out) {
    double d = y * eps;
    float a = (float)(y - d), b = (float)(y + d);
    if (sb_m_f2u(a) != sb_m_f2u(b)) return 0;
    *out = a;
    return 1;
}

typedef struct { double hi, lo; } sb_dd; /* value hi + lo, |lo| <= ulp(hi)/2 */

/* RN_binary32(hi + lo) exactly: make hi the round-to-odd value of hi + lo
 * (lo only matters for its sign when hi's last bit is even), then convert. */
SB_MATH_FN float sb_dd_to_float(sb_dd v) {
    uint64_t u = sb_m_d2u(v.hi);
    if (v.lo != 0.0 && v.hi != 0.0 && (u & 1) == 0) {
        if ((v.lo > 0) == (v.hi > 0)) u++; /* away from zero */
        else u--;                          /* toward zero */
    }
    return (float)sb_m_u2d(u);
}

/* ---- double-double arithmetic (error-free transforms, no FMA) ------------ */

SB_MATH_FN sb_dd sb_two_sum(double a, double b) {
    sb_dd r;
    r.hi = a + b;
    double bb = r.hi - a;
    r.lo = (a - (r.hi - bb)) + (b - bb);
    return r;
}

/* Requires |a| >= |b| or a == 0. */
SB_MATH_FN sb_dd sb_fast_two_sum(double a, double b) {
    sb_dd r;
    r.hi = a + b;
    r.lo = b - (r.hi - a);
    return r;
}

/* Veltkamp split into two 26-bit halves (|a| < 2^995). */
SB_MATH_FN void sb_split(double a, double *hi, double *lo) {
    double t = 134217729.0 * a; /* 2^27 + 1 */
    *hi = t - (t - a);
    *lo = a - *hi;
}

/* Dekker: a*b = hi + lo exactly (barring underflow). */
SB_MATH_FN sb_dd sb_two_prod(double a, double b) {
    double ah, al, bh, bl;
    sb_dd r;
    r.hi = a * b;
    sb_split(a, &ah, &al);
    sb_split(b, &bh, &bl);
    r.lo = ((ah * bh - r.hi) + ah * bl + al * bh) + al * bl;
    return r;
}

SB_MATH_FN sb_dd sb_dd_make(double hi, double lo) {
    sb_dd r;
    r.hi = hi;
    r.lo = lo;
    return r;
}

/* Accurate sum (handles cancellation): relative error ~2^-104. */
SB_MATH_FN sb_dd sb_dd_add(sb_dd a, sb_dd b) {
    sb_dd s = sb_two_sum(a.hi, b.hi);
    sb_dd t = sb_two_sum(a.lo, b.lo);
    s.lo += t.hi;
    s = sb_fast_two_sum(s.hi, s.lo);
    s.lo += t.lo;
    return sb_fast_two_sum(s.hi, s.lo);
}

SB_MATH_FN sb_dd sb_dd_add_d(sb_dd a, double b) {
    sb_dd s = sb_two_sum(a.hi, b);
    s.lo += a.lo;
    return sb_fast_two_sum(s.hi, s.lo);
}

SB_MATH_FN sb_dd sb_dd_mul(sb_dd a, sb_dd b) {
    sb_dd p = sb_two_prod(a.hi, b.hi);
    p.lo += a.hi * b.lo + a.lo * b.hi;
    return sb_fast_two_sum(p.hi, p.lo);
}

SB_MATH_FN sb_dd sb_dd_mul_d(sb_dd a, double b) {
    sb_dd p = sb_two_prod(a.hi, b);
    p.lo += a.lo * b;
    return sb_fast_two_sum(p.hi, p.lo);
}

/* a / b by three correction steps: relative error ~2^-104. */
SB_MATH_FN sb_dd sb_dd_div(sb_dd a, sb_dd b) {
    double q1 = a.hi / b.hi;
    sb_dd r = sb_dd_add(a, sb_dd_mul_d(b, -q1));
    double q2 = r.hi / b.hi;
    r = sb_dd_add(r, sb_dd_mul_d(b, -q2));
    double q3 = r.hi / b.hi;
    sb_dd q = sb_fast_two_sum(q1, q2);
    return sb_dd_add_d(q, q3);
}

/* r * (c[1] + r*(c[2] + ... + r*c[n])) in double-double (Horner). */
SB_MATH_FN sb_dd sb_dd_poly(SB_MATH_TABLE_PTR const double (*c)[2], int n, sb_dd r) {
    sb_dd p = sb_dd_make(c[n][0], c[n][1]);
    for (int i = n - 1; i >= 1; i--)
        p = sb_dd_add(sb_dd_mul(p, r), sb_dd_make(c[i][0], c[i][1]));
    return sb_dd_mul(p, r);
}

/* ---- exp kernel ---------------------------------------------------------
 * a = k*ln2/64 + r, |r| <= ln2/128 (+ tiny), k = 64*e + j, 0 <= j < 64, so
 * e^a = 2^e * 2^(j/64) * e^r.  Requires |a| < 2^14 * ln2/64 (about 177). */

/* k = nearest integer to a*64/ln2 (ties by the current rounding mode,
 * which only moves r by one step; both choices are valid reductions). */
SB_MATH_FN double sb_exp_k(double a) {
    const double shifter = SB_EXP_SHIFTER;
    return (a * SB_EXP_INVL + shifter) - shifter;
}

typedef struct {
    double s;    /* 2^e */
    double t;    /* 2^(j/64) rounded to double */
    double tail; /* so that e^a = s * (t + tail) * (1 + err) */
} sb_exp_fast_parts;

/* The second half of the fast kernel, shared with 2^a (src/math/exp2f.c):
 * the parts of 2^(kd/64) * e^r for an integer kd and |r| <= ln2/128 (+ tiny).
 * The degree-6 Taylor polynomial of e^r - 1 errs by < |r|^7/5040 < 2^-64
 * relatively; its evaluation and t*p + tlo add < 2^-52 relative to e^r - 1
 * and to the result. */
SB_MATH_FN sb_exp_fast_parts sb_exp_fast_kr(double kd, double r) {
    int k = (int)kd;
    int j = k & 63;
    int e = (k - j) / 64;
    double p = 1.0 / 720;
    p = p * r + sb_exp_coef[5][0];
    p = p * r + sb_exp_coef[4][0];
    p = p * r + sb_exp_coef[3][0];
    p = p * r + 0.5;
    p = r + (r * r) * p; /* e^r - 1 */
    sb_exp_fast_parts f;
    f.s = sb_m_pow2(e);
    f.t = sb_exp_tab[j][0];
    f.tail = f.t * p + sb_exp_tab[j][1];
    return f;
}

/* Fast kernel for a with at most 24 significant bits (a float, or 2*float).
 * Then a - k*L1 is exact (Sterbenz for k != 0) and k*L1, k*L2 are exact, so
 * |r - r_true| < 2^-100. */
SB_MATH_FN sb_exp_fast_parts sb_exp_fast(double a) {
    double kd = sb_exp_k(a);
    return sb_exp_fast_kr(kd, (a - kd * SB_EXP_L1) - kd * SB_EXP_L2);
}

typedef struct {
    int e;   /* e^a = 2^e * t * (1 + q) */
    sb_dd t; /* 2^(j/64) */
    sb_dd q; /* e^r - 1 */
} sb_exp_dd_parts;

/* The second half of the accurate kernel, shared with 2^a: the parts of
 * 2^(kd/64) * e^r for an integer kd and a double-double |r| <= ln2/128
 * (+ tiny); e^r - 1 by its degree-13 Taylor polynomial (truncation
 * < |r|^14/14! < 2^-140) in double-double. */
SB_MATH_FN sb_exp_dd_parts sb_exp_dd_kr(double kd, sb_dd r) {
    int k = (int)kd;
    int j = k & 63;
    sb_exp_dd_parts p;
    p.e = (k - j) / 64;
    p.t = sb_dd_make(sb_exp_tab[j][0], sb_exp_tab[j][1]);
    p.q = sb_dd_poly(sb_exp_coef, 13, r);
    return p;
}

/* Accurate kernel for any double a (|a| < 177): the reduction is done in
 * double-double (|r error| < 2^-120). */
SB_MATH_FN sb_exp_dd_parts sb_exp_dd(double a) {
    double kd = sb_exp_k(a);
    sb_dd r = sb_two_sum(a, -(kd * SB_EXP_L1));
    r = sb_dd_add_d(r, -(kd * SB_EXP_L2));
    r = sb_dd_add_d(r, -(kd * SB_EXP_L3));
    return sb_exp_dd_kr(kd, r);
}

/* e^a - 1 in double-double from the accurate kernel; no cancellation is
 * lost because 2^e*t - 1 is formed exactly. */
SB_MATH_FN sb_dd sb_expm1_dd(double a) {
    sb_exp_dd_parts p = sb_exp_dd(a);
    double s = sb_m_pow2(p.e);
    sb_dd st = sb_dd_make(s * p.t.hi, s * p.t.lo);
    sb_dd v = sb_two_sum(st.hi, -1.0);
    v = sb_dd_add_d(v, st.lo);
    return sb_dd_add(v, sb_dd_mul(st, p.q));
}

/* ---- log kernel ---------------------------------------------------------
 * a = 2^e * m with m in [1, 1.5) or [0.75, 1) (bins >= 64 use m/2, so that
 * inputs just below 1 get e = 0 and no cancellation), c ~ 1/m from the
 * table with 21 significant bits, r = m*c - 1 (|r| < 2^-7), and
 * log(a) = e*ln2 - log(c) + log1p(r). */

typedef struct {
    int e, i;
    double m;
} sb_log_parts;

/* a: a positive, finite, normal double. */
SB_MATH_FN sb_log_parts sb_log_reduce(double a) {
    uint64_t u = sb_m_d2u(a);
    sb_log_parts p;
    p.e = (int)(u >> 52) - 1023;
    p.i = (int)((u >> 45) & 127);
    uint64_t mant = u & 0x000fffffffffffffull;
    if (p.i >= 64) {
        p.e += 1;
        p.m = sb_m_u2d(mant | ((uint64_t)1022 << 52));
    } else {
        p.m = sb_m_u2d(mant | ((uint64_t)1023 << 52));
    }
    return p;
}

/* log1p(r) for |r| < 2^-7 by its degree-8 Taylor polynomial: truncation
 * < |r|^9/9 < 2^-59 |r|; evaluation adds < 2^-52 |r|. */
SB_MATH_FN double sb_log1p_poly(double r) {
    double p = sb_log1p_coef[8][0];
    for (int n = 7; n >= 2; n--) p = p * r + sb_log1p_coef[n][0];
    return r + (r * r) * p;
}

/* Fast log(a_hi + a_lo) with a_lo <= 2^-53 a_hi.  m*c is exact when a_hi has
 * at most 32 significant bits (always, except log1p of x >= 2^29, where the
 * result is > 20 and a rounding of r by 2^-53 is negligible).  The sum
 * (e*ln2_hi + L_hi) + (small terms) loses at most a factor ~2.5 to
 * cancellation (the bins around 1 have L = 0 and e = 0), so the total
 * relative error stays below 2^-50. */
SB_MATH_FN double sb_log_fast(double a_hi, double a_lo) {
    sb_log_parts p = sb_log_reduce(a_hi);
    SB_MATH_TABLE_PTR const double *t = sb_log_tab[p.i];
    double r = p.m * t[0] - 1.0;
    double e = (double)p.e;
    double small = (e * SB_LN2_LO + t[2]) + a_lo / a_hi;
    return (e * SB_LN2_HI + t[1]) + (small + sb_log1p_poly(r));
}

/* Accurate log(a_hi + a_lo): r exact as a double-double (Dekker product),
 * log1p(r) by its degree-18 Taylor polynomial (truncation < 2^-133 |r|),
 * e*ln2 exact to 2^-106, log1p(a_lo/a_hi) ~ a_lo/a_hi (error < 2^-107). */
SB_MATH_FN sb_dd sb_log_dd(double a_hi, double a_lo) {
    sb_log_parts p = sb_log_reduce(a_hi);
    SB_MATH_TABLE_PTR const double *t = sb_log_tab[p.i];
    sb_dd r = sb_two_prod(p.m, t[0]);
    r = sb_two_sum(r.hi - 1.0, r.lo); /* r.hi - 1 is exact (Sterbenz) */
    sb_dd l = sb_dd_poly(sb_log1p_coef, 18, r);
    double e = (double)p.e;
    sb_dd el = sb_two_prod(e, SB_LN2_HI);
    el = sb_dd_add_d(el, e * SB_LN2_LO);
    sb_dd v = sb_dd_add(el, sb_dd_make(t[1], t[2]));
    v = sb_dd_add(v, l);
    return sb_dd_add_d(v, a_lo / a_hi);
}

/* ---- sin/cos kernel -------------------------------------------------------
 * |x| = (q + f) * pi/2 with an integer q and |f| <= 1/2, so sin and cos of
 * x are +-sin or +-cos of r = f*pi/2, |r| <= pi/4, chosen by q mod 4. */

typedef struct {
    int q;    /* quadrant, 0..3 */
    sb_dd r;  /* the reduced argument, |r| <= pi/4 (+ tiny) */
} sb_trig_parts;

/* Exact reduction (Payne-Hanek) of a finite binary32 magnitude ax >= pi/4
 * given by its bits.  ax = M * 2^E with an integer M < 2^24 and
 * E <= 104, and ax * 2/pi = sum_k M w_k 2^(E - 32(k+1)) with the 32-bit
 * words w_k of 2/pi (math_tables.h).  Words with E - 32(k+1) >= 2 add
 * multiples of 4, which do not change the quadrant: they are skipped, and
 * the next six words (k0..k0+5) are multiplied by M exactly in 32-bit limbs
 * (each partial product M w < 2^56 fits a uint64).  The product has at
 * least 159 bits below the binary point; the words left out add less than
 * 2^-167.  Rounding to the nearest integer gives q and a fraction f with
 * |f| <= 1/2, kept to 160 bits and summed into a double-double (relative
 * error < 2^-104 while |f| > 2^-50; the exhaustive run finds every float's
 * |f| far above that), then r = f * pi/2 in double-double. */
SB_MATH_FN sb_trig_parts sb_trig_reduce(uint32_t ix) {
    uint32_t m = (ix & 0x007fffffu) | 0x00800000u;
    int e = (int)(ix >> 23) - 150;                  /* -24 <= e <= 104 */
    int k0 = e >= 34 ? (e - 34) / 32 + 1 : 0;       /* words below add 4Z */
    int sh = e - 32 * k0 - 32;                      /* -56 <= sh <= 1 */
    uint32_t z[8];                                  /* product, 32-bit limbs */
    uint64_t carry = 0;
    for (int i = 5; i >= 0; i--) {
        uint64_t p = (uint64_t)m * sb_two_over_pi[k0 + i] + carry;
        z[5 - i] = (uint32_t)p;
        carry = p >> 32;
    }
    z[6] = (uint32_t)carry;
    z[7] = 0;
    /* value = z * 2^-fb; shift left so the binary point falls on a limb
     * boundary (fb becomes a multiple of 32). */
    int fb = 160 - sh;                              /* 159 .. 216 */
    int sa = (32 - fb % 32) % 32;
    if (sa != 0) {
        for (int i = 7; i > 0; i--) z[i] = (z[i] << sa) | (z[i - 1] >> (32 - sa));
        z[0] <<= sa;
    }
    int u = (fb + sa) / 32;                         /* unit limb, 5..7 */
    sb_trig_parts t;
    t.q = (int)(z[u] & 3u);
    /* the five limbs below the point: f = sum g_i 2^(-32 i), g_1 first */
    uint32_t g[5];
    for (int i = 0; i < 5; i++) g[i] = z[u - 1 - i];
    int neg = (g[0] >> 31) != 0;                    /* f >= 1/2: round q up */
    if (neg) {
        t.q = (t.q + 1) & 3;
        uint64_t b = 1;                             /* g = 2^160 - g */
        for (int i = 4; i >= 0; i--) {
            uint64_t v = (uint64_t)(uint32_t)~g[i] + b;
            g[i] = (uint32_t)v;
            b = v >> 32;
        }
    }
    sb_dd f = sb_two_sum((double)g[3] * 0x1p-128, (double)g[4] * 0x1p-160);
    f = sb_dd_add_d(f, (double)g[2] * 0x1p-96);
    f = sb_dd_add_d(f, (double)g[1] * 0x1p-64);
    f = sb_dd_add_d(f, (double)g[0] * 0x1p-32);
    if (neg) f = sb_dd_make(-f.hi, -f.lo);
    t.r = sb_dd_mul(f, sb_dd_make(SB_PIO2_HI, SB_PIO2_LO));
    return t;
}

/* Fast reduction (Cody-Waite) of pi/4 < a < 2^28, for the fast path only:
 * returns r ~ a - k pi/2 as one double and the quadrant k mod 4 in *q.
 * k = RN(a * RN(2/pi)) by the shifter (the product is below 2^28, so the
 * sum with 1.5*2^52 rounds it to an integer); an error in that product
 * can only move k by one near a half-integer, which makes |r| exceed pi/4
 * by at most 2^-23 and changes nothing else (r and q still describe a).
 * With pi/2 = P1 + P2 + P3 (math_tables.h: 25-bit P1, P2; R2 = pi/2 - P1 -
 * P2 < 2^-53.8; |R2 - P3| < 2^-109) and r* = a - k pi/2 exactly:
 *  - k < 2^27.4, so k*P1 and k*P2 are exact (at most 53-bit products);
 *  - t1 = a - k*P1 is exact (Sterbenz: k >= 1 and k*P1/2 <= a <= 2k*P1);
 *  - (s, e) = two_sum(t1, -k*P2) is exact: s + e = r* + k*R2, |s| < 1,
 *    |e| <= 2^-54;
 *  - c = RN(k*P3): |c - k*R2| <= k(|P3 - R2| + 2^-53 P3) < 2^-79;
 *  - d = RN(e - c): |e - c| < 2^-26.4, rounding error < 2^-79.4;
 *  - r = RN(s + d): s + d = r* + (k*R2 - c) + (d - (e - c)), so
 *      |r - r*| <= 2^-53 |r| + 2^-78.
 * The caller uses r only when |r| > 2^-22, where this is below
 * (2^-53 + 2^-56)|r| < 2^-52.8 |r|: a relative error at most 2^-52.8
 * against the 2^-53 of the exact reduction's dropped r_lo (see
 * sb_sincos_eval for the whole fast-path budget). */
SB_MATH_FN double sb_trig_reduce_cw(double a, int *q) {
    double kd = (a * SB_TRIG_INVPIO2 + SB_EXP_SHIFTER) - SB_EXP_SHIFTER;
    double t1 = a - kd * SB_TRIG_CW_P1;
    sb_dd se = sb_two_sum(t1, -(kd * SB_TRIG_CW_P2));
    double d = se.lo - kd * SB_TRIG_CW_P3;
    *q = (int)kd & 3;
    return se.hi + d;
}

/* The quadrant and reduced argument of a finite binary32 magnitude ax (its
 * bits ix): below pi/4 it is ax itself, exactly. */
SB_MATH_FN sb_trig_parts sb_trig_parts_of(uint32_t ix) {
    if (ix >= SB_TRIG_PIO4_BITS) return sb_trig_reduce(ix);
    sb_trig_parts t;
    t.q = 0;
    t.r = sb_dd_make((double)sb_m_u2f(ix), 0.0);
    return t;
}

/* sin(r) for |r| <= pi/4 + tiny: r + r^3 S(r^2) with the Taylor terms up to
 * r^17 (truncation < r^19/19! < 2^-62.9 sin r); binary64 Horner with
 * |r^3 S| <= |r|/6 stays below 2^-52 relative.  Used, with sb_cos_fast, for
 * |x| < pi/4 and |x| >= 2^28 (the code proven on all inputs before the
 * Cody-Waite reduction; sb_sincos_eval). */
SB_MATH_FN double sb_sin_fast(double r) {
    double z = r * r;
    double p = sb_sin_coef[8][0];
    for (int i = 7; i >= 1; i--) p = p * z + sb_sin_coef[i][0];
    return r + (r * z) * p;
}

/* cos(r) for |r| <= pi/4 + tiny: 1 + z C(z), z = r^2, Taylor terms up to
 * r^18 (truncation < r^20/20! < 2^-67); |z C| <= 0.31 against cos r >=
 * 0.707, so Horner and the last sum stay below 2^-51.5 relative. */
SB_MATH_FN double sb_cos_fast(double r) {
    double z = r * r;
    double p = sb_cos_coef[9][0];
    for (int i = 8; i >= 1; i--) p = p * z + sb_cos_coef[i][0];
    return 1.0 + z * p;
}

/* The fast path's sin r (use_cos = 0) or cos r (use_cos = 1) after the
 * Cody-Waite reduction (pi/4 < |x| < 2^28), |r| <= pi/4 + 2^-23, in one
 * branch-free form (the quadrant is unpredictable, so
 * a branch on it costs more than the shared code): A + (A z) P(z) with
 * z = r^2, A = r for sin and 1 for cos (1 * z = z exactly), and P's
 * coefficients the row use_cos of sb_sincos_fast_coef (sin's zero ninth
 * coefficient adds an exact +0).  P by Estrin's scheme (shorter dependency
 * chains than Horner).  Error: the leading term (r or 1) passes through one
 * rounding (the last sum) and every other term c_i z^i (times r for sin)
 * through at most 22 (z = RN(r r), z^2, z^4, z^8, the pairings, A z, the
 * product with P and the last sum included: at most 18 inside P), so the
 * computed y is within 2^-53 |A| + gamma_22 |A| z sum |c_i| z^(i-1) of the
 * exact polynomial, gamma_22 < 2^-48.5, z <= 0.617.
 *  - sin r = r + r^3 S(r^2), S's Taylor terms to r^17 (truncation <
 *    r^19/19! < 2^-62.9 sin r); sum |c_i| z^(i-1) <= 0.172, so the error
 *    is below |r| (2^-53 + 2^-48.5 * 0.617 * 0.172) <= 2^-51 sin r
 *    (sin r >= 0.9 r).
 *  - cos r = 1 + z C(z), Taylor terms to r^18 (truncation < r^20/20! <
 *    2^-67); sum |c_i| z^(i-1) <= 0.527, so the error is below 2^-53 +
 *    2^-48.5 * 0.617 * 0.527 <= 2^-49.4 cos r (cos r >= 0.707). */
SB_MATH_FN double sb_sincos_poly(double r, int use_cos) {
    SB_MATH_TABLE_PTR const double *c = sb_sincos_fast_coef[use_cos];
    uint64_t pick = (uint64_t)0 - (uint64_t)use_cos; /* all ones for cos */
    double a = sb_m_u2d((sb_m_d2u(r) & ~pick) | (sb_m_d2u(1.0) & pick));
    double z = r * r, z2 = z * z, z4 = z2 * z2, z8 = z4 * z4;
    double p01 = c[0] + c[1] * z, p23 = c[2] + c[3] * z;
    double p45 = c[4] + c[5] * z, p67 = c[6] + c[7] * z;
    double p = ((p01 + p23 * z2) + (p45 + p67 * z2) * z4) + c[8] * z8;
    return a + (a * z) * p;
}

/* sin(r) and cos(r) in double-double: Taylor terms up to r^29 and r^30
 * (truncation < 2^-112 relative), Horner in double-double. */
SB_MATH_FN sb_dd sb_sin_dd(sb_dd r) {
    sb_dd z = sb_dd_mul(r, r);
    return sb_dd_add(r, sb_dd_mul(r, sb_dd_poly(sb_sin_coef, 14, z)));
}

SB_MATH_FN sb_dd sb_cos_dd(sb_dd r) {
    sb_dd z = sb_dd_mul(r, r);
    return sb_dd_add_d(sb_dd_poly(sb_cos_coef, 15, z), 1.0);
}

/* Fast path of sin/cos on a reduced argument r (error analysis below) in
 * quadrant q (cos a = sin(a + pi/2), so q already includes want_cos): 1 and
 * the correctly rounded result in *out, or 0 when the rounding test fails. */
SB_MATH_FN int sb_sincos_fast(double r, int q, float *out) {
    double y = sb_sincos_poly(r, q & 1);
    float res;
    if (!sb_round_check(y, SB_FAST_EPS, &res)) return 0;
    *out = sb_m_u2f(sb_m_f2u(res) ^ ((uint32_t)(q >> 1) << 31)); /* -res for q >= 2 */
    return 1;
}

/* sin(a) (want_cos = 0) or cos(a) (want_cos = 1) of |x| = a, from its
 * reduction: quadrant q turns it into +-sin r or +-cos r.
 *  - pi/4 < a < 2^28 (SB_TRIG_PIO4_BITS <= ix < SB_TRIG_CW_BITS): the fast
 *    path runs sb_sincos_poly on the Cody-Waite r of sb_trig_reduce_cw when
 *    |r| > 2^-22 (relative error < 2^-52.8); otherwise, and when its
 *    rounding test fails, the slow path runs on the exact reduction.
 *  - a < pi/4 (r = a exactly) and a >= 2^28 (the exact reduction): the
 *    Horner polynomials on r (its r_hi: dropping r_lo costs < 2^-53
 *    relative), then the slow path; operation for operation the code that
 *    was proven on all 2^32 inputs before the Cody-Waite reduction, so
 *    that proof still covers these inputs (docs/MATH-VERIFICATION.md).
 * Fast-path budget of the Cody-Waite range (relative, against the exact
 * sin/cos of a): the reduced argument's relative error e_r turns into at
 * most e_r relative in sin r (r cot r <= 1) and 0.79 e_r in cos r (r tan r
 * <= pi/4 for |r| <= pi/4 + 2^-23); with e_r < 2^-52.8 and the
 * polynomials' errors (sin: 2^-51, cos: 2^-49.4, truncation included) y is
 * within 2^-49.3 of the result (sin: 2^-50.7): below 2^-44 - 2^-53, as
 * sb_round_check with SB_FAST_EPS requires. */
SB_MATH_FN float sb_sincos_eval(uint32_t ix, int want_cos) {
    float res;
    int cody_waite = ix >= SB_TRIG_PIO4_BITS && ix < SB_TRIG_CW_BITS;
    if (cody_waite) {
        int q;
        double r = sb_trig_reduce_cw((double)sb_m_u2f(ix), &q);
        if ((r > 0x1p-22 || r < -0x1p-22) && sb_sincos_fast(r, (q + want_cos) & 3, &res))
            return res;
    }
    sb_trig_parts t = sb_trig_parts_of(ix);
    int q = (t.q + want_cos) & 3;                   /* cos a = sin(a + pi/2) */
    int use_cos = q & 1, negate = q >> 1;
    if (cody_waite ||
        !sb_round_check(use_cos ? sb_cos_fast(t.r.hi) : sb_sin_fast(t.r.hi), SB_FAST_EPS, &res)) {
        sb_dd v = use_cos ? sb_cos_dd(t.r) : sb_sin_dd(t.r);
        res = sb_dd_to_float(v);
    }
    return negate ? -res : res;
}

#endif
