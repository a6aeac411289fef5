/* The depthwise convolution's inner loops with AVX2 + FMA: 8 chains per
 * vector (conv2d_dw_simd.h). */
#include "cpu/cpu.h"

typedef int sb_conv2d_dw_avx2_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#include <immintrin.h>
#include "cpu/conv_internal.h"

typedef __m256 V;
#define VN 8
#define SFX(name) name##_avx2
#define VLOAD _mm256_loadu_ps
#define VSTORE _mm256_storeu_ps
#define VSET1 _mm256_set1_ps
#define VZERO _mm256_setzero_ps
#define VFMA _mm256_fmadd_ps
#define VADD _mm256_add_ps
#define DW_U 8
#define DW_G 12

/* o[p] = lane p of every r[l], l = 0..7: an 8 x 8 transpose in registers. */
static inline void dw_transpose8(const __m256 *r, __m256 *o) {
    __m256 t[8], u[8];
    for (int l = 0; l < 8; l += 2) {
        t[l] = _mm256_unpacklo_ps(r[l], r[l + 1]);     /* l0 l'0 l1 l'1 | l4 l'4 l5 l'5 */
        t[l + 1] = _mm256_unpackhi_ps(r[l], r[l + 1]); /* l2 l'2 l3 l'3 | l6 l'6 l7 l'7 */
    }
    for (int h = 0; h < 8; h += 4) {
        u[h] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44);         /* positions 0 | 4 */
        u[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xee);     /* 1 | 5 */
        u[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44); /* 2 | 6 */
        u[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xee); /* 3 | 7 */
    }
    for (int p = 0; p < 4; p++) {
        o[p] = _mm256_permute2f128_ps(u[p], u[p + 4], 0x20);
        o[p + 4] = _mm256_permute2f128_ps(u[p], u[p + 4], 0x31);
    }
}

/* dst[p*8 + l] = src[l][p0 + p] (sb_dw_interleave) */
static inline void dw_interleave8(const float *const *src, int64_t p0, float *dst) {
    __m256 r[8], o[8];
    for (int l = 0; l < 8; l++) r[l] = _mm256_loadu_ps(src[l] + p0);
    dw_transpose8(r, o);
    for (int p = 0; p < 8; p++) _mm256_storeu_ps(dst + p * 8, o[p]);
}

/* dst[l][p0 + p] = src[p*8 + l] (sb_dw_deinterleave) */
static inline void dw_deinterleave8(const float *src, float *const *dst, int64_t p0) {
    __m256 r[8], o[8];
    for (int p = 0; p < 8; p++) r[p] = _mm256_loadu_ps(src + p * 8);
    dw_transpose8(r, o);
    for (int l = 0; l < 8; l++) _mm256_storeu_ps(dst[l] + p0, o[l]);
}
#define DW_INTERLEAVE_BLOCK dw_interleave8
#define DW_DEINTERLEAVE_BLOCK dw_deinterleave8

#include "cpu/conv2d_dw_simd.h"
#endif
