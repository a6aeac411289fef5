/* Depthwise and small-group conv2d (src/cpu/conv_internal.h): groups > 1
 * with at most SB_DW_ICG_MAX input channels per group - MobileNet's and
 * ConvNeXt's depthwise 3x3 / 5x5 / 7x7, depthwise multipliers
 * (c_out = m * c_in), ResNeXt-style groups of a few channels. As a GEMM per
 * group these have k = icg*kh*kw (9 or 49 for depthwise) and a handful of
 * rows: all packing and edges. Here each output element's chain runs
 * directly over its taps, a vector of neighbouring elements at a time, each
 * lane one element's chain in exactly the contract's order
 * (docs/CONTRACT.md, "conv2d"; src/ref/conv2d.c is the reference):
 *
 * Forward, y[n][o][r][s]: chain over (c, i, j). The group's input planes
 *   are copied zero-padded and split into stride phases (rows a + sh*u,
 *   columns b + sw*v of the padded plane): tap (c, i, j) of output (r, s)
 *   then sits at a fixed offset from the output's flat position
 *   q = r*wq + s, whatever the stride, so one vector of q reads one vector of
 *   inputs per tap (dw_taps). Padded taps read +0.0f: terms, as the contract
 *   says. Positions q with s >= ow are computed and discarded.
 * Input gradient, dx[n][c][h][w]: inputs fall into stride phases, and the
 *   taps that read a phase are fixed (phase_taps), each at a fixed offset
 *   into dy: chain over (o, i, j) with i, j the phase's taps ascending,
 *   which is the contract's chain except for taps whose dy position lies
 *   outside dy - those contribute no term in the contract. They read a
 *   margin around dy instead, holding a zero whose sign is the opposite of
 *   the weight's: the product is then exactly -0 and fmaf(z, w, acc) = acc
 *   for every acc (+0 + -0 = +0, -0 + -0 = -0, inf and NaN unchanged), so
 *   the term changes nothing. Two copies of dy with the two margins serve
 *   positive and negative weights. An inf or NaN weight breaks this
 *   (0 * inf = NaN): such calls go back to the GEMM path.
 * Weight gradient, dw[o][c][i][j]: chain over (n, r, s), which no vector
 *   can split; the lanes are output channels instead. Per sample, dy planes
 *   and the zero-padded x planes of `lanes` channels are interleaved (lane
 *   l of position p at p*lanes + l), and each tap's lanes advance over
 *   (r, s) with one load of dy and one of x per step (dw_wgrad); samples
 *   follow in order with the accumulators kept, so the chain is never cut.
 *   Padded positions are +0.0f terms, as in the contract.
 *
 * Threads: forward and input gradient split (sample, group) pairs, the
 * weight gradient blocks of `lanes` output channels; each element's chain
 * is computed whole by one thread, so the thread count changes nothing. */
#include <math.h>
#include <string.h>
#include "cpu/conv_internal.h"
#include "cpu/cpu.h"
#include "cpu/kernels.h"

/* Taps one chain list holds on the stack (icg*kh*kw and ocg*kh*kw above
 * it take the GEMM path). */
#define DW_TAPS_MAX 512
/* Floats past a buffer's last plane that a vector tail may read. */
#define DW_SLACK 64
/* The widest vector's lanes (AVX-512). */
#define DW_LANES_MAX 16

static bool dw_takes(const sb_conv2d_geom *g) {
    if (g->groups < 2 || g->n == 0 || g->c_in == 0 || g->c_out == 0 || g->oh * g->ow == 0 ||
        g->h * g->w == 0 || g->kh * g->kw == 0)
        return false;
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups, kk = g->kh * g->kw;
    return icg <= SB_DW_ICG_MAX && icg * kk <= DW_TAPS_MAX && ocg * kk <= DW_TAPS_MAX;
}

static int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/* ---- small planes: channels as lanes (pure depthwise) ----
 * At a few pixels per plane the flat positions of one channel fill a
 * vector or two, and the per-channel work (planes, tap lists, copies)
 * outweighs the arithmetic. For groups of one channel in and one out, the
 * lanes are channels instead: a block of `lanes` channels is interleaved
 * (position p's lanes at p*lanes), each lane's chain runs over the taps at
 * one position (forward: every tap, padded ones reading +0.0f; input
 * gradient: only the taps that read the input, listed per position, the
 * same for every lane), and the result is de-interleaved. */

/* Positions (outputs for the forward, inputs for the input gradient) at or
 * below which a plane takes the lanes path: 7x7 and smaller (at 8x8 a 3x3
 * runs faster flat, at 7x7 a 7x7 input gradient twice as fast in lanes). */
#define DW_LANES_POSITIONS 49

static bool lanes_takes(const sb_conv2d_geom *g, const sb_cpu_kernels *k, int64_t positions) {
    return k->dw_lanes > 1 && g->c_in == g->groups && g->c_out == g->groups && g->kh <= 64 &&
           g->kw <= 64 && positions <= DW_LANES_POSITIONS;
}

typedef struct {
    const sb_conv2d_geom *g;
    const float *x, *w, *bias; /* forward: x; input gradient: dy (in x) */
    float *y;                  /* forward: y; input gradient: dx */
    const sb_cpu_kernels *k;
    int64_t lanes, blocks;
    int64_t hp, wp;           /* forward: the zero-padded x plane */
    int64_t off[DW_TAPS_MAX]; /* forward: tap (i, j) at (i*dh*wp + j*dw) * lanes */
} lanes_ctx;

/* The block's weights, tap t's lanes at wt[t*lanes]; lanes past nl +0. */
static void lanes_weights(const lanes_ctx *t, int64_t oc0, int64_t nl, float *wt) {
    int64_t kk = t->g->kh * t->g->kw, L = t->lanes;
    for (int64_t q = 0; q < kk; q++)
        for (int64_t l = 0; l < L; l++) wt[q * L + l] = l < nl ? t->w[(oc0 + l) * kk + q] : 0.0f;
}

/* Tasks (channel block, sample), block-major so that a range of them
 * gathers each block's weights once; `fwd` picks the pass. */
static void lanes_run(const lanes_ctx *t, int64_t t0, int64_t t1, bool fwd) {
    const sb_conv2d_geom *g = t->g;
    int64_t L = t->lanes, kk = g->kh * g->kw, ohw = g->oh * g->ow, hw = g->h * g->w;
    int64_t in_floats = (fwd ? t->hp * t->wp : ohw) * L, out_floats = (fwd ? ohw : hw) * L;
    float *in = sb_scratch(SB_SCRATCH_CONV, (size_t)(in_floats + out_floats) * sizeof *in);
    float *wt = sb_scratch(SB_SCRATCH_CONV_AUX, (size_t)(kk + 1) * L * sizeof *wt);
    if (!in || !wt) {
        for (int64_t task = t0; task < t1; task++) {
            int64_t n = task % g->n, oc0 = task / g->n * L;
            int64_t nl = g->c_out - oc0 < L ? g->c_out - oc0 : L;
            sb_conv2d_geom s = *g;
            s.n = 1, s.c_in = s.c_out = s.groups = nl;
            if (fwd)
                sb_ref_conv2d_forward(&s, t->x + (n * g->c_in + oc0) * hw, t->w + oc0 * kk,
                                      t->bias ? t->bias + oc0 : NULL, t->y + (n * g->c_out + oc0) * ohw);
            else
                sb_ref_conv2d_backward_input(&s, t->x + (n * g->c_out + oc0) * ohw, t->w + oc0 * kk,
                                             t->y + (n * g->c_in + oc0) * hw);
        }
        return;
    }
    float *out = in + in_floats, *bias = wt + kk * L;
    /* the padding, and lanes no block uses, stay +0.0f */
    memset(in, 0, (size_t)(in_floats + out_floats) * sizeof *in);
    const float *src[DW_LANES_MAX];
    float *dst[DW_LANES_MAX];
    int64_t weights_of = -1; /* the block whose weights wt holds */
    for (int64_t task = t0; task < t1; task++) {
        int64_t n = task % g->n, oc0 = task / g->n * L;
        int64_t nl = g->c_out - oc0 < L ? g->c_out - oc0 : L;
        if (oc0 != weights_of) {
            lanes_weights(t, oc0, nl, wt);
            if (fwd && t->bias)
                for (int64_t l = 0; l < L; l++) bias[l] = l < nl ? t->bias[oc0 + l] : 0.0f;
            weights_of = oc0;
        }
        if (fwd) {
            for (int64_t ih = 0; ih < g->h; ih++) {
                for (int64_t l = 0; l < L; l++)
                    src[l] = l < nl ? t->x + ((n * g->c_in + oc0 + l) * g->h + ih) * g->w : NULL;
                t->k->dw_interleave(src, g->w, in + ((ih + g->pad_h) * t->wp + g->pad_w) * L);
            }
            t->k->dw_lanes_fwd(in, wt, t->off, kk, g->oh, g->ow, g->stride_h * t->wp,
                               g->stride_w, t->bias ? bias : NULL, out);
            for (int64_t l = 0; l < L; l++)
                dst[l] = l < nl ? t->y + (n * g->c_out + oc0 + l) * ohw : NULL;
            t->k->dw_deinterleave(out, ohw, dst);
        } else {
            for (int64_t l = 0; l < L; l++)
                src[l] = l < nl ? t->x + (n * g->c_out + oc0 + l) * ohw : NULL;
            t->k->dw_interleave(src, ohw, in);
            t->k->dw_lanes_dx(g, in, wt, out);
            for (int64_t l = 0; l < L; l++)
                dst[l] = l < nl ? t->y + (n * g->c_in + oc0 + l) * hw : NULL;
            t->k->dw_deinterleave(out, hw, dst);
        }
    }
}

static void lanes_fwd_range(void *vctx, int64_t t0, int64_t t1) { lanes_run(vctx, t0, t1, true); }
static void lanes_dx_range(void *vctx, int64_t t0, int64_t t1) { lanes_run(vctx, t0, t1, false); }

static void lanes_start(lanes_ctx *t, const sb_conv2d_geom *g, const float *in, const float *w,
                        const float *bias, float *out, const sb_cpu_kernels *k) {
    *t = (lanes_ctx){.g = g, .x = in, .w = w, .bias = bias, .y = out, .k = k, .lanes = k->dw_lanes};
    t->blocks = (g->c_out + t->lanes - 1) / t->lanes;
    t->hp = g->h + 2 * g->pad_h, t->wp = g->w + 2 * g->pad_w;
    for (int64_t i = 0; i < g->kh; i++)
        for (int64_t j = 0; j < g->kw; j++)
            t->off[i * g->kw + j] = (i * g->dilation_h * t->wp + j * g->dilation_w) * t->lanes;
}

/* ---- forward ---- */

typedef struct {
    const sb_conv2d_geom *g;
    const float *x, *w, *bias;
    float *y;
    const sb_cpu_kernels *k;
    int64_t hq, wq;  /* a phase plane: rows, columns */
    int64_t chan;    /* floats per input channel: its sh*sw phase planes */
    int64_t nq;      /* flat positions computed, (oh-1)*wq + ow */
    int64_t off[DW_TAPS_MAX]; /* tap (c, i, j): offset in the group's planes */
} fwd_ctx;

/* The phase planes of one input channel xc (h, w): zero, then each input
 * row's elements at their padded position (pr, pc) = (ih + pad_h,
 * iw + pad_w), which lives in phase (pr mod sh, pc mod sw) at row pr / sh,
 * column pc / sw. */
static void phase_fill(const sb_conv2d_geom *g, const fwd_ctx *t, const float *xc, float *pc_) {
    int64_t sh = g->stride_h, sw = g->stride_w, plane = t->hq * t->wq;
    memset(pc_, 0, (size_t)t->chan * sizeof *pc_);
    for (int64_t ih = 0; ih < g->h; ih++) {
        int64_t pr = ih + g->pad_h;
        float *rows = pc_ + (pr % sh) * sw * plane + (pr / sh) * t->wq;
        const float *src = xc + ih * g->w;
        if (sw == 1) {
            memcpy(rows + g->pad_w, src, (size_t)g->w * sizeof *rows);
            continue;
        }
        /* column phase b holds padded columns b + sw*v, i.e. iw = b + sw*v - pad_w */
        for (int64_t b = 0; b < sw; b++) {
            int64_t v = g->pad_w > b ? (g->pad_w - b + sw - 1) / sw : 0;
            float *dst = rows + b * plane;
            for (int64_t iw = b + sw * v - g->pad_w; iw < g->w; iw += sw, v++) dst[v] = src[iw];
        }
    }
}

static void fwd_range(void *vctx, int64_t t0, int64_t t1) {
    const fwd_ctx *t = vctx;
    const sb_conv2d_geom *g = t->g;
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups, kdim = icg * g->kh * g->kw;
    int64_t pfloats = icg * t->chan + DW_SLACK, ofloats = round_up(t->nq, 16);
    float *p = sb_scratch(SB_SCRATCH_CONV, (size_t)pfloats * sizeof *p);
    float *out = sb_scratch(SB_SCRATCH_CONV_AUX, (size_t)ofloats * sizeof *out);
    if (!p || !out) {
        for (int64_t task = t0; task < t1; task++) {
            /* one sample and group through the reference chains */
            sb_conv2d_geom s = *g;
            int64_t n = task / g->groups, grp = task % g->groups;
            s.n = 1, s.groups = 1, s.c_in = icg, s.c_out = ocg;
            sb_ref_conv2d_forward(&s, t->x + (n * g->c_in + grp * icg) * g->h * g->w,
                                  t->w + grp * ocg * kdim, t->bias ? t->bias + grp * ocg : NULL,
                                  t->y + (n * g->c_out + grp * ocg) * g->oh * g->ow);
        }
        return;
    }
    memset(p + icg * t->chan, 0, DW_SLACK * sizeof *p);
    for (int64_t task = t0; task < t1; task++) {
        int64_t n = task / g->groups, grp = task % g->groups;
        for (int64_t c = 0; c < icg; c++)
            phase_fill(g, t, t->x + (n * g->c_in + grp * icg + c) * g->h * g->w, p + c * t->chan);
        for (int64_t o = 0; o < ocg; o++) {
            int64_t oc = grp * ocg + o;
            t->k->dw_taps(p, t->off, t->w + oc * kdim, kdim, t->nq, out);
            float *yo = t->y + (n * g->c_out + oc) * g->oh * g->ow;
            for (int64_t r = 0; r < g->oh; r++) {
                const float *src = out + r * t->wq;
                float *dst = yo + r * g->ow;
                if (t->bias) {
                    float bo = t->bias[oc];
                    for (int64_t s = 0; s < g->ow; s++) dst[s] = src[s] + bo;
                } else {
                    memcpy(dst, src, (size_t)g->ow * sizeof *dst);
                }
            }
        }
    }
}

bool sb_cpu_conv2d_dw_forward(const sb_conv2d_geom *g, const float *x, const float *weight,
                              const float *bias, float *y) {
    if (!dw_takes(g)) return false;
    const sb_cpu_kernels *k = sb_kernels();
    if (lanes_takes(g, k, g->oh * g->ow)) {
        lanes_ctx lt;
        lanes_start(&lt, g, x, weight, bias, y, k);
        int64_t tasks = g->n * lt.blocks;
        sb_parallel_for(tasks, sb_parallel_grain(tasks, 1), lanes_fwd_range, &lt);
        return true;
    }
    fwd_ctx t = {.g = g, .x = x, .w = weight, .bias = bias, .y = y, .k = sb_kernels()};
    int64_t sh = g->stride_h, sw = g->stride_w;
    int64_t hp = g->h + 2 * g->pad_h, wp = g->w + 2 * g->pad_w;
    t.hq = (hp + sh - 1) / sh, t.wq = (wp + sw - 1) / sw;
    t.chan = sh * sw * t.hq * t.wq;
    t.nq = (g->oh - 1) * t.wq + g->ow;
    int64_t icg = g->c_in / g->groups;
    for (int64_t c = 0; c < icg; c++)
        for (int64_t i = 0; i < g->kh; i++)
            for (int64_t j = 0; j < g->kw; j++) {
                int64_t ri = i * g->dilation_h, cj = j * g->dilation_w;
                t.off[(c * g->kh + i) * g->kw + j] = c * t.chan +
                                                      (ri % sh * sw + cj % sw) * t.hq * t.wq +
                                                      ri / sh * t.wq + cj / sw;
            }
    int64_t tasks = g->n * g->groups;
    sb_parallel_for(tasks, sb_parallel_grain(tasks, 1), fwd_range, &t);
    return true;
}

/* ---- input gradient ---- */

/* The taps of one kernel axis that read the inputs of phase a (inputs a,
 * a + stride, ...): tap i reads input a + stride*u from output u + off
 * exactly when a + pad - i*dilation = off*stride. Listed ascending;
 * returns their count. */
static int phase_taps(int64_t a, int64_t k, int64_t stride, int64_t pad, int64_t dilation,
                      int64_t *tap, int64_t *off) {
    int count = 0;
    for (int64_t i = 0; i < k; i++) {
        int64_t d = a + pad - i * dilation;
        int64_t q = d >= 0 ? d / stride : -((-d + stride - 1) / stride); /* floor */
        if (q * stride == d) tap[count] = i, off[count++] = q;
    }
    return count;
}

/* One axis of the margined dy plane: every phase's taps read dy positions
 * u + off for u < (inputs in the phase); margin = how far below 0 they
 * reach, len = the axis' length from -margin to past the farthest read and
 * past dy's own out positions. */
static void dy_axis(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad,
                    int64_t dilation, int64_t *margin, int64_t *len) {
    int64_t lo = 0, hi = out, tap[DW_TAPS_MAX], off[DW_TAPS_MAX];
    for (int64_t a = 0; a < stride && a < in; a++) {
        int64_t cnt = (in - a + stride - 1) / stride;
        int nt = phase_taps(a, k, stride, pad, dilation, tap, off);
        for (int q = 0; q < nt; q++) {
            if (off[q] < lo) lo = off[q];
            if (off[q] + cnt > hi) hi = off[q] + cnt;
        }
    }
    *margin = -lo;
    *len = hi - lo;
}

typedef struct {
    const sb_conv2d_geom *g;
    const float *dy, *w;
    float *dx;
    const sb_cpu_kernels *k;
    int64_t mt, ml, hd, wd; /* the margined dy plane: margins, rows, columns */
    int64_t copy;           /* floats per copy of a group's ocg planes */
    /* The chain of phase (a, b) of input channel ch: taps start[e] ..
     * start[e+1]-1 of off / wts, e = ch*sh*sw + a*sw + b. */
    const int64_t *start, *off;
    const float *wts;
} bwd_in_ctx;

/* The group's dy planes (ocg of them) in the margined layout, twice: at d
 * with -0.0f margins, at d + t->copy with +0.0f margins. */
static void dy_fill(const bwd_in_ctx *t, const float *dyg, float *d) {
    const sb_conv2d_geom *g = t->g;
    int64_t ocg = g->c_out / g->groups, plane = t->hd * t->wd, wd = t->wd;
    int64_t right = wd - t->ml - g->ow;
    for (int half = 0; half < 2; half++) {
        float zero = half ? 0.0f : -0.0f, *dc = d + half * t->copy;
        for (int64_t o = 0; o < ocg; o++) {
            float *dp = dc + o * plane;
            for (int64_t q = 0; q < t->mt * wd; q++) dp[q] = zero;
            for (int64_t r = 0; r < g->oh; r++) {
                float *row = dp + (r + t->mt) * wd;
                for (int64_t q = 0; q < t->ml; q++) row[q] = zero;
                memcpy(row + t->ml, dyg + (o * g->oh + r) * g->ow, (size_t)g->ow * sizeof *row);
                for (int64_t q = 0; q < right; q++) row[t->ml + g->ow + q] = zero;
            }
            for (int64_t q = (t->mt + g->oh) * wd; q < plane; q++) dp[q] = zero;
        }
    }
}

static void bwd_in_range(void *vctx, int64_t t0, int64_t t1) {
    const bwd_in_ctx *t = vctx;
    const sb_conv2d_geom *g = t->g;
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups, kk = g->kh * g->kw;
    int64_t sh = g->stride_h, sw = g->stride_w;
    int64_t dfloats = 2 * t->copy + DW_SLACK;
    int64_t ofloats = round_up(((g->h + sh - 1) / sh) * t->wd, 16);
    float *d = sb_scratch(SB_SCRATCH_CONV, (size_t)dfloats * sizeof *d);
    float *out = sb_scratch(SB_SCRATCH_CONV_AUX, (size_t)ofloats * sizeof *out);
    if (!d || !out) {
        for (int64_t task = t0; task < t1; task++) {
            sb_conv2d_geom s = *g;
            int64_t n = task / g->groups, grp = task % g->groups;
            s.n = 1, s.groups = 1, s.c_in = icg, s.c_out = ocg;
            sb_ref_conv2d_backward_input(&s, t->dy + (n * g->c_out + grp * ocg) * g->oh * g->ow,
                                         t->w + grp * ocg * icg * kk,
                                         t->dx + (n * g->c_in + grp * icg) * g->h * g->w);
        }
        return;
    }
    memset(d + 2 * t->copy, 0, DW_SLACK * sizeof *d);
    for (int64_t task = t0; task < t1; task++) {
        int64_t n = task / g->groups, grp = task % g->groups;
        dy_fill(t, t->dy + (n * g->c_out + grp * ocg) * g->oh * g->ow, d);
        for (int64_t c = 0; c < icg; c++) {
            int64_t ch = grp * icg + c;
            float *dxc = t->dx + (n * g->c_in + ch) * g->h * g->w;
            for (int64_t a = 0; a < sh && a < g->h; a++) {
                int64_t hu = (g->h - a + sh - 1) / sh;
                for (int64_t b = 0; b < sw && b < g->w; b++) {
                    int64_t wv = (g->w - b + sw - 1) / sw, e = (ch * sh + a) * sw + b;
                    int64_t first = t->start[e], ntaps = t->start[e + 1] - first;
                    int64_t nq = (hu - 1) * t->wd + wv;
                    /* no taps: every chain is empty, out = +0 */
                    t->k->dw_taps(d, t->off + first, t->wts + first, ntaps, nq, out);
                    for (int64_t u = 0; u < hu; u++) {
                        float *dst = dxc + (a + sh * u) * g->w + b;
                        const float *src = out + u * t->wd;
                        if (sw == 1)
                            memcpy(dst, src, (size_t)wv * sizeof *dst);
                        else
                            for (int64_t v = 0; v < wv; v++) dst[sw * v] = src[v];
                    }
                }
            }
        }
    }
}

bool sb_cpu_conv2d_dw_backward_input(const sb_conv2d_geom *g, const float *dy,
                                     const float *weight, float *dx) {
    if (!dw_takes(g)) return false;
    const sb_cpu_kernels *k = sb_kernels();
    if (lanes_takes(g, k, g->h * g->w)) {
        lanes_ctx lt;
        lanes_start(&lt, g, dy, weight, NULL, dx, k);
        int64_t tasks = g->n * lt.blocks;
        sb_parallel_for(tasks, sb_parallel_grain(tasks, 1), lanes_dx_range, &lt);
        return true;
    }
    int64_t nw = g->c_out * (g->c_in / g->groups) * g->kh * g->kw;
    /* An exponent field of all ones is inf or NaN: 0 * inf = NaN would
     * make a margin term count. */
    for (int64_t q = 0; q < nw; q++) {
        uint32_t bits;
        memcpy(&bits, weight + q, sizeof bits);
        if ((bits & 0x7f800000u) == 0x7f800000u) return false;
    }
    bwd_in_ctx t = {.g = g, .dy = dy, .w = weight, .dx = dx, .k = sb_kernels()};
    dy_axis(g->h, g->oh, g->kh, g->stride_h, g->pad_h, g->dilation_h, &t.mt, &t.hd);
    dy_axis(g->w, g->ow, g->kw, g->stride_w, g->pad_w, g->dilation_w, &t.ml, &t.wd);
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups, kk = g->kh * g->kw;
    int64_t sh = g->stride_h, sw = g->stride_w, plane = t.hd * t.wd, phases = sh * sw;
    t.copy = ocg * plane;
    /* The tap lists, built once here and read by every thread: each weight
     * is in at most one phase's list (a tap reads one phase per axis). */
    int64_t nstart = g->c_in * phases + 1;
    int64_t *start = sb_scratch(SB_SCRATCH_OPS, (size_t)(nstart + nw) * sizeof(int64_t) +
                                                    (size_t)nw * sizeof(float));
    if (!start) return false;
    int64_t *off = start + nstart;
    float *wts = (float *)(void *)(off + nw);
    int64_t ti[DW_TAPS_MAX], ri[DW_TAPS_MAX], tj[DW_TAPS_MAX], sj[DW_TAPS_MAX], e = 0, ntaps = 0;
    for (int64_t ch = 0; ch < g->c_in; ch++) {
        int64_t grp = ch / icg, c = ch % icg;
        for (int64_t a = 0; a < sh; a++) {
            int ni = a < g->h ? phase_taps(a, g->kh, sh, g->pad_h, g->dilation_h, ti, ri) : 0;
            for (int64_t b = 0; b < sw; b++, e++) {
                int nj = b < g->w ? phase_taps(b, g->kw, sw, g->pad_w, g->dilation_w, tj, sj) : 0;
                start[e] = ntaps;
                /* chain order (o, i, j), i and j the phase's taps ascending */
                for (int64_t o = 0; o < ocg; o++) {
                    const float *wo = weight + ((grp * ocg + o) * icg + c) * kk;
                    for (int ia = 0; ia < ni; ia++)
                        for (int jb = 0; jb < nj; jb++) {
                            float wt = wo[ti[ia] * g->kw + tj[jb]];
                            uint32_t bits;
                            memcpy(&bits, &wt, sizeof bits);
                            /* -0 margins (first copy) for a clear sign bit */
                            wts[ntaps] = wt;
                            off[ntaps++] = (bits >> 31 ? t.copy : 0) + o * plane +
                                           (ri[ia] + t.mt) * t.wd + sj[jb] + t.ml;
                        }
                }
            }
        }
    }
    start[e] = ntaps;
    t.start = start, t.off = off, t.wts = wts;
    int64_t tasks = g->n * g->groups;
    sb_parallel_for(tasks, sb_parallel_grain(tasks, 1), bwd_in_range, &t);
    return true;
}

/* ---- weight gradient ---- */

typedef struct {
    const sb_conv2d_geom *g;
    const float *dy, *x;
    float *dw;
    const sb_cpu_kernels *k;
    int64_t lanes;            /* output channels per block (the vector's lanes) */
    int64_t hp, wp;           /* the zero-padded x plane */
    int64_t off[DW_TAPS_MAX]; /* tap (i, j): (i*dh*wp + j*dw) * lanes */
} bwd_w_ctx;

/* dw[oc][..] straight from the contract's chains (when no scratch memory
 * is left). */
static void wgrad_chains(const sb_conv2d_geom *g, const float *dy, const float *x, int64_t oc,
                         float *dweight) {
    int64_t icg = g->c_in / g->groups;
    for (int64_t c = 0; c < icg; c++)
        for (int64_t i = 0; i < g->kh; i++)
            for (int64_t j = 0; j < g->kw; j++)
                dweight[((oc * icg + c) * g->kh + i) * g->kw + j] =
                    sb_ref_conv2d_dw_chain(g, dy, x, oc, c, i, j);
}

static void bwd_w_range(void *vctx, int64_t b0, int64_t b1) {
    const bwd_w_ctx *t = vctx;
    const sb_conv2d_geom *g = t->g;
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups, kk = g->kh * g->kw;
    int64_t L = t->lanes, ohw = g->oh * g->ow;
    int64_t xfloats = t->hp * t->wp * L, dfloats = ohw * L, afloats = icg * kk * L;
    float *xt = sb_scratch(SB_SCRATCH_CONV, (size_t)(xfloats + dfloats) * sizeof *xt);
    float *acc = sb_scratch(SB_SCRATCH_CONV_AUX, (size_t)afloats * sizeof *acc);
    for (int64_t blk = b0; blk < b1; blk++) {
        int64_t oc0 = blk * L, nl = g->c_out - oc0 < L ? g->c_out - oc0 : L;
        if (!xt || !acc) {
            for (int64_t oc = oc0; oc < oc0 + nl; oc++) wgrad_chains(g, t->dy, t->x, oc, t->dw);
            continue;
        }
        float *dyt = xt + xfloats;
        /* lanes past c_out and the padding stay +0.0f */
        memset(xt, 0, (size_t)(xfloats + dfloats) * sizeof *xt);
        memset(acc, 0, (size_t)afloats * sizeof *acc);
        const float *src[DW_LANES_MAX];
        for (int64_t n = 0; n < g->n; n++) {
            for (int64_t l = 0; l < L; l++)
                src[l] = l < nl ? t->dy + (n * g->c_out + oc0 + l) * ohw : NULL;
            t->k->dw_interleave(src, ohw, dyt);
            for (int64_t c = 0; c < icg; c++) {
                for (int64_t ih = 0; ih < g->h; ih++) {
                    for (int64_t l = 0; l < L; l++)
                        src[l] = l < nl ? t->x + ((n * g->c_in + (oc0 + l) / ocg * icg + c) * g->h +
                                                  ih) * g->w
                                        : NULL;
                    t->k->dw_interleave(src, g->w, xt + ((ih + g->pad_h) * t->wp + g->pad_w) * L);
                }
                t->k->dw_wgrad(dyt, xt, t->off, kk, g->oh, g->ow, g->stride_h * t->wp, g->stride_w,
                               acc + c * kk * L);
            }
        }
        for (int64_t l = 0; l < nl; l++)
            for (int64_t c = 0; c < icg; c++)
                for (int64_t q = 0; q < kk; q++)
                    t->dw[((oc0 + l) * icg + c) * kk + q] = acc[(c * kk + q) * L + l];
    }
}

bool sb_cpu_conv2d_dw_backward_weight(const sb_conv2d_geom *g, const float *dy, const float *x,
                                      float *dweight) {
    if (!dw_takes(g)) return false;
    bwd_w_ctx t = {.g = g, .dy = dy, .x = x, .dw = dweight, .k = sb_kernels()};
    t.lanes = t.k->dw_lanes;
    t.hp = g->h + 2 * g->pad_h, t.wp = g->w + 2 * g->pad_w;
    for (int64_t i = 0; i < g->kh; i++)
        for (int64_t j = 0; j < g->kw; j++)
            t.off[i * g->kw + j] = (i * g->dilation_h * t.wp + j * g->dilation_w) * t.lanes;
    int64_t blocks = (g->c_out + t.lanes - 1) / t.lanes;
    sb_parallel_for(blocks, 1, bwd_w_range, &t);
    return true;
}
