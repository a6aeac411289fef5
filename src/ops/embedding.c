/* Embedding lookups over the index family (contract section 18,
 * "Embedding"): the forward is sb_index_select of dim 0 over the flattened
 * indices; the backward is sb_index_select_backward of dy's rows with the
 * positions at padding_idx left out, so each weight row's gradient is +0
 * plus the rows of dy naming it, in ascending position. */
#include "samebits/index.h"
#include "core/fpenv.h"
#include "core/internal.h"

/* weight-like (num, D) and indices; *K = numel(indices). out-like must have
 * shape indices.shape + (D). */
static sb_status check_shapes(const char *fn, const char *table_name, const sb_tensor *table,
                              const sb_tensor *indices, const char *rows_name,
                              const sb_tensor *rows, int64_t *K) {
    SB_TRY(sb_check_host_tensor(fn, table_name, table, SB_F32, 2));
    SB_TRY(sb_check_host_tensor(fn, "indices", indices, SB_I64, -1));
    SB_TRY(sb_check_host_tensor(fn, rows_name, rows, SB_F32, -1));
    if (indices->ndim >= SB_MAX_DIMS)
        return sb_fail(SB_ERR_SHAPE, "%s: indices have %d dims; at most %d (the rows add one)", fn,
                       indices->ndim, SB_MAX_DIMS - 1);
    SB_TRY(sb_check_contiguous(fn, "indices", indices));
    SB_TRY(sb_check_contiguous(fn, rows_name, rows));
    bool ok = rows->ndim == indices->ndim + 1 && rows->shape[indices->ndim] == table->shape[1];
    for (int i = 0; ok && i < indices->ndim; i++) ok = rows->shape[i] == indices->shape[i];
    if (!ok) {
        char a[128], b[128], c[128];
        return sb_fail(SB_ERR_SHAPE, "%s: %s must have shape indices.shape + (D,) = %s + (%lld,), "
                       "got %s (%s is %s)", fn, rows_name, sb_shape_str(indices, a, sizeof a),
                       (long long)table->shape[1], sb_shape_str(rows, b, sizeof b), table_name,
                       sb_shape_str(table, c, sizeof c));
    }
    *K = sb_tensor_numel(indices);
    return SB_OK;
}

/* Every index in [0, num), checked before anything is written. */
static sb_status check_range(const char *fn, const sb_tensor *indices, int64_t K, int64_t num,
                             const char *table_name) {
    const int64_t *ix = indices->data;
    for (int64_t i = 0; i < K; i++)
        if (ix[i] < 0 || ix[i] >= num)
            return sb_fail(SB_ERR_RANGE, "%s: indices element %lld is %lld, outside [0, %lld) "
                           "(the rows of %s)", fn, (long long)i, (long long)ix[i],
                           (long long)num, table_name);
    return SB_OK;
}

/* The views the index ops take: indices as (K), rows as (K, D). */
static sb_status flat_views(const sb_tensor *indices, const sb_tensor *rows, int64_t K, int64_t D,
                            sb_tensor **idx, sb_tensor **mat) {
    *idx = *mat = NULL;
    SB_TRY(sb_tensor_reshape(idx, indices, 1, &K));
    sb_status s = sb_tensor_reshape(mat, rows, 2, (const int64_t[]){K, D});
    if (s != SB_OK) {
        sb_tensor_free(*idx);
        *idx = NULL;
    }
    return s;
}

sb_status sb_embedding_forward(const sb_tensor *weight, const sb_tensor *indices, sb_tensor *out) {
    SB_FPENV_GUARD();
    const char *fn = "sb_embedding_forward";
    int64_t K;
    SB_TRY(check_shapes(fn, "weight", weight, indices, "out", out, &K));
    SB_TRY(sb_check_disjoint(fn, 1, (const char *const[]){"out"}, (const sb_tensor *const[]){out},
                             2, (const char *const[]){"weight", "indices"},
                             (const sb_tensor *const[]){weight, indices}));
    SB_TRY(check_range(fn, indices, K, weight->shape[0], "weight"));
    sb_tensor *idx, *mat;
    SB_TRY(flat_views(indices, out, K, weight->shape[1], &idx, &mat));
    sb_status s = sb_index_select(weight, 0, idx, mat);
    sb_tensor_free(idx);
    sb_tensor_free(mat);
    return s;
}

sb_status sb_embedding_backward(const sb_tensor *dy, const sb_tensor *indices, int64_t padding_idx,
                                sb_tensor *dweight) {
    SB_FPENV_GUARD();
    const char *fn = "sb_embedding_backward";
    int64_t K;
    SB_TRY(check_shapes(fn, "dweight", dweight, indices, "dy", dy, &K));
    int64_t num = dweight->shape[0], D = dweight->shape[1];
    SB_TRY(check_range(fn, indices, K, num, "dweight"));
    if (padding_idx != SB_NO_PADDING && (padding_idx < -num || padding_idx >= num))
        return sb_fail(SB_ERR_ARG, "%s: padding_idx = %lld is outside [-%lld, %lld) (or "
                       "SB_NO_PADDING)", fn, (long long)padding_idx, (long long)num,
                       (long long)num);
    SB_TRY(sb_check_contiguous(fn, "dweight", dweight));
    SB_TRY(sb_check_disjoint(fn, 1, (const char *const[]){"dweight"},
                             (const sb_tensor *const[]){dweight}, 2,
                             (const char *const[]){"dy", "indices"},
                             (const sb_tensor *const[]){dy, indices}));
    const int64_t *ix = indices->data;
    int64_t pad = padding_idx == SB_NO_PADDING ? -1 : (padding_idx + num) % num, kept = 0;
    for (int64_t i = 0; i < K; i++) kept += ix[i] != pad;
    sb_tensor *idx = NULL, *mat = NULL;
    sb_status s;
    if (kept == K) {
        SB_TRY(flat_views(indices, dy, K, D, &idx, &mat));
    } else {
        /* the kept positions, in ascending order: their indices and dy rows */
        s = sb_tensor_new(&idx, SB_I64, 1, &kept);
        if (s == SB_OK) s = sb_tensor_new(&mat, SB_F32, 2, (const int64_t[]){kept, D});
        if (s != SB_OK) {
            sb_tensor_free(idx);
            return s;
        }
        const float *rows = dy->data;
        int64_t *ki = idx->data;
        float *kr = mat->data;
        for (int64_t i = 0, k = 0; i < K; i++) {
            if (ix[i] == pad) continue;
            ki[k] = ix[i];
            memcpy(kr + k * D, rows + i * D, (size_t)D * sizeof(float));
            k++;
        }
    }
    s = sb_index_select_backward(mat, 0, idx, dweight);
    sb_tensor_free(idx);
    sb_tensor_free(mat);
    return s;
}
