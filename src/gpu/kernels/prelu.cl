/* src/gpu/kernels/prelu.cl - PReLU forward and backward (contract section
 * 9, "PReLU"; src/ref/prelu.c), in the portable dialect. The norm program
 * embeds sum_acc.cl and src/ref/prelu_terms.h (the per-element rules every
 * implementation shares) before this file.
 *
 * x, y, dy, dx are (outer, c, inner), w and dw (c). The forward and dx are
 * one work-item per element; dweight is one work-item per channel running
 * the canonical sum over the channel's positions in row-major order, the
 * reference's loop. The host launches dweight before dx, so dx may be dy. */

// y (outer, c, inner)
SB_KERNEL sb_prelu_forward(SB_LONG outer, SB_LONG c, SB_LONG inner, SB_GLOBAL const float *x,
                           SB_LONG x0, SB_GLOBAL const float *w, SB_LONG w0, SB_GLOBAL float *y,
                           SB_LONG y0) {
    SB_FOR_EACH(e, outer * c * inner) y[y0 + e] = sb_prelu_y(x[x0 + e], w[w0 + (e / inner) % c]);
}

// dx (outer, c, inner)
SB_KERNEL sb_prelu_backward_dx(SB_LONG outer, SB_LONG c, SB_LONG inner, SB_GLOBAL const float *x,
                               SB_LONG x0, SB_GLOBAL const float *w, SB_LONG w0,
                               SB_GLOBAL const float *dy, SB_LONG dy0, SB_GLOBAL float *dx,
                               SB_LONG dx0) {
    SB_FOR_EACH(e, outer * c * inner)
    dx[dx0 + e] = sb_prelu_dx(x[x0 + e], w[w0 + (e / inner) % c], dy[dy0 + e]);
}

// dw (c): one canonical sum per channel
SB_KERNEL sb_prelu_backward_dw(SB_LONG outer, SB_LONG c, SB_LONG inner, SB_GLOBAL const float *x,
                               SB_LONG x0, SB_GLOBAL const float *dy, SB_LONG dy0,
                               SB_GLOBAL float *dw, SB_LONG dw0) {
    SB_FOR_EACH(ch, c) {
        sb_acc acc;
        sb_acc_init(&acc);
        for (SB_LONG o = 0; o < outer; o++) {
            const SB_LONG base = (o * c + ch) * inner;
            for (SB_LONG j = 0; j < inner; j++)
                sb_acc_add(&acc, sb_prelu_dw_term(x[x0 + base + j], dy[dy0 + base + j]));
        }
        dw[dw0 + ch] = sb_acc_result(&acc);
    }
}
