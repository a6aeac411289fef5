/* src/cuda/cuda_internal.h - what the CUDA backend's translation units and
 * its tests share beyond include/samebits/cuda.h. The op table is the GPU
 * host layer's (src/gpu/ops.c), run through this backend's launcher
 * (src/cuda/launcher.cu) over the kernels of src/gpu/kernels compiled by
 * nvcc (src/cuda/program_*.cu). Not installed. */
#ifndef SB_CUDA_INTERNAL_H
#define SB_CUDA_INTERNAL_H

#include <stddef.h>
#include "samebits/cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

struct sb_gpu_launcher;
/* The launcher of the GPU host layer (src/cuda/launcher.cu). */
extern const struct sb_gpu_launcher sb_cuda_launcher;

/* The kernels of src/gpu/kernel_list.h without a CUDA compilation of the
 * listed parameter count: their count, their names (space-separated,
 * truncated to `size`) in `missing`. 0 in a correct build (the build
 * itself checks each program's rows); needs no GPU. */
int sb_cuda_kernel_table_check(char *missing, size_t size);

/* Unregisters the CUDA backend when ctx is the context serving it (called
 * by sb_cuda_context_free). */
void sb_cuda_backend_forget(sb_cuda_context *ctx);

#ifdef __cplusplus
}
#endif

#endif
