/* src/cuda/program_rng.cu - the RNG program (src/gpu/kernel_list.h) for
 * CUDA: src/rng/philox.c itself (the CPU's generator, never a second copy)
 * and dropout.cl; the very text the OpenCL backend builds
 * (src/cuda/program.cuh). */
#include "cuda/program.cuh"
extern "C" {
#include "samebits/random.h"
}
/* A kernel runs in the device's one environment (round to nearest,
 * subnormals kept: -ftz=false): core/fpenv.h's host guard is not read. */
#define SAMEBITS_FPENV_H
#define SB_FPENV_GUARD() do { } while (0) /* no `void`: see below */

namespace sb_cuda_RNG_BASE {
/* philox.c's two functions become device functions of this namespace:
 * renamed (the host library's are declared by samebits/random.h), and
 * `void`, which only their definitions spell in that file, carries
 * __device__ while it is read. */
#define sb_philox4x32_10 sb_dev_philox4x32_10
#define sb_rng_block sb_dev_rng_block
#pragma push_macro("void")
#define void __device__ void
#include "rng/philox.c"
#pragma pop_macro("void")
#include "gpu/kernels/dropout.cl"
#undef sb_philox4x32_10
#undef sb_rng_block
} // namespace sb_cuda_RNG_BASE

#define SB_CUDA_IN_RNG(...) __VA_ARGS__
#include "cuda/program_others.cuh"
SB_CUDA_PROGRAM_TABLE(sb_cuda_program_rng)
