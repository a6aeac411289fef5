/* Batch correctly rounded math, SSE2 level (src/cpu/vmath.h): the template
 * src/cpu/vmath_simd.h (whose header is the argument for the bits) over
 * SSE2: 4 floats per block, evaluated as two vectors of 2 binary64 lanes.
 *
 * No step is fused (SSE2 has no FMA): every lane performs the scalar fast
 * path's IEEE binary64 operations in the same order on the same operands,
 * so its y is bitwise the scalar y. SSE2 has no blends or rounding
 * instructions: selects are and/andnot/or, table entries are loaded lane by
 * lane at the indices computed in the vector, and erf's piece index
 * (int)((a - 1/2)*4) is the truncating cvttpd2dq, which is C's
 * conversion. */
#include "cpu/cpu.h"

typedef int sb_vmath_sse2_unit; /* keeps the unit non-empty elsewhere */

#if SB_HAVE_X86_KERNELS
#include <emmintrin.h>
#include "cpu/vmath_internal.h"

typedef __m128d vm_d;
typedef __m128d vm_dm;
typedef __m128i vm_i;
typedef __m128 vm_f;
typedef __m128 vm_fm;

#define VM_W 4
#define VM_SFX(name) name##_sse2
#define VM_FUSED 0

#define VM_D(x) _mm_set1_pd(x)
#define VM_I(x) _mm_set1_epi64x(x)
#define VM_F(x) _mm_set1_ps(x)
#define VM_ADD _mm_add_pd
#define VM_SUB _mm_sub_pd
#define VM_MUL _mm_mul_pd
#define VM_DIV _mm_div_pd
#define VM_FMA(a, b, c) _mm_add_pd(_mm_mul_pd(a, b), c)
#define VM_ADDMUL(c, a, b) _mm_add_pd(c, _mm_mul_pd(a, b))
#define VM_FNMA(a, b, c) _mm_sub_pd(c, _mm_mul_pd(a, b))
#define VM_ASI _mm_castpd_si128
#define VM_ASD _mm_castsi128_pd
#define VM_IAND _mm_and_si128
#define VM_IOR _mm_or_si128
#define VM_IADD _mm_add_epi64
#define VM_ISUB _mm_sub_epi64
#define VM_ICLR(a, b) _mm_andnot_si128(b, a)
#define VM_ISHL _mm_slli_epi64
#define VM_ISHR _mm_srli_epi64
#define VM_DGE _mm_cmpge_pd
#define VM_DLT _mm_cmplt_pd
#define VM_DMAND _mm_and_pd
#define VM_DSEL(m, a, b) _mm_or_pd(_mm_and_pd(m, a), _mm_andnot_pd(m, b))

#define VM_FLOAD _mm_loadu_ps
#define VM_FSTORE _mm_storeu_ps
#define VM_FSUB _mm_sub_ps
#define VM_FMUL _mm_mul_ps
#define VM_LO(v) _mm_cvtps_pd(v)
#define VM_HI(v) _mm_cvtps_pd(_mm_movehl_ps(v, v))
#define VM_FGT _mm_cmpgt_ps
#define VM_FLT _mm_cmplt_ps
#define VM_FGE _mm_cmpge_ps
#define VM_FEQ _mm_cmpeq_ps
#define VM_FORD(a) _mm_cmpord_ps(a, a)
#define VM_FMOR _mm_or_ps
#define VM_FMAND _mm_and_ps
#define VM_FSEL(m, a, b) _mm_or_ps(_mm_and_ps(m, a), _mm_andnot_ps(m, b))
#define VM_FBITS(m) ((uint32_t)_mm_movemask_ps(m))
#define VM_FABS(x) _mm_andnot_ps(_mm_set1_ps(-0.0f), x)
#define VM_FSIGNED(r, x) _mm_or_ps(r, _mm_and_ps(_mm_set1_ps(-0.0f), x))
#define VM_FXORSIGN(r, x) _mm_xor_ps(r, _mm_and_ps(_mm_set1_ps(-0.0f), x))
#define VM_IXOR _mm_xor_si128
#define VM_DMOR _mm_or_pd
/* bit 0 of each 64-bit lane as a mask: SSE2 compares 32-bit words only, so
 * the low word is copied over the high one first */
#define VM_IODD(i)                                                                             \
    _mm_castsi128_pd(_mm_cmpeq_epi32(_mm_shuffle_epi32(_mm_and_si128(i, _mm_set1_epi64x(1)), 0xa0), \
                                     _mm_set1_epi32(1)))

/* sb_round_check on both halves (cvtpd2ps rounds by MXCSR): 4 floats and
 * the mask of settled lanes. */
static inline __m128 vm_round(__m128d y0, __m128d y1, __m128 *ok) {
    __m128d d0 = _mm_mul_pd(y0, _mm_set1_pd(SB_FAST_EPS)), d1 = _mm_mul_pd(y1, _mm_set1_pd(SB_FAST_EPS));
    __m128 lo = _mm_movelh_ps(_mm_cvtpd_ps(_mm_sub_pd(y0, d0)), _mm_cvtpd_ps(_mm_sub_pd(y1, d1)));
    __m128 hi = _mm_movelh_ps(_mm_cvtpd_ps(_mm_add_pd(y0, d0)), _mm_cvtpd_ps(_mm_add_pd(y1, d1)));
    *ok = _mm_castsi128_ps(_mm_cmpeq_epi32(_mm_castps_si128(lo), _mm_castps_si128(hi)));
    return lo;
}
#define VM_ROUND vm_round

/* one 16-byte load per lane gives (t, tlo); unpack into t and tlo */
static inline void exp_tab(__m128i j, __m128d *t, __m128d *tlo) {
    int64_t j0 = _mm_cvtsi128_si64(j), j1 = _mm_cvtsi128_si64(_mm_unpackhi_epi64(j, j));
    __m128d e0 = _mm_loadu_pd(sb_exp_tab[j0]), e1 = _mm_loadu_pd(sb_exp_tab[j1]);
    *t = _mm_unpacklo_pd(e0, e1);
    *tlo = _mm_unpackhi_pd(e0, e1);
}
#define VM_EXP_TAB exp_tab

/* RN(2^(j/16)) = sb_exp_tab[4j][0] for the 2 lanes' j < 16 */
static inline __m128d exp16_tab(__m128i j) {
    int64_t j0 = _mm_cvtsi128_si64(j), j1 = _mm_cvtsi128_si64(_mm_unpackhi_epi64(j, j));
    return _mm_set_pd(sb_exp_tab[4 * j1][0], sb_exp_tab[4 * j0][0]);
}
#define VM_EXP16_TAB exp16_tab

static inline void log_tab(__m128i bin, __m128d *c, __m128d *l1, __m128d *l2) {
    int64_t k0 = _mm_cvtsi128_si64(bin), k1 = _mm_cvtsi128_si64(_mm_unpackhi_epi64(bin, bin));
    const double *t0 = sb_log_tab[k0], *t1 = sb_log_tab[k1];
    *c = _mm_set_pd(t1[0], t0[0]);
    *l1 = _mm_set_pd(t1[1], t0[1]);
    *l2 = _mm_set_pd(t1[2], t0[2]);
}
#define VM_LOG_TAB log_tab

/* (int) truncation; NaN, inf and huge give INT_MIN, clamped to piece 0 */
#define VM_ERF_PIECE(v)                                                                        \
    _mm_min_pd(_mm_max_pd(_mm_cvtepi32_pd(_mm_cvttpd_epi32(v)), _mm_set1_pd(0.0)),            \
               _mm_set1_pd(SB_ERF_PIECES - 1))

/* the two lanes' coefficient rows, read lane by lane */
typedef struct {
    const double *c0, *c1;
} vm_erf_rows;

static inline void erf_rows(__m128d fi, vm_erf_rows *rows) {
    __m128i ii = _mm_cvttpd_epi32(fi);
    rows->c0 = sb_erf_p[_mm_cvtsi128_si32(ii)];
    rows->c1 = sb_erf_p[_mm_cvtsi128_si32(_mm_srli_si128(ii, 4))];
}
#define VM_ERF_ROWS erf_rows
#define VM_ERF_COEF(rows, k) _mm_set_pd((rows).c1[k], (rows).c0[k])

#include "cpu/vmath_simd.h"
#endif
