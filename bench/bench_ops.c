/* Reference vs fast non-GEMM ops on LeNet-5 training sizes: the canonical
 * sum (1M floats), ReLU forward/backward (100x6x28x28), cross-entropy
 * forward+backward (100x10) and Adam (61706 parameters), at 1 and 2
 * threads. Prints the median time of each, the speedup, and whether the
 * two results are bit-identical.
 *
 *   bench_ops [--reps R]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/canonical_sum.h"
#include "cpu/ops_internal.h"
#include "ref/ref_loss.h"
#include "ref/ref_optim.h"
#include "ref/ref_pointwise.h"
#include "samebits.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int reps = 21;

typedef void (*bench_fn)(void *ctx);

static double median_ms(bench_fn fn, void *ctx) {
    double t[101];
    int n = reps < 101 ? reps : 101;
    fn(ctx); /* warm-up */
    for (int i = 0; i < n; i++) {
        double t0 = now_ms();
        fn(ctx);
        t[i] = now_ms() - t0;
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    return t[n / 2];
}

static float *buf(int64_t n) {
    float *p = malloc((size_t)n * sizeof *p);
    if (!p) { fprintf(stderr, "bench_ops: out of memory\n"); exit(1); }
    return p;
}

static uint64_t seed = 88172645463325252ull;
static float rnd(void) {
    seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
    return (float)(seed >> 40) * 0x1p-24f * 2.0f - 1.0f;
}

static sb_tensor view1(float *d, int64_t n) {
    sb_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = SB_F32; t.ndim = 1; t.shape[0] = n; t.strides[0] = 1; t.data = d;
    return t;
}

/* ---- the cases ---- */

enum { SUM_N = 1 << 20, RELU_N = 100 * 6 * 28 * 28, CE_N = 100, CE_C = 10, ADAM_N = 61706 };

static float *xs, *ys, *dys, *outs, *outs2, sum_result;
static int64_t targets[CE_N];

static void sum_ref(void *c) { (void)c; /* the scalar streaming accumulator, one element at a time */
    sb_sum_acc acc; sb_sum_init(&acc);
    for (int64_t i = 0; i < SUM_N; i++) sb_sum_add(&acc, xs[i]);
    sum_result = sb_sum_result(&acc);
}
static void sum_fast(void *c) { (void)c; (void)sb_ssum(SUM_N, xs, 1, &sum_result); }

static void relu_f_ref(void *c) { (void)c; sb_ref_relu_forward(RELU_N, xs, outs); }
static void relu_f_fast(void *c) {
    (void)c;
    sb_tensor x = view1(xs, RELU_N), y = view1(outs, RELU_N);
    sb_relu_forward(&x, &y);
}
static void relu_b_ref(void *c) { (void)c; sb_ref_relu_backward(RELU_N, xs, dys, outs); }
static void relu_b_fast(void *c) {
    (void)c;
    sb_tensor x = view1(xs, RELU_N), dy = view1(dys, RELU_N), dx = view1(outs, RELU_N);
    sb_relu_backward(&x, &dy, &dx);
}

static float ce_loss;
static void ce_ref(void *c) {
    (void)c;
    float one = 1.0f;
    sb_ref_cross_entropy_forward(xs, targets, CE_N, CE_C, SB_LOSS_MEAN, 0.0f, -100, &ce_loss);
    sb_ref_cross_entropy_backward(xs, targets, CE_N, CE_C, SB_LOSS_MEAN, 0.0f, -100, &one, outs);
}
static void ce_fast(void *c) {
    (void)c;
    float one = 1.0f;
    int64_t shape[2] = {CE_N, CE_C};
    sb_tensor x = view1(xs, CE_N * CE_C), dx = view1(outs, CE_N * CE_C);
    x.ndim = dx.ndim = 2;
    x.shape[0] = dx.shape[0] = shape[0]; x.shape[1] = dx.shape[1] = shape[1];
    x.strides[0] = dx.strides[0] = CE_C; x.strides[1] = dx.strides[1] = 1;
    sb_tensor t = {.dtype = SB_I64, .ndim = 1, .shape = {CE_N}, .strides = {1}, .data = targets};
    sb_tensor loss = view1(&ce_loss, 1), dl = view1(&one, 1);
    loss.ndim = dl.ndim = 0;
    sb_cross_entropy_forward(&x, &t, SB_LOSS_MEAN, 0.0f, -100, &loss);
    sb_cross_entropy_backward(&x, &t, SB_LOSS_MEAN, 0.0f, -100, &dl, &dx);
}

static float *param, *m1, *v1;
static sb_adam_config adam_cfg;
static sb_adam_factors adam_f;
static void adam_ref(void *c) {
    (void)c;
    sb_ref_adam_update(&adam_f, false, ADAM_N, param, dys, m1, v1, NULL);
}
static void adam_fast(void *c) {
    (void)c;
    sb_adam_step(&adam_cfg, 2, ADAM_N, param, dys, m1, v1, NULL);
}

/* Runs ref then fast from the same state; compares the results. */
typedef struct bcase {
    const char *name;
    bench_fn ref, fast;
    void (*reset)(void);
    float *result; /* buffer compared */
    int64_t n;
} bcase;

static float *param0, *m0, *v0;
static void adam_reset(void) {
    memcpy(param, param0, ADAM_N * sizeof *param);
    memcpy(m1, m0, ADAM_N * sizeof *m1);
    memcpy(v1, v0, ADAM_N * sizeof *v1);
}

int main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i += 2)
        if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    if (reps < 1) reps = 21;
    xs = buf(SUM_N); ys = buf(SUM_N); dys = buf(SUM_N); outs = buf(SUM_N); outs2 = buf(SUM_N);
    for (int64_t i = 0; i < SUM_N; i++) { xs[i] = rnd() * 8.0f; dys[i] = rnd(); }
    for (int i = 0; i < CE_N; i++) targets[i] = i % CE_C;
    param = buf(ADAM_N); m1 = buf(ADAM_N); v1 = buf(ADAM_N);
    param0 = buf(ADAM_N); m0 = buf(ADAM_N); v0 = buf(ADAM_N);
    for (int i = 0; i < ADAM_N; i++) { param0[i] = rnd(); m0[i] = rnd() * 1e-2f; v0[i] = rnd() * rnd() * 1e-4f; }
    adam_cfg = sb_adam_default_config(1e-3);
    sb_adam_factors_for(&adam_cfg, 2, &adam_f);

    const bcase cases[] = {
        {"ssum 1M", sum_ref, sum_fast, NULL, &sum_result, 1},
        {"relu fwd 100x6x28x28", relu_f_ref, relu_f_fast, NULL, outs, RELU_N},
        {"relu bwd 100x6x28x28", relu_b_ref, relu_b_fast, NULL, outs, RELU_N},
        {"CE fwd+bwd 100x10", ce_ref, ce_fast, NULL, outs, CE_N * CE_C},
        {"adam 61706", adam_ref, adam_fast, adam_reset, param, ADAM_N},
    };
    printf("isa %s; median of %d runs\n", sb_isa_name(sb_isa()), reps);
    printf("%-24s %7s %10s %10s %8s  %s\n", "op", "threads", "ref ms", "fast ms", "speedup", "bits");
    for (int threads = 1; threads <= 2; threads++) {
        sb_set_num_threads(threads);
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            const bcase *c = &cases[k];
            /* bit check on one call each from the same starting state */
            if (c->reset) c->reset();
            c->ref(NULL);
            memcpy(outs2, c->result, (size_t)c->n * sizeof(float));
            float ce_ref_loss = ce_loss;
            if (c->reset) c->reset();
            c->fast(NULL);
            bool same = memcmp(outs2, c->result, (size_t)c->n * sizeof(float)) == 0 &&
                        (c->ref != ce_ref || memcmp(&ce_ref_loss, &ce_loss, sizeof ce_loss) == 0);
            /* timing (Adam keeps stepping from its state: same work each call) */
            if (c->reset) c->reset();
            double tr = median_ms(c->ref, NULL);
            if (c->reset) c->reset();
            double tf = median_ms(c->fast, NULL);
            printf("%-24s %7d %10.4f %10.4f %7.2fx  %s\n", c->name, threads, tr, tf, tr / tf,
                   same ? "bits identical" : "BITS DIFFER");
        }
    }
    return 0;
}
