/* Tests for reductions over axes and their backward. The expected bits come
 * from an independent statement of the contract written here: the elements
 * are gathered by explicit multi-index enumeration (row-major over the
 * reduced axes) into an array and summed by a recursive block/lane/tree
 * canonical sum, unrelated to the streaming accumulator in src/core. */
#include <float.h>
#include <math.h>
#include "harness.h"

static uint64_t rng_state = 0x13198a2e03707344ull;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}
static float frand(float lo, float hi) { return lo + (hi - lo) * (float)(rnd() % 1000000) / 1e6f; }

static sb_tensor *tnew(sb_dtype dt, int nd, const int64_t *shape) {
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, dt, nd, shape) != SB_OK) { fprintf(stderr, "%s\n", sb_last_error()); exit(2); }
    return t;
}
static sb_tensor *fnew(int nd, const int64_t *shape) { return tnew(SB_F32, nd, shape); }

/* ---- the canonical sum, restated: recursion over blocks, lanes, tree ---- */

static float tree(float *v, int w) {
    if (w == 1) return v[0];
    for (int j = 0; j < w / 2; j++) v[j] = v[j] + v[j + w / 2];
    return tree(v, w / 2);
}
static float canon_s(const float *x, int64_t n, int64_t stride) {
    if (n == 0) return 0.0f;
    if (n <= 8192) {
        float lane[32];
        for (int j = 0; j < 32; j++) lane[j] = -0.0f;
        for (int64_t i = 0; i < n; i++) lane[i % 32] = lane[i % 32] + x[i * stride];
        return tree(lane, 32);
    }
    int64_t nb = (n + 8191) / 8192;
    float *bs = malloc((size_t)nb * sizeof *bs);
    for (int64_t b = 0; b < nb; b++)
        bs[b] = canon_s(x + b * 8192 * stride, n - b * 8192 < 8192 ? n - b * 8192 : 8192, stride);
    float r = canon_s(bs, nb, 1);
    free(bs);
    return r;
}
static float canon(const float *x, int64_t n) { return canon_s(x, n, 1); }
static float naive(const float *x, int64_t n) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) s += x[i];
    return s;
}

static float sb_f32nan(void) {
    uint32_t u = 0x7fc00000u;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- explicit enumeration ------------------------------------------------ */

static int64_t off_of(const sb_tensor *t, const int64_t *idx) {
    int64_t o = 0;
    for (int i = 0; i < t->ndim; i++) o += idx[i] * t->strides[i];
    return o;
}
static int next_idx(int nd, const int64_t *shape, int64_t *idx) {
    for (int k = nd - 1; k >= 0; k--) { if (++idx[k] < shape[k]) return 1; idx[k] = 0; }
    return 0;
}

/* For output element `oe` (row-major over the kept axes), gathers the
 * reduced elements of x in row-major order of the reduced axes. */
static int64_t gather(const sb_tensor *x, unsigned mask, int64_t oe, float *buf) {
    int64_t kept[SB_MAX_DIMS], nk = 0, kshape[SB_MAX_DIMS], rshape[SB_MAX_DIMS], nr = 0;
    int kax[SB_MAX_DIMS], rax[SB_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) {
        if (mask >> i & 1) { rax[nr] = i; rshape[nr++] = x->shape[i]; }
        else { kax[nk] = i; kshape[nk++] = x->shape[i]; }
    }
    for (int64_t k = nk - 1; k >= 0; k--) { kept[k] = oe % kshape[k]; oe /= kshape[k]; }
    int64_t idx[SB_MAX_DIMS] = {0}, ridx[SB_MAX_DIMS] = {0}, cnt = 0, total = 1;
    for (int64_t k = 0; k < nr; k++) total *= rshape[k];
    for (int64_t e = 0; e < total; e++) {
        for (int64_t k = 0; k < nk; k++) idx[kax[k]] = kept[k];
        for (int64_t k = 0; k < nr; k++) idx[rax[k]] = ridx[k];
        buf[cnt++] = ((const float *)x->data)[off_of(x, idx)];
        next_idx((int)nr, rshape, ridx);
    }
    return cnt;
}

static unsigned mask_of(int ndim, const int *dims, int nd) {
    if (nd == 0) return ndim ? (1u << ndim) - 1u : 0u;
    unsigned m = 0;
    for (int i = 0; i < nd; i++) m |= 1u << ((dims[i] + ndim) % ndim);
    return m;
}

static sb_tensor *out_for(const sb_tensor *x, unsigned mask, bool keepdim, sb_dtype dt) {
    int64_t shape[SB_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (mask >> i & 1) { if (keepdim) shape[n++] = 1; }
        else shape[n++] = x->shape[i];
    }
    return tnew(dt, n, shape);
}

static void fill(sb_tensor *t, float lo, float hi) {
    int64_t n = sb_tensor_numel(t), idx[SB_MAX_DIMS] = {0};
    for (int64_t e = 0; e < n; e++) {
        float v = frand(lo, hi);
        if (rnd() % 8 == 0) v *= 1e4f; /* magnitudes that make order matter */
        ((float *)t->data)[off_of(t, idx)] = v;
        next_idx(t->ndim, t->shape, idx);
    }
}

/* Order key with -0 < +0; NaN handled by callers. */
static int64_t okey(float x) {
    uint32_t u = sb_test_bits(x);
    return (u & 0x80000000u) ? -(int64_t)(u & 0x7fffffffu) - 1 : (int64_t)u;
}

/* Expected results of every forward reduction for output element oe. */
static void expect(const sb_tensor *x, unsigned mask, int64_t oe, int64_t corr, float *sum,
                   float *mean, float *var, float *mx, int64_t *imx, float *mn, int64_t *imn,
                   double *var64) {
    int64_t cap = sb_tensor_numel(x) + 1;
    float *buf = malloc((size_t)cap * sizeof *buf), *sq = malloc((size_t)cap * sizeof *sq);
    int64_t n = gather(x, mask, oe, buf);
    *sum = canon(buf, n);
    *mean = *sum / (float)n;
    for (int64_t i = 0; i < n; i++) { float d = buf[i] - *mean; sq[i] = d * d; }
    *var = n - corr <= 0 ? sb_f32nan() : canon(sq, n) / (float)(n - corr);
    double m = 0, v = 0;
    for (int64_t i = 0; i < n; i++) m += buf[i];
    m /= (double)n;
    for (int64_t i = 0; i < n; i++) v += (buf[i] - m) * (buf[i] - m);
    *var64 = v / (double)(n - corr);
    *imx = *imn = 0;
    for (int64_t i = 1; i < n; i++) {
        float a = buf[i], bm = buf[*imx], bn = buf[*imn];
        if (bm == bm && (a != a || okey(a) > okey(bm))) *imx = i;
        if (bn == bn && (a != a || okey(a) < okey(bn))) *imn = i;
    }
    *mx = n ? buf[*imx] : 0.0f;
    *mn = n ? buf[*imn] : 0.0f;
    free(buf); free(sq);
}

static const int64_t SIZES[] = { 0, 1, 31, 32, 33, 8191, 8192, 8193, 20000, 300000 };

static void test_ssum(void) {
    for (size_t k = 0; k < sizeof SIZES / sizeof SIZES[0]; k++) {
        int64_t n = SIZES[k];
        float *x = malloc((size_t)(3 * n + 1) * sizeof *x);
        for (int64_t i = 0; i < 3 * n + 1; i++) x[i] = frand(-1.0f, 1.0f) * (i % 7 == 0 ? 1e5f : 1.0f);
        for (int inc = 1; inc <= 3; inc++)
            CHECK_BITS(sb_test_ssum(n, x, inc), canon_s(x, n, inc), "sb_ssum n=%lld incx=%d", (long long)n, inc);
        free(x);
    }
}

/* 1-D reductions of every size: bits against the restatement, closeness to
 * float64, and a companion (2, n) tensor reduced along each axis. */
static void test_sizes(void) {
    for (size_t k = 0; k < sizeof SIZES / sizeof SIZES[0]; k++) {
        int64_t n = SIZES[k];
        if (sb_test_quick() && n > 20000) continue;
        sb_tensor *x = fnew(1, &n), *o = fnew(0, NULL);
        fill(x, -1.0f, 1.0f);
        float s, m, v, mx, mn;
        int64_t imx, imn;
        double v64;
        expect(x, 1u, 0, 1, &s, &m, &v, &mx, &imx, &mn, &imn, &v64);
        int d0 = 0;
        CHECK_OK(sb_sum(x, &d0, 1, false, o));
        CHECK_BITS(*(float *)o->data, s, "sum n=%lld", (long long)n);
        double ref = 0;
        for (int64_t i = 0; i < n; i++) ref += ((float *)x->data)[i];
        double mag = 0;
        for (int64_t i = 0; i < n; i++) mag += fabs(((float *)x->data)[i]);
        CHECK(fabs(*(float *)o->data - ref) <= 1e-6 * mag + 1e-30, "sum n=%lld far from float64", (long long)n);
        CHECK_OK(sb_mean(x, NULL, 0, false, o));
        CHECK_BITS(*(float *)o->data, m, "mean n=%lld", (long long)n);
        CHECK_OK(sb_var(x, NULL, 0, 1, false, o));
        CHECK_BITS(*(float *)o->data, v, "var n=%lld", (long long)n);
        if (n > 1) CHECK(fabs(*(float *)o->data - v64) <= 1e-5 * v64, "var n=%lld: %g vs float64 %g", (long long)n, (double)*(float *)o->data, v64);
        CHECK_OK(sb_std(x, NULL, 0, 1, false, o));
        CHECK_BITS(*(float *)o->data, sqrtf(v), "std n=%lld", (long long)n);
        if (n > 1) CHECK(fabs(*(float *)o->data - sqrt(v64)) <= 1e-5 * sqrt(v64), "std n=%lld vs float64", (long long)n);
        if (n > 0) {
            sb_tensor *ix = tnew(SB_I64, 0, NULL);
            CHECK_OK(sb_max(x, NULL, 0, false, o, ix));
            CHECK_BITS(*(float *)o->data, mx, "max n=%lld", (long long)n);
            CHECK(*(int64_t *)ix->data == imx, "argmax n=%lld", (long long)n);
            CHECK_OK(sb_argmin(x, NULL, 0, false, ix));
            CHECK(*(int64_t *)ix->data == imn, "argmin n=%lld", (long long)n);
            sb_tensor_free(ix);
        }
        /* (2, n) along axis 1 and (n, 2) along axis 0 (strided reduction) */
        int64_t s2[2] = { 2, n }, s3[2] = { n, 2 };
        sb_tensor *x2 = fnew(2, s2), *x3 = fnew(2, s3), *o2 = fnew(1, (int64_t[]){ 2 });
        fill(x2, -1.0f, 1.0f);
        fill(x3, -1.0f, 1.0f);
        int d1 = -1;
        CHECK_OK(sb_sum(x2, &d1, 1, false, o2));
        for (int r = 0; r < 2; r++) {
            expect(x2, 2u, r, 0, &s, &m, &v, &mx, &imx, &mn, &imn, &v64);
            CHECK_BITS(((float *)o2->data)[r], s, "sum (2,n) row %d n=%lld", r, (long long)n);
        }
        CHECK_OK(sb_var(x3, &d0, 1, 0, false, o2));
        for (int r = 0; r < 2; r++) {
            expect(x3, 1u, r, 0, &s, &m, &v, &mx, &imx, &mn, &imn, &v64);
            CHECK_BITS(((float *)o2->data)[r], v, "var (n,2) col %d n=%lld", r, (long long)n);
        }
        sb_tensor_free(x2); sb_tensor_free(x3); sb_tensor_free(o2);
        sb_tensor_free(x); sb_tensor_free(o);
    }
}

/* Inputs where left-to-right summation gives other bits than the rule. */
static void test_order_sensitive(void) {
    int64_t n = 64;
    sb_tensor *x = fnew(1, &n), *o = fnew(0, NULL);
    float *xv = x->data;
    xv[0] = 16777216.0f;
    for (int i = 1; i < 64; i++) xv[i] = 1.0f;
    CHECK_OK(sb_sum(x, NULL, 0, false, o));
    float got = *(float *)o->data;
    CHECK_BITS(got, canon(xv, 64), "order-sensitive sum");
    CHECK(got != naive(xv, 64), "input must separate canonical from naive");
    sb_tensor_free(x);
    /* across the 8192 block boundary */
    int64_t m = 8192 * 2 + 5;
    x = fnew(1, &m);
    xv = x->data;
    for (int64_t i = 0; i < m; i++) xv[i] = (i % 8192 == 0) ? 3.0e7f : 1.0f;
    CHECK_OK(sb_sum(x, NULL, 0, false, o));
    got = *(float *)o->data;
    CHECK_BITS(got, canon(xv, m), "order-sensitive blocked sum");
    CHECK(got != naive(xv, m), "blocked input must separate canonical from naive");
    sb_tensor_free(x); sb_tensor_free(o);
}

/* Every subset of axes of a 4-D tensor, given as positive, negative and
 * permuted dims, keepdim or not, on a contiguous and a transposed input. */
static void test_multi_axis(void) {
    int64_t shape[4] = { 3, 4, 5, 6 }, tshape[4] = { 6, 4, 5, 3 };
    sb_tensor *xc = fnew(4, shape), *tc = fnew(4, tshape), *xt;
    fill(xc, -2.0f, 2.0f);
    fill(tc, -2.0f, 2.0f);
    ((float *)xc->data)[7] = ((float *)xc->data)[8] = 50000.0f; /* a tie for max */
    CHECK_OK(sb_tensor_transpose(&xt, tc, 0, 3));
    sb_tensor *inputs[2] = { xc, xt };
    for (int which = 0; which < 2; which++) {
        sb_tensor *x = inputs[which];
        for (unsigned mask = 0; mask < 16; mask++) {
            int dims[4], nd = 0;
            for (int i = 3; i >= 0; i--) /* listed in decreasing order, some negative */
                if (mask >> i & 1) dims[nd++] = (i % 2) ? i - 4 : i;
            if (mask == 0) continue; /* no dims listed means all: tested below */
            CHECK(mask_of(4, dims, nd) == mask, "test's dims list for mask %u", mask);
            for (int keep = 0; keep < 2; keep++) {
                sb_tensor *o = out_for(x, mask, keep, SB_F32), *ix = out_for(x, mask, keep, SB_I64);
                int64_t no = sb_tensor_numel(o);
                float *ov = o->data;
                int64_t *iv = ix->data;
                for (int fn = 0; fn < 7; fn++) {
                    switch (fn) {
                    case 0: CHECK_OK(sb_sum(x, dims, nd, keep, o)); break;
                    case 1: CHECK_OK(sb_mean(x, dims, nd, keep, o)); break;
                    case 2: CHECK_OK(sb_var(x, dims, nd, 0, keep, o)); break;
                    case 3: CHECK_OK(sb_std(x, dims, nd, 1, keep, o)); break;
                    case 4: CHECK_OK(sb_max(x, dims, nd, keep, o, ix)); break;
                    case 5: CHECK_OK(sb_min(x, dims, nd, keep, o, ix)); break;
                    default: CHECK_OK(sb_argmax(x, dims, nd, keep, ix)); break;
                    }
                    for (int64_t e = 0; e < no; e++) {
                        float s, m, v, mx, mn;
                        int64_t imx, imn;
                        double v64;
                        expect(x, mask, e, fn == 3 ? 1 : 0, &s, &m, &v, &mx, &imx, &mn, &imn, &v64);
                        float want = fn == 0 ? s : fn == 1 ? m : fn == 2 ? v : fn == 3 ? sqrtf(v) : fn == 4 ? mx : mn;
                        if (fn < 6) CHECK_BITS(ov[e], want, "input %d mask %u keep %d fn %d elem %lld", which, mask, keep, fn, (long long)e);
                        if (fn >= 4)
                            CHECK(iv[e] == (fn == 5 ? imn : imx), "indices input %d mask %u fn %d elem %lld: %lld", which, mask, fn, (long long)e, (long long)iv[e]);
                    }
                }
                sb_tensor_free(o); sb_tensor_free(ix);
            }
        }
    }
    /* ndims == 0 reduces all axes, same bits as listing them all */
    sb_tensor *a = fnew(0, NULL), *b = fnew(0, NULL);
    int all[4] = { 0, 1, 2, 3 };
    CHECK_OK(sb_sum(xt, NULL, 0, false, a));
    CHECK_OK(sb_sum(xt, all, 4, false, b));
    CHECK_BITS(*(float *)a->data, *(float *)b->data, "all axes");
    sb_tensor_free(a); sb_tensor_free(b);
    /* a 0-dim input accepts dims 0 and -1 */
    sb_tensor *z = fnew(0, NULL), *zo = fnew(0, NULL);
    *(float *)z->data = -0.0f;
    int dm1 = -1;
    CHECK_OK(sb_sum(z, &dm1, 1, true, zo));
    CHECK_BITS(*(float *)zo->data, -0.0f, "sum of one -0 is -0");
    sb_tensor_free(z); sb_tensor_free(zo);
    sb_tensor_free(xt); sb_tensor_free(xc); sb_tensor_free(tc);
}

static void test_max_conventions(void) {
    int64_t n = 6;
    sb_tensor *x = fnew(1, &n), *o = fnew(0, NULL), *ix = tnew(SB_I64, 0, NULL);
    float *xv = x->data;
    float nan1, nan2;
    uint32_t u1 = 0x7fc00111u, u2 = 0xffc00222u;
    memcpy(&nan1, &u1, 4); memcpy(&nan2, &u2, 4);
    struct { float v[6]; float wmax; int64_t imax; float wmin; int64_t imin; } cases[] = {
        { { 1, 3, 3, -2, -2, 0 }, 3, 1, -2, 3 },                    /* ties: first wins */
        { { -0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f }, 0.0f, 1, -0.0f, 0 }, /* -0 < +0 */
        { { 0.0f, -0.0f, 0, 0, 0, 0 }, 0.0f, 0, -0.0f, 1 },
        { { 1, nan1, 5, nan2, 9, -1 }, nan1, 1, nan1, 1 },          /* first NaN wins */
        { { -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY }, -INFINITY, 0, -INFINITY, 0 },
        { { 1e-45f, -1e-45f, 0, 3e-45f, 3e-45f, -3e-45f }, 3e-45f, 3, -3e-45f, 5 }, /* subnormals */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        memcpy(xv, cases[c].v, sizeof cases[c].v);
        CHECK_OK(sb_max(x, NULL, 0, false, o, ix));
        CHECK_BITS(*(float *)o->data, cases[c].wmax, "max case %zu", c);
        CHECK(*(int64_t *)ix->data == cases[c].imax, "max index case %zu: %lld", c, (long long)*(int64_t *)ix->data);
        CHECK_OK(sb_min(x, NULL, 0, false, o, ix));
        CHECK_BITS(*(float *)o->data, cases[c].wmin, "min case %zu", c);
        CHECK(*(int64_t *)ix->data == cases[c].imin, "min index case %zu", c);
        CHECK_OK(sb_argmax(x, NULL, 0, false, ix));
        CHECK(*(int64_t *)ix->data == cases[c].imax, "argmax case %zu", c);
        CHECK_OK(sb_max(x, NULL, 0, false, o, NULL)); /* indices optional */
    }
    sb_tensor_free(x); sb_tensor_free(o); sb_tensor_free(ix);
}

static void test_mean_var_edges(void) {
    /* n = 2^24 + 1 elements of a stride-0 view: (float)n rounds to 2^24 */
    float one = 1.0f;
    int64_t big = (1 << 24) + 1, st0 = 0;
    sb_tensor *x, *o = fnew(0, NULL);
    CHECK_OK(sb_tensor_wrap(&x, &one, SB_F32, 1, &big, &st0));
    CHECK_OK(sb_mean(x, NULL, 0, false, o));
    float s = canon_s(&one, big, 0);
    CHECK_BITS(*(float *)o->data, s / 16777216.0f, "mean divides by (float)n rounded to nearest even");
    sb_tensor_free(x);
    /* n = 1, correction 1: NaN 0x7fc00000; n = 0: sum +0, mean NaN */
    int64_t n1 = 1, n0 = 0;
    sb_tensor *x1 = fnew(1, &n1), *x0 = fnew(1, &n0);
    *(float *)x1->data = 5.0f;
    CHECK_OK(sb_var(x1, NULL, 0, 1, false, o));
    CHECK(sb_test_bits(*(float *)o->data) == 0x7fc00000u, "var n=1 correction=1 is the quiet NaN");
    CHECK_OK(sb_std(x1, NULL, 0, 2, false, o));
    CHECK(sb_test_bits(*(float *)o->data) == 0x7fc00000u, "std n-correction<0 is the quiet NaN");
    CHECK_OK(sb_var(x1, NULL, 0, 0, false, o));
    CHECK_BITS(*(float *)o->data, 0.0f, "var of one element, correction 0");
    CHECK_OK(sb_sum(x0, NULL, 0, false, o));
    CHECK_BITS(*(float *)o->data, 0.0f, "empty sum is +0");
    CHECK_OK(sb_mean(x0, NULL, 0, false, o));
    CHECK(*(float *)o->data != *(float *)o->data, "empty mean is NaN");
    /* var with huge cancellation: mean first, then squared deviations */
    int64_t n3 = 3;
    sb_tensor *x3 = fnew(1, &n3);
    float *v3 = x3->data;
    v3[0] = 1e4f + 1.0f; v3[1] = 1e4f + 2.0f; v3[2] = 1e4f + 3.0f;
    CHECK_OK(sb_var(x3, NULL, 0, 1, false, o));
    CHECK_BITS(*(float *)o->data, 1.0f, "two-pass var of 1e4+{1,2,3}");
    sb_tensor_free(x3); sb_tensor_free(x1); sb_tensor_free(x0); sb_tensor_free(o);
}

static void test_backward(void) {
    int64_t shape[3] = { 3, 4, 5 };
    sb_tensor *x = fnew(3, shape), *dx = fnew(3, shape);
    fill(x, -3.0f, 3.0f);
    int dims[2] = { 2, 0 };
    unsigned mask = 5u;
    for (int keep = 0; keep < 2; keep++) {
        sb_tensor *dy = out_for(x, mask, keep, SB_F32), *ix = out_for(x, mask, keep, SB_I64);
        fill(dy, -1.0f, 1.0f);
        float *dyv = dy->data, *dxv = dx->data;
        CHECK_OK(sb_sum_backward(dy, dims, 2, keep, dx));
        for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) for (int k = 0; k < 5; k++)
            CHECK_BITS(dxv[(i * 4 + j) * 5 + k], dyv[j], "sum backward");
        CHECK_OK(sb_mean_backward(dy, dims, 2, keep, dx));
        for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) for (int k = 0; k < 5; k++)
            CHECK_BITS(dxv[(i * 4 + j) * 5 + k], dyv[j] / 15.0f, "mean backward");
        CHECK_OK(sb_argmax(x, dims, 2, keep, ix));
        CHECK_OK(sb_max_backward(dy, ix, dims, 2, keep, dx));
        int64_t *iv = ix->data;
        for (int j = 0; j < 4; j++) {
            /* enumeration over (i, k) row-major: e = i * 5 + k */
            for (int i = 0; i < 3; i++) for (int k = 0; k < 5; k++) {
                float want = (i * 5 + k == iv[j]) ? dyv[j] : 0.0f;
                CHECK_BITS(dxv[(i * 4 + j) * 5 + k], want, "max backward j=%d i=%d k=%d", j, i, k);
            }
        }
        iv[1] = 15;
        CHECK_ERROR(sb_max_backward(dy, ix, dims, 2, keep, dx), SB_ERR_RANGE, "outside [0, 15)");
        iv[1] = -1;
        CHECK_ERROR(sb_max_backward(dy, ix, dims, 2, keep, dx), SB_ERR_RANGE, "is -1");
        sb_tensor_free(dy); sb_tensor_free(ix);
    }
    sb_tensor_free(x); sb_tensor_free(dx);
}

static void test_bad_inputs(void) {
    int64_t s[2] = { 3, 4 }, s3[1] = { 3 }, s4[1] = { 4 }, s31[2] = { 3, 1 }, s0[2] = { 3, 0 };
    sb_tensor *x = fnew(2, s), *o3 = fnew(1, s3), *o4 = fnew(1, s4), *o31 = fnew(2, s31);
    sb_tensor *i3 = tnew(SB_I64, 1, s3), *ii = tnew(SB_I32, 2, s), *i32 = tnew(SB_I32, 1, s3), *xe = fnew(2, s0);
    int d1 = 1, d2[2] = { 1, -1 }, dbad = 2, dneg = -3;
    CHECK_ERROR(sb_sum(NULL, &d1, 1, false, o3), SB_ERR_NULL, "sb_sum: x is NULL");
    CHECK_ERROR(sb_sum(x, &d1, 1, false, NULL), SB_ERR_NULL, "sb_sum: out is NULL");
    CHECK_ERROR(sb_sum(ii, &d1, 1, false, o3), SB_ERR_DTYPE, "sb_sum: x has dtype int32");
    CHECK_ERROR(sb_mean(x, &dbad, 1, false, o3), SB_ERR_ARG, "sb_mean: dims[0] = 2 is out of range");
    CHECK_ERROR(sb_var(x, &dneg, 1, 1, false, o3), SB_ERR_ARG, "sb_var: dims[0] = -3 is out of range");
    CHECK_ERROR(sb_std(x, d2, 2, 1, false, o3), SB_ERR_ARG, "sb_std: dimension 1 appears twice");
    CHECK_ERROR(sb_sum(x, NULL, 1, false, o3), SB_ERR_NULL, "dims is NULL");
    CHECK_ERROR(sb_sum(x, &d1, -1, false, o3), SB_ERR_ARG, "ndims = -1");
    CHECK_ERROR(sb_sum(x, &d1, 1, false, o4), SB_ERR_SHAPE, "out has shape [4], expected the reduced shape (keepdim = false) [3]");
    CHECK_ERROR(sb_sum(x, &d1, 1, true, o3), SB_ERR_SHAPE, "expected the reduced shape (keepdim = true) [3, 1]");
    CHECK_ERROR(sb_mean(x, &d1, 1, false, o31), SB_ERR_SHAPE, "sb_mean: out has shape [3, 1]");
    CHECK_ERROR(sb_var(x, &d1, 1, -1, false, o3), SB_ERR_ARG, "sb_var: correction = -1 is negative");
    CHECK_ERROR(sb_sum(x, &d1, 1, false, i3), SB_ERR_DTYPE, "out has dtype int64");
    sb_tensor *alias;
    CHECK_OK(sb_tensor_wrap(&alias, x->data, SB_F32, 1, s3, NULL));
    CHECK_ERROR(sb_sum(x, &d1, 1, false, alias), SB_ERR_ARG, "sb_sum: out overlaps x");
    sb_tensor_free(alias);
    CHECK_ERROR(sb_max(x, &d1, 1, false, NULL, i3), SB_ERR_NULL, "sb_max: out is NULL");
    CHECK_ERROR(sb_min(x, &d1, 1, false, o3, i32), SB_ERR_DTYPE, "sb_min: indices has dtype int32");
    CHECK_ERROR(sb_max(x, &d1, 1, true, o31, i3), SB_ERR_SHAPE, "sb_max: indices has shape [3]");
    CHECK_ERROR(sb_max(xe, &d1, 1, false, o3, i3), SB_ERR_SHAPE, "sb_max: cannot reduce over an empty extent");
    CHECK_ERROR(sb_argmax(x, &d1, 1, false, NULL), SB_ERR_NULL, "sb_argmax: indices is NULL");
    CHECK_ERROR(sb_argmin(x, &dbad, 1, false, i3), SB_ERR_ARG, "sb_argmin: dims[0] = 2");
    CHECK_ERROR(sb_argmax(xe, &d1, 1, false, i3), SB_ERR_SHAPE, "empty extent");
    sb_tensor *dx = fnew(2, s);
    CHECK_ERROR(sb_sum_backward(NULL, &d1, 1, false, dx), SB_ERR_NULL, "sb_sum_backward: dy is NULL");
    CHECK_ERROR(sb_sum_backward(o3, &d1, 1, false, NULL), SB_ERR_NULL, "sb_sum_backward: dx is NULL");
    CHECK_ERROR(sb_sum_backward(o4, &d1, 1, false, dx), SB_ERR_SHAPE, "dy has shape [4], expected the reduced shape of dx [3]");
    CHECK_ERROR(sb_mean_backward(o3, &d1, 1, true, dx), SB_ERR_SHAPE, "sb_mean_backward: dy has shape [3]");
    CHECK_ERROR(sb_mean_backward(o3, &dbad, 1, false, dx), SB_ERR_ARG, "sb_mean_backward: dims[0] = 2");
    CHECK_ERROR(sb_sum_backward(o3, &d1, 1, false, ii), SB_ERR_DTYPE, "dx has dtype int32");
    CHECK_ERROR(sb_max_backward(o3, NULL, &d1, 1, false, dx), SB_ERR_NULL, "sb_max_backward: indices is NULL");
    CHECK_ERROR(sb_max_backward(o3, i32, &d1, 1, false, dx), SB_ERR_DTYPE, "indices has dtype int32");
    CHECK_ERROR(sb_max_backward(o3, i3, d2, 2, false, dx), SB_ERR_ARG, "appears twice");
    sb_tensor *dyalias;
    CHECK_OK(sb_tensor_wrap(&dyalias, dx->data, SB_F32, 1, s3, NULL));
    CHECK_ERROR(sb_sum_backward(dyalias, &d1, 1, false, dx), SB_ERR_ARG, "dx overlaps dy");
    sb_tensor_free(dyalias);
    sb_tensor_free(dx);
    sb_tensor_free(x); sb_tensor_free(o3); sb_tensor_free(o4); sb_tensor_free(o31);
    sb_tensor_free(i3); sb_tensor_free(ii); sb_tensor_free(i32); sb_tensor_free(xe);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_ssum();
    test_sizes();
    test_order_sensitive();
    test_multi_axis();
    test_max_conventions();
    test_mean_var_edges();
    test_backward();
    test_bad_inputs();
    return sb_test_finish();
}
