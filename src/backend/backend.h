/* src/backend/backend.h - the interface every device implements. Not
 * installed.
 *
 * A backend is one table per device: how to allocate, release and copy its
 * memory, and one entry per op family. src/ops validates every argument
 * once (src/ops/validate.c, the same messages for every device), checks
 * that all tensors of a call live on one device, and only then calls that
 * device's entry with already-validated geometry. An entry may therefore
 * assume its arguments are consistent; it returns SB_OK or a device error
 * (a failed launch, memory exhausted) with its message set.
 *
 * An entry left NULL means "this device has no kernel for this op":
 * SB_BACKEND_RUN then fails with SB_ERR_UNSUPPORTED naming the op and the
 * device. Nothing ever falls back to another device silently.
 *
 * Pointer conventions: `float *`/`int64_t *` arguments are device memory of
 * the backend (for the CPU, ordinary memory), dense and row-major in the
 * layout the matching reference kernel of src/ref documents. Entries that
 * take sb_tensor views (the pointwise and reduction families) accept any
 * strides, validated by the caller (no self-overlapping output, no partial
 * aliasing). Every entry computes exactly the bits of its reference kernel.
 *
 * Backends register themselves in src/backend/registry.c; sb_backend_get()
 * returns the table of a device (NULL when this build or machine has none).
 */
#ifndef SAMEBITS_BACKEND_H
#define SAMEBITS_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "samebits.h"
#include "ref/ref_attention.h"
#include "ref/ref_ctc.h"
#include "ref/ref_cumulative.h"
#include "ref/ref_index.h"
#include "ref/ref_grid.h"
#include "ref/ref_interp.h"
#include "ref/ref_linalg.h"
#include "ref/ref_loss.h"
#include "ref/ref_pad.h"
#include "ref/ref_scatter_reduce.h"
#include "ref/ref_sort.h"
#include "ref/ref_pointwise.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sb_backend sb_backend;

/* The activation family: one entry serves all of them, forward and
 * backward. */
typedef enum sb_act_kind {
    SB_ACT_RELU = 0,
    SB_ACT_LEAKY_RELU, /* p0 = negative slope */
    SB_ACT_TANH,       /* backward takes y */
    SB_ACT_SIGMOID,    /* backward takes y */
    SB_ACT_SILU,
    SB_ACT_GELU,       /* approximate: the tanh form */
    SB_ACT_SOFTPLUS,   /* p0 = beta, p1 = threshold */
    SB_ACT_HARDTANH,   /* p0 = min_val, p1 = max_val */
    SB_ACT_HARDSIGMOID,
    SB_ACT_HARDSWISH,
    SB_ACT_ELU,        /* p0 = alpha, p1 = scale, p2 = input_scale (SELU, CELU) */
    SB_ACT_MISH,
    SB_ACT_LOGSIGMOID,
    SB_ACT_HARDSHRINK, /* p0 = lambd */
    SB_ACT_SOFTSHRINK, /* p0 = lambd */
    SB_ACT_THRESHOLD,  /* p0 = threshold, p1 = value */
} sb_act_kind;

typedef struct sb_act_args {
    sb_act_kind kind;
    bool backward;
    bool approximate;
    float p0, p1, p2;
} sb_act_args;

/* One entry per op family. Shapes in the comments; "raw" entries take dense
 * device pointers, "view" entries take sb_tensor views. */
typedef struct sb_backend_ops {
    /* ---- matrix products (contract section 7) ---- */
    /* sb_ref_sgemm's semantics: C = op(A) op(B), chains from +0 or, with
     * continue_chain, from C's current value. */
    sb_status (*sgemm)(const sb_backend *be, char transa, char transb, int64_t m, int64_t n,
                       int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                       float *c, int64_t ldc, bool continue_chain);
    /* x (rows, in), w (out, in), bias (out) or NULL, y (rows, out). */
    sb_status (*linear_forward)(const sb_backend *be, int64_t rows, int64_t in, int64_t out,
                                const float *x, const float *w, const float *bias, float *y);
    /* dy (rows, out); dx (rows, in), dw (out, in), db (out), each may be NULL. */
    sb_status (*linear_backward)(const sb_backend *be, int64_t rows, int64_t in, int64_t out,
                                 const float *dy, const float *x, const float *w, float *dx,
                                 float *dw, float *db);

    /* ---- convolution and pooling (sections 7, 8); geometry validated ---- */
    sb_status (*conv2d_forward)(const sb_backend *be, const sb_conv2d_geom *g, const float *x,
                                const float *w, const float *bias, float *y);
    /* dx, dw, db may each be NULL. */
    sb_status (*conv2d_backward)(const sb_backend *be, const sb_conv2d_geom *g, const float *dy,
                                 const float *x, const float *w, float *dx, float *dw, float *db);
    /* indices may be NULL; every index of the backward is in its window. */
    sb_status (*max_pool2d_forward)(const sb_backend *be, const sb_pool2d_geom *g,
                                    const float *x, float *y, int64_t *indices);
    sb_status (*max_pool2d_backward)(const sb_backend *be, const sb_pool2d_geom *g,
                                     const float *dy, const int64_t *indices, float *dx);
    sb_status (*avg_pool2d_forward)(const sb_backend *be, const sb_pool2d_geom *g,
                                    const float *x, float *y);
    sb_status (*avg_pool2d_backward)(const sb_backend *be, const sb_pool2d_geom *g,
                                     const float *dy, float *dx);
    /* Adaptive pooling whose windows differ in size (g->adaptive set; the
     * evenly dividing case comes through the four entries above). */
    sb_status (*adaptive_max_pool2d_forward)(const sb_backend *be, const sb_pool2d_geom *g,
                                             const float *x, float *y, int64_t *indices);
    sb_status (*adaptive_max_pool2d_backward)(const sb_backend *be, const sb_pool2d_geom *g,
                                              const float *dy, const int64_t *indices,
                                              float *dx);
    sb_status (*adaptive_avg_pool2d_forward)(const sb_backend *be, const sb_pool2d_geom *g,
                                             const float *x, float *y);
    sb_status (*adaptive_avg_pool2d_backward)(const sb_backend *be, const sb_pool2d_geom *g,
                                              const float *dy, float *dx);
    /* 2-D padding (section 8, "Padding"). */
    sb_status (*pad2d_forward)(const sb_backend *be, const sb_pad2d_geom *g, const float *x,
                               float *y);
    sb_status (*pad2d_backward)(const sb_backend *be, const sb_pad2d_geom *g, const float *dy,
                                float *dx);
    /* Interpolation (section 8, "Interpolation"). */
    sb_status (*interpolate_forward)(const sb_backend *be, const sb_interp_geom *g,
                                     const float *x, float *y);
    sb_status (*interpolate_backward)(const sb_backend *be, const sb_interp_geom *g,
                                      const float *dy, float *dx);
    /* Grid sampling (section 8, "Grid sampling"); dx, dgrid may be NULL. */
    sb_status (*grid_sample_forward)(const sb_backend *be, const sb_grid_geom *g, const float *x,
                                     const float *grid, float *y);
    sb_status (*grid_sample_backward)(const sb_backend *be, const sb_grid_geom *g,
                                      const float *x, const float *grid, const float *dy,
                                      float *dx, float *dgrid);

    /* ---- pointwise (section 9); views of out's shape ---- */
    /* in[0] = x (or y for tanh/sigmoid backward), in[1] = dy when backward. */
    sb_status (*activation)(const sb_backend *be, const sb_act_args *a, const sb_tensor *in,
                            sb_tensor *out);
    sb_status (*unary)(const sb_backend *be, sb_unary_op op, const sb_tensor *x, sb_tensor *out);
    sb_status (*unary_backward)(const sb_backend *be, sb_unary_op op, const sb_tensor *x,
                                const sb_tensor *y, const sb_tensor *dy, sb_tensor *dx);
    /* a, b: views broadcast to out's shape (stride 0 on broadcast dims). */
    sb_status (*binary)(const sb_backend *be, sb_binary_op op, const sb_tensor *a,
                        const sb_tensor *b, sb_tensor *out);
    sb_status (*binary_scalar)(const sb_backend *be, sb_binary_op op, const sb_tensor *x,
                               float s, sb_tensor *out);
    /* dy of the broadcast shape; a, b: views broadcast to it; da, db of a's
     * and b's own shapes (either may be NULL): the gradients summed back. */
    sb_status (*binary_backward)(const sb_backend *be, sb_binary_op op, const sb_tensor *dy,
                                 const sb_tensor *a, const sb_tensor *b, sb_tensor *da,
                                 sb_tensor *db);
    /* out = grad summed over the dims where out broadcasts into grad. */
    sb_status (*reduce_to_shape)(const sb_backend *be, const sb_tensor *grad, sb_tensor *out);

    /* ---- softmax and losses (section 11), dense ---- */
    sb_status (*softmax_forward)(const sb_backend *be, const float *x, int64_t outer, int64_t n,
                                 int64_t inner, bool log, float *y);
    sb_status (*softmax_backward)(const sb_backend *be, const float *y, const float *dy,
                                  int64_t outer, int64_t n, int64_t inner, bool log, float *dx);
    /* targets: N device int64 values, each in [0, C) or ignore_index. With
     * logits false it is the NLL loss over log-probabilities (eps 0). */
    sb_status (*class_loss_forward)(const sb_backend *be, bool logits, const float *a,
                                    const int64_t *targets, int64_t N, int64_t C,
                                    sb_loss_reduction reduction, float eps,
                                    int64_t ignore_index, float *loss);
    sb_status (*class_loss_backward)(const sb_backend *be, bool logits, const float *a,
                                     const int64_t *targets, int64_t N, int64_t C,
                                     sb_loss_reduction reduction, float eps,
                                     int64_t ignore_index, const float *dloss, float *da);
    /* The general class loss (class weights, K dimensions): p->weight is
     * device memory or NULL, targets N * inner device int64 values. */
    sb_status (*class_loss_nd_forward)(const sb_backend *be, const sb_class_problem *p,
                                       const float *input, const int64_t *targets, float *loss);
    sb_status (*class_loss_nd_backward)(const sb_backend *be, const sb_class_problem *p,
                                        const float *input, const int64_t *targets,
                                        const float *dloss, float *dinput);
    /* The CTC loss: p's index arrays are device memory. */
    sb_status (*ctc_loss_forward)(const sb_backend *be, const sb_ctc_problem *p,
                                  const float *log_probs, float *loss);
    sb_status (*ctc_loss_backward)(const sb_backend *be, const sb_ctc_problem *p,
                                   const float *log_probs, const float *dloss, float *dlog_probs);
    /* The elementwise losses (MSE is one kind); w, pw and dy may be NULL. */
    sb_status (*elementwise_loss_forward)(const sb_backend *be, const sb_elementwise_loss *p,
                                          const float *x, const float *y, const float *w,
                                          const float *pw, int64_t n,
                                          sb_loss_reduction reduction, float *loss);
    sb_status (*elementwise_loss_backward)(const sb_backend *be, const sb_elementwise_loss *p,
                                           const float *x, const float *y, const float *w,
                                           const float *pw, int64_t n,
                                           sb_loss_reduction reduction, const float *dloss,
                                           float *dx, float *dy);

    /* ---- normalisation (section 10), dense; optional tensors may be NULL ---- */
    sb_status (*batch_norm_forward)(const sb_backend *be, const float *x, const float *gamma,
                                    const float *beta, float *running_mean, float *running_var,
                                    bool training, float momentum, float eps, float *y,
                                    float *save_mean, float *save_rstd, int64_t N, int64_t C,
                                    int64_t S);
    sb_status (*batch_norm_backward)(const sb_backend *be, const float *dy, const float *x,
                                     const float *gamma, const float *save_mean,
                                     const float *save_rstd, bool training, float *dx,
                                     float *dgamma, float *dbeta, int64_t N, int64_t C,
                                     int64_t S);
    sb_status (*layer_norm_forward)(const sb_backend *be, const float *x, const float *w,
                                    const float *b, float eps, float *y, float *save_mean,
                                    float *save_rstd, int64_t R, int64_t D);
    sb_status (*layer_norm_backward)(const sb_backend *be, const float *dy, const float *x,
                                     const float *w, const float *save_mean,
                                     const float *save_rstd, float *dx, float *dw, float *db,
                                     int64_t R, int64_t D);
    /* RMS norm: w may be NULL; save_rrms may be NULL in the forward. */
    sb_status (*rms_norm_forward)(const sb_backend *be, const float *x, const float *w,
                                  float eps, float *y, float *save_rrms, int64_t R, int64_t D);
    sb_status (*rms_norm_backward)(const sb_backend *be, const float *dy, const float *x,
                                   const float *w, const float *rrms, float *dx, float *dw,
                                   int64_t R, int64_t D);
    sb_status (*group_norm_forward)(const sb_backend *be, const float *x, const float *gamma,
                                    const float *beta, float eps, float *y, float *save_mean,
                                    float *save_rstd, int64_t N, int64_t C, int64_t S,
                                    int64_t G);
    sb_status (*group_norm_backward)(const sb_backend *be, const float *dy, const float *x,
                                     const float *gamma, const float *save_mean,
                                     const float *save_rstd, float *dx, float *dgamma,
                                     float *dbeta, int64_t N, int64_t C, int64_t S, int64_t G);

    /* ---- reductions over axes (section 12); strided through the geometry ---- */
    sb_status (*reduce)(const sb_backend *be, sb_ref_reduce_kind kind, const sb_ref_reduce_geom *g,
                        const float *x, int64_t correction, float *out);
    /* out or indices may be NULL. */
    sb_status (*reduce_extreme)(const sb_backend *be, bool is_max, const sb_ref_reduce_geom *g,
                                const float *x, float *out, int64_t *indices);
    /* dx = 0 except dx[the reduced position indices[e]] = dy[e]. */
    sb_status (*reduce_scatter)(const sb_backend *be, const sb_ref_reduce_geom *g,
                                const float *dy, const int64_t *indices, float *dx);
    /* dx = dy (a view broadcast to dx's shape), divided by divisor when
     * divide is true (sum and mean backward). */
    sb_status (*spread)(const sb_backend *be, const sb_tensor *dy, bool divide, float divisor,
                        sb_tensor *dx);

    /* ---- index family (section 18); strided through the geometry, index
     * values already checked to lie on the indexed axis ---- */
    sb_status (*index_gather)(const sb_backend *be, const sb_ref_index_geom *g,
                              const float *table, const int64_t *index, float *dense);
    /* Terms added in ascending position (sb_ref_index_scatter_add). */
    sb_status (*index_scatter_add)(const sb_backend *be, const sb_ref_index_geom *g,
                                   const float *dense, const int64_t *index, bool scale,
                                   float alpha, float *table);

    /* ---- cumulative sum and product (section 10); strided through the
     * geometry; y and dy are read by SB_CUM_PROD_BACKWARD only ---- */
    sb_status (*cumulative)(const sb_backend *be, sb_ref_cum_kind kind, const sb_ref_cum_geom *g,
                            const float *x, const float *y, const float *dy, float *out);

    /* ---- scatter_reduce (section 18): terms of index's shape into a table
     * (out) whose size along dim is table_len; indices validated ---- */
    sb_status (*scatter_reduce)(const sb_backend *be, const sb_ref_index_geom *g,
                                sb_scatter_reduce_op op, bool include_self, int64_t table_len,
                                const float *src, const int64_t *index, float *table);

    /* ---- sort, topk, kthvalue, median (section 18), strided through the
     * geometry: sort_select writes the ranks the geometry names of every
     * column; sort_scatter is the backward's scatter into a dx already
     * filled with +0 (indices validated by the caller) ---- */
    sb_status (*sort_select)(const sb_backend *be, const sb_ref_sort_geom *g, const float *x,
                             float *values, int64_t *indices);
    sb_status (*sort_scatter)(const sb_backend *be, const sb_ref_sort_geom *g, const float *dy,
                              const int64_t *indices, float *dx);

    /* ---- attention (section 19); dense buffers as sb_ref_sdpa_forward /
     * sb_ref_sdpa_backward take them ---- */
    sb_status (*sdpa_forward)(const sb_backend *be, const sb_ref_sdpa_geom *g, const float *q,
                              const float *k, const float *v, const void *mask, float *out,
                              float *probs);
    sb_status (*sdpa_backward)(const sb_backend *be, const sb_ref_sdpa_geom *g, const float *dout,
                               const float *q, const float *k, const float *v, const void *mask,
                               const float *probs, float *dq, float *dk, float *dv);

    /* ---- PReLU (section 9, "PReLU"); dense buffers as sb_ref_prelu_forward /
     * sb_ref_prelu_backward take them (x as (outer, c, inner)) ---- */
    sb_status (*prelu_forward)(const sb_backend *be, int64_t outer, int64_t c, int64_t inner,
                               const float *x, const float *w, float *y);
    sb_status (*prelu_backward)(const sb_backend *be, int64_t outer, int64_t c, int64_t inner,
                                const float *x, const float *w, const float *dy, float *dx,
                                float *dw);

    /* ---- dropout (section 13), dense n elements; mask may be NULL ---- */
    sb_status (*dropout_forward)(const sb_backend *be, const float *x, int64_t n, float p,
                                 bool train, uint64_t seed, uint64_t stream, uint64_t offset,
                                 float *y, float *mask);
    sb_status (*dropout_backward)(const sb_backend *be, const float *dy, const float *mask,
                                  int64_t n, float p, bool train, float *dx);

    /* ---- optimizer updates (section 14); factors computed on the host ---- */
    sb_status (*sgd)(const sb_backend *be, const sb_sgd_factors *f, bool nesterov, bool maximize,
                     bool first, int64_t n, float *param, const float *grad, float *momentum_buf);
    sb_status (*adam)(const sb_backend *be, const sb_adam_factors *f, bool first, int64_t n,
                      float *param, const float *grad, float *exp_avg, float *exp_avg_sq,
                      float *max_exp_avg_sq);
} sb_backend_ops;

struct sb_backend {
    const char *name;      /* "cpu", "mirror", "cuda": used in every message */
    sb_device device;
    /* True when the host may read and write this device's memory directly.
     * Code outside the backend never relies on it for correctness: it only
     * lets helpers skip a staging copy. */
    bool host_addressable;
    void *ctx;             /* the backend's own state */

    /* ---- memory ---- */
    /* bytes of zero-filled device memory, aligned for any dtype; bytes == 0
     * gives a valid pointer that must still be released. */
    sb_status (*alloc)(const sb_backend *be, size_t bytes, void **out);
    void (*release)(const sb_backend *be, void *p); /* NULL is ignored */
    sb_status (*upload)(const sb_backend *be, void *dst, const void *host_src, size_t bytes);
    sb_status (*download)(const sb_backend *be, void *host_dst, const void *src, size_t bytes);
    /* Element copy between two tensors of this device, same shape and
     * dtype, any strides (overlap allowed: as if through a temporary). */
    sb_status (*copy)(const sb_backend *be, const sb_tensor *src, sb_tensor *dst);
    /* Every element of t (any strides, F32) set to value. */
    sb_status (*fill)(const sb_backend *be, sb_tensor *t, float value);
    /* Waits until all queued work has finished; reports a deferred error. */
    sb_status (*synchronize)(const sb_backend *be);

    const sb_backend_ops *ops;
    /* GPU backends whose op table is the shared host layer's (sb_gpu_ops):
     * how they resolve operands and launch kernels (src/gpu/gpu_host.h);
     * NULL for the others. */
    const struct sb_gpu_launcher *launcher;
};

/* ---- registry (src/backend/registry.c) ---- */

/* The backend of `device`, or NULL (and the error set, naming fn) when this
 * build or machine has none. */
const sb_backend *sb_backend_get(const char *fn, sb_device device);
/* Registers (or, with NULL, removes) the backend of its device; the table
 * must outlive every tensor on that device. Used by optional backends
 * (CUDA) when their library is initialised. */
void sb_backend_register(sb_device device, const sb_backend *backend);
/* The built-in tables. */
extern const sb_backend sb_backend_cpu;
const sb_backend *sb_backend_mirror_get(void);
/* How many mirror allocations are live (tests: every tensor was released). */
size_t sb_backend_mirror_live_blocks(void);

/* SB_ERR_UNSUPPORTED: "fn: the <device> device has no <op> kernel". */
sb_status sb_backend_unsupported(const char *fn, const sb_backend *be, const char *op);

/* Calls be->ops.entry(be, ...), or fails naming the op and the device when
 * the backend has no such entry. */
#define SB_BACKEND_RUN(fn, be, entry, ...)                                      \
    ((be)->ops->entry ? (be)->ops->entry((be), __VA_ARGS__)                     \
                     : sb_backend_unsupported((fn), (be), #entry))

/* The CPU op table, shared by the CPU and mirror devices, and the CPU's
 * strided copy and fill over host-addressable memory. */
extern const sb_backend_ops sb_cpu_backend_ops;
sb_status sb_host_copy(const sb_backend *be, const sb_tensor *src, sb_tensor *dst);
sb_status sb_host_fill(const sb_backend *be, sb_tensor *t, float value);

#ifdef __cplusplus
}
#endif
#endif
