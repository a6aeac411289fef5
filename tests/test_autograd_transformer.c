/* A small pre-norm transformer block written in C with the sb_ag_* ops, the
 * proof that they are the building blocks a GPT needs:
 *
 *   tokens (B,T) -> embedding rows (sb_ag_embedding) + learned positions
 *   h = x + attn(rms_norm(x))      q, k, v, o projections by sb_ag_matmul,
 *                                  heads by reshape/transpose, causal
 *                                  attention: (q k^T) * scale + float mask,
 *                                  sb_ag_softmax, @ v
 *   h = h + mlp(layer_norm(h))     linear -> gelu -> linear
 *   logits = rms_norm(h) @ E^T     the head tied to the embedding
 *   loss = cross_entropy(logits, next tokens)
 *
 * Checks: every gradient against central finite differences of an
 * independent float64 restatement of the block, and the loss and every
 * gradient bit-identical at every ISA level x thread count of
 * tests/support/fastpath.h (1, 2, 3, 4, 7 threads). */
#include <math.h>
#include "harness.h"
#include "support/fastpath.h"

enum { B = 2, T = 5, V = 11, D = 8, H = 2, HD = D / H, FF = 16, BT = B * T };

/* The parameters, in one order everywhere. */
enum { P_EMB, P_POS, P_G1, P_WQ, P_WK, P_WV, P_WO, P_G2, P_B2, P_W1, P_B1, P_W2, P_BW2, P_GF, NP };
static const char *pname[NP] = {"emb", "pos", "g1", "wq", "wk", "wv", "wo", "g2", "b2", "w1",
                                "b1", "w2", "bw2", "gf"};
static const int pnd[NP] = {2, 2, 1, 2, 2, 2, 2, 1, 1, 2, 1, 2, 1, 1};
static const int64_t pshape[NP][2] = {{V, D}, {T, D}, {D, 0}, {D, D}, {D, D}, {D, D}, {D, D},
                                      {D, 0}, {D, 0}, {FF, D}, {FF, 0}, {D, FF}, {D, 0}, {D, 0}};

static const float EPS = 1e-5f;

typedef struct {
    sb_tensor *p[NP], *grad[NP];
    sb_tensor *tokens, *targets, *mask, *scale;
} block;

static uint64_t rng_state = 0x853c49e6748fea9bull;
static float urand(void) { /* [-1, 1), 24 bits */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(rng_state >> 40) * 0x1p-23f - 1.0f;
}

static sb_tensor *mk(sb_dtype dt, int nd, const int64_t *shape) {
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, dt, nd, shape) != SB_OK) {
        fprintf(stderr, "sb_tensor_new: %s\n", sb_last_error());
        exit(2);
    }
    return t;
}
static float *F(const sb_tensor *t) { return (float *)t->data; }

static void block_init(block *k) {
    for (int i = 0; i < NP; i++) {
        k->p[i] = mk(SB_F32, pnd[i], pshape[i]);
        k->grad[i] = mk(SB_F32, pnd[i], pshape[i]);
        int64_t n = sb_tensor_numel(k->p[i]);
        bool gain = i == P_G1 || i == P_G2 || i == P_GF;
        for (int64_t j = 0; j < n; j++) F(k->p[i])[j] = gain ? 1.0f + 0.2f * urand() : 0.5f * urand();
    }
    int64_t tt[2] = {T, T}, one[1] = {1};
    /* the tokens of both sequences (B,T); targets (B*T) are the next ones */
    k->tokens = mk(SB_I64, 2, (int64_t[]){B, T});
    k->targets = mk(SB_I64, 1, (int64_t[]){BT});
    const int64_t seq[BT + 1] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5};
    for (int i = 0; i < BT; i++) {
        ((int64_t *)k->tokens->data)[i] = seq[i];
        ((int64_t *)k->targets->data)[i] = seq[i + 1];
    }
    k->mask = mk(SB_F32, 2, tt);
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) F(k->mask)[i * T + j] = j > i ? -INFINITY : 0.0f;
    k->scale = mk(SB_F32, 1, one);
    F(k->scale)[0] = 1.0f / sqrtf((float)HD);
}

static void block_free(block *k) {
    for (int i = 0; i < NP; i++) {
        sb_tensor_free(k->p[i]);
        sb_tensor_free(k->grad[i]);
    }
    sb_tensor_free(k->tokens);
    sb_tensor_free(k->targets);
    sb_tensor_free(k->mask);
    sb_tensor_free(k->scale);
}

#define TRY(call)                                                                   \
    do {                                                                            \
        sb_status s_ = (call);                                                      \
        if (s_ != SB_OK) {                                                          \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, sb_last_error()); \
            return s_;                                                              \
        }                                                                           \
    } while (0)

/* (BT, D) -> (B*H, T, HD): split the heads. */
static sb_status heads(sb_graph *g, sb_variable *x, sb_variable **y) {
    sb_variable *a, *b;
    TRY(sb_ag_reshape(g, x, 4, (const int64_t[]){B, T, H, HD}, &a));
    TRY(sb_ag_transpose(g, a, 1, 2, &b));
    return sb_ag_reshape(g, b, 3, (const int64_t[]){B * H, T, HD}, y);
}

/* One forward of the block in g; the loss is a 0-d variable. */
static sb_status block_forward(block *k, sb_graph *g, sb_variable **loss) {
    sb_variable *p[NP], *mask, *scale;
    for (int i = 0; i < NP; i++) TRY(sb_graph_param(g, k->p[i], k->grad[i], &p[i]));
    TRY(sb_graph_input(g, k->mask, &mask));
    TRY(sb_graph_input(g, k->scale, &scale));

    sb_variable *e3, *x, *x2;
    TRY(sb_ag_embedding(g, p[P_EMB], k->tokens, SB_NO_PADDING, &e3)); /* (B, T, D) */
    TRY(sb_ag_add(g, e3, p[P_POS], &x)); /* + (T, D), broadcast over B */
    TRY(sb_ag_reshape(g, x, 2, (const int64_t[]){BT, D}, &x2));

    /* attention */
    sb_variable *n1, *q, *kk, *v, *qh, *kh, *vh, *s, *ss, *sm, *att, *o, *o4, *ot, *o2, *proj, *h;
    TRY(sb_ag_rms_norm(g, x2, 1, p[P_G1], EPS, &n1));
    TRY(sb_ag_matmul(g, n1, p[P_WQ], false, false, &q));
    TRY(sb_ag_matmul(g, n1, p[P_WK], false, false, &kk));
    TRY(sb_ag_matmul(g, n1, p[P_WV], false, false, &v));
    TRY(heads(g, q, &qh));
    TRY(heads(g, kk, &kh));
    TRY(heads(g, v, &vh));
    TRY(sb_ag_matmul(g, qh, kh, false, true, &s)); /* (B*H, T, T) */
    TRY(sb_ag_binary(g, SB_BINARY_MUL, s, scale, &ss));
    TRY(sb_ag_add(g, ss, mask, &sm));
    TRY(sb_ag_softmax(g, sm, -1, &att));
    TRY(sb_ag_matmul(g, att, vh, false, false, &o)); /* (B*H, T, HD) */
    TRY(sb_ag_reshape(g, o, 4, (const int64_t[]){B, H, T, HD}, &o4));
    TRY(sb_ag_transpose(g, o4, 1, 2, &ot));
    TRY(sb_ag_reshape(g, ot, 2, (const int64_t[]){BT, D}, &o2));
    TRY(sb_ag_matmul(g, o2, p[P_WO], false, false, &proj));
    TRY(sb_ag_add(g, x2, proj, &h));

    /* MLP */
    sb_variable *n2, *f1, *act, *f2, *h2, *nf, *logits;
    TRY(sb_ag_layer_norm(g, h, 1, p[P_G2], p[P_B2], EPS, &n2));
    TRY(sb_ag_linear(g, n2, p[P_W1], p[P_B1], &f1));
    TRY(sb_ag_gelu(g, f1, false, &act));
    TRY(sb_ag_linear(g, act, p[P_W2], p[P_BW2], &f2));
    TRY(sb_ag_binary(g, SB_BINARY_ADD, h, f2, &h2));

    /* tied head */
    TRY(sb_ag_rms_norm(g, h2, 1, p[P_GF], EPS, &nf));
    TRY(sb_ag_matmul(g, nf, p[P_EMB], false, true, &logits)); /* (BT, V) */
    return sb_ag_cross_entropy(g, logits, k->targets, SB_LOSS_MEAN, 0.0f, loss);
}

static float run_step(block *k, sb_graph *g) {
    sb_graph_reset(g);
    sb_variable *loss = NULL;
    sb_status s = block_forward(k, g, &loss);
    CHECK(s == SB_OK, "forward: %s", sb_last_error());
    if (s != SB_OK) return NAN;
    CHECK_OK(sb_graph_backward(g, loss));
    return F(loss->value)[0];
}

/* ---- the block restated in float64 ---- */

static void rms64(const double *x, const double *gain, double *y, int rows) {
    for (int r = 0; r < rows; r++) {
        double ms = 0;
        for (int i = 0; i < D; i++) ms += x[r * D + i] * x[r * D + i];
        double rr = 1.0 / sqrt(ms / D + (double)EPS);
        for (int i = 0; i < D; i++) y[r * D + i] = x[r * D + i] * rr * gain[i];
    }
}

static double loss64(double *const p[NP], const block *k) {
    const int64_t *tok = k->tokens->data, *tgt = k->targets->data;
    double x[BT * D], n1[BT * D], q[BT * D], kk[BT * D], v[BT * D], o[BT * D], h[BT * D];
    for (int r = 0; r < BT; r++)
        for (int i = 0; i < D; i++) x[r * D + i] = p[P_EMB][tok[r] * D + i] + p[P_POS][(r % T) * D + i];
    rms64(x, p[P_G1], n1, BT);
    for (int r = 0; r < BT; r++)
        for (int j = 0; j < D; j++) {
            double a = 0, b = 0, c = 0;
            for (int i = 0; i < D; i++) {
                a += n1[r * D + i] * p[P_WQ][i * D + j];
                b += n1[r * D + i] * p[P_WK][i * D + j];
                c += n1[r * D + i] * p[P_WV][i * D + j];
            }
            q[r * D + j] = a; kk[r * D + j] = b; v[r * D + j] = c;
        }
    double scale = (double)(1.0f / sqrtf((float)HD));
    for (int b = 0; b < B; b++)
        for (int hh = 0; hh < H; hh++)
            for (int t = 0; t < T; t++) {
                double s[T], m = -INFINITY, z = 0;
                for (int u = 0; u <= t; u++) {
                    double dot = 0;
                    for (int i = 0; i < HD; i++)
                        dot += q[(b * T + t) * D + hh * HD + i] * kk[(b * T + u) * D + hh * HD + i];
                    s[u] = dot * scale;
                    m = fmax(m, s[u]);
                }
                for (int u = 0; u <= t; u++) z += exp(s[u] - m);
                for (int i = 0; i < HD; i++) {
                    double acc = 0;
                    for (int u = 0; u <= t; u++) acc += exp(s[u] - m) / z * v[(b * T + u) * D + hh * HD + i];
                    o[(b * T + t) * D + hh * HD + i] = acc;
                }
            }
    for (int r = 0; r < BT; r++)
        for (int j = 0; j < D; j++) {
            double a = 0;
            for (int i = 0; i < D; i++) a += o[r * D + i] * p[P_WO][i * D + j];
            h[r * D + j] = x[r * D + j] + a;
        }
    double n2[BT * D], h2[BT * D], nf[BT * D], loss = 0;
    for (int r = 0; r < BT; r++) {
        double mean = 0, var = 0;
        for (int i = 0; i < D; i++) mean += h[r * D + i];
        mean /= D;
        for (int i = 0; i < D; i++) var += (h[r * D + i] - mean) * (h[r * D + i] - mean);
        var /= D;
        for (int i = 0; i < D; i++)
            n2[r * D + i] = (h[r * D + i] - mean) / sqrt(var + (double)EPS) * p[P_G2][i] + p[P_B2][i];
        double a[FF];
        for (int f = 0; f < FF; f++) {
            double z = p[P_B1][f];
            for (int i = 0; i < D; i++) z += n2[r * D + i] * p[P_W1][f * D + i];
            a[f] = 0.5 * z * (1.0 + erf(z / sqrt(2.0)));
        }
        for (int j = 0; j < D; j++) {
            double z = p[P_BW2][j];
            for (int f = 0; f < FF; f++) z += a[f] * p[P_W2][j * FF + f];
            h2[r * D + j] = h[r * D + j] + z;
        }
    }
    rms64(h2, p[P_GF], nf, BT);
    for (int r = 0; r < BT; r++) {
        double lg[V], m = -INFINITY, z = 0;
        for (int c = 0; c < V; c++) {
            lg[c] = 0;
            for (int i = 0; i < D; i++) lg[c] += nf[r * D + i] * p[P_EMB][c * D + i];
            m = fmax(m, lg[c]);
        }
        for (int c = 0; c < V; c++) z += exp(lg[c] - m);
        loss += -(lg[tgt[r]] - m - log(z));
    }
    return loss / BT;
}

static void test_gradients_against_float64(void) {
    block k;
    block_init(&k);
    sb_graph *g = NULL;
    CHECK_OK(sb_graph_new(&g));
    float loss = run_step(&k, g);
    double *p64[NP];
    for (int i = 0; i < NP; i++) {
        int64_t n = sb_tensor_numel(k.p[i]);
        p64[i] = malloc((size_t)n * sizeof(double));
        for (int64_t j = 0; j < n; j++) p64[i][j] = F(k.p[i])[j];
    }
    double l64 = loss64(p64, &k);
    CHECK(fabs(loss - l64) <= 1e-5 * (1 + fabs(l64)), "loss %.9g vs float64 %.9g", (double)loss, l64);
    int checked = 0;
    for (int i = 0; i < NP; i++) {
        int64_t n = sb_tensor_numel(k.p[i]);
        double scale = 1e-3;
        for (int64_t j = 0; j < n; j++) scale = fmax(scale, fabs(F(k.grad[i])[j]));
        for (int64_t j = 0; j < n; j += n > 12 ? n / 12 : 1) {
            double s = p64[i][j], hstep = 1e-5 * fmax(1.0, fabs(s));
            p64[i][j] = s + hstep;
            double lp = loss64(p64, &k);
            p64[i][j] = s - hstep;
            double lm = loss64(p64, &k);
            p64[i][j] = s;
            double fd = (lp - lm) / (2 * hstep), got = F(k.grad[i])[j];
            CHECK(fabs(got - fd) <= 1e-4 * scale + 1e-3 * fabs(fd) + 1e-7,
                  "d loss / d %s[%lld]: graph %.9g, float64 finite difference %.9g", pname[i],
                  (long long)j, got, fd);
            checked++;
        }
    }
    CHECK(checked > 100, "only %d gradient elements checked", checked);
    for (int i = 0; i < NP; i++) free(p64[i]);
    sb_graph_free(g);
    block_free(&k);
}

/* The loss and every gradient: the same bits at every ISA level and thread
 * count, and on a second step. */
static void test_same_bits_everywhere(void) {
    block k;
    block_init(&k);
    sb_graph *g = NULL;
    CHECK_OK(sb_graph_new(&g));
    sb_test_config_apply(0);
    float loss0 = run_step(&k, g);
    sb_tensor *want[NP];
    for (int i = 0; i < NP; i++) {
        want[i] = mk(SB_F32, pnd[i], pshape[i]);
        memcpy(want[i]->data, k.grad[i]->data, (size_t)sb_tensor_numel(want[i]) * sizeof(float));
    }
    int configs = sb_test_config_count();
    for (int c = 0; c < configs; c++) {
        sb_test_config_apply(c);
        for (int i = 0; i < NP; i++) sb_tensor_fill(k.grad[i], 123.0f);
        float loss = run_step(&k, g);
        CHECK_BITS(loss, loss0, "loss at %s", sb_test_config_name(c));
        for (int i = 0; i < NP; i++) {
            int64_t n = sb_tensor_numel(want[i]), bad = -1;
            for (int64_t j = 0; j < n && bad < 0; j++)
                if (sb_test_bits(F(k.grad[i])[j]) != sb_test_bits(F(want[i])[j])) bad = j;
            CHECK(bad < 0, "gradient of %s at %s: element %lld is %a, %a at %s", pname[i],
                  sb_test_config_name(c), (long long)bad, bad >= 0 ? F(k.grad[i])[bad] : 0.0f,
                  bad >= 0 ? F(want[i])[bad] : 0.0f, sb_test_config_name(0));
        }
    }
    sb_test_config_reset();
    CHECK(configs >= 2, "only %d configurations", configs);
    for (int i = 0; i < NP; i++) sb_tensor_free(want[i]);
    sb_graph_free(g);
    block_free(&k);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_gradients_against_float64();
    test_same_bits_everywhere();
    return sb_test_finish();
}
