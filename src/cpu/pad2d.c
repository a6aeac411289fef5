/* Fast 2-D padding (src/cpu/pad_internal.h), bit-identical to
 * src/ref/pad2d.c.
 *
 * Planes are independent, so they are split over threads. The forward
 * copies each output row's interior with memcpy (a bit copy, as the
 * reference's element copies) and fills the pads by the per-element rule;
 * the backward runs the reference gather on each range of planes: every
 * input sums its own copies in their order, so splitting planes cannot
 * change a bit. */
#include <string.h>
#include "cpu/cpu.h"
#include "cpu/pad_internal.h"

typedef struct {
    const sb_pad2d_geom *g;
    const float *in;
    float *out;
} pad_ctx;

static sb_pad2d_geom slice(const sb_pad2d_geom *g, int64_t p0, int64_t p1) {
    sb_pad2d_geom s = *g;
    s.planes = p1 - p0;
    return s;
}

static void over_planes(const sb_pad2d_geom *g, sb_range_fn fn, void *ctx) {
    int64_t per_plane = g->h * g->w + g->oh * g->ow + 1;
    int64_t min_grain = 4096 / per_plane + 1;
    sb_parallel_for(g->planes, sb_parallel_grain(g->planes, min_grain), fn, ctx);
}

static void fwd_range(void *vctx, int64_t p0, int64_t p1) {
    const pad_ctx *t = vctx;
    const sb_pad2d_geom *g = t->g;
    int64_t left = g->left, right = g->ow - g->left - g->w;
    for (int64_t p = p0; p < p1; p++) {
        const float *xp = t->in + p * g->h * g->w;
        float *yp = t->out + p * g->oh * g->ow;
        for (int64_t r = 0; r < g->oh; r++) {
            int64_t h = sb_pad_source(g->mode, r, g->h, g->top);
            float *yr = yp + r * g->ow;
            if (h < 0) { /* a constant row */
                for (int64_t s = 0; s < g->ow; s++) yr[s] = g->value;
                continue;
            }
            const float *xr = xp + h * g->w;
            for (int64_t s = 0; s < left; s++) {
                int64_t w = sb_pad_source(g->mode, s, g->w, left);
                yr[s] = w < 0 ? g->value : xr[w];
            }
            if (g->w > 0) memcpy(yr + left, xr, (size_t)g->w * sizeof *yr);
            for (int64_t s = left + g->w; s < left + g->w + right; s++) {
                int64_t w = sb_pad_source(g->mode, s, g->w, left);
                yr[s] = w < 0 ? g->value : xr[w];
            }
        }
    }
}

void sb_cpu_pad2d_forward(const sb_pad2d_geom *g, const float *x, float *y) {
    pad_ctx t = {g, x, y};
    over_planes(g, fwd_range, &t);
}

static void bwd_range(void *vctx, int64_t p0, int64_t p1) {
    const pad_ctx *t = vctx;
    sb_pad2d_geom s = slice(t->g, p0, p1);
    sb_ref_pad2d_backward(&s, t->in + p0 * t->g->oh * t->g->ow, t->out + p0 * t->g->h * t->g->w);
}

void sb_cpu_pad2d_backward(const sb_pad2d_geom *g, const float *dy, float *dx) {
    pad_ctx t = {g, dy, dx};
    over_planes(g, bwd_range, &t);
}
