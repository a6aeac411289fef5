/* src/cuda/backend.cu - the CUDA device behind the backend table
 * (src/backend/backend.h): memory through the context's caching allocator,
 * and the op table of the GPU host layer (src/gpu/ops.c, sb_gpu_ops), the
 * same entries OpenCL runs, launched through src/cuda/launcher.cu over the
 * kernels of src/gpu/kernels compiled by nvcc. Families without a GPU
 * kernel stay NULL there, so the tensor-level ops report
 * SB_ERR_UNSUPPORTED naming the op and the device (docs/GPU.md).
 * Validation is src/ops's: entries get validated arguments. */
#include "cuda/common.cuh"
extern "C" {
#include "gpu/gpu_host.h"
}

namespace {

sb_cuda_context *ctx_of(const sb_backend *be) { return (sb_cuda_context *)be->ctx; }

sb_backend cuda_backend;

} // namespace

extern "C" {

/* ---- memory ---- */

static sb_status cuda_alloc(const sb_backend *be, size_t bytes, void **out) {
    void *p = NULL;
    SB_TRY(sb_cuda_malloc(ctx_of(be), bytes ? bytes : 1, &p));
    sb_status st = sb_cuda_memset0(ctx_of(be), p, bytes);
    if (st != SB_OK) { sb_cuda_free(ctx_of(be), p); return st; }
    *out = p;
    return SB_OK;
}

static void cuda_release(const sb_backend *be, void *p) { (void)sb_cuda_free(ctx_of(be), p); }

static sb_status cuda_upload(const sb_backend *be, void *dst, const void *src, size_t bytes) {
    return sb_cuda_memcpy_h2d(ctx_of(be), dst, src, bytes);
}

static sb_status cuda_download(const sb_backend *be, void *dst, const void *src, size_t bytes) {
    return sb_cuda_memcpy_d2h(ctx_of(be), dst, src, bytes);
}

static sb_status cuda_synchronize(const sb_backend *be) { return sb_cuda_synchronize(ctx_of(be)); }

sb_status sb_cuda_register(sb_cuda_context *ctx) {
    const char *fn = "sb_cuda_register";
    SB_TRY(sb_cuda_enter(fn, ctx));
    if (cuda_backend.ctx == ctx && sb_device_available(SB_DEVICE_CUDA)) return SB_OK;
    cuda_backend.name = "cuda";
    cuda_backend.device = SB_DEVICE_CUDA;
    cuda_backend.host_addressable = false;
    cuda_backend.ctx = ctx;
    cuda_backend.alloc = cuda_alloc;
    cuda_backend.release = cuda_release;
    cuda_backend.upload = cuda_upload;
    cuda_backend.download = cuda_download;
    cuda_backend.copy = sb_gpu_copy;
    cuda_backend.fill = sb_gpu_fill;
    cuda_backend.synchronize = cuda_synchronize;
    cuda_backend.ops = &sb_gpu_ops;
    cuda_backend.launcher = &sb_cuda_launcher;
    sb_backend_register(SB_DEVICE_CUDA, &cuda_backend);
    return SB_OK;
}

void sb_cuda_unregister(void) {
    sb_backend_register(SB_DEVICE_CUDA, NULL);
    cuda_backend.ctx = NULL;
}

void sb_cuda_backend_forget(sb_cuda_context *ctx) {
    if (ctx && cuda_backend.ctx == ctx) sb_cuda_unregister();
}

} // extern "C"
