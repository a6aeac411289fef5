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
void sb_max_pool2x2_avx512(const float *xp, int64_t w, int64_t oh, int64_t ow, float *yp,
                           int64_t *ip);
#endif

#endif
