/* The exact reduction's vector loops, 32-byte vectors; see exact_simd.h. */
#include "cpu/exact_internal.h"

typedef int sb_exact_avx2_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#include <immintrin.h>
#define SFX(name) name##_avx2
#define EXACT_VB 32
static inline void exact_narrow_avx2(uint8_t *p, __m256i v) {
    __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64((__m128i *)p, _mm_packus_epi16(w, w));
}
#define EXACT_LOAD_CODES(p) _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(p)))
#define EXACT_STORE_CODES(p, v) exact_narrow_avx2(p, (__m256i)(v))
#include "cpu/exact_simd.h"
#endif
