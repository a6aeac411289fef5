/* The batch loader: a per-epoch Philox permutation, batches gathered in it. */
#include <stdint.h>
#include <stdlib.h>
#include "core/fpenv.h"
#include "core/internal.h"
#include "samebits/random.h"
#include "samebits/train.h"

struct sb_loader {
    const sb_dataset *data;
    int64_t batch_size;
    bool shuffle;
    uint64_t seed;
    int64_t *order;
};

sb_status sb_loader_new(sb_loader **out, const sb_dataset *data, int64_t batch_size, bool shuffle,
                        uint64_t seed) {
    SB_FPENV_GUARD();
    const char *fn = "sb_loader_new";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    if (!data || !data->images || !data->labels) return sb_fail(SB_ERR_NULL, "%s: data is NULL or empty", fn);
    if (batch_size < 1) return sb_fail(SB_ERR_ARG, "%s: batch_size %lld must be >= 1", fn, (long long)batch_size);
    if (data->count < 1) return sb_fail(SB_ERR_ARG, "%s: the dataset has no examples", fn);
    const sb_tensor *img = data->images, *lab = data->labels;
    if (img->ndim < 1 || img->shape[0] != data->count || img->dtype != SB_F32 ||
        lab->ndim != 1 || lab->shape[0] != data->count || lab->dtype != SB_I64)
        return sb_fail(SB_ERR_SHAPE,
                       "%s: data must hold F32 images (count, ...) and I64 labels (count) with count = %lld",
                       fn, (long long)data->count);
    SB_TRY(sb_check_contiguous(fn, "data->images", img));
    SB_TRY(sb_check_contiguous(fn, "data->labels", lab));
    if ((uint64_t)data->count > SIZE_MAX / sizeof(int64_t))
        return sb_fail(SB_ERR_ARG, "%s: %lld examples overflow the permutation's size", fn,
                       (long long)data->count);
    sb_loader *l = sb_calloc(fn, 1, sizeof *l);
    if (!l) return SB_ERR_NOMEM;
    l->order = sb_malloc(fn, (size_t)data->count * sizeof *l->order);
    if (!l->order) { free(l); return SB_ERR_NOMEM; }
    l->data = data;
    l->batch_size = batch_size;
    l->shuffle = shuffle;
    l->seed = seed;
    sb_status s = sb_loader_set_epoch(l, 0);
    if (s != SB_OK) { sb_loader_free(l); return s; }
    *out = l;
    return SB_OK;
}

void sb_loader_free(sb_loader *l) {
    if (!l) return;
    free(l->order);
    free(l);
}

sb_status sb_loader_set_epoch(sb_loader *l, int64_t epoch) {
    if (!l) return sb_fail(SB_ERR_NULL, "sb_loader_set_epoch: loader is NULL");
    if (epoch < 0) return sb_fail(SB_ERR_ARG, "sb_loader_set_epoch: epoch %lld is negative", (long long)epoch);
    if (l->shuffle)
        return sb_rng_permutation(l->seed, SB_STREAM_SHUFFLE + (uint64_t)epoch, l->data->count, l->order);
    for (int64_t i = 0; i < l->data->count; i++) l->order[i] = i;
    return SB_OK;
}

int64_t sb_loader_num_batches(const sb_loader *l) {
    /* ceil(count / batch_size) without forming count + batch_size - 1,
     * which overflows for batch sizes near INT64_MAX. */
    return l ? l->data->count / l->batch_size + (l->data->count % l->batch_size != 0) : 0;
}

sb_status sb_loader_batch(sb_loader *l, int64_t b, sb_arena *arena, sb_tensor **images,
                          sb_tensor **labels) {
    SB_FPENV_GUARD();
    const char *fn = "sb_loader_batch";
    if (!l || !arena || !images || !labels) return sb_fail(SB_ERR_NULL, "%s: NULL argument", fn);
    if (b < 0 || b >= sb_loader_num_batches(l))
        return sb_fail(SB_ERR_RANGE, "%s: batch %lld is outside 0..%lld", fn, (long long)b,
                       (long long)sb_loader_num_batches(l) - 1);
    const sb_tensor *src = l->data->images;
    int64_t first = b * l->batch_size;
    int64_t n = l->data->count - first < l->batch_size ? l->data->count - first : l->batch_size;
    int64_t shape[SB_MAX_DIMS];
    memcpy(shape, src->shape, sizeof shape);
    shape[0] = n;
    SB_TRY(sb_tensor_new_in(images, arena, SB_F32, src->ndim, shape));
    SB_TRY(sb_tensor_new_in(labels, arena, SB_I64, 1, &n));
    int64_t row = sb_tensor_numel(src) / src->shape[0];
    const float *x = src->data;
    const int64_t *y = l->data->labels->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = l->order[first + i];
        memcpy((float *)(*images)->data + i * row, x + k * row, (size_t)row * sizeof *x);
        ((int64_t *)(*labels)->data)[i] = y[k];
    }
    return SB_OK;
}
