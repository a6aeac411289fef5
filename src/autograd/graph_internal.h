/* src/autograd/graph_internal.h - what an autograd op needs from the graph.
 *
 * An op's forward (sb_ag_<op>) makes its output with sb_ag_output, computes
 * it with the op's tensor-level forward, and records a node whose backward
 * function calls the op's tensor-level backward rule. Backward functions get
 * where to write each input's gradient from sb_ag_grad_target and hand it
 * back with sb_ag_grad_commit, which applies the accumulation rule. */
#ifndef SAMEBITS_GRAPH_INTERNAL_H
#define SAMEBITS_GRAPH_INTERNAL_H

#include "core/internal.h"
#include "samebits/autograd.h"

#define SB_NODE_MAX_INPUTS 3
#define SB_NODE_MAX_SAVED 3

typedef struct sb_node sb_node;
typedef sb_status (*sb_backward_fn)(sb_graph *g, sb_node *node);

struct sb_node {
    const char *name;                       /* the op, for error messages */
    sb_backward_fn backward;
    sb_variable *in[SB_NODE_MAX_INPUTS];         /* NULL where unused */
    sb_variable *out;
    sb_tensor *saved[SB_NODE_MAX_SAVED];    /* op-specific (indices, mask, stats) */
    const sb_tensor *target;                /* losses: the targets */
    union {                                 /* op-specific scalars */
        sb_conv2d_params conv;
        sb_conv_transpose2d_params conv_t;
        sb_pool2d_params pool;
        struct { float f0, f1; int64_t i0, i1; bool b0; } s;
        struct { float scale, dropout_p; int causal; uint64_t seed, stream, offset; } sdpa;
    } p;
};

/* A new variable whose value is a step tensor of the given shape on the
 * inputs' device;
 * requires_grad is true when any input requires it. */
sb_status sb_ag_output(sb_graph *g, int ndim, const int64_t *shape, sb_variable *const *inputs,
                       int n_inputs, sb_variable **out);
/* sb_ag_output for an op whose public forward defines every element of
 * its output from the inputs alone (y = f(x): it never reads or keeps what
 * the output held), so the arena's memory is not zero-filled first: a
 * forward that accumulates into its output, or writes only some elements,
 * must use sb_ag_output. */
sb_status sb_ag_result(sb_graph *g, int ndim, const int64_t *shape, sb_variable *const *inputs,
                       int n_inputs, sb_variable **out);
/* Append a node for `out` (only when out->requires_grad); returns NULL and
 * sets no error when out needs no gradient. */
sb_status sb_ag_record(sb_graph *g, const char *name, sb_backward_fn backward,
                       sb_variable *const *inputs, int n_inputs, sb_variable *out, sb_node **node);
/* A zero-filled tensor for this step on `device`: from the graph's arena on
 * the CPU, else a device tensor the graph releases at reset. */
sb_status sb_ag_new_tensor(sb_graph *g, sb_device device, sb_dtype dtype, int ndim,
                           const int64_t *shape, sb_tensor **out);
/* A step tensor of like's device, dtype and shape (zero-filled). */
sb_status sb_ag_temp(sb_graph *g, const sb_tensor *like, sb_tensor **out);
sb_status sb_ag_grad_target(sb_graph *g, sb_variable *v, sb_tensor **target);
sb_status sb_ag_grad_commit(sb_graph *g, sb_variable *v, sb_tensor *target);
/* Gradient targets for every input of a node (NULL where no gradient is
 * needed), and their commit after the op's backward rule wrote them. */
sb_status sb_ag_targets(sb_graph *g, sb_node *node, sb_tensor *targets[SB_NODE_MAX_INPUTS]);
sb_status sb_ag_commit(sb_graph *g, sb_node *node, sb_tensor *targets[SB_NODE_MAX_INPUTS]);
/* The usual end of an sb_ag_* forward: record the node unless the output
 * needs no gradient, and hand out the variable. */
sb_status sb_ag_finish(sb_graph *g, const char *name, sb_backward_fn backward,
                       sb_variable *const *inputs, int n_inputs, sb_variable *out, sb_variable **y,
                       sb_node **node);
/* Checks a variable argument of an sb_ag_* op. */
sb_status sb_ag_check_var(const char *fn, const char *name, const sb_variable *v);

/* A counter that changes at every sb_graph_reset (modules rebind parameters). */
uint64_t sb_graph_generation(const sb_graph *g);

#endif
