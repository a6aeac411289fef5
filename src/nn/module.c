/* The generic module: parameters, buffers, modes, naming, init and hashing. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include "backend/backend.h"
#include "core/fpenv.h"
#include "nn/nn_internal.h"
#include "samebits/hash.h"
#include "samebits/random.h"

sb_status sb_module_alloc(const char *kind, sb_forward_fn forward, sb_module **out) {
    if (!out) return sb_fail(SB_ERR_NULL, "sb_nn_%s: out is NULL", kind);
    *out = NULL;
    sb_module *m = sb_calloc(kind, 1, sizeof *m);
    if (!m) return SB_ERR_NOMEM;
    m->kind = kind;
    m->forward = forward;
    m->training = true;
    *out = m;
    return SB_OK;
}

static sb_status add_named(sb_module *m, sb_named *list, sb_init_rule *rules, size_t *n,
                           const char *name, sb_dtype dtype, int ndim, const int64_t *shape,
                           bool with_grad, sb_init_rule init) {
    if (*n == SB_MODULE_MAX_LOCAL) return sb_fail(SB_ERR_INTERNAL, "%s: too many tensors", m->kind);
    sb_named *e = &list[*n];
    snprintf(e->name, sizeof e->name, "%s", name);
    SB_TRY(sb_tensor_new(&e->value, dtype, ndim, shape));
    if (with_grad) {
        sb_status s = sb_tensor_new(&e->grad, dtype, ndim, shape);
        if (s != SB_OK) { sb_tensor_free(e->value); e->value = NULL; return s; }
    }
    rules[*n] = init;
    (*n)++;
    return SB_OK;
}

sb_status sb_module_add_param(sb_module *m, const char *name, int ndim, const int64_t *shape,
                              sb_init_rule init) {
    return add_named(m, m->params, m->param_init, &m->n_params, name, SB_F32, ndim, shape, true, init);
}

sb_status sb_module_add_buffer(sb_module *m, const char *name, sb_dtype dtype, int ndim,
                               const int64_t *shape, sb_init_rule init) {
    return add_named(m, m->buffers, m->buffer_init, &m->n_buffers, name, dtype, ndim, shape, false, init);
}

void sb_module_free(sb_module *m) {
    if (!m) return;
    for (size_t i = 0; i < m->n_children; i++) sb_module_free(m->children[i]);
    free(m->children);
    if (m->ext_free) m->ext_free(m->ext);
    for (size_t i = 0; i < m->n_params; i++) {
        sb_tensor_free(m->params[i].value);
        sb_tensor_free(m->params[i].grad);
    }
    for (size_t i = 0; i < m->n_buffers; i++) sb_tensor_free(m->buffers[i].value);
    free(m);
}

const char *sb_module_kind(const sb_module *m) { return m ? m->kind : "(null)"; }

void sb_module_train(sb_module *m, bool training) {
    if (!m) return;
    m->training = training;
    for (size_t i = 0; i < m->n_children; i++) sb_module_train(m->children[i], training);
}

bool sb_module_is_training(const sb_module *m) { return m && m->training; }

sb_status sb_module_forward(sb_module *m, sb_graph *g, sb_variable *x, sb_variable **y) {
    SB_FPENV_GUARD();
    if (!y) return sb_fail(SB_ERR_NULL, "sb_module_forward: y is NULL");
    *y = NULL;
    if (!m) return sb_fail(SB_ERR_NULL, "sb_module_forward: module is NULL");
    if (!g) return sb_fail(SB_ERR_NULL, "sb_module_forward: graph is NULL");
    SB_TRY(sb_ag_check_var("sb_module_forward", "x", x));
    return m->forward(m, g, x, y);
}

sb_status sb_module_param_var(sb_module *m, sb_graph *g, size_t i, sb_variable **out) {
    uint64_t gen = sb_graph_generation(g);
    if (m->bound_graph != g || m->bound_generation != gen) {
        memset(m->bound, 0, sizeof m->bound);
        m->bound_graph = g;
        m->bound_generation = gen;
    }
    if (!m->bound[i]) SB_TRY(sb_graph_param(g, m->params[i].value, m->params[i].grad, &m->bound[i]));
    *out = m->bound[i];
    return SB_OK;
}

/* Walks the tree in declaration order, calling visit(tensor entry, full name). */
typedef sb_status (*visit_fn)(void *ctx, const sb_named *e, const char *name, sb_init_rule rule,
                              const sb_module *owner);

static sb_status walk(sb_module *m, const char *prefix, bool params, visit_fn visit, void *ctx) {
    char name[128];
    size_t n = params ? m->n_params : m->n_buffers;
    for (size_t i = 0; i < n; i++) {
        const sb_named *e = params ? &m->params[i] : &m->buffers[i];
        if (snprintf(name, sizeof name, "%s%s", prefix, e->name) >= (int)sizeof name)
            return sb_fail(SB_ERR_ARG, "module tree: the name %s%s is longer than %zu characters",
                           prefix, e->name, sizeof name - 1);
        SB_TRY(visit(ctx, e, name, params ? m->param_init[i] : m->buffer_init[i], m));
    }
    for (size_t c = 0; c < m->n_children; c++) {
        const char *own = m->children[c]->name;
        int len = own[0] ? snprintf(name, sizeof name, "%s%s.", prefix, own)
                         : snprintf(name, sizeof name, "%s%zu.", prefix, c);
        if (len >= (int)sizeof name)
            return sb_fail(SB_ERR_ARG, "module tree: the prefix of child %zu under '%s' is longer than %zu characters",
                           c, prefix, sizeof name - 1);
        SB_TRY(walk(m->children[c], name, params, visit, ctx));
    }
    return SB_OK;
}

typedef struct { sb_named *out; size_t cap, count; } collect_ctx;

static sb_status collect(void *vctx, const sb_named *e, const char *name, sb_init_rule rule,
                         const sb_module *owner) {
    (void)rule; (void)owner;
    collect_ctx *c = vctx;
    if (c->count < c->cap) {
        size_t len = strlen(name);
        if (len >= sizeof c->out[c->count].name)
            return sb_fail(SB_ERR_ARG, "module tree: the name %s is longer than %zu characters",
                           name, sizeof c->out[c->count].name - 1);
        c->out[c->count] = *e;
        memcpy(c->out[c->count].name, name, len + 1);
    }
    c->count++;
    return SB_OK;
}

static sb_status list_named(const char *fn, sb_module *m, bool params, sb_named *out, size_t cap,
                            size_t *count) {
    if (!m) return sb_fail(SB_ERR_NULL, "%s: module is NULL", fn);
    if (!count) return sb_fail(SB_ERR_NULL, "%s: count is NULL", fn);
    if (cap && !out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    collect_ctx c = {out, cap, 0};
    SB_TRY(walk(m, "", params, collect, &c));
    *count = c.count;
    return SB_OK;
}

sb_status sb_module_parameters(sb_module *m, sb_named *out, size_t cap, size_t *count) {
    return list_named("sb_module_parameters", m, true, out, cap, count);
}

sb_status sb_module_buffers(sb_module *m, sb_named *out, size_t cap, size_t *count) {
    return list_named("sb_module_buffers", m, false, out, cap, count);
}

static sb_status count_scalars(void *vctx, const sb_named *e, const char *name, sb_init_rule rule,
                               const sb_module *owner) {
    (void)name; (void)rule; (void)owner;
    *(int64_t *)vctx += sb_tensor_numel(e->value);
    return SB_OK;
}

int64_t sb_module_num_scalars(sb_module *m) {
    int64_t n = 0;
    if (m) walk(m, "", true, count_scalars, &n);
    return n;
}

typedef struct { uint64_t seed, stream; } init_ctx;

static sb_status init_host(init_ctx *c, uint64_t stream, const sb_named *e, sb_init_rule rule,
                           const sb_module *owner);

/* Initialisation draws on the host; a device tensor gets a host copy's values. */
static sb_status init_one(void *vctx, const sb_named *e, const char *name, sb_init_rule rule,
                          const sb_module *owner) {
    (void)name;
    init_ctx *c = vctx;
    uint64_t stream = c->stream++; /* every tensor owns a stream, used or not */
    if (e->value->device == SB_DEVICE_CPU) return init_host(c, stream, e, rule, owner);
    sb_named host = *e;
    SB_TRY(sb_tensor_new(&host.value, e->value->dtype, e->value->ndim, e->value->shape));
    sb_status st = init_host(c, stream, &host, rule, owner);
    if (st == SB_OK) st = sb_tensor_copy(e->value, host.value);
    sb_tensor_free(host.value);
    return st;
}

static sb_status init_host(init_ctx *c, uint64_t stream, const sb_named *e, sb_init_rule rule,
                           const sb_module *owner) {
    if (e->value->dtype != SB_F32) {
        memset(e->value->data, 0, (size_t)sb_tensor_numel(e->value) * sb_dtype_size(e->value->dtype));
        return SB_OK;
    }
    float *v = e->value->data;
    int64_t n = sb_tensor_numel(e->value);
    switch (rule) {
    case SB_INIT_FAN_IN_UNIFORM: {
        float bound = 1.0f / sqrtf((float)owner->fan_in);
        sb_rng rng = sb_rng_make(c->seed, stream);
        return sb_rng_uniform_range(&rng, 0, -bound, bound, v, n);
    }
    case SB_INIT_NORMAL: {
        sb_rng rng = sb_rng_make(c->seed, stream);
        return sb_rng_normal(&rng, 0, 0.0f, owner->init_std, v, n);
    }
    case SB_INIT_ONES:
        for (int64_t i = 0; i < n; i++) v[i] = 1.0f;
        return SB_OK;
    case SB_INIT_ZEROS:
    case SB_INIT_NONE:
        memset(v, 0, (size_t)n * sizeof *v);
        return SB_OK;
    }
    return SB_OK;
}

sb_status sb_module_init(sb_module *m, uint64_t seed) {
    SB_FPENV_GUARD();
    if (!m) return sb_fail(SB_ERR_NULL, "sb_module_init: module is NULL");
    init_ctx c = {seed, 0};
    SB_TRY(walk(m, "", true, init_one, &c));
    c.stream = 0;
    return walk(m, "", false, init_one, &c); /* buffers: their own rules */
}

static sb_status hash_one(void *vctx, const sb_named *e, const char *name, sb_init_rule rule,
                          const sb_module *owner) {
    (void)name; (void)rule; (void)owner;
    if (e->value->device == SB_DEVICE_CPU) return sb_sha256_tensor(vctx, e->value);
    sb_tensor *host = NULL; /* hashed through a host copy */
    SB_TRY(sb_tensor_to(&host, e->value, SB_DEVICE_CPU));
    sb_status st = sb_sha256_tensor(vctx, host);
    sb_tensor_free(host);
    return st;
}

/* ---- devices ---- */

/* Moves one module's own tensors: all copies are made first, so a failure
 * leaves this module as it was. */
static sb_status move_local(sb_module *m, sb_device device) {
    sb_tensor *nv[2 * SB_MODULE_MAX_LOCAL] = {0}, *ng[SB_MODULE_MAX_LOCAL] = {0};
    sb_status st = SB_OK;
    for (size_t i = 0; st == SB_OK && i < m->n_params; i++) {
        st = sb_tensor_to(&nv[i], m->params[i].value, device);
        if (st == SB_OK && m->params[i].grad) st = sb_tensor_to(&ng[i], m->params[i].grad, device);
    }
    for (size_t i = 0; st == SB_OK && i < m->n_buffers; i++)
        st = sb_tensor_to(&nv[SB_MODULE_MAX_LOCAL + i], m->buffers[i].value, device);
    if (st != SB_OK) {
        for (size_t i = 0; i < 2 * SB_MODULE_MAX_LOCAL; i++) sb_tensor_free(nv[i]);
        for (size_t i = 0; i < SB_MODULE_MAX_LOCAL; i++) sb_tensor_free(ng[i]);
        return st;
    }
    for (size_t i = 0; i < m->n_params; i++) {
        sb_tensor_free(m->params[i].value);
        sb_tensor_free(m->params[i].grad);
        m->params[i].value = nv[i];
        m->params[i].grad = ng[i];
    }
    for (size_t i = 0; i < m->n_buffers; i++) {
        sb_tensor_free(m->buffers[i].value);
        m->buffers[i].value = nv[SB_MODULE_MAX_LOCAL + i];
    }
    m->bound_graph = NULL; /* the next forward binds the new tensors */
    return SB_OK;
}

static sb_status move_tree(sb_module *m, sb_device device) {
    SB_TRY(move_local(m, device));
    for (size_t c = 0; c < m->n_children; c++) SB_TRY(move_tree(m->children[c], device));
    return SB_OK;
}

sb_status sb_module_to(sb_module *m, sb_device device) {
    const char *fn = "sb_module_to";
    if (!m) return sb_fail(SB_ERR_NULL, "%s: module is NULL", fn);
    if (!sb_backend_get(fn, device)) return SB_ERR_DEVICE; /* names a bad or unavailable device */
    return move_tree(m, device);
}

sb_status sb_module_hash(sb_module *m, unsigned char digest[32]) {
    if (!m) return sb_fail(SB_ERR_NULL, "sb_module_hash: module is NULL");
    if (!digest) return sb_fail(SB_ERR_NULL, "sb_module_hash: digest is NULL");
    sb_sha256_ctx ctx;
    sb_sha256_init(&ctx);
    SB_TRY(walk(m, "", true, hash_one, &ctx));
    sb_sha256_final(&ctx, digest);
    return SB_OK;
}
