/* tests/support/lenet_compare.h - LeNet-5 trained for a few steps on the
 * CPU and on another device through the ordinary tensor API, autograd,
 * modules and optimizers; the losses of every step and the parameters
 * before and after must be equal bit for bit. Used by the device tests
 * (mirror, OpenCL, CUDA), so each device is held to the same comparison.
 *
 *     sb_test_lenet_case c = sb_test_lenet_default(SB_DEVICE_OPENCL);
 *     c.loss = SB_TEST_LENET_MSE;
 *     sb_test_lenet_compare(&c);
 *
 * Header-only on purpose: its checks count in the including test's harness
 * (tests/harness.h keeps the counters per binary, and must be included
 * first), and the CUDA tests, compiled by nvcc as C++, use it unchanged
 * (so: no designated initializers, no implicit void * conversions). */
#ifndef SB_TEST_LENET_COMPARE_H
#define SB_TEST_LENET_COMPARE_H

#include <math.h>
#include <string.h>
#include "samebits.h"
#include "samebits/train.h"

#ifndef SAMEBITS_TEST_HARNESS_H
#error "include harness.h before support/lenet_compare.h"
#endif

typedef enum sb_test_lenet_loss {
    SB_TEST_LENET_CROSS_ENTROPY = 0, /* integer labels: the step of `samebits train` */
    SB_TEST_LENET_MSE,               /* one-hot targets */
} sb_test_lenet_loss;

typedef struct sb_test_lenet_case {
    sb_device device;        /* compared with SB_DEVICE_CPU */
    sb_test_lenet_loss loss;
    int adam;                /* Adam (lr 1e-2) or SGD (lr 0.1, momentum 0.9) */
    int steps;               /* at most 8 */
    int batch;
    uint64_t init_seed;      /* sb_module_init's seed */
} sb_test_lenet_case;

static inline sb_test_lenet_case sb_test_lenet_default(sb_device device) {
    sb_test_lenet_case c;
    c.device = device;
    c.loss = SB_TEST_LENET_CROSS_ENTROPY;
    c.adam = 1;
    c.steps = 3;
    c.batch = 8;
    c.init_seed = 5;
    return c;
}

/* One training step of `model` on a batch copied to `device`; the loss
 * read back to the host (NaN when a call failed, which CHECK_OK reported). */
static inline float sb_test_lenet_step(const sb_test_lenet_case *c, sb_module *model,
                                       sb_optimizer *opt, sb_graph *g, const sb_tensor *images,
                                       const sb_tensor *target, sb_device device) {
    sb_tensor *x = NULL, *t = NULL, *host = NULL;
    sb_variable *in = NULL, *out = NULL, *loss = NULL;
    float value = NAN;
    CHECK_OK(sb_tensor_to(&x, images, device));
    CHECK_OK(sb_tensor_to(&t, target, device));
    CHECK_OK(sb_graph_input(g, x, &in));
    CHECK_OK(sb_module_forward(model, g, in, &out));
    if (c->loss == SB_TEST_LENET_MSE)
        CHECK_OK(sb_ag_mse(g, out, t, SB_LOSS_MEAN, &loss));
    else
        CHECK_OK(sb_ag_cross_entropy(g, out, t, SB_LOSS_MEAN, 0.0f, &loss));
    CHECK_OK(sb_graph_backward(g, loss));
    CHECK_OK(sb_optimizer_step(opt));
    if (loss) CHECK_OK(sb_tensor_to(&host, loss->value, SB_DEVICE_CPU));
    if (host) value = sb_tensor_f32(host)[0];
    sb_tensor_free(host);
    sb_graph_reset(g);
    sb_tensor_free(x);
    sb_tensor_free(t);
    return value;
}

static inline sb_status sb_test_lenet_optimizer(const sb_test_lenet_case *c, sb_module *m,
                                                sb_optimizer **out) {
    if (c->adam) {
        sb_adam_config cfg = sb_adam_default_config(1e-2);
        return sb_optimizer_adam(out, m, &cfg);
    }
    sb_sgd_config cfg = sb_sgd_default_config(0.1);
    cfg.momentum = 0.9;
    return sb_optimizer_sgd(out, m, &cfg);
}

/* Images in [0, 1] and targets (labels, or one-hot rows) from a fixed
 * pattern: every device test sees the same batch. */
static inline void sb_test_lenet_batch(const sb_test_lenet_case *c, sb_tensor **images,
                                       sb_tensor **target) {
    int64_t si[4] = {c->batch, 1, 28, 28}, sl[1] = {c->batch}, sm[2] = {c->batch, 10};
    CHECK_OK(sb_tensor_new(images, SB_F32, 4, si));
    if (c->loss == SB_TEST_LENET_MSE)
        CHECK_OK(sb_tensor_new(target, SB_F32, 2, sm));
    else
        CHECK_OK(sb_tensor_new(target, SB_I64, 1, sl));
    if (!*images || !*target) return;
    for (int64_t i = 0; i < sb_tensor_numel(*images); i++)
        sb_tensor_f32(*images)[i] = (float)((i * 7919) % 256) / 255.0f;
    for (int r = 0; r < c->batch; r++) {
        int label = (r * 3 + 1) % 10;
        if (c->loss == SB_TEST_LENET_MSE)
            sb_tensor_f32(*target)[r * 10 + label] = 1.0f;
        else
            ((int64_t *)(*target)->data)[r] = label;
    }
}

/* Trains a CPU and a c->device LeNet-5 side by side: equal initial
 * parameters (initialised on each device), equal losses at every step,
 * equal parameters at the end. */
static inline void sb_test_lenet_compare(const sb_test_lenet_case *c) {
    const char *what = c->loss == SB_TEST_LENET_MSE ? "mse" : "cross-entropy";
    const char *opt = c->adam ? "adam" : "sgd";
    sb_module *cpu = NULL, *dev = NULL;
    CHECK_OK(sb_model_lenet5(&cpu));
    CHECK_OK(sb_model_lenet5(&dev));
    if (!cpu || !dev) return;
    CHECK_OK(sb_module_init(cpu, c->init_seed));
    CHECK_OK(sb_module_to(dev, c->device));
    CHECK_OK(sb_module_init(dev, c->init_seed)); /* drawn on the host, copied to the device */
    unsigned char hc[32], hd[32];
    CHECK_OK(sb_module_hash(cpu, hc));
    CHECK_OK(sb_module_hash(dev, hd));
    CHECK(memcmp(hc, hd, 32) == 0, "LeNet-5 (%s, %s): initial parameters differ between the "
          "devices", what, opt);
    sb_tensor *images = NULL, *target = NULL;
    sb_test_lenet_batch(c, &images, &target);
    sb_optimizer *oc = NULL, *od = NULL;
    CHECK_OK(sb_test_lenet_optimizer(c, cpu, &oc));
    CHECK_OK(sb_test_lenet_optimizer(c, dev, &od));
    sb_graph *gc = NULL, *gd = NULL;
    CHECK_OK(sb_graph_new(&gc));
    CHECK_OK(sb_graph_new(&gd));
    for (int step = 0; images && target && oc && od && gc && gd && step < c->steps; step++) {
        float lc = sb_test_lenet_step(c, cpu, oc, gc, images, target, SB_DEVICE_CPU);
        float ld = sb_test_lenet_step(c, dev, od, gd, images, target, c->device);
        CHECK_BITS(ld, lc, "LeNet-5 (%s, %s) loss at step %d", what, opt, step);
    }
    CHECK_OK(sb_module_hash(cpu, hc));
    CHECK_OK(sb_module_hash(dev, hd));
    CHECK(memcmp(hc, hd, 32) == 0, "LeNet-5 (%s, %s): trained parameters differ between the "
          "devices", what, opt);
    sb_graph_free(gc);
    sb_graph_free(gd);
    sb_optimizer_free(oc);
    sb_optimizer_free(od);
    sb_module_free(cpu);
    sb_module_free(dev);
    sb_tensor_free(images);
    sb_tensor_free(target);
}

#endif
