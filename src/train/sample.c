/* Reproducible sampling of the next token (contract section 19, "Sampling
 * the next token"): a fixed order, the contract's softmax, sequential
 * float sums and one Philox uniform per position. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/fpenv.h"
#include "core/internal.h"
#include "samebits/gpt.h"
#include "samebits/loss.h"
#include "samebits/random.h"

sb_sample_config sb_sample_default_config(void) {
    return (sb_sample_config){.temperature = 1.0f, .top_k = 0, .top_p = 1.0f};
}

/* Descending by value, ties by token index ascending: a total order. */
typedef struct { float z; int64_t token; } scored;

static int by_value_then_index(const void *pa, const void *pb) {
    const scored *a = pa, *b = pb;
    if (a->z != b->z) return a->z > b->z ? -1 : 1;
    return a->token < b->token ? -1 : a->token > b->token;
}

static sb_status check(const char *fn, const float *logits, int64_t vocab, const sb_sample_config *cfg,
                       int64_t *token) {
    if (!token) return sb_fail(SB_ERR_NULL, "%s: token is NULL", fn);
    if (!logits) return sb_fail(SB_ERR_NULL, "%s: logits is NULL", fn);
    if (!cfg) return sb_fail(SB_ERR_NULL, "%s: cfg is NULL", fn);
    if (vocab < 1 || vocab > (INT64_C(1) << 31))
        return sb_fail(SB_ERR_ARG, "%s: vocab = %lld must be in 1..2^31", fn, (long long)vocab);
    if (!(cfg->temperature >= 0.0f) || cfg->temperature > 3.4028235e38f)
        return sb_fail(SB_ERR_ARG, "%s: temperature must be finite and >= 0", fn);
    if (cfg->top_k < 0) return sb_fail(SB_ERR_ARG, "%s: top_k = %lld must be >= 0", fn, (long long)cfg->top_k);
    if (!(cfg->top_p > 0.0f && cfg->top_p <= 1.0f))
        return sb_fail(SB_ERR_ARG, "%s: top_p must be in (0, 1]", fn);
    for (int64_t i = 0; i < vocab; i++)
        if (!(logits[i] - logits[i] == 0.0f))
            return sb_fail(SB_ERR_ARG, "%s: logits[%lld] is not finite", fn, (long long)i);
    return SB_OK;
}

sb_status sb_sample_token(const float *logits, int64_t vocab, const sb_sample_config *cfg, uint64_t seed,
                          uint64_t position, int64_t *token) {
    SB_FPENV_GUARD();
    const char *fn = "sb_sample_token";
    SB_TRY(check(fn, logits, vocab, cfg, token));
    if (cfg->temperature == 0.0f) { /* greedy: the first maximum */
        int64_t best = 0;
        for (int64_t i = 1; i < vocab; i++)
            if (logits[i] > logits[best]) best = i;
        *token = best;
        return SB_OK;
    }
    scored *order = sb_malloc(fn, (size_t)vocab * sizeof *order);
    sb_tensor *z = NULL, *p = NULL;
    sb_status s = order ? SB_OK : SB_ERR_NOMEM;
    if (s == SB_OK) s = sb_tensor_new(&z, SB_F32, 1, &vocab);
    if (s == SB_OK) s = sb_tensor_new(&p, SB_F32, 1, &vocab);
    if (s != SB_OK) goto done;
    float *zv = z->data;
    for (int64_t i = 0; i < vocab; i++) {
        zv[i] = logits[i] / cfg->temperature;
        order[i] = (scored){zv[i], i};
    }
    qsort(order, (size_t)vocab, sizeof *order, by_value_then_index);
    /* top-k: tokens after the first k of the order become -inf */
    int64_t kept = cfg->top_k > 0 && cfg->top_k < vocab ? cfg->top_k : vocab;
    for (int64_t r = kept; r < vocab; r++) zv[order[r].token] = -INFINITY;
    if ((s = sb_softmax_forward(z, 0, p)) != SB_OK) goto done;
    const float *pv = p->data;
    /* top-p: the shortest prefix of the order whose running sum reaches top_p */
    float total = 0.0f;
    int64_t n = 0;
    while (n < kept) {
        total = total + pv[order[n].token];
        n++;
        if (cfg->top_p < 1.0f && total >= cfg->top_p) break;
    }
    /* inverse CDF over that prefix: the first token whose running sum
     * exceeds u * total, else the prefix's last */
    float target = sb_rng_uniform_at(seed, SB_STREAM_SAMPLE, position) * total, run = 0.0f;
    *token = order[n - 1].token;
    for (int64_t r = 0; r < n; r++) {
        run = run + pv[order[r].token];
        if (run > target) {
            *token = order[r].token;
            break;
        }
    }
done:
    free(order);
    sb_tensor_free(z);
    sb_tensor_free(p);
    return s;
}
