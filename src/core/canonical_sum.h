/* src/core/canonical_sum.h - the one summation order samebits uses for every
 * reduction that is not a GEMM-family FMA chain (contract: "Canonical sum").
 *
 * Elements are fed in their logical index order; the accumulator streams, so
 * callers can sum strided or gathered values without a temporary buffer:
 *
 *     sb_sum_acc acc; sb_sum_init(&acc);
 *     for (i = 0; i < n; i++) sb_sum_add(&acc, x[i]);
 *     float s = sb_sum_result(&acc);
 */
#ifndef SAMEBITS_CANONICAL_SUM_H
#define SAMEBITS_CANONICAL_SUM_H

#include <stdint.h>

#define SB_SUM_LANES 32
#define SB_SUM_BLOCK 8192
#define SB_SUM_LEVELS 6 /* 8192^6 = 2^78 elements: more than any memory */

typedef struct sb_sum_acc {
    float lane[SB_SUM_LEVELS][SB_SUM_LANES];
    int64_t count[SB_SUM_LEVELS];
} sb_sum_acc;

void sb_sum_init(sb_sum_acc *acc);
void sb_sum_add(sb_sum_acc *acc, float x);
float sb_sum_result(const sb_sum_acc *acc);
/* Adds x[0..n-1] in order: the same state as n calls of sb_sum_add, with
 * a vectorised fast path for whole lane rows. */
void sb_sum_add_n(sb_sum_acc *acc, const float *x, int64_t n);

/* The whole rule over x[0], x[stride], ... (n >= 0, any stride), on the
 * calling thread with the scalar row adder: the reference. The fast CPU
 * backend's threaded, vectorised version is sb_cpu_sum_canonical
 * (src/cpu/sum_internal.h), which gives the same bits. */
float sb_sum_canonical(const float *x, int64_t n, int64_t stride);

/* The fixed lane tree alone: lane[j] += lane[j+s] for s = 16, 8, 4, 2, 1. */
float sb_sum_tree32(const float lane[SB_SUM_LANES]);
/* The canonical sum of k <= 32 terms t[0..k-1] (each alone in its lane),
 * folding only the lanes in use: the others would hold -0, and v + -0 == v.
 * Overwrites t. */
float sb_sum_few_terms(float *t, int k);

/* ---- the rule with a given row adder ---------------------------------------
 * One "lane row" is 32 consecutive elements; element j of a row belongs to
 * lane j. A row adder performs, lane by lane and row after row,
 *     lane[j] = lane[j] + x[r * 32 + j]   (r = 0..rows-1 ascending, j < 32),
 * which are exactly the additions of the rule; a vectorised one (a fixed
 * group of lanes per register) therefore gives the same bits. The fast
 * backend passes its ISA level's adder to the functions below. */
typedef void (*sb_sum_rows_fn)(float lane[SB_SUM_LANES], const float *x, int64_t rows);

void sb_sum_rows_scalar(float lane[SB_SUM_LANES], const float *x, int64_t rows);

/* sb_sum_add_n with whole lane rows added by rows_fn. */
void sb_sum_add_rows(sb_sum_acc *acc, const float *x, int64_t n, sb_sum_rows_fn rows_fn);

/* Rule 2 for one block of 1 <= n <= SB_SUM_BLOCK elements x[0], x[stride],
 * ... with whole lane rows added by rows_fn. */
float sb_sum_block(const float *x, int64_t n, int64_t stride, sb_sum_rows_fn rows_fn);

/* The end of sb_sum_block once its whole rows are in lane: the ragged last
 * row (elements n/32*32 .. n-1 of x[0], x[stride], ...) one at a time, then
 * the tree. The vector blocks (src/cpu/sum_<isa>.c) come here when a NaN is
 * about: which operand of an addition a NaN result takes is the scalar
 * code's order, which register code need not keep. */
float sb_sum_block_finish(float lane[SB_SUM_LANES], const float *x, int64_t n, int64_t stride);

#endif
