/* Tests for sort, topk, kthvalue, median and their backward (contract
 * section 18, "Sort, topk, kthvalue and median").
 *
 * The expected results come from a restatement written here over 3-D
 * tensors with explicit coordinates: each column is copied out and ordered
 * by a stable insertion sort whose comparison is written with float
 * compares (NaN above everything, -0 == +0), not with the integer keys the
 * library uses. Checked for the public ops at every ISA level and thread
 * count of this machine (tests/support/fastpath.h) and for the reference
 * kernel, for every dim (negative ones too), odd and empty shapes, columns
 * full of ties, NaNs with payloads, +-inf and +-0, strided views, and every
 * refusal with nothing written. Values are compared bit for bit, NaN
 * payloads included: selection copies bits. */
#include <inttypes.h>
#include <math.h>
#include "harness.h"
#include "ref/ref_sort.h"
#include "support/fastpath.h"

static sb_tensor *tnew(sb_dtype dt, int nd, const int64_t *shape) {
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, dt, nd, shape) != SB_OK) { fprintf(stderr, "%s\n", sb_last_error()); exit(2); }
    return t;
}
static float *F(const sb_tensor *t) { return t->data; }
static int64_t *L(const sb_tensor *t) { return t->data; }

/* ---- the contract restated ---- */

/* a strictly before b in the ascending order (position breaks ties later) */
static int less(float a, float b) {
    if (isnan(a)) return 0;
    if (isnan(b)) return 1;
    return a < b; /* -0 < +0 is false: a tie */
}

/* order[0..n-1] = positions of col sorted stably (descending: reversed
 * comparison, ties still in ascending position). */
static void order_column(const float *col, int64_t n, int descending, int64_t *order) {
    for (int64_t i = 0; i < n; i++) {
        int64_t j = i;
        while (j > 0 && (descending ? less(col[order[j - 1]], col[i]) : less(col[i], col[order[j - 1]]))) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
}

typedef enum { SORT, TOPK, KTH, MEDIAN } kind;
static const char *kind_name[] = {"sort", "topk", "kthvalue", "median"};

enum { MAXN = 64 };

static int64_t at3(const int64_t *s, const int64_t *q) { return (q[0] * s[1] + q[1]) * s[2] + q[2]; }

/* Expected values/indices laid out with `count` along dim (the keepdim
 * form for kthvalue and median). */
static void expect(kind k, int d, const int64_t *s, const float *x, int64_t kk, int desc,
                   int64_t count, float *v, int64_t *ix) {
    int64_t n = s[d], os[3] = {s[0], s[1], s[2]};
    os[d] = count;
    int o1 = d == 0 ? 1 : 0, o2 = d == 2 ? 1 : 2;
    for (int64_t u = 0; u < s[o1]; u++)
        for (int64_t w = 0; w < s[o2]; w++) {
            float col[MAXN];
            int64_t order[MAXN], q[3];
            q[o1] = u; q[o2] = w;
            for (int64_t i = 0; i < n; i++) { q[d] = i; col[i] = x[at3(s, q)]; }
            order_column(col, n, k == SORT || k == TOPK ? desc : 0, order);
            int64_t start = 0, nans = 0;
            if (k == KTH) start = kk - 1;
            if (k == MEDIAN) {
                for (int64_t i = 0; i < n; i++) nans += isnan(col[i]);
                start = nans ? n - nans : (n - 1) / 2;
            }
            for (int64_t r = 0; r < count; r++) {
                q[d] = r;
                v[at3(os, q)] = col[order[start + r]];
                ix[at3(os, q)] = order[start + r];
            }
        }
}

/* Ties on purpose: one value in three from a small set (NaNs with two
 * payloads, +-0, +-inf, small integers), the rest adversarial. */
static float tied(void) {
    static const uint32_t set[] = {0x7fc00000u, 0xffc00123u, 0x00000000u, 0x80000000u,
                                   0x7f800000u, 0xff800000u, 0x3f800000u, 0xbf800000u,
                                   0x40000000u, 0x3f800000u};
    uint32_t r = sb_test_rand32();
    if (r % 3 == 0) return sb_test_from_bits(set[(r / 3) % (sizeof set / sizeof set[0])]);
    return sb_test_adversarial(4.0f);
}

static sb_status call(kind k, const sb_tensor *x, int64_t kk, int dim, int flag, bool keepdim,
                      sb_tensor *v, sb_tensor *ix) {
    switch (k) {
    case SORT: return sb_sort(x, dim, flag, v, ix);
    case TOPK: return sb_topk(x, kk, dim, flag, v, ix);
    case KTH: return sb_kthvalue(x, kk, dim, keepdim, v, ix);
    default: return sb_median(x, dim, keepdim, v, ix);
    }
}

/* First position whose value bits or index differ, or -1. */
static int64_t first_diff(const sb_tensor *v, const sb_tensor *ix, const float *wv, const int64_t *wi,
                          int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (sb_test_bits(F(v)[i]) != sb_test_bits(wv[i]) || L(ix)[i] != wi[i]) return i;
    return -1;
}

static void test_configs(void) {
    static const int64_t shapes[][3] = {{5, 7, 9}, {1, 1, 1}, {3, 1, 37}, {2, 33, 1}, {0, 3, 4},
                                        {4, 0, 2}, {40, 50, 30}, {1, 2, 64}};
    sb_test_seed(21);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int64_t *s = shapes[si];
        int64_t n = s[0] * s[1] * s[2];
        sb_tensor *x = tnew(SB_F32, 3, s);
        for (int64_t i = 0; i < n; i++) F(x)[i] = tied();
        size_t cap = (size_t)(n ? n : 1);
        float *wv = malloc(cap * sizeof *wv);
        int64_t *wi = malloc(cap * sizeof *wi);
        for (int kk_ = 0; kk_ < 4; kk_++)
            for (int dim = -3; dim < 3; dim++) {
                kind k = (kind)kk_;
                int d = dim < 0 ? dim + 3 : dim;
                int64_t len = s[d];
                if ((k == KTH || k == MEDIAN) && len == 0) continue;
                /* the k values tried: topk 0, 1, len/2, len; kthvalue 1, middle, len */
                int64_t ks[3] = {k == TOPK ? 0 : 1, len / 2 + (k == KTH), len};
                for (int ki = 0; ki < 3; ki++)
                    for (int flag = 0; flag < 2; flag++) {
                        int64_t kk = ks[ki];
                        if (k == KTH && (kk < 1 || kk > len)) continue;
                        if ((k == SORT || k == MEDIAN) && ki > 0) continue;
                        int64_t count = k == SORT ? len : k == TOPK ? kk : 1;
                        int64_t os[3] = {s[0], s[1], s[2]};
                        os[d] = count;
                        int64_t on = os[0] * os[1] * os[2];
                        expect(k, d, s, F(x), kk, flag, count, wv, wi);
                        /* keepdim (flag) for kthvalue/median: both layouts
                         * hold the same elements in the same order */
                        int64_t rs[3];
                        int rn = 0;
                        for (int a = 0; a < 3; a++)
                            if (!((k == KTH || k == MEDIAN) && !flag && a == d)) rs[rn++] = os[a];
                        sb_tensor *v = tnew(SB_F32, rn, rs), *ix = tnew(SB_I64, rn, rs);
                        for (int cfg = 0; cfg < sb_test_config_count(); cfg++) {
                            sb_test_config_apply(cfg);
                            for (int64_t i = 0; i < on; i++) { F(v)[i] = -777.0f; L(ix)[i] = -5; }
                            CHECK_OK(call(k, x, kk, dim, flag, flag, v, ix));
                            int64_t w = first_diff(v, ix, wv, wi, on);
                            CHECK(w < 0, "%s dim %d k %" PRId64 " flag %d shape %" PRId64 "x%" PRId64 "x%" PRId64
                                  " at %s: element %" PRId64 " got %a (%" PRId64 ") want %a (%" PRId64 ")",
                                  kind_name[k], dim, kk, flag, s[0], s[1], s[2], sb_test_config_name(cfg), w,
                                  w < 0 ? 0.0 : F(v)[w], w < 0 ? 0 : L(ix)[w], w < 0 ? 0.0 : wv[w],
                                  w < 0 ? 0 : wi[w]);
                        }
                        sb_test_config_reset();
                        /* the reference kernel states the same */
                        if (on > 0 && n <= 4096) {
                            sb_ref_sort_geom g = {.ndim = 3, .dim = d, .count = count,
                                                  .descending = (k == SORT || k == TOPK) && flag,
                                                  .median = k == MEDIAN, .start = k == KTH ? kk - 1 : 0};
                            for (int a = 0; a < 3; a++) {
                                g.shape[a] = s[a];
                                g.x_stride[a] = x->strides[a];
                                g.v_stride[a] = g.i_stride[a] = a == 0 ? os[1] * os[2] : a == 1 ? os[2] : 1;
                            }
                            sb_ref_sort(&g, F(x), F(v), L(ix));
                            CHECK(first_diff(v, ix, wv, wi, on) < 0, "sb_ref_sort %s dim %d", kind_name[k], dim);
                        }
                        sb_tensor_free(v); sb_tensor_free(ix);
                    }
            }
        free(wv); free(wi);
        sb_tensor_free(x);
    }
}

/* The backward at every configuration: dx = +0, dy's bits at the indices. */
static void test_backward(void) {
    static const int64_t shapes[][3] = {{5, 7, 9}, {40, 50, 30}, {3, 0, 2}};
    sb_test_seed(5);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int64_t *s = shapes[si];
        int64_t n = s[0] * s[1] * s[2];
        sb_tensor *x = tnew(SB_F32, 3, s), *dx = tnew(SB_F32, 3, s);
        for (int64_t i = 0; i < n; i++) F(x)[i] = tied();
        for (int d = 0; d < 3; d++) {
            int64_t ks = s[d] > 3 ? 3 : s[d], os[3] = {s[0], s[1], s[2]};
            os[d] = ks;
            int64_t on = os[0] * os[1] * os[2];
            sb_tensor *v = tnew(SB_F32, 3, os), *ix = tnew(SB_I64, 3, os), *dy = tnew(SB_F32, 3, os);
            CHECK_OK(sb_topk(x, ks, d, true, v, ix));
            for (int64_t i = 0; i < on; i++) F(dy)[i] = tied();
            float *want = calloc((size_t)(n ? n : 1), sizeof *want);
            for (int64_t p = 0; p < on; p++) {
                int64_t q[3] = {p / (os[1] * os[2]), p / os[2] % os[1], p % os[2]};
                q[d] = L(ix)[p];
                want[at3(s, q)] = F(dy)[p];
            }
            for (int cfg = 0; cfg < sb_test_config_count(); cfg++) {
                sb_test_config_apply(cfg);
                for (int64_t i = 0; i < n; i++) F(dx)[i] = -777.0f;
                CHECK_OK(sb_sort_backward(dy, d, ix, dx));
                int64_t bad = -1;
                for (int64_t i = 0; i < n && bad < 0; i++)
                    if (sb_test_bits(F(dx)[i]) != sb_test_bits(want[i])) bad = i;
                CHECK(bad < 0, "sort_backward dim %d shape %" PRId64 "x%" PRId64 "x%" PRId64 " at %s: element %" PRId64,
                      d, s[0], s[1], s[2], sb_test_config_name(cfg), bad);
            }
            sb_test_config_reset();
            free(want);
            sb_tensor_free(v); sb_tensor_free(ix); sb_tensor_free(dy);
        }
        sb_tensor_free(x); sb_tensor_free(dx);
    }
}

/* Hand-made columns where the tie rule, NaN and -0 are visible. */
static void test_rules(void) {
    int64_t s[1] = {7};
    sb_tensor *x = tnew(SB_F32, 1, s), *v = tnew(SB_F32, 1, s), *ix = tnew(SB_I64, 1, s);
    const float qnan = sb_test_from_bits(0x7fc00001u), nnan = sb_test_from_bits(0xffc00002u);
    float xv[7] = {1.0f, qnan, -0.0f, 0.0f, nnan, 1.0f, -INFINITY};
    memcpy(F(x), xv, sizeof xv);
    CHECK_OK(sb_sort(x, 0, false, v, ix));
    /* ascending: -inf, -0 (pos 2), +0 (pos 3), 1 (0), 1 (5), NaN (1), NaN (4) */
    const int64_t asc[7] = {6, 2, 3, 0, 5, 1, 4};
    for (int i = 0; i < 7; i++) {
        CHECK(L(ix)[i] == asc[i], "ascending rank %d: index %" PRId64 " want %" PRId64, i, L(ix)[i], asc[i]);
        CHECK_BITS(F(v)[i], xv[asc[i]], "ascending rank %d value bits", i);
    }
    CHECK_OK(sb_sort(x, 0, true, v, ix));
    /* descending: NaN (1), NaN (4), 1 (0), 1 (5), -0 (2), +0 (3), -inf */
    const int64_t desc[7] = {1, 4, 0, 5, 2, 3, 6};
    for (int i = 0; i < 7; i++) {
        CHECK(L(ix)[i] == desc[i], "descending rank %d: index %" PRId64 " want %" PRId64, i, L(ix)[i], desc[i]);
        CHECK_BITS(F(v)[i], xv[desc[i]], "descending rank %d value bits", i);
    }
    /* median: a NaN present gives the first NaN by position */
    sb_tensor *v0 = tnew(SB_F32, 0, NULL), *i0 = tnew(SB_I64, 0, NULL);
    CHECK_OK(sb_median(x, 0, false, v0, i0));
    CHECK(L(i0)[0] == 1, "median with NaN: index %" PRId64, L(i0)[0]);
    CHECK_BITS(F(v0)[0], qnan, "median with NaN: the NaN's bits");
    /* without NaN: the lower middle of an even count */
    float ev[7] = {4.0f, 1.0f, 3.0f, 2.0f, 0, 0, 0};
    int64_t s4[1] = {4};
    sb_tensor *x4 = tnew(SB_F32, 1, s4);
    memcpy(F(x4), ev, 4 * sizeof(float));
    CHECK_OK(sb_median(x4, -1, false, v0, i0));
    CHECK(F(v0)[0] == 2.0f && L(i0)[0] == 3, "median of 4, 1, 3, 2: %g at %" PRId64, F(v0)[0], L(i0)[0]);
    CHECK_OK(sb_kthvalue(x4, 4, 0, false, v0, i0));
    CHECK(F(v0)[0] == 4.0f && L(i0)[0] == 0, "kthvalue 4 of 4, 1, 3, 2");
    /* 0-dim input: one column of one element */
    sb_tensor *s0 = tnew(SB_F32, 0, NULL), *d0 = tnew(SB_F32, 0, NULL), *g0 = tnew(SB_F32, 0, NULL);
    F(s0)[0] = -0.0f;
    CHECK_OK(sb_sort(s0, -1, true, v0, i0));
    CHECK_BITS(F(v0)[0], -0.0f, "0-dim sort");
    CHECK(L(i0)[0] == 0, "0-dim sort index");
    F(d0)[0] = -0.0f;
    CHECK_OK(sb_sort_backward(d0, 0, i0, g0));
    CHECK_BITS(F(g0)[0], -0.0f, "the backward copies -0 (a scatter, not an add)");
    sb_tensor_free(x); sb_tensor_free(v); sb_tensor_free(ix); sb_tensor_free(v0); sb_tensor_free(i0);
    sb_tensor_free(x4); sb_tensor_free(s0); sb_tensor_free(d0); sb_tensor_free(g0);
}

static void test_views(void) {
    int64_t s[2] = {6, 5}, st[2] = {5, 6};
    sb_tensor *x = tnew(SB_F32, 2, s), *xt = NULL, *xc = tnew(SB_F32, 2, st);
    sb_tensor *va = tnew(SB_F32, 2, st), *vb = tnew(SB_F32, 2, st);
    sb_tensor *ib = tnew(SB_I64, 2, st);
    sb_tensor *vt = NULL, *it = NULL;
    sb_test_seed(9);
    for (int i = 0; i < 30; i++) F(x)[i] = tied();
    CHECK_OK(sb_tensor_transpose(&xt, x, 0, 1));
    CHECK_OK(sb_tensor_copy(xc, xt));
    /* outputs through a transposed view too */
    sb_tensor *vs = tnew(SB_F32, 2, s), *is = tnew(SB_I64, 2, s);
    CHECK_OK(sb_tensor_transpose(&vt, vs, 0, 1));
    CHECK_OK(sb_tensor_transpose(&it, is, 0, 1));
    for (int dim = 0; dim < 2; dim++) {
        CHECK_OK(sb_sort(xt, dim, dim == 1, vt, it));
        CHECK_OK(sb_tensor_copy(va, vt));
        CHECK_OK(sb_sort(xc, dim, dim == 1, vb, ib));
        for (int r = 0; r < 5; r++)
            for (int c = 0; c < 6; c++)
                CHECK(L(is)[c * 5 + r] == L(ib)[r * 6 + c], "sort indices through views, dim %d", dim);
        CHECK(memcmp(F(va), F(vb), 30 * sizeof(float)) == 0, "sort values through views, dim %d", dim);
    }
    sb_tensor_free(x); sb_tensor_free(xt); sb_tensor_free(xc); sb_tensor_free(va); sb_tensor_free(vb);
    sb_tensor_free(ib); sb_tensor_free(vt); sb_tensor_free(it); sb_tensor_free(vs);
    sb_tensor_free(is);
}

/* Every refusal leaves the outputs as they were. */
static void test_refusals(void) {
    int64_t s[2] = {2, 3}, s2[2] = {3, 2}, r[1] = {2}, k2[2] = {2, 2}, e[2] = {2, 0};
    sb_tensor *x = tnew(SB_F32, 2, s), *v = tnew(SB_F32, 2, s), *ix = tnew(SB_I64, 2, s);
    sb_tensor *w = tnew(SB_F32, 2, s2), *iw = tnew(SB_I64, 2, s2), *vr = tnew(SB_F32, 1, r);
    sb_tensor *ir = tnew(SB_I64, 1, r), *xe = tnew(SB_F32, 2, e), *v2 = tnew(SB_F32, 2, k2);
    sb_tensor *i2 = tnew(SB_I64, 2, k2), *dx = tnew(SB_F32, 2, s);
    for (int i = 0; i < 6; i++) { F(x)[i] = (float)i; F(v)[i] = 42.0f; L(ix)[i] = 42; F(dx)[i] = 42.0f; }
    CHECK_ERROR(sb_sort(x, 2, false, v, ix), SB_ERR_ARG, "dim = 2 is out of range");
    CHECK_ERROR(sb_sort(x, 0, false, w, ix), SB_ERR_SHAPE, "values");
    CHECK_ERROR(sb_sort(x, 0, false, v, iw), SB_ERR_SHAPE, "indices");
    CHECK_ERROR(sb_sort(x, 0, false, ix, ix), SB_ERR_DTYPE, "values");
    CHECK_ERROR(sb_sort(x, 0, false, v, v), SB_ERR_DTYPE, "indices");
    CHECK_ERROR(sb_sort(x, 0, false, x, ix), SB_ERR_ARG, "values overlaps x");
    CHECK_ERROR(sb_sort(NULL, 0, false, v, ix), SB_ERR_NULL, "x");
    CHECK_ERROR(sb_topk(x, 4, 1, true, v, ix), SB_ERR_ARG, "k = 4 is outside [0, 3]");
    CHECK_ERROR(sb_topk(x, -1, 1, true, v, ix), SB_ERR_ARG, "k = -1");
    CHECK_ERROR(sb_topk(x, 2, 1, true, v, ix), SB_ERR_SHAPE, "values");
    CHECK_ERROR(sb_kthvalue(x, 0, 1, false, vr, ir), SB_ERR_ARG, "k = 0 is outside [1, 3]");
    CHECK_ERROR(sb_kthvalue(x, 4, 1, false, vr, ir), SB_ERR_ARG, "k = 4");
    CHECK_ERROR(sb_kthvalue(x, 1, 1, true, vr, ir), SB_ERR_SHAPE, "values");
    CHECK_ERROR(sb_median(xe, 1, false, vr, ir), SB_ERR_SHAPE, "size 0 along dim 1");
    CHECK_ERROR(sb_median(x, -3, false, vr, ir), SB_ERR_ARG, "dim = -3");
    /* backward: an index outside [0, 3) is refused before dx is written */
    for (int i = 0; i < 4; i++) { F(v2)[i] = 1.0f; L(i2)[i] = i % 3; }
    L(i2)[3] = 3;
    CHECK_ERROR(sb_sort_backward(v2, 1, i2, dx), SB_ERR_RANGE, "indices element 3 is 3");
    L(i2)[3] = -1;
    CHECK_ERROR(sb_sort_backward(v2, 1, i2, dx), SB_ERR_RANGE, "outside [0, 3)");
    L(i2)[3] = 0;
    CHECK_ERROR(sb_sort_backward(v2, 0, i2, dx), SB_ERR_SHAPE, "dx has size 3 along dimension 1");
    CHECK_ERROR(sb_sort_backward(vr, 1, ir, dx), SB_ERR_SHAPE, "dimensions");
    CHECK_ERROR(sb_sort_backward(v2, 1, v2, dx), SB_ERR_DTYPE, "indices");
    CHECK_ERROR(sb_sort_backward(x, 1, ix, x), SB_ERR_ARG, "dx overlaps dy");
    for (int i = 0; i < 6; i++) {
        CHECK_BITS(F(v)[i], 42.0f, "values written by a refused call, element %d", i);
        CHECK(L(ix)[i] == 42, "indices written by a refused call, element %d", i);
        CHECK_BITS(F(dx)[i], 42.0f, "dx written by a refused call, element %d", i);
    }
    sb_tensor_free(x); sb_tensor_free(v); sb_tensor_free(ix); sb_tensor_free(w); sb_tensor_free(iw);
    sb_tensor_free(vr); sb_tensor_free(ir); sb_tensor_free(xe); sb_tensor_free(v2); sb_tensor_free(i2);
    sb_tensor_free(dx);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_rules();
    test_configs();
    test_backward();
    test_views();
    test_refusals();
    return sb_test_finish();
}
