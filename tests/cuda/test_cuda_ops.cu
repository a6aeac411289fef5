/* tests/cuda/test_cuda_ops.cu - the CUDA device's op table (the GPU host
 * layer, src/gpu/ops.c, over the kernels of src/gpu/kernels compiled by
 * nvcc) against the CPU reference (src/ref/, src/core/, src/math/,
 * src/optim/), entry by entry on raw device memory, bit for bit, on random,
 * odd-shaped and adversarial inputs; and every kernel of
 * src/gpu/kernel_list.h has its CUDA compilation (checked without a GPU).
 * Without a usable GPU it prints "SKIPPED: no CUDA device (reason)" after
 * that check and exits 0. Built by `make cuda`. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>
extern "C" {
#include "core/canonical_sum.h"
#include "ref/ref_linalg.h"
#include "ref/ref_loss.h"
#include "ref/ref_pointwise.h"
}
#include "harness.h"
#include "samebits/cuda.h"
#include "cuda/cuda_internal.h"
extern "C" {
#include "backend/backend.h"
}

static sb_cuda_context *ctx;
static const sb_backend *be; /* the CUDA device's table, ctx serving it */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t next32(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}
static float bits(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

/* Mostly values in (-2, 2); with `adv`, also +-0, subnormals, huge values,
 * near-cancelling pairs, and (rarely) inf and NaN. */
static std::vector<float> rnd(size_t n, bool adv) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++) {
        uint32_t r = next32();
        float x = ((float)(next32() >> 8) * 0x1p-24f) * 4.0f - 2.0f;
        if (adv) switch (r % 16) {
            case 0: x = (r & 16) ? -0.0f : 0.0f; break;
            case 1: x = bits((next32() & 0x007fffffu) | (r & 0x80000000u)); break;
            case 2: x = x * 1e30f; break;
            case 3: x = i > 0 ? -v[i - 1] * (1.0f + 0x1p-23f) : x; break;
            case 4: if (r % 97 == 0) x = (r & 32) ? INFINITY : NAN; break;
            default: break;
            }
        v[i] = x;
    }
    return v;
}

static uint32_t canon(float x) { return isnan(x) ? 0x7fc00000u : sb_test_bits(x); }

template <class T> static T *up(const std::vector<T> &h) {
    void *d = NULL;
    CHECK_OK(sb_cuda_malloc(ctx, h.size() * sizeof(T) + 4, &d));
    CHECK_OK(sb_cuda_memcpy_h2d(ctx, d, h.data(), h.size() * sizeof(T)));
    return (T *)d;
}
template <class T> static std::vector<T> down(const T *d, size_t n) {
    std::vector<T> h(n);
    CHECK_OK(sb_cuda_memcpy_d2h(ctx, h.data(), d, n * sizeof(T)));
    return h;
}
static void release(const void *d) { sb_cuda_free(ctx, (void *)d); }

/* Compares a device array with the reference bits; reports the first few. */
static void same(const char *what, const float *d, const std::vector<float> &want) {
    std::vector<float> got = down(d, want.size());
    long bad = 0;
    for (size_t i = 0; i < want.size(); i++)
        if (canon(got[i]) != canon(want[i]) && bad++ < 3)
            fprintf(stderr, "%s[%zu]: got %a want %a\n", what, i, got[i], want[i]);
    CHECK(bad == 0, "%s: %ld of %zu elements differ from the CPU reference", what, bad,
          want.size());
}

static void test_sgemm(void) {
    const int64_t shapes[][3] = {{1, 1, 1}, {3, 5, 0}, {33, 17, 65}, {130, 129, 257}, {7, 300, 9},
                                 {256, 256, 512}};
    const char tr[] = {'N', 'T'};
    for (auto &s : shapes)
        for (char ta : tr)
            for (char tb : tr)
                for (int cont = 0; cont < 2; cont++) {
                    int64_t m = s[0], n = s[1], k = s[2];
                    int64_t lda = (ta == 'N' ? k : m) + 3, ldb = (tb == 'N' ? n : k) + 1,
                            ldc = n + 2;
                    auto a = rnd((size_t)((ta == 'N' ? m : k) * lda) + 1, true);
                    auto b = rnd((size_t)((tb == 'N' ? k : n) * ldb) + 1, true);
                    auto c = rnd((size_t)(m * ldc), false);
                    float *da = up(a), *db = up(b), *dc = up(c);
                    sb_ref_sgemm(ta, tb, m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc,
                                 cont);
                    CHECK_OK(sb_cuda_sgemm(ctx, ta, tb, m, n, k, da, lda, db, ldb, dc, ldc, cont));
                    char what[96];
                    snprintf(what, sizeof what, "sgemm %c%c %lldx%lldx%lld cont=%d", ta, tb,
                             (long long)m, (long long)n, (long long)k, cont);
                    same(what, dc, c);
                    release(da); release(db); release(dc);
                }
    CHECK_ERROR(sb_cuda_sgemm(ctx, 'X', 'N', 1, 1, 1, NULL, 1, NULL, 1, NULL, 1, false), SB_ERR_ARG,
                "transa");
    CHECK_ERROR(sb_cuda_sgemm(NULL, 'N', 'N', 1, 1, 1, NULL, 1, NULL, 1, NULL, 1, false),
                SB_ERR_NULL, "ctx");
}

static void test_sum(void) {
    const int64_t ns[] = {0, 1, 31, 32, 33, 8191, 8192, 8193, 3 * 8192 + 5, 70001, 8192 * 8192 + 7};
    for (int64_t n : ns) {
        if (n > 1000000 && sb_test_quick()) continue;
        for (int64_t stride = 1; stride <= 3; stride += 2) {
            if (n * stride > 100000000) continue;
            auto x = rnd((size_t)(n * stride) + 1, true);
            float *dx = up(x), *dout = NULL;
            CHECK_OK(sb_cuda_malloc(ctx, 4, (void **)&dout));
            CHECK_OK(sb_cuda_sum_canonical(ctx, dx, n, stride, dout));
            char what[64];
            snprintf(what, sizeof what, "canonical sum n=%lld stride=%lld", (long long)n,
                     (long long)stride);
            same(what, dout, {sb_sum_canonical(x.data(), n, stride)});
            release(dx); release(dout);
        }
    }
    /* all -0 sums to -0; the empty sum is +0 */
    std::vector<float> z(100, -0.0f);
    float *dz = up(z), *dout = NULL;
    CHECK_OK(sb_cuda_malloc(ctx, 4, (void **)&dout));
    CHECK_OK(sb_cuda_sum_canonical(ctx, dz, 100, 1, dout));
    same("sum of -0", dout, {-0.0f});
    release(dz); release(dout);
}

static void test_conv(void) {
    /* n, c_in, h, w, c_out, kh, kw, sh, sw, ph, pw, dh, dw, groups */
    const int64_t gs[][14] = {{4, 1, 28, 28, 6, 5, 5, 1, 1, 2, 2, 1, 1, 1},
                              {3, 6, 14, 14, 16, 5, 5, 1, 1, 0, 0, 1, 1, 1},
                              {2, 4, 9, 11, 6, 3, 2, 2, 3, 1, 2, 2, 1, 2},
                              {1, 3, 5, 5, 3, 3, 3, 3, 3, 2, 2, 1, 1, 3},
                              {2, 2, 7, 6, 4, 1, 1, 2, 2, 0, 0, 1, 1, 1}};
    for (auto &q : gs) {
        sb_conv2d_geom g = {q[0], q[1], q[2], q[3], q[4], q[5], q[6], 0, 0,
                            q[7], q[8], q[9], q[10], q[11], q[12], q[13]};
        g.oh = (g.h + 2 * g.pad_h - g.dilation_h * (g.kh - 1) - 1) / g.stride_h + 1;
        g.ow = (g.w + 2 * g.pad_w - g.dilation_w * (g.kw - 1) - 1) / g.stride_w + 1;
        size_t xn = g.n * g.c_in * g.h * g.w, wn = g.c_out * (g.c_in / g.groups) * g.kh * g.kw,
               yn = g.n * g.c_out * g.oh * g.ow;
        auto x = rnd(xn, true), w = rnd(wn, true), b = rnd(g.c_out, false), dy = rnd(yn, true);
        std::vector<float> y(yn), dx(xn), dw(wn), db(g.c_out);
        float *dX = up(x), *dW = up(w), *dB = up(b), *dDY = up(dy), *dY = up(y), *dDX = up(dx),
              *dDW = up(dw), *dDB = up(db);
        sb_ref_conv2d_forward(&g, x.data(), w.data(), b.data(), y.data());
        CHECK_OK(be->ops->conv2d_forward(be, &g, dX, dW, dB, dY));
        same("conv2d forward", dY, y);
        sb_ref_conv2d_backward_input(&g, dy.data(), w.data(), dx.data());
        CHECK_OK(be->ops->conv2d_backward(be, &g, dDY, dX, dW, dDX, NULL, NULL));
        same("conv2d grad_input", dDX, dx);
        sb_ref_conv2d_backward_weight(&g, dy.data(), x.data(), dw.data());
        CHECK_OK(be->ops->conv2d_backward(be, &g, dDY, dX, dW, NULL, dDW, NULL));
        same("conv2d grad_weight", dDW, dw);
        sb_ref_conv2d_backward_bias(&g, dy.data(), db.data());
        CHECK_OK(be->ops->conv2d_backward(be, &g, dDY, dX, dW, NULL, NULL, dDB));
        same("conv2d grad_bias", dDB, db);
        for (const float *p : {dX, dW, dB, dDY, dY, dDX, dDW, dDB}) release(p);
    }
}

static void test_linear(void) {
    const int64_t cs[][3] = {{64, 400, 120}, {5, 1, 3}, {1, 84, 10}, {300, 33, 70}};
    for (auto &c : cs) {
        int64_t R = c[0], in = c[1], out = c[2];
        auto x = rnd(R * in, true), w = rnd(out * in, true), b = rnd(out, false),
             dy = rnd(R * out, true);
        std::vector<float> y(R * out), dx(R * in), dw(out * in), db(out);
        float *dX = up(x), *dW = up(w), *dB = up(b), *dDY = up(dy), *dY = up(y), *dDX = up(dx),
              *dDW = up(dw), *dDB = up(db);
        sb_ref_sgemm('N', 'T', R, out, in, x.data(), in, w.data(), in, y.data(), out, false);
        for (int64_t r = 0; r < R; r++)
            for (int64_t o = 0; o < out; o++) y[r * out + o] = y[r * out + o] + b[o];
        CHECK_OK(be->ops->linear_forward(be, R, in, out, dX, dW, dB, dY));
        same("linear forward", dY, y);
        sb_ref_sgemm('N', 'N', R, in, out, dy.data(), out, w.data(), in, dx.data(), in, false);
        sb_ref_sgemm('T', 'N', out, in, R, dy.data(), out, x.data(), in, dw.data(), in, false);
        for (int64_t o = 0; o < out; o++) db[o] = sb_sum_canonical(dy.data() + o, R, out);
        CHECK_OK(be->ops->linear_backward(be, R, in, out, dDY, dX, dW, dDX, dDW, dDB));
        same("linear dx", dDX, dx);
        same("linear dw", dDW, dw);
        same("linear db", dDB, db);
        for (const float *p : {dX, dW, dB, dDY, dY, dDX, dDW, dDB}) release(p);
    }
}

static void test_pool(void) {
    /* planes, h, w, kh, kw, sh, sw, ph, pw, ceil, count_include_pad */
    const int64_t ps[][11] = {{24, 28, 28, 2, 2, 2, 2, 0, 0, 0, 1}, {5, 9, 7, 3, 3, 2, 1, 1, 1, 1, 1},
                              {3, 8, 8, 3, 2, 1, 2, 1, 0, 0, 0}, {2, 5, 6, 4, 4, 3, 3, 2, 2, 1, 0}};
    for (auto &q : ps) {
        sb_pool2d_params p = {q[3], q[4], q[5], q[6], q[7], q[8], q[9] != 0, q[10] != 0, 0, 0, 0};
        int64_t oh, ow;
        CHECK_OK(sb_pool2d_output_size(q[1], q[2], &p, &oh, &ow));
        sb_pool2d_geom g = {q[0], q[1], q[2], oh, ow, q[3], q[4], q[5], q[6], q[7], q[8],
                            q[10] != 0, false, 1, 1, 0};
        size_t xn = g.planes * g.h * g.w, yn = g.planes * oh * ow;
        auto x = rnd(xn, true), dy = rnd(yn, true);
        for (size_t i = 0; i < xn; i += 7) x[i] = x[i / 2]; /* ties */
        std::vector<float> y(yn), dx(xn);
        std::vector<int64_t> idx(yn);
        float *dX = up(x), *dDY = up(dy), *dY = up(y), *dDX = up(dx);
        int64_t *dI = up(idx);
        sb_ref_max_pool2d_forward(&g, x.data(), y.data(), idx.data());
        CHECK_OK(be->ops->max_pool2d_forward(be, &g, dX, dY, dI));
        same("max_pool2d forward", dY, y);
        CHECK(down(dI, yn) == idx, "max_pool2d indices differ");
        sb_ref_max_pool2d_backward(&g, dy.data(), idx.data(), dx.data());
        CHECK_OK(be->ops->max_pool2d_backward(be, &g, dDY, dI, dDX));
        same("max_pool2d backward", dDX, dx);
        sb_ref_avg_pool2d_forward(&g, x.data(), y.data());
        CHECK_OK(be->ops->avg_pool2d_forward(be, &g, dX, dY));
        same("avg_pool2d forward", dY, y);
        sb_ref_avg_pool2d_backward(&g, dy.data(), dx.data());
        CHECK_OK(be->ops->avg_pool2d_backward(be, &g, dDY, dDX));
        same("avg_pool2d backward", dDX, dx);
        for (const void *pp : {(const void *)dX, (const void *)dDY, (const void *)dY,
                               (const void *)dDX, (const void *)dI})
            release(pp);
    }
}

/* The activations of the backend table's activation entry that the
 * reference has as dense kernels (tanh and sigmoid backward take y). */
enum { ACT_RELU, ACT_LEAKY_RELU, ACT_TANH, ACT_SIGMOID, ACT_SILU, ACT_GELU, ACT_SOFTPLUS, ACTS };
static const sb_act_kind act_kinds[ACTS] = {SB_ACT_RELU, SB_ACT_LEAKY_RELU, SB_ACT_TANH,
                                            SB_ACT_SIGMOID, SB_ACT_SILU, SB_ACT_GELU,
                                            SB_ACT_SOFTPLUS};

static void ref_act(int act, bool bwd, int64_t n, const float *in, const float *dy, float p0,
                    float p1, float *out) {
    switch (act) {
    case ACT_RELU: bwd ? sb_ref_relu_backward(n, in, dy, out) : sb_ref_relu_forward(n, in, out); break;
    case ACT_LEAKY_RELU: bwd ? sb_ref_leaky_relu_backward(n, in, dy, p0, out) : sb_ref_leaky_relu_forward(n, in, p0, out); break;
    case ACT_TANH: bwd ? sb_ref_tanh_backward(n, in, dy, out) : sb_ref_tanh_forward(n, in, out); break;
    case ACT_SIGMOID: bwd ? sb_ref_sigmoid_backward(n, in, dy, out) : sb_ref_sigmoid_forward(n, in, out); break;
    case ACT_SILU: bwd ? sb_ref_silu_backward(n, in, dy, out) : sb_ref_silu_forward(n, in, out); break;
    case ACT_GELU: bwd ? sb_ref_gelu_backward(n, in, dy, p0 != 0, out) : sb_ref_gelu_forward(n, in, p0 != 0, out); break;
    default: bwd ? sb_ref_softplus_backward(n, in, dy, p0, p1, out) : sb_ref_softplus_forward(n, in, p0, p1, out); break;
    }
}

/* A dense 1-D view of n floats of device memory. */
static sb_tensor view1(const float *p, int64_t n) {
    sb_tensor t = {};
    t.dtype = SB_F32;
    t.device = SB_DEVICE_CUDA;
    t.ndim = 1;
    t.shape[0] = n;
    t.strides[0] = 1;
    t.data = (void *)p;
    return t;
}

/* The activation entry: out = f(in) or its backward from (in, dy). */
static sb_status run_act(int act, bool bwd, int64_t n, const float *in, const float *dy, float p0,
                         float p1, float *out) {
    sb_act_args a = {};
    a.kind = act_kinds[act];
    a.backward = bwd;
    a.approximate = act == ACT_GELU && p0 != 0;
    a.p0 = act == ACT_GELU ? 0.0f : p0;
    a.p1 = p1;
    sb_tensor ins[2] = {view1(in, n), view1(dy ? dy : in, n)}, o = view1(out, n);
    return be->ops->activation(be, &a, ins, &o);
}

static void test_activations(void) {
    const int64_t n = 100003;
    auto x = rnd(n, true), dy = rnd(n, true);
    for (int64_t i = 0; i < n; i += 5) x[i] = x[i] * 20.0f; /* reach the tails */
    float *dX = up(x), *dDY = up(dy), *dOut = NULL;
    CHECK_OK(sb_cuda_malloc(ctx, n * 4, (void **)&dOut));
    const float params[][2] = {{0, 0}, {0.01f, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {1, 20}};
    for (int act = 0; act < ACTS; act++)
        for (int variant = 0; variant < (act == ACT_GELU ? 2 : 1); variant++) {
            float p0 = act == ACT_GELU ? (float)variant : params[act][0], p1 = params[act][1];
            std::vector<float> want(n);
            ref_act(act, false, n, x.data(), NULL, p0, p1, want.data());
            CHECK_OK(run_act(act, false, n, dX, NULL, p0, p1, dOut));
            char what[64];
            snprintf(what, sizeof what, "activation %d.%d forward", act, variant);
            same(what, dOut, want);
            ref_act(act, true, n, x.data(), dy.data(), p0, p1, want.data());
            CHECK_OK(run_act(act, true, n, dX, dDY, p0, p1, dOut));
            snprintf(what, sizeof what, "activation %d.%d backward", act, variant);
            same(what, dOut, want);
        }
    release(dX); release(dDY); release(dOut);
}

static void test_softmax_ce(void) {
    const int64_t ss[][3] = {{64, 10, 1}, {3, 1, 1}, {2, 100, 3}, {1, 20000, 1}};
    for (auto &s : ss)
        for (int log = 0; log < 2; log++) {
            int64_t total = s[0] * s[1] * s[2];
            auto x = rnd(total, true), dy = rnd(total, false);
            std::vector<float> y(total), dx(total);
            float *dX = up(x), *dDY = up(dy), *dY = up(y), *dDX = up(dx);
            (log ? sb_ref_log_softmax_forward : sb_ref_softmax_forward)(x.data(), s[0], s[1], s[2], y.data());
            CHECK_OK(be->ops->softmax_forward(be, dX, s[0], s[1], s[2], log, dY));
            same(log ? "log_softmax forward" : "softmax forward", dY, y);
            (log ? sb_ref_log_softmax_backward : sb_ref_softmax_backward)(y.data(), dy.data(), s[0], s[1], s[2], dx.data());
            CHECK_OK(be->ops->softmax_backward(be, dY, dDY, s[0], s[1], s[2], log, dDX));
            same(log ? "log_softmax backward" : "softmax backward", dDX, dx);
            release(dX); release(dDY); release(dY); release(dDX);
        }
    const int64_t N = 777, C = 10;
    auto logits = rnd(N * C, false);
    std::vector<int64_t> t(N);
    for (int64_t r = 0; r < N; r++) t[r] = r % 13 == 0 ? -100 : (int64_t)(next32() % C);
    auto dl = rnd(N, false);
    float *dL = up(logits), *dDl = up(dl), *dOut = NULL, *dG = NULL;
    int64_t *dT = up(t);
    CHECK_OK(sb_cuda_malloc(ctx, N * 4, (void **)&dOut));
    CHECK_OK(sb_cuda_malloc(ctx, N * C * 4, (void **)&dG));
    for (int red = 0; red < 3; red++)
        for (float eps : {0.0f, 0.1f}) {
            size_t nout = red == SB_LOSS_NONE ? N : 1;
            std::vector<float> loss(nout), g(N * C);
            sb_ref_cross_entropy_forward(logits.data(), t.data(), N, C, (sb_loss_reduction)red, eps, -100, loss.data());
            CHECK_OK(be->ops->class_loss_forward(be, true, dL, dT, N, C, (sb_loss_reduction)red, eps, -100, dOut));
            same("cross_entropy forward", dOut, loss);
            sb_ref_cross_entropy_backward(logits.data(), t.data(), N, C, (sb_loss_reduction)red, eps, -100, dl.data(), g.data());
            CHECK_OK(be->ops->class_loss_backward(be, true, dL, dT, N, C, (sb_loss_reduction)red, eps, -100, dDl, dG));
            same("cross_entropy backward", dG, g);
        }
    release(dL); release(dDl); release(dOut); release(dG); release(dT);
}

static void test_optim(void) {
    const int64_t n = 4099;
    sb_sgd_config s = sb_sgd_default_config(0.01);
    s.momentum = 0.9; s.weight_decay = 1e-4; s.dampening = 0.1;
    sb_adam_config a = sb_adamw_default_config(1e-3);
    a.amsgrad = true;
    for (int64_t step = 1; step <= 3; step++) {
        auto p = rnd(n, true), g = rnd(n, true), b = rnd(n, false), m = rnd(n, false),
             v = rnd(n, false), vm = rnd(n, false);
        for (auto &e : v) e = fabsf(e);
        for (auto &e : vm) e = fabsf(e);
        float *dp = up(p), *dg = up(g), *db = up(b), *dm = up(m), *dv = up(v), *dvm = up(vm);
        sb_sgd_factors sf;
        CHECK_OK(sb_sgd_factors_for(&s, &sf));
        CHECK_OK(be->ops->sgd(be, &sf, false, false, step == 1, n, dp, dg, db));
        CHECK_OK(sb_sgd_step(&s, step, n, p.data(), g.data(), b.data()));
        same("sgd param", dp, p);
        same("sgd momentum", db, b);
        sb_adam_factors af;
        CHECK_OK(sb_adam_factors_for(&a, step, &af));
        CHECK_OK(be->ops->adam(be, &af, step == 1, n, dp, dg, dm, dv, dvm));
        CHECK_OK(sb_adam_step(&a, step, n, p.data(), g.data(), m.data(), v.data(), vm.data()));
        same("adam param", dp, p);
        same("adam exp_avg", dm, m);
        same("adam exp_avg_sq", dv, v);
        same("adam max_exp_avg_sq", dvm, vm);
        for (const float *q : {dp, dg, db, dm, dv, dvm}) release(q);
    }
}

static void test_math(void) {
    const int64_t n = sb_test_quick() ? 1 << 20 : 1 << 24;
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; i++) x[i] = bits(next32());
    const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f, 88.72284f,
                              -103.97208f, 0x1p-149f, -0x1p-149f, 9.01091f, 3.91921f};
    for (size_t i = 0; i < sizeof specials / sizeof *specials; i++) x[i] = specials[i];
    float *dx = up(x), *dy = NULL;
    CHECK_OK(sb_cuda_malloc(ctx, n * 4, (void **)&dy));
    float (*host[])(float) = {sb_expf, sb_expm1f, sb_logf, sb_log1pf, sb_tanhf, sb_erff};
    for (int f = 0; f < SB_CUDA_MATH_COUNT; f++) {
        CHECK_OK(sb_cuda_math(ctx, (sb_cuda_math_fn)f, dx, dy, n));
        std::vector<float> got = down(dy, n);
        long bad = 0;
        for (int64_t i = 0; i < n; i++) /* NaN payloads are specified here: compare raw bits */
            if (sb_test_bits(got[i]) != sb_test_bits(host[f](x[i])) && bad++ < 3)
                fprintf(stderr, "math %d: x = %a: got %a want %a\n", f, x[i], got[i], host[f](x[i]));
        CHECK(bad == 0, "math function %d: %ld of %lld inputs differ", f, bad, (long long)n);
    }
    release(dx); release(dy);
}

/* Every kernel of src/gpu/kernel_list.h has a CUDA compilation with its
 * listed parameter count (needs no GPU: the table holds host addresses). */
static void test_kernel_table(void) {
    char missing[512];
    int n = sb_cuda_kernel_table_check(missing, sizeof missing);
    CHECK(n == 0, "%d kernels of src/gpu/kernel_list.h lack their cuda compilation: %s", n,
          missing);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_kernel_table();
    const char *why = NULL;
    if (!sb_cuda_available(&why)) {
        printf("SKIPPED: no CUDA device (%s)\n", why);
        return sb_test_finish();
    }
    CHECK_OK(sb_cuda_context_new(&ctx, 0));
    if (!ctx) return sb_test_finish();
    CHECK_OK(sb_cuda_register(ctx));
    be = sb_backend_get("test_cuda_ops", SB_DEVICE_CUDA);
    if (!be) return sb_test_finish();
    sb_cuda_device_info info;
    if (sb_cuda_query(0, &info) == SB_OK)
        printf("device: %s (sm_%d%d), driver %d, runtime %d\n", info.name, info.cc_major,
               info.cc_minor, info.driver_version, info.runtime_version);
    test_sgemm();
    test_sum();
    test_linear();
    test_conv();
    test_pool();
    test_activations();
    test_softmax_ce();
    test_optim();
    test_math();
    CHECK_OK(sb_cuda_synchronize(ctx));
    sb_cuda_context_free(ctx);
    return sb_test_finish();
}
