/* src/ref/cumulative_chain.h - the chains of cumsum and cumprod along one
 * column, forward and backward (contract section 10, "Cumulative sum and
 * product"). One text for every implementation: the reference (and through
 * it the CPU kernels) includes it as C, and the OpenCL pointwise program
 * embeds it before cumulative.cl (its #include lines are dropped there, and
 * column data is then in global memory). Every operation is one float32
 * rounding in the stated order; -ffp-contract=off, and OpenCL's
 * FP_CONTRACT OFF, keep them apart. Not installed. */
#ifndef SAMEBITS_CUMULATIVE_CHAIN_H
#define SAMEBITS_CUMULATIVE_CHAIN_H

#ifdef __OPENCL_VERSION__
#ifndef SB_OPENCL_INT64_T
#define SB_OPENCL_INT64_T
typedef long int64_t;
#endif
#define SB_CUM_MEM __global
/* sb_ref_cum_kind's values (src/ref/ref_cumulative.h). */
#define SB_CUM_SUM 0
#define SB_CUM_SUM_BACKWARD 1
#define SB_CUM_PROD 2
#define SB_CUM_PROD_BACKWARD 3
#else
#include <stdint.h>
#include "ref/ref_cumulative.h"
#define SB_CUM_MEM
#endif

/* s = +0, then s = s + a_i for i ascending (forward) or descending
 * (backward); out_i = s. Starting from +0 is PyTorch's: a leading -0
 * becomes +0. */
static inline void sb_cum_running_sum(int64_t n, SB_CUM_MEM const float *a, int64_t as,
                                      SB_CUM_MEM float *out, int64_t os, int reverse) {
    float s = 0.0f;
    for (int64_t k = 0; k < n; k++) {
        int64_t i = reverse ? n - 1 - k : k;
        s = s + a[i * as];
        out[i * os] = s;
    }
}

/* p = 1, then p = p * x_i ascending; out_i = p. */
static inline void sb_cum_running_product(int64_t n, SB_CUM_MEM const float *x, int64_t xs,
                                          SB_CUM_MEM float *out, int64_t os) {
    float p = 1.0f;
    for (int64_t i = 0; i < n; i++) {
        p = p * x[i * xs];
        out[i * os] = p;
    }
}

/* dx of y = cumprod(x) for one column (PyTorch's cumprod_backward made
 * sequential). z is the first i with x_i == 0 (n if none), z2 the second.
 *   n == 1:  dx_0 = dy_0 (bits copied).
 *   k < z:   dx_k = r_k / x_k, r = +0 then r = r + y_i * dy_i for i from
 *            z - 1 down to k (the product rounded, then the sum).
 *   k == z:  dx_z = S * P with q = 1, S = +0, then for i from z to z2 - 1:
 *            q = q * x_i when i > z, S = S + q * dy_i; P = y_{z-1}, or 1
 *            when z == 0.
 *   k > z:   dx_k = +0. */
static inline void sb_cum_product_backward(int64_t n, SB_CUM_MEM const float *x, int64_t xs,
                                           SB_CUM_MEM const float *y, int64_t ys,
                                           SB_CUM_MEM const float *dy, int64_t dys,
                                           SB_CUM_MEM float *dx, int64_t os) {
    if (n == 1) {
        dx[0] = dy[0];
        return;
    }
    int64_t z = n;
    for (int64_t i = 0; i < n; i++)
        if (x[i * xs] == 0.0f) {
            z = i;
            break;
        }
    float r = 0.0f;
    for (int64_t k = z - 1; k >= 0; k--) {
        r = r + y[k * ys] * dy[k * dys];
        dx[k * os] = r / x[k * xs];
    }
    if (z == n) return;
    float q = 1.0f, s = 0.0f;
    for (int64_t i = z; i < n; i++) {
        if (i > z) {
            if (x[i * xs] == 0.0f) break;
            q = q * x[i * xs];
        }
        s = s + q * dy[i * dys];
    }
    float p = z == 0 ? 1.0f : y[(z - 1) * ys];
    dx[z * os] = s * p;
    for (int64_t k = z + 1; k < n; k++) dx[k * os] = 0.0f;
}

/* One column of n elements by kind: a (x, or dy for SUM_BACKWARD), b (y)
 * and c (dy) with their strides along dim; b and c are read by
 * PROD_BACKWARD only. */
static inline void sb_cum_column(int kind, int64_t n, SB_CUM_MEM const float *a, int64_t as,
                                 SB_CUM_MEM const float *b, int64_t bs, SB_CUM_MEM const float *c,
                                 int64_t cs, SB_CUM_MEM float *out, int64_t os) {
    switch (kind) {
    case SB_CUM_SUM: sb_cum_running_sum(n, a, as, out, os, 0); break;
    case SB_CUM_SUM_BACKWARD: sb_cum_running_sum(n, a, as, out, os, 1); break;
    case SB_CUM_PROD: sb_cum_running_product(n, a, as, out, os); break;
    case SB_CUM_PROD_BACKWARD: sb_cum_product_backward(n, a, as, b, bs, c, cs, out, os); break;
    default: break;
    }
}

/* Offsets of column `col` (row-major over the axes other than dim) in four
 * operands with strides s0..s3 (elements). */
static inline void sb_cum_column_offsets(int ndim, int dim, const int64_t *shape,
                                         const int64_t *s0, const int64_t *s1, const int64_t *s2,
                                         const int64_t *s3, int64_t col, int64_t *o) {
    o[0] = o[1] = o[2] = o[3] = 0;
    for (int k = ndim - 1; k >= 0; k--) {
        if (k == dim) continue;
        int64_t i = col % shape[k];
        col /= shape[k];
        o[0] += i * s0[k];
        o[1] += i * s1[k];
        o[2] += i * s2[k];
        o[3] += i * s3[k];
    }
}

#endif
