/* The tape, leaves, gradient routing and the backward walk. */
#include <stdatomic.h>
#include <stdlib.h>
#include "core/fpenv.h"
#include "autograd/graph_internal.h"
#include "autograd/trace_internal.h"
#include "samebits/elementwise.h"

struct sb_graph {
    sb_arena *arena;                 /* CPU activations, nodes, variables */
    sb_tensor **device_tensors;      /* other devices' activations, freed at reset */
    size_t n_device, cap_device;
    sb_node **tape;
    size_t n_nodes, cap_nodes;
    uint64_t generation; /* changes at every reset: modules rebind parameters */
    bool backward_done;  /* this step's tape was already walked */
};

/* Generations are unique across all graphs, so a module never mistakes a new
 * graph that happens to reuse a freed graph's address for the old one. */
static _Atomic uint64_t next_generation = 1;

sb_status sb_graph_new(sb_graph **out) {
    if (!out) return sb_fail(SB_ERR_NULL, "sb_graph_new: out is NULL");
    *out = NULL;
    sb_graph *g = sb_calloc("sb_graph_new", 1, sizeof *g);
    if (!g) return SB_ERR_NOMEM;
    sb_status s = sb_arena_new(&g->arena, (size_t)16 << 20);
    if (s != SB_OK) { free(g); return s; }
    g->generation = atomic_fetch_add(&next_generation, 1);
    *out = g;
    return SB_OK;
}

static void free_device_tensors(sb_graph *g) {
    for (size_t i = 0; i < g->n_device; i++) sb_tensor_free(g->device_tensors[i]);
    g->n_device = 0;
}

void sb_graph_free(sb_graph *g) {
    if (!g) return;
    free_device_tensors(g);
    free(g->device_tensors);
    sb_arena_free(g->arena);
    free(g->tape);
    free(g);
}

void sb_graph_reset(sb_graph *g) {
    if (!g) return;
    free_device_tensors(g);
    sb_arena_reset(g->arena);
    g->n_nodes = 0;
    g->generation = atomic_fetch_add(&next_generation, 1);
    g->backward_done = false;
}

sb_arena *sb_graph_arena(sb_graph *g) { return g ? g->arena : NULL; }
size_t sb_graph_num_nodes(const sb_graph *g) { return g ? g->n_nodes : 0; }

static sb_status new_var(sb_graph *g, const char *fn, sb_variable **out) {
    sb_variable *v = sb_arena_alloc(g->arena, sizeof *v);
    if (!v) return sb_fail(SB_ERR_NOMEM, "%s: out of memory", fn);
    memset(v, 0, sizeof *v);
    v->producer = -1;
    *out = v;
    return SB_OK;
}

sb_status sb_graph_input(sb_graph *g, sb_tensor *value, sb_variable **out) {
    const char *fn = "sb_graph_input";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_check_header(fn, "value", value));
    SB_TRY(new_var(g, fn, out));
    (*out)->value = value;
    return SB_OK;
}

sb_status sb_graph_param(sb_graph *g, sb_tensor *value, sb_tensor *grad, sb_variable **out) {
    const char *fn = "sb_graph_param";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_check_tensor(fn, "value", value, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "grad", grad, SB_F32, -1));
    SB_TRY(sb_check_same_shape(fn, "value", value, "grad", grad));
    SB_TRY(sb_check_contiguous(fn, "grad", grad));
    SB_TRY(new_var(g, fn, out));
    if (value->device != grad->device)
        return sb_fail(SB_ERR_DEVICE, "%s: value is on the %s device but grad is on the %s device",
                       fn, sb_device_name(value->device), sb_device_name(grad->device));
    /* A parameter the loss does not reach gets a zero gradient, not a stale one. */
    if (grad->device == SB_DEVICE_CPU) memset(grad->data, 0, (size_t)sb_tensor_numel(grad) * sizeof(float));
    else SB_TRY(sb_tensor_fill(grad, 0.0f));
    (*out)->value = value;
    (*out)->grad = grad;
    (*out)->requires_grad = true;
    return SB_OK;
}

sb_status sb_ag_check_var(const char *fn, const char *name, const sb_variable *v) {
    if (!v) return sb_fail(SB_ERR_NULL, "%s: %s is NULL", fn, name);
    if (!v->value) return sb_fail(SB_ERR_NULL, "%s: %s has no value", fn, name);
    return sb_check_header(fn, name, v->value);
}

/* A step tensor; `zero`: filled with +0 (a device tensor always is). */
static sb_status step_tensor(sb_graph *g, sb_device device, sb_dtype dtype, int ndim,
                             const int64_t *shape, bool zero, sb_tensor **out) {
    if (device == SB_DEVICE_CPU)
        return zero ? sb_tensor_new_in(out, g->arena, dtype, ndim, shape)
                    : sb_tensor_new_in_unfilled(out, g->arena, dtype, ndim, shape);
    if (g->n_device == g->cap_device) {
        size_t cap = g->cap_device ? 2 * g->cap_device : 64;
        sb_tensor **list = realloc(g->device_tensors, cap * sizeof *list);
        if (!list) return sb_fail(SB_ERR_NOMEM, "sb_graph: cannot grow the device tensor list");
        g->device_tensors = list;
        g->cap_device = cap;
    }
    SB_TRY(sb_tensor_new_on(out, device, dtype, ndim, shape));
    g->device_tensors[g->n_device++] = *out;
    return SB_OK;
}

sb_status sb_ag_new_tensor(sb_graph *g, sb_device device, sb_dtype dtype, int ndim,
                           const int64_t *shape, sb_tensor **out) {
    return step_tensor(g, device, dtype, ndim, shape, true, out);
}

static sb_status output(sb_graph *g, int ndim, const int64_t *shape, sb_variable *const *inputs,
                        int n_inputs, bool zero, sb_variable **out) {
    SB_TRY(new_var(g, "sb_ag_output", out));
    sb_variable *v = *out;
    sb_device device = SB_DEVICE_CPU; /* the inputs' device (ops refuse a mix) */
    for (int i = n_inputs - 1; i >= 0; i--)
        if (inputs[i] && inputs[i]->value) device = inputs[i]->value->device;
    SB_TRY(step_tensor(g, device, SB_F32, ndim, shape, zero, &v->value));
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i] && inputs[i]->requires_grad) v->requires_grad = true;
    return SB_OK;
}

sb_status sb_ag_output(sb_graph *g, int ndim, const int64_t *shape, sb_variable *const *inputs,
                       int n_inputs, sb_variable **out) {
    return output(g, ndim, shape, inputs, n_inputs, true, out);
}

sb_status sb_ag_result(sb_graph *g, int ndim, const int64_t *shape, sb_variable *const *inputs,
                       int n_inputs, sb_variable **out) {
    return output(g, ndim, shape, inputs, n_inputs, false, out);
}

sb_status sb_ag_record(sb_graph *g, const char *name, sb_backward_fn backward,
                       sb_variable *const *inputs, int n_inputs, sb_variable *out, sb_node **node) {
    *node = NULL;
    if (!out->requires_grad) return SB_OK;
    if (g->n_nodes == g->cap_nodes) {
        size_t cap = g->cap_nodes ? 2 * g->cap_nodes : 64;
        sb_node **tape = realloc(g->tape, cap * sizeof *tape);
        if (!tape) return sb_fail(SB_ERR_NOMEM, "%s: cannot grow the tape", name);
        g->tape = tape;
        g->cap_nodes = cap;
    }
    sb_node *n = sb_arena_alloc(g->arena, sizeof *n);
    if (!n) return SB_ERR_NOMEM;
    memset(n, 0, sizeof *n);
    n->name = name;
    n->backward = backward;
    for (int i = 0; i < n_inputs && i < SB_NODE_MAX_INPUTS; i++) n->in[i] = inputs[i];
    n->out = out;
    out->producer = (int32_t)g->n_nodes;
    g->tape[g->n_nodes++] = n;
    *node = n;
    return SB_OK;
}

sb_status sb_ag_temp(sb_graph *g, const sb_tensor *like, sb_tensor **out) {
    return sb_ag_new_tensor(g, like->device, like->dtype, like->ndim, like->shape, out);
}

sb_status sb_ag_grad_target(sb_graph *g, sb_variable *v, sb_tensor **target) {
    *target = NULL;
    if (!v || !v->requires_grad) return SB_OK;
    if (v->grad_written) return sb_ag_temp(g, v->value, target);
    if (!v->grad) SB_TRY(sb_ag_temp(g, v->value, &v->grad));
    *target = v->grad;
    return SB_OK;
}

sb_status sb_ag_grad_commit(sb_graph *g, sb_variable *v, sb_tensor *target) {
    (void)g;
    if (!target) return SB_OK;
    if (target != v->grad && v->grad->device != SB_DEVICE_CPU) /* the same one IEEE add */
        SB_TRY(sb_add(v->grad, target, v->grad));
    else if (target != v->grad) { /* a later contribution: grad = grad + contribution */
        float *acc = v->grad->data;
        const float *c = target->data;
        int64_t n = sb_tensor_numel(target);
        for (int64_t i = 0; i < n; i++) acc[i] = acc[i] + c[i];
    }
    v->grad_written = true;
    return SB_OK;
}

sb_status sb_graph_backward(sb_graph *g, sb_variable *loss) {
    SB_FPENV_GUARD();
    const char *fn = "sb_graph_backward";
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    SB_TRY(sb_ag_check_var(fn, "loss", loss));
    if (sb_tensor_numel(loss->value) != 1)
        return sb_fail(SB_ERR_SHAPE, "%s: loss must have exactly one element, got %lld", fn,
                       (long long)sb_tensor_numel(loss->value));
    if (!loss->requires_grad)
        return sb_fail(SB_ERR_ARG, "%s: loss does not depend on any parameter", fn);
    /* The tape's variables already hold this step's gradients; walking it
     * again would add to them. */
    if (g->backward_done)
        return sb_fail(SB_ERR_ARG, "%s: this tape was already walked; call sb_graph_reset and run "
                       "the forward again before another backward", fn);
    g->backward_done = true;
    sb_tensor *seed;
    SB_TRY(sb_ag_grad_target(g, loss, &seed));
    SB_TRY(sb_tensor_fill(seed, 1.0f));
    SB_TRY(sb_ag_grad_commit(g, loss, seed));
    for (size_t i = g->n_nodes; i-- > 0;) {
        sb_node *n = g->tape[i];
        if (!n->out->grad_written) continue; /* does not reach the loss */
        sb_status s = n->backward(g, n);
        if (s != SB_OK) return s;
    }
    return SB_OK;
}

sb_status sb_ag_targets(sb_graph *g, sb_node *node, sb_tensor *targets[SB_NODE_MAX_INPUTS]) {
    for (int i = 0; i < SB_NODE_MAX_INPUTS; i++) {
        sb_variable *v = node->in[i];
        bool repeated = false; /* e.g. add(x, x): the second use is a later contribution */
        for (int j = 0; j < i; j++) repeated = repeated || (v && node->in[j] == v);
        if (repeated && v->requires_grad) SB_TRY(sb_ag_temp(g, v->value, &targets[i]));
        else SB_TRY(sb_ag_grad_target(g, v, &targets[i]));
    }
    return SB_OK;
}

sb_status sb_ag_commit(sb_graph *g, sb_node *node, sb_tensor *targets[SB_NODE_MAX_INPUTS]) {
    static const char *const suffix[SB_NODE_MAX_INPUTS] = {".d_in0", ".d_in1", ".d_in2"};
    /* Traced before accumulation, so a trace shows each contribution (and an
     * injected change flows into the sum like a real one). */
    for (int i = 0; i < SB_NODE_MAX_INPUTS; i++)
        if (targets[i]) SB_TRACE_HOOK(node->name, suffix[i], targets[i]);
    for (int i = 0; i < SB_NODE_MAX_INPUTS; i++) SB_TRY(sb_ag_grad_commit(g, node->in[i], targets[i]));
    return SB_OK;
}

sb_status sb_ag_finish(sb_graph *g, const char *name, sb_backward_fn backward,
                       sb_variable *const *inputs, int n_inputs, sb_variable *out, sb_variable **y,
                       sb_node **node) {
    sb_node *unused;
    /* Every forward output passes here, on the tape or not: the trace hook
     * sees it before any later op reads it. */
    SB_TRACE_HOOK(name, NULL, out->value);
    SB_TRY(sb_ag_record(g, name, backward, inputs, n_inputs, out, node ? node : &unused));
    *y = out;
    return SB_OK;
}

uint64_t sb_graph_generation(const sb_graph *g) { return g ? g->generation : 0; }
