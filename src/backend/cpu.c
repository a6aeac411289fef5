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

/* The rows (last dimension) of a tensor's index space in row-major order:
 * for each, the element offsets of its first element in t (and in u, which
 * has the same shape). A 0-dim tensor is one row of one element. */
typedef struct row_walk {
    int nd;
    int64_t rows, len, idx[SB_MAX_DIMS];
} row_walk;

static row_walk row_walk_start(const sb_tensor *t) {
    row_walk w = {.nd = t->ndim, .rows = 0, .len = t->ndim ? t->shape[t->ndim - 1] : 1};
    int64_t n = sb_tensor_numel(t);
    w.rows = w.len ? n / w.len : 0;
    return w;
}

static int64_t row_offset(const row_walk *w, const sb_tensor *t) {
    int64_t o = 0;
    for (int k = 0; k < w->nd - 1; k++) o += w->idx[k] * t->strides[k];
    return o;
}

static void row_walk_next(row_walk *w, const sb_tensor *t) {
    for (int k = w->nd - 2; k >= 0; k--) {
        if (++w->idx[k] < t->shape[k]) return;
        w->idx[k] = 0;
    }
}

static int64_t last_stride(const sb_tensor *t) { return t->ndim ? t->strides[t->ndim - 1] : 1; }

/* Row by row: one memmove per row when both rows are contiguous, else
 * element by element (sb_tensor_copy allows src and dst only identical or
 * apart, so a row's memmove is the elementwise copy). */
sb_status sb_host_copy(const sb_backend *be, const sb_tensor *src, sb_tensor *dst) {
    (void)be;
    size_t es = sb_dtype_size(src->dtype);
    int64_t ss = last_stride(src), ds = last_stride(dst);
    row_walk w = row_walk_start(src);
    for (int64_t r = 0; r < w.rows; r++, row_walk_next(&w, src)) {
        const char *sp = (const char *)src->data + row_offset(&w, src) * (int64_t)es;
        char *dp = (char *)dst->data + row_offset(&w, dst) * (int64_t)es;
        if (ss == 1 && ds == 1) {
            memmove(dp, sp, (size_t)w.len * es);
            continue;
        }
        for (int64_t i = 0; i < w.len; i++)
            memmove(dp + i * ds * (int64_t)es, sp + i * ss * (int64_t)es, es);
    }
    return SB_OK;
}

sb_status sb_host_fill(const sb_backend *be, sb_tensor *t, float value) {
    (void)be;
    int64_t st = last_stride(t);
    row_walk w = row_walk_start(t);
    for (int64_t r = 0; r < w.rows; r++, row_walk_next(&w, t)) {
        float *p = (float *)t->data + row_offset(&w, t);
        for (int64_t i = 0; i < w.len; i++) p[i * st] = value;
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
