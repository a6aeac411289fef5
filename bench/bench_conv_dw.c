/* Depthwise conv2d on the zoo's shapes, batch 8: MobileNet-v2 / v3,
 * EfficientNet and MnasNet's 3x3 (stride 1 and 2) at ImageNet size, ConvNeXt's
 * 7x7 (padding 3), and the same layers at the 64x64 input of the zoo's tests.
 * For each layer and pass (forward, input gradient, weight gradient) it
 * prints the best time of the public op (the fast path) at 1 and 2 threads
 * and whether its bits equal the reference kernel's (src/ref/, computed
 * once, not timed).
 *
 *   bench_conv_dw [--quick] [--csv]
 *
 * --csv prints "layer,pass,ms_1t,ms_2t,bits" lines for bench/bench_conv_dw.py,
 * which sets them beside PyTorch. Layer names encode the geometry:
 * "dw C KxK[/S] @H" (C channels, groups = C, padding K//2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_common.h"
#include "ref/ref_linalg.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float rand_float(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((int64_t)(rng >> 40) - (1 << 23)) / (float)(1 << 23);
}

static sb_tensor *tensor(int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t shape[4] = {a, b, c, d};
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, SB_F32, 4, shape) != SB_OK) exit(bench_fail("bench_conv_dw", "tensor"));
    for (int64_t i = 0; i < sb_tensor_numel(t); i++) ((float *)t->data)[i] = rand_float();
    return t;
}

static double min_time_s = 0.3;
static bool csv = false, all_same = true;

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
    if (s != SB_OK) exit(bench_fail("bench_conv_dw", "conv2d"));
}

static double best_ms(int pass, const layer_t *L) {
    double best = 1e30, spent = 0;
    for (int r = 0; r < 200 && (r < 3 || spent < min_time_s * 1e3); r++) {
        double t0 = bench_now_ms();
        run(pass, L);
        double t = bench_now_ms() - t0;
        spent += t;
        if (t < best) best = t;
    }
    return best;
}

/* c channels at h x h, a k x k depthwise kernel, stride, padding k/2 */
static void layer(const char *name, int64_t c, int64_t h, int64_t k, int64_t stride) {
    int64_t n = 8, pad = k / 2, oh = (h + 2 * pad - k) / stride + 1;
    layer_t L = {.g = {.n = n, .c_in = c, .h = h, .w = h, .c_out = c, .kh = k, .kw = k, .oh = oh,
                       .ow = oh, .stride_h = stride, .stride_w = stride, .pad_h = pad,
                       .pad_w = pad, .dilation_h = 1, .dilation_w = 1, .groups = c},
                 .p = SB_CONV2D_PARAMS_DEFAULT};
    L.p.stride_h = L.p.stride_w = stride;
    L.p.pad_h = L.p.pad_w = pad;
    L.p.groups = c;
    L.x = tensor(n, c, h, h), L.w = tensor(c, 1, k, k), L.y = tensor(n, c, oh, oh);
    L.dy = tensor(n, c, oh, oh), L.dx = tensor(n, c, h, h), L.dw = tensor(c, 1, k, k);
    static const char *passes[] = {"forward", "input grad", "weight grad"};
    for (int pass = FWD; pass <= BWD_W; pass++) {
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
            printf("%-22s %-12s %9.3f %9.3f  %s\n", name, passes[pass], t[0], t[1], bits);
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
    }
    int threads0 = sb_num_threads();
    if (!csv) {
        printf("depthwise conv2d, batch 8, isa %s; best ms of the fast op\n", sb_isa_name(sb_isa()));
        printf("%-22s %-12s %9s %9s  %s\n", "layer (c kxk /stride @hxw)", "pass", "1 thread",
               "2 threads", "bits vs reference");
    }
    /* ImageNet size: MobileNet-v2's first, a stride-2, an expanded, and
     * ConvNeXt-T's first 7x7 */
    layer("dw 32 3x3 @112", 32, 112, 3, 1);
    layer("dw 96 3x3/2 @56", 96, 56, 3, 2);
    layer("dw 96 3x3 @56", 96, 56, 3, 1);
    layer("dw 144 3x3 @56", 144, 56, 3, 1);
    layer("dw 96 7x7 @56", 96, 56, 7, 1);
    /* the zoo's tests at 64x64 input */
    layer("dw 32 3x3 @32", 32, 32, 3, 1);
    layer("dw 144 3x3/2 @16", 144, 16, 3, 2);
    layer("dw 576 3x3 @4", 576, 4, 3, 1);
    layer("dw 240 5x5 @4", 240, 4, 5, 1);
    layer("dw 96 7x7 @16", 96, 16, 7, 1);
    layer("dw 768 7x7 @2", 768, 2, 7, 1);
    sb_set_num_threads(threads0);
    return all_same ? 0 : 1;
}
