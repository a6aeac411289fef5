/* src/cuda/program_resample.cu - the RESAMPLE program
 * (src/gpu/kernel_list.h) for CUDA: resample.cl (interpolation and grid
 * sampling over the reference's tap and reader tables) after
 * src/ref/grid_geometry.h; the very text the OpenCL backend builds
 * (src/cuda/program.cuh). */
#include "cuda/program.cuh"
extern "C" {
#include "samebits/conv.h"
}

namespace sb_cuda_RESAMPLE_BASE {
#include "gpu/kernels/sum_acc.cl"
/* The mode and padding as grid_geometry.h's OpenCL branch declares them:
 * ints (the kernels read them from the geometry as such; C++ would not
 * pass an int for the C header's enums). They hide the enums in this
 * namespace only. */
typedef int sb_grid_mode;
typedef int sb_grid_padding;
/* The source coordinates and corners are the reference's own text (plain
 * C static inline functions): here device functions. */
#pragma push_macro("static")
#define static static __device__
#include "ref/grid_geometry.h"
#pragma pop_macro("static")
#include "gpu/kernels/resample.cl"
} // namespace sb_cuda_RESAMPLE_BASE

#define SB_CUDA_IN_RESAMPLE(...) __VA_ARGS__
#include "cuda/program_others.cuh"
SB_CUDA_PROGRAM_TABLE(sb_cuda_program_resample)
