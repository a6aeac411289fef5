/* Tests for the layer modules (src/nn): construction, state_dict naming and
 * order, PyTorch-default initialisation from Philox streams, train/eval
 * behaviour of batch norm and dropout, hashing, a tiny end-to-end training
 * run that must be bit-reproducible, and bad inputs. */
#include <math.h>
#include "harness.h"
#include "samebits/autograd.h"
#include "samebits/dropout.h"
#include "samebits/hash.h"
#include "samebits/linalg.h"
#include "samebits/loss.h"
#include "samebits/nn.h"
#include "samebits/optim.h"
#include "samebits/random.h"

static sb_tensor *tnew2(int ndim, const int64_t *shape) {
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, SB_F32, ndim, shape) != SB_OK) exit(2);
    return t;
}
static float *F(const sb_tensor *t) { return (float *)t->data; }
static uint64_t lcg = 12345;
static float frand(void) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(lcg >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static void fill(sb_tensor *t) {
    for (int64_t i = 0; i < sb_tensor_numel(t); i++) F(t)[i] = frand();
}
static bool same_bits(const sb_tensor *a, const sb_tensor *b) {
    return sb_tensor_numel(a) == sb_tensor_numel(b) &&
           memcmp(a->data, b->data, (size_t)sb_tensor_numel(a) * sb_dtype_size(a->dtype)) == 0;
}

/* The names of a module's parameters or buffers joined by spaces. */
static void names(sb_module *m, bool params, char *buf, size_t cap) {
    sb_named list[32];
    size_t n = 0;
    sb_status s = params ? sb_module_parameters(m, list, 32, &n) : sb_module_buffers(m, list, 32, &n);
    CHECK(s == SB_OK && n <= 32, "listing failed");
    buf[0] = 0;
    for (size_t i = 0; i < n && i < 32; i++) {
        size_t len = strlen(buf);
        snprintf(buf + len, cap - len, "%s%s", i ? " " : "", list[i].name);
    }
}

static void test_construction(void) {
    sb_module *m = NULL;
    char buf[512];
    CHECK_OK(sb_nn_linear(&m, 5, 3, true));
    CHECK(strcmp(sb_module_kind(m), "linear") == 0, "kind %s", sb_module_kind(m));
    names(m, true, buf, sizeof buf);
    CHECK(strcmp(buf, "weight bias") == 0, "linear params: %s", buf);
    CHECK(sb_module_num_scalars(m) == 18, "linear scalars %lld", (long long)sb_module_num_scalars(m));
    sb_named p[2];
    size_t n;
    CHECK_OK(sb_module_parameters(m, p, 2, &n));
    CHECK(p[0].value->ndim == 2 && p[0].value->shape[0] == 3 && p[0].value->shape[1] == 5 && p[0].grad,
          "linear weight is (out, in) with a gradient");
    CHECK(p[1].value->ndim == 1 && p[1].value->shape[0] == 3, "linear bias (out)");
    CHECK(sb_module_is_training(m), "modules start in training mode");
    sb_module_free(m);

    CHECK_OK(sb_nn_linear(&m, 5, 3, false));
    CHECK(sb_module_num_scalars(m) == 15, "linear without bias");
    sb_module_free(m);

    sb_conv2d_params cp = {2, 2, 1, 1, 1, 1, 2};
    CHECK_OK(sb_nn_conv2d(&m, 4, 6, 3, 2, &cp, true));
    CHECK_OK(sb_module_parameters(m, p, 2, &n));
    CHECK(n == 2 && p[0].value->shape[0] == 6 && p[0].value->shape[1] == 2 && p[0].value->shape[2] == 3 &&
              p[0].value->shape[3] == 2 && p[1].value->shape[0] == 6,
          "conv2d weight (O, C/groups, KH, KW) and bias (O)");
    sb_module_free(m);
    CHECK_OK(sb_nn_conv2d(&m, 3, 4, 3, 3, NULL, false)); /* NULL params = defaults */
    CHECK(sb_module_num_scalars(m) == 4 * 3 * 9, "conv2d without bias");
    sb_module_free(m);
    sb_conv_transpose2d_params tp = {2, 2, 1, 1, 1, 0, 1, 1, 2};
    CHECK_OK(sb_nn_conv_transpose2d(&m, 4, 6, 3, 2, &tp, true));
    CHECK_OK(sb_module_parameters(m, p, 2, &n));
    CHECK(n == 2 && p[0].value->shape[0] == 4 && p[0].value->shape[1] == 3 && p[0].value->shape[2] == 3 &&
              p[0].value->shape[3] == 2 && p[1].value->shape[0] == 6,
          "conv_transpose2d weight (C, O/groups, KH, KW) and bias (O)");
    /* PyTorch's init bound 1/sqrt(O/groups * KH * KW) */
    CHECK_OK(sb_module_init(m, 7));
    float bound = 1.0f / sqrtf(3.0f * 3.0f * 2.0f), wmax = 0.0f;
    for (int64_t e = 0; e < sb_tensor_numel(p[0].value); e++)
        wmax = fmaxf(wmax, fabsf(((float *)p[0].value->data)[e]));
    CHECK(wmax > 0.0f && wmax <= bound, "conv_transpose2d init within +-%g, max %g", bound, wmax);
    sb_module_free(m);
    tp.output_pad_h = 2;
    CHECK_ERROR(sb_nn_conv_transpose2d(&m, 4, 6, 3, 2, &tp, true), SB_ERR_ARG, "output_pad");
    tp.output_pad_h = 1;
    CHECK_ERROR(sb_nn_conv_transpose2d(&m, 4, 5, 3, 2, &tp, true), SB_ERR_ARG, "groups");
    CHECK_OK(sb_nn_conv_transpose2d(&m, 3, 4, 3, 3, NULL, false)); /* NULL params = defaults */
    CHECK(sb_module_num_scalars(m) == 3 * 4 * 9, "conv_transpose2d without bias");
    sb_module_free(m);

    sb_pool2d_params pp = SB_POOL2D_PARAMS(2, 2);
    const char *kinds[] = {"max_pool2d", "avg_pool2d", "relu", "tanh", "sigmoid", "gelu", "flatten", "dropout"};
    for (int k = 0; k < 8; k++) {
        sb_status s;
        switch (k) {
        case 0: s = sb_nn_max_pool2d(&m, &pp); break;
        case 1: s = sb_nn_avg_pool2d(&m, &pp); break;
        case 2: s = sb_nn_relu(&m); break;
        case 3: s = sb_nn_tanh(&m); break;
        case 4: s = sb_nn_sigmoid(&m); break;
        case 5: s = sb_nn_gelu(&m, true); break;
        case 6: s = sb_nn_flatten(&m, 1, -1); break;
        default: s = sb_nn_dropout(&m, 0.5f, 1, 2); break;
        }
        CHECK(s == SB_OK, "constructing %s: %s", kinds[k], sb_last_error());
        CHECK(strcmp(sb_module_kind(m), kinds[k]) == 0, "kind %s want %s", sb_module_kind(m), kinds[k]);
        CHECK_OK(sb_module_parameters(m, NULL, 0, &n));
        CHECK(n == 0 && sb_module_num_scalars(m) == 0, "%s has no parameters", kinds[k]);
        sb_module_free(m);
    }

    CHECK_OK(sb_nn_batch_norm(&m, 4, 1e-5f, 0.1f, true));
    names(m, true, buf, sizeof buf);
    CHECK(strcmp(buf, "weight bias") == 0, "bn params: %s", buf);
    names(m, false, buf, sizeof buf);
    CHECK(strcmp(buf, "running_mean running_var num_batches_tracked") == 0, "bn buffers: %s", buf);
    sb_named b[3];
    CHECK_OK(sb_module_buffers(m, b, 3, &n));
    CHECK(n == 3 && b[2].value->dtype == SB_I64 && b[2].value->ndim == 0 && b[0].grad == NULL,
          "num_batches_tracked is a 0-d int64 buffer");
    CHECK(F(b[1].value)[3] == 1.0f && F(b[0].value)[3] == 0.0f, "fresh running stats are 0 / 1");
    CHECK_OK(sb_module_parameters(m, p, 2, &n));
    CHECK(F(p[0].value)[0] == 1.0f && F(p[1].value)[0] == 0.0f, "fresh bn weight 1 / bias 0");
    sb_module_free(m);
    CHECK_OK(sb_nn_batch_norm(&m, 4, 1e-5f, 0.1f, false));
    CHECK(sb_module_num_scalars(m) == 0, "bn without affine has no parameters");
    sb_module_free(m);

    int64_t ls[2] = {3, 5};
    CHECK_OK(sb_nn_layer_norm(&m, 2, ls, 1e-5f, true));
    CHECK_OK(sb_module_parameters(m, p, 2, &n));
    CHECK(n == 2 && p[0].value->ndim == 2 && p[0].value->shape[1] == 5 && F(p[0].value)[14] == 1.0f &&
              F(p[1].value)[14] == 0.0f,
          "layer_norm weight/bias of the normalized shape, 1 / 0");
    sb_module_free(m);
}

/* Sequential(Conv2d(1,2,3), BatchNorm(2), ReLU, MaxPool(2), Flatten, Linear(8,3)). */
static sb_module *make_cnn(void) {
    sb_module *c[6] = {NULL};
    sb_pool2d_params pp = SB_POOL2D_PARAMS(2, 2);
    CHECK_OK(sb_nn_conv2d(&c[0], 1, 2, 3, 3, NULL, true));
    CHECK_OK(sb_nn_batch_norm(&c[1], 2, 1e-5f, 0.1f, true));
    CHECK_OK(sb_nn_relu(&c[2]));
    CHECK_OK(sb_nn_max_pool2d(&c[3], &pp));
    CHECK_OK(sb_nn_flatten(&c[4], 1, -1));
    CHECK_OK(sb_nn_linear(&c[5], 8, 3, true));
    sb_module *m = NULL;
    CHECK_OK(sb_nn_sequential(&m, c, 6));
    return m;
}

static void test_naming_and_init(void) {
    sb_module *m = make_cnn();
    char buf[512];
    names(m, true, buf, sizeof buf);
    CHECK(strcmp(buf, "0.weight 0.bias 1.weight 1.bias 5.weight 5.bias") == 0, "state_dict params: %s", buf);
    names(m, false, buf, sizeof buf);
    CHECK(strcmp(buf, "1.running_mean 1.running_var 1.num_batches_tracked") == 0, "buffers: %s", buf);
    size_t n = 0;
    sb_named few[2];
    CHECK_OK(sb_module_parameters(m, few, 2, &n));
    CHECK(n == 6 && strcmp(few[1].name, "0.bias") == 0, "cap smaller than count still reports the total");

    /* init: stream k = parameter k, bound 1/sqrtf(fan_in) */
    CHECK_OK(sb_module_init(m, 42));
    sb_named p[6];
    CHECK_OK(sb_module_parameters(m, p, 6, &n));
    int64_t fan_in[6] = {9, 9, 0, 0, 8, 8};
    for (int k = 0; k < 6; k++) {
        int64_t cnt = sb_tensor_numel(p[k].value);
        if (k == 2 || k == 3) {
            for (int64_t i = 0; i < cnt; i++)
                CHECK_BITS(F(p[k].value)[i], k == 2 ? 1.0f : 0.0f, "bn %s", p[k].name);
            continue;
        }
        float bound = 1.0f / sqrtf((float)fan_in[k]);
        float want[64];
        sb_rng rng = sb_rng_make(42, (uint64_t)k);
        CHECK_OK(sb_rng_uniform_range(&rng, 0, -bound, bound, want, cnt));
        for (int64_t i = 0; i < cnt; i++) {
            CHECK_BITS(F(p[k].value)[i], want[i], "%s[%lld] from Philox (42, %d)", p[k].name, (long long)i, k);
            CHECK(fabsf(F(p[k].value)[i]) <= bound, "%s within the bound", p[k].name);
        }
    }
    unsigned char h1[32], h2[32], h3[32];
    CHECK_OK(sb_module_hash(m, h1));
    /* hash = SHA-256 of the parameters' canonical bytes in declaration order */
    sb_sha256_ctx ctx;
    sb_sha256_init(&ctx);
    for (int k = 0; k < 6; k++) CHECK_OK(sb_sha256_tensor(&ctx, p[k].value));
    sb_sha256_final(&ctx, h2);
    CHECK(memcmp(h1, h2, 32) == 0, "module hash = sha256 of the parameters in order");

    /* deterministic for a seed, different for another; init resets buffers */
    sb_named bufs[3];
    CHECK_OK(sb_module_buffers(m, bufs, 3, &n));
    F(bufs[0].value)[0] = 5.0f;
    F(bufs[1].value)[1] = 7.0f;
    ((int64_t *)bufs[2].value->data)[0] = 9;
    F(p[2].value)[0] = 3.0f;
    CHECK_OK(sb_module_init(m, 43));
    CHECK_OK(sb_module_hash(m, h3));
    CHECK(memcmp(h1, h3, 32) != 0, "another seed gives other weights");
    CHECK_OK(sb_module_init(m, 42));
    CHECK_OK(sb_module_hash(m, h2));
    CHECK(memcmp(h1, h2, 32) == 0, "init is deterministic for a seed");
    CHECK(F(bufs[0].value)[0] == 0.0f && F(bufs[1].value)[1] == 1.0f && ((int64_t *)bufs[2].value->data)[0] == 0,
          "init resets running_mean 0, running_var 1, num_batches_tracked 0");

    /* a one-ulp change of one parameter changes the hash */
    uint32_t u;
    memcpy(&u, &F(p[4].value)[5], 4);
    u ^= 1;
    memcpy(&F(p[4].value)[5], &u, 4);
    CHECK_OK(sb_module_hash(m, h3));
    CHECK(memcmp(h1, h3, 32) != 0, "a changed parameter changes the hash");
    CHECK_OK(sb_module_hash(m, h2));
    CHECK(memcmp(h2, h3, 32) == 0, "hash is deterministic");

    /* a forward/backward through the sequential fills every gradient */
    sb_graph *g = NULL;
    CHECK_OK(sb_graph_new(&g));
    int64_t xs[4] = {2, 1, 6, 6}, two = 2;
    sb_tensor *x = tnew2(4, xs), *lab = NULL;
    fill(x);
    CHECK_OK(sb_tensor_new(&lab, SB_I64, 1, &two));
    ((int64_t *)lab->data)[1] = 2;
    sb_variable *vx, *y, *loss;
    CHECK_OK(sb_graph_input(g, x, &vx));
    CHECK_OK(sb_module_forward(m, g, vx, &y));
    CHECK(y && y->value->ndim == 2 && y->value->shape[0] == 2 && y->value->shape[1] == 3, "cnn output (2, 3)");
    CHECK_OK(sb_ag_cross_entropy(g, y, lab, SB_LOSS_MEAN, 0, &loss));
    CHECK_OK(sb_graph_backward(g, loss));
    for (int k = 0; k < 6; k++) {
        double s = 0;
        for (int64_t i = 0; i < sb_tensor_numel(p[k].grad); i++) s += fabs(F(p[k].grad)[i]);
        CHECK(s > 0, "%s received a gradient", p[k].name);
    }
    CHECK(((int64_t *)bufs[2].value->data)[0] == 1, "num_batches_tracked counted the training forward");

    /* a module's graph must not be mistaken for a later graph (freed + new) */
    sb_graph_free(g);
    CHECK_OK(sb_graph_new(&g));
    CHECK_OK(sb_graph_input(g, x, &vx));
    CHECK_OK(sb_module_forward(m, g, vx, &y));
    CHECK_OK(sb_ag_cross_entropy(g, y, lab, SB_LOSS_MEAN, 0, &loss));
    CHECK_OK(sb_graph_backward(g, loss));
    sb_graph_free(g);
    sb_tensor_free(x);
    sb_tensor_free(lab);
    sb_module_free(m);
}

/* Linear module = sb_ag_linear on the same tensors, bit for bit. */
static void test_module_matches_op(void) {
    sb_module *m = NULL;
    CHECK_OK(sb_nn_linear(&m, 4, 3, true));
    CHECK_OK(sb_module_init(m, 7));
    sb_named p[2];
    size_t n;
    CHECK_OK(sb_module_parameters(m, p, 2, &n));
    int64_t xs[2] = {5, 4}, ys[2] = {5, 3};
    sb_tensor *x = tnew2(2, xs), *y2 = tnew2(2, ys);
    fill(x);
    sb_graph *g = NULL;
    CHECK_OK(sb_graph_new(&g));
    sb_variable *vx, *y;
    CHECK_OK(sb_graph_input(g, x, &vx));
    CHECK_OK(sb_module_forward(m, g, vx, &y));
    CHECK_OK(sb_linear_forward(x, p[0].value, p[1].value, y2));
    CHECK(same_bits(y->value, y2), "linear module forward = sb_linear_forward");
    /* weight sharing: the same module twice in one step binds one leaf */
    sb_variable *z;
    int64_t ws[2] = {3, 3};
    sb_module *sq = NULL;
    CHECK_OK(sb_nn_linear(&sq, 3, 3, false));
    CHECK_OK(sb_module_init(sq, 8));
    CHECK_OK(sb_module_forward(sq, g, y, &z));
    CHECK_OK(sb_module_forward(sq, g, z, &z));
    sb_tensor *t = tnew2(2, ys);
    fill(t);
    sb_variable *loss;
    CHECK_OK(sb_ag_mse(g, z, t, SB_LOSS_SUM, &loss));
    CHECK_OK(sb_graph_backward(g, loss));
    sb_named q[1];
    CHECK_OK(sb_module_parameters(sq, q, 1, &n));
    /* by hand: z1 = y W^T, z2 = z1 W^T; dW = c(z2) + c(z1) in reverse tape order */
    sb_tensor *z1 = tnew2(2, ys), *z2 = tnew2(2, ys), *one = NULL, *dz2 = tnew2(2, ys), *dz1 = tnew2(2, ys);
    sb_tensor *c2 = tnew2(2, ws), *c1 = tnew2(2, ws);
    CHECK_OK(sb_tensor_new(&one, SB_F32, 0, NULL));
    F(one)[0] = 1.0f;
    CHECK_OK(sb_linear_forward(y2, q[0].value, NULL, z1));
    CHECK_OK(sb_linear_forward(z1, q[0].value, NULL, z2));
    CHECK_OK(sb_mse_backward(z2, t, SB_LOSS_SUM, one, dz2, NULL));
    CHECK_OK(sb_linear_backward(dz2, z1, q[0].value, dz1, c2, NULL));
    CHECK_OK(sb_linear_backward(dz1, y2, q[0].value, NULL, c1, NULL));
    for (int i = 0; i < 9; i++) CHECK_BITS(F(q[0].grad)[i], F(c2)[i] + F(c1)[i], "shared weight grad[%d]", i);
    sb_tensor *ts[] = {x, y2, t, z1, z2, one, dz2, dz1, c2, c1};
    for (size_t i = 0; i < 10; i++) sb_tensor_free(ts[i]);
    sb_graph_free(g);
    sb_module_free(m);
    sb_module_free(sq);
}

static void test_batch_norm_modes(void) {
    for (int four = 0; four < 2; four++) {
        sb_module *m = NULL;
        CHECK_OK(sb_nn_batch_norm(&m, 3, 1e-5f, 0.1f, true));
        CHECK_OK(sb_module_init(m, 1));
        int64_t s2[2] = {8, 3}, s4[4] = {2, 3, 2, 2};
        sb_tensor *x = four ? tnew2(4, s4) : tnew2(2, s2);
        fill(x);
        for (int64_t i = 0; i < sb_tensor_numel(x); i++) F(x)[i] = 2.0f * F(x)[i] + 1.0f;
        sb_named b[3];
        size_t n;
        CHECK_OK(sb_module_buffers(m, b, 3, &n));
        sb_graph *g = NULL;
        CHECK_OK(sb_graph_new(&g));
        sb_variable *vx, *y;
        CHECK_OK(sb_graph_input(g, x, &vx));
        CHECK_OK(sb_module_forward(m, g, vx, &y));
        /* train: running stats move toward the batch statistics (norm's contract
         * gives the exact bits; here: they changed, and the mean moved by
         * momentum * batch mean from 0) */
        int64_t per = sb_tensor_numel(x) / 3;
        for (int c = 0; c < 3; c++) {
            double mean = 0;
            for (int64_t i = 0; i < sb_tensor_numel(x); i++) {
                int64_t ch = four ? (i / 4) % 3 : i % 3;
                if (ch == c) mean += F(x)[i];
            }
            mean /= (double)per;
            CHECK(fabs(F(b[0].value)[c] - 0.1 * mean) < 1e-5, "running_mean[%d] %g vs 0.1 * %g", c,
                  F(b[0].value)[c], mean);
            CHECK(F(b[1].value)[c] != 1.0f, "running_var[%d] updated", c);
        }
        CHECK(((int64_t *)b[2].value->data)[0] == 1, "num_batches_tracked 1");
        /* eval: buffers unchanged, output uses them */
        float rm[3], rv[3];
        memcpy(rm, b[0].value->data, sizeof rm);
        memcpy(rv, b[1].value->data, sizeof rv);
        sb_module_train(m, false);
        CHECK(!sb_module_is_training(m), "eval mode");
        sb_graph_reset(g);
        CHECK_OK(sb_graph_input(g, x, &vx));
        CHECK_OK(sb_module_forward(m, g, vx, &y));
        CHECK(memcmp(rm, b[0].value->data, sizeof rm) == 0 && memcmp(rv, b[1].value->data, sizeof rv) == 0,
              "eval leaves the running stats");
        CHECK(((int64_t *)b[2].value->data)[0] == 1, "eval does not count batches");
        for (int64_t i = 0; i < sb_tensor_numel(x); i++) {
            int64_t ch = four ? (i / 4) % 3 : i % 3;
            double want = (F(x)[i] - rm[ch]) / sqrt((double)rv[ch] + 1e-5);
            CHECK(fabs(F(y->value)[i] - want) < 1e-5 * (1 + fabs(want)), "eval output[%lld]", (long long)i);
        }
        /* a rejected input changes no buffer */
        sb_module_train(m, true);
        int64_t bad[2] = {8, 4};
        sb_tensor *xb = tnew2(2, bad);
        sb_graph_reset(g);
        CHECK_OK(sb_graph_input(g, xb, &vx));
        sb_clear_error();
        CHECK(sb_module_forward(m, g, vx, &y) != SB_OK, "4 channels into a 3-channel batch norm is rejected");
        CHECK(((int64_t *)b[2].value->data)[0] == 1, "rejected forward counted a batch");
        CHECK(memcmp(rm, b[0].value->data, sizeof rm) == 0, "rejected forward changed running_mean");
        sb_tensor_free(xb);
        sb_tensor_free(x);
        sb_graph_free(g);
        sb_module_free(m);
    }
}

static void test_dropout_module(void) {
    sb_module *m = NULL;
    CHECK_OK(sb_nn_dropout(&m, 0.4f, 99, 5));
    int64_t s[2] = {3, 7};
    sb_tensor *x = tnew2(2, s), *want = tnew2(2, s);
    fill(x);
    sb_graph *g = NULL;
    CHECK_OK(sb_graph_new(&g));
    sb_variable *vx, *y;
    /* training: consecutive calls use offsets 0, 21, 42 of stream (99, 5) */
    for (uint64_t call = 0; call < 3; call++) {
        sb_graph_reset(g);
        CHECK_OK(sb_graph_input(g, x, &vx));
        CHECK_OK(sb_module_forward(m, g, vx, &y));
        CHECK_OK(sb_dropout_forward(x, 0.4f, true, 99, 5, 21 * call, want, NULL));
        CHECK(same_bits(y->value, want), "training call %d uses offset %d", (int)call, (int)(21 * call));
    }
    /* eval: identity, and the offset does not advance */
    sb_module_train(m, false);
    sb_graph_reset(g);
    CHECK_OK(sb_graph_input(g, x, &vx));
    CHECK_OK(sb_module_forward(m, g, vx, &y));
    CHECK(same_bits(y->value, x), "eval dropout is the identity");
    sb_module_train(m, true);
    sb_graph_reset(g);
    CHECK_OK(sb_graph_input(g, x, &vx));
    CHECK_OK(sb_module_forward(m, g, vx, &y));
    CHECK_OK(sb_dropout_forward(x, 0.4f, true, 99, 5, 63, want, NULL));
    CHECK(same_bits(y->value, want), "after eval the next training call uses offset 63");
    sb_tensor_free(x);
    sb_tensor_free(want);
    sb_graph_free(g);
    sb_module_free(m);
}

/* Sequential(Linear(4,8), Tanh, Linear(8,3)), 50 SGD steps on 12 points.
 * Returns the final loss; writes the parameter hash and the first loss. */
static float train_tiny(unsigned char hash[32], float *first_loss) {
    sb_module *c[3] = {NULL}, *m = NULL;
    CHECK_OK(sb_nn_linear(&c[0], 4, 8, true));
    CHECK_OK(sb_nn_tanh(&c[1]));
    CHECK_OK(sb_nn_linear(&c[2], 8, 3, true));
    CHECK_OK(sb_nn_sequential(&m, c, 3));
    CHECK_OK(sb_module_init(m, 2024));
    int64_t xs[2] = {12, 4}, nl = 12;
    sb_tensor *x = tnew2(2, xs), *lab = NULL;
    CHECK_OK(sb_tensor_new(&lab, SB_I64, 1, &nl));
    for (int i = 0; i < 12; i++) { /* class = which of three fixed centres, plus small noise */
        int k = i % 3;
        ((int64_t *)lab->data)[i] = k;
        for (int j = 0; j < 4; j++)
            F(x)[i * 4 + j] = (j == k ? 1.5f : -0.5f) + 0.25f * (float)((i * 7 + j * 3) % 5 - 2) / 2.0f;
    }
    sb_named p[4];
    size_t n;
    CHECK_OK(sb_module_parameters(m, p, 4, &n));
    sb_sgd_config cfg = sb_sgd_default_config(0.2);
    sb_graph *g = NULL;
    CHECK_OK(sb_graph_new(&g));
    float loss_v = NAN;
    for (int step = 1; step <= 50; step++) {
        sb_graph_reset(g);
        sb_variable *vx, *y, *loss;
        CHECK_OK(sb_graph_input(g, x, &vx));
        CHECK_OK(sb_module_forward(m, g, vx, &y));
        CHECK_OK(sb_ag_cross_entropy(g, y, lab, SB_LOSS_MEAN, 0, &loss));
        CHECK_OK(sb_graph_backward(g, loss));
        loss_v = F(loss->value)[0];
        if (step == 1) *first_loss = loss_v;
        for (size_t k = 0; k < n; k++) CHECK_OK(sb_sgd_step_tensor(&cfg, step, p[k].value, p[k].grad, NULL));
    }
    CHECK_OK(sb_module_hash(m, hash));
    sb_graph_free(g);
    sb_tensor_free(x);
    sb_tensor_free(lab);
    sb_module_free(m);
    return loss_v;
}

static void test_end_to_end(void) {
    unsigned char h1[32], h2[32];
    float f1, f2;
    float l1 = train_tiny(h1, &f1), l2 = train_tiny(h2, &f2);
    CHECK(l1 < 0.5f * f1, "training reduces the loss: %g -> %g", f1, l1);
    CHECK_BITS(l1, l2, "two runs give the same final loss");
    CHECK(memcmp(h1, h2, 32) == 0, "two runs give bitwise-identical parameters");
}

static void test_bad_inputs(void) {
    sb_module *m = (sb_module *)1;
    CHECK_ERROR(sb_nn_linear(&m, -1, 3, true), SB_ERR_ARG, "sb_nn_linear");
    CHECK(m == NULL, "out cleared on error");
    CHECK_ERROR(sb_nn_linear(&m, 3, 0, true), SB_ERR_ARG, "features must be positive");
    CHECK_ERROR(sb_nn_linear(NULL, 3, 2, true), SB_ERR_NULL, "out is NULL");
    sb_conv2d_params cp = {1, 1, 0, 0, 1, 1, 2};
    CHECK_ERROR(sb_nn_conv2d(&m, 3, 4, 3, 3, &cp, true), SB_ERR_ARG, "divisible by groups");
    CHECK_ERROR(sb_nn_conv2d(&m, 4, 3, 3, 3, &cp, true), SB_ERR_ARG, "divisible by groups");
    CHECK_ERROR(sb_nn_conv2d(&m, 4, 4, 0, 3, NULL, true), SB_ERR_ARG, "sb_nn_conv2d");
    cp = (sb_conv2d_params){-1, 1, 0, 0, 1, 1, 1};
    CHECK_ERROR(sb_nn_conv2d(&m, 4, 4, 3, 3, &cp, true), SB_ERR_ARG, "sb_nn_conv2d");
    cp = (sb_conv2d_params){1, 1, 0, 0, 1, 1, -2};
    CHECK_ERROR(sb_nn_conv2d(&m, 4, 4, 3, 3, &cp, true), SB_ERR_ARG, "sb_nn_conv2d");
    CHECK_ERROR(sb_nn_max_pool2d(&m, NULL), SB_ERR_NULL, "params is NULL");
    CHECK_ERROR(sb_nn_dropout(&m, 1.5f, 1, 1), SB_ERR_ARG, "outside [0, 1]");
    CHECK_ERROR(sb_nn_dropout(&m, -0.1f, 1, 1), SB_ERR_ARG, "outside [0, 1]");
    CHECK_ERROR(sb_nn_dropout(&m, NAN, 1, 1), SB_ERR_ARG, "outside [0, 1]");
    CHECK_ERROR(sb_nn_batch_norm(&m, 0, 1e-5f, 0.1f, true), SB_ERR_ARG, "sb_nn_batch_norm");
    CHECK_ERROR(sb_nn_batch_norm(&m, 3, 0.0f, 0.1f, true), SB_ERR_ARG, "eps > 0");
    CHECK_ERROR(sb_nn_batch_norm(&m, 3, 1e-5f, 1.5f, true), SB_ERR_ARG, "momentum");
    int64_t ls[2] = {3, -5};
    CHECK_ERROR(sb_nn_layer_norm(&m, 0, ls, 1e-5f, true), SB_ERR_ARG, "sb_nn_layer_norm");
    CHECK_ERROR(sb_nn_layer_norm(&m, 1, NULL, 1e-5f, true), SB_ERR_ARG, "sb_nn_layer_norm");
    CHECK_ERROR(sb_nn_layer_norm(&m, 2, ls, 1e-5f, true), SB_ERR_ARG, "sb_nn_layer_norm");
    CHECK(m == NULL, "out stays NULL");

    /* sequential: takes ownership also on failure (ASan checks no leak) */
    sb_module *kids[2] = {NULL, NULL};
    CHECK_OK(sb_nn_relu(&kids[0]));
    CHECK_ERROR(sb_nn_sequential(&m, kids, 2), SB_ERR_NULL, "child 1 is NULL");
    CHECK_ERROR(sb_nn_sequential(&m, NULL, 2), SB_ERR_NULL, "children is NULL");

    /* forward errors */
    CHECK_OK(sb_nn_linear(&m, 4, 3, true));
    sb_graph *g = NULL;
    CHECK_OK(sb_graph_new(&g));
    int64_t bad[2] = {2, 5};
    sb_tensor *x = tnew2(2, bad);
    sb_variable *vx, *y = (sb_variable *)1;
    CHECK_OK(sb_graph_input(g, x, &vx));
    CHECK_ERROR(sb_module_forward(m, g, vx, &y), SB_ERR_SHAPE, "sb_linear");
    CHECK(y == NULL, "y cleared on error");
    CHECK_ERROR(sb_module_forward(NULL, g, vx, &y), SB_ERR_NULL, "module is NULL");
    CHECK_ERROR(sb_module_forward(m, NULL, vx, &y), SB_ERR_NULL, "graph is NULL");
    CHECK_ERROR(sb_module_forward(m, g, NULL, &y), SB_ERR_NULL, "x is NULL");
    CHECK_ERROR(sb_module_forward(m, g, vx, NULL), SB_ERR_NULL, "y is NULL");
    size_t n;
    CHECK_ERROR(sb_module_parameters(NULL, NULL, 0, &n), SB_ERR_NULL, "module is NULL");
    CHECK_ERROR(sb_module_parameters(m, NULL, 0, NULL), SB_ERR_NULL, "count is NULL");
    CHECK_ERROR(sb_module_parameters(m, NULL, 3, &n), SB_ERR_NULL, "out is NULL");
    CHECK_ERROR(sb_module_buffers(NULL, NULL, 0, &n), SB_ERR_NULL, "module is NULL");
    unsigned char d[32];
    CHECK_ERROR(sb_module_init(NULL, 1), SB_ERR_NULL, "sb_module_init");
    CHECK_ERROR(sb_module_hash(NULL, d), SB_ERR_NULL, "sb_module_hash");
    CHECK_ERROR(sb_module_hash(m, NULL), SB_ERR_NULL, "digest is NULL");
    sb_module_free(m);

    /* a conv module fed a 2-D input; a pool fed a 3-D one */
    CHECK_OK(sb_nn_conv2d(&m, 5, 2, 1, 1, NULL, true));
    sb_graph_reset(g);
    CHECK_OK(sb_graph_input(g, x, &vx));
    CHECK_ERROR(sb_module_forward(m, g, vx, &y), SB_ERR_SHAPE, "need 4 dims");
    sb_module_free(m);
    sb_pool2d_params pp = SB_POOL2D_PARAMS(2, 2);
    CHECK_OK(sb_nn_avg_pool2d(&m, &pp));
    CHECK_ERROR(sb_module_forward(m, g, vx, &y), SB_ERR_SHAPE, "(N,C,H,W)");
    sb_module_free(m);
    /* dropout rejected input does not advance its offset: checked via bits */
    CHECK_OK(sb_nn_dropout(&m, 0.5f, 3, 4));
    CHECK_ERROR(sb_module_forward(m, g, NULL, &y), SB_ERR_NULL, "x is NULL");
    sb_module_free(m);

    CHECK(strcmp(sb_module_kind(NULL), "(null)") == 0, "kind of NULL");
    CHECK(sb_module_num_scalars(NULL) == 0 && !sb_module_is_training(NULL), "NULL queries");
    sb_module_train(NULL, true);
    sb_module_free(NULL);
    sb_tensor_free(x);
    sb_graph_free(g);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_construction();
    test_naming_and_init();
    test_module_matches_op();
    test_batch_norm_modes();
    test_dropout_module();
    test_end_to_end();
    test_bad_inputs();
    return sb_test_finish();
}
