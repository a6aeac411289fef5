/* src/cuda/common.cuh - shared by the CUDA backend's translation units:
 * the context layout, error helpers and launch geometry. */
#ifndef SB_CUDA_COMMON_CUH
#define SB_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <math.h>

extern "C" {
#include "core/internal.h"
}
#include "cuda/cuda_internal.h"

#define SB_CUDA_CLASSES 64

typedef struct sb_cuda_block {
    void *ptr;
    size_t size; /* its size class */
    struct sb_cuda_block *next;
} sb_cuda_block;

/* The geometry staging ring (sb_cuda_upload_geom): pinned host slots, so
 * a launch's geometry goes up with cudaMemcpyAsync on the context's stream
 * and the host does not wait; a slot is written again only once the copy
 * queued from it has run (its event). */
#define SB_CUDA_STAGE_SLOTS 64
#define SB_CUDA_STAGE_BYTES 4096

typedef struct sb_cuda_staging {
    char *host;                                 /* SLOTS * BYTES pinned bytes, or NULL */
    cudaEvent_t done[SB_CUDA_STAGE_SLOTS];      /* recorded after each slot's copy */
    bool pending[SB_CUDA_STAGE_SLOTS];          /* an event was recorded for the slot */
    unsigned next;
    bool failed;                                /* pinned memory unavailable: copies wait */
} sb_cuda_staging;

struct sb_cuda_context {
    int device;
    cudaStream_t stream;
    sb_cuda_block *free_list[SB_CUDA_CLASSES]; /* cached blocks per class */
    sb_cuda_block *live;                       /* handed-out blocks */
    size_t in_use, cached;
    sb_cuda_staging stage;                     /* made on the first upload */
};

/* Turns a CUDA error into an sb_status naming the caller. */
sb_status sb_cuda_error(const char *fn, const char *what, cudaError_t err);
/* The checks every entry point starts with: ctx not NULL, device current. */
sb_status sb_cuda_enter(const char *fn, sb_cuda_context *ctx);
/* After a launch: reports a launch configuration error. */
sb_status sb_cuda_launched(const char *fn);
/* A device copy of `count` int64 geometry values for a single-source
 * kernel (src/gpu/kernels); release with sb_cuda_free after the launch.
 * Up to SB_CUDA_STAGE_BYTES it goes through the staging ring (asynchronous
 * on the context's stream); larger geometry is copied and waited for. */
sb_status sb_cuda_upload_geom(sb_cuda_context *ctx, const int64_t *host, size_t count,
                              int64_t **out);

#define SB_CUDA_TRY(fn, what, call)                                             \
    do {                                                                       \
        cudaError_t sb_cuda_e_ = (call);                                       \
        if (sb_cuda_e_ != cudaSuccess) return sb_cuda_error(fn, what, sb_cuda_e_); \
    } while (0)

static inline unsigned sb_cuda_blocks(int64_t n, int threads) {
    int64_t b = (n + threads - 1) / threads;
    if (b > 65535 * 16) b = 65535 * 16; /* kernels use grid-stride loops */
    return (unsigned)(b < 1 ? 1 : b);
}

#define SB_GRID_STRIDE(i, n)                                                   \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);  \
         i += (int64_t)gridDim.x * blockDim.x)

#endif
