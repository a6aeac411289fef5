/* tests/cuda/test_cuda_backend.cu - the CUDA device behind the backend
 * table: LeNet-5 trained for two Adam steps through the ordinary tensor
 * API, autograd, module and optimizer on the GPU must give the CPU's losses
 * and parameters bit for bit; the sb_cuda_* tensor entry points validate
 * exactly like the CPU (NULL conv params are the defaults, a max-pool index
 * outside its window is SB_ERR_RANGE); sort runs; and a sample of the families the
 * device gained with the GPU host layer (broadcast add, exp, GELU, cumsum,
 * fill, sums and max past one 8192 block, dropout) gives the CPU's bits. Without a GPU it prints
 * "SKIPPED: no CUDA device (reason)" and exits 0. Built by `make cuda`. */
#include <initializer_list>
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
    /* sort runs on the host layer's sort.cl */
    int64_t sv[1] = {5};
    sb_tensor *v = NULL, *vi = NULL, *vv = NULL;
    CHECK_OK(sb_cuda_tensor_new(ctx, &v, SB_F32, 1, sv));
    CHECK_OK(sb_cuda_tensor_new(ctx, &vv, SB_F32, 1, sv));
    CHECK_OK(sb_cuda_tensor_new(ctx, &vi, SB_I64, 1, sv));
    CHECK_OK(sb_sort(v, 0, false, vv, vi));
    CHECK_OK(sb_add(x, x, dx)); /* the binary family runs on the host layer's kernels */
    sb_tensor_free(v);
    sb_tensor_free(vv);
    sb_tensor_free(vi);
    sb_tensor *all[] = {x, w, y, idx, dx, host};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) sb_tensor_free(all[i]);
}


/* ---- families the CUDA device gained with the GPU host layer ----
 * Each op runs on CPU tensors and on their CUDA copies through the public
 * API; the CUDA result must have the CPU's bits (NaN as one value). */

static uint32_t rng_state = 0x2545f491u;
static float next_value(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    if (rng_state % 41 == 0) return -0.0f; /* a few signed zeros */
    return (float)(rng_state >> 8) * 0x1p-22f - 2.0f;
}

struct dev_pair {
    sb_tensor *c, *g; /* CPU tensor, its CUDA copy */
};

static dev_pair random_pair(int ndim, const int64_t *shape) {
    dev_pair p = {NULL, NULL};
    CHECK_OK(sb_tensor_new(&p.c, SB_F32, ndim, shape));
    float *v = sb_tensor_f32(p.c);
    for (int64_t i = 0; v && i < sb_tensor_numel(p.c); i++) v[i] = next_value();
    CHECK_OK(sb_tensor_to(&p.g, p.c, SB_DEVICE_CUDA));
    return p;
}

static dev_pair zero_pair(sb_dtype dtype, int ndim, const int64_t *shape) {
    dev_pair p = {NULL, NULL};
    CHECK_OK(sb_tensor_new(&p.c, dtype, ndim, shape));
    CHECK_OK(sb_tensor_new_on(&p.g, SB_DEVICE_CUDA, dtype, ndim, shape));
    return p;
}

static void same_bits(const char *what, const dev_pair &p) {
    sb_tensor *back = NULL;
    CHECK_OK(sb_tensor_to(&back, p.g, SB_DEVICE_CPU));
    if (!back) return;
    size_t n = (size_t)sb_tensor_numel(p.c) * sb_dtype_size(p.c->dtype);
    long bad = 0;
    if (p.c->dtype == SB_F32) {
        const float *a = sb_tensor_f32(p.c), *b = sb_tensor_f32(back);
        for (int64_t i = 0; i < sb_tensor_numel(p.c); i++)
            if (!(a[i] != a[i] && b[i] != b[i]) && sb_test_bits(a[i]) != sb_test_bits(b[i]))
                bad++;
    } else {
        bad = memcmp(p.c->data, back->data, n) != 0;
    }
    CHECK(bad == 0, "%s: %ld elements differ between the cuda device and the cpu", what, bad);
    sb_tensor_free(back);
}

static void free_pairs(std::initializer_list<dev_pair> ps) {
    for (const dev_pair &p : ps) {
        sb_tensor_free(p.c);
        sb_tensor_free(p.g);
    }
}

static void test_host_layer_families(void) {
    const int64_t sa[3] = {3, 1, 5}, sb[2] = {4, 5}, so[3] = {3, 4, 5};
    dev_pair a = random_pair(3, sa), b = random_pair(2, sb), o = zero_pair(SB_F32, 3, so);
    CHECK_OK(sb_add(a.c, b.c, o.c));
    CHECK_OK(sb_add(a.g, b.g, o.g));
    same_bits("sb_add, broadcast", o);
    free_pairs({a, b, o});

    const int64_t sx[2] = {7, 9};
    dev_pair x = random_pair(2, sx), y = zero_pair(SB_F32, 2, sx);
    CHECK_OK(sb_exp(x.c, y.c));
    CHECK_OK(sb_exp(x.g, y.g));
    same_bits("sb_exp", y);
    CHECK_OK(sb_gelu_forward(x.c, false, y.c));
    CHECK_OK(sb_gelu_forward(x.g, false, y.g));
    same_bits("sb_gelu_forward (erf)", y);
    CHECK_OK(sb_cumsum(x.c, 1, y.c));
    CHECK_OK(sb_cumsum(x.g, 1, y.g));
    same_bits("sb_cumsum", y);
    CHECK_OK(sb_tensor_fill(y.c, 1.5f));
    CHECK_OK(sb_tensor_fill(y.g, 1.5f));
    same_bits("sb_tensor_fill", y);
    free_pairs({x, y});

    const int64_t sr[3] = {5, 9000, 3}, sk[2] = {5, 3}; /* past one 8192 block */
    dev_pair r = random_pair(3, sr), sum = zero_pair(SB_F32, 2, sk), mx = zero_pair(SB_F32, 2, sk),
             idx = zero_pair(SB_I64, 2, sk);
    const int dim1[1] = {1};
    CHECK_OK(sb_sum(r.c, dim1, 1, false, sum.c));
    CHECK_OK(sb_sum(r.g, dim1, 1, false, sum.g));
    same_bits("sb_sum over dim 1", sum);
    CHECK_OK(sb_max(r.c, dim1, 1, false, mx.c, idx.c));
    CHECK_OK(sb_max(r.g, dim1, 1, false, mx.g, idx.g));
    same_bits("sb_max", mx);
    same_bits("sb_max indices", idx);
    free_pairs({r, sum, mx, idx});

    const int64_t sd[1] = {1000};
    dev_pair d = random_pair(1, sd), dy = zero_pair(SB_F32, 1, sd), dm = zero_pair(SB_F32, 1, sd);
    CHECK_OK(sb_dropout_forward(d.c, 0.3f, true, 7, 1, 64, dy.c, dm.c));
    CHECK_OK(sb_dropout_forward(d.g, 0.3f, true, 7, 1, 64, dy.g, dm.g));
    same_bits("sb_dropout_forward", dy);
    same_bits("sb_dropout_forward mask", dm);
    free_pairs({d, dy, dm});
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
    test_host_layer_families();
    size_t in_use = 0, cached = 0;
    sb_cuda_memory_stats(ctx, &in_use, &cached);
    CHECK(in_use == 0, "%zu bytes of device memory still in use: a tensor was not released", in_use);
    sb_cuda_context_free(ctx);
    CHECK(!sb_device_available(SB_DEVICE_CUDA), "freeing the context unregisters it");
    return sb_test_finish();
}
