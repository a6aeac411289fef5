/* The exact reduction's vector loops, 64-byte vectors; see exact_simd.h. */
#include "cpu/exact_internal.h"

typedef int sb_exact_avx512_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#include <immintrin.h>
#define SFX(name) name##_avx512
#define EXACT_VB 64
#define EXACT_LOAD_CODES(p) _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define EXACT_STORE_CODES(p, v) _mm_storeu_si128((__m128i *)(void *)(p), _mm512_cvtepi32_epi8((__m512i)(v)))
#include "cpu/exact_simd.h"
#endif
