/* Tests of grid sampling (bilinear, nearest; zeros, border and reflection
 * padding; align_corners both ways), forward and backward.
 *
 * The oracle restates the contract with libm's exact functions (floorf,
 * truncf, fabsf, nearbyintf in the default rounding mode) and computes the
 * backward by scattering every (grid point, corner) term into per-input
 * lists in grid order, summed with the canonical sum restated from its
 * definition (tests/support/oracle.c); dgrid's per-channel terms likewise.
 * The public op runs in every configuration of tests/support/fastpath.h
 * (ISA level x thread count) and is compared bit for bit; float64 bounds
 * the rounding, and a finite difference in float64 of the oracle's own
 * interpolation checks dgrid's formula away from the corners' edges. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "harness.h"
#include "support/fastpath.h"
#include "support/oracle.h"

static float *F(const sb_tensor *t) { return (float *)t->data; }

typedef struct {
    const char *name;
    int64_t n, c, h, w, oh, ow;
    sb_grid_mode mode;
    sb_grid_padding pad;
    bool align;
    float spread; /* grid values uniform in [-spread, spread] */
} grid_case;

/* PyTorch's vectorised coordinate code, restated */
static float o_source(float v, int64_t size, sb_grid_padding pad, bool align, float *mult) {
    float f = align ? (float)(size - 1) / 2 : (float)size / 2;
    float s = align ? (v + 1) * f : (v + 1) * f - 0.5f;
    float sign = 1, clip = 1;
    if (pad == SB_GRID_REFLECTION) {
        if (align && size <= 1) {
            *mult = 0;
            return 0;
        }
        float low = align ? 0.0f : -0.5f, twice = align ? (float)(size - 1) * 2 : (float)size * 2;
        float d = s - low, a = fabsf(d);
        float extra = a - truncf(a / twice) * twice, refl = twice - extra;
        int more = extra > refl;
        sign = (more ^ (d < 0)) ? -1.0f : 1.0f;
        s = (more ? refl : extra) + low;
    }
    if (pad != SB_GRID_ZEROS) {
        float hi = (float)(size - 1);
        clip = (s <= 0 || s >= hi) ? 0.0f : 1.0f;
        s = isnan(s) ? s : s < 0 ? 0 : s > hi ? hi : s;
    }
    *mult = f * sign * clip;
    return s;
}

static int64_t o_at(float r, float c, int64_t h, int64_t w) {
    if (!(r >= 0 && r < h && c >= 0 && c < w)) return -1;
    return (int64_t)r * w + (int64_t)c;
}

static void check_case(const grid_case *k, bool specials) {
    int64_t N = k->n, C = k->c, H = k->h, W = k->w, P = k->oh * k->ow;
    sb_tensor *x = oracle_tensor(SB_F32, 4, N, C, H, W), *dx = oracle_tensor(SB_F32, 4, N, C, H, W);
    sb_tensor *grid = oracle_tensor(SB_F32, 4, N, k->oh, k->ow, 2);
    sb_tensor *dgrid = oracle_tensor(SB_F32, 4, N, k->oh, k->ow, 2);
    sb_tensor *y = oracle_tensor(SB_F32, 4, N, C, k->oh, k->ow);
    sb_tensor *dy = oracle_tensor(SB_F32, 4, N, C, k->oh, k->ow);
    for (int64_t i = 0; i < N * C * H * W; i++) F(x)[i] = specials ? sb_test_adversarial(3.0f) : oracle_rand_float();
    for (int64_t i = 0; i < N * C * P; i++) F(dy)[i] = specials ? sb_test_adversarial(3.0f) : oracle_rand_float();
    for (int64_t i = 0; i < N * P * 2; i++) F(grid)[i] = sb_test_unif(-k->spread, k->spread);
    if (specials && N * P > 3) { /* exact edges, a NaN and an infinity */
        F(grid)[0] = -1.0f, F(grid)[1] = 1.0f, F(grid)[2] = 0.0f, F(grid)[3] = NAN;
        F(grid)[4] = INFINITY, F(grid)[5] = -0.0f;
    }
    float *want_y = malloc((size_t)(N * C * P + 1) * 4), *want_dg = malloc((size_t)(N * P * 2 + 1) * 4);
    int64_t *len = calloc((size_t)(N * C * H * W + 1), 8);
    float **item = calloc((size_t)(N * C * H * W + 1), sizeof(float *));
    long far = 0;
    for (int64_t b = 0; b < N; b++)
        for (int64_t p = 0; p < P; p++) {
            float mx, my;
            float ix = o_source(F(grid)[(b * P + p) * 2], W, k->pad, k->align, &mx);
            float iy = o_source(F(grid)[(b * P + p) * 2 + 1], H, k->pad, k->align, &my);
            float x0 = floorf(ix), y0 = floorf(iy), fx = ix - x0, fy = iy - y0;
            float wt[4] = {(1 - fy) * (1 - fx), (1 - fy) * fx, fy * (1 - fx), fy * fx};
            int64_t at[4] = {o_at(y0, x0, H, W), o_at(y0, x0 + 1, H, W), o_at(y0 + 1, x0, H, W),
                             o_at(y0 + 1, x0 + 1, H, W)};
            int corners = 4;
            if (k->mode == SB_GRID_NEAREST) {
                at[0] = o_at(nearbyintf(iy), nearbyintf(ix), H, W);
                wt[0] = 1, corners = 1;
            }
            float tx[64], ty[64];
            for (int64_t c = 0; c < C; c++) {
                const float *xc = F(x) + (b * C + c) * H * W;
                float v[4];
                for (int j = 0; j < 4; j++) v[j] = j < corners && at[j] >= 0 ? xc[at[j]] : 0.0f;
                float out;
                if (corners == 1) {
                    out = v[0];
                } else {
                    out = v[0] * wt[0];
                    for (int j = 1; j < 4; j++) out = out + v[j] * wt[j];
                    double o64 = 0, mag = 0;
                    for (int j = 0; j < 4; j++) o64 += (double)v[j] * wt[j], mag += fabs((double)v[j] * wt[j]);
                    if (!specials) far += fabs(out - o64) > 4 * FLT_EPSILON * mag;
                }
                float d = F(dy)[(b * C + c) * P + p];
                want_y[(b * C + c) * P + p] = out;
                tx[c] = ((v[1] - v[0]) * (1 - fy) + (v[3] - v[2]) * fy) * d;
                ty[c] = ((v[2] - v[0]) * (1 - fx) + (v[3] - v[1]) * fx) * d;
                for (int j = 0; j < corners; j++) {
                    if (at[j] < 0) continue;
                    int64_t q = (b * C + c) * H * W + at[j];
                    item[q] = realloc(item[q], (size_t)(len[q] + 1) * 4);
                    item[q][len[q]++] = d * wt[j];
                }
            }
            want_dg[(b * P + p) * 2] = corners == 1 ? 0.0f : mx * oracle_canonical_sum(tx, C);
            want_dg[(b * P + p) * 2 + 1] = corners == 1 ? 0.0f : my * oracle_canonical_sum(ty, C);
        }
    float *want_dx = malloc((size_t)(N * C * H * W + 1) * 4);
    for (int64_t q = 0; q < N * C * H * W; q++) want_dx[q] = oracle_canonical_sum(item[q], len[q]);
    CHECK(far == 0, "%s: %ld outputs far from float64", k->name, far);

    sb_grid_sample_params prm = {k->mode, k->pad, k->align};
    for (int cfg = 0; cfg < sb_test_config_count(); cfg++) {
        sb_test_config_apply(cfg);
        sb_tensor_fill(y, 1234.5f), sb_tensor_fill(dx, 1234.5f), sb_tensor_fill(dgrid, 1234.5f);
        CHECK_OK(sb_grid_sample_forward(x, grid, &prm, y));
        CHECK_OK(sb_grid_sample_backward(dy, x, grid, &prm, dx, dgrid));
        long by = 0, bdx = 0, bdg = 0;
        for (int64_t i = 0; i < N * C * P; i++) by += !oracle_same(F(y)[i], want_y[i]);
        for (int64_t i = 0; i < N * C * H * W; i++) bdx += !oracle_same(F(dx)[i], want_dx[i]);
        for (int64_t i = 0; i < N * P * 2; i++) bdg += !oracle_same(F(dgrid)[i], want_dg[i]);
        CHECK(by == 0 && bdx == 0 && bdg == 0,
              "grid_sample %s%s [%s]: %ld forward, %ld dx, %ld dgrid differ", k->name,
              specials ? " (specials)" : "", sb_test_config_name(cfg), by, bdx, bdg);
    }
    sb_test_config_reset();
    /* dx or dgrid alone give the same bits */
    sb_tensor_fill(dx, 7.0f), sb_tensor_fill(dgrid, 7.0f);
    CHECK_OK(sb_grid_sample_backward(dy, x, grid, &prm, dx, NULL));
    CHECK_OK(sb_grid_sample_backward(dy, x, grid, &prm, NULL, dgrid));
    long alone = 0;
    for (int64_t i = 0; i < N * C * H * W; i++) alone += !oracle_same(F(dx)[i], want_dx[i]);
    for (int64_t i = 0; i < N * P * 2; i++) alone += !oracle_same(F(dgrid)[i], want_dg[i]);
    CHECK(alone == 0, "grid_sample %s: %ld differ when dx and dgrid are computed alone", k->name, alone);
    for (int64_t q = 0; q < N * C * H * W; q++) free(item[q]);
    free(item), free(len), free(want_y), free(want_dg), free(want_dx);
    sb_tensor *list[] = {x, dx, grid, dgrid, y, dy};
    for (size_t i = 0; i < 6; i++) sb_tensor_free(list[i]);
}

/* dgrid against a float64 central difference of the bilinear read (zeros
 * padding, points away from corner edges): the formula, not only its bits */
static void test_dgrid_formula(void) {
    sb_tensor *x = oracle_tensor(SB_F32, 4, 1, 3, 5, 6), *grid = oracle_tensor(SB_F32, 4, 1, 2, 2, 2);
    sb_tensor *y = oracle_tensor(SB_F32, 4, 1, 3, 2, 2), *dy = oracle_tensor(SB_F32, 4, 1, 3, 2, 2);
    sb_tensor *dgrid = oracle_tensor(SB_F32, 4, 1, 2, 2, 2);
    oracle_fill_rand(x), oracle_fill_rand(dy);
    const float pts[8] = {-0.31f, 0.27f, 0.52f, -0.44f, 0.13f, 0.61f, -0.73f, -0.19f};
    memcpy(F(grid), pts, sizeof pts);
    sb_grid_sample_params prm = {SB_GRID_BILINEAR, SB_GRID_ZEROS, false};
    CHECK_OK(sb_grid_sample_backward(dy, x, grid, &prm, NULL, dgrid));
    for (int p = 0; p < 4; p++)
        for (int a = 0; a < 2; a++) {
            double num = 0;
            for (int c = 0; c < 3; c++) {
                double val[2];
                for (int s = 0; s < 2; s++) {
                    double gx = pts[p * 2] + (a == 0 ? (s ? 1e-4 : -1e-4) : 0);
                    double gy = pts[p * 2 + 1] + (a == 1 ? (s ? 1e-4 : -1e-4) : 0);
                    double ix = ((gx + 1) * 6 - 1) / 2, iy = ((gy + 1) * 5 - 1) / 2;
                    double x0 = floor(ix), y0 = floor(iy), fx = ix - x0, fy = iy - y0;
                    const float *xc = F(x) + c * 30;
                    double v00 = xc[(int)y0 * 6 + (int)x0], v01 = xc[(int)y0 * 6 + (int)x0 + 1];
                    double v10 = xc[((int)y0 + 1) * 6 + (int)x0], v11 = xc[((int)y0 + 1) * 6 + (int)x0 + 1];
                    val[s] = (1 - fy) * ((1 - fx) * v00 + fx * v01) + fy * ((1 - fx) * v10 + fx * v11);
                }
                num += (val[1] - val[0]) / 2e-4 * F(dy)[c * 4 + p];
            }
            float got = F(dgrid)[p * 2 + a];
            CHECK(fabs(got - num) <= 1e-3 * (fabs(num) + 1), "dgrid point %d axis %d: %g vs %g", p, a,
                  got, num);
        }
    sb_tensor *list[] = {x, grid, y, dy, dgrid};
    for (size_t i = 0; i < 5; i++) sb_tensor_free(list[i]);
}

#define BI SB_GRID_BILINEAR
#define NR SB_GRID_NEAREST

static void test_grid_cases(void) {
    const grid_case cases[] = {
        {"bilinear zeros", 2, 3, 5, 6, 4, 7, BI, SB_GRID_ZEROS, false, 1.2f},
        {"bilinear zeros align", 2, 2, 7, 4, 5, 3, BI, SB_GRID_ZEROS, true, 1.2f},
        {"bilinear border", 1, 3, 4, 5, 6, 6, BI, SB_GRID_BORDER, false, 1.5f},
        {"bilinear border align", 2, 2, 5, 5, 3, 8, BI, SB_GRID_BORDER, true, 1.5f},
        {"bilinear reflection", 2, 3, 6, 5, 5, 5, BI, SB_GRID_REFLECTION, false, 3.5f},
        {"bilinear reflection align", 1, 4, 5, 7, 6, 4, BI, SB_GRID_REFLECTION, true, 3.5f},
        {"bilinear reflection 1x1", 1, 2, 1, 1, 3, 3, BI, SB_GRID_REFLECTION, true, 2.0f},
        {"nearest zeros", 2, 3, 6, 5, 7, 4, NR, SB_GRID_ZEROS, false, 1.2f},
        {"nearest border align", 1, 2, 5, 6, 4, 4, NR, SB_GRID_BORDER, true, 1.5f},
        {"nearest reflection", 2, 2, 4, 7, 5, 5, NR, SB_GRID_REFLECTION, false, 3.0f},
        {"upsampling grid (many readers)", 1, 2, 3, 3, 40, 40, BI, SB_GRID_BORDER, true, 1.0f},
        {"many planes", 3, 17, 6, 6, 5, 5, BI, SB_GRID_ZEROS, false, 1.1f},
        {"empty output", 2, 3, 4, 4, 0, 5, BI, SB_GRID_ZEROS, false, 1.0f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_case(&cases[i], false);
        check_case(&cases[i], true);
    }
}

static void test_grid_errors(void) {
    sb_grid_sample_params p = {BI, SB_GRID_ZEROS, false};
    sb_tensor *x = oracle_tensor(SB_F32, 4, 2, 3, 4, 5), *grid = oracle_tensor(SB_F32, 4, 2, 6, 7, 2);
    sb_tensor *y = oracle_tensor(SB_F32, 4, 2, 3, 6, 7), *gbad = oracle_tensor(SB_F32, 4, 2, 6, 7, 3);
    sb_tensor *gn = oracle_tensor(SB_F32, 4, 3, 6, 7, 2), *ybad = oracle_tensor(SB_F32, 4, 2, 3, 6, 6);
    sb_tensor *x0 = oracle_tensor(SB_F32, 4, 2, 3, 0, 5), *dgrid = oracle_tensor(SB_F32, 4, 2, 6, 7, 2);
    sb_tensor *dx = oracle_tensor(SB_F32, 4, 2, 3, 4, 5);
    CHECK_OK(sb_grid_sample_forward(x, grid, &p, y));
    CHECK_OK(sb_grid_sample_backward(y, x, grid, &p, dx, dgrid));
    CHECK_OK(sb_grid_sample_backward(y, x, grid, &p, NULL, NULL));
    CHECK_ERROR(sb_grid_sample_forward(NULL, grid, &p, y), SB_ERR_NULL, "x is NULL");
    CHECK_ERROR(sb_grid_sample_forward(x, NULL, &p, y), SB_ERR_NULL, "grid is NULL");
    CHECK_ERROR(sb_grid_sample_forward(x, grid, NULL, y), SB_ERR_NULL, "params is NULL");
    CHECK_ERROR(sb_grid_sample_forward(x, gbad, &p, y), SB_ERR_SHAPE, "grid");
    CHECK_ERROR(sb_grid_sample_forward(x, gn, &p, y), SB_ERR_SHAPE, "grid");
    CHECK_ERROR(sb_grid_sample_forward(x, grid, &p, ybad), SB_ERR_SHAPE, "y");
    CHECK_ERROR(sb_grid_sample_forward(x0, grid, &p, y), SB_ERR_SHAPE, "x's height is 0");
    CHECK_ERROR(sb_grid_sample_backward(y, x, grid, &p, ybad, NULL), SB_ERR_SHAPE, "dx");
    CHECK_ERROR(sb_grid_sample_backward(y, x, grid, &p, NULL, gbad), SB_ERR_SHAPE, "dgrid");
    CHECK_ERROR(sb_grid_sample_backward(y, x, grid, &p, x, NULL), SB_ERR_ARG, "dx");
    CHECK_ERROR(sb_grid_sample_backward(y, x, grid, &p, NULL, grid), SB_ERR_ARG, "dgrid");
    sb_grid_sample_params q = p;
    q.mode = (sb_grid_mode)2;
    CHECK_ERROR(sb_grid_sample_forward(x, grid, &q, y), SB_ERR_ARG, "params->mode = 2");
    q = p, q.padding_mode = (sb_grid_padding)3;
    F(y)[0] = 42.0f;
    CHECK_ERROR(sb_grid_sample_forward(x, grid, &q, y), SB_ERR_ARG, "params->padding_mode = 3");
    CHECK_BITS(F(y)[0], 42.0f, "y untouched after an error");
    CHECK_ERROR(sb_grid_sample_forward(x, grid, &p, x), SB_ERR_SHAPE, "y");
    sb_tensor *list[] = {x, grid, y, gbad, gn, ybad, x0, dgrid, dx};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

int main(int argc, char **argv) {
    oracle_seed(0x3c6ef372fe94f82bull);
    sb_test_seed(0xa54ff53a5f1d36f1ull);
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_grid_cases();
    test_dgrid_formula();
    test_grid_errors();
    return sb_test_finish();
}
