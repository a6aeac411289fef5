/* Canonical-sum lane rows with NEON: the 32 lanes are 8 registers of 4. */
#include "cpu/sum_internal.h"

typedef int sb_sum_neon_unit_not_empty;

#if SB_HAVE_NEON_KERNELS
#include <arm_neon.h>

void sb_sum_rows_neon(float lane[SB_SUM_LANES], const float *x, int64_t rows) {
    float32x4_t a[8];
    for (int k = 0; k < 8; k++) a[k] = vld1q_f32(lane + 4 * k);
    for (int64_t r = 0; r < rows; r++, x += SB_SUM_LANES)
        for (int k = 0; k < 8; k++) a[k] = vaddq_f32(a[k], vld1q_f32(x + 4 * k));
    for (int k = 0; k < 8; k++) vst1q_f32(lane + 4 * k, a[k]);
}
#endif
