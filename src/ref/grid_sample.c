/* Reference grid sampling, forward and backward (contract section 8, "Grid
 * sampling").
 *
 * Forward: each output reads its grid point's source position (the
 * unnormalized, padded grid coordinate): nearest copies the element there
 * (+0 outside), bilinear sums v * weight over the corners nw, ne, sw, se
 * from left to right, a corner outside the input reading +0.
 *
 * Backward: dgrid per grid point is the canonical sum over channels of
 * ((v_ne - v_nw) * (1 - fy) + (v_se - v_sw) * fy) * dy for x and
 * ((v_sw - v_nw) * (1 - fx) + (v_se - v_ne) * fx) * dy for y, times the
 * coordinate's factor (0 for nearest). dx is a gather: each input element
 * sums, with the canonical sum, weight * dy over the (grid point, corner)
 * pairs that read it, grid points in row-major order, corners in the order
 * above; PyTorch scatter-adds instead, in an order threads decide. */
#include <stdlib.h>
#include "core/canonical_sum.h"
#include "core/internal.h"
#include "ref/ref_grid.h"

/* The source position of grid point p of batch b, and the gradient factors. */
static void source(const sb_grid_geom *g, const float *grid, int64_t b, int64_t p, float *ix,
                   float *iy, float *mx, float *my) {
    const float *gp = grid + (b * g->oh * g->ow + p) * 2;
    *ix = sb_grid_source(gp[0], g->w, g->padding, g->align_corners, mx);
    *iy = sb_grid_source(gp[1], g->h, g->padding, g->align_corners, my);
}

void sb_ref_grid_forward_units(const sb_grid_geom *g, int64_t u0, int64_t u1, const float *x,
                               const float *grid, float *y) {
    const int64_t plane_in = g->h * g->w, plane_out = g->oh * g->ow;
    for (int64_t u = u0; u < u1; u++) {
        int64_t b = u / g->oh;
        for (int64_t p = (u % g->oh) * g->ow, end = p + g->ow; p < end; p++) {
            float ix, iy, mx, my;
            source(g, grid, b, p, &ix, &iy, &mx, &my);
            const float *xb = x + b * g->c * plane_in;
            float *yb = y + b * g->c * plane_out + p;
            if (g->mode == SB_GRID_NEAREST) {
                int64_t q = sb_grid_nearest(ix, iy, g->h, g->w);
                for (int64_t c = 0; c < g->c; c++) yb[c * plane_out] = q < 0 ? 0.0f : xb[c * plane_in + q];
                continue;
            }
            sb_grid_corners k;
            sb_grid_bilinear(ix, iy, g->h, g->w, &k);
            for (int64_t c = 0; c < g->c; c++) {
                const float *xc = xb + c * plane_in;
                float acc = 0.0f;
                for (int j = 0; j < 4; j++) {
                    float v = k.pos[j] < 0 ? 0.0f : xc[k.pos[j]];
                    float t = v * k.w[j];
                    acc = j == 0 ? t : acc + t;
                }
                yb[c * plane_out] = acc;
            }
        }
    }
}

void sb_ref_grid_dgrid_units(const sb_grid_geom *g, int64_t u0, int64_t u1, const float *x,
                             const float *grid, const float *dy, float *dgrid) {
    const int64_t plane_in = g->h * g->w, plane_out = g->oh * g->ow;
    for (int64_t u = u0; u < u1; u++) {
        int64_t b = u / g->oh;
        for (int64_t p = (u % g->oh) * g->ow, end = p + g->ow; p < end; p++) {
            float *dg = dgrid + (b * plane_out + p) * 2;
            if (g->mode == SB_GRID_NEAREST) {
                dg[0] = dg[1] = 0.0f;
                continue;
            }
            float ix, iy, mx, my;
            source(g, grid, b, p, &ix, &iy, &mx, &my);
            sb_grid_corners k;
            sb_grid_bilinear(ix, iy, g->h, g->w, &k);
            const float ex = 1.0f - k.fx, sy = 1.0f - k.fy;
            sb_sum_acc ax, ay;
            sb_sum_init(&ax);
            sb_sum_init(&ay);
            for (int64_t c = 0; c < g->c; c++) {
                const float *xc = x + (b * g->c + c) * plane_in;
                float v[4];
                for (int j = 0; j < 4; j++) v[j] = k.pos[j] < 0 ? 0.0f : xc[k.pos[j]];
                float d = dy[(b * g->c + c) * plane_out + p];
                sb_sum_add(&ax, ((v[1] - v[0]) * sy + (v[3] - v[2]) * k.fy) * d);
                sb_sum_add(&ay, ((v[2] - v[0]) * ex + (v[3] - v[1]) * k.fx) * d);
            }
            dg[0] = mx * sb_sum_result(&ax);
            dg[1] = my * sb_sum_result(&ay);
        }
    }
}

void sb_grid_readers_free(sb_grid_readers *r) {
    free(r->first);
    free(r->out);
    free(r->wt);
    *r = (sb_grid_readers){0};
}

sb_status sb_grid_readers_build(const sb_grid_geom *g, int64_t b, const float *grid,
                                sb_grid_readers *r) {
    const int64_t plane_in = g->h * g->w, points = g->oh * g->ow;
    const int corners = g->mode == SB_GRID_NEAREST ? 1 : 4;
    size_t n = (size_t)points * (size_t)corners;
    int64_t *pos = malloc((n + 1) * sizeof *pos);
    float *wt = malloc((n + 1) * sizeof *wt);
    *r = (sb_grid_readers){calloc((size_t)plane_in + 1, sizeof(int64_t)),
                           malloc((n + 1) * sizeof(int64_t)), malloc((n + 1) * sizeof(float))};
    if (!pos || !wt || !r->first || !r->out || !r->wt) {
        free(pos), free(wt), sb_grid_readers_free(r);
        return sb_fail(SB_ERR_NOMEM, "grid sampling: no memory for the reader tables");
    }
    for (int64_t p = 0; p < points; p++) { /* every (p, corner): its input and weight */
        float ix, iy, mx, my;
        source(g, grid, b, p, &ix, &iy, &mx, &my);
        if (corners == 1) {
            pos[p] = sb_grid_nearest(ix, iy, g->h, g->w);
            wt[p] = 1.0f;
        } else {
            sb_grid_corners k;
            sb_grid_bilinear(ix, iy, g->h, g->w, &k);
            for (int j = 0; j < 4; j++) pos[p * 4 + j] = k.pos[j], wt[p * 4 + j] = k.w[j];
        }
    }
    /* counting sort by input position, keeping (p, corner) order */
    for (size_t e = 0; e < n; e++)
        if (pos[e] >= 0) r->first[pos[e] + 1]++;
    for (int64_t q = 0; q < plane_in; q++) r->first[q + 1] += r->first[q];
    int64_t *cursor = malloc(((size_t)plane_in + 1) * sizeof *cursor);
    if (!cursor) {
        free(pos), free(wt), sb_grid_readers_free(r);
        return sb_fail(SB_ERR_NOMEM, "grid sampling: no memory for the reader tables");
    }
    for (int64_t q = 0; q < plane_in; q++) cursor[q] = r->first[q];
    for (size_t e = 0; e < n; e++)
        if (pos[e] >= 0) {
            int64_t at = cursor[pos[e]]++;
            r->out[at] = (int64_t)e / corners;
            r->wt[at] = wt[e];
        }
    free(cursor), free(pos), free(wt);
    return SB_OK;
}

void sb_ref_grid_dx_planes(const sb_grid_geom *g, int64_t b, const sb_grid_readers *r, int64_t c0,
                           int64_t c1, const float *dy, float *dx) {
    const int64_t plane_in = g->h * g->w, plane_out = g->oh * g->ow;
    for (int64_t c = c0; c < c1; c++) {
        const float *dyc = dy + (b * g->c + c) * plane_out;
        float *dxc = dx + (b * g->c + c) * plane_in;
        for (int64_t q = 0; q < plane_in; q++) {
            int64_t e0 = r->first[q], e1 = r->first[q + 1];
            if (e1 - e0 <= SB_SUM_BLOCK) { /* one block: the rule's lanes directly */
                float lane[SB_SUM_LANES];
                for (int j = 0; j < SB_SUM_LANES; j++) lane[j] = -0.0f;
                for (int64_t e = e0; e < e1; e++) lane[(e - e0) % SB_SUM_LANES] += dyc[r->out[e]] * r->wt[e];
                dxc[q] = e1 == e0 ? 0.0f : sb_sum_tree32(lane);
            } else {
                sb_sum_acc acc;
                sb_sum_init(&acc);
                for (int64_t e = e0; e < e1; e++) sb_sum_add(&acc, dyc[r->out[e]] * r->wt[e]);
                dxc[q] = sb_sum_result(&acc);
            }
        }
    }
}

void sb_ref_grid_sample_forward(const sb_grid_geom *g, const float *x, const float *grid,
                                float *y) {
    sb_ref_grid_forward_units(g, 0, g->n * g->oh, x, grid, y);
}

sb_status sb_ref_grid_sample_backward(const sb_grid_geom *g, const float *x, const float *grid,
                                      const float *dy, float *dx, float *dgrid) {
    if (dgrid) sb_ref_grid_dgrid_units(g, 0, g->n * g->oh, x, grid, dy, dgrid);
    if (!dx) return SB_OK;
    for (int64_t b = 0; b < g->n; b++) {
        sb_grid_readers r;
        SB_TRY(sb_grid_readers_build(g, b, grid, &r));
        sb_ref_grid_dx_planes(g, b, &r, 0, g->c, dy, dx);
        sb_grid_readers_free(&r);
    }
    return SB_OK;
}
