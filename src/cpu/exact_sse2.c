/* The exact reduction's vector loops, 16-byte vectors; see exact_simd.h. */
#include "cpu/exact_internal.h"

typedef int sb_exact_sse2_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#include <emmintrin.h>
#include <string.h>
#define SFX(name) name##_sse2
#define EXACT_VB 16
static inline __m128i exact_widen_sse2(const uint8_t *p) {
    int32_t w;
    memcpy(&w, p, sizeof w);
    __m128i z = _mm_setzero_si128();
    return _mm_unpacklo_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128(w), z), z);
}
static inline void exact_narrow_sse2(uint8_t *p, __m128i v) {
    __m128i w = _mm_packs_epi32(v, v); /* lanes <= 255: no saturation */
    int32_t b = _mm_cvtsi128_si32(_mm_packus_epi16(w, w));
    memcpy(p, &b, sizeof b);
}
#define EXACT_LOAD_CODES(p) exact_widen_sse2(p)
#define EXACT_STORE_CODES(p, v) exact_narrow_sse2(p, (__m128i)(v))
#include "cpu/exact_simd.h"
#endif
