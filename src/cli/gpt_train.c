/* `samebits train --model gpt`: a small GPT trained at character level on a
 * text corpus (README, "A small GPT"). Prints the corpus line and the four hash
 * lines; the bits depend on the options and the corpus, never on threads or
 * the instruction set. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/gpt_cli.h"
#include "io/io_internal.h"
#include "samebits.h"

/* Window start of batch row r at step s: sb_rng_bounded_at(seed,
 * SB_STREAM_GPT_WINDOWS + s, r, n_train - T). */
#define SB_STREAM_GPT_WINDOWS UINT64_C(0x475054574E440000)
#define EVAL_WINDOWS 8

static int fail(const char *what) {
    fprintf(stderr, "samebits: %s: %s\n", what, sb_last_error());
    return 1;
}

static void print_hash(const char *label, const unsigned char d[32]) {
    char hex[65];
    sb_hex_digest(d, hex);
    printf("%s: %s\n", label, hex);
}

/* Mean cross-entropy of logits (B, T, V) against targets (B*T). */
static sb_status loss_of(sb_graph *g, sb_variable *logits, const sb_tensor *targets, sb_variable **loss) {
    const int64_t shape[2] = {-1, logits->value->shape[2]};
    sb_variable *rows;
    SB_TRY(sb_ag_reshape(g, logits, 2, shape, &rows));
    return sb_ag_cross_entropy(g, rows, targets, SB_LOSS_MEAN, 0.0f, loss);
}

/* Tokens (B, T) and next-token targets (B*T) of the windows starting at
 * starts[0..B-1], in the graph's arena. */
static sb_status windows(sb_graph *g, const sb_corpus *c, const int64_t *starts, int64_t B, int64_t T,
                         sb_tensor **x, sb_tensor **y) {
    const int64_t xs[2] = {B, T}, ys = B * T;
    SB_TRY(sb_tensor_new_in(x, sb_graph_arena(g), SB_I64, 2, xs));
    SB_TRY(sb_tensor_new_in(y, sb_graph_arena(g), SB_I64, 1, &ys));
    for (int64_t b = 0; b < B; b++) {
        memcpy((int64_t *)(*x)->data + b * T, c->ids + starts[b], (size_t)T * sizeof(int64_t));
        memcpy((int64_t *)(*y)->data + b * T, c->ids + starts[b] + 1, (size_t)T * sizeof(int64_t));
    }
    return SB_OK;
}

int sb_cli_train_gpt(int argc, char **argv) {
    const char *corpus_path = SB_GPT_DEFAULT_CORPUS, *save = NULL;
    int64_t steps = 40, batch = 8, threads = 0;
    uint64_t seed = 0;
    double lr = 3e-3;
    bool tied = false;
    sb_gpt_config cfg = sb_gpt_default_config(1);
    sb_cli_option opts[SB_GPT_MODEL_OPTIONS + 7] = {
        {.name = "--corpus", .kind = SB_CLI_TEXT, .dest = &corpus_path},
        {.name = "--save", .kind = SB_CLI_TEXT, .dest = &save},
        {.name = "--steps", .kind = SB_CLI_I64, .dest = &steps, .imin = 1, .imax = 1000000000},
        {.name = "--batch-size", .kind = SB_CLI_I64, .dest = &batch, .imin = 1, .imax = 1 << 20},
        {.name = "--threads", .kind = SB_CLI_I64, .dest = &threads, .imin = 1, .imax = SB_MAX_THREADS},
        {.name = "--seed", .kind = SB_CLI_U64, .dest = &seed, .umin = 0, .umax = UINT64_MAX},
        {.name = "--lr", .kind = SB_CLI_REAL, .dest = &lr, .rmin = 1.1754944e-38, .rmax = 3.4e38},
    };
    sb_gpt_model_options(&cfg, &tied, opts + 7);
    if (sb_cli_parse_options("train --model gpt", opts, sizeof opts / sizeof *opts, argc, argv) != SB_OK) {
        fprintf(stderr, "samebits: %s\n", sb_last_error());
        return 2;
    }
    cfg.tied_head = tied;
    if (threads > 0 && sb_set_num_threads((int)threads) != SB_OK) return fail("--threads");
    sb_corpus corpus;
    if (sb_corpus_load("train", corpus_path, &corpus) != SB_OK) return fail("loading the corpus");
    const int64_t T = cfg.context, n_train = corpus.n - corpus.n / 10, held = corpus.n - n_train;
    if (n_train < T + 2 || held < T + 1) {
        fprintf(stderr, "samebits: train: the corpus %s (%" PRId64 " bytes) is too small for windows of "
                "%" PRId64 " tokens (9/10 train, 1/10 held out)\n", corpus_path, corpus.n, T);
        sb_corpus_free(&corpus);
        return 2;
    }
    cfg.vocab = corpus.vocab;
    sb_module *model = NULL;
    sb_optimizer *opt = NULL;
    sb_graph *g = NULL;
    sb_adam_config adamw = sb_adamw_default_config(lr);
    int rc = 0;
    int64_t *starts = NULL;
    if (sb_model_gpt(&model, &cfg) != SB_OK || sb_module_init(model, seed) != SB_OK ||
        sb_optimizer_adam(&opt, model, &adamw) != SB_OK || sb_graph_new(&g) != SB_OK) {
        rc = fail("setting up");
        goto done;
    }
    starts = malloc((size_t)(batch > EVAL_WINDOWS ? batch : EVAL_WINDOWS) * sizeof *starts);
    if (!starts) { rc = fail("setting up"); goto done; }
    if (save && sb_atomic_probe("--save", save) != SB_OK) { rc = fail("checking --save"); goto done; }
    char hex[65];
    sb_hex_digest(corpus.sha256, hex);
    printf("Corpus: %" PRId64 " bytes, %" PRId64 " symbols, sha256 %s\n", corpus.n, corpus.vocab, hex);
    unsigned char d[32];
    sb_module_hash(model, d);
    print_hash("Hash of the initial model", d);
    fflush(stdout);
    for (int64_t s = 0; s < steps; s++) {
        sb_graph_reset(g);
        for (int64_t b = 0; b < batch; b++)
            starts[b] = sb_rng_bounded_at(seed, SB_STREAM_GPT_WINDOWS + (uint64_t)s, (uint64_t)b,
                                          (uint32_t)(n_train - T));
        sb_tensor *x, *y;
        sb_variable *logits, *loss;
        if (windows(g, &corpus, starts, batch, T, &x, &y) != SB_OK ||
            sb_gpt_forward(model, g, x, NULL, &logits) != SB_OK || loss_of(g, logits, y, &loss) != SB_OK ||
            sb_graph_backward(g, loss) != SB_OK || sb_optimizer_step(opt) != SB_OK) {
            rc = fail("training");
            goto done;
        }
        if ((s + 1) % 10 == 0 || s + 1 == steps)
            fprintf(stderr, "step %" PRId64 "/%" PRId64 " loss %.4f\n", s + 1, steps,
                    (double)((const float *)loss->value->data)[0]);
    }
    sb_train_state state = {seed, steps, batch, "gpt"};
    if (save && sb_checkpoint_save(save, model, opt, &state) != SB_OK) { rc = fail("saving"); goto done; }
    sb_module_hash(model, d);
    print_hash("Hash of the trained model", d);
    /* held-out windows: consecutive, from the start of the last tenth */
    int64_t n_eval = (held - 1) / T < EVAL_WINDOWS ? (held - 1) / T : EVAL_WINDOWS;
    for (int64_t b = 0; b < n_eval; b++) starts[b] = n_train + b * T;
    sb_graph_reset(g);
    sb_module_train(model, false);
    sb_tensor *x, *y;
    sb_variable *logits, *loss;
    if (windows(g, &corpus, starts, n_eval, T, &x, &y) != SB_OK ||
        sb_gpt_forward(model, g, x, NULL, &logits) != SB_OK || loss_of(g, logits, y, &loss) != SB_OK) {
        rc = fail("evaluating");
        goto done;
    }
    printf("Loss of the model on the %" PRId64 " held-out windows: %.4f\n", n_eval,
           (double)((const float *)loss->value->data)[0]);
    const sb_tensor *list[1] = {logits->value};
    sb_hash_tensors(list, 1, d);
    print_hash("Hash of the logits", d);
done:
    free(starts);
    sb_graph_free(g);
    sb_optimizer_free(opt);
    sb_module_free(model);
    sb_corpus_free(&corpus);
    return rc;
}
