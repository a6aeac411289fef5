/* The aarch64 Advanced SIMD GEMM micro-kernel: an 8 x 12 tile of C in 24
 * q-register accumulators (src/cpu/gemm_internal.h). vfmaq_laneq_f32 is
 * FMLA by element, a fused multiply-add with one rounding, so every lane
 * runs C[i][j] = fma(A[i][p], B[p][j], C[i][j]) exactly as the contract. */
#include "cpu/cpu.h"

typedef int sb_gemm_neon_unit_not_empty;

#if SB_HAVE_NEON_KERNELS
#include <arm_neon.h>
#include "cpu/gemm_internal.h"

#define MR SB_GEMM_MR_NEON
#define NR SB_GEMM_NR_NEON

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

#define DECL(r) float32x4_t c##r##a, c##r##b, c##r##c;
#define ZERO(r) c##r##a = vdupq_n_f32(0.0f); c##r##b = c##r##a; c##r##c = c##r##a;
#define LOAD(r) c##r##a = vld1q_f32(c + (r) * ldc); c##r##b = vld1q_f32(c + (r) * ldc + 4); \
                c##r##c = vld1q_f32(c + (r) * ldc + 8);
#define STORE(r) vst1q_f32(c + (r) * ldc, c##r##a); vst1q_f32(c + (r) * ldc + 4, c##r##b); \
                 vst1q_f32(c + (r) * ldc + 8, c##r##c);
/* Row r's A value is lane r % 4 of a0 (rows 0-3) or a1 (rows 4-7). */
#define FMA_ROW(r, av, lane) c##r##a = vfmaq_laneq_f32(c##r##a, b0, av, lane); \
                             c##r##b = vfmaq_laneq_f32(c##r##b, b1, av, lane); \
                             c##r##c = vfmaq_laneq_f32(c##r##c, b2, av, lane);

void sb_gemm_ukernel_neon(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                          bool load_c) {
    ROWS(DECL)
    if (load_c) {
        ROWS(LOAD)
    } else {
        ROWS(ZERO)
    }
    for (int64_t p = 0; p < kc; p++) {
        float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
        float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
        FMA_ROW(0, a0, 0) FMA_ROW(1, a0, 1) FMA_ROW(2, a0, 2) FMA_ROW(3, a0, 3)
        FMA_ROW(4, a1, 0) FMA_ROW(5, a1, 1) FMA_ROW(6, a1, 2) FMA_ROW(7, a1, 3)
        a += MR;
        b += NR;
    }
    ROWS(STORE)
}
#endif
