/* src/ref/grid_geometry.h - where a grid_sample grid point reads (contract
 * section 8, "Grid sampling"): the source coordinate of one grid value
 * along one axis, the factor its gradient takes, and the bilinear corners,
 * as PyTorch's CPU grid sampler computes them, every operation binary32,
 * nothing fused. One text for the reference, the CPU kernels and the
 * OpenCL program of resample.cl, which embeds it before that file (its
 * #include lines are dropped there, so it uses only what OpenCL C has).
 * Not installed. */
#ifndef SAMEBITS_GRID_GEOMETRY_H
#define SAMEBITS_GRID_GEOMETRY_H

#ifdef __OPENCL_VERSION__
#ifndef SB_OPENCL_INT64_T
#define SB_OPENCL_INT64_T
typedef long int64_t;
#endif
#ifndef SB_OPENCL_INT32_T
#define SB_OPENCL_INT32_T
typedef int int32_t;
#endif
/* sb_grid_mode's and sb_grid_padding's values (include/samebits/conv.h). */
typedef int sb_grid_mode;
typedef int sb_grid_padding;
#define SB_GRID_BILINEAR 0
#define SB_GRID_NEAREST 1
#define SB_GRID_ZEROS 0
#define SB_GRID_BORDER 1
#define SB_GRID_REFLECTION 2
#else
#include <stdbool.h>
#include <stdint.h>
#include "samebits/conv.h"
#endif

/* floor of a binary32 as a binary32 (exact; magnitudes of 2^23 and more,
 * infinities and NaN are integral already or stay as they are) */
static inline float sb_grid_floorf(float v) {
    if (!(v > -8388608.0f && v < 8388608.0f)) return v;
    float t = (float)(int32_t)v; /* toward zero, exact here */
    return t > v ? t - 1.0f : t;
}

/* NaN-propagating minimum and maximum (a NaN coordinate stays NaN) */
static inline float sb_grid_min(float a, float b) { return a != a || a < b ? a : b; }
static inline float sb_grid_max(float a, float b) { return a != a || a > b ? a : b; }

/* Into [0, size - 1]; *grad is 1 strictly inside, 0 at or past either end
 * (a NaN stays NaN with *grad 1: its result is NaN anyway). */
static inline float sb_grid_clip(float in, int64_t size, float *grad) {
    float hi = (float)(size - 1);
    *grad = (in <= 0.0f || in >= hi) ? 0.0f : 1.0f;
    return sb_grid_min(sb_grid_max(in, 0.0f), hi);
}

/* Reflection of `in` about low and low + span (twice_span = 2 * span):
 * a = |in - low|, extra = a - floor(a / twice_span) * twice_span, the
 * result min(extra, twice_span - extra) + low; *sign = -1 when exactly one
 * of (in - low < 0) and (extra > twice_span - extra) holds, else +1. */
static inline float sb_grid_reflect(float in, float low, float twice_span, float *sign) {
    float d = in - low;
    float a = d < 0.0f ? -d : d;
    float extra = a - sb_grid_floorf(a / twice_span) * twice_span;
    float reflected = twice_span - extra;
    bool flip = extra > reflected;
    *sign = flip != (d < 0.0f) ? -1.0f : 1.0f;
    return (flip ? reflected : extra) + low;
}

/* The source coordinate of grid value `coord` along an axis of `size`
 * inputs, and in *mult the factor d(source)/d(coord) of its gradient.
 * Unnormalize with the scaling factor f: align_corners f = (size - 1) / 2,
 * (coord + 1) * f; else f = size / 2, (coord + 1) * f - 0.5. Border:
 * clip. Reflection: reflect about [0, size - 1] (align_corners; none for
 * size 1: the coordinate is 0 and *mult 0) or [-0.5, size - 0.5], then
 * clip. *mult = f * sign * clip gradient. */
static inline float sb_grid_source(float coord, int64_t size, sb_grid_padding padding,
                                   bool align_corners, float *mult) {
    float f = align_corners ? (float)(size - 1) / 2.0f : (float)size / 2.0f;
    float src = align_corners ? (coord + 1.0f) * f : (coord + 1.0f) * f - 0.5f;
    float sign = 1.0f, clip = 1.0f;
    if (padding == SB_GRID_REFLECTION) {
        if (align_corners && size <= 1) {
            *mult = 0.0f;
            return 0.0f;
        }
        src = align_corners ? sb_grid_reflect(src, 0.0f, (float)(size - 1) * 2.0f, &sign)
                            : sb_grid_reflect(src, -0.5f, (float)size * 2.0f, &sign);
    }
    if (padding != SB_GRID_ZEROS) src = sb_grid_clip(src, size, &clip);
    *mult = f * sign * clip;
    return src;
}

/* A bilinear read at (ix, iy): x0 = floor(ix), y0 = floor(iy), fx = ix - x0,
 * fy = iy - y0; corners k = nw (y0, x0), ne (y0, x0 + 1), sw (y0 + 1, x0),
 * se (y0 + 1, x0 + 1) with weights (1 - fy)(1 - fx), (1 - fy) fx,
 * fy (1 - fx), fy fx; pos[k] = row * W + column, or -1 outside the input. */
typedef struct sb_grid_corners {
    float fx, fy, w[4];
    int64_t pos[4];
} sb_grid_corners;

static inline int64_t sb_grid_pos(float row, float col, int64_t h, int64_t w) {
    bool in = row >= 0.0f && row < (float)h && col >= 0.0f && col < (float)w;
    return in ? (int64_t)row * w + (int64_t)col : -1;
}

static inline void sb_grid_bilinear(float ix, float iy, int64_t h, int64_t w, sb_grid_corners *c) {
    float x0 = sb_grid_floorf(ix), y0 = sb_grid_floorf(iy);
    float fx = ix - x0, fy = iy - y0;
    float ex = 1.0f - fx, sy = 1.0f - fy;
    c->fx = fx, c->fy = fy;
    c->w[0] = sy * ex;
    c->w[1] = sy * fx;
    c->w[2] = fy * ex;
    c->w[3] = fy * fx;
    c->pos[0] = sb_grid_pos(y0, x0, h, w);
    c->pos[1] = sb_grid_pos(y0, x0 + 1.0f, h, w);
    c->pos[2] = sb_grid_pos(y0 + 1.0f, x0, h, w);
    c->pos[3] = sb_grid_pos(y0 + 1.0f, x0 + 1.0f, h, w);
}

/* v rounded to an integer, halves to even (PyTorch's round): adding and
 * subtracting 2^23 rounds to nearest even in the contract's rounding mode;
 * magnitudes of 2^23 and more (and NaN) are integral or stay as they are. */
static inline float sb_grid_round_even(float v) {
    if (!(v > -8388608.0f && v < 8388608.0f)) return v;
    return v >= 0.0f ? (v + 8388608.0f) - 8388608.0f : (v - 8388608.0f) + 8388608.0f;
}

/* The nearest read: (ix, iy) rounded half to even, or -1 outside. */
static inline int64_t sb_grid_nearest(float ix, float iy, int64_t h, int64_t w) {
    return sb_grid_pos(sb_grid_round_even(iy), sb_grid_round_even(ix), h, w);
}

#endif
