/* The CPU backend: ordinary heap memory and the op table of cpu_ops.c. */
#include <stdlib.h>
#include "backend/backend.h"
#include "core/internal.h"

static sb_status cpu_alloc(const sb_backend *be, size_t bytes, void **out) {
    void *p = sb_calloc(be->name, bytes ? bytes : 1, 1);
    if (!p) return SB_ERR_NOMEM;
    *out = p;
    return SB_OK;
}

static void cpu_release(const sb_backend *be, void *p) {
    (void)be;
    free(p);
}

static sb_status cpu_memcpy(const sb_backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (bytes) memcpy(dst, src, bytes);
    return SB_OK;
}

/* Row-major walk over both tensors' strides, one element at a time (memmove:
 * a view may overlap its source). */
sb_status sb_host_copy(const sb_backend *be, const sb_tensor *src, sb_tensor *dst) {
    (void)be;
    size_t es = sb_dtype_size(src->dtype);
    int64_t n = sb_tensor_numel(src), idx[SB_MAX_DIMS] = {0};
    for (int64_t i = 0; i < n; i++) {
        int64_t so = 0, d = 0;
        for (int k = 0; k < src->ndim; k++) { so += idx[k] * src->strides[k]; d += idx[k] * dst->strides[k]; }
        memmove((char *)dst->data + d * (int64_t)es, (const char *)src->data + so * (int64_t)es, es);
        for (int k = src->ndim - 1; k >= 0; k--) {
            if (++idx[k] < src->shape[k]) break;
            idx[k] = 0;
        }
    }
    return SB_OK;
}

sb_status sb_host_fill(const sb_backend *be, sb_tensor *t, float value) {
    (void)be;
    int64_t n = sb_tensor_numel(t), idx[SB_MAX_DIMS] = {0};
    float *p = t->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t o = 0;
        for (int k = 0; k < t->ndim; k++) o += idx[k] * t->strides[k];
        p[o] = value;
        for (int k = t->ndim - 1; k >= 0; k--) {
            if (++idx[k] < t->shape[k]) break;
            idx[k] = 0;
        }
    }
    return SB_OK;
}

static sb_status cpu_synchronize(const sb_backend *be) {
    (void)be;
    return SB_OK;
}

const sb_backend sb_backend_cpu = {
    .name = "cpu",
    .device = SB_DEVICE_CPU,
    .host_addressable = true,
    .alloc = cpu_alloc,
    .release = cpu_release,
    .upload = cpu_memcpy,
    .download = cpu_memcpy,
    .copy = sb_host_copy,
    .fill = sb_host_fill,
    .synchronize = cpu_synchronize,
    .ops = &sb_cpu_backend_ops,
};
