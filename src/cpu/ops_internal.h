/* src/cpu/ops_internal.h - the fast CPU backend of the non-GEMM ops:
 * elementwise ops and activations (pointwise.c), softmax and the losses
 * (softmax.c), optimizers (optim.c), reductions (reduce.c) and
 * normalisation (norm.c). Internal.
 *
 * Every function here has exactly the semantics of the reference kernel it
 * names (src/ref/, src/optim/): the same per-element operation sequence and
 * the same canonical-sum order, so its results are the reference's bits at
 * every ISA level and thread count (tests/test_fast_pointwise.c). Arguments
 * are already validated by the public wrappers. */
#ifndef SAMEBITS_CPU_OPS_INTERNAL_H
#define SAMEBITS_CPU_OPS_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include "samebits/elementwise.h"
#include "samebits/loss.h"
#include "samebits/optim.h"
#include "core/internal.h"
#include "cpu/cpu.h"
#include "ref/ref_attention.h"
#include "ref/ref_ctc.h"
#include "ref/ref_cumulative.h"
#include "ref/ref_index.h"
#include "ref/ref_loss.h"
#include "ref/ref_pointwise.h"
#include "ref/ref_scatter_reduce.h"
#include "ref/ref_sort.h"

/* The piecewise-linear activations that the pointwise tables vectorise
 * (their element rules are src/ref/activation.c's). */
typedef enum sb_pwl_kind {
    SB_PWL_HARDTANH,
    SB_PWL_HARDSIGMOID,
    SB_PWL_HARDSWISH,
    SB_PWL_LEAKY_RELU,
} sb_pwl_kind;

/* ---- the vector inner loops (pointwise_<isa>.c) ------------------------------
 * Each loop handles any n (its own scalar tail). Buffers may alias exactly
 * (out == in), never partially. */
typedef struct sb_pwv_table {
    void (*relu_fwd)(int64_t n, const float *x, float *y);
    void (*relu_bwd)(int64_t n, const float *x, const float *dy, float *dx);
    /* op is add, sub, mul or div; sa, sb are 0 (broadcast one value) or 1. */
    void (*binary)(sb_binary_op op, int64_t n, const float *a, int64_t sa, const float *b,
                   int64_t sb, float *out);
    /* Adam/AdamW (vmax used when f->amsgrad) and SGD element loops. */
    void (*adam)(const sb_adam_factors *f, bool first, int64_t n, float *param,
                 const float *grad, float *m, float *v, float *vmax);
    void (*sgd)(const sb_sgd_factors *f, bool nesterov, bool maximize, bool first, int64_t n,
                float *param, const float *grad, float *buf);
    /* y[i] = fmaf(a, x[i], y[i]): one step of n independent chains (the
     * attention kernels' per-row and per-key chains, src/cpu/attention.c). */
    void (*fma_acc)(int64_t n, float a, const float *x, float *y);
    /* The piecewise-linear activations (p0, p1: hardtanh's min_val and
     * max_val, leaky relu's slope in p0): the reference's branches per
     * element as lane selects, so a sign-random input costs no
     * mispredicted branch. */
    void (*piecewise_fwd)(sb_pwl_kind kind, int64_t n, const float *x, float p0, float p1,
                          float *y);
    void (*piecewise_bwd)(sb_pwl_kind kind, int64_t n, const float *x, const float *dy,
                          float p0, float p1, float *dx);
    /* The normalisations' elementwise steps (src/cpu/norm.c):
     * sqdev: out[q] = d * d with d = x[q] - m, the variance's terms;
     * norm_map: y[q] = ((x[q] - m) * r) * w + b, the multiply skipped when
     * w is NULL and the add when b is NULL; w and b are read at q * ws and
     * q * bs (stride 1: per element, as layer norm's affine parameters;
     * stride 0: one value for the run, as a channel's). */
    void (*sqdev)(int64_t n, const float *x, float m, float *out);
    void (*norm_map)(int64_t n, const float *x, float m, float r, const float *w, int64_t ws,
                     const float *b, int64_t bs, float *y);
    /* The backward's steps, with g = w ? dy[q] * w[q * ws] : dy[q] and
     * xhat = (x[q] - m) * r (w read as norm_map reads it):
     * norm_grad_terms: ga[q] = g (skipped when ga is NULL), gx[q] = g * xhat,
     * the terms of the row or channel sums;
     * norm_dx: dx[q] = k * ((g - a) - xhat * c), the input gradient (layer
     * norm: k = r; batch norm: k = gamma * r and no w). */
    void (*norm_grad_terms)(int64_t n, const float *x, const float *dy, const float *w,
                            int64_t ws, float m, float r, float *ga, float *gx);
    void (*norm_dx)(int64_t n, const float *x, const float *dy, const float *w, int64_t ws,
                    float m, float r, float k, float a, float c, float *dx);
    /* The softmax family's row maximum of x[0..n) (sb_ref_softmax_row_stats'
     * scan: the first NaN if there is one, else the first element equal to
     * the largest, whose sign of zero is part of the bits; -inf for n = 0). */
    float (*row_max)(int64_t n, const float *x);
} sb_pwv_table;

/* The per-level tables, reached through the kernel context (cpu/kernels.h:
 * sb_kernels()->pointwise); every entry is set. */
extern const sb_pwv_table sb_pwv_scalar;
#if SB_HAVE_X86_KERNELS
extern const sb_pwv_table sb_pwv_sse2; /* adam/sgd: the scalar loops (no FMA in SSE2) */
extern const sb_pwv_table sb_pwv_avx2;
extern const sb_pwv_table sb_pwv_avx512;
#endif
#if SB_HAVE_NEON_KERNELS
extern const sb_pwv_table sb_pwv_neon;
#endif
/* The scalar optimizer loops (libm fmaf), which levels without a fused
 * multiply-add keep. */
void sb_pwv_adam_scalar(const sb_adam_factors *f, bool first, int64_t n, float *param,
                        const float *grad, float *m, float *v, float *vmax);
void sb_pwv_sgd_scalar(const sb_sgd_factors *f, bool nesterov, bool maximize, bool first,
                       int64_t n, float *param, const float *grad, float *buf);
void sb_pwv_fma_acc_scalar(int64_t n, float a, const float *x, float *y);
/* The normalisations' steps, plain C (the scalar level and every tail). */
void sb_pwv_sqdev_scalar(int64_t n, const float *x, float m, float *out);
float sb_pwv_row_max_scalar(int64_t n, const float *x, int64_t stride);
float sb_pwv_row_max_dense(int64_t n, const float *x);
void sb_pwv_norm_map_scalar(int64_t n, const float *x, float m, float r, const float *w,
                            int64_t ws, const float *b, int64_t bs, float *y);
void sb_pwv_norm_grad_terms_scalar(int64_t n, const float *x, const float *dy, const float *w,
                                   int64_t ws, float m, float r, float *ga, float *gx);
void sb_pwv_norm_dx_scalar(int64_t n, const float *x, const float *dy, const float *w, int64_t ws,
                           float m, float r, float k, float a, float c, float *dx);
/* The reference loops of the piecewise-linear activations. */
void sb_pwv_piecewise_fwd_scalar(sb_pwl_kind kind, int64_t n, const float *x, float p0, float p1,
                                 float *y);
void sb_pwv_piecewise_bwd_scalar(sb_pwl_kind kind, int64_t n, const float *x, const float *dy,
                                 float p0, float p1, float *dx);

/* The contract's element steps, shared by every scalar loop and tail. */
static inline float sb_pw_relu1(float v) { return isnan(v) ? v : (v > 0.0f ? v : 0.0f); }

static inline float sb_pw_maximum1(float a, float b) {
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    if (a == b) return signbit(a) ? b : a;
    return a > b ? a : b;
}

static inline void sb_adam_elem(const sb_adam_factors *f, bool first, float *param,
                                const float *grad, float *m_buf, float *v_buf,
                                float *vmax_buf) {
    const float w1 = f->one_minus_beta1;
    float p = *param;
    float g = f->maximize ? -*grad : *grad;
    float m = first ? 0.0f : *m_buf;
    float v = first ? 0.0f : *v_buf;
    if (f->use_weight_decay) {
        if (f->decoupled) p = p * f->decay;
        else g = fmaf(p, f->weight_decay, g);
    }
    float d = g - m;
    m = w1 < 0.5f ? fmaf(w1, d, m) : fmaf(w1 - 1.0f, d, g);
    v = v * f->beta2;
    v = v + (f->one_minus_beta2 * g) * g;
    float s = v;
    if (f->amsgrad) {
        float vmax = first ? 0.0f : *vmax_buf;
        s = sb_pw_maximum1(vmax, v);
        *vmax_buf = s;
    }
    float denom = sqrtf(s) / f->bias_correction2_sqrt + f->eps;
    *m_buf = m;
    *v_buf = v;
    *param = p + (f->neg_step_size * m) / denom;
}

static inline void sb_sgd_elem(const sb_sgd_factors *f, bool nesterov, bool maximize,
                               bool first, float *param, const float *grad, float *buf) {
    float p = *param;
    float g = maximize ? -*grad : *grad;
    if (f->use_weight_decay) g = fmaf(p, f->weight_decay, g);
    if (f->use_momentum) {
        float b = first ? g : fmaf(g, f->one_minus_dampening, *buf * f->momentum);
        *buf = b;
        g = nesterov ? fmaf(b, f->momentum, g) : b;
    }
    *param = fmaf(g, f->neg_lr, p);
}

/* ---- pointwise.c ----------------------------------------------------------------
 * sb_cpu_pw_run: sb_pw_run's contract (src/ref/ref_pointwise.h), with the
 * element range split over threads; `kernel` must be elementwise. */
void sb_cpu_pw_run(int nin, const sb_tensor *in, sb_tensor *out, sb_pw_kernel kernel,
                   const void *ctx);
/* Kernels for sb_cpu_pw_run (ctx as noted), same bits as the sb_ref_ ones. */
void sb_cpu_binary_kernel(const void *ctx /* const sb_binary_op * */, int64_t n,
                          const float *const *in, float *out);
void sb_cpu_unary_kernel(const void *ctx /* const sb_unary_op * */, int64_t n,
                         const float *const *in, float *out);
void sb_cpu_relu_forward(int64_t n, const float *x, float *y);
void sb_cpu_relu_backward(int64_t n, const float *x, const float *dy, float *dx);
void sb_cpu_piecewise_forward(sb_pwl_kind kind, int64_t n, const float *x, float p0, float p1,
                              float *y);
void sb_cpu_piecewise_backward(sb_pwl_kind kind, int64_t n, const float *x, const float *dy,
                               float p0, float p1, float *dx);

/* ---- softmax.c (sb_ref_* of src/ref/ref_loss.h) ------------------------------ */
void sb_cpu_softmax_forward(const float *x, int64_t outer, int64_t n, int64_t inner, bool log,
                            float *y);
void sb_cpu_softmax_backward(const float *y, const float *dy, int64_t outer, int64_t n,
                             int64_t inner, bool log, float *dx);
void sb_cpu_class_loss_forward(const sb_class_problem *p, const float *input,
                               const int64_t *targets, float *loss);
void sb_cpu_class_loss_backward(const sb_class_problem *p, const float *input,
                                const int64_t *targets, const float *dloss, float *dinput);

/* ---- ctc.c (sb_ref_ctc_* of src/ref/ref_ctc.h): one item per thread ---------------- */
sb_status sb_cpu_ctc_loss_forward(const sb_ctc_problem *p, const float *log_probs, float *loss);
sb_status sb_cpu_ctc_loss_backward(const sb_ctc_problem *p, const float *log_probs,
                                   const float *dloss, float *dlog_probs);

/* ---- optim.c (sb_ref_* of src/ref/ref_optim.h) --------------------------------- */
void sb_cpu_adam(const sb_adam_factors *f, bool first, int64_t n, float *param,
                 const float *grad, float *m, float *v, float *vmax);
void sb_cpu_sgd(const sb_sgd_factors *f, bool nesterov, bool maximize, bool first, int64_t n,
                float *param, const float *grad, float *buf);

/* ---- activation.c: the activations whose formula calls exp/tanh/erf/log1p.
 * The transcendental of a chunk goes through the batch functions of
 * cpu/vmath.h (bit-identical to the scalar ones) into a buffer, then the
 * rest of the per-element sequence runs unchanged; same signatures and bits
 * as the sb_ref_* kernels of src/ref/activation.c. */
void sb_cpu_tanh_forward(int64_t n, const float *x, float *y);
void sb_cpu_sigmoid_forward(int64_t n, const float *x, float *y);
void sb_cpu_sigmoid_backward(int64_t n, const float *y, const float *dy, float *dx);
void sb_cpu_tanh_backward(int64_t n, const float *y, const float *dy, float *dx);
void sb_cpu_silu_forward(int64_t n, const float *x, float *y);
void sb_cpu_silu_backward(int64_t n, const float *x, const float *dy, float *dx);
void sb_cpu_gelu_forward(int64_t n, const float *x, bool approximate, float *y);
void sb_cpu_gelu_backward(int64_t n, const float *x, const float *dy, bool approximate,
                          float *dx);
void sb_cpu_softplus_forward(int64_t n, const float *x, float beta, float threshold, float *y);
void sb_cpu_softplus_backward(int64_t n, const float *x, const float *dy, float beta,
                              float threshold, float *dx);
void sb_cpu_elu_forward(int64_t n, const float *x, float alpha, float scale, float input_scale,
                        float *y);
void sb_cpu_elu_backward(int64_t n, const float *x, const float *dy, float alpha, float scale,
                         float input_scale, float *dx);
void sb_cpu_mish_forward(int64_t n, const float *x, float *y);
void sb_cpu_mish_backward(int64_t n, const float *x, const float *dy, float *dx);
void sb_cpu_logsigmoid_forward(int64_t n, const float *x, float *y);
void sb_cpu_logsigmoid_backward(int64_t n, const float *x, const float *dy, float *dx);

/* ---- norm.c (sb_ref_* of src/ref/ref_norm.h, same signatures) ----------------
 * Statistics are threaded over channels (batch norm) or rows (layer norm),
 * the normalisation over (n, c) rows; if the small per-channel scratch
 * cannot be allocated the reference kernel runs instead. */
void sb_cpu_batch_norm_forward(const float *x, const float *gamma, const float *beta,
                               float *running_mean, float *running_var, bool training,
                               float momentum, float eps, float *y, float *save_mean,
                               float *save_rstd, int64_t N, int64_t C, int64_t S);
void sb_cpu_batch_norm_backward(const float *dy, const float *x, const float *gamma,
                                const float *mean, const float *rstd, bool training,
                                float *dx, float *dgamma, float *dbeta, int64_t N,
                                int64_t C, int64_t S);
void sb_cpu_layer_norm_forward(const float *x, const float *w, const float *b, float eps,
                               float *y, float *save_mean, float *save_rstd, int64_t R,
                               int64_t D);
void sb_cpu_layer_norm_backward(const float *dy, const float *x, const float *w,
                                const float *mean, const float *rstd, float *dx, float *dw,
                                float *db, int64_t R, int64_t D);
void sb_cpu_rms_norm_forward(const float *x, const float *w, float eps, float *y,
                             float *save_rrms, int64_t R, int64_t D);
void sb_cpu_rms_norm_backward(const float *dy, const float *x, const float *w, const float *rrms,
                              float *dx, float *dw, int64_t R, int64_t D);
void sb_cpu_group_norm_forward(const float *x, const float *gamma, const float *beta, float eps,
                               float *y, float *save_mean, float *save_rstd, int64_t N,
                               int64_t C, int64_t S, int64_t G);
void sb_cpu_group_norm_backward(const float *dy, const float *x, const float *gamma,
                                const float *mean, const float *rstd, float *dx, float *dgamma,
                                float *dbeta, int64_t N, int64_t C, int64_t S, int64_t G);

/* ---- reduce.c (sb_ref_reduce* of src/ref/ref_pointwise.h) --------------------
 * Threaded over tiles of outputs; each output's elements are still fed in
 * the contract's enumeration order. */
void sb_cpu_reduce(sb_ref_reduce_kind kind, const sb_ref_reduce_geom *g, const float *x,
                   int64_t correction, float *out);
void sb_cpu_reduce_extreme(bool is_max, const sb_ref_reduce_geom *g, const float *x, float *out,
                           int64_t *idx);
void sb_cpu_reduce_scatter(const sb_ref_reduce_geom *g, const float *dy, const int64_t *idx,
                           float *dx);

/* ---- attention.c (sb_ref_sdpa_* of src/ref/ref_attention.h) ------------------
 * The products on the fast GEMM, the softmax rows with the batch exp and
 * the fast canonical sum, rows (keys for dk, dv) over threads. SB_ERR_NOMEM
 * when the (lq, lk) buffers of one batch entry cannot be allocated. */
sb_status sb_cpu_sdpa_forward(const sb_ref_sdpa_geom *g, const float *q, const float *k,
                              const float *v, const void *mask, float *out, float *probs);
sb_status sb_cpu_sdpa_backward(const sb_ref_sdpa_geom *g, const float *dout, const float *q,
                               const float *k, const float *v, const void *mask,
                               const float *probs, float *dq, float *dk, float *dv);

/* ---- index.c (sb_ref_index_* of src/ref/ref_index.h) ---------------------------
 * Threaded over columns (the positions with the coordinate along dim
 * removed): every destination element belongs to one column, whose terms
 * are still taken in ascending position along dim, so the bits are the
 * reference's at every thread count. */
void sb_cpu_index_gather(const sb_ref_index_geom *g, const float *table, const int64_t *index,
                         float *dense);
void sb_cpu_index_scatter_add(const sb_ref_index_geom *g, const float *dense,
                              const int64_t *index, bool scale, float alpha, float *table);

/* ---- cumulative.c (sb_ref_cumulative): threaded over columns, each column
 * the reference's sequential chain, so the bits are the reference's at
 * every thread count. */
void sb_cpu_cumulative(sb_ref_cum_kind kind, const sb_ref_cum_geom *g, const float *x,
                       const float *y, const float *dy, float *out);

/* ---- scatter_reduce.c (sb_ref_scatter_reduce): threaded over columns, each
 * the reference's column kernel, so the bits are the reference's at every
 * thread count. */
void sb_cpu_scatter_reduce(const sb_ref_index_geom *g, sb_scatter_reduce_op op, bool include_self,
                           int64_t table_len, const float *src, const int64_t *index,
                           float *table);

/* ---- sort.c (sb_ref_sort, sb_ref_sort_scatter): threaded over columns;
 * each column sorted as packed (key, position) words, all distinct, so the
 * order is the reference's at every thread count. */
void sb_cpu_sort(const sb_ref_sort_geom *g, const float *x, float *values, int64_t *indices);
void sb_cpu_sort_scatter(const sb_ref_sort_geom *g, const float *dy, const int64_t *indices,
                         float *dx);

/* ---- dropout.c (sb_ref_dropout_* of src/ref/ref_loss.h): element ranges
 * over threads; element i's mask depends on (seed, stream, offset + i)
 * alone. */
void sb_cpu_dropout_forward(const float *x, int64_t n, float p, bool train, uint64_t seed,
                            uint64_t stream, uint64_t offset, float *y, float *mask);
void sb_cpu_dropout_backward(const float *dy, const float *mask, int64_t n, float p, bool train,
                             float *dx);

#endif
