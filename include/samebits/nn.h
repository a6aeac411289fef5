/* samebits/nn.h - layers (modules with parameters) and their initialisation.
 *
 * A module owns its parameters (value + gradient tensors, long-lived heap
 * memory) and buffers (e.g. batch-norm running statistics), knows whether it
 * is in training or evaluation mode, and runs its forward pass through the
 * autograd graph so that sb_graph_backward fills its parameters' gradients.
 *
 * Parameters are named and ordered like PyTorch's state_dict ("0.weight",
 * "0.bias", "3.weight", ...); that order is the "declaration order" used by
 * hashes, initialisation streams, optimizers and checkpoints.
 */
#ifndef SAMEBITS_NN_H
#define SAMEBITS_NN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "samebits/export.h"
#include "samebits/autograd.h"
#include "samebits/conv.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sb_module sb_module;

/* A named tensor of a module: a parameter (grad != NULL) or a buffer. */
typedef struct sb_named {
    char name[64];
    sb_tensor *value;
    sb_tensor *grad; /* NULL for buffers */
} sb_named;

/* ---- layers ---- */
SB_API sb_status sb_nn_linear(sb_module **out, int64_t in_features, int64_t out_features, bool bias);
SB_API sb_status sb_nn_conv2d(sb_module **out, int64_t in_channels, int64_t out_channels,
                       int64_t kernel_h, int64_t kernel_w, const sb_conv2d_params *params,
                       bool bias);
/* Transposed convolution: weight (in, out/groups, KH, KW), bias (out);
 * params NULL means SB_CONV_TRANSPOSE2D_PARAMS_DEFAULT. Initialised like
 * PyTorch's ConvTranspose2d: fan_in = out/groups * KH * KW. */
SB_API sb_status sb_nn_conv_transpose2d(sb_module **out, int64_t in_channels,
                                        int64_t out_channels, int64_t kernel_h, int64_t kernel_w,
                                        const sb_conv_transpose2d_params *params, bool bias);
SB_API sb_status sb_nn_max_pool2d(sb_module **out, const sb_pool2d_params *params);
SB_API sb_status sb_nn_avg_pool2d(sb_module **out, const sb_pool2d_params *params);
SB_API sb_status sb_nn_relu(sb_module **out);
SB_API sb_status sb_nn_tanh(sb_module **out);
SB_API sb_status sb_nn_sigmoid(sb_module **out);
SB_API sb_status sb_nn_gelu(sb_module **out, bool approximate_tanh);
SB_API sb_status sb_nn_flatten(sb_module **out, int start_dim, int end_dim);
/* BatchNorm1d ((N,C) or (N,C,L)) and BatchNorm2d ((N,C,H,W)) are one module:
 * the input's rank decides. PyTorch defaults: eps 1e-5, momentum 0.1. */
SB_API sb_status sb_nn_batch_norm(sb_module **out, int64_t num_features, float eps, float momentum,
                           bool affine);
SB_API sb_status sb_nn_layer_norm(sb_module **out, int normalized_ndim, const int64_t *normalized_shape,
                           float eps, bool elementwise_affine);
/* RMSNorm over the trailing normalized_shape: weight of ones when
 * elementwise_affine (PyTorch's nn.RMSNorm; eps finite and > 0). */
SB_API sb_status sb_nn_rms_norm(sb_module **out, int normalized_ndim, const int64_t *normalized_shape,
                                float eps, bool elementwise_affine);
/* Dropout masks come from Philox (seed, stream); its counter advances by the
 * number of elements of each training-mode call and is part of checkpoints. */
SB_API sb_status sb_nn_dropout(sb_module **out, float p, uint64_t seed, uint64_t stream);
/* Takes ownership of children[0..n-1] (also on failure). */
SB_API sb_status sb_nn_sequential(sb_module **out, sb_module *const *children, size_t n);

SB_API void sb_module_free(sb_module *m);
SB_API const char *sb_module_kind(const sb_module *m);

/* ---- use ---- */
SB_API sb_status sb_module_forward(sb_module *m, sb_graph *g, sb_variable *x, sb_variable **y);
SB_API void sb_module_train(sb_module *m, bool training);
SB_API bool sb_module_is_training(const sb_module *m);

/* Parameters / buffers in declaration order. *count is set to the total;
 * at most cap entries are written (pass cap 0 to ask for the count). */
SB_API sb_status sb_module_parameters(sb_module *m, sb_named *out, size_t cap, size_t *count);
SB_API sb_status sb_module_buffers(sb_module *m, sb_named *out, size_t cap, size_t *count);
SB_API int64_t sb_module_num_scalars(sb_module *m); /* parameter elements */

/* PyTorch's default initialisation, drawn from Philox so it is the same
 * everywhere: parameter number k (declaration order) uses stream k of seed.
 * Linear and Conv2d weights and biases: U(-b, b) with b = 1/sqrtf(fan_in)
 * (kaiming-uniform with a = sqrt(5) reduces to this bound); norm weights 1,
 * biases 0; running mean 0, running var 1. */
SB_API sb_status sb_module_init(sb_module *m, uint64_t seed);

/* Moves every parameter, gradient and buffer of the tree to `device` (copies,
 * then releases the old tensors); later forwards run there. Optimizers
 * made before the move keep their state on the old device: make them
 * after. On failure each module is either moved whole or untouched. */
SB_API sb_status sb_module_to(sb_module *m, sb_device device);

/* SHA-256 of the parameters' canonical bytes in declaration order (device
 * parameters are hashed through a host copy). */
SB_API sb_status sb_module_hash(sb_module *m, unsigned char digest[32]);

#ifdef __cplusplus
}
#endif
#endif
