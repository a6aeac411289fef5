/* Differential tests of the fast conv2d and pooling kernels (src/cpu/conv2d.c,
 * src/cpu/pool2d.c): the public tensor ops, run in every configuration of
 * tests/support/fastpath.h (ISA level x thread count), must give the bits of
 * the reference kernels (src/ref/conv2d.c, pool2d.c), which are the contract
 * and are tested against independent oracles in test_conv / test_pool.
 *
 * Inputs cover LeNet-5's shapes, odd and prime sizes, strides, dilation,
 * padding wider than the kernel, groups and depthwise, 1x1 kernels, batches
 * of 1 and 7, backward-weight chains that span several sample chunks, and
 * values chosen to break a careless fast path: signed zeros, subnormals,
 * products that underflow to -0 (which a zero-stuffed grad-input GEMM turns
 * into +0), overflow, inf and NaN in data and in weights. */
#include <math.h>
#include "harness.h"
#include "ref/ref_linalg.h"
#include "support/fastpath.h"
#include "support/oracle.h"

static float *F(const sb_tensor *t) { return (float *)t->data; }

/* Bitwise equal, or both NaN (payloads are not part of the contract). */
static int64_t mismatches(const char *what, const char *cfg, const float *got, const float *want,
                          int64_t n) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        if (oracle_same(got[i], want[i])) continue;
        if (bad++ < 3)
            fprintf(stderr, "    %s [%s] element %lld: got %a (0x%08x) want %a (0x%08x)\n", what,
                    cfg, (long long)i, got[i], (unsigned)sb_test_bits(got[i]), want[i],
                    (unsigned)sb_test_bits(want[i]));
    }
    return bad;
}

/* ---- values ---- */

typedef enum { VAL_RAND, VAL_ADV, VAL_ADV_NONFINITE, VAL_TINY } val_mode;

/* Adversarial values: signed zeros, subnormals, tiny values whose products
 * underflow (so chains pass through -0), huge ones (overflow), and, when
 * `nonfinite`, inf and NaN. */
static float adv_value(bool nonfinite) {
    uint64_t r = oracle_rand() % 16;
    float sign = oracle_rand() & 1 ? -1.0f : 1.0f;
    float m = 1.0f + (float)(oracle_rand() % 0x800000) / 8388608.0f;
    switch (r) {
    case 0: return 0.0f;
    case 1: return -0.0f;
    case 2: return sign * ldexpf((float)(oracle_rand() % 64 + 1), -149); /* subnormal */
    case 3:
    case 4: return sign * ldexpf(m, -(int)(oracle_rand() % 12) - 70); /* products underflow */
    case 5: return sign * ldexpf(m, 100);                            /* products overflow */
    case 6:
        if (nonfinite) return oracle_rand() % 3 == 0 ? NAN : sign * INFINITY;
        return sign * m;
    default: return oracle_rand_float();
    }
}

static void fill(sb_tensor *t, val_mode mode, bool is_weight) {
    float *f = F(t);
    for (int64_t i = 0; i < sb_tensor_numel(t); i++) {
        switch (mode) {
        case VAL_RAND: f[i] = oracle_rand_float(); break;
        case VAL_ADV: f[i] = adv_value(!is_weight); break;
        case VAL_ADV_NONFINITE: f[i] = adv_value(true); break;
        case VAL_TINY: {
            /* Every product underflows: chains are sequences of ±0 and
             * subnormals, and many results are zeros of either sign. */
            float m = 1.0f + (float)(oracle_rand() % 0x800000) / 8388608.0f;
            float v = oracle_rand() % 4 == 0 ? 0.0f : ldexpf(m, -(int)(oracle_rand() % 4) - 74);
            f[i] = oracle_rand() & 1 ? -v : v;
            break;
        }
        }
    }
}

/* ---- conv2d ---- */

typedef struct {
    const char *name;
    int64_t n, c, h, w, o, kh, kw;
    sb_conv2d_params p;
    bool bias;
} conv_case;

static void run_conv(const conv_case *q, val_mode mode) {
    int64_t oh, ow, icg = q->c / q->p.groups;
    CHECK_OK(sb_conv2d_output_size(q->h, q->w, q->kh, q->kw, &q->p, &oh, &ow));
    sb_conv2d_geom g = {.n = q->n, .c_in = q->c, .h = q->h, .w = q->w, .c_out = q->o,
                        .kh = q->kh, .kw = q->kw, .oh = oh, .ow = ow, .stride_h = q->p.stride_h,
                        .stride_w = q->p.stride_w, .pad_h = q->p.pad_h, .pad_w = q->p.pad_w,
                        .dilation_h = q->p.dilation_h, .dilation_w = q->p.dilation_w,
                        .groups = q->p.groups};
    sb_tensor *x = oracle_tensor(SB_F32, 4, q->n, q->c, q->h, q->w);
    sb_tensor *w = oracle_tensor(SB_F32, 4, q->o, icg, q->kh, q->kw);
    sb_tensor *b = oracle_tensor(SB_F32, 1, q->o, 0, 0, 0);
    sb_tensor *dy = oracle_tensor(SB_F32, 4, q->n, q->o, oh, ow);
    sb_tensor *y = oracle_tensor(SB_F32, 4, q->n, q->o, oh, ow);
    sb_tensor *dx = oracle_tensor(SB_F32, 4, q->n, q->c, q->h, q->w);
    sb_tensor *dw = oracle_tensor(SB_F32, 4, q->o, icg, q->kh, q->kw);
    sb_tensor *db = oracle_tensor(SB_F32, 1, q->o, 0, 0, 0);
    fill(x, mode, false);
    fill(w, mode, true);
    fill(b, mode == VAL_TINY ? VAL_ADV : mode, false);
    fill(dy, mode, false);
    int64_t ny = sb_tensor_numel(y), nx = sb_tensor_numel(x), nw = sb_tensor_numel(w);
    float *ry = malloc((size_t)ny * 4 + 4), *rdx = malloc((size_t)nx * 4 + 4),
          *rdw = malloc((size_t)nw * 4 + 4), *rdb = malloc((size_t)q->o * 4 + 4);
    sb_ref_conv2d_forward(&g, F(x), F(w), q->bias ? F(b) : NULL, ry);
    sb_ref_conv2d_backward_input(&g, F(dy), F(w), rdx);
    sb_ref_conv2d_backward_weight(&g, F(dy), F(x), rdw);
    sb_ref_conv2d_backward_bias(&g, F(dy), rdb);

    static const char *mode_names[] = {"rand", "adversarial", "nonfinite weights", "tiny"};
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        const char *cn = sb_test_config_name(c);
        sb_tensor_fill(y, 1234.5f);
        sb_tensor_fill(dx, 1234.5f);
        sb_tensor_fill(dw, 1234.5f);
        sb_tensor_fill(db, 1234.5f);
        CHECK_OK(sb_conv2d_forward(x, w, q->bias ? b : NULL, &q->p, y));
        CHECK_OK(sb_conv2d_backward(dy, x, w, &q->p, dx, dw, db));
        int64_t by = mismatches("y", cn, F(y), ry, ny), bx = mismatches("dx", cn, F(dx), rdx, nx),
                bw = mismatches("dw", cn, F(dw), rdw, nw),
                bb = mismatches("db", cn, F(db), rdb, q->o);
        CHECK(by + bx + bw + bb == 0,
              "conv %s (%s) [%s]: %lld y, %lld dx, %lld dw, %lld db elements differ", q->name,
              mode_names[mode], cn, (long long)by, (long long)bx, (long long)bw, (long long)bb);
        /* Each gradient alone (the others NULL) takes the same path. */
        if (c == 0) {
            sb_tensor_fill(dx, 1234.5f);
            CHECK_OK(sb_conv2d_backward(dy, x, w, &q->p, dx, NULL, NULL));
            CHECK(mismatches("dx alone", cn, F(dx), rdx, nx) == 0, "conv %s: dx alone", q->name);
        }
    }
    sb_test_config_reset();
    free(ry), free(rdx), free(rdw), free(rdb);
    sb_tensor *list[] = {x, w, b, dy, y, dx, dw, db};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

#define P(sh, sw, ph, pw, dh, dw, g) ((sb_conv2d_params){sh, sw, ph, pw, dh, dw, g})

static void test_conv_cases(void) {
    bool quick = sb_test_quick();
    int64_t lenet_n = quick ? 6 : 100;
    conv_case lenet[] = {
        {"lenet conv1", lenet_n, 1, 28, 28, 6, 5, 5, P(1, 1, 2, 2, 1, 1, 1), true},
        {"lenet conv2", lenet_n, 6, 14, 14, 16, 5, 5, P(1, 1, 0, 0, 1, 1, 1), true},
    };
    conv_case small[] = {
        {"odd prime", 7, 3, 13, 11, 5, 3, 2, P(1, 1, 1, 0, 1, 1, 1), false},
        {"stride 2", 3, 4, 12, 9, 6, 3, 3, P(2, 2, 1, 1, 1, 1, 1), true},
        {"stride 3x2 dilation 2x1", 2, 2, 17, 19, 3, 3, 4, P(3, 2, 2, 3, 2, 1, 1), true},
        {"stride 2 dilation 2", 3, 2, 11, 11, 4, 3, 3, P(2, 2, 2, 2, 2, 2, 1), true},
        {"stride 3 unread inputs", 2, 2, 10, 10, 3, 2, 2, P(3, 3, 0, 0, 1, 1, 1), true},
        {"groups 2", 7, 4, 9, 10, 6, 3, 3, P(1, 1, 1, 1, 1, 1, 2), true},
        /* 1x1 over 72 and 272 positions: the forward reads x's planes in
         * place, and from 256 positions on so does the weight gradient's
         * transposed product (tap panels of a group start mid-channel list) */
        {"1x1 in place groups 2", 3, 40, 9, 8, 6, 1, 1, P(1, 1, 0, 0, 1, 1, 2), true},
        {"1x1 transposed weight gradient", 2, 40, 17, 16, 6, 1, 1, P(1, 1, 0, 0, 1, 1, 2), true},
        {"depthwise x2", 3, 5, 8, 7, 10, 3, 3, P(1, 2, 1, 1, 1, 1, 5), true},
        {"1x1", 7, 6, 5, 5, 4, 1, 1, P(1, 1, 0, 0, 1, 1, 1), true},
        {"1x1 stride 2 groups 3", 2, 3, 7, 6, 6, 1, 1, P(2, 2, 0, 0, 1, 1, 3), true},
        {"batch 1", 1, 3, 10, 10, 4, 3, 3, P(1, 1, 1, 1, 1, 1, 1), true},
        {"kernel = input", 2, 2, 4, 4, 3, 4, 4, P(1, 1, 0, 0, 1, 1, 1), true},
        {"padding > kernel", 2, 1, 3, 3, 2, 2, 2, P(1, 1, 3, 3, 1, 1, 1), true},
        {"1-wide", 3, 2, 1, 9, 2, 1, 3, P(1, 1, 0, 1, 1, 1, 1), true},
        /* stride 1 with 3x3 taps of 29 input and 31 output channels: both
         * implicit GEMMs (forward k = 261, input gradient k = 279) run
         * two k blocks, the second continuing the first's chains from C,
         * on edge tiles of rows and columns */
        {"implicit k blocks", 2, 29, 9, 9, 31, 3, 3, P(1, 1, 1, 1, 1, 1, 1), true},
        /* the implicit forward over stride phases: stride 4 with a 5x5
         * (every phase read), dilation 3 at stride 2 (taps 0 and 2 share
         * a phase), and stride 9, past the phases' limit (im2col) */
        {"phases forward stride 4", 2, 3, 34, 33, 4, 5, 5, P(4, 4, 2, 2, 1, 1, 1), true},
        {"phases forward dilation 3", 2, 3, 24, 23, 5, 3, 3, P(2, 2, 3, 3, 3, 3, 1), false},
        {"stride 9 im2col", 2, 2, 90, 85, 3, 3, 3, P(9, 9, 1, 1, 1, 1, 1), true},
        /* the weight gradient per tap over zero-padded (n, h, w, c) copies
         * of x: stride 2 with dilation, and groups of 20 channels; a 1x1
         * at stride 2 over as many channels is left to conv2d.c's
         * products (its kernel is shorter than its stride) */
        {"tap weight gradient stride 2 dilation", 3, 17, 19, 18, 6, 3, 3, P(2, 2, 2, 1, 2, 1, 1),
         true},
        {"tap weight gradient groups", 2, 40, 9, 9, 8, 3, 3, P(1, 1, 1, 1, 1, 1, 2), false},
        {"1x1 stride 2 over 24 channels", 2, 24, 19, 18, 8, 1, 1, P(2, 2, 0, 0, 1, 1, 1), true},
    };
    /* Few pixels per sample (under 64 positions): samples side by side in
     * one product, several chunks of them (23 samples of 49 positions: 10,
     * 10, 3), chunks over threads, and the weight gradient's chains
     * continued from one chunk to the next; the deep-stage shapes of a
     * ResNet in miniature (1x1 spatial under a padded 3x3, a 1x1 stride-2
     * downsample); strides, dilation and groups in a batched product. */
    conv_case few_pixels[] = {
        {"few pixels 3 chunks", 23, 3, 7, 7, 5, 3, 3, P(1, 1, 1, 1, 1, 1, 1), true},
        {"few pixels 1x1 spatial", 9, 64, 1, 1, 48, 3, 3, P(1, 1, 1, 1, 1, 1, 1), true},
        {"few pixels 1x1 stride 2", 10, 16, 4, 4, 24, 1, 1, P(2, 2, 0, 0, 1, 1, 1), false},
        {"few pixels stride dilation groups", 25, 6, 9, 8, 4, 3, 2, P(2, 1, 1, 2, 2, 1, 2), true},
        {"few pixels stride 3", 6, 5, 11, 7, 7, 2, 3, P(3, 2, 1, 0, 1, 2, 1), true},
        /* the input gradient's column panels (14 rows of 4 positions at
         * 512 x 9 terms) end inside a sample's rows, so its gather takes
         * both a sample's rows at once and one row at a time */
        {"few pixels panels split samples", 5, 8, 4, 4, 512, 3, 3, P(1, 1, 1, 1, 1, 1, 1), false},
        /* 1x1 stride-1 products whose columns are the planes themselves
         * (MobileNet's projections), planes of 1, 4, 6 and 30 floats
         * (within and past the vector row copy), with and without bias */
        {"few pixels 1x1 planes 2x2", 37, 40, 2, 2, 24, 1, 1, P(1, 1, 0, 0, 1, 1, 1), false},
        {"few pixels 1x1 planes 1x1", 19, 33, 1, 1, 17, 1, 1, P(1, 1, 0, 0, 1, 1, 1), false},
        {"few pixels 1x1 planes 2x3", 21, 12, 2, 3, 9, 1, 1, P(1, 1, 0, 0, 1, 1, 1), true},
        {"few pixels 1x1 planes 5x6 groups", 11, 12, 5, 6, 8, 1, 1, P(1, 1, 0, 0, 1, 1, 2), false},
        /* Position classes (src/cpu/conv2d_few.c): a padded 3x3 over 4x4
         * (9 classes of 1-4 positions and 4-9 taps) in two chunks, the
         * second short; 8x8, the largest plane it takes; padding wider than
         * the kernel (positions that read no tap: classes with no terms);
         * dilation; an input gradient at stride 2 over 8x8 inputs (classes
         * of inputs read by 1, 2 or 4 taps); 1x3 and 3x1 kernels; one
         * sample whose rows are split over threads */
        {"classes 4x4 two chunks", 40, 20, 4, 4, 30, 3, 3, P(1, 1, 1, 1, 1, 1, 1), true},
        {"classes 8x8", 3, 9, 8, 8, 14, 3, 3, P(1, 1, 1, 1, 1, 1, 1), true},
        {"classes padding > kernel", 4, 3, 3, 3, 5, 2, 2, P(1, 1, 3, 3, 1, 1, 1), true},
        {"classes dilation 2", 6, 5, 5, 5, 4, 3, 3, P(1, 1, 2, 2, 2, 2, 1), true},
        {"classes stride 2 over 8x8", 5, 6, 8, 8, 7, 3, 3, P(2, 2, 1, 1, 1, 1, 1), false},
        {"classes 1x3 and groups", 7, 8, 3, 6, 6, 1, 3, P(1, 1, 0, 1, 1, 1, 2), true},
        {"classes one sample rows split", 1, 40, 2, 2, 100, 3, 3, P(1, 1, 1, 1, 1, 1, 1), true},
    };
    /* The input gradient at stride > 1 runs one product per phase (ih mod
     * sh, iw mod sw) over the taps that read it: a 7x7 stride-2 stem, a
     * stride-2 3x3 with dilation, a stride 3x2 1x3 kernel whose taps miss
     * whole phases (their inputs are empty chains), per sample (phases of
     * 64 inputs or more: 8x8 of the 16x15 stem, 10x9; on levels with offset
     * kernels read in place from one zero-margined dy copy, whose margins
     * the padding past the taps and stride 3 with dilation and groups
     * stretch) and batched (smaller phases: 3x3 of 6x5 inputs). */
    conv_case phases[] = {
        {"phases 7x7 stride 2", 3, 3, 16, 15, 4, 7, 7, P(2, 2, 3, 3, 1, 1, 1), true},
        {"phases stride 2 per sample", 3, 4, 20, 18, 5, 3, 3, P(2, 2, 1, 1, 1, 1, 1), true},
        {"phases 3x3 stride 2 dilation 2", 4, 5, 13, 12, 6, 3, 3, P(2, 2, 2, 1, 2, 2, 1), false},
        {"phases stride 3x2 empty phases", 3, 2, 12, 11, 3, 1, 3, P(3, 2, 0, 1, 1, 3, 1), true},
        {"phases batched stride 2 groups", 9, 4, 6, 5, 6, 3, 3, P(2, 2, 1, 1, 1, 1, 2), true},
        {"phases per sample padding past the taps", 2, 3, 17, 16, 4, 3, 2, P(2, 2, 3, 2, 1, 1, 1),
         true},
        {"phases per sample stride 3 dilation 2 groups", 2, 4, 26, 25, 6, 3, 3,
         P(3, 3, 2, 1, 2, 2, 2), false},
        /* a phase product of 32 x 16 terms over 24 x 24 inputs: a column
         * matrix past PANEL_FLOATS (src/cpu/conv2d.c), built in panels */
        {"phases stem in panels", 1, 3, 48, 47, 32, 7, 7, P(2, 2, 3, 3, 1, 1, 1), true},
        /* 144 taps over 56 x 56 outputs at stride 2: the forward's im2col
         * in panels of output rows */
        {"im2col in panels", 1, 16, 112, 111, 8, 3, 3, P(2, 2, 1, 1, 1, 1, 1), true},
    };
    /* Depthwise and small groups (at most 4 input channels per group) take
     * the direct kernel of src/cpu/conv2d_dw.c: flat positions over stride
     * phases (forward), the margined dy copies whose zero's sign opposes
     * each weight's (input gradient: edges where taps fall outside dy),
     * channels as lanes (weight gradient: channel counts that leave a
     * partial block of 4, 8 or 16 lanes, several samples). MobileNet /
     * EfficientNet / ConvNeXt geometries in miniature: 3x3, 5x5 and 7x7,
     * stride 1, 2 and 3, dilation, asymmetric padding, multipliers,
     * planes narrower than a vector and wider than several. */
    conv_case depthwise[] = {
        {"dw 3x3", 3, 13, 11, 9, 13, 3, 3, P(1, 1, 1, 1, 1, 1, 13), true},
        {"dw 3x3 stride 2", 2, 10, 15, 14, 10, 3, 3, P(2, 2, 1, 1, 1, 1, 10), false},
        {"dw 5x5 stride 2", 3, 9, 17, 12, 9, 5, 5, P(2, 2, 2, 2, 1, 1, 9), true},
        {"dw 7x7 pad 3 (convnext)", 2, 17, 7, 7, 17, 7, 7, P(1, 1, 3, 3, 1, 1, 17), true},
        {"dw 7x7 pad 3 wide", 1, 5, 9, 37, 5, 7, 7, P(1, 1, 3, 3, 1, 1, 5), false},
        {"dw stride 3x2 dilation 2x3", 2, 6, 19, 17, 6, 3, 3, P(3, 2, 2, 1, 2, 3, 6), true},
        {"dw stride 3 unpadded", 3, 4, 11, 13, 4, 3, 2, P(3, 3, 0, 0, 1, 1, 4), true},
        {"dw multiplier 3", 2, 5, 9, 11, 15, 3, 3, P(1, 1, 1, 1, 1, 1, 5), true},
        {"dw multiplier 2 stride 2 dilation 2", 3, 7, 12, 10, 14, 3, 3, P(2, 2, 2, 2, 2, 2, 7), true},
        {"dw padding > kernel", 2, 3, 4, 5, 3, 2, 3, P(1, 1, 3, 2, 1, 1, 3), true},
        {"dw 1-wide", 3, 2, 1, 9, 2, 1, 3, P(1, 1, 0, 1, 1, 1, 2), true},
        {"dw kernel = input", 4, 18, 5, 5, 18, 5, 5, P(1, 1, 0, 0, 1, 1, 18), false},
        {"dw 1x1 stride 2", 2, 9, 7, 6, 9, 1, 1, P(2, 2, 0, 0, 1, 1, 9), true},
        {"groups of 2", 3, 8, 9, 10, 12, 3, 3, P(1, 1, 1, 1, 1, 1, 4), true},
        {"groups of 3 stride 2", 2, 9, 11, 8, 6, 3, 3, P(2, 1, 1, 1, 1, 1, 3), true},
        {"groups of 4 dilation", 2, 8, 10, 11, 8, 3, 3, P(1, 2, 2, 1, 2, 1, 2), true},
        {"dw 17 channels 20x20", 5, 17, 20, 20, 17, 3, 3, P(1, 1, 1, 1, 1, 1, 17), true},
    };
    /* Backward weight splits samples into chunks of 8 MB of columns; this
     * one needs three, so its chains continue across chunks. */
    conv_case chunked = {"chunked chain", 33, 16, 32, 32, 2, 3, 3, P(1, 1, 1, 1, 1, 1, 1), true};

    for (size_t i = 0; i < sizeof lenet / sizeof lenet[0]; i++) {
        run_conv(&lenet[i], VAL_RAND);
        run_conv(&lenet[i], VAL_ADV);
    }
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++)
        for (int m = VAL_RAND; m <= VAL_TINY; m++) run_conv(&small[i], (val_mode)m);
    for (size_t i = 0; i < sizeof few_pixels / sizeof few_pixels[0]; i++)
        for (int m = VAL_RAND; m <= VAL_TINY; m++) run_conv(&few_pixels[i], (val_mode)m);
    for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++)
        for (int m = VAL_RAND; m <= VAL_TINY; m++) run_conv(&phases[i], (val_mode)m);
    for (size_t i = 0; i < sizeof depthwise / sizeof depthwise[0]; i++)
        for (int m = VAL_RAND; m <= VAL_TINY; m++) run_conv(&depthwise[i], (val_mode)m);
    run_conv(&chunked, VAL_RAND);
}

/* One inf or NaN among 147,456 weights (more than two of the finiteness
 * scan's 65,536-weight blocks, which threads share): at 1x1 planes under a
 * padded 3x3 the forward's dead taps and the input gradient's stuffed terms
 * meet it as 0 * inf = NaN, so the fast paths must see it wherever it lies,
 * first, last or at a block's edge, and give the reference's NaNs. */
static void test_conv_one_nonfinite_weight(void) {
    sb_conv2d_params p = P(1, 1, 1, 1, 1, 1, 1);
    sb_conv2d_geom g = {.n = 2, .c_in = 256, .h = 1, .w = 1, .c_out = 64, .kh = 3, .kw = 3,
                        .oh = 1, .ow = 1, .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1,
                        .dilation_h = 1, .dilation_w = 1, .groups = 1};
    sb_tensor *x = oracle_tensor(SB_F32, 4, g.n, g.c_in, 1, 1);
    sb_tensor *w = oracle_tensor(SB_F32, 4, g.c_out, g.c_in, 3, 3);
    sb_tensor *dy = oracle_tensor(SB_F32, 4, g.n, g.c_out, 1, 1);
    sb_tensor *y = oracle_tensor(SB_F32, 4, g.n, g.c_out, 1, 1);
    sb_tensor *dx = oracle_tensor(SB_F32, 4, g.n, g.c_in, 1, 1);
    fill(x, VAL_RAND, false);
    fill(dy, VAL_RAND, false);
    int64_t nw = sb_tensor_numel(w), ny = sb_tensor_numel(y), nx = sb_tensor_numel(x);
    const int64_t at[] = {0, 65535, 65536, 131071, nw - 1};
    float *ry = malloc((size_t)ny * 4), *rdx = malloc((size_t)nx * 4);
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        fill(w, VAL_RAND, false);
        F(w)[at[k]] = k % 2 ? NAN : -INFINITY;
        sb_ref_conv2d_forward(&g, F(x), F(w), NULL, ry);
        sb_ref_conv2d_backward_input(&g, F(dy), F(w), rdx);
        for (int c = 0; c < sb_test_config_count(); c++) {
            sb_test_config_apply(c);
            const char *cn = sb_test_config_name(c);
            CHECK_OK(sb_conv2d_forward(x, w, NULL, &p, y));
            CHECK_OK(sb_conv2d_backward(dy, x, w, &p, dx, NULL, NULL));
            int64_t by = mismatches("y", cn, F(y), ry, ny), bx = mismatches("dx", cn, F(dx), rdx, nx);
            CHECK(by + bx == 0, "one non-finite weight at %lld [%s]: %lld y, %lld dx elements differ",
                  (long long)at[k], cn, (long long)by, (long long)bx);
        }
        sb_test_config_reset();
    }
    free(ry), free(rdx);
    sb_tensor *list[] = {x, w, dy, y, dx};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

/* The case that refutes "a zero-stuffed GEMM is exact for finite weights":
 * fmaf(-2^-75, 2^-76, +0) = -0, and a stuffed fmaf(+0, w > 0, -0) = +0. At
 * the corner of a 3x3 unpadded convolution only tap (0,0) reads the input,
 * so the contract's chain is that one term (-0) while a GEMM over the
 * zero-stuffed columns continues with eight +0 * w terms. */
static void test_conv_negative_zero(void) {
    conv_case q = {"-0 corner", 1, 1, 4, 4, 1, 3, 3, P(1, 1, 0, 0, 1, 1, 1), false};
    sb_tensor *x = oracle_tensor(SB_F32, 4, 1, 1, 4, 4), *w = oracle_tensor(SB_F32, 4, 1, 1, 3, 3);
    sb_tensor *dy = oracle_tensor(SB_F32, 4, 1, 1, 2, 2), *dx = oracle_tensor(SB_F32, 4, 1, 1, 4, 4);
    sb_tensor_fill(x, 1.0f);
    sb_tensor_fill(w, ldexpf(1.0f, -76));
    sb_tensor_fill(dy, -ldexpf(1.0f, -75));
    sb_conv2d_geom g = {.n = 1, .c_in = 1, .h = 4, .w = 4, .c_out = 1, .kh = 3, .kw = 3, .oh = 2,
                        .ow = 2, .stride_h = 1, .stride_w = 1, .dilation_h = 1, .dilation_w = 1,
                        .groups = 1};
    float want[16];
    sb_ref_conv2d_backward_input(&g, F(dy), F(w), want);
    CHECK_BITS(want[0], -0.0f, "the reference corner is -0");
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        sb_tensor_fill(dx, 1.0f);
        CHECK_OK(sb_conv2d_backward(dy, x, w, &q.p, dx, NULL, NULL));
        for (int i = 0; i < 16; i++)
            CHECK_BITS(F(dx)[i], want[i], "%s [%s] dx[%d]", q.name, sb_test_config_name(c), i);
    }
    sb_test_config_reset();
    sb_tensor *list[] = {x, w, dy, dx};
    for (size_t i = 0; i < 4; i++) sb_tensor_free(list[i]);
}

/* ---- pooling ---- */

typedef struct {
    const char *name;
    int64_t n, c, h, w;
    sb_pool2d_params p;
} pool_case;

static void run_pool(const pool_case *q, bool ties) {
    int64_t oh, ow;
    CHECK_OK(sb_pool2d_output_size(q->h, q->w, &q->p, &oh, &ow));
    sb_pool2d_geom g = {.planes = q->n * q->c, .h = q->h, .w = q->w, .oh = oh, .ow = ow,
                        .kh = q->p.kernel_h, .kw = q->p.kernel_w,
                        .stride_h = q->p.stride_h ? q->p.stride_h : q->p.kernel_h,
                        .stride_w = q->p.stride_w ? q->p.stride_w : q->p.kernel_w,
                        .pad_h = q->p.pad_h, .pad_w = q->p.pad_w,
                        .count_include_pad = q->p.count_include_pad,
                        .dil_h = q->p.dilation_h, .dil_w = q->p.dilation_w,
                        .divisor = q->p.divisor_override};
    /* dilation is max pooling's only, divisor_override average pooling's */
    bool run_max = q->p.divisor_override == 0;
    bool run_avg = q->p.dilation_h <= 1 && q->p.dilation_w <= 1;
    sb_tensor *x = oracle_tensor(SB_F32, 4, q->n, q->c, q->h, q->w);
    sb_tensor *dx = oracle_tensor(SB_F32, 4, q->n, q->c, q->h, q->w);
    sb_tensor *y = oracle_tensor(SB_F32, 4, q->n, q->c, oh, ow);
    sb_tensor *dy = oracle_tensor(SB_F32, 4, q->n, q->c, oh, ow);
    sb_tensor *idx = oracle_tensor(SB_I64, 4, q->n, q->c, oh, ow);
    /* Ties: few distinct values, both zeros, infinities and NaN, so the
     * first-wins and NaN rules decide most windows. */
    static const float tie_vals[] = {1.0f, 1.0f, -1.0f, 0.0f, -0.0f, 0.0f, -0.0f, INFINITY,
                                     -INFINITY, NAN, 2.0f, -2.0f};
    float *xf = F(x);
    for (int64_t i = 0; i < sb_tensor_numel(x); i++)
        xf[i] = ties ? tie_vals[oracle_rand() % 12] : oracle_rand_float();
    fill(dy, ties ? VAL_ADV_NONFINITE : VAL_RAND, false);
    int64_t nx = sb_tensor_numel(x), ny = sb_tensor_numel(y);
    float *ry = malloc((size_t)ny * 4), *rdx = malloc((size_t)nx * 4);
    float *ray = malloc((size_t)ny * 4), *radx = malloc((size_t)nx * 4);
    int64_t *ridx = malloc((size_t)ny * 8);
    if (run_max) {
        sb_ref_max_pool2d_forward(&g, xf, ry, ridx);
        sb_ref_max_pool2d_backward(&g, F(dy), ridx, rdx);
    }
    if (run_avg) {
        sb_ref_avg_pool2d_forward(&g, xf, ray);
        sb_ref_avg_pool2d_backward(&g, F(dy), radx);
    }
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        const char *cn = sb_test_config_name(c);
        int64_t bad_idx = 0, by = 0, bdx = 0, bay = 0, badx = 0;
        if (run_max) {
            sb_tensor_fill(y, 1234.5f);
            memset(idx->data, 0xff, (size_t)ny * 8);
            CHECK_OK(sb_max_pool2d_forward(x, &q->p, y, idx));
            for (int64_t i = 0; i < ny; i++) bad_idx += ((int64_t *)idx->data)[i] != ridx[i];
            by = mismatches("max y", cn, F(y), ry, ny);
            /* y is a bit copy of the winner: NaN payloads included. */
            for (int64_t i = 0; i < ny; i++) by += sb_test_bits(F(y)[i]) != sb_test_bits(ry[i]);
            sb_tensor_fill(dx, 1234.5f);
            CHECK_OK(sb_max_pool2d_backward(dy, idx, &q->p, dx));
            bdx = mismatches("max dx", cn, F(dx), rdx, nx);
        }
        if (run_avg) {
            sb_tensor_fill(y, 1234.5f);
            CHECK_OK(sb_avg_pool2d_forward(x, &q->p, y));
            bay = mismatches("avg y", cn, F(y), ray, ny);
            sb_tensor_fill(dx, 1234.5f);
            CHECK_OK(sb_avg_pool2d_backward(dy, &q->p, dx));
            badx = mismatches("avg dx", cn, F(dx), radx, nx);
        }
        CHECK(bad_idx + by + bdx + bay + badx == 0,
              "pool %s%s [%s]: %lld indices, %lld max y, %lld max dx, %lld avg y, %lld avg dx "
              "differ",
              q->name, ties ? " (ties)" : "", cn, (long long)bad_idx, (long long)by,
              (long long)bdx, (long long)bay, (long long)badx);
    }
    sb_test_config_reset();
    free(ry), free(rdx), free(ray), free(radx), free(ridx);
    sb_tensor *list[] = {x, dx, y, dy, idx};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

#define PP(kh, kw, sh, sw, ph, pw, ceil, incl) ((sb_pool2d_params){kh, kw, sh, sw, ph, pw, ceil, incl, 0, 0, 0})
/* with dilation (max only) or divisor_override (avg only) */
#define PPX(kh, kw, sh, sw, ph, pw, ceil, incl, dh, dw, div) \
    ((sb_pool2d_params){kh, kw, sh, sw, ph, pw, ceil, incl, dh, dw, div})

static void test_pool_cases(void) {
    int64_t lenet_n = sb_test_quick() ? 6 : 100;
    pool_case cases[] = {
        {"lenet pool1", lenet_n, 6, 28, 28, SB_POOL2D_PARAMS(2, 2)},
        {"lenet pool2", lenet_n, 16, 10, 10, SB_POOL2D_PARAMS(2, 2)},
        {"3x3/2 pad 1 overlapping", 3, 4, 13, 11, PP(3, 3, 2, 2, 1, 1, false, true)},
        {"3x3/2 ceil", 2, 3, 10, 9, PP(3, 3, 2, 2, 0, 0, true, true)},
        /* an input the maximum of up to 25 windows (32 lanes), and of up to
         * 49 (more than the 32 lanes of the scatter: the reference loops) */
        {"5x5/1 pad 2", 2, 3, 12, 13, PP(5, 5, 1, 1, 2, 2, false, true)},
        {"7x7/1 pad 3", 2, 3, 15, 14, PP(7, 7, 1, 1, 3, 3, false, true)},
        {"2x3 stride 1x3 pad, exclude pad", 2, 2, 7, 8, PP(2, 3, 1, 3, 1, 1, false, false)},
        {"2x2/3 ceil (gaps)", 2, 2, 11, 10, PP(2, 2, 3, 3, 0, 0, true, true)},
        {"4x4/2 pad 2 ceil", 1, 5, 9, 12, PP(4, 4, 2, 2, 2, 2, true, false)},
        {"3x3/3 pad 1 ceil disjoint", 2, 3, 8, 7, PP(3, 3, 3, 3, 1, 1, true, true)},
        {"1x1", 3, 7, 5, 3, SB_POOL2D_PARAMS(1, 1)},
        {"odd 5x5 2x2", 7, 3, 5, 5, SB_POOL2D_PARAMS(2, 2)},
        {"wide 2x2 (rows of several vectors)", 2, 3, 6, 71, SB_POOL2D_PARAMS(2, 2)},
        {"3x3/1 pad 1 dilation 2", 3, 4, 13, 11, PPX(3, 3, 1, 1, 1, 1, false, true, 2, 2, 0)},
        {"2x2/2 dilation 2 (lenet shape)", 5, 6, 28, 28, PPX(2, 2, 2, 2, 0, 0, false, true, 2, 2, 0)},
        {"3x2/2x1 pad 1 ceil dilation 3x2", 2, 3, 17, 9, PPX(3, 2, 2, 1, 1, 1, true, true, 3, 2, 0)},
        {"2x2 dilation 4 pad 1 ceil", 2, 2, 7, 7, PPX(2, 2, 2, 2, 1, 1, true, true, 4, 4, 0)},
        {"3x3/2 pad 1 divisor_override 5", 3, 4, 13, 11, PPX(3, 3, 2, 2, 1, 1, false, true, 0, 0, 5)},
        {"2x2 disjoint divisor_override -3", 2, 6, 28, 28, PPX(2, 2, 2, 2, 0, 0, false, false, 0, 0, -3)},
        {"3x3/3 pad 1 ceil divisor_override 2", 2, 3, 8, 7, PPX(3, 3, 3, 3, 1, 1, true, true, 0, 0, 2)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_pool(&cases[i], false);
        run_pool(&cases[i], true);
    }
}

/* Routing must not skip validation: a bad index is still refused, with
 * nothing written. */
static void test_errors(void) {
    sb_pool2d_params p = SB_POOL2D_PARAMS(2, 2);
    sb_tensor *dx = oracle_tensor(SB_F32, 4, 1, 1, 4, 4), *dy = oracle_tensor(SB_F32, 4, 1, 1, 2, 2);
    sb_tensor *idx = oracle_tensor(SB_I64, 4, 1, 1, 2, 2);
    int64_t *ip = idx->data;
    ip[0] = 0, ip[1] = 2, ip[2] = 8, ip[3] = 5; /* 5 is not in window (1,1) */
    sb_tensor_fill(dx, 7.0f);
    sb_tensor_fill(dy, 1.0f);
    CHECK_ERROR(sb_max_pool2d_backward(dy, idx, &p, dx), SB_ERR_RANGE, "outside its window");
    CHECK(F(dx)[0] == 7.0f && F(dx)[15] == 7.0f, "dx written on error");
    sb_tensor *w = oracle_tensor(SB_F32, 4, 2, 1, 3, 3), *y = oracle_tensor(SB_F32, 4, 1, 2, 2, 2);
    CHECK_ERROR(sb_conv2d_forward(dx, w, NULL, NULL, NULL), SB_ERR_NULL, "sb_conv2d_forward");
    sb_tensor_free(dx), sb_tensor_free(dy), sb_tensor_free(idx), sb_tensor_free(w), sb_tensor_free(y);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    oracle_seed(0x6a09e667f3bcc909ull);
    test_conv_negative_zero();
    test_conv_one_nonfinite_weight();
    test_conv_cases();
    test_pool_cases();
    test_errors();
    return sb_test_finish();
}
