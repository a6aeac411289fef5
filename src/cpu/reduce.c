/* Fast reductions over axes (contract "Reductions", reference
 * src/ref/reduce.c).
 *
 * Outputs are independent, so they are split over threads. Each output's
 * reduced elements are still enumerated in the contract's order (row-major
 * over the reduced dims) and fed to the canonical sum / the max-min scan in
 * that order, so the bits are the reference's.
 *
 * The geometry is first simplified without changing any enumeration:
 * size-1 dims are dropped and neighbouring dims that are one contiguous run
 * in every operand are merged. Then the enumeration is a sequence of runs
 * (the innermost reduced dim, stride rs). When rs == 1 the runs are read in
 * place, one output at a time. Otherwise the outputs are taken in tiles of
 * up to TILE neighbours along the innermost kept dim, and the terms of a
 * tile are gathered element by element of the enumeration into one buffer
 * per output: for a column sum, neighbouring columns share cache lines. */
#include <string.h>
#include "cpu/sum_internal.h"
#include "cpu/ops_internal.h"

enum {
    TILE = 16,       /* outputs per tile on the gathered path */
    BUF = 4096,      /* floats of term buffer per tile */
    MIN_WORK = 16384 /* elements per thread range, at least */
};

typedef struct plan {
    sb_ref_reduce_geom g;
    int64_t nout, n;     /* outputs, reduced elements per output */
    int64_t rl, rs;      /* innermost reduced run: length and x stride */
    int64_t nruns;       /* n / rl */
    int64_t L, W, tpr;   /* innermost kept length, tile width, tiles per kept row */
    int64_t ntiles;
    /* operands */
    sb_ref_reduce_kind kind;
    bool is_max;
    int64_t correction;
    const float *x;
    const float *dy;
    float *out, *dx;
    int64_t *idx;
    const int64_t *cidx;
} plan;

static int64_t prod(int nd, const int64_t *shape) {
    int64_t n = 1;
    for (int k = 0; k < nd; k++) n *= shape[k];
    return n;
}

/* Drops size-1 dims and merges dim k into k+1 when every stride array sees
 * them as one run. nstr arrays of strides share `shape`. */
static int simplify(int nd, int64_t *shape, int nstr, int64_t *const *stride) {
    int m = 0;
    for (int k = 0; k < nd; k++) {
        if (shape[k] == 1) continue;
        shape[m] = shape[k];
        for (int s = 0; s < nstr; s++) stride[s][m] = stride[s][k];
        m++;
    }
    int out = 0;
    for (int k = 0; k < m; k++) {
        if (out > 0) {
            bool merge = true;
            for (int s = 0; s < nstr; s++)
                if (stride[s][out - 1] != stride[s][k] * shape[k]) merge = false;
            if (merge) {
                shape[out - 1] *= shape[k];
                for (int s = 0; s < nstr; s++) stride[s][out - 1] = stride[s][k];
                continue;
            }
        }
        shape[out] = shape[k];
        for (int s = 0; s < nstr; s++) stride[s][out] = stride[s][k];
        out++;
    }
    return out;
}

static void make_plan(const sb_ref_reduce_geom *g_in, plan *p) {
    p->g = *g_in;
    sb_ref_reduce_geom *g = &p->g;
    p->nout = prod(g->nkeep, g->keep_shape);
    p->n = prod(g->nred, g->red_shape);
    if (p->nout > 0 && p->n > 0) {
        int64_t *ks[3] = {g->keep_xstride, g->keep_ostride, g->keep_istride};
        g->nkeep = simplify(g->nkeep, g->keep_shape, 3, ks);
        int64_t *rs[1] = {g->red_xstride};
        g->nred = simplify(g->nred, g->red_shape, 1, rs);
    }
    p->rl = g->nred ? g->red_shape[g->nred - 1] : 1;
    p->rs = g->nred ? g->red_xstride[g->nred - 1] : 1;
    p->nruns = p->rl > 0 ? p->n / p->rl : 0;
    p->L = g->nkeep ? g->keep_shape[g->nkeep - 1] : 1;
    /* Contiguous runs of some length are best read in place. */
    p->W = (p->rs == 1 && p->rl >= 16) || p->L == 0 ? 1 : (p->L < TILE ? p->L : TILE);
    p->tpr = p->L > 0 ? (p->L + p->W - 1) / p->W : 0;
    p->ntiles = p->L > 0 ? p->nout / p->L * p->tpr : 0;
}

/* Offsets (x, out, idx) of tile t's first output, its width *w. */
static void tile_origin(const plan *p, int64_t t, int64_t off[3], int64_t *w) {
    const sb_ref_reduce_geom *g = &p->g;
    int64_t row = t / p->tpr, c0 = t % p->tpr * p->W;
    *w = p->L - c0 < p->W ? p->L - c0 : p->W;
    off[0] = off[1] = off[2] = 0;
    int last = g->nkeep - 1;
    if (last >= 0) {
        off[0] = c0 * g->keep_xstride[last];
        off[1] = c0 * g->keep_ostride[last];
        off[2] = c0 * g->keep_istride[last];
    }
    for (int k = last - 1; k >= 0; k--) {
        int64_t i = row % g->keep_shape[k];
        row /= g->keep_shape[k];
        off[0] += i * g->keep_xstride[k];
        off[1] += i * g->keep_ostride[k];
        off[2] += i * g->keep_istride[k];
    }
}

/* The run after run-start offset *roff: an odometer over the reduced dims
 * except the innermost. */
static void next_run(const plan *p, int64_t *ridx, int64_t *roff) {
    const sb_ref_reduce_geom *g = &p->g;
    for (int k = g->nred - 2; k >= 0; k--) {
        if (++ridx[k] < g->red_shape[k]) {
            *roff += g->red_xstride[k];
            return;
        }
        ridx[k] = 0;
        *roff -= (g->red_shape[k] - 1) * g->red_xstride[k];
    }
}

/* ---- sum / mean / var / std ----------------------------------------------------------- */

/* sums[c] = the canonical sum over the enumeration of the w outputs at x
 * offsets xo + c * xs, of v (center NULL) or (v - center[c])^2. */
static void tile_sums(const plan *p, const float *xo, int64_t xs, int64_t w, const float *center,
                      float *sums) {
    int64_t n = p->n, rl = p->rl, rs = p->rs, cap = BUF / w;
    if (n == 0) {
        for (int64_t c = 0; c < w; c++) sums[c] = 0.0f;
        return;
    }
    if (n == 1) { /* the canonical sum of one term v is -0 + v: no buffer */
        for (int64_t c = 0; c < w; c++) {
            float v = xo[c * xs];
            if (center) {
                float d = v - center[c];
                v = d * d;
            }
            sums[c] = -0.0f + v;
        }
        return;
    }
    if (!center && w == 1 && rs == 1 && p->nruns == 1) {
        sums[0] = sb_cpu_sum_canonical(xo, n, 1); /* one contiguous run */
        return;
    }
    float buf[BUF];
    sb_sum_acc acc[TILE];
    bool streaming = n > cap;
    if (streaming)
        for (int64_t c = 0; c < w; c++) sb_sum_init(&acc[c]);
    int64_t ridx[SB_MAX_DIMS] = {0}, roff = 0, pos = 0;
    for (int64_t run = 0; run < p->nruns; run++) {
        if (!center && w == 1 && rs == 1 && streaming) {
            sb_cpu_sum_add_n(&acc[0], xo + roff, rl); /* in place */
        } else {
            for (int64_t j = 0; j < rl;) {
                int64_t m = rl - j < cap - pos ? rl - j : cap - pos;
                for (int64_t c = 0; c < w; c++) {
                    const float *src = xo + c * xs + roff + j * rs;
                    float *dst = buf + c * cap + pos;
                    if (center) {
                        float mu = center[c];
                        for (int64_t i = 0; i < m; i++) {
                            float d = src[i * rs] - mu;
                            dst[i] = d * d;
                        }
                    } else {
                        for (int64_t i = 0; i < m; i++) dst[i] = src[i * rs];
                    }
                }
                pos += m;
                j += m;
                if (pos == cap && streaming) {
                    for (int64_t c = 0; c < w; c++) sb_cpu_sum_add_n(&acc[c], buf + c * cap, pos);
                    pos = 0;
                }
            }
        }
        next_run(p, ridx, &roff);
    }
    for (int64_t c = 0; c < w; c++) {
        if (streaming) {
            sb_cpu_sum_add_n(&acc[c], buf + c * cap, pos);
            sums[c] = sb_sum_result(&acc[c]);
        } else {
            sums[c] = sb_cpu_sum_canonical(buf + c * cap, pos, 1);
        }
    }
}

/* The quiet NaN with no payload: var/std when n - correction <= 0. */
static float default_nan(void) {
    union { uint32_t u; float f; } v = {0x7fc00000u};
    return v.f;
}

static void moments_range(void *vp, int64_t t0, int64_t t1) {
    const plan *p = vp;
    int64_t n = p->n;
    float nf = (float)n;
    int last = p->g.nkeep - 1;
    int64_t xs = last >= 0 ? p->g.keep_xstride[last] : 0;
    int64_t os = last >= 0 ? p->g.keep_ostride[last] : 0;
    for (int64_t t = t0; t < t1; t++) {
        int64_t off[3], w;
        tile_origin(p, t, off, &w);
        const float *xo = p->x ? p->x + off[0] : NULL; /* x is NULL only when n == 0 */
        float s[TILE], r[TILE], mean[TILE] = {0}; /* zeroed for -O3's maybe-uninitialized */
        tile_sums(p, xo, xs, w, NULL, s);
        if (p->kind == SB_REF_REDUCE_SUM) {
            for (int64_t c = 0; c < w; c++) r[c] = s[c];
        } else if (p->kind == SB_REF_REDUCE_MEAN) {
            for (int64_t c = 0; c < w; c++) r[c] = s[c] / nf;
        } else {
            for (int64_t c = 0; c < w; c++) mean[c] = s[c] / nf;
            if (n - p->correction <= 0) {
                for (int64_t c = 0; c < w; c++) r[c] = default_nan();
            } else {
                float ss[TILE];
                tile_sums(p, xo, xs, w, mean, ss);
                for (int64_t c = 0; c < w; c++) {
                    r[c] = ss[c] / (float)(n - p->correction);
                    if (p->kind == SB_REF_REDUCE_STD) r[c] = sqrtf(r[c]);
                }
            }
        }
        for (int64_t c = 0; c < w; c++) p->out[off[1] + c * os] = r[c];
    }
}

/* Runs fn over the plan's tiles: directly when there is one (so that a
 * single big sum can still thread its blocks inside sb_cpu_sum_canonical). */
static void run_tiles(plan *p, sb_range_fn fn, int64_t work_per_tile) {
    if (p->ntiles == 1) {
        fn(p, 0, 1);
        return;
    }
    int64_t min = work_per_tile > 0 ? MIN_WORK / work_per_tile : MIN_WORK;
    sb_parallel_for(p->ntiles, sb_parallel_grain(p->ntiles, min > 0 ? min : 1), fn, p);
}

void sb_cpu_reduce(sb_ref_reduce_kind kind, const sb_ref_reduce_geom *g, const float *x,
                   int64_t correction, float *out) {
    plan p;
    make_plan(g, &p);
    p.kind = kind;
    p.correction = correction;
    p.x = x;
    p.out = out;
    int64_t passes = kind == SB_REF_REDUCE_SUM || kind == SB_REF_REDUCE_MEAN ? 1 : 2;
    run_tiles(&p, moments_range, passes * p.W * (p.n > 0 ? p.n : 1));
}

/* ---- max / min / argmax / argmin ------------------------------------------------------ */

static void extreme_range(void *vp, int64_t t0, int64_t t1) {
    const plan *p = vp;
    bool is_max = p->is_max;
    int last = p->g.nkeep - 1;
    int64_t xs = last >= 0 ? p->g.keep_xstride[last] : 0;
    int64_t os = last >= 0 ? p->g.keep_ostride[last] : 0;
    int64_t is = last >= 0 ? p->g.keep_istride[last] : 0;
    int64_t rl = p->rl, rs = p->rs;
    for (int64_t t = t0; t < t1; t++) {
        int64_t off[3], w;
        tile_origin(p, t, off, &w);
        const float *xo = p->x + off[0];
        float best[TILE];
        int64_t best_e[TILE];
        for (int64_t c = 0; c < w; c++) {
            best[c] = xo[c * xs];
            best_e[c] = 0;
        }
        int64_t ridx[SB_MAX_DIMS] = {0}, roff = 0;
        for (int64_t run = 0; run < p->nruns; run++) {
            for (int64_t c = 0; c < w; c++) {
                const float *src = xo + c * xs + roff;
                float b = best[c];
                int64_t be = best_e[c];
                for (int64_t j = run == 0 ? 1 : 0; j < rl; j++) {
                    float v = src[j * rs];
                    /* ordered, distinct values decide directly; NaNs and
                     * equal values (signed zeros) take the reference rule */
                    bool better;
                    if (v != b && v == v && b == b) better = is_max ? v > b : v < b;
                    else better = sb_ref_extreme_better(is_max, v, b);
                    if (better) {
                        b = v;
                        be = run * rl + j;
                    }
                }
                best[c] = b;
                best_e[c] = be;
            }
            next_run(p, ridx, &roff);
        }
        for (int64_t c = 0; c < w; c++) {
            if (p->out) p->out[off[1] + c * os] = best[c];
            if (p->idx) p->idx[off[2] + c * is] = best_e[c];
        }
    }
}

void sb_cpu_reduce_extreme(bool is_max, const sb_ref_reduce_geom *g, const float *x, float *out,
                           int64_t *idx) {
    plan p;
    make_plan(g, &p);
    p.is_max = is_max;
    p.x = x;
    p.out = out;
    p.idx = idx;
    run_tiles(&p, extreme_range, p.W * p.n);
}

/* ---- backward of max / min ------------------------------------------------------------ */

static void scatter_range(void *vp, int64_t t0, int64_t t1) {
    const plan *p = vp;
    int last = p->g.nkeep - 1;
    int64_t xs = last >= 0 ? p->g.keep_xstride[last] : 0;
    int64_t os = last >= 0 ? p->g.keep_ostride[last] : 0;
    int64_t is = last >= 0 ? p->g.keep_istride[last] : 0;
    int64_t rl = p->rl, rs = p->rs;
    for (int64_t t = t0; t < t1; t++) {
        int64_t off[3], w;
        tile_origin(p, t, off, &w);
        float *xo = p->dx + off[0];
        int64_t ridx[SB_MAX_DIMS] = {0}, roff = 0;
        for (int64_t run = 0; run < p->nruns; run++) {
            for (int64_t c = 0; c < w; c++) {
                float *dst = xo + c * xs + roff;
                for (int64_t j = 0; j < rl; j++) dst[j * rs] = 0.0f;
                int64_t chosen = p->cidx[off[2] + c * is] - run * rl;
                if (chosen >= 0 && chosen < rl) dst[chosen * rs] = p->dy[off[1] + c * os];
            }
            next_run(p, ridx, &roff);
        }
    }
}

void sb_cpu_reduce_scatter(const sb_ref_reduce_geom *g, const float *dy, const int64_t *idx,
                           float *dx) {
    plan p;
    make_plan(g, &p);
    p.dy = dy;
    p.cidx = idx;
    p.dx = dx;
    run_tiles(&p, scatter_range, p.W * p.n);
}
