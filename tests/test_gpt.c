/* The small GPT (include/samebits/gpt.h) and reproducible sampling:
 *   - parameter names, shapes and the N(0, 0.02^2) / ones initialisation;
 *   - every prompt's logits at every position have the same bits without a
 *     cache, with a KV cache prefilled at once, in chunks of 3 and token by
 *     token, and inside right-padded batches of other prompts, at every ISA
 *     level and thread count of the fast-path tests;
 *   - generation with the cache gives the tokens and logits of recomputing
 *     the whole prefix at each step;
 *   - the gradients of the loss match central differences (rotary, attention,
 *     norms, MLP, tied head);
 *   - sb_sample_token: greedy and top-k ties, top-k / top-p cuts, the
 *     frequencies of the inverse-CDF draw, keyed by (seed, position). */
#include <math.h>
#include <string.h>
#include "harness.h"
#include "support/fastpath.h"
#include "samebits/gpt.h"
#include "samebits/train.h"

enum { V = 23, CTX = 12, NPROMPT = 6 };

static sb_gpt_config small_config(bool tied) {
    sb_gpt_config c = sb_gpt_default_config(V);
    c.context = CTX;
    c.d_model = 16;
    c.heads = 2;
    c.layers = 2;
    c.tied_head = tied;
    return c;
}

static sb_module *make_model(bool tied, uint64_t seed) {
    sb_gpt_config c = small_config(tied);
    sb_module *m = NULL;
    CHECK_OK(sb_model_gpt(&m, &c));
    CHECK_OK(sb_module_init(m, seed));
    return m;
}

static void test_parameters(void) {
    sb_module *m = make_model(false, 1), *t = make_model(true, 1), *m2 = make_model(false, 2);
    sb_named p[32];
    size_t n = 0;
    CHECK_OK(sb_module_parameters(m, p, 32, &n));
    static const char *names[] = {
        "tok_emb.weight", "blocks.0.ln1.weight", "blocks.0.attn.q.weight", "blocks.0.attn.k.weight",
        "blocks.0.attn.v.weight", "blocks.0.attn.o.weight", "blocks.0.ln2.weight", "blocks.0.mlp.fc.weight",
        "blocks.0.mlp.proj.weight", "blocks.1.ln1.weight", "blocks.1.attn.q.weight", "blocks.1.attn.k.weight",
        "blocks.1.attn.v.weight", "blocks.1.attn.o.weight", "blocks.1.ln2.weight", "blocks.1.mlp.fc.weight",
        "blocks.1.mlp.proj.weight", "ln_f.weight", "head.weight"};
    CHECK(n == 19, "19 parameters, got %zu", n);
    for (size_t i = 0; i < n && i < 19; i++) CHECK(!strcmp(p[i].name, names[i]), "parameter %zu is %s, want %s", i, p[i].name, names[i]);
    CHECK(p[7].value->ndim == 2 && p[7].value->shape[0] == 64 && p[7].value->shape[1] == 16, "mlp.fc is (64, 16)");
    CHECK(p[18].value->shape[0] == V && p[18].value->shape[1] == 16, "head is (V, 16)");
    size_t nt = 0;
    CHECK_OK(sb_module_parameters(t, NULL, 0, &nt));
    CHECK(nt == 18, "the tied model has no head.weight (%zu parameters)", nt);
    /* init: norm weights 1, matrices N(0, 0.02^2) from the seed */
    const float *ln = p[1].value->data;
    CHECK(ln[0] == 1.0f && ln[15] == 1.0f, "norm weights start at 1");
    double sum = 0, sq = 0;
    int64_t cnt = sb_tensor_numel(p[7].value);
    for (int64_t i = 0; i < cnt; i++) {
        double x = ((const float *)p[7].value->data)[i];
        sum += x;
        sq += x * x;
    }
    double sd = sqrt(sq / (double)cnt - (sum / (double)cnt) * (sum / (double)cnt));
    CHECK(fabs(sd - 0.02) < 0.003 && fabs(sum / (double)cnt) < 0.003, "mlp.fc: std %g, mean %g", sd, sum / (double)cnt);
    unsigned char a[32], b[32], c2[32];
    sb_module *again = make_model(false, 1);
    CHECK_OK(sb_module_hash(m, a));
    CHECK_OK(sb_module_hash(again, b));
    CHECK_OK(sb_module_hash(m2, c2));
    CHECK(memcmp(a, b, 32) == 0 && memcmp(a, c2, 32) != 0, "the seed alone decides the initial model");
    sb_gpt_config got;
    CHECK_OK(sb_gpt_get_config(t, &got));
    CHECK(got.tied_head && got.vocab == V && got.context == CTX, "sb_gpt_get_config gives the build's config");
    sb_module_free(again);
    sb_module_free(m);
    sb_module_free(t);
    sb_module_free(m2);
}

/* ---- logits: alone, cached, batched ---- */

static int64_t prompt_len[NPROMPT], prompt[NPROMPT][CTX];
static float want[NPROMPT][CTX][V]; /* each prompt alone, no cache */

/* Runs prompts ids[0..n) as one right-padded batch, in chunks of `chunk`
 * positions through a cache (chunk 0: no cache, at once); returns how many
 * real positions' logits differ from `want` (or records them). */
static int run(sb_module *m, sb_graph *g, const int *ids, int n, int64_t chunk, bool record) {
    int64_t T = 0;
    for (int i = 0; i < n; i++) T = prompt_len[ids[i]] > T ? prompt_len[ids[i]] : T;
    sb_gpt_cache *cache = NULL;
    if (chunk) CHECK_OK(sb_gpt_cache_new(&cache, m, n));
    int64_t step = chunk ? chunk : T;
    int bad = 0;
    for (int64_t s = 0; s < T; s += step) {
        int64_t c = s + step <= T ? step : T - s;
        sb_tensor *x = NULL;
        sb_variable *logits = NULL;
        CHECK_OK(sb_tensor_new(&x, SB_I64, 2, (int64_t[]){n, c}));
        for (int i = 0; i < n; i++)
            for (int64_t t = 0; t < c; t++) /* padding: token 0 after the prompt's end */
                ((int64_t *)x->data)[i * c + t] = s + t < prompt_len[ids[i]] ? prompt[ids[i]][s + t] : 0;
        sb_graph_reset(g);
        CHECK_OK(sb_gpt_forward(m, g, x, cache, &logits));
        CHECK(!cache || sb_gpt_cache_length(cache) == s + c, "the cache holds %lld positions", (long long)(s + c));
        for (int i = 0; logits && i < n; i++)
            for (int64_t t = 0; t < c && s + t < prompt_len[ids[i]]; t++) {
                const float *row = (const float *)logits->value->data + (i * c + t) * V;
                if (record) memcpy(want[ids[i]][s + t], row, sizeof want[0][0]);
                else bad += memcmp(want[ids[i]][s + t], row, sizeof want[0][0]) != 0;
            }
        sb_tensor_free(x);
    }
    sb_gpt_cache_free(cache);
    return bad;
}

static void test_invariance(bool tied) {
    sb_module *m = make_model(tied, 7);
    sb_graph *g = NULL;
    CHECK_OK(sb_graph_new(&g));
    sb_module_train(m, false);
    for (int p = 0; p < NPROMPT; p++) {
        prompt_len[p] = 1 + (p * 5 + 2) % CTX;
        for (int64_t t = 0; t < CTX; t++) prompt[p][t] = (p * 7 + t * 11 + 1) % V;
    }
    int ids[NPROMPT];
    for (int c = 0; c < sb_test_config_count(); c++) {
        sb_test_config_apply(c);
        const char *cn = sb_test_config_name(c);
        for (int p = 0; p < NPROMPT; p++) {
            ids[0] = p;
            if (c == 0) run(m, g, ids, 1, 0, true);
            else CHECK(run(m, g, ids, 1, 0, false) == 0, "%s: prompt %d alone (tied %d)", cn, p, tied);
            CHECK(run(m, g, ids, 1, CTX, false) == 0, "%s: prompt %d prefilled into a cache (tied %d)", cn, p, tied);
            CHECK(run(m, g, ids, 1, 3, false) == 0, "%s: prompt %d in chunks of 3 (tied %d)", cn, p, tied);
            CHECK(run(m, g, ids, 1, 1, false) == 0, "%s: prompt %d token by token (tied %d)", cn, p, tied);
        }
        for (int n = 2; n <= NPROMPT; n += 2) {
            for (int i = 0; i < n; i++) ids[i] = (i * 5 + n + c) % NPROMPT;
            CHECK(run(m, g, ids, n, 0, false) == 0, "%s: batch of %d (tied %d)", cn, n, tied);
            CHECK(run(m, g, ids, n, 1, false) == 0, "%s: batch of %d decoded (tied %d)", cn, n, tied);
        }
    }
    sb_test_config_reset();
    /* the comparison can fail: another model gives other logits */
    sb_module *other = make_model(tied, 8);
    ids[0] = 2;
    CHECK(run(other, g, ids, 1, 0, false) > 0, "another seed gives other logits");
    sb_module_free(other);
    sb_graph_free(g);
    sb_module_free(m);
}

/* ---- generation: cache against recomputing the prefix ---- */

static void generate(sb_module *m, bool use_cache, const sb_sample_config *sc, int64_t *seq, float *logits) {
    sb_graph *g = NULL;
    sb_gpt_cache *cache = NULL;
    CHECK_OK(sb_graph_new(&g));
    if (use_cache) CHECK_OK(sb_gpt_cache_new(&cache, m, 1));
    const int64_t P = 3;
    for (int64_t len = P; len < CTX; len++) {
        int64_t from = use_cache ? sb_gpt_cache_length(cache) : 0;
        sb_tensor *x = NULL;
        sb_variable *y = NULL;
        CHECK_OK(sb_tensor_new(&x, SB_I64, 2, (int64_t[]){1, len - from}));
        memcpy(x->data, seq + from, (size_t)(len - from) * sizeof *seq);
        sb_graph_reset(g);
        CHECK_OK(sb_gpt_forward(m, g, x, cache, &y));
        float *row = logits + (len - P) * V;
        if (y) memcpy(row, (const float *)y->value->data + (len - from - 1) * V, V * sizeof(float));
        CHECK_OK(sb_sample_token(row, V, sc, 99, (uint64_t)len, &seq[len]));
        sb_tensor_free(x);
    }
    sb_gpt_cache_free(cache);
    sb_graph_free(g);
}

static void test_generation(void) {
    sb_module *m = make_model(false, 3);
    sb_module_train(m, false);
    sb_sample_config configs[3] = {{0.0f, 0, 1.0f}, {1.0f, 5, 1.0f}, {0.8f, 0, 0.9f}};
    for (int k = 0; k < 3; k++) {
        int64_t a[CTX] = {4, 9, 1}, b[CTX] = {4, 9, 1};
        static float la[CTX * V], lb[CTX * V];
        generate(m, true, &configs[k], a, la);
        generate(m, false, &configs[k], b, lb);
        CHECK(memcmp(a, b, sizeof a) == 0, "config %d: the cache gives the recomputed tokens", k);
        CHECK(memcmp(la, lb, (CTX - 3) * V * sizeof(float)) == 0, "config %d: and their logits' bits", k);
    }
    sb_module_free(m);
}

/* ---- gradients ---- */

static float loss_at(sb_module *m, sb_graph *g, const sb_tensor *x, const sb_tensor *y, bool backward) {
    sb_variable *logits = NULL, *rows = NULL, *loss = NULL;
    sb_graph_reset(g);
    CHECK_OK(sb_gpt_forward(m, g, x, NULL, &logits));
    CHECK_OK(sb_ag_reshape(g, logits, 2, (int64_t[]){-1, V}, &rows));
    CHECK_OK(sb_ag_cross_entropy(g, rows, y, SB_LOSS_MEAN, 0.0f, &loss));
    if (backward) CHECK_OK(sb_graph_backward(g, loss));
    return loss ? ((const float *)loss->value->data)[0] : NAN;
}

static void test_gradients(bool tied) {
    sb_module *m = make_model(tied, 11);
    sb_graph *g = NULL;
    sb_tensor *x = NULL, *y = NULL;
    CHECK_OK(sb_graph_new(&g));
    CHECK_OK(sb_tensor_new(&x, SB_I64, 2, (int64_t[]){2, 8}));
    CHECK_OK(sb_tensor_new(&y, SB_I64, 1, (int64_t[]){16}));
    for (int i = 0; i < 16; i++) {
        ((int64_t *)x->data)[i] = (i * 5 + 3) % V;
        ((int64_t *)y->data)[i] = (i * 7 + 2) % V;
    }
    /* larger weights than the 0.02 init, so every part matters */
    sb_named p[32];
    size_t n = 0;
    CHECK_OK(sb_module_parameters(m, p, 32, &n));
    for (size_t i = 0; i < n; i++)
        for (int64_t j = 0; j < sb_tensor_numel(p[i].value); j++) {
            float *v = (float *)p[i].value->data + j;
            *v = p[i].value->ndim == 2 ? *v * 15.0f : 1.0f + 0.1f * (float)((j * 7) % 5 - 2);
        }
    loss_at(m, g, x, y, true);
    /* the element with the largest gradient of each parameter (read now:
     * the next forward binds the parameters again, zeroing the gradients) */
    int64_t at[32];
    float an_of[32];
    for (size_t i = 0; i < n; i++) {
        const float *gr = p[i].grad->data;
        at[i] = 0;
        for (int64_t j = 1; j < sb_tensor_numel(p[i].grad); j++)
            if (fabsf(gr[j]) > fabsf(gr[at[i]])) at[i] = j;
        an_of[i] = gr[at[i]];
    }
    int checked = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t best = at[i];
        float *v = (float *)p[i].value->data + best, keep = *v, h = 1e-2f;
        *v = keep + h;
        double up = loss_at(m, g, x, y, false);
        *v = keep - h;
        double down = loss_at(m, g, x, y, false);
        *v = keep;
        double fd = (up - down) / (2.0 * (double)h), an = an_of[i];
        CHECK(fabs(fd - an) <= 0.05 * fabs(an) + 2e-4, "tied %d: %s[%lld]: gradient %g, central difference %g",
              tied, p[i].name, (long long)best, an, fd);
        checked++;
    }
    CHECK(checked == (int)n && fabsf(an_of[0]) > 0.0f, "checked every parameter; the embedding has a gradient");
    sb_tensor_free(x);
    sb_tensor_free(y);
    sb_graph_free(g);
    sb_module_free(m);
}

/* ---- sampling ---- */

static void test_sampling(void) {
    sb_sample_config greedy = {0.0f, 0, 1.0f}, plain = sb_sample_default_config();
    const float tie[4] = {0.5f, 2.0f, 2.0f, -1.0f};
    int64_t tok = -1;
    CHECK_OK(sb_sample_token(tie, 4, &greedy, 0, 0, &tok));
    CHECK(tok == 1, "greedy: the first maximum (got %lld)", (long long)tok);
    sb_sample_config k1 = {1.0f, 1, 1.0f}, pmin = {1.0f, 0, 1e-6f};
    for (uint64_t pos = 0; pos < 50; pos++) {
        CHECK_OK(sb_sample_token(tie, 4, &k1, 5, pos, &tok));
        CHECK(tok == 1, "top-k 1 keeps the first of tied maxima (got %lld)", (long long)tok);
        CHECK_OK(sb_sample_token(tie, 4, &pmin, 5, pos, &tok));
        CHECK(tok == 1, "a tiny top-p keeps the first of the order (got %lld)", (long long)tok);
    }
    /* frequencies of the inverse-CDF draw over p = (0.5, 0.3, 0.2) */
    const float lg[3] = {logf(0.5f), logf(0.3f), logf(0.2f)};
    sb_sample_config k2 = {1.0f, 2, 1.0f}, p07 = {1.0f, 0, 0.7f}, cold = {0.25f, 0, 1.0f};
    int count[4][3] = {{0}};
    const int N = 20000;
    for (int pos = 0; pos < N; pos++) {
        const sb_sample_config *cs[4] = {&plain, &k2, &p07, &cold};
        for (int k = 0; k < 4; k++) {
            CHECK_OK(sb_sample_token(lg, 3, cs[k], 42, (uint64_t)pos, &tok));
            if (tok >= 0 && tok < 3) count[k][tok]++;
        }
    }
    CHECK(fabs(count[0][0] / (double)N - 0.5) < 0.015 && fabs(count[0][1] / (double)N - 0.3) < 0.015,
          "temperature 1: frequencies %d %d %d", count[0][0], count[0][1], count[0][2]);
    CHECK(count[1][2] == 0 && fabs(count[1][0] / (double)N - 0.625) < 0.015,
          "top-k 2: frequencies %d %d %d", count[1][0], count[1][1], count[1][2]);
    CHECK(count[2][2] == 0 && fabs(count[2][0] / (double)N - 0.625) < 0.015,
          "top-p 0.7 keeps the two first: %d %d %d", count[2][0], count[2][1], count[2][2]);
    /* temperature 0.25: p proportional to p^4 = (0.0625, 0.0081, 0.0016) */
    CHECK(fabs(count[3][0] / (double)N - 0.0625 / 0.0722) < 0.015, "temperature 0.25: %d %d %d",
          count[3][0], count[3][1], count[3][2]);
    /* keyed by (seed, position): the same key gives the same token, and the
     * draw is the one sb_rng_uniform_at gives */
    int64_t t1 = -1, t2 = -2;
    CHECK_OK(sb_sample_token(lg, 3, &plain, 42, 777, &t1));
    CHECK_OK(sb_sample_token(lg, 3, &plain, 42, 777, &t2));
    float u = sb_rng_uniform_at(42, SB_STREAM_SAMPLE, 777);
    int64_t expect = u * 1.0f < 0.5f ? 0 : u < 0.8f ? 1 : 2;
    CHECK(t1 == t2 && (fabsf(u - 0.5f) < 1e-6f || fabsf(u - 0.8f) < 1e-6f || t1 == expect),
          "position 777: %lld %lld, u = %g", (long long)t1, (long long)t2, u);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_parameters();
    test_invariance(false);
    test_invariance(true);
    test_generation();
    test_gradients(false);
    test_gradients(true);
    test_sampling();
    return sb_test_finish();
}
