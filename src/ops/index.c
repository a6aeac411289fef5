/* Tensor-level index family (include/samebits/index.h): validation, the
 * index-range check, and the mapping onto the device's two index entries
 * (gather, scatter-add) through one geometry (src/ref/ref_index.h). On the
 * CPU the fast kernels of src/cpu/index.c run, bit for bit src/ref/index.c. */
#include "samebits/index.h"
#include "core/fpenv.h"
#include "ops/validate.h"

/* `out` is written: not self-overlapping and on no input's memory. */
static sb_status check_written(const char *fn, const char *oname, const sb_tensor *out,
                               const char *aname, const sb_tensor *a, const char *bname,
                               const sb_tensor *b) {
    SB_TRY(sb_pw_check_out(fn, oname, out));
    if (sb_pw_overlap(out, a)) return sb_fail(SB_ERR_ARG, "%s: %s overlaps %s", fn, oname, aname);
    if (sb_pw_overlap(out, b)) return sb_fail(SB_ERR_ARG, "%s: %s overlaps %s", fn, oname, bname);
    return SB_OK;
}

/* gather / scatter_add: index and dense have one shape, the table has it
 * except along dim. */
static sb_status elementwise_geom(const char *fn, int dim, const sb_tensor *table,
                                  const char *tname, const sb_tensor *index,
                                  const sb_tensor *dense, const char *dname, sb_ref_index_geom *g) {
    int d = 0;
    SB_TRY(sb_ops_wrap_dim(fn, dim, table->ndim, &d));
    if (index->ndim != table->ndim)
        return sb_fail(SB_ERR_SHAPE, "%s: index has %d dimensions but %s has %d (they must match)",
                       fn, index->ndim, tname, table->ndim);
    SB_TRY(sb_check_same_shape(fn, dname, dense, "index", index));
    for (int k = 0; k < table->ndim; k++)
        if (k != d && table->shape[k] != index->shape[k])
            return sb_fail(SB_ERR_SHAPE,
                           "%s: %s has size %lld along dimension %d but index has %lld (they must "
                           "match except along dim = %d)",
                           fn, tname, (long long)table->shape[k], k, (long long)index->shape[k], d);
    *g = (sb_ref_index_geom){.ndim = sb_ops_rank_of(table), .dim = d};
    for (int k = 0; k < g->ndim; k++) {
        g->shape[k] = sb_ops_size_at(index, k);
        g->dense_stride[k] = sb_ops_stride_at(dense, k);
        g->index_stride[k] = sb_ops_stride_at(index, k);
        g->table_stride[k] = sb_ops_stride_at(table, k);
    }
    return SB_OK;
}

/* index_select / index_add: index is 1-D (K) or 0-D (K = 1); dense has the
 * table's shape except K along dim. */
static sb_status select_geom(const char *fn, int dim, const sb_tensor *table, const char *tname,
                             const sb_tensor *index, const sb_tensor *dense, const char *dname,
                             sb_ref_index_geom *g) {
    int d = 0;
    SB_TRY(sb_ops_wrap_dim(fn, dim, table->ndim, &d));
    if (index->ndim > 1)
        return sb_fail(SB_ERR_SHAPE, "%s: index has %d dimensions (expected 1, or 0 for one index)",
                       fn, index->ndim);
    int64_t K = sb_tensor_numel(index);
    int64_t want[SB_MAX_DIMS];
    for (int k = 0; k < table->ndim; k++) want[k] = k == d ? K : table->shape[k];
    if (table->ndim == 0 && K != 1)
        return sb_fail(SB_ERR_SHAPE, "%s: index has %lld elements; a 0-dim %s takes exactly one",
                       fn, (long long)K, tname);
    SB_TRY(sb_pw_check_shape(fn, dname, dense, table->ndim, want,
                             "the indexed tensor's shape with the index count along dim,"));
    *g = (sb_ref_index_geom){.ndim = sb_ops_rank_of(table), .dim = d};
    for (int k = 0; k < g->ndim; k++) {
        g->shape[k] = sb_ops_size_at(dense, k);
        g->dense_stride[k] = sb_ops_stride_at(dense, k);
        g->index_stride[k] = k == d && index->ndim == 1 ? index->strides[0] : 0;
        g->table_stride[k] = sb_ops_stride_at(table, k);
    }
    return SB_OK;
}

typedef enum { GATHER, SCATTER, ZERO_THEN_SCATTER } run_kind;

/* Checks the index values against the table's axis, then runs. */
static sb_status run(const char *fn, const sb_backend *be, run_kind kind,
                     const sb_ref_index_geom *g, const sb_tensor *table, const char *tname,
                     const sb_tensor *index, const sb_tensor *dense, bool scale, float alpha) {
    SB_TRY(sb_ops_check_index_values(fn, be, index, "index", sb_ops_size_at(table, g->dim), tname,
                                     g->dim));
    if (kind == GATHER)
        return SB_BACKEND_RUN(fn, be, index_gather, g, table->data, index->data, dense->data);
    if (kind == ZERO_THEN_SCATTER) SB_TRY(be->fill(be, (sb_tensor *)table, 0.0f));
    return SB_BACKEND_RUN(fn, be, index_scatter_add, g, dense->data, index->data, scale, alpha,
                          table->data);
}

sb_status sb_gather(const sb_tensor *x, int dim, const sb_tensor *index, sb_tensor *out) {
    SB_FPENV_GUARD();
    const char *fn = "sb_gather";
    SB_TRY(sb_check_tensor(fn, "x", x, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "index", index, SB_I64, -1));
    SB_TRY(sb_check_tensor(fn, "out", out, SB_F32, -1));
    sb_ref_index_geom g;
    SB_TRY(elementwise_geom(fn, dim, x, "x", index, out, "out", &g));
    SB_TRY(check_written(fn, "out", out, "x", x, "index", index));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, index, out));
    return run(fn, be, GATHER, &g, x, "x", index, out, false, 1.0f);
}

sb_status sb_gather_backward(const sb_tensor *dy, int dim, const sb_tensor *index,
                             sb_tensor *dx) {
    SB_FPENV_GUARD();
    const char *fn = "sb_gather_backward";
    SB_TRY(sb_check_tensor(fn, "dy", dy, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "index", index, SB_I64, -1));
    SB_TRY(sb_check_tensor(fn, "dx", dx, SB_F32, -1));
    sb_ref_index_geom g;
    SB_TRY(elementwise_geom(fn, dim, dx, "dx", index, dy, "dy", &g));
    SB_TRY(check_written(fn, "dx", dx, "dy", dy, "index", index));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, index, dx));
    return run(fn, be, ZERO_THEN_SCATTER, &g, dx, "dx", index, dy, false, 1.0f);
}

sb_status sb_scatter_add(int dim, const sb_tensor *index, const sb_tensor *src, sb_tensor *out) {
    SB_FPENV_GUARD();
    const char *fn = "sb_scatter_add";
    SB_TRY(sb_check_tensor(fn, "index", index, SB_I64, -1));
    SB_TRY(sb_check_tensor(fn, "src", src, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "out", out, SB_F32, -1));
    sb_ref_index_geom g;
    SB_TRY(elementwise_geom(fn, dim, out, "out", index, src, "src", &g));
    SB_TRY(check_written(fn, "out", out, "src", src, "index", index));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, index, src, out));
    return run(fn, be, SCATTER, &g, out, "out", index, src, false, 1.0f);
}

sb_status sb_index_select(const sb_tensor *x, int dim, const sb_tensor *index, sb_tensor *out) {
    SB_FPENV_GUARD();
    const char *fn = "sb_index_select";
    SB_TRY(sb_check_tensor(fn, "x", x, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "index", index, SB_I64, -1));
    SB_TRY(sb_check_tensor(fn, "out", out, SB_F32, -1));
    sb_ref_index_geom g;
    SB_TRY(select_geom(fn, dim, x, "x", index, out, "out", &g));
    SB_TRY(check_written(fn, "out", out, "x", x, "index", index));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, index, out));
    return run(fn, be, GATHER, &g, x, "x", index, out, false, 1.0f);
}

sb_status sb_index_select_backward(const sb_tensor *dy, int dim, const sb_tensor *index,
                                   sb_tensor *dx) {
    SB_FPENV_GUARD();
    const char *fn = "sb_index_select_backward";
    SB_TRY(sb_check_tensor(fn, "dy", dy, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "index", index, SB_I64, -1));
    SB_TRY(sb_check_tensor(fn, "dx", dx, SB_F32, -1));
    sb_ref_index_geom g;
    SB_TRY(select_geom(fn, dim, dx, "dx", index, dy, "dy", &g));
    SB_TRY(check_written(fn, "dx", dx, "dy", dy, "index", index));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, index, dx));
    return run(fn, be, ZERO_THEN_SCATTER, &g, dx, "dx", index, dy, false, 1.0f);
}

sb_status sb_index_add(int dim, const sb_tensor *index, const sb_tensor *source, float alpha,
                       sb_tensor *out) {
    SB_FPENV_GUARD();
    const char *fn = "sb_index_add";
    SB_TRY(sb_check_tensor(fn, "index", index, SB_I64, -1));
    SB_TRY(sb_check_tensor(fn, "source", source, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "out", out, SB_F32, -1));
    sb_ref_index_geom g;
    SB_TRY(select_geom(fn, dim, out, "out", index, source, "source", &g));
    SB_TRY(check_written(fn, "out", out, "source", source, "index", index));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, index, source, out));
    return run(fn, be, SCATTER, &g, out, "out", index, source, alpha != 1.0f, alpha);
}

sb_status sb_scatter_reduce(int dim, const sb_tensor *index, const sb_tensor *src,
                            sb_scatter_reduce_op reduce, bool include_self, sb_tensor *out) {
    SB_FPENV_GUARD();
    const char *fn = "sb_scatter_reduce";
    SB_TRY(sb_check_tensor(fn, "index", index, SB_I64, -1));
    SB_TRY(sb_check_tensor(fn, "src", src, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "out", out, SB_F32, -1));
    if ((unsigned)reduce > SB_SCATTER_AMIN)
        return sb_fail(SB_ERR_ARG, "%s: reduce = %d is not an sb_scatter_reduce_op", fn,
                       (int)reduce);
    sb_ref_index_geom g;
    SB_TRY(elementwise_geom(fn, dim, out, "out", index, src, "src", &g));
    SB_TRY(check_written(fn, "out", out, "src", src, "index", index));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, index, src, out));
    SB_TRY(sb_ops_check_index_values(fn, be, index, "index", sb_ops_size_at(out, g.dim), "out", g.dim));
    return SB_BACKEND_RUN(fn, be, scatter_reduce, &g, reduce, include_self, sb_ops_size_at(out, g.dim),
                          src->data, index->data, out->data);
}
