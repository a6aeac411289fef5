/* Tests of interpolation (nearest, nearest-exact, linear over 1 to 3 axes,
 * cubic), forward and backward.
 *
 * The oracle restates the contract as PyTorch's CPU code is written
 * (area_pixel_compute_scale, area_pixel_compute_source_index,
 * guard_index_and_lambda, the cubic convolution coefficients, floorf from
 * libm), nests the forward with one explicit loop per rank, and computes
 * the backward by scattering every (output, tap) term into per-input lists
 * in output order and summing each list with the canonical sum restated
 * from its definition (tests/support/oracle.c). The public op runs in every
 * configuration of tests/support/fastpath.h (ISA level x thread count) and
 * is compared bit for bit; float64 checks bound the rounding, and
 * <dy, y> = <dx, x> (the backward is the forward's adjoint) checks the
 * gradient. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "harness.h"
#include "support/fastpath.h"
#include "support/oracle.h"

static float *F(const sb_tensor *t) { return (float *)t->data; }

typedef struct {
    const char *name;
    int nd;
    int64_t n, c, in[3], out[3];
    sb_interp_mode mode;
    bool align;
    double scales[3];
} interp_case;

/* ---- the oracle's taps: PyTorch's functions, one per name ---- */

static float o_compute_scale(int64_t in, int64_t out, bool align, double scale) {
    if (align) return out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f;
    return scale > 0.0 ? (float)(1.0 / scale) : (float)in / (float)out;
}

static float o_source_index(float scale, int64_t dst, bool align, bool cubic) {
    if (align) return scale * (float)dst;
    float src = scale * ((float)dst + 0.5f) - 0.5f;
    return (!cubic && src < 0.0f) ? 0.0f : src;
}

static float o_cc1(float x, float A) { return ((A + 2) * x - (A + 3)) * x * x + 1; }
static float o_cc2(float x, float A) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; }

/* taps of output o: returns their count */
static int o_taps(const interp_case *k, int a, int64_t o, int64_t idx[4], float w[4]) {
    int64_t in = k->in[a], out = k->out[a];
    bool nearest = k->mode == SB_INTERP_NEAREST || k->mode == SB_INTERP_NEAREST_EXACT;
    float scale = o_compute_scale(in, out, nearest ? false : k->align, k->scales[a]);
    if (k->mode == SB_INTERP_NEAREST) {
        int64_t s = (int64_t)floorf((float)o * scale);
        idx[0] = s < in - 1 ? s : in - 1;
        w[0] = 1.0f;
        return 1;
    }
    if (k->mode == SB_INTERP_NEAREST_EXACT) {
        int64_t s = (int64_t)floorf((float)((o + 0.5) * scale));
        idx[0] = s < in - 1 ? s : in - 1;
        w[0] = 1.0f;
        return 1;
    }
    bool cubic = k->mode == SB_INTERP_CUBIC;
    if (!cubic && in == out) {
        idx[0] = idx[1] = o;
        w[0] = 1.0f, w[1] = 0.0f;
        return 2;
    }
    float real = o_source_index(scale, o, k->align, cubic);
    int64_t i0 = (int64_t)floorf(real);
    if (i0 > in - 1) i0 = in - 1;
    float lambda = fminf(fmaxf(real - (float)i0, 0.0f), 1.0f);
    if (!cubic) {
        idx[0] = i0, idx[1] = i0 + (i0 < in - 1 ? 1 : 0);
        w[1] = lambda, w[0] = 1.0f - lambda;
        return 2;
    }
    const float A = -0.75f;
    w[0] = o_cc2(lambda + 1.0f, A);
    w[1] = o_cc1(lambda, A);
    w[2] = o_cc1(1.0f - lambda, A);
    w[3] = o_cc2((1.0f - lambda) + 1.0f, A);
    for (int j = 0; j < 4; j++) {
        int64_t v = i0 - 1 + j;
        idx[j] = v < 0 ? 0 : v > in - 1 ? in - 1 : v;
    }
    return 4;
}

/* per-axis tap tables of the oracle */
typedef struct {
    int taps;
    int64_t (*idx)[4];
    float (*w)[4];
} o_axis;

static void o_axis_build(const interp_case *k, int a, o_axis *t) {
    t->idx = malloc((size_t)k->out[a] * sizeof *t->idx);
    t->w = malloc((size_t)k->out[a] * sizeof *t->w);
    for (int64_t o = 0; o < k->out[a]; o++) t->taps = o_taps(k, a, o, t->idx[o], t->w[o]);
}

/* sum_j v_j * w_j left to right, the first product as it is */
#define NEST(acc, count, term)                                                    \
    do {                                                                          \
        for (int j_ = 0; j_ < (count); j_++) {                                    \
            float p_ = (term);                                                    \
            acc = j_ == 0 ? p_ : acc + p_;                                        \
        }                                                                         \
    } while (0)

static sb_tensor *new_tensor(int nd, int64_t n, int64_t c, const int64_t *sp) {
    int64_t shape[5] = {n, c, sp[0], sp[1], sp[2]};
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, SB_F32, nd + 2, shape) != SB_OK) exit(2);
    return t;
}

static int64_t count3(const int64_t *s, int nd) {
    int64_t v = 1;
    for (int a = 0; a < nd; a++) v *= s[a];
    return v;
}

static void check_case(const interp_case *k, bool specials) {
    int nd = k->nd;
    int64_t P = k->n * k->c, NI = count3(k->in, nd), NO = count3(k->out, nd);
    sb_tensor *x = new_tensor(nd, k->n, k->c, k->in), *dx = new_tensor(nd, k->n, k->c, k->in);
    sb_tensor *y = new_tensor(nd, k->n, k->c, k->out), *dy = new_tensor(nd, k->n, k->c, k->out);
    for (int64_t i = 0; i < P * NI; i++) F(x)[i] = specials ? sb_test_adversarial(3.0f) : oracle_rand_float();
    for (int64_t i = 0; i < P * NO; i++) F(dy)[i] = specials ? sb_test_adversarial(3.0f) : oracle_rand_float();
    o_axis ax[3];
    for (int a = 0; a < nd; a++) o_axis_build(k, a, &ax[a]);
    int64_t I1 = nd > 1 ? k->in[1] : 1, I2 = nd > 2 ? k->in[2] : 1;
    int64_t O1 = nd > 1 ? k->out[1] : 1, O2 = nd > 2 ? k->out[2] : 1;
    bool nearest = k->mode == SB_INTERP_NEAREST || k->mode == SB_INTERP_NEAREST_EXACT;

    /* oracle forward, one loop nest per rank; float64 of the same terms */
    float *want_y = malloc((size_t)(P * NO + 1) * 4);
    double *y64 = malloc((size_t)(P * NO + 1) * 8);
    /* the backward's lists: every term in (output, tap) row-major order */
    int64_t *len = calloc((size_t)(P * NI + 1), 8);
    float **item = calloc((size_t)(P * NI + 1), sizeof(float *));
#define PUSH(at, v)                                                                   \
    do {                                                                              \
        item[at] = realloc(item[at], (size_t)(len[at] + 1) * 4);                      \
        item[at][len[at]++] = (v);                                                    \
    } while (0)
    for (int64_t q = 0; q < P; q++) {
        const float *xp = F(x) + q * NI;
        for (int64_t o0 = 0; o0 < k->out[0]; o0++)
            for (int64_t o1 = 0; o1 < O1; o1++)
                for (int64_t o2 = 0; o2 < O2; o2++) {
                    int64_t at = ((q * k->out[0] + o0) * O1 + o1) * O2 + o2;
                    const int64_t *i0 = ax[0].idx[o0];
                    const float *w0 = ax[0].w[o0];
                    float v = 0.0f;
                    double v64 = 0.0;
                    float g = F(dy)[at];
                    if (nd == 1) {
                        NEST(v, ax[0].taps, xp[i0[j_]] * w0[j_]);
                        for (int a = 0; a < ax[0].taps; a++) {
                            v64 += (double)xp[i0[a]] * w0[a];
                            PUSH(q * NI + i0[a], nearest ? g : g * w0[a]);
                        }
                    } else if (nd == 2) {
                        const int64_t *i1 = ax[1].idx[o1];
                        const float *w1 = ax[1].w[o1];
                        for (int a = 0; a < ax[0].taps; a++) {
                            float row = 0.0f;
                            NEST(row, ax[1].taps, xp[i0[a] * I1 + i1[j_]] * w1[j_]);
                            float p = row * w0[a];
                            v = a == 0 ? p : v + p;
                            for (int b = 0; b < ax[1].taps; b++) {
                                v64 += (double)xp[i0[a] * I1 + i1[b]] * w0[a] * w1[b];
                                PUSH(q * NI + i0[a] * I1 + i1[b], nearest ? g : g * (w0[a] * w1[b]));
                            }
                        }
                    } else {
                        const int64_t *i1 = ax[1].idx[o1], *i2 = ax[2].idx[o2];
                        const float *w1 = ax[1].w[o1], *w2 = ax[2].w[o2];
                        for (int a = 0; a < ax[0].taps; a++) {
                            float plane = 0.0f;
                            for (int b = 0; b < ax[1].taps; b++) {
                                float row = 0.0f;
                                NEST(row, ax[2].taps, xp[(i0[a] * I1 + i1[b]) * I2 + i2[j_]] * w2[j_]);
                                float p = row * w1[b];
                                plane = b == 0 ? p : plane + p;
                                for (int c = 0; c < ax[2].taps; c++) {
                                    int64_t xi = (i0[a] * I1 + i1[b]) * I2 + i2[c];
                                    v64 += (double)xp[xi] * w0[a] * w1[b] * w2[c];
                                    PUSH(q * NI + xi,
                                         nearest ? g : g * ((w0[a] * w1[b]) * w2[c]));
                                }
                            }
                            float p = plane * w0[a];
                            v = a == 0 ? p : v + p;
                        }
                    }
                    if (nearest) v = xp[(i0[0] * I1 + (nd > 1 ? ax[1].idx[o1][0] : 0)) * I2 +
                                        (nd > 2 ? ax[2].idx[o2][0] : 0)];
                    want_y[at] = v;
                    y64[at] = v64;
                }
    }
#undef PUSH
    float *want_dx = malloc((size_t)(P * NI + 1) * 4);
    long far = 0;
    for (int64_t i = 0; i < P * NI; i++) {
        want_dx[i] = oracle_canonical_sum(item[i], len[i]);
        double s64 = 0, mag = 0;
        for (int64_t j = 0; j < len[i]; j++) s64 += item[i][j], mag += fabs(item[i][j]);
        if (!specials) far += fabs(want_dx[i] - s64) > 16 * FLT_EPSILON * mag;
    }
    if (!specials) {
        for (int64_t i = 0; i < P * NO; i++)
            far += fabs(want_y[i] - y64[i]) > 16 * FLT_EPSILON * (fabs(y64[i]) + 1e-30) + 64 * FLT_EPSILON;
        /* the adjoint identity in float64: <dy, y> = <dx, x> */
        double lhs = 0, rhs = 0, mag = 0;
        for (int64_t i = 0; i < P * NO; i++) lhs += (double)F(dy)[i] * want_y[i], mag += fabs((double)F(dy)[i] * want_y[i]);
        for (int64_t i = 0; i < P * NI; i++) rhs += (double)want_dx[i] * F(x)[i];
        CHECK(fabs(lhs - rhs) <= 1e-5 * (mag + 1e-30), "%s: <dy, y> = %.9g but <dx, x> = %.9g",
              k->name, lhs, rhs);
    }
    CHECK(far == 0, "%s: %ld results far from float64", k->name, far);

    sb_interpolate_params p = {k->mode, k->align, {0, 0, 0}};
    for (int a = 0; a < nd; a++) p.scales[a] = k->scales[a];
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        const char *cn = sb_test_config_name(c);
        sb_tensor_fill(y, 1234.5f);
        sb_tensor_fill(dx, 1234.5f);
        CHECK_OK(sb_interpolate_forward(x, &p, y));
        CHECK_OK(sb_interpolate_backward(dy, &p, dx));
        long by = 0, bdx = 0;
        for (int64_t i = 0; i < P * NO; i++) by += !oracle_same(F(y)[i], want_y[i]);
        for (int64_t i = 0; i < P * NI; i++) bdx += !oracle_same(F(dx)[i], want_dx[i]);
        CHECK(by == 0 && bdx == 0, "interpolate %s%s [%s]: %ld forward, %ld backward differ",
              k->name, specials ? " (specials)" : "", cn, by, bdx);
    }
    sb_test_config_reset();
    for (int64_t i = 0; i < P * NI; i++) free(item[i]);
    for (int a = 0; a < nd; a++) free(ax[a].idx), free(ax[a].w);
    free(item), free(len), free(want_y), free(y64), free(want_dx);
    sb_tensor *list[] = {x, dx, y, dy};
    for (size_t i = 0; i < 4; i++) sb_tensor_free(list[i]);
}

#define NE SB_INTERP_NEAREST
#define NX SB_INTERP_NEAREST_EXACT
#define LI SB_INTERP_LINEAR
#define CU SB_INTERP_CUBIC

static void test_interp_cases(void) {
    const interp_case cases[] = {
        {"nearest 1-D up", 1, 2, 3, {5}, {13}, NE, false, {0}},
        {"nearest 2-D down, scales", 2, 2, 2, {9, 7}, {4, 3}, NE, false, {0.5, 0.45}},
        {"nearest 2-D x2 (shift)", 2, 1, 3, {4, 5}, {8, 10}, NE, false, {0}},
        {"nearest 3-D odd", 3, 1, 2, {3, 4, 5}, {7, 5, 11}, NE, false, {0}},
        {"nearest-exact 1-D scale 2.3", 1, 3, 2, {6}, {13}, NX, false, {2.3}},
        {"nearest-exact 2-D down", 2, 2, 3, {11, 7}, {4, 5}, NX, false, {0}},
        {"nearest-exact 3-D", 3, 1, 2, {4, 3, 5}, {9, 6, 2}, NX, false, {0}},
        {"linear 1-D up", 1, 2, 3, {5}, {9}, LI, false, {0}},
        {"linear 1-D align", 1, 2, 3, {4}, {11}, LI, true, {0}},
        {"linear 1-D down scale 0.5", 1, 2, 2, {9}, {4}, LI, false, {0.5}},
        {"linear 1-D same size (copy case)", 1, 1, 3, {7}, {7}, LI, false, {1.1}},
        {"linear 1-D one input", 1, 1, 2, {1}, {6}, LI, false, {0}},
        {"linear 1-D one output align", 1, 1, 2, {6}, {1}, LI, true, {0}},
        {"bilinear up", 2, 2, 3, {5, 4}, {9, 11}, LI, false, {0}},
        {"bilinear align", 2, 2, 2, {6, 5}, {13, 7}, LI, true, {0}},
        {"bilinear down scale", 2, 1, 4, {13, 9}, {5, 4}, LI, false, {0.4, 0.5}},
        {"bilinear one axis same", 2, 2, 2, {6, 5}, {6, 12}, LI, false, {0}},
        {"trilinear up", 3, 1, 2, {3, 4, 5}, {7, 6, 9}, LI, false, {0}},
        {"trilinear align scales", 3, 2, 1, {4, 3, 5}, {9, 7, 4}, LI, true, {2.3, 2.4, 0.8}},
        {"bicubic up", 2, 2, 3, {5, 6}, {11, 9}, CU, false, {0}},
        {"bicubic align", 2, 1, 3, {6, 5}, {13, 12}, CU, true, {0}},
        {"bicubic down scale", 2, 2, 2, {11, 9}, {5, 4}, CU, false, {0.5, 0.5}},
        {"bicubic 1x1 input", 2, 1, 2, {1, 1}, {4, 3}, CU, false, {0}},
        {"bicubic same size", 2, 1, 2, {6, 5}, {6, 5}, CU, false, {0}},
        {"cubic 1-D", 1, 2, 2, {7}, {17}, CU, false, {2.5}},
        {"cubic 3-D", 3, 1, 1, {3, 4, 4}, {5, 7, 3}, CU, true, {0}},
        {"empty batch", 2, 0, 3, {4, 4}, {8, 8}, LI, false, {0}},
        {"many planes", 2, 7, 33, {6, 5}, {9, 8}, LI, false, {0}},
        /* each input read by more than one block (8192) of terms */
        {"linear 2 -> 20000", 1, 1, 2, {2}, {20000}, LI, false, {0}},
        {"nearest 1x1 -> 97x131", 2, 1, 1, {1, 1}, {97, 131}, NE, false, {0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_case(&cases[i], false);
        check_case(&cases[i], true);
    }
}

static void test_interp_specials(void) {
    /* x2 nearest upsampling: each input gathers 4 gradients; their canonical
     * sum ((a + c) + (b + d)) differs from a sequential one on this data */
    sb_interpolate_params p = {NE, false, {0, 0, 0}};
    int64_t s1[4] = {1, 1, 1, 1}, s2[4] = {1, 1, 2, 2};
    sb_tensor *dx = NULL, *dy = NULL;
    CHECK_OK(sb_tensor_new(&dx, SB_F32, 4, s1));
    CHECK_OK(sb_tensor_new(&dy, SB_F32, 4, s2));
    F(dy)[0] = 1e8f, F(dy)[1] = 1.0f, F(dy)[2] = -1e8f, F(dy)[3] = 1.0f;
    CHECK_OK(sb_interpolate_backward(dy, &p, dx));
    float seq = ((F(dy)[0] + F(dy)[1]) + F(dy)[2]) + F(dy)[3];
    CHECK_BITS(F(dx)[0], oracle_canonical_sum(F(dy), 4), "nearest x2: canonical sum");
    CHECK(F(dx)[0] != seq, "the example is order-sensitive (sequential %g, canonical %g)", seq,
          F(dx)[0]);
    /* a NaN's payload is copied by nearest; linear's copy case turns an
     * infinity into NaN (inf * 0), as PyTorch's x*1 + x*0 does */
    int64_t a[3] = {1, 1, 3};
    sb_tensor *x = NULL, *y = NULL;
    CHECK_OK(sb_tensor_new(&x, SB_F32, 3, a));
    CHECK_OK(sb_tensor_new(&y, SB_F32, 3, a));
    F(x)[0] = sb_test_from_bits(0x7fc01234u), F(x)[1] = INFINITY, F(x)[2] = -0.0f;
    CHECK_OK(sb_interpolate_forward(x, &p, y));
    CHECK(sb_test_bits(F(y)[0]) == 0x7fc01234u, "nearest copies a NaN's payload");
    CHECK_BITS(F(y)[2], -0.0f, "nearest copies -0");
    sb_interpolate_params l = {LI, false, {0, 0, 0}};
    CHECK_OK(sb_interpolate_forward(x, &l, y));
    CHECK(isnan(F(y)[1]), "linear copy case: inf*1 + inf*0 is NaN, got %g", F(y)[1]);
    CHECK_BITS(F(y)[2], -0.0f, "linear copy case: -0*1 + -0*0 is -0");
    sb_tensor *list[] = {dx, dy, x, y};
    for (size_t i = 0; i < 4; i++) sb_tensor_free(list[i]);
}

static void test_interp_errors(void) {
    sb_interpolate_params p = {LI, false, {0, 0, 0}};
    sb_tensor *x = oracle_tensor(SB_F32, 4, 2, 3, 4, 4), *y = oracle_tensor(SB_F32, 4, 2, 3, 6, 7);
    sb_tensor *yc = oracle_tensor(SB_F32, 4, 2, 4, 6, 7), *xi = oracle_tensor(SB_I32, 4, 2, 3, 4, 4);
    sb_tensor *y3 = oracle_tensor(SB_F32, 3, 2, 3, 6, 0), *x2 = oracle_tensor(SB_F32, 2, 2, 3, 0, 0);
    sb_tensor *x0 = oracle_tensor(SB_F32, 4, 2, 3, 0, 4), *y0 = oracle_tensor(SB_F32, 4, 2, 3, 6, 0);
    CHECK_OK(sb_interpolate_forward(x, &p, y));
    CHECK_OK(sb_interpolate_backward(y, &p, x));
    CHECK_ERROR(sb_interpolate_forward(NULL, &p, y), SB_ERR_NULL, "x is NULL");
    CHECK_ERROR(sb_interpolate_forward(x, NULL, y), SB_ERR_NULL, "params is NULL");
    CHECK_ERROR(sb_interpolate_forward(x, &p, NULL), SB_ERR_NULL, "y is NULL");
    CHECK_ERROR(sb_interpolate_forward(x, &p, yc), SB_ERR_SHAPE, "differ in N or C");
    CHECK_ERROR(sb_interpolate_forward(x, &p, y3), SB_ERR_SHAPE, "y must have 4 dimensions");
    CHECK_ERROR(sb_interpolate_forward(x2, &p, x2), SB_ERR_SHAPE, "x must have 3 to 5 dimensions");
    CHECK_ERROR(sb_interpolate_forward(xi, &p, y), SB_ERR_DTYPE, "x has dtype int32");
    CHECK_ERROR(sb_interpolate_backward(yc, &p, x), SB_ERR_SHAPE, "differ in N or C");
    CHECK_ERROR(sb_interpolate_forward(x0, &p, y), SB_ERR_SHAPE, "first spatial size 0");
    CHECK_ERROR(sb_interpolate_forward(x, &p, y0), SB_ERR_SHAPE, "second spatial size 4 and y's 0");
    sb_interpolate_params q = p;
    q.mode = (sb_interp_mode)4;
    CHECK_ERROR(sb_interpolate_forward(x, &q, y), SB_ERR_ARG, "params->mode = 4");
    q = p, q.mode = NE, q.align_corners = true;
    CHECK_ERROR(sb_interpolate_forward(x, &q, y), SB_ERR_ARG, "align_corners");
    q = p, q.scales[1] = -2.0;
    CHECK_ERROR(sb_interpolate_forward(x, &q, y), SB_ERR_ARG, "params->scales[1] = -2");
    q = p, q.scales[0] = NAN;
    CHECK_ERROR(sb_interpolate_forward(x, &q, y), SB_ERR_ARG, "params->scales[0]");
    q = p, q.scales[0] = 1e-300;
    CHECK_ERROR(sb_interpolate_forward(x, &q, y), SB_ERR_ARG, "reciprocal is a finite float");
    q = p, q.scales[2] = 2.0;
    CHECK_ERROR(sb_interpolate_forward(x, &q, y), SB_ERR_ARG, "params->scales[2] = 2, but x has 2");
    /* an output on the input's memory */
    sb_tensor *ya = NULL, *xa = NULL;
    int64_t ys[4] = {2, 3, 6, 7}, xs[4] = {2, 3, 4, 4};
    sb_tensor *big = oracle_tensor(SB_F32, 1, 2 * 3 * 6 * 7 + 8, 0, 0, 0);
    CHECK_OK(sb_tensor_wrap(&ya, F(big), SB_F32, 4, ys, NULL));
    CHECK_OK(sb_tensor_wrap(&xa, F(big) + 8, SB_F32, 4, xs, NULL));
    CHECK_ERROR(sb_interpolate_forward(xa, &p, ya), SB_ERR_ARG, "y shares memory with x");
    F(y)[0] = 42.0f;
    q = p, q.scales[0] = -1.0;
    CHECK_ERROR(sb_interpolate_forward(x, &q, y), SB_ERR_ARG, "params->scales[0]");
    CHECK_BITS(F(y)[0], 42.0f, "y untouched after an error");
    sb_tensor *list[] = {x, y, yc, xi, y3, x2, x0, y0, ya, xa, big};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

int main(int argc, char **argv) {
    oracle_seed(0x17e3b0a5c2d94f61ull);
    sb_test_seed(0x6a09e667f3bcc909ull);
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_interp_cases();
    test_interp_specials();
    test_interp_errors();
    return sb_test_finish();
}
