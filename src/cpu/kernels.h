/* src/cpu/kernels.h - the kernel context: every inner loop of the fast CPU
 * backend that depends on the instruction set, for one ISA level. Not
 * installed.
 *
 * One context per level (scalar, sse2, avx2, avx512, neon), all filled in
 * one file, src/cpu/kernels.c, and nowhere else: a family (GEMM, canonical
 * sum, pointwise, batch math, conv2d, pooling) never asks which level is in
 * use, it calls what the context holds. Adding a level is one more context
 * there; adding a kernel is one more member here and one line per level.
 *
 * Every member is set in every context (a level without a vector version
 * of a loop holds the portable one), except where a NULL is documented as
 * "no such kernel at this level: take the other path". Whatever the level,
 * the results are the contract's bits; the level only changes speed.
 *
 * Which context is active: sb_set_isa() / SB_ISA choose the level
 * (src/cpu/isa.c) and sb_kernels() returns its context. A job of the
 * thread pool runs entirely under the context of the thread that submitted
 * it (sb_parallel_for pins it on every thread that runs a range), so an
 * sb_set_isa() from another thread mid-op cannot give one op two levels;
 * families read sb_kernels() once per call and keep the pointer. */
#ifndef SAMEBITS_CPU_KERNELS_H
#define SAMEBITS_CPU_KERNELS_H

#include <stdbool.h>
#include <stdint.h>
#include "core/canonical_sum.h"
#include "cpu/cpu.h"
#include "cpu/gemm_internal.h"

struct sb_pwv_table;   /* cpu/ops_internal.h */
struct sb_vmath_table; /* cpu/vmath.h */
struct sb_exact_kernels; /* cpu/exact_internal.h */
struct sb_fused_kernels; /* cpu/fused_internal.h */
struct sb_conv2d_geom;   /* ref/ref_linalg.h */

/* dst[q*ldd + j] = src[q*lds + j] for q < count, j < len (a copy). */
typedef void (*sb_copy_rows_fn)(float *dst, int64_t ldd, const float *src, int64_t lds,
                                int64_t count, int len);
/* dst[s] = src[2*s] for s < count: conv2d's stride-2 im2col rows and
 * phase planes (reads src[0 .. 2*count - 2] only). */
typedef void (*sb_gather_stride2_fn)(const float *src, int64_t count, float *dst);
/* 2x2 stride-2 max pooling of one plane (width w) whose oh x ow windows all
 * lie inside it; ip (the argmax positions) may be NULL. */
typedef void (*sb_max_pool2x2_fn)(const float *xp, int64_t w, int64_t oh, int64_t ow, float *yp,
                                  int64_t *ip);
/* Max pooling of one plane by a table of its windows' taps: tab[k * ohw +
 * q] is the plane position of tap k (row-major within the window) of
 * output q, or -1 where the window has no such tap; every window has its
 * tap 0. The reference's scan per window (first NaN, else first strict
 * maximum) over its taps in order; ip (the argmax positions) may be NULL. */
typedef void (*sb_max_pool_taps_fn)(const float *xp, const int32_t *tab, int64_t taps,
                                    int64_t ohw, float *yp, int64_t *ip);

/* The depthwise / small-group convolution's loops (src/cpu/conv2d_dw.c;
 * contracts in cpu/conv_internal.h), lanes = how many chains a vector
 * holds: the weight gradient interleaves that many channels. */
typedef void (*sb_dw_taps_fn)(const float *p, const int64_t *off, const float *w, int64_t ntaps,
                              int64_t nq, float *out);
typedef void (*sb_dw_wgrad_fn)(const float *dyt, const float *xt, const int64_t *off,
                               int64_t ntaps, int64_t oh, int64_t ow, int64_t rstep, int64_t sw,
                               float *acc);
typedef void (*sb_dw_interleave_fn)(const float *const *src, int64_t count, float *dst);
typedef void (*sb_dw_deinterleave_fn)(const float *src, int64_t count, float *const *dst);
typedef void (*sb_dw_lanes_fwd_fn)(const float *xt, const float *wt, const int64_t *off,
                                   int64_t ntaps, int64_t oh, int64_t ow, int64_t rstep,
                                   int64_t sw, const float *bias, float *yt);
typedef void (*sb_dw_lanes_dx_fn)(const struct sb_conv2d_geom *g, const float *dyt, const float *wt,
                                  float *dxt);

typedef struct sb_cpu_kernels {
    sb_isa_level isa;
    /* GEMM micro-kernels and tile choice (src/cpu/gemm.c) */
    sb_gemm_kernels gemm;
    /* canonical sum: adds whole lane rows (src/cpu/sum.c) */
    sb_sum_rows_fn sum_rows;
    /* one block of contiguous elements, 0 < n <= SB_SUM_BLOCK, whole in
     * registers; NULL: sb_sum_block over sum_rows */
    float (*sum_block)(const float *x, int64_t n);
    /* the canonical sum of the variance's terms (x[i] - m)^2, 0 < n <=
     * SB_SUM_BLOCK, the terms computed in registers as the pointwise
     * table's sqdev does; false (nothing written) when a lane or term is
     * NaN, for the caller's path through the stored terms. NULL: that path */
    bool (*sqdev_sum_block)(const float *x, int64_t n, float m, float *sum);
    /* pointwise vector loops (src/cpu/pointwise.c, optim.c) */
    const struct sb_pwv_table *pointwise;
    /* batch correctly rounded math (src/cpu/vmath.c) */
    const struct sb_vmath_table *vmath;
    /* the activations' and softmax's arithmetic around it, fused per
     * element (src/cpu/activation.c, softmax.c) */
    const struct sb_fused_kernels *fused;
    /* conv2d's im2row: rows of up to copy_rows_max floats; NULL: plain loops */
    sb_copy_rows_fn copy_rows;
    int copy_rows_max;
    /* conv2d's stride-2 gathers; NULL: plain loops */
    sb_gather_stride2_fn gather_stride2;
    /* depthwise conv2d: tap chains, weight-gradient chains, their lanes */
    sb_dw_taps_fn dw_taps;
    sb_dw_wgrad_fn dw_wgrad;
    sb_dw_interleave_fn dw_interleave;
    sb_dw_deinterleave_fn dw_deinterleave;
    sb_dw_lanes_fwd_fn dw_lanes_fwd; /* small planes: channels as lanes */
    sb_dw_lanes_dx_fn dw_lanes_dx;
    int dw_lanes;
    /* max pooling's 2x2 stride-2 planes; NULL: the reference loop */
    sb_max_pool2x2_fn max_pool2x2;
    /* max pooling of any other fixed window by a tap table; NULL: the
     * window loops */
    sb_max_pool_taps_fn max_pool_taps;
    /* the order-free exact reduction's element loops (src/cpu/exact.c) */
    const struct sb_exact_kernels *exact;
} sb_cpu_kernels;

/* The context of `level`, or NULL when this build has no kernels for it
 * (another architecture). Whether the CPU can run it is sb_isa_supported's
 * question: tools that compare levels side by side (tools/verify_vmath.c)
 * ask both. */
const sb_cpu_kernels *sb_cpu_kernels_for(sb_isa_level level);

/* The context in use on this thread: the pinned one inside a job, else the
 * one of sb_isa(). */
const sb_cpu_kernels *sb_kernels(void);

/* Makes the calling thread use k (NULL: back to sb_isa()'s) and returns
 * what it used before, for the thread pool to restore. */
const sb_cpu_kernels *sb_kernels_pin(const sb_cpu_kernels *k);

#endif
