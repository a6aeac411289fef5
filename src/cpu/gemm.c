/* The fast GEMM (src/cpu/cpu.h). Placeholder until the blocked kernels
 * land: the reference loops, which define the bits. */
#include "cpu/cpu.h"
#include "ref/ref_linalg.h"

void sb_cpu_sgemm(char transa, char transb, int64_t m, int64_t n, int64_t k, const float *a,
                  int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
                  bool continue_chain) {
    sb_ref_sgemm(transa, transb, m, n, k, a, lda, b, ldb, c, ldc, continue_chain);
}
