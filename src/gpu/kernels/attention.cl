/* src/gpu/kernels/attention.cl - scaled dot-product attention, forward and
 * backward (contract section 19, "Attention"; src/ref/attention.c), in the
 * portable dialect. The math program embeds src/math's functions,
 * sum_acc.cl and src/ref/attention_rules.h (which keys a row sees, the
 * text every implementation shares) before this file.
 *
 * Geometry (SB_SDPA_GEOM longs, from sb_ref_sdpa_geom): nlead, the leading
 * sizes and the mask's strides along them (SB_SDPA_DIMS each), the mask's
 * row and column strides, batch, lq, lk, e, ev, the mask kind (0 none,
 * 1 boolean int32, 2 added float32) and the causal alignment.
 *
 * Every output element is one work-item running the reference's chain for
 * it, in the reference's order: a query row for the forward pass and dq
 * (scores, maximum, canonical sum through sb_acc, then the chains over the
 * keys), a (key, feature) pair for dk and dv (chains over the query rows
 * ascending). Dropout's keep flags come from the generator's program into a
 * buffer indexed like probs, and multiply as keep * dscale, the reference's
 * multiplier. */

#define SB_SDPA_DIMS 8
#define SB_SDPA_GEOM 26
#define SB_SDPA_MASK_STRIDE_I(g) g[1 + 2 * SB_SDPA_DIMS]
#define SB_SDPA_MASK_STRIDE_J(g) g[2 + 2 * SB_SDPA_DIMS]
#define SB_SDPA_BATCH(g) g[3 + 2 * SB_SDPA_DIMS]
#define SB_SDPA_LQ(g) g[4 + 2 * SB_SDPA_DIMS]
#define SB_SDPA_LK(g) g[5 + 2 * SB_SDPA_DIMS]
#define SB_SDPA_E(g) g[6 + 2 * SB_SDPA_DIMS]
#define SB_SDPA_EV(g) g[7 + 2 * SB_SDPA_DIMS]
#define SB_SDPA_MASK_KIND(g) g[8 + 2 * SB_SDPA_DIMS]
#define SB_SDPA_CAUSAL(g) g[9 + 2 * SB_SDPA_DIMS]

/* Where row (b, i) stands: its mask row offset and its causal end. */
typedef struct sb_sdpa_row {
    SB_LONG mrow, cend;
} sb_sdpa_row;

SB_INLINE sb_sdpa_row sb_sdpa_row_at(SB_GLOBAL const SB_LONG *g, SB_LONG b, SB_LONG i) {
    sb_sdpa_row r;
    r.cend = sb_sdpa_causal_end((int)SB_SDPA_CAUSAL(g), i, SB_SDPA_LQ(g), SB_SDPA_LK(g));
    r.mrow = 0;
    if (SB_SDPA_MASK_KIND(g) != 0) {
        const int nlead = (int)g[0];
        int64_t lead[SB_SDPA_DIMS], stride[SB_SDPA_DIMS];
        for (int d = 0; d < nlead; d++) {
            lead[d] = g[1 + d];
            stride[d] = g[1 + SB_SDPA_DIMS + d];
        }
        r.mrow = sb_sdpa_mask_row(nlead, lead, stride, SB_SDPA_MASK_STRIDE_I(g), b, i);
    }
    return r;
}

/* Key j is excluded for the row: past its causal end, or a boolean 0. */
SB_INLINE int sb_sdpa_excluded(SB_GLOBAL const SB_LONG *g, SB_GLOBAL const float *mask,
                               sb_sdpa_row r, SB_LONG j) {
    if (j >= r.cend) return 1;
    return SB_SDPA_MASK_KIND(g) == 1 &&
           ((SB_GLOBAL const int *)mask)[r.mrow + j * SB_SDPA_MASK_STRIDE_J(g)] == 0;
}

/* s_j: -inf when excluded, else the chain over e ascending of q_e * k_je,
 * times scale, plus an added mask entry. */
SB_INLINE float sb_sdpa_score(SB_GLOBAL const SB_LONG *g, float scale, SB_GLOBAL const float *qr,
                              SB_GLOBAL const float *kb, SB_GLOBAL const float *mask,
                              sb_sdpa_row r, SB_LONG j) {
    if (sb_sdpa_excluded(g, mask, r, j)) return SB_AS_F32(0xff800000u);
    const SB_LONG E = SB_SDPA_E(g);
    float acc = 0.0f;
    for (SB_LONG e = 0; e < E; e++) acc = SB_FMA(qr[e], kb[j * E + e], acc);
    float s = acc * scale;
    if (SB_SDPA_MASK_KIND(g) == 2) s = s + mask[r.mrow + j * SB_SDPA_MASK_STRIDE_J(g)];
    return s;
}

/* dP_j: the chain over c of dout_c * v_jc, times keep * dscale with dropout. */
SB_INLINE float sb_sdpa_dprob(SB_LONG EV, SB_GLOBAL const float *dor, SB_GLOBAL const float *vr,
                              int dropout, float keep, float dscale) {
    float acc = 0.0f;
    for (SB_LONG c = 0; c < EV; c++) acc = SB_FMA(dor[c], vr[c], acc);
    return dropout ? acc * (keep * dscale) : acc;
}

// out (batch, lq, ev); probs (batch, lq, lk) when want_probs; one work-item per query row
SB_KERNEL sb_sdpa_forward(SB_GLOBAL const SB_LONG *g, float scale, int dropout, float dscale,
                          SB_GLOBAL const float *q, SB_LONG q0, SB_GLOBAL const float *k,
                          SB_LONG k0, SB_GLOBAL const float *v, SB_LONG v0,
                          SB_GLOBAL const float *mask, SB_LONG m0, SB_GLOBAL const float *keep,
                          SB_LONG kp0, SB_GLOBAL float *out, SB_LONG o0, int want_probs,
                          SB_GLOBAL float *probs, SB_LONG p0) {
    const SB_LONG LQ = SB_SDPA_LQ(g), LK = SB_SDPA_LK(g), E = SB_SDPA_E(g), EV = SB_SDPA_EV(g);
    SB_GLOBAL const float *mk = mask + m0;
    SB_FOR_EACH(row, SB_SDPA_BATCH(g) * LQ) {
        const SB_LONG b = row / LQ;
        sb_sdpa_row r = sb_sdpa_row_at(g, b, row % LQ);
        SB_GLOBAL const float *qr = q + q0 + row * E, *kb = k + k0 + b * LK * E,
                              *vb = v + v0 + b * LK * EV;
        const float ninf = SB_AS_F32(0xff800000u);
        float m = LK > 0 ? sb_sdpa_score(g, scale, qr, kb, mk, r, 0) : ninf;
        for (SB_LONG j = 1; j < LK; j++) {
            float s = sb_sdpa_score(g, scale, qr, kb, mk, r, j);
            if (SB_ISNAN(s) || s > m) m = SB_ISNAN(m) ? m : s;
        }
        sb_acc acc;
        sb_acc_init(&acc);
        if (m != ninf)
            for (SB_LONG j = 0; j < LK; j++)
                sb_acc_add(&acc, sb_expf(sb_sdpa_score(g, scale, qr, kb, mk, r, j) - m));
        const float sum = sb_acc_result(&acc);
        SB_GLOBAL float *o = out + o0 + row * EV;
        for (SB_LONG c = 0; c < EV; c++) o[c] = 0.0f;
        for (SB_LONG j = 0; j < LK; j++) {
            float p = m == ninf ? 0.0f : sb_expf(sb_sdpa_score(g, scale, qr, kb, mk, r, j) - m) / sum;
            if (want_probs) probs[p0 + row * LK + j] = p;
            if (sb_sdpa_excluded(g, mk, r, j)) continue;
            float d = dropout ? p * (keep[kp0 + row * LK + j] * dscale) : p;
            for (SB_LONG c = 0; c < EV; c++) o[c] = SB_FMA(d, vb[j * EV + c], o[c]);
        }
    }
}

// one work-item per query row: dq (batch, lq, e) when want_dq, and the score
// gradients gs (batch, lq, lk) of the kept keys when want_gs (for dk)
SB_KERNEL sb_sdpa_backward_rows(SB_GLOBAL const SB_LONG *g, float scale, int dropout, float dscale,
                                SB_GLOBAL const float *dout, SB_LONG d0, SB_GLOBAL const float *k,
                                SB_LONG k0, SB_GLOBAL const float *v, SB_LONG v0,
                                SB_GLOBAL const float *mask, SB_LONG m0,
                                SB_GLOBAL const float *keep, SB_LONG kp0,
                                SB_GLOBAL const float *probs, SB_LONG p0, int want_dq,
                                SB_GLOBAL float *dq, SB_LONG dq0, int want_gs, SB_GLOBAL float *gs,
                                SB_LONG gs0) {
    const SB_LONG LQ = SB_SDPA_LQ(g), LK = SB_SDPA_LK(g), E = SB_SDPA_E(g), EV = SB_SDPA_EV(g);
    SB_GLOBAL const float *mk = mask + m0;
    SB_FOR_EACH(row, SB_SDPA_BATCH(g) * LQ) {
        const SB_LONG b = row / LQ;
        sb_sdpa_row r = sb_sdpa_row_at(g, b, row % LQ);
        SB_GLOBAL const float *dor = dout + d0 + row * EV, *pr = probs + p0 + row * LK,
                              *kb = k + k0 + b * LK * E, *vb = v + v0 + b * LK * EV;
        sb_acc acc;
        sb_acc_init(&acc);
        for (SB_LONG j = 0; j < LK; j++) {
            float kp = dropout ? keep[kp0 + row * LK + j] : 1.0f;
            float dp = sb_sdpa_excluded(g, mk, r, j)
                           ? 0.0f
                           : sb_sdpa_dprob(EV, dor, vb + j * EV, dropout, kp, dscale);
            sb_acc_add(&acc, dp * pr[j]);
        }
        const float dot = sb_acc_result(&acc);
        SB_GLOBAL float *dqr = want_dq ? dq + dq0 + row * E : dq;
        if (want_dq)
            for (SB_LONG e = 0; e < E; e++) dqr[e] = 0.0f;
        for (SB_LONG j = 0; j < LK; j++) {
            if (sb_sdpa_excluded(g, mk, r, j)) continue;
            float kp = dropout ? keep[kp0 + row * LK + j] : 1.0f;
            float gsv = (pr[j] * (sb_sdpa_dprob(EV, dor, vb + j * EV, dropout, kp, dscale) - dot)) *
                        scale;
            if (want_gs) gs[gs0 + row * LK + j] = gsv;
            if (want_dq)
                for (SB_LONG e = 0; e < E; e++) dqr[e] = SB_FMA(gsv, kb[j * E + e], dqr[e]);
        }
    }
}

// one work-item per key feature: dk (batch, lk, e) from gs and q (want_dv 0),
// or dv (batch, lk, ev) from probs, keep and dout (want_dv 1); the chain over
// the query rows i ascending that keep key j
SB_KERNEL sb_sdpa_backward_keys(SB_GLOBAL const SB_LONG *g, int want_dv, int dropout,
                                float dscale, SB_GLOBAL const float *mask, SB_LONG m0,
                                SB_GLOBAL const float *keep, SB_LONG kp0,
                                SB_GLOBAL const float *w, SB_LONG w0, SB_GLOBAL const float *a,
                                SB_LONG a0, SB_GLOBAL float *out, SB_LONG o0) {
    const SB_LONG LQ = SB_SDPA_LQ(g), LK = SB_SDPA_LK(g);
    const SB_LONG F = want_dv ? SB_SDPA_EV(g) : SB_SDPA_E(g); /* features of out and a */
    SB_GLOBAL const float *mk = mask + m0;
    SB_FOR_EACH(t, SB_SDPA_BATCH(g) * LK * F) {
        const SB_LONG f = t % F, j = (t / F) % LK, b = t / (F * LK);
        float acc = 0.0f;
        for (SB_LONG i = 0; i < LQ; i++) {
            sb_sdpa_row r = sb_sdpa_row_at(g, b, i);
            if (sb_sdpa_excluded(g, mk, r, j)) continue;
            const SB_LONG at = (b * LQ + i) * LK + j;
            float c = w[w0 + at]; /* gs for dk; p, then p * (keep * dscale), for dv */
            if (want_dv && dropout) c = c * (keep[kp0 + at] * dscale);
            acc = SB_FMA(c, a[a0 + (b * LQ + i) * F + f], acc);
        }
        out[o0 + t] = acc;
    }
}
