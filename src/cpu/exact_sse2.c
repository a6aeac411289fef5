/* The exact reduction's vector loops, 16-byte vectors; see exact_simd.h. */
#include "cpu/exact_internal.h"

typedef int sb_exact_sse2_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#define SFX(name) name##_sse2
#define EXACT_VB 16
#include "cpu/exact_simd.h"
#endif
