/* src/ref/ref_pad.h - reference 2-D padding (contract section "Padding").
 * Not installed. */
#ifndef SAMEBITS_REF_PAD_H
#define SAMEBITS_REF_PAD_H

#include <stdint.h>
#include "samebits/conv.h"
#include "ref/pad_geometry.h"

/* x is (planes, h, w), y (planes, oh, ow) with oh = h + top + bottom and
 * ow = w + left + right; the pads already checked against the mode. */
typedef struct sb_pad2d_geom {
    int64_t planes, h, w, oh, ow;
    int64_t top, left;
    sb_pad_mode mode;
    float value;
} sb_pad2d_geom;

void sb_ref_pad2d_forward(const sb_pad2d_geom *g, const float *x, float *y);
void sb_ref_pad2d_backward(const sb_pad2d_geom *g, const float *dy, float *dx);

#endif
