/* src/cuda/program_conv.cu - the CONV program (src/gpu/kernel_list.h) for
 * CUDA: conv.cl (conv2d's input gradient, max and average pooling over the
 * windows of src/ref/pool_geometry.h) and pad.cl over
 * src/ref/pad_geometry.h; the very text the OpenCL backend builds
 * (src/cuda/program.cuh). */
#include "cuda/program.cuh"
#include "ref/pool_geometry.h" /* host and device functions under nvcc */
extern "C" {
#include "samebits/conv.h"
}

namespace sb_cuda_CONV_BASE {
#include "gpu/kernels/sum_acc.cl"
#include "gpu/kernels/conv.cl"
/* The index map is the reference's own text (plain C static inline
 * functions): here device functions. */
#pragma push_macro("static")
#define static static __device__
#include "ref/pad_geometry.h"
#pragma pop_macro("static")
#include "gpu/kernels/pad.cl"
} // namespace sb_cuda_CONV_BASE

#define SB_CUDA_IN_CONV(...) __VA_ARGS__
#include "cuda/program_others.cuh"
SB_CUDA_PROGRAM_TABLE(sb_cuda_program_conv)
