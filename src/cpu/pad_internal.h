/* src/cpu/pad_internal.h - the fast CPU 2-D padding kernels. Not installed.
 *
 * Same signature and bits as their sb_ref_* counterparts in
 * src/ref/ref_pad.h (the contract), arguments validated by src/ops/conv.c. */
#ifndef SAMEBITS_CPU_PAD_INTERNAL_H
#define SAMEBITS_CPU_PAD_INTERNAL_H

#include "ref/ref_pad.h"

void sb_cpu_pad2d_forward(const sb_pad2d_geom *g, const float *x, float *y);
void sb_cpu_pad2d_backward(const sb_pad2d_geom *g, const float *dy, float *dx);

#endif
