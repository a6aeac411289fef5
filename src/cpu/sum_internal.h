/* src/cpu/sum_internal.h - the fast canonical sum: the rule of
 * src/core/canonical_sum.h with the ISA level's row adder (the kernel
 * context's sum_rows) and the blocks of long sums split over threads.
 * Internal.
 *
 * The SIMD row adders (sum_<isa>.c) hold the 32 lanes in registers that
 * each hold a fixed group of lanes, so they perform, lane by lane, exactly
 * the additions of the scalar rule in the same order: every level gives
 * the same bits. */
#ifndef SAMEBITS_CPU_SUM_INTERNAL_H
#define SAMEBITS_CPU_SUM_INTERNAL_H

#include <stdint.h>
#include "core/canonical_sum.h"
#include "cpu/cpu.h"

/* sb_sum_add_n and sb_sum_canonical, bit for bit, faster (src/cpu/sum.c). */
void sb_cpu_sum_add_n(sb_sum_acc *acc, const float *x, int64_t n);
float sb_cpu_sum_canonical(const float *x, int64_t n, int64_t stride);
/* out[c] = sb_sum_canonical(x + c, rows, ld) for c < cols: the canonical sum
 * of each column of a row-major matrix (a bias gradient), bit for bit. */
void sb_cpu_sum_columns(const float *x, int64_t rows, int64_t cols, int64_t ld, float *out);
/* The same for matrices whose elements are made on the fly: for each of
 * nmat (1 or 2) matrices, out[m][c] is the canonical sum over r = 0..rows-1
 * of term (r, c), bit for bit sb_sum_canonical's. row(ctx, r, c0, n, bufs, t)
 * hands over row r's terms for columns c0..c0+n-1 (n <= 64), matrix m's at
 * t[m]: written into bufs[m] (n floats) or pointing at the caller's memory.
 * Called from several threads at once, each with its own bufs. */
typedef struct sb_column_terms {
    void (*row)(const void *ctx, int64_t r, int64_t c0, int64_t n, float *const bufs[2],
                const float *t[2]);
    const void *ctx;
    int nmat;
} sb_column_terms;
void sb_cpu_sum_columns_of(const sb_column_terms *terms, int64_t rows, int64_t cols,
                           float *const out[2]);

/* lane[j] = lane[j] + x[r * 32 + j] for r = 0..rows-1 (ascending), j < 32. */
#if SB_HAVE_X86_KERNELS
void sb_sum_rows_sse2(float lane[SB_SUM_LANES], const float *x, int64_t rows);
void sb_sum_rows_avx2(float lane[SB_SUM_LANES], const float *x, int64_t rows);
void sb_sum_rows_avx512(float lane[SB_SUM_LANES], const float *x, int64_t rows);
/* sb_sum_block(x, n, 1, ...) for 0 < n <= SB_SUM_BLOCK, lanes and tree in
 * registers (the kernel context's sum_block). */
float sb_sum_block_avx2(const float *x, int64_t n);
float sb_sum_block_avx512(const float *x, int64_t n);
/* The kernel context's sqdev_sum_block (cpu/kernels.h). */
bool sb_sqdev_sum_block_avx2(const float *x, int64_t n, float m, float *sum);
bool sb_sqdev_sum_block_avx512(const float *x, int64_t n, float m, float *sum);
/* Both entry points of a level's file over its block_terms(x, n, sqdev, m,
 * lane, &sum) (sum_avx2.c, sum_avx512.c): the plain block sum, its NaN
 * lanes finished in the scalar order, and the variance's. */
#define SB_SUM_BLOCK_ENTRIES(isa)                                                          \
    float sb_sum_block_##isa(const float *x, int64_t n) {                                 \
        float lane[SB_SUM_LANES], sum;                                                     \
        return block_terms(x, n, false, 0.0f, lane, &sum) ? sum                            \
                                                          : sb_sum_block_finish(lane, x, n, 1); \
    }                                                                                      \
    bool sb_sqdev_sum_block_##isa(const float *x, int64_t n, float m, float *sum) {       \
        float lane[SB_SUM_LANES];                                                          \
        return block_terms(x, n, true, m, lane, sum);                                      \
    }
#endif
#if SB_HAVE_NEON_KERNELS
void sb_sum_rows_neon(float lane[SB_SUM_LANES], const float *x, int64_t rows);
#endif

#endif
