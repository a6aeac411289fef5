/* conv2d on the shapes of ResNet-18 at CIFAR size (batch 32, 32x32 input:
 * the stem, then stages at 8x8, 4x4, 2x2 and 1x1 with 64..512 channels),
 * the deep stages with many channels over few pixels. For each layer and
 * pass (forward, input gradient, weight gradient) it prints the best time
 * of the public op (the fast path) at 1 and 2 threads and whether its bits
 * equal the reference kernel's (src/ref/, computed once, not timed).
 *
 *   bench_conv_deep [--quick] [--csv] [--only LAYER PASS]
 *
 * --csv prints "layer,pass,ms_1t,ms_2t,bits" lines for
 * bench/bench_conv_deep.py, which sets them beside PyTorch. --only runs the
 * one layer whose name starts with LAYER, pass 0 (forward), 1 (input
 * gradient) or 2 (weight gradient), once at one thread without checking:
 * a workload for callgrind's instruction counts, free of the wall-clock
 * noise of a shared machine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ref/ref_linalg.h"
#include "samebits.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float rand_float(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((int64_t)(rng >> 40) - (1 << 23)) / (float)(1 << 23);
}

static sb_tensor *tensor(int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t shape[4] = {a, b, c, d};
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, SB_F32, 4, shape) != SB_OK) {
        fprintf(stderr, "bench_conv_deep: %s\n", sb_last_error());
        exit(1);
    }
    for (int64_t i = 0; i < sb_tensor_numel(t); i++) ((float *)t->data)[i] = rand_float();
    return t;
}

static double min_time_s = 0.3;
static bool csv = false;

/* One layer: its tensors and geometry. */
typedef struct {
    sb_conv2d_geom g;
    sb_conv2d_params p;
    sb_tensor *x, *w, *y, *dy, *dx, *dw;
} layer_t;

enum { FWD, BWD_IN, BWD_W };

static void run(int pass, const layer_t *L) {
    sb_status s = SB_OK;
    if (pass == FWD) s = sb_conv2d_forward(L->x, L->w, NULL, &L->p, L->y);
    if (pass == BWD_IN) s = sb_conv2d_backward(L->dy, L->x, L->w, &L->p, L->dx, NULL, NULL);
    if (pass == BWD_W) s = sb_conv2d_backward(L->dy, L->x, L->w, &L->p, NULL, L->dw, NULL);
    if (s != SB_OK) {
        fprintf(stderr, "bench_conv_deep: %s\n", sb_last_error());
        exit(1);
    }
}

static double best_ms(int pass, const layer_t *L) {
    double best = 1e30, spent = 0;
    for (int r = 0; r < 200 && (r < 3 || spent < min_time_s * 1e3); r++) {
        double t0 = now_ms();
        run(pass, L);
        double t = now_ms() - t0;
        spent += t;
        if (t < best) best = t;
    }
    return best;
}

static bool all_same = true;
static const char *only_layer = NULL;
static int only_pass = -1;

static void layer(const char *name, int64_t c, int64_t h, int64_t o, int64_t k, int64_t stride,
                  int64_t pad) {
    if (only_layer && strncmp(name, only_layer, strlen(only_layer)) != 0) return;
    int64_t n = 32, oh = (h + 2 * pad - k) / stride + 1;
    layer_t L = {.g = {.n = n, .c_in = c, .h = h, .w = h, .c_out = o, .kh = k, .kw = k, .oh = oh,
                       .ow = oh, .stride_h = stride, .stride_w = stride, .pad_h = pad,
                       .pad_w = pad, .dilation_h = 1, .dilation_w = 1, .groups = 1},
                 .p = SB_CONV2D_PARAMS_DEFAULT};
    L.p.stride_h = L.p.stride_w = stride;
    L.p.pad_h = L.p.pad_w = pad;
    L.x = tensor(n, c, h, h), L.w = tensor(o, c, k, k), L.y = tensor(n, o, oh, oh);
    L.dy = tensor(n, o, oh, oh), L.dx = tensor(n, c, h, h), L.dw = tensor(o, c, k, k);
    static const char *passes[] = {"forward", "input grad", "weight grad"};
    for (int pass = FWD; pass <= BWD_W; pass++) {
        if (only_layer) {
            if (pass == only_pass) sb_set_num_threads(1), run(pass, &L);
            continue;
        }
        sb_tensor *out = pass == FWD ? L.y : pass == BWD_IN ? L.dx : L.dw;
        size_t bytes = (size_t)sb_tensor_numel(out) * sizeof(float);
        float *want = malloc(bytes);
        if (pass == FWD) sb_ref_conv2d_forward(&L.g, L.x->data, L.w->data, NULL, want);
        if (pass == BWD_IN) sb_ref_conv2d_backward_input(&L.g, L.dy->data, L.w->data, want);
        if (pass == BWD_W) sb_ref_conv2d_backward_weight(&L.g, L.dy->data, L.x->data, want);
        double t[2];
        bool same = true;
        for (int i = 0; i < 2; i++) {
            sb_set_num_threads(i + 1);
            memset(out->data, 0x55, bytes);
            t[i] = best_ms(pass, &L);
            same = same && memcmp(out->data, want, bytes) == 0;
        }
        all_same = all_same && same;
        const char *bits = same ? "identical" : "DIFFERENT";
        if (csv)
            printf("%s,%s,%.4f,%.4f,%s\n", name, passes[pass], t[0], t[1], bits);
        else
            printf("%-28s %-12s %9.3f %9.3f  %s\n", name, passes[pass], t[0], t[1], bits);
        fflush(stdout);
        free(want);
    }
    sb_tensor *list[] = {L.x, L.w, L.y, L.dy, L.dx, L.dw};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) min_time_s = 0.05;
        if (strcmp(argv[i], "--csv") == 0) csv = true;
        if (strcmp(argv[i], "--only") == 0 && i + 2 < argc)
            only_layer = argv[i + 1], only_pass = atoi(argv[i + 2]), i += 2;
    }
    int threads0 = sb_num_threads();
    if (!csv && !only_layer) {
        printf("conv2d, ResNet-18 at 32x32, batch 32, isa %s; best ms of the fast op\n",
               sb_isa_name(sb_isa()));
        printf("%-28s %-12s %9s %9s  %s\n", "layer (c->o kxk /stride @hxw)", "pass", "1 thread",
               "2 threads", "bits vs reference");
    }
    /* name, c_in, h (= w), c_out, kernel, stride, pad */
    layer("stem 3->64 7x7/2 @32", 3, 32, 64, 7, 2, 3);
    layer("64->64 3x3 @8", 64, 8, 64, 3, 1, 1);
    layer("64->128 3x3/2 @8", 64, 8, 128, 3, 2, 1);
    layer("64->128 1x1/2 @8", 64, 8, 128, 1, 2, 0);
    layer("128->128 3x3 @4", 128, 4, 128, 3, 1, 1);
    layer("128->256 3x3/2 @4", 128, 4, 256, 3, 2, 1);
    layer("256->256 3x3 @2", 256, 2, 256, 3, 1, 1);
    layer("256->512 3x3/2 @2", 256, 2, 512, 3, 2, 1);
    layer("256->512 1x1/2 @2", 256, 2, 512, 1, 2, 0);
    layer("512->512 3x3 @1", 512, 1, 512, 3, 1, 1);
    sb_set_num_threads(threads0);
    return all_same ? 0 : 1;
}
