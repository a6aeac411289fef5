/* src/cuda/program_pointwise.cu - the POINTWISE program
 * (src/gpu/kernel_list.h) for CUDA: pointwise.cl (elementwise ops,
 * activations without elementary functions, strided copy and fill, the
 * MSE loss, the optimizers), index.cl over
 * src/ref/scatter_reduce_column.h and cumulative.cl over
 * src/ref/cumulative_chain.h; the very text the OpenCL backend builds
 * (src/cuda/program.cuh). */
#include "cuda/program.cuh"
#include <math.h>
extern "C" {
#include "ref/ref_cumulative.h"
#include "samebits/index.h"
}
#include <string.h> /* sort_rank.h's bit cast */

namespace sb_cuda_POINTWISE_BASE {
#include "gpu/kernels/pointwise.cl"
/* scatter_reduce's column, the sort ranks and the cumulative chains are
 * the reference's
 * own text (plain C static inline functions): here device functions; the
 * reduction an int, as the OpenCL branch of scatter_reduce_column.h
 * declares it (C++ would not pass an int for the C header's enum). */
typedef int sb_scatter_reduce_op;
#pragma push_macro("static")
#define static static __device__
#include "ref/scatter_reduce_column.h"
#pragma pop_macro("static")
#include "gpu/kernels/index.cl"
#pragma push_macro("static")
#define static static __device__
#include "ref/sort_rank.h"
#pragma pop_macro("static")
#include "gpu/kernels/sort.cl"
#pragma push_macro("static")
#define static static __device__
#include "ref/cumulative_chain.h"
#pragma pop_macro("static")
#include "gpu/kernels/cumulative.cl"
} // namespace sb_cuda_POINTWISE_BASE

#define SB_CUDA_IN_POINTWISE(...) __VA_ARGS__
#include "cuda/program_others.cuh"
SB_CUDA_PROGRAM_TABLE(sb_cuda_program_pointwise)
