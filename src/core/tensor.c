/* Tensor creation, views, copies and the shared argument checks. */
#include <stdio.h>
#include <stdlib.h>
#include "core/fpenv.h"
#include "core/internal.h"

enum { OWN_WRAP = SB_OWN_WRAP, OWN_HEAP = SB_OWN_HEAP, OWN_ARENA = SB_OWN_ARENA };

size_t sb_dtype_size(sb_dtype dtype) {
    switch (dtype) {
    case SB_F32: return 4;
    case SB_I32: return 4;
    case SB_I64: return 8;
    }
    return 0;
}

const char *sb_dtype_name(sb_dtype dtype) {
    switch (dtype) {
    case SB_F32: return "float32";
    case SB_I32: return "int32";
    case SB_I64: return "int64";
    }
    return "invalid dtype";
}

const char *sb_device_name(sb_device device) {
    switch (device) {
    case SB_DEVICE_CPU: return "cpu";
    case SB_DEVICE_CUDA: return "cuda";
    case SB_DEVICE_MIRROR: return "mirror";
    }
    return "unknown";
}

const char *sb_shape_str(const sb_tensor *t, char *buf, size_t len) {
    size_t at = 0;
    at += (size_t)snprintf(buf + at, len - at, "[");
    for (int i = 0; t && i < t->ndim && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, i ? ", %lld" : "%lld", (long long)t->shape[i]);
    if (at < len) snprintf(buf + at, len - at, "]");
    return buf;
}

/* Validates dtype/ndim/shape and returns the element count in *numel. */
sb_status sb_tensor_check_shape(const char *fn, sb_dtype dtype, int ndim, const int64_t *shape,
                             int64_t *numel) {
    if (sb_dtype_size(dtype) == 0) return sb_fail(SB_ERR_DTYPE, "%s: invalid dtype %d", fn, (int)dtype);
    if (ndim < 0 || ndim > SB_MAX_DIMS)
        return sb_fail(SB_ERR_SHAPE, "%s: ndim %d is outside 0..%d", fn, ndim, SB_MAX_DIMS);
    if (ndim > 0 && !shape) return sb_fail(SB_ERR_NULL, "%s: shape is NULL", fn);
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return sb_fail(SB_ERR_SHAPE, "%s: shape[%d] = %lld is negative", fn, i, (long long)shape[i]);
        if (shape[i] && n > INT64_MAX / 16 / shape[i])
            return sb_fail(SB_ERR_SHAPE, "%s: shape is too large", fn);
        n *= shape[i];
    }
    *numel = n;
    return SB_OK;
}

void sb_tensor_set_header(sb_tensor *t, sb_dtype dtype, int ndim, const int64_t *shape,
                       const int64_t *strides, void *data, unsigned owner) {
    memset(t, 0, sizeof *t);
    t->dtype = dtype;
    t->device = SB_DEVICE_CPU;
    t->ndim = ndim;
    t->data = data;
    t->owner = owner;
    int64_t stride = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        t->shape[i] = shape[i];
        t->strides[i] = strides ? strides[i] : stride;
        stride *= shape[i] ? shape[i] : 1;
    }
}

sb_status sb_tensor_new(sb_tensor **out, sb_dtype dtype, int ndim, const int64_t *shape) {
    if (!out) return sb_fail(SB_ERR_NULL, "sb_tensor_new: out is NULL");
    *out = NULL;
    int64_t n = 0;
    SB_TRY(sb_tensor_check_shape("sb_tensor_new", dtype, ndim, shape, &n));
    sb_tensor *t = sb_malloc("sb_tensor_new", sizeof *t);
    if (!t) return SB_ERR_NOMEM;
    void *data = sb_calloc("sb_tensor_new", (size_t)n, sb_dtype_size(dtype));
    if (!data) { free(t); return SB_ERR_NOMEM; }
    sb_tensor_set_header(t, dtype, ndim, shape, NULL, data, OWN_HEAP);
    *out = t;
    return SB_OK;
}

sb_status sb_tensor_new_in(sb_tensor **out, sb_arena *arena, sb_dtype dtype, int ndim,
                           const int64_t *shape) {
    if (!out) return sb_fail(SB_ERR_NULL, "sb_tensor_new_in: out is NULL");
    *out = NULL;
    if (!arena) return sb_fail(SB_ERR_NULL, "sb_tensor_new_in: arena is NULL");
    int64_t n;
    SB_TRY(sb_tensor_check_shape("sb_tensor_new_in", dtype, ndim, shape, &n));
    sb_tensor *t = sb_arena_alloc(arena, sizeof *t);
    void *data = t ? sb_arena_alloc(arena, (size_t)n * sb_dtype_size(dtype)) : NULL;
    if (!data) return SB_ERR_NOMEM;
    memset(data, 0, (size_t)n * sb_dtype_size(dtype));
    sb_tensor_set_header(t, dtype, ndim, shape, NULL, data, OWN_ARENA);
    *out = t;
    return SB_OK;
}

sb_status sb_tensor_wrap(sb_tensor **out, void *data, sb_dtype dtype, int ndim,
                         const int64_t *shape, const int64_t *strides) {
    if (!out) return sb_fail(SB_ERR_NULL, "sb_tensor_wrap: out is NULL");
    *out = NULL;
    int64_t n;
    SB_TRY(sb_tensor_check_shape("sb_tensor_wrap", dtype, ndim, shape, &n));
    if (!data && n > 0) return sb_fail(SB_ERR_NULL, "sb_tensor_wrap: data is NULL");
    sb_tensor *t = sb_malloc("sb_tensor_wrap", sizeof *t);
    if (!t) return SB_ERR_NOMEM;
    sb_tensor_set_header(t, dtype, ndim, shape, strides, data, OWN_WRAP);
    *out = t;
    return SB_OK;
}

int64_t sb_tensor_numel(const sb_tensor *t) {
    if (!t) return 0;
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

bool sb_tensor_is_contiguous(const sb_tensor *t) {
    if (!t) return false;
    if (sb_tensor_numel(t) == 0) return true; /* no element has an address to disagree about */
    int64_t stride = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->strides[i] != stride) return false;
        stride *= t->shape[i];
    }
    return true;
}

float *sb_tensor_f32(const sb_tensor *t) {
    return t && t->dtype == SB_F32 ? (float *)t->data : NULL;
}

sb_status sb_check_tensor(const char *fn, const char *name, const sb_tensor *t,
                          sb_dtype dtype, int ndim) {
    if (!t) return sb_fail(SB_ERR_NULL, "%s: %s is NULL", fn, name);
    if ((unsigned)t->device > (unsigned)SB_DEVICE_MIRROR)
        return sb_fail(SB_ERR_DEVICE, "%s: %s has device %d, not a samebits device", fn, name,
                       (int)t->device);
    if (t->dtype != dtype)
        return sb_fail(SB_ERR_DTYPE, "%s: %s has dtype %s, expected %s", fn, name,
                       sb_dtype_name(t->dtype), sb_dtype_name(dtype));
    if (ndim >= 0 && t->ndim != ndim) {
        char buf[128];
        return sb_fail(SB_ERR_SHAPE, "%s: %s must have %d dimensions, got shape %s", fn, name, ndim,
                       sb_shape_str(t, buf, sizeof buf));
    }
    if (!t->data && sb_tensor_numel(t) > 0) return sb_fail(SB_ERR_NULL, "%s: %s has no data", fn, name);
    return SB_OK;
}

sb_status sb_check_contiguous(const char *fn, const char *name, const sb_tensor *t) {
    if (!sb_tensor_is_contiguous(t))
        return sb_fail(SB_ERR_ARG, "%s: %s must be contiguous (use sb_tensor_copy into a new tensor)", fn, name);
    return SB_OK;
}

sb_status sb_check_same_shape(const char *fn, const char *name_a, const sb_tensor *a,
                              const char *name_b, const sb_tensor *b) {
    int same = a->ndim == b->ndim;
    for (int i = 0; same && i < a->ndim; i++) same = a->shape[i] == b->shape[i];
    if (!same) {
        char sa[128], sb[128];
        return sb_fail(SB_ERR_SHAPE, "%s: %s has shape %s but %s has shape %s", fn, name_a,
                       sb_shape_str(a, sa, sizeof sa), name_b, sb_shape_str(b, sb, sizeof sb));
    }
    return SB_OK;
}

/* ---- views ---- */

static sb_status make_view(const char *fn, sb_tensor **out, const sb_tensor *src, int ndim,
                           const int64_t *shape, const int64_t *strides) {
    sb_tensor *t = sb_malloc(fn, sizeof *t);
    if (!t) return SB_ERR_NOMEM;
    sb_tensor_set_header(t, src->dtype, ndim, shape, strides, src->data, OWN_WRAP);
    t->device = src->device;
    *out = t;
    return SB_OK;
}

sb_status sb_tensor_reshape(sb_tensor **out, const sb_tensor *src, int ndim, const int64_t *shape) {
    const char *fn = "sb_tensor_reshape";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    if (!src) return sb_fail(SB_ERR_NULL, "%s: src is NULL", fn);
    if (ndim < 0 || ndim > SB_MAX_DIMS)
        return sb_fail(SB_ERR_SHAPE, "%s: ndim %d is outside 0..%d", fn, ndim, SB_MAX_DIMS);
    if (ndim > 0 && !shape) return sb_fail(SB_ERR_NULL, "%s: shape is NULL", fn);
    SB_TRY(sb_check_contiguous(fn, "src", src));
    int64_t resolved[SB_MAX_DIMS], known = 1, total = sb_tensor_numel(src);
    int infer = -1;
    for (int i = 0; i < ndim; i++) {
        resolved[i] = shape[i];
        if (shape[i] == -1) {
            if (infer >= 0) return sb_fail(SB_ERR_SHAPE, "%s: more than one -1 in the new shape", fn);
            infer = i;
        } else if (shape[i] < 0) {
            return sb_fail(SB_ERR_SHAPE, "%s: shape[%d] = %lld is negative", fn, i, (long long)shape[i]);
        } else {
            known *= shape[i];
        }
    }
    if (infer >= 0) {
        if (known == 0 || total % known)
            return sb_fail(SB_ERR_SHAPE, "%s: cannot infer dimension %d of %lld elements", fn, infer,
                           (long long)total);
        resolved[infer] = total / known;
        known = total;
    }
    if (known != total) {
        char buf[128];
        return sb_fail(SB_ERR_SHAPE, "%s: cannot view %lld elements of shape %s as %lld elements", fn,
                       (long long)total, sb_shape_str(src, buf, sizeof buf), (long long)known);
    }
    return make_view(fn, out, src, ndim, resolved, NULL);
}

sb_status sb_tensor_flatten(sb_tensor **out, const sb_tensor *src, int start_dim, int end_dim) {
    const char *fn = "sb_tensor_flatten";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    if (!src) return sb_fail(SB_ERR_NULL, "%s: src is NULL", fn);
    int nd = src->ndim ? src->ndim : 1;
    if (start_dim < 0) start_dim += nd;
    if (end_dim < 0) end_dim += nd;
    if (start_dim < 0 || end_dim >= nd || start_dim > end_dim)
        return sb_fail(SB_ERR_ARG, "%s: dims [%d, %d] are invalid for %d dimensions", fn, start_dim,
                       end_dim, src->ndim);
    int64_t shape[SB_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < start_dim; i++) shape[n++] = src->shape[i];
    int64_t merged = 1;
    for (int i = start_dim; i <= end_dim && src->ndim; i++) merged *= src->shape[i];
    shape[n++] = merged;
    for (int i = end_dim + 1; i < src->ndim; i++) shape[n++] = src->shape[i];
    return sb_tensor_reshape(out, src, n, shape);
}

sb_status sb_tensor_transpose(sb_tensor **out, const sb_tensor *src, int dim0, int dim1) {
    const char *fn = "sb_tensor_transpose";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    if (!src) return sb_fail(SB_ERR_NULL, "%s: src is NULL", fn);
    if (dim0 < 0) dim0 += src->ndim;
    if (dim1 < 0) dim1 += src->ndim;
    if (dim0 < 0 || dim1 < 0 || dim0 >= src->ndim || dim1 >= src->ndim)
        return sb_fail(SB_ERR_ARG, "%s: dims out of range for %d dimensions", fn, src->ndim);
    int64_t shape[SB_MAX_DIMS], strides[SB_MAX_DIMS];
    for (int i = 0; i < src->ndim; i++) { shape[i] = src->shape[i]; strides[i] = src->strides[i]; }
    shape[dim0] = src->shape[dim1]; strides[dim0] = src->strides[dim1];
    shape[dim1] = src->shape[dim0]; strides[dim1] = src->strides[dim0];
    return make_view(fn, out, src, src->ndim, shape, strides);
}

sb_status sb_check_host_tensor(const char *fn, const char *name, const sb_tensor *t,
                               sb_dtype dtype, int ndim) {
    if (t && t->device != SB_DEVICE_CPU)
        return sb_fail(SB_ERR_DEVICE, "%s: %s is not on the CPU (it is on the %s device; copy it "
                       "with sb_tensor_to)", fn, name, sb_device_name(t->device));
    return sb_check_tensor(fn, name, t, dtype, ndim);
}
