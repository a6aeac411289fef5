/* src/ref/ref_linalg.h - raw reference kernels of the GEMM family (matmul,
 * linear, conv2d) and of 2-D pooling. Not installed.
 *
 * These kernels ARE the contract (docs/CONTRACT.md, sections "GEMM family"
 * and "Pooling"): plain loops in the exact order the contract states. They do
 * not validate: the public wrappers (sb_sgemm, src/ops/linalg.c,
 * src/ops/conv.c) check every argument first, so a kernel is only ever called
 * with consistent shapes, non-NULL buffers and non-overlapping outputs.
 * All buffers are dense row-major (NCHW / OIHW for images and filters).
 */
#ifndef SAMEBITS_REF_LINALG_H
#define SAMEBITS_REF_LINALG_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/tensor.h"
#include "ref/pool_geometry.h"

/* ---- the one GEMM-family chain ------------------------------------------
 * Every output element of the GEMM family is
 *     acc = start;  for p = 0..k-1:  acc = fmaf(a[p*inca], b[p*incb], acc)
 * with start = +0.0f for a fresh chain. Passing a previous result as `start`
 * continues that chain, which is how a chain that runs over several batches
 * (matmul backward with a broadcast operand) is expressed. */
float sb_ref_dot_chain(int64_t k, const float *a, int64_t inca, const float *b, int64_t incb,
                       float start);

/* C = op(A) . op(B) as chains; op(A) is m x k, op(B) is k x n, C is m x n.
 * transa/transb are 'N' or 'T' (already validated, either case). With
 * `continue_chain` false each C[i][j] starts from +0.0f; with true it starts
 * from the C[i][j] already stored (the same chain, longer by k terms). */
void sb_ref_sgemm(char transa, char transb, int64_t m, int64_t n, int64_t k, const float *a,
                  int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
                  bool continue_chain);

/* True when byte ranges [p, p+pbytes) and [q, q+qbytes) share a byte. */
bool sb_ref_ranges_overlap(const void *p, size_t pbytes, const void *q, size_t qbytes);

/* True when two dense tensors (either may be NULL) share memory. */
bool sb_ref_tensors_overlap(const sb_tensor *a, const sb_tensor *b);

/* ---- conv2d ---------------------------------------------------------------
 * x is (n, c_in, h, w), weight is (c_out, c_in/groups, kh, kw), y is
 * (n, c_out, oh, ow). Input row of output row r, tap i: r*stride_h - pad_h +
 * i*dilation_h (likewise for columns); positions outside [0,h) x [0,w) are
 * zero padding. */
typedef struct sb_conv2d_geom {
    int64_t n, c_in, h, w;
    int64_t c_out, kh, kw;
    int64_t oh, ow;
    int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups;
} sb_conv2d_geom;

/* One output's chain before the bias: y[n][oc][r][s] over the contract's
 * icg*kh*kw terms (padded taps as +0.0f terms); one input gradient's:
 * dx[n][ch][ih][iw] over (o, i, j) for the taps that read it; and one
 * weight gradient's: dweight[oc][c][i][j] over every (n, r, s) (c counts
 * within oc's group).
 * The fast kernels' fallbacks (no scratch memory, zero results recomputed)
 * call these rather than restating the chains. */
float sb_ref_conv2d_y_chain(const sb_conv2d_geom *g, const float *x, const float *weight, int64_t n,
                            int64_t oc, int64_t r, int64_t s);
float sb_ref_conv2d_dx_chain(const sb_conv2d_geom *g, const float *dy, const float *weight,
                             int64_t n, int64_t ch, int64_t ih, int64_t iw);
float sb_ref_conv2d_dw_chain(const sb_conv2d_geom *g, const float *dy, const float *x,
                             int64_t oc, int64_t c, int64_t i, int64_t j);
/* y = conv(x, weight) (+ bias, NULL for none). */
void sb_ref_conv2d_forward(const sb_conv2d_geom *g, const float *x, const float *weight,
                           const float *bias, float *y);
/* dx from dy: dx is (n, c_in, h, w), dy is (n, c_out, oh, ow). */
void sb_ref_conv2d_backward_input(const sb_conv2d_geom *g, const float *dy, const float *weight,
                                  float *dx);
/* dweight from dy and x: dweight is (c_out, c_in/groups, kh, kw). */
void sb_ref_conv2d_backward_weight(const sb_conv2d_geom *g, const float *dy, const float *x,
                                   float *dweight);
/* dbias[c_out] from dy. */
void sb_ref_conv2d_backward_bias(const sb_conv2d_geom *g, const float *dy, float *dbias);

/* ---- 2-D pooling ----------------------------------------------------------
 * x is (planes, h, w) where planes = N*C; y is (planes, oh, ow). Window
 * (r, s) covers input rows r*stride_h - pad_h + i*dil_h for i = 0..kh-1 and
 * columns s*stride_w - pad_w + j*dil_w for j = 0..kw-1 (its in-bounds taps);
 * with `adaptive` (adaptive pooling, kh, kw, strides, pads and dilations
 * unused) it covers rows floor(r*h/oh) .. ceil((r+1)*h/oh)-1 and likewise for
 * columns (PyTorch's rule; h, w, oh, ow <= INT32_MAX, so the products fit
 * int64). Windows of different sizes may overlap. divisor is average
 * pooling's divisor_override (0: none). */
typedef struct sb_pool2d_geom {
    int64_t planes, h, w;
    int64_t oh, ow;
    int64_t kh, kw, stride_h, stride_w, pad_h, pad_w;
    bool count_include_pad; /* avg only */
    bool adaptive;
    int64_t dil_h, dil_w; /* 0 and 1 both mean contiguous taps */
    int64_t divisor;      /* avg only; 0: count positions */
} sb_pool2d_geom;

static inline sb_pool_axis sb_pool_rows(const sb_pool2d_geom *g) {
    return (sb_pool_axis){g->h, g->oh, g->kh, g->stride_h, g->pad_h, g->dil_h > 1 ? g->dil_h : 1,
                          g->adaptive};
}
static inline sb_pool_axis sb_pool_cols(const sb_pool2d_geom *g) {
    return (sb_pool_axis){g->w, g->ow, g->kw, g->stride_w, g->pad_w, g->dil_w > 1 ? g->dil_w : 1,
                          g->adaptive};
}

/* indices may be NULL; each index is ih*w + iw within its plane. */
void sb_ref_max_pool2d_forward(const sb_pool2d_geom *g, const float *x, float *y, int64_t *indices);
/* indices must be valid: each inside its own window and in bounds. */
void sb_ref_max_pool2d_backward(const sb_pool2d_geom *g, const float *dy, const int64_t *indices,
                                float *dx);
void sb_ref_avg_pool2d_forward(const sb_pool2d_geom *g, const float *x, float *y);
void sb_ref_avg_pool2d_backward(const sb_pool2d_geom *g, const float *dy, float *dx);
/* The divisor of window (r, s): see the contract. */
float sb_ref_avg_pool2d_divisor(const sb_pool2d_geom *g, int64_t r, int64_t s);

#endif
