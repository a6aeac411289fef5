/* src/cpu/sum_internal.h - the SIMD inner loops of the canonical sum
 * (src/core/canonical_sum.c). Internal.
 *
 * One "lane row" is 32 consecutive elements; element j of a row belongs to
 * lane j. Adding whole rows with vector registers that each hold a fixed
 * group of lanes performs, lane by lane, exactly the additions of the
 * scalar rule in the same order, so every level gives the same bits. */
#ifndef SAMEBITS_CPU_SUM_INTERNAL_H
#define SAMEBITS_CPU_SUM_INTERNAL_H

#include <stdint.h>
#include "core/canonical_sum.h"
#include "cpu/cpu.h"

/* lane[j] = lane[j] + x[r * 32 + j] for r = 0..rows-1 (ascending), j < 32. */
typedef void (*sb_sum_rows_fn)(float lane[SB_SUM_LANES], const float *x, int64_t rows);

void sb_sum_rows_scalar(float lane[SB_SUM_LANES], const float *x, int64_t rows);
#if SB_HAVE_X86_KERNELS
void sb_sum_rows_sse2(float lane[SB_SUM_LANES], const float *x, int64_t rows);
void sb_sum_rows_avx2(float lane[SB_SUM_LANES], const float *x, int64_t rows);
void sb_sum_rows_avx512(float lane[SB_SUM_LANES], const float *x, int64_t rows);
#endif
#if SB_HAVE_NEON_KERNELS
void sb_sum_rows_neon(float lane[SB_SUM_LANES], const float *x, int64_t rows);
#endif

/* The row adder of the ISA level in use (sb_isa()). */
sb_sum_rows_fn sb_sum_rows_pick(void);

#endif
