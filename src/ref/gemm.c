/* The reference GEMM (contract section "GEMM family") and sb_sgemm.
 *
 * Every element of C is one sequential FMA chain over k in ascending order,
 * started from +0.0f. Fusing each step (one rounding per term instead of two)
 * is what GPUs and every modern CPU do natively, so a fast kernel can keep
 * the bits; the order is fixed because floating-point addition does not
 * associate. A blocked/vectorised kernel may tile over i and j freely, but it
 * must run each element's k terms in this order. */
#include <math.h>
#include "samebits/kernels.h"
#include "core/checked.h"
#include "core/fpenv.h"
#include "core/internal.h"
#include "cpu/cpu.h"
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

/* Bytes spanned by a rows x cols row-major matrix with row stride ld, or
 * SIZE_MAX when that does not fit (which the caller reports). */
static size_t matrix_bytes(int64_t rows, int64_t cols, int64_t ld) {
    if (rows == 0 || cols == 0) return 0;
    int64_t elems;
    size_t bytes;
    if (!sb_checked_mul(rows - 1, ld, &elems) || !sb_checked_add(elems, cols, &elems) ||
        elems > SB_NUMEL_MAX || !sb_checked_bytes(elems, sizeof(float), &bytes) || bytes == SIZE_MAX)
        return SIZE_MAX;
    return bytes;
}

/* Validates one stored operand: `rows` x `cols` as stored, row stride ld. */
static sb_status check_operand(const char *name, const char *ldname, const float *p, int64_t rows,
                               int64_t cols, int64_t ld, size_t *bytes) {
    int64_t need = cols > 1 ? cols : 1;
    if (ld < need)
        return sb_fail(SB_ERR_ARG, "sb_sgemm: %s = %lld must be >= max(1, %lld), the columns of %s as stored",
                       ldname, (long long)ld, (long long)cols, name);
    if (!p && rows > 0 && cols > 0) return sb_fail(SB_ERR_NULL, "sb_sgemm: %s is NULL", name);
    *bytes = matrix_bytes(rows, cols, ld);
    if (*bytes == SIZE_MAX)
        return sb_fail(SB_ERR_ARG, "sb_sgemm: %s (%lld x %lld, %s = %lld) is too large to address",
                       name, (long long)rows, (long long)cols, ldname, (long long)ld);
    return SB_OK;
}

int sb_sgemm(char transa, char transb, int64_t m, int64_t n, int64_t k, const float *a,
             int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc) {
    SB_FPENV_GUARD();
    if (!is_trans(transa) && transa != 'N' && transa != 'n')
        return sb_fail(SB_ERR_ARG, "sb_sgemm: transa = 0x%02x must be 'N', 'n', 'T' or 't'",
                       (unsigned char)transa);
    if (!is_trans(transb) && transb != 'N' && transb != 'n')
        return sb_fail(SB_ERR_ARG, "sb_sgemm: transb = 0x%02x must be 'N', 'n', 'T' or 't'",
                       (unsigned char)transb);
    if (m < 0 || n < 0 || k < 0)
        return sb_fail(SB_ERR_ARG, "sb_sgemm: sizes m = %lld, n = %lld, k = %lld must be >= 0",
                       (long long)m, (long long)n, (long long)k);
    /* The operands are read only when they contribute a term. */
    size_t abytes, bbytes, cbytes;
    bool ta = is_trans(transa), tb = is_trans(transb);
    SB_TRY(check_operand("a", "lda", a, ta ? k : m, ta ? m : k, lda, &abytes));
    SB_TRY(check_operand("b", "ldb", b, tb ? n : k, tb ? k : n, ldb, &bbytes));
    SB_TRY(check_operand("c", "ldc", c, m, n, ldc, &cbytes));
    if (k == 0) abytes = bbytes = 0;
    /* Writing C while it is still being read would change later chains. */
    if (sb_ref_ranges_overlap(c, cbytes, a, abytes))
        return sb_fail(SB_ERR_ARG, "sb_sgemm: c overlaps a (outputs must not alias inputs)");
    if (sb_ref_ranges_overlap(c, cbytes, b, bbytes))
        return sb_fail(SB_ERR_ARG, "sb_sgemm: c overlaps b (outputs must not alias inputs)");
    sb_cpu_sgemm(transa, transb, m, n, k, a, lda, b, ldb, c, ldc, false);
    return SB_OK;
}
