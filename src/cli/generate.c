/* `samebits generate`: text from a GPT (a `train --model gpt --save`
 * checkpoint, or the model initialised from --seed), one token at a time
 * with a KV cache, sampled reproducibly (contract section 19, "Sampling the
 * next token"). Prints the prompt and its continuation, then the hash of
 * every step's logits. --no-cache recomputes the whole prefix at each step:
 * the same bits, slower. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/gpt_cli.h"
#include "core/internal.h"
#include "samebits.h"

static int fail(const char *what) {
    fprintf(stderr, "samebits: generate: %s: %s\n", what, sb_last_error());
    return 1;
}

/* Logits of the last position after feeding seq[0..len) (with a cache:
 * only seq[done..len), the positions the cache lacks). */
static sb_status next_logits(sb_module *model, sb_graph *g, sb_gpt_cache *cache, const int64_t *seq,
                             int64_t len, float *out, int64_t vocab) {
    sb_graph_reset(g);
    int64_t from = cache ? sb_gpt_cache_length(cache) : 0;
    const int64_t shape[2] = {1, len - from};
    sb_tensor *x;
    sb_variable *logits;
    SB_TRY(sb_tensor_new_in(&x, sb_graph_arena(g), SB_I64, 2, shape));
    memcpy(x->data, seq + from, (size_t)(len - from) * sizeof *seq);
    SB_TRY(sb_gpt_forward(model, g, x, cache, &logits));
    memcpy(out, (const float *)logits->value->data + (len - from - 1) * vocab, (size_t)vocab * sizeof *out);
    return SB_OK;
}

int sb_cli_generate(int argc, char **argv) {
    const char *corpus_path = SB_GPT_DEFAULT_CORPUS, *checkpoint = NULL, *prompt = NULL;
    int64_t tokens = 32, top_k = 0, threads = 0;
    uint64_t seed = 0, sample_seed = 0;
    double temperature = 1.0, top_p = 1.0;
    bool tied = false, no_cache = false;
    sb_gpt_config cfg = sb_gpt_default_config(1);
    sb_cli_option opts[SB_GPT_MODEL_OPTIONS + 11] = {
        {.name = "--corpus", .kind = SB_CLI_TEXT, .dest = &corpus_path},
        {.name = "--checkpoint", .kind = SB_CLI_TEXT, .dest = &checkpoint},
        {.name = "--prompt", .kind = SB_CLI_TEXT, .dest = &prompt},
        {.name = "--tokens", .kind = SB_CLI_I64, .dest = &tokens, .imin = 1, .imax = 1 << 24},
        {.name = "--top-k", .kind = SB_CLI_I64, .dest = &top_k, .imin = 0, .imax = 1 << 24},
        {.name = "--threads", .kind = SB_CLI_I64, .dest = &threads, .imin = 1, .imax = SB_MAX_THREADS},
        {.name = "--seed", .kind = SB_CLI_U64, .dest = &seed, .umin = 0, .umax = UINT64_MAX},
        {.name = "--sample-seed", .kind = SB_CLI_U64, .dest = &sample_seed, .umin = 0, .umax = UINT64_MAX},
        {.name = "--temperature", .kind = SB_CLI_REAL, .dest = &temperature, .rmin = 0, .rmax = 1e6},
        {.name = "--top-p", .kind = SB_CLI_REAL, .dest = &top_p, .rmin = 1e-6, .rmax = 1},
        {.name = "--no-cache", .kind = SB_CLI_FLAG, .dest = &no_cache},
    };
    sb_gpt_model_options(&cfg, &tied, opts + 11);
    if (sb_cli_parse_options("generate", opts, sizeof opts / sizeof *opts, argc, argv) != SB_OK) {
        fprintf(stderr, "samebits: %s\n", sb_last_error());
        return 2;
    }
    if (!prompt || !prompt[0]) {
        fprintf(stderr, "samebits: generate: --prompt needs a non-empty text\n");
        return 2;
    }
    const int64_t P = (int64_t)strlen(prompt);
    if (P > cfg.context || tokens > cfg.context - P) {
        fprintf(stderr, "samebits: generate: the prompt's %" PRId64 " characters and --tokens = %" PRId64
                " pass the context of %" PRId64 " positions\n", P, tokens, cfg.context);
        return 2;
    }
    cfg.tied_head = tied;
    if (threads > 0 && sb_set_num_threads((int)threads) != SB_OK) return fail("--threads");
    sb_corpus corpus;
    if (sb_corpus_load("generate", corpus_path, &corpus) != SB_OK) return fail("loading the corpus");
    int64_t *seq = malloc((size_t)(P + tokens) * sizeof *seq);
    float *steps_logits = NULL;
    for (int64_t i = 0; seq && i < P; i++) {
        int16_t t = corpus.token_of[(unsigned char)prompt[i]];
        if (t < 0) {
            fprintf(stderr, "samebits: generate: the prompt's character %" PRId64 " (byte %u) is not in "
                    "the corpus's vocabulary\n", i, (unsigned)(unsigned char)prompt[i]);
            free(seq);
            sb_corpus_free(&corpus);
            return 2;
        }
        seq[i] = t;
    }
    cfg.vocab = corpus.vocab;
    sb_module *model = NULL;
    sb_optimizer *opt = NULL;
    sb_graph *g = NULL;
    sb_gpt_cache *cache = NULL;
    sb_adam_config adamw = sb_adamw_default_config(1e-3);
    int rc = 0;
    steps_logits = seq ? malloc((size_t)(tokens * corpus.vocab) * sizeof *steps_logits) : NULL;
    if (!steps_logits || sb_model_gpt(&model, &cfg) != SB_OK || sb_module_init(model, seed) != SB_OK ||
        sb_graph_new(&g) != SB_OK || (!no_cache && sb_gpt_cache_new(&cache, model, 1) != SB_OK)) {
        rc = fail("setting up");
        goto done;
    }
    if (checkpoint) {
        sb_train_state state = {.model = "gpt"}; /* the model a checkpoint must hold */
        if (sb_optimizer_adam(&opt, model, &adamw) != SB_OK ||
            sb_checkpoint_load(checkpoint, model, opt, &state) != SB_OK) {
            rc = fail("loading the checkpoint");
            goto done;
        }
    }
    sb_module_train(model, false);
    sb_sample_config sc = {(float)temperature, top_k, (float)top_p};
    for (int64_t s = 0; s < tokens; s++) {
        float *row = steps_logits + s * corpus.vocab;
        if (next_logits(model, g, cache, seq, P + s, row, corpus.vocab) != SB_OK ||
            sb_sample_token(row, corpus.vocab, &sc, sample_seed, (uint64_t)(P + s), &seq[P + s]) != SB_OK) {
            rc = fail("sampling");
            goto done;
        }
    }
    for (int64_t i = 0; i < P + tokens; i++) putchar(corpus.bytes[seq[i]]);
    putchar('\n');
    sb_tensor *all = NULL;
    const int64_t shape[2] = {tokens, corpus.vocab};
    unsigned char d[32];
    char hex[65];
    if (sb_tensor_new(&all, SB_F32, 2, shape) != SB_OK) { rc = fail("hashing"); goto done; }
    memcpy(all->data, steps_logits, (size_t)(tokens * corpus.vocab) * sizeof(float));
    const sb_tensor *list[1] = {all};
    sb_hash_tensors(list, 1, d);
    sb_tensor_free(all);
    sb_hex_digest(d, hex);
    printf("Hash of the logits: %s\n", hex);
done:
    free(seq);
    free(steps_logits);
    sb_gpt_cache_free(cache);
    sb_graph_free(g);
    sb_optimizer_free(opt);
    sb_module_free(model);
    sb_corpus_free(&corpus);
    return rc;
}
