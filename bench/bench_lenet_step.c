/* One LeNet-5 training step (batch 100: forward, cross-entropy, backward,
 * Adam), timed exactly as `samebits train` runs it. bench/bench_lenet.py
 * runs this next to the same model in PyTorch.
 *
 *   bench_lenet_step [--threads N] [--steps S] [--data DIR]
 *
 * Prints "lenet5_step_ms <median> threads <N>". Uses Fashion-MNIST when
 * DIR holds it (the step's cost hardly depends on the values), else
 * uniform random images. */
#include <string.h>
#include "bench_common.h"

#define die(what) bench_fail("bench_lenet_step", what)

int main(int argc, char **argv) {
    int threads = 1, steps = 30;
    const char *data = "/usr/share/datasets/fashion-mnist";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--data")) data = argv[i + 1];
    }
    if (steps < 1 || steps > 100000) steps = 30;
    if (sb_set_num_threads(threads) != SB_OK) return die("threads");

    sb_dataset train;
    if (bench_lenet_data(data, &train) != SB_OK) return die("dataset");

    sb_module *model;
    sb_optimizer *opt;
    sb_graph *g;
    sb_loader *loader;
    sb_adam_config adam = sb_adam_default_config(0.01);
    if (sb_model_lenet5(&model) != SB_OK || sb_module_init(model, 0) != SB_OK ||
        sb_optimizer_adam(&opt, model, &adam) != SB_OK || sb_graph_new(&g) != SB_OK ||
        sb_loader_new(&loader, &train, 100, true, 0) != SB_OK)
        return die("setup");
    sb_module_train(model, true);

    int warmup = 3;
    double *ms = malloc(sizeof(double) * (size_t)steps);
    if (!ms) return 1;
    int64_t batches = sb_loader_num_batches(loader);
    for (int s = -warmup; s < steps; s++) {
        double t0 = bench_now_ms();
        sb_graph_reset(g);
        sb_tensor *x, *y;
        sb_variable *in, *logits, *loss;
        int64_t b = (s + warmup) % batches;
        if (sb_loader_batch(loader, b, sb_graph_arena(g), &x, &y) != SB_OK ||
            sb_graph_input(g, x, &in) != SB_OK || sb_module_forward(model, g, in, &logits) != SB_OK ||
            sb_ag_cross_entropy(g, logits, y, SB_LOSS_MEAN, 0.0f, &loss) != SB_OK ||
            sb_graph_backward(g, loss) != SB_OK || sb_optimizer_step(opt) != SB_OK)
            return die("step");
        if (s >= 0) ms[s] = bench_now_ms() - t0;
    }
    printf("lenet5_step_ms %.3f threads %d isa %s\n", bench_median(ms, steps), threads,
           sb_isa_name(sb_isa()));
    free(ms);
    sb_loader_free(loader);
    sb_graph_free(g);
    sb_optimizer_free(opt);
    sb_module_free(model);
    sb_dataset_free(&train);
    return 0;
}
