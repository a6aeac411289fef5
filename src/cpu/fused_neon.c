/* The fused element loops, 16-byte vectors (Advanced SIMD); see
 * fused_simd.h. */
#include "cpu/fused_internal.h"

typedef int sb_fused_neon_unit_not_empty;

#if SB_HAVE_NEON_KERNELS
#define SFX(name) name##_neon
#define FUSED_VB 16
#include "cpu/fused_simd.h"
#endif
