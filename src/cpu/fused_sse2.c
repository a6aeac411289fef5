/* The fused element loops, 16-byte vectors; see fused_simd.h. */
#include "cpu/fused_internal.h"

typedef int sb_fused_sse2_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#define SFX(name) name##_sse2
#define FUSED_VB 16
#include "cpu/fused_simd.h"
#endif
