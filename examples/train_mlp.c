/* A tutorial: train your own model with the samebits C API.
 *
 * The task: classify noisy points of the plane into 3 curved arms. The
 * model: Linear(2,64) -> Tanh -> Linear(64,3). Every number it prints is the
 * same on every machine, so its last line can be checked into a test.
 *
 *   make examples && build/examples/train_mlp
 */
#include <stdio.h>
#include "samebits.h"
#include "samebits/train.h"

#define POINTS 300 /* per class */
#define CLASSES 3

#define TRY(call)                                                               \
    do {                                                                        \
        if ((call) != SB_OK) {                                                  \
            fprintf(stderr, "%s failed: %s\n", #call, sb_last_error());         \
            return 1;                                                           \
        }                                                                       \
    } while (0)

/* Three curved arms (shaped with the correctly rounded tanh) plus noise from
 * Philox normals: samebits' own functions and random numbers, so the data
 * set is identical everywhere too. */
static void make_spirals(float *x, int64_t *y) {
    sb_rng rng = sb_rng_make(42, 0);
    float noise[2 * POINTS * CLASSES];
    sb_rng_normal(&rng, 0, 0.0f, 0.05f, noise, 2 * POINTS * CLASSES);
    for (int c = 0, i = 0; c < CLASSES; c++)
        for (int p = 0; p < POINTS; p++, i++) {
            float r = (float)p / POINTS;                           /* radius 0..1 */
            float t = 4.0f * r + 2.0943951f * (float)c;            /* position along arm */
            float s = sb_tanhf(t - 3.0f);
            x[2 * i] = r * s + noise[2 * i];
            x[2 * i + 1] = r * (1.0f - s * s) * (float)(c - 1) + noise[2 * i + 1];
            y[i] = c;
        }
}

int main(void) {
    /* 1. data: tensors wrap our own buffers (zero copy) */
    static float xs[2 * POINTS * CLASSES];
    static int64_t ys[POINTS * CLASSES];
    make_spirals(xs, ys);
    int64_t n = POINTS * CLASSES, xshape[2] = {n, 2};
    sb_tensor *x, *y;
    TRY(sb_tensor_wrap(&x, xs, SB_F32, 2, xshape, NULL));
    TRY(sb_tensor_wrap(&y, ys, SB_I64, 1, &n, NULL));

    /* 2. model: layers in a Sequential, PyTorch-default init from a seed */
    sb_module *layers[3], *model;
    TRY(sb_nn_linear(&layers[0], 2, 64, true));
    TRY(sb_nn_tanh(&layers[1]));
    TRY(sb_nn_linear(&layers[2], 64, CLASSES, true));
    TRY(sb_nn_sequential(&model, layers, 3));
    TRY(sb_module_init(model, 0));

    /* 3. optimizer and a graph that records each step */
    sb_adam_config adam = sb_adam_default_config(0.01);
    sb_optimizer *opt;
    sb_graph *g;
    TRY(sb_optimizer_adam(&opt, model, &adam));
    TRY(sb_graph_new(&g));

    /* 4. the loop: forward, loss, backward, step; the arena is reset each step */
    float loss_value = 0.0f;
    for (int step = 1; step <= 300; step++) {
        sb_graph_reset(g);
        sb_variable *in, *logits, *loss;
        TRY(sb_graph_input(g, x, &in));
        TRY(sb_module_forward(model, g, in, &logits));
        TRY(sb_ag_cross_entropy(g, logits, y, SB_LOSS_MEAN, 0.0f, &loss));
        TRY(sb_graph_backward(g, loss));
        TRY(sb_optimizer_step(opt));
        loss_value = sb_tensor_f32(loss->value)[0];
        if (step % 100 == 0) printf("step %d loss %.6f\n", step, (double)loss_value);
    }

    /* 5. the result, as a hash anyone can compare */
    unsigned char digest[32];
    char hex[65];
    TRY(sb_module_hash(model, digest));
    sb_hex_digest(digest, hex);
    printf("final loss %a, model %s\n", (double)loss_value, hex);

    sb_graph_free(g);
    sb_optimizer_free(opt);
    sb_module_free(model);
    sb_tensor_free(x);
    sb_tensor_free(y);
    return 0;
}
