/* Differential tests of the fast activations, normalisation, reductions and
 * dropout (src/cpu/{activation,norm,reduce,dropout}.c; norm: batch, layer and group): for every ISA level
 * x thread count of tests/support/fastpath.h, the public op must give the
 * bits of the reference kernel (src/ref/) on the same data, NaN payloads
 * included (both sides run the same IEEE operations per element).
 *
 * The data makes order visible: sums mix magnitudes so that any other
 * summation order changes the bits (checked once below), and every
 * reduction is also run over more than 8192 elements and over strided
 * (transposed) inputs. */
#include <math.h>
#include "core/canonical_sum.h"
#include "cpu/ops_internal.h"
#include "harness.h"
#include "ref/ref_loss.h"
#include "ref/ref_norm.h"
#include "ref/ref_pointwise.h"
#include "samebits.h"
#include "support/fastpath.h"

/* ---- helpers ---------------------------------------------------------------- */


/* Finite values of mixed magnitudes: sums of them are order-sensitive, and
 * a constant offset makes the two-pass variance cancel. */
static float mixed(void) {
    int k = (int)(sb_test_rand32() % 8);
    if (k == 0) return sb_test_unif(-1e6f, 1e6f);
    if (k == 1) return sb_test_unif(-1e-30f, 1e-30f); /* tiny, some subnormal after rounding */
    return 1000.0f + sb_test_unif(-1.0f, 1.0f);
}

/* kind 0: mixed finite, 1: adversarial (inf/NaN/subnormal/±0) */
static void fill(float *x, int64_t n, int kind) {
    for (int64_t i = 0; i < n; i++) x[i] = kind ? sb_test_adversarial(6.0f) : mixed();
}

static float *alloc(int64_t n) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    return p;
}

/* Counts one check for a whole buffer; reports the first difference. A
 * NaN produced by arithmetic matches any NaN: when two NaNs meet, which
 * payload survives depends on the operand order the compiler picks for a
 * commutative operation, and the contract leaves it open ("Elementwise").
 * Results that pass an input through (max, min) use check_exact. */
static void check_buf_mode(const float *got, const float *want, int64_t n, bool exact,
                           const char *what, const char *cfg) {
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++)
        if (sb_test_bits(got[i]) != sb_test_bits(want[i]) &&
            (exact || !isnan(got[i]) || !isnan(want[i])))
            bad = i;
    CHECK(bad < 0, "%s [%s]: element %lld of %lld: got %a (0x%08x) want %a (0x%08x)", what, cfg,
          (long long)bad, (long long)n, bad >= 0 ? got[bad] : 0.0f,
          bad >= 0 ? sb_test_bits(got[bad]) : 0u, bad >= 0 ? want[bad] : 0.0f,
          bad >= 0 ? sb_test_bits(want[bad]) : 0u);
}
static void check_buf(const float *got, const float *want, int64_t n, const char *what,
                      const char *cfg) {
    check_buf_mode(got, want, n, false, what, cfg);
}
static void check_exact(const float *got, const float *want, int64_t n, const char *what,
                        const char *cfg) {
    check_buf_mode(got, want, n, true, what, cfg);
}

static void check_idx(const int64_t *got, const int64_t *want, int64_t n, const char *what,
                      const char *cfg) {
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++)
        if (got[i] != want[i]) bad = i;
    CHECK(bad < 0, "%s [%s]: index %lld: got %lld want %lld", what, cfg, (long long)bad,
          bad >= 0 ? (long long)got[bad] : 0LL, bad >= 0 ? (long long)want[bad] : 0LL);
}

static sb_tensor view(void *data, sb_dtype dt, int ndim, const int64_t *shape) {
    sb_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.ndim = ndim;
    t.data = data;
    int64_t st = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        t.shape[d] = shape[d];
        t.strides[d] = st;
        st *= shape[d];
    }
    return t;
}

static int64_t numel(int nd, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    return n;
}

/* ---- activations -------------------------------------------------------------------- */

enum { A_TANH, A_SIGMOID, A_SILU, A_GELU, A_GELU_TANH, A_SOFTPLUS, A_LEAKY, A_COUNT };
static const char *act_name[A_COUNT] = {"tanh", "sigmoid", "silu", "gelu", "gelu(tanh)",
                                        "softplus", "leaky_relu"};

static void ref_act(int a, bool bwd, int64_t n, const float *x, const float *dy, float *out) {
    const float beta = 0.75f, thr = 15.0f, slope = 0.0625f;
    switch (a) {
    case A_TANH:
        if (bwd) sb_ref_tanh_backward(n, x, dy, out); else sb_ref_tanh_forward(n, x, out);
        break;
    case A_SIGMOID:
        if (bwd) sb_ref_sigmoid_backward(n, x, dy, out); else sb_ref_sigmoid_forward(n, x, out);
        break;
    case A_SILU:
        if (bwd) sb_ref_silu_backward(n, x, dy, out); else sb_ref_silu_forward(n, x, out);
        break;
    case A_GELU:
    case A_GELU_TANH:
        if (bwd) sb_ref_gelu_backward(n, x, dy, a == A_GELU_TANH, out);
        else sb_ref_gelu_forward(n, x, a == A_GELU_TANH, out);
        break;
    case A_SOFTPLUS:
        if (bwd) sb_ref_softplus_backward(n, x, dy, beta, thr, out);
        else sb_ref_softplus_forward(n, x, beta, thr, out);
        break;
    case A_LEAKY:
        if (bwd) sb_ref_leaky_relu_backward(n, x, dy, slope, out);
        else sb_ref_leaky_relu_forward(n, x, slope, out);
        break;
    }
}

static sb_status api_act(int a, bool bwd, const sb_tensor *x, const sb_tensor *dy, sb_tensor *out) {
    const float beta = 0.75f, thr = 15.0f, slope = 0.0625f;
    switch (a) {
    case A_TANH: return bwd ? sb_tanh_backward(x, dy, out) : sb_tanh_forward(x, out);
    case A_SIGMOID: return bwd ? sb_sigmoid_backward(x, dy, out) : sb_sigmoid_forward(x, out);
    case A_SILU: return bwd ? sb_silu_backward(x, dy, out) : sb_silu_forward(x, out);
    case A_GELU:
    case A_GELU_TANH:
        return bwd ? sb_gelu_backward(x, dy, a == A_GELU_TANH, out)
                   : sb_gelu_forward(x, a == A_GELU_TANH, out);
    case A_SOFTPLUS:
        return bwd ? sb_softplus_backward(x, dy, beta, thr, out)
                   : sb_softplus_forward(x, beta, thr, out);
    default:
        return bwd ? sb_leaky_relu_backward(x, dy, slope, out)
                   : sb_leaky_relu_forward(x, slope, out);
    }
}

static void test_activations(void) {
    const int64_t sizes[] = {1, 3, 31, 513, 4099, 70001};
    const int nsizes = sizeof sizes / sizeof sizes[0];
    int64_t maxn = 70001;
    float *x = alloc(maxn), *dy = alloc(maxn), *got = alloc(maxn);
    float *want[A_COUNT][2];
    fill(x, maxn, 1);
    fill(dy, maxn, 1);
    for (int a = 0; a < A_COUNT; a++)
        for (int b = 0; b < 2; b++) {
            want[a][b] = alloc(maxn);
            ref_act(a, b, maxn, x, dy, want[a][b]);
        }
    /* a 61 x 67 transposed view of the first 4087 elements */
    int64_t sh[2] = {61, 67}, tsh[2] = {67, 61};
    float *xt = alloc(4087), *dyt = alloc(4087), *wt = alloc(4087);
    for (int64_t i = 0; i < 67; i++)
        for (int64_t j = 0; j < 61; j++) {
            xt[i * 61 + j] = x[j * 67 + i];
            dyt[i * 61 + j] = dy[j * 67 + i];
        }
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        const char *cfg = sb_test_config_name(c);
        for (int a = 0; a < A_COUNT; a++)
            for (int b = 0; b < 2; b++) {
                char what[64];
                snprintf(what, sizeof what, "%s %s", act_name[a], b ? "backward" : "forward");
                for (int s = 0; s < nsizes; s++) {
                    int64_t n = sizes[s];
                    /* elementwise: the first n of the long reference result */
                    sb_tensor tx = view(x, SB_F32, 1, &n), tdy = view(dy, SB_F32, 1, &n);
                    sb_tensor tg = view(got, SB_F32, 1, &n);
                    CHECK_OK(api_act(a, b, &tx, &tdy, &tg));
                    check_buf(got, want[a][b], n, what, cfg);
                }
                /* strided input: x^T of the 61 x 67 block */
                sb_tensor tx = view(x, SB_F32, 2, sh), tdy = view(dy, SB_F32, 2, sh);
                tx.shape[0] = 67; tx.shape[1] = 61; tx.strides[0] = 1; tx.strides[1] = 67;
                tdy.shape[0] = 67; tdy.shape[1] = 61; tdy.strides[0] = 1; tdy.strides[1] = 67;
                sb_tensor tg = view(got, SB_F32, 2, tsh);
                ref_act(a, b, 4087, xt, dyt, wt);
                CHECK_OK(api_act(a, b, &tx, &tdy, &tg));
                snprintf(what, sizeof what, "%s %s transposed", act_name[a],
                         b ? "backward" : "forward");
                check_buf(got, wt, 4087, what, cfg);
                /* in place: y overwrites x */
                if (!b) {
                    memcpy(got, x, 4099 * sizeof *got);
                    int64_t n = 4099;
                    sb_tensor tin = view(got, SB_F32, 1, &n);
                    CHECK_OK(api_act(a, false, &tin, NULL, &tin));
                    snprintf(what, sizeof what, "%s forward in place", act_name[a]);
                    check_buf(got, want[a][0], n, what, cfg);
                }
            }
    }
    sb_test_config_reset();
    for (int a = 0; a < A_COUNT; a++) { free(want[a][0]); free(want[a][1]); }
    free(x); free(dy); free(got); free(xt); free(dyt); free(wt);
}

/* ---- batch norm --------------------------------------------------------------------- */

static void test_batch_norm(void) {
    /* (N, C, S): odd and prime sizes, S = 1 (BatchNorm1d), > 8192 per channel,
     * and contiguous runs longer than the fast path's chunk */
    /* S below 16 takes the few-pixel path (column sums over rows (n, s));
     * 2100x70x4 has over 8192 such rows and a last 64-channel tile
     * narrower than a vector */
    const int64_t shapes[][3] = {{2, 1, 1}, {7, 3, 5}, {13, 5, 11}, {2, 17, 1}, {100, 16, 100},
                                 {3, 2, 4099}, {1, 3, 9001}, {300, 7, 1}, {2100, 70, 4}};
    const int nshapes = sizeof shapes / sizeof shapes[0];
    for (int sh = 0; sh < nshapes; sh++) {
        int64_t N = shapes[sh][0], C = shapes[sh][1], S = shapes[sh][2], n = N * C * S;
        int64_t xshape[3] = {N, C, S}, cshape[1] = {C};
        float *x = alloc(n), *dy = alloc(n), *y = alloc(n), *yw = alloc(n), *dx = alloc(n),
              *dxw = alloc(n);
        float *gamma = alloc(C), *beta = alloc(C), *rm0 = alloc(C), *rv0 = alloc(C);
        float *rm = alloc(C), *rv = alloc(C), *rmw = alloc(C), *rvw = alloc(C);
        float *sm = alloc(C), *sr = alloc(C), *smw = alloc(C), *srw = alloc(C);
        float *dg = alloc(C), *db = alloc(C), *dgw = alloc(C), *dbw = alloc(C);
        for (int64_t c = 0; c < C; c++) {
            gamma[c] = sb_test_unif(0.5f, 2.0f);
            beta[c] = sb_test_unif(-1.0f, 1.0f);
            rm0[c] = sb_test_unif(-1.0f, 1.0f);
            rv0[c] = sb_test_unif(0.5f, 2.0f);
        }
        sb_tensor tx = view(x, SB_F32, 3, xshape), tdy = view(dy, SB_F32, 3, xshape);
        sb_tensor ty = view(y, SB_F32, 3, xshape), tdx = view(dx, SB_F32, 3, xshape);
        sb_tensor tg = view(gamma, SB_F32, 1, cshape), tb = view(beta, SB_F32, 1, cshape);
        sb_tensor trm = view(rm, SB_F32, 1, cshape), trv = view(rv, SB_F32, 1, cshape);
        sb_tensor tsm = view(sm, SB_F32, 1, cshape), tsr = view(sr, SB_F32, 1, cshape);
        sb_tensor tdg = view(dg, SB_F32, 1, cshape), tdb = view(db, SB_F32, 1, cshape);
        int steps = sh < 3 ? 3 : 1; /* running statistics over several steps */
        for (int c = 0; c < sb_test_config_count(); c++) {
            sb_test_config_apply(c);
            const char *cfg = sb_test_config_name(c);
            char what[96];
            memcpy(rm, rm0, C * sizeof *rm); memcpy(rv, rv0, C * sizeof *rv);
            memcpy(rmw, rm0, C * sizeof *rm); memcpy(rvw, rv0, C * sizeof *rv);
            /* same data in every configuration */
            uint64_t saved = sb_test_seed(0x1234567ull + (uint64_t)sh);
            for (int step = 0; step < steps; step++) {
                fill(x, n, step == 2); /* the third step has inf/NaN */
                fill(dy, n, 0);
                bool affine = (step + sh) % 2 == 0;
                snprintf(what, sizeof what, "batch norm %lldx%lldx%lld step %d",
                         (long long)N, (long long)C, (long long)S, step);
                sb_ref_batch_norm_forward(x, affine ? gamma : NULL, affine ? beta : NULL, rmw, rvw,
                                          true, 0.1f, 1e-5f, yw, smw, srw, N, C, S);
                CHECK_OK(sb_batch_norm_forward(&tx, affine ? &tg : NULL, affine ? &tb : NULL,
                                               &trm, &trv, true, 0.1f, 1e-5f, &ty, &tsm, &tsr));
                check_buf(y, yw, n, what, cfg);
                check_buf(sm, smw, C, "batch norm save_mean", cfg);
                check_buf(sr, srw, C, "batch norm save_rstd", cfg);
                check_buf(rm, rmw, C, "batch norm running_mean", cfg);
                check_buf(rv, rvw, C, "batch norm running_var", cfg);
                for (int training = 0; training < 2; training++) {
                    sb_ref_batch_norm_backward(dy, x, affine ? gamma : NULL, smw, srw, training,
                                               dxw, dgw, dbw, N, C, S);
                    CHECK_OK(sb_batch_norm_backward(&tdy, &tx, affine ? &tg : NULL, &tsm, &tsr,
                                                    training, &tdx, &tdg, &tdb));
                    check_buf(dx, dxw, n, training ? "batch norm dx (train)" : "batch norm dx (eval)", cfg);
                    check_buf(dg, dgw, C, "batch norm dgamma", cfg);
                    check_buf(db, dbw, C, "batch norm dbeta", cfg);
                }
                /* dx only, no parameter gradients */
                CHECK_OK(sb_batch_norm_backward(&tdy, &tx, NULL, &tsm, &tsr, true, &tdx, NULL, NULL));
                sb_ref_batch_norm_backward(dy, x, NULL, smw, srw, true, dxw, NULL, NULL, N, C, S);
                check_buf(dx, dxw, n, "batch norm dx without gamma", cfg);
            }
            /* eval mode with the running statistics */
            sb_ref_batch_norm_forward(x, gamma, beta, rmw, rvw, false, 0.1f, 1e-5f, yw, NULL, NULL,
                                      N, C, S);
            CHECK_OK(sb_batch_norm_forward(&tx, &tg, &tb, &trm, &trv, false, 0.1f, 1e-5f, &ty, NULL,
                                           NULL));
            check_buf(y, yw, n, "batch norm eval", cfg);
            /* training without running statistics, in place (y = x) */
            sb_ref_batch_norm_forward(x, NULL, beta, NULL, NULL, true, 0.1f, 1e-3f, yw, NULL, NULL,
                                      N, C, S);
            CHECK_OK(sb_batch_norm_forward(&tx, NULL, &tb, NULL, NULL, true, 0.1f, 1e-3f, &tx, NULL,
                                           NULL));
            check_buf(x, yw, n, "batch norm in place", cfg);
            sb_test_seed(saved);
        }
        sb_test_config_reset();
        free(x); free(dy); free(y); free(yw); free(dx); free(dxw);
        free(gamma); free(beta); free(rm0); free(rv0); free(rm); free(rv); free(rmw); free(rvw);
        free(sm); free(sr); free(smw); free(srw); free(dg); free(db); free(dgw); free(dbw);
    }
}

/* ---- layer norm --------------------------------------------------------------------- */

static void test_layer_norm(void) {
    /* (R, D): D = 1, prime D, D > 8192, R > 8192 (multi-block column sums
     * of the parameter gradients), D whose last 64-column tile of those
     * sums is narrower than a vector (69) or ends in a ragged vector (84) */
    const int64_t shapes[][2] = {{1, 1}, {7, 13}, {5, 1031}, {3, 9001}, {100, 400}, {301, 5},
                                 {9000, 3}, {40, 84}, {8200, 69}};
    const int nshapes = sizeof shapes / sizeof shapes[0];
    for (int sh = 0; sh < nshapes; sh++) {
        int64_t R = shapes[sh][0], D = shapes[sh][1], n = R * D;
        int64_t xshape[2] = {R, D}, rshape[1] = {R}, dshape[1] = {D};
        float *x = alloc(n), *dy = alloc(n), *y = alloc(n), *yw = alloc(n), *dx = alloc(n),
              *dxw = alloc(n);
        float *w = alloc(D), *b = alloc(D), *dw = alloc(D), *db = alloc(D), *dww = alloc(D),
              *dbw = alloc(D);
        float *sm = alloc(R), *sr = alloc(R), *smw = alloc(R), *srw = alloc(R);
        for (int64_t i = 0; i < D; i++) {
            w[i] = sb_test_unif(0.5f, 2.0f);
            b[i] = sb_test_unif(-1.0f, 1.0f);
        }
        sb_tensor tx = view(x, SB_F32, 2, xshape), tdy = view(dy, SB_F32, 2, xshape);
        sb_tensor ty = view(y, SB_F32, 2, xshape), tdx = view(dx, SB_F32, 2, xshape);
        sb_tensor tw = view(w, SB_F32, 1, dshape), tb = view(b, SB_F32, 1, dshape);
        sb_tensor tdw = view(dw, SB_F32, 1, dshape), tdb = view(db, SB_F32, 1, dshape);
        sb_tensor tsm = view(sm, SB_F32, 1, rshape), tsr = view(sr, SB_F32, 1, rshape);
        for (int kind = 0; kind < 2; kind++) {
            fill(x, n, kind);
            fill(dy, n, 0);
            bool affine = kind == 0;
            const float *wp = affine ? w : NULL, *bp = affine ? b : NULL;
            sb_ref_layer_norm_forward(x, wp, bp, 1e-5f, yw, smw, srw, R, D);
            sb_ref_layer_norm_backward(dy, x, wp, smw, srw, dxw, dww, dbw, R, D);
            for (int c = 0; c < sb_test_config_count(); c++) {
                sb_test_config_apply(c);
                const char *cfg = sb_test_config_name(c);
                char what[96];
                snprintf(what, sizeof what, "layer norm %lldx%lld %s", (long long)R, (long long)D,
                         kind ? "adversarial" : "mixed");
                CHECK_OK(sb_layer_norm_forward(&tx, 1, affine ? &tw : NULL, affine ? &tb : NULL,
                                               1e-5f, &ty, &tsm, &tsr));
                check_buf(y, yw, n, what, cfg);
                check_buf(sm, smw, R, "layer norm save_mean", cfg);
                check_buf(sr, srw, R, "layer norm save_rstd", cfg);
                CHECK_OK(sb_layer_norm_backward(&tdy, &tx, 1, affine ? &tw : NULL, &tsm, &tsr,
                                                &tdx, &tdw, &tdb));
                check_buf(dx, dxw, n, "layer norm dx", cfg);
                check_buf(dw, dww, D, "layer norm dw", cfg);
                check_buf(db, dbw, D, "layer norm db", cfg);
            }
            sb_test_config_reset();
        }
        /* the weight alone (LayerNorm(bias=False)) and the bias alone */
        for (int part = 0; part < 2; part++) {
            const float *wp = part == 0 ? w : NULL, *bp = part == 0 ? NULL : b;
            sb_ref_layer_norm_forward(x, wp, bp, 1e-5f, yw, smw, srw, R, D);
            for (int c = 0; c < sb_test_config_count(); c++) {
                sb_test_config_apply(c);
                CHECK_OK(sb_layer_norm_forward(&tx, 1, wp ? &tw : NULL, bp ? &tb : NULL, 1e-5f,
                                               &ty, &tsm, &tsr));
                check_buf(y, yw, n, part == 0 ? "layer norm, weight only" : "layer norm, bias only",
                          sb_test_config_name(c));
            }
            sb_test_config_reset();
        }
        free(x); free(dy); free(y); free(yw); free(dx); free(dxw);
        free(w); free(b); free(dw); free(db); free(dww); free(dbw);
        free(sm); free(sr); free(smw); free(srw);
    }
}

/* ---- group norm ---------------------------------------------------------------------- */

static void test_group_norm(void) {
    /* (N, C, S, G): S = 1 (no spatial dims), instance norm (G = C), groups
     * > 8192 elements, N > 8192 samples in the per-channel parameter sums;
     * S below 16 sums the parameter gradients over rows (n, s): 2100x70x4
     * has over 8192 of them and a last 64-channel tile narrower than a
     * vector */
    const int64_t shapes[][4] = {{2, 6, 1, 3}, {3, 4, 7, 4}, {2, 32, 81, 8}, {1, 4, 5000, 2},
                                 {9000, 2, 1, 1}, {5, 12, 33, 3}, {2100, 70, 4, 7}};
    const int nshapes = sizeof shapes / sizeof shapes[0];
    for (int sh = 0; sh < nshapes; sh++) {
        int64_t N = shapes[sh][0], C = shapes[sh][1], S = shapes[sh][2], G = shapes[sh][3];
        int64_t n = N * C * S, xshape[3] = {N, C, S}, sshape[2] = {N, G}, cshape[1] = {C};
        float *x = alloc(n), *dy = alloc(n), *y = alloc(n), *yw = alloc(n), *dx = alloc(n),
              *dxw = alloc(n);
        float *w = alloc(C), *b = alloc(C), *dw = alloc(C), *db = alloc(C), *dww = alloc(C),
              *dbw = alloc(C);
        float *sm = alloc(N * G), *sr = alloc(N * G), *smw = alloc(N * G), *srw = alloc(N * G);
        for (int64_t i = 0; i < C; i++) {
            w[i] = sb_test_unif(0.5f, 2.0f);
            b[i] = sb_test_unif(-1.0f, 1.0f);
        }
        sb_tensor tx = view(x, SB_F32, 3, xshape), tdy = view(dy, SB_F32, 3, xshape);
        sb_tensor ty = view(y, SB_F32, 3, xshape), tdx = view(dx, SB_F32, 3, xshape);
        sb_tensor tw = view(w, SB_F32, 1, cshape), tb = view(b, SB_F32, 1, cshape);
        sb_tensor tdw = view(dw, SB_F32, 1, cshape), tdb = view(db, SB_F32, 1, cshape);
        sb_tensor tsm = view(sm, SB_F32, 2, sshape), tsr = view(sr, SB_F32, 2, sshape);
        for (int kind = 0; kind < 2; kind++) {
            fill(x, n, kind);
            fill(dy, n, 0);
            bool affine = kind == 0;
            const float *wp = affine ? w : NULL, *bp = affine ? b : NULL;
            sb_ref_group_norm_forward(x, wp, bp, 1e-5f, yw, smw, srw, N, C, S, G);
            sb_ref_group_norm_backward(dy, x, wp, smw, srw, dxw, dww, dbw, N, C, S, G);
            for (int c = 0; c < sb_test_config_count(); c++) {
                sb_test_config_apply(c);
                const char *cfg = sb_test_config_name(c);
                char what[96];
                snprintf(what, sizeof what, "group norm %lldx%lldx%lld G=%lld %s", (long long)N,
                         (long long)C, (long long)S, (long long)G, kind ? "adversarial" : "mixed");
                CHECK_OK(sb_group_norm_forward(&tx, G, affine ? &tw : NULL, affine ? &tb : NULL,
                                               1e-5f, &ty, &tsm, &tsr));
                check_buf(y, yw, n, what, cfg);
                check_buf(sm, smw, N * G, "group norm save_mean", cfg);
                check_buf(sr, srw, N * G, "group norm save_rstd", cfg);
                CHECK_OK(sb_group_norm_backward(&tdy, &tx, G, affine ? &tw : NULL, &tsm, &tsr,
                                                &tdx, &tdw, &tdb));
                check_buf(dx, dxw, n, "group norm dx", cfg);
                check_buf(dw, dww, C, "group norm dgamma", cfg);
                check_buf(db, dbw, C, "group norm dbeta", cfg);
                /* one parameter gradient alone (the other's sums still run) */
                for (int64_t i = 0; i < C; i++) dw[i] = db[i] = -1.0f;
                CHECK_OK(sb_group_norm_backward(&tdy, &tx, G, affine ? &tw : NULL, &tsm, &tsr,
                                                NULL, &tdw, NULL));
                check_buf(dw, dww, C, "group norm dgamma alone", cfg);
                CHECK_OK(sb_group_norm_backward(&tdy, &tx, G, affine ? &tw : NULL, &tsm, &tsr,
                                                NULL, NULL, &tdb));
                check_buf(db, dbw, C, "group norm dbeta alone", cfg);
            }
            sb_test_config_reset();
        }
        free(x); free(dy); free(y); free(yw); free(dx); free(dxw);
        free(w); free(b); free(dw); free(db); free(dww); free(dbw);
        free(sm); free(sr); free(smw); free(srw);
    }
}

/* ---- reductions ---------------------------------------------------------------------- */

/* The reference geometry of reducing x over `mask` into out/idx (the
 * reduced shape, keepdim or not), restated from the contract. */
static sb_ref_reduce_geom geom_of(const sb_tensor *x, unsigned mask, bool keepdim,
                                  const sb_tensor *out, const sb_tensor *idx) {
    sb_ref_reduce_geom g;
    memset(&g, 0, sizeof g);
    int j = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (mask & (1u << i)) {
            g.red_shape[g.nred] = x->shape[i];
            g.red_xstride[g.nred] = x->strides[i];
            g.nred++;
            if (keepdim) j++;
        } else {
            g.keep_shape[g.nkeep] = x->shape[i];
            g.keep_xstride[g.nkeep] = x->strides[i];
            g.keep_ostride[g.nkeep] = out ? out->strides[j] : 0;
            g.keep_istride[g.nkeep] = idx ? idx->strides[j] : 0;
            g.nkeep++;
            j++;
        }
    }
    return g;
}

/* One reduction case: x (any strides) over mask, every reduction kind,
 * compared with the reference kernels. */
static void reduce_case(const sb_tensor *x, unsigned mask, bool keepdim, const char *label,
                        int cfg_from, int cfg_step) {
    if (mask == 0) mask = (1u << x->ndim) - 1u; /* no dims: the API reduces over all */
    int nd = 0, dims[SB_MAX_DIMS], ndims = 0;
    int64_t oshape[SB_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) {
        if (mask & (1u << i)) {
            dims[ndims++] = i;
            if (keepdim) oshape[nd++] = 1;
        } else {
            oshape[nd++] = x->shape[i];
        }
    }
    int64_t nout = numel(nd, oshape), nred = 1;
    for (int i = 0; i < x->ndim; i++)
        if (mask & (1u << i)) nred *= x->shape[i];
    float *got = alloc(nout), *want = alloc(nout), *dxg = alloc(sb_tensor_numel(x)),
          *dxw = alloc(sb_tensor_numel(x)), *dyv = alloc(nout);
    int64_t *ig = malloc((size_t)(nout > 0 ? nout : 1) * sizeof *ig);
    int64_t *iw = malloc((size_t)(nout > 0 ? nout : 1) * sizeof *iw);
    if (!ig || !iw) exit(1);
    for (int64_t o = 0; o < nout; o++) dyv[o] = sb_test_unif(-2.0f, 2.0f);
    sb_tensor to = view(got, SB_F32, nd, oshape), ti = view(ig, SB_I64, nd, oshape);
    sb_tensor tdy = view(dyv, SB_F32, nd, oshape);
    sb_ref_reduce_geom g = geom_of(x, mask, keepdim, &to, &ti);
    int64_t dxshape[SB_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) dxshape[i] = x->shape[i];
    sb_tensor tdx = view(dxg, SB_F32, x->ndim, dxshape);
    sb_ref_reduce_geom gdx = geom_of(&tdx, mask, keepdim, &tdy, &ti);
    const sb_ref_reduce_kind kinds[4] = {SB_REF_REDUCE_SUM, SB_REF_REDUCE_MEAN, SB_REF_REDUCE_VAR,
                                         SB_REF_REDUCE_STD};
    const char *kname[4] = {"sum", "mean", "var", "std"};
    /* correction 1, and one past the count (the defined NaN) */
    const int64_t corrections[2] = {1, nred + 1};
    float *wm[4][2];
    for (int k = 0; k < 4; k++)
        for (int cc = 0; cc < 2; cc++) {
            wm[k][cc] = alloc(nout);
            if (k < 2 && cc == 1) continue;
            sb_ref_reduce(kinds[k], &g, x->data, corrections[cc], wm[k][cc]);
        }
    for (int c = cfg_from; c < sb_test_config_count(); c += cfg_step) {
        sb_test_config_apply(c);
        const char *cfg = sb_test_config_name(c);
        char what[160];
        for (int k = 0; k < 4; k++)
            for (int cc = 0; cc < (k < 2 ? 1 : 2); cc++) {
                sb_status st;
                if (k == 0) st = sb_sum(x, dims, ndims, keepdim, &to);
                else if (k == 1) st = sb_mean(x, dims, ndims, keepdim, &to);
                else if (k == 2) st = sb_var(x, dims, ndims, corrections[cc], keepdim, &to);
                else st = sb_std(x, dims, ndims, corrections[cc], keepdim, &to);
                CHECK(st == SB_OK, "%s: %s", kname[k], sb_last_error());
                snprintf(what, sizeof what, "%s %s (mask 0x%x, keepdim %d, correction %lld)",
                         label, kname[k], mask, keepdim, (long long)corrections[cc]);
                check_buf(got, wm[k][cc], nout, what, cfg);
            }
        if (nred == 0) continue;
        for (int is_max = 0; is_max < 2; is_max++) {
            sb_ref_reduce_extreme(is_max, &g, x->data, want, iw);
            if (is_max) CHECK_OK(sb_max(x, dims, ndims, keepdim, &to, &ti));
            else CHECK_OK(sb_min(x, dims, ndims, keepdim, &to, &ti));
            snprintf(what, sizeof what, "%s %s (mask 0x%x)", label, is_max ? "max" : "min", mask);
            check_exact(got, want, nout, what, cfg);
            check_idx(ig, iw, nout, what, cfg);
            for (int64_t o = 0; o < nout; o++) ig[o] = -1;
            if (is_max) CHECK_OK(sb_argmax(x, dims, ndims, keepdim, &ti));
            else CHECK_OK(sb_argmin(x, dims, ndims, keepdim, &ti));
            check_idx(ig, iw, nout, "argmax/argmin", cfg);
            /* backward of max/min */
            sb_ref_reduce_scatter(&gdx, dyv, iw, dxw);
            for (int64_t i = 0; i < sb_tensor_numel(x); i++) dxg[i] = sb_test_from_bits(0x7fc0dead);
            CHECK_OK(sb_max_backward(&tdy, &ti, dims, ndims, keepdim, &tdx));
            snprintf(what, sizeof what, "%s max_backward (mask 0x%x)", label, mask);
            check_exact(dxg, dxw, sb_tensor_numel(x), what, cfg);
        }
        /* sum/mean backward: dy spread (divided by the count) */
        CHECK_OK(sb_mean_backward(&tdy, dims, ndims, keepdim, &tdx));
        {
            int64_t bad = -1, idx[SB_MAX_DIMS] = {0}, n = sb_tensor_numel(x);
            for (int64_t e = 0; e < n && bad < 0; e++) {
                int64_t o = 0, j = 0;
                for (int i = 0; i < x->ndim; i++) {
                    if (mask & (1u << i)) { if (keepdim) j++; continue; }
                    o += idx[i] * tdy.strides[j++];
                }
                if (sb_test_bits(dxg[e]) != sb_test_bits(dyv[o] / (float)nred)) bad = e;
                for (int i = x->ndim - 1; i >= 0; i--) {
                    if (++idx[i] < x->shape[i]) break;
                    idx[i] = 0;
                }
            }
            CHECK(bad < 0, "%s mean_backward (mask 0x%x) [%s]: element %lld", label, mask, cfg,
                  (long long)bad);
        }
    }
    sb_test_config_reset();
    for (int k = 0; k < 4; k++) { free(wm[k][0]); free(wm[k][1]); }
    free(got); free(want); free(dxg); free(dxw); free(dyv); free(ig); free(iw);
}

static void test_reductions(void) {
    int nconf = sb_test_config_count();
    /* every axis subset of a 3-d and a 4-d tensor, odd sizes, keepdim both */
    {
        int64_t shape[3] = {5, 7, 11};
        float *x = alloc(385);
        fill(x, 385, 1);
        sb_tensor t = view(x, SB_F32, 3, shape);
        for (unsigned mask = 0; mask < 8; mask++)
            reduce_case(&t, mask, mask % 2 == 0, "5x7x11 adversarial", (int)mask % 3, 3);
        fill(x, 385, 0);
        for (unsigned mask = 1; mask < 8; mask++)
            reduce_case(&t, mask, mask % 3 == 0, "5x7x11 mixed", (int)mask % 2, 2);
        free(x);
    }
    /* one term per output (a size-1 axis, as in a broadcast gradient with
     * nothing to reduce): the canonical sum's -0 + v, adversarial values */
    {
        int64_t shape[3] = {5, 1, 11};
        float *x = alloc(55);
        fill(x, 55, 1);
        sb_tensor t = view(x, SB_F32, 3, shape);
        reduce_case(&t, 2u, false, "5x1x11 adversarial, axis 1", 0, 1);
        reduce_case(&t, 2u, true, "5x1x11 adversarial, axis 1 keepdim", 0, 1);
        free(x);
    }
    {
        int64_t shape[4] = {3, 4, 1, 37};
        float *x = alloc(444);
        fill(x, 444, 0);
        sb_tensor t = view(x, SB_F32, 4, shape);
        for (unsigned mask = 0; mask < 16; mask++)
            reduce_case(&t, mask, mask % 2 == 1, "3x4x1x37", (int)mask % 4, 4);
        free(x);
    }
    /* more than 8192 reduced elements, contiguous and strided */
    {
        int64_t shape[2] = {3, 9001};
        float *x = alloc(27003);
        fill(x, 27003, 0);
        sb_tensor t = view(x, SB_F32, 2, shape);
        reduce_case(&t, 2u, false, "3x9001", 0, 1);
        reduce_case(&t, 3u, false, "3x9001 all", 0, 2);
        /* the transpose (9001 x 3, strides (1, 9001)): axis 0 strided */
        sb_tensor tt = t;
        tt.shape[0] = 9001; tt.shape[1] = 3; tt.strides[0] = 1; tt.strides[1] = 9001;
        reduce_case(&tt, 1u, true, "(3x9001)^T axis 0", 1, 2);
        reduce_case(&tt, 2u, false, "(3x9001)^T axis 1", 0, 3);
        int64_t s2[2] = {9001, 3};
        sb_tensor tc = view(x, SB_F32, 2, s2);
        reduce_case(&tc, 1u, false, "9001x3 axis 0", 0, 1);
        free(x);
    }
    /* a column sum wider than a tile, a 3-d permuted view, a 70000 full sum */
    {
        int64_t shape[2] = {300, 301};
        float *x = alloc(300 * 301);
        fill(x, 300 * 301, 0);
        sb_tensor t = view(x, SB_F32, 2, shape);
        reduce_case(&t, 1u, false, "300x301 axis 0", 0, 2);
        reduce_case(&t, 2u, true, "300x301 axis 1", 1, 2);
        int64_t s3[3] = {10, 43, 7};
        sb_tensor p = view(x, SB_F32, 3, s3); /* permuted: (7, 10, 43) view */
        p.shape[0] = 7; p.shape[1] = 10; p.shape[2] = 43;
        p.strides[0] = 1; p.strides[1] = 43 * 7; p.strides[2] = 7;
        for (unsigned mask = 1; mask < 8; mask++)
            reduce_case(&p, mask, false, "permuted 7x10x43", (int)mask % 5, 5);
        free(x);
        int64_t n1 = 70001;
        float *y = alloc(n1);
        fill(y, n1, 0);
        sb_tensor t1 = view(y, SB_F32, 1, &n1);
        reduce_case(&t1, 1u, false, "70001 full", 0, nconf > 6 ? 3 : 1);
        free(y);
    }
    /* an empty reduced extent: sum 0, mean and var the default NaN */
    {
        int64_t shape[2] = {4, 0};
        float dummy = 0.0f;
        sb_tensor t = view(&dummy, SB_F32, 2, shape);
        reduce_case(&t, 2u, false, "4x0 axis 1", 0, 1);
    }
}

/* The test data above must make the summation order visible. */
static void test_order_visible(void) {
    int64_t n = 9001;
    float *x = alloc(n);
    uint64_t saved = sb_test_seed(0);
    sb_test_seed(saved);
    fill(x, n, 0);
    float seq = 0.0f;
    for (int64_t i = 0; i < n; i++) seq += x[i];
    CHECK(sb_test_bits(seq) != sb_test_bits(sb_sum_canonical(x, n, 1)),
          "mixed data must make the summation order visible");
    sb_test_seed(saved);
    free(x);
}

/* ---- dropout ------------------------------------------------------------------------- */

static void test_dropout(void) {
    const int64_t sizes[] = {1, 17, 4099, 100003};
    int64_t maxn = 100003;
    float *x = alloc(maxn), *y = alloc(maxn), *yw = alloc(maxn), *m = alloc(maxn),
          *mw = alloc(maxn), *dy = alloc(maxn), *dx = alloc(maxn), *dxw = alloc(maxn);
    fill(x, maxn, 1);
    fill(dy, maxn, 1);
    const float ps[3] = {0.0f, 0.3f, 1.0f};
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        const char *cfg = sb_test_config_name(c);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            int64_t n = sizes[s];
            float p = ps[(s + (size_t)c) % 3];
            uint64_t seed = 42 + (uint64_t)s, stream = 7, offset = 1000003ull * (uint64_t)s;
            sb_tensor tx = view(x, SB_F32, 1, &n), ty = view(y, SB_F32, 1, &n);
            sb_tensor tm = view(m, SB_F32, 1, &n), tdy = view(dy, SB_F32, 1, &n);
            sb_tensor tdx = view(dx, SB_F32, 1, &n);
            for (int train = 0; train < 2; train++) {
                sb_ref_dropout_forward(x, n, p, train, seed, stream, offset, yw, mw);
                CHECK_OK(sb_dropout_forward(&tx, p, train, seed, stream, offset, &ty, &tm));
                check_buf(y, yw, n, "dropout forward", cfg);
                check_exact(m, mw, n, "dropout mask", cfg);
                sb_ref_dropout_backward(dy, mw, n, p, train, dxw);
                CHECK_OK(sb_dropout_backward(&tdy, &tm, p, train, &tdx));
                check_buf(dx, dxw, n, "dropout backward", cfg);
            }
        }
        /* a transposed x: element i is the i-th in logical order */
        int64_t sh[2] = {101, 99};
        sb_tensor tx = view(x, SB_F32, 2, sh), ty = view(y, SB_F32, 2, sh);
        tx.strides[0] = 1; tx.strides[1] = 101;
        float *xt = dxw; /* the logical-order copy */
        for (int64_t i = 0; i < 101; i++)
            for (int64_t j = 0; j < 99; j++) xt[i * 99 + j] = x[j * 101 + i];
        sb_ref_dropout_forward(xt, 9999, 0.5f, true, 3, 4, 5, yw, NULL);
        CHECK_OK(sb_dropout_forward(&tx, 0.5f, true, 3, 4, 5, &ty, NULL));
        check_buf(y, yw, 9999, "dropout forward transposed", cfg);
    }
    sb_test_config_reset();
    free(x); free(y); free(yw); free(m); free(mw); free(dy); free(dx); free(dxw);
}

/* ---- validation still happens before any write --------------------------------------- */

static void test_errors(void) {
    int64_t shape[3] = {2, 3, 4}, cshape[1] = {3}, bad[1] = {4};
    float x[24] = {0}, y[24], rm[3] = {0}, rv[3] = {1, 1, 1}, g4[4] = {0};
    sb_tensor tx = view(x, SB_F32, 3, shape), ty = view(y, SB_F32, 3, shape);
    sb_tensor trm = view(rm, SB_F32, 1, cshape), trv = view(rv, SB_F32, 1, cshape);
    sb_tensor tg = view(g4, SB_F32, 1, bad);
    CHECK_ERROR(sb_batch_norm_forward(&tx, &tg, NULL, &trm, &trv, true, 0.1f, 1e-5f, &ty, NULL,
                                      NULL), SB_ERR_SHAPE, "gamma");
    CHECK_ERROR(sb_layer_norm_forward(&tx, 4, NULL, NULL, 1e-5f, &ty, NULL, NULL), SB_ERR_ARG,
                "normalized_ndim");
    int dims[1] = {3};
    CHECK_ERROR(sb_sum(&tx, dims, 1, false, &ty), SB_ERR_ARG, "out of range");
    CHECK_ERROR(sb_dropout_forward(&tx, 1.5f, true, 0, 0, 0, &ty, NULL), SB_ERR_ARG, "p =");
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    sb_test_seed(0x243f6a8885a308d3ull);
    test_order_visible();
    test_activations();
    test_batch_norm();
    test_layer_norm();
    test_group_norm();
    test_reductions();
    test_dropout();
    test_errors();
    return sb_test_finish();
}
