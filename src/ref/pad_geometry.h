/* src/ref/pad_geometry.h - the index map of 2-D padding along one axis
 * (contract section 8, "Padding"): which input an output position copies,
 * and which output positions copy an input. One text for every
 * implementation: the reference and CPU kernels include it as C, and the
 * OpenCL program of the conv family embeds it before pad.cl (its #include
 * lines are dropped there, so it uses only what OpenCL C has). Not
 * installed. */
#ifndef SAMEBITS_PAD_GEOMETRY_H
#define SAMEBITS_PAD_GEOMETRY_H

#ifdef __OPENCL_VERSION__
#ifndef SB_OPENCL_INT64_T
#define SB_OPENCL_INT64_T
typedef long int64_t;
#endif
/* sb_pad_mode's values (include/samebits/conv.h). */
#define SB_PAD_CONSTANT 0
#define SB_PAD_REFLECT 1
#define SB_PAD_REPLICATE 2
#define SB_PAD_CIRCULAR 3
#else
#include <stdint.h>
#include "samebits/conv.h"
#endif

/* The input position copied by output position o of one axis of `size`
 * inputs and `before` leading pads, or -1 (constant mode, padding). */
static inline int64_t sb_pad_source(int mode, int64_t o, int64_t size, int64_t before) {
    int64_t i = o - before;
    if (i >= 0 && i < size) return i;
    switch (mode) {
    case SB_PAD_REFLECT: return i < 0 ? -i : 2 * (size - 1) - i;
    case SB_PAD_REPLICATE: return i < 0 ? 0 : size - 1;
    case SB_PAD_CIRCULAR: return i < 0 ? i + size : i - size; /* pad <= size */
    default: return -1;
    }
}

/* The output positions of one axis (of `out`) that copy input position i,
 * as up to three ascending, disjoint ranges [lo[k], hi[k]); returns their
 * count. Per axis the copies of input i are: the direct one at i + before,
 * plus
 *   reflect:   before - i (1 <= i <= before) and before + 2*(size-1) - i
 *              (when that lies in the trailing pads);
 *   replicate: the leading pads for i = 0, the trailing ones for i = size-1
 *              (joined with the direct copy into one range);
 *   circular:  i + before - size and i + before + size when in range. */
static inline int sb_pad_copies(int mode, int64_t i, int64_t size, int64_t before, int64_t out,
                                int64_t lo[3], int64_t hi[3]) {
    int n = 0;
    int64_t direct = i + before;
    if (mode == SB_PAD_REPLICATE) {
        lo[0] = i == 0 ? 0 : direct;
        hi[0] = i == size - 1 ? out : direct + 1;
        return 1;
    }
    int64_t cand[3] = {-1, direct, -1};
    if (mode == SB_PAD_REFLECT) {
        if (i >= 1 && i <= before) cand[0] = before - i;
        int64_t far = before + 2 * (size - 1) - i;
        if (far >= before + size && far < out) cand[2] = far;
    } else if (mode == SB_PAD_CIRCULAR) {
        if (direct - size >= 0) cand[0] = direct - size;
        if (direct + size < out) cand[2] = direct + size;
    }
    for (int k = 0; k < 3; k++)
        if (cand[k] >= 0) {
            lo[n] = cand[k];
            hi[n] = cand[k] + 1;
            n++;
        }
    return n;
}

#endif
