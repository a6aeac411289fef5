/* samebits/autograd.h - reverse-mode automatic differentiation over a tape.
 *
 * A graph records, in execution order, every differentiable op run through
 * the sb_ag_* functions during one step; sb_graph_backward walks that tape
 * backwards. Activations, saved tensors and intermediate gradients live in
 * the graph's arena and are released together by sb_graph_reset, so a
 * training loop allocates nothing in its steady state.
 *
 * Gradient accumulation (contract: "Autograd"): nodes are visited in reverse
 * tape order; the first gradient contribution a variable receives is written
 * into its gradient tensor, each later one is added elementwise with one
 * IEEE add (grad = grad + contribution). A parameter's gradient is therefore
 * *set* by each backward, not summed across steps.
 *
 * Every sb_ag_* op computes its forward value with the same reference op the
 * tensor API exposes (so forward bits are the op's contract bits) and records
 * how to call that op's backward rule.
 */
#ifndef SAMEBITS_AUTOGRAD_H
#define SAMEBITS_AUTOGRAD_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/export.h"
#include "samebits/tensor.h"
#include "samebits/conv.h"
#include "samebits/elementwise.h"
#include "samebits/index.h"
#include "samebits/loss.h"
#include "samebits/attention.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sb_graph sb_graph;

typedef struct sb_variable {
    sb_tensor *value;     /* forward value */
    sb_tensor *grad;      /* d(loss)/d(value) after backward; NULL if none */
    bool requires_grad;   /* true for parameters and anything computed from them */
    bool grad_written;    /* internal: has this step's first contribution arrived */
    int32_t producer;     /* index of the tape node that made it, -1 for leaves */
} sb_variable;

SB_API sb_status sb_graph_new(sb_graph **out);
SB_API void sb_graph_free(sb_graph *g);
/* Forget the tape and release every activation of the last step. Variables
 * made by the graph become invalid; bound parameter gradients stay. */
SB_API void sb_graph_reset(sb_graph *g);
SB_API sb_arena *sb_graph_arena(sb_graph *g);
SB_API size_t sb_graph_num_nodes(const sb_graph *g);

/* A leaf: an input (grad == NULL, requires_grad false) or a parameter whose
 * gradient is written into the caller's `grad` tensor (same shape). */
SB_API sb_status sb_graph_input(sb_graph *g, sb_tensor *value, sb_variable **out);
SB_API sb_status sb_graph_param(sb_graph *g, sb_tensor *value, sb_tensor *grad, sb_variable **out);

/* Backpropagate from a scalar (one-element) loss, seeding d(loss) = 1.0f. */
SB_API sb_status sb_graph_backward(sb_graph *g, sb_variable *loss);

/* ---- differentiable ops (outputs are allocated in the graph) ---- */
SB_API sb_status sb_ag_linear(sb_graph *g, sb_variable *x, sb_variable *w, sb_variable *bias, sb_variable **y);
SB_API sb_status sb_ag_conv2d(sb_graph *g, sb_variable *x, sb_variable *w, sb_variable *bias,
                       const sb_conv2d_params *params, sb_variable **y);
/* Transposed convolution, conv.h's sb_conv_transpose2d_forward: x (N,C,H,W),
 * w (C,O/groups,KH,KW), bias (O) or NULL; params may not be NULL. */
SB_API sb_status sb_ag_conv_transpose2d(sb_graph *g, sb_variable *x, sb_variable *w,
                                        sb_variable *bias,
                                        const sb_conv_transpose2d_params *params,
                                        sb_variable **y);
SB_API sb_status sb_ag_max_pool2d(sb_graph *g, sb_variable *x, const sb_pool2d_params *params, sb_variable **y);
SB_API sb_status sb_ag_avg_pool2d(sb_graph *g, sb_variable *x, const sb_pool2d_params *params, sb_variable **y);
/* Adaptive pooling to an (out_h, out_w) output, each >= 0 (conv.h). */
SB_API sb_status sb_ag_adaptive_max_pool2d(sb_graph *g, sb_variable *x, int64_t out_h, int64_t out_w,
                                           sb_variable **y);
SB_API sb_status sb_ag_adaptive_avg_pool2d(sb_graph *g, sb_variable *x, int64_t out_h, int64_t out_w,
                                           sb_variable **y);
SB_API sb_status sb_ag_relu(sb_graph *g, sb_variable *x, sb_variable **y);
SB_API sb_status sb_ag_tanh(sb_graph *g, sb_variable *x, sb_variable **y);
SB_API sb_status sb_ag_sigmoid(sb_graph *g, sb_variable *x, sb_variable **y);
SB_API sb_status sb_ag_gelu(sb_graph *g, sb_variable *x, bool approximate_tanh, sb_variable **y);
SB_API sb_status sb_ag_flatten(sb_graph *g, sb_variable *x, int start_dim, int end_dim, sb_variable **y);
SB_API sb_status sb_ag_add(sb_graph *g, sb_variable *a, sb_variable *b, sb_variable **y);
/* y = a op b with broadcasting (elementwise.h: add, sub, mul, div, maximum,
 * minimum); a broadcast input's gradient is summed back to its shape.
 * sb_ag_add is sb_ag_binary(SB_BINARY_ADD), recorded as "add". */
SB_API sb_status sb_ag_binary(sb_graph *g, sb_binary_op op, sb_variable *a, sb_variable *b,
                              sb_variable **y);
/* linalg.h's sb_matmul: a and b 2-D or 3-D (batched), trans flags over the
 * last two dims. */
SB_API sb_status sb_ag_matmul(sb_graph *g, sb_variable *a, sb_variable *b, bool trans_a,
                              bool trans_b, sb_variable **y);
/* Bits moved, never changed: y is a contiguous copy of x seen with another
 * shape (one entry may be -1) or with dims dim0 and dim1 swapped (negative
 * dims count from the end); dx is dy moved back. */
SB_API sb_status sb_ag_reshape(sb_graph *g, sb_variable *x, int ndim, const int64_t *shape,
                               sb_variable **y);
SB_API sb_status sb_ag_transpose(sb_graph *g, sb_variable *x, int dim0, int dim1,
                                 sb_variable **y);
/* Softmax and log-softmax over dim (loss.h). */
SB_API sb_status sb_ag_softmax(sb_graph *g, sb_variable *x, int dim, sb_variable **y);
SB_API sb_status sb_ag_log_softmax(sb_graph *g, sb_variable *x, int dim, sb_variable **y);
/* Sum and mean over dims (reduce.h: ndims == 0 reduces every axis). */
SB_API sb_status sb_ag_sum(sb_graph *g, sb_variable *x, const int *dims, int ndims, bool keepdim,
                           sb_variable **y);
SB_API sb_status sb_ag_mean(sb_graph *g, sb_variable *x, const int *dims, int ndims, bool keepdim,
                            sb_variable **y);
SB_API sb_status sb_ag_batch_norm(sb_graph *g, sb_variable *x, sb_variable *gamma, sb_variable *beta,
                           sb_tensor *running_mean, sb_tensor *running_var, bool training,
                           float momentum, float eps, sb_variable **y);
SB_API sb_status sb_ag_layer_norm(sb_graph *g, sb_variable *x, int normalized_ndim,
                                  sb_variable *gamma, sb_variable *beta, float eps,
                                  sb_variable **y);
/* RMS norm over the last normalized_ndim dims of x (see norm.h); weight may
 * be NULL. */
SB_API sb_status sb_ag_rms_norm(sb_graph *g, sb_variable *x, int normalized_ndim,
                                sb_variable *weight, float eps, sb_variable **y);
/* Group norm of x (N, C, spatial...) in `groups` groups (see norm.h). */
SB_API sb_status sb_ag_group_norm(sb_graph *g, sb_variable *x, int64_t groups, sb_variable *gamma,
                                  sb_variable *beta, float eps, sb_variable **y);
/* Dropout draws its mask from Philox (seed, stream) at counter `offset`. */
SB_API sb_status sb_ag_dropout(sb_graph *g, sb_variable *x, float p, bool training, uint64_t seed,
                        uint64_t stream, uint64_t offset, sb_variable **y);
/* targets: int64 class indices (N); loss is a 0-d tensor. */
SB_API sb_status sb_ag_cross_entropy(sb_graph *g, sb_variable *logits, const sb_tensor *targets,
                              sb_loss_reduction reduction, float label_smoothing, sb_variable **loss);
SB_API sb_status sb_ag_mse(sb_graph *g, sb_variable *x, const sb_tensor *target, sb_loss_reduction reduction,
                    sb_variable **loss);
/* index.h: x's slices at index along dim (an embedding lookup is dim 0 of
 * the weight), and gather. index is int64 and must stay valid until the
 * backward ran; its gradient is the ordered scatter-add (contract 18). */
SB_API sb_status sb_ag_index_select(sb_graph *g, sb_variable *x, int dim, const sb_tensor *index,
                                    sb_variable **y);
SB_API sb_status sb_ag_gather(sb_graph *g, sb_variable *x, int dim, const sb_tensor *index,
                              sb_variable **y);
/* attention.h: scaled dot-product attention of q (..., Lq, E), k (..., Lk,
 * E), v (..., Lk, Ev) into y (..., Lq, Ev). mask (float32 added, int32
 * boolean, or NULL) is held by reference until the backward ran and gets no
 * gradient; dropout_p = 0 in evaluation. */
SB_API sb_status sb_ag_sdpa(sb_graph *g, sb_variable *q, sb_variable *k, sb_variable *v,
                            const sb_tensor *mask, sb_sdpa_causal causal, float scale,
                            float dropout_p, uint64_t seed, uint64_t stream, uint64_t offset,
                            sb_variable **y);
/* Embedding lookup (index.h's sb_embedding_forward): y = weight[indices],
 * shape indices.shape + (D); the weight gradient leaves out the positions at
 * padding_idx (SB_NO_PADDING: none). indices must stay valid until the
 * backward ran. */
SB_API sb_status sb_ag_embedding(sb_graph *g, sb_variable *weight, const sb_tensor *indices,
                                 int64_t padding_idx, sb_variable **y);

#ifdef __cplusplus
}
#endif
#endif
