/* src/cuda/program_sum.cu - the SUM program (src/gpu/kernel_list.h) for
 * CUDA: sum_acc.cl and sum.cl, the canonical sum (contract section 3.2),
 * max/min with their indices and the max/min backward scatter; the very
 * text the OpenCL backend builds (src/cuda/program.cuh). */
#include "cuda/program.cuh"

namespace sb_cuda_SUM_BASE {
#include "gpu/kernels/sum_acc.cl"
#include "gpu/kernels/sum.cl"
} // namespace sb_cuda_SUM_BASE

#define SB_CUDA_IN_SUM(...) __VA_ARGS__
#include "cuda/program_others.cuh"
SB_CUDA_PROGRAM_TABLE(sb_cuda_program_sum)
