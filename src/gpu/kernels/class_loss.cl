/* src/gpu/kernels/class_loss.cl - the class losses, cross-entropy (with
 * label smoothing) and NLL, with class weights and K dimensions, forward
 * rows and gradient (contract section 11, src/ref/loss.c's
 * sb_ref_class_row_loss and sb_ref_class_loss_backward), in the portable
 * dialect; the unweighted (N, C) losses are the case weight = none, inner
 * = 1. In the math program after softmax.cl (sb_softmax_stats, sb_expf,
 * sb_logf, sb_acc). One work-item per row: row r = n * inner + k holds
 * input[(n * C + j) * inner + k], j < C, and is scanned in the reference's
 * order. Reductions: 0 none, 1 mean, 2 sum. */

/* Without a weight every class weighs 1.0f (w * v is then v, bit for bit). */
SB_INLINE float sb_class_weight(int has_w, SB_GLOBAL const float *w, SB_LONG c) {
    return has_w ? w[c] : 1.0f;
}

/* v[r]: row r's loss, +0 for an ignored row. */
SB_KERNEL sb_class_loss_rows(int logits, SB_LONG rows, SB_LONG C, SB_LONG inner, float eps,
                                SB_LONG ignore, int has_w, SB_GLOBAL const float *w, SB_LONG w0,
                                SB_GLOBAL const float *a, SB_LONG a0,
                                SB_GLOBAL const SB_LONG *targets, SB_LONG t0, SB_GLOBAL float *v,
                                SB_LONG v0) {
    SB_GLOBAL const float *wt = w + w0;
    SB_FOR_EACH(r, rows) {
        SB_LONG t = targets[t0 + r];
        SB_GLOBAL const float *x = a + a0 + (r / inner) * C * inner + r % inner;
        float out = 0.0f;
        if (t != ignore) {
            float w_t = sb_class_weight(has_w, wt, t);
            if (!logits) {
                out = w_t * -x[t * inner];
            } else {
                float m, s;
                sb_softmax_stats(x, C, inner, &m, &s);
                float ls = sb_logf(s);
                float nll = w_t * -((x[t * inner] - m) - ls);
                out = nll;
                if (eps != 0.0f) {
                    sb_acc acc;
                    sb_acc_init(&acc);
                    for (SB_LONG j = 0; j < C; j++)
                        sb_acc_add(&acc, sb_class_weight(has_w, wt, j) * ((x[j * inner] - m) - ls));
                    float smooth = -sb_acc_result(&acc);
                    out = (1.0f - eps) * nll + smooth * (eps / (float)C);
                }
            }
        }
        v[v0 + r] = out;
    }
}

/* MEAN's divisor (src/ref/loss.c's sb_ref_class_mean_divisor) on the
 * device, so that no target leaves it. With weights it is the canonical
 * sum, in row order, of v[r] = w[t_r] for a counted row and +0 for an
 * ignored one: this kernel writes the terms (a work-item per row), sum.cl
 * sums them. */
SB_KERNEL sb_class_mean_terms(SB_LONG rows, SB_LONG ignore, SB_GLOBAL const float *w, SB_LONG w0,
                              SB_GLOBAL const SB_LONG *targets, SB_LONG t0, SB_GLOBAL float *v,
                              SB_LONG v0) {
    SB_FOR_EACH(r, rows) {
        SB_LONG t = targets[t0 + r];
        v[v0 + r] = t != ignore ? w[w0 + t] : 0.0f;
    }
}

#define SB_CLASS_COUNT_LANES 32

/* Without weights it is (float) the number of counted rows: one group of
 * 32 work-items, lane l counting rows l, l + 32, ... (integer sums: any
 * order gives the one count), lane 0 adding the lanes' counts. */
SB_KERNEL sb_class_mean_count(SB_LONG rows, SB_LONG ignore, SB_GLOBAL const SB_LONG *targets,
                              SB_LONG t0, SB_GLOBAL float *divisor, SB_LONG d0) {
    SB_LOCAL_ARRAY(SB_LONG, counts, SB_CLASS_COUNT_LANES);
    const int lane = SB_LOCAL_ID();
    SB_LONG c = 0;
    for (SB_LONG r = lane; r < rows; r += SB_CLASS_COUNT_LANES) c += targets[t0 + r] != ignore;
    counts[lane] = c;
    SB_BARRIER();
    if (lane == 0) {
        SB_LONG total = 0;
        for (int j = 0; j < SB_CLASS_COUNT_LANES; j++) total += counts[j];
        divisor[d0] = (float)total;
    }
}

/* da: row r's gradient with upstream g = dloss[r] (none), dloss[0] /
 * divisor[0] (mean, the divisor in device memory) or dloss[0] (sum);
 * ignored rows +0. Cross-entropy:
 * (p_j * W - q_j) * g with q the weighted smoothed one-hot target and W
 * its sum (src/ref/loss.c's cross_entropy_grad_row); NLL: -g * w_t at the
 * target. */
SB_KERNEL sb_class_loss_grad(int logits, SB_LONG rows, SB_LONG C, SB_LONG inner, float eps,
                                SB_LONG ignore, int reduction, SB_GLOBAL const float *divisor,
                                SB_LONG dv0, int has_w,
                                SB_GLOBAL const float *w, SB_LONG w0, SB_GLOBAL const float *a,
                                SB_LONG a0, SB_GLOBAL const SB_LONG *targets, SB_LONG t0,
                                SB_GLOBAL const float *dloss, SB_LONG l0, SB_GLOBAL float *da,
                                SB_LONG da0) {
    SB_GLOBAL const float *wt = w + w0;
    SB_FOR_EACH(r, rows) {
        SB_LONG at = (r / inner) * C * inner + r % inner, t = targets[t0 + r];
        SB_GLOBAL const float *x = a + a0 + at;
        SB_GLOBAL float *dx = da + da0 + at;
        for (SB_LONG j = 0; j < C; j++) dx[j * inner] = 0.0f;
        if (t == ignore) continue;
        float g = reduction == 0 ? dloss[l0 + r] : reduction == 1 ? dloss[l0] / divisor[dv0] : dloss[l0];
        float w_t = sb_class_weight(has_w, wt, t);
        if (!logits) {
            dx[t * inner] = -g * w_t;
            continue;
        }
        float c = eps / (float)C;
        float q_t = eps == 0.0f ? w_t : (1.0f - eps) * w_t + c * w_t;
        float W = 1.0f;
        if (has_w && eps == 0.0f) W = w_t;
        if (has_w && eps != 0.0f) { /* S: the weights' canonical sum */
            sb_acc acc;
            sb_acc_init(&acc);
            for (SB_LONG j = 0; j < C; j++) sb_acc_add(&acc, wt[j]);
            W = (1.0f - eps) * w_t + c * sb_acc_result(&acc);
        }
        float m, s;
        sb_softmax_stats(x, C, inner, &m, &s);
        for (SB_LONG j = 0; j < C; j++) {
            float pj = sb_expf(x[j * inner] - m) / s;
            float q = j == t ? q_t : eps == 0.0f ? 0.0f : c * sb_class_weight(has_w, wt, j);
            dx[j * inner] = (pj * W - q) * g;
        }
    }
}
