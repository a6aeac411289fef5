/* Tests of sb_conv_transpose2d_* (include/samebits/conv.h, contract section
 * "GEMM family", conv_transpose2d).
 *
 * The oracle below restates the contract directly from the transposed
 * convolution's definition (scatter form turned into a gather over the
 * taps that land on an output), independently of conv2d's kernels, and the
 * public ops must give its bits (or NaN where it gives NaN) in every
 * configuration of tests/support/fastpath.h (ISA level x threads 1/2/3/4/7).
 * Also: float64 closeness, the adjoint identities <y, dy> = <x, dx> =
 * <w, dw> (the gradient check of a bilinear op), odd shapes, groups,
 * dilation, output_pad (below stride, and at or above stride but below
 * dilation), an empty batch, inf and NaN, and every refused argument with
 * nothing written. */
#include <math.h>
#include "harness.h"
#include "support/fastpath.h"
#include "support/oracle.h"

static float *F(const sb_tensor *t) { return (float *)t->data; }

typedef struct shape_case {
    int64_t n, c, h, w, o_per_group, kh, kw;
    sb_conv_transpose2d_params p;
} shape_case;

static int64_t out_channels(const shape_case *s) { return s->o_per_group * s->p.groups; }

static int64_t axis_out(int64_t in, int64_t k, int64_t st, int64_t pad, int64_t dil, int64_t op) {
    return (in - 1) * st - 2 * pad + dil * (k - 1) + op + 1;
}

/* ---- the oracle: the contract's chains, written out ---- */

/* y[n][o][p][q]: chain over (c, i, j) of the group's input channels and
 * the taps with r*sh - ph + i*dh == p (likewise q), then + bias. */
static void oracle_forward(const shape_case *s, const float *x, const float *w, const float *b,
                           float *y, int64_t oh, int64_t ow) {
    const sb_conv_transpose2d_params *p = &s->p;
    int64_t icg = s->c / p->groups, ocg = s->o_per_group, o_all = out_channels(s);
    for (int64_t n = 0; n < s->n; n++)
        for (int64_t o = 0; o < o_all; o++)
            for (int64_t py = 0; py < oh; py++)
                for (int64_t qx = 0; qx < ow; qx++) {
                    int64_t grp = o / ocg, ol = o % ocg;
                    float acc = 0.0f;
                    for (int64_t cl = 0; cl < icg; cl++) {
                        int64_t c = grp * icg + cl;
                        for (int64_t i = 0; i < s->kh; i++) {
                            int64_t tr = py + p->pad_h - i * p->dilation_h;
                            if (tr < 0 || tr % p->stride_h || tr / p->stride_h >= s->h) continue;
                            for (int64_t j = 0; j < s->kw; j++) {
                                int64_t ts = qx + p->pad_w - j * p->dilation_w;
                                if (ts < 0 || ts % p->stride_w || ts / p->stride_w >= s->w)
                                    continue;
                                float xv = x[((n * s->c + c) * s->h + tr / p->stride_h) * s->w +
                                             ts / p->stride_w];
                                float wv = w[((c * ocg + ol) * s->kh + i) * s->kw + j];
                                acc = fmaf(xv, wv, acc);
                            }
                        }
                    }
                    y[((n * o_all + o) * oh + py) * ow + qx] = b ? acc + b[o] : acc;
                }
}

/* dy at (n, o, row, col), +0.0f outside (the padded taps of dx and dw). */
static float dy_pad(const shape_case *s, const float *dy, int64_t oh, int64_t ow, int64_t n,
                    int64_t o, int64_t row, int64_t col) {
    if (row < 0 || row >= oh || col < 0 || col >= ow) return 0.0f;
    return dy[((n * out_channels(s) + o) * oh + row) * ow + col];
}

static void oracle_backward(const shape_case *s, const float *dy, const float *x, const float *w,
                            float *dx, float *dw, float *db, int64_t oh, int64_t ow) {
    const sb_conv_transpose2d_params *p = &s->p;
    int64_t icg = s->c / p->groups, ocg = s->o_per_group, o_all = out_channels(s);
    for (int64_t n = 0; n < s->n; n++)
        for (int64_t c = 0; c < s->c; c++)
            for (int64_t r = 0; r < s->h; r++)
                for (int64_t q = 0; q < s->w; q++) {
                    float acc = 0.0f;
                    for (int64_t ol = 0; ol < ocg; ol++)
                        for (int64_t i = 0; i < s->kh; i++)
                            for (int64_t j = 0; j < s->kw; j++) {
                                float d = dy_pad(s, dy, oh, ow, n, (c / icg) * ocg + ol,
                                                 r * p->stride_h - p->pad_h + i * p->dilation_h,
                                                 q * p->stride_w - p->pad_w + j * p->dilation_w);
                                acc = fmaf(d, w[((c * ocg + ol) * s->kh + i) * s->kw + j], acc);
                            }
                    dx[((n * s->c + c) * s->h + r) * s->w + q] = acc;
                }
    for (int64_t c = 0; c < s->c; c++)
        for (int64_t ol = 0; ol < ocg; ol++)
            for (int64_t i = 0; i < s->kh; i++)
                for (int64_t j = 0; j < s->kw; j++) {
                    float acc = 0.0f;
                    for (int64_t n = 0; n < s->n; n++)
                        for (int64_t r = 0; r < s->h; r++)
                            for (int64_t q = 0; q < s->w; q++) {
                                float d = dy_pad(s, dy, oh, ow, n, (c / icg) * ocg + ol,
                                                 r * p->stride_h - p->pad_h + i * p->dilation_h,
                                                 q * p->stride_w - p->pad_w + j * p->dilation_w);
                                acc = fmaf(x[((n * s->c + c) * s->h + r) * s->w + q], d, acc);
                            }
                    dw[((c * ocg + ol) * s->kh + i) * s->kw + j] = acc;
                }
    int64_t plane = oh * ow;
    float *tmp = malloc(sizeof(float) * (size_t)(s->n * plane + 1));
    for (int64_t o = 0; o < o_all; o++) {
        for (int64_t n = 0; n < s->n; n++)
            memcpy(tmp + n * plane, dy + (n * o_all + o) * plane, sizeof(float) * (size_t)plane);
        db[o] = oracle_canonical_sum(tmp, s->n * plane);
    }
    free(tmp);
}

/* ---- helpers ---- */

static int64_t mismatches(const char *what, const char *cfg, const float *got, const float *want,
                          int64_t n) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        if (oracle_same(got[i], want[i])) continue;
        if (bad++ < 3)
            fprintf(stderr, "    %s [%s] element %lld: got %a want %a\n", what, cfg, (long long)i,
                    got[i], want[i]);
    }
    return bad;
}

/* Uniform values, or with `special` the fastpath mix of signed zeros,
 * subnormals, huge values, inf and NaN. */
static void fill(sb_tensor *t, bool special) {
    for (int64_t i = 0; i < sb_tensor_numel(t); i++)
        F(t)[i] = special ? sb_test_adversarial(2.0f) : sb_test_unif(-1.0f, 1.0f);
}

static sb_tensor *t4(int64_t a, int64_t b, int64_t c, int64_t d) {
    sb_tensor *t = NULL;
    int64_t shape[4] = {a, b, c, d};
    CHECK_OK(sb_tensor_new(&t, SB_F32, 4, shape));
    return t;
}

static sb_tensor *t1(int64_t a) {
    sb_tensor *t = NULL;
    CHECK_OK(sb_tensor_new(&t, SB_F32, 1, &a));
    return t;
}

typedef struct bufs {
    sb_tensor *x, *w, *b, *y, *dy, *dx, *dw, *db;
    int64_t oh, ow;
} bufs;

static bufs make_bufs(const shape_case *s, bool special) {
    bufs B;
    const sb_conv_transpose2d_params *p = &s->p;
    B.oh = axis_out(s->h, s->kh, p->stride_h, p->pad_h, p->dilation_h, p->output_pad_h);
    B.ow = axis_out(s->w, s->kw, p->stride_w, p->pad_w, p->dilation_w, p->output_pad_w);
    int64_t o = out_channels(s);
    B.x = t4(s->n, s->c, s->h, s->w);
    B.w = t4(s->c, s->o_per_group, s->kh, s->kw);
    B.b = t1(o);
    B.y = t4(s->n, o, B.oh, B.ow);
    B.dy = t4(s->n, o, B.oh, B.ow);
    B.dx = t4(s->n, s->c, s->h, s->w);
    B.dw = t4(s->c, s->o_per_group, s->kh, s->kw);
    B.db = t1(o);
    fill(B.x, special);
    fill(B.w, special);
    fill(B.b, special);
    fill(B.dy, special);
    return B;
}

static void free_bufs(bufs *B) {
    sb_tensor *all[8] = {B->x, B->w, B->b, B->y, B->dy, B->dx, B->dw, B->db};
    for (int i = 0; i < 8; i++) sb_tensor_free(all[i]);
}

static const char *case_name(const shape_case *s, char *buf, size_t cap) {
    const sb_conv_transpose2d_params *p = &s->p;
    snprintf(buf, cap,
             "n%lld c%lld %lldx%lld o%lld k%lldx%lld s%lld,%lld p%lld,%lld op%lld,%lld d%lld,%lld "
             "g%lld",
             (long long)s->n, (long long)s->c, (long long)s->h, (long long)s->w,
             (long long)out_channels(s), (long long)s->kh, (long long)s->kw, (long long)p->stride_h,
             (long long)p->stride_w, (long long)p->pad_h, (long long)p->pad_w,
             (long long)p->output_pad_h, (long long)p->output_pad_w, (long long)p->dilation_h,
             (long long)p->dilation_w, (long long)p->groups);
    return buf;
}

/* stride, pad, output_pad, dilation, groups */
#define P(sh, sw, ph, pw, oph, opw, dh, dw, g) {sh, sw, ph, pw, oph, opw, dh, dw, g}

static const shape_case cases[] = {
    {2, 3, 5, 4, 2, 3, 3, P(1, 1, 0, 0, 0, 0, 1, 1, 1)},
    {1, 4, 6, 7, 3, 3, 3, P(2, 2, 1, 1, 1, 1, 1, 1, 1)},
    {3, 6, 5, 5, 2, 4, 2, P(2, 3, 1, 0, 1, 2, 1, 1, 3)},  /* groups, odd strides */
    {2, 4, 4, 3, 1, 3, 3, P(3, 2, 2, 1, 0, 1, 2, 3, 4)},  /* depthwise, dilation */
    {1, 2, 3, 4, 3, 2, 3, P(1, 2, 0, 1, 1, 1, 3, 2, 1)},  /* output_pad >= stride, < dilation */
    {2, 5, 7, 2, 2, 1, 1, P(1, 1, 0, 0, 0, 0, 1, 1, 1)},  /* 1x1 */
    {1, 3, 1, 9, 4, 1, 5, P(1, 2, 0, 3, 0, 1, 1, 2, 1)},  /* height 1: the conv_transpose1d form */
    {7, 8, 9, 11, 5, 5, 3, P(2, 1, 2, 1, 1, 0, 2, 1, 2)}, /* bigger, several sample chunks */
    {0, 3, 4, 4, 2, 3, 3, P(2, 2, 1, 1, 1, 1, 1, 1, 1)},  /* empty batch */
};

/* Public ops against the oracle, bitwise, in every configuration. */
static void test_against_oracle(bool special) {
    char name[200];
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const shape_case *s = &cases[k];
        case_name(s, name, sizeof name);
        bufs B = make_bufs(s, special);
        int64_t ny = sb_tensor_numel(B.y), nx = sb_tensor_numel(B.x), nw = sb_tensor_numel(B.w),
                nb = sb_tensor_numel(B.b);
        float *wy = malloc(sizeof(float) * (size_t)(ny + 1)),
              *wy0 = malloc(sizeof(float) * (size_t)(ny + 1)),
              *wdx = malloc(sizeof(float) * (size_t)(nx + 1)),
              *wdw = malloc(sizeof(float) * (size_t)(nw + 1)),
              *wdb = malloc(sizeof(float) * (size_t)(nb + 1));
        oracle_forward(s, F(B.x), F(B.w), F(B.b), wy, B.oh, B.ow);
        oracle_forward(s, F(B.x), F(B.w), NULL, wy0, B.oh, B.ow);
        oracle_backward(s, F(B.dy), F(B.x), F(B.w), wdx, wdw, wdb, B.oh, B.ow);
        for (int c = 0; c < sb_test_config_count(); c++) {
            sb_test_config_apply(c);
            const char *cfg = sb_test_config_name(c);
            CHECK_OK(sb_conv_transpose2d_forward(B.x, B.w, B.b, &s->p, B.y));
            CHECK(mismatches("y", cfg, F(B.y), wy, ny) == 0, "forward %s special %d", name,
                  special);
            CHECK_OK(sb_conv_transpose2d_forward(B.x, B.w, NULL, &s->p, B.y));
            CHECK(mismatches("y0", cfg, F(B.y), wy0, ny) == 0, "forward no bias %s", name);
            CHECK_OK(sb_conv_transpose2d_backward(B.dy, B.x, B.w, &s->p, B.dx, B.dw, B.db));
            CHECK(mismatches("dx", cfg, F(B.dx), wdx, nx) == 0, "dx %s special %d", name, special);
            CHECK(mismatches("dw", cfg, F(B.dw), wdw, nw) == 0, "dw %s special %d", name, special);
            CHECK(mismatches("db", cfg, F(B.db), wdb, nb) == 0, "db %s special %d", name, special);
            /* each gradient alone gives the same bits */
            memset(B.dw->data, 0x7f, sizeof(float) * (size_t)nw);
            CHECK_OK(sb_conv_transpose2d_backward(B.dy, B.x, B.w, &s->p, NULL, B.dw, NULL));
            CHECK(mismatches("dw alone", cfg, F(B.dw), wdw, nw) == 0, "dw alone %s", name);
        }
        sb_test_config_reset();
        free(wy);
        free(wy0);
        free(wdx);
        free(wdw);
        free(wdb);
        free_bufs(&B);
    }
}

/* Float64 closeness and the adjoint identities, on finite data: each
 * float32 result within a few ulps of sum |terms| of its float64 value,
 * and <y0, dy> = <x, dx> = <w, dw> in float64 up to the chains' error. */
static void test_float64_and_adjoint(void) {
    char name[200];
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const shape_case *s = &cases[k];
        case_name(s, name, sizeof name);
        bufs B = make_bufs(s, false);
        CHECK_OK(sb_conv_transpose2d_forward(B.x, B.w, NULL, &s->p, B.y));
        CHECK_OK(sb_conv_transpose2d_backward(B.dy, B.x, B.w, &s->p, B.dx, B.dw, B.db));
        const sb_conv_transpose2d_params *p = &s->p;
        int64_t icg = s->c / p->groups, ocg = s->o_per_group, oa = out_channels(s);
        /* forward in float64, scattered from each input element */
        int64_t ny = sb_tensor_numel(B.y);
        double *y64 = calloc((size_t)ny + 1, sizeof(double)),
               *mag = calloc((size_t)ny + 1, sizeof(double));
        for (int64_t n = 0; n < s->n; n++)
            for (int64_t c = 0; c < s->c; c++)
                for (int64_t r = 0; r < s->h; r++)
                    for (int64_t q = 0; q < s->w; q++)
                        for (int64_t ol = 0; ol < ocg; ol++)
                            for (int64_t i = 0; i < s->kh; i++)
                                for (int64_t j = 0; j < s->kw; j++) {
                                    int64_t py = r * p->stride_h - p->pad_h + i * p->dilation_h;
                                    int64_t qx = q * p->stride_w - p->pad_w + j * p->dilation_w;
                                    if (py < 0 || py >= B.oh || qx < 0 || qx >= B.ow) continue;
                                    double t = (double)F(B.x)[((n * s->c + c) * s->h + r) * s->w + q] *
                                               (double)F(B.w)[((c * ocg + ol) * s->kh + i) * s->kw + j];
                                    int64_t at = ((n * oa + (c / icg) * ocg + ol) * B.oh + py) * B.ow + qx;
                                    y64[at] += t;
                                    mag[at] += fabs(t);
                                }
        int64_t far = 0;
        for (int64_t e = 0; e < ny; e++)
            if (fabs((double)F(B.y)[e] - y64[e]) > 1e-6 * mag[e] + 1e-30) far++;
        CHECK(far == 0, "%s: %lld forward elements far from float64", name, (long long)far);
        double ydy = 0, xdx = 0, wdw = 0, scale = 0;
        for (int64_t e = 0; e < ny; e++) {
            ydy += (double)F(B.y)[e] * F(B.dy)[e];
            scale += mag[e] * fabs(F(B.dy)[e]);
        }
        for (int64_t e = 0; e < sb_tensor_numel(B.x); e++) xdx += (double)F(B.x)[e] * F(B.dx)[e];
        for (int64_t e = 0; e < sb_tensor_numel(B.w); e++) wdw += (double)F(B.w)[e] * F(B.dw)[e];
        double tol = 1e-5 * scale + 1e-30;
        CHECK(fabs(ydy - xdx) <= tol, "%s: <y,dy> %.9g vs <x,dx> %.9g", name, ydy, xdx);
        CHECK(fabs(ydy - wdw) <= tol, "%s: <y,dy> %.9g vs <w,dw> %.9g", name, ydy, wdw);
        /* db: the float64 sum of dy over (n, p, q) */
        for (int64_t o = 0; o < oa; o++) {
            double sum = 0, m = 0;
            for (int64_t n = 0; n < s->n; n++)
                for (int64_t e = 0; e < B.oh * B.ow; e++) {
                    double v = F(B.dy)[(n * oa + o) * B.oh * B.ow + e];
                    sum += v;
                    m += fabs(v);
                }
            CHECK(fabs(F(B.db)[o] - sum) <= 1e-6 * m + 1e-30, "%s: db[%lld] %g vs %g", name,
                  (long long)o, F(B.db)[o], sum);
        }
        free(y64);
        free(mag);
        free_bufs(&B);
    }
}

/* An inf weight facing no input tap is no term of y (no padding terms),
 * but is a term of dx where dy's padding faces it (0 * inf = NaN). */
static void test_nonfinite_terms(void) {
    shape_case s = {1, 1, 2, 2, 1, 3, 3, P(1, 1, 1, 1, 0, 0, 1, 1, 1)};
    bufs B = make_bufs(&s, false);
    for (int e = 0; e < 4; e++) F(B.x)[e] = 1.0f;
    for (int e = 0; e < 9; e++) F(B.w)[e] = 1.0f;
    F(B.w)[0] = INFINITY; /* tap (0, 0) */
    CHECK_OK(sb_conv_transpose2d_forward(B.x, B.w, NULL, &s.p, B.y));
    /* y (2x2): output (0,0) reads tap (0,0) from input (r, s) with
     * r - 1 + 0 = 0: r = 1, s = 1, so it is inf; output (1,1) never meets
     * tap (0,0) with an input (r = 2 is outside): finite */
    CHECK(isinf(F(B.y)[0]), "y[0][0] = %g, expected inf", F(B.y)[0]);
    CHECK(F(B.y)[3] == 4.0f, "y[1][1] = %g, expected 4 (its four finite taps)", F(B.y)[3]);
    for (int e = 0; e < 4; e++) F(B.dy)[e] = 1.0f;
    CHECK_OK(sb_conv_transpose2d_backward(B.dy, B.x, B.w, &s.p, B.dx, NULL, NULL));
    /* dx (0,0) reads dy at (-1, -1) through tap (0, 0): a padded term */
    CHECK(isnan(F(B.dx)[0]), "dx[0][0] = %g, expected NaN (0 * inf)", F(B.dx)[0]);
    CHECK(isinf(F(B.dx)[3]), "dx[1][1] = %g, expected inf", F(B.dx)[3]);
    free_bufs(&B);
}

static void test_output_size(void) {
    int64_t oh = 0, ow = 0;
    sb_conv_transpose2d_params p = {2, 3, 1, 0, 1, 2, 1, 2, 1};
    CHECK_OK(sb_conv_transpose2d_output_size(5, 4, 3, 2, &p, &oh, &ow));
    CHECK(oh == (5 - 1) * 2 - 2 + 2 + 1 + 1 && ow == (4 - 1) * 3 + 2 + 2 + 1,
          "output size %lld x %lld", (long long)oh, (long long)ow);
    CHECK_OK(sb_conv_transpose2d_output_size(5, 4, 3, 2, NULL, &oh, &ow));
    CHECK(oh == 7 && ow == 5, "default params: %lld x %lld", (long long)oh, (long long)ow);
}

/* Refused calls: the status, a message naming the parameter, and y / the
 * gradients untouched. */
static void test_bad_inputs(void) {
    shape_case s = {2, 4, 3, 3, 3, 3, 3, P(2, 2, 1, 1, 1, 1, 1, 1, 2)};
    bufs B = make_bufs(&s, false);
    for (int64_t e = 0; e < sb_tensor_numel(B.y); e++) F(B.y)[e] = 42.0f;
    for (int64_t e = 0; e < sb_tensor_numel(B.dx); e++) F(B.dx)[e] = 42.0f;
    sb_conv_transpose2d_params p = s.p;
    p.output_pad_h = 2; /* >= stride 2 and >= dilation 1 */
    CHECK_ERROR(sb_conv_transpose2d_forward(B.x, B.w, B.b, &p, B.y), SB_ERR_ARG, "output_pad");
    p = s.p;
    p.groups = 3; /* does not divide 4 channels */
    CHECK_ERROR(sb_conv_transpose2d_forward(B.x, B.w, B.b, &p, B.y), SB_ERR_SHAPE, "groups");
    p = s.p;
    p.stride_w = 0;
    CHECK_ERROR(sb_conv_transpose2d_forward(B.x, B.w, B.b, &p, B.y), SB_ERR_ARG, "stride_w");
    p = s.p;
    p.dilation_h = 0;
    CHECK_ERROR(sb_conv_transpose2d_forward(B.x, B.w, B.b, &p, B.y), SB_ERR_ARG, "dilation_h");
    p = s.p;
    p.pad_w = -1;
    CHECK_ERROR(sb_conv_transpose2d_forward(B.x, B.w, B.b, &p, B.y), SB_ERR_ARG, "pad_w");
    p = s.p;
    p.pad_h = 4; /* output height (3-1)*2 - 8 + 2 + 1 + 1 < 1 */
    CHECK_ERROR(sb_conv_transpose2d_forward(B.x, B.w, B.b, &p, B.y), SB_ERR_SHAPE, "height");
    p = s.p;
    p.pad_h = 0; /* a valid call whose output is larger than y */
    CHECK_ERROR(sb_conv_transpose2d_forward(B.x, B.w, B.b, &p, B.y), SB_ERR_SHAPE, "y");
    p = s.p;
    p.output_pad_w = -1;
    CHECK_ERROR(sb_conv_transpose2d_forward(B.x, B.w, B.b, &p, B.y), SB_ERR_ARG, "output_pad_w");
    sb_tensor *bad_b = t1(5);
    CHECK_ERROR(sb_conv_transpose2d_forward(B.x, B.w, bad_b, &s.p, B.y), SB_ERR_SHAPE, "bias");
    CHECK_ERROR(sb_conv_transpose2d_forward(B.x, B.dw, B.b, &s.p, B.x), SB_ERR_SHAPE, "y");
    CHECK_ERROR(sb_conv_transpose2d_forward(B.x, B.w, B.b, &s.p, NULL), SB_ERR_NULL, "y");
    sb_tensor *wrong_w = t4(3, 3, 3, 3); /* dim 0 must be x's 4 channels */
    CHECK_ERROR(sb_conv_transpose2d_forward(B.x, wrong_w, B.b, &s.p, B.y), SB_ERR_SHAPE, "w");
    for (int64_t e = 0; e < sb_tensor_numel(B.y); e++)
        CHECK(F(B.y)[e] == 42.0f, "y written by a refused call");
    CHECK_ERROR(sb_conv_transpose2d_backward(B.y, B.x, B.w, &s.p, B.dx, NULL, bad_b), SB_ERR_SHAPE,
                "db");
    CHECK_ERROR(sb_conv_transpose2d_backward(B.x, B.x, B.w, &s.p, B.dx, NULL, NULL), SB_ERR_SHAPE,
                "dy");
    CHECK_ERROR(sb_conv_transpose2d_backward(B.dy, B.x, B.w, &s.p, B.dw, NULL, NULL), SB_ERR_SHAPE,
                "dx");
    CHECK_ERROR(sb_conv_transpose2d_backward(B.dy, B.x, B.w, &s.p, B.x, NULL, NULL), SB_ERR_ARG,
                "dx");
    CHECK_ERROR(sb_conv_transpose2d_backward(B.dy, B.x, B.w, &s.p, B.dx, B.dx, NULL), SB_ERR_SHAPE,
                "dw");
    for (int64_t e = 0; e < sb_tensor_numel(B.dx); e++)
        CHECK(F(B.dx)[e] == 42.0f, "dx written by a refused call");
    int64_t oh, ow;
    CHECK_ERROR(sb_conv_transpose2d_output_size(INT64_MAX, 3, 3, 3, &s.p, &oh, &ow), SB_ERR_ARG,
                "overflows");
    sb_tensor_free(bad_b);
    sb_tensor_free(wrong_w);
    free_bufs(&B);
}

/* The autograd wrapper: with loss = mse(y, target, sum), its forward and
 * gradients are the op's own, called by hand. */
static void test_autograd(void) {
    shape_case s = {2, 4, 3, 5, 2, 3, 2, P(2, 1, 1, 0, 1, 0, 1, 2, 2)};
    bufs B = make_bufs(&s, false);
    sb_tensor *target = t4(s.n, out_channels(&s), B.oh, B.ow), *one = NULL;
    fill(target, false);
    CHECK_OK(sb_tensor_new(&one, SB_F32, 0, NULL));
    F(one)[0] = 1.0f;
    memset(B.dx->data, 0, sizeof(float) * (size_t)sb_tensor_numel(B.dx));
    memset(B.dw->data, 0, sizeof(float) * (size_t)sb_tensor_numel(B.dw));
    memset(B.db->data, 0, sizeof(float) * (size_t)sb_tensor_numel(B.db));
    sb_graph *g = NULL;
    CHECK_OK(sb_graph_new(&g));
    sb_variable *vx = NULL, *vw = NULL, *vb = NULL, *vy = NULL, *loss = NULL;
    CHECK_OK(sb_graph_param(g, B.x, B.dx, &vx));
    CHECK_OK(sb_graph_param(g, B.w, B.dw, &vw));
    CHECK_OK(sb_graph_param(g, B.b, B.db, &vb));
    CHECK_OK(sb_ag_conv_transpose2d(g, vx, vw, vb, &s.p, &vy));
    CHECK(vy != NULL, "no output variable");
    if (vy) {
        CHECK_OK(sb_ag_mse(g, vy, target, SB_LOSS_SUM, &loss));
        CHECK_OK(sb_graph_backward(g, loss));
        CHECK_OK(sb_conv_transpose2d_forward(B.x, B.w, B.b, &s.p, B.y));
        CHECK(mismatches("ag y", "", F(vy->value), F(B.y), sb_tensor_numel(B.y)) == 0,
              "autograd y");
        sb_tensor *gx = t4(s.n, s.c, s.h, s.w), *gw = t4(s.c, s.o_per_group, s.kh, s.kw),
                  *gb = t1(out_channels(&s));
        CHECK_OK(sb_mse_backward(B.y, target, SB_LOSS_SUM, one, B.dy, NULL));
        CHECK_OK(sb_conv_transpose2d_backward(B.dy, B.x, B.w, &s.p, gx, gw, gb));
        CHECK(mismatches("ag dx", "", F(B.dx), F(gx), sb_tensor_numel(gx)) == 0, "autograd dx");
        CHECK(mismatches("ag dw", "", F(B.dw), F(gw), sb_tensor_numel(gw)) == 0, "autograd dw");
        CHECK(mismatches("ag db", "", F(B.db), F(gb), sb_tensor_numel(gb)) == 0, "autograd db");
        sb_tensor_free(gx);
        sb_tensor_free(gw);
        sb_tensor_free(gb);
    }
    sb_graph_free(g);
    sb_tensor_free(target);
    sb_tensor_free(one);
    free_bufs(&B);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    sb_test_seed(0x7c0417);
    test_output_size();
    test_against_oracle(false);
    test_against_oracle(true);
    test_float64_and_adjoint();
    test_nonfinite_terms();
    test_bad_inputs();
    test_autograd();
    return sb_test_finish();
}
