/* The kernel contexts (src/cpu/kernels.h): one per ISA level, every ISA
 * choice of the fast CPU backend in one place. Each is a constant, filled
 * at compile time, so there is nothing to initialise and nothing to race
 * on; a level this build does not compile (another architecture) has
 * none. */
#include "cpu/kernels.h"
#include "cpu/conv_internal.h"
#include "cpu/exact_internal.h"
#include "cpu/fused_internal.h"
#include "cpu/gemm_internal.h"
#include "cpu/ops_internal.h"
#include "cpu/sum_internal.h"
#include "cpu/vmath.h"

static const sb_cpu_kernels scalar_kernels = {
    .isa = SB_ISA_SCALAR,
    .gemm = {SB_GEMM_MR_SCALAR, SB_GEMM_NR_SCALAR, sb_gemm_ukernel_scalar, 0, NULL, NULL, NULL},
    .sum_rows = sb_sum_rows_scalar,
    .pointwise = &sb_pwv_scalar,
    .vmath = &sb_vmath_scalar,
    .fused = &sb_fused_scalar,
    .exact = &sb_exact_scalar,
    .dw_taps = sb_dw_taps_scalar,
    .dw_wgrad = sb_dw_wgrad_scalar,
    .dw_interleave = sb_dw_interleave_scalar,
    .dw_deinterleave = sb_dw_deinterleave_scalar,
    .dw_lanes_fwd = sb_dw_lanes_fwd_scalar,
    .dw_lanes_dx = sb_dw_lanes_dx_scalar,
    .dw_lanes = 1,
};

#if SB_HAVE_X86_KERNELS
/* SSE2 has no fused multiply-add: its GEMM tile runs libm's fmaf, and its
 * pointwise table keeps the scalar optimizer loops. */
static const sb_cpu_kernels sse2_kernels = {
    .isa = SB_ISA_SSE2,
    .gemm = {SB_GEMM_MR_SSE2, SB_GEMM_NR_SSE2, sb_gemm_ukernel_sse2, 0, NULL, NULL, NULL},
    .sum_rows = sb_sum_rows_sse2,
    .pointwise = &sb_pwv_sse2,
    .vmath = &sb_vmath_sse2,
    .fused = &sb_fused_sse2,
    .exact = &sb_exact_sse2,
    .dw_taps = sb_dw_taps_scalar,
    .dw_wgrad = sb_dw_wgrad_scalar,
    .dw_interleave = sb_dw_interleave_scalar,
    .dw_deinterleave = sb_dw_deinterleave_scalar,
    .dw_lanes_fwd = sb_dw_lanes_fwd_scalar,
    .dw_lanes_dx = sb_dw_lanes_dx_scalar,
    .dw_lanes = 1,
};

static const sb_gemm_flex_kernel avx2_flex[] = {
    {6, sb_gemm_flex_avx2_6, sb_gemm_offset_avx2_6, sb_gemm_gather_avx2_6},
    {4, sb_gemm_flex_avx2_4, sb_gemm_offset_avx2_4, sb_gemm_gather_avx2_4},
};

static const sb_cpu_kernels avx2_kernels = {
    .isa = SB_ISA_AVX2,
    .gemm = {SB_GEMM_MR_AVX2, SB_GEMM_NR_AVX2, sb_gemm_ukernel_avx2,
             (int)(sizeof avx2_flex / sizeof avx2_flex[0]), avx2_flex, sb_gemv_t_avx2,
             sb_gemm_pack_bt_avx2},
    .sum_rows = sb_sum_rows_avx2,
    .sum_block = sb_sum_block_avx2,
    .sqdev_sum_block = sb_sqdev_sum_block_avx2,
    .pointwise = &sb_pwv_avx2,
    .vmath = &sb_vmath_avx2,
    .fused = &sb_fused_avx2,
    .exact = &sb_exact_avx2,
    .copy_rows = sb_copy_rows_avx2,
    .copy_rows_max = 8,
    .gather_stride2 = sb_gather_stride2_avx2,
    .max_pool_taps = sb_max_pool_taps_avx2,
    .dw_taps = sb_dw_taps_avx2,
    .dw_wgrad = sb_dw_wgrad_avx2,
    .dw_interleave = sb_dw_interleave_avx2,
    .dw_deinterleave = sb_dw_deinterleave_avx2,
    .dw_lanes_fwd = sb_dw_lanes_fwd_avx2,
    .dw_lanes_dx = sb_dw_lanes_dx_avx2,
    .dw_lanes = 8,
};

static const sb_gemm_flex_kernel avx512_flex[] = {
    {12, sb_gemm_flex_avx512_12, sb_gemm_offset_avx512_12, sb_gemm_gather_avx512_12},
    {8, sb_gemm_flex_avx512_8, sb_gemm_offset_avx512_8, sb_gemm_gather_avx512_8},
    {6, sb_gemm_flex_avx512_6, sb_gemm_offset_avx512_6, sb_gemm_gather_avx512_6},
    {4, sb_gemm_flex_avx512_4, sb_gemm_offset_avx512_4, sb_gemm_gather_avx512_4},
};

static const sb_cpu_kernels avx512_kernels = {
    .isa = SB_ISA_AVX512,
    .gemm = {SB_GEMM_MR_AVX512, SB_GEMM_NR_AVX512, sb_gemm_ukernel_avx512,
             (int)(sizeof avx512_flex / sizeof avx512_flex[0]), avx512_flex,
             sb_gemv_t_avx2 /* the AVX2 one: the same fused multiply-adds */,
             sb_gemm_pack_bt_avx2 /* the AVX2 one: a panel is 32 columns, four 8x8 blocks */},
    .sum_rows = sb_sum_rows_avx512,
    .sum_block = sb_sum_block_avx512,
    .sqdev_sum_block = sb_sqdev_sum_block_avx512,
    .pointwise = &sb_pwv_avx512,
    .vmath = &sb_vmath_avx512,
    .fused = &sb_fused_avx512,
    .exact = &sb_exact_avx512,
    .copy_rows = sb_copy_rows_avx512,
    .copy_rows_max = 16,
    .gather_stride2 = sb_gather_stride2_avx512,
    .max_pool2x2 = sb_max_pool2x2_avx512,
    .max_pool_taps = sb_max_pool_taps_avx512,
    .dw_taps = sb_dw_taps_avx512,
    .dw_wgrad = sb_dw_wgrad_avx512,
    .dw_interleave = sb_dw_interleave_avx512,
    .dw_deinterleave = sb_dw_deinterleave_avx512,
    .dw_lanes_fwd = sb_dw_lanes_fwd_avx512,
    .dw_lanes_dx = sb_dw_lanes_dx_avx512,
    .dw_lanes = 16,
};
#endif

#if SB_HAVE_NEON_KERNELS
static const sb_gemm_flex_kernel neon_flex[] = {
    {8, sb_gemm_flex_neon_8, sb_gemm_offset_neon_8, sb_gemm_gather_neon_8},
    {4, sb_gemm_flex_neon_4, sb_gemm_offset_neon_4, sb_gemm_gather_neon_4},
};

static const sb_cpu_kernels neon_kernels = {
    .isa = SB_ISA_NEON,
    .gemm = {SB_GEMM_MR_NEON, SB_GEMM_NR_NEON, sb_gemm_ukernel_neon,
             (int)(sizeof neon_flex / sizeof neon_flex[0]), neon_flex, sb_gemv_t_neon, NULL},
    .sum_rows = sb_sum_rows_neon,
    .pointwise = &sb_pwv_neon,
    .vmath = &sb_vmath_neon,
    .fused = &sb_fused_neon,
    .exact = &sb_exact_scalar, /* no NEON loops yet */
    .dw_taps = sb_dw_taps_scalar,
    .dw_wgrad = sb_dw_wgrad_scalar,
    .dw_interleave = sb_dw_interleave_scalar,
    .dw_deinterleave = sb_dw_deinterleave_scalar,
    .dw_lanes_fwd = sb_dw_lanes_fwd_scalar,
    .dw_lanes_dx = sb_dw_lanes_dx_scalar,
    .dw_lanes = 1,
};
#endif

static const sb_cpu_kernels *const by_level[SB_ISA_COUNT] = {
    [SB_ISA_SCALAR] = &scalar_kernels,
#if SB_HAVE_X86_KERNELS
    [SB_ISA_SSE2] = &sse2_kernels,
    [SB_ISA_AVX2] = &avx2_kernels,
    [SB_ISA_AVX512] = &avx512_kernels,
#endif
#if SB_HAVE_NEON_KERNELS
    [SB_ISA_NEON] = &neon_kernels,
#endif
};

const sb_cpu_kernels *sb_cpu_kernels_for(sb_isa_level level) {
    return (unsigned)level < SB_ISA_COUNT ? by_level[level] : NULL;
}

/* The context a job was submitted under, on the threads running its
 * ranges (set by the thread pool). */
static _Thread_local const sb_cpu_kernels *pinned = NULL;

const sb_cpu_kernels *sb_kernels(void) {
    const sb_cpu_kernels *k = pinned;
    /* sb_isa() only ever holds a level that is supported, hence compiled */
    return k ? k : by_level[sb_isa()];
}

const sb_cpu_kernels *sb_kernels_pin(const sb_cpu_kernels *k) {
    const sb_cpu_kernels *was = pinned;
    pinned = k;
    return was;
}
