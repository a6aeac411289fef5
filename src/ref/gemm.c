/* The reference GEMM (contract section "GEMM family") and sb_sgemm.
 *
 * Every element of C is one sequential FMA chain over k in ascending order,
 * started from +0.0f. Fusing each step (one rounding per term instead of two)
 * is what GPUs and every modern CPU do natively, so a fast kernel can keep
 * the bits; the order is fixed because floating-point addition does not
 * associate. A blocked/vectorised kernel may tile over i and j freely, but it
 * must run each element's k terms in this order. The public, validating
 * entry point sb_sgemm is in src/ops/kernels.c. */
#include <math.h>
#include "core/fpenv.h"
#include "core/internal.h"
#include "ref/ref_linalg.h"

float sb_ref_dot_chain(int64_t k, const float *a, int64_t inca, const float *b, int64_t incb,
                       float start) {
    float acc = start;
    for (int64_t p = 0; p < k; p++) acc = fmaf(a[p * inca], b[p * incb], acc);
    return acc;
}

static bool is_trans(char t) { return t == 'T' || t == 't'; }

void sb_ref_sgemm(char transa, char transb, int64_t m, int64_t n, int64_t k, const float *a,
                  int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
                  bool continue_chain) {
    /* op(A)[i][p] = a[i*lda + p] (N) or a[p*lda + i] (T): pick the address of
     * row i's first term and the step between terms. */
    int64_t a_row = is_trans(transa) ? 1 : lda, a_step = is_trans(transa) ? lda : 1;
    int64_t b_col = is_trans(transb) ? ldb : 1, b_step = is_trans(transb) ? 1 : ldb;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float *cij = &c[i * ldc + j];
            float start = continue_chain ? *cij : 0.0f;
            /* k == 0 touches neither operand (they may be NULL). */
            *cij = k == 0 ? start
                          : sb_ref_dot_chain(k, a + i * a_row, a_step, b + j * b_col, b_step, start);
        }
}

bool sb_ref_ranges_overlap(const void *p, size_t pbytes, const void *q, size_t qbytes) {
    if (!p || !q || pbytes == 0 || qbytes == 0) return false;
    uintptr_t p0 = (uintptr_t)p, q0 = (uintptr_t)q;
    return p0 < q0 + qbytes && q0 < p0 + pbytes;
}

bool sb_ref_tensors_overlap(const sb_tensor *a, const sb_tensor *b) {
    if (!a || !b) return false;
    return sb_ref_ranges_overlap(a->data, (size_t)sb_tensor_numel(a) * sb_dtype_size(a->dtype),
                                 b->data, (size_t)sb_tensor_numel(b) * sb_dtype_size(b->dtype));
}
