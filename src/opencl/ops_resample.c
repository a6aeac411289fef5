/* The OpenCL device's interpolation and grid sampling (contract section 8;
 * kernels in src/gpu/kernels/resample.cl). Both backward passes are
 * gathers in the reference's term order, which the reference's own reader
 * tables give: interpolation's come from the geometry alone
 * (sb_interp_tables_build), grid sampling's from the grid, which is
 * brought to the host for sb_grid_readers_build. The tables go to the
 * device as read-only buffers; every result is computed there. Arguments
 * arrive validated by src/ops (dense operands). */
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"
#include "opencl/opencl_internal.h"

/* ---- launching ---- */

/* A dense float operand of n elements (NULL operand when n is 0). */
static sb_status operand(const char *fn, const char *what, const void *p, int64_t n,
                         sb_ocl_ptr *out) {
    return sb_ocl_resolve(fn, what, n > 0 ? p : NULL, n > 0 ? (size_t)n * sizeof(float) : 0,
                          sizeof(float), out);
}

#define ARG(v) SB_OCL_ARG(v)
#define OPERAND(p) SB_OCL_ARG((p).mem), SB_OCL_ARG((p).off)
#define ARGS(a) (int)(sizeof(a) / sizeof *(a)), (a)

/* Kernel `name` of resample.cl over n units: groups of 64, at most 2^16
 * work-items, each looping over its units (SB_FOR_EACH). */
static sb_status run(const char *fn, const char *name, int nargs, const sb_ocl_arg *args,
                     int64_t n) {
    if (n <= 0) return SB_OK;
    size_t local = 64, global = (size_t)(n < (1 << 16) ? n : (1 << 16));
    global = (global + local - 1) / local * local;
    return sb_ocl_launch(fn, SB_OCL_RESAMPLE, "", name, nargs, args, 1, &global, &local);
}

/* A read-only device copy of `count` elements of `elem` bytes (at least
 * one element, so that an empty table is still a buffer). */
static sb_status table(const char *fn, const void *host, size_t count, size_t elem, cl_mem *out) {
    static const int64_t none = 0;
    if (count == 0) return sb_ocl_const_buffer(fn, &none, sizeof none, out);
    return sb_ocl_const_buffer(fn, host, count * elem, out);
}

static void release(cl_mem m) {
    if (m) clReleaseMemObject(m); /* the queue keeps it until its kernels ran */
}

/* ---- interpolation ---- */

enum { INTERP_AXIS = 9, INTERP_HEAD = 2 + 3 * INTERP_AXIS }; /* resample.cl's layout */

/* The geometry buffer (the header, then every axis's integer tables) and
 * the weight table of t, as resample.cl reads them. */
typedef struct interp_upload {
    int64_t *g;
    float *w;
    size_t ng, nw;
} interp_upload;

static sb_status interp_pack(const sb_interp_geom *g, const sb_interp_tables *t, bool inverse,
                             interp_upload *u) {
    size_t ng = INTERP_HEAD, nw = 0;
    for (int k = 0; k < 3; k++) {
        const sb_interp_axis *a = &t->axis[k];
        size_t n = (size_t)a->out * (size_t)a->taps;
        ng += n;
        nw += n;
        if (inverse) {
            size_t groups = (size_t)a->gfirst[a->in];
            ng += (size_t)a->in + 1 + groups + groups + 1;
            nw += n;
        }
    }
    *u = (interp_upload){malloc(ng * sizeof(int64_t)), malloc(nw * sizeof(float)), ng, nw};
    if (!u->g || !u->w) {
        free(u->g), free(u->w);
        return sb_fail(SB_ERR_NOMEM, "interpolation: no memory for the device's tap tables");
    }
    bool nearest = g->mode == SB_INTERP_NEAREST || g->mode == SB_INTERP_NEAREST_EXACT;
    u->g[0] = g->planes;
    u->g[1] = nearest;
    size_t at = INTERP_HEAD, wat = 0;
    for (int k = 0; k < 3; k++) {
        const sb_interp_axis *a = &t->axis[k];
        int64_t *h = u->g + 2 + k * INTERP_AXIS;
        size_t n = (size_t)a->out * (size_t)a->taps;
        memset(h, 0, INTERP_AXIS * sizeof *h);
        h[0] = a->in, h[1] = a->out, h[2] = a->taps;
        h[3] = (int64_t)at, h[4] = (int64_t)wat;
        memcpy(u->g + at, a->idx, n * sizeof(int64_t)), at += n;
        memcpy(u->w + wat, a->w, n * sizeof(float)), wat += n;
        if (!inverse) continue;
        size_t groups = (size_t)a->gfirst[a->in];
        h[5] = (int64_t)at;
        memcpy(u->g + at, a->gfirst, ((size_t)a->in + 1) * sizeof(int64_t)), at += (size_t)a->in + 1;
        h[6] = (int64_t)at;
        memcpy(u->g + at, a->gout, groups * sizeof(int64_t)), at += groups;
        h[7] = (int64_t)at;
        memcpy(u->g + at, a->gbeg, (groups + 1) * sizeof(int64_t)), at += groups + 1;
        h[8] = (int64_t)wat;
        memcpy(u->w + wat, a->gw, n * sizeof(float)), wat += n;
    }
    return SB_OK;
}

/* The forward (inverse = false: x -> y) or backward (dy -> dx) pass. */
static sb_status interp_run(const char *fn, const sb_interp_geom *g, bool inverse,
                            const float *src, float *dst) {
    int64_t n_in = g->planes * g->in[0] * g->in[1] * g->in[2];
    int64_t n_out = g->planes * g->out[0] * g->out[1] * g->out[2];
    sb_ocl_ptr ps, pd;
    SB_TRY(operand(fn, inverse ? "dy" : "x", src, inverse ? n_out : n_in, &ps));
    SB_TRY(operand(fn, inverse ? "dx" : "y", dst, inverse ? n_in : n_out, &pd));
    if ((inverse ? n_in : n_out) == 0) return SB_OK;
    sb_interp_tables t;
    SB_TRY(sb_interp_tables_build(g, inverse, &t));
    interp_upload u;
    sb_status st = interp_pack(g, &t, inverse, &u);
    sb_interp_tables_free(&t);
    if (st != SB_OK) return st;
    cl_mem gm = NULL, wm = NULL;
    st = table(fn, u.g, u.ng, sizeof(int64_t), &gm);
    if (st == SB_OK) st = table(fn, u.w, u.nw, sizeof(float), &wm);
    free(u.g), free(u.w);
    if (st == SB_OK) {
        sb_ocl_arg args[] = {ARG(gm), ARG(wm), OPERAND(ps), OPERAND(pd)};
        st = run(fn, inverse ? "sb_interp_backward" : "sb_interp_forward", ARGS(args),
                 inverse ? n_in : n_out);
    }
    release(gm), release(wm);
    return st;
}

sb_status sb_ocl_interpolate_forward(const sb_backend *be, const sb_interp_geom *g,
                                     const float *x, float *y) {
    (void)be;
    return interp_run("sb_interpolate_forward", g, false, x, y);
}

sb_status sb_ocl_interpolate_backward(const sb_backend *be, const sb_interp_geom *g,
                                      const float *dy, float *dx) {
    (void)be;
    return interp_run("sb_interpolate_backward", g, true, dy, dx);
}

/* ---- grid sampling ---- */

enum { GRID_GEOM = 9 }; /* resample.cl's sb_grid_dims_of */

static sb_status grid_geom(const char *fn, const sb_grid_geom *g, cl_mem *out) {
    int64_t v[GRID_GEOM] = {g->n, g->c,    g->h, g->w, g->oh, g->ow, (int64_t)g->mode,
                            (int64_t)g->padding, g->align_corners};
    return sb_ocl_const_buffer(fn, v, sizeof v, out);
}

typedef struct grid_operands {
    sb_ocl_ptr x, grid, y; /* y: y or dy */
} grid_operands;

static sb_status grid_operands_of(const char *fn, const sb_grid_geom *g, const float *x,
                                  const float *grid, const char *yname, const float *y,
                                  grid_operands *o) {
    SB_TRY(operand(fn, "x", x, g->n * g->c * g->h * g->w, &o->x));
    SB_TRY(operand(fn, "grid", grid, g->n * g->oh * g->ow * 2, &o->grid));
    return operand(fn, yname, y, g->n * g->c * g->oh * g->ow, &o->y);
}

sb_status sb_ocl_grid_sample_forward(const sb_backend *be, const sb_grid_geom *g, const float *x,
                                     const float *grid, float *y) {
    (void)be;
    const char *fn = "sb_grid_sample_forward";
    grid_operands o;
    SB_TRY(grid_operands_of(fn, g, x, grid, "y", y, &o));
    int64_t n = g->n * g->c * g->oh * g->ow;
    if (n == 0) return SB_OK;
    cl_mem gm;
    SB_TRY(grid_geom(fn, g, &gm));
    sb_ocl_arg args[] = {ARG(gm), OPERAND(o.x), OPERAND(o.grid), OPERAND(o.y)};
    sb_status st = run(fn, "sb_grid_forward", ARGS(args), n);
    release(gm);
    return st;
}

/* dx of every batch entry from its readers (built on the host from the
 * grid, brought back for it). */
static sb_status grid_dx(const sb_backend *be, const char *fn, const sb_grid_geom *g, cl_mem gm,
                         const float *grid, const grid_operands *o, float *dx) {
    sb_ocl_ptr pdx;
    int64_t plane_in = g->h * g->w;
    SB_TRY(operand(fn, "dx", dx, g->n * g->c * plane_in, &pdx));
    if (g->n * g->c * plane_in == 0) return SB_OK;
    size_t grid_bytes = (size_t)(g->n * g->oh * g->ow * 2) * sizeof(float);
    float *host = malloc(grid_bytes ? grid_bytes : 1);
    if (!host) return sb_fail(SB_ERR_NOMEM, "%s: no memory for the grid's reader tables", fn);
    sb_status st = grid_bytes ? be->download(be, host, grid, grid_bytes) : SB_OK;
    for (int64_t b = 0; b < g->n && st == SB_OK; b++) {
        sb_grid_readers r;
        st = sb_grid_readers_build(g, b, host, &r);
        if (st != SB_OK) break;
        /* first (plane_in + 1) then out, one integer table */
        size_t entries = (size_t)r.first[plane_in];
        int64_t *rd = malloc(((size_t)plane_in + 1 + entries) * sizeof *rd);
        cl_mem rm = NULL, wm = NULL;
        if (!rd) {
            st = sb_fail(SB_ERR_NOMEM, "%s: no memory for the grid's reader tables", fn);
        } else {
            memcpy(rd, r.first, ((size_t)plane_in + 1) * sizeof *rd);
            memcpy(rd + plane_in + 1, r.out, entries * sizeof *rd);
            st = table(fn, rd, (size_t)plane_in + 1 + entries, sizeof *rd, &rm);
            if (st == SB_OK) st = table(fn, r.wt, entries, sizeof(float), &wm);
        }
        if (st == SB_OK) {
            cl_long bb = b;
            sb_ocl_arg args[] = {ARG(gm), ARG(bb), ARG(rm), ARG(wm), OPERAND(o->y), OPERAND(pdx)};
            st = run(fn, "sb_grid_dx", ARGS(args), g->c * plane_in);
        }
        release(rm), release(wm);
        free(rd);
        sb_grid_readers_free(&r);
    }
    free(host);
    return st;
}

sb_status sb_ocl_grid_sample_backward(const sb_backend *be, const sb_grid_geom *g,
                                      const float *x, const float *grid, const float *dy,
                                      float *dx, float *dgrid) {
    const char *fn = "sb_grid_sample_backward";
    grid_operands o;
    SB_TRY(grid_operands_of(fn, g, x, grid, "dy", dy, &o));
    cl_mem gm;
    SB_TRY(grid_geom(fn, g, &gm));
    sb_status st = SB_OK;
    int64_t points = g->n * g->oh * g->ow;
    if (dgrid && points > 0) {
        sb_ocl_ptr pdg;
        st = operand(fn, "dgrid", dgrid, points * 2, &pdg);
        if (st == SB_OK) {
            sb_ocl_arg args[] = {ARG(gm),        OPERAND(o.x), OPERAND(o.grid),
                                 OPERAND(o.y),   OPERAND(pdg)};
            st = run(fn, "sb_grid_dgrid", ARGS(args), points);
        }
    }
    if (dx && st == SB_OK) st = grid_dx(be, fn, g, gm, grid, &o, dx);
    release(gm);
    return st;
}
