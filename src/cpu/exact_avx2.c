/* The exact reduction's vector loops, 32-byte vectors; see exact_simd.h. */
#include "cpu/exact_internal.h"

typedef int sb_exact_avx2_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#define SFX(name) name##_avx2
#define EXACT_VB 32
#include "cpu/exact_simd.h"
#endif
