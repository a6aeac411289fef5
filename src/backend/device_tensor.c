/* Tensors on any device: creation, release and copies through the device's
 * backend (include/samebits/tensor.h). */
#include <stdlib.h>
#include "backend/backend.h"
#include "core/fpenv.h"
#include "core/internal.h"

sb_status sb_tensor_new_on(sb_tensor **out, sb_device device, sb_dtype dtype, int ndim,
                           const int64_t *shape) {
    const char *fn = "sb_tensor_new_on";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    const sb_backend *be = sb_backend_get(fn, device);
    if (!be) return SB_ERR_DEVICE;
    /* Checked here for every device, so the messages name this function. */
    int64_t n = 0;
    SB_TRY(sb_tensor_check_shape(fn, dtype, ndim, shape, &n));
    if (device == SB_DEVICE_CPU) return sb_tensor_new(out, dtype, ndim, shape);
    sb_tensor *t = sb_malloc(fn, sizeof *t);
    if (!t) return SB_ERR_NOMEM;
    void *data = NULL;
    sb_status st = be->alloc(be, (size_t)n * sb_dtype_size(dtype), &data);
    if (st != SB_OK) { free(t); return st; }
    sb_tensor_set_header(t, dtype, ndim, shape, NULL, data, SB_OWN_DEVICE);
    t->device = device;
    *out = t;
    return SB_OK;
}

void sb_tensor_free(sb_tensor *t) {
    if (!t || t->owner == SB_OWN_ARENA) return;
    if (t->owner == SB_OWN_HEAP) free(t->data);
    if (t->owner == SB_OWN_DEVICE) {
        /* A device's backend outlives its tensors (sb_backend_register). */
        const sb_backend *be = sb_backend_get("sb_tensor_free", t->device);
        if (be) be->release(be, t->data);
    }
    free(t);
}

/* src's elements in row-major order into a fresh host buffer. */
static sb_status to_host(const char *fn, const sb_tensor *src, void **host) {
    const sb_backend *be = sb_backend_get(fn, src->device);
    if (!be) return SB_ERR_DEVICE;
    size_t bytes = (size_t)sb_tensor_numel(src) * sb_dtype_size(src->dtype);
    void *buf = sb_malloc(fn, bytes ? bytes : 1);
    if (!buf) return SB_ERR_NOMEM;
    sb_tensor *dense = NULL;
    sb_status st = SB_OK;
    if (!sb_tensor_is_contiguous(src)) { /* gather on the device, then one download */
        st = sb_tensor_new_on(&dense, src->device, src->dtype, src->ndim, src->shape);
        if (st == SB_OK) st = be->copy(be, src, dense);
    }
    if (st == SB_OK) st = be->download(be, buf, dense ? dense->data : src->data, bytes);
    sb_tensor_free(dense);
    if (st != SB_OK) { free(buf); return st; }
    *host = buf;
    return SB_OK;
}

/* dst's elements (row-major order) from a host buffer. */
static sb_status from_host(const char *fn, sb_tensor *dst, const void *host) {
    const sb_backend *be = sb_backend_get(fn, dst->device);
    if (!be) return SB_ERR_DEVICE;
    size_t bytes = (size_t)sb_tensor_numel(dst) * sb_dtype_size(dst->dtype);
    if (sb_tensor_is_contiguous(dst)) return be->upload(be, dst->data, host, bytes);
    sb_tensor *dense = NULL; /* upload once, then scatter on the device */
    sb_status st = sb_tensor_new_on(&dense, dst->device, dst->dtype, dst->ndim, dst->shape);
    if (st == SB_OK) st = be->upload(be, dense->data, host, bytes);
    if (st == SB_OK) st = be->copy(be, dense, dst);
    sb_tensor_free(dense);
    return st;
}

sb_status sb_tensor_copy(sb_tensor *dst, const sb_tensor *src) {
    const char *fn = "sb_tensor_copy";
    if (!dst) return sb_fail(SB_ERR_NULL, "%s: dst is NULL", fn);
    if (!src) return sb_fail(SB_ERR_NULL, "%s: src is NULL", fn);
    SB_TRY(sb_check_tensor(fn, "src", src, src->dtype, -1));
    SB_TRY(sb_check_header(fn, "dst", dst));
    if (dst->dtype != src->dtype)
        return sb_fail(SB_ERR_DTYPE, "%s: dst has dtype %s but src has dtype %s", fn,
                       sb_dtype_name(dst->dtype), sb_dtype_name(src->dtype));
    SB_TRY(sb_check_tensor(fn, "dst", dst, src->dtype, -1));
    SB_TRY(sb_check_same_shape(fn, "dst", dst, "src", src));
    if (!sb_device_available(src->device))
        return sb_fail(SB_ERR_DEVICE, "%s: src is on the %s device, which has no backend in this "
                       "program", fn, sb_device_name(src->device));
    if (!sb_device_available(dst->device))
        return sb_fail(SB_ERR_DEVICE, "%s: dst is on the %s device, which has no backend in this "
                       "program", fn, sb_device_name(dst->device));
    if (dst->device == src->device) {
        /* exactly src, or apart from it: a shifted overlap would smear */
        if (dst->device == SB_DEVICE_CPU) SB_TRY(sb_check_in_place(fn, "dst", dst, "src", src));
        const sb_backend *be = sb_backend_get(fn, src->device);
        if (!be) return SB_ERR_DEVICE;
        return be->copy(be, src, dst);
    }
    void *host = NULL;
    SB_TRY(to_host(fn, src, &host));
    sb_status st = from_host(fn, dst, host);
    free(host);
    return st;
}

sb_status sb_tensor_to(sb_tensor **out, const sb_tensor *src, sb_device device) {
    const char *fn = "sb_tensor_to";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    if (!src) return sb_fail(SB_ERR_NULL, "%s: src is NULL", fn);
    SB_TRY(sb_check_tensor(fn, "src", src, src->dtype, -1));
    if (!sb_backend_get(fn, device)) return SB_ERR_DEVICE;
    sb_tensor *t = NULL;
    SB_TRY(sb_tensor_new_on(&t, device, src->dtype, src->ndim, src->shape));
    sb_status st = sb_tensor_copy(t, src);
    if (st != SB_OK) { sb_tensor_free(t); return st; }
    *out = t;
    return SB_OK;
}

sb_status sb_tensor_fill(sb_tensor *t, float value) {
    SB_FPENV_GUARD();
    const char *fn = "sb_tensor_fill";
    SB_TRY(sb_check_tensor(fn, "t", t, SB_F32, -1));
    const sb_backend *be = sb_backend_get(fn, t->device);
    if (!be) return SB_ERR_DEVICE;
    return be->fill(be, t, value);
}
