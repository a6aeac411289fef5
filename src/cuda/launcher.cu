/* src/cuda/launcher.cu - the CUDA side of the GPU host layer
 * (src/gpu/gpu_host.h): the op table is src/gpu/ops.c, the kernels are
 * src/gpu/kernels compiled by nvcc (src/cuda/program_*.cu), and this file
 * resolves operands and launches.
 *
 * Operands: a device pointer anywhere inside one of the context's live
 * allocations resolves to (the allocation's base, element offset), as on
 * OpenCL, so that the host layer's "same buffer" tests (an overlapping
 * copy goes through a temporary) mean the same on both; anything else is
 * refused with a message, never read. Launches: cudaLaunchKernel with the
 * argument list as a void * array, after checking every argument's size
 * against the kernel's parameter (the table records them from the
 * compiled signatures); the geometry goes up in a temporary freed in stream
 * order after the kernel. */
#include <pthread.h>
#include "cuda/common.cuh"
#include "cuda/program.cuh"
extern "C" {
#include "gpu/gpu_host.h"
}

namespace {

sb_cuda_kernel_ref kernels[SB_GPU_KERNELS];
pthread_once_t kernels_once = PTHREAD_ONCE_INIT;

void fill_kernels() {
    sb_cuda_program_pointwise(kernels);
    sb_cuda_program_sum(kernels);
    sb_cuda_program_gemm(kernels);
    sb_cuda_program_conv(kernels);
    sb_cuda_program_math(kernels);
    sb_cuda_program_rng(kernels);
    sb_cuda_program_norm(kernels);
    sb_cuda_program_resample(kernels);
}

sb_cuda_context *ctx_of(const sb_backend *be) { return (sb_cuda_context *)be->ctx; }

sb_status cuda_resolve(const sb_backend *be, const char *fn, const char *what, const void *p,
                       size_t bytes, size_t elem, sb_gpu_ptr *out) {
    if (!p && bytes == 0) {
        *out = sb_gpu_ptr{NULL, 0};
        return SB_OK;
    }
    uintptr_t a = (uintptr_t)p;
    for (const sb_cuda_block *b = ctx_of(be)->live; b; b = b->next) {
        uintptr_t base = (uintptr_t)b->ptr;
        if (a < base || a - base > b->size || bytes > b->size - (a - base)) continue;
        if ((a - base) % elem != 0)
            return sb_fail(SB_ERR_INTERNAL, "%s: %s at %p is not aligned to its %zu-byte "
                           "elements", fn, what, p, elem);
        *out = sb_gpu_ptr{b->ptr, (int64_t)((a - base) / elem)};
        return SB_OK;
    }
    return sb_fail(SB_ERR_INTERNAL, "%s: %s (%zu bytes at %p) is not live cuda device memory",
                   fn, what, bytes, p);
}

sb_status cuda_launch(const sb_backend *be, const char *fn, const sb_gpu_kernel *k,
                      const void *geom, size_t geom_bytes, int nargs, sb_gpu_arg *args,
                      const sb_gpu_range *r) {
    sb_cuda_context *ctx = ctx_of(be);
    pthread_once(&kernels_once, fill_kernels);
    const sb_cuda_kernel_ref *ref = &kernels[k->id];
    if (!ref->fn || ref->nparams != nargs)
        return sb_fail(SB_ERR_INTERNAL, "%s: kernel %s has no cuda compilation with %d "
                       "parameters", fn, k->name, nargs);
    for (int i = 0; i < nargs; i++)
        if (i != k->geom_slot && args[i].size != ref->sizes[i])
            return sb_fail(SB_ERR_INTERNAL, "%s: argument %d of kernel %s has %zu bytes, its "
                           "parameter %zu", fn, i, k->name, args[i].size, ref->sizes[i]);
    dim3 block((unsigned)r->local[0], (unsigned)r->local[1], (unsigned)r->local[2]);
    size_t gx = r->global[0] / r->local[0], gy = r->global[1] / r->local[1],
           gz = r->global[2] / r->local[2];
    if (gx > 0x7fffffffu || gy > 65535 || gz > 65535)
        return sb_fail(SB_ERR_UNSUPPORTED, "%s: kernel %s needs a grid of %zu x %zu x %zu "
                       "blocks, beyond what cuda launches", fn, k->name, gx, gy, gz);
    SB_TRY(sb_cuda_enter(fn, ctx));
    int64_t *dg = NULL;
    if (geom)
        SB_TRY(sb_cuda_upload_geom(ctx, (const int64_t *)geom, geom_bytes / sizeof(int64_t), &dg));
    if (k->geom_slot >= 0) args[k->geom_slot] = sb_gpu_arg{sizeof dg, &dg};
    void *argv[SB_CUDA_MAX_PARAMS];
    for (int i = 0; i < nargs; i++) argv[i] = (void *)args[i].value;
    cudaError_t e = cudaLaunchKernel(ref->fn, dim3((unsigned)gx, (unsigned)gy, (unsigned)gz),
                                     block, argv, 0, ctx->stream);
    sb_cuda_free(ctx, dg); /* stream-ordered: reused only by later work */
    if (e != cudaSuccess) return sb_cuda_error(fn, k->name, e);
    return SB_OK;
}

} // namespace

extern "C" {

const struct sb_gpu_launcher sb_cuda_launcher = {cuda_resolve, cuda_launch};

int sb_cuda_kernel_table_check(char *missing, size_t size) {
    pthread_once(&kernels_once, fill_kernels);
    int count = 0;
    if (size) missing[0] = '\0';
    for (int i = 0; i < SB_GPU_KERNELS; i++) {
        const sb_gpu_kernel *k = &sb_gpu_kernels[i];
        if (kernels[i].fn && kernels[i].nparams == k->nargs) continue;
        count++;
        size_t used = strlen(missing);
        if (used + 1 < size)
            snprintf(missing + used, size - used, "%s%s", used ? " " : "", k->name);
    }
    return count;
}

} // extern "C"
