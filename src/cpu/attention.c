/* Fast scaled dot-product attention (contract "Attention", reference
 * src/ref/attention.c), forward and backward, one batch entry at a time.
 *
 * The products run on the fast GEMM (sb_cpu_sgemm): a score, dP and every
 * gradient is a chain from +0.0f in the order the contract states (scores
 * over e, dP over c, dq over j, dk and dv over i), which is exactly what
 * the GEMM computes for one output. Excluded keys (causal, boolean mask)
 * take part in no chain. The probability-side products (out = D V,
 * dq = G K, dk = G^T Q, dv = D^T dout) run on the GEMM too when no key is
 * excluded; under a causal rule alone (no boolean mask) a row i keeps the
 * keys j < end(i), a prefix that grows with i, so a block of rows runs the
 * GEMM over the keys every row of it keeps and continues each row's chain
 * with its few remaining terms (and a block of keys starts each chain with
 * the rows only some of them keep, then continues on the GEMM, whose
 * continue_chain picks up every C element where it stands); with a boolean
 * mask they run as per-row (per-key) chains that skip the excluded terms.
 * Those chain steps outside the GEMM (the causal remainders, the masked
 * loops) advance a whole row of independent chains at once through the
 * kernel context's fma_acc, in vector lanes where the level has an FMA. The softmax of a row runs with the batch exp
 * (bit for bit sb_expf) and the fast canonical sum. Rows (and, for dk and
 * dv, keys) are split over threads; each output has one owner, so the bits
 * are the reference's at every thread count and ISA level. */
#include <math.h>
#include <stdlib.h>
#include "core/internal.h"
#include "cpu/kernels.h"
#include "cpu/ops_internal.h"
#include "cpu/sum_internal.h"
#include "cpu/vmath.h"
#include "ref/ref_attention.h"
#include "ref/ref_loss.h"

enum {
    MIN_WORK = 8192, /* multiply-adds per thread range, at least */
    BLOCK = 32       /* rows (keys) per GEMM block of the causal path */
};

/* How an entry's probability-side products run. */
typedef enum { DENSE, PREFIX, LOOP } path;

typedef struct job {
    const sb_ref_sdpa_geom *g;
    int64_t b;
    const float *q, *k, *v, *dout; /* this batch entry's */
    const void *mask;
    float *s;      /* (lq, lk): scores, then d = p * drop (forward); dP, then g (backward) */
    float *d;      /* (lq, lk): backward only, d = p * drop */
    float *t;      /* (lq, lk): backward only, the terms of dot */
    const float *p_in; /* backward: probs of this entry */
    float *probs;  /* forward: NULL or this entry's probs */
    float *out, *dq, *dk, *dv;
    path how;
} job;

static int64_t mask_row(const job *jb, int64_t i) {
    return jb->g->mask_kind == SB_REF_SDPA_MASK_NONE ? 0 : sb_ref_sdpa_mask_row(jb->g, jb->b, i);
}

/* ---- forward ---- */

static void forward_rows(void *ctx, int64_t begin, int64_t end) {
    void (*fma_acc)(int64_t, float, const float *, float *) = sb_kernels()->pointwise->fma_acc;
    const job *jb = ctx;
    const sb_ref_sdpa_geom *g = jb->g;
    int64_t lk = g->lk;
    for (int64_t i = begin; i < end; i++) {
        float *s = jb->s + i * lk;
        int64_t mrow = mask_row(jb, i), cend = sb_ref_sdpa_causal_end(g, i);
        for (int64_t j = 0; j < lk; j++) {
            if (sb_ref_sdpa_excluded(g, jb->mask, mrow, cend, j)) {
                s[j] = -INFINITY;
                continue;
            }
            float x = s[j] * g->scale;
            if (g->mask_kind == SB_REF_SDPA_MASK_ADD)
                x = x + ((const float *)jb->mask)[mrow + j * g->mask_stride_j];
            s[j] = x;
        }
        /* The maximum scans in order (first NaN wins); its sign of zero
         * does not matter, x - m of equal values being +0. */
        float m = lk > 0 ? s[0] : -INFINITY;
        for (int64_t j = 1; j < lk; j++)
            if (sb_isnanf(s[j]) || s[j] > m) m = sb_isnanf(m) ? m : s[j];
        if (m == -INFINITY) {
            for (int64_t j = 0; j < lk; j++) s[j] = 0.0f;
        } else {
            for (int64_t j = 0; j < lk; j++) s[j] = s[j] - m;
            sb_cpu_expf_n(s, s, lk);
            float sum = sb_cpu_sum_canonical(s, lk, 1);
            for (int64_t j = 0; j < lk; j++) s[j] = s[j] / sum;
        }
        if (jb->probs)
            for (int64_t j = 0; j < lk; j++) jb->probs[i * lk + j] = s[j];
        if (g->dropout_p > 0.0f)
            for (int64_t j = 0; j < lk; j++) s[j] = s[j] * sb_ref_sdpa_drop(g, jb->b, i, j);
        if (jb->how != LOOP) continue;
        float *o = jb->out + i * g->ev;
        for (int64_t c = 0; c < g->ev; c++) o[c] = 0.0f;
        for (int64_t j = 0; j < lk; j++) {
            if (sb_ref_sdpa_excluded(g, jb->mask, mrow, cend, j)) continue;
            const float *vj = jb->v + j * g->ev;
            fma_acc(g->ev, s[j], vj, o);
        }
    }
}

/* DENSE: no key is excluded (no boolean mask, and no causal rule cuts a
 * row: the first row has the fewest keys); PREFIX: only the causal rule
 * excludes; LOOP: a boolean mask. */
static path path_of(const sb_ref_sdpa_geom *g) {
    if (g->mask_kind == SB_REF_SDPA_MASK_BOOL) return LOOP;
    return g->lq == 0 || sb_ref_sdpa_causal_end(g, 0) == g->lk ? DENSE : PREFIX;
}

/* The first row that keeps key j under the causal rule (lq: none). */
static int64_t first_row(const sb_ref_sdpa_geom *g, int64_t j) {
    int64_t i = 0;
    if (g->causal == SB_SDPA_CAUSAL_TOP_LEFT) i = j;
    if (g->causal == SB_SDPA_CAUSAL_BOTTOM_RIGHT) i = j - g->lk + g->lq > 0 ? j - g->lk + g->lq : 0;
    return i < g->lq ? i : g->lq;
}

/* C = A B with row i's chain over the causal prefix j < end(i): A (lq, lk),
 * B (lk, n), C (lq, n), one range of row blocks per call. */
typedef struct prefix_job {
    const sb_ref_sdpa_geom *g;
    const float *a, *b;
    float *c;
    int64_t n;
} prefix_job;

static void prefix_rows(void *ctx, int64_t begin, int64_t end) {
    void (*fma_acc)(int64_t, float, const float *, float *) = sb_kernels()->pointwise->fma_acc;
    const prefix_job *pj = ctx;
    const sb_ref_sdpa_geom *g = pj->g;
    int64_t lk = g->lk, n = pj->n;
    for (int64_t blk = begin; blk < end; blk++) {
        int64_t i0 = blk * BLOCK, i1 = i0 + BLOCK < g->lq ? i0 + BLOCK : g->lq;
        int64_t c0 = sb_ref_sdpa_causal_end(g, i0); /* the keys every row of the block keeps */
        sb_cpu_sgemm('N', 'N', i1 - i0, n, c0, pj->a + i0 * lk, lk, pj->b, n > 0 ? n : 1,
                     pj->c + i0 * n, n > 0 ? n : 1, false);
        for (int64_t i = i0; i < i1; i++) {
            float *ci = pj->c + i * n;
            for (int64_t j = c0; j < sb_ref_sdpa_causal_end(g, i); j++) {
                float aij = pj->a[i * lk + j];
                const float *bj = pj->b + j * n;
                fma_acc(n, aij, bj, ci);
            }
        }
    }
}

/* C = A^T B with key j's chain over the rows i that keep it (i >=
 * first_row(j)), ascending: A (lq, lk), B (lq, n), C (lk, n); one range of
 * key blocks per call. */
static void suffix_keys(void *ctx, int64_t begin, int64_t end) {
    void (*fma_acc)(int64_t, float, const float *, float *) = sb_kernels()->pointwise->fma_acc;
    const prefix_job *pj = ctx;
    const sb_ref_sdpa_geom *g = pj->g;
    int64_t lk = g->lk, lq = g->lq, n = pj->n;
    for (int64_t blk = begin; blk < end; blk++) {
        int64_t j0 = blk * BLOCK, j1 = j0 + BLOCK < lk ? j0 + BLOCK : lk;
        int64_t r0 = first_row(g, j1 - 1); /* the rows that keep every key of the block */
        for (int64_t j = j0; j < j1; j++) {
            float *cj = pj->c + j * n;
            for (int64_t x = 0; x < n; x++) cj[x] = 0.0f;
            for (int64_t i = first_row(g, j); i < r0; i++) {
                float aij = pj->a[i * lk + j];
                const float *bi = pj->b + i * n;
                fma_acc(n, aij, bi, cj);
            }
        }
        if (lq > r0)
            sb_cpu_sgemm('T', 'N', j1 - j0, n, lq - r0, pj->a + r0 * lk + j0, lk, pj->b + r0 * n,
                         n > 0 ? n : 1, pj->c + j0 * n, n > 0 ? n : 1, true);
    }
}

static void run_prefix(const sb_ref_sdpa_geom *g, const float *a, const float *b, float *c,
                       int64_t n) {
    prefix_job pj = {g, a, b, c, n};
    int64_t blocks = (g->lq + BLOCK - 1) / BLOCK;
    sb_parallel_for(blocks, sb_parallel_grain(blocks, MIN_WORK / (BLOCK * g->lk * (n + 1)) + 1),
                    prefix_rows, &pj);
}

static void run_suffix(const sb_ref_sdpa_geom *g, const float *a, const float *b, float *c,
                       int64_t n) {
    prefix_job pj = {g, a, b, c, n};
    int64_t blocks = (g->lk + BLOCK - 1) / BLOCK;
    sb_parallel_for(blocks, sb_parallel_grain(blocks, MIN_WORK / (BLOCK * g->lq * (n + 1)) + 1),
                    suffix_keys, &pj);
}

static int64_t row_grain(const sb_ref_sdpa_geom *g, int64_t work_per_row) {
    return sb_parallel_grain(g->lq, MIN_WORK / (work_per_row + 1) + 1);
}

sb_status sb_cpu_sdpa_forward(const sb_ref_sdpa_geom *g, const float *q, const float *k,
                              const float *v, const void *mask, float *out, float *probs) {
    int64_t lq = g->lq, lk = g->lk;
    if (lq == 0) return SB_OK;
    float *s = malloc((size_t)(lq * lk > 0 ? lq * lk : 1) * sizeof *s);
    if (!s) return sb_fail(SB_ERR_NOMEM, "sb_sdpa_forward: no memory for %lld scores", (long long)(lq * lk));
    path how = path_of(g);
    for (int64_t b = 0; b < g->batch; b++) {
        job jb = {.g = g, .b = b, .q = q + b * lq * g->e, .k = k + b * lk * g->e,
                  .v = v + b * lk * g->ev, .mask = mask, .s = s,
                  .probs = probs ? probs + b * lq * lk : NULL, .out = out + b * lq * g->ev,
                  .how = how};
        /* s = Q K^T: chains over e ascending */
        sb_cpu_sgemm('N', 'T', lq, lk, g->e, jb.q, g->e > 0 ? g->e : 1, jb.k, g->e > 0 ? g->e : 1,
                     s, lk > 0 ? lk : 1, false);
        sb_parallel_for(lq, row_grain(g, lk * (how == LOOP ? g->ev : 1)), forward_rows, &jb);
        /* out = D V: chains over the kept j ascending */
        if (how == DENSE)
            sb_cpu_sgemm('N', 'N', lq, g->ev, lk, s, lk > 0 ? lk : 1, jb.v, g->ev > 0 ? g->ev : 1,
                         jb.out, g->ev > 0 ? g->ev : 1, false);
        else if (how == PREFIX)
            run_prefix(g, s, jb.v, jb.out, g->ev);
    }
    free(s);
    return SB_OK;
}

/* ---- backward ---- */

/* Per row: dP (in s) becomes g = dS * scale; d = p * drop; the terms of dot. */
static void backward_rows(void *ctx, int64_t begin, int64_t end) {
    void (*fma_acc)(int64_t, float, const float *, float *) = sb_kernels()->pointwise->fma_acc;
    const job *jb = ctx;
    const sb_ref_sdpa_geom *g = jb->g;
    int64_t lk = g->lk;
    for (int64_t i = begin; i < end; i++) {
        float *dp = jb->s + i * lk, *d = jb->d + i * lk, *t = jb->t + i * lk;
        const float *p = jb->p_in + i * lk;
        int64_t mrow = mask_row(jb, i), cend = sb_ref_sdpa_causal_end(g, i);
        for (int64_t j = 0; j < lk; j++) {
            bool ex = sb_ref_sdpa_excluded(g, jb->mask, mrow, cend, j);
            float drop = g->dropout_p > 0.0f && !ex ? sb_ref_sdpa_drop(g, jb->b, i, j) : 1.0f;
            float x = ex ? 0.0f : (g->dropout_p > 0.0f ? dp[j] * drop : dp[j]);
            dp[j] = x;
            t[j] = x * p[j];
            d[j] = ex ? 0.0f : (g->dropout_p > 0.0f ? p[j] * drop : p[j]);
        }
        float dot = sb_cpu_sum_canonical(t, lk, 1);
        for (int64_t j = 0; j < lk; j++)
            dp[j] = sb_ref_sdpa_excluded(g, jb->mask, mrow, cend, j)
                        ? 0.0f
                        : (p[j] * (dp[j] - dot)) * g->scale;
        if (jb->how != LOOP || !jb->dq) continue;
        float *dqi = jb->dq + i * g->e;
        for (int64_t e = 0; e < g->e; e++) dqi[e] = 0.0f;
        for (int64_t j = 0; j < lk; j++) {
            if (sb_ref_sdpa_excluded(g, jb->mask, mrow, cend, j)) continue;
            const float *kj = jb->k + j * g->e;
            fma_acc(g->e, dp[j], kj, dqi);
        }
    }
}

/* Per key j (LOOP): dk_j and dv_j, chains over i ascending. */
static void backward_keys(void *ctx, int64_t begin, int64_t end) {
    void (*fma_acc)(int64_t, float, const float *, float *) = sb_kernels()->pointwise->fma_acc;
    const job *jb = ctx;
    const sb_ref_sdpa_geom *g = jb->g;
    int64_t lk = g->lk;
    for (int64_t j = begin; j < end; j++) {
        float *dkj = jb->dk ? jb->dk + j * g->e : NULL, *dvj = jb->dv ? jb->dv + j * g->ev : NULL;
        if (dkj)
            for (int64_t e = 0; e < g->e; e++) dkj[e] = 0.0f;
        if (dvj)
            for (int64_t c = 0; c < g->ev; c++) dvj[c] = 0.0f;
        for (int64_t i = 0; i < g->lq; i++) {
            if (sb_ref_sdpa_excluded(g, jb->mask, mask_row(jb, i), sb_ref_sdpa_causal_end(g, i), j))
                continue;
            float gs = jb->s[i * lk + j], d = jb->d[i * lk + j];
            if (dkj) {
                const float *qi = jb->q + i * g->e;
                fma_acc(g->e, gs, qi, dkj);
            }
            if (dvj) {
                const float *doi = jb->dout + i * g->ev;
                fma_acc(g->ev, d, doi, dvj);
            }
        }
    }
}

static int64_t ld(int64_t n) { return n > 0 ? n : 1; }

sb_status sb_cpu_sdpa_backward(const sb_ref_sdpa_geom *g, const float *dout, const float *q,
                               const float *k, const float *v, const void *mask,
                               const float *probs, float *dq, float *dk, float *dv) {
    int64_t lq = g->lq, lk = g->lk, E = g->e, Ev = g->ev;
    int64_t n = lq * lk;
    if (n == 0) { /* no term anywhere: every gradient is an empty chain */
        for (int64_t t = 0; dq && t < g->batch * lq * E; t++) dq[t] = 0.0f;
        for (int64_t t = 0; dk && t < g->batch * lk * E; t++) dk[t] = 0.0f;
        for (int64_t t = 0; dv && t < g->batch * lk * Ev; t++) dv[t] = 0.0f;
        return SB_OK;
    }
    float *buf = malloc((size_t)(3 * n) * sizeof *buf);
    if (!buf) return sb_fail(SB_ERR_NOMEM, "sb_sdpa_backward: no memory for %lld scores", (long long)n);
    path how = path_of(g);
    for (int64_t b = 0; b < g->batch; b++) {
        job jb = {.g = g, .b = b, .q = q + b * lq * E, .k = k + b * lk * E, .v = v + b * lk * Ev,
                  .dout = dout + b * lq * Ev, .mask = mask, .s = buf, .d = buf + n, .t = buf + 2 * n,
                  .p_in = probs + b * n, .dq = dq ? dq + b * lq * E : NULL,
                  .dk = dk ? dk + b * lk * E : NULL, .dv = dv ? dv + b * lk * Ev : NULL,
                  .how = how};
        /* dP = dO V^T: chains over c ascending */
        sb_cpu_sgemm('N', 'T', lq, lk, Ev, jb.dout, ld(Ev), jb.v, ld(Ev), jb.s, lk, false);
        sb_parallel_for(lq, row_grain(g, lk * (how == LOOP ? E : 1)), backward_rows, &jb);
        if (how == DENSE) {
            /* dq = G K (over j), dk = G^T Q (over i), dv = D^T dO (over i) */
            if (jb.dq) sb_cpu_sgemm('N', 'N', lq, E, lk, jb.s, lk, jb.k, ld(E), jb.dq, ld(E), false);
            if (jb.dk) sb_cpu_sgemm('T', 'N', lk, E, lq, jb.s, lk, jb.q, ld(E), jb.dk, ld(E), false);
            if (jb.dv) sb_cpu_sgemm('T', 'N', lk, Ev, lq, jb.d, lk, jb.dout, ld(Ev), jb.dv, ld(Ev), false);
        } else if (how == PREFIX) {
            if (jb.dq) run_prefix(g, jb.s, jb.k, jb.dq, E);
            if (jb.dk) run_suffix(g, jb.s, jb.q, jb.dk, E);
            if (jb.dv) run_suffix(g, jb.d, jb.dout, jb.dv, Ev);
        } else if (jb.dk || jb.dv) {
            sb_parallel_for(lk, sb_parallel_grain(lk, MIN_WORK / (lq * (E + Ev) + 1) + 1),
                            backward_keys, &jb);
        }
    }
    free(buf);
    return SB_OK;
}
