/* samebits/linalg.h - matrix products and fully connected layers.
 *
 * Every output element is one GEMM-family chain (contract section "GEMM
 * family"): acc starts at +0.0f and takes acc = fmaf(a_p, b_p, acc) for the
 * terms p in the order each function states; a bias is then added with one
 * IEEE addition. Reductions that are not products (bias gradients) use the
 * canonical sum. Results are bit-identical on every machine.
 *
 * Common rules: all tensors are float32, on the CPU and contiguous (the
 * reference kernels need dense rows; sb_tensor_copy a strided view first).
 * Outputs are caller-provided with exactly the stated shape and must not
 * share memory with any input or with each other. Backward functions WRITE
 * their gradients (they do not add to what the buffers held); a NULL
 * gradient output is skipped. On any validation error nothing is written.
 */
#ifndef SAMEBITS_LINALG_H
#define SAMEBITS_LINALG_H

#include <stdbool.h>
#include "samebits/export.h"
#include "samebits/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out = op(a) . op(b), op(t) = t or its transpose over the last two dims.
 *   2-D: op(a) is (M, K), op(b) is (K, N), out is (M, N).
 *   3-D: a (B, ., .) and b (B, ., .) with equal B give out (B, M, N); one
 *        operand may be 2-D and is then shared by every batch.
 * out[.., i, j] = chain over p = 0..K-1 ascending of op(a)[i][p] * op(b)[p][j]. */
SB_API sb_status sb_matmul(const sb_tensor *a, const sb_tensor *b, bool trans_a, bool trans_b,
                    sb_tensor *out);

/* Gradients of sb_matmul given dout (shape of out); da (shape of a) and db
 * (shape of b) may each be NULL.
 *   da: d op(a)[i][p] = chain over j = 0..N-1 ascending of dout[i][j]*op(b)[p][j]
 *       (stored transposed when trans_a); when a is a shared 2-D operand the
 *       chain runs over (batch, j) lexicographically.
 *   db: d op(b)[p][j] = chain over i = 0..M-1 ascending of op(a)[i][p]*dout[i][j];
 *       when b is a shared 2-D operand the chain runs over (batch, i). */
SB_API sb_status sb_matmul_backward(const sb_tensor *dout, const sb_tensor *a, const sb_tensor *b,
                             bool trans_a, bool trans_b, sb_tensor *da, sb_tensor *db);

/* y = x . w^T + bias. x is (..., in) with any rank >= 1 (leading dims are
 * rows), w is (out, in), bias is (out) or NULL, y is (..., out) with x's
 * leading dims. y[r][o] = (chain over i = 0..in-1 of x[r][i]*w[o][i]) + bias[o]
 * (the addition only when bias is given). */
SB_API sb_status sb_linear_forward(const sb_tensor *x, const sb_tensor *w, const sb_tensor *bias,
                            sb_tensor *y);

/* Gradients of sb_linear_forward given dy (shape of y); each of dx (shape of
 * x), dw (out, in) and db (out) may be NULL. With R rows (x's leading dims
 * flattened in row-major order):
 *   dx[r][i] = chain over o = 0..out-1 of dy[r][o]*w[o][i]
 *   dw[o][i] = chain over r = 0..R-1 of dy[r][o]*x[r][i]
 *   db[o]    = canonical sum over r = 0..R-1 of dy[r][o]
 * The gradients are written, not accumulated. */
SB_API sb_status sb_linear_backward(const sb_tensor *dy, const sb_tensor *x, const sb_tensor *w,
                             sb_tensor *dx, sb_tensor *dw, sb_tensor *db);

#ifdef __cplusplus
}
#endif
#endif
