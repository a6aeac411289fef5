/* The SSE2 GEMM micro-kernel (src/cpu/gemm_internal.h), a 4 x 8 tile.
 *
 * SSE2 has no fused multiply-add, and mulps + addps would round twice per
 * step and change the bits. The chain therefore uses the C library's fmaf,
 * which is correctly rounded (a software fma on a CPU without the
 * instruction), one element at a time. This level is not faster per
 * multiply-add than the portable one: its value is the packing, the cache
 * blocking and the threads of src/cpu/gemm.c, which every level shares. The
 * SSE2 instructions here only move the C tile in and out. */
#include "cpu/cpu.h"

typedef int sb_gemm_sse2_unit_not_empty;

#if SB_HAVE_X86_KERNELS
#include <emmintrin.h>
#include <math.h>
#include "cpu/gemm_internal.h"

#define MR SB_GEMM_MR_SSE2
#define NR SB_GEMM_NR_SSE2

void sb_gemm_ukernel_sse2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                          bool load_c) {
    float acc[MR * NR] __attribute__((aligned(16)));
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j += 4)
            _mm_store_ps(acc + i * NR + j, load_c ? _mm_loadu_ps(c + i * ldc + j) : _mm_setzero_ps());
    for (int64_t p = 0; p < kc; p++, a += MR, b += NR)
        for (int i = 0; i < MR; i++) {
            float ai = a[i];
            for (int j = 0; j < NR; j++) acc[i * NR + j] = fmaf(ai, b[j], acc[i * NR + j]);
        }
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j += 4) _mm_storeu_ps(c + i * ldc + j, _mm_load_ps(acc + i * NR + j));
}
#endif
