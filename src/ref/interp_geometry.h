/* src/ref/interp_geometry.h - the taps and weights of interpolation along
 * one axis (contract section 8, "Interpolation"): which input positions an
 * output position reads and with which float32 weights. One text for every
 * implementation (the reference and the CPU kernels include it). Every
 * operation is the binary32 (or, where stated, binary64) operation PyTorch's
 * CPU kernels write, without contraction (-ffp-contract=off). Not installed. */
#ifndef SAMEBITS_INTERP_GEOMETRY_H
#define SAMEBITS_INTERP_GEOMETRY_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/conv.h"

#define SB_INTERP_MAX_TAPS 4

static inline int sb_interp_taps(sb_interp_mode mode) {
    return mode == SB_INTERP_LINEAR ? 2 : mode == SB_INTERP_CUBIC ? 4 : 1;
}

/* PyTorch's area_pixel_compute_scale / compute_scales_value in binary32:
 * (in - 1) / (out - 1) with align_corners (0 for out = 1), else
 * (float)(1.0 / scale) in binary64 then rounded when a scale is given, else
 * in / out. Sizes convert to binary32 first (exact below 2^24). */
static inline float sb_interp_scale(sb_interp_mode mode, bool align_corners, int64_t in,
                                    int64_t out, double scale) {
    bool interpolating = mode == SB_INTERP_LINEAR || mode == SB_INTERP_CUBIC;
    if (interpolating && align_corners) return out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f;
    return scale > 0.0 ? (float)(1.0 / scale) : (float)in / (float)out;
}

/* floor(v) as an integer, clamped to at most hi (v is never NaN here; a
 * value at or past hi, infinity included, gives hi without a conversion
 * that could overflow). */
static inline int64_t sb_interp_floor_at_most(float v, int64_t hi) {
    if ((double)v >= (double)hi) return hi;
    int64_t t = (int64_t)v; /* toward zero; v > -2 here */
    return (float)t > v ? t - 1 : t;
}

/* The cubic convolution kernels of PyTorch (A = -0.75):
 * |x| <= 1: ((A + 2) x - (A + 3)) x x + 1;  1 < |x| < 2: ((A x - 5A) x + 8A) x - 4A. */
static inline float sb_interp_cubic1(float x) {
    const float A = -0.75f;
    return (((A + 2.0f) * x - (A + 3.0f)) * x) * x + 1.0f;
}
static inline float sb_interp_cubic2(float x) {
    const float A = -0.75f;
    return ((A * x - 5.0f * A) * x + 8.0f * A) * x - 4.0f * A;
}

/* The taps of output position o along an axis of `in` inputs and `out`
 * outputs: idx[0..taps-1] and w[0..taps-1] (nearest modes: w = 1). */
static inline void sb_interp_axis_taps(sb_interp_mode mode, bool align_corners, float scale,
                                       int64_t in, int64_t out, int64_t o, int64_t *idx,
                                       float *w) {
    if (mode == SB_INTERP_NEAREST) {
        /* PyTorch's nearest_neighbor_compute_source_index */
        idx[0] = sb_interp_floor_at_most((float)o * scale, in - 1);
        w[0] = 1.0f;
        return;
    }
    if (mode == SB_INTERP_NEAREST_EXACT) {
        /* (o + 0.5) * scale in binary64, rounded to binary32, floored */
        idx[0] = sb_interp_floor_at_most((float)(((double)o + 0.5) * (double)scale), in - 1);
        w[0] = 1.0f;
        return;
    }
    bool cubic = mode == SB_INTERP_CUBIC;
    if (!cubic && in == out) { /* PyTorch's copy case: x*1 + x*0 */
        idx[0] = idx[1] = o;
        w[0] = 1.0f;
        w[1] = 0.0f;
        return;
    }
    /* area_pixel_compute_source_index */
    float real;
    if (align_corners) {
        real = scale * (float)o;
    } else {
        real = scale * ((float)o + 0.5f) - 0.5f;
        if (!cubic && real < 0.0f) real = 0.0f;
    }
    /* guard_index_and_lambda */
    int64_t i0 = sb_interp_floor_at_most(real, in - 1);
    float lambda = real - (float)i0;
    lambda = lambda < 0.0f ? 0.0f : lambda;
    lambda = lambda > 1.0f ? 1.0f : lambda;
    if (!cubic) {
        idx[0] = i0;
        idx[1] = i0 < in - 1 ? i0 + 1 : i0;
        w[0] = 1.0f - lambda;
        w[1] = lambda;
        return;
    }
    float x2 = 1.0f - lambda;
    w[0] = sb_interp_cubic2(lambda + 1.0f);
    w[1] = sb_interp_cubic1(lambda);
    w[2] = sb_interp_cubic1(x2);
    w[3] = sb_interp_cubic2(x2 + 1.0f);
    for (int j = 0; j < 4; j++) {
        int64_t i = i0 - 1 + j;
        idx[j] = i < 0 ? 0 : i > in - 1 ? in - 1 : i;
    }
}

#endif
