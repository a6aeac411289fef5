/* Tensor-level CTC loss: every argument, length and label is checked, and
 * the index data staged on the device as one int64 block, before the
 * device's kernel runs (on the CPU src/cpu/ctc.c, the reference's
 * recursions of src/ref/ctc.c one item per thread). Nothing is written
 * when a check fails. */
#include <stdio.h>
#include <stdlib.h>
#include "samebits/loss.h"
#include "core/checked.h"
#include "core/fpenv.h"
#include "ops/validate.h"
#include "ref/ref_ctc.h"

/* An int32/int64 tensor of rank ndim (-1: any). */
static sb_status check_ints(const char *fn, const char *name, const sb_tensor *t, int ndim) {
    if (!t) return sb_fail(SB_ERR_NULL, "%s: %s is NULL", fn, name);
    SB_TRY(sb_check_header(fn, name, t));
    if (t->dtype != SB_I32 && t->dtype != SB_I64)
        return sb_fail(SB_ERR_DTYPE, "%s: %s has dtype %s, expected int32 or int64", fn, name,
                       sb_dtype_name(t->dtype));
    return sb_check_tensor(fn, name, t, t->dtype, ndim);
}

/* t's values as int64 in row-major order, appended at out. */
static sb_status read_ints(const char *fn, const sb_backend *be, const sb_tensor *t,
                           int64_t *out) {
    const void *host;
    void *owned;
    SB_TRY(sb_ops_read_host(fn, be, t, &host, &owned));
    int64_t n = sb_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        out[i] = t->dtype == SB_I64 ? ((const int64_t *)host)[i] : ((const int32_t *)host)[i];
    free(owned);
    return SB_OK;
}

/* The index block: in_len (N), tg_len (N), offset (N), then targets. */
typedef struct ctc_block {
    int64_t *host, *dev, n;
} ctc_block;

static void block_free(const sb_backend *be, ctc_block *k) {
    if (k->dev && k->dev != k->host) be->release(be, k->dev);
    free(k->host);
}

/* Checks the lengths and labels against (T, N, C) and S (2-D targets) or
 * the targets' count (1-D), fills the offsets; *s_max the longest target. */
static sb_status check_lengths(const char *fn, const sb_ctc_loss *params, const sb_tensor *targets,
                               int64_t T, int64_t N, int64_t C, int64_t *k,
                               int64_t *s_max, int64_t *r_max) {
    int64_t *in_len = k, *tg_len = k + N, *offset = k + 2 * N, *tg = k + 3 * N;
    bool padded = targets->ndim == 2;
    int64_t S = padded ? targets->shape[1] : sb_tensor_numel(targets), next = 0;
    *s_max = 0;
    *r_max = 1;
    for (int64_t b = 0; b < N; b++) {
        if (in_len[b] < 0 || in_len[b] > T)
            return sb_fail(SB_ERR_RANGE, "%s: input_lengths[%lld] = %lld is %s (T = %lld)", fn,
                           (long long)b, (long long)in_len[b],
                           in_len[b] < 0 ? "negative" : "longer than the input", (long long)T);
        if (tg_len[b] < 0)
            return sb_fail(SB_ERR_RANGE, "%s: target_lengths[%lld] = %lld is negative", fn,
                           (long long)b, (long long)tg_len[b]);
        if (padded && tg_len[b] > S)
            return sb_fail(SB_ERR_RANGE, "%s: target_lengths[%lld] = %lld is longer than the "
                           "padded targets (S = %lld)", fn, (long long)b, (long long)tg_len[b],
                           (long long)S);
        offset[b] = padded ? b * S : next;
        if (!padded && tg_len[b] > S - next)
            return sb_fail(SB_ERR_RANGE, "%s: target_lengths[0..%lld] add up to more than the "
                           "%lld labels of the concatenated targets", fn, (long long)b,
                           (long long)S);
        next += padded ? 0 : tg_len[b];
        if (tg_len[b] > *s_max) *s_max = tg_len[b];
        if (in_len[b] > *r_max) *r_max = in_len[b];
        for (int64_t i = 0; i < tg_len[b]; i++) {
            int64_t v = tg[offset[b] + i];
            if (v < 0 || v >= C || v == params->blank) {
                char at[64];
                if (padded) snprintf(at, sizeof at, "[%lld, %lld]", (long long)b, (long long)i);
                else snprintf(at, sizeof at, "[%lld]", (long long)(offset[b] + i));
                return sb_fail(SB_ERR_RANGE, "%s: targets%s = %lld %s", fn, at, (long long)v,
                               v == params->blank && v >= 0 && v < C
                                   ? "is the blank label"
                                   : "is outside [0, C)");
            }
        }
    }
    return SB_OK;
}

/* Every check that needs no output, then the staged problem. */
static sb_status ctc_prepare(const char *fn, const sb_ctc_loss *params, const sb_tensor *lp,
                             const sb_tensor *targets, const sb_tensor *input_lengths,
                             const sb_tensor *target_lengths, sb_loss_reduction reduction,
                             const sb_backend *be, sb_ctc_problem *p, ctc_block *k) {
    memset(k, 0, sizeof *k);
    int64_t T = lp->shape[0], N = lp->shape[1], C = lp->shape[2];
    int64_t n = 0, s_max = 0, r_max = 1, work = 0;
    if (!sb_checked_add(3 * N, sb_tensor_numel(targets), &n))
        return sb_fail(SB_ERR_SHAPE, "%s: targets are too large", fn);
    k->host = sb_malloc(fn, (size_t)n * sizeof *k->host);
    if (!k->host) return SB_ERR_NOMEM;
    k->n = n;
    sb_status st = read_ints(fn, be, input_lengths, k->host);
    if (st == SB_OK) st = read_ints(fn, be, target_lengths, k->host + N);
    if (st == SB_OK) st = read_ints(fn, be, targets, k->host + 3 * N);
    if (st == SB_OK) st = check_lengths(fn, params, targets, T, N, C, k->host, &s_max, &r_max);
    /* alpha and beta rows of every item: 2 * N * r_max * (2 * s_max + 1) floats */
    if (st == SB_OK && (!sb_checked_mul(2 * s_max + 1, r_max, &work) ||
                        !sb_checked_mul(work, 2 * N, &work) || !sb_checked_add(work, N, &work) ||
                        (uint64_t)work > SIZE_MAX / sizeof(float)))
        st = sb_fail(SB_ERR_SHAPE, "%s: the recursions' %lld x %lld x %lld rows are too large",
                     fn, (long long)N, (long long)r_max, (long long)(2 * s_max + 1));
    if (st == SB_OK && be->host_addressable) k->dev = k->host;
    else if (st == SB_OK) {
        st = be->alloc(be, (size_t)n * sizeof *k->host, (void **)&k->dev);
        if (st == SB_OK) st = be->upload(be, k->dev, k->host, (size_t)n * sizeof *k->host);
    }
    if (st != SB_OK) {
        block_free(be, k);
        return st;
    }
    *p = (sb_ctc_problem){.T = T, .N = N, .C = C, .R = r_max, .W = 2 * s_max + 1, .blank = params->blank,
                          .zero_infinity = params->zero_infinity, .reduction = reduction,
                          .in_len = k->dev, .tg_len = k->dev + N, .offset = k->dev + 2 * N,
                          .targets = k->dev + 3 * N};
    return SB_OK;
}

/* Shapes and types of the inputs: log_probs (T, N, C), lengths (N),
 * targets (N, S) or 1-D. */
static sb_status check_inputs(const char *fn, const sb_ctc_loss *params, const sb_tensor *lp,
                              const sb_tensor *targets, const sb_tensor *input_lengths,
                              const sb_tensor *target_lengths, sb_loss_reduction reduction) {
    if (!params) return sb_fail(SB_ERR_NULL, "%s: params is NULL", fn);
    SB_TRY(sb_loss_check_reduction(fn, reduction));
    SB_TRY(sb_check_tensor(fn, "log_probs", lp, SB_F32, 3));
    char s[128];
    if (lp->shape[0] < 1 || lp->shape[1] < 1 || lp->shape[2] < 1)
        return sb_fail(SB_ERR_SHAPE, "%s: log_probs has shape %s; need (T, N, C) with T, N, C "
                       ">= 1", fn, sb_shape_str(lp, s, sizeof s));
    int64_t N = lp->shape[1], C = lp->shape[2];
    if (params->blank < 0 || params->blank >= C)
        return sb_fail(SB_ERR_ARG, "%s: params->blank = %lld is outside [0, C) (C = %lld)", fn,
                       (long long)params->blank, (long long)C);
    SB_TRY(check_ints(fn, "targets", targets, -1));
    if (targets->ndim != 1 && targets->ndim != 2)
        return sb_fail(SB_ERR_SHAPE, "%s: targets has shape %s; need (N, S) padded or 1-D "
                       "concatenated", fn, sb_shape_str(targets, s, sizeof s));
    if (targets->ndim == 2 && targets->shape[0] != N)
        return sb_fail(SB_ERR_SHAPE, "%s: targets has %lld rows but log_probs has N = %lld", fn,
                       (long long)targets->shape[0], (long long)N);
    const char *names[2] = {"input_lengths", "target_lengths"};
    const sb_tensor *lens[2] = {input_lengths, target_lengths};
    for (int i = 0; i < 2; i++) {
        SB_TRY(check_ints(fn, names[i], lens[i], 1));
        if (lens[i]->shape[0] != N)
            return sb_fail(SB_ERR_SHAPE, "%s: %s has %lld entries but log_probs has N = %lld",
                           fn, names[i], (long long)lens[i]->shape[0], (long long)N);
    }
    return SB_OK;
}

/* The shape of a NONE loss: (N). */
static sb_tensor batch_like(const sb_tensor *lp) {
    sb_tensor t;
    memset(&t, 0, sizeof t);
    t.ndim = 1;
    t.shape[0] = lp->shape[1];
    return t;
}

sb_status sb_ctc_loss_forward(const sb_ctc_loss *params, const sb_tensor *log_probs,
                              const sb_tensor *targets, const sb_tensor *input_lengths,
                              const sb_tensor *target_lengths, sb_loss_reduction reduction,
                              sb_tensor *loss) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ctc_loss_forward";
    SB_TRY(check_inputs(fn, params, log_probs, targets, input_lengths, target_lengths, reduction));
    sb_tensor like = batch_like(log_probs);
    SB_TRY(sb_loss_check_shape(fn, "loss", loss, reduction, &like));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, log_probs, targets, input_lengths, target_lengths, loss));
    SB_TRY(sb_check_disjoint(fn, 1, (const char *const[]){"loss"}, (const sb_tensor *const[]){loss},
                             4, (const char *const[]){"log_probs", "targets", "input_lengths",
                                                      "target_lengths"},
                             (const sb_tensor *const[]){log_probs, targets, input_lengths,
                                                        target_lengths}));
    sb_ctc_problem p;
    ctc_block k;
    SB_TRY(ctc_prepare(fn, params, log_probs, targets, input_lengths, target_lengths, reduction,
                       be, &p, &k));
    sb_tensor *copy = NULL, *scratch = NULL;
    const float *lp = NULL;
    float *out = NULL;
    sb_status st = sb_loss_input(log_probs, &copy, &lp);
    if (st == SB_OK) st = sb_loss_output(loss, &scratch, &out);
    if (st == SB_OK) st = SB_BACKEND_RUN(fn, be, ctc_loss_forward, &p, lp, out);
    sb_tensor_free(copy);
    block_free(be, &k);
    if (st != SB_OK) {
        sb_tensor_free(scratch);
        return st;
    }
    return sb_loss_output_done(loss, scratch);
}

sb_status sb_ctc_loss_backward(const sb_ctc_loss *params, const sb_tensor *log_probs,
                               const sb_tensor *targets, const sb_tensor *input_lengths,
                               const sb_tensor *target_lengths, sb_loss_reduction reduction,
                               const sb_tensor *dloss, sb_tensor *dlog_probs) {
    SB_FPENV_GUARD();
    const char *fn = "sb_ctc_loss_backward";
    SB_TRY(check_inputs(fn, params, log_probs, targets, input_lengths, target_lengths, reduction));
    sb_tensor like = batch_like(log_probs);
    SB_TRY(sb_loss_check_shape(fn, "dloss", dloss, reduction, &like));
    SB_TRY(sb_check_tensor(fn, "dlog_probs", dlog_probs, SB_F32, -1));
    SB_TRY(sb_check_same_shape(fn, "dlog_probs", dlog_probs, "log_probs", log_probs));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, log_probs, targets, input_lengths, target_lengths, dloss,
                          dlog_probs));
    /* the kernel reads log_probs while it fills dlog_probs: no sharing */
    SB_TRY(sb_check_disjoint(fn, 1, (const char *const[]){"dlog_probs"},
                             (const sb_tensor *const[]){dlog_probs}, 5,
                             (const char *const[]){"log_probs", "targets", "input_lengths",
                                                   "target_lengths", "dloss"},
                             (const sb_tensor *const[]){log_probs, targets, input_lengths,
                                                        target_lengths, dloss}));
    sb_ctc_problem p;
    ctc_block k;
    SB_TRY(ctc_prepare(fn, params, log_probs, targets, input_lengths, target_lengths, reduction,
                       be, &p, &k));
    sb_tensor *copies[2] = {NULL, NULL}, *scratch = NULL;
    const float *lp = NULL, *dl = NULL;
    float *out = NULL;
    sb_status st = sb_loss_input(log_probs, &copies[0], &lp);
    if (st == SB_OK) st = sb_loss_input(dloss, &copies[1], &dl);
    if (st == SB_OK) st = sb_loss_output(dlog_probs, &scratch, &out);
    if (st == SB_OK) st = SB_BACKEND_RUN(fn, be, ctc_loss_backward, &p, lp, dl, out);
    sb_tensor_free(copies[0]);
    sb_tensor_free(copies[1]);
    block_free(be, &k);
    if (st != SB_OK) {
        sb_tensor_free(scratch);
        return st;
    }
    return sb_loss_output_done(dlog_probs, scratch);
}
