/* src/cuda/program_gemm.cu - the GEMM program (src/gpu/kernel_list.h) for
 * CUDA: gemm.cl once per variant, with the variant's macros defined as the
 * OpenCL build passes them (SB_GPU_VARIANT_GEMM_*): the four transposes of
 * a matrix product, conv2d's forward (implicit im2col, the padded taps the
 * contract's +0.0f terms, SB_GEMM_MODE 1) and its weight gradient (the
 * chain over (n, r, s), mode 2). Every output runs exactly the contract's
 * chain acc = fma(a_p, b_p, acc) for p = 0, 1, ..., K-1 (__fmaf_rn: no
 * split-k, no atomics, no tensor cores); the bias is one IEEE add after the
 * chain. Each variant is a namespace of its own (its helpers are
 * file-static); gemm_variant_reset.cuh clears a variant's macros before the
 * next. */
#include "cuda/program.cuh"

#define SB_GEMM_TA 0
#define SB_GEMM_TB 0
namespace sb_cuda_GEMM_GEMM_NN {
#include "gpu/kernels/gemm.cl"
}
#include "cuda/gemm_variant_reset.cuh"
#define SB_GEMM_TA 0
#define SB_GEMM_TB 1
namespace sb_cuda_GEMM_GEMM_NT {
#include "gpu/kernels/gemm.cl"
}
#include "cuda/gemm_variant_reset.cuh"
#define SB_GEMM_TA 1
#define SB_GEMM_TB 0
namespace sb_cuda_GEMM_GEMM_TN {
#include "gpu/kernels/gemm.cl"
}
#include "cuda/gemm_variant_reset.cuh"
#define SB_GEMM_TA 1
#define SB_GEMM_TB 1
namespace sb_cuda_GEMM_GEMM_TT {
#include "gpu/kernels/gemm.cl"
}
#include "cuda/gemm_variant_reset.cuh"
#define SB_GEMM_MODE 1
namespace sb_cuda_GEMM_GEMM_CONV_FORWARD {
#include "gpu/kernels/gemm.cl"
}
#include "cuda/gemm_variant_reset.cuh"
#define SB_GEMM_MODE 2
namespace sb_cuda_GEMM_GEMM_CONV_WEIGHT {
#include "gpu/kernels/gemm.cl"
}
#include "cuda/gemm_variant_reset.cuh"

#define SB_CUDA_IN_GEMM(...) __VA_ARGS__
#include "cuda/program_others.cuh"
SB_CUDA_PROGRAM_TABLE(sb_cuda_program_gemm)
