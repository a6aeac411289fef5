/* Tests for sb_ctc_loss_forward/backward (samebits/loss.h): the CTC loss.
 *
 * Expected bits come from a test-local float32 restatement of the
 * recursions of docs/CONTRACT.md (section 11, "Connectionist temporal
 * classification"), checked at every ISA level and thread count
 * (support/fastpath.h). Closeness comes from a float64 sum over every
 * alignment path (brute force, independent of the recursions) and from
 * float64 alpha recursions; gradients from central differences of the
 * float64 loss. Then padded against concatenated targets, reductions,
 * zero_infinity, empty inputs and targets, and every bad input with nothing
 * written. */
#include <math.h>
#include "harness.h"
#include "support/fastpath.h"
#include "support/oracle.h"

typedef struct ctc_case {
    int64_t T, N, C, blank;
    const int64_t *in_len, *tg_len, *tg; /* tg: concatenated labels */
    bool zero_inf;
    sb_loss_reduction red;
} ctc_case;

static int64_t lbl(const ctc_case *k, int64_t off, int64_t s) {
    return s % 2 == 0 ? k->blank : k->tg[off + s / 2];
}

static float f_lae3(float a, float b, float c) {
    float m = a;
    if (b > m) m = b;
    if (c > m) m = c;
    if (m == -INFINITY) m = 0.0f;
    float e = sb_expf(a - m) + sb_expf(b - m);
    e = e + sb_expf(c - m);
    return sb_logf(e) + m;
}

static float f_lae2(float a, float b) {
    float m = a < b ? b : a;
    if (m == -INFINITY) m = 0.0f;
    return sb_logf(sb_expf(a - m) + sb_expf(b - m)) + m;
}

#define LP(t, b, c) lp[((t) * k->N + (b)) * k->C + (c)]

/* alpha (T x (2L + 1)) and the item's nll, float32 as the contract states */
static float f_alpha(const ctc_case *k, const float *lp, int64_t b, int64_t off, float *al) {
    int64_t Tb = k->in_len[b], L = k->tg_len[b], S = 2 * L + 1;
    if (Tb == 0) return L == 0 ? -0.0f : INFINITY;
    for (int64_t s = 0; s < S; s++) al[s] = -INFINITY;
    al[0] = LP(0, b, k->blank);
    if (L > 0) al[1] = LP(0, b, lbl(k, off, 1));
    for (int64_t t = 1; t < Tb; t++)
        for (int64_t s = 0; s < S; s++) {
            float a1 = al[(t - 1) * S + s];
            float a2 = s > 0 ? al[(t - 1) * S + s - 1] : -INFINITY;
            float a3 = s > 1 && lbl(k, off, s - 2) != lbl(k, off, s) ? al[(t - 1) * S + s - 2]
                                                                      : -INFINITY;
            al[t * S + s] = f_lae3(a1, a2, a3) + LP(t, b, lbl(k, off, s));
        }
    if (L == 0) return -al[(Tb - 1) * S];
    return -f_lae2(al[(Tb - 1) * S + 2 * L], al[(Tb - 1) * S + 2 * L - 1]);
}

static float f_g(const ctc_case *k, const float *dl, int64_t b) {
    if (k->red == SB_LOSS_NONE) return dl[b];
    if (k->red == SB_LOSS_SUM) return dl[0];
    return (dl[0] / (float)k->N) / (float)(k->tg_len[b] > 1 ? k->tg_len[b] : 1);
}

static void f_forward(const ctc_case *k, const float *lp, float *loss) {
    float *v = calloc((size_t)k->N, sizeof *v), *w = calloc((size_t)k->N, sizeof *w);
    int64_t off = 0;
    for (int64_t b = 0; b < k->N; b++) {
        float *al = calloc((size_t)(k->T * (2 * k->tg_len[b] + 1)), sizeof *al);
        v[b] = f_alpha(k, lp, b, off, al);
        if (k->zero_inf && v[b] == INFINITY) v[b] = 0.0f;
        w[b] = v[b] / (float)(k->tg_len[b] > 1 ? k->tg_len[b] : 1);
        off += k->tg_len[b];
        free(al);
    }
    if (k->red == SB_LOSS_NONE) memcpy(loss, v, (size_t)k->N * sizeof *v);
    else if (k->red == SB_LOSS_SUM) loss[0] = oracle_canonical_sum(v, k->N);
    else loss[0] = oracle_canonical_sum(w, k->N) / (float)k->N;
    free(v);
    free(w);
}

static void f_backward(const ctc_case *k, const float *lp, const float *dl, float *d) {
    int64_t off = 0, NC = k->N * k->C;
    for (int64_t b = 0; b < k->N; b++) {
        int64_t Tb = k->in_len[b], L = k->tg_len[b], S = 2 * L + 1;
        float *al = calloc((size_t)(k->T * S), sizeof *al), *be = calloc((size_t)(k->T * S), sizeof *be);
        float *G = calloc((size_t)(k->T * k->C), sizeof *G);
        float nll = f_alpha(k, lp, b, off, al), g = f_g(k, dl, b);
        if ((k->zero_inf && nll == INFINITY)) Tb = 0;
        for (int64_t i = 0; i < k->T * k->C; i++) G[i] = -INFINITY;
        if (Tb > 0) {
            for (int64_t s = 0; s < S; s++) be[(Tb - 1) * S + s] = -INFINITY;
            be[(Tb - 1) * S + 2 * L] = LP(Tb - 1, b, k->blank);
            G[(Tb - 1) * k->C + k->blank] = al[(Tb - 1) * S + 2 * L] + be[(Tb - 1) * S + 2 * L];
            if (L > 0) {
                int64_t l = lbl(k, off, 2 * L - 1);
                be[(Tb - 1) * S + 2 * L - 1] = LP(Tb - 1, b, l);
                G[(Tb - 1) * k->C + l] = al[(Tb - 1) * S + 2 * L - 1] + be[(Tb - 1) * S + 2 * L - 1];
            }
        }
        for (int64_t t = Tb - 2; t >= 0; t--)
            for (int64_t s = 2 * L; s >= 0; s--) {
                int64_t l = lbl(k, off, s);
                float b1 = be[(t + 1) * S + s];
                float b2 = s < 2 * L ? be[(t + 1) * S + s + 1] : -INFINITY;
                float b3 = s < 2 * L - 1 && lbl(k, off, s + 2) != l ? be[(t + 1) * S + s + 2]
                                                                    : -INFINITY;
                be[t * S + s] = f_lae3(b1, b2, b3) + LP(t, b, l);
                float ab = al[t * S + s] + be[t * S + s];
                float *gc = &G[t * k->C + l];
                *gc = *gc == -INFINITY ? ab : f_lae2(*gc, ab);
            }
        for (int64_t t = 0; t < k->T; t++)
            for (int64_t c = 0; c < k->C; c++) {
                float v = 0.0f;
                if (t < Tb) {
                    float x = LP(t, b, c);
                    float e = sb_expf((G[t * k->C + c] + nll) - x);
                    v = (sb_expf(x) - e) * g;
                }
                d[t * NC + b * k->C + c] = v;
            }
        off += L;
        free(al);
        free(be);
        free(G);
    }
}

/* ---- float64 ---- */

/* The probability of the labels, summed over every path of length Tb
 * (brute force: C^Tb paths, collapse repeats, drop blanks). */
static double brute_nll(const ctc_case *k, const double *lp, int64_t b, int64_t off) {
    int64_t Tb = k->in_len[b], L = k->tg_len[b];
    double total = 0;
    int64_t paths = 1;
    for (int64_t t = 0; t < Tb; t++) paths *= k->C;
    for (int64_t q = 0; q < paths; q++) {
        int64_t x = q, prev = -1, n = 0, ok = 1;
        double lpath = 0;
        for (int64_t t = 0; t < Tb; t++) {
            int64_t c = x % k->C;
            x /= k->C;
            lpath += lp[(t * k->N + b) * k->C + c];
            if (c != k->blank && c != prev) {
                if (n >= L || k->tg[off + n] != c) ok = 0;
                n++;
            }
            prev = c;
        }
        if (ok && n == L) total += exp(lpath);
    }
    return -log(total);
}

static double d_lae(double a, double b) {
    if (a == -INFINITY) return b;
    if (b == -INFINITY) return a;
    double m = a > b ? a : b;
    return m + log(exp(a - m) + exp(b - m));
}

/* float64 alpha recursion: the loss of the whole case, times dl per item */
static double d_loss(const ctc_case *k, const double *lp, const double *dl) {
    double sum = 0;
    int64_t off = 0;
    for (int64_t b = 0; b < k->N; b++) {
        int64_t Tb = k->in_len[b], L = k->tg_len[b], S = 2 * L + 1;
        double nll;
        if (Tb == 0) nll = L == 0 ? 0 : INFINITY;
        else {
            double *al = malloc((size_t)(Tb * S) * sizeof *al);
            for (int64_t s = 0; s < S; s++) al[s] = -INFINITY;
            al[0] = lp[(0 * k->N + b) * k->C + k->blank];
            if (L > 0) al[1] = lp[(0 * k->N + b) * k->C + lbl(k, off, 1)];
            for (int64_t t = 1; t < Tb; t++)
                for (int64_t s = 0; s < S; s++) {
                    double v = al[(t - 1) * S + s];
                    if (s > 0) v = d_lae(v, al[(t - 1) * S + s - 1]);
                    if (s > 1 && lbl(k, off, s - 2) != lbl(k, off, s)) v = d_lae(v, al[(t - 1) * S + s - 2]);
                    al[t * S + s] = v + lp[(t * k->N + b) * k->C + lbl(k, off, s)];
                }
            nll = L == 0 ? -al[(Tb - 1) * S] : -d_lae(al[(Tb - 1) * S + 2 * L], al[(Tb - 1) * S + 2 * L - 1]);
            free(al);
        }
        if (k->zero_inf && nll == INFINITY) nll = 0;
        double wgt = k->red == SB_LOSS_NONE ? dl[b]
                     : k->red == SB_LOSS_SUM ? 1.0 : 1.0 / (double)(L > 1 ? L : 1) / (double)k->N;
        sum += wgt * nll;
        off += L;
    }
    return sum;
}

/* ---- running a case through the API ---- */

static void random_log_probs(const ctc_case *k, float *lp) {
    for (int64_t t = 0; t < k->T; t++)
        for (int64_t b = 0; b < k->N; b++) {
            float *row = lp + (t * k->N + b) * k->C;
            double s = 0;
            for (int64_t c = 0; c < k->C; c++) { row[c] = (float)(oracle_rand() >> 40) * 0x1p-22f; s += exp(row[c]); }
            float ls = (float)log(s);
            for (int64_t c = 0; c < k->C; c++) row[c] = row[c] - ls;
        }
}

/* Calls the API with concatenated (padded = 0) or padded targets. */
static sb_status api(const ctc_case *k, int padded, const float *lp, const float *dl, float *loss,
                     float *dlp) {
    int64_t total = 0, S = 0;
    for (int64_t b = 0; b < k->N; b++) { total += k->tg_len[b]; if (k->tg_len[b] > S) S = k->tg_len[b]; }
    int64_t *pad = calloc((size_t)(k->N * S + 1), sizeof *pad), off = 0;
    for (int64_t b = 0; b < k->N; b++) {
        for (int64_t i = 0; i < k->tg_len[b]; i++) pad[b * S + i] = k->tg[off + i];
        for (int64_t i = k->tg_len[b]; i < S; i++) pad[b * S + i] = -7; /* padding is never read */
        off += k->tg_len[b];
    }
    int64_t sl[3] = {k->T, k->N, k->C}, sn = k->N, sp[2] = {k->N, S};
    sb_tensor *tlp = NULL, *tt = NULL, *til = NULL, *ttl = NULL, *tl = NULL, *tdl = NULL, *td = NULL;
    sb_tensor_wrap(&tlp, (float *)lp, SB_F32, 3, sl, NULL);
    if (padded) sb_tensor_wrap(&tt, pad, SB_I64, 2, sp, NULL);
    else sb_tensor_wrap(&tt, (int64_t *)k->tg, SB_I64, 1, &total, NULL);
    sb_tensor_wrap(&til, (int64_t *)k->in_len, SB_I64, 1, &sn, NULL);
    sb_tensor_wrap(&ttl, (int64_t *)k->tg_len, SB_I64, 1, &sn, NULL);
    int nd = k->red == SB_LOSS_NONE;
    sb_tensor_wrap(&tl, loss, SB_F32, nd, &sn, NULL);
    sb_tensor_wrap(&tdl, (float *)dl, SB_F32, nd, &sn, NULL);
    sb_tensor_wrap(&td, dlp, SB_F32, 3, sl, NULL);
    sb_ctc_loss p = {k->blank, k->zero_inf};
    sb_status st = sb_ctc_loss_forward(&p, tlp, tt, til, ttl, k->red, tl);
    if (st == SB_OK) st = sb_ctc_loss_backward(&p, tlp, tt, til, ttl, k->red, tdl, td);
    sb_tensor *all[] = {tlp, tt, til, ttl, tl, tdl, td};
    for (int i = 0; i < 7; i++) sb_tensor_free(all[i]);
    free(pad);
    return st;
}

static void run(const ctc_case *k, const char *what, int fd_check) {
    int64_t n = k->T * k->N * k->C, nl = k->red == SB_LOSS_NONE ? k->N : 1;
    float *lp = malloc((size_t)n * sizeof *lp), *d = malloc((size_t)n * sizeof *d),
          *dw = malloc((size_t)n * sizeof *dw), *loss = malloc((size_t)nl * sizeof *loss),
          *lw = malloc((size_t)nl * sizeof *lw), *dl = malloc((size_t)nl * sizeof *dl);
    random_log_probs(k, lp);
    for (int64_t i = 0; i < nl; i++) dl[i] = 0.5f + (float)i * 0.25f;
    f_forward(k, lp, lw);
    f_backward(k, lp, dl, dw);
    for (int cfg = 0; cfg < sb_test_config_count(); cfg++) {
        sb_test_config_apply(cfg);
        for (int padded = 0; padded < 2; padded++) {
            CHECK_OK(api(k, padded, lp, dl, loss, d));
            int bad = 0, dbad = 0;
            for (int64_t i = 0; i < nl; i++) bad += !oracle_same(loss[i], lw[i]);
            for (int64_t i = 0; i < n; i++) dbad += !oracle_same(d[i], dw[i]);
            CHECK(bad == 0 && dbad == 0, "%s (%s targets) at %s: %d loss, %d gradient values "
                  "differ from the contract", what, padded ? "padded" : "concatenated",
                  sb_test_config_name(cfg), bad, dbad);
        }
    }
    sb_test_config_reset();
    double *lpd = malloc((size_t)n * sizeof *lpd), *dld = malloc((size_t)nl * sizeof *dld);
    for (int64_t i = 0; i < n; i++) lpd[i] = lp[i];
    for (int64_t i = 0; i < nl; i++) dld[i] = dl[i];
    double want = d_loss(k, lpd, dld), got = 0;
    if (k->red == SB_LOSS_NONE) for (int64_t b = 0; b < k->N; b++) got += dl[b] * (double)loss[b];
    else got = loss[0];
    CHECK(fabs(got - want) <= 1e-5 * (1 + fabs(want)) || (isinf(want) && got == want),
          "%s: %.9g, float64 recursion %.9g", what, got, want);
    if (fd_check) {
        int far = 0;
        double h = 1e-6;
        for (int64_t i = 0; i < n; i++) {
            double keep = lpd[i];
            lpd[i] = keep + h;
            double up = d_loss(k, lpd, dld);
            lpd[i] = keep - h;
            double down = d_loss(k, lpd, dld);
            lpd[i] = keep;
            double fd = (up - down) / (2 * h) * (k->red == SB_LOSS_NONE ? 1.0 : dld[0]);
            /* PyTorch's gradient adds exp(lp) * g_b (it assumes log_probs
             * come from a log-softmax, whose backward cancels that term):
             * the derivative proper is the rest */
            int64_t t = i / (k->N * k->C), b = (i / k->C) % k->N;
            double own = d[i];
            if (t < k->in_len[b]) own -= exp(lpd[i]) * (double)f_g(k, dl, b);
            far += !(fabs(own - fd) <= 2e-4 * (1 + fabs(fd)));
        }
        CHECK(far == 0, "%s: %d gradient entries far from float64 differences", what, far);
    }
    free(lp); free(d); free(dw); free(loss); free(lw); free(dl); free(lpd); free(dld);
}

static void test_cases(void) {
    oracle_seed(143);
    /* labels with repeats (a blank must separate them), an empty target,
     * a short input, an item longer than another */
    static const int64_t in1[] = {6, 5, 4, 6}, tl1[] = {3, 2, 0, 1};
    static const int64_t tg1[] = {1, 1, 2, 3, 2, 2};
    const sb_loss_reduction reds[] = {SB_LOSS_NONE, SB_LOSS_MEAN, SB_LOSS_SUM};
    for (int r = 0; r < 3; r++) {
        ctc_case k = {6, 4, 4, 0, in1, tl1, tg1, false, reds[r]};
        char what[64];
        snprintf(what, sizeof what, "small red=%d", (int)reds[r]);
        run(&k, what, 1);
        k.blank = 3; /* a blank other than 0: labels 1, 1, 2 | 0, 2 | | 2 */
        static const int64_t tg3[] = {1, 1, 2, 0, 2, 2};
        k.tg = tg3;
        snprintf(what, sizeof what, "blank 3 red=%d", (int)reds[r]);
        run(&k, what, 1);
    }
    /* an impossible alignment (3 labels with a repeat need 4 steps): inf,
     * or 0 with zero_infinity; an item of no time steps */
    static const int64_t in2[] = {3, 0, 2}, tl2[] = {3, 1, 0}, tg2[] = {1, 1, 2, 1};
    for (int z = 0; z < 2; z++)
        for (int r = 0; r < 3; r++) {
            ctc_case k = {3, 3, 3, 0, in2, tl2, tg2, z == 1, reds[r]};
            char what[64];
            snprintf(what, sizeof what, "impossible zero_inf=%d red=%d", z, (int)reds[r]);
            run(&k, what, z == 1 && r == 0 ? 0 : 0);
        }
    /* larger: many items for every thread count, long sequences */
    int64_t N = sb_test_quick() ? 9 : 23, T = 50, C = 20;
    int64_t *in = malloc((size_t)N * sizeof *in), *tl = malloc((size_t)N * sizeof *tl);
    int64_t *tg = malloc((size_t)(N * 20) * sizeof *tg), total = 0;
    for (int64_t b = 0; b < N; b++) {
        in[b] = T - (int64_t)(oracle_rand() % 10);
        tl[b] = (int64_t)(oracle_rand() % 20);
        for (int64_t i = 0; i < tl[b]; i++) tg[total++] = 1 + (int64_t)(oracle_rand() % (uint64_t)(C - 1));
    }
    ctc_case big = {T, N, C, 0, in, tl, tg, true, SB_LOSS_MEAN};
    run(&big, "large mean", 0);
    big.red = SB_LOSS_NONE;
    run(&big, "large none", 0);
    free(in); free(tl); free(tg);
}

/* The recursion's likelihood is the sum over every alignment path. */
static void test_brute_force(void) {
    static const int64_t in[] = {5, 4, 5}, tl[] = {2, 2, 1}, tg[] = {1, 1, 2, 1, 2};
    ctc_case k = {5, 3, 3, 0, in, tl, tg, false, SB_LOSS_NONE};
    float lp[5 * 3 * 3], loss[3], d[5 * 3 * 3], dl[3] = {1, 1, 1};
    double lpd[5 * 3 * 3];
    oracle_seed(144);
    random_log_probs(&k, lp);
    for (int i = 0; i < 45; i++) lpd[i] = lp[i];
    CHECK_OK(api(&k, 0, lp, dl, loss, d));
    int64_t off = 0;
    for (int64_t b = 0; b < 3; b++) {
        double want = brute_nll(&k, lpd, b, off);
        CHECK(fabs(loss[b] - want) <= 1e-5 * (1 + fabs(want)), "item %lld: %.9g, all paths %.9g",
              (long long)b, (double)loss[b], want);
        off += tl[b];
    }
}

static void test_special(void) {
    /* T_b = 0 and L = 0: loss -0.0f; every gradient +0 */
    static const int64_t in[] = {0}, tl[] = {0}, tg[] = {0};
    ctc_case k = {2, 1, 3, 0, in, tl, tg, false, SB_LOSS_NONE};
    float lp[6] = {-1, -2, -3, -1, -2, -3}, loss[1], d[6], dl[1] = {1};
    CHECK_OK(api(&k, 0, lp, dl, loss, d));
    CHECK_BITS(loss[0], -0.0f, "no steps, no labels: -0.0f (PyTorch's -log 1)");
    int nz = 0;
    for (int i = 0; i < 6; i++) nz += sb_test_bits(d[i]) != 0;
    CHECK(nz == 0, "no steps: gradient +0 (%d not)", nz);
    /* a NaN log-probability: the loss is NaN, not a crash */
    static const int64_t in2[] = {2}, tl2[] = {1}, tg2[] = {1};
    ctc_case k2 = {2, 1, 3, 0, in2, tl2, tg2, false, SB_LOSS_SUM};
    lp[4] = NAN;
    CHECK_OK(api(&k2, 1, lp, dl, loss, d));
    CHECK(isnan(loss[0]), "NaN input gives a NaN loss (%g)", (double)loss[0]);
}

static void test_errors(void) {
    float lp[4 * 2 * 3] = {0}, loss[2] = {5, 5}, sc = 5, d[24], dl[2] = {1, 1};
    int64_t s3[3] = {4, 2, 3}, sn = 2, sp[2] = {2, 2}, s4 = 4, s1 = 1, sw[2] = {3, 2};
    int64_t il[2] = {4, 3}, tl[2] = {2, 1}, tp[4] = {1, 2, 1, 0}, tc[3] = {1, 2, 1};
    int64_t il_neg[2] = {4, -1}, il_long[2] = {5, 3}, tl_neg[2] = {-2, 1}, tl_long[2] = {3, 1},
            tl_sum[2] = {2, 2}, tp_blank[4] = {1, 0, 1, 0}, tp_big[4] = {1, 3, 1, 0};
    sb_tensor *tlp = NULL, *tt = NULL, *ttc = NULL, *til = NULL, *ttl = NULL, *tl_ = NULL,
              *tsc = NULL, *td = NULL, *tdl = NULL, *bad[8] = {NULL}, *t1 = NULL, *tw = NULL;
    CHECK_OK(sb_tensor_wrap(&tlp, lp, SB_F32, 3, s3, NULL));
    CHECK_OK(sb_tensor_wrap(&tt, tp, SB_I64, 2, sp, NULL));
    CHECK_OK(sb_tensor_wrap(&ttc, tc, SB_I64, 1, (int64_t[]){3}, NULL));
    CHECK_OK(sb_tensor_wrap(&til, il, SB_I64, 1, &sn, NULL));
    CHECK_OK(sb_tensor_wrap(&ttl, tl, SB_I64, 1, &sn, NULL));
    CHECK_OK(sb_tensor_wrap(&tl_, loss, SB_F32, 1, &sn, NULL));
    CHECK_OK(sb_tensor_wrap(&tsc, &sc, SB_F32, 0, NULL, NULL));
    CHECK_OK(sb_tensor_wrap(&td, d, SB_F32, 3, s3, NULL));
    CHECK_OK(sb_tensor_wrap(&tdl, dl, SB_F32, 1, &sn, NULL));
    CHECK_OK(sb_tensor_wrap(&bad[0], il_neg, SB_I64, 1, &sn, NULL));
    CHECK_OK(sb_tensor_wrap(&bad[1], il_long, SB_I64, 1, &sn, NULL));
    CHECK_OK(sb_tensor_wrap(&bad[2], tl_neg, SB_I64, 1, &sn, NULL));
    CHECK_OK(sb_tensor_wrap(&bad[3], tl_long, SB_I64, 1, &sn, NULL));
    CHECK_OK(sb_tensor_wrap(&bad[4], tl_sum, SB_I64, 1, &sn, NULL));
    CHECK_OK(sb_tensor_wrap(&bad[5], tp_blank, SB_I64, 2, sp, NULL));
    CHECK_OK(sb_tensor_wrap(&bad[6], tp_big, SB_I64, 2, sp, NULL));
    CHECK_OK(sb_tensor_wrap(&t1, il, SB_I64, 1, &s1, NULL));
    CHECK_OK(sb_tensor_wrap(&tw, tp, SB_I64, 2, sw, NULL));
    (void)s4;
    sb_ctc_loss p = {0, false}, pb = {3, false}, pneg = {-1, false};
    for (int i = 0; i < 24; i++) d[i] = 9.0f;
    const char *f = "sb_ctc_loss_forward";
    (void)f;
    CHECK_OK(sb_ctc_loss_forward(&p, tlp, tt, til, ttl, SB_LOSS_NONE, tl_));
    loss[0] = loss[1] = 5;
    CHECK_ERROR(sb_ctc_loss_forward(&p, tlp, tt, bad[0], ttl, SB_LOSS_NONE, tl_), SB_ERR_RANGE,
                "sb_ctc_loss_forward: input_lengths[1] = -1 is negative");
    CHECK_ERROR(sb_ctc_loss_forward(&p, tlp, tt, bad[1], ttl, SB_LOSS_NONE, tl_), SB_ERR_RANGE,
                "input_lengths[0] = 5 is longer than the input (T = 4)");
    CHECK_ERROR(sb_ctc_loss_forward(&p, tlp, tt, til, bad[2], SB_LOSS_NONE, tl_), SB_ERR_RANGE,
                "target_lengths[0] = -2 is negative");
    CHECK_ERROR(sb_ctc_loss_forward(&p, tlp, tt, til, bad[3], SB_LOSS_NONE, tl_), SB_ERR_RANGE,
                "target_lengths[0] = 3 is longer than the padded targets (S = 2)");
    CHECK_ERROR(sb_ctc_loss_forward(&p, tlp, ttc, til, bad[4], SB_LOSS_NONE, tl_), SB_ERR_RANGE,
                "add up to more than the 3 labels");
    CHECK_ERROR(sb_ctc_loss_forward(&p, tlp, bad[5], til, ttl, SB_LOSS_NONE, tl_), SB_ERR_RANGE,
                "targets[0, 1] = 0 is the blank label");
    CHECK_ERROR(sb_ctc_loss_forward(&p, tlp, bad[6], til, ttl, SB_LOSS_NONE, tl_), SB_ERR_RANGE,
                "targets[0, 1] = 3 is outside [0, C)");
    CHECK_ERROR(sb_ctc_loss_forward(&pb, tlp, tt, til, ttl, SB_LOSS_NONE, tl_), SB_ERR_ARG,
                "params->blank = 3 is outside [0, C)");
    CHECK_ERROR(sb_ctc_loss_forward(&pneg, tlp, tt, til, ttl, SB_LOSS_NONE, tl_), SB_ERR_ARG,
                "params->blank = -1");
    CHECK_ERROR(sb_ctc_loss_forward(NULL, tlp, tt, til, ttl, SB_LOSS_NONE, tl_), SB_ERR_NULL,
                "params is NULL");
    CHECK_ERROR(sb_ctc_loss_forward(&p, tlp, tt, t1, ttl, SB_LOSS_NONE, tl_), SB_ERR_SHAPE,
                "input_lengths has 1 entries but log_probs has N = 2");
    CHECK_ERROR(sb_ctc_loss_forward(&p, tlp, tw, til, ttl, SB_LOSS_NONE, tl_), SB_ERR_SHAPE,
                "targets has 3 rows but log_probs has N = 2");
    CHECK_ERROR(sb_ctc_loss_forward(&p, tlp, tt, til, ttl, SB_LOSS_MEAN, tl_), SB_ERR_SHAPE,
                "expected a 0-d tensor for reduction MEAN");
    CHECK_ERROR(sb_ctc_loss_forward(&p, tlp, tt, til, ttl, SB_LOSS_NONE, tsc), SB_ERR_SHAPE,
                "loss has shape [], expected [2]");
    CHECK_ERROR(sb_ctc_loss_forward(&p, tlp, tlp, til, ttl, SB_LOSS_NONE, tl_), SB_ERR_DTYPE,
                "targets has dtype float32");
    CHECK(loss[0] == 5 && loss[1] == 5 && sc == 5, "loss written by a refused call");
    CHECK_ERROR(sb_ctc_loss_backward(&p, tlp, tt, bad[1], ttl, SB_LOSS_NONE, tdl, td), SB_ERR_RANGE,
                "sb_ctc_loss_backward: input_lengths[0] = 5 is longer than the input");
    CHECK_ERROR(sb_ctc_loss_backward(&p, tlp, tt, til, ttl, SB_LOSS_NONE, tdl, tlp), SB_ERR_ARG,
                "dlog_probs");
    CHECK_ERROR(sb_ctc_loss_backward(&p, tlp, tt, til, ttl, SB_LOSS_SUM, tdl, td), SB_ERR_SHAPE,
                "dloss has shape [2], expected a 0-d tensor");
    int touched = 0;
    for (int i = 0; i < 24; i++) touched += d[i] != 9.0f;
    CHECK(touched == 0, "dlog_probs written by a refused call (%d)", touched);
    sb_tensor *all[] = {tlp, tt, ttc, til, ttl, tl_, tsc, td, tdl, bad[0], bad[1], bad[2],
                        bad[3], bad[4], bad[5], bad[6], t1, tw};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) sb_tensor_free(all[i]);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_cases();
    test_brute_force();
    test_special();
    test_errors();
    return sb_test_finish();
}
