/* A GPT of `samebits train --model gpt`'s architecture (default: its model,
 * vocab 82, context 64, d_model 64, 4 heads, 2 layers): one training step
 * (batch windows of `context` tokens: forward, cross-entropy, backward,
 * AdamW), and generation with the KV cache (`context` decode steps of one
 * token each, from a one-token prompt, greedy: each step feeds the token
 * the previous one drew).
 * bench/bench_gpt.py runs this next to the same model in PyTorch.
 *
 *   bench_gpt_step [--threads N] [--steps S] [--layers L] [--d-model D]
 *                  [--heads H] [--context T] [--batch B]
 *
 * Prints "gpt_step_ms <median> threads <N> isa <isa>" and
 * "gpt_generate_tokens_per_s <median over 5 runs>". The token values come
 * from a Philox stream: the cost does not depend on them. */
#include <string.h>
#include "bench_common.h"

enum { VOCAB = 82 };

#define die(what) bench_fail("bench_gpt_step", what)

int main(int argc, char **argv) {
    int threads = 1, steps = 20;
    sb_gpt_config cfg = sb_gpt_default_config(VOCAB);
    int64_t BATCH = 8;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--layers")) cfg.layers = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--d-model")) cfg.d_model = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--heads")) cfg.heads = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--context")) cfg.context = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) BATCH = atoll(argv[i + 1]);
        else return die("unknown option");
    }
    if (steps < 1 || steps > 100000) steps = 20;
    if (BATCH < 1 || BATCH > 4096) return die("--batch");
    if (sb_set_num_threads(threads) != SB_OK) return die("threads");
    const int64_t T = cfg.context;
    sb_module *model;
    sb_optimizer *opt;
    sb_graph *g;
    sb_adam_config adamw = sb_adamw_default_config(3e-3);
    if (sb_model_gpt(&model, &cfg) != SB_OK || sb_module_init(model, 0) != SB_OK ||
        sb_optimizer_adam(&opt, model, &adamw) != SB_OK || sb_graph_new(&g) != SB_OK)
        return die("setup");
    sb_tensor *x, *y;
    const int64_t xs[2] = {BATCH, T}, ys = BATCH * T;
    if (sb_tensor_new(&x, SB_I64, 2, xs) != SB_OK || sb_tensor_new(&y, SB_I64, 1, &ys) != SB_OK) return die("setup");
    int warmup = 3;
    double *ms = malloc(sizeof(double) * (size_t)steps);
    if (!ms) return 1;
    for (int s = -warmup; s < steps; s++) {
        for (int64_t i = 0; i < BATCH * T; i++) {
            ((int64_t *)x->data)[i] = sb_rng_bounded_at(1, (uint64_t)(s + warmup), (uint64_t)i, VOCAB);
            ((int64_t *)y->data)[i] = sb_rng_bounded_at(2, (uint64_t)(s + warmup), (uint64_t)i, VOCAB);
        }
        double t0 = bench_now_ms();
        sb_graph_reset(g);
        sb_variable *logits, *rows, *loss;
        const int64_t shape[2] = {-1, VOCAB};
        if (sb_gpt_forward(model, g, x, NULL, &logits) != SB_OK ||
            sb_ag_reshape(g, logits, 2, shape, &rows) != SB_OK ||
            sb_ag_cross_entropy(g, rows, y, SB_LOSS_MEAN, 0.0f, &loss) != SB_OK ||
            sb_graph_backward(g, loss) != SB_OK || sb_optimizer_step(opt) != SB_OK)
            return die("step");
        if (s >= 0) ms[s] = bench_now_ms() - t0;
    }
    printf("gpt_step_ms %.3f threads %d isa %s\n", bench_median(ms, steps), threads, sb_isa_name(sb_isa()));
    /* generation: T one-token steps through the KV cache */
    sb_module_train(model, false);
    sb_sample_config greedy = {0.0f, 0, 1.0f};
    double rates[6];
    sb_tensor *tok;
    const int64_t one[2] = {1, 1};
    if (sb_tensor_new(&tok, SB_I64, 2, one) != SB_OK) return die("setup");
    for (int r = -1; r < 5; r++) {
        sb_gpt_cache *cache;
        if (sb_gpt_cache_new(&cache, model, 1) != SB_OK) return die("cache");
        ((int64_t *)tok->data)[0] = 1;
        double t0 = bench_now_ms();
        for (int64_t p = 0; p < T; p++) {
            sb_variable *logits;
            sb_graph_reset(g);
            if (sb_gpt_forward(model, g, tok, cache, &logits) != SB_OK ||
                sb_sample_token(logits->value->data, VOCAB, &greedy, 0, (uint64_t)(p + 1),
                                (int64_t *)tok->data) != SB_OK)
                return die("generate");
        }
        if (r >= 0) rates[r] = (double)T / ((bench_now_ms() - t0) * 1e-3);
        sb_gpt_cache_free(cache);
    }
    printf("gpt_generate_tokens_per_s %.1f\n", bench_median(rates, 5));
    free(ms);
    sb_tensor_free(x);
    sb_tensor_free(y);
    sb_tensor_free(tok);
    sb_graph_free(g);
    sb_optimizer_free(opt);
    sb_module_free(model);
    return 0;
}
