/* src/gpu/ops_resample.c - interpolation and grid sampling in the GPU host
 * layer (contract section 8; kernels in src/gpu/kernels/resample.cl). Both
 * backward passes are gathers in the reference's term order, which the
 * reference's reader tables give: interpolation's come from the geometry
 * alone (sb_interp_tables_build on the host; the integer tables go to the
 * device as the kernel's geometry, the weights as a temporary of the
 * backend), grid sampling's from the grid, so the device builds them (a
 * sort of the terms by the input position they read, sort.cl's merge
 * sort). Every result is computed on the device. Arguments
 * arrive validated by src/ops (dense operands). */
#include <stdlib.h>
#include <string.h>
#include "core/checked.h"
#include "core/internal.h"
#include "gpu/gpu_host.h"

#define K(id) (&sb_gpu_kernels[SB_GPU_K_##id])
#define ARG(v) SB_GPU_ARG(v)
#define OPERAND(p) SB_GPU_ARG((p).buf), SB_GPU_ARG((p).off)
#define GEOM_ARG {0, NULL}
#define ARGS(a) (int)(sizeof(a) / sizeof *(a)), (a)

/* A dense float operand of n elements (NULL operand when n is 0). */
static sb_status operand(const sb_backend *be, const char *fn, const char *what, const void *p,
                         int64_t n, sb_gpu_ptr *out) {
    return sb_gpu_dense(be, fn, what, p, n, sizeof(float), out);
}

/* A device copy of `count` elements of `elem` bytes in a temporary of be
 * (at least one element, so that an empty table is still a buffer): the
 * allocation in *mem (release it with be->release), its buffer in *buf. */
static sb_status table(const sb_backend *be, const char *fn, const void *host, size_t count,
                       size_t elem, void **mem, void **buf) {
    size_t bytes = count ? count * elem : sizeof(int64_t);
    *mem = NULL;
    SB_TRY(be->alloc(be, bytes, mem));
    sb_status st = count ? be->upload(be, *mem, host, bytes) : SB_OK;
    sb_gpu_ptr p = {NULL, 0};
    if (st == SB_OK) st = sb_gpu_dense(be, fn, "a table", *mem, (int64_t)(bytes / elem), elem, &p);
    *buf = p.buf;
    return st;
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
        memcpy(u->g + at, a->gfirst, ((size_t)a->in + 1) * sizeof(int64_t)),
            at += (size_t)a->in + 1;
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
static sb_status interp_run(const sb_backend *be, const char *fn, const sb_interp_geom *g,
                            bool inverse, const float *src, float *dst) {
    int64_t n_in = g->planes * g->in[0] * g->in[1] * g->in[2];
    int64_t n_out = g->planes * g->out[0] * g->out[1] * g->out[2];
    sb_gpu_ptr ps, pd;
    SB_TRY(operand(be, fn, inverse ? "dy" : "x", src, inverse ? n_out : n_in, &ps));
    SB_TRY(operand(be, fn, inverse ? "dx" : "y", dst, inverse ? n_in : n_out, &pd));
    if ((inverse ? n_in : n_out) == 0) return SB_OK;
    sb_interp_tables t;
    SB_TRY(sb_interp_tables_build(g, inverse, &t));
    interp_upload u;
    sb_status st = interp_pack(g, &t, inverse, &u);
    sb_interp_tables_free(&t);
    if (st != SB_OK) return st;
    void *wmem = NULL, *wbuf = NULL;
    st = table(be, fn, u.w, u.nw, sizeof(float), &wmem, &wbuf);
    if (st == SB_OK) {
        sb_gpu_arg args[] = {GEOM_ARG, ARG(wbuf), OPERAND(ps), OPERAND(pd)};
        st = sb_gpu_launch(be, fn, inverse ? K(INTERP_BACKWARD) : K(INTERP_FORWARD), u.g,
                           u.ng * sizeof(int64_t), ARGS(args), inverse ? n_in : n_out);
    }
    be->release(be, wmem);
    free(u.g), free(u.w);
    return st;
}

sb_status sb_gpu_interpolate_forward(const sb_backend *be, const sb_interp_geom *g,
                                     const float *x, float *y) {
    return interp_run(be, "sb_interpolate_forward", g, false, x, y);
}

sb_status sb_gpu_interpolate_backward(const sb_backend *be, const sb_interp_geom *g,
                                      const float *dy, float *dx) {
    return interp_run(be, "sb_interpolate_backward", g, true, dy, dx);
}

/* ---- grid sampling ---- */

enum { GRID_GEOM = 9 }; /* resample.cl's sb_grid_dims_of */

static void grid_geom(const sb_grid_geom *g, int64_t v[GRID_GEOM]) {
    int64_t t[GRID_GEOM] = {g->n, g->c,    g->h, g->w, g->oh, g->ow, (int64_t)g->mode,
                            (int64_t)g->padding, g->align_corners};
    memcpy(v, t, sizeof t);
}

typedef struct grid_operands {
    sb_gpu_ptr x, grid, y; /* y: y or dy */
} grid_operands;

static sb_status grid_operands_of(const sb_backend *be, const char *fn, const sb_grid_geom *g,
                                  const float *x, const float *grid, const char *yname,
                                  const float *y, grid_operands *o) {
    SB_TRY(operand(be, fn, "x", x, g->n * g->c * g->h * g->w, &o->x));
    SB_TRY(operand(be, fn, "grid", grid, g->n * g->oh * g->ow * 2, &o->grid));
    return operand(be, fn, yname, y, g->n * g->c * g->oh * g->ow, &o->y);
}

sb_status sb_gpu_grid_sample_forward(const sb_backend *be, const sb_grid_geom *g, const float *x,
                                     const float *grid, float *y) {
    const char *fn = "sb_grid_sample_forward";
    grid_operands o;
    SB_TRY(grid_operands_of(be, fn, g, x, grid, "y", y, &o));
    int64_t n = g->n * g->c * g->oh * g->ow;
    if (n == 0) return SB_OK;
    int64_t v[GRID_GEOM];
    grid_geom(g, v);
    sb_gpu_arg args[] = {GEOM_ARG, OPERAND(o.x), OPERAND(o.grid), OPERAND(o.y)};
    return sb_gpu_launch(be, fn, K(GRID_FORWARD), v, sizeof v, ARGS(args), n);
}

/* dx of every batch entry from its readers: the reference's tables
 * (sb_grid_readers_build's) built on the device, nothing read back: the
 * terms (grid point, corner) with the input position each reads as their
 * key (resample.cl), sorted by (position, term) with sort.cl's merge sort
 * (a column per batch entry), turned into first / out / weight tables,
 * then sb_grid_dx's gather; each step one launch for the whole batch. */
static sb_status grid_dx(const sb_backend *be, const char *fn, const sb_grid_geom *g,
                         const grid_operands *o, float *dx) {
    sb_gpu_ptr pdx;
    int64_t plane_in = g->h * g->w, corners = g->mode == SB_GRID_NEAREST ? 1 : 4;
    int64_t terms = g->oh * g->ow * corners, all = g->n * terms;
    SB_TRY(operand(be, fn, "dx", dx, g->n * g->c * plane_in, &pdx));
    if (g->n * g->c * plane_in == 0) return SB_OK;
    if (plane_in >= (int64_t)UINT32_MAX) /* resample.cl's keys are 32-bit, UINT32_MAX none */
        return sb_fail(SB_ERR_UNSUPPORTED, "%s: an input plane of %lld elements is beyond the "
                       "device's 32-bit reader keys", fn, (long long)plane_in);
    int64_t v[GRID_GEOM];
    grid_geom(g, v);
    /* keys (two buffers), positions (two), weights, the tables, sorted weights */
    size_t kb, pb, wb, rb;
    if (!sb_checked_bytes(all + 1, 2 * sizeof(uint32_t), &kb) ||
        !sb_checked_bytes(all + 1, 2 * sizeof(int64_t), &pb) ||
        !sb_checked_bytes(all + 1, sizeof(float), &wb) ||
        !sb_checked_bytes(g->n * (plane_in + 1 + terms), sizeof(int64_t), &rb))
        return sb_fail(SB_ERR_NOMEM, "%s: the reader tables exceed the address space", fn);
    void *mem[5] = {NULL, NULL, NULL, NULL, NULL};
    size_t bytes[5] = {kb, pb, wb, rb, wb};
    sb_status st = SB_OK;
    for (int i = 0; i < 5 && st == SB_OK; i++) st = be->alloc(be, bytes[i], &mem[i]);
    uint32_t *keys = mem[0];
    int64_t *pos = mem[1];
    sb_gpu_ptr pk[2], pp[2], pw, pr, ps;
    for (int i = 0; i < 2 && st == SB_OK; i++) {
        st = sb_gpu_dense(be, fn, "the reader keys", keys + i * all, all, sizeof(uint32_t), &pk[i]);
        if (st == SB_OK)
            st = sb_gpu_dense(be, fn, "the reader terms", pos + i * all, all, sizeof(int64_t), &pp[i]);
    }
    if (st == SB_OK) st = operand(be, fn, "the term weights", mem[2], all, &pw);
    if (st == SB_OK)
        st = sb_gpu_dense(be, fn, "the reader tables", mem[3], g->n * (plane_in + 1 + terms),
                          sizeof(int64_t), &pr);
    if (st == SB_OK) st = sb_gpu_dense(be, fn, "the reader weights", mem[4], all + 1, sizeof(float), &ps);
    int64_t tt = terms;
    int cur = 0;
    if (st == SB_OK) {
        sb_gpu_arg args[] = {GEOM_ARG, ARG(tt), OPERAND(o->grid), OPERAND(pk[0]), OPERAND(pp[0]),
                             OPERAND(pw)};
        st = sb_gpu_launch(be, fn, K(GRID_READER_TERMS), v, sizeof v, ARGS(args), all);
    }
    if (st == SB_OK) st = sb_gpu_merge_sort(be, fn, g->n, terms, pk, pp, &cur);
    if (st == SB_OK) {
        sb_gpu_arg args[] = {GEOM_ARG,    ARG(tt),     OPERAND(pk[cur]), OPERAND(pp[cur]),
                             OPERAND(pw), ARG(pr.buf), ARG(ps.buf)};
        st = sb_gpu_launch(be, fn, K(GRID_READER_TABLES), v, sizeof v, ARGS(args),
                           g->n * (plane_in + 1 + terms));
    }
    if (st == SB_OK) {
        sb_gpu_arg args[] = {GEOM_ARG,    ARG(tt),       ARG(pr.buf),
                             ARG(ps.buf), OPERAND(o->y), OPERAND(pdx)};
        st = sb_gpu_launch(be, fn, K(GRID_DX), v, sizeof v, ARGS(args), g->n * g->c * plane_in);
    }
    for (int i = 0; i < 5; i++) be->release(be, mem[i]);
    return st;
}

sb_status sb_gpu_grid_sample_backward(const sb_backend *be, const sb_grid_geom *g,
                                      const float *x, const float *grid, const float *dy,
                                      float *dx, float *dgrid) {
    const char *fn = "sb_grid_sample_backward";
    grid_operands o;
    SB_TRY(grid_operands_of(be, fn, g, x, grid, "dy", dy, &o));
    sb_status st = SB_OK;
    int64_t points = g->n * g->oh * g->ow;
    if (dgrid && points > 0) {
        sb_gpu_ptr pdg;
        st = operand(be, fn, "dgrid", dgrid, points * 2, &pdg);
        if (st == SB_OK) {
            int64_t v[GRID_GEOM];
            grid_geom(g, v);
            sb_gpu_arg args[] = {GEOM_ARG,     OPERAND(o.x), OPERAND(o.grid),
                                 OPERAND(o.y), OPERAND(pdg)};
            st = sb_gpu_launch(be, fn, K(GRID_DGRID), v, sizeof v, ARGS(args), points);
        }
    }
    if (dx && st == SB_OK) st = grid_dx(be, fn, g, &o, dx);
    return st;
}
