/* src/gpu/kernels/conv.cl - conv2d's input gradient and 2-D pooling,
 * forward and backward (contract sections 7 and 8), in the portable
 * dialect; the program text includes sum_acc.cl and src/ref/pool_geometry.h before
 * this file. conv2d's
 * forward and weight gradient are GEMM chains (gemm.cl, SB_GEMM_MODE 1, 2).
 *
 * One work-item per output element (grid-stride); each computes the
 * reference's loop for that element (src/ref/conv2d.c, src/ref/pool2d.c):
 * the backward passes gather in window order, so nothing depends on which
 * work-item runs first.
 *
 * Conv geometry (SB_CONV_GEOM longs): n, c_in, h, w, c_out, kh, kw, oh, ow,
 * stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups.
 * Pool geometry (SB_POOL_GEOM longs): planes, h, w, oh, ow, kh, kw,
 * stride_h, stride_w, pad_h, pad_w, count_include_pad, adaptive (windows
 * of different sizes), dil_h, dil_w, divisor (divisor_override, 0: none);
 * the windows are src/ref/pool_geometry.h's, which the program embeds
 * before this file. */

#define SB_CONV_GEOM 16
#define SB_POOL_GEOM 16

/* The output index o with o*stride - pad + tap*dilation == pos, or -1. */
SB_INLINE SB_LONG sb_conv_reader(SB_LONG pos, SB_LONG tap, SB_LONG stride, SB_LONG pad, SB_LONG dil,
                                SB_LONG out_size) {
    SB_LONG t = pos + pad - tap * dil;
    if (t < 0 || t % stride != 0 || t / stride >= out_size) return -1;
    return t / stride;
}

// dx (n, c_in, h, w): chain over (o, i, j) of the taps that read the input
SB_KERNEL sb_conv_backward_input(SB_GLOBAL const SB_LONG *g, SB_GLOBAL const float *dy, SB_LONG dy0,
                                 SB_GLOBAL const float *w, SB_LONG w0, SB_GLOBAL float *dx,
                                 SB_LONG dx0) {
    const SB_LONG H = g[2], W = g[3], C = g[1], CO = g[4], KH = g[5], KW = g[6], OH = g[7],
                 OW = g[8], G = g[15];
    const SB_LONG icg = C / G, ocg = CO / G, total = g[0] * C * H * W;
    SB_FOR_EACH(e, total) {
        SB_LONG iw = e % W, ih = (e / W) % H, ch = (e / (W * H)) % C, n = e / (W * H * C);
        SB_LONG oc0 = (ch / icg) * ocg, c = ch % icg;
        float acc = 0.0f;
        for (SB_LONG o = 0; o < ocg; o++)
            for (SB_LONG i = 0; i < KH; i++) {
                SB_LONG r = sb_conv_reader(ih, i, g[9], g[11], g[13], OH);
                if (r < 0) continue;
                for (SB_LONG j = 0; j < KW; j++) {
                    SB_LONG s = sb_conv_reader(iw, j, g[10], g[12], g[14], OW);
                    if (s < 0) continue;
                    float d = dy[dy0 + ((n * CO + oc0 + o) * OH + r) * OW + s];
                    acc = SB_FMA(d, w[w0 + (((oc0 + o) * icg + c) * KH + i) * KW + j], acc);
                }
            }
        dx[dx0 + e] = acc;
    }
}

/* Pool geometry g (SB_POOL_GEOM longs): planes, h, w, oh, ow, kh, kw,
 * stride_h, stride_w, pad_h, pad_w, count_include_pad, adaptive, dil_h,
 * dil_w, divisor; its axes as src/ref/pool_geometry.h's windows. */
SB_INLINE sb_pool_axis sb_pool_rows_of(SB_GLOBAL const SB_LONG *g) {
    sb_pool_axis a = {g[1], g[3], g[5], g[7], g[9], g[13], g[12] != 0};
    return a;
}
SB_INLINE sb_pool_axis sb_pool_cols_of(SB_GLOBAL const SB_LONG *g) {
    sb_pool_axis a = {g[2], g[4], g[6], g[8], g[10], g[14], g[12] != 0};
    return a;
}

// y, indices (planes, oh, ow): the first NaN, else the first strict maximum
SB_KERNEL sb_max_pool_forward(SB_GLOBAL const SB_LONG *g, SB_GLOBAL const float *x, SB_LONG x0,
                              SB_GLOBAL float *y, SB_LONG y0, SB_GLOBAL SB_LONG *idx, SB_LONG i0,
                              int has_idx) {
    const SB_LONG H = g[1], W = g[2], OH = g[3], OW = g[4], total = g[0] * OH * OW;
    SB_FOR_EACH(q, total) {
        SB_LONG s = q % OW, r = (q / OW) % OH, p = q / (OW * OH);
        sb_pool_axis rows = sb_pool_rows_of(g), cols = sb_pool_cols_of(g);
        int64_t h0, h1, w0, w1, dh = sb_pool_step(&rows), dw = sb_pool_step(&cols);
        sb_pool_window(&rows, r, &h0, &h1);
        sb_pool_window(&cols, s, &w0, &w1);
        SB_GLOBAL const float *xp = x + x0 + p * H * W;
        SB_LONG best = h0 * W + w0;
        for (SB_LONG ih = h0; ih < h1; ih += dh)
            for (SB_LONG iw = w0; iw < w1; iw += dw) {
                float v = xp[ih * W + iw], b = xp[best];
                if (!SB_ISNAN(b) && (SB_ISNAN(v) || v > b)) best = ih * W + iw;
            }
        y[y0 + q] = xp[best];
        if (has_idx) idx[i0 + q] = best;
    }
}

// dx (planes, h, w): canonical sum, in window order, of the dy whose index
// names this element
SB_KERNEL sb_max_pool_backward(SB_GLOBAL const SB_LONG *g, SB_GLOBAL const float *dy, SB_LONG dy0,
                               SB_GLOBAL const SB_LONG *idx, SB_LONG i0, SB_GLOBAL float *dx,
                               SB_LONG dx0) {
    const SB_LONG H = g[1], W = g[2], OH = g[3], OW = g[4], total = g[0] * H * W;
    SB_FOR_EACH(e, total) {
        SB_LONG me = e % (H * W), p = e / (H * W);
        sb_pool_axis rows = sb_pool_rows_of(g), cols = sb_pool_cols_of(g);
        int64_t r0, r1, s0, s1;
        sb_pool_windows_of(&rows, me / W, &r0, &r1);
        sb_pool_windows_of(&cols, me % W, &s0, &s1);
        sb_acc acc;
        sb_acc_init(&acc);
        for (SB_LONG r = r0; r < r1; r++)
            for (SB_LONG s = s0; s < s1; s++)
                if (idx[i0 + (p * OH + r) * OW + s] == me) sb_acc_add(&acc, dy[dy0 + (p * OH + r) * OW + s]);
        dx[dx0 + e] = sb_acc_result(&acc);
    }
}

SB_KERNEL sb_avg_pool_forward(SB_GLOBAL const SB_LONG *g, SB_GLOBAL const float *x, SB_LONG x0,
                              SB_GLOBAL float *y, SB_LONG y0) {
    const SB_LONG H = g[1], W = g[2], OH = g[3], OW = g[4], total = g[0] * OH * OW;
    SB_FOR_EACH(q, total) {
        SB_LONG s = q % OW, r = (q / OW) % OH, p = q / (OW * OH);
        sb_pool_axis rows = sb_pool_rows_of(g), cols = sb_pool_cols_of(g);
        int64_t h0, h1, w0, w1;
        sb_pool_window(&rows, r, &h0, &h1);
        sb_pool_window(&cols, s, &w0, &w1);
        sb_acc acc;
        sb_acc_init(&acc);
        for (SB_LONG ih = h0; ih < h1; ih++)
            for (SB_LONG iw = w0; iw < w1; iw++) sb_acc_add(&acc, x[x0 + p * H * W + ih * W + iw]);
        y[y0 + q] = sb_acc_result(&acc) / sb_pool_divisor(&rows, &cols, g[11] != 0, g[15], r, s);
    }
}

SB_KERNEL sb_avg_pool_backward(SB_GLOBAL const SB_LONG *g, SB_GLOBAL const float *dy, SB_LONG dy0,
                               SB_GLOBAL float *dx, SB_LONG dx0) {
    const SB_LONG H = g[1], W = g[2], OH = g[3], OW = g[4], total = g[0] * H * W;
    SB_FOR_EACH(e, total) {
        SB_LONG me = e % (H * W), p = e / (H * W);
        sb_pool_axis rows = sb_pool_rows_of(g), cols = sb_pool_cols_of(g);
        int64_t r0, r1, s0, s1;
        sb_pool_windows_of(&rows, me / W, &r0, &r1);
        sb_pool_windows_of(&cols, me % W, &s0, &s1);
        sb_acc acc;
        sb_acc_init(&acc);
        for (SB_LONG r = r0; r < r1; r++)
            for (SB_LONG s = s0; s < s1; s++)
                sb_acc_add(&acc, dy[dy0 + (p * OH + r) * OW + s] /
                                     sb_pool_divisor(&rows, &cols, g[11] != 0, g[15], r, s));
        dx[dx0 + e] = sb_acc_result(&acc);
    }
}
