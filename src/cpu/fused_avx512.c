/* The fused element loops, 64-byte vectors; see fused_simd.h. */
#include "cpu/fused_internal.h"

typedef int sb_fused_avx512_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#define SFX(name) name##_avx512
#define FUSED_VB 64
#include "cpu/fused_simd.h"
#endif
