/* One step over micro-batches: each local micro-batch's gradients, loss
 * and float buffers (running statistics) are kept as one flat vector, then
 * combined by the exact reduction across every micro-batch of every
 * process (src/dist/exact_sum.h). Every micro-batch's forward starts from
 * the step's incoming buffers; integer buffers (counters) must come out of
 * every micro-batch with an integer mean (counters change alike). */
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
    size_t n_bufs;
    sb_named *bufs;
    size_t n_grad;      /* gradient elements */
    size_t n_fbuf;      /* float buffer elements */
    size_t n_ibuf;      /* int64 buffer elements */
    size_t n;           /* flat length: every gradient element, the loss, every float buffer element */
    float *local;       /* (k / size, n): this process's micro-batch results */
    float *snap_f;      /* (n_fbuf) the float buffers at the start of the step */
    int64_t *snap_i;    /* (n_ibuf) the int64 buffers at the start of the step */
    int64_t *now_i;     /* (n_ibuf) the int64 buffers after a micro-batch */
    int64_t *delta_i;   /* (n_ibuf) summed changes of the int64 buffers */
    uint8_t *codes;     /* (n) */
    int64_t *acc;       /* (n) */
    float *out;         /* (n) */
};

void sb_micro_trainer_free(sb_micro_trainer *t) {
    if (!t) return;
    free(t->params); free(t->bufs); free(t->local); free(t->codes); free(t->acc); free(t->out);
    free(t->snap_f); free(t->snap_i); free(t->now_i); free(t->delta_i);
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
        t->n_grad += (size_t)sb_tensor_numel(gr);
    }
    if (s == SB_OK) s = sb_module_buffers(model, NULL, 0, &t->n_bufs);
    if (s == SB_OK && !(t->bufs = sb_calloc(fn, t->n_bufs ? t->n_bufs : 1, sizeof *t->bufs))) s = SB_ERR_NOMEM;
    if (s == SB_OK) s = sb_module_buffers(model, t->bufs, t->n_bufs, &t->n_bufs);
    for (size_t b = 0; s == SB_OK && b < t->n_bufs; b++) {
        const sb_tensor *v = t->bufs[b].value;
        if (v->device != SB_DEVICE_CPU || (v->dtype != SB_F32 && v->dtype != SB_I64)) {
            s = sb_fail(SB_ERR_ARG, "%s: buffer %s is not a float32 or int64 CPU tensor", fn, t->bufs[b].name);
            break;
        }
        s = sb_check_contiguous(fn, t->bufs[b].name, v);
        if (v->dtype == SB_F32) t->n_fbuf += (size_t)sb_tensor_numel(v);
        else t->n_ibuf += (size_t)sb_tensor_numel(v);
    }
    t->n = t->n_grad + 1 + t->n_fbuf; /* the loss after the gradients */
    size_t local = (size_t)(k / comm->size);
    if (s == SB_OK && (t->n > SIZE_MAX / sizeof(float) / local)) s = sb_fail(SB_ERR_NOMEM, "%s: too large", fn);
    if (s == SB_OK && (!(t->local = sb_malloc(fn, local * t->n * sizeof *t->local)) ||
                       !(t->codes = sb_malloc(fn, t->n)) || !(t->acc = sb_malloc(fn, t->n * sizeof *t->acc)) ||
                       !(t->out = sb_malloc(fn, t->n * sizeof *t->out)) ||
                       !(t->snap_f = sb_malloc(fn, (t->n_fbuf + 1) * sizeof *t->snap_f)) ||
                       !(t->snap_i = sb_malloc(fn, (t->n_ibuf + 1) * sizeof *t->snap_i)) ||
                       !(t->now_i = sb_malloc(fn, (t->n_ibuf + 1) * sizeof *t->now_i)) ||
                       !(t->delta_i = sb_malloc(fn, (t->n_ibuf + 1) * sizeof *t->delta_i))))
        s = SB_ERR_NOMEM;
    if (s != SB_OK) { sb_micro_trainer_free(t); return s; }
    *out = t;
    return SB_OK;
}

/* Copies the buffers into (to_model true) or out of (false) the flat
 * float and int64 arrays, in buffer order. */
static void copy_buffers(sb_micro_trainer *t, float *f, int64_t *i, bool to_model) {
    for (size_t b = 0; b < t->n_bufs; b++) {
        sb_tensor *v = t->bufs[b].value;
        size_t len = (size_t)sb_tensor_numel(v), bytes = len * (v->dtype == SB_F32 ? sizeof *f : sizeof *i);
        void *flat = v->dtype == SB_F32 ? (void *)f : (void *)i;
        if (to_model) memcpy(v->data, flat, bytes);
        else memcpy(flat, v->data, bytes);
        if (v->dtype == SB_F32) f += len;
        else i += len;
    }
}

/* Forward, loss and backward of one micro-batch, from the step's incoming
 * buffers; its results into row (gradients, loss, float buffers) and the
 * changes of its int64 buffers added to delta_i. */
static sb_status micro_batch(sb_micro_trainer *t, sb_graph *g, sb_loader *loader, int64_t mb, float *row) {
    copy_buffers(t, t->snap_f, t->snap_i, true);
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
    copy_buffers(t, row + off + 1, t->now_i, false);
    for (size_t i = 0; i < t->n_ibuf; i++) t->delta_i[i] += t->now_i[i] - t->snap_i[i];
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
    copy_buffers(t, t->snap_f, t->snap_i, false);
    memset(t->delta_i, 0, t->n_ibuf * sizeof *t->delta_i);
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
    /* float buffers: the exact mean of the micro-batches' values */
    for (size_t i = 0; i < t->n_fbuf; i++) t->snap_f[i] = t->out[off + 1 + i] / count;
    /* int64 buffers: the mean of the micro-batches' values, an integer
     * (counters such as num_batches_tracked change alike in every one) */
    if (t->n_ibuf) {
        SB_TRY(t->comm->sum_i64(t->comm, t->delta_i, t->n_ibuf, 64));
        for (size_t i = 0; i < t->n_ibuf; i++) {
            if (t->delta_i[i] % kb)
                return sb_fail(SB_ERR_UNSUPPORTED, "%s: step %lld: an integer buffer's mean over the "
                               "micro-batches is not an integer", fn, (long long)b);
            t->snap_i[i] += t->delta_i[i] / kb;
        }
    }
    copy_buffers(t, t->snap_f, t->snap_i, true);
    return SB_OK;
}
