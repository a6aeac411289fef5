/* tests/cuda/test_cuda_backend.cu - the CUDA device behind the backend
 * table: LeNet-5 trained for two Adam steps through the ordinary tensor
 * API, autograd, module and optimizer on the GPU must give the CPU's losses
 * and parameters bit for bit; the sb_cuda_* tensor entry points validate
 * exactly like the CPU (NULL conv params are the defaults, a max-pool index
 * outside its window is SB_ERR_RANGE); an op without a GPU kernel is
 * SB_ERR_UNSUPPORTED naming it. Without a GPU it prints
 * "SKIPPED: no CUDA device (reason)" and exits 0. Built by `make cuda`. */
#include <math.h>
#include <string.h>
#include "harness.h"
#include "samebits.h"
#include "samebits/cuda.h"
#include "samebits/train.h"

static sb_cuda_context *ctx;

static float step(sb_module *m, sb_optimizer *o, sb_graph *g, const sb_tensor *images,
                  const sb_tensor *labels, sb_device device) {
    sb_tensor *x = NULL, *t = NULL, *host = NULL;
    sb_variable *in = NULL, *logits = NULL, *loss = NULL;
    float value = NAN;
    CHECK_OK(sb_tensor_to(&x, images, device));
    CHECK_OK(sb_tensor_to(&t, labels, device));
    CHECK_OK(sb_graph_input(g, x, &in));
    CHECK_OK(sb_module_forward(m, g, in, &logits));
    CHECK_OK(sb_ag_cross_entropy(g, logits, t, SB_LOSS_MEAN, 0.0f, &loss));
    CHECK_OK(sb_graph_backward(g, loss));
    CHECK_OK(sb_optimizer_step(o));
    if (loss) CHECK_OK(sb_tensor_to(&host, loss->value, SB_DEVICE_CPU));
    if (host) value = sb_tensor_f32(host)[0];
    sb_tensor_free(host);
    sb_graph_reset(g);
    sb_tensor_free(x);
    sb_tensor_free(t);
    return value;
}

static void test_lenet(void) {
    sb_module *cpu = NULL, *gpu = NULL;
    CHECK_OK(sb_model_lenet5(&cpu));
    CHECK_OK(sb_model_lenet5(&gpu));
    CHECK_OK(sb_module_init(cpu, 3));
    CHECK_OK(sb_module_init(gpu, 3));
    CHECK_OK(sb_module_to(gpu, SB_DEVICE_CUDA));
    int64_t si[4] = {8, 1, 28, 28}, sl[1] = {8};
    sb_tensor *images = NULL, *labels = NULL;
    CHECK_OK(sb_tensor_new(&images, SB_F32, 4, si));
    CHECK_OK(sb_tensor_new(&labels, SB_I64, 1, sl));
    for (int64_t i = 0; i < sb_tensor_numel(images); i++)
        sb_tensor_f32(images)[i] = (float)((i * 7919) % 256) / 255.0f;
    for (int i = 0; i < 8; i++) ((int64_t *)labels->data)[i] = (i * 3) % 10;
    sb_adam_config cfg = sb_adam_default_config(1e-3);
    sb_optimizer *oc = NULL, *og = NULL;
    CHECK_OK(sb_optimizer_adam(&oc, cpu, &cfg));
    CHECK_OK(sb_optimizer_adam(&og, gpu, &cfg));
    sb_graph *gc = NULL, *gg = NULL;
    CHECK_OK(sb_graph_new(&gc));
    CHECK_OK(sb_graph_new(&gg));
    for (int s = 0; s < 2; s++) {
        float lc = step(cpu, oc, gc, images, labels, SB_DEVICE_CPU);
        float lg = step(gpu, og, gg, images, labels, SB_DEVICE_CUDA);
        CHECK_BITS(lg, lc, "LeNet-5 loss at step %d", s);
    }
    unsigned char hc[32], hg[32];
    CHECK_OK(sb_module_hash(cpu, hc));
    CHECK_OK(sb_module_hash(gpu, hg));
    CHECK(memcmp(hc, hg, 32) == 0, "trained parameters differ between the CPU and the GPU");
    sb_graph_free(gc);
    sb_graph_free(gg);
    sb_optimizer_free(oc);
    sb_optimizer_free(og);
    sb_module_free(cpu);
    sb_module_free(gpu);
    sb_tensor_free(images);
    sb_tensor_free(labels);
}

static void test_validation(void) {
    int64_t sx[4] = {1, 1, 4, 4}, sw[4] = {1, 1, 3, 3}, sy[4] = {1, 1, 2, 2};
    sb_tensor *x = NULL, *w = NULL, *y = NULL, *idx = NULL, *dx = NULL;
    CHECK_OK(sb_cuda_tensor_new(ctx, &x, SB_F32, 4, sx));
    CHECK_OK(sb_cuda_tensor_new(ctx, &w, SB_F32, 4, sw));
    CHECK_OK(sb_cuda_tensor_new(ctx, &y, SB_F32, 4, sy));
    CHECK_OK(sb_cuda_conv2d_forward(ctx, x, w, NULL, NULL, y)); /* NULL params: the defaults */
    CHECK_ERROR(sb_cuda_conv2d_forward(ctx, x, w, NULL, NULL, x), SB_ERR_SHAPE, "y has shape");
    sb_pool2d_params pp = {};
    pp.kernel_h = pp.kernel_w = 2;
    sb_tensor *host = NULL;
    CHECK_OK(sb_tensor_new(&host, SB_I64, 4, sy));
    CHECK_OK(sb_tensor_to(&idx, host, SB_DEVICE_CUDA)); /* index 0 is outside window (0, 1) */
    CHECK_OK(sb_cuda_tensor_new(ctx, &dx, SB_F32, 4, sx));
    CHECK_ERROR(sb_cuda_max_pool2d_backward(ctx, y, idx, &pp, dx), SB_ERR_RANGE,
                "is outside its window");
    CHECK_ERROR(sb_cuda_relu_forward(ctx, host, y), SB_ERR_DEVICE, "x is on the cpu device");
    CHECK_ERROR(sb_add(x, x, dx), SB_ERR_UNSUPPORTED, "sb_add: the cuda device has no binary kernel");
    sb_tensor *all[] = {x, w, y, idx, dx, host};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) sb_tensor_free(all[i]);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    const char *why = NULL;
    if (!sb_cuda_available(&why)) {
        printf("SKIPPED: no CUDA device (%s)\n", why);
        return sb_test_finish();
    }
    CHECK_OK(sb_cuda_context_new(&ctx, 0));
    if (!ctx) return sb_test_finish();
    CHECK_OK(sb_cuda_register(ctx));
    test_lenet();
    test_validation();
    size_t in_use = 0, cached = 0;
    sb_cuda_memory_stats(ctx, &in_use, &cached);
    CHECK(in_use == 0, "%zu bytes of device memory still in use: a tensor was not released", in_use);
    sb_cuda_context_free(ctx);
    CHECK(!sb_device_available(SB_DEVICE_CUDA), "freeing the context unregisters it");
    return sb_test_finish();
}
