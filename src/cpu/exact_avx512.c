/* The exact reduction's vector loops, 64-byte vectors; see exact_simd.h. */
#include "cpu/exact_internal.h"

typedef int sb_exact_avx512_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#define SFX(name) name##_avx512
#define EXACT_VB 64
#include "cpu/exact_simd.h"
#endif
