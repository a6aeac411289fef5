/* src/gpu/kernels/math_prelude.cl - what the correctly rounded functions of
 * src/math need from C, for OpenCL C (the CUDA backend compiles src/math
 * through src/cuda/device_math.cuh instead). The OpenCL program of the
 * math family is: dialect.h, this file, src/math/math_internal.h (with
 * math_tables.h inlined) and the .c files of src/math (their #include lines
 * removed at build time, scripts/embed_text.sh), pointwise.cl, math.cl: the
 * very source of the CPU library's functions, never a second copy. They
 * compute in binary64: devices without cl_khr_fp64 are refused. */
#ifndef __OPENCL_VERSION__
#error "math_prelude.cl is OpenCL C only"
#endif
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

typedef uchar uint8_t;
typedef uint uint32_t;
typedef int int32_t;
typedef ulong uint64_t;
typedef long int64_t;
#define SB_OPENCL_INT64_T /* src/ref's shared headers then define no second one */

/* Bit casts through memcpy (src/math's portable idiom) on private memory. */
static inline void sb_math_copy_bytes(void *dst, const void *src, int n) {
    char *d = (char *)dst;
    const char *s = (const char *)src;
    for (int i = 0; i < n; i++) d[i] = s[i];
}
#define memcpy(dst, src, n) sb_math_copy_bytes((void *)(dst), (const void *)(src), (int)(n))

/* A kernel runs in the device's one environment: round to nearest, and
 * subnormals kept (checked at device selection). */
#define SB_FPENV_GUARD() ((void)0)
