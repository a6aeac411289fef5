/* Tests for scaled dot-product attention (contract section 19).
 *
 * - the public op (fast path) against the reference kernel src/ref/attention.c,
 *   bit for bit, at every ISA level and thread count (tests/support/fastpath.h),
 *   forward (out and probs) and backward (dq, dk, dv), over odd shapes, every
 *   mask kind, both causal alignments, dropout, fully masked rows and special
 *   values;
 * - the reference against an independent restatement built from other public
 *   ops (sb_matmul, sb_mul_scalar, sb_add, sb_softmax_forward,
 *   sb_dropout_forward): probs and out are those ops' bits;
 * - closeness to float64, and gradients against float64 finite differences;
 * - the invariance property: a query row's output does not depend on the
 *   other rows of its batch, on other batch entries, on padded keys a boolean
 *   mask excludes, or on prefilling against decoding with a KV cache
 *   (bottom-right causal alignment);
 * - every refusal, with nothing written. */
#include <float.h>
#include <math.h>
#include "harness.h"
#include "support/fastpath.h"
#include "ref/ref_attention.h"

static sb_tensor *tnew(sb_dtype dt, int nd, const int64_t *shape) {
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, dt, nd, shape) != SB_OK) { fprintf(stderr, "%s\n", sb_last_error()); exit(2); }
    return t;
}
static float *F(const sb_tensor *t) { return t->data; }
static int64_t numel(const sb_tensor *t) { return sb_tensor_numel(t); }

static void fill(sb_tensor *t, int special, float range) {
    for (int64_t i = 0; i < numel(t); i++)
        F(t)[i] = special ? sb_test_adversarial(range) : sb_test_unif(-range, range);
}

/* ---- one case: shapes, mask, causal, scale, dropout ---- */

typedef enum { NO_MASK, BOOL_MASK, ADD_MASK } mask_kind;

typedef struct attn_case {
    const char *name;
    int nlead;
    int64_t lead[3];
    int64_t lq, lk, e, ev;
    mask_kind mk;
    int mask_nd;            /* the mask's rank (right-aligned against (lead, lq, lk)) */
    int64_t mask_shape[5];
    sb_sdpa_causal causal;
    float dropout_p;
    int special;            /* adversarial values in q, k, v */
    int mask_density;       /* boolean: 1 in mask_density keys excluded (0: none) */
} attn_case;

typedef struct attn_data {
    int nd;
    sb_tensor *q, *k, *v, *mask, *out, *probs, *dout, *dq, *dk, *dv;
    sb_ref_sdpa_geom g;
    float scale;
} attn_data;

static void shape_of(const attn_case *c, int64_t rows, int64_t cols, int64_t *s) {
    for (int a = 0; a < c->nlead; a++) s[a] = c->lead[a];
    s[c->nlead] = rows;
    s[c->nlead + 1] = cols;
}

static void data_new(const attn_case *c, attn_data *d) {
    memset(d, 0, sizeof *d);
    d->nd = c->nlead + 2;
    int64_t s[SB_MAX_DIMS];
    shape_of(c, c->lq, c->e, s);
    d->q = tnew(SB_F32, d->nd, s);
    d->dq = tnew(SB_F32, d->nd, s);
    shape_of(c, c->lk, c->e, s);
    d->k = tnew(SB_F32, d->nd, s);
    d->dk = tnew(SB_F32, d->nd, s);
    shape_of(c, c->lk, c->ev, s);
    d->v = tnew(SB_F32, d->nd, s);
    d->dv = tnew(SB_F32, d->nd, s);
    shape_of(c, c->lq, c->ev, s);
    d->out = tnew(SB_F32, d->nd, s);
    d->dout = tnew(SB_F32, d->nd, s);
    shape_of(c, c->lq, c->lk, s);
    d->probs = tnew(SB_F32, d->nd, s);
    fill(d->q, c->special, 2.0f);
    fill(d->k, c->special, 2.0f);
    fill(d->v, c->special, 2.0f);
    fill(d->dout, 0, 1.0f);
    CHECK_OK(sb_sdpa_default_scale(c->e > 0 ? c->e : 1, &d->scale));
    d->g = (sb_ref_sdpa_geom){.nlead = c->nlead, .batch = 1, .lq = c->lq, .lk = c->lk, .e = c->e,
                              .ev = c->ev, .causal = c->causal, .scale = d->scale,
                              .dropout_p = c->dropout_p, .seed = 1234, .stream = 77, .offset = 5};
    for (int a = 0; a < c->nlead; a++) {
        d->g.lead[a] = c->lead[a];
        d->g.batch *= c->lead[a];
    }
    if (c->mk != NO_MASK) {
        d->mask = tnew(c->mk == BOOL_MASK ? SB_I32 : SB_F32, c->mask_nd, c->mask_shape);
        for (int64_t i = 0; i < numel(d->mask); i++) {
            if (c->mk == BOOL_MASK)
                ((int32_t *)d->mask->data)[i] =
                    c->mask_density && sb_test_rand32() % (uint32_t)c->mask_density == 0 ? 0 : 1;
            else
                F(d->mask)[i] = sb_test_rand32() % 5 == 0 ? -INFINITY : sb_test_unif(-3.0f, 3.0f);
        }
        /* the test's own statement of broadcasting: stride 0 where the size is 1 */
        int64_t st[SB_MAX_DIMS] = {0};
        for (int a = 0; a < d->nd; a++) {
            int m = a - (d->nd - c->mask_nd);
            if (m >= 0 && c->mask_shape[m] != 1) st[a] = d->mask->strides[m];
        }
        d->g.mask_kind = c->mk == BOOL_MASK ? SB_REF_SDPA_MASK_BOOL : SB_REF_SDPA_MASK_ADD;
        for (int a = 0; a < c->nlead; a++) d->g.mask_lead_stride[a] = st[a];
        d->g.mask_stride_i = st[c->nlead];
        d->g.mask_stride_j = st[c->nlead + 1];
    }
}

static void data_free(attn_data *d) {
    sb_tensor *all[] = {d->q, d->k, d->v, d->mask, d->out, d->probs, d->dout, d->dq, d->dk, d->dv};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) sb_tensor_free(all[i]);
}

static sb_status forward(const attn_case *c, attn_data *d, sb_tensor *out, sb_tensor *probs) {
    return sb_sdpa_forward(d->q, d->k, d->v, d->mask, c->causal, d->scale, c->dropout_p, d->g.seed,
                           d->g.stream, d->g.offset, out, probs);
}

static sb_status backward(const attn_case *c, attn_data *d, sb_tensor *dq, sb_tensor *dk,
                          sb_tensor *dv) {
    return sb_sdpa_backward(d->dout, d->q, d->k, d->v, d->mask, c->causal, d->scale, c->dropout_p,
                            d->g.seed, d->g.stream, d->g.offset, d->probs, dq, dk, dv);
}

static int same_bits(const float *a, const float *b, int64_t n, int64_t *at) {
    for (int64_t i = 0; i < n; i++) {
        uint32_t x = sb_test_bits(a[i]), y = sb_test_bits(b[i]);
        /* NaN payloads are not part of results */
        if (x != y && !(a[i] != a[i] && b[i] != b[i])) {
            *at = i;
            return 0;
        }
    }
    return 1;
}

#define CHECK_SAME(got, want, n, ...)                                                       \
    do {                                                                                    \
        int64_t at_ = 0;                                                                    \
        int ok_ = same_bits((got), (want), (n), &at_);                                      \
        CHECK(ok_, __VA_ARGS__);                                                            \
        if (!ok_)                                                                           \
            fprintf(stderr, "    element %lld: got %a want %a\n", (long long)at_,          \
                    (double)(got)[at_], (double)(want)[at_]);                               \
    } while (0)

/* ---- fast path == reference, every configuration ---- */

static void run_differential(const attn_case *c) {
    attn_data d;
    data_new(c, &d);
    int64_t no = numel(d.out), np = numel(d.probs), nq = numel(d.q), nk = numel(d.k), nv = numel(d.v);
    float *ro = malloc((size_t)(no + 1) * sizeof *ro), *rp = malloc((size_t)(np + 1) * sizeof *rp);
    float *rdq = malloc((size_t)(nq + 1) * sizeof *rdq), *rdk = malloc((size_t)(nk + 1) * sizeof *rdk);
    float *rdv = malloc((size_t)(nv + 1) * sizeof *rdv);
    const void *m = d.mask ? d.mask->data : NULL;
    sb_ref_sdpa_forward(&d.g, F(d.q), F(d.k), F(d.v), m, ro, rp);
    /* the backward takes the reference's probs */
    memcpy(F(d.probs), rp, (size_t)np * sizeof *rp);
    sb_ref_sdpa_backward(&d.g, F(d.dout), F(d.q), F(d.k), F(d.v), m, rp, rdq, rdk, rdv);

    for (int cfg = 0; cfg < sb_test_config_count(); cfg++) {
        sb_test_config_apply(cfg);
        const char *cn = sb_test_config_name(cfg);
        CHECK_OK(forward(c, &d, d.out, d.probs));
        CHECK_SAME(F(d.out), ro, no, "%s %s: out differs from the reference", c->name, cn);
        CHECK_SAME(F(d.probs), rp, np, "%s %s: probs differ from the reference", c->name, cn);
        sb_tensor_fill(d.out, 7.0f);
        CHECK_OK(forward(c, &d, d.out, NULL));
        CHECK_SAME(F(d.out), ro, no, "%s %s: out without probs differs", c->name, cn);
        memcpy(F(d.probs), rp, (size_t)np * sizeof *rp);
        CHECK_OK(backward(c, &d, d.dq, d.dk, d.dv));
        CHECK_SAME(F(d.dq), rdq, nq, "%s %s: dq differs from the reference", c->name, cn);
        CHECK_SAME(F(d.dk), rdk, nk, "%s %s: dk differs from the reference", c->name, cn);
        CHECK_SAME(F(d.dv), rdv, nv, "%s %s: dv differs from the reference", c->name, cn);
        /* each gradient alone */
        sb_tensor_fill(d.dk, 7.0f);
        CHECK_OK(backward(c, &d, NULL, d.dk, NULL));
        CHECK_SAME(F(d.dk), rdk, nk, "%s %s: dk alone differs", c->name, cn);
        sb_tensor_fill(d.dv, 7.0f);
        CHECK_OK(backward(c, &d, NULL, NULL, d.dv));
        CHECK_SAME(F(d.dv), rdv, nv, "%s %s: dv alone differs", c->name, cn);
    }
    sb_test_config_reset();

    /* the mirror device (memory the host does not address) */
    sb_tensor *mq = NULL, *mk = NULL, *mv = NULL, *mm = NULL, *mo = NULL;
    CHECK_OK(sb_tensor_to(&mq, d.q, SB_DEVICE_MIRROR));
    CHECK_OK(sb_tensor_to(&mk, d.k, SB_DEVICE_MIRROR));
    CHECK_OK(sb_tensor_to(&mv, d.v, SB_DEVICE_MIRROR));
    if (d.mask) CHECK_OK(sb_tensor_to(&mm, d.mask, SB_DEVICE_MIRROR));
    CHECK_OK(sb_tensor_new_on(&mo, SB_DEVICE_MIRROR, SB_F32, d.nd, d.out->shape));
    CHECK_OK(sb_sdpa_forward(mq, mk, mv, mm, c->causal, d.scale, c->dropout_p, d.g.seed, d.g.stream,
                             d.g.offset, mo, NULL));
    CHECK_OK(sb_tensor_copy(d.out, mo));
    CHECK_SAME(F(d.out), ro, no, "%s mirror: out differs from the reference", c->name);
    sb_tensor *mir[] = {mq, mk, mv, mm, mo};
    for (int i = 0; i < 5; i++) sb_tensor_free(mir[i]);

    free(ro); free(rp); free(rdq); free(rdk); free(rdv);
    data_free(&d);
}

static void test_differential(void) {
    const attn_case cases[] = {
        {"plain (2,3) L=5 E=4", 2, {2, 3}, 5, 5, 4, 4, NO_MASK, 0, {0}, SB_SDPA_NOT_CAUSAL, 0, 0, 0},
        {"L=1 E=1", 1, {1}, 1, 1, 1, 1, NO_MASK, 0, {0}, SB_SDPA_NOT_CAUSAL, 0, 0, 0},
        {"Lk != Lq, E != Ev, 13 heads", 1, {13}, 3, 7, 5, 2, NO_MASK, 0, {0}, SB_SDPA_NOT_CAUSAL, 0, 0, 0},
        {"no leading dims", 0, {0}, 6, 9, 3, 5, NO_MASK, 0, {0}, SB_SDPA_NOT_CAUSAL, 0, 0, 0},
        {"causal top-left Lq<Lk", 2, {2, 2}, 4, 9, 3, 3, NO_MASK, 0, {0}, SB_SDPA_CAUSAL_TOP_LEFT, 0, 0, 0},
        {"causal bottom-right Lq<Lk", 2, {2, 2}, 4, 9, 3, 3, NO_MASK, 0, {0}, SB_SDPA_CAUSAL_BOTTOM_RIGHT, 0, 0, 0},
        {"causal bottom-right Lq>Lk (empty rows)", 1, {3}, 8, 5, 4, 3, NO_MASK, 0, {0},
         SB_SDPA_CAUSAL_BOTTOM_RIGHT, 0, 0, 0},
        {"causal top-left Lq>Lk", 1, {3}, 8, 5, 4, 3, NO_MASK, 0, {0}, SB_SDPA_CAUSAL_TOP_LEFT, 0, 0, 0},
        {"bool mask (Lq, Lk)", 2, {2, 3}, 6, 7, 4, 5, BOOL_MASK, 2, {6, 7}, SB_SDPA_NOT_CAUSAL, 0, 0, 2},
        {"bool mask (B,1,1,Lk) key padding", 2, {2, 3}, 6, 7, 4, 5, BOOL_MASK, 4, {2, 1, 1, 7},
         SB_SDPA_NOT_CAUSAL, 0, 0, 3},
        {"bool mask, most rows fully masked", 1, {2}, 5, 3, 2, 2, BOOL_MASK, 3, {2, 5, 3},
         SB_SDPA_NOT_CAUSAL, 0, 0, 1},
        {"float mask (1,H,Lq,Lk) + causal", 2, {2, 3}, 6, 6, 4, 4, ADD_MASK, 4, {1, 3, 6, 6},
         SB_SDPA_CAUSAL_TOP_LEFT, 0, 0, 0},
        {"float mask (Lk)", 1, {4}, 5, 8, 3, 6, ADD_MASK, 1, {8}, SB_SDPA_NOT_CAUSAL, 0, 0, 0},
        {"dropout 0.3", 2, {2, 2}, 7, 6, 4, 3, NO_MASK, 0, {0}, SB_SDPA_NOT_CAUSAL, 0.3f, 0, 0},
        {"dropout 0.5 + causal + bool mask", 1, {3}, 6, 6, 5, 4, BOOL_MASK, 2, {6, 6},
         SB_SDPA_CAUSAL_BOTTOM_RIGHT, 0.5f, 0, 4},
        {"dropout 1", 1, {2}, 3, 4, 2, 2, NO_MASK, 0, {0}, SB_SDPA_NOT_CAUSAL, 1.0f, 0, 0},
        {"specials (NaN, inf, subnormals)", 1, {5}, 7, 9, 6, 5, NO_MASK, 0, {0}, SB_SDPA_NOT_CAUSAL, 0, 1, 0},
        {"specials + causal + float mask", 1, {5}, 7, 9, 6, 5, ADD_MASK, 2, {7, 9},
         SB_SDPA_CAUSAL_BOTTOM_RIGHT, 0, 1, 0},
        {"Lk = 0", 1, {2}, 3, 0, 2, 2, NO_MASK, 0, {0}, SB_SDPA_NOT_CAUSAL, 0, 0, 0},
        {"E = 0", 1, {2}, 3, 4, 0, 2, NO_MASK, 0, {0}, SB_SDPA_NOT_CAUSAL, 0, 0, 0},
        {"Lq = 0", 1, {2}, 0, 4, 3, 2, NO_MASK, 0, {0}, SB_SDPA_NOT_CAUSAL, 0, 0, 0},
        {"long rows (Lk 1100, > one exp chunk)", 1, {2}, 3, 1100, 8, 3, NO_MASK, 0, {0},
         SB_SDPA_CAUSAL_BOTTOM_RIGHT, 0, 0, 0},
        {"bigger (4,4) L=40 E=16", 2, {4, 4}, 40, 40, 16, 16, NO_MASK, 0, {0}, SB_SDPA_CAUSAL_TOP_LEFT, 0, 0, 0},
    };
    int n = (int)(sizeof cases / sizeof *cases);
    for (int i = 0; i < n; i++) {
        if (sb_test_quick() && i == n - 1) continue;
        sb_test_seed(1000 + (uint64_t)i);
        run_differential(&cases[i]);
    }
}

/* ---- the reference restated with other public ops ---- */

/* Without excluded keys the contract's sequence is: S = matmul(q, k^T)
 * (chains over e), S * scale, + mask, softmax (section 11), dropout
 * (section 11, same Philox key), out = matmul(D, v) (chains over j). */
static void test_restated(void) {
    const float ps[] = {0.0f, 0.25f};
    for (int t = 0; t < 2; t++) {
        sb_test_seed(77 + (uint64_t)t);
        attn_case c = {"restated", 1, {3}, 5, 6, 4, 3, ADD_MASK, 2, {5, 6}, SB_SDPA_NOT_CAUSAL, ps[t], 0, 0};
        attn_data d;
        data_new(&c, &d);
        for (int64_t i = 0; i < numel(d.mask); i++) F(d.mask)[i] = sb_test_unif(-3.0f, 3.0f);
        CHECK_OK(forward(&c, &d, d.out, d.probs));
        int64_t ss[3] = {3, 5, 6}, os[3] = {3, 5, 3};
        sb_tensor *s = tnew(SB_F32, 3, ss), *p = tnew(SB_F32, 3, ss), *dd = tnew(SB_F32, 3, ss);
        sb_tensor *o = tnew(SB_F32, 3, os);
        CHECK_OK(sb_matmul(d.q, d.k, false, true, s));
        CHECK_OK(sb_mul_scalar(s, d.scale, s));
        CHECK_OK(sb_add(s, d.mask, s));
        CHECK_OK(sb_softmax_forward(s, -1, p));
        CHECK_SAME(F(d.probs), F(p), numel(p), "restated (p = %g): probs are not softmax(q k^T * scale + mask)",
                   (double)ps[t]);
        CHECK_OK(sb_dropout_forward(p, ps[t], ps[t] > 0.0f, d.g.seed, d.g.stream, d.g.offset, dd, NULL));
        if (ps[t] == 0.0f) CHECK_OK(sb_tensor_copy(dd, p));
        CHECK_OK(sb_matmul(dd, d.v, false, false, o));
        CHECK_SAME(F(d.out), F(o), numel(o), "restated (p = %g): out is not matmul(dropout(probs), v)",
                   (double)ps[t]);
        sb_tensor_free(s); sb_tensor_free(p); sb_tensor_free(dd); sb_tensor_free(o);
        data_free(&d);
    }
}

/* ---- float64 ---- */

/* The contract's computation in binary64 (no rounding to float between
 * steps), dropout by the same keep decisions. */
static void attention_f64(const attn_data *d, const double *q, const double *k, const double *v,
                          double *out) {
    const sb_ref_sdpa_geom *g = &d->g;
    double *s = malloc((size_t)(g->lk + 1) * sizeof *s);
    for (int64_t b = 0; b < g->batch; b++)
        for (int64_t i = 0; i < g->lq; i++) {
            int64_t cend = sb_ref_sdpa_causal_end(g, i);
            int64_t mrow = g->mask_kind ? sb_ref_sdpa_mask_row(g, b, i) : 0;
            double m = -INFINITY;
            for (int64_t j = 0; j < g->lk; j++) {
                if (sb_ref_sdpa_excluded(g, d->mask ? d->mask->data : NULL, mrow, cend, j)) {
                    s[j] = -INFINITY;
                    continue;
                }
                double acc = 0;
                for (int64_t e = 0; e < g->e; e++)
                    acc += q[(b * g->lq + i) * g->e + e] * k[(b * g->lk + j) * g->e + e];
                s[j] = acc * g->scale;
                if (g->mask_kind == SB_REF_SDPA_MASK_ADD) s[j] += F(d->mask)[mrow + j * g->mask_stride_j];
                if (s[j] > m) m = s[j];
            }
            double sum = 0;
            for (int64_t j = 0; j < g->lk; j++) sum += m == -INFINITY ? 0 : exp(s[j] - m);
            for (int64_t c = 0; c < g->ev; c++) {
                double acc = 0;
                for (int64_t j = 0; j < g->lk; j++) {
                    if (m == -INFINITY || s[j] == -INFINITY) continue;
                    double p = exp(s[j] - m) / sum * sb_ref_sdpa_drop(g, b, i, j);
                    acc += p * v[(b * g->lk + j) * g->ev + c];
                }
                out[(b * g->lq + i) * g->ev + c] = acc;
            }
        }
    free(s);
}

static double *to_f64(const sb_tensor *t) {
    double *p = malloc((size_t)(numel(t) + 1) * sizeof *p);
    for (int64_t i = 0; i < numel(t); i++) p[i] = F(t)[i];
    return p;
}

static void test_float64(void) {
    const attn_case cases[] = {
        {"f64 plain", 1, {3}, 6, 7, 8, 5, NO_MASK, 0, {0}, SB_SDPA_NOT_CAUSAL, 0, 0, 0},
        {"f64 causal + float mask", 1, {2}, 6, 6, 4, 4, ADD_MASK, 2, {6, 6}, SB_SDPA_CAUSAL_TOP_LEFT, 0, 0, 0},
        {"f64 bool mask + dropout", 1, {2}, 5, 9, 4, 4, BOOL_MASK, 2, {5, 9}, SB_SDPA_NOT_CAUSAL, 0.2f, 0, 3},
    };
    for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
        sb_test_seed(500 + t);
        attn_data d;
        data_new(&cases[t], &d);
        CHECK_OK(forward(&cases[t], &d, d.out, NULL));
        double *q = to_f64(d.q), *k = to_f64(d.k), *v = to_f64(d.v);
        double *o = malloc((size_t)numel(d.out) * sizeof *o);
        attention_f64(&d, q, k, v, o);
        double worst = 0;
        for (int64_t i = 0; i < numel(d.out); i++) {
            double err = fabs(F(d.out)[i] - o[i]) / (1.0 + fabs(o[i]));
            if (!(err <= worst)) worst = err;
        }
        CHECK(worst < 2e-6, "%s: relative error %g against float64", cases[t].name, worst);
        free(q); free(k); free(v); free(o);
        data_free(&d);
    }
}

/* Gradients against central differences of the float64 computation of
 * L = sum(out * dout). */
static void test_gradcheck(void) {
    const attn_case cases[] = {
        {"grad plain", 1, {2}, 3, 4, 3, 2, NO_MASK, 0, {0}, SB_SDPA_NOT_CAUSAL, 0, 0, 0},
        {"grad causal + float mask", 1, {2}, 4, 4, 2, 3, ADD_MASK, 2, {4, 4}, SB_SDPA_CAUSAL_TOP_LEFT, 0, 0, 0},
        {"grad bool mask + dropout, bottom-right", 1, {2}, 3, 5, 2, 2, BOOL_MASK, 2, {3, 5},
         SB_SDPA_CAUSAL_BOTTOM_RIGHT, 0.3f, 0, 3},
    };
    for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
        sb_test_seed(900 + t);
        attn_data d;
        data_new(&cases[t], &d);
        if (d.mask && d.mask->dtype == SB_F32)
            for (int64_t i = 0; i < numel(d.mask); i++) F(d.mask)[i] = sb_test_unif(-1.0f, 1.0f);
        CHECK_OK(forward(&cases[t], &d, d.out, d.probs));
        CHECK_OK(backward(&cases[t], &d, d.dq, d.dk, d.dv));
        double *x[3] = {to_f64(d.q), to_f64(d.k), to_f64(d.v)};
        const sb_tensor *grads[3] = {d.dq, d.dk, d.dv};
        const char *names[3] = {"dq", "dk", "dv"};
        double *o = malloc((size_t)numel(d.out) * sizeof *o);
        for (int w = 0; w < 3; w++) {
            double worst = 0;
            for (int64_t i = 0; i < numel(grads[w]); i++) {
                double keep = x[w][i], h = 1e-6, lp = 0, lm = 0;
                x[w][i] = keep + h;
                attention_f64(&d, x[0], x[1], x[2], o);
                for (int64_t r = 0; r < numel(d.out); r++) lp += o[r] * F(d.dout)[r];
                x[w][i] = keep - h;
                attention_f64(&d, x[0], x[1], x[2], o);
                for (int64_t r = 0; r < numel(d.out); r++) lm += o[r] * F(d.dout)[r];
                x[w][i] = keep;
                double num = (lp - lm) / (2 * h);
                double err = fabs(F(grads[w])[i] - num) / (1.0 + fabs(num));
                if (!(err <= worst)) worst = err;
            }
            CHECK(worst < 1e-4, "%s: %s differs from finite differences by %g", cases[t].name, names[w],
                  worst);
        }
        free(o);
        for (int w = 0; w < 3; w++) free(x[w]);
        data_free(&d);
    }
}

/* ---- fully masked rows, specials ---- */

static void test_fully_masked(void) {
    /* bottom-right with Lq > Lk: rows i < Lq - Lk see no key */
    attn_case c = {"empty rows", 1, {2}, 6, 3, 2, 3, NO_MASK, 0, {0}, SB_SDPA_CAUSAL_BOTTOM_RIGHT, 0, 0, 0};
    sb_test_seed(31);
    attn_data d;
    data_new(&c, &d);
    F(d.v)[0] = INFINITY; /* a value an empty row must not touch */
    CHECK_OK(forward(&c, &d, d.out, d.probs));
    for (int64_t b = 0; b < 2; b++)
        for (int64_t i = 0; i < 3; i++) {
            for (int64_t j = 0; j < 3; j++)
                CHECK_BITS(F(d.probs)[(b * 6 + i) * 3 + j], 0.0f, "empty row %lld: p is not +0", (long long)i);
            for (int64_t e = 0; e < 3; e++)
                CHECK_BITS(F(d.out)[(b * 6 + i) * 3 + e], 0.0f, "empty row %lld: out is not +0", (long long)i);
        }
    CHECK_OK(backward(&c, &d, d.dq, d.dk, d.dv));
    for (int64_t b = 0; b < 2; b++)
        for (int64_t i = 0; i < 3; i++)
            for (int64_t e = 0; e < 2; e++)
                CHECK_BITS(F(d.dq)[(b * 6 + i) * 2 + e], 0.0f, "empty row %lld: dq is not +0", (long long)i);
    /* a float mask of -inf everywhere: p = +0, and out = chain of 0 * v (+0 here) */
    data_free(&d);
    attn_case c2 = {"-inf mask", 0, {0}, 2, 3, 2, 2, ADD_MASK, 2, {2, 3}, SB_SDPA_NOT_CAUSAL, 0, 0, 0};
    data_new(&c2, &d);
    for (int64_t i = 0; i < 6; i++) F(d.mask)[i] = -INFINITY;
    CHECK_OK(forward(&c2, &d, d.out, d.probs));
    for (int64_t i = 0; i < 6; i++) CHECK_BITS(F(d.probs)[i], 0.0f, "-inf mask: p[%lld] is not +0", (long long)i);
    for (int64_t i = 0; i < 4; i++) CHECK_BITS(F(d.out)[i], 0.0f, "-inf mask: out[%lld] is not +0", (long long)i);
    /* NaN in a key row makes every probability of the rows that see it NaN */
    F(d.mask)[0] = 0.0f;
    for (int64_t i = 1; i < 6; i++) F(d.mask)[i] = 0.0f;
    F(d.k)[0] = NAN;
    CHECK_OK(forward(&c2, &d, d.out, d.probs));
    for (int64_t i = 0; i < 6; i++) CHECK(isnan(F(d.probs)[i]), "NaN key: p[%lld] = %g", (long long)i, F(d.probs)[i]);
    data_free(&d);
}

/* ---- invariance ---- */

/* q (1, Lq, E) etc. from rows of bigger arrays. */
static sb_tensor *rows_of(const sb_tensor *src, int64_t b, int64_t r0, int64_t r1) {
    int64_t cols = src->shape[2], s[3] = {1, r1 - r0, cols};
    sb_tensor *t = tnew(SB_F32, 3, s);
    memcpy(t->data, F(src) + (b * src->shape[1] + r0) * cols, (size_t)((r1 - r0) * cols) * sizeof(float));
    return t;
}

static void test_invariance(void) {
    const int64_t B = 3, L = 9, E = 5, Ev = 4;
    int64_t qs[3] = {B, L, E}, vs[3] = {B, L, Ev};
    sb_test_seed(4242);
    sb_tensor *q = tnew(SB_F32, 3, qs), *k = tnew(SB_F32, 3, qs), *v = tnew(SB_F32, 3, vs);
    sb_tensor *out = tnew(SB_F32, 3, vs);
    fill(q, 0, 3.0f);
    fill(k, 0, 3.0f);
    fill(v, 0, 3.0f);
    float scale;
    CHECK_OK(sb_sdpa_default_scale(E, &scale));
    for (int cfg = 0; cfg < sb_test_config_count(); cfg += 3) {
        sb_test_config_apply(cfg);
        const char *cn = sb_test_config_name(cfg);
        /* prefill: the whole batch at once, causal (Lq = Lk: both alignments agree) */
        CHECK_OK(sb_sdpa_forward(q, k, v, NULL, SB_SDPA_CAUSAL_TOP_LEFT, scale, 0, 0, 0, 0, out, NULL));
        for (int64_t b = 0; b < B; b++)
            for (int64_t t = 0; t < L; t++) {
                /* decode: query t alone against the cache of keys 0..t */
                sb_tensor *qt = rows_of(q, b, t, t + 1), *kt = rows_of(k, b, 0, t + 1), *vt = rows_of(v, b, 0, t + 1);
                int64_t os[3] = {1, 1, Ev};
                sb_tensor *ot = tnew(SB_F32, 3, os);
                CHECK_OK(sb_sdpa_forward(qt, kt, vt, NULL, SB_SDPA_CAUSAL_BOTTOM_RIGHT, scale, 0, 0, 0, 0, ot, NULL));
                CHECK_SAME(F(ot), F(out) + (b * L + t) * Ev, Ev,
                           "%s: decode of token %lld (entry %lld) differs from the prefill", cn, (long long)t,
                           (long long)b);
                sb_tensor_free(qt); sb_tensor_free(kt); sb_tensor_free(vt); sb_tensor_free(ot);
            }
        /* a chunk of queries [3, 7) against keys [0, 7), bottom-right: a
         * chunked prefill; and the same entry's keys padded to L with junk
         * that a boolean mask excludes */
        for (int64_t b = 0; b < B; b++) {
            sb_tensor *qc = rows_of(q, b, 3, 7), *kc = rows_of(k, b, 0, 7), *vc = rows_of(v, b, 0, 7);
            int64_t os[3] = {1, 4, Ev};
            sb_tensor *oc = tnew(SB_F32, 3, os);
            CHECK_OK(sb_sdpa_forward(qc, kc, vc, NULL, SB_SDPA_CAUSAL_BOTTOM_RIGHT, scale, 0, 0, 0, 0, oc, NULL));
            CHECK_SAME(F(oc), F(out) + (b * L + 3) * Ev, 4 * Ev, "%s: chunked prefill (entry %lld) differs", cn,
                       (long long)b);
            sb_tensor *kp = rows_of(k, b, 0, L), *vp = rows_of(v, b, 0, L);
            for (int64_t j = 7; j < L; j++) {
                for (int64_t e = 0; e < E; e++) F(kp)[j * E + e] = e ? NAN : INFINITY;
                for (int64_t e = 0; e < Ev; e++) F(vp)[j * Ev + e] = e ? -INFINITY : NAN;
            }
            int64_t ms[1] = {L};
            sb_tensor *pad = tnew(SB_I32, 1, ms);
            for (int64_t j = 0; j < L; j++) ((int32_t *)pad->data)[j] = j < 7;
            /* with Lk = 9 and Lq = 4 bottom-right would shift the window, so
             * top-left alignment for queries 0..6 of a padded prompt */
            sb_tensor *q7 = rows_of(q, b, 0, 7);
            int64_t o7s[3] = {1, 7, Ev};
            sb_tensor *o7 = tnew(SB_F32, 3, o7s);
            CHECK_OK(sb_sdpa_forward(q7, kp, vp, pad, SB_SDPA_CAUSAL_TOP_LEFT, scale, 0, 0, 0, 0, o7, NULL));
            CHECK_SAME(F(o7), F(out) + b * L * Ev, 7 * Ev, "%s: padded keys (entry %lld) change the rows", cn,
                       (long long)b);
            /* the same padded prompt without a causal rule, padding excluded
             * by the mask alone: row 6 (which sees keys 0..6) is the prefill's */
            CHECK_OK(sb_sdpa_forward(q7, kp, vp, pad, SB_SDPA_NOT_CAUSAL, scale, 0, 0, 0, 0, o7, NULL));
            CHECK_SAME(F(o7) + 6 * Ev, F(out) + (b * L + 6) * Ev, Ev,
                       "%s: mask-only padding (entry %lld) changes the last row", cn, (long long)b);
            sb_tensor *f[] = {qc, kc, vc, oc, kp, vp, pad, q7, o7};
            for (int i = 0; i < 9; i++) sb_tensor_free(f[i]);
        }
        /* one batch entry alone equals its rows in the batch */
        for (int64_t b = 0; b < B; b++) {
            sb_tensor *qb = rows_of(q, b, 0, L), *kb = rows_of(k, b, 0, L), *vb = rows_of(v, b, 0, L);
            int64_t os[3] = {1, L, Ev};
            sb_tensor *ob = tnew(SB_F32, 3, os);
            CHECK_OK(sb_sdpa_forward(qb, kb, vb, NULL, SB_SDPA_CAUSAL_TOP_LEFT, scale, 0, 0, 0, 0, ob, NULL));
            CHECK_SAME(F(ob), F(out) + b * L * Ev, L * Ev, "%s: entry %lld alone differs from the batch", cn,
                       (long long)b);
            sb_tensor_free(qb); sb_tensor_free(kb); sb_tensor_free(vb); sb_tensor_free(ob);
        }
    }
    sb_test_config_reset();
    sb_tensor_free(q); sb_tensor_free(k); sb_tensor_free(v); sb_tensor_free(out);
}

/* ---- the default scale ---- */

static void test_default_scale(void) {
    /* correctly rounded: 1/sqrt(E) lies strictly between the midpoints
     * around the result, i.e. lo^2 * E < 1 < hi^2 * E; lo^2 and hi^2 are
     * exact in binary64 and fma gives the sign of x * E - 1 exactly. */
    int bad = 0;
    for (int64_t e = 1; e <= 70000; e++) {
        float f;
        if (sb_sdpa_default_scale(e, &f) != SB_OK) { bad++; continue; }
        double lo = ((double)f + (double)nextafterf(f, 0.0f)) / 2;
        double hi = ((double)f + (double)nextafterf(f, INFINITY)) / 2;
        if (!(fma(lo * lo, (double)e, -1.0) < 0 && fma(hi * hi, (double)e, -1.0) > 0)) bad++;
    }
    CHECK(bad == 0, "%d head sizes in 1..70000 have a default scale that is not correctly rounded", bad);
    float f = 0.0f;
    CHECK_OK(sb_sdpa_default_scale(64, &f));
    CHECK_BITS(f, 0.125f, "scale of E = 64");
    f = 3.0f;
    CHECK_ERROR(sb_sdpa_default_scale(0, &f), SB_ERR_ARG, "head size");
    CHECK_BITS(f, 3.0f, "a refused call wrote the scale");
    CHECK_ERROR(sb_sdpa_default_scale(4, NULL), SB_ERR_NULL, "scale");
}

/* ---- refusals ---- */

static void test_refusals(void) {
    attn_case c = {"bad", 1, {2}, 3, 4, 2, 2, NO_MASK, 0, {0}, SB_SDPA_NOT_CAUSAL, 0, 0, 0};
    sb_test_seed(5);
    attn_data d;
    data_new(&c, &d);
    sb_tensor_fill(d.out, 9.0f);
    float s = d.scale;
#define FWD(mask, causal, scale, p, off) \
    sb_sdpa_forward(d.q, d.k, d.v, (mask), (causal), (scale), (p), 1, 2, (off), d.out, d.probs)
    CHECK_ERROR(FWD(NULL, SB_SDPA_NOT_CAUSAL, NAN, 0, 0), SB_ERR_ARG, "scale");
    CHECK_ERROR(FWD(NULL, SB_SDPA_NOT_CAUSAL, INFINITY, 0, 0), SB_ERR_ARG, "scale");
    CHECK_ERROR(FWD(NULL, SB_SDPA_NOT_CAUSAL, s, 1.5f, 0), SB_ERR_ARG, "dropout_p");
    CHECK_ERROR(FWD(NULL, SB_SDPA_NOT_CAUSAL, s, NAN, 0), SB_ERR_ARG, "dropout_p");
    CHECK_ERROR(FWD(NULL, SB_SDPA_NOT_CAUSAL, s, -0.1f, 0), SB_ERR_ARG, "dropout_p");
    CHECK_ERROR(FWD(NULL, (sb_sdpa_causal)7, s, 0, 0), SB_ERR_ARG, "causal");
    CHECK_ERROR(FWD(NULL, SB_SDPA_NOT_CAUSAL, s, 0.5f, SB_RNG_INDEX_LIMIT - 10), SB_ERR_RANGE, "2^56");
    CHECK_OK(FWD(NULL, SB_SDPA_NOT_CAUSAL, s, 0.0f, SB_RNG_INDEX_LIMIT)); /* nothing drawn */
    sb_tensor_fill(d.out, 9.0f);
    int64_t s64[2] = {3, 4}, bad_b[2] = {3, 3}, s3[3] = {2, 3, 4}, bad3[3] = {3, 3, 4};
    sb_tensor *m64 = tnew(SB_I64, 2, s64), *mb = tnew(SB_F32, 2, bad_b), *m3 = tnew(SB_F32, 3, bad3);
    sb_tensor *m5 = NULL;
    int64_t s5[4] = {1, 2, 3, 4};
    m5 = tnew(SB_F32, 4, s5);
    CHECK_ERROR(FWD(m64, SB_SDPA_NOT_CAUSAL, s, 0, 0), SB_ERR_DTYPE, "mask");
    CHECK_ERROR(FWD(mb, SB_SDPA_NOT_CAUSAL, s, 0, 0), SB_ERR_SHAPE, "mask");
    CHECK_ERROR(FWD(m3, SB_SDPA_NOT_CAUSAL, s, 0, 0), SB_ERR_SHAPE, "mask");
    CHECK_ERROR(FWD(m5, SB_SDPA_NOT_CAUSAL, s, 0, 0), SB_ERR_SHAPE, "mask");
    (void)s3;
    /* shapes */
    int64_t kb[3] = {2, 4, 3}, vb[3] = {2, 5, 2}, qb[3] = {3, 3, 2};
    sb_tensor *k_bad = tnew(SB_F32, 3, kb), *v_bad = tnew(SB_F32, 3, vb), *q_bad = tnew(SB_F32, 3, qb);
    CHECK_ERROR(sb_sdpa_forward(d.q, k_bad, d.v, NULL, 0, s, 0, 0, 0, 0, d.out, NULL), SB_ERR_SHAPE, "k");
    CHECK_ERROR(sb_sdpa_forward(d.q, d.k, v_bad, NULL, 0, s, 0, 0, 0, 0, d.out, NULL), SB_ERR_SHAPE, "v");
    CHECK_ERROR(sb_sdpa_forward(q_bad, d.k, d.v, NULL, 0, s, 0, 0, 0, 0, d.out, NULL), SB_ERR_SHAPE, "leading");
    CHECK_ERROR(sb_sdpa_forward(d.q, d.k, d.v, NULL, 0, s, 0, 0, 0, 0, d.probs, NULL), SB_ERR_SHAPE, "out");
    CHECK_ERROR(sb_sdpa_forward(d.q, d.k, d.v, NULL, 0, s, 0, 0, 0, 0, d.out, d.out), SB_ERR_SHAPE, "probs");
    CHECK_ERROR(sb_sdpa_forward(d.q, d.k, d.v, NULL, 0, s, 0, 0, 0, 0, d.out, d.out), SB_ERR_SHAPE, "probs");
    CHECK_ERROR(sb_sdpa_forward(d.q, d.k, d.v, NULL, 0, s, 0, 0, 0, 0, d.q, NULL), SB_ERR_ARG, "q");
    for (int64_t i = 0; i < numel(d.out); i++) CHECK_BITS(F(d.out)[i], 9.0f, "a refused call wrote out[%lld]", (long long)i);
    /* backward */
    sb_tensor_fill(d.dq, 9.0f);
    CHECK_ERROR(sb_sdpa_backward(d.dout, d.q, d.k, d.v, NULL, 0, s, 0, 0, 0, 0, NULL, d.dq, NULL, NULL),
                SB_ERR_NULL, "probs");
    CHECK_ERROR(sb_sdpa_backward(d.dout, d.q, d.k, d.v, NULL, 0, s, 0, 0, 0, 0, d.probs, d.dk, NULL, NULL),
                SB_ERR_SHAPE, "dq");
    CHECK_ERROR(sb_sdpa_backward(d.dout, d.q, d.k, d.v, NULL, 0, s, 0, 0, 0, 0, d.probs, d.dq, d.dq, NULL),
                SB_ERR_SHAPE, "dk");
    CHECK_ERROR(sb_sdpa_backward(d.probs, d.q, d.k, d.v, NULL, 0, s, 0, 0, 0, 0, d.probs, d.dq, NULL, NULL),
                SB_ERR_SHAPE, "dout");
    CHECK_ERROR(sb_sdpa_backward(d.dout, d.q, d.k, d.v, NULL, 0, s, 2.0f, 0, 0, 0, d.probs, d.dq, NULL, NULL),
                SB_ERR_ARG, "dropout_p");
    for (int64_t i = 0; i < numel(d.dq); i++) CHECK_BITS(F(d.dq)[i], 9.0f, "a refused call wrote dq[%lld]", (long long)i);
#undef FWD
    sb_tensor *f[] = {m64, mb, m3, m5, k_bad, v_bad, q_bad};
    for (int i = 0; i < 7; i++) sb_tensor_free(f[i]);
    data_free(&d);
}

/* ---- autograd ---- */

/* sb_ag_sdpa under loss = sum(y^2) (sb_ag_mse against zeros): the graph's
 * gradients are sb_sdpa_backward's with dout = 2y, bit for bit. */
static void test_autograd(void) {
    attn_case c = {"autograd", 1, {2}, 4, 5, 3, 2, BOOL_MASK, 2, {4, 5}, SB_SDPA_CAUSAL_BOTTOM_RIGHT, 0.2f, 0, 3};
    sb_test_seed(61);
    attn_data d;
    data_new(&c, &d);
    sb_tensor *gq = tnew(SB_F32, 3, d.q->shape), *gk = tnew(SB_F32, 3, d.k->shape), *gv = tnew(SB_F32, 3, d.v->shape);
    sb_tensor *zero = tnew(SB_F32, 3, d.out->shape);
    sb_graph *g = NULL;
    CHECK_OK(sb_graph_new(&g));
    sb_variable *vq, *vk, *vv, *y = NULL, *loss = NULL;
    CHECK_OK(sb_graph_param(g, d.q, gq, &vq));
    CHECK_OK(sb_graph_param(g, d.k, gk, &vk));
    CHECK_OK(sb_graph_param(g, d.v, gv, &vv));
    CHECK_OK(sb_ag_sdpa(g, vq, vk, vv, d.mask, c.causal, d.scale, c.dropout_p, d.g.seed, d.g.stream,
                        d.g.offset, &y));
    CHECK_OK(sb_ag_mse(g, y, zero, SB_LOSS_SUM, &loss));
    CHECK_OK(sb_graph_backward(g, loss));
    CHECK_OK(forward(&c, &d, d.out, d.probs));
    CHECK_SAME(F(y->value), F(d.out), numel(d.out), "autograd: y differs from sb_sdpa_forward");
    for (int64_t i = 0; i < numel(d.out); i++) F(d.dout)[i] = F(d.out)[i] * 2.0f;
    CHECK_OK(backward(&c, &d, d.dq, d.dk, d.dv));
    CHECK_SAME(F(gq), F(d.dq), numel(gq), "autograd: dq differs from sb_sdpa_backward");
    CHECK_SAME(F(gk), F(d.dk), numel(gk), "autograd: dk differs from sb_sdpa_backward");
    CHECK_SAME(F(gv), F(d.dv), numel(gv), "autograd: dv differs from sb_sdpa_backward");
    sb_graph_free(g);
    sb_tensor_free(gq); sb_tensor_free(gk); sb_tensor_free(gv); sb_tensor_free(zero);
    data_free(&d);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_default_scale();
    test_refusals();
    test_restated();
    test_fully_masked();
    test_float64();
    test_gradcheck();
    test_invariance();
    test_autograd();
    test_differential();
    return sb_test_finish();
}
