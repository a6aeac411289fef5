/* A small GPT from the public ops (include/samebits/gpt.h; contract
 * section 19, "A small GPT"): the module tree, rotary tables, the forward
 * with or without a KV cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/fpenv.h"
#include "core/checked.h"
#include "core/internal.h"
#include "nn/nn_internal.h"
#include "samebits/gpt.h"
#include "samebits/math.h"

#define GPT_INIT_STD 0.02f

sb_gpt_config sb_gpt_default_config(int64_t vocab) {
    return (sb_gpt_config){.vocab = vocab, .context = 64, .d_model = 64, .heads = 4, .layers = 2,
                           .tied_head = false, .norm_eps = 1e-5f, .rope_base = 10000.0f};
}

/* The parts of the tree (tok_emb, blocks, attn, ...) hold parameters only:
 * the whole model runs through sb_gpt_forward. */
static sb_status part_forward(sb_module *m, sb_graph *g, sb_variable *x, sb_variable **y) {
    (void)g; (void)x; (void)y;
    return sb_fail(SB_ERR_UNSUPPORTED, "sb_module_forward: '%s' is a part of a GPT; run the model "
                   "with sb_gpt_forward", m->name);
}

/* The root's module forward: x holds the tokens (B, T), int64. */
static sb_status gpt_module_forward(sb_module *m, sb_graph *g, sb_variable *x, sb_variable **y) {
    return sb_gpt_forward(m, g, x->value, NULL, y);
}

static sb_status check_config(const char *fn, const sb_gpt_config *c) {
    if (c->vocab < 1 || c->vocab > (INT64_C(1) << 31))
        return sb_fail(SB_ERR_ARG, "%s: vocab = %lld must be in 1..2^31", fn, (long long)c->vocab);
    if (c->context < 1 || c->context > (INT64_C(1) << 24))
        return sb_fail(SB_ERR_ARG, "%s: context = %lld must be in 1..2^24 (positions are exact floats)",
                       fn, (long long)c->context);
    if (c->heads < 1 || c->heads > (INT64_C(1) << 20))
        return sb_fail(SB_ERR_ARG, "%s: heads = %lld must be in 1..2^20", fn, (long long)c->heads);
    if (c->d_model < 2 || c->d_model > (INT64_C(1) << 20) || c->d_model % c->heads ||
        (c->d_model / c->heads) % 2)
        return sb_fail(SB_ERR_ARG, "%s: d_model = %lld must be in 2..2^20 and split into heads = %lld "
                       "heads of an even size (rotary pairs)", fn, (long long)c->d_model,
                       (long long)c->heads);
    if (c->layers < 0 || c->layers > 1024)
        return sb_fail(SB_ERR_ARG, "%s: layers = %lld must be in 0..1024", fn, (long long)c->layers);
    if (!(c->norm_eps > 0.0f) || c->norm_eps > 3.4e38f)
        return sb_fail(SB_ERR_ARG, "%s: norm_eps must be finite and > 0", fn);
    if (!(c->rope_base > 1.0f) || c->rope_base > 3.4e38f)
        return sb_fail(SB_ERR_ARG, "%s: rope_base must be finite and > 1", fn);
    return SB_OK;
}

/* A part named `name` with `n` parameters (names[i], shape shapes[i]). */
static sb_status add_part(sb_module *parent, size_t at, const char *name, int n, const char *const *names,
                          const int *ndims, const int64_t (*shapes)[2], const sb_init_rule *rules) {
    sb_module *m = NULL;
    SB_TRY(sb_module_alloc("gpt_part", part_forward, &m));
    snprintf(m->name, sizeof m->name, "%s", name);
    m->init_std = GPT_INIT_STD;
    parent->children[at] = m; /* owned by the parent from here on */
    for (int i = 0; i < n; i++) SB_TRY(sb_module_add_param(m, names[i], ndims[i], shapes[i], rules[i]));
    return SB_OK;
}

static sb_status add_container(sb_module *parent, size_t at, const char *name, size_t n_children,
                               sb_module **out) {
    sb_module *m = NULL;
    SB_TRY(sb_module_alloc("gpt_part", part_forward, &m));
    snprintf(m->name, sizeof m->name, "%s", name);
    parent->children[at] = m;
    if (n_children) {
        m->children = sb_calloc("sb_model_gpt", n_children, sizeof *m->children);
        if (!m->children) return SB_ERR_NOMEM;
    }
    m->n_children = n_children;
    *out = m;
    return SB_OK;
}

static sb_status build(sb_module *root, const sb_gpt_config *c) {
    const int64_t V = c->vocab, D = c->d_model, F = 4 * c->d_model;
    const int one = 1, two = 2;
    const sb_init_rule normal = SB_INIT_NORMAL, ones = SB_INIT_ONES;
    const char *w = "weight";
    const int64_t emb[1][2] = {{V, D}}, vec[1][2] = {{D, 0}};
    SB_TRY(add_part(root, 0, "tok_emb", 1, &w, &two, emb, &normal));
    sb_module *blocks = NULL;
    SB_TRY(add_container(root, 1, "blocks", (size_t)c->layers, &blocks));
    for (int64_t l = 0; l < c->layers; l++) {
        sb_module *block = NULL;
        SB_TRY(add_container(blocks, (size_t)l, "", 4, &block));
        const char *qkvo[4] = {"q.weight", "k.weight", "v.weight", "o.weight"};
        const int nd4[4] = {2, 2, 2, 2};
        const int64_t sq[4][2] = {{D, D}, {D, D}, {D, D}, {D, D}};
        const sb_init_rule r4[4] = {normal, normal, normal, normal};
        const char *mlp[2] = {"fc.weight", "proj.weight"};
        const int64_t sm[2][2] = {{F, D}, {D, F}};
        SB_TRY(add_part(block, 0, "ln1", 1, &w, &one, vec, &ones));
        SB_TRY(add_part(block, 1, "attn", 4, qkvo, nd4, sq, r4));
        SB_TRY(add_part(block, 2, "ln2", 1, &w, &one, vec, &ones));
        SB_TRY(add_part(block, 3, "mlp", 2, mlp, nd4, sm, r4));
    }
    SB_TRY(add_part(root, 2, "ln_f", 1, &w, &one, vec, &ones));
    if (!c->tied_head) SB_TRY(add_part(root, 3, "head", 1, &w, &two, emb, &normal));
    return SB_OK;
}

static void free_config(void *p) { free(p); }

sb_status sb_model_gpt(sb_module **out, const sb_gpt_config *cfg) {
    SB_FPENV_GUARD();
    const char *fn = "sb_model_gpt";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    if (!cfg) return sb_fail(SB_ERR_NULL, "%s: cfg is NULL", fn);
    SB_TRY(check_config(fn, cfg));
    sb_module *root = NULL;
    SB_TRY(sb_module_alloc("gpt", gpt_module_forward, &root));
    sb_gpt_config *keep = sb_malloc(fn, sizeof *keep);
    size_t parts = cfg->tied_head ? 3 : 4;
    root->children = keep ? sb_calloc(fn, parts, sizeof *root->children) : NULL;
    if (!root->children) {
        free(keep);
        sb_module_free(root);
        return SB_ERR_NOMEM;
    }
    *keep = *cfg;
    root->ext = keep;
    root->ext_free = free_config;
    root->n_children = parts;
    sb_status s = build(root, cfg);
    if (s != SB_OK) {
        sb_module_free(root); /* frees the parts made so far (NULL children are skipped) */
        return s;
    }
    *out = root;
    return SB_OK;
}

static const sb_gpt_config *config_of(const sb_module *m) {
    return m && m->ext_free == free_config ? m->ext : NULL;
}

sb_status sb_gpt_get_config(const sb_module *gpt, sb_gpt_config *cfg) {
    const char *fn = "sb_gpt_get_config";
    if (!gpt) return sb_fail(SB_ERR_NULL, "%s: gpt is NULL", fn);
    if (!cfg) return sb_fail(SB_ERR_NULL, "%s: cfg is NULL", fn);
    const sb_gpt_config *c = config_of(gpt);
    if (!c) return sb_fail(SB_ERR_ARG, "%s: gpt is a '%s' module, not one sb_model_gpt built", fn, gpt->kind);
    *cfg = *c;
    return SB_OK;
}

/* ---- KV cache ---- */

struct sb_gpt_cache {
    int64_t batch, heads, context, head_size, layers, length;
    float *k, *v; /* per layer (batch, heads, context, head_size) */
};

sb_status sb_gpt_cache_new(sb_gpt_cache **out, const sb_module *gpt, int64_t batch) {
    SB_FPENV_GUARD();
    const char *fn = "sb_gpt_cache_new";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    if (!gpt) return sb_fail(SB_ERR_NULL, "%s: gpt is NULL", fn);
    const sb_gpt_config *c = config_of(gpt);
    if (!c) return sb_fail(SB_ERR_ARG, "%s: gpt is a '%s' module, not one sb_model_gpt built", fn, gpt->kind);
    if (batch < 1) return sb_fail(SB_ERR_ARG, "%s: batch = %lld must be >= 1", fn, (long long)batch);
    int64_t total;
    const int64_t dims[4] = {batch, c->context, c->d_model, c->layers > 0 ? c->layers : 1};
    if (!sb_checked_numel(4, dims, &total) || total > SB_NUMEL_MAX / 2)
        return sb_fail(SB_ERR_ARG, "%s: batch = %lld makes a cache too large", fn, (long long)batch);
    sb_gpt_cache *cache = sb_calloc(fn, 1, sizeof *cache);
    if (!cache) return SB_ERR_NOMEM;
    *cache = (sb_gpt_cache){batch, c->heads, c->context, c->d_model / c->heads, c->layers, 0, NULL, NULL};
    cache->k = sb_calloc(fn, (size_t)total, sizeof(float));
    cache->v = cache->k ? sb_calloc(fn, (size_t)total, sizeof(float)) : NULL;
    if (!cache->v) {
        sb_gpt_cache_free(cache);
        return SB_ERR_NOMEM;
    }
    *out = cache;
    return SB_OK;
}

void sb_gpt_cache_free(sb_gpt_cache *cache) {
    if (!cache) return;
    free(cache->k);
    free(cache->v);
    free(cache);
}

int64_t sb_gpt_cache_length(const sb_gpt_cache *cache) { return cache ? cache->length : 0; }

/* ---- forward ---- */

/* Rotary tables for positions start..start+T-1 and head size E, in the
 * order a PyTorch user's code computes them (contract section 19):
 *     inv_freq_i = 1.0f / sb_powf(base, (float)(2i) / (float)E)   i < E/2
 *     angle_tc   = (float)(start + t) * inv_freq_(c mod E/2)
 *     cos_tc = sb_cosf(angle_tc);  ssin_tc = -sb_sinf(angle_tc) for c < E/2, else sb_sinf
 * ssin folds rotate_half's negation into the sine: (-x) * s and x * (-s)
 * are the same bits. cos, ssin are (T, E). */
static void rotary_tables(int64_t start, int64_t T, int64_t E, float base, float *cos, float *ssin) {
    int64_t half = E / 2;
    for (int64_t t = 0; t < T; t++)
        for (int64_t c = 0; c < E; c++) {
            int64_t i = c % half;
            float inv_freq = 1.0f / sb_powf(base, (float)(2 * i) / (float)E);
            float angle = (float)(start + t) * inv_freq;
            float s = sb_sinf(angle);
            cos[t * E + c] = sb_cosf(angle);
            ssin[t * E + c] = c < half ? -s : s;
        }
}

typedef struct {
    sb_variable *cos, *ssin; /* (T, E) */
    sb_tensor *perm;         /* (E) int64: rotate_half's source column */
} rotary;

static sb_status rotary_make(sb_graph *g, int64_t start, int64_t T, int64_t E, float base, rotary *r) {
    sb_arena *a = sb_graph_arena(g);
    sb_tensor *cos = NULL, *ssin = NULL;
    const int64_t shape[2] = {T, E};
    SB_TRY(sb_tensor_new_in(&cos, a, SB_F32, 2, shape));
    SB_TRY(sb_tensor_new_in(&ssin, a, SB_F32, 2, shape));
    SB_TRY(sb_tensor_new_in(&r->perm, a, SB_I64, 1, &E));
    rotary_tables(start, T, E, base, cos->data, ssin->data);
    int64_t *p = r->perm->data;
    for (int64_t c = 0; c < E; c++) p[c] = (c + E / 2) % E;
    SB_TRY(sb_graph_input(g, cos, &r->cos));
    return sb_graph_input(g, ssin, &r->ssin);
}

/* x (B, H, T, E) -> x*cos + rotate_half(x)*sin, rotate_half(x) =
 * cat(-x[..., E/2:], x[..., :E/2]): three roundings, as PyTorch's
 * `x * cos + rotate_half(x) * sin`. */
static sb_status rotary_apply(sb_graph *g, const rotary *r, sb_variable *x, sb_variable **y) {
    sb_variable *xc, *swapped, *xs;
    SB_TRY(sb_ag_binary(g, SB_BINARY_MUL, x, r->cos, &xc));
    SB_TRY(sb_ag_index_select(g, x, 3, r->perm, &swapped));
    SB_TRY(sb_ag_binary(g, SB_BINARY_MUL, swapped, r->ssin, &xs));
    return sb_ag_binary(g, SB_BINARY_ADD, xc, xs, y);
}

/* (B, T, D) -> (B, H, T, E) */
static sb_status split_heads(sb_graph *g, sb_variable *x, int64_t H, sb_variable **y) {
    const int64_t shape[4] = {x->value->shape[0], x->value->shape[1], H, x->value->shape[2] / H};
    sb_variable *r;
    SB_TRY(sb_ag_reshape(g, x, 4, shape, &r));
    return sb_ag_transpose(g, r, 1, 2, y);
}

/* The cache's keys (or values) of positions 0..n-1 after appending x's
 * (B, H, T, E) at positions n-T..n-1, as a graph input (B, H, n, E). */
static sb_status cache_append(sb_graph *g, const sb_gpt_cache *c, float *store, const sb_tensor *x,
                              int64_t start, sb_variable **out) {
    const int64_t B = c->batch, H = c->heads, E = c->head_size, T = x->shape[2], n = start + T;
    const float *src = x->data;
    for (int64_t bh = 0; bh < B * H; bh++)
        memcpy(store + (bh * c->context + start) * E, src + bh * T * E, (size_t)(T * E) * sizeof(float));
    sb_tensor *all = NULL;
    const int64_t shape[4] = {B, H, n, E};
    SB_TRY(sb_tensor_new_in(&all, sb_graph_arena(g), SB_F32, 4, shape));
    for (int64_t bh = 0; bh < B * H; bh++)
        memcpy((float *)all->data + bh * n * E, store + bh * c->context * E, (size_t)(n * E) * sizeof(float));
    return sb_graph_input(g, all, out);
}

/* Parameter i of part in g: a parameter of the training graph without a
 * cache; with one (inference: the cache carries no gradient) a plain input,
 * so that a decode step neither zeroes every gradient buffer of the model
 * nor records a backward. */
static sb_status param(sb_module *part, sb_graph *g, size_t i, const sb_gpt_cache *cache,
                       sb_variable **out) {
    if (cache) return sb_graph_input(g, part->params[i].value, out);
    return sb_module_param_var(part, g, i, out);
}

static sb_status check_forward(const char *fn, sb_module *gpt, sb_graph *g, const sb_tensor *tokens,
                               const sb_gpt_cache *cache, sb_variable **logits, const sb_gpt_config **cfg) {
    if (!logits) return sb_fail(SB_ERR_NULL, "%s: logits is NULL", fn);
    *logits = NULL;
    if (!gpt) return sb_fail(SB_ERR_NULL, "%s: gpt is NULL", fn);
    if (!g) return sb_fail(SB_ERR_NULL, "%s: graph is NULL", fn);
    const sb_gpt_config *c = config_of(gpt);
    if (!c) return sb_fail(SB_ERR_ARG, "%s: gpt is a '%s' module, not one sb_model_gpt built", fn, gpt->kind);
    SB_TRY(sb_check_host_tensor(fn, "tokens", tokens, SB_I64, 2));
    SB_TRY(sb_check_contiguous(fn, "tokens", tokens));
    const int64_t B = tokens->shape[0], T = tokens->shape[1], start = cache ? cache->length : 0;
    if (B < 1 || T < 1)
        return sb_fail(SB_ERR_SHAPE, "%s: tokens are (%lld, %lld); need at least one token", fn,
                       (long long)B, (long long)T);
    if (cache && cache->batch != B)
        return sb_fail(SB_ERR_SHAPE, "%s: tokens hold %lld sequences but the cache was made for %lld", fn,
                       (long long)B, (long long)cache->batch);
    if (cache && (cache->heads != c->heads || cache->head_size != c->d_model / c->heads ||
                  cache->layers != c->layers || cache->context != c->context))
        return sb_fail(SB_ERR_ARG, "%s: the cache was made for another GPT configuration", fn);
    if (T > c->context - start)
        return sb_fail(SB_ERR_RANGE, "%s: positions %lld..%lld pass the context of %lld", fn,
                       (long long)start, (long long)(start + T - 1), (long long)c->context);
    const int64_t *tok = tokens->data;
    for (int64_t i = 0; i < B * T; i++)
        if (tok[i] < 0 || tok[i] >= c->vocab)
            return sb_fail(SB_ERR_RANGE, "%s: tokens[%lld] = %lld is outside the vocabulary 0..%lld", fn,
                           (long long)i, (long long)tok[i], (long long)(c->vocab - 1));
    *cfg = c;
    return SB_OK;
}

sb_status sb_gpt_forward(sb_module *gpt, sb_graph *g, const sb_tensor *tokens, sb_gpt_cache *cache,
                         sb_variable **logits) {
    SB_FPENV_GUARD();
    const char *fn = "sb_gpt_forward";
    const sb_gpt_config *c = NULL;
    SB_TRY(check_forward(fn, gpt, g, tokens, cache, logits, &c));
    const int64_t B = tokens->shape[0], T = tokens->shape[1], D = c->d_model, H = c->heads, E = D / H;
    const int64_t start = cache ? cache->length : 0;
    sb_module *tok_emb = gpt->children[0], *blocks = gpt->children[1], *ln_f = gpt->children[2];
    sb_module *head = c->tied_head ? tok_emb : gpt->children[3];
    float scale;
    SB_TRY(sb_sdpa_default_scale(E, &scale));
    rotary rot;
    SB_TRY(rotary_make(g, start, T, E, c->rope_base, &rot));
    sb_variable *w, *h, *a, *q, *k, *v, *o, *u;
    SB_TRY(param(tok_emb, g, 0, cache, &w));
    SB_TRY(sb_ag_embedding(g, w, tokens, SB_NO_PADDING, &h)); /* (B, T, D) */
    for (int64_t l = 0; l < c->layers; l++) {
        sb_module *block = blocks->children[l], *ln1 = block->children[0], *attn = block->children[1],
                  *ln2 = block->children[2], *mlp = block->children[3];
        SB_TRY(param(ln1, g, 0, cache, &w));
        SB_TRY(sb_ag_rms_norm(g, h, 1, w, c->norm_eps, &a));
        sb_variable *heads[3];
        for (size_t i = 0; i < 3; i++) { /* q, k, v: (B, H, T, E) */
            sb_variable *lin;
            SB_TRY(param(attn, g, i, cache, &w));
            SB_TRY(sb_ag_linear(g, a, w, NULL, &lin));
            SB_TRY(split_heads(g, lin, H, &heads[i]));
        }
        SB_TRY(rotary_apply(g, &rot, heads[0], &q));
        SB_TRY(rotary_apply(g, &rot, heads[1], &k));
        v = heads[2];
        sb_sdpa_causal causal = SB_SDPA_CAUSAL_TOP_LEFT;
        if (cache) { /* the keys of every earlier position: bottom-right alignment */
            size_t at = (size_t)l * (size_t)(cache->batch * cache->heads * cache->context * E);
            SB_TRY(cache_append(g, cache, cache->k + at, k->value, start, &k));
            SB_TRY(cache_append(g, cache, cache->v + at, v->value, start, &v));
            causal = SB_SDPA_CAUSAL_BOTTOM_RIGHT;
        }
        SB_TRY(sb_ag_sdpa(g, q, k, v, NULL, causal, scale, 0.0f, 0, 0, 0, &o)); /* (B, H, T, E) */
        sb_variable *merged, *flat, *proj;
        const int64_t shape[3] = {B, T, D};
        SB_TRY(sb_ag_transpose(g, o, 1, 2, &merged));
        SB_TRY(sb_ag_reshape(g, merged, 3, shape, &flat));
        SB_TRY(param(attn, g, 3, cache, &w));
        SB_TRY(sb_ag_linear(g, flat, w, NULL, &proj));
        SB_TRY(sb_ag_add(g, h, proj, &h));
        SB_TRY(param(ln2, g, 0, cache, &w));
        SB_TRY(sb_ag_rms_norm(g, h, 1, w, c->norm_eps, &a));
        SB_TRY(param(mlp, g, 0, cache, &w));
        SB_TRY(sb_ag_linear(g, a, w, NULL, &u)); /* (B, T, 4D) */
        SB_TRY(sb_ag_gelu(g, u, false, &u));
        SB_TRY(param(mlp, g, 1, cache, &w));
        SB_TRY(sb_ag_linear(g, u, w, NULL, &proj));
        SB_TRY(sb_ag_add(g, h, proj, &h));
    }
    SB_TRY(param(ln_f, g, 0, cache, &w));
    SB_TRY(sb_ag_rms_norm(g, h, 1, w, c->norm_eps, &a));
    SB_TRY(param(head, g, 0, cache, &w));
    SB_TRY(sb_ag_linear(g, a, w, NULL, logits)); /* (B, T, vocab) */
    if (cache) cache->length = start + T;
    return SB_OK;
}
