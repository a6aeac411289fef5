/* src/cpu/interp_internal.h - the fast CPU interpolation kernels. Not
 * installed.
 *
 * Same signature and bits as their sb_ref_* counterparts in
 * src/ref/ref_interp.h (the contract), arguments validated by
 * src/ops/interpolate.c. */
#ifndef SAMEBITS_CPU_INTERP_INTERNAL_H
#define SAMEBITS_CPU_INTERP_INTERNAL_H

#include "ref/ref_interp.h"

sb_status sb_cpu_interpolate_forward(const sb_interp_geom *g, const float *x, float *y);
sb_status sb_cpu_interpolate_backward(const sb_interp_geom *g, const float *dy, float *dx);

#endif
