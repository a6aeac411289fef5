/* Few-pixel convolutions by position class (src/cpu/conv_internal.h): the
 * forward, input gradient and weight gradient over planes of at most 64
 * positions (the weight gradient is at the end of the file),
 * bit-identical to src/ref/conv2d.c.
 *
 * Why: the deep stages of a CNN are many channels over 1x1 .. 8x8 planes,
 * and there padding is most of a padded kernel's taps. Under a padded 3x3
 * a 2x2 plane's positions each read 4 of the 9 taps, a 4x4 plane's 100 of
 * 144 (all 9 only at its 4 inner positions). A product over every tap
 * spends the rest on +0.0f.
 *
 * Position classes. Along one axis, a destination coordinate (an output
 * row for the forward, an input row for the input gradient) is linked to
 * the source by some of the kernel's taps; coordinates linked by the same
 * taps form an axis class (a 4x4 plane under a padded 3x3: row 0 by taps
 * 1-2, rows 1-2 by 0-2, row 3 by 0-1). A position class is a row class
 * times a column class: its positions share their taps (the row taps times
 * the column taps). Per class and group the convolution is one GEMM
 *
 *     out[row][(n, p)] = chain over k = (ch, a, b) of W[row][(ch, a, b)] *
 *                        src[n][ch][source of position p through tap (a, b)]
 *
 * with k ascending: the contract's order with the class's unlinked taps
 * left out. The weights are packed once per call, over the taps some class
 * reads, and each class's product reads its terms through a list (the
 * gather kernels, sb_cpu_sgemm_gather). Two column layouts:
 *   - gathered: the columns (n, p), nb samples side by side, copied into a
 *     column matrix through a table per class (every entry a real source
 *     value);
 *   - transposed (16 samples or more, where the taps overlap enough that
 *     the column matrix would be the larger move): the source transposed
 *     once to (channel, position, sample), one product per destination
 *     position whose columns are the batch, its B rows read where they lie
 *     in the transposed source; the result transposed back.
 *
 * Input gradient: the contract's chain for dx[ih][iw] has a term for each
 * tap that reads (ih, iw) and no other (src/ref/conv2d.c), so the class
 * product is that chain term for term, whatever the values.
 * Forward: the contract's chain has a term for every tap, fmaf(+0, w, acc)
 * for a tap in the padding. With w finite such a term leaves a nonzero
 * accumulator unchanged and can only flip the sign of a zero one, and a
 * zero accumulator feeds the next term as its opposite-signed twin does
 * unless that term's exact value is zero too (then both results are
 * zeros). So a class that leaves taps out differs from the contract only
 * where both results are zeros, and each of its zeros is recomputed with
 * the contract's chain; a weight that is inf or NaN (0 * inf = NaN) sends
 * the call back to the caller's other paths.
 *
 * Threads: tasks are (chunk of samples, class, block of rows) or
 * (position, block of rows), each writing its own outputs; with few of
 * them the rows (output channels, or input channels for dx) are split so
 * that every thread has a share. */
#include <stdint.h>
#include <string.h>
#include "cpu/conv_internal.h"
#include "cpu/cpu.h"
#include "samebits/runtime.h"

#define CLASS_PIXELS 65        /* destination positions per plane below which this path runs:
                                  up to 8x8 (64->64 3x3 @8, batch 32, forward: 2.02 ms on
                                  the per-sample path, 1.55 ms here) */
#define AXIS_MAX 64            /* coordinates per axis and taps per kernel axis (64-bit masks) */
#define CLASS_MAX 64           /* position classes: at most one per position */
#define CLASS_COLS 512         /* columns (samples x positions) of a chunk's whole plane */
#define CLASS_FLOATS (1 << 21) /* cap on a class's column matrix: 8 MB */
#define COLS_SLACK 64          /* floats past a column matrix that an offset kernel may read */
#define TRANSPOSED_BATCH 16    /* samples from which the source may be transposed instead of gathered */
#define ROW_BLOCK_ALIGN 24     /* row blocks are whole tiles of 4, 6, 8 and 12 rows */
#define TAP_WGRAD_MIN_CHANNELS 16 /* input channels per group from which larger planes' weight
                                     gradients run per tap (its products' columns) */
#define TAP_WGRAD_MAX_FLOATS (1 << 26) /* the weight gradient's copies of x and dy: 256 MB */

/* One axis: destination coordinate q and source coordinate src are linked
 * by tap t when the tap reads src for q (forward: src = q*stride - pad +
 * t*dilation, an input row inside [0, src_n); input gradient: the output
 * row src inside [0, src_n) whose tap t reads input q). */
typedef struct {
    int64_t k, stride, pad, dilation, src_n, dst_n;
    bool input_grad;
} axis_geom;

static bool axis_link(const axis_geom *ax, int64_t q, int64_t t, int64_t *src) {
    if (!ax->input_grad) {
        *src = q * ax->stride - ax->pad + t * ax->dilation;
        return *src >= 0 && *src < ax->src_n;
    }
    int64_t d = q + ax->pad - t * ax->dilation;
    if (d < 0 || d % ax->stride != 0) return false;
    *src = d / ax->stride;
    return *src < ax->src_n;
}

/* An axis's classes: coordinates linked by the same taps (mask bit t),
 * classes in order of their first coordinate, coordinates ascending. */
typedef struct {
    int n;
    uint64_t mask[AXIS_MAX];
    int count[AXIS_MAX];
    int coord[AXIS_MAX][AXIS_MAX];
} axis_classes;

static void axis_classify(const axis_geom *ax, axis_classes *ac) {
    ac->n = 0;
    for (int64_t q = 0; q < ax->dst_n; q++) {
        uint64_t mask = 0;
        for (int64_t t = 0, src; t < ax->k; t++)
            if (axis_link(ax, q, t, &src)) mask |= (uint64_t)1 << t;
        int c = 0;
        while (c < ac->n && ac->mask[c] != mask) c++;
        if (c == ac->n) ac->mask[ac->n] = mask, ac->count[ac->n++] = 0;
        ac->coord[c][ac->count[c]++] = (int)q;
    }
}

static int popcount64(uint64_t v) {
    int n = 0;
    for (; v; v &= v - 1) n++;
    return n;
}

/* The taps of a mask, ascending; returns their count. */
static int mask_taps(uint64_t mask, int64_t *tap) {
    int n = 0;
    for (int t = 0; t < AXIS_MAX; t++)
        if (mask >> t & 1) tap[n++] = t;
    return n;
}

/* One position class. Tables (offsets into the call's buffers):
 *   src_at[t*npos + p]: the source plane offset tap t reads for position p
 *   col_at[t*npos + p]: its place in a sample's block of the column matrix
 *                       (row t of channel 0, column p: t*ldc + p)
 *   dst_at[p]:          position p's offset in the destination plane
 *   kidx[(ch, t)]:      term (ch, t)'s index among the packed A's terms,
 *                       (ch*nui + its tap row's index)*nuj + its column's
 *   boff[(ch, t)]:      its row of the column matrix, (ch*ntap + t)*ldc */
typedef struct {
    int ntap, npos;         /* taps, positions */
    int64_t kdim, ldc;      /* terms (chans * ntap); columns of a full chunk */
    int32_t *src_at, *col_at, *dst_at;
    int64_t *kidx, *boff;
    int64_t *tboff; /* transposed: position p's term (ch, t) at src_t row
                     * ch*src_plane + src_at[t*npos + p], tboff[p*kdim + (ch, t)] */
    int64_t *aoff;  /* per row block b: aoff[b*kdim + p] = kidx[p] * its panels' height */
    bool skips; /* forward: fewer taps than the kernel's (zeros recomputed) */
    /* src_at of every tap, and dst_at, run through consecutive offsets (a
     * 1x1 unpadded kernel's one class): gathers and scatters of whole runs */
    bool src_run, dst_run;
} pos_class;

typedef struct {
    const sb_conv2d_geom *g;
    bool input_grad;
    const float *src, *w, *bias;
    float *dst;
    int64_t m, chans;        /* per group: rows of a product, channels of its k */
    int64_t src_c, dst_c;    /* channels of the source and destination tensors */
    int64_t src_w, dst_w, src_plane, dst_plane;
    /* The product's A per group, packed once for every class: row i, term
     * p = (ch, a, b) over the taps some class reads (rows ui[a], columns
     * uj[b]: the unions of the axis classes' taps) at w_group[i*lda +
     * acol[p]]; kdim_all = chans * nui * nuj terms. */
    int64_t lda, kdim_all;
    int nui, nuj;
    int64_t ui[AXIS_MAX], uj[AXIS_MAX];
    int64_t *acol;
    int ncls;
    pos_class cls[CLASS_MAX];
    int64_t nb, chunks, blocks, block_rows;
    float *wbuf;
    int64_t *wofs;    /* (grp, block): its packed A at wbuf + wofs[grp*blocks + block] */
    int64_t *panels;  /* (grp, block): its panels, the first at panels[grp*blocks + block] */
    int64_t npanels;  /* in all */
    unsigned char *nonfinite; /* per panel, when the forward leaves taps out: an inf or NaN weight */
    /* The transposed layout (see the top): the source transposed, src_t
     * (src_c, src_plane, n), one product per destination position over the
     * batch's columns (no column matrix), into dst_t (dst_c, dst_plane,
     * n), transposed back at the end. */
    bool transposed;
    float *src_t, *dst_t;
    signed char cls_of[CLASS_PIXELS], index_in[CLASS_PIXELS]; /* per destination position */
} class_ctx;

/* Rows of row block b when m rows are cut into blocks of `size`. */
static int64_t rows_in_block(int64_t m, int64_t size, int64_t b) {
    return m - b * size < size ? m - b * size : size;
}

static int64_t block_rows(const class_ctx *t, int64_t b) {
    return rows_in_block(t->m, t->block_rows, b);
}

/* The rows per block of an m-row product split into tasks with `units`
 * tasks per block: every row in one block, unless that leaves fewer than
 * two tasks per thread; then blocks of whole ROW_BLOCK_ALIGN rows. */
static int64_t row_block_size(int64_t m, int64_t units) {
    int threads = sb_in_parallel_region() ? 1 : sb_num_threads();
    if (threads < 2 || units >= 2 * threads) return m;
    int64_t want = (2 * threads + units - 1) / units, size = (m + want - 1) / want;
    size = (size + ROW_BLOCK_ALIGN - 1) / ROW_BLOCK_ALIGN * ROW_BLOCK_ALIGN;
    return size < m ? size : m;
}

static const float *group_weights(const class_ctx *t, int64_t grp) {
    const sb_conv2d_geom *g = t->g;
    return t->w + grp * (g->c_out / g->groups) * (g->c_in / g->groups) * g->kh * g->kw;
}

/* Panels [i0, i1) of all (grp, block) packed As (panel i of the call
 * belongs to the last (grp, block) whose first panel is <= i). */
static void pack_range(void *vctx, int64_t i0, int64_t i1) {
    const class_ctx *t = vctx;
    int64_t gb = 0, count = t->g->groups * t->blocks;
    for (int64_t i = i0; i < i1; i++) {
        while (gb + 1 < count && t->panels[gb + 1] <= i) gb++;
        int64_t b = gb % t->blocks, grp = gb / t->blocks, ip = i - t->panels[gb];
        const float *a = group_weights(t, grp) + b * t->block_rows * t->lda;
        int64_t rows = block_rows(t, b), mr = sb_cpu_sgemm_gather_mr(rows);
        int64_t i0 = ip * mr, prows = rows - i0 < mr ? rows - i0 : mr;
        /* the forward's rows are whole kernels, contiguous: checked here
         * while they are read anyway (every weight, packed or not) */
        if (t->nonfinite)
            t->nonfinite[i] = !sb_cpu_conv2d_weights_finite(prows * t->lda, a + i0 * t->lda);
        sb_cpu_sgemm_gather_pack(rows, t->kdim_all, a, t->lda, t->acol, ip, ip + 1,
                                 t->wbuf + t->wofs[gb]);
    }
}

/* The contract's chain of one destination element (no scratch memory, or a
 * forward zero to recompute); pos is its offset in the destination plane. */
static float contract_chain(const class_ctx *t, int64_t n, int64_t ch, int64_t pos) {
    int64_t r = pos / t->dst_w, s = pos % t->dst_w;
    if (t->input_grad) return sb_ref_conv2d_dx_chain(t->g, t->src, t->w, n, ch, r, s);
    return sb_ref_conv2d_y_chain(t->g, t->src, t->w, n, ch, r, s);
}

/* dplane[dst_at[p]] = src[p] (+ bias when has_bias) for p < npos; returns
 * whether some src[p] is a zero. Not inlined, as gather_samples. */
static __attribute__((noinline)) bool scatter_positions(float *restrict dplane,
                                                        const float *restrict src,
                                                        const pos_class *k, float bias,
                                                        bool has_bias) {
    const int32_t *restrict dst_at = k->dst_at;
    int64_t npos = k->npos;
    int zero = 0;
    if (k->dst_run) { /* one run: no index table read per value */
        float *restrict d = dplane + dst_at[0];
        for (int64_t p = 0; p < npos; p++) {
            zero |= src[p] == 0.0f;
            d[p] = has_bias ? src[p] + bias : src[p];
        }
        return zero;
    }
    for (int64_t p = 0; p < npos; p++) {
        zero |= src[p] == 0.0f;
        dplane[dst_at[p]] = has_bias ? src[p] + bias : src[p];
    }
    return zero;
}

/* One channel's rows of a class's column matrix: dst[col_at[e] + n*npos]
 * = plane[n*stride + src_at[e]] for the class's entries e and samples
 * n < count. Not inlined, so that the loop keeps its counters in
 * registers (inside class_task they went to the stack, a store-to-load
 * round trip per float). */
static __attribute__((noinline)) void gather_samples(float *restrict dst,
                                                     const float *restrict plane, int64_t stride,
                                                     int64_t count, const pos_class *k) {
    int64_t npos = k->npos, entries = (int64_t)k->ntap * npos;
    const int32_t *restrict src_at = k->src_at, *restrict col_at = k->col_at;
    if (k->src_run) { /* each tap's row of the block one copied run */
        for (int64_t n = 0; n < count; n++, plane += stride, dst += npos)
            for (int64_t e = 0; e < entries; e += npos)
                memcpy(dst + col_at[e], plane + src_at[e], (size_t)npos * sizeof *dst);
        return;
    }
    for (int64_t n = 0; n < count; n++, plane += stride, dst += npos)
        for (int64_t e = 0; e < entries; e++) dst[col_at[e]] = plane[src_at[e]];
}

/* Destination element (n, ch, pos) from the contract's chain (+ bias). */
static void put_chain(const class_ctx *t, int64_t n, int64_t ch, int64_t pos) {
    float v = contract_chain(t, n, ch, pos);
    t->dst[(n * t->dst_c + ch) * t->dst_plane + pos] = t->bias ? v + t->bias[ch] : v;
}

/* Task (chunk, class, block): samples [n0, n1), the class's positions, rows
 * [r0, r0 + rows) of every group. */
static void class_task(const class_ctx *t, int64_t chunk, int c, int64_t b) {
    const pos_class *k = &t->cls[c];
    int64_t n0 = chunk * t->nb, n1 = n0 + t->nb < t->g->n ? n0 + t->nb : t->g->n;
    int64_t cols = (n1 - n0) * k->npos, r0 = b * t->block_rows, rows = block_rows(t, b);
    /* the column matrix and the slack an offset kernel may read */
    size_t col_floats = (size_t)(k->kdim * k->ldc + COLS_SLACK);
    float *col = k->kdim > 0 ? sb_scratch(SB_SCRATCH_CONV, col_floats * sizeof *col) : NULL;
    float *out = k->kdim > 0 ? sb_scratch(SB_SCRATCH_OPS, (size_t)(rows * k->ldc) * sizeof *out)
                             : NULL;
    bool product = col && out;
    for (int64_t grp = 0; grp < t->g->groups; grp++) {
        if (product) {
            /* col[(ch, t)][(n, p)]: channel after channel, sample after
             * sample (one sample's plane, a line or two, feeds every tap;
             * the planes of one channel lie a multiple of 4 KB apart and
             * evict one another from L1 when re-read tap after tap) */
            for (int64_t ch = 0; ch < t->chans; ch++)
                gather_samples(col + ch * k->ntap * k->ldc,
                               t->src + (n0 * t->src_c + grp * t->chans + ch) * t->src_plane,
                               t->src_c * t->src_plane, n1 - n0, k);
            /* a short last chunk: the columns past it read as zeros */
            if (cols < k->ldc)
                for (int64_t p = 0; p < k->kdim; p++)
                    memset(col + p * k->ldc + cols, 0, (size_t)(k->ldc - cols) * sizeof *col);
            memset(col + k->kdim * k->ldc, 0, COLS_SLACK * sizeof *col);
            sb_cpu_sgemm_gather(rows, cols, t->kdim_all, k->kdim,
                                t->wbuf + t->wofs[grp * t->blocks + b], k->aoff + b * k->kdim,
                                col, k->boff, out, k->ldc, false);
        }
        /* sample after sample: one sample's planes lie side by side (those
         * of one channel lie a multiple of 4 KB apart, see the gather) */
        for (int64_t n = n0; n < n1; n++)
            for (int64_t r = 0; r < rows; r++) {
                int64_t ch = grp * t->m + r0 + r;
                float *dplane = t->dst + (n * t->dst_c + ch) * t->dst_plane;
                if (k->kdim > 0 && product) {
                    const float *src = out + r * k->ldc + (n - n0) * k->npos;
                    bool zero = scatter_positions(dplane, src, k,
                                                  t->bias ? t->bias[ch] : 0.0f, t->bias != NULL);
                    /* the zeros the contract may sign otherwise */
                    for (int64_t p = 0; zero && k->skips && p < k->npos; p++)
                        if (src[p] == 0.0f) put_chain(t, n, ch, k->dst_at[p]);
                    continue;
                }
                /* No tap at all: the empty chain, +0 (and, the weights
                 * being finite, the forward's chain of padded terms too);
                 * no scratch memory: the contract's chains one by one. */
                for (int64_t p = 0; p < k->npos; p++) {
                    float v = k->kdim > 0 ? contract_chain(t, n, ch, k->dst_at[p]) : 0.0f;
                    dplane[k->dst_at[p]] = t->bias ? v + t->bias[ch] : v;
                }
            }
    }
}

/* Transposed, task (position pos, block): rows [r0, r0 + rows) of every
 * group at pos for the whole batch, dst_t's row (ch, pos) the product of
 * the class's terms read from src_t's rows where they lie. */
static void position_task(const class_ctx *t, int64_t pos, int64_t b) {
    const pos_class *k = &t->cls[t->cls_of[pos]];
    int64_t n = t->g->n, r0 = b * t->block_rows, rows = block_rows(t, b);
    const int64_t *tboff = k->tboff + t->index_in[pos] * k->kdim;
    for (int64_t grp = 0; grp < t->g->groups; grp++) {
        float *c = t->dst_t + ((grp * t->m + r0) * t->dst_plane + pos) * n;
        if (k->kdim > 0)
            sb_cpu_sgemm_gather(rows, n, t->kdim_all, k->kdim,
                                t->wbuf + t->wofs[grp * t->blocks + b], k->aoff + b * k->kdim,
                                t->src_t + grp * t->chans * t->src_plane * n, tboff, c,
                                t->dst_plane * n, false);
        else /* no terms: the empty chain, +0 */
            for (int64_t r = 0; r < rows; r++)
                memset(c + r * t->dst_plane * n, 0, (size_t)n * sizeof *c);
    }
}

static void task_range(void *vctx, int64_t i0, int64_t i1) {
    const class_ctx *t = vctx;
    for (int64_t i = i0; i < i1; i++) {
        if (t->transposed)
            position_task(t, i / t->blocks, i % t->blocks);
        else
            class_task(t, i / t->blocks / t->ncls, (int)(i / t->blocks % t->ncls), i % t->blocks);
    }
}

/* src_t[(ch*src_plane + s)*n + nn] = src[(nn*src_c + ch)*src_plane + s],
 * channels [c0, c1). */
static void transpose_in_range(void *vctx, int64_t c0, int64_t c1) {
    const class_ctx *t = vctx;
    int64_t n = t->g->n, sp = t->src_plane;
    for (int64_t ch = c0; ch < c1; ch++)
        for (int64_t nn = 0; nn < n; nn++) {
            const float *src = t->src + (nn * t->src_c + ch) * sp;
            float *dst = t->src_t + ch * sp * n + nn;
            for (int64_t s = 0; s < sp; s++) dst[s * n] = src[s];
        }
}

/* dst from dst_t, samples [n0, n1): the bias added, and a zero of a class
 * that leaves taps out recomputed with the contract's chain. */
static void transpose_out_range(void *vctx, int64_t n0, int64_t n1) {
    const class_ctx *t = vctx;
    int64_t n = t->g->n, dp = t->dst_plane;
    for (int64_t nn = n0; nn < n1; nn++)
        for (int64_t ch = 0; ch < t->dst_c; ch++) {
            const float *src = t->dst_t + ch * dp * n + nn;
            float *dst = t->dst + (nn * t->dst_c + ch) * dp;
            float bias = t->bias ? t->bias[ch] : 0.0f;
            for (int64_t pos = 0; pos < dp; pos++) {
                float v = src[pos * n];
                const pos_class *k = &t->cls[t->cls_of[pos]];
                if (v == 0.0f && k->skips && k->kdim > 0) v = contract_chain(t, nn, ch, pos);
                dst[pos] = t->bias ? v + bias : v;
            }
        }
}

/* The classes of the destination plane and their tables, in `aux` when
 * it is not NULL; returns the bytes the tables take. */
static size_t build_classes(class_ctx *t, const axis_classes *rows, const axis_classes *cols,
                            const axis_geom *ax_h, const axis_geom *ax_w, char *aux) {
    const sb_conv2d_geom *g = t->g;
    int64_t kk = g->kh * g->kw;
    size_t bytes = 0;
    t->ncls = 0;
    for (int ra = 0; ra < rows->n; ra++)
        for (int cb = 0; cb < cols->n; cb++) {
            pos_class *k = &t->cls[t->ncls++];
            int64_t ti[AXIS_MAX], tj[AXIS_MAX];
            int ni = mask_taps(rows->mask[ra], ti), nj = mask_taps(cols->mask[cb], tj);
            k->ntap = ni * nj;
            k->npos = rows->count[ra] * cols->count[cb];
            k->kdim = t->chans * k->ntap;
            k->ldc = t->nb * k->npos;
            k->skips = !t->input_grad && k->ntap < kk;
            int64_t entries = (int64_t)k->ntap * k->npos;
            size_t need = (size_t)(2 * entries + k->npos) * sizeof(int32_t);
            need = (need + 7) / 8 * 8 + (size_t)(2 * k->kdim) * sizeof(int64_t);
            need += (size_t)(t->blocks * k->kdim) * sizeof(int64_t);
            if (t->transposed) need += (size_t)(k->npos * k->kdim) * sizeof(int64_t);
            if (aux) {
                char *at = aux + bytes;
                k->src_at = (int32_t *)(void *)at;
                k->col_at = k->src_at + entries;
                k->dst_at = k->col_at + entries;
                k->kidx = (int64_t *)(void *)(at + ((size_t)(2 * entries + k->npos) * 4 + 7) / 8 * 8);
                k->boff = k->kidx + k->kdim;
                k->aoff = k->boff + k->kdim;
                k->tboff = t->transposed ? k->aoff + t->blocks * k->kdim : NULL;
                for (int a = 0; a < ni; a++)
                    for (int bt = 0; bt < nj; bt++)
                        for (int pr = 0; pr < rows->count[ra]; pr++)
                            for (int pc = 0; pc < cols->count[cb]; pc++) {
                                int64_t sr = 0, sc = 0;
                                int64_t p = (int64_t)pr * cols->count[cb] + pc;
                                int64_t e = (int64_t)(a * nj + bt) * k->npos + p;
                                axis_link(ax_h, rows->coord[ra][pr], ti[a], &sr);
                                axis_link(ax_w, cols->coord[cb][pc], tj[bt], &sc);
                                k->src_at[e] = (int32_t)(sr * t->src_w + sc);
                                k->col_at[e] = (int32_t)((a * nj + bt) * k->ldc + p);
                            }
                for (int pr = 0; pr < rows->count[ra]; pr++)
                    for (int pc = 0; pc < cols->count[cb]; pc++)
                        k->dst_at[pr * cols->count[cb] + pc] =
                            (int32_t)(rows->coord[ra][pr] * t->dst_w + cols->coord[cb][pc]);
                k->src_run = k->dst_run = true;
                for (int64_t e = 0; e < entries; e++) /* col_at runs by construction */
                    k->src_run &= k->src_at[e] == k->src_at[e - e % k->npos] + e % k->npos;
                for (int q = 0; q < k->npos; q++) k->dst_run &= k->dst_at[q] == k->dst_at[0] + q;
                /* the index of a tap among the unions' */
                int ua[AXIS_MAX], ub[AXIS_MAX];
                for (int a = 0; a < ni; a++)
                    for (ua[a] = 0; t->ui[ua[a]] != ti[a];) ua[a]++;
                for (int bt = 0; bt < nj; bt++)
                    for (ub[bt] = 0; t->uj[ub[bt]] != tj[bt];) ub[bt]++;
                for (int64_t ch = 0; ch < t->chans; ch++)
                    for (int a = 0; a < ni; a++)
                        for (int bt = 0; bt < nj; bt++) {
                            int64_t p = (ch * ni + a) * nj + bt;
                            k->kidx[p] = (ch * t->nui + ua[a]) * t->nuj + ub[bt];
                            k->boff[p] = p * k->ldc;
                            for (int64_t q = 0; k->tboff && q < k->npos; q++)
                                k->tboff[q * k->kdim + p] =
                                    (ch * t->src_plane +
                                     k->src_at[(int64_t)(a * nj + bt) * k->npos + q]) * t->g->n;
                        }
                for (int64_t b = 0; b < t->blocks; b++)
                    for (int64_t p = 0, mr = sb_cpu_sgemm_gather_mr(block_rows(t, b)); p < k->kdim; p++)
                        k->aoff[b * k->kdim + p] = k->kidx[p] * mr;
                for (int q = 0; q < k->npos; q++) {
                    t->cls_of[k->dst_at[q]] = (signed char)(t->ncls - 1);
                    t->index_in[k->dst_at[q]] = (signed char)q;
                }
            }
            bytes += need;
        }
    return bytes;
}

/* Samples per chunk: CLASS_COLS columns of the whole plane, no class's
 * column matrix past CLASS_FLOATS, and no more than each thread's share
 * (a chunk keeps 64 positions at least). */
static int64_t chunk_samples(const class_ctx *t, const axis_classes *rows,
                             const axis_classes *cols, int threads) {
    int64_t n = t->g->n, nb = CLASS_COLS / t->dst_plane, widest = 1;
    for (int ra = 0; ra < rows->n; ra++)
        for (int cb = 0; cb < cols->n; cb++) {
            int64_t terms = t->chans * popcount64(rows->mask[ra]) * popcount64(cols->mask[cb]);
            int64_t f = terms * rows->count[ra] * cols->count[cb];
            if (f > widest) widest = f;
        }
    if (nb > CLASS_FLOATS / widest) nb = CLASS_FLOATS / widest;
    if (threads > 1) {
        int64_t share = (n + threads - 1) / threads, least = (64 + t->dst_plane - 1) / t->dst_plane;
        if (share < least) share = least;
        if (nb > share) nb = share;
    }
    if (nb > n) nb = n;
    return nb < 1 ? 1 : nb;
}

static bool run_classes(class_ctx *t) {
    const sb_conv2d_geom *g = t->g;
    if (g->kh > AXIS_MAX || g->kw > AXIS_MAX) return false;
    axis_geom ax_h, ax_w;
    if (t->input_grad) {
        ax_h = (axis_geom){g->kh, g->stride_h, g->pad_h, g->dilation_h, g->oh, g->h, true};
        ax_w = (axis_geom){g->kw, g->stride_w, g->pad_w, g->dilation_w, g->ow, g->w, true};
    } else {
        ax_h = (axis_geom){g->kh, g->stride_h, g->pad_h, g->dilation_h, g->h, g->oh, false};
        ax_w = (axis_geom){g->kw, g->stride_w, g->pad_w, g->dilation_w, g->w, g->ow, false};
    }
    /* the tables hold plane offsets as int32 */
    if (ax_h.dst_n > AXIS_MAX || ax_w.dst_n > AXIS_MAX || t->src_plane > INT32_MAX) return false;
    axis_classes rows, cols;
    axis_classify(&ax_h, &rows);
    axis_classify(&ax_w, &cols);
    bool skips = false;
    for (int ra = 0; ra < rows.n; ra++)
        for (int cb = 0; cb < cols.n; cb++)
            if (popcount64(rows.mask[ra]) * popcount64(cols.mask[cb]) < g->kh * g->kw) skips = true;

    int threads = sb_in_parallel_region() ? 1 : sb_num_threads();
    /* Transposed when the column matrix would be the larger move: it holds
     * each source float once per tap that reads it (a padded 3x3 at stride
     * 1: up to 9 times), the transpose every source float once (a 1x1 at
     * stride 2 reads a quarter of them) */
    int64_t gathered = 0;
    for (int ra = 0; ra < rows.n; ra++)
        for (int cb = 0; cb < cols.n; cb++)
            gathered += (int64_t)popcount64(rows.mask[ra]) * popcount64(cols.mask[cb]) *
                        rows.count[ra] * cols.count[cb];
    t->transposed = g->n >= TRANSPOSED_BATCH && gathered >= 2 * t->src_plane;
    t->nb = t->transposed ? g->n : chunk_samples(t, &rows, &cols, threads);
    t->chunks = (g->n + t->nb - 1) / t->nb;
    t->block_rows = row_block_size(t->m, t->transposed ? t->dst_plane
                                                        : t->chunks * rows.n * cols.n);
    t->blocks = (t->m + t->block_rows - 1) / t->block_rows;

    /* the taps some class reads */
    uint64_t urows = 0, ucols = 0;
    for (int ra = 0; ra < rows.n; ra++) urows |= rows.mask[ra];
    for (int cb = 0; cb < cols.n; cb++) ucols |= cols.mask[cb];
    t->nui = mask_taps(urows, t->ui);
    t->nuj = mask_taps(ucols, t->uj);
    t->kdim_all = t->chans * t->nui * t->nuj;

    /* one buffer: the class tables, A's column list, the packed As'
     * offsets and first panels, the packed As */
    int64_t kk = g->kh * g->kw, icg = g->c_in / g->groups, gb = g->groups * t->blocks;
    size_t table_bytes = build_classes(t, &rows, &cols, &ax_h, &ax_w, NULL);
    size_t acol_end = table_bytes + (size_t)t->kdim_all * sizeof(int64_t);
    size_t wofs_end = (acol_end + (size_t)(2 * gb) * sizeof(int64_t) + 63) / 64 * 64;
    int64_t wfloats = 0, panels = 0;
    for (int64_t b = 0; b < t->blocks; b++) {
        int64_t rows_b = block_rows(t, b), mr = sb_cpu_sgemm_gather_mr(rows_b);
        wfloats += sb_cpu_sgemm_gather_floats(rows_b, t->kdim_all);
        panels += (rows_b + mr - 1) / mr;
    }
    size_t wbuf_end = wofs_end + (size_t)(g->groups * wfloats) * sizeof(float);
    /* transposed: src_t and the slack an offset kernel may read, dst_t */
    size_t src_t_floats = t->transposed ? (size_t)(t->src_c * t->src_plane * g->n + COLS_SLACK) : 0;
    size_t dst_t_floats = t->transposed ? (size_t)(t->dst_c * t->dst_plane * g->n) : 0;
    size_t flags_end = (wbuf_end + (size_t)(g->groups * panels) + 63) / 64 * 64;
    char *aux = sb_scratch(SB_SCRATCH_CONV_AUX,
                           flags_end + (src_t_floats + dst_t_floats) * sizeof(float));
    if (!aux) return false;
    t->src_t = t->transposed ? (float *)(void *)(aux + flags_end) : NULL;
    t->dst_t = t->transposed ? t->src_t + src_t_floats : NULL;
    /* the forward leaves padded taps out only under finite weights */
    t->nonfinite = !t->input_grad && skips ? (unsigned char *)(aux + wbuf_end) : NULL;
    build_classes(t, &rows, &cols, &ax_h, &ax_w, aux);
    /* forward: row oc, term (c, i, j) at w[(oc*icg + c)*kk + tap] (lda
     * icg*kk); input gradient, W^T: row c, term (o, i, j) at
     * w[(o*icg + c)*kk + tap] (lda kk) */
    t->acol = (int64_t *)(void *)(aux + table_bytes);
    for (int64_t ch = 0; ch < t->chans; ch++)
        for (int a = 0; a < t->nui; a++)
            for (int b = 0; b < t->nuj; b++)
                t->acol[(ch * t->nui + a) * t->nuj + b] =
                    (t->input_grad ? ch * icg * kk : ch * kk) + t->ui[a] * g->kw + t->uj[b];
    t->wofs = (int64_t *)(void *)(aux + acol_end);
    t->panels = t->wofs + gb;
    t->wbuf = (float *)(void *)(aux + wofs_end);
    t->npanels = 0;
    for (int64_t i = 0, at = 0; i < gb; i++) {
        int64_t rows_i = block_rows(t, i % t->blocks), mr = sb_cpu_sgemm_gather_mr(rows_i);
        t->wofs[i] = at;
        t->panels[i] = t->npanels;
        at += sb_cpu_sgemm_gather_floats(rows_i, t->kdim_all);
        t->npanels += (rows_i + mr - 1) / mr;
    }
    sb_parallel_for(t->npanels, sb_parallel_grain(t->npanels, 4), pack_range, t);
    for (int64_t i = 0; t->nonfinite && i < t->npanels; i++)
        if (t->nonfinite[i]) return false;
    if (t->transposed) {
        memset(t->src_t + src_t_floats - COLS_SLACK, 0, COLS_SLACK * sizeof(float));
        sb_parallel_for(t->src_c, sb_parallel_grain(t->src_c, 4), transpose_in_range, t);
        int64_t tasks = t->dst_plane * t->blocks;
        sb_parallel_for(tasks, 1, task_range, t);
        sb_parallel_for(g->n, sb_parallel_grain(g->n, 2), transpose_out_range, t);
        return true;
    }
    int64_t tasks = t->chunks * t->ncls * t->blocks;
    sb_parallel_for(tasks, 1, task_range, t);
    return true;
}

bool sb_cpu_conv2d_few_forward(const sb_conv2d_geom *g, const float *x, const float *weight,
                               const float *bias, float *y) {
    if (g->oh * g->ow >= CLASS_PIXELS) return false;
    int64_t icg = g->c_in / g->groups;
    class_ctx t = {.g = g, .input_grad = false, .src = x, .w = weight, .bias = bias, .dst = y,
                   .m = g->c_out / g->groups, .chans = icg, .src_c = g->c_in, .dst_c = g->c_out,
                   .src_w = g->w, .dst_w = g->ow, .src_plane = g->h * g->w,
                   .dst_plane = g->oh * g->ow, .lda = icg * g->kh * g->kw};
    return run_classes(&t);
}

bool sb_cpu_conv2d_few_backward_input(const sb_conv2d_geom *g, const float *dy,
                                      const float *weight, float *dx) {
    if (g->h * g->w >= CLASS_PIXELS) return false;
    class_ctx t = {.g = g, .input_grad = true, .src = dy, .w = weight, .bias = NULL, .dst = dx,
                   .m = g->c_in / g->groups, .chans = g->c_out / g->groups, .src_c = g->c_out,
                   .dst_c = g->c_in, .src_w = g->ow, .dst_w = g->w, .src_plane = g->oh * g->ow,
                   .dst_plane = g->h * g->w, .lda = g->kh * g->kw};
    return run_classes(&t);
}

/* ---- weight gradient ----
 *
 * dW[oc][c][i][j] is the chain over (n, r, s) ascending of dy[n][oc][r][s]
 * * x[n][c][r*sh - ph + i*dh][s*sw - pw + j*dw]: a term for every output
 * position, +0.0f where the tap reads padding. Per tap (i, j), the output
 * positions where it reads x (the rows whose forward axis class links tap
 * i, the columns likewise) give one product over the batch:
 *
 *     dW[:, :, i, j] = chain over k = (n, r, s) live, ascending, of
 *                      dY[oc][(n, r, s)] * xt[(n, ih, iw)][c]
 *
 * dY is packed once (rows the output channels, terms every (n, r, s)) and
 * each tap reads its terms through a list; xt is x transposed to (n, ih,
 * iw, c), so that the B row of term (n, r, s) is x's channels at the input
 * position the tap reads, where they lie (no column matrix). A left-out
 * term is fmaf(dy, +0, acc): with dy finite the forward's argument holds
 * with dy in the weights' place, and every zero of a tap that leaves terms
 * out is recomputed with sb_ref_conv2d_dw_chain.
 *
 * Larger planes (16 channels per group or more) take the same products
 * over every (n, r, s), x copied zero-padded: the padded terms are then
 * the contract's +0.0f terms, read as they are, and the chains exact. */

typedef struct {
    const sb_conv2d_geom *g;
    const float *dy, *x;
    float *dw;
    int64_t ocg, icg, ohw, kk, blocks, block_rows;
    /* Few positions: each tap's terms are the output positions where it
     * reads x. Larger planes (padded): every position, x read zero-padded
     * (the contract's +0.0f terms), the chains exact. */
    bool padded;
    uint64_t rmask[AXIS_MAX], smask[AXIS_MAX]; /* few: per output row / column, the taps it links */
    int64_t live[AXIS_MAX * AXIS_MAX];          /* per tap: its live output positions */
    int64_t xh, xw;      /* xt's planes: x's, or padded by pad_h / pad_w each side */
    float *xt;           /* x as (n, xh, xw, c_in), COLS_SLACK floats past it */
    float *dwt;          /* per (grp, tap): its (ocg, icg) product */
    float *apack;        /* per (grp, block): dY's rows packed, every (n, q) term */
    int64_t apack_stride;
    const int64_t *acol; /* dY's term (n, q) at dy_rows + acol[(n, q)] */
} wgrad_ctx;

static int64_t wgrad_rows(const wgrad_ctx *t, int64_t b) {
    return rows_in_block(t->ocg, t->block_rows, b);
}

/* dY's rows of (grp, block) for tasks [i0, i1), packed. */
static void wgrad_pack_range(void *vctx, int64_t i0, int64_t i1) {
    const wgrad_ctx *t = vctx;
    for (int64_t i = i0; i < i1; i++) {
        int64_t grp = i / t->blocks, b = i % t->blocks, rows = wgrad_rows(t, b);
        int64_t mr = sb_cpu_sgemm_gather_mr(rows);
        sb_cpu_sgemm_gather_pack(rows, t->g->n * t->ohw,
                                 t->dy + (grp * t->ocg + b * t->block_rows) * t->ohw, t->ohw,
                                 t->acol, 0, (rows + mr - 1) / mr, t->apack + i * t->apack_stride);
    }
}

/* xt[((n*xh + ih + oy)*xw + iw + ox)*c_in + c] = x[n][c][ih][iw] (oy, ox
 * the padding when padded, its margins +0), samples [n0, n1). */
static void wgrad_transpose_range(void *vctx, int64_t n0, int64_t n1) {
    const wgrad_ctx *t = vctx;
    const sb_conv2d_geom *g = t->g;
    int64_t c_in = g->c_in, oy = t->padded ? g->pad_h : 0, ox = t->padded ? g->pad_w : 0;
    for (int64_t n = n0; n < n1; n++) {
        float *xtn = t->xt + n * t->xh * t->xw * c_in;
        if (t->padded) memset(xtn, 0, (size_t)(t->xh * t->xw * c_in) * sizeof *xtn);
        for (int64_t c = 0; c < c_in; c++)
            for (int64_t ih = 0; ih < g->h; ih++) {
                const float *src = t->x + ((n * c_in + c) * g->h + ih) * g->w;
                float *dst = xtn + ((ih + oy) * t->xw + ox) * c_in + c;
                for (int64_t iw = 0; iw < g->w; iw++) dst[iw * c_in] = src[iw];
            }
    }
}

/* Task (grp, tap, block): the tap's product for output channels [r0, r0 +
 * rows) of the group, into dwt. */
static void wgrad_task(const wgrad_ctx *t, int64_t grp, int64_t tap, int64_t b) {
    const sb_conv2d_geom *g = t->g;
    int64_t i = tap / g->kw, j = tap % g->kw, rows = wgrad_rows(t, b), r0 = b * t->block_rows;
    float *c = t->dwt + ((grp * t->kk + tap) * t->ocg + r0) * t->icg;
    int64_t k = g->n * t->live[tap];
    if (k == 0) return; /* written as +0 when dW is assembled */
    int64_t *aoff = sb_scratch(SB_SCRATCH_CONV, (size_t)(2 * k) * sizeof *aoff), *boff = aoff + k;
    if (!aoff) { /* no scratch: the contract's chains one by one */
        for (int64_t o = 0; o < rows; o++)
            for (int64_t ch = 0; ch < t->icg; ch++)
                c[o * t->icg + ch] = sb_ref_conv2d_dw_chain(g, t->dy, t->x, grp * t->ocg + r0 + o,
                                                            ch, i, j);
        return;
    }
    int64_t mr = sb_cpu_sgemm_gather_mr(rows), p = 0;
    int64_t oy = t->padded ? 0 : g->pad_h, ox = t->padded ? 0 : g->pad_w;
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t r = 0; r < g->oh; r++) {
            if (!t->padded && !(t->rmask[r] >> i & 1)) continue;
            int64_t ih = r * g->stride_h - oy + i * g->dilation_h;
            for (int64_t s = 0; s < g->ow; s++) {
                if (!t->padded && !(t->smask[s] >> j & 1)) continue;
                int64_t iw = s * g->stride_w - ox + j * g->dilation_w;
                aoff[p] = (n * t->ohw + r * g->ow + s) * mr;
                boff[p++] = ((n * t->xh + ih) * t->xw + iw) * g->c_in;
            }
        }
    sb_cpu_sgemm_gather(rows, t->icg, g->n * t->ohw, k, t->apack + (grp * t->blocks + b) * t->apack_stride,
                        aoff, t->xt + grp * t->icg, boff, c, t->icg, false);
}

/* Terms per k block of wgrad_all_taps: the block's packed dY (block_rows x
 * 512 floats) and the x rows its taps read stay in L2 while every tap
 * takes its turn. */
#define WGRAD_KBLOCK 512

/* Padded planes: every tap reads every output position, so the taps' term
 * lists differ only by the tap's offset in xt, and one task (a group's
 * block of rows) runs all the taps together, k block after k block, each
 * tap's chains continuing from the block before (the order of their terms
 * is unchanged). Tap after tap over the whole batch read dY and x from
 * memory once per tap. Threads split the rows (each task reads all of x):
 * sets of taps per task balanced worse (3 tasks on 2 threads). */
static void wgrad_all_taps(const wgrad_ctx *t, int64_t grp, int64_t b) {
    const sb_conv2d_geom *g = t->g;
    int64_t rows = wgrad_rows(t, b), r0 = b * t->block_rows, k = g->n * t->ohw;
    int64_t *aoff = sb_scratch(SB_SCRATCH_CONV, (size_t)(2 * k) * sizeof *aoff), *boff = aoff + k;
    if (!aoff) { /* no scratch: a tap at a time (which has its own fallback) */
        for (int64_t tap = 0; tap < t->kk; tap++) wgrad_task(t, grp, tap, b);
        return;
    }
    int64_t mr = sb_cpu_sgemm_gather_mr(rows), p = 0;
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t r = 0; r < g->oh; r++)
            for (int64_t s = 0; s < g->ow; s++, p++) {
                aoff[p] = p * mr;
                boff[p] = ((n * t->xh + r * g->stride_h) * t->xw + s * g->stride_w) * g->c_in;
            }
    const float *apack = t->apack + (grp * t->blocks + b) * t->apack_stride;
    for (int64_t pc = 0; pc < k; pc += WGRAD_KBLOCK) {
        int64_t kc = k - pc < WGRAD_KBLOCK ? k - pc : WGRAD_KBLOCK;
        for (int64_t tap = 0; tap < t->kk; tap++) {
            int64_t i = tap / g->kw, j = tap % g->kw;
            int64_t shift = (i * g->dilation_h * t->xw + j * g->dilation_w) * g->c_in;
            sb_cpu_sgemm_gather(rows, t->icg, k, kc, apack, aoff + pc,
                                t->xt + grp * t->icg + shift, boff + pc,
                                t->dwt + ((grp * t->kk + tap) * t->ocg + r0) * t->icg, t->icg,
                                pc > 0);
        }
    }
}

static void wgrad_task_range(void *vctx, int64_t i0, int64_t i1) {
    const wgrad_ctx *t = vctx;
    for (int64_t i = i0; i < i1; i++) {
        if (t->padded) /* (grp, block), every tap */
            wgrad_all_taps(t, i / t->blocks, i % t->blocks);
        else
            wgrad_task(t, i / t->blocks / t->kk, i / t->blocks % t->kk, i % t->blocks);
    }
}

/* One output channel's dW, (icg, kk), from its row of each tap's product
 * (row[tap], NULL for a tap with no live term: +0); returns whether some
 * value of a tap that leaves terms out (skips[tap]) is a zero. Not
 * inlined, as gather_samples. */
static __attribute__((noinline)) bool wgrad_assemble_row(float *restrict dw,
                                                         const float *const *row,
                                                         const bool *skips, int64_t icg,
                                                         int64_t kk) {
    bool zero = false;
    for (int64_t c = 0; c < icg; c++, dw += kk)
        for (int64_t tap = 0; tap < kk; tap++) {
            float v = row[tap] ? row[tap][c] : 0.0f;
            zero |= v == 0.0f && skips[tap];
            dw[tap] = v;
        }
    return zero;
}

/* dW from dwt, output channels [o0, o1): +0 for a tap with no live term,
 * a zero of a tap that leaves terms out recomputed. */
static void wgrad_assemble_range(void *vctx, int64_t o0, int64_t o1) {
    const wgrad_ctx *t = vctx;
    const float *row[AXIS_MAX * AXIS_MAX];
    bool skips[AXIS_MAX * AXIS_MAX];
    for (int64_t tap = 0; tap < t->kk; tap++) skips[tap] = t->live[tap] > 0 && t->live[tap] < t->ohw;
    for (int64_t oc = o0; oc < o1; oc++) {
        int64_t grp = oc / t->ocg, o = oc % t->ocg;
        for (int64_t tap = 0; tap < t->kk; tap++)
            row[tap] = t->live[tap] > 0 ? t->dwt + ((grp * t->kk + tap) * t->ocg + o) * t->icg
                                        : NULL;
        float *dw = t->dw + oc * t->icg * t->kk;
        if (!wgrad_assemble_row(dw, row, skips, t->icg, t->kk)) continue;
        for (int64_t c = 0; c < t->icg; c++)
            for (int64_t tap = 0; tap < t->kk; tap++)
                if (dw[c * t->kk + tap] == 0.0f && skips[tap])
                    dw[c * t->kk + tap] = sb_ref_conv2d_dw_chain(
                        t->g, t->dy, t->x, oc, c, tap / t->g->kw, tap % t->g->kw);
    }
}

bool sb_cpu_conv2d_tap_backward_weight(const sb_conv2d_geom *g, const float *dy, const float *x,
                                       float *dweight) {
    int64_t ohw = g->oh * g->ow;
    wgrad_ctx t = {.g = g, .dy = dy, .x = x, .dw = dweight, .ocg = g->c_out / g->groups,
                   .icg = g->c_in / g->groups, .ohw = ohw, .kk = g->kh * g->kw,
                   .padded = ohw >= CLASS_PIXELS};
    if (g->kh > AXIS_MAX || g->kw > AXIS_MAX) return false;
    if (t.padded) {
        /* B rows of icg floats: a few channels would fill a few lanes of a
         * tile; an unpadded 1x1 at stride 1 reads x in place elsewhere */
        bool in_place = g->kh == 1 && g->kw == 1 && g->stride_h == 1 && g->stride_w == 1 &&
                        g->pad_h == 0 && g->pad_w == 0;
        if (t.icg < TAP_WGRAD_MIN_CHANNELS || in_place) return false;
        /* A kernel shorter than its stride (a 1x1 at stride 2) never reads
         * whole rows or columns of x: its transposed copy would mostly go
         * unused, and conv2d.c's products gather only what is read (the
         * 1x1 stride-2 downsampling layers ran twice as fast there). */
        if ((g->kh - 1) * g->dilation_h + 1 < g->stride_h ||
            (g->kw - 1) * g->dilation_w + 1 < g->stride_w)
            return false;
        t.xh = g->h + 2 * g->pad_h;
        t.xw = g->w + 2 * g->pad_w;
        for (int64_t tap = 0; tap < t.kk; tap++) t.live[tap] = ohw;
    } else {
        t.xh = g->h;
        t.xw = g->w;
        axis_geom ax_h = {g->kh, g->stride_h, g->pad_h, g->dilation_h, g->h, g->oh, false};
        axis_geom ax_w = {g->kw, g->stride_w, g->pad_w, g->dilation_w, g->w, g->ow, false};
        axis_classes rows, cols;
        axis_classify(&ax_h, &rows);
        axis_classify(&ax_w, &cols);
        for (int ra = 0; ra < rows.n; ra++)
            for (int q = 0; q < rows.count[ra]; q++) t.rmask[rows.coord[ra][q]] = rows.mask[ra];
        for (int cb = 0; cb < cols.n; cb++)
            for (int q = 0; q < cols.count[cb]; q++) t.smask[cols.coord[cb][q]] = cols.mask[cb];
        bool skips = false;
        for (int64_t tap = 0; tap < t.kk; tap++) {
            int64_t lr = 0, ls = 0;
            for (int64_t r = 0; r < g->oh; r++) lr += t.rmask[r] >> (tap / g->kw) & 1;
            for (int64_t s = 0; s < g->ow; s++) ls += t.smask[s] >> (tap % g->kw) & 1;
            t.live[tap] = lr * ls;
            skips |= t.live[tap] < ohw;
        }
        /* Nothing to leave out (an unpadded kernel): the batched products
         * of conv2d.c gather only the positions they read, where this path
         * would transpose all of x. The left-out terms are dy * +0: no-ops
         * only for finite dy. */
        if (!skips || !sb_cpu_conv2d_weights_finite(g->n * g->c_out * ohw, dy)) return false;
    }

    /* tasks: (grp, block) padded (wgrad_all_taps), else (grp, tap, block) */
    t.block_rows = row_block_size(t.ocg, g->groups * (t.padded ? 1 : t.kk));
    t.blocks = (t.ocg + t.block_rows - 1) / t.block_rows;
    /* one buffer: dY's term list, xt, dwt, the packed dY */
    int64_t terms = g->n * ohw;
    t.apack_stride = sb_cpu_sgemm_gather_floats(t.block_rows, terms);
    size_t acol_bytes = (size_t)terms * sizeof(int64_t);
    size_t xt_floats = (size_t)(g->n * t.xh * t.xw * g->c_in + COLS_SLACK);
    size_t dwt_floats = (size_t)(g->groups * t.kk * t.ocg * t.icg);
    size_t apack_floats = (size_t)(g->groups * t.blocks * t.apack_stride);
    /* a copy of x and of dy: past TAP_WGRAD_MAX_FLOATS the batched
     * products of conv2d.c, which take 8 MB at a time, serve instead */
    if (xt_floats + dwt_floats + apack_floats > TAP_WGRAD_MAX_FLOATS) return false;
    char *aux = sb_scratch(SB_SCRATCH_CONV_AUX, acol_bytes + (xt_floats + dwt_floats + apack_floats) *
                                                             sizeof(float));
    if (!aux) return false;
    int64_t *acol = (int64_t *)(void *)aux;
    for (int64_t nq = 0; nq < terms; nq++) acol[nq] = nq / ohw * g->c_out * ohw + nq % ohw;
    t.acol = acol;
    t.xt = (float *)(void *)(aux + acol_bytes);
    t.dwt = t.xt + xt_floats;
    t.apack = t.dwt + dwt_floats;
    memset(t.xt + xt_floats - COLS_SLACK, 0, COLS_SLACK * sizeof(float));
    sb_parallel_for(g->n, sb_parallel_grain(g->n, 1), wgrad_transpose_range, &t);
    int64_t packs = g->groups * t.blocks;
    sb_parallel_for(packs, 1, wgrad_pack_range, &t);
    int64_t tasks = g->groups * (t.padded ? 1 : t.kk) * t.blocks;
    sb_parallel_for(tasks, 1, wgrad_task_range, &t);
    sb_parallel_for(g->c_out, sb_parallel_grain(g->c_out, 8), wgrad_assemble_range, &t);
    return true;
}
