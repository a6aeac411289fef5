/* Batch correctly rounded math, AVX2 level (src/cpu/vmath.h): the template
 * src/cpu/vmath_simd.h (whose header is the argument for the bits) over
 * AVX2 + FMA3: 8 floats per block, evaluated as two vectors of 4 binary64
 * lanes, polynomial steps fused.
 *
 * Tables are read with per-lane loads at the indices computed in the
 * vector, then transposed (gathers are microcoded and slower on AMD): one
 * 16-byte load per lane for exp's (t, tlo), 16 + 8 bytes for log's
 * (c, L_hi, L_lo), three 32-byte loads for an erf piece's 12 coefficients.
 * Every index is masked or clamped to its table's range first, so special
 * lanes (inf, NaN, huge) never read outside a table. */
#include "cpu/cpu.h"

typedef int sb_vmath_avx2_unit; /* keeps the unit non-empty elsewhere */

#if SB_HAVE_X86_KERNELS
#include <immintrin.h>
#include "cpu/vmath_internal.h"

typedef __m256d vm_d;
typedef __m256d vm_dm;
typedef __m256i vm_i;
typedef __m256 vm_f;
typedef __m256 vm_fm;

#define VM_W 8
#define VM_SFX(name) name##_avx2
#define VM_FUSED 1

#define VM_D(x) _mm256_set1_pd(x)
#define VM_I(x) _mm256_set1_epi64x(x)
#define VM_F(x) _mm256_set1_ps(x)
#define VM_ADD _mm256_add_pd
#define VM_SUB _mm256_sub_pd
#define VM_MUL _mm256_mul_pd
#define VM_DIV _mm256_div_pd
#define VM_FMA(a, b, c) _mm256_fmadd_pd(a, b, c)
#define VM_ADDMUL(c, a, b) _mm256_fmadd_pd(a, b, c)
#define VM_FNMA(a, b, c) _mm256_fnmadd_pd(a, b, c)
#define VM_ASI _mm256_castpd_si256
#define VM_ASD _mm256_castsi256_pd
#define VM_IAND _mm256_and_si256
#define VM_IOR _mm256_or_si256
#define VM_IADD _mm256_add_epi64
#define VM_ISUB _mm256_sub_epi64
#define VM_ICLR(a, b) _mm256_andnot_si256(b, a)
#define VM_ISHL _mm256_slli_epi64
#define VM_ISHR _mm256_srli_epi64
#define VM_DGE(a, b) _mm256_cmp_pd(a, b, _CMP_GE_OQ)
#define VM_DLT(a, b) _mm256_cmp_pd(a, b, _CMP_LT_OQ)
#define VM_DMAND _mm256_and_pd
#define VM_DSEL(m, a, b) _mm256_blendv_pd(b, a, m)

#define VM_FLOAD _mm256_loadu_ps
#define VM_FSTORE _mm256_storeu_ps
#define VM_FSUB _mm256_sub_ps
#define VM_FMUL _mm256_mul_ps
#define VM_LO(v) _mm256_cvtps_pd(_mm256_castps256_ps128(v))
#define VM_HI(v) _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1))
#define VM_FGT(a, b) _mm256_cmp_ps(a, b, _CMP_GT_OQ)
#define VM_FLT(a, b) _mm256_cmp_ps(a, b, _CMP_LT_OQ)
#define VM_FGE(a, b) _mm256_cmp_ps(a, b, _CMP_GE_OQ)
#define VM_FEQ(a, b) _mm256_cmp_ps(a, b, _CMP_EQ_OQ)
#define VM_FORD(a) _mm256_cmp_ps(a, a, _CMP_ORD_Q)
#define VM_FMOR _mm256_or_ps
#define VM_FMAND _mm256_and_ps
#define VM_FSEL(m, a, b) _mm256_blendv_ps(b, a, m)
#define VM_FBITS(m) ((uint32_t)_mm256_movemask_ps(m))
#define VM_FABS(x) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x)
#define VM_FSIGNED(r, x) _mm256_or_ps(r, _mm256_and_ps(x, _mm256_set1_ps(-0.0f)))
#define VM_FXORSIGN(r, x) _mm256_xor_ps(r, _mm256_and_ps(x, _mm256_set1_ps(-0.0f)))
#define VM_IXOR _mm256_xor_si256
#define VM_DMOR _mm256_or_pd
#define VM_IODD(i) \
    _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_and_si256(i, _mm256_set1_epi64x(1)), _mm256_set1_epi64x(1)))

/* sb_round_check on 4 lanes: the float, and all-ones where it is settled
 * (vcvtpd2ps rounds by MXCSR). */
static inline __m128 vround4(__m256d y, __m128i *ok) {
    __m256d d = _mm256_mul_pd(y, _mm256_set1_pd(SB_FAST_EPS));
    __m128 lo = _mm256_cvtpd_ps(_mm256_sub_pd(y, d)), hi = _mm256_cvtpd_ps(_mm256_add_pd(y, d));
    *ok = _mm_cmpeq_epi32(_mm_castps_si128(lo), _mm_castps_si128(hi));
    return lo;
}

static inline __m256 vm_round(__m256d y0, __m256d y1, __m256 *ok) {
    __m128i ok0, ok1;
    __m128 r0 = vround4(y0, &ok0), r1 = vround4(y1, &ok1);
    *ok = _mm256_castsi256_ps(_mm256_set_m128i(ok1, ok0));
    return _mm256_set_m128(r1, r0);
}
#define VM_ROUND vm_round

/* (t, tlo) = sb_exp_tab[j] for the 4 lanes' j: one 16-byte load per lane,
 * then a transpose. Faster than two gathers on CPUs whose gathers are
 * microcoded (AMD). */
static inline void exp_tab(__m256i j, __m256d *t, __m256d *tlo) {
    __m256i j2 = _mm256_slli_epi64(j, 1);
    __m128i lo = _mm256_castsi256_si128(j2), hi = _mm256_extracti128_si256(j2, 1);
    const double *base = &sb_exp_tab[0][0];
    __m128d e0 = _mm_loadu_pd(base + _mm_cvtsi128_si64(lo));
    __m128d e1 = _mm_loadu_pd(base + _mm_extract_epi64(lo, 1));
    __m128d e2 = _mm_loadu_pd(base + _mm_cvtsi128_si64(hi));
    __m128d e3 = _mm_loadu_pd(base + _mm_extract_epi64(hi, 1));
    __m256d v02 = _mm256_set_m128d(e2, e0), v13 = _mm256_set_m128d(e3, e1);
    *t = _mm256_unpacklo_pd(v02, v13);
    *tlo = _mm256_unpackhi_pd(v02, v13);
}
#define VM_EXP_TAB exp_tab

/* RN(2^(j/16)) = sb_exp_tab[4j][0] for the 4 lanes' j < 16: one 8-byte
 * load per lane (row 4j starts 8j doubles into the table). */
static inline __m256d exp16_tab(__m256i j) {
    __m256i at = _mm256_slli_epi64(j, 3);
    __m128i lo = _mm256_castsi256_si128(at), hi = _mm256_extracti128_si256(at, 1);
    const double *base = &sb_exp_tab[0][0];
    return _mm256_set_pd(base[_mm_extract_epi64(hi, 1)], base[_mm_cvtsi128_si64(hi)],
                         base[_mm_extract_epi64(lo, 1)], base[_mm_cvtsi128_si64(lo)]);
}
#define VM_EXP16_TAB exp16_tab

/* (c, -log c hi, lo) = sb_log_tab[bin] for the 4 lanes: a 16-byte and an
 * 8-byte load per lane, then a transpose (cheaper than three gathers on
 * AMD). */
static inline void log_tab(__m256i bin, __m256d *c, __m256d *l1, __m256d *l2) {
    __m256i i3 = _mm256_add_epi64(_mm256_slli_epi64(bin, 1), bin);
    __m128i lo = _mm256_castsi256_si128(i3), hi = _mm256_extracti128_si256(i3, 1);
    const double *t0 = &sb_log_tab[0][0] + _mm_cvtsi128_si64(lo);
    const double *t1 = &sb_log_tab[0][0] + _mm_extract_epi64(lo, 1);
    const double *t2 = &sb_log_tab[0][0] + _mm_cvtsi128_si64(hi);
    const double *t3 = &sb_log_tab[0][0] + _mm_extract_epi64(hi, 1);
    __m256d v02 = _mm256_set_m128d(_mm_loadu_pd(t2), _mm_loadu_pd(t0));
    __m256d v13 = _mm256_set_m128d(_mm_loadu_pd(t3), _mm_loadu_pd(t1));
    *c = _mm256_unpacklo_pd(v02, v13);
    *l1 = _mm256_unpackhi_pd(v02, v13);
    *l2 = _mm256_set_pd(t3[2], t2[2], t1[2], t0[2]);
}
#define VM_LOG_TAB log_tab

/* Truncation (roundpd toward zero, C's (int)), clamped: NaN lanes become 0
 * (maxpd returns its second operand on NaN). */
#define VM_ERF_PIECE(v)                                                                   \
    _mm256_min_pd(_mm256_max_pd(_mm256_round_pd(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC), \
                                _mm256_set1_pd(0.0)),                                    \
                  _mm256_set1_pd(SB_ERF_PIECES - 1))

/* The 12 coefficients of the 4 lanes' erf pieces: each lane's row is 12
 * contiguous doubles, loaded as three 4-vectors and transposed 4x4
 * (cheaper than 12 gathers). */
typedef struct {
    __m256d cf[12];
} vm_erf_rows;

static inline void erf_rows(__m256d fi, vm_erf_rows *rows) {
    __m256d *cf = rows->cf;
    __m256i piece = _mm256_castpd_si256(_mm256_add_pd(fi, _mm256_set1_pd(0x1p52)));
    __m128i lo = _mm256_castsi256_si128(piece), hi = _mm256_extracti128_si256(piece, 1);
    const double *r0 = sb_erf_p[(uint32_t)_mm_cvtsi128_si32(lo)];
    const double *r1 = sb_erf_p[(uint32_t)_mm_extract_epi32(lo, 2)];
    const double *r2 = sb_erf_p[(uint32_t)_mm_cvtsi128_si32(hi)];
    const double *r3 = sb_erf_p[(uint32_t)_mm_extract_epi32(hi, 2)];
    for (int b = 0; b < 3; b++) {
        __m256d A = _mm256_loadu_pd(r0 + 4 * b), B = _mm256_loadu_pd(r1 + 4 * b);
        __m256d C = _mm256_loadu_pd(r2 + 4 * b), D = _mm256_loadu_pd(r3 + 4 * b);
        __m256d ab0 = _mm256_unpacklo_pd(A, B), ab1 = _mm256_unpackhi_pd(A, B);
        __m256d cd0 = _mm256_unpacklo_pd(C, D), cd1 = _mm256_unpackhi_pd(C, D);
        cf[4 * b + 0] = _mm256_permute2f128_pd(ab0, cd0, 0x20);
        cf[4 * b + 1] = _mm256_permute2f128_pd(ab1, cd1, 0x20);
        cf[4 * b + 2] = _mm256_permute2f128_pd(ab0, cd0, 0x31);
        cf[4 * b + 3] = _mm256_permute2f128_pd(ab1, cd1, 0x31);
    }
}
#define VM_ERF_ROWS erf_rows
#define VM_ERF_COEF(rows, k) ((rows).cf[k])

#include "cpu/vmath_simd.h"
#endif
