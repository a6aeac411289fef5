/* `make bench-gpu`, the samebits half: SGEMM and the LeNet-5 training step
 * on the OpenCL device (the first one the ICD loader lists, or
 * SB_OPENCL_DEVICE's), timed with every result brought back to the host,
 * which waits for the device's queue. bench/gpu/bench_gpu.py runs this next
 * to PyTorch on the same device.
 *
 *   bench_gpu [--sizes N,N,...] [--steps S] [--data DIR]
 *   bench_gpu --probe          (prints the device line only)
 *
 * Prints "device NAME", then per size "sgemm n N ms T gflops G bits B" (B is
 * "same" when the device's product has the CPU's bits, checked up to
 * n = 1024, "unchecked" above, "DIFFER" otherwise: the run then fails), then
 * "lenet5_step_ms T device opencl" (the median of S steps of batch 100:
 * upload, forward, cross-entropy, backward, Adam, the loss brought back). */
#include <string.h>
#include "../bench_common.h"
#include "bench_gpu_device.h"

#define die(what) bench_fail("bench_gpu", what)

/* A host tensor of n x n values in [-1, 1) from a Philox stream. */
static sb_tensor *random_square(int64_t n, uint64_t stream) {
    sb_tensor *t = NULL;
    int64_t shape[2] = {n, n};
    if (sb_tensor_new(&t, SB_F32, 2, shape) != SB_OK) return NULL;
    sb_rng rng = sb_rng_make(7, stream);
    if (sb_rng_uniform_range(&rng, 0, -1.0f, 1.0f, t->data, n * n) != SB_OK) {
        sb_tensor_free(t);
        return NULL;
    }
    return t;
}

/* Best ms of several device products c = a b, each brought back. */
static int bench_sgemm(int64_t n) {
    sb_tensor *a = random_square(n, 1), *b = random_square(n, 2), *da = NULL, *db = NULL,
              *dc = NULL, *back = NULL, *c = NULL;
    int64_t shape[2] = {n, n};
    if (!a || !b || sb_tensor_to(&da, a, SB_DEVICE_OPENCL) != SB_OK ||
        sb_tensor_to(&db, b, SB_DEVICE_OPENCL) != SB_OK ||
        sb_tensor_new_on(&dc, SB_DEVICE_OPENCL, SB_F32, 2, shape) != SB_OK)
        return die("sgemm setup");
    double best = 1e30, spent = 0.0;
    for (int r = -1; r < 20 && (r < 2 || spent < 2000.0); r++) { /* r = -1 builds the program */
        double t0 = bench_now_ms();
        sb_tensor_free(back);
        back = NULL;
        if (sb_matmul(da, db, false, false, dc) != SB_OK ||
            sb_tensor_to(&back, dc, SB_DEVICE_CPU) != SB_OK)
            return die("sgemm");
        double t = bench_now_ms() - t0;
        if (r >= 0) {
            spent += t;
            if (t < best) best = t;
        }
    }
    const char *bits = "unchecked";
    if (n <= 1024) {
        if (sb_tensor_new(&c, SB_F32, 2, shape) != SB_OK || sb_matmul(a, b, false, false, c) != SB_OK)
            return die("sgemm on the cpu");
        bits = memcmp(c->data, back->data, (size_t)(n * n) * sizeof(float)) ? "DIFFER" : "same";
    }
    printf("sgemm n %lld ms %.3f gflops %.2f bits %s\n", (long long)n, best,
           2.0 * (double)n * (double)n * (double)n / (best * 1e6), bits);
    sb_tensor *all[] = {a, b, da, db, dc, back, c};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) sb_tensor_free(all[i]);
    return strcmp(bits, "DIFFER") == 0;
}

static int bench_lenet(int steps, const char *data) {
    sb_dataset train;
    if (bench_lenet_data(data, &train) != SB_OK) return die("dataset");
    sb_module *model;
    sb_optimizer *opt;
    sb_graph *g;
    sb_loader *loader;
    sb_adam_config adam = sb_adam_default_config(0.01);
    if (sb_model_lenet5(&model) != SB_OK || sb_module_init(model, 0) != SB_OK ||
        sb_module_to(model, SB_DEVICE_OPENCL) != SB_OK ||
        sb_optimizer_adam(&opt, model, &adam) != SB_OK || sb_graph_new(&g) != SB_OK ||
        sb_loader_new(&loader, &train, 100, true, 0) != SB_OK)
        return die("lenet setup");
    sb_module_train(model, true);
    int warmup = 2;
    double *ms = malloc(sizeof(double) * (size_t)steps);
    if (!ms) return 1;
    int64_t batches = sb_loader_num_batches(loader);
    for (int s = -warmup; s < steps; s++) {
        double t0 = bench_now_ms();
        sb_graph_reset(g);
        sb_tensor *x, *y, *xd = NULL, *yd = NULL, *lv = NULL;
        sb_variable *in, *logits, *loss;
        int64_t b = (s + warmup) % batches;
        if (sb_loader_batch(loader, b, sb_graph_arena(g), &x, &y) != SB_OK ||
            sb_tensor_to(&xd, x, SB_DEVICE_OPENCL) != SB_OK ||
            sb_tensor_to(&yd, y, SB_DEVICE_OPENCL) != SB_OK || sb_graph_input(g, xd, &in) != SB_OK ||
            sb_module_forward(model, g, in, &logits) != SB_OK ||
            sb_ag_cross_entropy(g, logits, yd, SB_LOSS_MEAN, 0.0f, &loss) != SB_OK ||
            sb_graph_backward(g, loss) != SB_OK || sb_optimizer_step(opt) != SB_OK ||
            sb_tensor_to(&lv, loss->value, SB_DEVICE_CPU) != SB_OK)
            return die("lenet step");
        sb_tensor_free(xd);
        sb_tensor_free(yd);
        sb_tensor_free(lv);
        if (s >= 0) ms[s] = bench_now_ms() - t0;
    }
    printf("lenet5_step_ms %.3f device opencl\n", bench_median(ms, steps));
    free(ms);
    sb_loader_free(loader);
    sb_graph_free(g);
    sb_optimizer_free(opt);
    sb_module_free(model);
    sb_dataset_free(&train);
    return 0;
}

int main(int argc, char **argv) {
    const char *sizes = "1024,2048,4096", *data = "/usr/share/datasets/fashion-mnist";
    int steps = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--sizes")) sizes = argv[i + 1];
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--data")) data = argv[i + 1];
    }
    if (steps < 1 || steps > 10000) steps = 10;
    if (!bench_gpu_device()) return 0;
    if (argc == 2 && !strcmp(argv[1], "--probe")) return 0;
    int failed = 0;
    for (const char *p = sizes; *p;) {
        char *end;
        long long n = strtoll(p, &end, 10);
        if (end == p || n < 1 || n > 16384) {
            fprintf(stderr, "bench_gpu: --sizes %s: expected sizes 1..16384 separated by commas\n",
                    sizes);
            return 2;
        }
        failed |= bench_sgemm(n);
        fflush(stdout);
        p = *end == ',' ? end + 1 : end;
    }
    return bench_lenet(steps, data) || failed;
}
