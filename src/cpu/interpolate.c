/* Fast interpolation (src/cpu/interp_internal.h), bit-identical to
 * src/ref/interpolate.c.
 *
 * The tap tables are built once; the units of the reference (a plane and
 * one outermost output row for the forward, one outermost input row for
 * the backward gather) are independent, so they are split over threads:
 * every output (forward) and every input gradient (backward) is computed
 * by the reference's own loop in its own order, whichever thread runs it. */
#include "core/internal.h"
#include "cpu/cpu.h"
#include "cpu/interp_internal.h"

typedef struct {
    const sb_interp_geom *g;
    const sb_interp_tables *t;
    const float *in;
    float *out;
} interp_ctx;

static void fwd_range(void *vctx, int64_t u0, int64_t u1) {
    const interp_ctx *c = vctx;
    sb_ref_interp_forward_units(c->g, c->t, u0, u1, c->in, c->out);
}

static void bwd_range(void *vctx, int64_t u0, int64_t u1) {
    const interp_ctx *c = vctx;
    sb_ref_interp_backward_units(c->g, c->t, u0, u1, c->in, c->out);
}

/* units of `per_unit` elements each, ranges of at least ~4096 elements */
static void run(int64_t units, int64_t per_unit, sb_range_fn fn, interp_ctx *c) {
    sb_parallel_for(units, sb_parallel_grain(units, 4096 / (per_unit + 1) + 1), fn, c);
}

sb_status sb_cpu_interpolate_forward(const sb_interp_geom *g, const float *x, float *y) {
    sb_interp_tables t;
    SB_TRY(sb_interp_tables_build(g, false, &t));
    interp_ctx c = {g, &t, x, y};
    run(g->planes * g->out[0], g->out[1] * g->out[2], fwd_range, &c);
    sb_interp_tables_free(&t);
    return SB_OK;
}

sb_status sb_cpu_interpolate_backward(const sb_interp_geom *g, const float *dy, float *dx) {
    sb_interp_tables t;
    SB_TRY(sb_interp_tables_build(g, true, &t));
    interp_ctx c = {g, &t, dy, dx};
    run(g->planes * g->in[0], g->in[1] * g->in[2], bwd_range, &c);
    sb_interp_tables_free(&t);
    return SB_OK;
}
