/* src/cpu/grid_internal.h - the fast CPU grid sampling kernels. Not
 * installed.
 *
 * Same signature and bits as their sb_ref_* counterparts in
 * src/ref/ref_grid.h (the contract), arguments validated by
 * src/ops/grid_sample.c. */
#ifndef SAMEBITS_CPU_GRID_INTERNAL_H
#define SAMEBITS_CPU_GRID_INTERNAL_H

#include "ref/ref_grid.h"

void sb_cpu_grid_sample_forward(const sb_grid_geom *g, const float *x, const float *grid,
                                float *y);
sb_status sb_cpu_grid_sample_backward(const sb_grid_geom *g, const float *x, const float *grid,
                                      const float *dy, float *dx, float *dgrid);

#endif
