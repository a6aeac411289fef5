/* src/cuda/program_norm.cu - the NORM program (src/gpu/kernel_list.h) for
 * CUDA: norm.cl (batch, layer, RMS and group norm) and prelu.cl over
 * src/ref/prelu_terms.h; the very text the OpenCL backend builds
 * (src/cuda/program.cuh). */
#include "cuda/program.cuh"

namespace sb_cuda_NORM_BASE {
#include "gpu/kernels/sum_acc.cl"
#include "gpu/kernels/norm.cl"
/* PReLU's rules are the reference's own text (plain C static inline
 * functions): here device functions. */
#pragma push_macro("static")
#define static static __device__
#include "ref/prelu_terms.h"
#pragma pop_macro("static")
#include "gpu/kernels/prelu.cl"
} // namespace sb_cuda_NORM_BASE

#define SB_CUDA_IN_NORM(...) __VA_ARGS__
#include "cuda/program_others.cuh"
SB_CUDA_PROGRAM_TABLE(sb_cuda_program_norm)
