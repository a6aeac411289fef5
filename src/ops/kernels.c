/* The raw-buffer kernels of include/samebits/kernels.h: sb_sgemm and sb_ssum.
 * Each validates every argument (nothing is written on failure), then runs
 * the fast path (src/cpu), which reproduces the reference (src/ref/gemm.c,
 * the canonical sum of src/core/canonical_sum.c) bit for bit. */
#include "samebits/kernels.h"
#include "core/checked.h"
#include "core/fpenv.h"
#include "core/canonical_sum.h"
#include "core/internal.h"
#include "cpu/cpu.h"
#include "cpu/sum_internal.h"
#include "ref/ref_linalg.h"

static bool is_trans(char t) { return t == 'T' || t == 't'; }

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

sb_status sb_sgemm(char transa, char transb, int64_t m, int64_t n, int64_t k, const float *a,
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

sb_status sb_ssum(int64_t n, const float *x, int64_t incx, float *out) {
    SB_FPENV_GUARD();
    if (!out) return sb_fail(SB_ERR_NULL, "sb_ssum: out is NULL");
    if (n < 0) return sb_fail(SB_ERR_ARG, "sb_ssum: n = %lld is negative", (long long)n);
    if (n > 0 && !x) return sb_fail(SB_ERR_NULL, "sb_ssum: x is NULL");
    if (incx < 1) return sb_fail(SB_ERR_ARG, "sb_ssum: incx = %lld must be >= 1", (long long)incx);
    /* x[(n-1)*incx] must be addressable: the last offset and its byte count fit. */
    int64_t last;
    size_t bytes;
    if (n > 0 && (!sb_checked_mul(n - 1, incx, &last) || !sb_checked_bytes(last, sizeof(float), &bytes) ||
                  last > SB_NUMEL_MAX))
        return sb_fail(SB_ERR_ARG, "sb_ssum: n = %lld with incx = %lld reaches past any addressable buffer",
                       (long long)n, (long long)incx);
    *out = sb_cpu_sum_canonical(x, n, incx);
    return SB_OK;
}
