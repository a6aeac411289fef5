/* samebits/kernels.h - reproducible linear algebra on raw buffers.
 *
 * For users who want only reproducible BLAS-like building blocks. Results
 * follow docs/CONTRACT.md bit for bit, whatever the machine.
 */
#ifndef SAMEBITS_KERNELS_H
#define SAMEBITS_KERNELS_H

#include <stdint.h>
#include "samebits/export.h"
#include "samebits/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* C = op(A) . op(B), row-major. op(X) is X for 'N'/'n' and X^T for 'T'/'t'.
 * op(A) is m x k, op(B) is k x n, C is m x n; lda/ldb/ldc are row strides in
 * elements of A, B, C as stored. Each C[i][j] is the chain
 *     acc = +0.0f;  for p = 0..k-1: acc = fmaf(op(A)[i][p], op(B)[p][j], acc)
 * (contract section "GEMM family"). C must not overlap A or B.
 * Returns SB_OK or an error (NULL pointers, negative sizes, bad strides,
 * overlap); C is untouched on error. */
SB_API sb_status sb_sgemm(char transa, char transb, int64_t m, int64_t n, int64_t k,
                          const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc);

/* *out = the canonical sum of x[0], x[incx], ..., x[(n-1)*incx] (contract
 * section "Canonical sum"). n == 0 gives +0.0f. Returns SB_OK, or an error
 * (NULL x or out, n < 0, incx < 1, an unaddressable (n-1)*incx) with *out
 * untouched: a NaN sum is a result, never an error signal. */
SB_API sb_status sb_ssum(int64_t n, const float *x, int64_t incx, float *out);

#ifdef __cplusplus
}
#endif
#endif
