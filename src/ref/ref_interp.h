/* src/ref/ref_interp.h - reference interpolation (contract section 8,
 * "Interpolation"). Not installed. */
#ifndef SAMEBITS_REF_INTERP_H
#define SAMEBITS_REF_INTERP_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/conv.h"
#include "samebits/status.h"
#include "ref/interp_geometry.h"

/* x is (planes, in[0], in[1], in[2]) and y (planes, out[0], out[1], out[2]):
 * the spatial axes of the call right-aligned, leading axes of size 1 (a
 * size-1 axis with one tap of weight 1 multiplies by 1.0f, which changes no
 * bit), sizes >= 1, already checked. `nd` is the caller's spatial rank. */
typedef struct sb_interp_geom {
    int64_t planes;
    int64_t in[3], out[3];
    int nd;
    sb_interp_mode mode;
    bool align_corners;
    double scales[3];
} sb_interp_geom;

/* One axis's taps (out x taps, row-major) and, for the backward, each input
 * position's readers grouped by output: the groups of input i are
 * gfirst[i] .. gfirst[i+1] - 1 in ascending output order; group g is output
 * gout[g], reading i through the taps (in tap order) whose weights are
 * gw[gbeg[g] .. gbeg[g+1]). */
typedef struct sb_interp_axis {
    int64_t in, out;
    int taps;
    int64_t *idx;
    float *w;
    int64_t *gfirst, *gout, *gbeg; /* NULL unless built for the backward */
    float *gw;
} sb_interp_axis;

typedef struct sb_interp_tables {
    sb_interp_axis axis[3];
} sb_interp_tables;

/* Builds the three axes (readers too when `inverse`); SB_ERR_NOMEM on
 * allocation failure (nothing to free then). */
sb_status sb_interp_tables_build(const sb_interp_geom *g, bool inverse, sb_interp_tables *t);
void sb_interp_tables_free(sb_interp_tables *t);

/* The forward of the units [u0, u1), unit u = (plane p, outermost output
 * position o0) with u = p * out[0] + o0; the backward of units u = (p, i0),
 * u = p * in[0] + i0. Units are independent: any split gives the same bits. */
void sb_ref_interp_forward_units(const sb_interp_geom *g, const sb_interp_tables *t, int64_t u0,
                                 int64_t u1, const float *x, float *y);
void sb_ref_interp_backward_units(const sb_interp_geom *g, const sb_interp_tables *t, int64_t u0,
                                  int64_t u1, const float *dy, float *dx);

/* The whole op on the calling thread. */
sb_status sb_ref_interpolate_forward(const sb_interp_geom *g, const float *x, float *y);
sb_status sb_ref_interpolate_backward(const sb_interp_geom *g, const float *dy, float *dx);

#endif
