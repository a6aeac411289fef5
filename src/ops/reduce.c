/* Tensor-level reductions over axes and their backward: validation and the
 * mapping from tensors to the device's reduction entries (on the CPU the
 * fast kernels of src/cpu/reduce.c, bit for bit the reference kernels of
 * src/ref/reduce.c, threaded over outputs). */
#include <stdlib.h>
#include "samebits/reduce.h"
#include "core/fpenv.h"
#include "ops/validate.h"

/* dims -> bit mask of reduced axes of a tensor with `ndim` dimensions. */
static sb_status parse_dims(const char *fn, int ndim, const int *dims, int ndims, unsigned *mask) {
    if (ndims < 0) return sb_fail(SB_ERR_ARG, "%s: ndims = %d is negative", fn, ndims);
    if (ndims > 0 && !dims) return sb_fail(SB_ERR_NULL, "%s: dims is NULL but ndims = %d", fn, ndims);
    if (ndims == 0) {
        *mask = ndim ? (1u << ndim) - 1u : 0u;
        return SB_OK;
    }
    int nd = ndim ? ndim : 1; /* a 0-dim tensor reduces like one of shape [1] */
    /* No axis may repeat, so more than nd entries is an error: say so before
     * reading dims, which may hold only a few of the ndims claimed. */
    if (ndims > nd)
        return sb_fail(SB_ERR_ARG, "%s: ndims = %d is more than the %d dimensions of the tensor", fn,
                       ndims, ndim);
    unsigned m = 0;
    for (int i = 0; i < ndims; i++) {
        int d = dims[i];
        if (d < -nd || d >= nd)
            return sb_fail(SB_ERR_ARG, "%s: dims[%d] = %d is out of range for a tensor with %d dimensions",
                           fn, i, d, ndim);
        if (d < 0) d += nd;
        if (m & (1u << d)) return sb_fail(SB_ERR_ARG, "%s: dimension %d appears twice in dims", fn, d);
        m |= 1u << d;
    }
    *mask = ndim ? m : 0u;
    return SB_OK;
}

static void reduced_shape(const sb_tensor *x, unsigned mask, bool keepdim, int *nd, int64_t *shape) {
    int n = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (mask & (1u << i)) {
            if (keepdim) shape[n++] = 1;
        } else {
            shape[n++] = x->shape[i];
        }
    }
    *nd = n;
}

static int64_t reduced_count(const sb_tensor *x, unsigned mask) {
    int64_t n = 1;
    for (int i = 0; i < x->ndim; i++)
        if (mask & (1u << i)) n *= x->shape[i];
    return n;
}

/* x: the full-shape tensor; out/idx: tensors of the reduced shape (or NULL). */
static void make_geom(const sb_tensor *x, unsigned mask, bool keepdim, const sb_tensor *out,
                      const sb_tensor *idx, sb_ref_reduce_geom *g) {
    *g = (sb_ref_reduce_geom){0};
    int j = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (mask & (1u << i)) {
            g->red_shape[g->nred] = x->shape[i];
            g->red_xstride[g->nred] = x->strides[i];
            g->nred++;
            if (keepdim) j++;
        } else {
            g->keep_shape[g->nkeep] = x->shape[i];
            g->keep_xstride[g->nkeep] = x->strides[i];
            g->keep_ostride[g->nkeep] = out ? out->strides[j] : 0;
            g->keep_istride[g->nkeep] = idx ? idx->strides[j] : 0;
            g->nkeep++;
            j++;
        }
    }
}

/* Validates a result tensor of the reduced shape. */
static sb_status check_result(const char *fn, const char *name, const sb_tensor *t, sb_dtype dtype,
                              const sb_tensor *x, const char *xname, unsigned mask, bool keepdim) {
    SB_TRY(sb_check_tensor(fn, name, t, dtype, -1));
    int nd;
    int64_t shape[SB_MAX_DIMS];
    reduced_shape(x, mask, keepdim, &nd, shape);
    SB_TRY(sb_pw_check_shape(fn, name, t, nd, shape,
                             keepdim ? "the reduced shape (keepdim = true)" : "the reduced shape (keepdim = false)"));
    SB_TRY(sb_pw_check_out(fn, name, t));
    if (sb_pw_overlap(t, x)) return sb_fail(SB_ERR_ARG, "%s: %s overlaps %s", fn, name, xname);
    return SB_OK;
}

static sb_status moments(const char *fn, sb_ref_reduce_kind kind, const sb_tensor *x,
                         const int *dims, int ndims, int64_t correction, bool keepdim,
                         sb_tensor *out) {
    SB_TRY(sb_check_tensor(fn, "x", x, SB_F32, -1));
    unsigned mask;
    SB_TRY(parse_dims(fn, x->ndim, dims, ndims, &mask));
    if (correction < 0)
        return sb_fail(SB_ERR_ARG, "%s: correction = %lld is negative", fn, (long long)correction);
    SB_TRY(check_result(fn, "out", out, SB_F32, x, "x", mask, keepdim));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, out));
    sb_ref_reduce_geom g;
    make_geom(x, mask, keepdim, out, NULL, &g);
    return SB_BACKEND_RUN(fn, be, reduce, kind, &g, x->data, correction, out->data);
}

sb_status sb_sum(const sb_tensor *x, const int *dims, int ndims, bool keepdim, sb_tensor *out) {
    SB_FPENV_GUARD();
    return moments("sb_sum", SB_REF_REDUCE_SUM, x, dims, ndims, 0, keepdim, out);
}
sb_status sb_mean(const sb_tensor *x, const int *dims, int ndims, bool keepdim, sb_tensor *out) {
    SB_FPENV_GUARD();
    return moments("sb_mean", SB_REF_REDUCE_MEAN, x, dims, ndims, 0, keepdim, out);
}
sb_status sb_var(const sb_tensor *x, const int *dims, int ndims, int64_t correction, bool keepdim,
                 sb_tensor *out) {
    SB_FPENV_GUARD();
    return moments("sb_var", SB_REF_REDUCE_VAR, x, dims, ndims, correction, keepdim, out);
}
sb_status sb_std(const sb_tensor *x, const int *dims, int ndims, int64_t correction, bool keepdim,
                 sb_tensor *out) {
    SB_FPENV_GUARD();
    return moments("sb_std", SB_REF_REDUCE_STD, x, dims, ndims, correction, keepdim, out);
}

static sb_status extreme(const char *fn, bool is_max, const sb_tensor *x, const int *dims,
                         int ndims, bool keepdim, sb_tensor *out, sb_tensor *indices) {
    SB_TRY(sb_check_tensor(fn, "x", x, SB_F32, -1));
    unsigned mask;
    SB_TRY(parse_dims(fn, x->ndim, dims, ndims, &mask));
    if (out) SB_TRY(check_result(fn, "out", out, SB_F32, x, "x", mask, keepdim));
    if (indices) SB_TRY(check_result(fn, "indices", indices, SB_I64, x, "x", mask, keepdim));
    if (out && indices && sb_pw_overlap(out, indices))
        return sb_fail(SB_ERR_ARG, "%s: out overlaps indices", fn);
    if (reduced_count(x, mask) == 0)
        return sb_fail(SB_ERR_SHAPE, "%s: cannot reduce over an empty extent (a reduced dimension of x has size 0)", fn);
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, out, indices));
    sb_ref_reduce_geom g;
    make_geom(x, mask, keepdim, out, indices, &g);
    return SB_BACKEND_RUN(fn, be, reduce_extreme, is_max, &g, x->data, out ? out->data : NULL,
                          indices ? indices->data : NULL);
}

sb_status sb_max(const sb_tensor *x, const int *dims, int ndims, bool keepdim, sb_tensor *out,
                 sb_tensor *indices) {
    SB_FPENV_GUARD();
    if (!out) return sb_fail(SB_ERR_NULL, "sb_max: out is NULL");
    return extreme("sb_max", true, x, dims, ndims, keepdim, out, indices);
}
sb_status sb_min(const sb_tensor *x, const int *dims, int ndims, bool keepdim, sb_tensor *out,
                 sb_tensor *indices) {
    SB_FPENV_GUARD();
    if (!out) return sb_fail(SB_ERR_NULL, "sb_min: out is NULL");
    return extreme("sb_min", false, x, dims, ndims, keepdim, out, indices);
}
sb_status sb_argmax(const sb_tensor *x, const int *dims, int ndims, bool keepdim,
                    sb_tensor *indices) {
    SB_FPENV_GUARD();
    if (!indices) return sb_fail(SB_ERR_NULL, "sb_argmax: indices is NULL");
    return extreme("sb_argmax", true, x, dims, ndims, keepdim, NULL, indices);
}
sb_status sb_argmin(const sb_tensor *x, const int *dims, int ndims, bool keepdim,
                    sb_tensor *indices) {
    SB_FPENV_GUARD();
    if (!indices) return sb_fail(SB_ERR_NULL, "sb_argmin: indices is NULL");
    return extreme("sb_argmin", false, x, dims, ndims, keepdim, NULL, indices);
}

/* ---- backward ------------------------------------------------------------ */

/* Validates dx (full shape) and dy (reduced shape); returns the mask. */
static sb_status check_backward(const char *fn, const sb_tensor *dy, const int *dims, int ndims,
                                bool keepdim, sb_tensor *dx, unsigned *mask) {
    SB_TRY(sb_check_tensor(fn, "dx", dx, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "dy", dy, SB_F32, -1));
    SB_TRY(parse_dims(fn, dx->ndim, dims, ndims, mask));
    int nd;
    int64_t shape[SB_MAX_DIMS];
    reduced_shape(dx, *mask, keepdim, &nd, shape);
    SB_TRY(sb_pw_check_shape(fn, "dy", dy, nd, shape, "the reduced shape of dx"));
    SB_TRY(sb_pw_check_out(fn, "dx", dx));
    if (sb_pw_overlap(dx, dy)) return sb_fail(SB_ERR_ARG, "%s: dx overlaps dy", fn);
    return SB_OK;
}

/* dx = dy broadcast over the reduced axes, divided by nf when nf != NULL. */
static sb_status spread(const char *fn, const sb_tensor *dy, const int *dims, int ndims,
                        bool keepdim, sb_tensor *dx, bool divide) {
    unsigned mask;
    SB_TRY(check_backward(fn, dy, dims, ndims, keepdim, dx, &mask));
    sb_tensor v = *dy;
    v.ndim = dx->ndim;
    int j = 0;
    for (int i = 0; i < dx->ndim; i++) {
        v.shape[i] = dx->shape[i];
        if (mask & (1u << i)) {
            v.strides[i] = 0;
            if (keepdim) j++;
        } else {
            v.strides[i] = dy->strides[j++];
        }
    }
    float nf = (float)reduced_count(dx, mask);
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, dx));
    return SB_BACKEND_RUN(fn, be, spread, &v, divide, nf, dx);
}

sb_status sb_sum_backward(const sb_tensor *dy, const int *dims, int ndims, bool keepdim,
                          sb_tensor *dx) {
    SB_FPENV_GUARD();
    return spread("sb_sum_backward", dy, dims, ndims, keepdim, dx, false);
}
sb_status sb_mean_backward(const sb_tensor *dy, const int *dims, int ndims, bool keepdim,
                           sb_tensor *dx) {
    SB_FPENV_GUARD();
    return spread("sb_mean_backward", dy, dims, ndims, keepdim, dx, true);
}

sb_status sb_max_backward(const sb_tensor *dy, const sb_tensor *indices, const int *dims,
                          int ndims, bool keepdim, sb_tensor *dx) {
    SB_FPENV_GUARD();
    const char *fn = "sb_max_backward";
    unsigned mask;
    SB_TRY(check_backward(fn, dy, dims, ndims, keepdim, dx, &mask));
    SB_TRY(sb_check_tensor(fn, "indices", indices, SB_I64, -1));
    SB_TRY(sb_check_same_shape(fn, "indices", indices, "dy", dy));
    if (sb_pw_overlap(dx, indices)) return sb_fail(SB_ERR_ARG, "%s: dx overlaps indices", fn);
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, indices, dx));
    /* Every index is checked before dx is touched (in row-major order). */
    int64_t n = reduced_count(dx, mask), cnt = sb_tensor_numel(indices);
    const void *host;
    void *owned;
    SB_TRY(sb_ops_read_host(fn, be, indices, &host, &owned));
    const int64_t *ip = host;
    for (int64_t e = 0; e < cnt; e++)
        if (ip[e] < 0 || ip[e] >= n) {
            sb_status st = sb_fail(SB_ERR_RANGE, "%s: indices element %lld is %lld, outside [0, %lld)",
                                   fn, (long long)e, (long long)ip[e], (long long)n);
            free(owned);
            return st;
        }
    free(owned);
    sb_ref_reduce_geom g;
    make_geom(dx, mask, keepdim, dy, indices, &g);
    return SB_BACKEND_RUN(fn, be, reduce_scatter, &g, dy->data, indices->data, dx->data);
}
