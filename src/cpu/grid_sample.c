/* Fast grid sampling (src/cpu/grid_internal.h), bit-identical to
 * src/ref/grid_sample.c.
 *
 * The forward and dgrid split output rows over threads (each output and
 * each grid point's gradient is computed by the reference's own loop).
 * dx: the reader tables of every batch entry are built first, then the
 * (batch, channel) planes are split over threads; each input element sums
 * its own terms in the contract's order, whichever thread runs it. */
#include <stdlib.h>
#include "core/internal.h"
#include "cpu/cpu.h"
#include "cpu/grid_internal.h"

typedef struct {
    const sb_grid_geom *g;
    const float *x, *grid, *dy;
    float *out;
    const sb_grid_readers *readers;
} grid_ctx;

static void fwd_range(void *vctx, int64_t u0, int64_t u1) {
    const grid_ctx *c = vctx;
    sb_ref_grid_forward_units(c->g, u0, u1, c->x, c->grid, c->out);
}

static void dgrid_range(void *vctx, int64_t u0, int64_t u1) {
    const grid_ctx *c = vctx;
    sb_ref_grid_dgrid_units(c->g, u0, u1, c->x, c->grid, c->dy, c->out);
}

static void dx_range(void *vctx, int64_t u0, int64_t u1) {
    const grid_ctx *c = vctx;
    for (int64_t u = u0; u < u1; u++) { /* u = (batch b, channel) */
        int64_t b = u / c->g->c, ch = u % c->g->c;
        sb_ref_grid_dx_planes(c->g, b, &c->readers[b], ch, ch + 1, c->dy, c->out);
    }
}

/* rows of ow outputs times the channels each reads */
static int64_t row_grain(const sb_grid_geom *g, int64_t units) {
    return sb_parallel_grain(units, 4096 / (g->ow * g->c * 4 + 1) + 1);
}

void sb_cpu_grid_sample_forward(const sb_grid_geom *g, const float *x, const float *grid,
                                float *y) {
    grid_ctx c = {.g = g, .x = x, .grid = grid, .out = y};
    int64_t units = g->n * g->oh;
    sb_parallel_for(units, row_grain(g, units), fwd_range, &c);
}

sb_status sb_cpu_grid_sample_backward(const sb_grid_geom *g, const float *x, const float *grid,
                                      const float *dy, float *dx, float *dgrid) {
    if (dgrid) {
        grid_ctx c = {.g = g, .x = x, .grid = grid, .dy = dy, .out = dgrid};
        int64_t units = g->n * g->oh;
        sb_parallel_for(units, row_grain(g, units), dgrid_range, &c);
    }
    if (!dx) return SB_OK;
    sb_grid_readers *r = calloc((size_t)g->n + 1, sizeof *r);
    if (!r) return sb_fail(SB_ERR_NOMEM, "grid sampling: no memory for the reader tables");
    sb_status s = SB_OK;
    for (int64_t b = 0; b < g->n && s == SB_OK; b++) s = sb_grid_readers_build(g, b, grid, &r[b]);
    if (s == SB_OK) {
        grid_ctx c = {.g = g, .grid = grid, .dy = dy, .out = dx, .readers = r};
        int64_t units = g->n * g->c, per = g->h * g->w * 2 + 1;
        sb_parallel_for(units, sb_parallel_grain(units, 4096 / per + 1), dx_range, &c);
    }
    for (int64_t b = 0; b < g->n; b++) sb_grid_readers_free(&r[b]);
    free(r);
    return s;
}
