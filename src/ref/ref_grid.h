/* src/ref/ref_grid.h - reference grid sampling (contract section 8, "Grid
 * sampling"). Not installed. */
#ifndef SAMEBITS_REF_GRID_H
#define SAMEBITS_REF_GRID_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/conv.h"
#include "samebits/status.h"
#include "ref/grid_geometry.h"

/* x is (n, c, h, w), grid (n, oh, ow, 2) holding (x, y) pairs in [-1, 1],
 * y (n, c, oh, ow); shapes already checked (h, w >= 1). */
typedef struct sb_grid_geom {
    int64_t n, c, h, w, oh, ow;
    sb_grid_mode mode;
    sb_grid_padding padding;
    bool align_corners;
} sb_grid_geom;

/* Forward of units [u0, u1), unit u = (batch b, output row r), u = b * oh + r. */
void sb_ref_grid_forward_units(const sb_grid_geom *g, int64_t u0, int64_t u1, const float *x,
                               const float *grid, float *y);
/* dgrid of the same units (needs x and dy). */
void sb_ref_grid_dgrid_units(const sb_grid_geom *g, int64_t u0, int64_t u1, const float *x,
                             const float *grid, const float *dy, float *dgrid);

/* The readers of batch b's input positions: for position q = row * w + col
 * the entries first[q] .. first[q+1] - 1 hold the grid points p (row-major)
 * and corners reading it, in ascending (p, corner) order, as out[e] = p and
 * wt[e] the corner's weight (1 for nearest). */
typedef struct sb_grid_readers {
    int64_t *first, *out;
    float *wt;
} sb_grid_readers;
sb_status sb_grid_readers_build(const sb_grid_geom *g, int64_t b, const float *grid,
                                sb_grid_readers *r);
void sb_grid_readers_free(sb_grid_readers *r);
/* dx of planes [p0, p1) of batch b (plane = channel), from its readers. */
void sb_ref_grid_dx_planes(const sb_grid_geom *g, int64_t b, const sb_grid_readers *r, int64_t c0,
                           int64_t c1, const float *dy, float *dx);

/* The whole op on the calling thread; dx and dgrid may each be NULL. */
void sb_ref_grid_sample_forward(const sb_grid_geom *g, const float *x, const float *grid,
                                float *y);
sb_status sb_ref_grid_sample_backward(const sb_grid_geom *g, const float *x, const float *grid,
                                      const float *dy, float *dx, float *dgrid);

#endif
