/* src/cuda/device_math.cuh - samebits' correctly rounded functions as CUDA
 * device functions, compiled from the very source files of the CPU library
 * (the .c files of src/math and math_internal.h), never from a second implementation.
 *
 * The math sources are plain C: math_internal.h marks its kernels
 * __host__ __device__ and its tables __device__ under nvcc, and the public
 * bodies (sb_expf ...) are ordinary host functions guarded by
 * SB_FPENV_GUARD. This header turns them into device functions without
 * touching src/math:
 *   - __host__ is blanked while math_internal.h and the .c files are read
 *     (powf.c marks its helpers SB_MATH_FN too), so their kernels are
 *     device-only (the host side uses the CPU library's compiled copy; a
 *     host instance here would read the __device__ tables from host code);
 *   - SB_FPENV_GUARD is empty (the device has no caller FP environment: it
 *     always rounds to nearest and, with -ftz=false, keeps subnormals);
 *   - each public name is renamed to sb_dev_<name> and made static
 *     __device__ (through the `static` macro below: one copy per TU),
 *     and file-scope `static` helpers (erff.c, tanhf.c) become
 *     `static __device__`.
 * Include this header from exactly one translation unit per device link
 * unit (functions are static, so several are harmless, only larger). */
#ifndef SB_CUDA_DEVICE_MATH_CUH
#define SB_CUDA_DEVICE_MATH_CUH

#ifndef __CUDACC__
#error "device_math.cuh is CUDA-only"
#endif

/* fpenv.h would declare host functions the device cannot call. */
#define SAMEBITS_FPENV_H
#define SB_FPENV_GUARD() ((void)0)

#pragma push_macro("__host__")
#undef __host__
#define __host__
#include "math/math_internal.h"

#pragma push_macro("static")
#define static static __device__
#define sb_expf static sb_dev_expf
#define sb_expm1f static sb_dev_expm1f
#define sb_logf static sb_dev_logf
#define sb_log1pf static sb_dev_log1pf
#define sb_tanhf static sb_dev_tanhf
#define sb_erff static sb_dev_erff
#define sb_exp2f static sb_dev_exp2f
#define sb_log2f static sb_dev_log2f
#define sb_sinf static sb_dev_sinf
#define sb_cosf static sb_dev_cosf
#define sb_powf static sb_dev_powf
#include "math/expf.c"
#include "math/expm1f.c"
#include "math/logf.c"
#include "math/log1pf.c"
#include "math/tanhf.c"
#include "math/erff.c"
#include "math/exp2f.c"
#include "math/log2f.c"
#include "math/sinf.c"
#include "math/cosf.c"
#include "math/powf.c"
#undef sb_expf
#undef sb_expm1f
#undef sb_logf
#undef sb_log1pf
#undef sb_tanhf
#undef sb_erff
#undef sb_exp2f
#undef sb_log2f
#undef sb_sinf
#undef sb_cosf
#undef sb_powf
#pragma pop_macro("static")
#pragma pop_macro("__host__")

#endif
