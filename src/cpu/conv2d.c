/* Fast conv2d (src/cpu/conv_internal.h): im2col + sb_cpu_sgemm, bit-identical
 * to src/ref/conv2d.c (docs/perf/conv.md has the argument in full).
 *
 * Forward: per sample and group, y[oc][(r,s)] is the GEMM chain over k =
 *   (c,i,j) of W[oc][(c,i,j)] * col[(c,i,j)][(r,s)], col being im2col(x) with
 *   explicit +0.0f for padded taps: exactly the contract's chain, padded terms
 *   included; the bias is one addition after it.
 * Backward weight: dW[oc][(c,i,j)] is one chain over (n,r,s): dY[n] times
 *   one sample's im2row, or, for planes of many pixels, the transposed
 *   product dW^T = col . dY^T (the taps as the product's rows, read in place
 *   for a 1x1), sample after sample, the chains continued from one sample
 *   to the next (continue_chain), so k is never split.
 * Backward input: the contract takes only the taps that really read an input;
 *   the GEMM over a zero-stuffed dy "column" matrix adds fmaf(+0, w, acc) for
 *   the others. With finite weights such a term leaves every nonzero
 *   accumulator (inf and NaN included) unchanged and can only flip the sign
 *   of a zero one, and a zero accumulator feeds the next real term exactly as
 *   its opposite-signed twin does unless that term's exact value is zero too.
 *   So the GEMM result can differ from the contract only when both are zeros;
 *   every zero output is recomputed with the contract's own chain. A weight
 *   that is inf or NaN (0*inf = NaN) sends the call to the reference chains.
 *
 * Planes of at most 64 positions (the forward's output, the input
 *   gradient's input) go to src/cpu/conv2d_few.c first: one product per
 *   position class over exactly the taps it reads.
 *
 * Threads: forward and backward input split samples (each range owns its
 * samples' outputs and calls sb_cpu_sgemm, which then runs on that thread);
 * backward weight splits dW's taps into panels, one task each. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/sum_internal.h"
#include "cpu/conv_internal.h"
#include "cpu/cpu.h"
#include "cpu/kernels.h"
#include "cpu/ops_internal.h"

/* Strides the implicit forward splits into phases (larger ones im2col). */
#define SB_PHASES_MAX 8

/* Longest zero-padded input row im2row copies to its stack (wider images
 * take the transposed weight-gradient product, which needs none). */
#define PADDED_ROW_MAX 4096


/* out[s] = row[s*stride + off] for s in [0, count), with +0.0f where
 * s*stride + off falls outside [0, size). Used for both im2col rows (x) and
 * the zero-stuffed dy rows of backward input at stride 1. */
static void gather_row(const float *row, int64_t size, int64_t off, int64_t stride, int64_t count,
                       float *out) {
    int64_t lo = off < 0 ? (-off + stride - 1) / stride : 0;
    int64_t lim = size - 1 - off;
    int64_t hi = lim < 0 ? 0 : lim / stride + 1;
    if (hi > count) hi = count;
    if (lo > hi) lo = hi;
    if (lo > 0) memset(out, 0, (size_t)lo * sizeof *out);
    if (stride == 1) {
        /* one element: the deep stages' 1x1 planes, too short for a call */
        if (hi - lo == 1)
            out[lo] = row[lo + off];
        else if (hi > lo)
            memcpy(out + lo, row + lo + off, (size_t)(hi - lo) * sizeof *out);
    } else if (stride == 2 && sb_kernels()->gather_stride2) {
        sb_kernels()->gather_stride2(row + 2 * lo + off, hi - lo, out + lo);
    } else {
        for (int64_t s = lo; s < hi; s++) out[s] = row[s * stride + off];
    }
    if (count > hi) memset(out + hi, 0, (size_t)(count - hi) * sizeof *out);
}

/* dst[q*ldd + j] = src[q*lds + j] for q < count, j < len, with one masked
 * vector copy per row where the ISA level has one (the kernel context's
 * copy_rows); false when it has not. */
static bool copy_rows(float *dst, int64_t ldd, const float *src, int64_t lds, int64_t count,
                      int len) {
    const sb_cpu_kernels *k = sb_kernels();
    if (!k->copy_rows || len > k->copy_rows_max) return false;
    k->copy_rows(dst, ldd, src, lds, count, len);
    return true;
}

/* One im2col row: what tap (i, j) of channel ch of sample xn reads for the
 * output rows r0 <= r < r1, +0.0f where it falls in the padding; written
 * to dst, (r1 - r0) * ow floats. */
static void tap_row(const sb_conv2d_geom *g, const float *xn, int64_t ch, int64_t i, int64_t j,
                    int64_t r0, int64_t r1, float *dst) {
    for (int64_t r = r0; r < r1; r++, dst += g->ow) {
        int64_t ih = r * g->stride_h - g->pad_h + i * g->dilation_h;
        if (ih < 0 || ih >= g->h)
            memset(dst, 0, (size_t)g->ow * sizeof *dst);
        else
            gather_row(xn + (ch * g->h + ih) * g->w, g->w, j * g->dilation_w - g->pad_w,
                       g->stride_w, g->ow, dst);
    }
}

/* im2col of one sample xn (c_in, h, w): rows (c, i, j) for channels ch0 ..
 * ch0+nch-1, columns (r, s) for the output rows r0 <= r < r1; row p starts
 * at col + p*ld. */
static void im2col_rows(const sb_conv2d_geom *g, const float *xn, int64_t ch0, int64_t nch,
                        int64_t r0, int64_t r1, float *col, int64_t ld) {
    for (int64_t c = 0; c < nch; c++)
        for (int64_t i = 0; i < g->kh; i++)
            for (int64_t j = 0; j < g->kw; j++)
                tap_row(g, xn, ch0 + c, i, j, r0, r1, col + ((c * g->kh + i) * g->kw + j) * ld);
}

/* Gather tables of the few-pixel products (planes of fewer than FEW_PIXELS
 * positions, where a call per row of 1-8 floats cost more than the moves):
 * for each tap and each position of the product, the offset in the plane
 * it reads, or -1 where it reads +0.0f (padding, or outside dy). */
#define GATHER_TABLE_MAX 4096 /* entries on the stack; larger kernels gather row by row */

/* im2col's table: entry (i*kw + j)*ohw + r*ow + s is where tap (i, j) of
 * output (r, s) reads x's plane. False when it would not fit
 * GATHER_TABLE_MAX entries. */
static bool im2col_table(const sb_conv2d_geom *g, int32_t *idx) {
    int64_t ohw = g->oh * g->ow;
    if (g->kh * g->kw * ohw > GATHER_TABLE_MAX) return false;
    for (int64_t i = 0; i < g->kh; i++)
        for (int64_t j = 0; j < g->kw; j++) {
            int32_t *e = idx + (i * g->kw + j) * ohw;
            for (int64_t r = 0; r < g->oh; r++)
                for (int64_t q = 0; q < g->ow; q++) {
                    int64_t ih = r * g->stride_h - g->pad_h + i * g->dilation_h;
                    int64_t iw = q * g->stride_w - g->pad_w + j * g->dilation_w;
                    bool in = ih >= 0 && ih < g->h && iw >= 0 && iw < g->w;
                    e[r * g->ow + q] = in ? (int32_t)(ih * g->w + iw) : -1;
                }
        }
    return true;
}

/* dst[q] = plane[e[q]], or +0.0f where e[q] < 0, for q < count. Without a
 * branch (padding follows a plane's edges, which a branch predicts badly):
 * plane[0] is read instead and its bits masked to +0.0f's. */
static void gather_table(const float *plane, const int32_t *e, int64_t count, float *dst) {
    for (int64_t q = 0; q < count; q++) dst[q] = e[q] >= 0 ? plane[e[q]] : 0.0f;
}
/* im2row of one sample xn (c_in, h, w), columns [t0, t1) only: row (r, s)
 * holds taps t = (c, i, j) of channels ch0.. (a group's), t0 <= t < t1,
 * contiguously; row q starts at rows + q*ld. The weight gradient multiplies
 * dY by it as an untransposed right operand, which the GEMM reads in place.
 * Each input row is first copied into `padded` between pad_w zeros (w +
 * 2*pad_w + span + 1 floats), so the tap loops run without bounds checks;
 * positions past the real row read +0.0f, the contract's padded taps. */
static void im2row(const sb_conv2d_geom *g, const float *xn, int64_t ch0, int64_t t0, int64_t t1,
                   float *rows, int64_t ld, float *padded) {
    int64_t kh = g->kh, kw = g->kw, dw = g->dilation_w, sw = g->stride_w, pw = g->pad_w;
    int64_t span = (kw - 1) * dw, plen = g->w + 2 * pw + span + 1;
    for (int64_t q = 0; q < plen; q++) padded[q] = 0.0f;
    for (int64_t c = t0 / (kh * kw); c * kh * kw < t1; c++)
        for (int64_t i = 0; i < kh; i++) {
            int64_t base = (c * kh + i) * kw;
            int64_t j0 = t0 > base ? t0 - base : 0, j1 = t1 - base < kw ? t1 - base : kw;
            if (j0 >= j1) continue;
            for (int64_t r = 0; r < g->oh; r++) {
                int64_t ih = r * g->stride_h - g->pad_h + i * g->dilation_h;
                float *dst = rows + r * g->ow * ld + base + j0 - t0;
                if (ih < 0 || ih >= g->h) {
                    for (int64_t s = 0; s < g->ow; s++, dst += ld)
                        for (int64_t j = j0; j < j1; j++) dst[j - j0] = 0.0f;
                    continue;
                }
                memcpy(padded + pw, xn + ((ch0 + c) * g->h + ih) * g->w,
                       (size_t)g->w * sizeof *padded);
                const float *src = padded + j0 * dw;
                if (dw == 1 && copy_rows(dst, ld, src, sw, g->ow, (int)(j1 - j0))) continue;
                for (int64_t s = 0; s < g->ow; s++, dst += ld, src += sw)
                    for (int64_t j = 0; j < j1 - j0; j++) dst[j] = src[j * dw];
            }
        }
}

/* im2col rows [t0, t1) of one sample xn (c_in, h, w): row t is tap
 * (c, i, j) = (t / (kh*kw), ...) of channel ch0 + c over the output
 * positions (r, s); row t starts at col + (t - t0)*ld. */
static void im2col_tap_range(const sb_conv2d_geom *g, const float *xn, int64_t ch0, int64_t t0,
                             int64_t t1, float *col, int64_t ld) {
    int64_t kk = g->kh * g->kw;
    for (int64_t t = t0; t < t1; t++) {
        int64_t c = t / kk, i = t % kk / g->kw, j = t % g->kw;
        tap_row(g, xn, ch0 + c, i, j, 0, g->oh, col + (t - t0) * ld);
    }
}

/* The sub-geometry of samples [n0, n1) (the reference kernels treat samples
 * independently, so they can run on a slice). */
static sb_conv2d_geom slice(const sb_conv2d_geom *g, int64_t n0, int64_t n1) {
    sb_conv2d_geom s = *g;
    s.n = n1 - n0;
    return s;
}

/* Splits samples over threads when there are enough of them to share;
 * otherwise runs them here, so that sb_cpu_sgemm threads itself. */
static void over_samples(int64_t n, sb_range_fn fn, void *ctx) {
    if (n >= 2 && n >= sb_num_threads())
        sb_parallel_for(n, sb_parallel_grain(n, 1), fn, ctx);
    else
        fn(ctx, 0, n);
}

static bool degenerate(const sb_conv2d_geom *g) {
    return g->n == 0 || g->c_in == 0 || g->c_out == 0 || g->oh * g->ow == 0 || g->h * g->w == 0;
}

/* Few pixels, many channels (the deep stages of a CNN: 256-512 channels
 * over 1x1 .. 4x4 positions): a product per sample is a GEMM a few columns
 * wide, all packing, edge tiles and chain reloads. Such samples are put side
 * by side instead, nb of them per product: the columns (or, for the weight
 * gradient, the k terms) of sample n follow those of sample n-1. A column
 * of the product is still the chain over k of that one position, and the
 * weight gradient's k runs over (n, r, s) in the contract's order, so the
 * bits are those of the per-sample products. */
#define PANEL_FLOATS (1 << 18) /* floats of a column panel: 1 MB */
#define FEW_PIXELS 64          /* positions per sample below which samples are batched */
#define BATCH_COLS 512         /* positions one batched product aims at */
#define BATCH_FLOATS (1 << 21) /* cap on a chunk's column matrix: 8 MB */
/* Floats past the last row or plane that an offset kernel's tail tile may
 * read (masked lanes). */
#define PLANE_SLACK 64

/* Samples per product: 1 (per-sample products) unless a sample has fewer
 * than `few` positions `per_sample` (FEW_PIXELS, or the weight gradient's
 * BWD_W_FEW_PIXELS); `rows` is the height of the column matrix whose size
 * BATCH_FLOATS caps. */
static int64_t batch_chunk(int64_t n, int64_t per_sample, int64_t rows, int64_t few) {
    if (per_sample >= few || n < 2) return 1;
    int64_t nb = BATCH_COLS / per_sample, cap = BATCH_FLOATS / (per_sample * rows);
    if (nb > cap) nb = cap;
    if (nb > n) nb = n;
    return nb < 1 ? 1 : nb;
}

/* Positions a chunk keeps at least when batch_chunk_shared splits a batch
 * over threads. */
#define SHARED_COLS_MIN 64

/* batch_chunk, for the products whose columns are independent chains (the
 * forward and the input gradient: a column's bits do not depend on which
 * chunk holds it): also no more samples than every thread's share, so that
 * the chunks run side by side (over_samples), gathers included, instead of
 * one chunk whose product alone threads; a chunk keeps SHARED_COLS_MIN
 * positions. */
static int64_t batch_chunk_shared(int64_t n, int64_t per_sample, int64_t rows) {
    int64_t nb = batch_chunk(n, per_sample, rows, FEW_PIXELS);
    int threads = sb_num_threads();
    if (nb > 1 && threads > 1) {
        int64_t share = (n + threads - 1) / threads;
        int64_t least = (SHARED_COLS_MIN + per_sample - 1) / per_sample;
        if (share < least) share = least;
        if (share < nb) nb = share;
    }
    return nb;
}

/* ---- forward ---- */

typedef struct {
    const sb_conv2d_geom *g;
    const float *x, *w, *bias;
    float *y;
} fwd_ctx;

/* dst[q] = src[q] + b for q < n: the bias after the chain, on the level's
 * vector loop (this file is compiled for the baseline ISA). */
static void add_bias(int64_t n, const float *src, float b, float *dst) {
    sb_kernels()->pointwise->binary(SB_BINARY_ADD, n, src, 1, &b, 0, dst);
}

/* A 1x1, stride-1, unpadded convolution: the planes of x are the columns
 * of its product as they lie (no im2col, no padded copy). */
static bool reads_x_directly(const sb_conv2d_geom *g) {
    return g->kh == 1 && g->kw == 1 && g->stride_h == 1 && g->stride_w == 1 && g->pad_h == 0 &&
           g->pad_w == 0;
}

static void fwd_range(void *vctx, int64_t n0, int64_t n1) {
    const fwd_ctx *t = vctx;
    const sb_conv2d_geom *g = t->g;
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups;
    int64_t kdim = icg * g->kh * g->kw, ohw = g->oh * g->ow, hw = g->h * g->w;
    bool direct = reads_x_directly(g);
    /* The column matrix is built a panel of output rows at a time, small
     * enough to stay in cache between im2col's writes and the product's
     * reads (a stem's whole matrix is megabytes); a column's chain over k
     * does not depend on which panel it is in. */
    int64_t prows = PANEL_FLOATS / (kdim * g->ow);
    if (prows < 1) prows = 1;
    if (prows > g->oh) prows = g->oh;
    float *col = direct ? NULL
                        : sb_scratch(SB_SCRATCH_CONV, (size_t)(kdim * prows * g->ow) * sizeof *col);
    if (!direct && !col) {
        sb_conv2d_geom s = slice(g, n0, n1);
        sb_ref_conv2d_forward(&s, t->x + n0 * g->c_in * hw, t->w, t->bias,
                              t->y + n0 * g->c_out * ohw);
        return;
    }
    for (int64_t n = n0; n < n1; n++)
        for (int64_t grp = 0; grp < g->groups; grp++) {
            const float *xn = t->x + n * g->c_in * hw;
            const float *wg = t->w + grp * ocg * kdim;
            float *yg = t->y + (n * g->c_out + grp * ocg) * ohw;
            if (direct)
                sb_cpu_sgemm('N', 'N', ocg, ohw, kdim, wg, kdim, xn + grp * icg * hw, ohw, yg, ohw,
                             false);
            for (int64_t r0 = 0; !direct && r0 < g->oh; r0 += prows) {
                int64_t r1 = r0 + prows < g->oh ? r0 + prows : g->oh, cols = (r1 - r0) * g->ow;
                im2col_rows(g, xn, grp * icg, icg, r0, r1, col, cols);
                sb_cpu_sgemm('N', 'N', ocg, cols, kdim, wg, kdim, col, cols, yg + r0 * g->ow, ohw,
                             false);
            }
            if (t->bias)
                for (int64_t o = 0; o < ocg; o++) {
                    float bo = t->bias[grp * ocg + o], *yp = yg + o * ohw;
                    add_bias(ohw, yp, bo, yp);
                }
        }
}

/* Whether no w[q], q < n, is inf or NaN: a bit test on the exponent field,
 * because isfinite() is a libm call per weight under this build's flags.
 * Two floats per 64-bit word: a float's exponent field masked and plus one
 * reaches its sign bit exactly when the field is all ones (the low float's
 * sum is at most 0x80000000, so nothing carries into the high one). Four
 * words a step, which gcc -O2 turns into SSE2 integer vectors: 0.48 ms for
 * the 2.36M weights of a 512->512 3x3 layer, against 1.29 a float at a
 * time, about the product itself at 1x1 planes. */
static bool all_finite_run(int64_t n, const float *w) {
    const uint64_t exponents = 0x7f8000007f800000ull, one = 0x0080000000800000ull,
                   signs = 0x8000000080000000ull;
    uint64_t acc[4] = {0, 0, 0, 0};
    int64_t q = 0;
    for (; q + 8 <= n; q += 8) {
        uint64_t v[4];
        memcpy(v, w + q, sizeof v);
        for (int k = 0; k < 4; k++) acc[k] |= ((v[k] & exponents) + one) & signs;
    }
    uint32_t tail = 0;
    for (; q < n; q++) {
        uint32_t bits;
        memcpy(&bits, w + q, sizeof bits);
        tail |= ((bits & 0x7f800000u) + 0x00800000u) & 0x80000000u;
    }
    return (acc[0] | acc[1] | acc[2] | acc[3] | tail) == 0;
}

/* all_finite_run over the pool: blocks of FINITE_BLOCK weights, a flag per
 * block (the scan is bound by reading the weights, which two cores read
 * faster than one). */
#define FINITE_BLOCK 65536
#define FINITE_BLOCKS_MAX 1024

typedef struct {
    const float *w;
    int64_t n;
    unsigned char *bad;
} finite_ctx;

static void finite_range(void *vctx, int64_t b0, int64_t b1) {
    const finite_ctx *c = vctx;
    for (int64_t b = b0; b < b1; b++) {
        int64_t q0 = b * FINITE_BLOCK, len = c->n - q0 < FINITE_BLOCK ? c->n - q0 : FINITE_BLOCK;
        c->bad[b] = !all_finite_run(len, c->w + q0);
    }
}

bool sb_cpu_conv2d_weights_finite(int64_t n, const float *w) {
    int64_t blocks = (n + FINITE_BLOCK - 1) / FINITE_BLOCK;
    if (blocks < 2 || blocks > FINITE_BLOCKS_MAX || sb_num_threads() < 2)
        return all_finite_run(n, w);
    unsigned char bad[FINITE_BLOCKS_MAX];
    finite_ctx c = {w, n, bad};
    sb_parallel_for(blocks, 1, finite_range, &c);
    for (int64_t b = 0; b < blocks; b++)
        if (bad[b]) return false;
    return true;
}

/* ---- forward as an implicit GEMM ----
 * Output (r, s) of tap (c, i, j) reads the zero-padded input P (x between
 * pad_h / pad_w zeros) at row r*sh + i*dh. Split P's rows into sh phases
 * (row u*sh + a is row u of phase a; likewise columns into sw phases):
 * with i*dh = qi*sh + ai, the tap reads phase (ai, aj) at (r + qi, s +
 * qj). So tap p = (c, i, j) sits at a fixed offset boff[p] from the
 * output's own position q = r*Wp + s in the phase planes (Hp x Wp each),
 * and y = W . B with B[p][q] = planes[boff[p] + q] needs no im2col matrix
 * (sb_cpu_sgemm_offset): the same chains over p, padded taps as +0.0f
 * terms, computed for every q of the rows (the Wp - ow positions past a
 * row's end are discarded). At stride 1 there is one phase, P itself; at
 * stride 2 the phase planes hold P once (a 3x3's im2col holds it 2.25
 * times, the 7x7 stem's 12 times). Only the phases some tap reads are
 * built (a 1x1 at stride 2 reads one). */

typedef struct {
    const sb_conv2d_geom *g;
    const float *x, *w, *bias;
    float *y;
    const int64_t *boff;
    int64_t hp, wp, nq; /* phase planes, and the positions q computed */
    int64_t reach;      /* floats of one group's planes an offset product reads */
    /* the phases some tap reads: phase_a[k], phase_b[l], each plane of a
     * channel at ((k * nb_ph) + l) * hp * wp, cplane floats per channel */
    int64_t na_ph, nb_ph, cplane;
    int64_t phase_a[SB_PHASES_MAX], phase_b[SB_PHASES_MAX];
    const float *apack; /* the weights packed once (per group: pstride floats), or NULL */
    int64_t pstride;
} fwd_implicit_ctx;

static bool fwd_implicit_one(const fwd_implicit_ctx *t, int64_t n) {
    const sb_conv2d_geom *g = t->g;
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups, kdim = icg * g->kh * g->kw;
    int64_t last = (g->groups - 1) * icg * t->cplane;
    int64_t pfloats = last + (t->reach > icg * t->cplane ? t->reach : icg * t->cplane);
    float *pad = sb_scratch(SB_SCRATCH_CONV, (size_t)pfloats * sizeof *pad);
    float *out = sb_scratch(SB_SCRATCH_OPS, (size_t)(ocg * t->nq) * sizeof *out);
    if (!pad || !out) return false;
    memset(pad + g->c_in * t->cplane, 0, (size_t)(pfloats - g->c_in * t->cplane) * sizeof *pad);
    const float *xn = t->x + n * g->c_in * g->h * g->w;
    for (int64_t c = 0; c < g->c_in; c++)
        for (int64_t k = 0; k < t->na_ph; k++)
            for (int64_t l = 0; l < t->nb_ph; l++) {
                float *plane = pad + c * t->cplane + (k * t->nb_ph + l) * t->hp * t->wp;
                for (int64_t u = 0; u < t->hp; u++) {
                    int64_t ih = u * g->stride_h + t->phase_a[k] - g->pad_h;
                    if (ih < 0 || ih >= g->h)
                        memset(plane + u * t->wp, 0, (size_t)t->wp * sizeof *plane);
                    else
                        gather_row(xn + (c * g->h + ih) * g->w, g->w, t->phase_b[l] - g->pad_w,
                                   g->stride_w, t->wp, plane + u * t->wp);
                }
            }
    for (int64_t grp = 0; grp < g->groups; grp++) {
        const float *b = pad + grp * icg * t->cplane;
        if (t->apack)
            sb_cpu_sgemm_offset_packed(ocg, t->nq, kdim, t->apack + grp * t->pstride, b, t->boff,
                                       out, t->nq);
        else if (!sb_cpu_sgemm_offset(ocg, t->nq, kdim, t->w + grp * ocg * kdim, kdim, b, t->boff,
                                      out, t->nq))
            return false;
        for (int64_t o = 0; o < ocg; o++) {
            int64_t oc = grp * ocg + o;
            float *yo = t->y + (n * g->c_out + oc) * g->oh * g->ow;
            for (int64_t r = 0; r < g->oh; r++) {
                const float *src = out + o * t->nq + r * t->wp;
                float *dst = yo + r * g->ow;
                if (t->bias) {
                    float bo = t->bias[oc];
                    add_bias(g->ow, src, bo, dst);
                } else {
                    memcpy(dst, src, (size_t)g->ow * sizeof *dst);
                }
            }
        }
    }
    return true;
}

/* The phases (tap offset mod stride) the taps of one axis read, ascending,
 * in ph (count returned), and the largest whole-stride offset of a tap in
 * *qmax. */
static int64_t axis_phases(int64_t k, int64_t stride, int64_t dilation, int64_t *ph,
                           int64_t *qmax) {
    int64_t n = 0;
    *qmax = (k - 1) * dilation / stride;
    for (int64_t a = 0; a < stride; a++)
        for (int64_t i = 0; i < k; i++)
            if (i * dilation % stride == a) {
                ph[n++] = a;
                break;
            }
    return n;
}

/* The index of phase a in the list ph[0 .. n). */
static int64_t phase_index(const int64_t *ph, int64_t n, int64_t a) {
    int64_t k = 0;
    while (k < n - 1 && ph[k] != a) k++;
    return k;
}

static void fwd_implicit_range(void *vctx, int64_t n0, int64_t n1) {
    const fwd_implicit_ctx *t = vctx;
    for (int64_t n = n0; n < n1; n++)
        if (!fwd_implicit_one(t, n)) {
            fwd_ctx f = {t->g, t->x, t->w, t->bias, t->y};
            fwd_range(&f, n, n + 1);
        }
}

void sb_cpu_conv2d_forward(const sb_conv2d_geom *g, const float *x, const float *weight,
                           const float *bias, float *y) {
    if (degenerate(g) || g->kh * g->kw == 0) {
        sb_ref_conv2d_forward(g, x, weight, bias, y);
        return;
    }
    if (sb_cpu_conv2d_dw_forward(g, x, weight, bias, y)) return; /* depthwise, small groups */
    if (sb_cpu_conv2d_few_forward(g, x, weight, bias, y)) return;  /* few pixels per plane */
    int64_t icg = g->c_in / g->groups, kdim = icg * g->kh * g->kw;
    int64_t *boff = NULL, ocg = g->c_out / g->groups;
    /* The offset table, then the weights packed once for every sample
     * (the product's A panels, which a per-sample product would repack). */
    int64_t pstride = sb_cpu_sgemm_offset_packed_floats(ocg, kdim);
    /* the implicit GEMM would copy x into a padded plane and its result out
     * again: a 1x1 reads x in place instead (fwd_range); strides past
     * SB_PHASES_MAX keep im2col */
    if (sb_cpu_sgemm_offset_available() && !reads_x_directly(g) &&
        g->stride_h <= SB_PHASES_MAX && g->stride_w <= SB_PHASES_MAX)
        boff = sb_scratch(SB_SCRATCH_CONV_AUX, (size_t)kdim * sizeof *boff +
                                                   (size_t)(g->groups * pstride) * sizeof(float));
    if (boff) {
        fwd_implicit_ctx t = {.g = g, .x = x, .w = weight, .bias = bias, .y = y, .boff = boff};
        int64_t qh, qw;
        t.na_ph = axis_phases(g->kh, g->stride_h, g->dilation_h, t.phase_a, &qh);
        t.nb_ph = axis_phases(g->kw, g->stride_w, g->dilation_w, t.phase_b, &qw);
        t.hp = g->oh + qh;
        t.wp = g->ow + qw;
        t.nq = (g->oh - 1) * t.wp + g->ow;
        t.cplane = t.na_ph * t.nb_ph * t.hp * t.wp;
        int64_t bmax = 0;
        for (int64_t c = 0; c < icg; c++)
            for (int64_t i = 0; i < g->kh; i++)
                for (int64_t j = 0; j < g->kw; j++) {
                    int64_t di = i * g->dilation_h, dj = j * g->dilation_w;
                    int64_t k = phase_index(t.phase_a, t.na_ph, di % g->stride_h);
                    int64_t l = phase_index(t.phase_b, t.nb_ph, dj % g->stride_w);
                    int64_t off = c * t.cplane + (k * t.nb_ph + l) * t.hp * t.wp +
                                  di / g->stride_h * t.wp + dj / g->stride_w;
                    boff[(c * g->kh + i) * g->kw + j] = off;
                    if (off > bmax) bmax = off;
                }
        t.reach = bmax + t.nq + PLANE_SLACK;
        float *apack = pstride > 0 ? (float *)(void *)(boff + kdim) : NULL;
        for (int64_t grp = 0; apack && grp < g->groups; grp++)
            sb_cpu_sgemm_offset_pack(ocg, kdim, weight + grp * ocg * kdim, kdim,
                                     apack + grp * pstride);
        t.apack = apack;
        t.pstride = pstride;
        over_samples(g->n, fwd_implicit_range, &t);
        return;
    }
    fwd_ctx t = {g, x, weight, bias, y};
    over_samples(g->n, fwd_range, &t);
}

/* ---- backward input ---- */

/* The index o with o*stride - pad + tap*dilation == pos, or -1 (as in the
 * reference: no output position reads `pos` through this tap). */
static int64_t reader(int64_t pos, int64_t tap, int64_t stride, int64_t pad, int64_t dilation,
                      int64_t out_size) {
    int64_t t = pos + pad - tap * dilation;
    if (t < 0 || t % stride != 0 || t / stride >= out_size) return -1;
    return t / stride;
}

/* Taps per kernel axis that dx_chain lists on its stack (larger kernels
 * take the reference kernel for the whole input gradient). */
#define DX_TAPS_MAX 64

/* The contract's chain for one dx element: only the taps that read it.
 * Which taps read (ih, iw) does not depend on the output channel, so they
 * are listed once (rows i with their r, columns j with their s, ascending)
 * and every channel's terms run over that list: the same (o, i, j) order.
 * An input no tap reads (stride > 1 leaves many) is the empty chain, +0. */
static float dx_chain(const sb_conv2d_geom *g, const float *dy, const float *w, int64_t n,
                      int64_t ch, int64_t ih, int64_t iw) {
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups;
    int64_t oc0 = (ch / icg) * ocg, c = ch % icg;
    float acc = 0.0f;
    int64_t tap_i[DX_TAPS_MAX], tap_r[DX_TAPS_MAX], tap_j[DX_TAPS_MAX], tap_s[DX_TAPS_MAX];
    int nrow = 0, ncol = 0;
    for (int64_t i = 0; i < g->kh; i++) {
        int64_t r = reader(ih, i, g->stride_h, g->pad_h, g->dilation_h, g->oh);
        if (r >= 0) tap_i[nrow] = i, tap_r[nrow++] = r;
    }
    for (int64_t j = 0; j < g->kw; j++) {
        int64_t s = reader(iw, j, g->stride_w, g->pad_w, g->dilation_w, g->ow);
        if (s >= 0) tap_j[ncol] = j, tap_s[ncol++] = s;
    }
    if (nrow == 0 || ncol == 0) return acc;
    for (int64_t o = 0; o < ocg; o++) {
        const float *dyo = dy + (n * g->c_out + oc0 + o) * g->oh * g->ow;
        const float *wo = w + ((oc0 + o) * icg + c) * g->kh * g->kw;
        for (int a = 0; a < nrow; a++)
            for (int b = 0; b < ncol; b++)
                acc = fmaf(dyo[tap_r[a] * g->ow + tap_s[b]], wo[tap_i[a] * g->kw + tap_j[b]], acc);
    }
    return acc;
}

/* The zero-margined copy of one dy plane used at stride 1: rows
 * -mt .. hp-mt-1 and columns -ml .. wp-ml-1 of dy, zero outside it, wide
 * enough for every tap's row and for whole 8-float blocks past w. */
static void dy_pad_layout(const sb_conv2d_geom *g, int64_t *mt, int64_t *ml, int64_t *hp,
                          int64_t *wp) {
    int64_t w8 = (g->w + 7) / 8 * 8;
    int64_t top = (g->kh - 1) * g->dilation_h - g->pad_h, left = (g->kw - 1) * g->dilation_w - g->pad_w;
    *mt = top > 0 ? top : 0;
    *ml = left > 0 ? left : 0;
    *hp = *mt + (g->oh > g->h + g->pad_h ? g->oh : g->h + g->pad_h);
    *wp = *ml + (g->ow > w8 + g->pad_w ? g->ow : w8 + g->pad_w);
}

/* The zero-margined dy planes of one sample and group: dy's rows at mt..,
 * its columns at ml.., planes of hp rows of wp floats (dy_pad_layout's at
 * stride 1, phase_pad_layout's above it). */
static void dy_pad_fill(const sb_conv2d_geom *g, const float *dyg, int64_t ocg, int64_t mt,
                        int64_t ml, int64_t hp, int64_t wp, float *pad) {
    memset(pad, 0, (size_t)(ocg * hp * wp) * sizeof *pad);
    for (int64_t o = 0; o < ocg; o++)
        for (int64_t r = 0; r < g->oh; r++)
            memcpy(pad + o * hp * wp + (r + mt) * wp + ml, dyg + (o * g->oh + r) * g->ow,
                   (size_t)g->ow * sizeof *pad);
}

typedef struct {
    const sb_conv2d_geom *g;
    const float *dy, *w, *wt; /* wt (implicit path): per group, W as [c][(o, i, j)] */
    float *dx;
    const int64_t *boff; /* stride 1 on AVX-512: tap offsets in the padded dy */
    int64_t nq;          /* positions q = ih*wp + iw computed, iw past w discarded */
    int64_t nb;          /* samples per product (batch_chunk) */
    const float *apack;  /* implicit: wt packed once (per group: pstride floats), or NULL */
    int64_t pstride;
    const float *wph;    /* phase path: every phase's weights (phase_weights_all), or NULL */
    /* phase path without column matrices (boff: every phase's offsets,
     * phase_pad_layout; nq: the largest phase's positions) */
    bool phase_implicit;
    int64_t mt, ml, hp, wp, reach;
} bwd_in_ctx;

/* The taps of one kernel axis that read the inputs of phase a (inputs a,
 * a + stride, a + 2*stride, ...): tap i reads input a + stride*u from
 * output u + off exactly when a + pad - i*dilation = off*stride for an
 * integer off. Listed ascending; returns their count. */
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

/* Drops the taps of a phase_taps list whose output offset puts every one
 * of the phase's `count` inputs outside dy's `out_size` rows (or columns):
 * they would only read stuffed zeros. At 1x1 spatial under a padded 3x3
 * (ResNet's last stage at CIFAR size) only the centre tap is left, a ninth
 * of the product. Returns the new count. */
static int live_taps(int count, int64_t *tap, int64_t *off, int64_t inputs, int64_t out_size) {
    int live = 0;
    for (int t = 0; t < count; t++)
        if (off[t] + inputs > 0 && off[t] < out_size) tap[live] = tap[t], off[live++] = off[t];
    return live;
}

/* Rows of wv columns per panel of a phase product over kph terms (at
 * least one, at most `rows`): PANEL_FLOATS of column matrix. */
static int64_t phase_panel_rows(int64_t kph, int64_t wv, int64_t rows) {
    int64_t p = kph * wv > 0 ? PANEL_FLOATS / (kph * wv) : rows;
    if (p < 1) p = 1;
    return p < rows ? p : rows;
}

/* Whether v[0..len) holds a zero (either sign): one branch-free compare
 * per value (gcc -O2 keeps it scalar), so a row without a zero costs a
 * pass of compares instead of a branch per value. */
static bool has_zero(int64_t len, const float *v) {
    int zero = 0;
    for (int64_t i = 0; i < len; i++) zero |= v[i] == 0.0f;
    return zero;
}

/* A phase's weights: the group's w (ocg, icg, kh, kw) as wph[c][(o, a, b)]
 * for the taps (ti[a], tj[b]), a transpose of (o, c) done in 16 x 16 blocks
 * so that both the reads and the writes stay within a few cache lines (a
 * 512 x 512 layer row by row missed the cache on every write); blocks of
 * output channels over the pool (inline when the caller already is a range). */
enum { PHASE_BLOCK = 16 };

typedef struct {
    const sb_conv2d_geom *g;
    const float *w;
    int ni, nj;
    const int64_t *ti, *tj;
    float *wph;
} phase_weights_ctx;

static void phase_weights_range(void *vctx, int64_t b0, int64_t b1) {
    const phase_weights_ctx *t = vctx;
    const sb_conv2d_geom *g = t->g;
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups, kk = g->kh * g->kw;
    int64_t nt = (int64_t)t->ni * t->nj;
    for (int64_t o0 = b0 * PHASE_BLOCK; o0 < ocg && o0 < b1 * PHASE_BLOCK; o0 += PHASE_BLOCK)
        for (int64_t c0 = 0; c0 < icg; c0 += PHASE_BLOCK) {
            int64_t o1 = o0 + PHASE_BLOCK < ocg ? o0 + PHASE_BLOCK : ocg;
            int64_t c1 = c0 + PHASE_BLOCK < icg ? c0 + PHASE_BLOCK : icg;
            for (int64_t o = o0; o < o1; o++)
                for (int64_t c = c0; c < c1; c++) {
                    const float *src = t->w + (o * icg + c) * kk;
                    float *dst = t->wph + (c * ocg + o) * nt;
                    if (nt == kk) { /* every tap: the kernel as it lies */
                        for (int64_t q = 0; q < kk; q++) dst[q] = src[q];
                        continue;
                    }
                    for (int a = 0; a < t->ni; a++)
                        for (int b = 0; b < t->nj; b++)
                            dst[a * t->nj + b] = src[t->ti[a] * g->kw + t->tj[b]];
                }
        }
}

static void phase_weights(const sb_conv2d_geom *g, const float *w, int ni, const int64_t *ti,
                          int nj, const int64_t *tj, float *wph) {
    int64_t blocks = (g->c_out / g->groups + PHASE_BLOCK - 1) / PHASE_BLOCK;
    phase_weights_ctx t = {g, w, ni, nj, ti, tj, wph};
    sb_parallel_for(blocks, sb_parallel_grain(blocks, 1), phase_weights_range, &t);
}

/* Phase (a, b) of the input gradient: its inputs (a + sh*u, b + sw*v),
 * u < hu, v < wv, and the live taps that read them (phase_taps,
 * live_taps: rows ti at output row offsets ri, columns tj at sj). */
typedef struct {
    int64_t hu, wv;
    int ni, nj;
    int64_t ti[DX_TAPS_MAX], ri[DX_TAPS_MAX], tj[DX_TAPS_MAX], sj[DX_TAPS_MAX];
} dx_phase;

static void dx_phase_at(const sb_conv2d_geom *g, int64_t a, int64_t b, dx_phase *p) {
    int64_t sh = g->stride_h, sw = g->stride_w;
    p->hu = (g->h - a + sh - 1) / sh;
    p->wv = (g->w - b + sw - 1) / sw;
    p->ni = live_taps(phase_taps(a, g->kh, sh, g->pad_h, g->dilation_h, p->ti, p->ri), p->ti, p->ri,
                      p->hu, g->oh);
    p->nj = live_taps(phase_taps(b, g->kw, sw, g->pad_w, g->dilation_w, p->tj, p->sj), p->tj, p->sj,
                      p->wv, g->ow);
}

/* Every phase's weights (phase_weights) for every group, in the order
 * bwd_in_phase_chunk walks them (phases (a, b) ascending, then groups), at
 * most nw floats (each tap belongs to one phase): built once per call
 * instead of once per chunk of samples. */
static void phase_weights_all(const sb_conv2d_geom *g, const float *w, float *dst) {
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups, kk = g->kh * g->kw;
    for (int64_t a = 0; a < g->stride_h && a < g->h; a++)
        for (int64_t b = 0; b < g->stride_w && b < g->w; b++) {
            dx_phase p;
            dx_phase_at(g, a, b, &p);
            int64_t kph = ocg * p.ni * p.nj;
            for (int64_t grp = 0; grp < g->groups; grp++, dst += icg * kph)
                if (kph > 0) phase_weights(g, w + grp * ocg * icg * kk, p.ni, p.ti, p.nj, p.tj, dst);
        }
}

/* The one zero-margined copy of a sample's dy planes that every phase
 * product reads without a column matrix: in phase (a, b) the column of
 * input (u, v) for term (o, i, j) is dy[o][u + ri][v + sj] (+0 outside
 * dy), which sits at boff[(o, i, j)] + u*wp + v when dy's rows start at mt
 * and its columns at ml. The margins cover every live tap's offsets, the
 * pitch every phase's row of reads. Fills boff (every phase's terms, in
 * the order the phases are walked: at most c_out/groups * kh * kw), the
 * layout, and returns the floats a product may read (the largest offset
 * plus its positions and the kernels' slack). */
static int64_t phase_pad_layout(const sb_conv2d_geom *g, int64_t *mt, int64_t *ml, int64_t *hp,
                                int64_t *wp, int64_t *nq_max, int64_t *boff) {
    int64_t ocg = g->c_out / g->groups, top = 0, left = 0, bottom = g->oh, right = g->ow;
    for (int pass = 0; pass < 2; pass++) {
        int64_t *off = boff, reach = 0;
        *nq_max = 0;
        for (int64_t a = 0; a < g->stride_h && a < g->h; a++)
            for (int64_t b = 0; b < g->stride_w && b < g->w; b++) {
                dx_phase p;
                dx_phase_at(g, a, b, &p);
                if (p.ni == 0 || p.nj == 0) continue;
                if (pass == 0) {
                    /* rows ri .. hu-1+ri and columns sj .. wv-1+sj are read */
                    for (int i = 0; i < p.ni; i++) {
                        if (-p.ri[i] > top) top = -p.ri[i];
                        if (p.hu + p.ri[i] > bottom) bottom = p.hu + p.ri[i];
                    }
                    for (int j = 0; j < p.nj; j++) {
                        if (-p.sj[j] > left) left = -p.sj[j];
                        if (p.wv + p.sj[j] > right) right = p.wv + p.sj[j];
                    }
                    continue;
                }
                int64_t nq = (p.hu - 1) * *wp + p.wv;
                if (nq > *nq_max) *nq_max = nq;
                for (int64_t o = 0; o < ocg; o++)
                    for (int i = 0; i < p.ni; i++)
                        for (int j = 0; j < p.nj; j++, off++) {
                            *off = o * *hp * *wp + (p.ri[i] + *mt) * *wp + p.sj[j] + *ml;
                            if (*off + nq > reach) reach = *off + nq;
                        }
            }
        if (pass == 0) {
            *mt = top;
            *ml = left;
            *hp = top + bottom;
            *wp = left + right;
        } else {
            return reach + PLANE_SLACK;
        }
    }
    return 0;
}

/* Row ih of dx's channel ch of sample n at columns b + sw*v, v < wv, from
 * a phase product's row src (NULL: no tap reads the phase, the empty
 * chains +0). Only a zero can differ from the contract (see the top): a
 * row without one is a plain strided copy, else its zeros are recomputed. */
static void phase_row_out(const bwd_in_ctx *t, int64_t n, int64_t ch, int64_t ih, int64_t b,
                          int64_t wv, const float *src) {
    const sb_conv2d_geom *g = t->g;
    int64_t sw = g->stride_w;
    float *dxr = t->dx + ((n * g->c_in + ch) * g->h + ih) * g->w;
    if (!src) {
        for (int64_t v = 0; v < wv; v++) dxr[b + sw * v] = 0.0f;
    } else if (!has_zero(wv, src)) {
        for (int64_t v = 0; v < wv; v++) dxr[b + sw * v] = src[v];
    } else {
        for (int64_t v = 0; v < wv; v++) {
            int64_t iw = b + sw * v;
            dxr[iw] = src[v] == 0.0f ? dx_chain(g, t->dy, t->w, n, ch, ih, iw) : src[v];
        }
    }
}

/* Inputs fall into stride_h x stride_w phases (ih mod sh, iw mod sw), and
 * all inputs of a phase are read by the same taps, each at a fixed output
 * offset (phase_taps). So per phase the input gradient is a product over
 * those taps only: k = (o, i, j) with i and j the phase's taps ascending,
 * the contract's order without the taps that never read these inputs
 * (a stride-blind zero-stuffed product spends 3/4 of its terms on them at
 * stride 2). A tap whose output falls outside dy still reads a stuffed
 * +0.0f: the argument at the top holds, and zeros are recomputed. Samples
 * [n0, n1) sit side by side as the columns (n, u, v) of input
 * (a + sh*u, b + sw*v). */
static bool bwd_in_phase_chunk(const bwd_in_ctx *t, int64_t n0, int64_t n1) {
    const sb_conv2d_geom *g = t->g;
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups, kk = g->kh * g->kw;
    int64_t ohw = g->oh * g->ow, sh = g->stride_h, sw = g->stride_w, nb = n1 - n0;
    int64_t ti[DX_TAPS_MAX], ri[DX_TAPS_MAX], tj[DX_TAPS_MAX], sj[DX_TAPS_MAX];
    /* A phase's columns are rows (n, u) of wv inputs each, taken a panel
     * of rows at a time so that the column matrix stays in cache between
     * the gather and the product (a stem's is tens of megabytes per
     * phase); the largest panel sizes the buffers. */
    int64_t col_max = 0, out_max = 0;
    for (int64_t a = 0; a < sh && a < g->h; a++)
        for (int64_t b = 0; b < sw && b < g->w; b++) {
            int64_t hu = (g->h - a + sh - 1) / sh, wv = (g->w - b + sw - 1) / sw;
            int64_t ni = live_taps(phase_taps(a, g->kh, sh, g->pad_h, g->dilation_h, ti, ri), ti,
                                   ri, hu, g->oh);
            int64_t nj = live_taps(phase_taps(b, g->kw, sw, g->pad_w, g->dilation_w, tj, sj), tj,
                                   sj, wv, g->ow);
            int64_t kph = ocg * ni * nj, pcols = phase_panel_rows(kph, wv, nb * hu) * wv;
            if (kph * pcols > col_max) col_max = kph * pcols;
            if (icg * pcols > out_max) out_max = icg * pcols;
        }
    float *col = sb_scratch(SB_SCRATCH_CONV,
                            (size_t)(col_max + (t->wph ? 0 : icg * ocg * kk)) * sizeof *col);
    float *out = sb_scratch(SB_SCRATCH_OPS, (size_t)out_max * sizeof *out);
    if (!col || !out) return false;
    float *own = col + col_max; /* the phase's weights, [c][(o, i, j)], when t->wph is NULL */
    int64_t woff = 0;           /* the phase's weights in t->wph */
    int32_t idx[GATHER_TABLE_MAX];
    for (int64_t a = 0; a < sh && a < g->h; a++) {
        int64_t hu = (g->h - a + sh - 1) / sh;
        int ni = live_taps(phase_taps(a, g->kh, sh, g->pad_h, g->dilation_h, ti, ri), ti, ri, hu,
                           g->oh);
        for (int64_t b = 0; b < sw && b < g->w; b++) {
            int64_t wv = (g->w - b + sw - 1) / sw, rows = nb * hu;
            int nj = live_taps(phase_taps(b, g->kw, sw, g->pad_w, g->dilation_w, tj, sj), tj, sj,
                               wv, g->ow);
            int64_t kph = ocg * ni * nj, prows = phase_panel_rows(kph, wv, rows);
            /* few positions per sample: the phase's gather table, entry
             * (a*nj + b)*hu*wv + u*wv + v the offset in dy's plane that tap
             * (a, b) reads for input (u, v), or -1 */
            bool table = hu * wv < FEW_PIXELS && (int64_t)ni * nj * hu * wv <= GATHER_TABLE_MAX;
            for (int ia = 0; table && ia < ni; ia++)
                for (int jb = 0; jb < nj; jb++)
                    for (int64_t u = 0; u < hu; u++)
                        for (int64_t v = 0; v < wv; v++) {
                            int64_t r = u + ri[ia], sc = v + sj[jb];
                            bool in = r >= 0 && r < g->oh && sc >= 0 && sc < g->ow;
                            idx[((ia * nj + jb) * hu + u) * wv + v] =
                                in ? (int32_t)(r * g->ow + sc) : -1;
                        }
            for (int64_t grp = 0; grp < g->groups; grp++, woff += icg * kph) {
                const float *wph = t->wph ? t->wph + woff : own;
                if (kph > 0 && !t->wph)
                    phase_weights(g, t->w + grp * ocg * icg * kk, ni, ti, nj, tj, own);
                for (int64_t q0 = 0; q0 < rows; q0 += prows) {
                    int64_t q1 = q0 + prows < rows ? q0 + prows : rows, pcols = (q1 - q0) * wv;
                    if (kph > 0) {
                        /* col[(o, i, j)][(n, u, v)] = dy[n][o][u + ri][v + sj], +0 outside dy */
                        for (int64_t o = 0; o < ocg; o++)
                            for (int ia = 0; ia < ni; ia++)
                                for (int jb = 0; jb < nj; jb++) {
                                    float *dst = col + ((o * ni + ia) * nj + jb) * pcols;
                                    const int32_t *e = idx + (ia * nj + jb) * hu * wv;
                                    for (int64_t q = q0; q < q1; q++, dst += wv) {
                                        int64_t n = n0 + q / hu, u = q % hu, r = u + ri[ia];
                                        const float *dyo =
                                            t->dy + (n * g->c_out + grp * ocg + o) * ohw;
                                        if (table && u == 0 && q + hu <= q1) {
                                            /* a whole sample's rows at once */
                                            gather_table(dyo, e, hu * wv, dst);
                                            q += hu - 1;
                                            dst += (hu - 1) * wv;
                                        } else if (table)
                                            gather_table(dyo, e + u * wv, wv, dst);
                                        else if (r < 0 || r >= g->oh)
                                            memset(dst, 0, (size_t)wv * sizeof *dst);
                                        else
                                            gather_row(dyo + r * g->ow, g->ow, sj[jb], 1, wv, dst);
                                    }
                                }
                        sb_cpu_sgemm('N', 'N', icg, pcols, kph, wph, kph, col, pcols, out, pcols,
                                     false);
                    }
                    for (int64_t c = 0; c < icg; c++)
                        for (int64_t q = q0; q < q1; q++)
                            phase_row_out(t, n0 + q / hu, grp * icg + c, a + sh * (q % hu), b, wv,
                                          kph > 0 ? out + c * pcols + (q - q0) * wv : NULL);
                }
            }
        }
    }
    return true;
}

/* The zero-stuffed product without its column matrix: at stride 1 the
 * column of (ih, iw) for tap (o, i, j) is the padded dy plane read at
 * boff[(o, i, j)] + ih*wp + iw (the one phase's columns of stride 1 come
 * from exactly there), so sb_cpu_sgemm_offset computes the same chains from the planes
 * themselves. The zero fix-up is applied while copying out. */
static void bwd_in_implicit_one(const bwd_in_ctx *t, int64_t n, int64_t grp) {
    const sb_conv2d_geom *g = t->g;
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups;
    int64_t kdim = ocg * g->kh * g->kw, hw = g->h * g->w;
    int64_t mt, ml, hp, wp;
    dy_pad_layout(g, &mt, &ml, &hp, &wp);
    /* The farthest tap is (ocg-1, 0, 0): offsets fall with i and j. */
    int64_t planes = ocg * hp * wp,
            reach = t->boff[(ocg - 1) * g->kh * g->kw] + t->nq + PLANE_SLACK;
    /* A 1x1 kernel without padding stuffs no term: its products are the
     * contract's chains, zeros included, and (with rows of x's length)
     * they go straight into dx. Otherwise only a zero can differ from the
     * contract (see the top) and is recomputed. */
    bool stuffed = !(g->kh == 1 && g->kw == 1 && g->pad_h == 0 && g->pad_w == 0);
    bool in_place = !stuffed && wp == g->w;
    float *dxg = t->dx + (n * g->c_in + grp * icg) * hw;
    float *pad = sb_scratch(SB_SCRATCH_CONV, (size_t)(planes > reach ? planes : reach) * sizeof *pad);
    float *out = in_place ? dxg : sb_scratch(SB_SCRATCH_OPS, (size_t)(icg * t->nq) * sizeof *out);
    bool done = false;
    if (pad && out) {
        dy_pad_fill(g, t->dy + (n * g->c_out + grp * ocg) * g->oh * g->ow, ocg, mt, ml, hp, wp,
                    pad);
        if (planes < reach) memset(pad + planes, 0, (size_t)(reach - planes) * sizeof *pad);
        if (t->apack) {
            sb_cpu_sgemm_offset_packed(icg, t->nq, kdim, t->apack + grp * t->pstride, pad,
                                       t->boff, out, t->nq);
            done = true;
        } else {
            done = sb_cpu_sgemm_offset(icg, t->nq, kdim, t->wt + grp * icg * kdim, kdim, pad,
                                       t->boff, out, t->nq);
        }
    }
    if (in_place && done) return;
    for (int64_t c = 0; c < icg; c++)
        for (int64_t ih = 0; ih < g->h; ih++) {
            float *dst = dxg + c * hw + ih * g->w;
            if (done) {
                memcpy(dst, out + c * t->nq + ih * wp, (size_t)g->w * sizeof *dst);
                if (!stuffed || !has_zero(g->w, dst)) continue;
            }
            for (int64_t iw = 0; iw < g->w; iw++)
                if (!done || dst[iw] == 0.0f)
                    dst[iw] = dx_chain(g, t->dy, t->w, n, grp * icg + c, ih, iw);
        }
}

static void bwd_in_ref_range(void *vctx, int64_t n0, int64_t n1) {
    const bwd_in_ctx *t = vctx;
    const sb_conv2d_geom *g = t->g;
    sb_conv2d_geom s = slice(g, n0, n1);
    sb_ref_conv2d_backward_input(&s, t->dy + n0 * g->c_out * g->oh * g->ow, t->w,
                                 t->dx + n0 * g->c_in * g->h * g->w);
}

/* One sample's phase products without column matrices (phase_pad_layout:
 * the columns are read where they lie in one zero-margined copy of dy),
 * so sb_cpu_sgemm_offset computes the chains of the column-matrix path,
 * stuffed zeros included. False (dx partly written) when a buffer or the
 * kernel is missing. */
static bool bwd_in_phases_implicit(const bwd_in_ctx *t, int64_t n) {
    const sb_conv2d_geom *g = t->g;
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups, planes = ocg * t->hp * t->wp;
    float *pad = sb_scratch(SB_SCRATCH_CONV, (size_t)(planes > t->reach ? planes : t->reach) *
                                                 sizeof(float));
    float *out = sb_scratch(SB_SCRATCH_OPS, (size_t)(icg * t->nq) * sizeof *out);
    if (!pad || !out) return false;
    if (planes < t->reach) memset(pad + planes, 0, (size_t)(t->reach - planes) * sizeof *pad);
    for (int64_t grp = 0; grp < g->groups; grp++) {
        dy_pad_fill(g, t->dy + (n * g->c_out + grp * ocg) * g->oh * g->ow, ocg, t->mt, t->ml, t->hp,
                    t->wp, pad);
        const float *wph = t->wph; /* phases, then groups (phase_weights_all) */
        const int64_t *boff = t->boff;
        for (int64_t a = 0; a < g->stride_h && a < g->h; a++)
            for (int64_t b = 0; b < g->stride_w && b < g->w; b++) {
                dx_phase p;
                dx_phase_at(g, a, b, &p);
                int64_t kph = ocg * p.ni * p.nj, nq = (p.hu - 1) * t->wp + p.wv;
                if (kph > 0 && !sb_cpu_sgemm_offset(icg, nq, kph, wph + grp * icg * kph, kph, pad,
                                                    boff, out, nq))
                    return false;
                for (int64_t c = 0; c < icg; c++)
                    for (int64_t u = 0; u < p.hu; u++)
                        phase_row_out(t, n, grp * icg + c, a + g->stride_h * u, b, p.wv,
                                      kph > 0 ? out + c * nq + u * t->wp : NULL);
                boff += kph;
                wph += g->groups * icg * kph;
            }
    }
    return true;
}

/* Chunks of nb samples (nb = 1 unless batch_chunk batches them). */
static void bwd_in_phase_range(void *vctx, int64_t c0, int64_t c1) {
    const bwd_in_ctx *t = vctx;
    for (int64_t c = c0; c < c1; c++) {
        int64_t n0 = c * t->nb, n1 = n0 + t->nb < t->g->n ? n0 + t->nb : t->g->n;
        if (t->phase_implicit && bwd_in_phases_implicit(t, n0)) continue;
        if (!bwd_in_phase_chunk(t, n0, n1)) bwd_in_ref_range(vctx, n0, n1);
    }
}

static void bwd_in_implicit_range(void *vctx, int64_t n0, int64_t n1) {
    const bwd_in_ctx *t = vctx;
    for (int64_t n = n0; n < n1; n++)
        for (int64_t grp = 0; grp < t->g->groups; grp++) bwd_in_implicit_one(t, n, grp);
}

void sb_cpu_conv2d_backward_input(const sb_conv2d_geom *g, const float *dy, const float *weight,
                                  float *dx) {
    int64_t nw = g->c_out * (g->c_in / g->groups) * g->kh * g->kw;
    if (degenerate(g) || nw == 0 || g->kh > DX_TAPS_MAX || g->kw > DX_TAPS_MAX) {
        sb_ref_conv2d_backward_input(g, dy, weight, dx);
        return;
    }
    if (sb_cpu_conv2d_dw_backward_input(g, dy, weight, dx)) return; /* depthwise, small groups */
    if (sb_cpu_conv2d_few_backward_input(g, dy, weight, dx)) return;  /* few pixels per plane */
    bwd_in_ctx t = {.g = g, .dy = dy, .w = weight, .dx = dx, .nb = 1};
    bool finite = sb_cpu_conv2d_weights_finite(nw, weight);
    int64_t kdim = (g->c_out / g->groups) * g->kh * g->kw;
    /* A sample's share of a phase product is one phase's inputs (all of
     * them at stride 1): a quarter of the plane at stride 2, too narrow a
     * product per sample from 8x8 planes down. */
    int64_t phase_inputs = ((g->h + g->stride_h - 1) / g->stride_h) *
                           ((g->w + g->stride_w - 1) / g->stride_w);
    t.nb = batch_chunk_shared(g->n, phase_inputs, kdim);
    bool implicit = t.nb == 1 && sb_cpu_sgemm_offset_available() && g->stride_h == 1 &&
                    g->stride_w == 1;
    if (!finite) {
        /* 0 * inf = NaN: the stuffed terms would not be no-ops. */
        over_samples(g->n, bwd_in_ref_range, &t);
        return;
    }
    if (!implicit) {
        /* the phase products' weights, gathered once (else by each chunk),
         * and with one sample per product and offset kernels, the offsets
         * that read their columns in place */
        int64_t kdim_all = (g->c_out / g->groups) * g->kh * g->kw;
        float *wph = sb_scratch(SB_SCRATCH_CONV_AUX, (size_t)((nw + 1) / 2 * 2) * sizeof *wph +
                                                         (size_t)kdim_all * sizeof(int64_t));
        if (wph) {
            phase_weights_all(g, weight, wph);
            t.wph = wph;
            if (t.nb == 1 && sb_cpu_sgemm_offset_available()) {
                int64_t *boff = (int64_t *)(void *)(wph + (nw + 1) / 2 * 2);
                t.reach = phase_pad_layout(g, &t.mt, &t.ml, &t.hp, &t.wp, &t.nq, boff);
                t.boff = boff;
                t.phase_implicit = true;
            }
        }
        over_samples((g->n + t.nb - 1) / t.nb, bwd_in_phase_range, &t);
        return;
    }
    /* wt, then the offset table, 8-byte aligned after it, then wt packed
     * once for every sample (the product's A panels) */
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups, kk = g->kh * g->kw;
    int64_t wt_floats = (nw + 1) / 2 * 2, pstride = sb_cpu_sgemm_offset_packed_floats(icg, kdim);
    float *wt = sb_scratch(SB_SCRATCH_CONV_AUX,
                           (size_t)wt_floats * sizeof *wt + (size_t)kdim * sizeof(int64_t) +
                               (size_t)(g->groups * pstride) * sizeof(float));
    if (!wt) {
        over_samples(g->n, bwd_in_ref_range, &t);
        return;
    }
    for (int64_t grp = 0; grp < g->groups; grp++)
        for (int64_t c = 0; c < icg; c++)
            for (int64_t o = 0; o < ocg; o++)
                memcpy(wt + ((grp * icg + c) * ocg + o) * kk,
                       weight + ((grp * ocg + o) * icg + c) * kk, (size_t)kk * sizeof *wt);
    t.wt = wt;
    int64_t mt, ml, hp, wp, *boff = (int64_t *)(void *)(wt + wt_floats);
    dy_pad_layout(g, &mt, &ml, &hp, &wp);
    for (int64_t o = 0; o < ocg; o++)
        for (int64_t i = 0; i < g->kh; i++)
            for (int64_t j = 0; j < g->kw; j++)
                boff[(o * g->kh + i) * g->kw + j] = o * hp * wp +
                                                    (mt + g->pad_h - i * g->dilation_h) * wp +
                                                    ml + g->pad_w - j * g->dilation_w;
    t.boff = boff;
    t.nq = (g->h - 1) * wp + g->w;
    if (pstride > 0) {
        float *apack = (float *)(void *)(boff + kdim);
        for (int64_t grp = 0; grp < g->groups; grp++)
            sb_cpu_sgemm_offset_pack(icg, kdim, wt + grp * icg * kdim, kdim, apack + grp * pstride);
        t.apack = apack;
        t.pstride = pstride;
    }
    over_samples(g->n, bwd_in_implicit_range, &t);
}

/* ---- backward weight ---- */

/* Taps (rows of dW^T) per task: a panel's column matrix (width x the
 * positions of one product) is kept near L2's size, and panels narrow (to
 * 16 taps at least) until every thread has two tasks. */
#define BWD_W_PANEL_MAX 256
#define BWD_W_PANEL_MIN 16
#define BWD_W_ROWS_FLOATS (1 << 17) /* floats of one panel's im2row matrix */
#define BWD_W_COLS_FLOATS (1 << 20) /* floats of one panel's column matrix (transposed) */
/* Output pixels per sample from which the transposed product is taken
 * (measured on ResNet shapes: faster from 16x16 up, slower at 8x8 and 4x4) */
#define BWD_W_COLS_MIN_PIXELS 256
/* Below it the im2row products batch samples (their k terms one after the
 * other): one sample of an 8x8 plane is a product of k = 64 that reloads
 * and stores all of dW's panel for 64 terms. */
#define BWD_W_FEW_PIXELS BWD_W_COLS_MIN_PIXELS

static int64_t bwd_w_width(const sb_conv2d_geom *g, int64_t kdim, int64_t panel_floats) {
    int64_t ohw = g->oh * g->ow, per_product = ohw < BWD_W_FEW_PIXELS ? BATCH_COLS : ohw;
    int64_t width = panel_floats / per_product;
    if (width > BWD_W_PANEL_MAX) width = BWD_W_PANEL_MAX;
    int64_t tasks = 2 * (int64_t)sb_num_threads();
    if (tasks > 2 && g->groups * ((kdim + width - 1) / width) < tasks) {
        int64_t per_group = (tasks + g->groups - 1) / g->groups;
        width = (kdim + per_group - 1) / per_group;
    }
    width = (width + BWD_W_PANEL_MIN - 1) / BWD_W_PANEL_MIN * BWD_W_PANEL_MIN;
    return width < BWD_W_PANEL_MIN ? BWD_W_PANEL_MIN : width;
}

typedef struct {
    const sb_conv2d_geom *g;
    const float *dy, *x;
    float *dweight;
    float *dwt;            /* transposed: dW^T per group, [grp][t][o]; else NULL */
    int64_t panels, width; /* per group: panels of `width` taps */
    int64_t nb;            /* samples per product (batch_chunk) */
    const float *dyt;      /* nb > 1: dy as (c_out, (n, r, s)), else NULL */
    const int32_t *table;  /* nb > 1: im2col_table over every tap, or NULL */
} bwd_w_ctx;

/* Where dW[grp * ocg + o][tp] is computed: dweight itself, or its place in
 * dW^T (the transposed product's buffer). */
static float *dw_slot(const bwd_w_ctx *t, int64_t grp, int64_t o, int64_t tp) {
    const sb_conv2d_geom *g = t->g;
    int64_t ocg = g->c_out / g->groups, kdim = g->c_in / g->groups * g->kh * g->kw;
    return t->dwt ? t->dwt + (grp * kdim + tp) * ocg + o : t->dweight + (grp * ocg + o) * kdim + tp;
}

/* dW of the taps [t0, t1) of group grp, straight from the contract's
 * chains (when no scratch memory is left). */
static void bwd_w_chains(const bwd_w_ctx *t, int64_t grp, int64_t t0, int64_t t1) {
    const sb_conv2d_geom *g = t->g;
    int64_t ocg = g->c_out / g->groups, kk = g->kh * g->kw;
    for (int64_t o = 0; o < ocg; o++)
        for (int64_t tp = t0; tp < t1; tp++)
            *dw_slot(t, grp, o, tp) = sb_ref_conv2d_dw_chain(g, t->dy, t->x, grp * ocg + o,
                                                             tp / kk, tp % kk / g->kw, tp % g->kw);
}

/* A task owns a panel of taps [t0, t1) of one group for every output
 * channel of that group, and runs those chains over the whole batch sample
 * after sample, continuing them (continue_chain) from the previous sample,
 * so k is never split and no batch-sized matrix is built. With few pixels
 * nb samples go into one product: their matrices stacked (k = (n, r, s)
 * ascending) and dy's rows regrouped as (c_out, (n, r, s)) (dyt). */

/* dW[o][t0..t1) += dY . rows: one sample's im2row (positions x taps,
 * still in cache) as the right operand. */
static bool bwd_w_panel_rows(const bwd_w_ctx *t, int64_t grp, int64_t t0, int64_t t1) {
    const sb_conv2d_geom *g = t->g;
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups, width = t1 - t0;
    int64_t kdim = icg * g->kh * g->kw, ohw = g->oh * g->ow, hw = g->h * g->w;
    float padded[PADDED_ROW_MAX];
    float *dw = t->dweight + grp * ocg * kdim + t0;
    float *rows = sb_scratch(SB_SCRATCH_CONV, (size_t)(t->nb * ohw * width) * sizeof *rows);
    if (!rows) return false;
    for (int64_t n0 = 0; n0 < g->n; n0 += t->nb) {
        int64_t n1 = n0 + t->nb < g->n ? n0 + t->nb : g->n;
        for (int64_t n = n0; n < n1; n++)
            im2row(g, t->x + n * g->c_in * hw, grp * icg, t0, t1, rows + (n - n0) * ohw * width,
                   width, padded);
        const float *a = t->dyt ? t->dyt + grp * ocg * g->n * ohw + n0 * ohw
                                : t->dy + (n0 * g->c_out + grp * ocg) * ohw;
        sb_cpu_sgemm('N', 'N', ocg, width, (n1 - n0) * ohw, a, t->dyt ? g->n * ohw : ohw, rows,
                     width, dw, kdim, n0 > 0);
    }
    return true;
}

/* dW[o][t0..t1) += dY . col^T for batched samples: the panel's im2col
 * rows (taps x (n, r, s)) gathered through the plane table, the product
 * reading them transposed (k = (n, r, s) ascending, as im2row's). An
 * im2row of an 8x8 plane is 3-float copies, one per position and tap row. */
static bool bwd_w_panel_gather(const bwd_w_ctx *t, int64_t grp, int64_t t0, int64_t t1) {
    const sb_conv2d_geom *g = t->g;
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups, width = t1 - t0;
    int64_t kdim = icg * g->kh * g->kw, kk = g->kh * g->kw, ohw = g->oh * g->ow, hw = g->h * g->w;
    int64_t cols = t->nb * ohw;
    float *dw = t->dweight + grp * ocg * kdim + t0;
    float *col = sb_scratch(SB_SCRATCH_CONV, (size_t)(width * cols) * sizeof *col);
    if (!col) return false;
    for (int64_t n0 = 0; n0 < g->n; n0 += t->nb) {
        int64_t n1 = n0 + t->nb < g->n ? n0 + t->nb : g->n;
        for (int64_t n = n0; n < n1; n++)
            for (int64_t tp = t0; tp < t1; tp++)
                gather_table(t->x + (n * g->c_in + grp * icg + tp / kk) * hw,
                             t->table + tp % kk * ohw, ohw, col + (tp - t0) * cols + (n - n0) * ohw);
        sb_cpu_sgemm('N', 'T', ocg, width, (n1 - n0) * ohw,
                     t->dyt + grp * ocg * g->n * ohw + n0 * ohw, g->n * ohw, col, cols, dw, kdim,
                     n0 > 0);
    }
    return true;
}

/* dW^T[t0..t1)[o] += col . dY^T: the panel's im2col rows (taps x
 * positions; a 1x1's are x's planes, read in place) as the left operand,
 * dY as the transposed right one. For planes of many pixels this product
 * keeps its operands in cache better and builds no im2row transpose. */
static bool bwd_w_panel_cols(const bwd_w_ctx *t, int64_t grp, int64_t t0, int64_t t1) {
    const sb_conv2d_geom *g = t->g;
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups, width = t1 - t0;
    int64_t kdim = icg * g->kh * g->kw, ohw = g->oh * g->ow, hw = g->h * g->w;
    bool direct = reads_x_directly(g) && t->nb == 1;
    float *dwt = t->dwt + (grp * kdim + t0) * ocg;
    int64_t cols = t->nb * ohw;
    float *col = direct ? NULL : sb_scratch(SB_SCRATCH_CONV, (size_t)(width * cols) * sizeof *col);
    if (!direct && !col) return false;
    for (int64_t n0 = 0; n0 < g->n; n0 += t->nb) {
        int64_t n1 = n0 + t->nb < g->n ? n0 + t->nb : g->n, k = (n1 - n0) * ohw;
        const float *a = direct ? t->x + (n0 * g->c_in + grp * icg + t0) * hw : col;
        for (int64_t n = n0; n < n1 && !direct; n++)
            im2col_tap_range(g, t->x + n * g->c_in * hw, grp * icg, t0, t1, col + (n - n0) * ohw,
                             cols);
        const float *b = t->dyt ? t->dyt + grp * ocg * g->n * ohw + n0 * ohw
                                : t->dy + (n0 * g->c_out + grp * ocg) * ohw;
        sb_cpu_sgemm('N', 'T', width, ocg, k, a, direct ? hw : cols, b, t->dyt ? g->n * ohw : ohw,
                     dwt, ocg, n0 > 0);
    }
    return true;
}

static void bwd_w_range(void *vctx, int64_t p0, int64_t p1) {
    const bwd_w_ctx *t = vctx;
    int64_t kdim = t->g->c_in / t->g->groups * t->g->kh * t->g->kw;
    for (int64_t p = p0; p < p1; p++) {
        int64_t grp = p / t->panels, t0 = p % t->panels * t->width;
        int64_t t1 = t0 + t->width < kdim ? t0 + t->width : kdim;
        bool done = t->dwt     ? bwd_w_panel_cols(t, grp, t0, t1)
                    : t->table ? bwd_w_panel_gather(t, grp, t0, t1)
                               : bwd_w_panel_rows(t, grp, t0, t1);
        if (!done) bwd_w_chains(t, grp, t0, t1); /* out of scratch memory */
    }
}

void sb_cpu_conv2d_backward_weight(const sb_conv2d_geom *g, const float *dy, const float *x,
                                   float *dweight) {
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups, kdim = icg * g->kh * g->kw;
    if (degenerate(g) || kdim == 0) {
        sb_ref_conv2d_backward_weight(g, dy, x, dweight);
        return;
    }
    if (sb_cpu_conv2d_dw_backward_weight(g, dy, x, dweight)) return; /* depthwise, small groups */
    if (sb_cpu_conv2d_tap_backward_weight(g, dy, x, dweight)) return; /* per tap, x transposed */
    int64_t ohw = g->oh * g->ow;
    bool wide_row = g->w + 2 * g->pad_w + (g->kw - 1) * g->dilation_w + 1 > PADDED_ROW_MAX;
    bool transposed = wide_row || (ohw >= BWD_W_COLS_MIN_PIXELS && ohw >= FEW_PIXELS);
    int64_t width = bwd_w_width(g, kdim, transposed ? BWD_W_COLS_FLOATS : BWD_W_ROWS_FLOATS);
    int64_t nb = batch_chunk(g->n, ohw, width, transposed ? FEW_PIXELS : BWD_W_FEW_PIXELS);
    /* (transposed) dW^T, then (nb > 1) dyt[oc][(n, q)] = dy[n][oc][q]: the
     * k terms of a batched product consecutive. The tasks only read dyt. */
    size_t dwt_floats = transposed ? (size_t)(g->c_out * kdim) : 0;
    size_t dyt_floats = nb > 1 ? (size_t)(g->c_out * g->n * ohw) : 0;
    float *aux = sb_scratch(SB_SCRATCH_CONV_AUX, (dwt_floats + dyt_floats) * sizeof *aux);
    bwd_w_ctx t = {g, dy, x, dweight, NULL, (kdim + width - 1) / width, width, 1, NULL, NULL};
    if (!aux && (transposed || nb > 1)) {
        sb_ref_conv2d_backward_weight(g, dy, x, dweight);
        return;
    }
    if (transposed) t.dwt = aux;
    if (nb > 1) {
        float *dyt = aux + dwt_floats;
        for (int64_t oc = 0; oc < g->c_out; oc++)
            for (int64_t n = 0; n < g->n; n++)
                memcpy(dyt + (oc * g->n + n) * ohw, dy + (n * g->c_out + oc) * ohw,
                       (size_t)ohw * sizeof *dyt);
        t.nb = nb;
        t.dyt = dyt;
    }
    int32_t table[GATHER_TABLE_MAX];
    if (nb > 1 && !transposed && im2col_table(g, table)) t.table = table;
    sb_parallel_for(g->groups * t.panels, 1, bwd_w_range, &t);
    if (!transposed) return;
    /* dW[oc][t] = dW^T[grp][t][o], in square blocks: a weight of 512 x 4608
     * read down its columns one element at a time misses the cache on
     * nearly every read */
    enum { TB = 32 };
    for (int64_t grp = 0; grp < g->groups; grp++)
        for (int64_t t0 = 0; t0 < kdim; t0 += TB)
            for (int64_t o0 = 0; o0 < ocg; o0 += TB) {
                int64_t t1 = t0 + TB < kdim ? t0 + TB : kdim, o1 = o0 + TB < ocg ? o0 + TB : ocg;
                for (int64_t o = o0; o < o1; o++)
                    for (int64_t tp = t0; tp < t1; tp++)
                        dweight[(grp * ocg + o) * kdim + tp] = *dw_slot(&t, grp, o, tp);
            }
}

/* ---- backward bias ---- */

typedef struct {
    const sb_conv2d_geom *g;
    const float *dy;
    float *db;
} bwd_b_ctx;

static void bwd_b_range(void *vctx, int64_t o0, int64_t o1) {
    const bwd_b_ctx *t = vctx;
    const sb_conv2d_geom *g = t->g;
    int64_t ohw = g->oh * g->ow;
    for (int64_t oc = o0; oc < o1; oc++) {
        sb_sum_acc acc;
        sb_sum_init(&acc);
        /* Planes in sample order: the canonical sum over (n, r, s). */
        for (int64_t n = 0; n < g->n; n++) sb_cpu_sum_add_n(&acc, t->dy + (n * g->c_out + oc) * ohw, ohw);
        t->db[oc] = sb_sum_result(&acc);
    }
}

void sb_cpu_conv2d_backward_bias(const sb_conv2d_geom *g, const float *dy, float *dbias) {
    bwd_b_ctx t = {g, dy, dbias};
    sb_parallel_for(g->c_out, 1, bwd_b_range, &t);
}
