/* The CPU backend's op table: every entry calls the fast kernels of src/cpu
 * (sb_cpu_*), which reproduce the reference kernels of src/ref bit for bit;
 * the few ops without a fast kernel call their reference directly.
 * Arguments arrive validated by src/ops. Shared by the CPU and the mirror
 * device (src/backend/mirror.c), whose memory the host can also address. */
#include <stdlib.h>
#include <string.h>
#include "backend/backend.h"
#include "core/canonical_sum.h"
#include "core/fpenv.h"
#include "core/internal.h"
#include "cpu/conv_internal.h"
#include "cpu/cpu.h"
#include "cpu/kernels.h"
#include "cpu/ops_internal.h"
#include "cpu/grid_internal.h"
#include "cpu/interp_internal.h"
#include "cpu/pad_internal.h"
#include "cpu/sum_internal.h"
#include "ref/ref_loss.h"

static int64_t at_least_1(int64_t v) { return v > 1 ? v : 1; }

/* ---- matrix products ---- */

static sb_status cpu_sgemm(const sb_backend *be, char transa, char transb, int64_t m, int64_t n,
                           int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                           float *c, int64_t ldc, bool continue_chain) {
    (void)be;
    sb_cpu_sgemm(transa, transb, m, n, k, a, lda, b, ldb, c, ldc, continue_chain);
    return SB_OK;
}

static sb_status cpu_linear_forward(const sb_backend *be, int64_t rows, int64_t in, int64_t out,
                                    const float *x, const float *w, const float *bias, float *y) {
    (void)be;
    /* y = x . w^T: w stored (out, in) is op(b) = w^T with 'T'. */
    sb_cpu_sgemm('N', 'T', rows, out, in, x, at_least_1(in), w, at_least_1(in), y,
                 at_least_1(out), false);
    if (bias && rows > 0 && out > 0) {
        /* y[r][o] + bias[o], one addition per element: the threaded
         * pointwise engine over y and bias broadcast along the rows */
        sb_tensor v[2] = {{.dtype = SB_F32, .ndim = 2, .shape = {rows, out}, .strides = {out, 1},
                           .data = y},
                          {.dtype = SB_F32, .ndim = 2, .shape = {rows, out}, .strides = {0, 1},
                           .data = (void *)bias}};
        sb_binary_op add = SB_BINARY_ADD;
        sb_cpu_pw_run(2, v, &v[0], sb_cpu_binary_kernel, &add);
    }
    return SB_OK;
}

static sb_status cpu_linear_backward(const sb_backend *be, int64_t rows, int64_t in, int64_t out,
                                     const float *dy, const float *x, const float *w, float *dx,
                                     float *dw, float *db) {
    (void)be;
    int64_t ldin = at_least_1(in), ldout = at_least_1(out);
    if (dx) /* dx (rows, in) = dy (rows, out) . w (out, in): chain over o. */
        sb_cpu_sgemm('N', 'N', rows, in, out, dy, ldout, w, ldin, dx, ldin, false);
    if (dw) /* dw (out, in) = dy^T . x (rows, in): chain over rows. */
        sb_cpu_sgemm('T', 'N', out, in, rows, dy, ldout, x, ldin, dw, ldin, false);
    if (db) sb_cpu_sum_columns(dy, rows, out, ldout, db); /* each column's canonical sum */
    return SB_OK;
}

/* ---- convolution and pooling ---- */

static sb_status cpu_conv2d_forward(const sb_backend *be, const sb_conv2d_geom *g, const float *x,
                                    const float *w, const float *bias, float *y) {
    (void)be;
    sb_cpu_conv2d_forward(g, x, w, bias, y);
    return SB_OK;
}

static sb_status cpu_conv2d_backward(const sb_backend *be, const sb_conv2d_geom *g,
                                     const float *dy, const float *x, const float *w, float *dx,
                                     float *dw, float *db) {
    (void)be;
    if (dx) sb_cpu_conv2d_backward_input(g, dy, w, dx);
    if (dw) sb_cpu_conv2d_backward_weight(g, dy, x, dw);
    if (db) sb_cpu_conv2d_backward_bias(g, dy, db);
    return SB_OK;
}

static sb_status cpu_max_pool2d_forward(const sb_backend *be, const sb_pool2d_geom *g,
                                        const float *x, float *y, int64_t *indices) {
    (void)be;
    sb_cpu_max_pool2d_forward(g, x, y, indices);
    return SB_OK;
}

static sb_status cpu_max_pool2d_backward(const sb_backend *be, const sb_pool2d_geom *g,
                                         const float *dy, const int64_t *indices, float *dx) {
    (void)be;
    sb_cpu_max_pool2d_backward(g, dy, indices, dx);
    return SB_OK;
}

static sb_status cpu_avg_pool2d_forward(const sb_backend *be, const sb_pool2d_geom *g,
                                        const float *x, float *y) {
    (void)be;
    sb_cpu_avg_pool2d_forward(g, x, y);
    return SB_OK;
}

static sb_status cpu_avg_pool2d_backward(const sb_backend *be, const sb_pool2d_geom *g,
                                         const float *dy, float *dx) {
    (void)be;
    sb_cpu_avg_pool2d_backward(g, dy, dx);
    return SB_OK;
}

/* ---- pointwise ---- */

/* The activations that the kernel context's piecewise-linear loops serve. */
static bool piecewise_kind(sb_act_kind kind, sb_pwl_kind *pk) {
    switch (kind) {
    case SB_ACT_LEAKY_RELU: *pk = SB_PWL_LEAKY_RELU; return true;
    case SB_ACT_HARDTANH: *pk = SB_PWL_HARDTANH; return true;
    case SB_ACT_HARDSIGMOID: *pk = SB_PWL_HARDSIGMOID; return true;
    case SB_ACT_HARDSWISH: *pk = SB_PWL_HARDSWISH; return true;
    default: return false;
    }
}

/* in[0] is x (or y for tanh/sigmoid backward), in[1] is dy when backward. */
static void act_kernel(const void *ctx, int64_t n, const float *const *in, float *out) {
    const sb_act_args *c = ctx;
    sb_pwl_kind pk;
    if (piecewise_kind(c->kind, &pk)) {
        if (c->backward) sb_cpu_piecewise_backward(pk, n, in[0], in[1], c->p0, c->p1, out);
        else sb_cpu_piecewise_forward(pk, n, in[0], c->p0, c->p1, out);
        return;
    }
    if (!c->backward) {
        switch (c->kind) {
        case SB_ACT_RELU: sb_cpu_relu_forward(n, in[0], out); break;
        case SB_ACT_TANH: sb_cpu_tanh_forward(n, in[0], out); break;
        case SB_ACT_SIGMOID: sb_cpu_sigmoid_forward(n, in[0], out); break;
        case SB_ACT_SILU: sb_cpu_silu_forward(n, in[0], out); break;
        case SB_ACT_GELU: sb_cpu_gelu_forward(n, in[0], c->approximate, out); break;
        case SB_ACT_SOFTPLUS: sb_cpu_softplus_forward(n, in[0], c->p0, c->p1, out); break;
        case SB_ACT_ELU: sb_cpu_elu_forward(n, in[0], c->p0, c->p1, c->p2, out); break;
        case SB_ACT_MISH: sb_cpu_mish_forward(n, in[0], out); break;
        case SB_ACT_LOGSIGMOID: sb_cpu_logsigmoid_forward(n, in[0], out); break;
        case SB_ACT_HARDSHRINK: sb_ref_hardshrink_forward(n, in[0], c->p0, out); break;
        case SB_ACT_SOFTSHRINK: sb_ref_softshrink_forward(n, in[0], c->p0, out); break;
        case SB_ACT_THRESHOLD: sb_ref_threshold_forward(n, in[0], c->p0, c->p1, out); break;
        case SB_ACT_LEAKY_RELU: case SB_ACT_HARDTANH: case SB_ACT_HARDSIGMOID:
        case SB_ACT_HARDSWISH: break; /* piecewise_kind, above */
        }
        return;
    }
    switch (c->kind) {
    case SB_ACT_RELU: sb_cpu_relu_backward(n, in[0], in[1], out); break;
    case SB_ACT_TANH: sb_cpu_tanh_backward(n, in[0], in[1], out); break;
    case SB_ACT_SIGMOID: sb_cpu_sigmoid_backward(n, in[0], in[1], out); break;
    case SB_ACT_SILU: sb_cpu_silu_backward(n, in[0], in[1], out); break;
    case SB_ACT_GELU: sb_cpu_gelu_backward(n, in[0], in[1], c->approximate, out); break;
    case SB_ACT_SOFTPLUS: sb_cpu_softplus_backward(n, in[0], in[1], c->p0, c->p1, out); break;
    case SB_ACT_ELU: sb_cpu_elu_backward(n, in[0], in[1], c->p0, c->p1, c->p2, out); break;
    case SB_ACT_MISH: sb_cpu_mish_backward(n, in[0], in[1], out); break;
    case SB_ACT_LOGSIGMOID: sb_cpu_logsigmoid_backward(n, in[0], in[1], out); break;
    case SB_ACT_HARDSHRINK: sb_ref_hardshrink_backward(n, in[0], in[1], c->p0, out); break;
    case SB_ACT_SOFTSHRINK: sb_ref_softshrink_backward(n, in[0], in[1], c->p0, out); break;
    case SB_ACT_THRESHOLD: sb_ref_threshold_backward(n, in[0], in[1], c->p0, out); break;
    case SB_ACT_LEAKY_RELU: case SB_ACT_HARDTANH: case SB_ACT_HARDSIGMOID:
    case SB_ACT_HARDSWISH: break; /* piecewise_kind, above */
    }
}

static sb_status cpu_activation(const sb_backend *be, const sb_act_args *a, const sb_tensor *in,
                                sb_tensor *out) {
    (void)be;
    sb_cpu_pw_run(a->backward ? 2 : 1, in, out, act_kernel, a);
    return SB_OK;
}

static sb_status cpu_unary(const sb_backend *be, sb_unary_op op, const sb_tensor *x,
                           sb_tensor *out) {
    (void)be;
    sb_cpu_pw_run(1, x, out, sb_cpu_unary_kernel, &op);
    return SB_OK;
}

static void unary_grad_kernel(const void *ctx, int64_t n, const float *const *in, float *out) {
    SB_FPENV_GUARD();
    sb_ref_unary_backward(*(const sb_unary_op *)ctx, n, in[0], in[1], in[2], out);
}

static sb_status cpu_unary_backward(const sb_backend *be, sb_unary_op op, const sb_tensor *x,
                                    const sb_tensor *y, const sb_tensor *dy, sb_tensor *dx) {
    (void)be;
    sb_tensor v[3] = {*x, *y, *dy};
    sb_cpu_pw_run(3, v, dx, unary_grad_kernel, &op);
    return SB_OK;
}

static sb_status cpu_binary(const sb_backend *be, sb_binary_op op, const sb_tensor *a,
                            const sb_tensor *b, sb_tensor *out) {
    (void)be;
    sb_tensor v[2] = {*a, *b};
    sb_cpu_pw_run(2, v, out, sb_cpu_binary_kernel, &op);
    return SB_OK;
}

/* The scalar is a view of one host float broadcast to out's shape: the
 * same engine, and so the same bits, as the tensor form. */
static sb_status cpu_binary_scalar(const sb_backend *be, sb_binary_op op, const sb_tensor *x,
                                   float s, sb_tensor *out) {
    (void)be;
    sb_tensor v[2] = {*x, {.dtype = SB_F32, .device = out->device, .ndim = out->ndim, .data = &s}};
    for (int i = 0; i < out->ndim; i++) v[1].shape[i] = out->shape[i]; /* strides stay 0 */
    sb_cpu_pw_run(2, v, out, sb_cpu_binary_kernel, &op);
    return SB_OK;
}

/* grad's shape is a broadcast of out's; out does not overlap grad. The
 * geometry is the reference's (src/ref/reduce.c), shared with the GPU. */
static sb_status cpu_reduce_to_shape(const sb_backend *be, const sb_tensor *grad, sb_tensor *out) {
    (void)be;
    sb_ref_reduce_geom g = sb_ref_reduce_to_shape_geom(grad, out);
    sb_cpu_reduce(SB_REF_REDUCE_SUM, &g, grad->data, 0, out->data);
    return SB_OK;
}

typedef struct { sb_binary_op op; int which; /* 0: da, 1: db */ } grad_ctx;

/* out[i] = -x[i] (a sign flip, NaNs included, as the reference's -g). */
static void negate(int64_t n, const float *x, float *out) {
    for (int64_t i = 0; i < n; i++) out[i] = -x[i];
}

/* sb_ref_binary_backward's statements for one operand, each a pass of the
 * level's vector loops (add, sub, mul, div) over the range or over a chunk
 * of it in L1, in the reference's order: da = g, db = g (add); da = g,
 * db = -g (sub); da = g * b, db = g * a (mul); da = g / b,
 * db = -g * ((a / b) / b) (div). The other operators (pow, maximum,
 * minimum) run the reference itself. Every output element depends on its
 * own inputs only, read before it is written. */
static void binary_grad_kernel(const void *ctx, int64_t n, const float *const *in, float *out) {
    const grad_ctx *c = ctx;
    const float *g = in[0], *a = in[1], *b = in[2];
    const sb_pwv_table *pw = sb_kernels()->pointwise;
    switch (c->op) {
    case SB_BINARY_ADD:
        if (out != g) memmove(out, g, (size_t)n * sizeof *out);
        return;
    case SB_BINARY_SUB:
        if (c->which == 1) negate(n, g, out);
        else if (out != g) memmove(out, g, (size_t)n * sizeof *out);
        return;
    case SB_BINARY_MUL:
        pw->binary(SB_BINARY_MUL, n, g, 1, c->which == 0 ? b : a, 1, out);
        return;
    case SB_BINARY_DIV:
        if (c->which == 0) {
            pw->binary(SB_BINARY_DIV, n, g, 1, b, 1, out);
            return;
        }
        enum { CHUNK = 512 };
        for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
            int64_t k = n - i0 < CHUNK ? n - i0 : CHUNK;
            float t[CHUNK], ng[CHUNK];
            pw->binary(SB_BINARY_DIV, k, a + i0, 1, b + i0, 1, t);
            pw->binary(SB_BINARY_DIV, k, t, 1, b + i0, 1, t);
            negate(k, g + i0, ng);
            pw->binary(SB_BINARY_MUL, k, ng, 1, t, 1, out + i0);
        }
        return;
    default:
        sb_ref_binary_backward(c->op, n, g, a, b, c->which == 0 ? out : NULL,
                               c->which == 1 ? out : NULL);
    }
}

static bool same_shape(const sb_tensor *x, const sb_tensor *y) {
    if (x->ndim != y->ndim) return false;
    for (int i = 0; i < x->ndim; i++)
        if (x->shape[i] != y->shape[i]) return false;
    return true;
}

/* Each gradient is formed at the broadcast shape, then summed back. A
 * gradient of the broadcast shape itself (a residual add's) sums nothing
 * back: each element is the canonical sum of one term, -0 + v, which is v
 * bit for bit, so it is formed in place. */
static sb_status cpu_binary_backward(const sb_backend *be, sb_binary_op op, const sb_tensor *dy,
                                     const sb_tensor *a, const sb_tensor *b, sb_tensor *da,
                                     sb_tensor *db) {
    sb_tensor v[3] = {*dy, *a, *b};
    sb_tensor full = {.dtype = SB_F32, .device = dy->device, .ndim = dy->ndim};
    sb_tensor *grads[2] = {da, db};
    bool reduced = (da && !same_shape(da, dy)) || (db && !same_shape(db, dy));
    if (reduced) {
        int64_t n = sb_tensor_numel(dy);
        full.data = sb_malloc("sb_binary_backward", (size_t)n * sizeof(float));
        if (!full.data) return SB_ERR_NOMEM;
        int64_t stride = 1;
        for (int i = dy->ndim - 1; i >= 0; i--) {
            full.shape[i] = dy->shape[i];
            full.strides[i] = stride;
            stride *= dy->shape[i];
        }
    }
    for (int w = 0; w < 2; w++) {
        if (!grads[w]) continue;
        grad_ctx c = {op, w};
        if (same_shape(grads[w], dy)) {
            sb_cpu_pw_run(3, v, grads[w], binary_grad_kernel, &c);
            continue;
        }
        sb_cpu_pw_run(3, v, &full, binary_grad_kernel, &c);
        cpu_reduce_to_shape(be, &full, grads[w]);
    }
    free(full.data);
    return SB_OK;
}

/* ---- softmax and losses ---- */

static sb_status cpu_softmax_forward(const sb_backend *be, const float *x, int64_t outer,
                                     int64_t n, int64_t inner, bool log, float *y) {
    (void)be;
    sb_cpu_softmax_forward(x, outer, n, inner, log, y);
    return SB_OK;
}

static sb_status cpu_softmax_backward(const sb_backend *be, const float *y, const float *dy,
                                      int64_t outer, int64_t n, int64_t inner, bool log,
                                      float *dx) {
    (void)be;
    sb_cpu_softmax_backward(y, dy, outer, n, inner, log, dx);
    return SB_OK;
}

static sb_status cpu_class_loss_nd_forward(const sb_backend *be, const sb_class_problem *p,
                                           const float *input, const int64_t *targets,
                                           float *loss) {
    (void)be;
    sb_cpu_class_loss_forward(p, input, targets, loss);
    return SB_OK;
}

static sb_status cpu_class_loss_nd_backward(const sb_backend *be, const sb_class_problem *p,
                                            const float *input, const int64_t *targets,
                                            const float *dloss, float *dinput) {
    (void)be;
    sb_cpu_class_loss_backward(p, input, targets, dloss, dinput);
    return SB_OK;
}

/* The (N, C) unweighted entries: the general kernels with no weight. */
static sb_class_problem plain_problem(bool logits, int64_t N, int64_t C,
                                      sb_loss_reduction reduction, float eps,
                                      int64_t ignore_index) {
    return (sb_class_problem){.logits = logits, .N = N, .C = C, .inner = 1,
                              .reduction = reduction, .eps = eps, .ignore_index = ignore_index};
}

static sb_status cpu_class_loss_forward(const sb_backend *be, bool logits, const float *a,
                                        const int64_t *targets, int64_t N, int64_t C,
                                        sb_loss_reduction reduction, float eps,
                                        int64_t ignore_index, float *loss) {
    sb_class_problem p = plain_problem(logits, N, C, reduction, eps, ignore_index);
    return cpu_class_loss_nd_forward(be, &p, a, targets, loss);
}

static sb_status cpu_class_loss_backward(const sb_backend *be, bool logits, const float *a,
                                         const int64_t *targets, int64_t N, int64_t C,
                                         sb_loss_reduction reduction, float eps,
                                         int64_t ignore_index, const float *dloss, float *da) {
    sb_class_problem p = plain_problem(logits, N, C, reduction, eps, ignore_index);
    return cpu_class_loss_nd_backward(be, &p, a, targets, dloss, da);
}

static sb_status cpu_ctc_loss_forward(const sb_backend *be, const sb_ctc_problem *p,
                                      const float *log_probs, float *loss) {
    (void)be;
    return sb_cpu_ctc_loss_forward(p, log_probs, loss);
}

static sb_status cpu_ctc_loss_backward(const sb_backend *be, const sb_ctc_problem *p,
                                       const float *log_probs, const float *dloss,
                                       float *dlog_probs) {
    (void)be;
    return sb_cpu_ctc_loss_backward(p, log_probs, dloss, dlog_probs);
}

static sb_status cpu_elementwise_loss_forward(const sb_backend *be, const sb_elementwise_loss *p,
                                              const float *x, const float *y, const float *w,
                                              const float *pw, int64_t n,
                                              sb_loss_reduction reduction, float *loss) {
    (void)be;
    sb_ref_elementwise_loss_forward(p, x, y, w, pw, n, reduction, loss);
    return SB_OK;
}

static sb_status cpu_elementwise_loss_backward(const sb_backend *be, const sb_elementwise_loss *p,
                                               const float *x, const float *y, const float *w,
                                               const float *pw, int64_t n,
                                               sb_loss_reduction reduction, const float *dloss,
                                               float *dx, float *dy) {
    (void)be;
    sb_ref_elementwise_loss_backward(p, x, y, w, pw, n, reduction, dloss, dx, dy);
    return SB_OK;
}

/* ---- normalisation ---- */

static sb_status cpu_batch_norm_forward(const sb_backend *be, const float *x, const float *gamma,
                                        const float *beta, float *running_mean,
                                        float *running_var, bool training, float momentum,
                                        float eps, float *y, float *save_mean, float *save_rstd,
                                        int64_t N, int64_t C, int64_t S) {
    (void)be;
    sb_cpu_batch_norm_forward(x, gamma, beta, running_mean, running_var, training, momentum, eps,
                              y, save_mean, save_rstd, N, C, S);
    return SB_OK;
}

static sb_status cpu_batch_norm_backward(const sb_backend *be, const float *dy, const float *x,
                                         const float *gamma, const float *save_mean,
                                         const float *save_rstd, bool training, float *dx,
                                         float *dgamma, float *dbeta, int64_t N, int64_t C,
                                         int64_t S) {
    (void)be;
    sb_cpu_batch_norm_backward(dy, x, gamma, save_mean, save_rstd, training, dx, dgamma, dbeta,
                               N, C, S);
    return SB_OK;
}

static sb_status cpu_layer_norm_forward(const sb_backend *be, const float *x, const float *w,
                                        const float *b, float eps, float *y, float *save_mean,
                                        float *save_rstd, int64_t R, int64_t D) {
    (void)be;
    sb_cpu_layer_norm_forward(x, w, b, eps, y, save_mean, save_rstd, R, D);
    return SB_OK;
}

static sb_status cpu_layer_norm_backward(const sb_backend *be, const float *dy, const float *x,
                                         const float *w, const float *save_mean,
                                         const float *save_rstd, float *dx, float *dw, float *db,
                                         int64_t R, int64_t D) {
    (void)be;
    sb_cpu_layer_norm_backward(dy, x, w, save_mean, save_rstd, dx, dw, db, R, D);
    return SB_OK;
}

static sb_status cpu_rms_norm_forward(const sb_backend *be, const float *x, const float *w,
                                      float eps, float *y, float *save_rrms, int64_t R,
                                      int64_t D) {
    (void)be;
    sb_cpu_rms_norm_forward(x, w, eps, y, save_rrms, R, D);
    return SB_OK;
}

static sb_status cpu_rms_norm_backward(const sb_backend *be, const float *dy, const float *x,
                                       const float *w, const float *rrms, float *dx, float *dw,
                                       int64_t R, int64_t D) {
    (void)be;
    sb_cpu_rms_norm_backward(dy, x, w, rrms, dx, dw, R, D);
    return SB_OK;
}

static sb_status cpu_group_norm_forward(const sb_backend *be, const float *x, const float *gamma,
                                        const float *beta, float eps, float *y, float *save_mean,
                                        float *save_rstd, int64_t N, int64_t C, int64_t S,
                                        int64_t G) {
    (void)be;
    sb_cpu_group_norm_forward(x, gamma, beta, eps, y, save_mean, save_rstd, N, C, S, G);
    return SB_OK;
}

static sb_status cpu_group_norm_backward(const sb_backend *be, const float *dy, const float *x,
                                         const float *gamma, const float *save_mean,
                                         const float *save_rstd, float *dx, float *dgamma,
                                         float *dbeta, int64_t N, int64_t C, int64_t S,
                                         int64_t G) {
    (void)be;
    sb_cpu_group_norm_backward(dy, x, gamma, save_mean, save_rstd, dx, dgamma, dbeta, N, C, S,
                               G);
    return SB_OK;
}

/* ---- reductions ---- */

static sb_status cpu_reduce(const sb_backend *be, sb_ref_reduce_kind kind,
                            const sb_ref_reduce_geom *g, const float *x, int64_t correction,
                            float *out) {
    (void)be;
    sb_cpu_reduce(kind, g, x, correction, out);
    return SB_OK;
}

static sb_status cpu_reduce_extreme(const sb_backend *be, bool is_max, const sb_ref_reduce_geom *g,
                                    const float *x, float *out, int64_t *indices) {
    (void)be;
    sb_cpu_reduce_extreme(is_max, g, x, out, indices);
    return SB_OK;
}

static sb_status cpu_reduce_scatter(const sb_backend *be, const sb_ref_reduce_geom *g,
                                    const float *dy, const int64_t *indices, float *dx) {
    (void)be;
    sb_cpu_reduce_scatter(g, dy, indices, dx);
    return SB_OK;
}

static void scale_kernel(const void *ctx, int64_t n, const float *const *in, float *out) {
    if (!ctx) {
        for (int64_t i = 0; i < n; i++) out[i] = in[0][i];
        return;
    }
    float nf = *(const float *)ctx;
    for (int64_t i = 0; i < n; i++) out[i] = in[0][i] / nf;
}

static sb_status cpu_spread(const sb_backend *be, const sb_tensor *dy, bool divide, float divisor,
                            sb_tensor *dx) {
    (void)be;
    sb_cpu_pw_run(1, dy, dx, scale_kernel, divide ? &divisor : NULL);
    return SB_OK;
}

/* ---- index family ---- */

static sb_status cpu_index_gather(const sb_backend *be, const sb_ref_index_geom *g,
                                  const float *table, const int64_t *index, float *dense) {
    (void)be;
    sb_cpu_index_gather(g, table, index, dense);
    return SB_OK;
}

static sb_status cpu_index_scatter_add(const sb_backend *be, const sb_ref_index_geom *g,
                                       const float *dense, const int64_t *index, bool scale,
                                       float alpha, float *table) {
    (void)be;
    sb_cpu_index_scatter_add(g, dense, index, scale, alpha, table);
    return SB_OK;
}

/* ---- cumulative sum and product ---- */

static sb_status cpu_cumulative(const sb_backend *be, sb_ref_cum_kind kind,
                                const sb_ref_cum_geom *g, const float *x, const float *y,
                                const float *dy, float *out) {
    (void)be;
    sb_cpu_cumulative(kind, g, x, y, dy, out);
    return SB_OK;
}

/* ---- scatter_reduce ---- */

static sb_status cpu_scatter_reduce(const sb_backend *be, const sb_ref_index_geom *g,
                                    sb_scatter_reduce_op op, bool include_self, int64_t table_len,
                                    const float *src, const int64_t *index, float *table) {
    (void)be;
    sb_cpu_scatter_reduce(g, op, include_self, table_len, src, index, table);
    return SB_OK;
}

/* ---- sort, topk, kthvalue, median ---- */

static sb_status cpu_sort_select(const sb_backend *be, const sb_ref_sort_geom *g, const float *x,
                                 float *values, int64_t *indices) {
    (void)be;
    sb_cpu_sort(g, x, values, indices);
    return SB_OK;
}

static sb_status cpu_sort_scatter(const sb_backend *be, const sb_ref_sort_geom *g,
                                  const float *dy, const int64_t *indices, float *dx) {
    (void)be;
    sb_cpu_sort_scatter(g, dy, indices, dx);
    return SB_OK;
}

/* ---- attention ---- */

static sb_status cpu_sdpa_forward(const sb_backend *be, const sb_ref_sdpa_geom *g, const float *q,
                                  const float *k, const float *v, const void *mask, float *out,
                                  float *probs) {
    (void)be;
    return sb_cpu_sdpa_forward(g, q, k, v, mask, out, probs);
}

static sb_status cpu_sdpa_backward(const sb_backend *be, const sb_ref_sdpa_geom *g,
                                   const float *dout, const float *q, const float *k,
                                   const float *v, const void *mask, const float *probs,
                                   float *dq, float *dk, float *dv) {
    (void)be;
    return sb_cpu_sdpa_backward(g, dout, q, k, v, mask, probs, dq, dk, dv);
}

/* ---- PReLU: the reference itself (one compare and multiply per element,
 * one canonical sum per channel; not worth a kernel of its own yet) ---- */

static sb_status cpu_prelu_forward(const sb_backend *be, int64_t outer, int64_t c, int64_t inner,
                                   const float *x, const float *w, float *y) {
    (void)be;
    sb_ref_prelu_forward(outer, c, inner, x, w, y);
    return SB_OK;
}

static sb_status cpu_prelu_backward(const sb_backend *be, int64_t outer, int64_t c,
                                    int64_t inner, const float *x, const float *w,
                                    const float *dy, float *dx, float *dw) {
    (void)be;
    sb_ref_prelu_backward(outer, c, inner, x, w, dy, dx, dw);
    return SB_OK;
}

/* ---- dropout ---- */

static sb_status cpu_dropout_forward(const sb_backend *be, const float *x, int64_t n, float p,
                                     bool train, uint64_t seed, uint64_t stream, uint64_t offset,
                                     float *y, float *mask) {
    (void)be;
    sb_cpu_dropout_forward(x, n, p, train, seed, stream, offset, y, mask);
    return SB_OK;
}

static sb_status cpu_dropout_backward(const sb_backend *be, const float *dy, const float *mask,
                                      int64_t n, float p, bool train, float *dx) {
    (void)be;
    sb_cpu_dropout_backward(dy, mask, n, p, train, dx);
    return SB_OK;
}

/* ---- optimizers ---- */

static sb_status cpu_sgd(const sb_backend *be, const sb_sgd_factors *f, bool nesterov,
                         bool maximize, bool first, int64_t n, float *param, const float *grad,
                         float *momentum_buf) {
    (void)be;
    sb_cpu_sgd(f, nesterov, maximize, first, n, param, grad, momentum_buf);
    return SB_OK;
}

static sb_status cpu_adam(const sb_backend *be, const sb_adam_factors *f, bool first, int64_t n,
                          float *param, const float *grad, float *exp_avg, float *exp_avg_sq,
                          float *max_exp_avg_sq) {
    (void)be;
    sb_cpu_adam(f, first, n, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq);
    return SB_OK;
}

static sb_status cpu_pad2d_forward(const sb_backend *be, const sb_pad2d_geom *g, const float *x,
                                   float *y) {
    (void)be;
    sb_cpu_pad2d_forward(g, x, y);
    return SB_OK;
}

static sb_status cpu_pad2d_backward(const sb_backend *be, const sb_pad2d_geom *g,
                                    const float *dy, float *dx) {
    (void)be;
    sb_cpu_pad2d_backward(g, dy, dx);
    return SB_OK;
}

static sb_status cpu_interpolate_forward(const sb_backend *be, const sb_interp_geom *g,
                                         const float *x, float *y) {
    (void)be;
    return sb_cpu_interpolate_forward(g, x, y);
}

static sb_status cpu_interpolate_backward(const sb_backend *be, const sb_interp_geom *g,
                                          const float *dy, float *dx) {
    (void)be;
    return sb_cpu_interpolate_backward(g, dy, dx);
}

static sb_status cpu_grid_sample_forward(const sb_backend *be, const sb_grid_geom *g,
                                         const float *x, const float *grid, float *y) {
    (void)be;
    sb_cpu_grid_sample_forward(g, x, grid, y);
    return SB_OK;
}

static sb_status cpu_grid_sample_backward(const sb_backend *be, const sb_grid_geom *g,
                                          const float *x, const float *grid, const float *dy,
                                          float *dx, float *dgrid) {
    (void)be;
    return sb_cpu_grid_sample_backward(g, x, grid, dy, dx, dgrid);
}

const sb_backend_ops sb_cpu_backend_ops = {
    .sgemm = cpu_sgemm,
    .linear_forward = cpu_linear_forward,
    .linear_backward = cpu_linear_backward,
    .conv2d_forward = cpu_conv2d_forward,
    .conv2d_backward = cpu_conv2d_backward,
    .max_pool2d_forward = cpu_max_pool2d_forward,
    .max_pool2d_backward = cpu_max_pool2d_backward,
    .avg_pool2d_forward = cpu_avg_pool2d_forward,
    .avg_pool2d_backward = cpu_avg_pool2d_backward,
    /* the fast pooling kernels take either geometry */
    .adaptive_max_pool2d_forward = cpu_max_pool2d_forward,
    .adaptive_max_pool2d_backward = cpu_max_pool2d_backward,
    .adaptive_avg_pool2d_forward = cpu_avg_pool2d_forward,
    .adaptive_avg_pool2d_backward = cpu_avg_pool2d_backward,
    .pad2d_forward = cpu_pad2d_forward,
    .pad2d_backward = cpu_pad2d_backward,
    .interpolate_forward = cpu_interpolate_forward,
    .interpolate_backward = cpu_interpolate_backward,
    .grid_sample_forward = cpu_grid_sample_forward,
    .grid_sample_backward = cpu_grid_sample_backward,
    .activation = cpu_activation,
    .unary = cpu_unary,
    .unary_backward = cpu_unary_backward,
    .binary = cpu_binary,
    .binary_scalar = cpu_binary_scalar,
    .binary_backward = cpu_binary_backward,
    .reduce_to_shape = cpu_reduce_to_shape,
    .softmax_forward = cpu_softmax_forward,
    .softmax_backward = cpu_softmax_backward,
    .class_loss_forward = cpu_class_loss_forward,
    .class_loss_backward = cpu_class_loss_backward,
    .class_loss_nd_forward = cpu_class_loss_nd_forward,
    .class_loss_nd_backward = cpu_class_loss_nd_backward,
    .ctc_loss_forward = cpu_ctc_loss_forward,
    .ctc_loss_backward = cpu_ctc_loss_backward,
    .elementwise_loss_forward = cpu_elementwise_loss_forward,
    .elementwise_loss_backward = cpu_elementwise_loss_backward,
    .batch_norm_forward = cpu_batch_norm_forward,
    .batch_norm_backward = cpu_batch_norm_backward,
    .layer_norm_forward = cpu_layer_norm_forward,
    .layer_norm_backward = cpu_layer_norm_backward,
    .rms_norm_forward = cpu_rms_norm_forward,
    .rms_norm_backward = cpu_rms_norm_backward,
    .group_norm_forward = cpu_group_norm_forward,
    .group_norm_backward = cpu_group_norm_backward,
    .reduce = cpu_reduce,
    .reduce_extreme = cpu_reduce_extreme,
    .reduce_scatter = cpu_reduce_scatter,
    .spread = cpu_spread,
    .index_gather = cpu_index_gather,
    .index_scatter_add = cpu_index_scatter_add,
    .cumulative = cpu_cumulative,
    .scatter_reduce = cpu_scatter_reduce,
    .sort_select = cpu_sort_select,
    .sort_scatter = cpu_sort_scatter,
    .sdpa_forward = cpu_sdpa_forward,
    .sdpa_backward = cpu_sdpa_backward,
    .prelu_forward = cpu_prelu_forward,
    .prelu_backward = cpu_prelu_backward,
    .dropout_forward = cpu_dropout_forward,
    .dropout_backward = cpu_dropout_backward,
    .sgd = cpu_sgd,
    .adam = cpu_adam,
};
