/* src/gpu/gpu_host.h - the GPU host layer: what every GPU backend shares
 * (docs/GPU.md, docs/ARCHITECTURE.md). The op table sb_gpu_ops
 * (src/gpu/ops.c) is written once for all of them: each entry resolves its
 * device operands, packs the geometry its kernel reads, builds the kernel's
 * argument list and names the kernel of src/gpu/kernels that computes the
 * reference's bits (src/gpu/kernel_list.h). A backend supplies only a
 * launcher, reached through its sb_backend (the `launcher` field):
 *   - resolve: a device pointer (any address inside one of its
 *     allocations) as (buffer, element offset), refusing memory that is not
 *     its own with a message;
 *   - launch: kernel k over a grid, with its argument list and, when the
 *     kernel has a geometry parameter, a device copy of a small host array.
 * Temporaries are the backend's own alloc/release. OpenCL implements the
 * launcher over its program cache (src/opencl/launcher.c), CUDA over the
 * same kernel text compiled by nvcc (src/cuda/launcher.cu). Not installed;
 * plain C that C++ may include. */
#ifndef SB_GPU_HOST_H
#define SB_GPU_HOST_H

#include <stddef.h>
#include <stdint.h>
#include "backend/backend.h"
#include "gpu/kernel_list.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A device operand: a buffer (OpenCL: a cl_mem; CUDA: the device pointer)
 * and an offset into it in elements of the kernel's type (CUDA: 0). */
typedef struct sb_gpu_ptr {
    void *buf;
    int64_t off;
} sb_gpu_ptr;

/* One kernel argument: its size and where its value is. */
typedef struct sb_gpu_arg {
    size_t size;
    const void *value;
} sb_gpu_arg;
#define SB_GPU_ARG(v) ((sb_gpu_arg){sizeof(v), &(v)})

/* The programs: sets of kernel files compiled together. */
typedef enum sb_gpu_program {
    SB_GPU_PROGRAM_POINTWISE = 0, /* pointwise.cl, index.cl, cumulative.cl */
    SB_GPU_PROGRAM_SUM,           /* sum_acc.cl + sum.cl */
    SB_GPU_PROGRAM_GEMM,          /* gemm.cl */
    SB_GPU_PROGRAM_CONV,          /* conv.cl, pad.cl */
    SB_GPU_PROGRAM_MATH,          /* src/math, math.cl, softmax.cl, loss.cl, attention.cl */
    SB_GPU_PROGRAM_RNG,           /* src/rng/philox.c, dropout.cl */
    SB_GPU_PROGRAM_NORM,          /* norm.cl, prelu.cl */
    SB_GPU_PROGRAM_RESAMPLE,      /* src/ref/grid_geometry.h, resample.cl */
    SB_GPU_PROGRAMS
} sb_gpu_program;

/* How a kernel's work-items cover its work of x (by y by z) units. */
typedef enum sb_gpu_grid {
    SB_GPU_GRID_STRIDE,  /* 1-D, groups of 64, at most 2^16 work-items looping over x units */
    SB_GPU_GRID_LANES32, /* one group of 32 per unit: work-item l is the contract's lane l */
    SB_GPU_GRID_TILES64, /* x columns, y rows, z products: a group of 256 per 64x64 tile */
} sb_gpu_grid;

/* A kernel as the host launches it (one row of kernel_list.h). */
typedef struct sb_gpu_kernel {
    sb_gpu_kernel_id id;
    sb_gpu_program program;
    const char *name;
    const char *options; /* its variant's macros as OpenCL build options */
    int nargs;
    int geom_slot;       /* the parameter that receives the geometry buffer, or -1 */
    sb_gpu_grid grid;
} sb_gpu_kernel;

/* Every kernel, indexed by sb_gpu_kernel_id (src/gpu/ops.c). */
extern const sb_gpu_kernel sb_gpu_kernels[SB_GPU_KERNELS];

/* A launch's shape: `dims` dimensions of global[d] work-items in groups of
 * local[d] (global a multiple of local). */
typedef struct sb_gpu_range {
    unsigned dims;
    size_t global[3], local[3];
} sb_gpu_range;

struct sb_gpu_launcher {
    /* p lies in live device memory of this backend with `bytes` from it in
     * the same allocation, aligned to elem (the offset's unit); NULL with
     * bytes == 0 gives a null operand. Anything else is refused
     * (SB_ERR_INTERNAL, naming fn and what). */
    sb_status (*resolve)(const sb_backend *be, const char *fn, const char *what, const void *p,
                         size_t bytes, size_t elem, sb_gpu_ptr *out);
    /* Queues kernel k. When k->geom_slot >= 0, args[k->geom_slot] is the
     * launcher's to fill: a read-only device copy of geom (geom_bytes), or
     * a null buffer when geom is NULL, released once the kernel ran. */
    sb_status (*launch)(const sb_backend *be, const char *fn, const sb_gpu_kernel *k,
                        const void *geom, size_t geom_bytes, int nargs, sb_gpu_arg *args,
                        const sb_gpu_range *range);
};

/* The op table of every GPU backend. Entries without a kernel stay NULL
 * (docs/GPU.md). */
extern const sb_backend_ops sb_gpu_ops;
/* The backend table's copy and fill for a GPU backend: strided kernels
 * (pointwise.cl), an overlapping copy through a dense temporary. */
sb_status sb_gpu_copy(const sb_backend *be, const sb_tensor *src, sb_tensor *dst);
sb_status sb_gpu_fill(const sb_backend *be, sb_tensor *t, float value);

/* For the host layer's files (src/gpu/ops*.c): a dense operand of n
 * elements of elem bytes (a null operand when n is 0), and a launch of
 * kernel k over n units (geom as in sb_gpu_launcher.launch). */
sb_status sb_gpu_dense(const sb_backend *be, const char *fn, const char *what, const void *p,
                       int64_t n, size_t elem, sb_gpu_ptr *out);
sb_status sb_gpu_launch(const sb_backend *be, const char *fn, const sb_gpu_kernel *k,
                        const void *geom, size_t geom_bytes, int nargs, sb_gpu_arg *args,
                        int64_t n);

/* sort.cl's merge sort: `columns` columns of n (key, position) pairs,
 * column c at elements [c * n, (c + 1) * n) of keys[0] (uint32 keys) and
 * pos[0] (int64 positions), sorted by src/ref/sort_rank.h's (key,
 * position) order in log2(n) passes between buffers 0 and 1; *sorted is
 * the buffer that holds the result. Sort, topk, kthvalue, median and grid
 * sampling's reader tables use it. */
sb_status sb_gpu_merge_sort(const sb_backend *be, const char *fn, int64_t columns, int64_t n,
                           const sb_gpu_ptr keys[2], const sb_gpu_ptr pos[2], int *sorted);

/* Interpolation and grid sampling (src/gpu/ops_resample.c, resample.cl):
 * the op table's entries of those names. */
sb_status sb_gpu_interpolate_forward(const sb_backend *be, const sb_interp_geom *g,
                                     const float *x, float *y);
sb_status sb_gpu_interpolate_backward(const sb_backend *be, const sb_interp_geom *g,
                                      const float *dy, float *dx);
sb_status sb_gpu_grid_sample_forward(const sb_backend *be, const sb_grid_geom *g, const float *x,
                                     const float *grid, float *y);
sb_status sb_gpu_grid_sample_backward(const sb_backend *be, const sb_grid_geom *g,
                                      const float *x, const float *grid, const float *dy,
                                      float *dx, float *dgrid);

/* The functions sb_gpu_math_eval computes, X(index, name) with the host
 * function sb_<name> (include/samebits/math.h): math.cl's sb_math_eval
 * switch, test_opencl and tools/verify_opencl_math.c all follow it. */
#define SB_GPU_MATH_EVAL_FUNCTIONS(X)                                                             \
    X(0, expf) X(1, logf) X(2, expm1f) X(3, log1pf) X(4, tanhf) X(5, erff) X(6, exp2f)            \
    X(7, log2f) X(8, sinf) X(9, cosf)

/* Test hook: y[i] = f(x[i]) on be's device, f an index of
 * SB_GPU_MATH_EVAL_FUNCTIONS (x, y: n floats of device memory). */
sb_status sb_gpu_math_eval(const sb_backend *be, int f, const float *x, float *y, int64_t n);

#ifdef __cplusplus
}
#endif

#endif
