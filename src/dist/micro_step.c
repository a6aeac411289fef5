/* One step over micro-batches: each local micro-batch's gradients (and
 * loss) are kept as one flat vector, then combined by the exact reduction
 * across every micro-batch of every process (src/dist/exact_sum.h). */
#include <stdlib.h>
#include "core/fpenv.h"
#include "core/internal.h"
#include "cpu/exact_internal.h"
#include "dist/exact_sum.h"
#include "dist/micro_step.h"

struct sb_micro_trainer {
    sb_module *model;
    sb_comm *comm;
    int64_t k;          /* micro-batches per full batch */
    size_t n_params;
    sb_named *params;
    size_t n;           /* flat length: every gradient element, then the loss */
    float *local;       /* (k / size, n): this process's micro-batch results */
    uint8_t *codes;     /* (n) */
    int64_t *acc;       /* (n) */
    float *out;         /* (n) */
};

void sb_micro_trainer_free(sb_micro_trainer *t) {
    if (!t) return;
    free(t->params); free(t->local); free(t->codes); free(t->acc); free(t->out);
    free(t);
}

sb_status sb_micro_trainer_new(sb_micro_trainer **out, sb_module *model, int64_t batch_size,
                               int64_t micro_batch, sb_comm *comm) {
    const char *fn = "sb_micro_trainer_new";
    if (!out || !model || !comm) return sb_fail(SB_ERR_NULL, "%s: NULL argument", fn);
    *out = NULL;
    if (batch_size < 1 || micro_batch < 1 || batch_size % micro_batch)
        return sb_fail(SB_ERR_ARG, "%s: the micro-batch size %lld must divide the batch size %lld", fn,
                       (long long)micro_batch, (long long)batch_size);
    int64_t k = batch_size / micro_batch;
    SB_TRY(sb_exact_check_terms(fn, k));
    if (comm->size < 1 || k % comm->size)
        return sb_fail(SB_ERR_ARG, "%s: %lld micro-batches per step cannot be shared by %d processes "
                       "(the number of processes must divide batch size / micro-batch)", fn, (long long)k,
                       comm->size);
    size_t nb;
    SB_TRY(sb_module_buffers(model, NULL, 0, &nb));
    if (nb && k > 1)
        return sb_fail(SB_ERR_ARG, "%s: the model has %zu buffers (running statistics), which micro-batches "
                       "do not combine yet: use the whole batch", fn, nb);
    sb_micro_trainer *t = sb_calloc(fn, 1, sizeof *t);
    if (!t) return SB_ERR_NOMEM;
    t->model = model;
    t->comm = comm;
    t->k = k;
    sb_status s = sb_module_parameters(model, NULL, 0, &t->n_params);
    if (s == SB_OK && !(t->params = sb_calloc(fn, t->n_params ? t->n_params : 1, sizeof *t->params))) s = SB_ERR_NOMEM;
    if (s == SB_OK) s = sb_module_parameters(model, t->params, t->n_params, &t->n_params);
    for (size_t p = 0; s == SB_OK && p < t->n_params; p++) {
        const sb_tensor *gr = t->params[p].grad;
        if (!gr || gr->device != SB_DEVICE_CPU) {
            s = sb_fail(SB_ERR_ARG, "%s: parameter %s has no CPU gradient", fn, t->params[p].name);
            break;
        }
        s = sb_check_contiguous(fn, t->params[p].name, gr);
        t->n += (size_t)sb_tensor_numel(gr);
    }
    t->n += 1; /* the loss */
    size_t local = (size_t)(k / comm->size);
    if (s == SB_OK && (t->n > SIZE_MAX / sizeof(float) / local)) s = sb_fail(SB_ERR_NOMEM, "%s: too large", fn);
    if (s == SB_OK && (!(t->local = sb_malloc(fn, local * t->n * sizeof *t->local)) ||
                       !(t->codes = sb_malloc(fn, t->n)) || !(t->acc = sb_malloc(fn, t->n * sizeof *t->acc)) ||
                       !(t->out = sb_malloc(fn, t->n * sizeof *t->out))))
        s = SB_ERR_NOMEM;
    if (s != SB_OK) { sb_micro_trainer_free(t); return s; }
    *out = t;
    return SB_OK;
}

/* Forward, loss and backward of one micro-batch; its results into row. */
static sb_status micro_batch(sb_micro_trainer *t, sb_graph *g, sb_loader *loader, int64_t mb, float *row) {
    sb_graph_reset(g);
    sb_tensor *x, *y;
    sb_variable *in, *logits, *loss;
    SB_TRY(sb_loader_batch(loader, mb, sb_graph_arena(g), &x, &y));
    SB_TRY(sb_graph_input(g, x, &in));
    SB_TRY(sb_module_forward(t->model, g, in, &logits));
    SB_TRY(sb_ag_cross_entropy(g, logits, y, SB_LOSS_MEAN, 0.0f, &loss));
    SB_TRY(sb_graph_backward(g, loss));
    size_t off = 0;
    for (size_t p = 0; p < t->n_params; p++) {
        size_t len = (size_t)sb_tensor_numel(t->params[p].grad);
        memcpy(row + off, t->params[p].grad->data, len * sizeof *row);
        off += len;
    }
    row[off] = ((const float *)loss->value->data)[0];
    return SB_OK;
}

sb_status sb_micro_trainer_gradient(sb_micro_trainer *t, sb_graph *g, sb_loader *loader, int64_t b,
                                    float *loss) {
    SB_FPENV_GUARD();
    const char *fn = "sb_micro_trainer_gradient";
    if (!t || !g || !loader || !loss) return sb_fail(SB_ERR_NULL, "%s: NULL argument", fn);
    int64_t total = sb_loader_num_batches(loader);
    if (b < 0 || b > (total - 1) / t->k)
        return sb_fail(SB_ERR_RANGE, "%s: step %lld is outside the epoch", fn, (long long)b);
    int64_t first = b * t->k, kb = total - first < t->k ? total - first : t->k;
    int64_t per = t->k / t->comm->size, lo = t->comm->rank * per;
    int64_t hi = lo + per < kb ? lo + per : kb; /* local micro-batches lo..hi-1 */
    for (int64_t j = lo; j < hi; j++) SB_TRY(micro_batch(t, g, loader, first + j, t->local + (size_t)(j - lo) * t->n));
    /* the reference loops of exact_sum.c, vectorised and threaded
     * (cpu/exact_internal.h): the same bits */
    int64_t rows = hi > lo ? hi - lo : 0, n = (int64_t)t->n;
    memset(t->codes, 0, t->n);
    sb_cpu_exact_codes_max(t->local, rows, n, n, t->codes);
    SB_TRY(t->comm->max_u8(t->comm, t->codes, t->n));
    memset(t->acc, 0, t->n * sizeof *t->acc);
    sb_cpu_exact_add(t->local, rows, n, n, t->codes, kb, t->acc);
    SB_TRY(t->comm->sum_i64(t->comm, t->acc, t->n, sb_exact_word_bits(kb)));
    sb_cpu_exact_finish(t->acc, t->codes, n, kb, t->out);
    float count = (float)kb;
    size_t off = 0;
    for (size_t p = 0; p < t->n_params; p++) {
        float *gr = t->params[p].grad->data;
        size_t len = (size_t)sb_tensor_numel(t->params[p].grad);
        for (size_t i = 0; i < len; i++) gr[i] = t->out[off + i] / count;
        off += len;
    }
    *loss = t->out[off] / count;
    return SB_OK;
}
