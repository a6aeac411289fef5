/* bench/bench_conv_layers.h - what the conv2d benchmarks share
 * (bench_conv_deep: ResNet-18's deep stages; bench_conv_dw: depthwise
 * layers): a layer's random tensors, the best time of each pass of the
 * public op (forward, input gradient, weight gradient) at 1 and 2 threads,
 * and whether its bits equal the reference kernel's (src/ref/, computed
 * once, not timed). Output is a table, or "layer,pass,ms_1t,ms_2t,bits"
 * lines with --csv for the .py scripts that set them beside PyTorch. */
#ifndef SB_BENCH_CONV_LAYERS_H
#define SB_BENCH_CONV_LAYERS_H

#include <stdbool.h>
#include <string.h>
#include "bench_common.h"
#include "ref/ref_linalg.h"

/* A square layer: x is (n, c_in, h, h), w is (c_out, c_in/groups, k, k). */
typedef struct {
    const char *name;
    int64_t n, c_in, h, c_out, k, stride, pad, groups;
} bench_conv_layer;

/* How a run measures and prints. only_layer (a name prefix) with only_pass
 * runs that one pass once at one thread without checking: a workload for
 * callgrind's instruction counts. */
typedef struct {
    const char *prog;
    int name_width;
    double min_time_s;
    bool csv;
    const char *only_layer;
    int only_pass;
    bool all_same; /* cleared when a result's bits differ from the reference */
} bench_conv_opts;

enum { BENCH_CONV_FWD, BENCH_CONV_BWD_IN, BENCH_CONV_BWD_W };

typedef struct {
    sb_conv2d_params p;
    sb_tensor *x, *w, *y, *dy, *dx, *dw;
} bench_conv_tensors;

static uint64_t bench_conv_rng = 0x9e3779b97f4a7c15ull;

static inline float bench_conv_rand(void) {
    uint64_t *r = &bench_conv_rng;
    *r ^= *r << 13, *r ^= *r >> 7, *r ^= *r << 17;
    return (float)((int64_t)(*r >> 40) - (1 << 23)) / (float)(1 << 23);
}

static inline sb_tensor *bench_conv_tensor(const char *prog, int64_t a, int64_t b, int64_t c,
                                           int64_t d) {
    int64_t shape[4] = {a, b, c, d};
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, SB_F32, 4, shape) != SB_OK) exit(bench_fail(prog, "tensor"));
    for (int64_t i = 0; i < sb_tensor_numel(t); i++) ((float *)t->data)[i] = bench_conv_rand();
    return t;
}

static inline void bench_conv_pass(const char *prog, int pass, const bench_conv_tensors *T) {
    sb_status s = SB_OK;
    if (pass == BENCH_CONV_FWD) s = sb_conv2d_forward(T->x, T->w, NULL, &T->p, T->y);
    if (pass == BENCH_CONV_BWD_IN)
        s = sb_conv2d_backward(T->dy, T->x, T->w, &T->p, T->dx, NULL, NULL);
    if (pass == BENCH_CONV_BWD_W)
        s = sb_conv2d_backward(T->dy, T->x, T->w, &T->p, NULL, T->dw, NULL);
    if (s != SB_OK) exit(bench_fail(prog, "conv2d"));
}

/* The best of at least 3 and at most 200 runs, stopping once min_time_s is spent. */
static inline double bench_conv_best_ms(const bench_conv_opts *o, int pass,
                                        const bench_conv_tensors *T) {
    double best = 1e30, spent = 0;
    for (int r = 0; r < 200 && (r < 3 || spent < o->min_time_s * 1e3); r++) {
        double t0 = bench_now_ms();
        bench_conv_pass(o->prog, pass, T);
        double t = bench_now_ms() - t0;
        spent += t;
        if (t < best) best = t;
    }
    return best;
}

static inline void bench_conv_measure(bench_conv_opts *o, const bench_conv_layer *l) {
    if (o->only_layer && strncmp(l->name, o->only_layer, strlen(o->only_layer)) != 0) return;
    int64_t n = l->n, c = l->c_in, h = l->h, oc = l->c_out, k = l->k;
    int64_t oh = (h + 2 * l->pad - k) / l->stride + 1;
    sb_conv2d_geom g = {.n = n, .c_in = c, .h = h, .w = h, .c_out = oc, .kh = k, .kw = k,
                        .oh = oh, .ow = oh, .stride_h = l->stride, .stride_w = l->stride,
                        .pad_h = l->pad, .pad_w = l->pad, .dilation_h = 1, .dilation_w = 1,
                        .groups = l->groups};
    bench_conv_tensors T = {.p = SB_CONV2D_PARAMS_DEFAULT};
    T.p.stride_h = T.p.stride_w = l->stride;
    T.p.pad_h = T.p.pad_w = l->pad;
    T.p.groups = l->groups;
    int64_t icg = c / l->groups;
    T.x = bench_conv_tensor(o->prog, n, c, h, h);
    T.w = bench_conv_tensor(o->prog, oc, icg, k, k);
    T.y = bench_conv_tensor(o->prog, n, oc, oh, oh);
    T.dy = bench_conv_tensor(o->prog, n, oc, oh, oh);
    T.dx = bench_conv_tensor(o->prog, n, c, h, h);
    T.dw = bench_conv_tensor(o->prog, oc, icg, k, k);
    static const char *passes[] = {"forward", "input grad", "weight grad"};
    for (int pass = BENCH_CONV_FWD; pass <= BENCH_CONV_BWD_W; pass++) {
        if (o->only_layer) {
            if (pass == o->only_pass) sb_set_num_threads(1), bench_conv_pass(o->prog, pass, &T);
            continue;
        }
        sb_tensor *out = pass == BENCH_CONV_FWD ? T.y : pass == BENCH_CONV_BWD_IN ? T.dx : T.dw;
        size_t bytes = (size_t)sb_tensor_numel(out) * sizeof(float);
        float *want = malloc(bytes);
        if (!want) exit(bench_fail(o->prog, "out of memory"));
        if (pass == BENCH_CONV_FWD) sb_ref_conv2d_forward(&g, T.x->data, T.w->data, NULL, want);
        if (pass == BENCH_CONV_BWD_IN)
            sb_ref_conv2d_backward_input(&g, T.dy->data, T.w->data, want);
        if (pass == BENCH_CONV_BWD_W)
            sb_ref_conv2d_backward_weight(&g, T.dy->data, T.x->data, want);
        double t[2];
        bool same = true;
        for (int i = 0; i < 2; i++) {
            sb_set_num_threads(i + 1);
            memset(out->data, 0x55, bytes);
            t[i] = bench_conv_best_ms(o, pass, &T);
            same = same && memcmp(out->data, want, bytes) == 0;
        }
        o->all_same = o->all_same && same;
        const char *bits = same ? "identical" : "DIFFERENT";
        if (o->csv)
            printf("%s,%s,%.4f,%.4f,%s\n", l->name, passes[pass], t[0], t[1], bits);
        else
            printf("%-*s %-12s %9.3f %9.3f  %s\n", o->name_width, l->name, passes[pass], t[0],
                   t[1], bits);
        fflush(stdout);
        free(want);
    }
    sb_tensor *list[] = {T.x, T.w, T.y, T.dy, T.dx, T.dw};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

/* Reads [--quick] [--csv] [--only LAYER PASS] into o. */
static inline void bench_conv_args(bench_conv_opts *o, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) o->min_time_s = 0.05;
        if (strcmp(argv[i], "--csv") == 0) o->csv = true;
        if (strcmp(argv[i], "--only") == 0 && i + 2 < argc)
            o->only_layer = argv[i + 1], o->only_pass = atoi(argv[i + 2]), i += 2;
    }
}

#endif
