/* samebits/tensor.h - tensors: a typed, shaped, strided view of memory.
 *
 * A tensor has a dtype, a device, up to SB_MAX_DIMS dimensions with shapes
 * and strides (counted in elements, not bytes), and a data pointer. Where
 * its memory comes from decides how it is released:
 *   - sb_tensor_new:      heap memory owned by the tensor; sb_tensor_free
 *                         releases both.
 *   - sb_tensor_new_in:   memory from an arena; released all at once by
 *                         sb_arena_reset / sb_arena_free (a training step's
 *                         activations live here).
 *   - sb_tensor_new_on:   memory of a device, owned by the tensor;
 *                         sb_tensor_free releases it through the device's
 *                         backend.
 *   - sb_tensor_wrap:     the caller's memory (zero-copy, e.g. a NumPy or
 *                         PyTorch buffer); sb_tensor_free releases only the
 *                         tensor header.
 * New tensors are contiguous (row-major) and zero-filled.
 */
#ifndef SAMEBITS_TENSOR_H
#define SAMEBITS_TENSOR_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "samebits/export.h"
#include "samebits/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SB_MAX_DIMS 8

typedef enum sb_dtype { SB_F32 = 0, SB_I32 = 1, SB_I64 = 2 } sb_dtype;

/* Where a tensor's memory lives. Every op takes tensors of one device and
 * runs there; a call mixing devices fails with SB_ERR_DEVICE. MIRROR is a
 * test device: the CPU's kernels over memory of its own, treated by the
 * library like a discrete device (docs/ARCHITECTURE.md, "Devices"). OPENCL
 * is the OpenCL device picked by the environment variable SB_DEVICE=opencl:N
 * (default 0) when the library is built with OpenCL (docs/GPU.md). The
 * values are stable. */
typedef enum sb_device {
    SB_DEVICE_CPU = 0,
    SB_DEVICE_CUDA = 1,
    SB_DEVICE_MIRROR = 2,
    SB_DEVICE_OPENCL = 3
} sb_device;

typedef struct sb_arena sb_arena;

typedef struct sb_tensor {
    sb_dtype dtype;
    sb_device device;
    int ndim;                        /* 0 means a scalar with one element */
    int64_t shape[SB_MAX_DIMS];
    int64_t strides[SB_MAX_DIMS];    /* in elements; 0 allowed (broadcast) */
    void *data;                      /* first element */
    unsigned owner;                  /* internal: who frees data/header */
} sb_tensor;

/* Size in bytes of one element of dtype (0 for an invalid dtype). */
SB_API size_t sb_dtype_size(sb_dtype dtype);
SB_API const char *sb_dtype_name(sb_dtype dtype);

/* Creation. shape may be NULL when ndim == 0. On failure *out is NULL. */
SB_API sb_status sb_tensor_new(sb_tensor **out, sb_dtype dtype, int ndim, const int64_t *shape);
SB_API sb_status sb_tensor_new_in(sb_tensor **out, sb_arena *arena, sb_dtype dtype, int ndim,
                           const int64_t *shape);
/* strides may be NULL for a contiguous view. */
SB_API sb_status sb_tensor_wrap(sb_tensor **out, void *data, sb_dtype dtype, int ndim,
                         const int64_t *shape, const int64_t *strides);
/* A contiguous, zero-filled tensor on `device` (SB_DEVICE_CPU: sb_tensor_new).
 * Fails with SB_ERR_DEVICE when this program has no backend for it. */
SB_API sb_status sb_tensor_new_on(sb_tensor **out, sb_device device, sb_dtype dtype, int ndim,
                                  const int64_t *shape);
/* Releases the header and, for owned memory, the data through the tensor's
 * device. NULL and arena tensors are ignored. */
SB_API void sb_tensor_free(sb_tensor *t);

/* Devices. */
SB_API const char *sb_device_name(sb_device device); /* "cpu", "cuda", "mirror", "opencl" */
SB_API bool sb_device_available(sb_device device);   /* a backend serves it here */

/* Properties. sb_tensor_numel is 0 for NULL and -1 for a header that is not
 * valid (ndim outside 0..SB_MAX_DIMS, a negative shape, an invalid dtype or
 * device, or a size whose element count or strides overflow). Sizes are
 * overflow-checked everywhere: a tensor holds at most INT64_MAX / 16
 * elements, counting each zero-size dimension as 1. */
SB_API int64_t sb_tensor_numel(const sb_tensor *t);
SB_API bool sb_tensor_is_contiguous(const sb_tensor *t);
SB_API float *sb_tensor_f32(const sb_tensor *t); /* data as float*, NULL if not F32 */

/* Views share memory with src: reshape needs a contiguous src; one shape
 * entry may be -1 (inferred). flatten merges dims [start, end] (negative
 * values count from the end, like PyTorch). */
SB_API sb_status sb_tensor_reshape(sb_tensor **out, const sb_tensor *src, int ndim, const int64_t *shape);
SB_API sb_status sb_tensor_flatten(sb_tensor **out, const sb_tensor *src, int start_dim, int end_dim);
SB_API sb_status sb_tensor_transpose(sb_tensor **out, const sb_tensor *src, int dim0, int dim1);

/* Copies between tensors of equal shape and dtype, any strides, on any two
 * devices (a copy across devices goes through host memory). */
SB_API sb_status sb_tensor_copy(sb_tensor *dst, const sb_tensor *src);
/* A new contiguous copy of src on `device`. */
SB_API sb_status sb_tensor_to(sb_tensor **out, const sb_tensor *src, sb_device device);
SB_API sb_status sb_tensor_fill(sb_tensor *t, float value); /* F32 only, any device */

/* Arenas: bump allocation, 64-byte aligned, reset in O(1). An arena grows by
 * chaining new chunks when full, so callers need not size it exactly. */
SB_API sb_status sb_arena_new(sb_arena **out, size_t chunk_bytes);
SB_API void sb_arena_reset(sb_arena *arena);
SB_API void sb_arena_free(sb_arena *arena);
SB_API size_t sb_arena_used(const sb_arena *arena);
SB_API void *sb_arena_alloc(sb_arena *arena, size_t bytes); /* NULL + error on failure */

#ifdef __cplusplus
}
#endif
#endif
