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
 * a zeroed plane gives the same bits without the per-input search.
 *
 * Adaptive pooling (windows of PyTorch's floor/ceil rule) runs the same
 * entry points with g->adaptive set. */
#include <string.h>
#include "core/internal.h"
#include "cpu/conv_internal.h"
#include "cpu/cpu.h"
#include "cpu/kernels.h"

typedef struct {
    const sb_pool2d_geom *g;
    const float *in;
    const int64_t *indices_in;
    float *out;
    int64_t *indices_out;
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

static void max_fwd_range(void *vctx, int64_t p0, int64_t p1) {
    const pool_ctx *t = vctx;
    const sb_pool2d_geom *g = t->g;
    sb_max_pool2x2_fn pool2x2 = sb_kernels()->max_pool2x2;
    if (!pool2x2) pool2x2 = max_pool2x2_portable;
    if (is_2x2_inside(g)) {
        int64_t hw = g->h * g->w, ohw = g->oh * g->ow;
        for (int64_t p = p0; p < p1; p++)
            pool2x2(t->in + p * hw, g->w, g->oh, g->ow, t->out + p * ohw,
                    t->indices_out ? t->indices_out + p * ohw : NULL);
        return;
    }
    sb_pool2d_geom s = slice(t->g, p0, p1);
    int64_t ohw = t->g->oh * t->g->ow;
    sb_ref_max_pool2d_forward(&s, t->in + p0 * t->g->h * t->g->w, t->out + p0 * ohw,
                              t->indices_out ? t->indices_out + p0 * ohw : NULL);
}

void sb_cpu_max_pool2d_forward(const sb_pool2d_geom *g, const float *x, float *y, int64_t *indices) {
    pool_ctx t = {g, x, NULL, y, indices};
    over_planes(g, max_fwd_range, &t);
}

static void max_bwd_range(void *vctx, int64_t p0, int64_t p1) {
    const pool_ctx *t = vctx;
    const sb_pool2d_geom *g = t->g;
    int64_t hw = g->h * g->w, ohw = g->oh * g->ow;
    if (!disjoint_windows(g)) {
        sb_pool2d_geom s = slice(g, p0, p1);
        sb_ref_max_pool2d_backward(&s, t->in + p0 * ohw, t->indices_in + p0 * ohw,
                                   t->out + p0 * hw);
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
    pool_ctx t = {g, dy, indices, dx, NULL};
    over_planes(g, max_bwd_range, &t);
}

static void avg_fwd_range(void *vctx, int64_t p0, int64_t p1) {
    const pool_ctx *t = vctx;
    sb_pool2d_geom s = slice(t->g, p0, p1);
    sb_ref_avg_pool2d_forward(&s, t->in + p0 * t->g->h * t->g->w,
                              t->out + p0 * t->g->oh * t->g->ow);
}

void sb_cpu_avg_pool2d_forward(const sb_pool2d_geom *g, const float *x, float *y) {
    pool_ctx t = {g, x, NULL, y, NULL};
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
    for (int64_t p = p0; p < p1; p++) {
        float *dxp = t->out + p * hw;
        const float *dyp = t->in + p * ohw;
        memset(dxp, 0, (size_t)hw * sizeof *dxp);
        for (int64_t r = 0; r < g->oh; r++)
            for (int64_t s = 0; s < g->ow; s++) {
                /* The one term of every in-bounds input of this window. */
                float v = dyp[r * g->ow + s] / sb_ref_avg_pool2d_divisor(g, r, s);
                int64_t h0 = r * g->stride_h - g->pad_h, w0 = s * g->stride_w - g->pad_w;
                int64_t h1 = h0 + g->kh < g->h ? h0 + g->kh : g->h;
                int64_t w1 = w0 + g->kw < g->w ? w0 + g->kw : g->w;
                for (int64_t ih = h0 < 0 ? 0 : h0; ih < h1; ih++)
                    for (int64_t iw = w0 < 0 ? 0 : w0; iw < w1; iw++) dxp[ih * g->w + iw] = v;
            }
    }
}

void sb_cpu_avg_pool2d_backward(const sb_pool2d_geom *g, const float *dy, float *dx) {
    pool_ctx t = {g, dy, NULL, dx, NULL};
    over_planes(g, avg_bwd_range, &t);
}
