/* src/cuda/program_others.cuh - included by a program file (src/cuda/
 * program_*.cu) after it defined SB_CUDA_IN_<its program>: the rows of the
 * other programs expand to nothing there. No include guard: each program
 * file includes it once. */
#ifndef SB_CUDA_IN_POINTWISE
#define SB_CUDA_IN_POINTWISE(...)
#endif
#ifndef SB_CUDA_IN_SUM
#define SB_CUDA_IN_SUM(...)
#endif
#ifndef SB_CUDA_IN_GEMM
#define SB_CUDA_IN_GEMM(...)
#endif
#ifndef SB_CUDA_IN_CONV
#define SB_CUDA_IN_CONV(...)
#endif
#ifndef SB_CUDA_IN_MATH
#define SB_CUDA_IN_MATH(...)
#endif
#ifndef SB_CUDA_IN_RNG
#define SB_CUDA_IN_RNG(...)
#endif
#ifndef SB_CUDA_IN_NORM
#define SB_CUDA_IN_NORM(...)
#endif
#ifndef SB_CUDA_IN_RESAMPLE
#define SB_CUDA_IN_RESAMPLE(...)
#endif
