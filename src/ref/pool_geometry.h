/* src/ref/pool_geometry.h - the windows of 2-D pooling along one axis
 * (contract section 8): which input taps output position r reads, which
 * outputs read input position pos, and average pooling's divisor. One text
 * for every implementation: the reference, the CPU kernels, src/ops and the
 * CUDA kernels include it, and the OpenCL program of the conv family embeds it
 * before conv.cl (its #include lines are dropped there, so it uses only
 * what OpenCL C has). Not installed.
 *
 * Window r covers taps r*stride - pad + i*dil (i = 0..k-1) that lie in
 * bounds; with `adaptive` (adaptive pooling: k, stride, pad and dil unused)
 * it covers floor(r*in/out) .. ceil((r+1)*in/out) - 1 (PyTorch's rule; in,
 * out <= INT32_MAX, so the products fit int64). */
#ifndef SAMEBITS_POOL_GEOMETRY_H
#define SAMEBITS_POOL_GEOMETRY_H

#ifdef __OPENCL_VERSION__
#ifndef SB_OPENCL_INT64_T
#define SB_OPENCL_INT64_T
typedef long int64_t;
#endif
#else
#include <stdbool.h>
#include <stdint.h>
#endif

/* The CUDA build of conv.cl (src/cuda/program_conv.cu) calls these too. */
#ifdef __CUDACC__
#define SB_POOL_FN static inline __host__ __device__
#else
#define SB_POOL_FN static inline
#endif

/* One axis of a window. */
typedef struct sb_pool_axis {
    int64_t in, out, k, stride, pad, dil; /* dil >= 1 */
    bool adaptive;
} sb_pool_axis;

/* The in-bounds taps of output position `r` of one axis: lo, lo + dil, ...
 * below hi (dil 1 for adaptive windows); lo >= hi when there are none. */
SB_POOL_FN void sb_pool_window(const sb_pool_axis *a, int64_t r, int64_t *lo, int64_t *hi) {
    if (a->adaptive) {
        *lo = r * a->in / a->out;
        *hi = ((r + 1) * a->in + a->out - 1) / a->out;
        return;
    }
    int64_t start = r * a->stride - a->pad;
    /* first tap at or after 0, last tap before in */
    int64_t first = start < 0 ? (-start + a->dil - 1) / a->dil : 0;
    int64_t last = start >= a->in ? -1 : (a->in - 1 - start) / a->dil;
    if (last > a->k - 1) last = a->k - 1;
    *lo = start + first * a->dil;
    *hi = first <= last ? start + last * a->dil + 1 : *lo;
}

/* The step between the taps of one axis. */
SB_POOL_FN int64_t sb_pool_step(const sb_pool_axis *a) { return a->adaptive ? 1 : a->dil; }

/* The output positions [*lo, *hi) of one axis whose window spans contain
 * input position `pos` (the inverse of sb_pool_window); with dilation a
 * window in that range holds pos only when sb_pool_holds says so. */
SB_POOL_FN void sb_pool_windows_of(const sb_pool_axis *a, int64_t pos, int64_t *lo,
                                      int64_t *hi) {
    int64_t first, last;
    if (a->adaptive) {
        /* floor(r*in/out) <= pos  <=>  r <= ((pos+1)*out - 1) / in, and
         * ceil((r+1)*in/out) > pos  <=>  r >= floor(pos*out/in). */
        first = pos * a->out / a->in;
        last = a->out > 0 ? ((pos + 1) * a->out - 1) / a->in : -1;
    } else {
        /* r*stride - pad <= pos  and  pos <= r*stride - pad + dil*(k-1) */
        int64_t least = pos + a->pad - a->dil * (a->k - 1); /* smallest r*stride */
        first = least <= 0 ? 0 : (least + a->stride - 1) / a->stride;
        last = (pos + a->pad) / a->stride;
    }
    *lo = first;
    *hi = last + 1 < a->out ? last + 1 : a->out;
}

/* Whether window r of one axis has a tap at input position pos, given that
 * pos lies within its span (sb_pool_windows_of). */
SB_POOL_FN bool sb_pool_holds(const sb_pool_axis *a, int64_t r, int64_t pos) {
    return a->adaptive || a->dil == 1 || (pos - (r * a->stride - a->pad)) % a->dil == 0;
}

/* The number of positions window r of one axis counts for average pooling
 * (no dilation there: src/ops refuses it): its in-bounds taps, or with
 * count_include_pad its positions inside the padded input (in ceil mode the
 * last window may hang past the right padding, and those do not count). */
SB_POOL_FN int64_t sb_pool_count(const sb_pool_axis *a, bool count_include_pad, int64_t r) {
    int64_t lo, hi;
    if (count_include_pad && !a->adaptive) {
        int64_t start = r * a->stride, size = a->in + 2 * a->pad; /* padded coordinates */
        lo = start < 0 ? 0 : start;
        hi = start + a->k < size ? start + a->k : size;
    } else {
        sb_pool_window(a, r, &lo, &hi);
    }
    return hi - lo;
}

/* Average pooling's divisor of window (r, s): divisor_override when not 0
 * (|divisor| <= 2^24, so exact), else the counted positions. */
SB_POOL_FN float sb_pool_divisor(const sb_pool_axis *rows, const sb_pool_axis *cols,
                                   bool count_include_pad, int64_t divisor, int64_t r, int64_t s) {
    if (divisor) return (float)divisor;
    return (float)(sb_pool_count(rows, count_include_pad, r) *
                   sb_pool_count(cols, count_include_pad, s));
}

#endif
