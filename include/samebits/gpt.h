/* samebits/gpt.h - a small GPT (decoder-only transformer) built from the
 * public ops, its KV cache, and reproducible sampling of the next token.
 *
 * Architecture (contract section 19, "A small GPT"): token embedding;
 * `layers` pre-norm blocks h = h + attn(rms_norm(h)), h = h + mlp(rms_norm(h));
 * a final RMS norm; a head (its own weight, or the embedding's when tied).
 * Attention: q, k, v and output projections without bias, `heads` heads of
 * size E = d_model / heads (even), rotary position embeddings on q and k,
 * causal sb_sdpa with the default scale. MLP: fc (4 d_model) -> exact GELU
 * -> proj, without bias. Parameters, in declaration order, named like the
 * state_dict of the equivalent PyTorch module:
 *     tok_emb.weight                      (vocab, d_model)
 *     blocks.L.ln1.weight                 (d_model)
 *     blocks.L.attn.{q,k,v,o}.weight      (d_model, d_model)
 *     blocks.L.ln2.weight                 (d_model)
 *     blocks.L.mlp.fc.weight              (4 d_model, d_model)
 *     blocks.L.mlp.proj.weight            (d_model, 4 d_model)
 *     ln_f.weight                         (d_model)
 *     head.weight                         (vocab, d_model), absent when tied
 * sb_module_init(gpt, seed): every weight matrix N(0, 0.02^2) from its
 * Philox stream (parameter k of the declaration order uses stream k), norm
 * weights 1.
 */
#ifndef SAMEBITS_GPT_H
#define SAMEBITS_GPT_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/export.h"
#include "samebits/autograd.h"
#include "samebits/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sb_gpt_config {
    int64_t vocab;     /* tokens 0..vocab-1, >= 1 */
    int64_t context;   /* most positions a sequence may hold, >= 1 */
    int64_t d_model;   /* >= 2, a multiple of heads */
    int64_t heads;     /* >= 1; the head size d_model / heads must be even */
    int64_t layers;    /* >= 0 */
    bool tied_head;    /* the head reuses tok_emb.weight */
    float norm_eps;    /* RMS norm epsilon, finite and > 0 (1e-5) */
    float rope_base;   /* rotary base, finite and > 1 (10000) */
} sb_gpt_config;

/* vocab as given; context 64, d_model 64, heads 4, layers 2, untied head,
 * norm_eps 1e-5, rope_base 10000. */
SB_API sb_gpt_config sb_gpt_default_config(int64_t vocab);

/* Builds the model (values zero until sb_module_init). */
SB_API sb_status sb_model_gpt(sb_module **out, const sb_gpt_config *cfg);
/* The configuration of a model sb_model_gpt built. */
SB_API sb_status sb_gpt_get_config(const sb_module *gpt, sb_gpt_config *cfg);

/* A KV cache for `batch` sequences of at most cfg.context positions. */
typedef struct sb_gpt_cache sb_gpt_cache;
SB_API sb_status sb_gpt_cache_new(sb_gpt_cache **out, const sb_module *gpt, int64_t batch);
SB_API void sb_gpt_cache_free(sb_gpt_cache *cache);
/* Positions the cache holds (0 after sb_gpt_cache_new). */
SB_API int64_t sb_gpt_cache_length(const sb_gpt_cache *cache);

/* Logits (B, T, vocab) of tokens (B, T) (int64, contiguous, each in
 * [0, vocab)). Without a cache the tokens are positions 0..T-1 (T <=
 * context) and the graph records the step for training. With a cache of
 * batch B they are positions n..n+T-1, n = sb_gpt_cache_length, n + T <=
 * context; their keys and values join the cache (inference: the cache
 * carries no gradient). Row (b, t) of the logits has the same bits whether
 * the prefix ran at once, in chunks or token by token, and whatever the
 * other rows of the batch hold (contract section 19). */
SB_API sb_status sb_gpt_forward(sb_module *gpt, sb_graph *g, const sb_tensor *tokens,
                                sb_gpt_cache *cache, sb_variable **logits);

/* ---- sampling ---- */
typedef struct sb_sample_config {
    float temperature; /* finite, >= 0; 0 picks the argmax (greedy) */
    int64_t top_k;     /* >= 0; 0 keeps every token */
    float top_p;       /* in (0, 1]; 1 keeps every token */
} sb_sample_config;

/* temperature 1, top_k 0, top_p 1. */
SB_API sb_sample_config sb_sample_default_config(void);

/* The next token from logits[0..vocab-1] (finite), drawn with the uniform
 * sb_rng_uniform_at(seed, SB_STREAM_SAMPLE, position): contract section 19,
 * "Sampling the next token". The result depends on nothing else (not on the
 * batch, threads or instruction set). */
#define SB_STREAM_SAMPLE UINT64_C(0x53414D504C450000)
SB_API sb_status sb_sample_token(const float *logits, int64_t vocab, const sb_sample_config *cfg,
                                 uint64_t seed, uint64_t position, int64_t *token);

#ifdef __cplusplus
}
#endif
#endif
