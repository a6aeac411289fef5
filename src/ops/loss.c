/* Tensor-level softmax, log-softmax and losses: argument checks around the
 * device's kernels (on the CPU the fast kernels of src/cpu/softmax.c, bit for
 * bit the reference kernels of src/ref/softmax.c and src/ref/loss.c,
 * threaded over rows).
 *
 * Inputs may have any strides (non-contiguous ones are copied first);
 * outputs must have exactly the documented shape and may be strided. Every
 * check runs before any output is written. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "samebits/loss.h"
#include "core/fpenv.h"
#include "ops/validate.h"

/* ---- contiguity helpers (also used by src/ops/dropout.c) ---- */

/* Staging buffers live on the tensor's own device. */
static sb_status new_like(const sb_tensor *t, sb_tensor **out) {
    return sb_tensor_new_on(out, t->device, SB_F32, t->ndim, t->shape);
}

sb_status sb_loss_input(const sb_tensor *t, sb_tensor **copy, const float **data) {
    *copy = NULL;
    if (sb_tensor_is_contiguous(t)) { *data = t->data; return SB_OK; }
    SB_TRY(new_like(t, copy));
    sb_status st = sb_tensor_copy(*copy, t);
    if (st != SB_OK) { sb_tensor_free(*copy); *copy = NULL; return st; }
    *data = (*copy)->data;
    return SB_OK;
}

sb_status sb_loss_output(sb_tensor *t, sb_tensor **scratch, float **data) {
    *scratch = NULL;
    if (sb_tensor_is_contiguous(t)) { *data = t->data; return SB_OK; }
    SB_TRY(new_like(t, scratch));
    *data = (*scratch)->data;
    return SB_OK;
}

sb_status sb_loss_output_done(sb_tensor *t, sb_tensor *scratch) {
    if (!scratch) return SB_OK;
    sb_status st = sb_tensor_copy(t, scratch);
    sb_tensor_free(scratch);
    return st;
}

/* Up to three inputs and one output as contiguous buffers, released
 * together; unused slots stay NULL. */
typedef struct buffers {
    sb_tensor *copies[3], *scratch;
    const float *in[3];
    float *out;
} buffers;

static sb_status buffers_get(buffers *b, const sb_tensor *a0, const sb_tensor *a1,
                             const sb_tensor *a2, sb_tensor *out) {
    memset(b, 0, sizeof *b);
    const sb_tensor *ins[3] = {a0, a1, a2};
    for (int i = 0; i < 3; i++)
        if (ins[i]) SB_TRY(sb_loss_input(ins[i], &b->copies[i], &b->in[i]));
    return sb_loss_output(out, &b->scratch, &b->out);
}

static sb_status buffers_done(buffers *b, sb_tensor *out, sb_status st) {
    for (int i = 0; i < 3; i++) sb_tensor_free(b->copies[i]);
    if (st != SB_OK) { sb_tensor_free(b->scratch); return st; }
    return sb_loss_output_done(out, b->scratch);
}

/* ---- softmax family ---- */

/* Splits x's shape around dim into (outer, n, inner); a 0-d tensor is one
 * row of one element (dim 0 or -1), as in PyTorch. */
static sb_status split_dim(const char *fn, const sb_tensor *x, int dim, int64_t *outer,
                           int64_t *n, int64_t *inner) {
    int nd = x->ndim > 0 ? x->ndim : 1;
    if (dim < -nd || dim >= nd)
        return sb_fail(SB_ERR_ARG, "%s: dim %d is out of range for a %d-dimensional tensor", fn,
                       dim, x->ndim);
    if (dim < 0) dim += nd;
    *outer = 1; *n = 1; *inner = 1;
    for (int i = 0; i < x->ndim; i++) {
        if (i < dim) *outer *= x->shape[i];
        else if (i == dim) *n = x->shape[i];
        else *inner *= x->shape[i];
    }
    return SB_OK;
}

static sb_status softmax_fwd(const char *fn, const sb_tensor *x, int dim, sb_tensor *y, bool log) {
    SB_TRY(sb_check_tensor(fn, "x", x, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "y", y, SB_F32, -1));
    SB_TRY(sb_check_same_shape(fn, "y", y, "x", x));
    int64_t outer = 0, n = 0, inner = 0;
    SB_TRY(split_dim(fn, x, dim, &outer, &n, &inner));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, y));
    SB_TRY(sb_check_in_place(fn, "y", y, "x", x)); /* exactly x, or apart from it */
    buffers b;
    sb_status st = buffers_get(&b, x, NULL, NULL, y);
    if (st == SB_OK) st = SB_BACKEND_RUN(fn, be, softmax_forward, b.in[0], outer, n, inner, log, b.out);
    return buffers_done(&b, y, st);
}

static sb_status softmax_bwd(const char *fn, const sb_tensor *y, const sb_tensor *dy, int dim,
                             sb_tensor *dx, bool log) {
    SB_TRY(sb_check_tensor(fn, "y", y, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "dy", dy, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "dx", dx, SB_F32, -1));
    SB_TRY(sb_check_same_shape(fn, "dy", dy, "y", y));
    SB_TRY(sb_check_same_shape(fn, "dx", dx, "y", y));
    int64_t outer = 0, n = 0, inner = 0;
    SB_TRY(split_dim(fn, y, dim, &outer, &n, &inner));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, y, dy, dx));
    SB_TRY(sb_check_in_place(fn, "dx", dx, "y", y));
    SB_TRY(sb_check_in_place(fn, "dx", dx, "dy", dy));
    buffers b;
    sb_status st = buffers_get(&b, y, dy, NULL, dx);
    if (st == SB_OK)
        st = SB_BACKEND_RUN(fn, be, softmax_backward, b.in[0], b.in[1], outer, n, inner, log, b.out);
    return buffers_done(&b, dx, st);
}

sb_status sb_softmax_forward(const sb_tensor *x, int dim, sb_tensor *y) {
    SB_FPENV_GUARD();
    return softmax_fwd("sb_softmax_forward", x, dim, y, false);
}

sb_status sb_log_softmax_forward(const sb_tensor *x, int dim, sb_tensor *y) {
    SB_FPENV_GUARD();
    return softmax_fwd("sb_log_softmax_forward", x, dim, y, true);
}

sb_status sb_softmax_backward(const sb_tensor *y, const sb_tensor *dy, int dim, sb_tensor *dx) {
    SB_FPENV_GUARD();
    return softmax_bwd("sb_softmax_backward", y, dy, dim, dx, false);
}

sb_status sb_log_softmax_backward(const sb_tensor *y, const sb_tensor *dy, int dim,
                                  sb_tensor *dx) {
    SB_FPENV_GUARD();
    return softmax_bwd("sb_log_softmax_backward", y, dy, dim, dx, true);
}

/* ---- shared loss checks ---- */

sb_status sb_loss_check_reduction(const char *fn, sb_loss_reduction reduction) {
    if (reduction != SB_LOSS_NONE && reduction != SB_LOSS_MEAN && reduction != SB_LOSS_SUM)
        return sb_fail(SB_ERR_ARG, "%s: reduction %d is not SB_LOSS_NONE, SB_LOSS_MEAN or SB_LOSS_SUM",
                       fn, (int)reduction);
    return SB_OK;
}

sb_status sb_loss_check_shape(const char *fn, const char *name, const sb_tensor *t,
                                  sb_loss_reduction reduction, const sb_tensor *like) {
    SB_TRY(sb_check_tensor(fn, name, t, SB_F32, -1));
    if (reduction == SB_LOSS_NONE) {
        int same = t->ndim == like->ndim;
        for (int i = 0; same && i < t->ndim; i++) same = t->shape[i] == like->shape[i];
        if (!same) {
            char a[128], b[128];
            return sb_fail(SB_ERR_SHAPE, "%s: %s has shape %s, expected %s for reduction NONE", fn,
                           name, sb_shape_str(t, a, sizeof a), sb_shape_str(like, b, sizeof b));
        }
    } else if (t->ndim != 0) {
        char a[128];
        return sb_fail(SB_ERR_SHAPE, "%s: %s has shape %s, expected a 0-d tensor for reduction %s",
                       fn, name, sb_shape_str(t, a, sizeof a),
                       reduction == SB_LOSS_MEAN ? "MEAN" : "SUM");
    }
    return SB_OK;
}

/* (N, C) float32 scores with N, C >= 1, plus targets (N) of int32/int64;
 * with nd also (N, C, d1, ..., dk) scores, every dimension >= 1, against
 * targets (N, d1, ..., dk). */
static sb_status check_class_inputs(const char *fn, const char *name, const sb_tensor *a,
                                    const sb_tensor *targets, sb_loss_reduction reduction,
                                    bool nd) {
    SB_TRY(sb_loss_check_reduction(fn, reduction));
    SB_TRY(sb_check_tensor(fn, name, a, SB_F32, nd ? -1 : 2));
    char s[128], s2[128];
    if (a->ndim < 2)
        return sb_fail(SB_ERR_SHAPE, "%s: %s has shape %s; need (N, C) or (N, C, d1, ..., dk)",
                       fn, name, sb_shape_str(a, s, sizeof s));
    if (a->shape[0] < 1 || a->shape[1] < 1)
        return sb_fail(SB_ERR_SHAPE, "%s: %s has shape %s; need N >= 1 rows and C >= 1 classes",
                       fn, name, sb_shape_str(a, s, sizeof s));
    for (int i = 2; i < a->ndim; i++)
        if (a->shape[i] < 1)
            return sb_fail(SB_ERR_SHAPE, "%s: %s has shape %s; need every dimension >= 1", fn,
                           name, sb_shape_str(a, s, sizeof s));
    if (!targets) return sb_fail(SB_ERR_NULL, "%s: targets is NULL", fn);
    if (targets->dtype != SB_I32 && targets->dtype != SB_I64)
        return sb_fail(SB_ERR_DTYPE, "%s: targets has dtype %s, expected int32 or int64", fn,
                       sb_dtype_name(targets->dtype));
    SB_TRY(sb_check_tensor(fn, "targets", targets, targets->dtype, a->ndim - 1));
    if (targets->shape[0] != a->shape[0])
        return sb_fail(SB_ERR_SHAPE, "%s: targets has %lld entries but %s has %lld rows", fn,
                       (long long)targets->shape[0], name, (long long)a->shape[0]);
    for (int i = 1; i < targets->ndim; i++)
        if (targets->shape[i] != a->shape[i + 1])
            return sb_fail(SB_ERR_SHAPE, "%s: targets has shape %s; expected %s's shape without "
                           "its class dimension 1 (%s)", fn, sb_shape_str(targets, s, sizeof s),
                           name, sb_shape_str(a, s2, sizeof s2));
    return SB_OK;
}

/* Optional class weights: (C) float32. */
static sb_status check_class_weight(const char *fn, const sb_tensor *weight, int64_t C) {
    if (!weight) return SB_OK;
    SB_TRY(sb_check_tensor(fn, "weight", weight, SB_F32, 1));
    if (weight->shape[0] != C)
        return sb_fail(SB_ERR_SHAPE, "%s: weight has %lld entries but there are C = %lld classes",
                       fn, (long long)weight->shape[0], (long long)C);
    return SB_OK;
}

/* Reads targets (any device) as int64, checks each is ignore_index or in
 * [0, C), and stages them on the device as a dense int64 array: *out is
 * device memory, released with targets_done. */
static sb_status read_targets(const char *fn, const sb_backend *be, const sb_tensor *targets,
                              int64_t C, int64_t ignore_index, int64_t **out) {
    int64_t N = sb_tensor_numel(targets);
    const void *host;
    void *owned;
    SB_TRY(sb_ops_read_host(fn, be, targets, &host, &owned));
    int64_t *t = sb_malloc(fn, (size_t)N * sizeof *t);
    if (!t) { free(owned); return SB_ERR_NOMEM; }
    for (int64_t r = 0; r < N; r++) {
        t[r] = targets->dtype == SB_I64 ? ((const int64_t *)host)[r] : ((const int32_t *)host)[r];
        if (t[r] != ignore_index && (t[r] < 0 || t[r] >= C)) {
            sb_status st = sb_fail(SB_ERR_RANGE,
                                   "%s: targets[%lld] = %lld is outside [0, %lld) and is not "
                                   "ignore_index (%lld)",
                                   fn, (long long)r, (long long)t[r], (long long)C,
                                   (long long)ignore_index);
            free(t);
            free(owned);
            return st;
        }
    }
    free(owned);
    if (be->host_addressable) { *out = t; return SB_OK; }
    void *dev = NULL;
    sb_status st = be->alloc(be, (size_t)N * sizeof *t, &dev);
    if (st == SB_OK) st = be->upload(be, dev, t, (size_t)N * sizeof *t);
    free(t);
    if (st != SB_OK) { be->release(be, dev); return st; }
    *out = dev;
    return SB_OK;
}

static void targets_done(const sb_backend *be, int64_t *t) {
    if (be->host_addressable) free(t);
    else be->release(be, t);
}

static sb_status check_smoothing(const char *fn, float eps) {
    if (!(eps >= 0.0f && eps <= 1.0f))
        return sb_fail(SB_ERR_ARG, "%s: label_smoothing = %g is outside [0, 1]", fn, (double)eps);
    return SB_OK;
}

/* ---- cross-entropy and NLL ---- */

/* The checked problem: rows of input (N, C, inner...), weight device memory. */
static sb_class_problem class_problem(const sb_tensor *a, bool logits, const float *weight,
                                      sb_loss_reduction reduction, float eps,
                                      int64_t ignore_index) {
    int64_t inner = 1;
    for (int i = 2; i < a->ndim; i++) inner *= a->shape[i];
    return (sb_class_problem){.logits = logits, .weight = weight, .N = a->shape[0],
                              .C = a->shape[1], .inner = inner, .reduction = reduction,
                              .eps = eps, .ignore_index = ignore_index};
}

/* The unweighted (N, C) problem runs on the entry every device has; the
 * rest needs the general one. */
static bool is_plain(const sb_class_problem *p) { return !p->weight && p->inner == 1; }

static sb_status class_forward(const char *fn, const sb_tensor *a, const sb_tensor *targets,
                               const sb_tensor *weight, sb_loss_reduction reduction, bool logits,
                               float eps, int64_t ignore_index, bool nd, sb_tensor *loss) {
    const char *name = nd ? "input" : logits ? "logits" : "logp";
    SB_TRY(check_class_inputs(fn, name, a, targets, reduction, nd));
    SB_TRY(check_smoothing(fn, eps));
    SB_TRY(check_class_weight(fn, weight, a->shape[1]));
    SB_TRY(sb_loss_check_shape(fn, "loss", loss, reduction, targets));
    const sb_backend *be;
    char names[64];
    snprintf(names, sizeof names, "%s, targets, weight, loss", name);
    SB_TRY(sb_ops_backend_of(fn, names, 4, (const sb_tensor *[]){a, targets, weight, loss}, &be));
    if (nd)
        SB_TRY(sb_check_disjoint(fn, 1, (const char *const[]){"loss"},
                                 (const sb_tensor *const[]){loss}, 3,
                                 (const char *const[]){name, "targets", "weight"},
                                 (const sb_tensor *const[]){a, targets, weight}));
    int64_t *t;
    SB_TRY(read_targets(fn, be, targets, a->shape[1], ignore_index, &t));
    buffers b;
    sb_status st = buffers_get(&b, a, weight, NULL, loss);
    if (st == SB_OK) {
        sb_class_problem p = class_problem(a, logits, b.in[1], reduction, eps, ignore_index);
        st = is_plain(&p) ? SB_BACKEND_RUN(fn, be, class_loss_forward, logits, b.in[0], t, p.N,
                                           p.C, reduction, eps, ignore_index, b.out)
                          : SB_BACKEND_RUN(fn, be, class_loss_nd_forward, &p, b.in[0], t, b.out);
    }
    targets_done(be, t);
    return buffers_done(&b, loss, st);
}

static sb_status class_backward(const char *fn, const sb_tensor *a, const sb_tensor *targets,
                                const sb_tensor *weight, sb_loss_reduction reduction, bool logits,
                                float eps, int64_t ignore_index, bool nd, const sb_tensor *dloss,
                                sb_tensor *da) {
    const char *name = nd ? "input" : logits ? "logits" : "logp";
    const char *dname = nd ? "dinput" : logits ? "dlogits" : "dlogp";
    SB_TRY(check_class_inputs(fn, name, a, targets, reduction, nd));
    SB_TRY(check_smoothing(fn, eps));
    SB_TRY(check_class_weight(fn, weight, a->shape[1]));
    SB_TRY(sb_loss_check_shape(fn, "dloss", dloss, reduction, targets));
    SB_TRY(sb_check_tensor(fn, dname, da, SB_F32, -1));
    SB_TRY(sb_check_same_shape(fn, dname, da, name, a));
    const sb_backend *be;
    char names[80];
    snprintf(names, sizeof names, "%s, targets, weight, dloss, %s", name, dname);
    SB_TRY(sb_ops_backend_of(fn, names, 5, (const sb_tensor *[]){a, targets, weight, dloss, da},
                             &be));
    SB_TRY(sb_check_disjoint(fn, 1, (const char *const[]){dname},
                             (const sb_tensor *const[]){da}, 3,
                             (const char *const[]){"dloss", "targets", "weight"},
                             (const sb_tensor *const[]){dloss, nd ? targets : NULL, weight}));
    SB_TRY(sb_check_in_place(fn, dname, da, name, a));
    int64_t *t;
    SB_TRY(read_targets(fn, be, targets, a->shape[1], ignore_index, &t));
    buffers b;
    sb_status st = buffers_get(&b, a, dloss, weight, da);
    if (st == SB_OK) {
        sb_class_problem p = class_problem(a, logits, b.in[2], reduction, eps, ignore_index);
        st = is_plain(&p) ? SB_BACKEND_RUN(fn, be, class_loss_backward, logits, b.in[0], t, p.N,
                                           p.C, reduction, eps, ignore_index, b.in[1], b.out)
                          : SB_BACKEND_RUN(fn, be, class_loss_nd_backward, &p, b.in[0], t,
                                           b.in[1], b.out);
    }
    targets_done(be, t);
    return buffers_done(&b, da, st);
}

static sb_status check_class_params(const char *fn, const sb_class_loss *params) {
    if (!params) return sb_fail(SB_ERR_NULL, "%s: params is NULL", fn);
    if (params->kind != SB_LOSS_CROSS_ENTROPY && params->kind != SB_LOSS_NLL)
        return sb_fail(SB_ERR_ARG, "%s: params->kind = %d is not an sb_class_loss_kind", fn,
                       (int)params->kind);
    if (params->kind == SB_LOSS_NLL && params->label_smoothing != 0.0f)
        return sb_fail(SB_ERR_ARG, "%s: params->label_smoothing = %g: NLL takes no label "
                       "smoothing (pass 0)", fn, (double)params->label_smoothing);
    return SB_OK;
}

sb_status sb_class_loss_forward(const sb_class_loss *params, const sb_tensor *input,
                                const sb_tensor *targets, const sb_tensor *weight,
                                sb_loss_reduction reduction, sb_tensor *loss) {
    SB_FPENV_GUARD();
    const char *fn = "sb_class_loss_forward";
    SB_TRY(check_class_params(fn, params));
    return class_forward(fn, input, targets, weight, reduction,
                         params->kind == SB_LOSS_CROSS_ENTROPY, params->label_smoothing,
                         params->ignore_index, true, loss);
}

sb_status sb_class_loss_backward(const sb_class_loss *params, const sb_tensor *input,
                                 const sb_tensor *targets, const sb_tensor *weight,
                                 sb_loss_reduction reduction, const sb_tensor *dloss,
                                 sb_tensor *dinput) {
    SB_FPENV_GUARD();
    const char *fn = "sb_class_loss_backward";
    SB_TRY(check_class_params(fn, params));
    return class_backward(fn, input, targets, weight, reduction,
                          params->kind == SB_LOSS_CROSS_ENTROPY, params->label_smoothing,
                          params->ignore_index, true, dloss, dinput);
}

sb_status sb_cross_entropy_forward(const sb_tensor *logits, const sb_tensor *targets,
                                   sb_loss_reduction reduction, float label_smoothing,
                                   int64_t ignore_index, sb_tensor *loss) {
    SB_FPENV_GUARD();
    return class_forward("sb_cross_entropy_forward", logits, targets, NULL, reduction, true,
                         label_smoothing, ignore_index, false, loss);
}

sb_status sb_cross_entropy_backward(const sb_tensor *logits, const sb_tensor *targets,
                                    sb_loss_reduction reduction, float label_smoothing,
                                    int64_t ignore_index, const sb_tensor *dloss,
                                    sb_tensor *dlogits) {
    SB_FPENV_GUARD();
    return class_backward("sb_cross_entropy_backward", logits, targets, NULL, reduction, true,
                          label_smoothing, ignore_index, false, dloss, dlogits);
}

sb_status sb_nll_loss_forward(const sb_tensor *logp, const sb_tensor *targets,
                              sb_loss_reduction reduction, int64_t ignore_index, sb_tensor *loss) {
    SB_FPENV_GUARD();
    return class_forward("sb_nll_loss_forward", logp, targets, NULL, reduction, false, 0.0f,
                         ignore_index, false, loss);
}

sb_status sb_nll_loss_backward(const sb_tensor *logp, const sb_tensor *targets,
                               sb_loss_reduction reduction, int64_t ignore_index,
                               const sb_tensor *dloss, sb_tensor *dlogp) {
    SB_FPENV_GUARD();
    return class_backward("sb_nll_loss_backward", logp, targets, NULL, reduction, false, 0.0f,
                          ignore_index, false, dloss, dlogp);
}

/* ---- elementwise losses (MSE is one kind) ---- */

static const char *loss_kind_name(sb_elementwise_loss_kind kind) {
    static const char *const names[] = {"MSE", "L1", "SMOOTH_L1", "HUBER", "BCE",
                                        "BCE_WITH_LOGITS", "KL_DIV"};
    return names[kind];
}

/* An optional per-element tensor (weight, pos_weight) of x's shape. */
static sb_status check_elementwise_side(const char *fn, const char *name, const sb_tensor *t,
                                        const sb_tensor *x, bool allowed,
                                        const sb_elementwise_loss *p) {
    if (!t) return SB_OK;
    if (!allowed)
        return sb_fail(SB_ERR_ARG, "%s: the %s loss takes no %s (pass NULL)", fn,
                       loss_kind_name(p->kind), name);
    SB_TRY(sb_check_tensor(fn, name, t, SB_F32, -1));
    return sb_check_same_shape(fn, name, t, "x", x);
}

static sb_status check_elementwise_inputs(const char *fn, const sb_elementwise_loss *p,
                                          const sb_tensor *x, const sb_tensor *target,
                                          const sb_tensor *weight, const sb_tensor *pos_weight,
                                          sb_loss_reduction reduction) {
    if (!p) return sb_fail(SB_ERR_NULL, "%s: params is NULL", fn);
    if ((int)p->kind < SB_LOSS_MSE || (int)p->kind > SB_LOSS_KL_DIV)
        return sb_fail(SB_ERR_ARG, "%s: params->kind = %d is not an sb_elementwise_loss_kind", fn,
                       (int)p->kind);
    if (p->kind == SB_LOSS_SMOOTH_L1 && !(p->beta >= 0.0f && p->beta < INFINITY))
        return sb_fail(SB_ERR_ARG, "%s: params->beta = %g must be finite and >= 0 for SMOOTH_L1",
                       fn, (double)p->beta);
    if (p->kind == SB_LOSS_HUBER && !(p->beta > 0.0f && p->beta < INFINITY))
        return sb_fail(SB_ERR_ARG, "%s: params->beta (delta) = %g must be finite and > 0 for HUBER",
                       fn, (double)p->beta);
    SB_TRY(sb_loss_check_reduction(fn, reduction));
    SB_TRY(sb_check_tensor(fn, "x", x, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "target", target, SB_F32, -1));
    SB_TRY(sb_check_same_shape(fn, "target", target, "x", x));
    if (sb_tensor_numel(x) < 1) {
        char s[128];
        return sb_fail(SB_ERR_SHAPE, "%s: x has shape %s with no elements", fn,
                       sb_shape_str(x, s, sizeof s));
    }
    SB_TRY(check_elementwise_side(fn, "weight", weight, x, true, p));
    return check_elementwise_side(fn, "pos_weight", pos_weight, x,
                                  p->kind == SB_LOSS_BCE_WITH_LOGITS, p);
}

/* BCE's x must be probabilities (PyTorch refuses others too); x is
 * contiguous host memory here. */
static sb_status check_probabilities(const char *fn, const sb_elementwise_loss *p,
                                     const float *x, int64_t n) {
    if (p->kind != SB_LOSS_BCE) return SB_OK;
    for (int64_t i = 0; i < n; i++)
        if (!(x[i] >= 0.0f && x[i] <= 1.0f))
            return sb_fail(SB_ERR_RANGE, "%s: x[%lld] = %g: BCE needs every element of x in "
                           "[0, 1]", fn, (long long)i, (double)x[i]);
    return SB_OK;
}

/* Up to four inputs as contiguous buffers (x, target, weight, pos_weight). */
typedef struct loss_inputs {
    sb_tensor *copies[4];
    const float *in[4];
} loss_inputs;

static sb_status loss_inputs_get(loss_inputs *b, const sb_tensor *const ins[4]) {
    memset(b, 0, sizeof *b);
    for (int i = 0; i < 4; i++)
        if (ins[i]) SB_TRY(sb_loss_input(ins[i], &b->copies[i], &b->in[i]));
    return SB_OK;
}

static void loss_inputs_free(loss_inputs *b) {
    for (int i = 0; i < 4; i++) sb_tensor_free(b->copies[i]);
}

static sb_status elementwise_forward(const char *fn, const sb_elementwise_loss *params,
                                     const sb_tensor *x, const sb_tensor *target,
                                     const sb_tensor *weight, const sb_tensor *pos_weight,
                                     sb_loss_reduction reduction, sb_tensor *loss) {
    SB_TRY(check_elementwise_inputs(fn, params, x, target, weight, pos_weight, reduction));
    SB_TRY(sb_loss_check_shape(fn, "loss", loss, reduction, x));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, target, weight, pos_weight, loss));
    int64_t n = sb_tensor_numel(x);
    loss_inputs b;
    sb_tensor *scratch = NULL;
    float *out = NULL;
    sb_status st = loss_inputs_get(&b, (const sb_tensor *const[]){x, target, weight, pos_weight});
    if (st == SB_OK && x->device == SB_DEVICE_CPU) st = check_probabilities(fn, params, b.in[0], n);
    if (st == SB_OK) st = sb_loss_output(loss, &scratch, &out);
    if (st == SB_OK)
        st = SB_BACKEND_RUN(fn, be, elementwise_loss_forward, params, b.in[0], b.in[1], b.in[2],
                            b.in[3], n, reduction, out);
    loss_inputs_free(&b);
    if (st != SB_OK) {
        sb_tensor_free(scratch);
        return st;
    }
    return sb_loss_output_done(loss, scratch);
}

static sb_status elementwise_backward(const char *fn, const sb_elementwise_loss *params,
                                      const sb_tensor *x, const sb_tensor *target,
                                      const sb_tensor *weight, const sb_tensor *pos_weight,
                                      sb_loss_reduction reduction, const sb_tensor *dloss,
                                      sb_tensor *dx, sb_tensor *dtarget) {
    SB_TRY(check_elementwise_inputs(fn, params, x, target, weight, pos_weight, reduction));
    SB_TRY(sb_loss_check_shape(fn, "dloss", dloss, reduction, x));
    SB_TRY(sb_check_tensor(fn, "dx", dx, SB_F32, -1));
    SB_TRY(sb_check_same_shape(fn, "dx", dx, "x", x));
    if (dtarget) {
        if (params->kind >= SB_LOSS_BCE)
            return sb_fail(SB_ERR_UNSUPPORTED, "%s: the %s loss has no target gradient (pass "
                           "dtarget = NULL)", fn, loss_kind_name(params->kind));
        SB_TRY(sb_check_tensor(fn, "dtarget", dtarget, SB_F32, -1));
        SB_TRY(sb_check_same_shape(fn, "dtarget", dtarget, "x", x));
    }
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, target, weight, pos_weight, dloss, dx, dtarget));
    SB_TRY(sb_check_disjoint(fn, 2, (const char *const[]){"dx", "dtarget"},
                             (const sb_tensor *const[]){dx, dtarget}, 1,
                             (const char *const[]){"dloss"}, (const sb_tensor *const[]){dloss}));
    const char *const ins[] = {"x", "target", "weight", "pos_weight"};
    const sb_tensor *const in_t[] = {x, target, weight, pos_weight};
    for (int i = 0; i < 4; i++) {
        SB_TRY(sb_check_in_place(fn, "dx", dx, ins[i], in_t[i]));
        SB_TRY(sb_check_in_place(fn, "dtarget", dtarget, ins[i], in_t[i]));
    }
    int64_t n = sb_tensor_numel(x);
    loss_inputs b;
    sb_tensor *dl_copy = NULL, *dx_scratch = NULL, *dt_scratch = NULL;
    const float *dl = NULL;
    float *dx_data = NULL, *dt_data = NULL;
    sb_status st = loss_inputs_get(&b, in_t);
    if (st == SB_OK && x->device == SB_DEVICE_CPU) st = check_probabilities(fn, params, b.in[0], n);
    if (st == SB_OK) st = sb_loss_input(dloss, &dl_copy, &dl);
    if (st == SB_OK) st = sb_loss_output(dx, &dx_scratch, &dx_data);
    if (st == SB_OK && dtarget) st = sb_loss_output(dtarget, &dt_scratch, &dt_data);
    if (st == SB_OK)
        st = SB_BACKEND_RUN(fn, be, elementwise_loss_backward, params, b.in[0], b.in[1], b.in[2],
                            b.in[3], n, reduction, dl, dx_data, dt_data);
    loss_inputs_free(&b);
    sb_tensor_free(dl_copy);
    if (st == SB_OK) st = sb_loss_output_done(dx, dx_scratch);
    else sb_tensor_free(dx_scratch);
    if (dtarget) {
        if (st == SB_OK) st = sb_loss_output_done(dtarget, dt_scratch);
        else sb_tensor_free(dt_scratch);
    }
    return st;
}

sb_status sb_elementwise_loss_forward(const sb_elementwise_loss *params, const sb_tensor *x,
                                      const sb_tensor *target, const sb_tensor *weight,
                                      const sb_tensor *pos_weight, sb_loss_reduction reduction,
                                      sb_tensor *loss) {
    SB_FPENV_GUARD();
    return elementwise_forward("sb_elementwise_loss_forward", params, x, target, weight,
                               pos_weight, reduction, loss);
}

sb_status sb_elementwise_loss_backward(const sb_elementwise_loss *params, const sb_tensor *x,
                                       const sb_tensor *target, const sb_tensor *weight,
                                       const sb_tensor *pos_weight, sb_loss_reduction reduction,
                                       const sb_tensor *dloss, sb_tensor *dx, sb_tensor *dtarget) {
    SB_FPENV_GUARD();
    return elementwise_backward("sb_elementwise_loss_backward", params, x, target, weight,
                                pos_weight, reduction, dloss, dx, dtarget);
}

/* ---- MSE: the elementwise loss of kind SB_LOSS_MSE ---- */

static const sb_elementwise_loss mse_params = {SB_LOSS_MSE, 0.0f, false};

sb_status sb_mse_forward(const sb_tensor *x, const sb_tensor *target, sb_loss_reduction reduction,
                         sb_tensor *loss) {
    SB_FPENV_GUARD();
    return elementwise_forward("sb_mse_forward", &mse_params, x, target, NULL, NULL, reduction,
                               loss);
}

sb_status sb_mse_backward(const sb_tensor *x, const sb_tensor *target, sb_loss_reduction reduction,
                          const sb_tensor *dloss, sb_tensor *dx, sb_tensor *dtarget) {
    SB_FPENV_GUARD();
    return elementwise_backward("sb_mse_backward", &mse_params, x, target, NULL, NULL, reduction,
                                dloss, dx, dtarget);
}
