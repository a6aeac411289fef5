/* tests/test_backend.c - the device dispatch: every op family, autograd, a
 * module and an optimizer step run on the mirror device (the CPU kernels
 * over separately allocated memory that the library treats as a discrete
 * device) and must give the CPU's bits exactly; mixed devices, missing
 * kernels and out-of-range values fail with the same messages everywhere;
 * every device tensor is released through its backend. */
#include <math.h>
#include "backend/backend.h"
#include "harness.h"
#include "samebits.h"
#include "samebits/train.h"
#include "support/fastpath.h"
#include "support/lenet_compare.h"

/* A CPU tensor and its twin on the mirror device. */
typedef struct pair {
    sb_tensor *c, *m;
} pair;

static pair pair_of(sb_tensor *cpu) {
    pair p = {cpu, NULL};
    CHECK_OK(sb_tensor_to(&p.m, cpu, SB_DEVICE_MIRROR));
    return p;
}

static pair pair_rand(int ndim, const int64_t *shape) {
    sb_tensor *t = NULL;
    CHECK_OK(sb_tensor_new(&t, SB_F32, ndim, shape));
    float *v = sb_tensor_f32(t);
    for (int64_t i = 0; i < sb_tensor_numel(t); i++) v[i] = sb_test_unif(-2.0f, 2.0f);
    return pair_of(t);
}

static pair pair_zeros(sb_dtype dtype, int ndim, const int64_t *shape) {
    pair p = {NULL, NULL};
    CHECK_OK(sb_tensor_new(&p.c, dtype, ndim, shape));
    CHECK_OK(sb_tensor_new_on(&p.m, SB_DEVICE_MIRROR, dtype, ndim, shape));
    return p;
}

static void pair_free(pair *p) {
    sb_tensor_free(p->c);
    sb_tensor_free(p->m);
    p->c = p->m = NULL;
}

/* The mirror twin, brought back to the host, has the CPU tensor's bytes. */
static void check_same(const pair *p, const char *what) {
    sb_tensor *back = NULL;
    CHECK_OK(sb_tensor_to(&back, p->m, SB_DEVICE_CPU));
    if (!back) return;
    size_t bytes = (size_t)sb_tensor_numel(p->c) * sb_dtype_size(p->c->dtype);
    int same = back->device == SB_DEVICE_CPU && memcmp(back->data, p->c->data, bytes) == 0;
    CHECK(same, "%s: the mirror device's result differs from the CPU's", what);
    sb_tensor_free(back);
}

/* ---- memory and copies ---------------------------------------------------- */

static void test_memory(void) {
    size_t live0 = sb_backend_mirror_live_blocks();
    int64_t s23[2] = {2, 3};
    pair a = pair_rand(2, s23);
    CHECK(a.m && a.m->device == SB_DEVICE_MIRROR, "sb_tensor_to made no mirror tensor");
    CHECK(a.m && a.m->data != a.c->data, "the mirror tensor shares the CPU tensor's memory");
    CHECK(sb_backend_mirror_live_blocks() == live0 + 1, "one mirror block per tensor");
    check_same(&a, "sb_tensor_to round trip");

    /* A transposed view copies across devices element by element. */
    sb_tensor *at = NULL, *mt = NULL;
    int64_t s32[2] = {3, 2};
    CHECK_OK(sb_tensor_transpose(&at, a.c, 0, 1));
    pair t = pair_zeros(SB_F32, 2, s32);
    CHECK_OK(sb_tensor_copy(t.m, at));
    CHECK_OK(sb_tensor_copy(t.c, at));
    check_same(&t, "a strided view copied onto the mirror device");
    /* ... and from a strided mirror view back into a strided CPU view. */
    CHECK_OK(sb_tensor_transpose(&mt, t.m, 0, 1));
    pair back = pair_zeros(SB_F32, 2, s23);
    CHECK_OK(sb_tensor_copy(back.c, mt));
    CHECK(memcmp(back.c->data, a.c->data, 6 * sizeof(float)) == 0,
          "mirror -> CPU copy of a transposed view");
    sb_tensor_free(at);
    sb_tensor_free(mt);

    CHECK_OK(sb_tensor_fill(a.m, 0.5f));
    CHECK_OK(sb_tensor_fill(a.c, 0.5f));
    check_same(&a, "sb_tensor_fill on the mirror device");

    /* Code that reads memory on the host refuses a device tensor. */
    sb_sha256_ctx h;
    sb_sha256_init(&h);
    CHECK_ERROR(sb_sha256_tensor(&h, a.m), SB_ERR_DEVICE, "is not on the CPU (it is on the mirror device");

    /* The mirror refuses host memory where its own belongs. */
    const sb_backend *be = sb_backend_get("test", SB_DEVICE_MIRROR);
    float host[4] = {0};
    CHECK_ERROR(be->upload(be, host, host, sizeof host), SB_ERR_INTERNAL, "is not live mirror memory");
    CHECK_ERROR(be->download(be, host, (const char *)a.m->data + 20, 8), SB_ERR_INTERNAL,
                "is not live mirror memory");

    pair_free(&a);
    pair_free(&t);
    pair_free(&back);
    CHECK(sb_backend_mirror_live_blocks() == live0, "sb_tensor_free released the mirror memory");
    CHECK(sb_device_available(SB_DEVICE_MIRROR) && sb_device_available(SB_DEVICE_CPU),
          "the built-in devices are available");
    CHECK(strcmp(sb_device_name(SB_DEVICE_MIRROR), "mirror") == 0, "device name");
}

/* ---- every op family, forward and backward -------------------------------- */

static void test_linalg(void) {
    int64_t sa[3] = {2, 3, 4}, sb2[2] = {4, 5}, so[3] = {2, 3, 5};
    pair a = pair_rand(3, sa), b = pair_rand(2, sb2), o = pair_zeros(SB_F32, 3, so);
    CHECK_OK(sb_matmul(a.c, b.c, false, false, o.c));
    CHECK_OK(sb_matmul(a.m, b.m, false, false, o.m));
    check_same(&o, "sb_matmul");
    /* db is shared by both batches: its chains continue across them. */
    pair da = pair_zeros(SB_F32, 3, sa), db = pair_zeros(SB_F32, 2, sb2), d = pair_rand(3, so);
    CHECK_OK(sb_matmul_backward(d.c, a.c, b.c, false, false, da.c, db.c));
    CHECK_OK(sb_matmul_backward(d.m, a.m, b.m, false, false, da.m, db.m));
    check_same(&da, "sb_matmul_backward da");
    check_same(&db, "sb_matmul_backward db");

    int64_t sx[2] = {6, 4}, sw[2] = {3, 4}, sbias[1] = {3}, sy[2] = {6, 3};
    pair x = pair_rand(2, sx), w = pair_rand(2, sw), bias = pair_rand(1, sbias),
         y = pair_zeros(SB_F32, 2, sy), dy = pair_rand(2, sy), dx = pair_zeros(SB_F32, 2, sx),
         dw = pair_zeros(SB_F32, 2, sw), dbias = pair_zeros(SB_F32, 1, sbias);
    CHECK_OK(sb_linear_forward(x.c, w.c, bias.c, y.c));
    CHECK_OK(sb_linear_forward(x.m, w.m, bias.m, y.m));
    check_same(&y, "sb_linear_forward");
    CHECK_OK(sb_linear_backward(dy.c, x.c, w.c, dx.c, dw.c, dbias.c));
    CHECK_OK(sb_linear_backward(dy.m, x.m, w.m, dx.m, dw.m, dbias.m));
    check_same(&dx, "sb_linear_backward dx");
    check_same(&dw, "sb_linear_backward dw");
    check_same(&dbias, "sb_linear_backward db");

    /* Mixed devices are refused, naming both tensors and devices. */
    CHECK_ERROR(sb_linear_forward(x.c, w.m, bias.m, y.m), SB_ERR_DEVICE,
                "sb_linear_forward: x is on the cpu device but w is on the mirror device");
    CHECK_ERROR(sb_matmul(a.m, b.m, false, false, o.c), SB_ERR_DEVICE,
                "sb_matmul: a is on the mirror device but out is on the cpu device");
    pair all[] = {a, b, o, da, db, d, x, w, bias, y, dy, dx, dw, dbias};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
}

static void test_conv_pool(void) {
    int64_t sx[4] = {2, 3, 7, 6}, sw[4] = {4, 3, 3, 2}, sbias[1] = {4};
    sb_conv2d_params cp = {2, 1, 1, 1, 1, 1, 1};
    int64_t oh, ow;
    CHECK_OK(sb_conv2d_output_size(7, 6, 3, 2, &cp, &oh, &ow));
    int64_t sy[4] = {2, 4, oh, ow};
    pair x = pair_rand(4, sx), w = pair_rand(4, sw), b = pair_rand(1, sbias),
         y = pair_zeros(SB_F32, 4, sy), dy = pair_rand(4, sy), dx = pair_zeros(SB_F32, 4, sx),
         dw = pair_zeros(SB_F32, 4, sw), db = pair_zeros(SB_F32, 1, sbias);
    CHECK_OK(sb_conv2d_forward(x.c, w.c, b.c, &cp, y.c));
    CHECK_OK(sb_conv2d_forward(x.m, w.m, b.m, &cp, y.m));
    check_same(&y, "sb_conv2d_forward");
    /* NULL params mean the defaults on every device; stride 1 shapes. */
    pair y1 = pair_zeros(SB_F32, 4, (int64_t[4]){2, 4, 5, 5});
    CHECK_OK(sb_conv2d_forward(x.c, w.c, NULL, NULL, y1.c));
    CHECK_OK(sb_conv2d_forward(x.m, w.m, NULL, NULL, y1.m));
    check_same(&y1, "sb_conv2d_forward, NULL params");
    CHECK_OK(sb_conv2d_backward(dy.c, x.c, w.c, &cp, dx.c, dw.c, db.c));
    CHECK_OK(sb_conv2d_backward(dy.m, x.m, w.m, &cp, dx.m, dw.m, db.m));
    check_same(&dx, "sb_conv2d_backward dx");
    check_same(&dw, "sb_conv2d_backward dw");
    check_same(&db, "sb_conv2d_backward db");

    sb_pool2d_params pp = {.kernel_h = 2, .kernel_w = 2};
    int64_t sp[4] = {2, 3, 3, 3};
    pair py = pair_zeros(SB_F32, 4, sp), idx = pair_zeros(SB_I64, 4, sp), pdy = pair_rand(4, sp),
         pdx = pair_zeros(SB_F32, 4, sx);
    CHECK_OK(sb_max_pool2d_forward(x.c, &pp, py.c, idx.c));
    CHECK_OK(sb_max_pool2d_forward(x.m, &pp, py.m, idx.m));
    check_same(&py, "sb_max_pool2d_forward y");
    check_same(&idx, "sb_max_pool2d_forward indices");
    CHECK_OK(sb_max_pool2d_backward(pdy.c, idx.c, &pp, pdx.c));
    CHECK_OK(sb_max_pool2d_backward(pdy.m, idx.m, &pp, pdx.m));
    check_same(&pdx, "sb_max_pool2d_backward");
    /* An index outside its window is refused on the device too (read back
     * to the host for the check), with the CPU's message. */
    ((int64_t *)idx.c->data)[5] = 0;
    sb_tensor *bad = NULL;
    CHECK_OK(sb_tensor_to(&bad, idx.c, SB_DEVICE_MIRROR));
    CHECK_ERROR(sb_max_pool2d_backward(pdy.c, idx.c, &pp, pdx.c), SB_ERR_RANGE,
                "indices[plane 0][1][2] = 0 is outside its window");
    CHECK_ERROR(sb_max_pool2d_backward(pdy.m, bad, &pp, pdx.m), SB_ERR_RANGE,
                "indices[plane 0][1][2] = 0 is outside its window");
    sb_tensor_free(bad);
    CHECK_OK(sb_avg_pool2d_forward(x.c, &pp, py.c));
    CHECK_OK(sb_avg_pool2d_forward(x.m, &pp, py.m));
    check_same(&py, "sb_avg_pool2d_forward");
    CHECK_OK(sb_avg_pool2d_backward(pdy.c, &pp, pdx.c));
    CHECK_OK(sb_avg_pool2d_backward(pdy.m, &pp, pdx.m));
    check_same(&pdx, "sb_avg_pool2d_backward");

    /* Adaptive pooling, uneven windows (7x6 -> 3x4: the adaptive entries)
     * and even ones (7x6 -> 7x3: the fixed-window entries). */
    int64_t sa[2][4] = {{2, 3, 3, 4}, {2, 3, 7, 3}};
    for (int k = 0; k < 2; k++) {
        pair ay = pair_zeros(SB_F32, 4, sa[k]), aidx = pair_zeros(SB_I64, 4, sa[k]),
             ady = pair_rand(4, sa[k]);
        CHECK_OK(sb_adaptive_max_pool2d_forward(x.c, ay.c, aidx.c));
        CHECK_OK(sb_adaptive_max_pool2d_forward(x.m, ay.m, aidx.m));
        check_same(&ay, "sb_adaptive_max_pool2d_forward y");
        check_same(&aidx, "sb_adaptive_max_pool2d_forward indices");
        CHECK_OK(sb_adaptive_max_pool2d_backward(ady.c, aidx.c, pdx.c));
        CHECK_OK(sb_adaptive_max_pool2d_backward(ady.m, aidx.m, pdx.m));
        check_same(&pdx, "sb_adaptive_max_pool2d_backward");
        CHECK_OK(sb_adaptive_avg_pool2d_forward(x.c, ay.c));
        CHECK_OK(sb_adaptive_avg_pool2d_forward(x.m, ay.m));
        check_same(&ay, "sb_adaptive_avg_pool2d_forward");
        CHECK_OK(sb_adaptive_avg_pool2d_backward(ady.c, pdx.c));
        CHECK_OK(sb_adaptive_avg_pool2d_backward(ady.m, pdx.m));
        check_same(&pdx, "sb_adaptive_avg_pool2d_backward");
        pair_free(&ay), pair_free(&aidx), pair_free(&ady);
    }
    pair all[] = {x, w, b, y, dy, dx, dw, db, y1, py, idx, pdy, pdx};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
}

static void test_pointwise(void) {
    int64_t s[2] = {5, 7}, srow[1] = {7};
    pair x = pair_rand(2, s), r = pair_rand(1, srow), y = pair_zeros(SB_F32, 2, s),
         dy = pair_rand(2, s), dx = pair_zeros(SB_F32, 2, s), dr = pair_zeros(SB_F32, 1, srow);
    CHECK_OK(sb_gelu_forward(x.c, true, y.c));
    CHECK_OK(sb_gelu_forward(x.m, true, y.m));
    check_same(&y, "sb_gelu_forward");
    CHECK_OK(sb_gelu_backward(x.c, dy.c, false, dx.c));
    CHECK_OK(sb_gelu_backward(x.m, dy.m, false, dx.m));
    check_same(&dx, "sb_gelu_backward");
    CHECK_OK(sb_tanh_forward(x.c, y.c));
    CHECK_OK(sb_tanh_forward(x.m, y.m));
    CHECK_OK(sb_tanh_backward(y.c, dy.c, dx.c));
    CHECK_OK(sb_tanh_backward(y.m, dy.m, dx.m));
    check_same(&dx, "sb_tanh_backward");
    CHECK_ERROR(sb_tanh_backward(y.m, dy.c, dx.m), SB_ERR_DEVICE,
                "sb_tanh_backward: y is on the mirror device but dy is on the cpu device");

    /* Broadcasting binary op and its backward (r is summed back). */
    CHECK_OK(sb_mul(x.c, r.c, y.c));
    CHECK_OK(sb_mul(x.m, r.m, y.m));
    check_same(&y, "sb_mul, broadcast");
    CHECK_OK(sb_binary_backward(SB_BINARY_DIV, dy.c, x.c, r.c, dx.c, dr.c));
    CHECK_OK(sb_binary_backward(SB_BINARY_DIV, dy.m, x.m, r.m, dx.m, dr.m));
    check_same(&dx, "sb_binary_backward da");
    check_same(&dr, "sb_binary_backward db");
    CHECK_OK(sb_sub_scalar(x.c, 0.25f, y.c));
    CHECK_OK(sb_sub_scalar(x.m, 0.25f, y.m));
    check_same(&y, "sb_sub_scalar");
    CHECK_OK(sb_exp(x.c, y.c));
    CHECK_OK(sb_exp(x.m, y.m));
    check_same(&y, "sb_exp");
    CHECK_OK(sb_unary_backward(SB_UNARY_EXP, x.c, y.c, dy.c, dx.c));
    CHECK_OK(sb_unary_backward(SB_UNARY_EXP, x.m, y.m, dy.m, dx.m));
    check_same(&dx, "sb_unary_backward");
    CHECK_OK(sb_reduce_to_shape(dy.c, dr.c));
    CHECK_OK(sb_reduce_to_shape(dy.m, dr.m));
    check_same(&dr, "sb_reduce_to_shape");

    /* Reductions over axes and their backward. */
    int dims[1] = {0};
    pair sum = pair_zeros(SB_F32, 1, srow), arg = pair_zeros(SB_I64, 1, srow);
    CHECK_OK(sb_var(x.c, dims, 1, 1, false, sum.c));
    CHECK_OK(sb_var(x.m, dims, 1, 1, false, sum.m));
    check_same(&sum, "sb_var");
    CHECK_OK(sb_max(x.c, dims, 1, false, sum.c, arg.c));
    CHECK_OK(sb_max(x.m, dims, 1, false, sum.m, arg.m));
    check_same(&sum, "sb_max values");
    check_same(&arg, "sb_max indices");
    CHECK_OK(sb_max_backward(dr.c, arg.c, dims, 1, false, dx.c));
    CHECK_OK(sb_max_backward(dr.m, arg.m, dims, 1, false, dx.m));
    check_same(&dx, "sb_max_backward");
    CHECK_OK(sb_mean_backward(dr.c, dims, 1, false, dx.c));
    CHECK_OK(sb_mean_backward(dr.m, dims, 1, false, dx.m));
    check_same(&dx, "sb_mean_backward");
    ((int64_t *)arg.c->data)[3] = 5;
    sb_tensor *bad = NULL;
    CHECK_OK(sb_tensor_to(&bad, arg.c, SB_DEVICE_MIRROR));
    CHECK_ERROR(sb_max_backward(dr.m, bad, dims, 1, false, dx.m), SB_ERR_RANGE,
                "sb_max_backward: indices element 3 is 5, outside [0, 5)");
    sb_tensor_free(bad);

    /* Dropout, with the mask check reading device memory. */
    pair mask = pair_zeros(SB_F32, 2, s);
    CHECK_OK(sb_dropout_forward(x.c, 0.3f, true, 7, 1, 0, y.c, mask.c));
    CHECK_OK(sb_dropout_forward(x.m, 0.3f, true, 7, 1, 0, y.m, mask.m));
    check_same(&y, "sb_dropout_forward y");
    check_same(&mask, "sb_dropout_forward mask");
    CHECK_OK(sb_dropout_backward(dy.c, mask.c, 0.3f, true, dx.c));
    CHECK_OK(sb_dropout_backward(dy.m, mask.m, 0.3f, true, dx.m));
    check_same(&dx, "sb_dropout_backward");
    CHECK_ERROR(sb_dropout_backward(dy.m, x.m, 0.3f, true, dx.m), SB_ERR_ARG,
                "sb_dropout_backward: mask element 0 is");
    pair all[] = {x, r, y, dy, dx, dr, sum, arg, mask};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
}

static void test_losses_norms(void) {
    int64_t s[2] = {4, 5}, sn[1] = {4};
    pair x = pair_rand(2, s), y = pair_zeros(SB_F32, 2, s), dy = pair_rand(2, s),
         dx = pair_zeros(SB_F32, 2, s), loss = pair_zeros(SB_F32, 0, NULL),
         dloss = pair_rand(0, NULL);
    CHECK_OK(sb_log_softmax_forward(x.c, 1, y.c));
    CHECK_OK(sb_log_softmax_forward(x.m, 1, y.m));
    check_same(&y, "sb_log_softmax_forward");
    CHECK_OK(sb_softmax_backward(y.c, dy.c, 0, dx.c));
    CHECK_OK(sb_softmax_backward(y.m, dy.m, 0, dx.m));
    check_same(&dx, "sb_softmax_backward");

    sb_tensor *tc = NULL;
    CHECK_OK(sb_tensor_new(&tc, SB_I32, 1, sn));
    int32_t tv[4] = {1, 4, -100, 0};
    memcpy(tc->data, tv, sizeof tv);
    pair t = pair_of(tc);
    CHECK_OK(sb_cross_entropy_forward(x.c, t.c, SB_LOSS_MEAN, 0.1f, -100, loss.c));
    CHECK_OK(sb_cross_entropy_forward(x.m, t.m, SB_LOSS_MEAN, 0.1f, -100, loss.m));
    check_same(&loss, "sb_cross_entropy_forward");
    CHECK_OK(sb_cross_entropy_backward(x.c, t.c, SB_LOSS_MEAN, 0.1f, -100, dloss.c, dx.c));
    CHECK_OK(sb_cross_entropy_backward(x.m, t.m, SB_LOSS_MEAN, 0.1f, -100, dloss.m, dx.m));
    check_same(&dx, "sb_cross_entropy_backward");
    CHECK_OK(sb_nll_loss_forward(y.c, t.c, SB_LOSS_SUM, -100, loss.c));
    CHECK_OK(sb_nll_loss_forward(y.m, t.m, SB_LOSS_SUM, -100, loss.m));
    check_same(&loss, "sb_nll_loss_forward");
    CHECK_ERROR(sb_cross_entropy_forward(x.m, t.c, SB_LOSS_MEAN, 0.0f, -100, loss.m),
                SB_ERR_DEVICE, "logits is on the mirror device but targets is on the cpu device");
    tv[1] = 5;
    memcpy(tc->data, tv, sizeof tv);
    sb_tensor *bad = NULL;
    CHECK_OK(sb_tensor_to(&bad, tc, SB_DEVICE_MIRROR));
    CHECK_ERROR(sb_cross_entropy_forward(x.m, bad, SB_LOSS_MEAN, 0.0f, -100, loss.m), SB_ERR_RANGE,
                "targets[1] = 5 is outside [0, 5)");
    sb_tensor_free(bad);

    CHECK_OK(sb_mse_forward(x.c, dy.c, SB_LOSS_MEAN, loss.c));
    CHECK_OK(sb_mse_forward(x.m, dy.m, SB_LOSS_MEAN, loss.m));
    check_same(&loss, "sb_mse_forward");
    pair d2 = pair_zeros(SB_F32, 2, s);
    CHECK_OK(sb_mse_backward(x.c, dy.c, SB_LOSS_MEAN, dloss.c, dx.c, d2.c));
    CHECK_OK(sb_mse_backward(x.m, dy.m, SB_LOSS_MEAN, dloss.m, dx.m, d2.m));
    check_same(&dx, "sb_mse_backward dx");
    check_same(&d2, "sb_mse_backward dy");

    /* Norms: batch norm over (N=4, C=5), layer norm over the last dim. */
    int64_t sc[1] = {5};
    pair g = pair_rand(1, sc), b = pair_rand(1, sc), rm = pair_zeros(SB_F32, 1, sc),
         rv = pair_rand(1, sc), sm = pair_zeros(SB_F32, 1, sc), sr = pair_zeros(SB_F32, 1, sc),
         dg = pair_zeros(SB_F32, 1, sc), dbb = pair_zeros(SB_F32, 1, sc);
    CHECK_OK(sb_batch_norm_forward(x.c, g.c, b.c, rm.c, rv.c, true, 0.1f, 1e-5f, y.c, sm.c, sr.c));
    CHECK_OK(sb_batch_norm_forward(x.m, g.m, b.m, rm.m, rv.m, true, 0.1f, 1e-5f, y.m, sm.m, sr.m));
    check_same(&y, "sb_batch_norm_forward y");
    check_same(&rv, "sb_batch_norm_forward running_var");
    CHECK_OK(sb_batch_norm_backward(dy.c, x.c, g.c, sm.c, sr.c, true, dx.c, dg.c, dbb.c));
    CHECK_OK(sb_batch_norm_backward(dy.m, x.m, g.m, sm.m, sr.m, true, dx.m, dg.m, dbb.m));
    check_same(&dx, "sb_batch_norm_backward dx");
    check_same(&dg, "sb_batch_norm_backward dgamma");
    pair lm = pair_zeros(SB_F32, 1, sn), lr = pair_zeros(SB_F32, 1, sn);
    CHECK_OK(sb_layer_norm_forward(x.c, 1, g.c, b.c, 1e-5f, y.c, lm.c, lr.c));
    CHECK_OK(sb_layer_norm_forward(x.m, 1, g.m, b.m, 1e-5f, y.m, lm.m, lr.m));
    check_same(&y, "sb_layer_norm_forward");
    CHECK_OK(sb_layer_norm_backward(dy.c, x.c, 1, g.c, lm.c, lr.c, dx.c, dg.c, dbb.c));
    CHECK_OK(sb_layer_norm_backward(dy.m, x.m, 1, g.m, lm.m, lr.m, dx.m, dg.m, dbb.m));
    check_same(&dx, "sb_layer_norm_backward dx");
    check_same(&dbb, "sb_layer_norm_backward db");
    pair all[] = {x, y, dy, dx, loss, dloss, t, d2, g, b, rm, rv, sm, sr, dg, dbb, lm, lr};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
}

static void test_optim_steps(void) {
    int64_t s[1] = {33};
    pair p = pair_rand(1, s), g = pair_rand(1, s), m = pair_zeros(SB_F32, 1, s),
         v = pair_zeros(SB_F32, 1, s), vm = pair_zeros(SB_F32, 1, s);
    sb_sgd_config sgd = sb_sgd_default_config(0.1);
    sgd.momentum = 0.9;
    sgd.nesterov = true;
    for (int step = 1; step <= 3; step++) {
        CHECK_OK(sb_sgd_step_tensor(&sgd, step, p.c, g.c, m.c));
        CHECK_OK(sb_sgd_step_tensor(&sgd, step, p.m, g.m, m.m));
    }
    check_same(&p, "sb_sgd_step_tensor param");
    check_same(&m, "sb_sgd_step_tensor momentum");
    sb_adam_config adam = sb_adam_default_config(1e-3);
    adam.amsgrad = true;
    adam.weight_decay = 0.01;
    for (int step = 1; step <= 3; step++) {
        CHECK_OK(sb_adam_step_tensor(&adam, step, p.c, g.c, m.c, v.c, vm.c));
        CHECK_OK(sb_adam_step_tensor(&adam, step, p.m, g.m, m.m, v.m, vm.m));
    }
    check_same(&p, "sb_adam_step_tensor param");
    check_same(&vm, "sb_adam_step_tensor max_exp_avg_sq");
    CHECK_ERROR(sb_adam_step_tensor(&adam, 4, p.m, g.m, m.m, v.c, vm.m), SB_ERR_DEVICE,
                "sb_adam_step_tensor: param is on the mirror device but exp_avg_sq is on the cpu device");
    pair all[] = {p, g, m, v, vm};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
}

/* ---- autograd, modules, optimizers ----------------------------------------- */

/* LeNet-5 trained for three Adam steps on the CPU and on the mirror device:
 * the same initial and final parameters and the same losses, bit for bit
 * (tests/support/lenet_compare.h); a CPU batch into a mirror model is
 * refused with a message. */
static void test_lenet_training(void) {
    size_t live0 = sb_backend_mirror_live_blocks();
    sb_test_lenet_case c = sb_test_lenet_default(SB_DEVICE_MIRROR);
    c.batch = 4;
    sb_test_lenet_compare(&c);

    sb_module *dev = NULL;
    sb_graph *g = NULL;
    sb_tensor *images = NULL;
    int64_t si[4] = {1, 1, 28, 28};
    CHECK_OK(sb_model_lenet5(&dev));
    CHECK_OK(sb_module_to(dev, SB_DEVICE_MIRROR));
    CHECK(sb_backend_mirror_live_blocks() > live0, "the module's tensors moved to the mirror");
    CHECK_OK(sb_graph_new(&g));
    CHECK_OK(sb_tensor_new(&images, SB_F32, 4, si));
    sb_variable *in = NULL, *out = NULL;
    CHECK_OK(sb_graph_input(g, images, &in));
    CHECK_ERROR(sb_module_forward(dev, g, in, &out), SB_ERR_DEVICE, "on the cpu device but");
    sb_graph_free(g);
    sb_module_free(dev);
    sb_tensor_free(images);
    CHECK(sb_backend_mirror_live_blocks() == live0,
          "the model, optimizer and graph released their mirror memory");
}

/* Batch norm, dropout, layer norm, an add that uses one value twice (the
 * gradient accumulation), flatten and MSE through autograd and SGD. */
static void test_autograd_mixture(void) {
    sb_module *parts[2][6] = {{0}};
    sb_module *model[2] = {0};
    int64_t ln_shape[1] = {6};
    for (int d = 0; d < 2; d++) {
        CHECK_OK(sb_nn_linear(&parts[d][0], 5, 6, true));
        CHECK_OK(sb_nn_batch_norm(&parts[d][1], 6, 1e-5f, 0.1f, true));
        CHECK_OK(sb_nn_gelu(&parts[d][2], false));
        CHECK_OK(sb_nn_dropout(&parts[d][3], 0.25f, 3, 4));
        CHECK_OK(sb_nn_layer_norm(&parts[d][4], 1, ln_shape, 1e-5f, true));
        CHECK_OK(sb_nn_linear(&parts[d][5], 6, 3, true));
        CHECK_OK(sb_nn_sequential(&model[d], parts[d], 6));
        CHECK_OK(sb_module_init(model[d], 9));
    }
    CHECK_OK(sb_module_to(model[1], SB_DEVICE_MIRROR));
    int64_t sx[2] = {8, 5}, sy[2] = {8, 3};
    pair x = pair_rand(2, sx), target = pair_rand(2, sy);
    sb_sgd_config cfg = sb_sgd_default_config(0.05);
    cfg.momentum = 0.5;
    sb_optimizer *opt[2] = {0};
    sb_graph *g[2] = {0};
    float losses[2] = {0};
    for (int d = 0; d < 2; d++) {
        CHECK_OK(sb_optimizer_sgd(&opt[d], model[d], &cfg));
        CHECK_OK(sb_graph_new(&g[d]));
        for (int step = 0; step < 2; step++) {
            sb_variable *in = NULL, *h = NULL, *twice = NULL, *loss = NULL;
            CHECK_OK(sb_graph_input(g[d], d ? x.m : x.c, &in));
            CHECK_OK(sb_module_forward(model[d], g[d], in, &h));
            CHECK_OK(sb_ag_add(g[d], h, h, &twice));
            CHECK_OK(sb_ag_mse(g[d], twice, d ? target.m : target.c, SB_LOSS_MEAN, &loss));
            CHECK_OK(sb_graph_backward(g[d], loss));
            CHECK_OK(sb_optimizer_step(opt[d]));
            sb_tensor *host = NULL;
            if (loss) CHECK_OK(sb_tensor_to(&host, loss->value, SB_DEVICE_CPU));
            if (host) losses[d] = sb_tensor_f32(host)[0];
            sb_tensor_free(host);
            sb_graph_reset(g[d]);
        }
    }
    CHECK_BITS(losses[1], losses[0], "mixture model loss");
    unsigned char hc[32], hd[32];
    CHECK_OK(sb_module_hash(model[0], hc));
    CHECK_OK(sb_module_hash(model[1], hd));
    CHECK(memcmp(hc, hd, 32) == 0, "mixture model parameters differ between the devices");
    sb_named bufs[2][8];
    size_t nb[2] = {0};
    for (int d = 0; d < 2; d++) CHECK_OK(sb_module_buffers(model[d], bufs[d], 8, &nb[d]));
    CHECK(nb[0] == 3 && nb[1] == 3, "batch norm has three buffers");
    for (size_t i = 0; i < nb[0] && i < 3; i++) {
        pair b = {bufs[0][i].value, bufs[1][i].value};
        check_same(&b, bufs[0][i].name); /* running statistics, num_batches_tracked */
    }
    for (int d = 0; d < 2; d++) {
        sb_graph_free(g[d]);
        sb_optimizer_free(opt[d]);
        sb_module_free(model[d]);
    }
    pair_free(&x);
    pair_free(&target);
}

/* ---- a device without a kernel ------------------------------------------- */

static const sb_backend_ops no_ops; /* every entry NULL */

static void test_unsupported(void) {
    /* A backend with the CPU's memory and no kernels, in the CUDA slot
     * (this test binary has no CUDA backend registered). */
    sb_backend bare = sb_backend_cpu;
    bare.name = "bare";
    bare.device = SB_DEVICE_CUDA;
    bare.ops = &no_ops;
    CHECK_ERROR(sb_tensor_new_on(&(sb_tensor *){NULL}, SB_DEVICE_CUDA, SB_F32, 0, NULL),
                SB_ERR_DEVICE, "the cuda device has no backend in this program");
    sb_backend_register(SB_DEVICE_CUDA, &bare);
    CHECK(sb_device_available(SB_DEVICE_CUDA), "a registered device is available");
    int64_t s[2] = {2, 2};
    sb_tensor *a = NULL, *o = NULL;
    CHECK_OK(sb_tensor_new_on(&a, SB_DEVICE_CUDA, SB_F32, 2, s));
    CHECK_OK(sb_tensor_new_on(&o, SB_DEVICE_CUDA, SB_F32, 2, s));
    CHECK_ERROR(sb_matmul(a, a, false, false, o), SB_ERR_UNSUPPORTED,
                "sb_matmul: the bare device has no sgemm kernel");
    CHECK_ERROR(sb_relu_forward(a, o), SB_ERR_UNSUPPORTED,
                "sb_relu_forward: the bare device has no activation kernel");
    sb_tensor *o1 = NULL;
    CHECK_OK(sb_tensor_new_on(&o1, SB_DEVICE_CUDA, SB_F32, 2, (int64_t[2]){1, 1}));
    CHECK_ERROR(sb_sum(a, NULL, 0, true, o1), SB_ERR_UNSUPPORTED,
                "sb_sum: the bare device has no reduce kernel");
    sb_tensor_free(o1);
    sb_tensor_free(a);
    sb_tensor_free(o);
    sb_backend_register(SB_DEVICE_CUDA, NULL);
    CHECK(!sb_device_available(SB_DEVICE_CUDA), "unregistered again");
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    sb_test_seed(11);
    size_t live0 = sb_backend_mirror_live_blocks();
    test_memory();
    test_linalg();
    test_conv_pool();
    test_pointwise();
    test_losses_norms();
    test_optim_steps();
    test_lenet_training();
    test_autograd_mixture();
    test_unsupported();
    CHECK(sb_backend_mirror_live_blocks() == live0,
          "every mirror tensor was released through its backend (%zu left)",
          sb_backend_mirror_live_blocks() - live0);
    return sb_test_finish();
}
