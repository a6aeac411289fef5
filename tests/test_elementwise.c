/* Tests for elementwise binary/unary ops with broadcasting, their backward,
 * and sb_reduce_to_shape. Expected values come from an independent
 * restatement written here: double arithmetic rounded once to float (exact
 * for + - * / sqrt, since 53 >= 2*24 + 2), a total-order key for
 * maximum/minimum, explicit multi-index broadcasting, and a recursive
 * canonical sum over arrays. */
#include <float.h>
#include <math.h>
#include "harness.h"

/* ---- helpers ---------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}
static float frand(float lo, float hi) { return lo + (hi - lo) * (float)(rnd() % 1000000) / 1e6f; }
static float bits_f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static const float *specials(int *n) {
    static float s[24];
    int k = 0;
    s[k++] = 0.0f; s[k++] = -0.0f; s[k++] = 1.0f; s[k++] = -1.0f; s[k++] = 0.5f; s[k++] = 3.0f;
    s[k++] = INFINITY; s[k++] = -INFINITY; s[k++] = NAN; s[k++] = -NAN;
    s[k++] = bits_f(0x00000001u); s[k++] = bits_f(0x80000001u); /* smallest subnormals */
    s[k++] = bits_f(0x007fffffu); s[k++] = FLT_MIN; s[k++] = -FLT_MIN;
    s[k++] = FLT_MAX; s[k++] = -FLT_MAX; s[k++] = 1e-30f; s[k++] = 7e30f;
    s[k++] = 16777216.0f; s[k++] = 0.1f; s[k++] = -2.5f; s[k++] = 1e20f; s[k++] = -3e-39f;
    *n = k;
    return s;
}

static sb_tensor *tnew(int nd, const int64_t *shape) {
    sb_tensor *t = NULL;
    sb_status s = sb_tensor_new(&t, SB_F32, nd, shape);
    if (s != SB_OK) { fprintf(stderr, "tensor_new failed: %s\n", sb_last_error()); exit(2); }
    return t;
}

static int64_t off_of(const sb_tensor *t, const int64_t *idx) {
    int64_t o = 0;
    for (int i = 0; i < t->ndim; i++) o += idx[i] * t->strides[i];
    return o;
}
static float at(const sb_tensor *t, const int64_t *idx) { return ((float *)t->data)[off_of(t, idx)]; }

static void fill_random(sb_tensor *t, int with_specials) {
    int ns;
    const float *sp = specials(&ns);
    int64_t n = sb_tensor_numel(t), idx[SB_MAX_DIMS] = {0};
    for (int64_t e = 0; e < n; e++) {
        float v = frand(-4.0f, 4.0f);
        if (with_specials && rnd() % 4 == 0) v = sp[rnd() % (uint32_t)ns];
        ((float *)t->data)[off_of(t, idx)] = v;
        for (int k = t->ndim - 1; k >= 0; k--) { if (++idx[k] < t->shape[k]) break; idx[k] = 0; }
    }
}

/* Order key: a monotone integer image of the float order with -0 < +0. */
static int64_t okey(float x) {
    uint32_t u = sb_test_bits(x);
    return (u & 0x80000000u) ? -(int64_t)(u & 0x7fffffffu) - 1 : (int64_t)u;
}

/* Independent statement of each binary op. */
static float want_binary(sb_binary_op op, float a, float b) {
    switch (op) {
    case SB_BINARY_ADD: return (float)((double)a + (double)b);
    case SB_BINARY_SUB: return (float)((double)a - (double)b);
    case SB_BINARY_MUL: return (float)((double)a * (double)b);
    case SB_BINARY_DIV: return (float)((double)a / (double)b);
    case SB_BINARY_MAXIMUM:
        if (a != a) return a;
        if (b != b) return b;
        return okey(a) >= okey(b) ? a : b;
    case SB_BINARY_MINIMUM:
        if (a != a) return a;
        if (b != b) return b;
        return okey(a) <= okey(b) ? a : b;
    case SB_BINARY_POW: return sb_powf(a, b); /* proven by tests/test_powf.c */
    }
    return 0.0f;
}

/* Bits equal, or both NaN where the op is arithmetic (NaN payloads of
 * arithmetic are the hardware's; see the contract). */
static int same_result(float got, float want, int nan_class) {
    if (nan_class && got != got && want != want) return 1;
    return sb_test_bits(got) == sb_test_bits(want);
}

static const char *op_name(sb_binary_op op) {
    static const char *n[] = { "add", "sub", "mul", "div", "maximum", "minimum", "pow" };
    return n[op];
}

/* Checks out == a op b elementwise under explicit broadcasting. */
static void check_broadcast_result(sb_binary_op op, const sb_tensor *a, const sb_tensor *b,
                                   const sb_tensor *out, const char *what) {
    int64_t n = sb_tensor_numel(out), idx[SB_MAX_DIMS] = {0};
    int bad = 0;
    for (int64_t e = 0; e < n && bad < 3; e++) {
        int64_t ia[SB_MAX_DIMS], ib[SB_MAX_DIMS];
        for (int i = 0; i < a->ndim; i++) {
            int o = i + out->ndim - a->ndim;
            ia[i] = a->shape[i] == 1 ? 0 : idx[o];
        }
        for (int i = 0; i < b->ndim; i++) {
            int o = i + out->ndim - b->ndim;
            ib[i] = b->shape[i] == 1 ? 0 : idx[o];
        }
        float va = at(a, ia), vb = at(b, ib), got = at(out, idx);
        float want = want_binary(op, va, vb);
        int ok = same_result(got, want, op <= SB_BINARY_DIV);
        if (!ok) bad++;
        CHECK(ok, "%s %s: element %lld: %a op %a = %a, want %a", what, op_name(op), (long long)e,
              va, vb, got, want);
        for (int k = out->ndim - 1; k >= 0; k--) { if (++idx[k] < out->shape[k]) break; idx[k] = 0; }
    }
}

/* ---- the canonical sum, restated recursively over arrays ------------------- */

static float tree(float *v, int w) {
    if (w == 1) return v[0];
    for (int j = 0; j < w / 2; j++) v[j] = v[j] + v[j + w / 2];
    return tree(v, w / 2);
}
static float canon(const float *x, int64_t n) {
    if (n == 0) return 0.0f;
    if (n <= 8192) {
        float lane[32];
        for (int j = 0; j < 32; j++) lane[j] = -0.0f;
        for (int64_t i = 0; i < n; i++) lane[i % 32] = lane[i % 32] + x[i];
        return tree(lane, 32);
    }
    int64_t nb = (n + 8191) / 8192;
    float *bs = malloc((size_t)nb * sizeof *bs);
    for (int64_t b = 0; b < nb; b++) bs[b] = canon(x + b * 8192, n - b * 8192 < 8192 ? n - b * 8192 : 8192);
    float r = canon(bs, nb);
    free(bs);
    return r;
}

/* ---- tests ---------------------------------------------------------------- */

static void test_broadcast_shapes(void) {
    struct { int na; int64_t a[4]; int nb; int64_t b[4]; int no; int64_t o[4]; } cases[] = {
        { 0, {0}, 2, {2, 3}, 2, {2, 3} },          /* scalar tensor */
        { 2, {3, 1}, 2, {1, 4}, 2, {3, 4} },
        { 3, {2, 1, 5}, 1, {5}, 3, {2, 1, 5} },
        { 1, {5}, 3, {2, 4, 1}, 3, {2, 4, 5} },
        { 1, {1}, 1, {7}, 1, {7} },
        { 2, {33, 40}, 2, {33, 40}, 2, {33, 40} },  /* > one chunk of rows */
        { 2, {0, 3}, 2, {1, 3}, 2, {0, 3} },        /* zero-size */
        { 3, {2, 0, 1}, 1, {4}, 3, {2, 0, 4} },
        { 4, {2, 1, 3, 1}, 3, {4, 1, 6}, 4, {2, 4, 3, 6} },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int op = SB_BINARY_ADD; op <= SB_BINARY_POW; op++) {
            sb_tensor *a = tnew(cases[c].na, cases[c].a), *b = tnew(cases[c].nb, cases[c].b);
            sb_tensor *o = tnew(cases[c].no, cases[c].o);
            fill_random(a, 1);
            fill_random(b, 1);
            CHECK_OK(sb_binary((sb_binary_op)op, a, b, o));
            char what[32];
            snprintf(what, sizeof what, "case %zu", c);
            check_broadcast_result((sb_binary_op)op, a, b, o, what);
            /* swapped operands: the broadcast is symmetric */
            CHECK_OK(sb_binary((sb_binary_op)op, b, a, o));
            check_broadcast_result((sb_binary_op)op, b, a, o, what);
            sb_tensor_free(a); sb_tensor_free(b); sb_tensor_free(o);
        }
    }
    /* the named wrappers are the generic op */
    int64_t s[2] = { 3, 4 };
    sb_tensor *a = tnew(2, s), *b = tnew(2, s), *o = tnew(2, s);
    fill_random(a, 1); fill_random(b, 1);
    sb_status (*fns[6])(const sb_tensor *, const sb_tensor *, sb_tensor *) = {
        sb_add, sb_sub, sb_mul, sb_div, sb_maximum, sb_minimum };
    for (int op = 0; op < 6; op++) {
        CHECK_OK(fns[op](a, b, o));
        check_broadcast_result((sb_binary_op)op, a, b, o, "named");
    }
    sb_tensor_free(a); sb_tensor_free(b); sb_tensor_free(o);
}

/* Random shapes, transposed (strided) inputs and a transposed output. */
static void test_strided_fuzz(void) {
    int iters = sb_test_quick() ? 60 : 300;
    for (int it = 0; it < iters; it++) {
        int nd = 2 + (int)(rnd() % 3);
        int64_t full[4], sa[4], sbs[4];
        for (int i = 0; i < nd; i++) full[i] = 1 + rnd() % 5;
        int nda = nd - (int)(rnd() % 2), ndb = nd;
        for (int i = 0; i < nda; i++) sa[i] = rnd() % 3 == 0 ? 1 : full[i + nd - nda];
        for (int i = 0; i < ndb; i++) sbs[i] = rnd() % 3 == 0 ? 1 : full[i];
        /* build a and b as transposes of contiguous buffers */
        int64_t ta[4], tb[4];
        for (int i = 0; i < nda; i++) ta[i] = sa[i];
        for (int i = 0; i < ndb; i++) tb[i] = sbs[i];
        int64_t tmp = ta[0]; ta[0] = ta[nda - 1]; ta[nda - 1] = tmp;
        tmp = tb[0]; tb[0] = tb[1]; tb[1] = tmp;
        sb_tensor *ca = tnew(nda, ta), *cb = tnew(ndb, tb), *a, *b;
        fill_random(ca, 1); fill_random(cb, 1);
        CHECK_OK(sb_tensor_transpose(&a, ca, 0, nda - 1));
        CHECK_OK(sb_tensor_transpose(&b, cb, 0, 1));
        int64_t oshape[4];
        for (int i = 0; i < nd; i++) {
            int64_t x = i - (nd - nda) >= 0 ? sa[i - (nd - nda)] : 1, y = sbs[i];
            oshape[i] = x == 1 ? y : x;
        }
        int64_t cos[4];
        for (int i = 0; i < nd; i++) cos[i] = oshape[i];
        tmp = cos[0]; cos[0] = cos[nd - 1]; cos[nd - 1] = tmp;
        sb_tensor *co = tnew(nd, cos), *o;
        CHECK_OK(sb_tensor_transpose(&o, co, 0, nd - 1));
        sb_binary_op op = (sb_binary_op)(rnd() % 6);
        CHECK_OK(sb_binary(op, a, b, o));
        check_broadcast_result(op, a, b, o, "strided");
        sb_tensor_free(a); sb_tensor_free(b); sb_tensor_free(o);
        sb_tensor_free(ca); sb_tensor_free(cb); sb_tensor_free(co);
    }
}

static void test_special_values(void) {
    int ns;
    const float *sp = specials(&ns);
    int64_t n = (int64_t)ns;
    int64_t sa[2] = { n, 1 }, sbb[1] = { n }, so[2] = { n, n };
    sb_tensor *a = tnew(2, sa), *b = tnew(1, sbb), *o = tnew(2, so);
    memcpy(a->data, sp, (size_t)ns * 4);
    memcpy(b->data, sp, (size_t)ns * 4);
    for (int op = 0; op < 6; op++) {
        CHECK_OK(sb_binary((sb_binary_op)op, a, b, o));
        check_broadcast_result((sb_binary_op)op, a, b, o, "specials");
    }
    /* the stated conventions, spelled out */
    float p0 = 0.0f, m0 = -0.0f, qn = bits_f(0x7fc00001u), qn2 = bits_f(0xffc00002u);
    sb_tensor *x, *y, *r;
    int64_t one[1] = { 1 };
    x = tnew(1, one); y = tnew(1, one); r = tnew(1, one);
    struct { sb_binary_op op; float a, b, want; } conv[] = {
        { SB_BINARY_MAXIMUM, p0, m0, p0 }, { SB_BINARY_MAXIMUM, m0, p0, p0 },
        { SB_BINARY_MINIMUM, p0, m0, m0 }, { SB_BINARY_MINIMUM, m0, p0, m0 },
        { SB_BINARY_MAXIMUM, m0, m0, m0 }, { SB_BINARY_MINIMUM, p0, p0, p0 },
        { SB_BINARY_MAXIMUM, qn, 1.0f, qn }, { SB_BINARY_MAXIMUM, 1.0f, qn, qn },
        { SB_BINARY_MINIMUM, -INFINITY, qn, qn }, { SB_BINARY_MAXIMUM, qn, qn2, qn },
        { SB_BINARY_MINIMUM, qn2, qn, qn2 }, { SB_BINARY_MAXIMUM, INFINITY, -INFINITY, INFINITY },
        { SB_BINARY_ADD, m0, m0, m0 }, { SB_BINARY_ADD, p0, m0, p0 }, { SB_BINARY_MUL, m0, 3.0f, m0 },
        { SB_BINARY_DIV, 1.0f, m0, -INFINITY }, { SB_BINARY_SUB, bits_f(1), bits_f(2), bits_f(0x80000001u) },
    };
    for (size_t c = 0; c < sizeof conv / sizeof conv[0]; c++) {
        ((float *)x->data)[0] = conv[c].a;
        ((float *)y->data)[0] = conv[c].b;
        CHECK_OK(sb_binary(conv[c].op, x, y, r));
        CHECK_BITS(((float *)r->data)[0], conv[c].want, "convention case %zu (%s)", c, op_name(conv[c].op));
    }
    sb_tensor_free(x); sb_tensor_free(y); sb_tensor_free(r);
    sb_tensor_free(a); sb_tensor_free(b); sb_tensor_free(o);
}

static void test_scalar_and_inplace(void) {
    int64_t s[2] = { 5, 7 };
    sb_tensor *x = tnew(2, s), *o = tnew(2, s), *o2 = tnew(2, s), *st;
    fill_random(x, 1);
    float sv[4] = { 2.5f, -0.0f, NAN, 1e-40f };
    for (int op = 0; op < 6; op++) {
        for (int k = 0; k < 4; k++) {
            float v = sv[k];
            CHECK_OK(sb_tensor_wrap(&st, &v, SB_F32, 0, NULL, NULL));
            CHECK_OK(sb_binary_scalar((sb_binary_op)op, x, v, o));
            CHECK_OK(sb_binary((sb_binary_op)op, x, st, o2));
            check_broadcast_result((sb_binary_op)op, x, st, o, "scalar");
            CHECK(memcmp(o->data, o2->data, 35 * 4) == 0, "scalar form differs from 0-dim tensor form");
            sb_tensor_free(st);
        }
    }
    sb_status (*sfns[4])(const sb_tensor *, float, sb_tensor *) = { sb_add_scalar, sb_sub_scalar,
                                                                   sb_mul_scalar, sb_div_scalar };
    for (int op = 0; op < 4; op++) {
        float v = 0.37f;
        CHECK_OK(sfns[op](x, v, o));
        CHECK_OK(sb_tensor_wrap(&st, &v, SB_F32, 0, NULL, NULL));
        check_broadcast_result((sb_binary_op)op, x, st, o, "named scalar");
        sb_tensor_free(st);
    }
    /* in place: out is a (and then b), including strided identical layouts */
    sb_tensor *a = tnew(2, s), *b = tnew(2, s), *keep = tnew(2, s);
    fill_random(a, 1); fill_random(b, 1);
    memcpy(keep->data, a->data, 35 * 4);
    CHECK_OK(sb_mul(a, b, a));
    for (int i = 0; i < 35; i++)
        CHECK(same_result(((float *)a->data)[i],
                          want_binary(SB_BINARY_MUL, ((float *)keep->data)[i], ((float *)b->data)[i]), 1),
              "in-place mul element %d", i);
    memcpy(keep->data, b->data, 35 * 4);
    CHECK_OK(sb_maximum(a, b, b));
    for (int i = 0; i < 35; i++)
        CHECK_BITS(((float *)b->data)[i],
                   want_binary(SB_BINARY_MAXIMUM, ((float *)a->data)[i], ((float *)keep->data)[i]),
                   "in-place maximum element %d", i);
    sb_tensor *at_, *bt_;
    CHECK_OK(sb_tensor_transpose(&at_, a, 0, 1));
    CHECK_OK(sb_tensor_transpose(&bt_, b, 0, 1));
    memcpy(keep->data, a->data, 35 * 4);
    CHECK_OK(sb_sub(at_, bt_, at_)); /* identical strided layout */
    for (int i = 0; i < 35; i++)
        CHECK(same_result(((float *)a->data)[i],
                          want_binary(SB_BINARY_SUB, ((float *)keep->data)[i], ((float *)b->data)[i]), 1),
              "strided in-place sub element %d", i);
    CHECK_OK(sb_add_scalar(a, 1.0f, a));
    /* different layout over the same memory is refused, and nothing is written */
    int64_t sq[2] = { 6, 6 };
    sb_tensor *q = tnew(2, sq), *qt;
    fill_random(q, 0);
    memcpy(keep->data, q->data, 35 * 4);
    CHECK_OK(sb_tensor_transpose(&qt, q, 0, 1));
    CHECK_ERROR(sb_add(q, q, qt), SB_ERR_ARG, "identical layout");
    CHECK(memcmp(keep->data, q->data, 35 * 4) == 0, "refused call wrote output");
    sb_tensor_free(qt); sb_tensor_free(q);
    sb_tensor_free(at_); sb_tensor_free(bt_);
    sb_tensor_free(a); sb_tensor_free(b); sb_tensor_free(keep);
    sb_tensor_free(x); sb_tensor_free(o); sb_tensor_free(o2);
}

static void test_unary(void) {
    int ns;
    const float *sp = specials(&ns);
    int64_t n = ns + 200;
    sb_tensor *x = tnew(1, &n), *y = tnew(1, &n);
    float *xv = x->data, *yv = y->data;
    memcpy(xv, sp, (size_t)ns * 4);
    for (int64_t i = ns; i < n; i++) xv[i] = frand(-20.0f, 20.0f);
    for (int64_t i = ns; i < n; i += 7) xv[i] = frand(-1e6f, 1e6f); /* sin/cos reduction */
    sb_status (*fns[12])(const sb_tensor *, sb_tensor *) = { sb_neg, sb_abs, sb_sqrt, sb_exp,
                                                           sb_log, sb_square, sb_reciprocal, sb_sin,
                                                           sb_cos, sb_exp2, sb_log2, sb_rsqrt };
    for (int op = 0; op < 12; op++) {
        CHECK_OK(fns[op](x, y));
        for (int64_t i = 0; i < n; i++) {
            float v = xv[i], want;
            uint32_t u = sb_test_bits(v);
            int nan_class = 1;
            switch (op) {
            case SB_UNARY_NEG: want = bits_f(u ^ 0x80000000u); nan_class = 0; break;
            case SB_UNARY_ABS: want = bits_f(u & 0x7fffffffu); nan_class = 0; break;
            case SB_UNARY_SQRT: want = (float)sqrt((double)v); break;
            case SB_UNARY_EXP: want = sb_expf(v); break;
            case SB_UNARY_LOG: want = sb_logf(v); break;
            case SB_UNARY_SQUARE: want = (float)((double)v * (double)v); break;
            case SB_UNARY_SIN: want = sb_sinf(v); break;
            case SB_UNARY_COS: want = sb_cosf(v); break;
            case SB_UNARY_EXP2: want = sb_exp2f(v); break;
            case SB_UNARY_LOG2: want = sb_log2f(v); break;
            /* two roundings: the float square root, then the division */
            case SB_UNARY_RSQRT: want = (float)(1.0 / (double)(float)sqrt((double)v)); break;
            default: want = (float)(1.0 / (double)v); break;
            }
            if ((op == SB_UNARY_SIN || op == SB_UNARY_COS) && isfinite(v)) {
                double t = op == SB_UNARY_SIN ? sin((double)v) : cos((double)v);
                CHECK(fabs(yv[i] - t) <= 6e-8 * fmax(fabs(t), 1e-30) + 1e-45, "sin/cos op %d (%a) = %a far from %a", op, v, yv[i], t);
            }
            if (op == SB_UNARY_EXP2 && isfinite(v) && fabs(v) < 120) {
                double t = exp2((double)v);
                CHECK(fabs(yv[i] - t) <= 6e-8 * t, "exp2(%a) = %a far from %a", v, yv[i], t);
            }
            if (op == SB_UNARY_LOG2 && v > 0 && isfinite(v)) {
                double t = log2((double)v);
                CHECK(fabs(yv[i] - t) <= 6e-8 * fabs(t) + 1e-45, "log2(%a) = %a far from %a", v, yv[i], t);
            }
            CHECK(same_result(yv[i], want, nan_class), "unary op %d x=%a got %a want %a", op, v, yv[i], want);
            if (op == SB_UNARY_EXP && isfinite(v) && fabs(v) < 80) {
                double t = exp((double)v);
                CHECK(fabs(yv[i] - t) <= 1e-6 * t, "exp(%a) = %a far from %a", v, yv[i], t);
            }
            if (op == SB_UNARY_LOG && v > 0 && isfinite(v)) {
                double t = log((double)v);
                CHECK(fabs(yv[i] - t) <= 1e-6 * fabs(t) + 1e-7, "log(%a) = %a far from %a", v, yv[i], t);
            }
        }
        /* in place */
        sb_tensor *z = tnew(1, &n);
        memcpy(z->data, xv, (size_t)n * 4);
        CHECK_OK(sb_unary((sb_unary_op)op, z, z));
        CHECK(memcmp(z->data, yv, (size_t)n * 4) == 0, "in-place unary %d differs", op);
        sb_tensor_free(z);
    }
    sb_tensor_free(x); sb_tensor_free(y);
}

/* Unary backward: bits against the stated sequence and closeness to a
 * float64 central difference. */
static void test_unary_backward(void) {
    int64_t n = 64;
    sb_tensor *x = tnew(1, &n), *y = tnew(1, &n), *dy = tnew(1, &n), *dx = tnew(1, &n);
    float *xv = x->data, *yv = y->data, *dyv = dy->data, *dxv = dx->data;
    for (int op = 0; op < 12; op++) {
        bool positive = op == SB_UNARY_SQRT || op == SB_UNARY_LOG || op == SB_UNARY_LOG2 ||
                        op == SB_UNARY_RSQRT;
        for (int64_t i = 0; i < n; i++) {
            xv[i] = frand(0.25f, 4.0f) * (positive || i % 2 ? 1.0f : -1.0f);
            dyv[i] = frand(-2.0f, 2.0f);
        }
        CHECK_OK(sb_unary((sb_unary_op)op, x, y));
        CHECK_OK(sb_unary_backward((sb_unary_op)op, x, y, dy, dx));
        for (int64_t i = 0; i < n; i++) {
            float v = xv[i], g = dyv[i], r = yv[i], want;
            double h = 1e-5, fp, fm;
            switch (op) {
            case SB_UNARY_NEG: want = -g; fp = -(v + h); fm = -(v - h); break;
            case SB_UNARY_ABS: want = g * (v > 0 ? 1.0f : -1.0f); fp = fabs(v + h); fm = fabs(v - h); break;
            case SB_UNARY_SQRT: want = g / (2.0f * r); fp = sqrt(v + h); fm = sqrt(v - h); break;
            case SB_UNARY_EXP: want = g * r; fp = exp(v + h); fm = exp(v - h); break;
            case SB_UNARY_LOG: want = g / v; fp = log(v + h); fm = log(v - h); break;
            case SB_UNARY_SQUARE: want = g * (2.0f * v); fp = (v + h) * (v + h); fm = (v - h) * (v - h); break;
            case SB_UNARY_SIN: want = g * sb_cosf(v); fp = sin(v + h); fm = sin(v - h); break;
            case SB_UNARY_COS: want = g * -sb_sinf(v); fp = cos(v + h); fm = cos(v - h); break;
            case SB_UNARY_EXP2: want = (g * r) * 0x1.62e43p-1f; fp = exp2(v + h); fm = exp2(v - h); break;
            case SB_UNARY_LOG2: want = g / (v * 0x1.62e43p-1f); fp = log2(v + h); fm = log2(v - h); break;
            case SB_UNARY_RSQRT: {
                float c = r * r;
                c = c * r;
                want = (g * -0.5f) * c;
                fp = 1.0 / sqrt(v + h);
                fm = 1.0 / sqrt(v - h);
                break;
            }
            default: want = -g * (r * r); fp = 1.0 / (v + h); fm = 1.0 / (v - h); break;
            }
            CHECK_BITS(dxv[i], want, "unary backward op %d x=%a", op, v);
            double fd = g * (fp - fm) / (2 * h);
            CHECK(fabs(dxv[i] - fd) <= 1e-3 * (1 + fabs(fd)), "unary backward op %d x=%a: %a vs fd %g", op, v, dxv[i], fd);
        }
    }
    /* ln 2 rounded is PyTorch's (float)M_LN2 */
    CHECK(sb_test_bits(0x1.62e43p-1f) == sb_test_bits((float)0.69314718055994530942), "LN2 bits");
    /* rsqrt's edges: 1/sqrt(+-0) = +-inf, 1/sqrt(inf) = +0, negative is NaN */
    xv[0] = 0.0f; xv[1] = -0.0f; xv[2] = INFINITY; xv[3] = -1.0f; xv[4] = 4.0f;
    CHECK_OK(sb_rsqrt(x, y));
    CHECK_BITS(yv[0], INFINITY, "rsqrt(+0)");
    CHECK_BITS(yv[1], -INFINITY, "rsqrt(-0) = 1 / -0");
    CHECK_BITS(yv[2], 0.0f, "rsqrt(inf)");
    CHECK(yv[3] != yv[3], "rsqrt(-1) is NaN");
    CHECK_BITS(yv[4], 0.5f, "rsqrt(4)");
    /* abs at +-0 gives 0, NaN poisons */
    xv[0] = -0.0f; xv[1] = NAN; dyv[0] = 3.0f; dyv[1] = 3.0f;
    CHECK_OK(sb_unary_backward(SB_UNARY_ABS, x, y, dy, dx));
    CHECK_BITS(dxv[0], 0.0f, "abs grad at -0");
    CHECK(dxv[1] != dxv[1], "abs grad at NaN must be NaN");
    /* dx may alias dy */
    float keep[64];
    memcpy(keep, dyv, sizeof keep);
    CHECK_OK(sb_unary_backward(SB_UNARY_NEG, x, y, dy, dy));
    for (int i = 0; i < 64; i++)
        CHECK(sb_test_bits(dyv[i]) == (sb_test_bits(keep[i]) ^ 0x80000000u), "in-place neg backward %d", i);
    sb_tensor_free(x); sb_tensor_free(y); sb_tensor_free(dy); sb_tensor_free(dx);
}

/* sb_reduce_to_shape: each out element is the canonical sum, in row-major
 * order of the grad index, of the grad elements that broadcast from it. */
static void check_reduce_to(const sb_tensor *g, const sb_tensor *o, const char *what) {
    int64_t no = sb_tensor_numel(o), ng = sb_tensor_numel(g);
    float *buf = malloc((size_t)(ng ? ng : 1) * sizeof *buf);
    int64_t oi[SB_MAX_DIMS] = {0};
    for (int64_t e = 0; e < no; e++) {
        int64_t cnt = 0, gi[SB_MAX_DIMS] = {0};
        for (int64_t f = 0; f < ng; f++) {
            int match = 1;
            for (int i = 0; i < o->ndim; i++) {
                int gd = i + g->ndim - o->ndim;
                if (o->shape[i] != 1 && gi[gd] != oi[i]) match = 0;
            }
            if (match) buf[cnt++] = at(g, gi);
            for (int k = g->ndim - 1; k >= 0; k--) { if (++gi[k] < g->shape[k]) break; gi[k] = 0; }
        }
        float want = canon(buf, cnt);
        CHECK_BITS(at(o, oi), want, "%s element %lld (%lld terms)", what, (long long)e, (long long)cnt);
        for (int k = o->ndim - 1; k >= 0; k--) { if (++oi[k] < o->shape[k]) break; oi[k] = 0; }
    }
    free(buf);
}

static void test_reduce_to_shape(void) {
    struct { int ng; int64_t g[4]; int no; int64_t o[4]; } cases[] = {
        { 2, {3, 4}, 2, {3, 1} }, { 2, {3, 4}, 2, {1, 4} }, { 2, {3, 4}, 1, {4} }, { 2, {3, 4}, 0, {0} },
        { 3, {2, 3, 5}, 3, {2, 1, 5} }, { 3, {2, 3, 5}, 1, {1} }, { 2, {70, 130}, 1, {130} },
        { 2, {3, 0}, 2, {3, 1} }, { 2, {0, 4}, 1, {4} }, { 2, {3, 4}, 2, {3, 4} },
        { 1, {9000}, 0, {0} }, { 2, {2, 9000}, 2, {2, 1} },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sb_tensor *g = tnew(cases[c].ng, cases[c].g), *o = tnew(cases[c].no, cases[c].o);
        fill_random(g, 0);
        CHECK_OK(sb_reduce_to_shape(g, o));
        check_reduce_to(g, o, "reduce_to_shape");
        sb_tensor_free(g); sb_tensor_free(o);
    }
    /* transposed grad: order is the logical row-major order, not memory order */
    int64_t s[2] = { 40, 50 }, os[2] = { 1, 40 };
    sb_tensor *c = tnew(2, s), *g, *o = tnew(2, os);
    fill_random(c, 0);
    CHECK_OK(sb_tensor_transpose(&g, c, 0, 1));
    CHECK_OK(sb_reduce_to_shape(g, o));
    check_reduce_to(g, o, "reduce_to_shape transposed");
    sb_tensor_free(g); sb_tensor_free(c); sb_tensor_free(o);
    /* an order-sensitive case: row-major canonical bits differ from naive */
    int64_t gs[2] = { 64, 1 }, one[1] = { 1 };
    sb_tensor *gg = tnew(2, gs), *oo = tnew(1, one);
    float *gv = gg->data;
    gv[0] = 16777216.0f;
    for (int i = 1; i < 64; i++) gv[i] = 1.0f;
    CHECK_OK(sb_reduce_to_shape(gg, oo));
    float naive = 0.0f;
    for (int i = 0; i < 64; i++) naive += gv[i];
    CHECK_BITS(((float *)oo->data)[0], canon(gv, 64), "order-sensitive reduce_to_shape");
    CHECK(((float *)oo->data)[0] != naive, "test input must separate the canonical sum from naive");
    sb_tensor_free(gg); sb_tensor_free(oo);
}

static void test_binary_backward(void) {
    struct { int na; int64_t a[3]; int nb; int64_t b[3]; int no; int64_t o[3]; } cases[] = {
        { 2, {3, 1}, 2, {1, 4}, 2, {3, 4} }, { 3, {2, 1, 5}, 1, {5}, 3, {2, 1, 5} },
        { 0, {0}, 2, {4, 3}, 2, {4, 3} }, { 2, {6, 7}, 2, {6, 7}, 2, {6, 7} },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int op = 0; op <= SB_BINARY_POW; op++) {
            sb_tensor *a = tnew(cases[c].na, cases[c].a), *b = tnew(cases[c].nb, cases[c].b);
            sb_tensor *dy = tnew(cases[c].no, cases[c].o), *da = tnew(cases[c].na, cases[c].a);
            sb_tensor *db = tnew(cases[c].nb, cases[c].b);
            fill_random(a, 0); fill_random(b, 0); fill_random(dy, 0);
            if (op >= SB_BINARY_MAXIMUM) ((float *)b->data)[0] = ((float *)a->data)[0]; /* a tie */
            CHECK_OK(sb_binary_backward((sb_binary_op)op, dy, a, b, da, db));
            /* the per-element gradients in the broadcast shape, restated */
            sb_tensor *ga = tnew(cases[c].no, cases[c].o), *gb = tnew(cases[c].no, cases[c].o);
            int64_t n = sb_tensor_numel(dy), idx[3] = {0};
            for (int64_t e = 0; e < n; e++) {
                int64_t ia[3], ib[3];
                for (int i = 0; i < a->ndim; i++) ia[i] = a->shape[i] == 1 ? 0 : idx[i + dy->ndim - a->ndim];
                for (int i = 0; i < b->ndim; i++) ib[i] = b->shape[i] == 1 ? 0 : idx[i + dy->ndim - b->ndim];
                float x = at(a, ia), y = at(b, ib), g = at(dy, idx), wa, wb;
                switch (op) {
                case SB_BINARY_ADD: wa = g; wb = g; break;
                case SB_BINARY_SUB: wa = g; wb = -g; break;
                case SB_BINARY_MUL: wa = g * y; wb = g * x; break;
                case SB_BINARY_DIV: { float q = x / y; wa = g / y; wb = -(g * (q / y)); break; }
                case SB_BINARY_POW:
                    wa = y == 0.0f ? 0.0f : g * (y * sb_powf(x, y - 1.0f));
                    wb = x == 0.0f && y >= 0.0f ? 0.0f : g * (sb_powf(x, y) * sb_logf(x));
                    break;
                default: {
                    int amax = op == SB_BINARY_MAXIMUM ? x > y : x < y;
                    wa = x == y ? g * 0.5f : (amax ? g : 0.0f);
                    wb = x == y ? g * 0.5f : (amax ? 0.0f : g);
                }
                }
                ((float *)ga->data)[e] = wa;
                ((float *)gb->data)[e] = wb;
                for (int k = dy->ndim - 1; k >= 0; k--) { if (++idx[k] < dy->shape[k]) break; idx[k] = 0; }
            }
            check_reduce_to(ga, da, "binary backward da");
            check_reduce_to(gb, db, "binary backward db");
            /* one side only */
            CHECK_OK(sb_binary_backward((sb_binary_op)op, dy, a, b, NULL, db));
            check_reduce_to(gb, db, "binary backward db only");
            sb_tensor_free(ga); sb_tensor_free(gb);
            sb_tensor_free(a); sb_tensor_free(b); sb_tensor_free(dy); sb_tensor_free(da); sb_tensor_free(db);
        }
    }
    /* div's db never forms b*b: b = 1e25 (b*b overflows) still gives -a/b^2 */
    int64_t one[1] = { 1 };
    sb_tensor *a = tnew(1, one), *b = tnew(1, one), *dy = tnew(1, one), *da = tnew(1, one), *db = tnew(1, one);
    ((float *)a->data)[0] = 1e30f; ((float *)b->data)[0] = 1e25f; ((float *)dy->data)[0] = 1.0f;
    CHECK_OK(sb_binary_backward(SB_BINARY_DIV, dy, a, b, da, db));
    float gdb = ((float *)db->data)[0];
    CHECK(fabs(gdb + 1e-20) < 1e-26, "div db = %g, want about -1e-20", (double)gdb);
    CHECK_BITS(gdb, -((1e30f / 1e25f) / 1e25f), "div db sequence");
    /* finite-difference check of mul and div */
    ((float *)a->data)[0] = 1.7f; ((float *)b->data)[0] = -0.6f; ((float *)dy->data)[0] = 1.0f;
    CHECK_OK(sb_binary_backward(SB_BINARY_DIV, dy, a, b, da, db));
    double h = 1e-6, av = 1.7f, bv = -0.6f;
    double fa = ((av + h) / bv - (av - h) / bv) / (2 * h), fb = (av / (bv + h) - av / (bv - h)) / (2 * h);
    CHECK(fabs(((float *)da->data)[0] - fa) < 1e-5 && fabs(((float *)db->data)[0] - fb) < 1e-5,
          "div grads %g %g vs fd %g %g", (double)((float *)da->data)[0], (double)((float *)db->data)[0], fa, fb);
    /* pow: against float64 derivatives at a positive base, and the zero
     * rules (0^b with b >= 0 has no exponent gradient, a^0 no base
     * gradient: +0, not 0 * inf or NaN) */
    ((float *)a->data)[0] = 1.7f; ((float *)b->data)[0] = -2.5f;
    CHECK_OK(sb_binary_backward(SB_BINARY_POW, dy, a, b, da, db));
    double pa = -2.5 * pow(1.7, -3.5), pb = pow(1.7, -2.5) * log(1.7);
    CHECK(fabs(((float *)da->data)[0] - pa) < 1e-6 && fabs(((float *)db->data)[0] - pb) < 1e-6,
          "pow grads %g %g vs %g %g", (double)((float *)da->data)[0],
          (double)((float *)db->data)[0], pa, pb);
    ((float *)a->data)[0] = 0.0f; ((float *)b->data)[0] = 0.0f;
    CHECK_OK(sb_binary_backward(SB_BINARY_POW, dy, a, b, da, db));
    CHECK(sb_test_bits(((float *)da->data)[0]) == 0 && sb_test_bits(((float *)db->data)[0]) == 0,
          "pow grads at 0^0 are +0: %g %g", (double)((float *)da->data)[0],
          (double)((float *)db->data)[0]);
    sb_tensor_free(a); sb_tensor_free(b); sb_tensor_free(dy); sb_tensor_free(da); sb_tensor_free(db);
}

static void test_bad_inputs(void) {
    int64_t s23[2] = { 2, 3 }, s24[2] = { 2, 4 }, s3[1] = { 3 };
    sb_tensor *a = tnew(2, s23), *b = tnew(2, s23), *o = tnew(2, s23), *w = tnew(2, s24), *v3 = tnew(1, s3);
    sb_tensor *ii = NULL;
    CHECK_OK(sb_tensor_new(&ii, SB_I32, 2, s23));
    CHECK_ERROR(sb_add(NULL, b, o), SB_ERR_NULL, "sb_add: a is NULL");
    CHECK_ERROR(sb_sub(a, NULL, o), SB_ERR_NULL, "sb_sub: b is NULL");
    CHECK_ERROR(sb_mul(a, b, NULL), SB_ERR_NULL, "sb_mul: out is NULL");
    CHECK_ERROR(sb_div(ii, b, o), SB_ERR_DTYPE, "sb_div: a has dtype int32");
    CHECK_ERROR(sb_maximum(a, b, ii), SB_ERR_DTYPE, "out has dtype int32");
    CHECK_ERROR(sb_minimum(a, w, o), SB_ERR_SHAPE, "do not broadcast");
    CHECK_ERROR(sb_add(a, v3, w), SB_ERR_SHAPE, "expected the broadcast shape [2, 3]");
    CHECK_ERROR(sb_binary((sb_binary_op)17, a, b, o), SB_ERR_ARG, "op = 17");
    CHECK_ERROR(sb_binary((sb_binary_op)-1, a, b, o), SB_ERR_ARG, "not an sb_binary_op");
    /* out with a stride-0 dimension overlaps itself */
    float buf[3];
    int64_t st0[2] = { 0, 1 };
    sb_tensor *ov;
    CHECK_OK(sb_tensor_wrap(&ov, buf, SB_F32, 2, s23, st0));
    CHECK_ERROR(sb_add(a, b, ov), SB_ERR_ARG, "overlapping elements");
    CHECK_ERROR(sb_neg(a, ov), SB_ERR_ARG, "overlapping elements");
    sb_tensor_free(ov);
    /* out overlapping an input that broadcasts into it */
    sb_tensor *row;
    CHECK_OK(sb_tensor_wrap(&row, o->data, SB_F32, 1, s3, NULL));
    CHECK_ERROR(sb_add(a, row, o), SB_ERR_ARG, "out overlaps b");
    sb_tensor_free(row);
    sb_tensor cuda = *a;
    cuda.device = SB_DEVICE_CUDA;
    CHECK_ERROR(sb_add(&cuda, b, o), SB_ERR_DEVICE, "sb_add: a is on the cuda device but b is on the cpu device");
    CHECK_ERROR(sb_binary_scalar((sb_binary_op)9, a, 1.0f, o), SB_ERR_ARG, "sb_binary_scalar: op = 9");
    CHECK_ERROR(sb_add_scalar(NULL, 1.0f, o), SB_ERR_NULL, "sb_add_scalar: x is NULL");
    CHECK_ERROR(sb_sub_scalar(a, 1.0f, w), SB_ERR_SHAPE, "sb_sub_scalar: out has shape [2, 4]");
    CHECK_ERROR(sb_mul_scalar(a, 1.0f, ii), SB_ERR_DTYPE, "sb_mul_scalar: out has dtype int32");
    CHECK_ERROR(sb_div_scalar(a, 1.0f, NULL), SB_ERR_NULL, "sb_div_scalar: out is NULL");
    /* unary */
    sb_status (*ufns[7])(const sb_tensor *, sb_tensor *) = { sb_neg, sb_abs, sb_sqrt, sb_exp,
                                                           sb_log, sb_square, sb_reciprocal };
    const char *unames[7] = { "sb_neg", "sb_abs", "sb_sqrt", "sb_exp", "sb_log", "sb_square", "sb_reciprocal" };
    for (int k = 0; k < 7; k++) {
        char want[64];
        snprintf(want, sizeof want, "%s: x is NULL", unames[k]);
        CHECK_ERROR(ufns[k](NULL, o), SB_ERR_NULL, want);
        snprintf(want, sizeof want, "%s: out has shape [2, 4]", unames[k]);
        CHECK_ERROR(ufns[k](a, w), SB_ERR_SHAPE, want);
        CHECK_ERROR(ufns[k](ii, o), SB_ERR_DTYPE, "x has dtype int32");
    }
    CHECK_ERROR(sb_unary((sb_unary_op)12, a, o), SB_ERR_ARG, "sb_unary: op = 12");
    CHECK_ERROR(sb_unary_backward((sb_unary_op)12, a, a, a, o), SB_ERR_ARG, "op = 12");
    CHECK_ERROR(sb_unary_backward(SB_UNARY_EXP, a, NULL, a, o), SB_ERR_NULL, "sb_unary_backward: y is NULL");
    CHECK_ERROR(sb_unary_backward(SB_UNARY_EXP, a, a, w, o), SB_ERR_SHAPE, "dy has shape [2, 4]");
    CHECK_ERROR(sb_unary_backward(SB_UNARY_EXP, a, a, a, NULL), SB_ERR_NULL, "dx is NULL");
    /* binary backward */
    int64_t s31[2] = { 3, 1 }, s14[2] = { 1, 4 }, s34[2] = { 3, 4 };
    sb_tensor *p = tnew(2, s31), *q = tnew(2, s14), *dy = tnew(2, s34), *dp = tnew(2, s31), *dq = tnew(2, s14);
    CHECK_ERROR(sb_binary_backward((sb_binary_op)7, dy, p, q, dp, dq), SB_ERR_ARG, "sb_binary_backward: op = 7");
    CHECK_ERROR(sb_binary_backward(SB_BINARY_MUL, NULL, p, q, dp, dq), SB_ERR_NULL, "dy is NULL");
    CHECK_ERROR(sb_binary_backward(SB_BINARY_MUL, dy, p, q, dq, dq), SB_ERR_SHAPE, "da has shape [1, 4], expected the shape of a [3, 1]");
    CHECK_ERROR(sb_binary_backward(SB_BINARY_MUL, dy, p, q, dp, dp), SB_ERR_SHAPE, "expected the shape of b");
    CHECK_ERROR(sb_binary_backward(SB_BINARY_MUL, p, p, q, dp, dq), SB_ERR_SHAPE, "dy has shape [3, 1]");
    CHECK_ERROR(sb_binary_backward(SB_BINARY_MUL, dy, p, q, p, dq), SB_ERR_ARG, "da overlaps a");
    CHECK_ERROR(sb_binary_backward(SB_BINARY_MUL, dy, p, q, dp, ii), SB_ERR_DTYPE, "db has dtype int32");
    CHECK_ERROR(sb_binary_backward(SB_BINARY_MUL, dy, p, w, dp, dq), SB_ERR_SHAPE, "do not broadcast");
    /* reduce_to_shape */
    CHECK_ERROR(sb_reduce_to_shape(NULL, dp), SB_ERR_NULL, "sb_reduce_to_shape: grad is NULL");
    CHECK_ERROR(sb_reduce_to_shape(dy, NULL), SB_ERR_NULL, "sb_reduce_to_shape: out is NULL");
    CHECK_ERROR(sb_reduce_to_shape(dy, w), SB_ERR_SHAPE, "does not broadcast to grad");
    CHECK_ERROR(sb_reduce_to_shape(dp, dy), SB_ERR_SHAPE, "does not broadcast");
    CHECK_ERROR(sb_reduce_to_shape(dy, ii), SB_ERR_DTYPE, "out has dtype int32");
    CHECK_ERROR(sb_reduce_to_shape(dy, dy), SB_ERR_ARG, "out overlaps grad");
    sb_tensor_free(p); sb_tensor_free(q); sb_tensor_free(dy); sb_tensor_free(dp); sb_tensor_free(dq);
    sb_tensor_free(a); sb_tensor_free(b); sb_tensor_free(o); sb_tensor_free(w); sb_tensor_free(v3);
    sb_tensor_free(ii);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_broadcast_shapes();
    test_strided_fuzz();
    test_special_values();
    test_scalar_and_inplace();
    test_unary();
    test_unary_backward();
    test_reduce_to_shape();
    test_binary_backward();
    test_bad_inputs();
    return sb_test_finish();
}
