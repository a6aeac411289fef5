/* src/gpu/kernels/dialect.h - the portable kernel dialect: the few words in
 * which every GPU kernel of samebits is written once, so that the same text
 * is compiled by nvcc (the CUDA backend includes the kernel files) and, at
 * run time, by any OpenCL C 1.2 compiler (the OpenCL backend prepends this
 * header to the embedded kernel text).
 *
 * Rules for kernel text (docs/GPU.md):
 *   - C only: no templates, lambdas or references; variants are built with
 *     -D options (OpenCL) or by defining the same macros before including
 *     the file again (CUDA).
 *   - Every fused multiply-add is written SB_FMA; a*b+c written plainly is
 *     two roundings (OpenCL: FP_CONTRACT OFF below; CUDA: --fmad=false).
 *   - Division and sqrt are correctly rounded (OpenCL:
 *     -cl-fp32-correctly-rounded-divide-sqrt; CUDA: -prec-div/-prec-sqrt).
 *   - Device memory is a base pointer plus an element offset (an OpenCL
 *     buffer cannot be offset on the host); a CUDA caller passes 0.
 *   - Integers that index memory are SB_LONG. */
#ifndef SB_GPU_DIALECT_H
#define SB_GPU_DIALECT_H

#if defined(__OPENCL_C_VERSION__) || defined(__OPENCL_VERSION__)
/* ---- OpenCL C ---- */
#pragma OPENCL FP_CONTRACT OFF
#define SB_KERNEL __kernel void
#define SB_GLOBAL __global
#define SB_LOCAL_ARRAY(type, name, size) __local type name[size]
#define SB_LOCAL_PTR __local
#define SB_CONSTANT_ARG __global const
#define SB_RESTRICT restrict
#define SB_INLINE static inline
#define SB_BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#define SB_GLOBAL_ID() ((SB_LONG)get_global_id(0))
#define SB_GLOBAL_SIZE() ((SB_LONG)get_global_size(0))
#define SB_LOCAL_ID() ((int)get_local_id(0))
#define SB_LOCAL_SIZE() ((int)get_local_size(0))
#define SB_GROUP_ID(d) ((SB_LONG)get_group_id(d))
#define SB_FMA(a, b, c) fma((float)(a), (float)(b), (float)(c))
#define SB_SQRT(x) sqrt((float)(x))
typedef long SB_LONG;
typedef uint SB_U32;
typedef ulong SB_U64;
#define SB_AS_U32(x) as_uint(x)
#define SB_AS_F32(x) as_float(x)

#elif defined(__CUDACC__)
/* ---- CUDA ---- */
#define SB_KERNEL __global__ void
#define SB_GLOBAL
#define SB_LOCAL_ARRAY(type, name, size) __shared__ type name[size]
#define SB_LOCAL_PTR
#define SB_CONSTANT_ARG const
#define SB_RESTRICT __restrict__
#define SB_INLINE static __device__ __forceinline__
#define SB_BARRIER() __syncthreads()
#define SB_GLOBAL_ID() ((SB_LONG)blockIdx.x * blockDim.x + threadIdx.x)
#define SB_GLOBAL_SIZE() ((SB_LONG)gridDim.x * blockDim.x)
#define SB_LOCAL_ID() ((int)threadIdx.x)
#define SB_LOCAL_SIZE() ((int)blockDim.x)
#define SB_GROUP_ID(d) ((SB_LONG)((d) == 0 ? blockIdx.x : (d) == 1 ? blockIdx.y : blockIdx.z))
#define SB_FMA(a, b, c) __fmaf_rn((a), (b), (c))
#define SB_SQRT(x) __fsqrt_rn(x)
#include <stdint.h>
typedef int64_t SB_LONG;
typedef uint32_t SB_U32;
typedef uint64_t SB_U64;
#define SB_AS_U32(x) __float_as_uint(x)
#define SB_AS_F32(x) __uint_as_float(x)

#else
#error "src/gpu/kernels/dialect.h: compile kernel text as OpenCL C or CUDA"
#endif

/* Shared by every family: NaN without a library call (x != x holds only for
 * NaN), and the sign bit as an integer. */
#define SB_ISNAN(x) ((x) != (x))
#define SB_SIGNBIT(x) ((SB_AS_U32(x) >> 31) != 0u)

/* Grid-stride loop over [0, n): any launch size covers any n. */
#define SB_FOR_EACH(i, n) for (SB_LONG i = SB_GLOBAL_ID(); i < (n); i += SB_GLOBAL_SIZE())

#endif
