/* The fused element loops, scalar level: fused_simd.h with vectors of one
 * float, i.e. the reference's statements one element at a time, compiled
 * for the baseline instruction set. */
#include "cpu/fused_internal.h"

#define SFX(name) name##_scalar
#define FUSED_VB 4
#include "cpu/fused_simd.h"
