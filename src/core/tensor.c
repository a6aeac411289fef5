/* Tensor creation, views, copies and the shared argument checks. */
#include <stdio.h>
#include <stdlib.h>
#include "core/checked.h"
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
    case SB_DEVICE_OPENCL: return "opencl";
    }
    return "unknown";
}

const char *sb_shape_str(const sb_tensor *t, char *buf, size_t len) {
    if (!buf || len == 0) return buf;
    buf[0] = '\0';
    if (!t) { snprintf(buf, len, "[]"); return buf; }
    if (t->ndim < 0 || t->ndim > SB_MAX_DIMS) { /* a hand-built header: print nothing past it */
        snprintf(buf, len, "[invalid ndim %d]", t->ndim);
        return buf;
    }
    size_t at = 0;
    at += (size_t)snprintf(buf + at, len - at, "[");
    for (int i = 0; i < t->ndim && at < len; i++)
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
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0)
            return sb_fail(SB_ERR_SHAPE, "%s: shape[%d] = %lld is negative", fn, i, (long long)shape[i]);
    if (!sb_checked_numel(ndim, shape, numel))
        return sb_fail(SB_ERR_SHAPE, "%s: shape is too large (its size or strides exceed %lld elements)",
                       fn, (long long)SB_NUMEL_MAX);
    return SB_OK;
}

/* shape passed sb_tensor_check_shape, so its contiguous strides are representable. */
void sb_tensor_set_header(sb_tensor *t, sb_dtype dtype, int ndim, const int64_t *shape,
                       const int64_t *strides, void *data, unsigned owner) {
    memset(t, 0, sizeof *t);
    t->dtype = dtype;
    t->device = SB_DEVICE_CPU;
    t->ndim = ndim;
    t->data = data;
    t->owner = owner;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    if (strides)
        for (int i = 0; i < ndim; i++) t->strides[i] = strides[i];
    else
        sb_checked_contiguous_strides(ndim, shape, t->strides);
}

sb_status sb_tensor_new(sb_tensor **out, sb_dtype dtype, int ndim, const int64_t *shape) {
    if (!out) return sb_fail(SB_ERR_NULL, "sb_tensor_new: out is NULL");
    *out = NULL;
    int64_t n = 0;
    size_t bytes;
    SB_TRY(sb_tensor_check_shape("sb_tensor_new", dtype, ndim, shape, &n));
    if (!sb_checked_bytes(n, sb_dtype_size(dtype), &bytes))
        return sb_fail(SB_ERR_NOMEM, "sb_tensor_new: %lld elements do not fit in memory", (long long)n);
    sb_tensor *t = sb_malloc("sb_tensor_new", sizeof *t);
    if (!t) return SB_ERR_NOMEM;
    void *data = sb_calloc("sb_tensor_new", (size_t)n, sb_dtype_size(dtype));
    if (!data) { free(t); return SB_ERR_NOMEM; }
    sb_tensor_set_header(t, dtype, ndim, shape, NULL, data, OWN_HEAP);
    *out = t;
    return SB_OK;
}

/* An arena tensor, its data zero-filled or left as the arena holds it. */
static sb_status new_in(const char *fn, sb_tensor **out, sb_arena *arena, sb_dtype dtype, int ndim,
                        const int64_t *shape, bool zero) {
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    if (!arena) return sb_fail(SB_ERR_NULL, "%s: arena is NULL", fn);
    int64_t n;
    size_t bytes;
    SB_TRY(sb_tensor_check_shape(fn, dtype, ndim, shape, &n));
    if (!sb_checked_bytes(n, sb_dtype_size(dtype), &bytes))
        return sb_fail(SB_ERR_NOMEM, "%s: %lld elements do not fit in memory", fn, (long long)n);
    sb_tensor *t = sb_arena_alloc(arena, sizeof *t);
    void *data = t ? sb_arena_alloc(arena, bytes) : NULL;
    if (!data) return SB_ERR_NOMEM;
    if (zero) memset(data, 0, bytes);
    sb_tensor_set_header(t, dtype, ndim, shape, NULL, data, OWN_ARENA);
    *out = t;
    return SB_OK;
}

sb_status sb_tensor_new_in(sb_tensor **out, sb_arena *arena, sb_dtype dtype, int ndim,
                           const int64_t *shape) {
    return new_in("sb_tensor_new_in", out, arena, dtype, ndim, shape, true);
}

sb_status sb_tensor_new_in_unfilled(sb_tensor **out, sb_arena *arena, sb_dtype dtype, int ndim,
                                    const int64_t *shape) {
    return new_in("sb_tensor_new_in_unfilled", out, arena, dtype, ndim, shape, false);
}

sb_status sb_tensor_wrap(sb_tensor **out, void *data, sb_dtype dtype, int ndim,
                         const int64_t *shape, const int64_t *strides) {
    if (!out) return sb_fail(SB_ERR_NULL, "sb_tensor_wrap: out is NULL");
    *out = NULL;
    int64_t n;
    SB_TRY(sb_tensor_check_shape("sb_tensor_wrap", dtype, ndim, shape, &n));
    if (!data && n > 0) return sb_fail(SB_ERR_NULL, "sb_tensor_wrap: data is NULL");
    int64_t span;
    if (strides && !sb_checked_span(ndim, shape, strides, &span))
        return sb_fail(SB_ERR_SHAPE, "sb_tensor_wrap: strides reach offsets beyond %lld elements",
                       (long long)SB_NUMEL_MAX);
    sb_tensor *t = sb_malloc("sb_tensor_wrap", sizeof *t);
    if (!t) return SB_ERR_NOMEM;
    sb_tensor_set_header(t, dtype, ndim, shape, strides, data, OWN_WRAP);
    *out = t;
    return SB_OK;
}

/* Why a header cannot be used: a status and a reason in buf, or SB_OK. Checks
 * only the fields, never the memory: ndim in 0..SB_MAX_DIMS (before any
 * shape is read), a valid dtype and device, shapes >= 0 with a representable
 * size, and strides whose offsets fit in int64. */
static sb_status header_problem(const sb_tensor *t, char *buf, size_t len) {
    if (t->ndim < 0 || t->ndim > SB_MAX_DIMS) {
        snprintf(buf, len, "ndim %d is outside 0..%d", t->ndim, SB_MAX_DIMS);
        return SB_ERR_SHAPE;
    }
    if (sb_dtype_size(t->dtype) == 0) {
        snprintf(buf, len, "dtype %d is not a valid sb_dtype", (int)t->dtype);
        return SB_ERR_DTYPE;
    }
    if ((unsigned)t->device > (unsigned)SB_DEVICE_OPENCL) {
        snprintf(buf, len, "device %d is not a valid sb_device", (int)t->device);
        return SB_ERR_DEVICE;
    }
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] < 0) {
            snprintf(buf, len, "shape[%d] = %lld is negative", i, (long long)t->shape[i]);
            return SB_ERR_SHAPE;
        }
    int64_t n, span;
    if (!sb_checked_numel(t->ndim, t->shape, &n)) {
        snprintf(buf, len, "its size exceeds %lld elements", (long long)SB_NUMEL_MAX);
        return SB_ERR_SHAPE;
    }
    if (!sb_checked_span(t->ndim, t->shape, t->strides, &span)) {
        snprintf(buf, len, "its strides reach offsets beyond %lld elements", (long long)SB_NUMEL_MAX);
        return SB_ERR_SHAPE;
    }
    return SB_OK;
}

sb_status sb_check_header(const char *fn, const char *name, const sb_tensor *t) {
    if (!t) return sb_fail(SB_ERR_NULL, "%s: %s is NULL", fn, name);
    char why[96];
    sb_status st = header_problem(t, why, sizeof why);
    if (st != SB_OK) return sb_fail(st, "%s: %s is not a valid tensor: %s", fn, name, why);
    return SB_OK;
}

/* -1 for a header that is not valid (see header_problem). */
int64_t sb_tensor_numel(const sb_tensor *t) {
    if (!t) return 0;
    char why[96];
    int64_t n;
    if (header_problem(t, why, sizeof why) != SB_OK || !sb_checked_numel(t->ndim, t->shape, &n))
        return -1;
    return n;
}

bool sb_tensor_is_contiguous(const sb_tensor *t) {
    int64_t n = sb_tensor_numel(t);
    if (!t || n < 0) return false;
    if (n == 0) return true; /* no element has an address to disagree about */
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
    SB_TRY(sb_check_header(fn, name, t)); /* a valid device; the op then dispatches on it */
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
    SB_TRY(sb_check_header(fn, name, t));
    if (!sb_tensor_is_contiguous(t))
        return sb_fail(SB_ERR_ARG, "%s: %s must be contiguous (use sb_tensor_copy into a new tensor)", fn, name);
    return SB_OK;
}

sb_status sb_check_same_shape(const char *fn, const char *name_a, const sb_tensor *a,
                              const char *name_b, const sb_tensor *b) {
    SB_TRY(sb_check_header(fn, name_a, a));
    SB_TRY(sb_check_header(fn, name_b, b));
    int same = a->ndim == b->ndim;
    for (int i = 0; same && i < a->ndim; i++) same = a->shape[i] == b->shape[i];
    if (!same) {
        char sa[128], sb[128];
        return sb_fail(SB_ERR_SHAPE, "%s: %s has shape %s but %s has shape %s", fn, name_a,
                       sb_shape_str(a, sa, sizeof sa), name_b, sb_shape_str(b, sb, sizeof sb));
    }
    return SB_OK;
}

/* The bytes [lo, hi) a valid tensor's elements occupy; lo == hi if none. */
static void byte_range(const sb_tensor *t, uintptr_t *lo, uintptr_t *hi) {
    int64_t neg = 0, pos = 0;
    *lo = *hi = (uintptr_t)t->data;
    if (sb_tensor_numel(t) <= 0 || !t->data) return;
    for (int i = 0; i < t->ndim; i++) { /* each term bounded by sb_checked_span */
        int64_t reach = t->strides[i] * (t->shape[i] - 1);
        if (reach < 0) neg += reach; else pos += reach;
    }
    size_t es = sb_dtype_size(t->dtype);
    *lo = (uintptr_t)t->data - (uintptr_t)(-neg) * es;
    *hi = (uintptr_t)t->data + (uintptr_t)pos * es + es;
}

static bool tensors_overlap(const sb_tensor *a, const sb_tensor *b) {
    uintptr_t alo, ahi, blo, bhi;
    byte_range(a, &alo, &ahi);
    byte_range(b, &blo, &bhi);
    return alo < ahi && blo < bhi && alo < bhi && blo < ahi;
}

sb_status sb_check_disjoint(const char *fn, int n_out, const char *const *out_names,
                            const sb_tensor *const *outs, int n_in, const char *const *in_names,
                            const sb_tensor *const *ins) {
    for (int i = 0; i < n_out; i++) {
        if (!outs[i]) continue;
        for (int j = i + 1; j < n_out; j++)
            if (outs[j] && tensors_overlap(outs[i], outs[j]))
                return sb_fail(SB_ERR_ARG, "%s: %s shares memory with %s (outputs must not overlap)", fn,
                               out_names[i], out_names[j]);
        for (int j = 0; j < n_in; j++)
            if (ins[j] && tensors_overlap(outs[i], ins[j]))
                return sb_fail(SB_ERR_ARG, "%s: %s shares memory with %s (outputs must not overlap it)",
                               fn, out_names[i], in_names[j]);
    }
    return SB_OK;
}

sb_status sb_check_in_place(const char *fn, const char *out_name, const sb_tensor *out,
                            const char *in_name, const sb_tensor *in) {
    if (!out || !in || !tensors_overlap(out, in)) return SB_OK;
    bool same = out->data == in->data && out->ndim == in->ndim && out->dtype == in->dtype;
    for (int i = 0; same && i < out->ndim; i++)
        same = out->shape[i] == in->shape[i] && (out->shape[i] == 1 || out->strides[i] == in->strides[i]);
    if (!same)
        return sb_fail(SB_ERR_ARG, "%s: %s overlaps %s without being exactly it (in place needs the same "
                       "memory, shape and strides)", fn, out_name, in_name);
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
    SB_TRY(sb_check_header(fn, "src", src));
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
        } else if (!sb_checked_mul(known, shape[i], &known)) {
            return sb_fail(SB_ERR_SHAPE, "%s: the new shape's element count overflows", fn);
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
    int64_t check;
    if (!sb_checked_numel(ndim, resolved, &check)) /* e.g. [0, 2^62, 2^62]: strides overflow */
        return sb_fail(SB_ERR_SHAPE, "%s: the new shape is too large (its strides exceed %lld elements)",
                       fn, (long long)SB_NUMEL_MAX);
    return make_view(fn, out, src, ndim, resolved, NULL);
}

sb_status sb_tensor_flatten(sb_tensor **out, const sb_tensor *src, int start_dim, int end_dim) {
    const char *fn = "sb_tensor_flatten";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    SB_TRY(sb_check_header(fn, "src", src));
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
    SB_TRY(sb_check_header(fn, "src", src));
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
