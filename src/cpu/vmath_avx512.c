/* Batch correctly rounded math, AVX-512 level (src/cpu/vmath.h): 16 floats
 * per block, evaluated as two vectors of 8 binary64 lanes (AVX-512F/DQ).
 *
 * Same computation as src/cpu/vmath_avx2.c, whose header comment is the
 * argument: the reduction steps are the scalar fast path's IEEE operations
 * (bitwise the same values), the polynomial steps are fused multiply-adds
 * (an instance of the scalar error bound's rounding model with the
 * product's error 0, so the scalar bound holds), the rounding test is the
 * same pair of conversions to float (vcvtpd2ps, by MXCSR), and lanes it does
 * not settle, NaNs and the specials the scalar code treats apart get the
 * scalar code's constant or the scalar function itself. A lane that passes
 * the test returns RN(f(x)), which is what the scalar function returns.
 *
 * Differences from AVX2 are in how tables are read: gathers are slow on
 * some AVX-512 CPUs (on AMD Zen 4 the four gathers of a 16-float exp block
 * cost more than all of its arithmetic), so the 64-entry exp table and the
 * 14 erf pieces' coefficients are looked up inside registers with vpermt2pd,
 * and the 128-entry, 3-column log table (too big for registers) with
 * per-lane loads.
 */
#include "cpu/cpu.h"

typedef int sb_vmath_avx512_unit; /* keeps the unit non-empty elsewhere */

#if SB_HAVE_X86_KERNELS
#include <immintrin.h>
#include "cpu/vmath_internal.h"
#include "math/math_internal.h"

#define W 16

static inline __m512d d8(double v) { return _mm512_set1_pd(v); }
static inline __m512i i8(int64_t v) { return _mm512_set1_epi64(v); }
static inline __m512 f16(float v) { return _mm512_set1_ps(v); }
static inline __m512d add(__m512d a, __m512d b) { return _mm512_add_pd(a, b); }
static inline __m512d sub(__m512d a, __m512d b) { return _mm512_sub_pd(a, b); }
static inline __m512d mul(__m512d a, __m512d b) { return _mm512_mul_pd(a, b); }
/* a*b + c and c - a*b rounded once (see the header: an instance of the
 * scalar error analysis with the product's rounding error set to 0) */
static inline __m512d vfma(__m512d a, __m512d b, __m512d c) { return _mm512_fmadd_pd(a, b, c); }
static inline __m512d vfnma(__m512d a, __m512d b, __m512d c) { return _mm512_fnmadd_pd(a, b, c); }

/* ---- table lookups by permutes ---------------------------------------------
 * Gathers are slow on some AVX-512 CPUs (on AMD Zen 4 the four gathers of
 * a 16-float exp block cost more than all its arithmetic), so the 64-entry
 * exp table is looked up inside registers: eight registers hold one column,
 * vpermt2pd picks within each pair (index bits 0..3), and bits 4 and 5
 * choose between the four pairs. The registers are built from
 * math_tables.h (constant-folded by the compiler), so the entries are the
 * scalar code's. */

#define TAB8(tab, col, b)                                                      \
    _mm512_set_pd(tab[8 * (b) + 7][col], tab[8 * (b) + 6][col], tab[8 * (b) + 5][col], \
                  tab[8 * (b) + 4][col], tab[8 * (b) + 3][col], tab[8 * (b) + 2][col], \
                  tab[8 * (b) + 1][col], tab[8 * (b)][col])

static inline __m512d lookup64(const __m512d q[8], __m512i j, __mmask8 bit4, __mmask8 bit5) {
    __m512d a = _mm512_permutex2var_pd(q[0], j, q[1]);
    __m512d b = _mm512_permutex2var_pd(q[2], j, q[3]);
    __m512d c = _mm512_permutex2var_pd(q[4], j, q[5]);
    __m512d d = _mm512_permutex2var_pd(q[6], j, q[7]);
    return _mm512_mask_blend_pd(bit5, _mm512_mask_blend_pd(bit4, a, b),
                                _mm512_mask_blend_pd(bit4, c, d));
}

/* (2^(j/64) rounded, its low part) for j = 0..63 in each lane */
static inline void exp_table(__m512i j, __m512d *t, __m512d *tlo) {
    const __m512d qt[8] = {TAB8(sb_exp_tab, 0, 0), TAB8(sb_exp_tab, 0, 1), TAB8(sb_exp_tab, 0, 2),
                           TAB8(sb_exp_tab, 0, 3), TAB8(sb_exp_tab, 0, 4), TAB8(sb_exp_tab, 0, 5),
                           TAB8(sb_exp_tab, 0, 6), TAB8(sb_exp_tab, 0, 7)};
    const __m512d ql[8] = {TAB8(sb_exp_tab, 1, 0), TAB8(sb_exp_tab, 1, 1), TAB8(sb_exp_tab, 1, 2),
                           TAB8(sb_exp_tab, 1, 3), TAB8(sb_exp_tab, 1, 4), TAB8(sb_exp_tab, 1, 5),
                           TAB8(sb_exp_tab, 1, 6), TAB8(sb_exp_tab, 1, 7)};
    __mmask8 bit4 = _mm512_test_epi64_mask(j, i8(16)), bit5 = _mm512_test_epi64_mask(j, i8(32));
    *t = lookup64(qt, j, bit4, bit5);
    *tlo = lookup64(ql, j, bit4, bit5);
}

/* ---- the exp kernel: sb_exp_fast, lane by lane (see vmath_avx2.c) -------- */

typedef struct {
    __m512d s, t, tail;
} vexp_parts;

static inline vexp_parts vexp_fast(__m512d a) {
    const __m512d shifter = d8(0x1.8p52);
    __m512d z = add(mul(a, d8(SB_EXP_INVL)), shifter);
    __m512d kd = sub(z, shifter);
    __m512i zi = _mm512_castpd_si512(z);
    __m512i j = _mm512_and_si512(zi, i8(63));
    __m512i sbits = _mm512_add_epi64(_mm512_slli_epi64(_mm512_andnot_si512(i8(63), zi), 46),
                                     i8(0x3ff0000000000000));
    __m512d r = vfnma(kd, d8(SB_EXP_L2), vfnma(kd, d8(SB_EXP_L1), a));
    __m512d p = d8(SB_VM_EXP_C6);
    p = vfma(p, r, d8(sb_exp_coef[5][0]));
    p = vfma(p, r, d8(sb_exp_coef[4][0]));
    p = vfma(p, r, d8(sb_exp_coef[3][0]));
    p = vfma(p, r, d8(0.5));
    p = vfma(mul(r, r), p, r);
    vexp_parts f;
    f.s = _mm512_castsi512_pd(sbits);
    __m512d tlo;
    exp_table(j, &f.t, &tlo);
    f.tail = vfma(f.t, p, tlo);
    return f;
}

/* ---- the log kernel: sb_log_fast(a, a_lo), lane by lane ------------------- */

/* Four lanes' (c, -log c hi, lo) = sb_log_tab[i]: a 16-byte and an 8-byte
 * load per lane, then a transpose. */
static inline void log_table4(const int64_t *i, __m256d *c, __m256d *l1, __m256d *l2) {
    const double *t0 = sb_log_tab[i[0]], *t1 = sb_log_tab[i[1]];
    const double *t2 = sb_log_tab[i[2]], *t3 = sb_log_tab[i[3]];
    __m256d v02 = _mm256_set_m128d(_mm_loadu_pd(t2), _mm_loadu_pd(t0));
    __m256d v13 = _mm256_set_m128d(_mm_loadu_pd(t3), _mm_loadu_pd(t1));
    *c = _mm256_unpacklo_pd(v02, v13);
    *l1 = _mm256_unpackhi_pd(v02, v13);
    *l2 = _mm256_set_pd(t3[2], t2[2], t1[2], t0[2]);
}

/* The log table for 8 lanes' bins (0..127) by per-lane loads: three
 * gathers cost more on AMD, and the 128 x 3 table is too big for the
 * register lookups used for exp. */
static inline void log_table(__m512i bin, __m512d *c, __m512d *l1, __m512d *l2) {
    int64_t i[8];
    _mm512_storeu_si512(i, bin);
    __m256d c0, c1, a0, a1, b0, b1;
    log_table4(i, &c0, &a0, &b0);
    log_table4(i + 4, &c1, &a1, &b1);
    *c = _mm512_insertf64x4(_mm512_castpd256_pd512(c0), c1, 1);
    *l1 = _mm512_insertf64x4(_mm512_castpd256_pd512(a0), a1, 1);
    *l2 = _mm512_insertf64x4(_mm512_castpd256_pd512(b0), b1, 1);
}

static inline __m512d vlog_fast(__m512d a, __m512d a_lo) {
    __m512i u = _mm512_castpd_si512(a);
    __m512i bin = _mm512_and_si512(_mm512_srli_epi64(u, 45), i8(127));
    __m512i up = _mm512_srli_epi64(bin, 6); /* bins >= 64 use m/2 */
    __m512i mbits = _mm512_or_si512(_mm512_and_si512(u, i8(0x000fffffffffffff)),
                                    _mm512_sub_epi64(i8(0x3ff0000000000000),
                                                     _mm512_slli_epi64(up, 52)));
    __m512i ebits = _mm512_add_epi64(_mm512_srli_epi64(u, 52), up);
    __m512d e = sub(_mm512_castsi512_pd(_mm512_or_si512(ebits, i8(0x4330000000000000))),
                    d8(0x1p52 + 1023));
    __m512d c, l1, l2;
    log_table(bin, &c, &l1, &l2);
    __m512d r = sub(mul(_mm512_castsi512_pd(mbits), c), d8(1.0));
    __m512d small = add(vfma(e, d8(SB_LN2_LO), l2), _mm512_div_pd(a_lo, a));
    __m512d p = d8(sb_log1p_coef[8][0]);
    for (int n = 7; n >= 2; n--) p = vfma(p, r, d8(sb_log1p_coef[n][0]));
    p = vfma(mul(r, r), p, r);
    return add(vfma(e, d8(SB_LN2_HI), l1), add(small, p));
}

/* ---- rounding test and block plumbing ------------------------------------- */

static inline __m512 join(__m256 lo, __m256 hi) {
    return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}

/* sb_round_check on both halves: 16 floats and the mask of settled lanes. */
static inline __m512 vround16(__m512d y0, __m512d y1, __mmask16 *ok) {
    __m512d d0 = mul(y0, d8(SB_FAST_EPS)), d1 = mul(y1, d8(SB_FAST_EPS));
    __m512 lo = join(_mm512_cvtpd_ps(sub(y0, d0)), _mm512_cvtpd_ps(sub(y1, d1)));
    __m512 hi = join(_mm512_cvtpd_ps(add(y0, d0)), _mm512_cvtpd_ps(add(y1, d1)));
    *ok = _mm512_cmpeq_epi32_mask(_mm512_castps_si512(lo), _mm512_castps_si512(hi));
    return lo;
}

static inline __m512d lo8(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
static inline __m512d hi8(__m512 v) { return _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)); }

/* imm must be a constant: a macro rather than a function argument */
#define CMP(a, b, pred) _mm512_cmp_ps_mask((a), f16(b), (pred))

static inline __m512 with_sign(__m512 r, __m512 x) { /* r >= 0 gets x's sign */
    return _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_castps_si512(r),
        _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u))));
}

static inline __m512 absf(__m512 x) {
    return _mm512_castsi512_ps(
        _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
}

static inline uint32_t finish(__m512 xv, __m512 res, __mmask16 ok, float *y, float *xsave) {
    ok &= _mm512_cmp_ps_mask(xv, xv, _CMP_ORD_Q); /* NaNs: the scalar code */
    uint32_t bad = ~(uint32_t)ok & 0xffffu;
    if (bad) _mm512_storeu_ps(xsave, xv);
    _mm512_storeu_ps(y, res);
    return bad;
}

/* ---- expf ----------------------------------------------------------------- */

static inline __m512d exp_y(__m512d a) {
    vexp_parts f = vexp_fast(a);
    return mul(f.s, add(f.t, f.tail));
}

SB_VM_BLOCK expf_block(const float *x, float *y, float *xsave) {
    __m512 xv = _mm512_loadu_ps(x);
    __mmask16 ok;
    __m512 res = vround16(exp_y(lo8(xv)), exp_y(hi8(xv)), &ok);
    __mmask16 over = CMP(xv, 89.0f, _CMP_GT_OQ), under = CMP(xv, -104.0f, _CMP_LT_OQ);
    res = _mm512_mask_blend_ps(over, res, f16(__builtin_inff()));
    res = _mm512_mask_blend_ps(under, res, _mm512_setzero_ps());
    return finish(xv, res, ok | over | under, y, xsave);
}

/* ---- expm1f --------------------------------------------------------------- */

static inline __m512d expm1_y(__m512d a) {
    vexp_parts f = vexp_fast(a);
    return add(sub(mul(f.s, f.t), d8(1.0)), mul(f.s, f.tail));
}

SB_VM_BLOCK expm1f_block(const float *x, float *y, float *xsave) {
    __m512 xv = _mm512_loadu_ps(x);
    __mmask16 ok;
    __m512 res = vround16(expm1_y(lo8(xv)), expm1_y(hi8(xv)), &ok);
    __mmask16 zero = CMP(xv, 0.0f, _CMP_EQ_OQ);
    __mmask16 over = CMP(xv, 89.0f, _CMP_GT_OQ), under = CMP(xv, -18.0f, _CMP_LT_OQ);
    res = _mm512_mask_blend_ps(zero, res, xv); /* expm1(-0) = -0 */
    res = _mm512_mask_blend_ps(over, res, f16(__builtin_inff()));
    res = _mm512_mask_blend_ps(under, res, f16(-1.0f));
    return finish(xv, res, ok | zero | over | under, y, xsave);
}

/* ---- logf: 0 < x < inf here, the rest by the scalar function --------------- */

SB_VM_BLOCK logf_block(const float *x, float *y, float *xsave) {
    __m512 xv = _mm512_loadu_ps(x);
    __mmask16 ok;
    __m512d zero = _mm512_setzero_pd();
    __m512 res = vround16(vlog_fast(lo8(xv), zero), vlog_fast(hi8(xv), zero), &ok);
    __mmask16 normal = CMP(xv, 0.0f, _CMP_GT_OQ) & CMP(xv, __builtin_inff(), _CMP_LT_OQ);
    return finish(xv, res, ok & normal, y, xsave);
}

/* ---- log1pf: both scalar branches, the lane's own kept (see vmath_avx2.c) --- */

static inline __m512d log1p_y(__m512d a) {
    __m512d p = d8(sb_log1p_coef[8][0]);
    for (int n = 7; n >= 2; n--) p = vfma(p, a, d8(sb_log1p_coef[n][0]));
    __m512d direct = vfma(mul(a, a), p, a);
    __m512d one = d8(1.0);
    __m512d s = add(one, a), bb = sub(s, one);
    __m512d s_lo = add(sub(one, sub(s, bb)), sub(a, bb));
    __m512d via_log = vlog_fast(s, s_lo);
    __mmask8 near = _mm512_cmp_pd_mask(a, d8(-0x1p-8), _CMP_GE_OQ) &
                    _mm512_cmp_pd_mask(a, d8(0x1p-7), _CMP_LT_OQ);
    return _mm512_mask_blend_pd(near, via_log, direct);
}

SB_VM_BLOCK log1pf_block(const float *x, float *y, float *xsave) {
    __m512 xv = _mm512_loadu_ps(x);
    __mmask16 ok;
    __m512 res = vround16(log1p_y(lo8(xv)), log1p_y(hi8(xv)), &ok);
    __mmask16 inside = CMP(xv, -1.0f, _CMP_GT_OQ) & CMP(xv, __builtin_inff(), _CMP_LT_OQ);
    __mmask16 zero = CMP(xv, 0.0f, _CMP_EQ_OQ);
    res = _mm512_mask_blend_ps(zero, res, xv); /* log1p(-0) = -0 */
    return finish(xv, res, (ok & inside) | zero, y, xsave);
}

/* ---- tanhf: on |x|, sign last; +-0 needs no special lane (vmath_avx2.c) ---- */

static inline __m512d tanh_y(__m512d ax) {
    vexp_parts f = vexp_fast(mul(d8(2.0), ax));
    __m512d e = add(sub(mul(f.s, f.t), d8(1.0)), mul(f.s, f.tail));
    return _mm512_div_pd(e, add(e, d8(2.0)));
}

SB_VM_BLOCK tanhf_block(const float *x, float *y, float *xsave) {
    __m512 xv = _mm512_loadu_ps(x), ax = absf(xv);
    __mmask16 ok;
    __m512 res = vround16(tanh_y(lo8(ax)), tanh_y(hi8(ax)), &ok);
    __mmask16 sat = CMP(ax, 10.0f, _CMP_GE_OQ);
    res = _mm512_mask_blend_ps(sat, res, f16(1.0f));
    return finish(xv, with_sign(res, xv), ok | sat, y, xsave);
}

/* ---- erff: both scalar branches, piece coefficients gathered (vmath_avx2.c) - */

/* Coefficient k of the lanes' erf pieces (0..13): the 14 values sit in
 * two registers (constant-folded from math_tables.h), one vpermt2pd picks
 * them; cheaper than a gather per coefficient. */
static inline __m512d erf_coef(int k, __m512i piece) {
    const __m512d lo = _mm512_set_pd(sb_erf_p[7][k], sb_erf_p[6][k], sb_erf_p[5][k], sb_erf_p[4][k],
                                     sb_erf_p[3][k], sb_erf_p[2][k], sb_erf_p[1][k], sb_erf_p[0][k]);
    const __m512d hi = _mm512_set_pd(0.0, 0.0, sb_erf_p[13][k], sb_erf_p[12][k], sb_erf_p[11][k],
                                     sb_erf_p[10][k], sb_erf_p[9][k], sb_erf_p[8][k]);
    return _mm512_permutex2var_pd(lo, piece, hi);
}

static inline __m512d erf_y(__m512d a) {
    __m512d u = mul(a, a);
    __m512d p0 = d8(sb_erf_p0[8]);
    for (int k = 7; k >= 0; k--) p0 = vfma(p0, u, d8(sb_erf_p0[k]));
    p0 = mul(a, p0);
    __m512d fi = _mm512_roundscale_pd(mul(sub(a, d8(0.5)), d8(4.0)),
                                      _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    fi = _mm512_min_pd(_mm512_max_pd(fi, d8(0.0)), d8(13.0));
    __m512d t = sub(a, add(d8(0.625), mul(d8(0.25), fi)));
    __m512i idx = _mm512_castpd_si512(add(fi, d8(0x1p52))); /* low bits: the piece */
    __m512d p = erf_coef(11, idx);
    for (int k = 10; k >= 0; k--) p = vfma(p, t, erf_coef(k, idx));
    return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, d8(0.5), _CMP_LT_OQ), p, p0);
}

SB_VM_BLOCK erff_block(const float *x, float *y, float *xsave) {
    __m512 xv = _mm512_loadu_ps(x), ax = absf(xv);
    __mmask16 ok;
    __m512 res = vround16(erf_y(lo8(ax)), erf_y(hi8(ax)), &ok);
    __mmask16 sat = CMP(ax, 4.0f, _CMP_GE_OQ);
    res = _mm512_mask_blend_ps(sat, res, f16(1.0f));
    return finish(xv, with_sign(res, xv), ok | sat, y, xsave);
}

/* ---- entry points ------------------------------------------------------------ */

#define SB_VM_DEFINE(name)                                                    \
    static void name##_n(const float *x, float *y, int64_t n) {              \
        sb_vm_drive(x, y, n, W, name##_block, sb_##name);                     \
    }
SB_VM_DEFINE(expf)
SB_VM_DEFINE(logf)
SB_VM_DEFINE(tanhf)
SB_VM_DEFINE(expm1f)
SB_VM_DEFINE(log1pf)
SB_VM_DEFINE(erff)

const sb_vmath_table sb_vmath_avx512 = {expf_n, logf_n, tanhf_n, expm1f_n, log1pf_n, erff_n};

#endif
