/* src/gpu/kernels/ctc.cl - the CTC loss, forward and backward (contract
 * section 11, "Connectionist temporal classification"; src/ref/ctc.c), in
 * the portable dialect. The math program embeds src/ref/ctc_item.h (the
 * item recursions, one text with the reference) before this file, after
 * src/math's functions and sum_acc.cl.
 *
 * Geometry (SB_CTC_GEOM longs): T, N, C, R, W, blank, zero_infinity,
 * reduction (0 none, 1 mean, 2 sum). A work-item per batch item runs the
 * reference's recursions over its own alpha (and beta) rows of the work
 * buffer and writes its term of the reduction; SUM and MEAN are then the
 * canonical sum of the terms in item order (sum.cl, one group of 32 lanes),
 * MEAN divided by (float)N there. */

#define SB_CTC_GEOM 8

SB_INLINE sb_ctc_problem sb_ctc_problem_of(SB_GLOBAL const SB_LONG *g,
                                           SB_GLOBAL const SB_LONG *in_len,
                                           SB_GLOBAL const SB_LONG *tg_len,
                                           SB_GLOBAL const SB_LONG *offset,
                                           SB_GLOBAL const SB_LONG *targets) {
    sb_ctc_problem p;
    p.T = g[0];
    p.N = g[1];
    p.C = g[2];
    p.R = g[3];
    p.W = g[4];
    p.blank = g[5];
    p.zero_infinity = g[6] != 0;
    p.reduction = (int)g[7];
    p.in_len = in_len;
    p.tg_len = tg_len;
    p.offset = offset;
    p.targets = targets;
    return p;
}

/* The problem's four index arrays, each a buffer and an element offset. */
#define SB_CTC_INDEX_PARAMS                                                                   \
    SB_GLOBAL const SB_LONG *in_len, SB_LONG in0, SB_GLOBAL const SB_LONG *tg_len, SB_LONG tg0, \
        SB_GLOBAL const SB_LONG *offset, SB_LONG off0, SB_GLOBAL const SB_LONG *targets,        \
        SB_LONG tar0
#define SB_CTC_PROBLEM(g) \
    sb_ctc_problem_of(g, in_len + in0, tg_len + tg0, offset + off0, targets + tar0)

// v[b]: item b's term of the reduction (its loss, zero_infinity applied,
// for NONE and SUM; divided by its target length for MEAN), alpha rows at
// work + b * R * W
SB_KERNEL sb_ctc_loss_items(SB_GLOBAL const SB_LONG *g, SB_CTC_INDEX_PARAMS,
                            SB_GLOBAL const float *lp, SB_LONG lp0, SB_GLOBAL float *work,
                            SB_LONG work0, SB_GLOBAL float *v, SB_LONG v0) {
    const sb_ctc_problem p = SB_CTC_PROBLEM(g);
    SB_FOR_EACH(b, p.N) {
        float loss = sb_ctc_item_loss(&p, lp + lp0, b, work + work0 + b * p.R * p.W);
        v[v0 + b] = sb_ctc_item_term(&p, loss, b);
    }
}

// dlog_probs[:, b, :] for every item b, its alpha and beta rows at
// work + 2 * b * R * W and R * W further
SB_KERNEL sb_ctc_loss_grad(SB_GLOBAL const SB_LONG *g, SB_CTC_INDEX_PARAMS,
                           SB_GLOBAL const float *lp, SB_LONG lp0, SB_GLOBAL const float *dloss,
                           SB_LONG dl0, SB_GLOBAL float *work, SB_LONG work0,
                           SB_GLOBAL float *dlp, SB_LONG dlp0) {
    const sb_ctc_problem p = SB_CTC_PROBLEM(g);
    const SB_LONG block = p.R * p.W;
    SB_FOR_EACH(b, p.N) {
        SB_GLOBAL float *alpha = work + work0 + 2 * b * block;
        sb_ctc_item_backward(&p, lp + lp0, b, sb_ctc_item_grad(&p, dloss + dl0, b), alpha,
                             alpha + block, dlp + dlp0);
    }
}
