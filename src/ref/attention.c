/* Reference scaled dot-product attention, forward and backward (contract:
 * docs/CONTRACT.md, "Attention").
 *
 * Written to be read against the contract, not to be fast: a score is
 * recomputed wherever it is needed (no row buffer, nothing allocated), and
 * every chain accumulates in its output element in the stated order (the
 * output starts at +0.0f and takes one fmaf per term, which is the chain).
 * A row's bits depend only on its query row, its batch entry's keys and
 * values, its mask row and, with dropout, its position in probs. Which
 * keys a row sees is ref/attention_rules.h, shared with the OpenCL kernels. */
#include <math.h>
#include "samebits/math.h"
#include "samebits/random.h"
#include "core/canonical_sum.h"
#include "core/internal.h"
#include "ref/attention_rules.h"
#include "ref/ref_attention.h"
#include "ref/ref_loss.h"

int64_t sb_ref_sdpa_causal_end(const sb_ref_sdpa_geom *g, int64_t i) {
    return sb_sdpa_causal_end((int)g->causal, i, g->lq, g->lk);
}

int64_t sb_ref_sdpa_mask_row(const sb_ref_sdpa_geom *g, int64_t b, int64_t i) {
    return sb_sdpa_mask_row(g->nlead, g->lead, g->mask_lead_stride, g->mask_stride_i, b, i);
}

float sb_ref_sdpa_drop(const sb_ref_sdpa_geom *g, int64_t b, int64_t i, int64_t j) {
    if (!(g->dropout_p > 0.0f)) return 1.0f;
    uint64_t t = (uint64_t)((b * g->lq + i) * g->lk + j);
    float keep = sb_rng_uniform_at(g->seed, g->stream, g->offset + t) >= g->dropout_p ? 1.0f : 0.0f;
    return keep * sb_dropout_scale(g->dropout_p);
}

/* One query row and what its scores need. */
typedef struct row {
    const sb_ref_sdpa_geom *g;
    const float *q;   /* (e) */
    const float *k;   /* (lk, e) of the batch entry */
    const void *mask;
    int64_t mrow, cend;
} row;

static row row_of(const sb_ref_sdpa_geom *g, const float *q, const float *k, const void *mask,
                  int64_t b, int64_t i) {
    row r = {g, q + (b * g->lq + i) * g->e, k + b * g->lk * g->e, mask, 0,
             sb_ref_sdpa_causal_end(g, i)};
    if (g->mask_kind != SB_REF_SDPA_MASK_NONE) r.mrow = sb_ref_sdpa_mask_row(g, b, i);
    return r;
}

static bool excluded(const row *r, int64_t j) {
    return sb_ref_sdpa_excluded(r->g, r->mask, r->mrow, r->cend, j);
}

/* s_j: the chain over e ascending, times scale, plus a float mask entry. */
static float score(const row *r, int64_t j) {
    if (excluded(r, j)) return -INFINITY;
    float acc = 0.0f;
    for (int64_t e = 0; e < r->g->e; e++) acc = fmaf(r->q[e], r->k[j * r->g->e + e], acc);
    float s = acc * r->g->scale;
    if (r->g->mask_kind == SB_REF_SDPA_MASK_ADD)
        s = s + ((const float *)r->mask)[r->mrow + j * r->g->mask_stride_j];
    return s;
}

/* The softmax statistics of the row (contract section 11): m = the maximum
 * (first NaN wins), sum = canonical sum of exp(s_j - m), j ascending. */
static void row_stats(const row *r, float *m_out, float *sum_out) {
    float m = r->g->lk > 0 ? score(r, 0) : -INFINITY;
    for (int64_t j = 1; j < r->g->lk; j++) {
        float s = score(r, j);
        if (sb_isnanf(s) || s > m) m = sb_isnanf(m) ? m : s;
    }
    sb_sum_acc acc;
    sb_sum_init(&acc);
    if (m != -INFINITY)
        for (int64_t j = 0; j < r->g->lk; j++) sb_sum_add(&acc, sb_expf(score(r, j) - m));
    *m_out = m;
    *sum_out = sb_sum_result(&acc);
}

/* p_j; +0 everywhere in a row whose maximum is -inf (every key excluded). */
static float prob(const row *r, float m, float sum, int64_t j) {
    if (m == -INFINITY) return 0.0f;
    return sb_expf(score(r, j) - m) / sum;
}

void sb_ref_sdpa_forward(const sb_ref_sdpa_geom *g, const float *q, const float *k,
                         const float *v, const void *mask, float *out, float *probs) {
    for (int64_t b = 0; b < g->batch; b++) {
        const float *vb = v + b * g->lk * g->ev;
        for (int64_t i = 0; i < g->lq; i++) {
            row r = row_of(g, q, k, mask, b, i);
            float m, sum;
            row_stats(&r, &m, &sum);
            float *o = out + (b * g->lq + i) * g->ev;
            for (int64_t c = 0; c < g->ev; c++) o[c] = 0.0f;
            for (int64_t j = 0; j < g->lk; j++) {
                float p = prob(&r, m, sum, j);
                if (probs) probs[(b * g->lq + i) * g->lk + j] = p;
                if (excluded(&r, j)) continue;
                float d = g->dropout_p > 0.0f ? p * sb_ref_sdpa_drop(g, b, i, j) : p;
                for (int64_t c = 0; c < g->ev; c++) o[c] = fmaf(d, vb[j * g->ev + c], o[c]);
            }
        }
    }
}

/* dP_ij: the chain over c of dout_ic * v_jc, times the dropout multiplier. */
static float dprob(const sb_ref_sdpa_geom *g, const float *dout_row, const float *v_row,
                   int64_t b, int64_t i, int64_t j) {
    float acc = 0.0f;
    for (int64_t c = 0; c < g->ev; c++) acc = fmaf(dout_row[c], v_row[c], acc);
    return g->dropout_p > 0.0f ? acc * sb_ref_sdpa_drop(g, b, i, j) : acc;
}

static void zero(float *x, int64_t n) {
    if (x)
        for (int64_t t = 0; t < n; t++) x[t] = 0.0f;
}

void sb_ref_sdpa_backward(const sb_ref_sdpa_geom *g, const float *dout, const float *q,
                          const float *k, const float *v, const void *mask, const float *probs,
                          float *dq, float *dk, float *dv) {
    zero(dq, g->batch * g->lq * g->e);
    zero(dk, g->batch * g->lk * g->e);
    zero(dv, g->batch * g->lk * g->ev);
    for (int64_t b = 0; b < g->batch; b++) {
        const float *kb = k + b * g->lk * g->e, *vb = v + b * g->lk * g->ev;
        /* i ascending outermost: every dk/dv chain over i takes its terms in
         * order; dq's chain over j runs inside the row. */
        for (int64_t i = 0; i < g->lq; i++) {
            row r = row_of(g, q, k, mask, b, i);
            const float *dor = dout + (b * g->lq + i) * g->ev;
            const float *pr = probs + (b * g->lq + i) * g->lk;
            sb_sum_acc acc;
            sb_sum_init(&acc);
            for (int64_t j = 0; j < g->lk; j++) {
                float dp = excluded(&r, j) ? 0.0f : dprob(g, dor, vb + j * g->ev, b, i, j);
                sb_sum_add(&acc, dp * pr[j]);
            }
            float dot = sb_sum_result(&acc);
            for (int64_t j = 0; j < g->lk; j++) {
                if (excluded(&r, j)) continue;
                float gs = (pr[j] * (dprob(g, dor, vb + j * g->ev, b, i, j) - dot)) * g->scale;
                if (dq)
                    for (int64_t e = 0; e < g->e; e++)
                        dq[(b * g->lq + i) * g->e + e] =
                            fmaf(gs, kb[j * g->e + e], dq[(b * g->lq + i) * g->e + e]);
                if (dk)
                    for (int64_t e = 0; e < g->e; e++)
                        dk[(b * g->lk + j) * g->e + e] =
                            fmaf(gs, r.q[e], dk[(b * g->lk + j) * g->e + e]);
                if (dv) {
                    float d = g->dropout_p > 0.0f ? pr[j] * sb_ref_sdpa_drop(g, b, i, j) : pr[j];
                    for (int64_t c = 0; c < g->ev; c++)
                        dv[(b * g->lk + j) * g->ev + c] =
                            fmaf(d, dor[c], dv[(b * g->lk + j) * g->ev + c]);
                }
            }
        }
    }
}
