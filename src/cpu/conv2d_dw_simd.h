/* The inner loops of the depthwise / small-group convolution
 * (src/cpu/conv2d_dw.c), written once over a vector type and included by
 * each ISA's file (conv2d_dw_scalar.c, conv2d_dw_avx2.c,
 * conv2d_dw_avx512.c), which first defines:
 *
 *   V             the vector type, VN lanes of float (VN = 1: plain float)
 *   SFX(name)     name with the level's suffix
 *   VLOAD(p)      unaligned load of VN floats
 *   VSTORE(p, v)  unaligned store of VN floats
 *   VSET1(x)      x in every lane
 *   VZERO()       +0.0f in every lane
 *   VFMA(a, b, c) a*b + c per lane, rounded once (the contract's fmaf)
 *   VADD(a, b)    a + b per lane (a bias: one IEEE addition)
 *   DW_U          vectors per block of the tap kernel (independent chains)
 *   DW_G          taps per register group of the weight-gradient kernel
 *                 (8, 12 or 24)
 *
 * Every lane of every vector is one element's chain, each step one fused
 * multiply-add in the chain's own order, so the level only changes how
 * many chains advance at once, never a bit. */

#if DW_G != 8 && DW_G != 12 && DW_G != 24
#error "DW_G must be 8, 12 or 24 (the cases of sb_dw_wgrad)"
#endif

#define DW_ALWAYS_INLINE inline __attribute__((always_inline))

/* out[q] = chain over t = 0..ntaps-1 of fmaf(p[off[t] + q], w[t], acc),
 * from +0.0f, for q in [0, nq) rounded up to whole vectors: out must hold
 * that many floats and p must be readable there (the caller's slack). */
void SFX(sb_dw_taps)(const float *p, const int64_t *off, const float *w, int64_t ntaps,
                     int64_t nq, float *out) {
    int64_t q = 0;
    for (; q + DW_U * VN <= nq; q += DW_U * VN) {
        V acc[DW_U];
        _Pragma("GCC unroll 16") for (int u = 0; u < DW_U; u++) acc[u] = VZERO();
        for (int64_t t = 0; t < ntaps; t++) {
            V wt = VSET1(w[t]);
            const float *src = p + off[t] + q;
            _Pragma("GCC unroll 16") for (int u = 0; u < DW_U; u++) acc[u] = VFMA(VLOAD(src + u * VN), wt, acc[u]);
        }
        _Pragma("GCC unroll 16") for (int u = 0; u < DW_U; u++) VSTORE(out + q + u * VN, acc[u]);
    }
    for (; q < nq; q += VN) {
        V acc = VZERO();
        for (int64_t t = 0; t < ntaps; t++) acc = VFMA(VLOAD(p + off[t] + q), VSET1(w[t]), acc);
        VSTORE(out + q, acc);
    }
}

/* The constant-count loops below are unrolled (the pragmas), so that the
 * accumulators live in registers rather than in an array on the stack. */

/* G taps of the weight gradient, their accumulators in registers for the
 * whole sample (G is a constant where this is inlined). */
static DW_ALWAYS_INLINE void SFX(dw_wgrad_group)(const float *dyt, const float *xt,
                                                 const int64_t *off, int64_t oh, int64_t ow,
                                                 int64_t rstep, int64_t sw, float *acc,
                                                 const int G) {
    V a[DW_G];
    int64_t o[DW_G];
    _Pragma("GCC unroll 24") for (int t = 0; t < G; t++) a[t] = VLOAD(acc + t * VN), o[t] = off[t];
    for (int64_t r = 0; r < oh; r++) {
        const float *d = dyt + r * ow * VN, *xr = xt + r * rstep * VN;
        for (int64_t s = 0; s < ow; s++, d += VN, xr += sw * VN) {
            V dv = VLOAD(d);
            _Pragma("GCC unroll 24") for (int t = 0; t < G; t++) a[t] = VFMA(dv, VLOAD(xr + o[t]), a[t]);
        }
    }
    _Pragma("GCC unroll 24") for (int t = 0; t < G; t++) VSTORE(acc + t * VN, a[t]);
}

/* One sample's terms of VN weight-gradient chains per tap, lanes
 * interleaved: for tap t and lane l, acc[t*VN + l] continues with
 * fmaf(dyt[(r*ow + s)*VN + l], xt[off[t] + (r*rstep + s*sw)*VN + l], acc)
 * over (r, s) lexicographic, (r, s) in [0, oh) x [0, ow). */
void SFX(sb_dw_wgrad)(const float *dyt, const float *xt, const int64_t *off, int64_t ntaps,
                      int64_t oh, int64_t ow, int64_t rstep, int64_t sw, float *acc) {
    /* Groups of equal size (49 taps on AVX2: 5 groups of 10, not 4 of 12
     * and a pass over the sample for the last one). */
    int64_t groups = (ntaps + DW_G - 1) / DW_G;
    int64_t size = groups > 0 ? (ntaps + groups - 1) / groups : 0;
    for (int64_t t = 0; t < ntaps; t += size) {
        int64_t k = ntaps - t < size ? ntaps - t : size;
        /* one fixed group size per case, so that each unrolls */
        switch (k) {
#define DW_CASE(n)                                                                             \
    case n: SFX(dw_wgrad_group)(dyt, xt, off + t, oh, ow, rstep, sw, acc + t * VN, n); break;
            DW_CASE(1) DW_CASE(2) DW_CASE(3) DW_CASE(4) DW_CASE(5) DW_CASE(6) DW_CASE(7) DW_CASE(8)
#if DW_G > 8
            DW_CASE(9) DW_CASE(10) DW_CASE(11) DW_CASE(12)
#endif
#if DW_G > 12
            DW_CASE(13) DW_CASE(14) DW_CASE(15) DW_CASE(16) DW_CASE(17) DW_CASE(18)
            DW_CASE(19) DW_CASE(20) DW_CASE(21) DW_CASE(22) DW_CASE(23) DW_CASE(24)
#endif
#undef DW_CASE
        default: break;
        }
    }
}

/* dst[p*VN + l] = src[l][p] for p < count and every lane l whose src[l] is
 * not NULL (the others are left as they are): a block of channels
 * interleaved for sb_dw_wgrad. Copies only. A level may define
 * DW_INTERLEAVE_BLOCK(src, p, dst) to move a VN x VN block at once. */
void SFX(sb_dw_interleave)(const float *const *src, int64_t count, float *dst) {
    bool full = true;
    for (int l = 0; l < VN; l++) full = full && src[l] != NULL;
    int64_t p = 0;
#ifdef DW_INTERLEAVE_BLOCK
    if (full)
        for (; p + VN <= count; p += VN) DW_INTERLEAVE_BLOCK(src, p, dst + p * VN);
#endif
    for (int l = 0; l < VN; l++)
        if (src[l])
            for (int64_t q = p; q < count; q++) dst[q * VN + l] = src[l][q];
}

/* The channel-lane forward of small planes (pure depthwise): xt is a block
 * of VN channels' zero-padded planes interleaved (position p's lanes at
 * p*VN), wt their weights interleaved (tap t's lanes at t*VN), and
 *   yt[(r*ow + s)*VN + l] = chain over t of
 *                           fmaf(xt[off[t] + (r*rstep + s*sw)*VN + l], wt[t*VN + l])
 * (+ bias[l], one addition, when bias is not NULL). Two positions advance
 * together, each lane its own chain. */
void SFX(sb_dw_lanes_fwd)(const float *xt, const float *wt, const int64_t *off, int64_t ntaps,
                          int64_t oh, int64_t ow, int64_t rstep, int64_t sw, const float *bias,
                          float *yt) {
    int64_t npos = oh * ow, p = 0;
    for (; p + 2 <= npos; p += 2) {
        const float *x0 = xt + (p / ow * rstep + p % ow * sw) * VN;
        const float *x1 = xt + ((p + 1) / ow * rstep + (p + 1) % ow * sw) * VN;
        V a0 = VZERO(), a1 = VZERO();
        for (int64_t t = 0; t < ntaps; t++) {
            V w = VLOAD(wt + t * VN);
            a0 = VFMA(VLOAD(x0 + off[t]), w, a0);
            a1 = VFMA(VLOAD(x1 + off[t]), w, a1);
        }
        if (bias) a0 = VADD(a0, VLOAD(bias)), a1 = VADD(a1, VLOAD(bias));
        VSTORE(yt + p * VN, a0);
        VSTORE(yt + (p + 1) * VN, a1);
    }
    for (; p < npos; p++) {
        const float *x0 = xt + (p / ow * rstep + p % ow * sw) * VN;
        V a0 = VZERO();
        for (int64_t t = 0; t < ntaps; t++) a0 = VFMA(VLOAD(x0 + off[t]), VLOAD(wt + t * VN), a0);
        if (bias) a0 = VADD(a0, VLOAD(bias));
        VSTORE(yt + p * VN, a0);
    }
}

/* The channel-lane input gradient of small planes (pure depthwise): dyt and
 * wt interleaved as above, and for every input (ih, iw)
 *   dxt[(ih*w + iw)*VN + l] = chain over the taps (i, j) that read it, i
 *                             then j ascending, of
 *                             fmaf(dyt[(r*ow + s)*VN + l], wt[(i*kw + j)*VN + l])
 * with r, s the reading output (the contract's rule; no term for the
 * others, +0.0f when none reads it). */
void SFX(sb_dw_lanes_dx)(const sb_conv2d_geom *g, const float *dyt, const float *wt,
                         float *dxt) {
    int64_t ti[64], tr[64], tj[64], ts[64];
    for (int64_t ih = 0; ih < g->h; ih++) {
        int ni = 0;
        for (int64_t i = 0; i < g->kh && i < 64; i++) {
            int64_t d = ih + g->pad_h - i * g->dilation_h;
            if (d >= 0 && d % g->stride_h == 0 && d / g->stride_h < g->oh)
                ti[ni] = i, tr[ni++] = d / g->stride_h;
        }
        for (int64_t iw = 0; iw < g->w; iw++) {
            int nj = 0;
            for (int64_t j = 0; j < g->kw && j < 64; j++) {
                int64_t d = iw + g->pad_w - j * g->dilation_w;
                if (d >= 0 && d % g->stride_w == 0 && d / g->stride_w < g->ow)
                    tj[nj] = j, ts[nj++] = d / g->stride_w;
            }
            V acc = VZERO();
            for (int a = 0; a < ni; a++)
                for (int b = 0; b < nj; b++)
                    acc = VFMA(VLOAD(dyt + (tr[a] * g->ow + ts[b]) * VN),
                               VLOAD(wt + (ti[a] * g->kw + tj[b]) * VN), acc);
            VSTORE(dxt + (ih * g->w + iw) * VN, acc);
        }
    }
}

/* dst[l][p] = src[p*VN + l] for p < count and every lane whose dst[l] is
 * not NULL: sb_dw_interleave's inverse. Copies only. A level may define
 * DW_DEINTERLEAVE_BLOCK(src, dst, p) to move a VN x VN block at once. */
void SFX(sb_dw_deinterleave)(const float *src, int64_t count, float *const *dst) {
    bool full = true;
    for (int l = 0; l < VN; l++) full = full && dst[l] != NULL;
    int64_t p = 0;
#ifdef DW_DEINTERLEAVE_BLOCK
    if (full)
        for (; p + VN <= count; p += VN) DW_DEINTERLEAVE_BLOCK(src + p * VN, dst, p);
#endif
    for (int l = 0; l < VN; l++)
        if (dst[l])
            for (int64_t q = p; q < count; q++) dst[l][q] = src[q * VN + l];
}
