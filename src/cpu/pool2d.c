/* Fast 2-D pooling (src/cpu/conv_internal.h), bit-identical to
 * src/ref/pool2d.c.
 *
 * Every plane is pooled independently, so planes are split over threads and
 * each range runs the reference kernel on its own planes (indices are
 * positions within a plane, so a slice of planes is a valid geometry).
 *
 * The backward passes gather, for each input, the contributions of the
 * windows holding it, as a canonical sum in window order. When windows do
 * not overlap (stride >= kernel on both axes, LeNet-5's 2x2/2 pooling) an
 * input has at most one contribution, and the canonical sum of one element
 * is that element unchanged (its lanes start at -0, the exact identity, and
 * fold with -0s) while the empty sum is +0.0f; so a scatter over windows into
 * a zeroed plane gives the same bits without the per-input search. When
 * they overlap (ResNet's 3x3 stride-2 pooling), the windows' terms are
 * scattered in window order into per-input lanes and folded by the
 * canonical sum's tree (max_bwd_plane_scatter). Sums of at most 32 terms
 * skip the 32-lane state: each term is alone in its lane (sb_sum_few_terms).
 *
 * Adaptive pooling (windows of PyTorch's floor/ceil rule) runs the same
 * entry points with g->adaptive set. */
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"
#include "cpu/sum_internal.h"
#include "cpu/conv_internal.h"
#include "cpu/cpu.h"
#include "cpu/kernels.h"

typedef struct {
    const sb_pool2d_geom *g;
    const float *in;
    const int64_t *indices_in;
    float *out;
    int64_t *indices_out;
    /* max pooling by the level's max_pool_taps over this table
     * (max_taps_table), or NULL */
    const int32_t *tab;
    int64_t taps;
} pool_ctx;

static sb_pool2d_geom slice(const sb_pool2d_geom *g, int64_t p0, int64_t p1) {
    sb_pool2d_geom s = *g;
    s.planes = p1 - p0;
    return s;
}

/* Adaptive geometries reach here only when their windows differ in size
 * (src/ops/conv.c turns evenly dividing ones into fixed windows), and
 * those may overlap: they take the reference loops, as do dilated windows
 * (their taps are not a contiguous block). */
static bool disjoint_windows(const sb_pool2d_geom *g) {
    return !g->adaptive && g->dil_h <= 1 && g->dil_w <= 1 && g->stride_h >= g->kh &&
           g->stride_w >= g->kw;
}

/* Planes are cheap; keep ranges at a few thousand elements at least. */
static void over_planes(const sb_pool2d_geom *g, sb_range_fn fn, void *ctx) {
    int64_t per_plane = g->h * g->w + g->oh * g->ow + 1;
    int64_t min_grain = 4096 / per_plane + 1;
    sb_parallel_for(g->planes, sb_parallel_grain(g->planes, min_grain), fn, ctx);
}

/* LeNet's pooling: 2x2 windows, stride 2, no padding, all inside. */
static bool is_2x2_inside(const sb_pool2d_geom *g) {
    return !g->adaptive && g->kh == 2 && g->kw == 2 && g->stride_h == 2 && g->stride_w == 2 &&
           g->dil_h <= 1 && g->dil_w <= 1 && g->pad_h == 0 &&
           g->pad_w == 0 && 2 * g->oh <= g->h && 2 * g->ow <= g->w;
}

/* The 2x2 windows of one plane in plain C, for the levels without a vector
 * kernel: the reference's candidate order ((0,0), (0,1), (1,0), (1,1)) and
 * replacement rule (first NaN, else first strict maximum), without its
 * general window arithmetic per output (which made it about 7x slower). */
static void max_pool2x2_portable(const float *xp, int64_t w, int64_t oh, int64_t ow, float *yp,
                                 int64_t *ip) {
    for (int64_t r = 0; r < oh; r++)
        for (int64_t s = 0; s < ow; s++) {
            int64_t base = 2 * r * w + 2 * s, best = base;
            const int64_t cand[3] = {base + 1, base + w, base + w + 1};
            for (int k = 0; k < 3; k++) {
                float v = xp[cand[k]], b = xp[best];
                if (!sb_isnanf(b) && (sb_isnanf(v) || v > b)) best = cand[k];
            }
            yp[r * ow + s] = xp[best];
            if (ip) ip[r * ow + s] = best;
        }
}

/* Windows per output row and column, computed once per range rather than
 * per output (the reference's window arithmetic divides): up to this many
 * of each on the stack, else the reference loops run. */
#define POOL_WINDOWS_MAX 1024

/* Any other window shape (ResNet's 3x3 stride-2 pooling, adaptive and
 * dilated windows): the reference's candidates (row-major within the
 * window, in-bounds only) and replacement rule (first NaN, else first
 * strict maximum), with each row's [h0, h1) and column's [w0, w1) taken
 * from sb_pool_window once. Values are only selected, so the bits and
 * indices are the reference's. */
static void max_pool_windows(const sb_pool2d_geom *g, const int64_t *rw, const int64_t *cw,
                             int64_t dh, int64_t dw, const float *xp, float *yp, int64_t *ip) {
    for (int64_t r = 0; r < g->oh; r++)
        for (int64_t s = 0; s < g->ow; s++) {
            int64_t best = rw[2 * r] * g->w + cw[2 * s];
            float b = xp[best];
            for (int64_t ih = rw[2 * r]; ih < rw[2 * r + 1]; ih += dh)
                for (int64_t iw = cw[2 * s]; iw < cw[2 * s + 1]; iw += dw) {
                    float v = xp[ih * g->w + iw];
                    if (!sb_isnanf(b) && (sb_isnanf(v) || v > b)) best = ih * g->w + iw, b = v;
                }
            yp[r * g->ow + s] = b;
            if (ip) ip[r * g->ow + s] = best;
        }
}

static void max_fwd_range(void *vctx, int64_t p0, int64_t p1) {
    const pool_ctx *t = vctx;
    const sb_pool2d_geom *g = t->g;
    sb_max_pool2x2_fn pool2x2 = sb_kernels()->max_pool2x2;
    if (!pool2x2) pool2x2 = max_pool2x2_portable;
    int64_t hw = g->h * g->w, ohw = g->oh * g->ow;
    if (t->tab) {
        for (int64_t p = p0; p < p1; p++)
            sb_kernels()->max_pool_taps(t->in + p * hw, t->tab, t->taps, ohw, t->out + p * ohw,
                                        t->indices_out ? t->indices_out + p * ohw : NULL);
        return;
    }
    if (is_2x2_inside(g)) {
        for (int64_t p = p0; p < p1; p++)
            pool2x2(t->in + p * hw, g->w, g->oh, g->ow, t->out + p * ohw,
                    t->indices_out ? t->indices_out + p * ohw : NULL);
        return;
    }
    if (g->oh <= POOL_WINDOWS_MAX && g->ow <= POOL_WINDOWS_MAX) {
        int64_t rw[2 * POOL_WINDOWS_MAX], cw[2 * POOL_WINDOWS_MAX];
        sb_pool_axis rows = sb_pool_rows(g), cols = sb_pool_cols(g);
        for (int64_t r = 0; r < g->oh; r++) sb_pool_window(&rows, r, &rw[2 * r], &rw[2 * r + 1]);
        for (int64_t q = 0; q < g->ow; q++) sb_pool_window(&cols, q, &cw[2 * q], &cw[2 * q + 1]);
        for (int64_t p = p0; p < p1; p++)
            max_pool_windows(g, rw, cw, sb_pool_step(&rows), sb_pool_step(&cols), t->in + p * hw,
                             t->out + p * ohw, t->indices_out ? t->indices_out + p * ohw : NULL);
        return;
    }
    sb_pool2d_geom s = slice(t->g, p0, p1);
    sb_ref_max_pool2d_forward(&s, t->in + p0 * hw, t->out + p0 * ohw,
                              t->indices_out ? t->indices_out + p0 * ohw : NULL);
}

/* The table of every window's taps for the level's max_pool_taps kernel
 * (kernels.h): tab[k * ohw + q] = the plane position of tap k of output q,
 * taps in the reference's row-major order within the window, -1 past the
 * window's last; NULL (the window loops run) when the level has no such
 * kernel, for LeNet's 2x2 windows (their own kernel), a window without a
 * tap, positions past int32 or a table over TAPS_TABLE_MAX entries. The
 * caller frees it. */
#define TAPS_TABLE_MAX (1 << 20)

static int32_t *max_taps_table(const sb_pool2d_geom *g, int64_t *taps_out) {
    int64_t oh = g->oh, ow = g->ow, ohw = oh * ow;
    if (!sb_kernels()->max_pool_taps || is_2x2_inside(g) || ohw == 0 ||
        g->h * g->w > INT32_MAX || oh > POOL_WINDOWS_MAX || ow > POOL_WINDOWS_MAX)
        return NULL;
    int64_t rw[2 * POOL_WINDOWS_MAX], cw[2 * POOL_WINDOWS_MAX];
    sb_pool_axis rows = sb_pool_rows(g), cols = sb_pool_cols(g);
    int64_t dh = sb_pool_step(&rows), dw = sb_pool_step(&cols), kr = 0, kc = 0;
    for (int64_t r = 0; r < oh; r++) {
        sb_pool_window(&rows, r, &rw[2 * r], &rw[2 * r + 1]);
        if (rw[2 * r] >= rw[2 * r + 1]) return NULL;
        int64_t n = (rw[2 * r + 1] - rw[2 * r] + dh - 1) / dh;
        if (n > kr) kr = n;
    }
    for (int64_t s = 0; s < ow; s++) {
        sb_pool_window(&cols, s, &cw[2 * s], &cw[2 * s + 1]);
        if (cw[2 * s] >= cw[2 * s + 1]) return NULL;
        int64_t n = (cw[2 * s + 1] - cw[2 * s] + dw - 1) / dw;
        if (n > kc) kc = n;
    }
    if (kr * kc > TAPS_TABLE_MAX / ohw) return NULL;
    int32_t *tab = malloc((size_t)(kr * kc * ohw) * sizeof *tab);
    if (!tab) return NULL;
    for (int64_t i = 0; i < kr; i++)
        for (int64_t j = 0; j < kc; j++)
            for (int64_t r = 0; r < oh; r++)
                for (int64_t s = 0; s < ow; s++) {
                    int64_t ih = rw[2 * r] + i * dh, iw = cw[2 * s] + j * dw;
                    bool in = ih < rw[2 * r + 1] && iw < cw[2 * s + 1];
                    tab[(i * kc + j) * ohw + r * ow + s] = in ? (int32_t)(ih * g->w + iw) : -1;
                }
    *taps_out = kr * kc;
    return tab;
}

void sb_cpu_max_pool2d_forward(const sb_pool2d_geom *g, const float *x, float *y, int64_t *indices) {
    pool_ctx t = {g, x, NULL, y, indices, NULL, 0};
    int32_t *tab = max_taps_table(g, &t.taps);
    t.tab = tab;
    over_planes(g, max_fwd_range, &t);
    free(tab);
}

/* sb_sum_few_terms of 2 <= k <= 32 terms, its tree written out for the
 * counts overlapping 3x3 stride-2 windows give (an input is the maximum of
 * at most four of them): lanes j + s fold into j for s = 2, 1 among the k
 * in use, each term first added to its lane's -0. */
static inline float few_terms_sum(float *t, int k) {
    switch (k) {
    case 2: return (-0.0f + t[0]) + (-0.0f + t[1]);
    case 3: return ((-0.0f + t[0]) + (-0.0f + t[2])) + (-0.0f + t[1]);
    case 4: return ((-0.0f + t[0]) + (-0.0f + t[2])) + ((-0.0f + t[1]) + (-0.0f + t[3]));
    default: return sb_sum_few_terms(t, k);
    }
}

/* Overlapping windows (ResNet's 3x3 stride-2 pooling) by a scatter: the
 * windows are visited in row-major order, the reference's order for each
 * input (an index lies inside its own window, so the windows holding an
 * input that name it are those the reference finds), and each term lands
 * in the next free lane of its input; then every input with terms folds
 * them as the canonical sum does. Most inputs are no window's maximum and
 * get +0 without a search. Returns false (nothing written) when some input
 * is the maximum of more than 32 windows or scratch memory ran out: the
 * caller then runs the reference loops. */
static bool max_bwd_plane_scatter(int64_t hw, int64_t ohw, const float *dyp, const int64_t *ip,
                                  float *dxp) {
    /* count[i]: the windows whose maximum input i is; then fill[i]: the
     * terms of input i placed so far */
    uint8_t *count = sb_scratch(SB_SCRATCH_CONV_AUX, (size_t)(2 * hw) * sizeof *count);
    if (!count) return false;
    uint8_t *fill = count + hw;
    memset(count, 0, (size_t)(2 * hw) * sizeof *count);
    int most = 0;
    for (int64_t q = 0; q < ohw; q++) {
        int c = count[ip[q]];
        if (c == 32) return false;
        count[ip[q]] = (uint8_t)(c + 1);
        if (c + 1 > most) most = c + 1;
    }
    int L = 1;
    while (L < most) L *= 2;
    /* the L lanes of input i: terms[i * L .. i * L + L - 1], touched only
     * for inputs of two or more terms */
    float *terms = most > 1 ? sb_scratch(SB_SCRATCH_OPS, (size_t)(hw * L) * sizeof *terms) : NULL;
    if (most > 1 && !terms) return false;
    /* the empty sum is +0; the sum of one term is -0 + t (t itself, a
     * signalling NaN quieted) */
    memset(dxp, 0, (size_t)hw * sizeof *dxp);
    for (int64_t q = 0; q < ohw; q++) {
        int64_t i = ip[q];
        int c = count[i];
        if (c == 1) {
            dxp[i] = -0.0f + dyp[q];
        } else {
            terms[i * L + fill[i]] = dyp[q];
            if (++fill[i] == c) dxp[i] = few_terms_sum(terms + i * L, c); /* its last term */
        }
    }
    return true;
}

static void max_bwd_range(void *vctx, int64_t p0, int64_t p1) {
    const pool_ctx *t = vctx;
    const sb_pool2d_geom *g = t->g;
    int64_t hw = g->h * g->w, ohw = g->oh * g->ow;
    if (!disjoint_windows(g)) {
        for (int64_t p = p0; p < p1; p++) {
            if (max_bwd_plane_scatter(hw, ohw, t->in + p * ohw, t->indices_in + p * ohw,
                                      t->out + p * hw))
                continue;
            sb_pool2d_geom s = slice(g, p, p + 1);
            sb_ref_max_pool2d_backward(&s, t->in + p * ohw, t->indices_in + p * ohw,
                                       t->out + p * hw);
        }
        return;
    }
    for (int64_t p = p0; p < p1; p++) {
        float *dxp = t->out + p * hw;
        const float *dyp = t->in + p * ohw;
        const int64_t *ip = t->indices_in + p * ohw;
        memset(dxp, 0, (size_t)hw * sizeof *dxp);
        /* Each index lies in its own window (checked by the caller) and the
         * windows are disjoint: one contribution at most per input. */
        for (int64_t q = 0; q < ohw; q++) dxp[ip[q]] = dyp[q];
    }
}

void sb_cpu_max_pool2d_backward(const sb_pool2d_geom *g, const float *dy, const int64_t *indices,
                                float *dx) {
    pool_ctx t = {g, dy, indices, dx, NULL, NULL, 0};
    over_planes(g, max_bwd_range, &t);
}

/* Every plane shares its windows' divisors: computed once per range into
 * div (AVG_DIVISORS_MAX floats) when the output plane fits, else NULL and
 * each is computed where it is used. (Global pooling over 164K planes of
 * one output spent more on the divisor than on the sum.) */
enum { AVG_DIVISORS_MAX = 1024 };

static const float *avg_divisors(const sb_pool2d_geom *g, float *div) {
    if (g->oh * g->ow > AVG_DIVISORS_MAX) return NULL;
    for (int64_t r = 0; r < g->oh; r++)
        for (int64_t s = 0; s < g->ow; s++) div[r * g->ow + s] = sb_ref_avg_pool2d_divisor(g, r, s);
    return div;
}

/* A window's canonical sum as the reference forms it (terms row by row),
 * without its 32-lane state per output when the window holds at most 32
 * elements (sb_sum_few_terms): ResNet's adaptive pooling to 1x1 sums 1 to 16
 * elements per output. */
static void avg_fwd_range(void *vctx, int64_t p0, int64_t p1) {
    const pool_ctx *t = vctx;
    const sb_pool2d_geom *g = t->g;
    sb_pool_axis rows = sb_pool_rows(g), cols = sb_pool_cols(g);
    float div[AVG_DIVISORS_MAX];
    const float *divs = avg_divisors(g, div);
    for (int64_t p = p0; p < p1; p++) {
        const float *xp = t->in + p * g->h * g->w;
        float *yp = t->out + p * g->oh * g->ow;
        for (int64_t r = 0; r < g->oh; r++) {
            int64_t h0, h1;
            sb_pool_window(&rows, r, &h0, &h1);
            for (int64_t s = 0; s < g->ow; s++) {
                int64_t w0, w1;
                sb_pool_window(&cols, s, &w0, &w1);
                int64_t width = w1 > w0 ? w1 - w0 : 0, count = h1 > h0 ? (h1 - h0) * width : 0;
                float sum, terms[32];
                if (count <= 32) {
                    int k = 0;
                    for (int64_t ih = h0; ih < h1; ih++)
                        for (int64_t iw = w0; iw < w1; iw++) terms[k++] = xp[ih * g->w + iw];
                    sum = sb_sum_few_terms(terms, k);
                } else {
                    sb_sum_acc acc;
                    sb_sum_init(&acc);
                    for (int64_t ih = h0; ih < h1; ih++)
                        sb_cpu_sum_add_n(&acc, xp + ih * g->w + w0, width);
                    sum = sb_sum_result(&acc);
                }
                yp[r * g->ow + s] = sum / (divs ? divs[r * g->ow + s]
                                                : sb_ref_avg_pool2d_divisor(g, r, s));
            }
        }
    }
}

void sb_cpu_avg_pool2d_forward(const sb_pool2d_geom *g, const float *x, float *y) {
    pool_ctx t = {g, x, NULL, y, NULL, NULL, 0};
    over_planes(g, avg_fwd_range, &t);
}

static void avg_bwd_range(void *vctx, int64_t p0, int64_t p1) {
    const pool_ctx *t = vctx;
    const sb_pool2d_geom *g = t->g;
    int64_t hw = g->h * g->w, ohw = g->oh * g->ow;
    if (!disjoint_windows(g)) {
        sb_pool2d_geom s = slice(g, p0, p1);
        sb_ref_avg_pool2d_backward(&s, t->in + p0 * ohw, t->out + p0 * hw);
        return;
    }
    float div[AVG_DIVISORS_MAX];
    const float *divs = avg_divisors(g, div);
    for (int64_t p = p0; p < p1; p++) {
        float *dxp = t->out + p * hw;
        const float *dyp = t->in + p * ohw;
        memset(dxp, 0, (size_t)hw * sizeof *dxp);
        for (int64_t r = 0; r < g->oh; r++)
            for (int64_t s = 0; s < g->ow; s++) {
                /* The one term of every in-bounds input of this window. */
                float v = dyp[r * g->ow + s] / (divs ? divs[r * g->ow + s]
                                                     : sb_ref_avg_pool2d_divisor(g, r, s));
                int64_t h0 = r * g->stride_h - g->pad_h, w0 = s * g->stride_w - g->pad_w;
                int64_t h1 = h0 + g->kh < g->h ? h0 + g->kh : g->h;
                int64_t w1 = w0 + g->kw < g->w ? w0 + g->kw : g->w;
                for (int64_t ih = h0 < 0 ? 0 : h0; ih < h1; ih++)
                    for (int64_t iw = w0 < 0 ? 0 : w0; iw < w1; iw++) dxp[ih * g->w + iw] = v;
            }
    }
}

void sb_cpu_avg_pool2d_backward(const sb_pool2d_geom *g, const float *dy, float *dx) {
    pool_ctx t = {g, dy, NULL, dx, NULL, NULL, 0};
    over_planes(g, avg_bwd_range, &t);
}
