/* src/gpu/kernels/softmax.cl - softmax and log-softmax forward and
 * backward (contract section 11, src/ref/softmax.c), in the portable
 * dialect; class_loss.cl's cross-entropy and NLL rows use its row scan. The
 * program text includes src/math's functions, sum_acc.cl and math.cl
 * before this file. One work-item per row: it scans the row in the
 * reference's order (maximum, then the canonical sum through sb_acc), so a
 * row's bits depend only on the row. Rows of softmax are (outer, inner)
 * pairs: elements base + j*inner, base = o*n*inner + k. */

/* The row's maximum (a NaN anywhere wins) and the canonical sum of
 * expf(x_j - m). */
SB_INLINE void sb_softmax_stats(SB_GLOBAL const float *x, SB_LONG n, SB_LONG stride, float *m_out,
                                float *s_out) {
    float m = n > 0 ? x[0] : SB_AS_F32(0xff800000u);
    for (SB_LONG j = 1; j < n; j++) {
        float v = x[j * stride];
        if (SB_ISNAN(v) || v > m) m = SB_ISNAN(m) ? m : v;
    }
    sb_acc acc;
    sb_acc_init(&acc);
    for (SB_LONG j = 0; j < n; j++) sb_acc_add(&acc, sb_expf(x[j * stride] - m));
    *m_out = m;
    *s_out = sb_acc_result(&acc);
}

SB_KERNEL sb_softmax_forward(int log, SB_LONG outer, SB_LONG n, SB_LONG inner,
                             SB_GLOBAL const float *x, SB_LONG x0, SB_GLOBAL float *y, SB_LONG y0) {
    SB_FOR_EACH(r, outer * inner) {
        SB_LONG base = (r / inner) * n * inner + r % inner;
        SB_GLOBAL const float *xr = x + x0 + base;
        SB_GLOBAL float *yr = y + y0 + base;
        float m, s;
        sb_softmax_stats(xr, n, inner, &m, &s);
        if (log) {
            float ls = sb_logf(s);
            for (SB_LONG j = 0; j < n; j++) yr[j * inner] = (xr[j * inner] - m) - ls;
        } else {
            for (SB_LONG j = 0; j < n; j++) yr[j * inner] = sb_expf(xr[j * inner] - m) / s;
        }
    }
}

// softmax: dx_j = y_j * (dy_j - sum_k dy_k y_k); log-softmax:
// dx_j = dy_j - expf(y_j) * sum_k dy_k
SB_KERNEL sb_softmax_backward(int log, SB_LONG outer, SB_LONG n, SB_LONG inner,
                              SB_GLOBAL const float *y, SB_LONG y0, SB_GLOBAL const float *dy,
                              SB_LONG dy0, SB_GLOBAL float *dx, SB_LONG dx0) {
    SB_FOR_EACH(r, outer * inner) {
        SB_LONG base = (r / inner) * n * inner + r % inner;
        SB_GLOBAL const float *yr = y + y0 + base;
        SB_GLOBAL const float *dyr = dy + dy0 + base;
        SB_GLOBAL float *dxr = dx + dx0 + base;
        sb_acc acc;
        sb_acc_init(&acc);
        for (SB_LONG j = 0; j < n; j++)
            sb_acc_add(&acc, log ? dyr[j * inner] : dyr[j * inner] * yr[j * inner]);
        float t = sb_acc_result(&acc);
        for (SB_LONG j = 0; j < n; j++)
            dxr[j * inner] = log ? dyr[j * inner] - sb_expf(yr[j * inner]) * t
                                 : yr[j * inner] * (dyr[j * inner] - t);
    }
}
