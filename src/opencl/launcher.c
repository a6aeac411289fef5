/* src/opencl/launcher.c - the OpenCL side of the GPU host layer
 * (src/gpu/gpu_host.h): operands resolved by the buffer table of
 * src/opencl/memory.c, kernels taken from the program cache of
 * src/opencl/runtime.c (one build per program and variant options) and
 * enqueued with clSetKernelArg/clEnqueueNDRangeKernel. The op table itself
 * is src/gpu/ops.c. */
#include "core/internal.h"
#include "opencl/opencl_internal.h"

static sb_status ocl_resolve(const sb_backend *be, const char *fn, const char *what,
                             const void *p, size_t bytes, size_t elem, sb_gpu_ptr *out) {
    (void)be;
    sb_ocl_ptr q;
    SB_TRY(sb_ocl_resolve(fn, what, p, bytes, elem, &q));
    *out = (sb_gpu_ptr){(void *)q.mem, (int64_t)q.off};
    return SB_OK;
}

/* A sb_gpu_ptr's buffer is a cl_mem, passed as one. */
_Static_assert(sizeof(cl_mem) == sizeof(void *), "a cl_mem is a pointer");
_Static_assert(sizeof(cl_long) == sizeof(int64_t), "element offsets are 64-bit");

static sb_status ocl_launch(const sb_backend *be, const char *fn, const sb_gpu_kernel *k,
                            const void *geom, size_t geom_bytes, int nargs, sb_gpu_arg *args,
                            const sb_gpu_range *r) {
    (void)be;
    cl_mem gm = NULL;
    if (geom) SB_TRY(sb_ocl_const_buffer(fn, geom, geom_bytes, &gm));
    if (k->geom_slot >= 0) args[k->geom_slot] = (sb_gpu_arg){sizeof(cl_mem), geom ? &gm : NULL};
    sb_status st = sb_ocl_launch(fn, k->program, k->options, k->name, nargs, args,
                                 (cl_uint)r->dims, r->global, r->local);
    if (gm) clReleaseMemObject(gm); /* the queue keeps it until the kernel ran */
    return st;
}

const struct sb_gpu_launcher sb_ocl_launcher = {
    .resolve = ocl_resolve,
    .launch = ocl_launch,
};

sb_status sb_ocl_math_eval(int f, const float *x, float *y, int64_t n) {
    const sb_backend *be = sb_opencl_backend_get("sb_ocl_math_eval");
    if (!be) return SB_ERR_DEVICE;
    return sb_gpu_math_eval(be, f, x, y, n);
}
