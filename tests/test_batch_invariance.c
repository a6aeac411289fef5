/* Batch- and cache-invariant inference: a small pre-norm transformer (token
 * and position embeddings, RMS norm, multi-head causal attention, GELU MLP,
 * residuals, an output head), written with samebits' public ops, gives
 * every prompt's logits at every position with the same bits
 *   (a) when the prompt runs alone,
 *   (b) inside batches of 2, 3, 8 and 16 prompts of other lengths, in any
 *       order, right-padded to the longest,
 *   (c) prefilled at once, decoded token by token with a KV cache, or
 *       prefilled in two chunks,
 *   (d) at every instruction-set level and thread count the fast-path tests
 *       use.
 * Why it holds (contract sections 7, 12, 19): every op here computes an
 * output row from its own input row in an order fixed by the contract
 * (GEMM chains over k, row norms, attention rows over their own keys), and
 * a query never reads a key it may not see: padded keys lie after every
 * real query's last visible key. The test is what proves the kernels keep
 * that promise at every batch size, row count and thread split. */
#include <string.h>
#include "harness.h"
#include "support/fastpath.h"

enum { V = 19, D = 16, H = 2, E = D / H, F = 4 * D, LAYERS = 2, TMAX = 11, NPROMPT = 16 };

typedef struct {
    sb_tensor *tok, *pos, *ln1[LAYERS], *ln2[LAYERS], *wq[LAYERS], *wk[LAYERS], *wv[LAYERS],
        *wo[LAYERS], *w1[LAYERS], *b1[LAYERS], *w2[LAYERS], *b2[LAYERS], *lnf, *head;
} model;

static uint64_t lcg = 0x9e3779b97f4a7c15ull;
static float unif(float scale) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return ((float)(lcg >> 40) * 0x1p-24f - 0.5f) * scale;
}

static sb_tensor *tensor(int nd, const int64_t *shape) {
    sb_tensor *t = NULL;
    CHECK_OK(sb_tensor_new(&t, SB_F32, nd, shape));
    return t;
}

static sb_tensor *randn(int nd, const int64_t *shape, float scale) {
    sb_tensor *t = tensor(nd, shape);
    for (int64_t i = 0; i < sb_tensor_numel(t); i++) ((float *)t->data)[i] = unif(scale);
    return t;
}

static void model_init(model *m) {
    m->tok = randn(2, (int64_t[]){V, D}, 2.0f);
    m->pos = randn(2, (int64_t[]){TMAX, D}, 1.0f);
    for (int l = 0; l < LAYERS; l++) {
        m->ln1[l] = randn(1, (int64_t[]){D}, 1.0f);
        m->ln2[l] = randn(1, (int64_t[]){D}, 1.0f);
        m->wq[l] = randn(2, (int64_t[]){D, D}, 0.5f);
        m->wk[l] = randn(2, (int64_t[]){D, D}, 0.5f);
        m->wv[l] = randn(2, (int64_t[]){D, D}, 0.5f);
        m->wo[l] = randn(2, (int64_t[]){D, D}, 0.5f);
        m->w1[l] = randn(2, (int64_t[]){F, D}, 0.5f);
        m->b1[l] = randn(1, (int64_t[]){F}, 0.2f);
        m->w2[l] = randn(2, (int64_t[]){D, F}, 0.25f);
        m->b2[l] = randn(1, (int64_t[]){D}, 0.2f);
    }
    m->lnf = randn(1, (int64_t[]){D}, 1.0f);
    m->head = randn(2, (int64_t[]){V, D}, 0.5f);
}

static void model_free(model *m) {
    sb_tensor **all = (sb_tensor **)m;
    for (size_t i = 0; i < sizeof *m / sizeof(sb_tensor *); i++) sb_tensor_free(all[i]);
}

/* The KV cache of B sequences: (B, H, TMAX, E) per layer, and how many
 * positions it holds. */
typedef struct {
    float k[LAYERS][NPROMPT * H * TMAX * E], v[LAYERS][NPROMPT * H * TMAX * E];
    int64_t len;
} kv_cache;

/* out (B,T,d) = linear(x (B,T,d_in)) */
static sb_tensor *linear(const sb_tensor *x, const sb_tensor *w, const sb_tensor *b) {
    int64_t shape[3] = {x->shape[0], x->shape[1], w->shape[0]};
    sb_tensor *y = tensor(3, shape);
    CHECK_OK(sb_linear_forward(x, w, b, y));
    return y;
}

static sb_tensor *rms(const sb_tensor *x, const sb_tensor *w) {
    sb_tensor *y = tensor(x->ndim, x->shape);
    CHECK_OK(sb_rms_norm_forward(x, 1, w, 1e-5f, y, NULL));
    return y;
}

static void add_into(sb_tensor *h, const sb_tensor *d) { CHECK_OK(sb_add(h, d, h)); }

/* Tokens tok (B, T) at positions c->len .. c->len + T - 1 of each sequence:
 * appends their keys and values to the cache and writes logits (B, T, V). */
static void forward(const model *m, const int64_t *tok, int64_t B, int64_t T, kv_cache *c,
                    float *logits) {
    const int64_t start = c->len, L = start + T;
    sb_tensor *idx = NULL, *h = tensor(3, (int64_t[]){B, T, D});
    CHECK_OK(sb_tensor_new(&idx, SB_I64, 2, (int64_t[]){B, T}));
    memcpy(idx->data, tok, (size_t)(B * T) * sizeof(int64_t));
    CHECK_OK(sb_embedding_forward(m->tok, idx, h));
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t i = 0; i < D; i++)
                ((float *)h->data)[(b * T + t) * D + i] += ((float *)m->pos->data)[(start + t) * D + i];
    float scale;
    CHECK_OK(sb_sdpa_default_scale(E, &scale));
    for (int l = 0; l < LAYERS; l++) {
        sb_tensor *a = rms(h, m->ln1[l]);
        sb_tensor *q = linear(a, m->wq[l], NULL), *k = linear(a, m->wk[l], NULL),
                  *v = linear(a, m->wv[l], NULL);
        /* heads: q (B,T,H,E) -> (B,H,T,E); the new keys and values join the
         * cache, and attention reads (B,H,L,E) */
        sb_tensor *qh = tensor(4, (int64_t[]){B, H, T, E}), *kh = tensor(4, (int64_t[]){B, H, L, E}),
                  *vh = tensor(4, (int64_t[]){B, H, L, E}), *o = tensor(4, (int64_t[]){B, H, T, E});
        for (int64_t b = 0; b < B; b++)
            for (int64_t hh = 0; hh < H; hh++) {
                for (int64_t t = 0; t < T; t++)
                    for (int64_t e = 0; e < E; e++) {
                        int64_t src = (b * T + t) * D + hh * E + e, at = ((b * H + hh) * TMAX + start + t) * E + e;
                        ((float *)qh->data)[((b * H + hh) * T + t) * E + e] = ((float *)q->data)[src];
                        c->k[l][at] = ((float *)k->data)[src];
                        c->v[l][at] = ((float *)v->data)[src];
                    }
                for (int64_t j = 0; j < L; j++)
                    for (int64_t e = 0; e < E; e++) {
                        int64_t at = ((b * H + hh) * TMAX + j) * E + e;
                        ((float *)kh->data)[((b * H + hh) * L + j) * E + e] = c->k[l][at];
                        ((float *)vh->data)[((b * H + hh) * L + j) * E + e] = c->v[l][at];
                    }
            }
        CHECK_OK(sb_sdpa_forward(qh, kh, vh, NULL, SB_SDPA_CAUSAL_BOTTOM_RIGHT, scale, 0.0f, 0, 0, 0,
                                 o, NULL));
        sb_tensor *merged = tensor(3, (int64_t[]){B, T, D});
        for (int64_t b = 0; b < B; b++)
            for (int64_t hh = 0; hh < H; hh++)
                for (int64_t t = 0; t < T; t++)
                    memcpy((float *)merged->data + (b * T + t) * D + hh * E,
                           (float *)o->data + ((b * H + hh) * T + t) * E, E * sizeof(float));
        sb_tensor *proj = linear(merged, m->wo[l], NULL);
        add_into(h, proj);
        sb_tensor *a2 = rms(h, m->ln2[l]), *u = linear(a2, m->w1[l], m->b1[l]);
        sb_tensor *gu = tensor(3, u->shape);
        CHECK_OK(sb_gelu_forward(u, false, gu));
        sb_tensor *down = linear(gu, m->w2[l], m->b2[l]);
        add_into(h, down);
        sb_tensor *tmp[] = {a, q, k, v, qh, kh, vh, o, merged, proj, a2, u, gu, down};
        for (size_t i = 0; i < sizeof tmp / sizeof *tmp; i++) sb_tensor_free(tmp[i]);
    }
    sb_tensor *f = rms(h, m->lnf), *y = linear(f, m->head, NULL);
    memcpy(logits, y->data, (size_t)(B * T * V) * sizeof(float));
    c->len = L;
    sb_tensor_free(f);
    sb_tensor_free(y);
    sb_tensor_free(h);
    sb_tensor_free(idx);
}

static int64_t prompt_len[NPROMPT];
static int64_t prompt_tok[NPROMPT][TMAX];
static float want[NPROMPT][TMAX][V]; /* each prompt alone, prefilled, first configuration */

static kv_cache cache; /* large: static */

/* Runs `ids` (n prompts) as one right-padded batch, prefilled in chunks of
 * `chunk` positions (TMAX: at once, 1: token by token); records every real
 * position's logits in `want`, or returns how many differ from it. */
static int run_batch(const model *m, const int *ids, int n, int64_t chunk, bool record) {
    int64_t T = 0;
    for (int i = 0; i < n; i++) T = prompt_len[ids[i]] > T ? prompt_len[ids[i]] : T;
    static int64_t tok[NPROMPT * TMAX];
    static float out[NPROMPT * TMAX * V];
    static float all[NPROMPT][TMAX][V];
    memset(&cache, 0, sizeof cache);
    for (int64_t s = 0; s < T; s += chunk) {
        int64_t c = s + chunk <= T ? chunk : T - s;
        for (int i = 0; i < n; i++)
            for (int64_t t = 0; t < c; t++) /* padding: token 0 after the prompt's end */
                tok[i * c + t] = s + t < prompt_len[ids[i]] ? prompt_tok[ids[i]][s + t] : 0;
        forward(m, tok, n, c, &cache, out);
        for (int i = 0; i < n; i++)
            for (int64_t t = 0; t < c; t++) memcpy(all[i][s + t], out + (i * c + t) * V, V * 4);
    }
    int bad = 0;
    for (int i = 0; i < n; i++)
        for (int64_t t = 0; t < prompt_len[ids[i]]; t++) {
            if (record) memcpy(want[ids[i]][t], all[i][t], V * 4);
            else bad += memcmp(want[ids[i]][t], all[i][t], V * 4) != 0;
        }
    return bad;
}

static void check_batch(const model *m, const int *ids, int n, int64_t chunk, const char *what) {
    int bad = run_batch(m, ids, n, chunk, false);
    CHECK(bad == 0, "%s: %d positions' logits differ from the prompt alone", what, bad);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    model m;
    model_init(&m);
    for (int p = 0; p < NPROMPT; p++) {
        prompt_len[p] = 1 + (p * 7 + 3) % TMAX; /* 1 .. TMAX, mixed */
        for (int64_t t = 0; t < TMAX; t++) prompt_tok[p][t] = 1 + (p * 31 + t * 17) % (V - 1);
    }
    int ids[NPROMPT];
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        char what[128];
        for (int p = 0; p < NPROMPT; p++) { /* alone: recorded once, then compared */
            ids[0] = p;
            snprintf(what, sizeof what, "%s: prompt %d alone", sb_test_config_name(c), p);
            if (c == 0) run_batch(&m, ids, 1, TMAX, true);
            else check_batch(&m, ids, 1, TMAX, what);
            snprintf(what, sizeof what, "%s: prompt %d decoded token by token", sb_test_config_name(c), p);
            check_batch(&m, ids, 1, 1, what);
            snprintf(what, sizeof what, "%s: prompt %d prefilled in chunks of 3", sb_test_config_name(c), p);
            check_batch(&m, ids, 1, 3, what);
        }
        const int sizes[] = {2, 3, 8, 16};
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            int n = sizes[s];
            for (int i = 0; i < n; i++) ids[i] = (i * 5 + (int)s * 3 + c) % NPROMPT; /* mixed order */
            snprintf(what, sizeof what, "%s: batch of %d", sb_test_config_name(c), n);
            check_batch(&m, ids, n, TMAX, what);
            snprintf(what, sizeof what, "%s: batch of %d decoded", sb_test_config_name(c), n);
            check_batch(&m, ids, n, 1, what);
        }
    }
    sb_test_config_reset();
    /* the comparison can fail: a changed head weight changes the logits */
    float saved = ((float *)m.head->data)[0];
    ((float *)m.head->data)[0] = saved * 1.5f;
    ids[0] = 3;
    CHECK(run_batch(&m, ids, 1, TMAX, false) > 0, "a perturbed model gives other logits");
    ((float *)m.head->data)[0] = saved;
    model_free(&m);
    return sb_test_finish();
}
