/* Batch correctly rounded math, AVX-512 level (src/cpu/vmath.h): the
 * template src/cpu/vmath_simd.h (whose header is the argument for the bits)
 * over AVX-512F/DQ: 16 floats per block, evaluated as two vectors of 8
 * binary64 lanes, polynomial steps fused, comparisons into mask registers.
 *
 * Tables: gathers are slow on some AVX-512 CPUs (on AMD Zen 4 the four
 * gathers of a 16-float exp block cost more than all of its arithmetic), so
 * the 64-entry exp table and the 16 erf pieces' coefficients are looked up
 * inside registers with vpermt2pd, and the 128-entry, 3-column log table
 * (too big for registers) with per-lane loads. The registers are built from
 * math_tables.h (_mm512_set_pd of the entries, constant-folded by the
 * compiler), so the entries are the scalar code's. */
#include "cpu/cpu.h"

typedef int sb_vmath_avx512_unit; /* keeps the unit non-empty elsewhere */

#if SB_HAVE_X86_KERNELS
#include <immintrin.h>
#include "cpu/vmath_internal.h"

typedef __m512d vm_d;
typedef __mmask8 vm_dm;
typedef __m512i vm_i;
typedef __m512 vm_f;
typedef __mmask16 vm_fm;

#define VM_W 16
#define VM_SFX(name) name##_avx512
#define VM_FUSED 1

#define VM_D(x) _mm512_set1_pd(x)
#define VM_I(x) _mm512_set1_epi64(x)
#define VM_F(x) _mm512_set1_ps(x)
#define VM_ADD _mm512_add_pd
#define VM_SUB _mm512_sub_pd
#define VM_MUL _mm512_mul_pd
#define VM_DIV _mm512_div_pd
#define VM_FMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#define VM_ADDMUL(c, a, b) _mm512_fmadd_pd(a, b, c)
#define VM_FNMA(a, b, c) _mm512_fnmadd_pd(a, b, c)
#define VM_ASI _mm512_castpd_si512
#define VM_ASD _mm512_castsi512_pd
#define VM_IAND _mm512_and_si512
#define VM_IOR _mm512_or_si512
#define VM_IADD _mm512_add_epi64
#define VM_ISUB _mm512_sub_epi64
#define VM_ICLR(a, b) _mm512_andnot_si512(b, a)
#define VM_ISHL _mm512_slli_epi64
#define VM_ISHR _mm512_srli_epi64
#define VM_DGE(a, b) _mm512_cmp_pd_mask(a, b, _CMP_GE_OQ)
#define VM_DLT(a, b) _mm512_cmp_pd_mask(a, b, _CMP_LT_OQ)
#define VM_DMAND(m1, m2) ((__mmask8)((m1) & (m2)))
#define VM_DSEL(m, a, b) _mm512_mask_blend_pd(m, b, a)

#define VM_FLOAD _mm512_loadu_ps
#define VM_FSTORE _mm512_storeu_ps
#define VM_FSUB _mm512_sub_ps
#define VM_FMUL _mm512_mul_ps
#define VM_LO(v) _mm512_cvtps_pd(_mm512_castps512_ps256(v))
#define VM_HI(v) _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1))
#define VM_FGT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ)
#define VM_FLT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)
#define VM_FGE(a, b) _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ)
#define VM_FEQ(a, b) _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ)
#define VM_FORD(a) _mm512_cmp_ps_mask(a, a, _CMP_ORD_Q)
#define VM_FMOR(m1, m2) ((__mmask16)((m1) | (m2)))
#define VM_FMAND(m1, m2) ((__mmask16)((m1) & (m2)))
#define VM_FSEL(m, a, b) _mm512_mask_blend_ps(m, b, a)
#define VM_FBITS(m) ((uint32_t)(m))
#define VM_FABS(x) \
    _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)))
#define VM_FSIGNED(r, x)                                                        \
    _mm512_castsi512_ps(_mm512_or_si512(                                        \
        _mm512_castps_si512(r),                                                 \
        _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u))))
#define VM_FXORSIGN(r, x)                                                       \
    _mm512_castsi512_ps(_mm512_xor_si512(                                       \
        _mm512_castps_si512(r),                                                 \
        _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u))))
#define VM_IXOR _mm512_xor_si512
#define VM_DMOR(m1, m2) ((__mmask8)((m1) | (m2)))
#define VM_IODD(i) _mm512_test_epi64_mask(i, _mm512_set1_epi64(1))

/* sb_round_check on both halves (vcvtpd2ps rounds by MXCSR): 16 floats and
 * the mask of settled lanes. */
static inline __m512 join(__m256 lo, __m256 hi) {
    return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}

static inline __m512 vm_round(__m512d y0, __m512d y1, __mmask16 *ok) {
    __m512d d0 = _mm512_mul_pd(y0, _mm512_set1_pd(SB_FAST_EPS));
    __m512d d1 = _mm512_mul_pd(y1, _mm512_set1_pd(SB_FAST_EPS));
    __m512 lo = join(_mm512_cvtpd_ps(_mm512_sub_pd(y0, d0)), _mm512_cvtpd_ps(_mm512_sub_pd(y1, d1)));
    __m512 hi = join(_mm512_cvtpd_ps(_mm512_add_pd(y0, d0)), _mm512_cvtpd_ps(_mm512_add_pd(y1, d1)));
    *ok = _mm512_cmpeq_epi32_mask(_mm512_castps_si512(lo), _mm512_castps_si512(hi));
    return lo;
}
#define VM_ROUND vm_round

/* The 64-entry exp table inside registers: eight registers hold one
 * column, vpermt2pd picks within each pair (index bits 0..3), and bits 4
 * and 5 choose between the four pairs. */
#define TAB8(tab, col, b)                                                                      \
    _mm512_set_pd(tab[8 * (b) + 7][col], tab[8 * (b) + 6][col], tab[8 * (b) + 5][col],         \
                  tab[8 * (b) + 4][col], tab[8 * (b) + 3][col], tab[8 * (b) + 2][col],         \
                  tab[8 * (b) + 1][col], tab[8 * (b)][col])

static inline __m512d lookup64(const __m512d q[8], __m512i j, __mmask8 bit4, __mmask8 bit5) {
    __m512d a = _mm512_permutex2var_pd(q[0], j, q[1]);
    __m512d b = _mm512_permutex2var_pd(q[2], j, q[3]);
    __m512d c = _mm512_permutex2var_pd(q[4], j, q[5]);
    __m512d d = _mm512_permutex2var_pd(q[6], j, q[7]);
    return _mm512_mask_blend_pd(bit5, _mm512_mask_blend_pd(bit4, a, b),
                                _mm512_mask_blend_pd(bit4, c, d));
}

static inline void exp_tab(__m512i j, __m512d *t, __m512d *tlo) {
    const __m512d qt[8] = {TAB8(sb_exp_tab, 0, 0), TAB8(sb_exp_tab, 0, 1), TAB8(sb_exp_tab, 0, 2),
                           TAB8(sb_exp_tab, 0, 3), TAB8(sb_exp_tab, 0, 4), TAB8(sb_exp_tab, 0, 5),
                           TAB8(sb_exp_tab, 0, 6), TAB8(sb_exp_tab, 0, 7)};
    const __m512d ql[8] = {TAB8(sb_exp_tab, 1, 0), TAB8(sb_exp_tab, 1, 1), TAB8(sb_exp_tab, 1, 2),
                           TAB8(sb_exp_tab, 1, 3), TAB8(sb_exp_tab, 1, 4), TAB8(sb_exp_tab, 1, 5),
                           TAB8(sb_exp_tab, 1, 6), TAB8(sb_exp_tab, 1, 7)};
    __mmask8 bit4 = _mm512_test_epi64_mask(j, _mm512_set1_epi64(16));
    __mmask8 bit5 = _mm512_test_epi64_mask(j, _mm512_set1_epi64(32));
    *t = lookup64(qt, j, bit4, bit5);
    *tlo = lookup64(ql, j, bit4, bit5);
}
#define VM_EXP_TAB exp_tab

/* RN(2^(j/16)) = sb_exp_tab[4j][0], j < 16: one vpermt2pd over two
 * registers (index bits 0..3). */
static inline __m512d exp16_tab(__m512i j) {
    const __m512d lo = _mm512_set_pd(sb_exp_tab[28][0], sb_exp_tab[24][0], sb_exp_tab[20][0],
                                     sb_exp_tab[16][0], sb_exp_tab[12][0], sb_exp_tab[8][0],
                                     sb_exp_tab[4][0], sb_exp_tab[0][0]);
    const __m512d hi = _mm512_set_pd(sb_exp_tab[60][0], sb_exp_tab[56][0], sb_exp_tab[52][0],
                                     sb_exp_tab[48][0], sb_exp_tab[44][0], sb_exp_tab[40][0],
                                     sb_exp_tab[36][0], sb_exp_tab[32][0]);
    return _mm512_permutex2var_pd(lo, j, hi);
}
#define VM_EXP16_TAB exp16_tab

/* Four lanes' (c, -log c hi, lo) = sb_log_tab[i]: a 16-byte and an 8-byte
 * load per lane, then a transpose; two of these make the 8 lanes (three
 * gathers cost more on AMD, and the 128 x 3 table is too big for the
 * register lookups used for exp). */
static inline void log_tab4(const int64_t *i, __m256d *c, __m256d *l1, __m256d *l2) {
    const double *t0 = sb_log_tab[i[0]], *t1 = sb_log_tab[i[1]];
    const double *t2 = sb_log_tab[i[2]], *t3 = sb_log_tab[i[3]];
    __m256d v02 = _mm256_set_m128d(_mm_loadu_pd(t2), _mm_loadu_pd(t0));
    __m256d v13 = _mm256_set_m128d(_mm_loadu_pd(t3), _mm_loadu_pd(t1));
    *c = _mm256_unpacklo_pd(v02, v13);
    *l1 = _mm256_unpackhi_pd(v02, v13);
    *l2 = _mm256_set_pd(t3[2], t2[2], t1[2], t0[2]);
}

static inline void log_tab(__m512i bin, __m512d *c, __m512d *l1, __m512d *l2) {
    int64_t i[8];
    _mm512_storeu_si512(i, bin);
    __m256d c0, c1, a0, a1, b0, b1;
    log_tab4(i, &c0, &a0, &b0);
    log_tab4(i + 4, &c1, &a1, &b1);
    *c = _mm512_insertf64x4(_mm512_castpd256_pd512(c0), c1, 1);
    *l1 = _mm512_insertf64x4(_mm512_castpd256_pd512(a0), a1, 1);
    *l2 = _mm512_insertf64x4(_mm512_castpd256_pd512(b0), b1, 1);
}
#define VM_LOG_TAB log_tab

/* Truncation (vrndscalepd toward zero, C's (int)), clamped: NaN lanes
 * become 0 (maxpd returns its second operand on NaN). */
#define VM_ERF_PIECE(v)                                                                  \
    _mm512_min_pd(_mm512_max_pd(_mm512_roundscale_pd(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC), \
                                _mm512_set1_pd(0.0)),                                   \
                  _mm512_set1_pd(SB_ERF_PIECES - 1))

/* The pieces as permute indices (low bits of fi + 2^52). */
typedef __m512i vm_erf_rows;
#define VM_ERF_ROWS(fi, rows) (*(rows) = _mm512_castpd_si512(_mm512_add_pd(fi, _mm512_set1_pd(0x1p52))))

/* Coefficient k of the lanes' erf pieces: the 16 values sit in two
 * registers, one vpermt2pd picks them (cheaper than a gather each). */
static inline __m512d erf_coef(__m512i idx, int k) {
    const __m512d lo = _mm512_set_pd(sb_erf_p[7][k], sb_erf_p[6][k], sb_erf_p[5][k], sb_erf_p[4][k],
                                     sb_erf_p[3][k], sb_erf_p[2][k], sb_erf_p[1][k], sb_erf_p[0][k]);
    const __m512d hi = _mm512_set_pd(sb_erf_p[15][k], sb_erf_p[14][k], sb_erf_p[13][k],
                                     sb_erf_p[12][k], sb_erf_p[11][k], sb_erf_p[10][k],
                                     sb_erf_p[9][k], sb_erf_p[8][k]);
    return _mm512_permutex2var_pd(lo, idx, hi);
}
#define VM_ERF_COEF erf_coef

#include "cpu/vmath_simd.h"
#endif
