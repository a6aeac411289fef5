/* tests/cuda/test_cuda_backend.cu - the CUDA device behind the backend
 * table: LeNet-5 trained for two Adam steps through the ordinary tensor
 * API, autograd, module and optimizer on the GPU must give the CPU's losses
 * and parameters bit for bit; the sb_cuda_* tensor entry points validate
 * exactly like the CPU (NULL conv params are the defaults, a max-pool index
 * outside its window is SB_ERR_RANGE); an op without a GPU kernel (sort)
 * is SB_ERR_UNSUPPORTED naming it. Without a GPU it prints
 * "SKIPPED: no CUDA device (reason)" and exits 0. Built by `make cuda`. */
#include <math.h>
#include <string.h>
#include "harness.h"
#include "samebits.h"
#include "samebits/cuda.h"
#include "samebits/train.h"
#include "support/lenet_compare.h"

static sb_cuda_context *ctx;

/* tests/support/lenet_compare.h: the comparison the mirror and OpenCL
 * devices pass in make test. */
static void test_lenet(void) {
    sb_test_lenet_case c = sb_test_lenet_default(SB_DEVICE_CUDA);
    c.steps = 2;
    sb_test_lenet_compare(&c);
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
    /* the GPU host layer has no sort kernel yet (docs/GPU.md) */
    int64_t sv[1] = {5};
    sb_tensor *v = NULL, *vi = NULL, *vv = NULL;
    CHECK_OK(sb_cuda_tensor_new(ctx, &v, SB_F32, 1, sv));
    CHECK_OK(sb_cuda_tensor_new(ctx, &vv, SB_F32, 1, sv));
    CHECK_OK(sb_cuda_tensor_new(ctx, &vi, SB_I64, 1, sv));
    CHECK_ERROR(sb_sort(v, 0, false, vv, vi), SB_ERR_UNSUPPORTED,
                "sb_sort: the cuda device has no sort_select kernel");
    CHECK_OK(sb_add(x, x, dx)); /* the binary family runs on the host layer's kernels */
    sb_tensor_free(v);
    sb_tensor_free(vv);
    sb_tensor_free(vi);
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
