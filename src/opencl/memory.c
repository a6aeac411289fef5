/* The OpenCL device's memory: buffers behind made-up addresses
 * (opencl_internal.h explains why), uploads and downloads.
 *
 * Each allocation takes the next range of a private address space that
 * starts at 2^44 and only grows (a gap of 4 KiB between ranges), so two
 * live allocations never share an address, a view's pointer arithmetic
 * stays inside its range, and overlap checks on pointers (src/ops) mean
 * what they say. The ranges are kept sorted by address for the resolver. */
#include <pthread.h>
#include <stdlib.h>
#include "core/internal.h"
#include "opencl/opencl_internal.h"

typedef struct block {
    uintptr_t base;
    size_t bytes;
    cl_mem mem;
} block;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static block *blocks; /* sorted by base */
static size_t nblocks, cap;
static uintptr_t next_base = (uintptr_t)1 << 44;

static size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

sb_status sb_ocl_alloc(const sb_backend *be, size_t bytes, void **out) {
    const char *fn = "opencl alloc";
    (void)be;
    if (bytes > ((size_t)1 << 40))
        return sb_fail(SB_ERR_NOMEM, "%s: %zu bytes is more than this backend hands out", fn, bytes);
    size_t size = round_up(bytes ? bytes : 1, 64);
    cl_int e = CL_SUCCESS;
    cl_mem mem = clCreateBuffer(sb_ocl_context(), CL_MEM_READ_WRITE, size, NULL, &e);
    if (e != CL_SUCCESS) return sb_ocl_error(fn, "clCreateBuffer", e);
    const cl_uchar zero = 0; /* zero-filled, as the table requires */
    e = clEnqueueFillBuffer(sb_ocl_queue(), mem, &zero, 1, 0, size, 0, NULL, NULL);
    if (e != CL_SUCCESS) { clReleaseMemObject(mem); return sb_ocl_error(fn, "clEnqueueFillBuffer", e); }
    pthread_mutex_lock(&lock);
    if (nblocks == cap) {
        size_t ncap = cap ? cap * 2 : 64;
        block *nb = realloc(blocks, ncap * sizeof *nb);
        if (!nb) {
            pthread_mutex_unlock(&lock);
            clReleaseMemObject(mem);
            return sb_fail(SB_ERR_NOMEM, "%s: out of host memory for the block table", fn);
        }
        blocks = nb;
        cap = ncap;
    }
    uintptr_t base = next_base;
    next_base += round_up(size, 4096) + 4096;
    blocks[nblocks++] = (block){base, bytes, mem}; /* bases only grow: stays sorted */
    pthread_mutex_unlock(&lock);
    *out = (void *)base;
    return SB_OK;
}

/* The block holding address a, or -1. Caller holds lock. */
static ptrdiff_t find(uintptr_t a) {
    size_t lo = 0, hi = nblocks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (blocks[mid].base <= a) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return -1;
    const block *b = &blocks[lo - 1];
    return a - b->base <= b->bytes ? (ptrdiff_t)(lo - 1) : -1;
}

void sb_ocl_release(const sb_backend *be, void *p) {
    (void)be;
    if (!p) return;
    pthread_mutex_lock(&lock);
    ptrdiff_t i = find((uintptr_t)p);
    cl_mem mem = NULL;
    if (i >= 0 && blocks[i].base == (uintptr_t)p) {
        mem = blocks[i].mem;
        memmove(&blocks[i], &blocks[i + 1], (nblocks - (size_t)i - 1) * sizeof *blocks);
        nblocks--;
    }
    pthread_mutex_unlock(&lock);
    /* queued kernels keep the buffer alive until they have run */
    if (mem) clReleaseMemObject(mem);
}

size_t sb_ocl_live_blocks(void) {
    pthread_mutex_lock(&lock);
    size_t n = nblocks;
    pthread_mutex_unlock(&lock);
    return n;
}

sb_status sb_ocl_resolve(const char *fn, const char *what, const void *p, size_t bytes,
                         size_t elem, sb_ocl_ptr *out) {
    if (!p && bytes == 0) {
        *out = (sb_ocl_ptr){NULL, 0};
        return SB_OK;
    }
    uintptr_t a = (uintptr_t)p;
    pthread_mutex_lock(&lock);
    ptrdiff_t i = find(a);
    bool ok = i >= 0 && bytes <= blocks[i].bytes - (a - blocks[i].base);
    size_t off = ok ? a - blocks[i].base : 0;
    cl_mem mem = ok ? blocks[i].mem : NULL;
    pthread_mutex_unlock(&lock);
    if (!ok)
        return sb_fail(SB_ERR_INTERNAL, "%s: %s (%zu bytes at %p) is not live opencl device "
                       "memory", fn, what, bytes, p);
    if (off % elem != 0)
        return sb_fail(SB_ERR_INTERNAL, "%s: %s at %p is not aligned to its %zu-byte elements",
                       fn, what, p, elem);
    *out = (sb_ocl_ptr){mem, (cl_long)(off / elem)};
    return SB_OK;
}

sb_status sb_ocl_upload(const sb_backend *be, void *dst, const void *src, size_t bytes);
sb_status sb_ocl_download(const sb_backend *be, void *dst, const void *src, size_t bytes);

sb_status sb_ocl_upload(const sb_backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (bytes == 0) return SB_OK;
    sb_ocl_ptr d;
    SB_TRY(sb_ocl_resolve("opencl upload", "the destination", dst, bytes, 1, &d));
    cl_int e = clEnqueueWriteBuffer(sb_ocl_queue(), d.mem, CL_TRUE, (size_t)d.off, bytes, src, 0,
                                    NULL, NULL);
    return e == CL_SUCCESS ? SB_OK : sb_ocl_error("opencl upload", "clEnqueueWriteBuffer", e);
}

sb_status sb_ocl_download(const sb_backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (bytes == 0) return SB_OK;
    sb_ocl_ptr s;
    SB_TRY(sb_ocl_resolve("opencl download", "the source", src, bytes, 1, &s));
    /* blocking and in order: every queued kernel has run when it returns */
    cl_int e = clEnqueueReadBuffer(sb_ocl_queue(), s.mem, CL_TRUE, (size_t)s.off, bytes, dst, 0,
                                   NULL, NULL);
    return e == CL_SUCCESS ? SB_OK : sb_ocl_error("opencl download", "clEnqueueReadBuffer", e);
}
