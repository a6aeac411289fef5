/* src/cpu/conv_internal.h - the fast CPU conv2d and 2-D pooling kernels.
 * Not installed.
 *
 * Each function has the signature and the exact bits of its sb_ref_*
 * counterpart in src/ref/ref_linalg.h (the contract): same geometry, same
 * dense NCHW / OIHW buffers, arguments already validated by src/ops/conv.c.
 * They split independent outputs over sb_parallel_for() and run the GEMM
 * family chains through sb_cpu_sgemm(); none of them fails (when a scratch
 * buffer cannot be allocated they compute with the reference kernel). */
#ifndef SAMEBITS_CPU_CONV_INTERNAL_H
#define SAMEBITS_CPU_CONV_INTERNAL_H

#include "cpu/cpu.h"
#include "ref/ref_linalg.h"

void sb_cpu_conv2d_forward(const sb_conv2d_geom *g, const float *x, const float *weight,
                           const float *bias, float *y);
void sb_cpu_conv2d_backward_input(const sb_conv2d_geom *g, const float *dy, const float *weight,
                                  float *dx);
void sb_cpu_conv2d_backward_weight(const sb_conv2d_geom *g, const float *dy, const float *x,
                                   float *dweight);
void sb_cpu_conv2d_backward_bias(const sb_conv2d_geom *g, const float *dy, float *dbias);

/* Depthwise and small-group convolutions (groups > 1, at most
 * SB_DW_ICG_MAX input channels per group; src/cpu/conv2d_dw.c): a direct
 * kernel instead of a GEMM whose k is a group's few taps. Same contract as
 * the functions above; each returns false, having written nothing, when
 * the geometry is not one it takes (or scratch memory ran out, or, for the
 * input gradient, a weight is inf or NaN), and the caller then takes the
 * GEMM path. */
#define SB_DW_ICG_MAX 4
bool sb_cpu_conv2d_dw_forward(const sb_conv2d_geom *g, const float *x, const float *weight,
                              const float *bias, float *y);
bool sb_cpu_conv2d_dw_backward_input(const sb_conv2d_geom *g, const float *dy,
                                     const float *weight, float *dx);
bool sb_cpu_conv2d_dw_backward_weight(const sb_conv2d_geom *g, const float *dy, const float *x,
                                      float *dweight);

/* Its per-ISA loops (the kernel context's dw_taps / dw_wgrad, see
 * conv2d_dw_simd.h): out[q] = chain over t of fmaf(p[off[t] + q], w[t])
 * for q < nq rounded up to whole vectors; and one sample's terms of the
 * lane-interleaved weight-gradient chains. */
#define SB_DW_DECLARE(sfx)                                                                     \
    void sb_dw_taps_##sfx(const float *p, const int64_t *off, const float *w, int64_t ntaps,   \
                          int64_t nq, float *out);                                             \
    void sb_dw_wgrad_##sfx(const float *dyt, const float *xt, const int64_t *off,              \
                           int64_t ntaps, int64_t oh, int64_t ow, int64_t rstep, int64_t sw,   \
                           float *acc);                                                        \
    void sb_dw_interleave_##sfx(const float *const *src, int64_t count, float *dst);         \
    void sb_dw_deinterleave_##sfx(const float *src, int64_t count, float *const *dst);       \
    void sb_dw_lanes_fwd_##sfx(const float *xt, const float *wt, const int64_t *off,          \
                               int64_t ntaps, int64_t oh, int64_t ow, int64_t rstep,          \
                               int64_t sw, const float *bias, float *yt);                     \
    void sb_dw_lanes_dx_##sfx(const sb_conv2d_geom *g, const float *dyt, const float *wt,     \
                              float *dxt);
SB_DW_DECLARE(scalar)
#if SB_HAVE_X86_KERNELS
SB_DW_DECLARE(avx2)
SB_DW_DECLARE(avx512)
#endif

/* Planes of few positions (src/cpu/conv2d_few.c): the forward and the
 * input gradient per position class, one product over exactly the taps
 * its positions read; the weight gradient per tap, one product over the
 * output positions where it reads x. Same contract as the functions
 * above; each returns false, having written nothing, when the plane is
 * too large for it (more than 64 positions), scratch memory ran out, or
 * a weight (forward) or a dy (weight gradient) is inf or NaN where padded
 * taps are left out; the caller then takes another path. */
bool sb_cpu_conv2d_few_forward(const sb_conv2d_geom *g, const float *x, const float *weight,
                               const float *bias, float *y);
bool sb_cpu_conv2d_few_backward_input(const sb_conv2d_geom *g, const float *dy,
                                      const float *weight, float *dx);
bool sb_cpu_conv2d_tap_backward_weight(const sb_conv2d_geom *g, const float *dy, const float *x,
                                       float *dweight);
/* Whether none of w[0 .. n) is inf or NaN (over the thread pool). */
bool sb_cpu_conv2d_weights_finite(int64_t n, const float *w);

void sb_cpu_max_pool2d_forward(const sb_pool2d_geom *g, const float *x, float *y, int64_t *indices);
void sb_cpu_max_pool2d_backward(const sb_pool2d_geom *g, const float *dy, const int64_t *indices,
                                float *dx);
void sb_cpu_avg_pool2d_forward(const sb_pool2d_geom *g, const float *x, float *y);
void sb_cpu_avg_pool2d_backward(const sb_pool2d_geom *g, const float *dy, float *dx);

/* 2x2 stride-2 max pooling of one plane whose windows all lie inside it
 * (src/cpu/pool2d_avx512.c); ip may be NULL. */
#if SB_HAVE_X86_KERNELS
/* count rows of len floats, row q from src + q*lds to dst + q*ldd
 * (len <= 16 for AVX-512, <= 8 for AVX2); conv2d's im2row copies. */
void sb_copy_rows_avx512(float *dst, int64_t ldd, const float *src, int64_t lds, int64_t count,
                         int len);
void sb_copy_rows_avx2(float *dst, int64_t ldd, const float *src, int64_t lds, int64_t count,
                       int len);
/* dst[s] = src[2*s], s < count (sb_gather_stride2_fn, cpu/kernels.h) */
void sb_gather_stride2_avx512(const float *src, int64_t count, float *dst);
void sb_gather_stride2_avx2(const float *src, int64_t count, float *dst);
void sb_max_pool2x2_avx512(const float *xp, int64_t w, int64_t oh, int64_t ow, float *yp,
                           int64_t *ip);
void sb_max_pool_taps_avx512(const float *xp, const int32_t *tab, int64_t taps, int64_t ohw,
                             float *yp, int64_t *ip);
void sb_max_pool_taps_avx2(const float *xp, const int32_t *tab, int64_t taps, int64_t ohw,
                           float *yp, int64_t *ip);
#endif

#endif
