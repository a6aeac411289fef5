/* tests/test_opencl.c - the OpenCL device (src/opencl, kernels in
 * src/gpu/kernels) against the CPU, bit for bit: every ported op family on
 * random, odd-shaped and adversarial inputs (NaN, infinities, signed zeros,
 * subnormals, huge and tiny values), through the public tensor API on
 * SB_DEVICE_OPENCL; device memory, strided and overlapping copies; the
 * refusal of a device without the contract's numerics (the capability
 * query simulated); LeNet-5 training steps (MSE loss, SGD and Adam) through
 * autograd, modules and optimizers; every op family of the CPU backend
 * present. NaNs compare
 * as one value (contract section 1). Needs an OpenCL platform (CI installs
 * PoCL): without one it fails, loudly. */
#include <math.h>
#include "backend/backend.h"
#include "harness.h"
#include "opencl/opencl_internal.h"
#include "samebits.h"
#include "samebits/train.h"
#include "support/fastpath.h"
#include "support/lenet_compare.h"

/* LeakSanitizer (the make test-asan run): an OpenCL driver that compiles
 * kernels in-process (PoCL with its LLVM) keeps allocations of its own until
 * exit; only leaks outside the driver count. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
    return "leak:libpocl\nleak:libLLVM\nleak:libOpenCL\n";
}

/* A CPU tensor and its twin on the OpenCL device. */
typedef struct pair {
    sb_tensor *c, *d;
} pair;

static pair pair_of(sb_tensor *cpu) {
    pair p = {cpu, NULL};
    CHECK_OK(sb_tensor_to(&p.d, cpu, SB_DEVICE_OPENCL));
    return p;
}

/* Random values in (-range, range), or the adversarial mixture. */
static pair pair_rand(int ndim, const int64_t *shape, float range, bool adversarial) {
    sb_tensor *t = NULL;
    CHECK_OK(sb_tensor_new(&t, SB_F32, ndim, shape));
    float *v = sb_tensor_f32(t);
    for (int64_t i = 0; i < sb_tensor_numel(t); i++)
        v[i] = adversarial ? sb_test_adversarial(range) : sb_test_unif(-range, range);
    return pair_of(t);
}

static pair pair_zeros(sb_dtype dtype, int ndim, const int64_t *shape) {
    pair p = {NULL, NULL};
    CHECK_OK(sb_tensor_new(&p.c, dtype, ndim, shape));
    CHECK_OK(sb_tensor_new_on(&p.d, SB_DEVICE_OPENCL, dtype, ndim, shape));
    return p;
}

static void pair_free(pair *p) {
    sb_tensor_free(p->c);
    sb_tensor_free(p->d);
    p->c = p->d = NULL;
}

static uint32_t canon(float x) { return isnan(x) ? 0x7fc00000u : sb_test_bits(x); }

/* The device twin, brought back, has the CPU tensor's bits (every NaN as
 * 0x7fc00000). */
static void check_same(const pair *p, const char *what) {
    sb_tensor *back = NULL;
    CHECK_OK(sb_tensor_to(&back, p->d, SB_DEVICE_CPU));
    if (!back) return;
    int64_t n = sb_tensor_numel(p->c), bad = -1;
    if (p->c->dtype == SB_F32) {
        const float *a = p->c->data, *b = back->data;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (canon(a[i]) != canon(b[i])) bad = i;
        CHECK(bad < 0, "%s: element %lld is 0x%08x on the opencl device, 0x%08x on the cpu", what,
              (long long)bad, bad < 0 ? 0 : canon(b[bad]), bad < 0 ? 0 : canon(a[bad]));
    } else {
        size_t bytes = (size_t)n * sb_dtype_size(p->c->dtype);
        CHECK(memcmp(back->data, p->c->data, bytes) == 0, "%s: the opencl device's result differs",
              what);
    }
    sb_tensor_free(back);
}

/* ---- numerics at device selection ---------------------------------------- */

static void test_refusal(void) {
    const cl_device_fp_config all = CL_FP_ROUND_TO_NEAREST | CL_FP_DENORM | CL_FP_FMA |
                                    CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT | CL_FP_INF_NAN;
    struct { cl_device_fp_config single; const char *needle; } cases[] = {
        {all & ~CL_FP_DENORM, "lacks binary32 subnormals (CL_FP_DENORM)"},
        {all & ~CL_FP_ROUND_TO_NEAREST, "lacks round-to-nearest binary32 arithmetic"},
        {all & ~CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT,
         "lacks correctly rounded binary32 divide and sqrt (CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        sb_ocl_test_override_fp(&(sb_ocl_fp_override){cases[i].single, all});
        CHECK_ERROR(sb_ocl_probe(0), SB_ERR_DEVICE, cases[i].needle);
        CHECK(strstr(sb_last_error(), "is refused") != NULL, "the refusal says so: %s",
              sb_last_error());
    }
    sb_ocl_test_override_fp(&(sb_ocl_fp_override){all, 0}); /* the math kernels need fp64 */
    CHECK_ERROR(sb_ocl_probe(0), SB_ERR_DEVICE, "lacks binary64 arithmetic");
    sb_ocl_test_override_fp(NULL);
    CHECK_OK(sb_ocl_probe(0)); /* the real device passes */
    CHECK_ERROR(sb_ocl_check_numerics("f", "dev", all, 0, true), SB_ERR_DEVICE,
                "f: the opencl device dev is refused: it lacks binary64");
    CHECK_OK(sb_ocl_check_numerics("f", "dev", all, all, true));
    CHECK_ERROR(sb_ocl_probe(999), SB_ERR_DEVICE, "there is no opencl device 999");
}

/* ---- memory --------------------------------------------------------------- */

static void test_memory(void) {
    size_t live0 = sb_ocl_live_blocks();
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
    pair a = pair_rand(2, s23, 4.0f, true);
    CHECK(a.d && a.d->device == SB_DEVICE_OPENCL, "sb_tensor_to made an opencl tensor");
    CHECK(sb_ocl_live_blocks() == live0 + 1, "one device block per tensor");
    check_same(&a, "round trip");

    /* host strided view -> device, device strided view -> host */
    sb_tensor *at = NULL, *dt = NULL;
    CHECK_OK(sb_tensor_transpose(&at, a.c, 0, 1));
    pair t = pair_zeros(SB_F32, 2, s32);
    CHECK_OK(sb_tensor_copy(t.d, at));
    CHECK_OK(sb_tensor_copy(t.c, at));
    check_same(&t, "a transposed host view copied to the device");
    CHECK_OK(sb_tensor_transpose(&dt, a.d, 0, 1));
    pair u = pair_zeros(SB_F32, 2, s32);
    CHECK_OK(sb_tensor_copy(u.d, dt)); /* device to device, strided source */
    CHECK_OK(sb_tensor_copy(u.c, at));
    check_same(&u, "a strided copy on the device");

    /* an overlapping copy inside one buffer (a shifted row view) */
    int64_t s8[1] = {8}, s5[1] = {5};
    pair r = pair_rand(1, s8, 1.0f, false);
    sb_tensor hv0 = *r.c, hv1 = *r.c, dv0 = *r.d, dv1 = *r.d;
    hv0.shape[0] = hv1.shape[0] = dv0.shape[0] = dv1.shape[0] = 5;
    hv1.data = (float *)r.c->data + 3;
    dv1.data = (float *)r.d->data + 3;
    float hostcopy[5];
    memcpy(hostcopy, r.c->data, sizeof hostcopy);
    memcpy((float *)r.c->data + 3, hostcopy, sizeof hostcopy); /* as if through a temporary */
    CHECK_OK(sb_tensor_copy(&dv1, &dv0));
    check_same(&r, "an overlapping copy on the device");
    (void)hv0; (void)hv1; (void)s5;

    /* fill, int64 tensors, zero-size tensors */
    CHECK_OK(sb_tensor_fill(at, -0.0f));
    CHECK_OK(sb_tensor_fill(dt, -0.0f));
    check_same(&a, "sb_tensor_fill through a strided view");
    pair ints = pair_zeros(SB_I64, 1, s5);
    for (int i = 0; i < 5; i++) ((int64_t *)ints.c->data)[i] = (int64_t)i * 0x100000001LL - 7;
    CHECK_OK(sb_tensor_copy(ints.d, ints.c));
    check_same(&ints, "int64 round trip");
    int64_t s0[2] = {0, 3};
    pair empty = pair_zeros(SB_F32, 2, s0);
    check_same(&empty, "a zero-size tensor");
    CHECK(sb_ocl_live_blocks() > live0, "blocks are live");
    sb_tensor_free(at);
    sb_tensor_free(dt);
    pair all[] = {a, t, u, r, ints, empty};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
    CHECK(sb_ocl_live_blocks() == live0, "every device tensor released (%zu left)",
          sb_ocl_live_blocks() - live0);

    /* a host pointer where device memory belongs is refused, never read */
    float host[4] = {0};
    sb_tensor fake = {.dtype = SB_F32, .device = SB_DEVICE_OPENCL, .ndim = 1, .shape = {4},
                      .strides = {1}, .data = host};
    pair o = pair_zeros(SB_F32, 1, (int64_t[1]){4});
    CHECK_ERROR(sb_relu_forward(&fake, o.d), SB_ERR_INTERNAL, "is not live opencl device memory");
    pair_free(&o);
}

/* ---- pointwise -------------------------------------------------------------- */

static const int64_t SHAPES[][3] = {{1, 1, 1}, {1, 1, 7}, {1, 3, 5}, {2, 3, 33}, {1, 1, 1031}};

static void test_pointwise(void) {
    for (size_t si = 0; si < sizeof SHAPES / sizeof *SHAPES; si++) {
        const int64_t *s = SHAPES[si];
        int64_t srow[3] = {1, 1, s[2]}, scol[3] = {s[0], s[1], 1};
        char what[96];
        pair x = pair_rand(3, s, 3.0f, true), y = pair_rand(3, s, 3.0f, true),
             row = pair_rand(3, srow, 3.0f, true), col = pair_rand(3, scol, 3.0f, true),
             dy = pair_rand(3, s, 3.0f, true), o = pair_zeros(SB_F32, 3, s),
             g = pair_zeros(SB_F32, 3, s), gr = pair_zeros(SB_F32, 3, srow),
             gc = pair_zeros(SB_F32, 3, scol);
        for (int op = SB_BINARY_ADD; op <= SB_BINARY_POW; op++) {
            snprintf(what, sizeof what, "sb_binary op %d shape %d", op, (int)si);
            CHECK_OK(sb_binary((sb_binary_op)op, x.c, y.c, o.c));
            CHECK_OK(sb_binary((sb_binary_op)op, x.d, y.d, o.d));
            check_same(&o, what);
            snprintf(what, sizeof what, "sb_binary op %d, broadcast, shape %d", op, (int)si);
            CHECK_OK(sb_binary((sb_binary_op)op, col.c, row.c, o.c));
            CHECK_OK(sb_binary((sb_binary_op)op, col.d, row.d, o.d));
            check_same(&o, what);
            snprintf(what, sizeof what, "sb_binary_scalar op %d shape %d", op, (int)si);
            CHECK_OK(sb_binary_scalar((sb_binary_op)op, x.c, -0.0f, o.c));
            CHECK_OK(sb_binary_scalar((sb_binary_op)op, x.d, -0.0f, o.d));
            check_same(&o, what);
            CHECK_OK(sb_binary_scalar((sb_binary_op)op, x.c, 1.5e-39f, o.c));
            CHECK_OK(sb_binary_scalar((sb_binary_op)op, x.d, 1.5e-39f, o.d));
            check_same(&o, what);
            snprintf(what, sizeof what, "sb_binary_backward op %d shape %d", op, (int)si);
            CHECK_OK(sb_binary_backward((sb_binary_op)op, dy.c, x.c, row.c, g.c, gr.c));
            CHECK_OK(sb_binary_backward((sb_binary_op)op, dy.d, x.d, row.d, g.d, gr.d));
            check_same(&g, what);
            check_same(&gr, what);
            CHECK_OK(sb_binary_backward((sb_binary_op)op, dy.c, col.c, y.c, gc.c, NULL));
            CHECK_OK(sb_binary_backward((sb_binary_op)op, dy.d, col.d, y.d, gc.d, NULL));
            check_same(&gc, what);
        }
        for (int op = SB_UNARY_NEG; op <= SB_UNARY_RSQRT; op++) {
            snprintf(what, sizeof what, "sb_unary op %d shape %d", op, (int)si);
            CHECK_OK(sb_unary((sb_unary_op)op, x.c, o.c));
            CHECK_OK(sb_unary((sb_unary_op)op, x.d, o.d));
            check_same(&o, what);
            snprintf(what, sizeof what, "sb_unary_backward op %d shape %d", op, (int)si);
            CHECK_OK(sb_unary_backward((sb_unary_op)op, x.c, y.c, dy.c, g.c));
            CHECK_OK(sb_unary_backward((sb_unary_op)op, x.d, y.d, dy.d, g.d));
            check_same(&g, what);
        }
        CHECK_OK(sb_relu_forward(x.c, o.c));
        CHECK_OK(sb_relu_forward(x.d, o.d));
        check_same(&o, "sb_relu_forward");
        CHECK_OK(sb_relu_backward(x.c, dy.c, g.c));
        CHECK_OK(sb_relu_backward(x.d, dy.d, g.d));
        check_same(&g, "sb_relu_backward");
        CHECK_OK(sb_leaky_relu_forward(x.c, 0.01f, o.c));
        CHECK_OK(sb_leaky_relu_forward(x.d, 0.01f, o.d));
        check_same(&o, "sb_leaky_relu_forward");
        CHECK_OK(sb_leaky_relu_backward(x.c, dy.c, -3.0f, g.c));
        CHECK_OK(sb_leaky_relu_backward(x.d, dy.d, -3.0f, g.d));
        check_same(&g, "sb_leaky_relu_backward");
        CHECK_OK(sb_tanh_backward(y.c, dy.c, g.c));
        CHECK_OK(sb_tanh_backward(y.d, dy.d, g.d));
        check_same(&g, "sb_tanh_backward");
        CHECK_OK(sb_sigmoid_backward(y.c, dy.c, g.c));
        CHECK_OK(sb_sigmoid_backward(y.d, dy.d, g.d));
        check_same(&g, "sb_sigmoid_backward");
        CHECK_OK(sb_reduce_to_shape(dy.c, gc.c));
        CHECK_OK(sb_reduce_to_shape(dy.d, gc.d));
        check_same(&gc, "sb_reduce_to_shape");
        /* a transposed (strided) input and output */
        if (s[1] > 1) {
            sb_tensor *xc = NULL, *xd = NULL, *oc = NULL, *od = NULL;
            int64_t st[3] = {s[0], s[2], s[1]};
            pair ot = pair_zeros(SB_F32, 3, st);
            CHECK_OK(sb_tensor_transpose(&xc, x.c, 1, 2));
            CHECK_OK(sb_tensor_transpose(&xd, x.d, 1, 2));
            CHECK_OK(sb_tensor_transpose(&oc, o.c, 1, 2));
            CHECK_OK(sb_tensor_transpose(&od, o.d, 1, 2));
            CHECK_OK(sb_mul(xc, xc, ot.c));
            CHECK_OK(sb_mul(xd, xd, ot.d));
            check_same(&ot, "sb_mul of transposed views");
            CHECK_OK(sb_sqrt(ot.c, oc));
            CHECK_OK(sb_sqrt(ot.d, od));
            check_same(&o, "sb_sqrt into a transposed view");
            sb_tensor_free(xc); sb_tensor_free(xd); sb_tensor_free(oc); sb_tensor_free(od);
            pair_free(&ot);
        }
        pair all[] = {x, y, row, col, dy, o, g, gr, gc};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
    }
}


/* pow on every pair of special values, broadcast as a column (bases)
 * against a row (exponents): zeros of both signs, +-1, +-inf, NaN,
 * negative bases with odd, even and non-integer exponents, subnormals,
 * values next to 1 with large exponents, results that overflow and
 * underflow; then adversarial values fill the rest. Forward, scalar
 * exponents and both gradients, bit for bit with the CPU. */
static const float POW_SPECIALS[] = {
    0.0f,   -0.0f,    1.0f,  -1.0f,  INFINITY, -INFINITY,     NAN,           2.0f,
    -2.0f,  3.0f,     -3.0f, 0.5f,   -0.5f,    2.5f,          -2.5f,         1.5e-39f,
    -1.5e-39f, 0x1.000002p0f, 0x1.fffffep-1f, 1e30f, -1e30f, 16777217.0f, -16777215.0f,
    0.1f,   -7.25f,   100.0f, -100.0f, 127.0f, -149.0f};

static pair pair_specials(int ndim, const int64_t *shape) {
    pair p = pair_rand(ndim, shape, 4.0f, true);
    int64_t k = (int64_t)(sizeof POW_SPECIALS / sizeof *POW_SPECIALS);
    for (int64_t i = 0; i < k && i < sb_tensor_numel(p.c); i++) sb_tensor_f32(p.c)[i] = POW_SPECIALS[i];
    sb_tensor_free(p.d);
    return pair_of(p.c);
}

static void test_pow_special(void) {
    int64_t m = (int64_t)(sizeof POW_SPECIALS / sizeof *POW_SPECIALS) + 35;
    int64_t scol[2] = {m, 1}, srow[2] = {1, m}, sfull[2] = {m, m};
    pair col = pair_specials(2, scol), row = pair_specials(2, srow),
         dy = pair_rand(2, sfull, 2.0f, false), o = pair_zeros(SB_F32, 2, sfull),
         gc = pair_zeros(SB_F32, 2, scol), gr = pair_zeros(SB_F32, 2, srow),
         oc = pair_zeros(SB_F32, 2, scol);
    CHECK_OK(sb_binary(SB_BINARY_POW, col.c, row.c, o.c));
    CHECK_OK(sb_binary(SB_BINARY_POW, col.d, row.d, o.d));
    check_same(&o, "pow of every special base by every special exponent");
    CHECK_OK(sb_binary_backward(SB_BINARY_POW, dy.c, col.c, row.c, gc.c, gr.c));
    CHECK_OK(sb_binary_backward(SB_BINARY_POW, dy.d, col.d, row.d, gc.d, gr.d));
    check_same(&gc, "pow's base gradient on special values, summed over the broadcast");
    check_same(&gr, "pow's exponent gradient on special values, summed over the broadcast");
    for (size_t j = 0; j < sizeof POW_SPECIALS / sizeof *POW_SPECIALS; j++) {
        char what[64];
        snprintf(what, sizeof what, "pow of the special bases by the scalar %a",
                 (double)POW_SPECIALS[j]);
        CHECK_OK(sb_binary_scalar(SB_BINARY_POW, col.c, POW_SPECIALS[j], oc.c));
        CHECK_OK(sb_binary_scalar(SB_BINARY_POW, col.d, POW_SPECIALS[j], oc.d));
        check_same(&oc, what);
    }
    pair all[] = {col, row, dy, o, gc, gr, oc};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
}

/* ---- the canonical sum and reductions -------------------------------------- */

static void test_sum(void) {
    /* lengths around the lane (32) and block (8192) boundaries */
    const int64_t lengths[] = {1, 2, 31, 32, 33, 1000, 8191, 8192, 8193, 3 * 8192 + 5, 70001};
    for (size_t li = 0; li < sizeof lengths / sizeof *lengths; li++) {
        if (sb_test_quick() && lengths[li] > 10000) continue;
        int64_t n[1] = {lengths[li]};
        for (int adv = 0; adv < 2; adv++) {
            pair x = pair_rand(1, n, 1e3f, adv), s = pair_zeros(SB_F32, 0, NULL);
            char what[64];
            snprintf(what, sizeof what, "sb_sum of %lld%s", (long long)n[0],
                     adv ? " adversarial" : "");
            CHECK_OK(sb_sum(x.c, NULL, 0, false, s.c));
            CHECK_OK(sb_sum(x.d, NULL, 0, false, s.d));
            check_same(&s, what);
            CHECK_OK(sb_var(x.c, NULL, 0, 1, false, s.c));
            CHECK_OK(sb_var(x.d, NULL, 0, 1, false, s.d));
            check_same(&s, "sb_var");
            pair_free(&x);
            pair_free(&s);
        }
    }
    /* over chosen dims of a strided 3-d tensor, every kind and correction */
    int64_t s[3] = {3, 37, 5};
    pair x = pair_rand(3, s, 2.0f, false);
    int dims_sets[3][2] = {{0, 0}, {1, 1}, {0, 2}};
    int ndims[3] = {1, 1, 2};
    for (int k = 0; k < 3; k++) {
        int64_t os[3];
        int on = 0;
        for (int d = 0; d < 3; d++) {
            bool red = dims_sets[k][0] == d || (ndims[k] == 2 && dims_sets[k][1] == d);
            if (!red) os[on++] = s[d];
        }
        pair o = pair_zeros(SB_F32, on, os);
        CHECK_OK(sb_sum(x.c, dims_sets[k], ndims[k], false, o.c));
        CHECK_OK(sb_sum(x.d, dims_sets[k], ndims[k], false, o.d));
        check_same(&o, "sb_sum over dims");
        CHECK_OK(sb_mean(x.c, dims_sets[k], ndims[k], false, o.c));
        CHECK_OK(sb_mean(x.d, dims_sets[k], ndims[k], false, o.d));
        check_same(&o, "sb_mean over dims");
        for (int64_t corr = 0; corr <= 40; corr += 20) {
            CHECK_OK(sb_var(x.c, dims_sets[k], ndims[k], corr, false, o.c));
            CHECK_OK(sb_var(x.d, dims_sets[k], ndims[k], corr, false, o.d));
            check_same(&o, "sb_var over dims");
            CHECK_OK(sb_std(x.c, dims_sets[k], ndims[k], corr, false, o.c));
            CHECK_OK(sb_std(x.d, dims_sets[k], ndims[k], corr, false, o.d));
            check_same(&o, "sb_std over dims");
        }
        /* and the backward spreads */
        pair dx = pair_zeros(SB_F32, 3, s);
        CHECK_OK(sb_mean_backward(o.c, dims_sets[k], ndims[k], false, dx.c));
        CHECK_OK(sb_mean_backward(o.d, dims_sets[k], ndims[k], false, dx.d));
        check_same(&dx, "sb_mean_backward");
        CHECK_OK(sb_sum_backward(o.c, dims_sets[k], ndims[k], false, dx.c));
        CHECK_OK(sb_sum_backward(o.d, dims_sets[k], ndims[k], false, dx.d));
        check_same(&dx, "sb_sum_backward");
        pair_free(&dx);
        pair_free(&o);
    }
    pair_free(&x);
}

/* ---- SGEMM and linear -------------------------------------------------------- */

/* ---- max / min / argmax / argmin and the max backward ----------------------- */

/* Values drawn from a few (+-0, +-1, 2, +-inf, NaN) so that ties, signed
 * zeros and NaNs (first NaN wins; -0 < +0) decide most outputs, or the
 * adversarial mixture. */
static pair pair_ties(int ndim, const int64_t *shape, bool few) {
    pair p = pair_rand(ndim, shape, 4.0f, true);
    if (!few) return p;
    static const float vals[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, INFINITY, -INFINITY, NAN};
    float *v = sb_tensor_f32(p.c);
    for (int64_t i = 0; i < sb_tensor_numel(p.c); i++) {
        uint32_t r = sb_test_rand32() % 64; /* NaN rarely, so most rows have none */
        v[i] = r < 56 ? vals[r % 7] : (r < 63 ? vals[r % 5] : vals[7]);
    }
    sb_tensor_free(p.d);
    return pair_of(p.c);
}

static void test_extreme(void) {
    int64_t s[3] = {5, 37, 3};
    int dims_sets[5][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 2}, {0, 1}};
    int ndims[5] = {1, 1, 1, 2, 0}; /* the last: every dim (dims NULL) */
    for (int few = 0; few < 2; few++)
        for (int transposed = 0; transposed < 2; transposed++)
            for (int k = 0; k < 5; k++)
                for (int keep = 0; keep < 2; keep++) {
                    pair base = pair_ties(3, s, few);
                    /* a transposed view (3, 37, 5) read through strides */
                    sb_tensor *xc = base.c, *xd = base.d, *tc = NULL, *td = NULL;
                    if (transposed) {
                        CHECK_OK(sb_tensor_transpose(&tc, base.c, 0, 2));
                        CHECK_OK(sb_tensor_transpose(&td, base.d, 0, 2));
                        xc = tc;
                        xd = td;
                    }
                    const int *dims = ndims[k] ? dims_sets[k] : NULL;
                    int64_t os[3];
                    int on = 0;
                    for (int d = 0; d < 3; d++) {
                        bool red = !ndims[k] || dims_sets[k][0] == d ||
                                   (ndims[k] == 2 && dims_sets[k][1] == d);
                        if (!red) os[on++] = xc->shape[d];
                        else if (keep) os[on++] = 1;
                    }
                    pair o = pair_zeros(SB_F32, on, os), ix = pair_zeros(SB_I64, on, os),
                         dy = pair_rand(on, os, 3.0f, true), dx = pair_zeros(SB_F32, 3, xc->shape);
                    char what[96];
                    for (int is_max = 0; is_max < 2; is_max++) {
                        sb_status (*both)(const sb_tensor *, const int *, int, bool, sb_tensor *,
                                          sb_tensor *) = is_max ? sb_max : sb_min;
                        sb_status (*arg)(const sb_tensor *, const int *, int, bool, sb_tensor *) =
                            is_max ? sb_argmax : sb_argmin;
                        snprintf(what, sizeof what, "%s over set %d keepdim %d%s%s",
                                 is_max ? "sb_max" : "sb_min", k, keep, few ? " ties" : "",
                                 transposed ? " transposed" : "");
                        CHECK_OK(both(xc, dims, ndims[k], keep, o.c, ix.c));
                        CHECK_OK(both(xd, dims, ndims[k], keep, o.d, ix.d));
                        check_same(&o, what);
                        check_same(&ix, what);
                        CHECK_OK(both(xc, dims, ndims[k], keep, o.c, NULL));
                        CHECK_OK(both(xd, dims, ndims[k], keep, o.d, NULL));
                        check_same(&o, what);
                        CHECK_OK(arg(xc, dims, ndims[k], keep, ix.c));
                        CHECK_OK(arg(xd, dims, ndims[k], keep, ix.d));
                        check_same(&ix, what);
                        CHECK_OK(sb_max_backward(dy.c, ix.c, dims, ndims[k], keep, dx.c));
                        CHECK_OK(sb_max_backward(dy.d, ix.d, dims, ndims[k], keep, dx.d));
                        check_same(&dx, "sb_max_backward");
                    }
                    sb_tensor_free(tc);
                    sb_tensor_free(td);
                    pair all[] = {base, o, ix, dy, dx};
                    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
                }
}

/* ---- dropout: Philox on the device -------------------------------------------- */

/* The same elements dropped as on the CPU for seeds, streams and offsets
 * that use all 64 bits (the counter's high word and the key's both
 * halves), every p including 0 and 1, odd lengths, not training, without a
 * mask, in place; and the backward from the mask. */
static void test_dropout(void) {
    const int64_t lengths[] = {1, 67, 4099};
    const float ps[] = {0.0f, 0.3f, 0.5f, 0.9f, 1.0f};
    const uint64_t keys[][3] = {{0, 0, 0}, {42, 7, 12345}, {0xfedcba9876543210u, 0x0123456789abcdefu,
                                                             0x00000001fffffff0u}};
    for (size_t li = 0; li < sizeof lengths / sizeof *lengths; li++) {
        int64_t s[1] = {lengths[li]};
        pair x = pair_rand(1, s, 3.0f, true), dy = pair_rand(1, s, 2.0f, true),
             y = pair_zeros(SB_F32, 1, s), mask = pair_zeros(SB_F32, 1, s),
             dx = pair_zeros(SB_F32, 1, s);
        for (size_t pi = 0; pi < sizeof ps / sizeof *ps; pi++)
            for (size_t ki = 0; ki < 3; ki++)
                for (int train = 0; train < 2; train++) {
                    float p = ps[pi];
                    const uint64_t *k = keys[ki];
                    char what[96];
                    snprintf(what, sizeof what, "sb_dropout_forward n %lld p %g key %zu train %d",
                             (long long)s[0], (double)p, ki, train);
                    CHECK_OK(sb_dropout_forward(x.c, p, train, k[0], k[1], k[2], y.c, mask.c));
                    CHECK_OK(sb_dropout_forward(x.d, p, train, k[0], k[1], k[2], y.d, mask.d));
                    check_same(&y, what);
                    check_same(&mask, what);
                    CHECK_OK(sb_dropout_backward(dy.c, mask.c, p, train, dx.c));
                    CHECK_OK(sb_dropout_backward(dy.d, mask.d, p, train, dx.d));
                    check_same(&dx, "sb_dropout_backward");
                    CHECK_OK(sb_dropout_forward(x.c, p, train, k[0], k[1], k[2], y.c, NULL));
                    CHECK_OK(sb_dropout_forward(x.d, p, train, k[0], k[1], k[2], y.d, NULL));
                    check_same(&y, "sb_dropout_forward without a mask");
                }
        /* in place: y is x */
        CHECK_OK(sb_dropout_forward(x.c, 0.4f, true, 9, 3, 1, x.c, mask.c));
        CHECK_OK(sb_dropout_forward(x.d, 0.4f, true, 9, 3, 1, x.d, mask.d));
        check_same(&x, "sb_dropout_forward in place");
        check_same(&mask, "sb_dropout_forward in place, mask");
        pair all[] = {x, dy, y, mask, dx};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
    }
}

/* ---- batch norm and layer norm ----------------------------------------------- */

/* Values in [lo, hi) on both devices. */
static pair pair_unif(int ndim, const int64_t *shape, float lo, float hi) {
    sb_tensor *t = NULL;
    CHECK_OK(sb_tensor_new(&t, SB_F32, ndim, shape));
    for (int64_t i = 0; i < sb_tensor_numel(t); i++) sb_tensor_f32(t)[i] = sb_test_unif(lo, hi);
    return pair_of(t);
}

/* The device twin of an optional operand: NULL stays NULL. */
static sb_tensor *dev_of(const pair *p, bool use) { return use ? p->d : NULL; }
static sb_tensor *cpu_of(const pair *p, bool use) { return use ? p->c : NULL; }

/* Batch norm forward (training and eval, with and without the affine
 * parameters and running statistics) and backward (every subset of
 * outputs), on channels whose count crosses the canonical sum's 8192 block,
 * on random and adversarial data. */
static void test_batch_norm(void) {
    const int64_t shapes[][3] = {{3, 5, 7}, {2, 2, 4500}, {1, 3, 1}};
    for (int si = 0; si < 3; si++)
        for (int adv = 0; adv < 2; adv++)
            for (int variant = 0; variant < 4; variant++) {
                const int64_t *sh = shapes[si];
                int64_t sc[1] = {sh[1]};
                bool affine = variant & 1, running = (variant & 2) || false, training = variant != 3;
                if (sh[0] * sh[2] < 2) running = false; /* the unbiased variance needs 2 values */
                if (!training) running = true;
                pair x = pair_rand(3, sh, 4.0f, adv && variant == 0), dy = pair_rand(3, sh, 2.0f, false),
                     g = pair_rand(1, sc, 2.0f, false), b = pair_rand(1, sc, 2.0f, false),
                     rm = pair_rand(1, sc, 1.0f, false), rv = pair_unif(1, sc, 0.25f, 2.0f),
                     y = pair_zeros(SB_F32, 3, sh), sm = pair_zeros(SB_F32, 1, sc),
                     sr = pair_zeros(SB_F32, 1, sc), dx = pair_zeros(SB_F32, 3, sh),
                     dg = pair_zeros(SB_F32, 1, sc), db = pair_zeros(SB_F32, 1, sc);
                char what[96];
                snprintf(what, sizeof what, "sb_batch_norm_forward (%lld,%lld,%lld) variant %d%s",
                         (long long)sh[0], (long long)sh[1], (long long)sh[2], variant,
                         adv ? " adversarial" : "");
                CHECK_OK(sb_batch_norm_forward(x.c, cpu_of(&g, affine), cpu_of(&b, affine),
                                               cpu_of(&rm, running), cpu_of(&rv, running), training,
                                               0.1f, 1e-5f, y.c, sm.c, sr.c));
                CHECK_OK(sb_batch_norm_forward(x.d, dev_of(&g, affine), dev_of(&b, affine),
                                               dev_of(&rm, running), dev_of(&rv, running), training,
                                               0.1f, 1e-5f, y.d, sm.d, sr.d));
                check_same(&y, what);
                check_same(&sm, "sb_batch_norm_forward save_mean");
                check_same(&sr, "sb_batch_norm_forward save_rstd");
                check_same(&rm, "sb_batch_norm_forward running_mean");
                check_same(&rv, "sb_batch_norm_forward running_var");
                for (int outs = 1; outs < 8; outs++) {
                    bool wdx = outs & 1, wdg = outs & 2, wdb = outs & 4;
                    CHECK_OK(sb_batch_norm_backward(dy.c, x.c, cpu_of(&g, affine), sm.c, sr.c,
                                                    training, cpu_of(&dx, wdx), cpu_of(&dg, wdg),
                                                    cpu_of(&db, wdb)));
                    CHECK_OK(sb_batch_norm_backward(dy.d, x.d, dev_of(&g, affine), sm.d, sr.d,
                                                    training, dev_of(&dx, wdx), dev_of(&dg, wdg),
                                                    dev_of(&db, wdb)));
                    check_same(&dx, "sb_batch_norm_backward dx");
                    check_same(&dg, "sb_batch_norm_backward dgamma");
                    check_same(&db, "sb_batch_norm_backward dbeta");
                }
                /* y written over x */
                CHECK_OK(sb_batch_norm_forward(x.c, cpu_of(&g, affine), NULL, NULL, NULL, true,
                                               0.1f, 1e-5f, x.c, NULL, NULL));
                CHECK_OK(sb_batch_norm_forward(x.d, dev_of(&g, affine), NULL, NULL, NULL, true,
                                               0.1f, 1e-5f, x.d, NULL, NULL));
                check_same(&x, "sb_batch_norm_forward in place");
                pair all[] = {x, dy, g, b, rm, rv, y, sm, sr, dx, dg, db};
                for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
            }
}

/* Layer norm over the last one or two dims, rows longer than the 8192
 * block, with and without weight and bias, every subset of gradients. */
static void test_layer_norm(void) {
    const int64_t shapes[][3] = {{4, 3, 11}, {2, 1, 9000}, {1, 1, 1}};
    for (int si = 0; si < 3; si++)
        for (int nd = 1; nd <= 2; nd++)
            for (int variant = 0; variant < 3; variant++) {
                const int64_t *sh = shapes[si];
                bool has_w = variant != 0, has_b = variant == 2;
                const int64_t *ps = sh + 3 - nd; /* the normalized (trailing) dims */
                int64_t lead = nd == 1 ? 2 : 1;
                pair x = pair_rand(3, sh, 4.0f, variant == 1), dy = pair_rand(3, sh, 2.0f, false),
                     w = pair_rand(nd, ps, 2.0f, false), b = pair_rand(nd, ps, 2.0f, false),
                     y = pair_zeros(SB_F32, 3, sh), dx = pair_zeros(SB_F32, 3, sh),
                     dw = pair_zeros(SB_F32, nd, ps), dbb = pair_zeros(SB_F32, nd, ps),
                     sm = pair_zeros(SB_F32, (int)lead, sh), sr = pair_zeros(SB_F32, (int)lead, sh);
                char what[96];
                snprintf(what, sizeof what, "sb_layer_norm_forward (%lld,%lld,%lld) over %d dims "
                         "variant %d", (long long)sh[0], (long long)sh[1], (long long)sh[2], nd,
                         variant);
                CHECK_OK(sb_layer_norm_forward(x.c, nd, cpu_of(&w, has_w), cpu_of(&b, has_b), 1e-5f,
                                               y.c, sm.c, sr.c));
                CHECK_OK(sb_layer_norm_forward(x.d, nd, dev_of(&w, has_w), dev_of(&b, has_b), 1e-5f,
                                               y.d, sm.d, sr.d));
                check_same(&y, what);
                check_same(&sm, "sb_layer_norm_forward save_mean");
                check_same(&sr, "sb_layer_norm_forward save_rstd");
                for (int outs = 1; outs < 8; outs++) {
                    bool wdx = outs & 1, wdw = (outs & 2) && has_w, wdb = (outs & 4) && has_b;
                    CHECK_OK(sb_layer_norm_backward(dy.c, x.c, nd, cpu_of(&w, has_w), sm.c, sr.c,
                                                    cpu_of(&dx, wdx), cpu_of(&dw, wdw),
                                                    cpu_of(&dbb, wdb)));
                    CHECK_OK(sb_layer_norm_backward(dy.d, x.d, nd, dev_of(&w, has_w), sm.d, sr.d,
                                                    dev_of(&dx, wdx), dev_of(&dw, wdw),
                                                    dev_of(&dbb, wdb)));
                    check_same(&dx, "sb_layer_norm_backward dx");
                    check_same(&dw, "sb_layer_norm_backward dweight");
                    check_same(&dbb, "sb_layer_norm_backward dbias");
                }
                pair all[] = {x, dy, w, b, y, dx, dw, dbb, sm, sr};
                for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
            }
}

/* Group norm (instance norm is groups = C, layer-norm-like is groups = 1)
 * with and without the affine parameters, rows crossing the 8192 block,
 * every subset of gradients. */
static void test_group_norm(void) {
    const struct { int64_t shape[3], groups; } cases[] = {
        {{2, 6, 5}, 1}, {{2, 6, 5}, 2}, {{3, 6, 7}, 3}, {{2, 6, 5}, 6}, {{2, 2, 4500}, 1},
        {{1, 1, 1}, 1}};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
        for (int variant = 0; variant < 3; variant++) {
            const int64_t *sh = cases[ci].shape, G = cases[ci].groups;
            bool affine = variant != 0;
            int64_t sc[1] = {sh[1]}, ss[2] = {sh[0], G};
            pair x = pair_rand(3, sh, 4.0f, variant == 2), dy = pair_rand(3, sh, 2.0f, false),
                 g = pair_rand(1, sc, 2.0f, false), b = pair_rand(1, sc, 2.0f, false),
                 y = pair_zeros(SB_F32, 3, sh), dx = pair_zeros(SB_F32, 3, sh),
                 dg = pair_zeros(SB_F32, 1, sc), db = pair_zeros(SB_F32, 1, sc),
                 sm = pair_zeros(SB_F32, 2, ss), sr = pair_zeros(SB_F32, 2, ss);
            char what[96];
            snprintf(what, sizeof what, "sb_group_norm_forward (%lld,%lld,%lld) groups %lld variant %d",
                     (long long)sh[0], (long long)sh[1], (long long)sh[2], (long long)G, variant);
            CHECK_OK(sb_group_norm_forward(x.c, G, cpu_of(&g, affine), cpu_of(&b, affine), 1e-5f,
                                           y.c, sm.c, sr.c));
            CHECK_OK(sb_group_norm_forward(x.d, G, dev_of(&g, affine), dev_of(&b, affine), 1e-5f,
                                           y.d, sm.d, sr.d));
            check_same(&y, what);
            check_same(&sm, "sb_group_norm_forward save_mean");
            check_same(&sr, "sb_group_norm_forward save_rstd");
            for (int outs = 1; outs < 8; outs++) {
                bool wdx = outs & 1, wdg = (outs & 2) && affine, wdb = (outs & 4) && affine;
                CHECK_OK(sb_group_norm_backward(dy.c, x.c, G, cpu_of(&g, affine), sm.c, sr.c,
                                                cpu_of(&dx, wdx), cpu_of(&dg, wdg), cpu_of(&db, wdb)));
                CHECK_OK(sb_group_norm_backward(dy.d, x.d, G, dev_of(&g, affine), sm.d, sr.d,
                                                dev_of(&dx, wdx), dev_of(&dg, wdg), dev_of(&db, wdb)));
                check_same(&dx, "sb_group_norm_backward dx");
                check_same(&dg, "sb_group_norm_backward dgamma");
                check_same(&db, "sb_group_norm_backward dbeta");
            }
            pair all[] = {x, dy, g, b, y, dx, dg, db, sm, sr};
            for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
        }
}

/* 2-D padding in every mode, pads from 0 to the largest each mode allows
 * (reflect: size - 1, circular: size), a NaN constant, adversarial data
 * for the backward's canonical sums (replicate sums whole pad strips). */
static void test_pad2d(void) {
    const int64_t shapes[][4] = {{2, 3, 5, 4}, {1, 1, 1, 1}, {1, 2, 7, 9}, {1, 1, 3, 1500}};
    for (int si = 0; si < 4; si++)
        for (int mode = SB_PAD_CONSTANT; mode <= SB_PAD_CIRCULAR; mode++)
            for (int variant = 0; variant < 3; variant++) {
                const int64_t *sh = shapes[si];
                int64_t most_h = mode == SB_PAD_REFLECT ? sh[2] - 1 : mode == SB_PAD_CIRCULAR ? sh[2] : 3;
                int64_t most_w = mode == SB_PAD_REFLECT ? sh[3] - 1 : mode == SB_PAD_CIRCULAR ? sh[3] : 700;
                if (most_w > 700) most_w = 700;
                sb_pad2d_params pp = {.left = variant == 0 ? 0 : most_w,
                                      .right = variant == 2 ? most_w / 2 : most_w,
                                      .top = variant == 1 ? 0 : most_h,
                                      .bottom = variant == 2 ? most_h : most_h / 2,
                                      .mode = (sb_pad_mode)mode,
                                      .value = variant == 2 ? NAN : -1.5f};
                int64_t oshape[4] = {sh[0], sh[1], sh[2] + pp.top + pp.bottom,
                                     sh[3] + pp.left + pp.right};
                pair x = pair_rand(4, sh, 4.0f, false), dy = pair_rand(4, oshape, 2.0f, variant == 1),
                     y = pair_zeros(SB_F32, 4, oshape), dx = pair_zeros(SB_F32, 4, sh);
                char what[96];
                snprintf(what, sizeof what, "sb_pad2d_forward (%lld,%lld,%lld,%lld) mode %d variant %d",
                         (long long)sh[0], (long long)sh[1], (long long)sh[2], (long long)sh[3], mode,
                         variant);
                CHECK_OK(sb_pad2d_forward(x.c, &pp, y.c));
                CHECK_OK(sb_pad2d_forward(x.d, &pp, y.d));
                check_same(&y, what);
                CHECK_OK(sb_pad2d_backward(dy.c, &pp, dx.c));
                CHECK_OK(sb_pad2d_backward(dy.d, &pp, dx.d));
                check_same(&dx, "sb_pad2d_backward");
                pair all[] = {x, dy, y, dx};
                for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
            }
}

/* Interpolation in every mode over 1, 2 and 3 spatial axes: up- and
 * downsampling, odd sizes, sizes of 1, the copy case (in == out), explicit
 * scales, align_corners, adversarial data (NaN, infinities, signed zeros);
 * an input element read by more outputs than a canonical-sum block holds
 * (1 -> 9000: the backward's streaming levels). */
static void test_interpolate(void) {
    static const struct {
        int nd;
        int64_t in[3], out[3];
        double scales[3];
    } cases[] = {
        {1, {7}, {13}, {0}},
        {1, {9}, {4}, {0.45}},
        {1, {1}, {9000}, {0}},
        {2, {5, 6}, {5, 11}, {0, 0}},
        {2, {7, 3}, {3, 8}, {0.5, 2.7}},
        {2, {1, 4}, {3, 1}, {0, 0}},
        {3, {3, 4, 5}, {5, 3, 7}, {0, 0, 0}},
        {3, {2, 3, 2}, {4, 6, 3}, {2.0, 2.0, 1.5}},
    };
    int variant = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
        for (int mode = SB_INTERP_NEAREST; mode <= SB_INTERP_CUBIC; mode++)
            for (int align = 0; align < 2; align++) {
                if (align && (mode == SB_INTERP_NEAREST || mode == SB_INTERP_NEAREST_EXACT)) continue;
                int nd = cases[ci].nd;
                bool long_axis = cases[ci].out[0] > 1000;
                int64_t xs[5] = {long_axis ? 1 : 2, long_axis ? 2 : 3}, ys[5] = {xs[0], xs[1]};
                for (int k = 0; k < nd; k++) xs[2 + k] = cases[ci].in[k], ys[2 + k] = cases[ci].out[k];
                sb_interpolate_params prm = {.mode = (sb_interp_mode)mode, .align_corners = align};
                for (int k = 0; k < nd; k++) prm.scales[k] = cases[ci].scales[k];
                bool adversarial = variant++ % 2 == 1;
                pair x = pair_rand(2 + nd, xs, 4.0f, adversarial),
                     dy = pair_rand(2 + nd, ys, 2.0f, !adversarial), y = pair_zeros(SB_F32, 2 + nd, ys),
                     dx = pair_zeros(SB_F32, 2 + nd, xs);
                char what[160];
                snprintf(what, sizeof what, "sb_interpolate_forward case %zu mode %d align %d", ci,
                         mode, align);
                CHECK_OK(sb_interpolate_forward(x.c, &prm, y.c));
                CHECK_OK(sb_interpolate_forward(x.d, &prm, y.d));
                check_same(&y, what);
                snprintf(what, sizeof what, "sb_interpolate_backward case %zu mode %d align %d", ci,
                         mode, align);
                CHECK_OK(sb_interpolate_backward(dy.c, &prm, dx.c));
                CHECK_OK(sb_interpolate_backward(dy.d, &prm, dx.d));
                check_same(&dx, what);
                pair all[] = {x, dy, y, dx};
                for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
            }
}

/* A grid (n, oh, ow, 2): uniform in [-1.3, 1.3] (kind 0); with every third
 * coordinate one of the edge and special values (kind 1: the edges, 0 and
 * -0, pixel centres, NaN, infinities, huge and tiny); or one point for all
 * (kind 2: every input element near it read by every grid point). */
static pair pair_grid(const int64_t *shape, int kind) {
    static const float specials[] = {-1.0f,  1.0f,     0.0f,    -0.0f, NAN,      INFINITY,
                                     -INFINITY, 0.5f,  -0.5f,   1e-30f, 2.0f,    -7.5f,
                                     1e30f, 0.999999f, -1.000001f};
    sb_tensor *t = NULL;
    CHECK_OK(sb_tensor_new(&t, SB_F32, 4, shape));
    float *v = sb_tensor_f32(t);
    for (int64_t i = 0; i < sb_tensor_numel(t); i++) {
        v[i] = sb_test_unif(-1.3f, 1.3f);
        if (kind == 1 && i % 3 == 0)
            v[i] = specials[(int64_t)sb_test_unif(0.0f, 15.0f) % 15];
        if (kind == 2) v[i] = i % 2 ? -0.2f : 0.1f;
    }
    return pair_of(t);
}

/* Grid sampling in both modes, every padding, with and without
 * align_corners: odd shapes, inputs of one row or column or element, grids
 * with edge and special coordinates, adversarial x and dy, one input
 * element read by 10000 grid points (the backward's streaming levels), and
 * dx and dgrid each computed alone. */
static void test_grid_sample(void) {
    static const int64_t shapes[][6] = {/* N, C, H, W, OH, OW */
                                        {2, 3, 5, 7, 4, 6},
                                        {1, 2, 1, 1, 3, 3},
                                        {1, 1, 4, 1, 2, 5},
                                        {3, 1, 2, 9, 1, 7},
                                        {1, 2, 3, 3, 100, 100},
                                        /* dx's reader tables sorted on the device: planes
                                         * and term counts past a work-group, two batches */
                                        {2, 2, 33, 40, 37, 29}};
    int variant = 0;
    for (int si = 0; si < (int)(sizeof shapes / sizeof *shapes); si++)
        for (int mode = SB_GRID_BILINEAR; mode <= SB_GRID_NEAREST; mode++)
            for (int pad = SB_GRID_ZEROS; pad <= SB_GRID_REFLECTION; pad++)
                for (int align = 0; align < 2; align++) {
                    const int64_t *s = shapes[si];
                    int64_t xs[4] = {s[0], s[1], s[2], s[3]}, gs[4] = {s[0], s[4], s[5], 2},
                            ys[4] = {s[0], s[1], s[4], s[5]};
                    int kind = si == 4 ? 2 : variant % 2;
                    bool adversarial = variant++ % 3 == 2;
                    pair x = pair_rand(4, xs, 4.0f, adversarial), grid = pair_grid(gs, kind),
                         dy = pair_rand(4, ys, 2.0f, !adversarial), y = pair_zeros(SB_F32, 4, ys),
                         dx = pair_zeros(SB_F32, 4, xs), dg = pair_zeros(SB_F32, 4, gs);
                    sb_grid_sample_params prm = {(sb_grid_mode)mode, (sb_grid_padding)pad, align};
                    char what[160];
                    snprintf(what, sizeof what, "sb_grid_sample_forward shape %d mode %d pad %d align %d",
                             si, mode, pad, align);
                    CHECK_OK(sb_grid_sample_forward(x.c, grid.c, &prm, y.c));
                    CHECK_OK(sb_grid_sample_forward(x.d, grid.d, &prm, y.d));
                    check_same(&y, what);
                    CHECK_OK(sb_grid_sample_backward(dy.c, x.c, grid.c, &prm, dx.c, dg.c));
                    CHECK_OK(sb_grid_sample_backward(dy.d, x.d, grid.d, &prm, dx.d, dg.d));
                    snprintf(what, sizeof what, "sb_grid_sample_backward dx shape %d mode %d pad %d align %d",
                             si, mode, pad, align);
                    check_same(&dx, what);
                    snprintf(what, sizeof what, "sb_grid_sample_backward dgrid shape %d mode %d pad %d align %d",
                             si, mode, pad, align);
                    check_same(&dg, what);
                    if (si == 0) { /* each alone, over a stale result */
                        CHECK_OK(sb_tensor_fill(dx.d, 7.0f));
                        CHECK_OK(sb_tensor_fill(dg.d, 7.0f));
                        CHECK_OK(sb_grid_sample_backward(dy.d, x.d, grid.d, &prm, dx.d, NULL));
                        CHECK_OK(sb_grid_sample_backward(dy.d, x.d, grid.d, &prm, NULL, dg.d));
                        check_same(&dx, "sb_grid_sample_backward dx alone");
                        check_same(&dg, "sb_grid_sample_backward dgrid alone");
                    }
                    pair all[] = {x, grid, dy, y, dx, dg};
                    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
                }
}

/* Index values in [0, size) with many duplicates (k of them). */
static pair pair_index(int ndim, const int64_t *shape, int64_t size) {
    sb_tensor *t = NULL;
    CHECK_OK(sb_tensor_new(&t, SB_I64, ndim, shape));
    int64_t *v = t->data;
    for (int64_t i = 0; i < sb_tensor_numel(t); i++)
        v[i] = (int64_t)sb_test_unif(0.0f, (float)size) % size;
    return pair_of(t);
}

/* The index family along every dim, with duplicate indices and adversarial
 * terms (their order of addition decides the bits), dense sides that are
 * transposed views, and alpha = 1 and not 1. */
static void test_index(void) {
    const int64_t xs[3] = {4, 6, 5};
    for (int dim = 0; dim < 3; dim++)
        for (int variant = 0; variant < 2; variant++) {
            char what[96];
            /* gather / scatter_add: index has x's shape with 9 along dim */
            int64_t is[3] = {xs[0], xs[1], xs[2]};
            is[dim] = 9;
            pair x = pair_rand(3, xs, 4.0f, variant == 1), ix = pair_index(3, is, xs[dim]),
                 out = pair_zeros(SB_F32, 3, is), dy = pair_rand(3, is, 4.0f, true),
                 dx = pair_zeros(SB_F32, 3, xs), acc = pair_rand(3, xs, 4.0f, true);
            snprintf(what, sizeof what, "sb_gather dim %d variant %d", dim, variant);
            CHECK_OK(sb_gather(x.c, dim, ix.c, out.c));
            CHECK_OK(sb_gather(x.d, dim, ix.d, out.d));
            check_same(&out, what);
            CHECK_OK(sb_gather_backward(dy.c, dim, ix.c, dx.c));
            CHECK_OK(sb_gather_backward(dy.d, dim, ix.d, dx.d));
            check_same(&dx, "sb_gather_backward");
            CHECK_OK(sb_scatter_add(dim, ix.c, dy.c, acc.c));
            CHECK_OK(sb_scatter_add(dim, ix.d, dy.d, acc.d));
            check_same(&acc, "sb_scatter_add");
            /* index_select / index_add: 11 indices along dim */
            int64_t ks[1] = {11}, ss[3] = {xs[0], xs[1], xs[2]};
            ss[dim] = 11;
            pair k = pair_index(1, ks, xs[dim]), sel = pair_zeros(SB_F32, 3, ss),
                 dsel = pair_rand(3, ss, 4.0f, true), dxs = pair_zeros(SB_F32, 3, xs);
            CHECK_OK(sb_index_select(x.c, dim, k.c, sel.c));
            CHECK_OK(sb_index_select(x.d, dim, k.d, sel.d));
            check_same(&sel, "sb_index_select");
            CHECK_OK(sb_index_select_backward(dsel.c, dim, k.c, dxs.c));
            CHECK_OK(sb_index_select_backward(dsel.d, dim, k.d, dxs.d));
            check_same(&dxs, "sb_index_select_backward");
            float alpha = variant ? 0.7f : 1.0f;
            CHECK_OK(sb_index_add(dim, k.c, dsel.c, alpha, acc.c));
            CHECK_OK(sb_index_add(dim, k.d, dsel.d, alpha, acc.d));
            check_same(&acc, "sb_index_add");
            /* a transposed view as the gathered table */
            sb_tensor *tc = NULL, *td = NULL;
            int other = (dim + 1) % 3;
            CHECK_OK(sb_tensor_transpose(&tc, x.c, dim, other));
            CHECK_OK(sb_tensor_transpose(&td, x.d, dim, other));
            int64_t vs[3] = {xs[0], xs[1], xs[2]};
            vs[dim] = xs[other];
            vs[other] = xs[dim];
            int64_t vis[3] = {vs[0], vs[1], vs[2]};
            vis[dim] = 9;
            pair vix = pair_index(3, vis, vs[dim]), vout = pair_zeros(SB_F32, 3, vis);
            CHECK_OK(sb_gather(tc, dim, vix.c, vout.c));
            CHECK_OK(sb_gather(td, dim, vix.d, vout.d));
            check_same(&vout, "sb_gather of a transposed view");
            sb_tensor_free(tc);
            sb_tensor_free(td);
            pair all[] = {x, ix, out, dy, dx, acc, k, sel, dsel, dxs, vix, vout};
            for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
        }
}

/* A pair whose CPU values get `value` at every `every`-th element from
 * `first` (cumprod's zeros, a NaN key), copied to the device again. */
static pair pair_with_value(pair p, int64_t first, int64_t every, float value) {
    float *v = sb_tensor_f32(p.c);
    for (int64_t i = first; i < sb_tensor_numel(p.c); i += every) v[i] = value;
    sb_tensor_free(p.d);
    p.d = NULL;
    CHECK_OK(sb_tensor_to(&p.d, p.c, SB_DEVICE_OPENCL));
    return p;
}

/* cumsum/cumprod and their backward along every dim: adversarial chains,
 * cumprod columns with one and several zeros, a column of 2000, length-1
 * columns, and a transposed view as the input. */
static void test_cumulative(void) {
    const int64_t shapes[][3] = {{4, 6, 5}, {2, 2000, 1}, {1, 1, 1}};
    for (int si = 0; si < 3; si++)
        for (int dim = 0; dim < 3; dim++)
            for (int variant = 0; variant < 3; variant++) {
                const int64_t *sh = shapes[si];
                pair x = pair_rand(3, sh, 2.0f, variant == 1), dy = pair_rand(3, sh, 2.0f, true),
                     y = pair_zeros(SB_F32, 3, sh), dx = pair_zeros(SB_F32, 3, sh);
                if (variant == 2) x = pair_with_value(x, 0, 7, 0.0f);
                char what[96];
                snprintf(what, sizeof what, "sb_cumsum (%lld,%lld,%lld) dim %d variant %d",
                         (long long)sh[0], (long long)sh[1], (long long)sh[2], dim, variant);
                CHECK_OK(sb_cumsum(x.c, dim, y.c));
                CHECK_OK(sb_cumsum(x.d, dim, y.d));
                check_same(&y, what);
                CHECK_OK(sb_cumsum_backward(dy.c, dim, dx.c));
                CHECK_OK(sb_cumsum_backward(dy.d, dim, dx.d));
                check_same(&dx, "sb_cumsum_backward");
                CHECK_OK(sb_cumprod(x.c, dim, y.c));
                CHECK_OK(sb_cumprod(x.d, dim, y.d));
                check_same(&y, "sb_cumprod");
                CHECK_OK(sb_cumprod_backward(x.c, y.c, dy.c, dim, dx.c));
                CHECK_OK(sb_cumprod_backward(x.d, y.d, dy.d, dim, dx.d));
                check_same(&dx, "sb_cumprod_backward");
                /* a transposed view as the input */
                sb_tensor *tc = NULL, *td = NULL;
                int other = (dim + 1) % 3;
                CHECK_OK(sb_tensor_transpose(&tc, x.c, dim, other));
                CHECK_OK(sb_tensor_transpose(&td, x.d, dim, other));
                int64_t vs[3] = {sh[0], sh[1], sh[2]};
                vs[dim] = sh[other];
                vs[other] = sh[dim];
                pair vy = pair_zeros(SB_F32, 3, vs);
                CHECK_OK(sb_cumprod(tc, dim, vy.c));
                CHECK_OK(sb_cumprod(td, dim, vy.d));
                check_same(&vy, "sb_cumprod of a transposed view");
                sb_tensor_free(tc);
                sb_tensor_free(td);
                pair all[] = {x, dy, y, dx, vy};
                for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
            }
}

/* scatter_reduce: every reduction with and without include_self along
 * every dim, duplicate indices, destinations no term reaches, adversarial
 * terms and tables (NaN, infinities, ties of -0 and +0 for amax/amin), a
 * long column (a mean counts without scratch on the device), and
 * transposed views as src and as out. */
static void test_scatter_reduce(void) {
    const int64_t os[3] = {4, 6, 5};
    for (int dim = 0; dim < 3; dim++)
        for (int op = SB_SCATTER_SUM; op <= SB_SCATTER_AMIN; op++)
            for (int self = 0; self < 2; self++) {
                int64_t is[3] = {os[0], os[1], os[2]};
                is[dim] = 9;
                bool adversarial = (dim + op + self) % 2 == 1;
                pair ix = pair_index(3, is, os[dim]), src = pair_rand(3, is, 3.0f, adversarial),
                     out = pair_rand(3, os, 3.0f, !adversarial);
                if (op >= SB_SCATTER_AMAX) { /* signed-zero ties */
                    src = pair_with_value(src, 1, 4, -0.0f);
                    out = pair_with_value(out, 0, 3, 0.0f);
                }
                char what[160];
                snprintf(what, sizeof what, "sb_scatter_reduce dim %d op %d include_self %d", dim,
                         op, self);
                CHECK_OK(sb_scatter_reduce(dim, ix.c, src.c, (sb_scatter_reduce_op)op, self, out.c));
                CHECK_OK(sb_scatter_reduce(dim, ix.d, src.d, (sb_scatter_reduce_op)op, self, out.d));
                check_same(&out, what);
                /* transposed views: src (its dims dim and other swapped) and out */
                int other = (dim + 1) % 3;
                int64_t ts[3] = {is[0], is[1], is[2]}, tos[3] = {os[0], os[1], os[2]};
                ts[dim] = is[other], ts[other] = is[dim];
                tos[dim] = os[other], tos[other] = os[dim];
                pair tsrc = pair_rand(3, ts, 3.0f, adversarial), tout = pair_rand(3, tos, 3.0f, false);
                sb_tensor *sc = NULL, *sd = NULL, *oc = NULL, *od = NULL;
                CHECK_OK(sb_tensor_transpose(&sc, tsrc.c, dim, other));
                CHECK_OK(sb_tensor_transpose(&sd, tsrc.d, dim, other));
                CHECK_OK(sb_tensor_transpose(&oc, tout.c, dim, other));
                CHECK_OK(sb_tensor_transpose(&od, tout.d, dim, other));
                CHECK_OK(sb_scatter_reduce(dim, ix.c, sc, (sb_scatter_reduce_op)op, self, oc));
                CHECK_OK(sb_scatter_reduce(dim, ix.d, sd, (sb_scatter_reduce_op)op, self, od));
                check_same(&tout, "sb_scatter_reduce of transposed views");
                sb_tensor *views[] = {sc, sd, oc, od};
                for (int i = 0; i < 4; i++) sb_tensor_free(views[i]);
                pair all[] = {ix, src, out, tsrc, tout};
                for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
            }
    /* one long column into a short table: many terms per destination */
    int64_t n[1] = {3000}, t[1] = {7};
    for (int op = SB_SCATTER_SUM; op <= SB_SCATTER_AMIN; op++) {
        pair ix = pair_index(1, n, 7), src = pair_rand(1, n, 2.0f, op % 2 == 0),
             out = pair_rand(1, t, 2.0f, false);
        CHECK_OK(sb_scatter_reduce(0, ix.c, src.c, (sb_scatter_reduce_op)op, op % 2, out.c));
        CHECK_OK(sb_scatter_reduce(0, ix.d, src.d, (sb_scatter_reduce_op)op, op % 2, out.d));
        check_same(&out, "sb_scatter_reduce of a column of 3000");
        pair all[] = {ix, src, out};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
    }
}

/* Ties of every kind: values from a small set with -0, +0, NaNs of two
 * payloads, infinities and duplicates, so the (key, position) order decides. */
static pair pair_sort_values(int ndim, const int64_t *shape, bool with_nan) {
    static const float set[] = {-0.0f, 0.0f, 1.5f, -1.5f, INFINITY, -INFINITY, 2.0f, 1e-45f};
    sb_tensor *t = NULL;
    CHECK_OK(sb_tensor_new(&t, SB_F32, ndim, shape));
    float *v = sb_tensor_f32(t);
    for (int64_t i = 0; i < sb_tensor_numel(t); i++) {
        uint32_t r = sb_test_rand32();
        v[i] = set[r % 8];
        if (with_nan && r % 11 == 0) v[i] = r % 2 ? NAN : -NAN;
        if (r % 5 == 0) v[i] = sb_test_unif(-3.0f, 3.0f);
    }
    return pair_of(t);
}

/* sort (both orders), topk (largest and smallest), kthvalue and median
 * (with and without NaN columns, keepdim or not) along every dim, and the
 * common backward with their indices and with repeated indices, on tie-heavy data, a transposed view
 * as x, columns of 1025 and 1500 and many columns; the values and indices must be the CPU's. */
static void test_sort(void) {
    /* the merge sort's cases: runs of every width, a last run cut short
     * (n = 1025 = 2^10 + 1, 1500, 33, 130), columns of several work-groups */
    const int64_t shapes[][3] = {{4, 7, 5}, {3, 1500, 1}, {1, 1, 1}, {3, 2, 1025}, {2, 130, 33}};
    for (int si = 0; si < (int)(sizeof shapes / sizeof *shapes); si++)
        for (int dim = 0; dim < 3; dim++)
            for (int nan = 0; nan < 2; nan++) {
                const int64_t *sh = shapes[si];
                int64_t n = sh[dim];
                pair x = pair_sort_values(3, sh, nan), v = pair_zeros(SB_F32, 3, sh),
                     ix = pair_zeros(SB_I64, 3, sh), dy = pair_rand(3, sh, 2.0f, true),
                     dx = pair_zeros(SB_F32, 3, sh);
                char what[160];
                for (int desc = 0; desc < 2; desc++) {
                    snprintf(what, sizeof what, "sb_sort shape %d dim %d nan %d descending %d", si,
                             dim, nan, desc);
                    CHECK_OK(sb_sort(x.c, dim, desc, v.c, ix.c));
                    CHECK_OK(sb_sort(x.d, dim, desc, v.d, ix.d));
                    check_same(&v, what);
                    check_same(&ix, what);
                    CHECK_OK(sb_sort_backward(dy.c, dim, ix.c, dx.c));
                    CHECK_OK(sb_sort_backward(dy.d, dim, ix.d, dx.d));
                    check_same(&dx, "sb_sort_backward");
                }
                /* topk: k = about a third of the column */
                int64_t k = n / 3 + 1, ks[3] = {sh[0], sh[1], sh[2]};
                ks[dim] = k;
                pair tv = pair_zeros(SB_F32, 3, ks), ti = pair_zeros(SB_I64, 3, ks),
                     tdy = pair_rand(3, ks, 2.0f, false);
                for (int largest = 0; largest < 2; largest++) {
                    CHECK_OK(sb_topk(x.c, k, dim, largest, tv.c, ti.c));
                    CHECK_OK(sb_topk(x.d, k, dim, largest, tv.d, ti.d));
                    check_same(&tv, "sb_topk values");
                    check_same(&ti, "sb_topk indices");
                    CHECK_OK(sb_sort_backward(tdy.c, dim, ti.c, dx.c));
                    CHECK_OK(sb_sort_backward(tdy.d, dim, ti.d, dx.d));
                    check_same(&dx, "sb_sort_backward of topk");
                }
                /* repeated indices: the later p wins */
                pair rix = pair_index(3, ks, n);
                CHECK_OK(sb_sort_backward(tdy.c, dim, rix.c, dx.c));
                CHECK_OK(sb_sort_backward(tdy.d, dim, rix.d, dx.d));
                check_same(&dx, "sb_sort_backward with repeated indices");
                pair_free(&rix);
                /* kthvalue (keepdim) and median (without keepdim) */
                int64_t rs[3] = {sh[0], sh[1], sh[2]}, ms[2];
                rs[dim] = 1;
                for (int a = 0, b = 0; a < 3; a++)
                    if (a != dim) ms[b++] = sh[a];
                pair kv = pair_zeros(SB_F32, 3, rs), ki = pair_zeros(SB_I64, 3, rs),
                     mv = pair_zeros(SB_F32, 2, ms), mi = pair_zeros(SB_I64, 2, ms);
                CHECK_OK(sb_kthvalue(x.c, (n + 1) / 2, dim, true, kv.c, ki.c));
                CHECK_OK(sb_kthvalue(x.d, (n + 1) / 2, dim, true, kv.d, ki.d));
                check_same(&kv, "sb_kthvalue values");
                check_same(&ki, "sb_kthvalue indices");
                CHECK_OK(sb_median(x.c, dim, false, mv.c, mi.c));
                CHECK_OK(sb_median(x.d, dim, false, mv.d, mi.d));
                snprintf(what, sizeof what, "sb_median shape %d dim %d nan %d", si, dim, nan);
                check_same(&mv, what);
                check_same(&mi, what);
                /* a transposed view as x */
                sb_tensor *tc = NULL, *td = NULL;
                int other = (dim + 1) % 3;
                CHECK_OK(sb_tensor_transpose(&tc, x.c, dim, other));
                CHECK_OK(sb_tensor_transpose(&td, x.d, dim, other));
                int64_t vs[3] = {sh[0], sh[1], sh[2]};
                vs[dim] = sh[other];
                vs[other] = sh[dim];
                pair vv = pair_zeros(SB_F32, 3, vs), vi = pair_zeros(SB_I64, 3, vs);
                CHECK_OK(sb_sort(tc, dim, true, vv.c, vi.c));
                CHECK_OK(sb_sort(td, dim, true, vv.d, vi.d));
                check_same(&vv, "sb_sort of a transposed view");
                check_same(&vi, "sb_sort of a transposed view (indices)");
                sb_tensor_free(tc);
                sb_tensor_free(td);
                pair all[] = {x, v, ix, dy, dx, tv, ti, tdy, kv, ki, mv, mi, vv, vi};
                for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
            }
}

/* PReLU with a weight per channel and a shared one, channels past the
 * canonical sum's 8192 block, adversarial data, NaN/inf/signed zeros in x,
 * every subset of the backward's outputs, and dx written over dy. */
static void test_prelu(void) {
    const int64_t shapes[][4] = {{2, 3, 4, 5}, {3, 2, 90, 50}, {1, 1, 1, 1}, {7, 5, 1, 1}};
    for (int si = 0; si < 4; si++)
        for (int variant = 0; variant < 3; variant++) {
            const int64_t *sh = shapes[si];
            bool shared = variant == 1;
            int64_t sw[1] = {shared ? 1 : sh[1]};
            pair x = pair_rand(4, sh, 3.0f, variant == 2), w = pair_rand(1, sw, 1.0f, false),
                 dy = pair_rand(4, sh, 2.0f, variant != 0), y = pair_zeros(SB_F32, 4, sh),
                 dx = pair_zeros(SB_F32, 4, sh), dw = pair_zeros(SB_F32, 1, sw);
            char what[96];
            snprintf(what, sizeof what, "sb_prelu_forward (%lld,%lld,%lld,%lld) variant %d",
                     (long long)sh[0], (long long)sh[1], (long long)sh[2], (long long)sh[3], variant);
            CHECK_OK(sb_prelu_forward(x.c, w.c, y.c));
            CHECK_OK(sb_prelu_forward(x.d, w.d, y.d));
            check_same(&y, what);
            for (int outs = 1; outs < 4; outs++) {
                bool wdx = outs & 1, wdw = outs & 2;
                CHECK_OK(sb_prelu_backward(x.c, w.c, dy.c, cpu_of(&dx, wdx), cpu_of(&dw, wdw)));
                CHECK_OK(sb_prelu_backward(x.d, w.d, dy.d, dev_of(&dx, wdx), dev_of(&dw, wdw)));
                check_same(&dx, "sb_prelu_backward dx");
                check_same(&dw, "sb_prelu_backward dweight");
            }
            /* dx over dy: dweight must read dy before dx overwrites it */
            CHECK_OK(sb_prelu_backward(x.c, w.c, dy.c, dy.c, dw.c));
            CHECK_OK(sb_prelu_backward(x.d, w.d, dy.d, dy.d, dw.d));
            check_same(&dy, "sb_prelu_backward dx written over dy");
            check_same(&dw, "sb_prelu_backward dweight with dx over dy");
            pair all[] = {x, w, dy, y, dx, dw};
            for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
        }
}

/* Scaled dot-product attention: no mask, a broadcast float mask, a boolean
 * key-padding mask with a batch entry whose keys are all excluded, causal
 * top-left and bottom-right (more queries than keys, so some rows see no
 * key), dropout at an offset, an explicit scale, adversarial scores, and
 * every subset of the backward's outputs. */
static void test_sdpa(void) {
    const struct { int64_t b, h, lq, lk, e, ev; int mask, causal; float p; } cases[] = {
        {2, 2, 5, 5, 4, 3, 0, 0, 0.0f},   {1, 3, 4, 6, 8, 8, 1, 2, 0.0f},
        {2, 1, 7, 7, 4, 5, 2, 1, 0.0f},   {1, 2, 3, 9, 4, 4, 0, 0, 0.25f},
        {2, 2, 6, 4, 3, 2, 2, 2, 0.5f},   {1, 1, 40, 40, 16, 16, 0, 1, 0.1f},
        {1, 1, 1, 1, 1, 1, 1, 0, 0.0f},   {2, 1, 3, 0, 2, 2, 0, 0, 0.0f}};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
        for (int adv = 0; adv < 2; adv++) {
            const int64_t B = cases[ci].b, H = cases[ci].h, LQ = cases[ci].lq, LK = cases[ci].lk;
            int64_t sq[4] = {B, H, LQ, cases[ci].e}, sk[4] = {B, H, LK, cases[ci].e},
                    sv[4] = {B, H, LK, cases[ci].ev}, so[4] = {B, H, LQ, cases[ci].ev},
                    sp[4] = {B, H, LQ, LK}, sfm[2] = {LQ, LK}, sbm[4] = {B, 1, 1, LK};
            pair q = pair_rand(4, sq, 2.0f, adv), k = pair_rand(4, sk, 2.0f, false),
                 v = pair_rand(4, sv, 2.0f, adv), dout = pair_rand(4, so, 2.0f, adv),
                 out = pair_zeros(SB_F32, 4, so), probs = pair_zeros(SB_F32, 4, sp),
                 dq = pair_zeros(SB_F32, 4, sq), dk = pair_zeros(SB_F32, 4, sk),
                 dv = pair_zeros(SB_F32, 4, sv), mask = {NULL, NULL};
            /* adversarial: a NaN in one key after the first (its score is NaN,
             * which must win the row's maximum) */
            if (adv && LK > 2) k = pair_with_value(k, 2 * cases[ci].e + 1, B * H * LK * cases[ci].e, NAN);
            if (cases[ci].mask == 1) mask = pair_rand(2, sfm, 3.0f, false);
            if (cases[ci].mask == 2) {
                sb_tensor *m = NULL;
                CHECK_OK(sb_tensor_new(&m, SB_I32, 4, sbm));
                int32_t *mv = m->data;
                /* batch entry 1 excludes every key; entry 0 keeps key 0 */
                for (int64_t i = 0; i < B * LK; i++)
                    mv[i] = i < LK && (i == 0 || sb_test_unif(0.0f, 1.0f) < 0.7f);
                mask = pair_of(m);
            }
            float scale = ci == 2 ? 0.75f : 0.0f;
            if (scale == 0.0f) CHECK_OK(sb_sdpa_default_scale(cases[ci].e, &scale));
            sb_sdpa_causal c = (sb_sdpa_causal)cases[ci].causal;
            float p = cases[ci].p;
            uint64_t seed = 0x1234567890abull + ci, offset = 1000003u * ci;
            char what[96];
            snprintf(what, sizeof what, "sb_sdpa_forward case %zu adversarial %d", ci, adv);
            CHECK_OK(sb_sdpa_forward(q.c, k.c, v.c, mask.c, c, scale, p, seed, 7, offset, out.c,
                                     probs.c));
            CHECK_OK(sb_sdpa_forward(q.d, k.d, v.d, mask.d, c, scale, p, seed, 7, offset, out.d,
                                     probs.d));
            check_same(&out, what);
            check_same(&probs, "sb_sdpa_forward probs");
            for (int outs = 1; outs < 8; outs++) {
                bool wq = outs & 1, wk = outs & 2, wv = outs & 4;
                CHECK_OK(sb_sdpa_backward(dout.c, q.c, k.c, v.c, mask.c, c, scale, p, seed, 7,
                                          offset, probs.c, cpu_of(&dq, wq), cpu_of(&dk, wk),
                                          cpu_of(&dv, wv)));
                CHECK_OK(sb_sdpa_backward(dout.d, q.d, k.d, v.d, mask.d, c, scale, p, seed, 7,
                                          offset, probs.d, dev_of(&dq, wq), dev_of(&dk, wk),
                                          dev_of(&dv, wv)));
                check_same(&dq, "sb_sdpa_backward dq");
                check_same(&dk, "sb_sdpa_backward dk");
                check_same(&dv, "sb_sdpa_backward dv");
            }
            /* the forward without probs gives the same output */
            pair out2 = pair_zeros(SB_F32, 4, so);
            CHECK_OK(sb_sdpa_forward(q.d, k.d, v.d, mask.d, c, scale, p, seed, 7, offset, out2.d,
                                     NULL));
            CHECK_OK(sb_sdpa_forward(q.c, k.c, v.c, mask.c, c, scale, p, seed, 7, offset, out2.c,
                                     NULL));
            check_same(&out2, "sb_sdpa_forward without probs");
            pair all[] = {q, k, v, dout, out, probs, dq, dk, dv, mask, out2};
            for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
        }
}

/* RMS norm (layer norm's kernels without the mean): the CPU's bits. */
static void test_rms_norm(void) {
    const int64_t shapes[][3] = {{4, 3, 11}, {2, 1, 9000}, {1, 1, 1}};
    for (int si = 0; si < 3; si++)
        for (int nd = 1; nd <= 2; nd++)
            for (int variant = 0; variant < 3; variant++) {
                const int64_t *sh = shapes[si];
                bool has_w = variant != 0;
                const int64_t *ps = sh + 3 - nd;
                int64_t lead = nd == 1 ? 2 : 1;
                pair x = pair_rand(3, sh, 4.0f, variant == 2), dy = pair_rand(3, sh, 2.0f, false),
                     w = pair_rand(nd, ps, 2.0f, false), y = pair_zeros(SB_F32, 3, sh),
                     dx = pair_zeros(SB_F32, 3, sh), dw = pair_zeros(SB_F32, nd, ps),
                     sr = pair_zeros(SB_F32, (int)lead, sh);
                char what[96];
                snprintf(what, sizeof what, "sb_rms_norm_forward (%lld,%lld,%lld) over %d dims "
                         "variant %d", (long long)sh[0], (long long)sh[1], (long long)sh[2], nd,
                         variant);
                CHECK_OK(sb_rms_norm_forward(x.c, nd, cpu_of(&w, has_w), 1e-5f, y.c, sr.c));
                CHECK_OK(sb_rms_norm_forward(x.d, nd, dev_of(&w, has_w), 1e-5f, y.d, sr.d));
                check_same(&y, what);
                check_same(&sr, "sb_rms_norm_forward save_rrms");
                for (int outs = 1; outs < 4; outs++) {
                    bool wdx = outs & 1, wdw = (outs & 2) && has_w;
                    CHECK_OK(sb_rms_norm_backward(dy.c, x.c, nd, cpu_of(&w, has_w), sr.c,
                                                  cpu_of(&dx, wdx), cpu_of(&dw, wdw)));
                    CHECK_OK(sb_rms_norm_backward(dy.d, x.d, nd, dev_of(&w, has_w), sr.d,
                                                  dev_of(&dx, wdx), dev_of(&dw, wdw)));
                    check_same(&dx, "sb_rms_norm_backward dx");
                    check_same(&dw, "sb_rms_norm_backward dweight");
                }
                pair all[] = {x, dy, w, y, dx, dw, sr};
                for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
            }
}

static void test_gemm(void) {
    const int64_t sizes[][3] = {{1, 1, 1}, {5, 3, 7}, {64, 64, 64}, {65, 63, 9},
                                {130, 67, 200}, {3, 5, 0}, {1, 300, 17}};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        int64_t m = sizes[si][0], n = sizes[si][1], k = sizes[si][2];
        for (int t = 0; t < 4; t++) {
            bool ta = t & 1, tb = t & 2;
            int64_t sa[2] = {ta ? k : m, ta ? m : k}, sb[2] = {tb ? n : k, tb ? k : n},
                    sc[2] = {m, n};
            pair a = pair_rand(2, sa, 2.0f, si == 1), b = pair_rand(2, sb, 2.0f, si == 1),
                 c = pair_zeros(SB_F32, 2, sc);
            char what[80];
            snprintf(what, sizeof what, "sb_matmul %lldx%lldx%lld trans %d%d", (long long)m,
                     (long long)n, (long long)k, ta, tb);
            CHECK_OK(sb_matmul(a.c, b.c, ta, tb, c.c));
            CHECK_OK(sb_matmul(a.d, b.d, ta, tb, c.d));
            check_same(&c, what);
            pair_free(&a);
            pair_free(&b);
            pair_free(&c);
        }
    }
    /* batched, broadcast b */
    int64_t sa[3] = {3, 17, 29}, sb2[2] = {29, 11}, sc[3] = {3, 17, 11};
    pair a = pair_rand(3, sa, 1.0f, false), b = pair_rand(2, sb2, 1.0f, false),
         c = pair_zeros(SB_F32, 3, sc);
    CHECK_OK(sb_matmul(a.c, b.c, false, false, c.c));
    CHECK_OK(sb_matmul(a.d, b.d, false, false, c.d));
    check_same(&c, "batched sb_matmul");
    pair_free(&a); pair_free(&b); pair_free(&c);

    /* linear forward/backward, adversarial values */
    int64_t sx[2] = {37, 70}, sw[2] = {19, 70}, sbias[1] = {19}, sy[2] = {37, 19};
    pair x = pair_rand(2, sx, 2.0f, true), w = pair_rand(2, sw, 2.0f, false),
         bias = pair_rand(1, sbias, 2.0f, true), y = pair_zeros(SB_F32, 2, sy),
         dy = pair_rand(2, sy, 2.0f, true), dx = pair_zeros(SB_F32, 2, sx),
         dw = pair_zeros(SB_F32, 2, sw), db = pair_zeros(SB_F32, 1, sbias);
    CHECK_OK(sb_linear_forward(x.c, w.c, bias.c, y.c));
    CHECK_OK(sb_linear_forward(x.d, w.d, bias.d, y.d));
    check_same(&y, "sb_linear_forward");
    CHECK_OK(sb_linear_forward(x.c, w.c, NULL, y.c));
    CHECK_OK(sb_linear_forward(x.d, w.d, NULL, y.d));
    check_same(&y, "sb_linear_forward without bias");
    CHECK_OK(sb_linear_backward(dy.c, x.c, w.c, dx.c, dw.c, db.c));
    CHECK_OK(sb_linear_backward(dy.d, x.d, w.d, dx.d, dw.d, db.d));
    check_same(&dx, "sb_linear_backward dx");
    check_same(&dw, "sb_linear_backward dw");
    check_same(&db, "sb_linear_backward db");
    pair all[] = {x, w, bias, y, dy, dx, dw, db};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
}

/* ---- conv2d and pooling ----------------------------------------------------- */

typedef struct conv_case {
    int64_t n, c_in, h, w, c_out, kh, kw;
    sb_conv2d_params p;
} conv_case;

static void test_conv_pool(void) {
    const conv_case cases[] = {
        {2, 3, 9, 11, 4, 3, 2, {2, 1, 1, 0, 1, 2, 1}},  /* stride, pad, dilation */
        {3, 4, 7, 6, 6, 3, 3, {1, 1, 2, 1, 1, 1, 2}},   /* groups 2, padded taps */
        {5, 1, 28, 28, 6, 5, 5, {1, 1, 2, 2, 1, 1, 1}}, /* LeNet-5's first layer */
        {1, 2, 5, 5, 3, 5, 5, {1, 1, 0, 0, 1, 1, 1}},   /* a 1 x 1 output */
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const conv_case *k = &cases[ci];
        int64_t oh, ow;
        CHECK_OK(sb_conv2d_output_size(k->h, k->w, k->kh, k->kw, &k->p, &oh, &ow));
        int64_t sx[4] = {k->n, k->c_in, k->h, k->w}, sw[4] = {k->c_out, k->c_in / k->p.groups, k->kh, k->kw},
                sb[1] = {k->c_out}, sy[4] = {k->n, k->c_out, oh, ow};
        bool adv = ci == 1;
        pair x = pair_rand(4, sx, 2.0f, adv), w = pair_rand(4, sw, 2.0f, adv),
             b = pair_rand(1, sb, 2.0f, false), y = pair_zeros(SB_F32, 4, sy),
             dy = pair_rand(4, sy, 2.0f, adv), dx = pair_zeros(SB_F32, 4, sx),
             dw = pair_zeros(SB_F32, 4, sw), db = pair_zeros(SB_F32, 1, sb);
        char what[64];
        snprintf(what, sizeof what, "sb_conv2d_forward case %d", (int)ci);
        CHECK_OK(sb_conv2d_forward(x.c, w.c, b.c, &k->p, y.c));
        CHECK_OK(sb_conv2d_forward(x.d, w.d, b.d, &k->p, y.d));
        check_same(&y, what);
        CHECK_OK(sb_conv2d_forward(x.c, w.c, NULL, &k->p, y.c));
        CHECK_OK(sb_conv2d_forward(x.d, w.d, NULL, &k->p, y.d));
        check_same(&y, what);
        snprintf(what, sizeof what, "sb_conv2d_backward case %d", (int)ci);
        CHECK_OK(sb_conv2d_backward(dy.c, x.c, w.c, &k->p, dx.c, dw.c, db.c));
        CHECK_OK(sb_conv2d_backward(dy.d, x.d, w.d, &k->p, dx.d, dw.d, db.d));
        check_same(&dx, what);
        check_same(&dw, what);
        check_same(&db, what);
        pair all[] = {x, w, b, y, dy, dx, dw, db};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
    }

    /* conv_transpose2d: composed of the device's conv2d entries, with an
     * output_pad at or above the stride (below the dilation) */
    const sb_conv_transpose2d_params tps[] = {{2, 1, 1, 0, 1, 0, 1, 2, 2}, {1, 2, 0, 1, 1, 1, 2, 1, 1}};
    for (size_t ti = 0; ti < sizeof tps / sizeof *tps; ti++) {
        const sb_conv_transpose2d_params *tp = &tps[ti];
        int64_t oh, ow;
        CHECK_OK(sb_conv_transpose2d_output_size(5, 6, 3, 2, tp, &oh, &ow));
        int64_t sx[4] = {2, 4, 5, 6}, sw[4] = {4, 3, 3, 2}, sb[1] = {3 * tp->groups},
                sy[4] = {2, 3 * tp->groups, oh, ow};
        pair x = pair_rand(4, sx, 2.0f, true), w = pair_rand(4, sw, 2.0f, false),
             b = pair_rand(1, sb, 2.0f, false), y = pair_zeros(SB_F32, 4, sy),
             dy = pair_rand(4, sy, 2.0f, true), dx = pair_zeros(SB_F32, 4, sx),
             dw = pair_zeros(SB_F32, 4, sw), db = pair_zeros(SB_F32, 1, sb);
        CHECK_OK(sb_conv_transpose2d_forward(x.c, w.c, b.c, tp, y.c));
        CHECK_OK(sb_conv_transpose2d_forward(x.d, w.d, b.d, tp, y.d));
        check_same(&y, "sb_conv_transpose2d_forward");
        CHECK_OK(sb_conv_transpose2d_backward(dy.c, x.c, w.c, tp, dx.c, dw.c, db.c));
        CHECK_OK(sb_conv_transpose2d_backward(dy.d, x.d, w.d, tp, dx.d, dw.d, db.d));
        check_same(&dx, "sb_conv_transpose2d_backward dx");
        check_same(&dw, "sb_conv_transpose2d_backward dw");
        check_same(&db, "sb_conv_transpose2d_backward db");
        pair all[] = {x, w, b, y, dy, dx, dw, db};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
    }

    const sb_pool2d_params pools[] = {
        {.kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2},
        {.kernel_h = 3, .kernel_w = 2, .stride_h = 2, .stride_w = 1, .pad_h = 1, .pad_w = 1,
         .ceil_mode = true},
        {.kernel_h = 3, .kernel_w = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1,
         .ceil_mode = true, .count_include_pad = true},
    };
    int64_t sx[4] = {3, 2, 9, 8};
    for (size_t pi = 0; pi < sizeof pools / sizeof *pools; pi++) {
        int64_t oh, ow;
        CHECK_OK(sb_pool2d_output_size(sx[2], sx[3], &pools[pi], &oh, &ow));
        int64_t sp[4] = {sx[0], sx[1], oh, ow};
        pair x = pair_rand(4, sx, 2.0f, pi != 0), y = pair_zeros(SB_F32, 4, sp),
             idx = pair_zeros(SB_I64, 4, sp), dy = pair_rand(4, sp, 2.0f, pi != 0),
             dx = pair_zeros(SB_F32, 4, sx);
        if (pi == 0) { /* ties between +0 and -0, and repeated maxima */
            float *v = x.c->data;
            v[0] = 0.0f; v[1] = -0.0f; v[8] = 1.0f; v[9] = 1.0f;
            sb_tensor_free(x.d);
            CHECK_OK(sb_tensor_to(&x.d, x.c, SB_DEVICE_OPENCL));
        }
        CHECK_OK(sb_max_pool2d_forward(x.c, &pools[pi], y.c, idx.c));
        CHECK_OK(sb_max_pool2d_forward(x.d, &pools[pi], y.d, idx.d));
        check_same(&y, "sb_max_pool2d_forward y");
        check_same(&idx, "sb_max_pool2d_forward indices");
        CHECK_OK(sb_max_pool2d_forward(x.c, &pools[pi], y.c, NULL));
        CHECK_OK(sb_max_pool2d_forward(x.d, &pools[pi], y.d, NULL));
        check_same(&y, "sb_max_pool2d_forward without indices");
        CHECK_OK(sb_max_pool2d_backward(dy.c, idx.c, &pools[pi], dx.c));
        CHECK_OK(sb_max_pool2d_backward(dy.d, idx.d, &pools[pi], dx.d));
        check_same(&dx, "sb_max_pool2d_backward");
        CHECK_OK(sb_avg_pool2d_forward(x.c, &pools[pi], y.c));
        CHECK_OK(sb_avg_pool2d_forward(x.d, &pools[pi], y.d));
        check_same(&y, "sb_avg_pool2d_forward");
        CHECK_OK(sb_avg_pool2d_backward(dy.c, &pools[pi], dx.c));
        CHECK_OK(sb_avg_pool2d_backward(dy.d, &pools[pi], dx.d));
        check_same(&dx, "sb_avg_pool2d_backward");
        pair all[] = {x, y, idx, dy, dx};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
    }

    /* max pooling with dilation (taps that step over inputs, windows that
     * overlap, ceil mode), average pooling with divisor_override */
    const sb_pool2d_params dilated[] = {
        {.kernel_h = 3, .kernel_w = 2, .stride_h = 1, .stride_w = 2, .pad_h = 1, .pad_w = 1,
         .dilation_h = 2, .dilation_w = 3},
        {.kernel_h = 2, .kernel_w = 3, .stride_h = 2, .stride_w = 1, .pad_h = 1, .pad_w = 0,
         .ceil_mode = true, .dilation_h = 3, .dilation_w = 2},
    };
    const sb_pool2d_params divided[] = {
        {.kernel_h = 3, .kernel_w = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1,
         .ceil_mode = true, .count_include_pad = true, .divisor_override = 5},
        {.kernel_h = 2, .kernel_w = 3, .stride_h = 1, .stride_w = 2, .divisor_override = -3},
    };
    for (int pi = 0; pi < 4; pi++) {
        const sb_pool2d_params *pp = pi < 2 ? &dilated[pi] : &divided[pi - 2];
        int64_t oh, ow;
        CHECK_OK(sb_pool2d_output_size(sx[2], sx[3], pp, &oh, &ow));
        int64_t sp[4] = {sx[0], sx[1], oh, ow};
        pair x = pair_rand(4, sx, 2.0f, true), y = pair_zeros(SB_F32, 4, sp),
             idx = pair_zeros(SB_I64, 4, sp), dy = pair_rand(4, sp, 2.0f, true),
             dx = pair_zeros(SB_F32, 4, sx);
        if (pi < 2) {
            CHECK_OK(sb_max_pool2d_forward(x.c, pp, y.c, idx.c));
            CHECK_OK(sb_max_pool2d_forward(x.d, pp, y.d, idx.d));
            check_same(&y, "sb_max_pool2d_forward with dilation");
            check_same(&idx, "sb_max_pool2d_forward with dilation, indices");
            CHECK_OK(sb_max_pool2d_backward(dy.c, idx.c, pp, dx.c));
            CHECK_OK(sb_max_pool2d_backward(dy.d, idx.d, pp, dx.d));
            check_same(&dx, "sb_max_pool2d_backward with dilation");
        } else {
            CHECK_OK(sb_avg_pool2d_forward(x.c, pp, y.c));
            CHECK_OK(sb_avg_pool2d_forward(x.d, pp, y.d));
            check_same(&y, "sb_avg_pool2d_forward with divisor_override");
            CHECK_OK(sb_avg_pool2d_backward(dy.c, pp, dx.c));
            CHECK_OK(sb_avg_pool2d_backward(dy.d, pp, dx.d));
            check_same(&dx, "sb_avg_pool2d_backward with divisor_override");
        }
        pair all[] = {x, y, idx, dy, dx};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
    }

    /* adaptive pooling: windows of different sizes (7 -> 3, 8 -> 5) and the
     * evenly dividing case (8 -> 4) */
    const int64_t outs[][2] = {{3, 5}, {4, 4}, {1, 1}};
    int64_t sa[4] = {2, 3, 7, 8};
    for (size_t ai = 0; ai < sizeof outs / sizeof *outs; ai++) {
        int64_t so[4] = {2, 3, outs[ai][0], outs[ai][1]};
        pair x = pair_rand(4, sa, 2.0f, true), y = pair_zeros(SB_F32, 4, so),
             idx = pair_zeros(SB_I64, 4, so), dy = pair_rand(4, so, 2.0f, true),
             dx = pair_zeros(SB_F32, 4, sa);
        CHECK_OK(sb_adaptive_max_pool2d_forward(x.c, y.c, idx.c));
        CHECK_OK(sb_adaptive_max_pool2d_forward(x.d, y.d, idx.d));
        check_same(&y, "sb_adaptive_max_pool2d_forward y");
        check_same(&idx, "sb_adaptive_max_pool2d_forward indices");
        CHECK_OK(sb_adaptive_max_pool2d_backward(dy.c, idx.c, dx.c));
        CHECK_OK(sb_adaptive_max_pool2d_backward(dy.d, idx.d, dx.d));
        check_same(&dx, "sb_adaptive_max_pool2d_backward");
        CHECK_OK(sb_adaptive_avg_pool2d_forward(x.c, y.c));
        CHECK_OK(sb_adaptive_avg_pool2d_forward(x.d, y.d));
        check_same(&y, "sb_adaptive_avg_pool2d_forward");
        CHECK_OK(sb_adaptive_avg_pool2d_backward(dy.c, dx.c));
        CHECK_OK(sb_adaptive_avg_pool2d_backward(dy.d, dx.d));
        check_same(&dx, "sb_adaptive_avg_pool2d_backward");
        pair all[] = {x, y, idx, dy, dx};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
    }
}

/* ---- optimizers ----------------------------------------------------------------- */

static void test_optim(void) {
    int64_t s[1] = {1000};
    for (int variant = 0; variant < 4; variant++) {
        pair p = pair_rand(1, s, 1.0f, variant == 3), g = pair_rand(1, s, 1.0f, variant == 3),
             m = pair_zeros(SB_F32, 1, s), v = pair_zeros(SB_F32, 1, s),
             vm = pair_zeros(SB_F32, 1, s);
        sb_sgd_config sgd = sb_sgd_default_config(0.1);
        sgd.momentum = variant ? 0.9 : 0.0;
        sgd.nesterov = variant == 1;
        sgd.dampening = variant == 2 ? 0.25 : 0.0;
        sgd.weight_decay = variant >= 2 ? 1e-2 : 0.0;
        sgd.maximize = variant == 3;
        for (int step = 1; step <= 3; step++) {
            CHECK_OK(sb_sgd_step_tensor(&sgd, step, p.c, g.c, variant ? m.c : NULL));
            CHECK_OK(sb_sgd_step_tensor(&sgd, step, p.d, g.d, variant ? m.d : NULL));
        }
        check_same(&p, "sb_sgd_step_tensor param");
        check_same(&m, "sb_sgd_step_tensor momentum");
        sb_adam_config adam = sb_adam_default_config(1e-3);
        adam.amsgrad = variant & 1;
        adam.weight_decay = variant >= 2 ? 0.01 : 0.0;
        adam.decoupled_weight_decay = variant == 3;
        adam.maximize = variant == 2;
        for (int step = 1; step <= 3; step++) {
            CHECK_OK(sb_adam_step_tensor(&adam, step, p.c, g.c, m.c, v.c, adam.amsgrad ? vm.c : NULL));
            CHECK_OK(sb_adam_step_tensor(&adam, step, p.d, g.d, m.d, v.d, adam.amsgrad ? vm.d : NULL));
        }
        check_same(&p, "sb_adam_step_tensor param");
        check_same(&m, "sb_adam_step_tensor exp_avg");
        check_same(&v, "sb_adam_step_tensor exp_avg_sq");
        check_same(&vm, "sb_adam_step_tensor max_exp_avg_sq");
        pair all[] = {p, g, m, v, vm};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
    }
}

/* ---- the correctly rounded functions and the activations built on them ---- */

/* Device sb_expf ... sb_erff (src/math compiled as OpenCL C) against the
 * host's on a large sample: random bit patterns (every class: NaN, inf,
 * subnormals, both signs) and dense runs of consecutive floats around each
 * function's branch points. */
static void test_math_functions(void) {
    const int64_t n = sb_test_quick() ? (1 << 14) : (1 << 20);
#define SB_NAME(i, name) #name,
#define SB_HOST(i, name) sb_##name,
    static const char *names[] = {SB_GPU_MATH_EVAL_FUNCTIONS(SB_NAME)};
    float (*host[])(float) = {SB_GPU_MATH_EVAL_FUNCTIONS(SB_HOST)};
#undef SB_NAME
#undef SB_HOST
    /* branch points of the functions: overflow and underflow edges, 1, the
     * subnormal boundary, and sin/cos's reduction ranges (pi multiples,
     * 2^20, huge arguments) */
    static const float around[] = {0.0f,   1.0f,     -1.0f,   88.7f,      -103.9f,   -17.9f,
                                   10.0f,  4.0f,     0.5f,    0x1p-7f,    -0x1p-8f,  1e-30f,
                                   0x1p-126f, 128.0f, -149.0f, -126.0f, 3.14159265f, 0x1p20f,
                                   1e6f,   0x1p100f, 2.0f};
    int64_t s[1] = {n};
    sb_tensor *xc = NULL;
    CHECK_OK(sb_tensor_new(&xc, SB_F32, 1, s));
    float *x = sb_tensor_f32(xc);
    int64_t half = n / 2, per = (n - half) / (int64_t)(sizeof around / sizeof *around);
    for (int64_t i = 0; i < half; i++) x[i] = sb_test_from_bits(sb_test_rand32());
    for (int64_t i = half; i < n; i++) {
        int64_t k = (i - half) / (per ? per : 1), j = (i - half) % (per ? per : 1);
        if (k >= (int64_t)(sizeof around / sizeof *around)) k = 0;
        uint32_t b = sb_test_bits(around[k]) + (uint32_t)(j - per / 2);
        x[i] = sb_test_from_bits(b);
    }
    pair in = pair_of(xc), out = pair_zeros(SB_F32, 1, s);
    for (int f = 0; f < (int)(sizeof names / sizeof *names); f++) {
        CHECK_OK(sb_ocl_math_eval(f, in.d->data, out.d->data, n));
        float *y = sb_tensor_f32(out.c);
        for (int64_t i = 0; i < n; i++) y[i] = host[f](x[i]);
        char what[64];
        snprintf(what, sizeof what, "device sb_%s on %lld inputs", names[f], (long long)n);
        check_same(&out, what);
    }
    CHECK_ERROR(sb_ocl_math_eval((int)(sizeof names / sizeof *names), in.d->data, out.d->data, n),
                SB_ERR_ARG, "names no function");
    pair_free(&in);
    pair_free(&out);
}

static void test_math_activations(void) {
    int64_t s[2] = {7, 301};
    pair x = pair_rand(2, s, 12.0f, true), dy = pair_rand(2, s, 2.0f, true),
         y = pair_zeros(SB_F32, 2, s), dx = pair_zeros(SB_F32, 2, s);
    CHECK_OK(sb_exp(x.c, y.c));
    CHECK_OK(sb_exp(x.d, y.d));
    check_same(&y, "sb_exp");
    CHECK_OK(sb_log(x.c, y.c));
    CHECK_OK(sb_log(x.d, y.d));
    check_same(&y, "sb_log");
    CHECK_OK(sb_tanh_forward(x.c, y.c));
    CHECK_OK(sb_tanh_forward(x.d, y.d));
    check_same(&y, "sb_tanh_forward");
    CHECK_OK(sb_sigmoid_forward(x.c, y.c));
    CHECK_OK(sb_sigmoid_forward(x.d, y.d));
    check_same(&y, "sb_sigmoid_forward");
    CHECK_OK(sb_silu_forward(x.c, y.c));
    CHECK_OK(sb_silu_forward(x.d, y.d));
    check_same(&y, "sb_silu_forward");
    CHECK_OK(sb_silu_backward(x.c, dy.c, dx.c));
    CHECK_OK(sb_silu_backward(x.d, dy.d, dx.d));
    check_same(&dx, "sb_silu_backward");
    for (int approx = 0; approx < 2; approx++) {
        CHECK_OK(sb_gelu_forward(x.c, approx, y.c));
        CHECK_OK(sb_gelu_forward(x.d, approx, y.d));
        check_same(&y, approx ? "sb_gelu_forward tanh" : "sb_gelu_forward erf");
        CHECK_OK(sb_gelu_backward(x.c, dy.c, approx, dx.c));
        CHECK_OK(sb_gelu_backward(x.d, dy.d, approx, dx.d));
        check_same(&dx, approx ? "sb_gelu_backward tanh" : "sb_gelu_backward erf");
    }
    const float params[][2] = {{1.0f, 20.0f}, {2.5f, 3.0f}, {0.5f, -1.0f}};
    for (int k = 0; k < 3; k++) {
        CHECK_OK(sb_softplus_forward(x.c, params[k][0], params[k][1], y.c));
        CHECK_OK(sb_softplus_forward(x.d, params[k][0], params[k][1], y.d));
        check_same(&y, "sb_softplus_forward");
        CHECK_OK(sb_softplus_backward(x.c, dy.c, params[k][0], params[k][1], dx.c));
        CHECK_OK(sb_softplus_backward(x.d, dy.d, params[k][0], params[k][1], dx.d));
        check_same(&dx, "sb_softplus_backward");
    }
    /* a transposed view through exp */
    sb_tensor *tc = NULL, *td = NULL;
    int64_t st[2] = {301, 7};
    pair yt = pair_zeros(SB_F32, 2, st);
    CHECK_OK(sb_tensor_transpose(&tc, x.c, 0, 1));
    CHECK_OK(sb_tensor_transpose(&td, x.d, 0, 1));
    CHECK_OK(sb_exp(tc, yt.c));
    CHECK_OK(sb_exp(td, yt.d));
    check_same(&yt, "sb_exp of a transposed view");
    sb_tensor_free(tc);
    sb_tensor_free(td);
    pair all[] = {x, dy, y, dx, yt};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
}

/* ---- the hard activations: kinks, signed zeros, NaN ------------------------- */

/* hardtanh (relu6 = hardtanh(0, 6) among its ranges), hardsigmoid,
 * hardswish, elu, mish, logsigmoid, hardshrink, softshrink and threshold
 * forward and backward on the adversarial mixture with every kink
 * (+-3, 0, -0, 6, each range's ends and their neighbours) planted, and on a
 * transposed view. */
static void test_hard_activations(void) {
    int64_t s[2] = {9, 131};
    pair x = pair_rand(2, s, 8.0f, true), dy = pair_rand(2, s, 2.0f, true),
         y = pair_zeros(SB_F32, 2, s), dx = pair_zeros(SB_F32, 2, s);
    const float kinks[] = {-3.0f, 3.0f, 0.0f, -0.0f, 6.0f, -1.0f, 1.0f, -2.5f, 0.5f,
                           nextafterf(-3.0f, 0.0f), nextafterf(-3.0f, -4.0f),
                           nextafterf(3.0f, 0.0f), nextafterf(3.0f, 4.0f), nextafterf(6.0f, 7.0f),
                           nextafterf(0.0f, 1.0f), NAN, -NAN, INFINITY, -INFINITY};
    float *xv = sb_tensor_f32(x.c);
    for (size_t k = 0; k < sizeof kinks / sizeof *kinks; k++) xv[k * 37 % 1179] = kinks[k];
    sb_tensor_free(x.d);
    x = pair_of(x.c);
    const float ranges[][2] = {{-1.0f, 1.0f}, {0.0f, 6.0f}, {-2.5f, 0.5f}, {-0.0f, 0.0f}};
    for (int r = 0; r < 4; r++) {
        float lo = ranges[r][0], hi = ranges[r][1];
        CHECK_OK(sb_hardtanh_forward(x.c, lo, hi, y.c));
        CHECK_OK(sb_hardtanh_forward(x.d, lo, hi, y.d));
        check_same(&y, "sb_hardtanh_forward");
        CHECK_OK(sb_hardtanh_backward(x.c, dy.c, lo, hi, dx.c));
        CHECK_OK(sb_hardtanh_backward(x.d, dy.d, lo, hi, dx.d));
        check_same(&dx, "sb_hardtanh_backward");
    }
    CHECK_OK(sb_hardsigmoid_forward(x.c, y.c));
    CHECK_OK(sb_hardsigmoid_forward(x.d, y.d));
    check_same(&y, "sb_hardsigmoid_forward");
    CHECK_OK(sb_hardsigmoid_backward(x.c, dy.c, dx.c));
    CHECK_OK(sb_hardsigmoid_backward(x.d, dy.d, dx.d));
    check_same(&dx, "sb_hardsigmoid_backward");
    CHECK_OK(sb_hardswish_forward(x.c, y.c));
    CHECK_OK(sb_hardswish_forward(x.d, y.d));
    check_same(&y, "sb_hardswish_forward");
    CHECK_OK(sb_hardswish_backward(x.c, dy.c, dx.c));
    CHECK_OK(sb_hardswish_backward(x.d, dy.d, dx.d));
    check_same(&dx, "sb_hardswish_backward");
    /* a transposed view in, a dense result out */
    sb_tensor *tc = NULL, *td = NULL;
    int64_t st[2] = {131, 9};
    pair yt = pair_zeros(SB_F32, 2, st);
    CHECK_OK(sb_tensor_transpose(&tc, x.c, 0, 1));
    CHECK_OK(sb_tensor_transpose(&td, x.d, 0, 1));
    CHECK_OK(sb_hardswish_forward(tc, yt.c));
    CHECK_OK(sb_hardswish_forward(td, yt.d));
    check_same(&yt, "sb_hardswish_forward of a transposed view");
    /* ELU (elu, SELU's and a CELU's coefficients), Mish, LogSigmoid
     * (math.cl), the shrinks and threshold (pointwise.cl), each with its
     * edges among the planted values */
    const float elu_p[3][3] = {{1.5f, 1.0f, 1.0f}, {0x1.ac5afap+0f, 0x1.0cfabep+0f, 1.0f},
                               {2.0f, 1.0f, 0.5f}};
    for (int e = 0; e < 3; e++) {
        const float *p = elu_p[e];
        CHECK_OK(sb_elu_forward(x.c, p[0], p[1], p[2], y.c));
        CHECK_OK(sb_elu_forward(x.d, p[0], p[1], p[2], y.d));
        check_same(&y, "sb_elu_forward");
        CHECK_OK(sb_elu_backward(x.c, dy.c, p[0], p[1], p[2], dx.c));
        CHECK_OK(sb_elu_backward(x.d, dy.d, p[0], p[1], p[2], dx.d));
        check_same(&dx, "sb_elu_backward");
    }
    CHECK_OK(sb_mish_forward(x.c, y.c));
    CHECK_OK(sb_mish_forward(x.d, y.d));
    check_same(&y, "sb_mish_forward");
    CHECK_OK(sb_mish_backward(x.c, dy.c, dx.c));
    CHECK_OK(sb_mish_backward(x.d, dy.d, dx.d));
    check_same(&dx, "sb_mish_backward");
    CHECK_OK(sb_logsigmoid_forward(x.c, y.c));
    CHECK_OK(sb_logsigmoid_forward(x.d, y.d));
    check_same(&y, "sb_logsigmoid_forward");
    CHECK_OK(sb_logsigmoid_backward(x.c, dy.c, dx.c));
    CHECK_OK(sb_logsigmoid_backward(x.d, dy.d, dx.d));
    check_same(&dx, "sb_logsigmoid_backward");
    CHECK_OK(sb_hardshrink_forward(x.c, 0.5f, y.c));
    CHECK_OK(sb_hardshrink_forward(x.d, 0.5f, y.d));
    check_same(&y, "sb_hardshrink_forward");
    CHECK_OK(sb_hardshrink_backward(x.c, dy.c, 0.5f, dx.c));
    CHECK_OK(sb_hardshrink_backward(x.d, dy.d, 0.5f, dx.d));
    check_same(&dx, "sb_hardshrink_backward");
    CHECK_OK(sb_softshrink_forward(x.c, 1.0f, y.c));
    CHECK_OK(sb_softshrink_forward(x.d, 1.0f, y.d));
    check_same(&y, "sb_softshrink_forward");
    CHECK_OK(sb_softshrink_backward(x.c, dy.c, 1.0f, dx.c));
    CHECK_OK(sb_softshrink_backward(x.d, dy.d, 1.0f, dx.d));
    check_same(&dx, "sb_softshrink_backward");
    CHECK_OK(sb_threshold_forward(x.c, 0.0f, -7.0f, y.c));
    CHECK_OK(sb_threshold_forward(x.d, 0.0f, -7.0f, y.d));
    check_same(&y, "sb_threshold_forward");
    CHECK_OK(sb_threshold_backward(x.c, dy.c, 0.0f, dx.c));
    CHECK_OK(sb_threshold_backward(x.d, dy.d, 0.0f, dx.d));
    check_same(&dx, "sb_threshold_backward");
    CHECK_OK(sb_mish_forward(tc, yt.c));
    CHECK_OK(sb_mish_forward(td, yt.d));
    check_same(&yt, "sb_mish_forward of a transposed view");
    sb_tensor_free(tc);
    sb_tensor_free(td);
    pair all[] = {x, dy, y, dx, yt};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
}

/* ---- MSE, and LeNet-5 training steps through autograd, modules, optimizers ---- */

static void test_mse(void) {
    const int64_t lengths[] = {1, 33, 8193};
    for (size_t li = 0; li < sizeof lengths / sizeof *lengths; li++) {
        int64_t s[1] = {lengths[li]};
        pair x = pair_rand(1, s, 3.0f, true), t = pair_rand(1, s, 3.0f, true),
             per = pair_zeros(SB_F32, 1, s), dx = pair_zeros(SB_F32, 1, s),
             dt = pair_zeros(SB_F32, 1, s), one = pair_zeros(SB_F32, 0, NULL),
             dl = pair_rand(1, s, 2.0f, false), dl0 = pair_rand(0, NULL, 2.0f, false);
        for (int red = SB_LOSS_NONE; red <= SB_LOSS_SUM; red++) {
            pair *out = red == SB_LOSS_NONE ? &per : &one, *g = red == SB_LOSS_NONE ? &dl : &dl0;
            CHECK_OK(sb_mse_forward(x.c, t.c, (sb_loss_reduction)red, out->c));
            CHECK_OK(sb_mse_forward(x.d, t.d, (sb_loss_reduction)red, out->d));
            check_same(out, "sb_mse_forward");
            CHECK_OK(sb_mse_backward(x.c, t.c, (sb_loss_reduction)red, g->c, dx.c, dt.c));
            CHECK_OK(sb_mse_backward(x.d, t.d, (sb_loss_reduction)red, g->d, dx.d, dt.d));
            check_same(&dx, "sb_mse_backward dx");
            check_same(&dt, "sb_mse_backward dtarget");
            CHECK_OK(sb_mse_backward(x.c, t.c, (sb_loss_reduction)red, g->c, dx.c, NULL));
            CHECK_OK(sb_mse_backward(x.d, t.d, (sb_loss_reduction)red, g->d, dx.d, NULL));
            check_same(&dx, "sb_mse_backward without dtarget");
        }
        pair all[] = {x, t, per, dx, dt, one, dl, dl0};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
    }
}

/* Every elementwise loss kind (sb_elementwise_loss: src/ref/loss_terms.h in
 * the math program) x reduction x weight (and pos_weight for BCE with
 * logits) x with and without dtarget, forward and backward, bit for bit
 * with the CPU, on adversarial values (BCE: probabilities with exact 0, 1
 * and values near them; KL: probabilities, zeros and NaN targets). */
static pair pair_probabilities(int64_t n, bool specials) {
    sb_tensor *t = NULL;
    CHECK_OK(sb_tensor_new(&t, SB_F32, 1, &n));
    static const float edge[] = {0.0f, 1.0f, 0x1p-149f, 0x1.fffffep-1f, 1e-30f, 0.5f};
    for (int64_t i = 0; i < n; i++)
        sb_tensor_f32(t)[i] = specials && i < 6 ? edge[i] : sb_test_unif(0.0f, 1.0f);
    return pair_of(t);
}

static void test_elementwise_losses(void) {
    static const sb_elementwise_loss kinds[] = {
        {SB_LOSS_MSE, 0.0f, false},   {SB_LOSS_L1, 0.0f, false},
        {SB_LOSS_SMOOTH_L1, 1.0f, false}, {SB_LOSS_SMOOTH_L1, 0.0f, false},
        {SB_LOSS_SMOOTH_L1, 0.3f, false}, {SB_LOSS_HUBER, 1.0f, false},
        {SB_LOSS_HUBER, 2.5f, false}, {SB_LOSS_BCE, 0.0f, false},
        {SB_LOSS_BCE_WITH_LOGITS, 0.0f, false}, {SB_LOSS_KL_DIV, 0.0f, false},
        {SB_LOSS_KL_DIV, 0.0f, true}};
    const int64_t lengths[] = {1, 37, 4099};
    for (size_t li = 0; li < sizeof lengths / sizeof *lengths; li++) {
        int64_t n = lengths[li], s[1] = {n};
        pair xa = pair_rand(1, s, 4.0f, true), ta = pair_rand(1, s, 4.0f, true),
             xp = pair_probabilities(n, true), tp = pair_probabilities(n, false),
             w = pair_rand(1, s, 2.0f, true), pw = pair_rand(1, s, 3.0f, false),
             per = pair_zeros(SB_F32, 1, s), one = pair_zeros(SB_F32, 0, NULL),
             dx = pair_zeros(SB_F32, 1, s), dt = pair_zeros(SB_F32, 1, s),
             dl = pair_rand(1, s, 2.0f, false), dl0 = pair_rand(0, NULL, 2.0f, false);
        for (size_t ki = 0; ki < sizeof kinds / sizeof *kinds; ki++) {
            const sb_elementwise_loss *p = &kinds[ki];
            bool bce = p->kind == SB_LOSS_BCE, kl = p->kind == SB_LOSS_KL_DIV;
            const pair *x = bce ? &xp : &xa, *t = bce || (kl && !p->log_target) ? &tp : &ta;
            bool has_dt = p->kind <= SB_LOSS_HUBER;
            for (int red = SB_LOSS_NONE; red <= SB_LOSS_SUM; red++)
                for (int opt = 0; opt < (p->kind == SB_LOSS_BCE_WITH_LOGITS ? 4 : 2); opt++) {
                    char what[128];
                    snprintf(what, sizeof what, "loss kind %d beta %g log_target %d, reduction %d, "
                             "weight %d, pos_weight %d, n %lld", (int)p->kind, (double)p->beta,
                             (int)p->log_target, red, opt & 1, opt >> 1, (long long)n);
                    const sb_tensor *wc = opt & 1 ? w.c : NULL, *wd = opt & 1 ? w.d : NULL;
                    const sb_tensor *pc = opt & 2 ? pw.c : NULL, *pd = opt & 2 ? pw.d : NULL;
                    pair *out = red == SB_LOSS_NONE ? &per : &one;
                    pair *g = red == SB_LOSS_NONE ? &dl : &dl0;
                    sb_loss_reduction r = (sb_loss_reduction)red;
                    CHECK_OK(sb_elementwise_loss_forward(p, x->c, t->c, wc, pc, r, out->c));
                    CHECK_OK(sb_elementwise_loss_forward(p, x->d, t->d, wd, pd, r, out->d));
                    check_same(out, what);
                    CHECK_OK(sb_elementwise_loss_backward(p, x->c, t->c, wc, pc, r, g->c, dx.c,
                                                          has_dt ? dt.c : NULL));
                    CHECK_OK(sb_elementwise_loss_backward(p, x->d, t->d, wd, pd, r, g->d, dx.d,
                                                          has_dt ? dt.d : NULL));
                    check_same(&dx, what);
                    if (has_dt) check_same(&dt, what);
                }
        }
        pair all[] = {xa, ta, xp, tp, w, pw, per, one, dx, dt, dl, dl0};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
    }
}

/* LeNet-5 (conv, relu, max pool, linear) regressing one-hot targets with
 * MSE, with SGD (momentum) and with Adam: forward, autograd backward and the
 * optimizer step all on the OpenCL device, the same losses and parameters
 * as the CPU, bit for bit (tests/support/lenet_compare.h). */
static void test_lenet_training(void) {
    size_t live0 = sb_ocl_live_blocks();
    for (int use_adam = 0; use_adam < 2; use_adam++) {
        sb_test_lenet_case c = sb_test_lenet_default(SB_DEVICE_OPENCL);
        c.loss = SB_TEST_LENET_MSE;
        c.adam = use_adam;
        c.batch = 4;
        sb_test_lenet_compare(&c);
    }
    CHECK(sb_ocl_live_blocks() == live0, "the model, optimizer and graph released their opencl "
          "memory (%zu blocks left)", sb_ocl_live_blocks() - live0);
}

/* ---- softmax, cross-entropy, NLL; LeNet-5 with cross-entropy ---------------- */

static void test_softmax_losses(void) {
    int64_t s[3] = {3, 11, 5};
    pair x = pair_rand(3, s, 20.0f, true), dy = pair_rand(3, s, 2.0f, false),
         y = pair_zeros(SB_F32, 3, s), dx = pair_zeros(SB_F32, 3, s);
    for (int dim = 0; dim < 3; dim++)
        for (int log = 0; log < 2; log++) {
            sb_status (*fwd)(const sb_tensor *, int, sb_tensor *) =
                log ? sb_log_softmax_forward : sb_softmax_forward;
            sb_status (*bwd)(const sb_tensor *, const sb_tensor *, int, sb_tensor *) =
                log ? sb_log_softmax_backward : sb_softmax_backward;
            CHECK_OK(fwd(x.c, dim, y.c));
            CHECK_OK(fwd(x.d, dim, y.d));
            check_same(&y, log ? "sb_log_softmax_forward" : "sb_softmax_forward");
            CHECK_OK(bwd(y.c, dy.c, dim, dx.c));
            CHECK_OK(bwd(y.d, dy.d, dim, dx.d));
            check_same(&dx, log ? "sb_log_softmax_backward" : "sb_softmax_backward");
        }
    pair all0[] = {x, dy, y, dx};
    for (size_t i = 0; i < sizeof all0 / sizeof *all0; i++) pair_free(&all0[i]);

    int64_t sl[2] = {37, 10}, sn[1] = {37};
    pair lg = pair_rand(2, sl, 8.0f, false), dlg = pair_zeros(SB_F32, 2, sl),
         per = pair_zeros(SB_F32, 1, sn), one = pair_zeros(SB_F32, 0, NULL),
         gper = pair_rand(1, sn, 2.0f, false), gone = pair_rand(0, NULL, 2.0f, false);
    sb_tensor *tc = NULL;
    CHECK_OK(sb_tensor_new(&tc, SB_I64, 1, sn));
    for (int r = 0; r < 37; r++) ((int64_t *)tc->data)[r] = r % 7 == 3 ? -100 : (int64_t)(sb_test_rand32() % 10);
    pair t = pair_of(tc);
    const float smoothing[] = {0.0f, 0.1f};
    for (int red = SB_LOSS_NONE; red <= SB_LOSS_SUM; red++)
        for (int k = 0; k < 2; k++) {
            pair *out = red == SB_LOSS_NONE ? &per : &one, *g = red == SB_LOSS_NONE ? &gper : &gone;
            sb_loss_reduction rd = (sb_loss_reduction)red;
            CHECK_OK(sb_cross_entropy_forward(lg.c, t.c, rd, smoothing[k], -100, out->c));
            CHECK_OK(sb_cross_entropy_forward(lg.d, t.d, rd, smoothing[k], -100, out->d));
            check_same(out, "sb_cross_entropy_forward");
            CHECK_OK(sb_cross_entropy_backward(lg.c, t.c, rd, smoothing[k], -100, g->c, dlg.c));
            CHECK_OK(sb_cross_entropy_backward(lg.d, t.d, rd, smoothing[k], -100, g->d, dlg.d));
            check_same(&dlg, "sb_cross_entropy_backward");
            if (k) continue;
            CHECK_OK(sb_nll_loss_forward(lg.c, t.c, rd, -100, out->c));
            CHECK_OK(sb_nll_loss_forward(lg.d, t.d, rd, -100, out->d));
            check_same(out, "sb_nll_loss_forward");
            CHECK_OK(sb_nll_loss_backward(lg.c, t.c, rd, -100, g->c, dlg.c));
            CHECK_OK(sb_nll_loss_backward(lg.d, t.d, rd, -100, g->d, dlg.d));
            check_same(&dlg, "sb_nll_loss_backward");
        }
    pair all[] = {lg, dlg, per, one, gper, gone, t};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
}

/* The class losses of sb_class_loss_* (cross-entropy with label smoothing
 * 0, 0.1 and 1, and NLL) with class weights and K dimensions, and without
 * either (the (N, C) entries): every reduction, ignored rows, a batch
 * whose rows are all ignored (MEAN's 0 / 0), weights with zeros, ties and
 * a subnormal, adversarial inputs (NaN, infinities, -inf logits) and rows
 * past the canonical sum's 8192 block (MEAN's divisor, computed on the
 * device, over 15003 unweighted and 20011 weighted rows). */
static void test_class_losses(void) {
    static const struct {
        int ndim;
        int64_t shape[4]; /* N, C, K... */
        bool weighted, all_ignored, adversarial;
    } cases[] = {
        {4, {2, 5, 3, 4}, true, false, false},  {3, {3, 7, 5}, false, false, true},
        {2, {37, 10}, true, false, true},       {2, {9, 4}, false, false, false},
        {3, {2, 3, 4200}, true, false, false},  {3, {2, 6, 3}, true, true, false},
        {4, {1, 1, 2, 3}, false, false, false},
        /* MEAN's divisor on the device: the count over 32 lanes and the
         * weights' canonical sum past several 8192 blocks */
        {3, {3, 2, 5001}, false, false, false}, {2, {20011, 5}, true, false, false},
    };
    const float smoothing[] = {0.0f, 0.1f, 1.0f};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        int nd = cases[ci].ndim;
        const int64_t *s = cases[ci].shape;
        int64_t ts[3] = {s[0]}, C = s[1], rows = s[0];
        for (int k = 2; k < nd; k++) ts[k - 1] = s[k], rows *= s[k];
        pair in = pair_rand(nd, s, 8.0f, cases[ci].adversarial), din = pair_zeros(SB_F32, nd, s),
             per = pair_zeros(SB_F32, nd - 1, ts), one = pair_zeros(SB_F32, 0, NULL),
             gper = pair_rand(nd - 1, ts, 2.0f, false), gone = pair_rand(0, NULL, 2.0f, false);
        sb_tensor *tc = NULL, *wc = NULL;
        CHECK_OK(sb_tensor_new(&tc, SB_I64, nd - 1, ts));
        for (int64_t r = 0; r < rows; r++)
            ((int64_t *)tc->data)[r] = cases[ci].all_ignored || r % 7 == 3 ? -100 : (int64_t)(sb_test_rand32() % (uint32_t)C);
        pair t = pair_of(tc), w = {NULL, NULL};
        if (cases[ci].weighted) {
            CHECK_OK(sb_tensor_new(&wc, SB_F32, 1, &C));
            float *wv = sb_tensor_f32(wc);
            for (int64_t j = 0; j < C; j++)
                wv[j] = j % 4 == 1 ? 0.0f : j % 4 == 2 ? 1e-40f : sb_test_unif(0.1f, 3.0f);
            if (C > 3) wv[3] = wv[0]; /* a tie */
            w = pair_of(wc);
        }
        for (int kind = SB_LOSS_CROSS_ENTROPY; kind <= SB_LOSS_NLL; kind++)
            for (int k = 0; k < 3; k++) {
                if (kind == SB_LOSS_NLL && k) continue;
                sb_class_loss prm = {(sb_class_loss_kind)kind, smoothing[k], -100};
                for (int red = SB_LOSS_NONE; red <= SB_LOSS_SUM; red++) {
                    pair *out = red == SB_LOSS_NONE ? &per : &one, *g = red == SB_LOSS_NONE ? &gper : &gone;
                    sb_loss_reduction rd = (sb_loss_reduction)red;
                    char what[160];
                    snprintf(what, sizeof what, "sb_class_loss_forward case %zu kind %d eps %g red %d",
                             ci, kind, (double)smoothing[k], red);
                    CHECK_OK(sb_class_loss_forward(&prm, in.c, t.c, w.c, rd, out->c));
                    CHECK_OK(sb_class_loss_forward(&prm, in.d, t.d, w.d, rd, out->d));
                    check_same(out, what);
                    snprintf(what, sizeof what, "sb_class_loss_backward case %zu kind %d eps %g red %d",
                             ci, kind, (double)smoothing[k], red);
                    CHECK_OK(sb_class_loss_backward(&prm, in.c, t.c, w.c, rd, g->c, din.c));
                    CHECK_OK(sb_class_loss_backward(&prm, in.d, t.d, w.d, rd, g->d, din.d));
                    check_same(&din, what);
                }
            }
        pair all[] = {in, din, per, one, gper, gone, t, w};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
    }
}

/* An int64 tensor of the given values (a pair). */
static pair pair_ints(int ndim, const int64_t *shape, const int64_t *values) {
    sb_tensor *t = NULL;
    CHECK_OK(sb_tensor_new(&t, SB_I64, ndim, shape));
    memcpy(t->data, values, (size_t)sb_tensor_numel(t) * sizeof *values);
    return pair_of(t);
}

/* The CTC loss: padded and concatenated targets, blank first and last,
 * repeated labels, an empty target, an empty input and an input too short
 * for its target (infinite losses) with and without zero_infinity, log-probabilities
 * with -inf entries and a NaN, every reduction, forward and backward. */
static void test_ctc(void) {
    enum { T = 12, N = 4, C = 6, S = 5 };
    int64_t lps[3] = {T, N, C}, ns[1] = {N}, ps[2] = {N, S}, cs[1] = {5 + 0 + 3 + 2};
    const int64_t padded[N * S] = {1, 2, 2, 3, 1, /* */ 0, 0, 0, 0, 0, /* */ 4, 4, 4, 0, 0,
                                   /* */ 5, 1, 0, 0, 0};
    const int64_t in_len[N] = {12, 7, 0, 1}, tg_len[N] = {5, 0, 3, 2};
    for (int variant = 0; variant < 4; variant++) {
        bool concatenated = variant >= 2, adversarial = variant % 2 == 1;
        int64_t blank = concatenated ? C - 1 : 0;
        /* labels avoid the blank: shift 5s down when the blank is last */
        int64_t labels[N * S], flat[10], at = 0;
        for (int i = 0; i < N * S; i++) labels[i] = padded[i] == blank ? (blank ? 2 : 3) : padded[i];
        for (int b = 0; b < N; b++)
            for (int64_t i = 0; i < tg_len[b]; i++) flat[at++] = labels[b * S + i];
        /* log-probabilities: log-softmax of random logits, then -inf and NaN entries */
        pair logits = pair_rand(3, lps, 3.0f, false);
        sb_tensor *lpc = NULL;
        CHECK_OK(sb_tensor_new(&lpc, SB_F32, 3, lps));
        CHECK_OK(sb_log_softmax_forward(logits.c, 2, lpc));
        float *v = sb_tensor_f32(lpc);
        if (adversarial) {
            for (int64_t i = 5; i < T * N * C; i += 17) v[i] = -INFINITY;
            v[(T - 1) * N * C + 2] = NAN; /* item 0's last step */
        }
        pair lp = pair_of(lpc), tg = concatenated ? pair_ints(1, cs, flat) : pair_ints(2, ps, labels),
             il = pair_ints(1, ns, in_len), tl = pair_ints(1, ns, tg_len),
             dlp = pair_zeros(SB_F32, 3, lps), per = pair_zeros(SB_F32, 1, ns),
             one = pair_zeros(SB_F32, 0, NULL), gper = pair_rand(1, ns, 2.0f, false),
             gone = pair_rand(0, NULL, 2.0f, false);
        for (int zi = 0; zi < 2; zi++)
            for (int red = SB_LOSS_NONE; red <= SB_LOSS_SUM; red++) {
                sb_ctc_loss prm = {blank, zi};
                sb_loss_reduction rd = (sb_loss_reduction)red;
                pair *out = red == SB_LOSS_NONE ? &per : &one, *g = red == SB_LOSS_NONE ? &gper : &gone;
                char what[160];
                snprintf(what, sizeof what, "sb_ctc_loss_forward variant %d zero_infinity %d red %d",
                         variant, zi, red);
                CHECK_OK(sb_ctc_loss_forward(&prm, lp.c, tg.c, il.c, tl.c, rd, out->c));
                CHECK_OK(sb_ctc_loss_forward(&prm, lp.d, tg.d, il.d, tl.d, rd, out->d));
                check_same(out, what);
                snprintf(what, sizeof what, "sb_ctc_loss_backward variant %d zero_infinity %d red %d",
                         variant, zi, red);
                CHECK_OK(sb_ctc_loss_backward(&prm, lp.c, tg.c, il.c, tl.c, rd, g->c, dlp.c));
                CHECK_OK(sb_ctc_loss_backward(&prm, lp.d, tg.d, il.d, tl.d, rd, g->d, dlp.d));
                check_same(&dlp, what);
            }
        pair all[] = {logits, lp, tg, il, tl, dlp, per, one, gper, gone};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
    }
}

/* A batch of 70 items (more than the canonical sum's 32 lanes, so the
 * reduction of the item terms runs on every lane): random target lengths
 * 0 .. 4 (MEAN divides by max(L, 1)), input lengths long enough for
 * their targets but every fifth random in 0 .. 9 (some too short:
 * infinite losses), every reduction, with and without
 * zero_infinity, forward and backward. */
static void test_ctc_batch(void) {
    enum { T = 9, N = 70, C = 5, S = 4 };
    int64_t lps[3] = {T, N, C}, ns[1] = {N}, ps[2] = {N, S};
    int64_t labels[N * S], in_len[N], tg_len[N];
    for (int b = 0; b < N; b++) {
        tg_len[b] = (int64_t)(sb_test_rand32() % (S + 1));
        int64_t fits = 2 * tg_len[b] + 1; /* long enough for any labels */
        in_len[b] = b % 5 == 0 ? (int64_t)(sb_test_rand32() % (T + 1))
                               : fits + (int64_t)(sb_test_rand32() % (uint32_t)(T + 1 - fits));
        for (int i = 0; i < S; i++) labels[b * S + i] = 1 + (int64_t)(sb_test_rand32() % (C - 1));
    }
    pair logits = pair_rand(3, lps, 3.0f, false);
    sb_tensor *lpc = NULL;
    CHECK_OK(sb_tensor_new(&lpc, SB_F32, 3, lps));
    CHECK_OK(sb_log_softmax_forward(logits.c, 2, lpc));
    pair lp = pair_of(lpc), tg = pair_ints(2, ps, labels), il = pair_ints(1, ns, in_len),
         tl = pair_ints(1, ns, tg_len), dlp = pair_zeros(SB_F32, 3, lps),
         per = pair_zeros(SB_F32, 1, ns), one = pair_zeros(SB_F32, 0, NULL),
         gper = pair_rand(1, ns, 2.0f, false), gone = pair_rand(0, NULL, 2.0f, false);
    for (int zi = 0; zi < 2; zi++)
        for (int red = SB_LOSS_NONE; red <= SB_LOSS_SUM; red++) {
            sb_ctc_loss prm = {0, zi};
            sb_loss_reduction rd = (sb_loss_reduction)red;
            pair *out = red == SB_LOSS_NONE ? &per : &one, *g = red == SB_LOSS_NONE ? &gper : &gone;
            char what[160];
            snprintf(what, sizeof what, "sb_ctc_loss_forward of 70 items zero_infinity %d red %d", zi,
                     red);
            CHECK_OK(sb_ctc_loss_forward(&prm, lp.c, tg.c, il.c, tl.c, rd, out->c));
            CHECK_OK(sb_ctc_loss_forward(&prm, lp.d, tg.d, il.d, tl.d, rd, out->d));
            check_same(out, what);
            snprintf(what, sizeof what, "sb_ctc_loss_backward of 70 items zero_infinity %d red %d",
                     zi, red);
            CHECK_OK(sb_ctc_loss_backward(&prm, lp.c, tg.c, il.c, tl.c, rd, g->c, dlp.c));
            CHECK_OK(sb_ctc_loss_backward(&prm, lp.d, tg.d, il.d, tl.d, rd, g->d, dlp.d));
            check_same(&dlp, what);
        }
    pair all[] = {logits, lp, tg, il, tl, dlp, per, one, gper, gone};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(&all[i]);
}

/* The LeNet-5 training step of `samebits train` (cross-entropy, Adam) on
 * the OpenCL device: losses and parameters equal to the CPU's. */
static void test_lenet_cross_entropy(void) {
    size_t live0 = sb_ocl_live_blocks();
    sb_test_lenet_case c = sb_test_lenet_default(SB_DEVICE_OPENCL);
    c.init_seed = 7;
    sb_test_lenet_compare(&c);
    CHECK(sb_ocl_live_blocks() == live0, "every opencl block released");
}

/* ---- every op of the CPU backend has an OpenCL kernel; mixing devices fails ---- */

/* The op tables are structs of function pointers, one per family: every
 * entry the CPU fills, the OpenCL table fills (the op table of
 * src/backend/backend.h names no op this device lacks), so no op of the CPU
 * backend answers SB_ERR_UNSUPPORTED here. */
static void test_complete(void) {
    typedef void (*entry)(void);
    enum { ENTRIES = sizeof(sb_backend_ops) / sizeof(entry) };
    _Static_assert(sizeof(sb_backend_ops) % sizeof(entry) == 0, "the op table holds only entries");
    entry cpu[ENTRIES], ocl[ENTRIES];
    memcpy(cpu, &sb_cpu_backend_ops, sizeof cpu);
    memcpy(ocl, &sb_gpu_ops, sizeof ocl);
    /* An entry not yet on OpenCL would be named here, as
     * offsetof(sb_backend_ops, name) / sizeof(entry) before SIZE_MAX, so that
     * no other entry can go missing unnoticed; every entry the CPU fills has
     * an OpenCL kernel now. */
    const size_t not_yet[] = {SIZE_MAX};
    for (size_t k = 0; not_yet[k] != SIZE_MAX; k++) cpu[not_yet[k]] = NULL;
    int missing = 0;
    for (int i = 0; i < ENTRIES; i++)
        if (cpu[i] && !ocl[i]) {
            missing++;
            fprintf(stderr, "op table entry %d: the cpu has a kernel, the opencl device none\n", i);
        }
    CHECK(missing == 0, "%d op families of the cpu backend have no opencl kernel", missing);
    int64_t s[2] = {2, 3};
    pair x = pair_rand(2, s, 1.0f, false), y = pair_zeros(SB_F32, 2, s);
    CHECK_ERROR(sb_add(x.d, x.c, y.d), SB_ERR_DEVICE, "is on the opencl device but");
    pair_free(&x);
    pair_free(&y);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    sb_test_seed(16);
    sb_tensor *probe = NULL;
    if (sb_tensor_new_on(&probe, SB_DEVICE_OPENCL, SB_F32, 0, NULL) != SB_OK) {
        fprintf(stderr,
                "\n*** test_opencl: NO USABLE OPENCL DEVICE: %s\n"
                "*** The OpenCL backend was built but cannot run here. Install PoCL\n"
                "*** (apt-get install pocl-opencl-icd, or `make deps`) or a GPU driver.\n"
                "*** This is a failure, not a skip: the GPU kernels would go untested.\n\n",
                sb_last_error());
        CHECK(false, "an OpenCL device is available");
        return sb_test_finish();
    }
    sb_tensor_free(probe);
    printf("opencl device: %s\n", sb_ocl_device_name());
    test_refusal();
    test_memory();
    test_pointwise();
    test_pow_special();
    test_sum();
    test_extreme();
    test_dropout();
    test_batch_norm();
    test_layer_norm();
    test_rms_norm();
    test_group_norm();
    test_pad2d();
    test_interpolate();
    test_grid_sample();
    test_index();
    test_cumulative();
    test_scatter_reduce();
    test_sort();
    test_prelu();
    test_sdpa();
    test_gemm();
    test_conv_pool();
    test_optim();
    test_math_functions();
    test_math_activations();
    test_hard_activations();
    test_mse();
    test_elementwise_losses();
    test_lenet_training();
    test_softmax_losses();
    test_class_losses();
    test_ctc();
    test_ctc_batch();
    test_lenet_cross_entropy();
    test_complete();
    return sb_test_finish();
}
