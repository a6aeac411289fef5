/* src/ref/ref_pad.h - reference 2-D padding (contract section "Padding").
 * Not installed. */
#ifndef SAMEBITS_REF_PAD_H
#define SAMEBITS_REF_PAD_H

#include <stdint.h>
#include "samebits/conv.h"

/* x is (planes, h, w), y (planes, oh, ow) with oh = h + top + bottom and
 * ow = w + left + right; the pads already checked against the mode. */
typedef struct sb_pad2d_geom {
    int64_t planes, h, w, oh, ow;
    int64_t top, left;
    sb_pad_mode mode;
    float value;
} sb_pad2d_geom;

/* The input position copied by output position o of one axis of `size`
 * inputs and `before` leading pads, or -1 (constant mode, padding). */
static inline int64_t sb_pad_source(sb_pad_mode mode, int64_t o, int64_t size, int64_t before) {
    int64_t i = o - before;
    if (i >= 0 && i < size) return i;
    switch (mode) {
    case SB_PAD_REFLECT: return i < 0 ? -i : 2 * (size - 1) - i;
    case SB_PAD_REPLICATE: return i < 0 ? 0 : size - 1;
    case SB_PAD_CIRCULAR: return i < 0 ? i + size : i - size; /* pad <= size */
    default: return -1;
    }
}

/* The output positions of one axis that copy input position i, as up to
 * three ascending, disjoint ranges [lo[k], hi[k]); returns their count. */
int sb_pad_copies(sb_pad_mode mode, int64_t i, int64_t size, int64_t before, int64_t out,
                  int64_t lo[3], int64_t hi[3]);

void sb_ref_pad2d_forward(const sb_pad2d_geom *g, const float *x, float *y);
void sb_ref_pad2d_backward(const sb_pad2d_geom *g, const float *dy, float *dx);

#endif
