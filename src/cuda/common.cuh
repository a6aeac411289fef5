/* src/cuda/common.cuh - shared by the CUDA backend's translation units:
 * the context layout, error helpers, launch geometry, and the device form
 * of the canonical sum (contract section 3.2). */
#ifndef SB_CUDA_COMMON_CUH
#define SB_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <math.h>

extern "C" {
#include "core/internal.h"
#include "core/canonical_sum.h"
}
#include "cuda/cuda_internal.h"

#define SB_CUDA_CLASSES 64

typedef struct sb_cuda_block {
    void *ptr;
    size_t size; /* its size class */
    struct sb_cuda_block *next;
} sb_cuda_block;

struct sb_cuda_context {
    int device;
    cudaStream_t stream;
    sb_cuda_block *free_list[SB_CUDA_CLASSES]; /* cached blocks per class */
    sb_cuda_block *live;                       /* handed-out blocks */
    size_t in_use, cached;
};

/* Turns a CUDA error into an sb_status naming the caller. */
sb_status sb_cuda_error(const char *fn, const char *what, cudaError_t err);
/* The checks every entry point starts with: ctx not NULL, device current. */
sb_status sb_cuda_enter(const char *fn, sb_cuda_context *ctx);
/* After a launch: reports a launch configuration error. */
sb_status sb_cuda_launched(const char *fn);
/* A device copy of `count` int64 geometry values for a single-source
 * kernel (src/gpu/kernels); release with sb_cuda_free after the launch. */
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

/* ---- canonical sum on a warp ----------------------------------------------
 * All 32 lanes call it with the same n; lane l plays the contract's lane l.
 * Within a block of 8192 elements lane l adds elements l, l+32, ... in
 * increasing order, then the lanes fold by lane[j] + lane[j+s] for
 * s = 16 .. 1 (shfl_down gives lane j the value of lane j+s, and the left
 * operand stays lane j's). Block sums stream into the next level exactly as
 * src/core/canonical_sum.c pushes them. Returns the sum in every lane. */

__device__ __forceinline__ float sb_warp_tree32(float v) {
    for (int s = 16; s >= 1; s >>= 1) v = __fadd_rn(v, __shfl_down_sync(0xffffffffu, v, s));
    return __shfl_sync(0xffffffffu, v, 0);
}

#define SB_DEV_LEVELS 4 /* 8192^4 = 2^52 elements */

template <class Load>
__device__ float sb_warp_canonical_sum(Load load, int64_t n) {
    const int lane = threadIdx.x & 31;
    if (n <= 0) return 0.0f;
    float lv[SB_DEV_LEVELS];
    int64_t cnt[SB_DEV_LEVELS];
    for (int l = 0; l < SB_DEV_LEVELS; l++) { lv[l] = -0.0f; cnt[l] = 0; }
    for (int64_t b0 = 0; b0 < n; b0 += SB_SUM_BLOCK) {
        int64_t m = n - b0 < SB_SUM_BLOCK ? n - b0 : SB_SUM_BLOCK;
        float acc = -0.0f;
        for (int64_t i = lane; i < m; i += 32) acc = __fadd_rn(acc, load(b0 + i));
        float s = sb_warp_tree32(acc);
        if (n <= SB_SUM_BLOCK) return s;
        /* push s to level 1 (a partial last block is pushed too, as
         * sb_sum_result does with a partial level) */
        float v = s;
        for (int l = 1; l < SB_DEV_LEVELS; l++) {
            if (lane == (int)(cnt[l] % 32)) lv[l] = __fadd_rn(lv[l], v);
            cnt[l]++;
            if (cnt[l] < SB_SUM_BLOCK || l + 1 == SB_DEV_LEVELS) break;
            v = sb_warp_tree32(lv[l]);
            lv[l] = -0.0f;
            cnt[l] = 0;
        }
    }
    int top = 1;
    for (int l = 1; l < SB_DEV_LEVELS; l++)
        if (cnt[l] > 0) top = l;
    for (int l = 1; l < top; l++) {
        if (cnt[l] == 0) continue;
        float v = sb_warp_tree32(lv[l]);
        lv[l] = -0.0f;
        cnt[l] = 0;
        if (lane == (int)(cnt[l + 1] % 32)) lv[l + 1] = __fadd_rn(lv[l + 1], v);
        cnt[l + 1]++;
    }
    return sb_warp_tree32(lv[top]);
}

/* Maximum with the reference's rule (first NaN wins, else the first
 * strictly greater): as a (value, position) combine it is associative and
 * commutative, so any tree gives the sequential scan's winner. */
__device__ __forceinline__ void sb_max_combine(float &v, int64_t &i, float ov, int64_t oi) {
    bool vn = isnan(v), on = isnan(ov);
    bool take;
    if (vn || on) take = on && (!vn || oi < i);
    else take = ov > v || (ov == v && oi < i);
    if (take) { v = ov; i = oi; }
}

#endif
