/* Tensor-level sort, topk, kthvalue, median and their common backward
 * (include/samebits/index.h; contract section 18, "Sort, topk, kthvalue and
 * median"): validation, the geometry (src/ref/ref_sort.h) and the mapping
 * onto the device's two selection entries. On the CPU the threaded kernels
 * of src/cpu/sort.c run, bit for bit src/ref/sort.c. */
#include "samebits/index.h"
#include "core/fpenv.h"
#include "ops/validate.h"

/* The dtypes of a forward call and its dim; *n is the column length. */
static sb_status check_forward(const char *fn, const sb_tensor *x, int dim, const sb_tensor *values,
                               const sb_tensor *indices, int *d, int64_t *n) {
    SB_TRY(sb_check_tensor(fn, "x", x, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "values", values, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "indices", indices, SB_I64, -1));
    SB_TRY(sb_ops_wrap_dim(fn, dim, x->ndim, d));
    *n = sb_ops_size_at(x, *d);
    return SB_OK;
}

/* Output shapes and memory, then the device run. The outputs have x's
 * shape with `count` along d (reduced false), or one rank per column with
 * d removed (reduced and !keepdim) or kept with size 1. */
static sb_status run_forward(const char *fn, const sb_tensor *x, int d, int64_t count,
                             bool reduced, bool keepdim, bool descending, bool median,
                             int64_t start, sb_tensor *values, sb_tensor *indices) {
    int64_t want[SB_MAX_DIMS];
    int nd = 0;
    for (int k = 0; k < x->ndim; k++) {
        if (k == d && reduced && !keepdim) continue;
        want[nd++] = k == d ? count : x->shape[k];
    }
    const char *what = reduced ? "x's shape reduced over dim," : "x's shape with k along dim,";
    SB_TRY(sb_pw_check_shape(fn, "values", values, nd, want, what));
    SB_TRY(sb_pw_check_shape(fn, "indices", indices, nd, want, what));
    SB_TRY(sb_pw_check_out(fn, "values", values));
    SB_TRY(sb_pw_check_out(fn, "indices", indices));
    if (sb_pw_overlap(values, x)) return sb_fail(SB_ERR_ARG, "%s: values overlaps x", fn);
    if (sb_pw_overlap(indices, x)) return sb_fail(SB_ERR_ARG, "%s: indices overlaps x", fn);
    if (sb_pw_overlap(values, indices))
        return sb_fail(SB_ERR_ARG, "%s: values overlaps indices", fn);
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, values, indices));
    sb_ref_sort_geom g = {.ndim = x->ndim ? x->ndim : 1, .dim = d, .count = count,
                          .descending = descending, .median = median, .start = start};
    for (int k = 0; k < g.ndim; k++) {
        /* the output axis of x's axis k: none for a removed dim */
        int ok = reduced && !keepdim && k > d ? k - 1 : k;
        bool removed = reduced && !keepdim && k == d;
        g.shape[k] = sb_ops_size_at(x, k);
        g.x_stride[k] = sb_ops_stride_at(x, k);
        g.v_stride[k] = removed || values->ndim == 0 ? 0 : values->strides[ok];
        g.i_stride[k] = removed || indices->ndim == 0 ? 0 : indices->strides[ok];
    }
    return SB_BACKEND_RUN(fn, be, sort_select, &g, x->data, values->data, indices->data);
}

sb_status sb_sort(const sb_tensor *x, int dim, bool descending, sb_tensor *values,
                  sb_tensor *indices) {
    SB_FPENV_GUARD();
    const char *fn = "sb_sort";
    int d = 0;
    int64_t n;
    SB_TRY(check_forward(fn, x, dim, values, indices, &d, &n));
    return run_forward(fn, x, d, n, false, false, descending, false, 0, values, indices);
}

sb_status sb_topk(const sb_tensor *x, int64_t k, int dim, bool largest, sb_tensor *values,
                  sb_tensor *indices) {
    SB_FPENV_GUARD();
    const char *fn = "sb_topk";
    int d = 0;
    int64_t n;
    SB_TRY(check_forward(fn, x, dim, values, indices, &d, &n));
    if (k < 0 || k > n)
        return sb_fail(SB_ERR_ARG, "%s: k = %lld is outside [0, %lld] (the size of x along dim %d)",
                       fn, (long long)k, (long long)n, d);
    return run_forward(fn, x, d, k, false, false, largest, false, 0, values, indices);
}

sb_status sb_kthvalue(const sb_tensor *x, int64_t k, int dim, bool keepdim, sb_tensor *values,
                      sb_tensor *indices) {
    SB_FPENV_GUARD();
    const char *fn = "sb_kthvalue";
    int d = 0;
    int64_t n;
    SB_TRY(check_forward(fn, x, dim, values, indices, &d, &n));
    if (k < 1 || k > n)
        return sb_fail(SB_ERR_ARG, "%s: k = %lld is outside [1, %lld] (the size of x along dim %d)",
                       fn, (long long)k, (long long)n, d);
    return run_forward(fn, x, d, 1, true, keepdim, false, false, k - 1, values, indices);
}

sb_status sb_median(const sb_tensor *x, int dim, bool keepdim, sb_tensor *values,
                    sb_tensor *indices) {
    SB_FPENV_GUARD();
    const char *fn = "sb_median";
    int d = 0;
    int64_t n;
    SB_TRY(check_forward(fn, x, dim, values, indices, &d, &n));
    if (n == 0)
        return sb_fail(SB_ERR_SHAPE, "%s: x has size 0 along dim %d (a median needs an element)",
                       fn, d);
    return run_forward(fn, x, d, 1, true, keepdim, false, true, 0, values, indices);
}

sb_status sb_sort_backward(const sb_tensor *dy, int dim, const sb_tensor *indices, sb_tensor *dx) {
    SB_FPENV_GUARD();
    const char *fn = "sb_sort_backward";
    SB_TRY(sb_check_tensor(fn, "dy", dy, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "indices", indices, SB_I64, -1));
    SB_TRY(sb_check_tensor(fn, "dx", dx, SB_F32, -1));
    int d = 0;
    SB_TRY(sb_ops_wrap_dim(fn, dim, dx->ndim, &d));
    SB_TRY(sb_check_same_shape(fn, "indices", indices, "dy", dy));
    if (dy->ndim != dx->ndim)
        return sb_fail(SB_ERR_SHAPE, "%s: dy has %d dimensions but dx has %d (they must match; "
                       "keepdim form for kthvalue and median)", fn, dy->ndim, dx->ndim);
    for (int k = 0; k < dx->ndim; k++)
        if (k != d && dx->shape[k] != dy->shape[k])
            return sb_fail(SB_ERR_SHAPE,
                           "%s: dx has size %lld along dimension %d but dy has %lld (they must "
                           "match except along dim = %d)",
                           fn, (long long)dx->shape[k], k, (long long)dy->shape[k], d);
    SB_TRY(sb_pw_check_out(fn, "dx", dx));
    if (sb_pw_overlap(dx, dy)) return sb_fail(SB_ERR_ARG, "%s: dx overlaps dy", fn);
    if (sb_pw_overlap(dx, indices)) return sb_fail(SB_ERR_ARG, "%s: dx overlaps indices", fn);
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, indices, dx));
    SB_TRY(sb_ops_check_index_values(fn, be, indices, "indices", sb_ops_size_at(dx, d), "dx", d));
    sb_ref_sort_geom g = {.ndim = dx->ndim ? dx->ndim : 1, .dim = d, .count = sb_ops_size_at(dy, d)};
    for (int k = 0; k < g.ndim; k++) {
        g.shape[k] = sb_ops_size_at(dx, k);
        g.x_stride[k] = sb_ops_stride_at(dx, k);
        g.v_stride[k] = sb_ops_stride_at(dy, k);
        g.i_stride[k] = sb_ops_stride_at(indices, k);
    }
    SB_TRY(be->fill(be, dx, 0.0f));
    return SB_BACKEND_RUN(fn, be, sort_scatter, &g, dy->data, indices->data, dx->data);
}
