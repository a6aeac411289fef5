/* src/nn/nn_internal.h - the module object shared by the layer files. */
#ifndef SAMEBITS_NN_INTERNAL_H
#define SAMEBITS_NN_INTERNAL_H

#include "autograd/graph_internal.h"
#include "samebits/nn.h"

#define SB_MODULE_MAX_LOCAL 4

typedef sb_status (*sb_forward_fn)(sb_module *m, sb_graph *g, sb_variable *x, sb_variable **y);

/* SB_INIT_NORMAL: N(0, init_std^2) from the parameter's Philox stream,
 * 0 + init_std * z (sb_rng_normal), the GPT rule of PyTorch language models. */
typedef enum { SB_INIT_NONE, SB_INIT_FAN_IN_UNIFORM, SB_INIT_ONES, SB_INIT_ZEROS, SB_INIT_NORMAL } sb_init_rule;

struct sb_module {
    const char *kind;
    sb_forward_fn forward;
    bool training;
    /* own parameters and buffers, in declaration order */
    sb_named params[SB_MODULE_MAX_LOCAL];
    sb_init_rule param_init[SB_MODULE_MAX_LOCAL];
    size_t n_params;
    sb_named buffers[SB_MODULE_MAX_LOCAL];
    sb_init_rule buffer_init[SB_MODULE_MAX_LOCAL];
    size_t n_buffers;
    int64_t fan_in; /* for SB_INIT_FAN_IN_UNIFORM */
    float init_std; /* for SB_INIT_NORMAL */
    /* This module's name inside its parent ("blocks", "attn"): the prefix of
     * its tensors' names. Empty: its index among the parent's children, as
     * PyTorch's nn.Sequential names them. */
    char name[32];
    /* this step's leaf variables for the parameters (one per graph step) */
    sb_variable *bound[SB_MODULE_MAX_LOCAL];
    const sb_graph *bound_graph;
    uint64_t bound_generation;
    /* containers */
    sb_module **children;
    size_t n_children;
    /* settings of a model defined above this layer (the GPT's config),
     * released with the module by ext_free */
    void *ext;
    void (*ext_free)(void *ext);
    /* layer settings */
    union {
        sb_conv2d_params conv;
        sb_conv_transpose2d_params conv_t;
        sb_pool2d_params pool;
        struct { int start, end; } flatten;
        struct { float eps, momentum; } bn;
        struct { int ndim; float eps; } ln;
        struct { float p; uint64_t seed, stream, offset; } dropout;
        bool gelu_tanh;
    } cfg;
};

sb_status sb_module_alloc(const char *kind, sb_forward_fn forward, sb_module **out);
sb_status sb_module_add_param(sb_module *m, const char *name, int ndim, const int64_t *shape,
                              sb_init_rule init);
sb_status sb_module_add_buffer(sb_module *m, const char *name, sb_dtype dtype, int ndim,
                               const int64_t *shape, sb_init_rule init);
/* The leaf variable of parameter i for graph g's current step. */
sb_status sb_module_param_var(sb_module *m, sb_graph *g, size_t i, sb_variable **out);


#endif
