/* Argument checks shared by every tensor-level op (src/ops/validate.h), and
 * the dispatch of a call onto the one device its tensors live on. */
#include <stdio.h>
#include <stdlib.h>
#include "ops/validate.h"

/* ---- shapes, layouts, aliasing ---- */

sb_status sb_expect_shape(const char *fn, const char *name, const sb_tensor *t, int ndim,
                              const int64_t *shape) {
    bool same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
    if (same) return SB_OK;
    sb_tensor want = {.ndim = ndim};
    for (int i = 0; i < ndim; i++) want.shape[i] = shape[i];
    char got_s[160], want_s[160];
    return sb_fail(SB_ERR_SHAPE, "%s: %s has shape %s, expected %s", fn, name,
                   sb_shape_str(t, got_s, sizeof got_s), sb_shape_str(&want, want_s, sizeof want_s));
}

sb_status sb_check_contig(const char *fn, const char *name, const sb_tensor *t) {
    /* An empty tensor has no element to misplace, whatever its strides. */
    if (sb_tensor_numel(t) == 0) return SB_OK;
    return sb_check_contiguous(fn, name, t);
}

/* A float32 CPU tensor of rank in [min_nd, max_nd], dense. */
sb_status sb_check_dense(const char *fn, const char *name, const sb_tensor *t, int min_nd,
                             int max_nd) {
    SB_TRY(sb_check_tensor(fn, name, t, SB_F32, -1));
    if (t->ndim < min_nd || t->ndim > max_nd) {
        char buf[160];
        if (min_nd == max_nd)
            return sb_fail(SB_ERR_SHAPE, "%s: %s must have %d dimensions, got shape %s", fn, name,
                           min_nd, sb_shape_str(t, buf, sizeof buf));
        return sb_fail(SB_ERR_SHAPE, "%s: %s must have %d to %d dimensions, got shape %s", fn, name,
                       min_nd, max_nd, sb_shape_str(t, buf, sizeof buf));
    }
    return sb_check_contig(fn, name, t);
}

/* Fails when output `oname` shares memory with tensor `name`. */
sb_status sb_check_no_alias(const char *fn, const char *oname, const sb_tensor *out,
                                const char *name, const sb_tensor *t) {
    if (sb_ref_tensors_overlap(out, t))
        return sb_fail(SB_ERR_ARG, "%s: %s shares memory with %s (outputs must not alias)", fn,
                       oname, name);
    return SB_OK;
}

sb_status sb_pw_broadcast_view(const char *fn, const char *name, const sb_tensor *t, int ndim,
                               const int64_t *shape, sb_tensor *view) {
    if (t->ndim > ndim) {
        char buf[128];
        return sb_fail(SB_ERR_SHAPE, "%s: %s has shape %s with more than %d dimensions", fn, name,
                       sb_shape_str(t, buf, sizeof buf), ndim);
    }
    *view = *t;
    view->ndim = ndim;
    int lead = ndim - t->ndim;
    for (int i = ndim - 1; i >= 0; i--) {
        int64_t s = i >= lead ? t->shape[i - lead] : 1;
        int64_t st = i >= lead ? t->strides[i - lead] : 0;
        if (s != shape[i] && s != 1) {
            char buf[128];
            return sb_fail(SB_ERR_SHAPE, "%s: %s of shape %s cannot broadcast to size %lld at dimension %d",
                           fn, name, sb_shape_str(t, buf, sizeof buf), (long long)shape[i], i);
        }
        view->shape[i] = shape[i];
        view->strides[i] = s == shape[i] ? st : 0;
        if (shape[i] == 1) view->strides[i] = 0; /* size 1: any stride is the same element */
    }
    return SB_OK;
}

sb_status sb_pw_check_out(const char *fn, const char *name, const sb_tensor *out) {
    if (sb_tensor_numel(out) == 0) return SB_OK;
    /* Sufficient test for distinct elements: sorted by |stride|, each
     * dimension's step must clear the whole extent of the smaller ones. */
    int64_t st[SB_MAX_DIMS], sh[SB_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < out->ndim; i++) {
        if (out->shape[i] <= 1) continue;
        int64_t s = out->strides[i] < 0 ? -out->strides[i] : out->strides[i];
        int j = n++;
        while (j > 0 && st[j - 1] > s) { st[j] = st[j - 1]; sh[j] = sh[j - 1]; j--; }
        st[j] = s;
        sh[j] = out->shape[i];
    }
    int64_t extent = 0;
    for (int i = 0; i < n; i++) {
        if (st[i] <= extent)
            return sb_fail(SB_ERR_ARG, "%s: %s has overlapping elements (stride %lld); it must not overlap itself",
                           fn, name, (long long)st[i]);
        extent += (sh[i] - 1) * st[i];
    }
    return SB_OK;
}

/* Byte range [lo, hi) touched by t. */
static void span(const sb_tensor *t, uintptr_t *lo, uintptr_t *hi) {
    int64_t mn = 0, mx = 0;
    for (int i = 0; i < t->ndim; i++) {
        int64_t e = (t->shape[i] - 1) * t->strides[i];
        if (e < 0) mn += e; else mx += e;
    }
    size_t es = sb_dtype_size(t->dtype);
    uintptr_t base = (uintptr_t)t->data;
    *lo = base + (uintptr_t)(mn * (int64_t)es);
    *hi = base + (uintptr_t)((mx + 1) * (int64_t)es);
}

bool sb_pw_overlap(const sb_tensor *a, const sb_tensor *b) {
    if (sb_tensor_numel(a) == 0 || sb_tensor_numel(b) == 0) return false;
    uintptr_t alo, ahi, blo, bhi;
    span(a, &alo, &ahi);
    span(b, &blo, &bhi);
    return alo < bhi && blo < ahi;
}

sb_status sb_pw_check_alias(const char *fn, const char *in_name, const sb_tensor *in_orig,
                            const sb_tensor *in_view, const char *out_name,
                            const sb_tensor *out) {
    if (!sb_pw_overlap(in_orig, out)) return SB_OK;
    int same = in_view->data == out->data && in_view->ndim == out->ndim;
    for (int i = 0; same && i < out->ndim; i++)
        same = out->shape[i] <= 1 || in_view->strides[i] == out->strides[i];
    if (!same)
        return sb_fail(SB_ERR_ARG, "%s: %s overlaps %s without the identical layout (in-place needs the same data and strides)",
                       fn, out_name, in_name);
    return SB_OK;
}

sb_status sb_pw_check_same(const char *fn, int nin, const sb_tensor *const *in,
                           const char *const *names, const sb_tensor *out, const char *out_name) {
    for (int k = 0; k < nin; k++) SB_TRY(sb_check_tensor(fn, names[k], in[k], SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, out_name, out, SB_F32, -1));
    for (int k = 0; k < nin; k++) SB_TRY(sb_check_same_shape(fn, out_name, out, names[k], in[k]));
    SB_TRY(sb_pw_check_out(fn, out_name, out));
    for (int k = 0; k < nin; k++) SB_TRY(sb_pw_check_alias(fn, names[k], in[k], in[k], out_name, out));
    return SB_OK;
}

sb_status sb_pw_check_shape(const char *fn, const char *name, const sb_tensor *t, int nd,
                                   const int64_t *shape, const char *what) {
    int same = t->ndim == nd;
    for (int i = 0; same && i < nd; i++) same = t->shape[i] == shape[i];
    if (!same) {
        sb_tensor want = { .ndim = nd };
        for (int i = 0; i < nd; i++) want.shape[i] = shape[i];
        char bt[128], bw[128];
        return sb_fail(SB_ERR_SHAPE, "%s: %s has shape %s, expected %s %s", fn, name,
                       sb_shape_str(t, bt, sizeof bt), what, sb_shape_str(&want, bw, sizeof bw));
    }
    return SB_OK;
}


/* ---- devices ---- */

/* Copies the i-th comma-separated name of `names` into buf. */
static const char *nth_name(const char *names, int i, char *buf, size_t len) {
    const char *p = names;
    for (int k = 0; k < i && p; k++) {
        p = strchr(p, ',');
        if (p) p++;
    }
    if (!p) return "a tensor";
    while (*p == ' ') p++;
    size_t n = 0;
    while (p[n] && p[n] != ',' && p[n] != ' ' && n + 1 < len) n++;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return buf;
}

sb_status sb_ops_backend_of(const char *fn, const char *names, int n,
                            const sb_tensor *const *ts, const sb_backend **be) {
    int first = -1;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) continue;
        if (first < 0) { first = i; continue; }
        if (ts[i]->device != ts[first]->device) {
            char a[32], b[32];
            return sb_fail(SB_ERR_DEVICE,
                           "%s: %s is on the %s device but %s is on the %s device (one call "
                           "takes tensors of one device; move one with sb_tensor_to)",
                           fn, nth_name(names, first, a, sizeof a),
                           sb_device_name(ts[first]->device), nth_name(names, i, b, sizeof b),
                           sb_device_name(ts[i]->device));
        }
    }
    const sb_backend *found = sb_backend_get(fn, first < 0 ? SB_DEVICE_CPU : ts[first]->device);
    if (!found) return SB_ERR_DEVICE; /* the message names the missing device */
    *be = found;
    return SB_OK;
}

sb_status sb_ops_read_host(const char *fn, const sb_backend *be, const sb_tensor *t,
                           const void **host, void **owned) {
    *owned = NULL;
    if (be->host_addressable && sb_tensor_is_contiguous(t)) {
        *host = t->data;
        return SB_OK;
    }
    size_t es = sb_dtype_size(t->dtype), bytes = (size_t)sb_tensor_numel(t) * es;
    sb_tensor *dense = NULL;
    if (!sb_tensor_is_contiguous(t)) { /* gather on the device, then one download */
        SB_TRY(sb_tensor_new_on(&dense, t->device, t->dtype, t->ndim, t->shape));
        sb_status st = be->copy(be, t, dense);
        if (st != SB_OK) { sb_tensor_free(dense); return st; }
    }
    void *buf = sb_malloc(fn, bytes ? bytes : 1);
    if (!buf) { sb_tensor_free(dense); return SB_ERR_NOMEM; }
    sb_status st = be->download(be, buf, dense ? dense->data : t->data, bytes);
    sb_tensor_free(dense);
    if (st != SB_OK) { free(buf); return st; }
    *host = buf;
    *owned = buf;
    return SB_OK;
}

sb_status sb_ops_check_index_values(const char *fn, const sb_backend *be, const sb_tensor *index,
                                    const char *iname, int64_t size, const char *tname, int d) {
    int64_t n = sb_tensor_numel(index);
    if (n == 0) return SB_OK;
    const void *host;
    void *owned;
    SB_TRY(sb_ops_read_host(fn, be, index, &host, &owned));
    const int64_t *ip = host;
    sb_status st = SB_OK;
    for (int64_t e = 0; e < n; e++)
        if (ip[e] < 0 || ip[e] >= size) {
            st = sb_fail(SB_ERR_RANGE,
                         "%s: %s element %lld is %lld, outside [0, %lld) (the size of %s along "
                         "dim %d)",
                         fn, iname, (long long)e, (long long)ip[e], (long long)size, tname, d);
            break;
        }
    free(owned);
    return st;
}
