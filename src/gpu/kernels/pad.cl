/* src/gpu/kernels/pad.cl - 2-D padding, forward and backward (contract
 * section 8, "Padding"; src/ref/pad2d.c), in the portable dialect. The
 * program text includes sum_acc.cl and src/ref/pad_geometry.h (the index
 * map every implementation shares) before this file.
 *
 * Geometry (SB_PAD_GEOM longs): planes, h, w, oh, ow, top, left, mode.
 * The forward is one work-item per output element copying its input's bits
 * (or the constant); the backward one work-item per input element summing,
 * with the canonical sum, the gradients of the outputs that copied it in
 * (r, s) order: a gather, so no order depends on which work-item runs. */

#define SB_PAD_GEOM 8

// y (planes, oh, ow)
SB_KERNEL sb_pad2d_forward(SB_GLOBAL const SB_LONG *g, float value, SB_GLOBAL const float *x,
                           SB_LONG x0, SB_GLOBAL float *y, SB_LONG y0) {
    const SB_LONG H = g[1], W = g[2], OH = g[3], OW = g[4];
    const int mode = (int)g[7];
    SB_FOR_EACH(e, g[0] * OH * OW) {
        SB_LONG s = e % OW, r = (e / OW) % OH, p = e / (OW * OH);
        SB_LONG h = sb_pad_source(mode, r, H, g[5]), w = sb_pad_source(mode, s, W, g[6]);
        y[y0 + e] = h < 0 || w < 0 ? value : x[x0 + (p * H + h) * W + w];
    }
}

// dx (planes, h, w)
SB_KERNEL sb_pad2d_backward(SB_GLOBAL const SB_LONG *g, SB_GLOBAL const float *dy, SB_LONG dy0,
                            SB_GLOBAL float *dx, SB_LONG dx0) {
    const SB_LONG H = g[1], W = g[2], OH = g[3], OW = g[4];
    const int mode = (int)g[7];
    SB_FOR_EACH(e, g[0] * H * W) {
        SB_LONG w = e % W, h = (e / W) % H, p = e / (W * H);
        int64_t rlo[3], rhi[3], slo[3], shi[3];
        int nr = sb_pad_copies(mode, h, H, g[5], OH, rlo, rhi);
        int ns = sb_pad_copies(mode, w, W, g[6], OW, slo, shi);
        sb_acc acc;
        sb_acc_init(&acc);
        for (int a = 0; a < nr; a++)
            for (SB_LONG r = rlo[a]; r < rhi[a]; r++)
                for (int b = 0; b < ns; b++)
                    for (SB_LONG s = slo[b]; s < shi[b]; s++)
                        sb_acc_add(&acc, dy[dy0 + (p * OH + r) * OW + s]);
        dx[dx0 + e] = sb_acc_result(&acc);
    }
}
