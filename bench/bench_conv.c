/* Reference vs fast conv2d and max pooling on LeNet-5's training shapes at
 * batch 100: conv1 (1->6, 5x5, pad 2, 28x28), conv2 (6->16, 5x5, 14x14) and
 * the 2x2/2 max pools after them. For each pass it prints the best time of
 * the reference kernel (src/ref/) and of the public op (the fast path) at 1
 * and 2 threads, the speedups, and whether the bits are identical.
 *
 *   bench_conv [--quick]
 */
#include <math.h>
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

static sb_tensor *tensor(sb_dtype dt, int nd, int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t shape[4] = {a, b, c, d};
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, dt, nd, shape) != SB_OK) {
        fprintf(stderr, "bench_conv: %s\n", sb_last_error());
        exit(1);
    }
    if (dt == SB_F32)
        for (int64_t i = 0; i < sb_tensor_numel(t); i++) ((float *)t->data)[i] = rand_float();
    return t;
}

static double min_time_s = 0.3;

/* The workload of one row: which pass, on which layer. */
typedef struct {
    const sb_conv2d_geom *g;
    const sb_pool2d_geom *pg;
    sb_tensor *x, *w, *b, *y, *dy, *dx, *dw, *db, *idx;
    const sb_conv2d_params *p;
    const sb_pool2d_params *pp;
} work;

enum { FWD, BWD_IN, BWD_W, BWD_B, POOL_FWD, POOL_BWD };

static void run(int pass, const work *k, bool fast) {
    sb_status s = SB_OK;
    const sb_conv2d_geom *g = k->g;
    float *x = k->x->data, *w = k->w->data, *dy = k->dy->data;
    switch (pass) {
    case FWD:
        if (fast) s = sb_conv2d_forward(k->x, k->w, k->b, k->p, k->y);
        else sb_ref_conv2d_forward(g, x, w, k->b->data, k->y->data);
        break;
    case BWD_IN:
        if (fast) s = sb_conv2d_backward(k->dy, k->x, k->w, k->p, k->dx, NULL, NULL);
        else sb_ref_conv2d_backward_input(g, dy, w, k->dx->data);
        break;
    case BWD_W:
        if (fast) s = sb_conv2d_backward(k->dy, k->x, k->w, k->p, NULL, k->dw, NULL);
        else sb_ref_conv2d_backward_weight(g, dy, x, k->dw->data);
        break;
    case BWD_B:
        if (fast) s = sb_conv2d_backward(k->dy, k->x, k->w, k->p, NULL, NULL, k->db);
        else sb_ref_conv2d_backward_bias(g, dy, k->db->data);
        break;
    case POOL_FWD:
        if (fast) s = sb_max_pool2d_forward(k->y, k->pp, k->dy, k->idx);
        else sb_ref_max_pool2d_forward(k->pg, k->y->data, k->dy->data, k->idx->data);
        break;
    case POOL_BWD:
        if (fast) s = sb_max_pool2d_backward(k->dy, k->idx, k->pp, k->y);
        else sb_ref_max_pool2d_backward(k->pg, k->dy->data, k->idx->data, k->y->data);
        break;
    }
    if (s != SB_OK) {
        fprintf(stderr, "bench_conv: %s\n", sb_last_error());
        exit(1);
    }
}

static sb_tensor *output_of(int pass, const work *k) {
    switch (pass) {
    case FWD: return k->y;
    case BWD_IN: return k->dx;
    case BWD_W: return k->dw;
    case BWD_B: return k->db;
    case POOL_FWD: return k->dy;
    default: return k->y;
    }
}

static double best_ms(int pass, const work *k, bool fast) {
    double best = 1e30, spent = 0;
    for (int r = 0; r < 200 && (r < 3 || spent < min_time_s * 1e3); r++) {
        double t0 = now_ms();
        run(pass, k, fast);
        double t = now_ms() - t0;
        spent += t;
        if (t < best) best = t;
    }
    return best;
}

static void row(const char *name, int pass, const work *k) {
    sb_tensor *out = output_of(pass, k);
    size_t bytes = (size_t)sb_tensor_numel(out) * sb_dtype_size(out->dtype);
    void *want = malloc(bytes);
    double ref = best_ms(pass, k, false);
    memcpy(want, out->data, bytes);
    double t[2];
    bool same = true;
    for (int i = 0; i < 2; i++) {
        sb_set_num_threads(i + 1);
        memset(out->data, 0x55, bytes);
        t[i] = best_ms(pass, k, true);
        same = same && memcmp(out->data, want, bytes) == 0;
    }
    printf("%-24s %9.3f %9.3f %9.3f %7.1fx %7.1fx  %s\n", name, ref, t[0], t[1], ref / t[0],
           ref / t[1], same ? "identical" : "DIFFERENT");
    free(want);
}

static void layer(const char *name, int64_t n, int64_t c, int64_t h, int64_t o, int64_t pad) {
    sb_conv2d_params p = SB_CONV2D_PARAMS_DEFAULT;
    p.pad_h = p.pad_w = pad;
    int64_t oh = h + 2 * pad - 4;
    sb_conv2d_geom g = {.n = n, .c_in = c, .h = h, .w = h, .c_out = o, .kh = 5, .kw = 5, .oh = oh,
                        .ow = oh, .stride_h = 1, .stride_w = 1, .pad_h = pad, .pad_w = pad,
                        .dilation_h = 1, .dilation_w = 1, .groups = 1};
    sb_pool2d_params pp = SB_POOL2D_PARAMS(2, 2);
    sb_pool2d_geom pg = {.planes = n * o, .h = oh, .w = oh, .oh = oh / 2, .ow = oh / 2, .kh = 2,
                         .kw = 2, .stride_h = 2, .stride_w = 2};
    work k = {&g, &pg, tensor(SB_F32, 4, n, c, h, h), tensor(SB_F32, 4, o, c, 5, 5),
              tensor(SB_F32, 1, o, 0, 0, 0), tensor(SB_F32, 4, n, o, oh, oh),
              tensor(SB_F32, 4, n, o, oh, oh), tensor(SB_F32, 4, n, c, h, h),
              tensor(SB_F32, 4, o, c, 5, 5), tensor(SB_F32, 1, o, 0, 0, 0), NULL, &p, &pp};
    char buf[64];
    static const char *passes[] = {"forward", "backward input", "backward weight",
                                   "backward bias"};
    for (int pass = FWD; pass <= BWD_B; pass++) {
        snprintf(buf, sizeof buf, "%s %s", name, passes[pass]);
        row(buf, pass, &k);
    }
    /* Max pool on the conv output: y -> (n, o, oh/2, oh/2), pooled into a
     * view-sized dy/idx pair. */
    sb_tensor *py = tensor(SB_F32, 4, n, o, oh / 2, oh / 2), *pidx = tensor(SB_I64, 4, n, o, oh / 2, oh / 2);
    work kp = k;
    kp.dy = py;
    kp.idx = pidx;
    snprintf(buf, sizeof buf, "%s maxpool fwd", name);
    row(buf, POOL_FWD, &kp);
    snprintf(buf, sizeof buf, "%s maxpool bwd", name);
    row(buf, POOL_BWD, &kp);
    sb_tensor *list[] = {k.x, k.w, k.b, k.y, k.dy, k.dx, k.dw, k.db, py, pidx};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--quick") == 0) min_time_s = 0.05;
    int threads0 = sb_num_threads();
    printf("conv2d / max pool, LeNet-5 shapes, batch 100, isa %s; best ms\n", sb_isa_name(sb_isa()));
    printf("%-24s %9s %9s %9s %8s %8s  %s\n", "", "ref", "fast 1t", "fast 2t", "x 1t", "x 2t",
           "bits");
    layer("conv1", 100, 1, 28, 6, 2);
    layer("conv2", 100, 6, 14, 16, 0);
    sb_set_num_threads(threads0);
    return 0;
}
