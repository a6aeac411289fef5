/* src/cuda/runtime.cu - devices, contexts (one stream each), the caching
 * allocator, copies and device tensors. */
#include <stdio.h>
#include <stdlib.h>
#include "cuda/common.cuh"

sb_status sb_cuda_error(const char *fn, const char *what, cudaError_t err) {
    if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver ||
        err == cudaErrorNoKernelImageForDevice)
        return sb_fail(SB_ERR_UNSUPPORTED, "%s: no CUDA device: %s (%s)", fn,
                       cudaGetErrorString(err), what);
    if (err == cudaErrorMemoryAllocation)
        return sb_fail(SB_ERR_NOMEM, "%s: %s: out of device memory", fn, what);
    return sb_fail(SB_ERR_INTERNAL, "%s: %s failed: %s (%s)", fn, what, cudaGetErrorName(err),
                   cudaGetErrorString(err));
}

bool sb_cuda_available(const char **why) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        if (why) *why = cudaGetErrorString(e);
        (void)cudaGetLastError();
        return false;
    }
    if (count == 0) {
        if (why) *why = "the driver reports 0 devices";
        return false;
    }
    if (why) *why = "";
    return true;
}

sb_status sb_cuda_query(int device, sb_cuda_device_info *info) {
    const char *fn = "sb_cuda_query";
    if (!info) return sb_fail(SB_ERR_NULL, "%s: info is NULL", fn);
    memset(info, 0, sizeof *info);
    cudaDriverGetVersion(&info->driver_version);
    cudaRuntimeGetVersion(&info->runtime_version);
    const char *why;
    if (!sb_cuda_available(&why))
        return sb_fail(SB_ERR_UNSUPPORTED, "%s: no CUDA device: %s", fn, why);
    SB_CUDA_TRY(fn, "cudaGetDeviceCount", cudaGetDeviceCount(&info->device_count));
    if (device < 0 || device >= info->device_count)
        return sb_fail(SB_ERR_ARG, "%s: device %d is outside 0..%d", fn, device,
                       info->device_count - 1);
    cudaDeviceProp prop;
    SB_CUDA_TRY(fn, "cudaGetDeviceProperties", cudaGetDeviceProperties(&prop, device));
    snprintf(info->name, sizeof info->name, "%s", prop.name);
    info->cc_major = prop.major;
    info->cc_minor = prop.minor;
    info->total_memory = prop.totalGlobalMem;
    return SB_OK;
}

sb_status sb_cuda_enter(const char *fn, sb_cuda_context *ctx) {
    if (!ctx) return sb_fail(SB_ERR_NULL, "%s: ctx is NULL", fn);
    SB_CUDA_TRY(fn, "cudaSetDevice", cudaSetDevice(ctx->device));
    return SB_OK;
}

sb_status sb_cuda_launched(const char *fn) {
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return sb_cuda_error(fn, "kernel launch", e);
    return SB_OK;
}

sb_status sb_cuda_context_new(sb_cuda_context **out, int device) {
    const char *fn = "sb_cuda_context_new";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    const char *why;
    if (!sb_cuda_available(&why))
        return sb_fail(SB_ERR_UNSUPPORTED, "%s: no CUDA device: %s", fn, why);
    int count = 0;
    SB_CUDA_TRY(fn, "cudaGetDeviceCount", cudaGetDeviceCount(&count));
    if (device < 0 || device >= count)
        return sb_fail(SB_ERR_ARG, "%s: device %d is outside 0..%d", fn, device, count - 1);
    sb_cuda_context *ctx = (sb_cuda_context *)sb_calloc(fn, 1, sizeof *ctx);
    if (!ctx) return SB_ERR_NOMEM;
    ctx->device = device;
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        free(ctx);
        return sb_cuda_error(fn, "creating the stream", e);
    }
    *out = ctx;
    return SB_OK;
}

static void staging_release(sb_cuda_context *ctx); /* the geometry staging ring, below */

static void free_list_release(sb_cuda_block **list) {
    while (*list) {
        sb_cuda_block *b = *list;
        *list = b->next;
        cudaFree(b->ptr);
        free(b);
    }
}

void sb_cuda_context_free(sb_cuda_context *ctx) {
    if (!ctx) return;
    sb_cuda_backend_forget(ctx); /* no longer serves the CUDA device */
    cudaSetDevice(ctx->device);
    cudaStreamSynchronize(ctx->stream);
    for (int c = 0; c < SB_CUDA_CLASSES; c++) free_list_release(&ctx->free_list[c]);
    free_list_release(&ctx->live);
    staging_release(ctx);
    cudaStreamDestroy(ctx->stream);
    free(ctx);
}

void *sb_cuda_stream(sb_cuda_context *ctx) { return ctx ? (void *)ctx->stream : NULL; }

sb_status sb_cuda_synchronize(sb_cuda_context *ctx) {
    const char *fn = "sb_cuda_synchronize";
    SB_TRY(sb_cuda_enter(fn, ctx));
    SB_CUDA_TRY(fn, "cudaStreamSynchronize", cudaStreamSynchronize(ctx->stream));
    return SB_OK;
}

/* ---- caching allocator ----------------------------------------------------
 * Classes: 512 B * 2^c up to 1 MiB (c = 0..11), then multiples of 2 MiB
 * kept on one list per class index 12 + min(size/2MiB, 51). A freed block
 * goes back to its class list and is reused by the next request of that
 * class (first fit on the large lists). Frees are stream-ordered: the
 * context has one stream, so a block reused by a later call is only
 * touched after earlier work on it. */

static size_t size_class(size_t bytes, int *cls) {
    if (bytes <= (1u << 20)) {
        size_t s = 512;
        int c = 0;
        while (s < bytes) { s <<= 1; c++; }
        *cls = c;
        return s;
    }
    size_t mb2 = (size_t)2 << 20;
    size_t units = (bytes + mb2 - 1) / mb2;
    *cls = 12 + (int)(units - 1 < 51 ? units - 1 : 51);
    return units * mb2;
}

sb_status sb_cuda_malloc(sb_cuda_context *ctx, size_t bytes, void **out) {
    const char *fn = "sb_cuda_malloc";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    SB_TRY(sb_cuda_enter(fn, ctx));
    if (bytes == 0) return SB_OK;
    if (bytes > ((size_t)1 << 46))
        return sb_fail(SB_ERR_NOMEM, "%s: %zu bytes is more than any device holds", fn, bytes);
    int cls;
    size_t size = size_class(bytes, &cls);
    sb_cuda_block **pp = &ctx->free_list[cls];
    while (*pp && (*pp)->size != size) pp = &(*pp)->next;
    sb_cuda_block *b = *pp;
    if (b) {
        *pp = b->next;
        ctx->cached -= size;
    } else {
        b = (sb_cuda_block *)sb_malloc(fn, sizeof *b);
        if (!b) return SB_ERR_NOMEM;
        cudaError_t e = cudaMalloc(&b->ptr, size);
        if (e == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();
            for (int c = 0; c < SB_CUDA_CLASSES; c++) free_list_release(&ctx->free_list[c]);
            ctx->cached = 0;
            e = cudaMalloc(&b->ptr, size);
        }
        if (e != cudaSuccess) {
            free(b);
            (void)cudaGetLastError();
            return sb_cuda_error(fn, "cudaMalloc", e);
        }
        b->size = size;
    }
    b->next = ctx->live;
    ctx->live = b;
    ctx->in_use += size;
    *out = b->ptr;
    return SB_OK;
}

sb_status sb_cuda_free(sb_cuda_context *ctx, void *p) {
    const char *fn = "sb_cuda_free";
    if (!p) return SB_OK;
    if (!ctx) return sb_fail(SB_ERR_NULL, "%s: ctx is NULL", fn);
    sb_cuda_block **pp = &ctx->live;
    while (*pp && (*pp)->ptr != p) pp = &(*pp)->next;
    if (!*pp)
        return sb_fail(SB_ERR_ARG, "%s: %p was not allocated by this context (or freed twice)",
                       fn, p);
    sb_cuda_block *b = *pp;
    *pp = b->next;
    int cls;
    size_class(b->size, &cls);
    b->next = ctx->free_list[cls];
    ctx->free_list[cls] = b;
    ctx->in_use -= b->size;
    ctx->cached += b->size;
    return SB_OK;
}

sb_status sb_cuda_empty_cache(sb_cuda_context *ctx) {
    const char *fn = "sb_cuda_empty_cache";
    SB_TRY(sb_cuda_enter(fn, ctx));
    SB_CUDA_TRY(fn, "cudaStreamSynchronize", cudaStreamSynchronize(ctx->stream));
    for (int c = 0; c < SB_CUDA_CLASSES; c++) free_list_release(&ctx->free_list[c]);
    ctx->cached = 0;
    return SB_OK;
}

void sb_cuda_memory_stats(const sb_cuda_context *ctx, size_t *in_use, size_t *cached) {
    if (in_use) *in_use = ctx ? ctx->in_use : 0;
    if (cached) *cached = ctx ? ctx->cached : 0;
}

/* ---- copies ----------------------------------------------------------------- */

static sb_status copy(const char *fn, sb_cuda_context *ctx, void *dst, const void *src,
                      size_t bytes, cudaMemcpyKind kind) {
    SB_TRY(sb_cuda_enter(fn, ctx));
    if (bytes == 0) return SB_OK;
    if (!dst) return sb_fail(SB_ERR_NULL, "%s: dst is NULL", fn);
    if (!src) return sb_fail(SB_ERR_NULL, "%s: src is NULL", fn);
    SB_CUDA_TRY(fn, "cudaMemcpyAsync", cudaMemcpyAsync(dst, src, bytes, kind, ctx->stream));
    /* Host memory is pageable: wait so the caller may reuse or read it. */
    if (kind != cudaMemcpyDeviceToDevice)
        SB_CUDA_TRY(fn, "cudaStreamSynchronize", cudaStreamSynchronize(ctx->stream));
    return SB_OK;
}

sb_status sb_cuda_memcpy_h2d(sb_cuda_context *ctx, void *dst, const void *src, size_t bytes) {
    return copy("sb_cuda_memcpy_h2d", ctx, dst, src, bytes, cudaMemcpyHostToDevice);
}
sb_status sb_cuda_memcpy_d2h(sb_cuda_context *ctx, void *dst, const void *src, size_t bytes) {
    return copy("sb_cuda_memcpy_d2h", ctx, dst, src, bytes, cudaMemcpyDeviceToHost);
}
sb_status sb_cuda_memcpy_d2d(sb_cuda_context *ctx, void *dst, const void *src, size_t bytes) {
    return copy("sb_cuda_memcpy_d2d", ctx, dst, src, bytes, cudaMemcpyDeviceToDevice);
}

/* The staging ring, made on first use; false when pinned memory or events
 * cannot be had (the uploads then wait, as before the ring). */
static bool staging_ready(sb_cuda_context *ctx) {
    sb_cuda_staging *sg = &ctx->stage;
    if (sg->host || sg->failed) return sg->host != NULL;
    void *h = NULL;
    if (cudaMallocHost(&h, (size_t)SB_CUDA_STAGE_SLOTS * SB_CUDA_STAGE_BYTES) != cudaSuccess) {
        (void)cudaGetLastError();
        sg->failed = true;
        return false;
    }
    for (int i = 0; i < SB_CUDA_STAGE_SLOTS; i++) {
        if (cudaEventCreateWithFlags(&sg->done[i], cudaEventDisableTiming) == cudaSuccess) continue;
        (void)cudaGetLastError();
        while (i-- > 0) cudaEventDestroy(sg->done[i]);
        cudaFreeHost(h);
        sg->failed = true;
        return false;
    }
    sg->host = (char *)h;
    return true;
}

static void staging_release(sb_cuda_context *ctx) {
    sb_cuda_staging *sg = &ctx->stage;
    if (!sg->host) return;
    for (int i = 0; i < SB_CUDA_STAGE_SLOTS; i++) cudaEventDestroy(sg->done[i]);
    cudaFreeHost(sg->host);
    sg->host = NULL;
}

sb_status sb_cuda_upload_geom(sb_cuda_context *ctx, const int64_t *host, size_t count,
                              int64_t **out) {
    const char *fn = "sb_cuda_upload_geom";
    size_t bytes = count * sizeof *host;
    void *d = NULL;
    *out = NULL;
    SB_TRY(sb_cuda_malloc(ctx, bytes, &d));
    sb_status st = SB_OK;
    if (bytes <= SB_CUDA_STAGE_BYTES && staging_ready(ctx)) {
        sb_cuda_staging *sg = &ctx->stage;
        unsigned slot = sg->next++ % SB_CUDA_STAGE_SLOTS;
        char *src = sg->host + (size_t)slot * SB_CUDA_STAGE_BYTES;
        cudaError_t e = cudaSuccess;
        if (sg->pending[slot]) e = cudaEventSynchronize(sg->done[slot]); /* only once the ring wrapped */
        if (e == cudaSuccess) {
            memcpy(src, host, bytes);
            e = cudaMemcpyAsync(d, src, bytes, cudaMemcpyHostToDevice, ctx->stream);
        }
        if (e == cudaSuccess) e = cudaEventRecord(sg->done[slot], ctx->stream);
        sg->pending[slot] = e == cudaSuccess;
        if (e != cudaSuccess) st = sb_cuda_error(fn, "staging the geometry", e);
    } else {
        st = sb_cuda_memcpy_h2d(ctx, d, host, bytes);
    }
    if (st != SB_OK) {
        sb_cuda_free(ctx, d);
        return st;
    }
    *out = (int64_t *)d;
    return SB_OK;
}

sb_status sb_cuda_memset0(sb_cuda_context *ctx, void *dst, size_t bytes) {
    const char *fn = "sb_cuda_memset0";
    SB_TRY(sb_cuda_enter(fn, ctx));
    if (bytes == 0) return SB_OK;
    if (!dst) return sb_fail(SB_ERR_NULL, "%s: dst is NULL", fn);
    SB_CUDA_TRY(fn, "cudaMemsetAsync", cudaMemsetAsync(dst, 0, bytes, ctx->stream));
    return SB_OK;
}

/* ---- device tensors ----------------------------------------------------------- */

/* Device tensors belong to the CUDA backend (src/cuda/backend.cu): made and
 * released through it, so sb_tensor_free works on them too. */
sb_status sb_cuda_tensor_new(sb_cuda_context *ctx, sb_tensor **out, sb_dtype dtype, int ndim,
                             const int64_t *shape) {
    const char *fn = "sb_cuda_tensor_new";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    SB_TRY(sb_cuda_register(ctx));
    return sb_tensor_new_on(out, SB_DEVICE_CUDA, dtype, ndim, shape);
}

void sb_cuda_tensor_free(sb_cuda_context *ctx, sb_tensor *t) {
    (void)ctx; /* the tensor's backend knows its context */
    sb_tensor_free(t);
}

static sb_status check_pair(const char *fn, const sb_tensor *dst, sb_device dd,
                            const sb_tensor *src, sb_device sd) {
    if (!dst) return sb_fail(SB_ERR_NULL, "%s: dst is NULL", fn);
    if (!src) return sb_fail(SB_ERR_NULL, "%s: src is NULL", fn);
    if (dst->device != dd)
        return sb_fail(SB_ERR_DEVICE, "%s: dst is on the %s, expected the %s", fn,
                       dst->device == SB_DEVICE_CUDA ? "GPU" : "CPU",
                       dd == SB_DEVICE_CUDA ? "GPU" : "CPU");
    if (src->device != sd)
        return sb_fail(SB_ERR_DEVICE, "%s: src is on the %s, expected the %s", fn,
                       src->device == SB_DEVICE_CUDA ? "GPU" : "CPU",
                       sd == SB_DEVICE_CUDA ? "GPU" : "CPU");
    if (dst->dtype != src->dtype)
        return sb_fail(SB_ERR_DTYPE, "%s: dst is %s but src is %s", fn, sb_dtype_name(dst->dtype),
                       sb_dtype_name(src->dtype));
    SB_TRY(sb_check_same_shape(fn, "dst", dst, "src", src));
    SB_TRY(sb_check_contiguous(fn, "dst", dst));
    SB_TRY(sb_check_contiguous(fn, "src", src));
    return SB_OK;
}

sb_status sb_cuda_tensor_to_device(sb_cuda_context *ctx, sb_tensor *dst, const sb_tensor *src) {
    const char *fn = "sb_cuda_tensor_to_device";
    SB_TRY(check_pair(fn, dst, SB_DEVICE_CUDA, src, SB_DEVICE_CPU));
    return copy(fn, ctx, dst->data, src->data,
                (size_t)sb_tensor_numel(src) * sb_dtype_size(src->dtype), cudaMemcpyHostToDevice);
}

sb_status sb_cuda_tensor_to_host(sb_cuda_context *ctx, sb_tensor *dst, const sb_tensor *src) {
    const char *fn = "sb_cuda_tensor_to_host";
    SB_TRY(check_pair(fn, dst, SB_DEVICE_CPU, src, SB_DEVICE_CUDA));
    return copy(fn, ctx, dst->data, src->data,
                (size_t)sb_tensor_numel(src) * sb_dtype_size(src->dtype), cudaMemcpyDeviceToHost);
}
