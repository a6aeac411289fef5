/* src/dist/exact_sum.h - the order-free exact reduction (contract:
 * "Order-free reduction of micro-batch results").
 *
 * K float32 arrays of n elements, x_0..x_{K-1}, are summed elementwise so
 * that each result depends only on the multiset {x_0[i], ..., x_{K-1}[i]}:
 * never on the order of the inputs, how they are grouped, or over how many
 * processes the partial sums are formed. Two exchanges, each an operation
 * that is associative and commutative on integers:
 *
 *   1. codes:  c[i] = max_k code(x_k[i])            (one byte per element)
 *   2. sums:   S[i] = sum_k term(x_k[i], c[i], K)   (a W-bit integer per element)
 *
 * then one rounding, out[i] = finish(S[i], c[i], K). Every process can form
 * its own partial max and partial sum over the inputs it holds, and any
 * combination of those partials (MPI_MAX / MPI_SUM in any tree) gives the
 * same c and S, hence the same bits.
 *
 *     uint8_t c[n] = {0};  int64_t s[n] = {0};
 *     for (k) sb_exact_codes_max(x[k], n, c);     // then MAX across processes
 *     for (k) sb_exact_add(x[k], n, c, K, s);     // then SUM across processes
 *     sb_exact_finish(s, c, n, K, out);
 *
 * The code of x (a byte): 0 for -0.0; 1 for +0.0 and subnormals; the biased
 * exponent 1..254 for normal numbers; 255 for inf and NaN. So c[i] == 0
 * exactly when every input is -0, and c[i] - 150 is the exponent of the unit
 * in the last place (ulp) of the largest-magnitude finite input.
 *
 * Fixed point: with G = W - 25 - ceil(log2 K) guard bits, where the word
 * width W is 32 for K <= 128 and 64 for larger K, every finite input is
 * rounded (to nearest, ties to even) to an integer multiple of 2^Q, Q =
 * (c - 150) - G. Inputs whose ulp is at least 2^Q (every input within G
 * binades of the largest, the largest itself included) are represented
 * exactly.
 *
 * Proof that W bits hold every partial sum: a finite input has at most a
 * 24-bit significand and its ulp is at most 2^(c-150), so |x| < 2^24 *
 * 2^(c-150) = 2^(24+G) * 2^Q and its term t satisfies |t| <= 2^(24+G) -
 * 2^G < 2^(24+G) (rounding cannot reach the bound: the bound is a multiple
 * of 2^Q above |x|). A sum of at most K terms is below K * 2^(24+G) <=
 * 2^(ceil(log2 K) + 24 + G) = 2^(W-1) in magnitude: every partial sum over
 * any subset fits a signed W-bit word, so there is no overflow anywhere, in
 * any grouping, and integer addition is exact, associative and commutative.
 *
 * Error bound: let s be the exact real sum of the inputs, T = S * 2^Q the
 * sum of the rounded terms, u = 2^(c-150) the ulp of the largest input.
 * Each term is off by at most 2^(Q-1) = u * 2^-(G+1), and the terms of the
 * inputs with the largest exponent are exact, so |T - s| <= (K-1) * u *
 * 2^-(G+1); the result is T correctly rounded to float32 (ties to even,
 * subnormals kept, +-inf on overflow), so
 *     |out - s| <= 1/2 ulp(out) + (K-1) * u * 2^-(G+1).
 * When all inputs lie within G binades of the largest, T == s and out is
 * the correctly rounded exact sum. K = 1: G >= 7 and the single input is its
 * own largest, so T == x and out == x bit for bit (also -0, subnormals,
 * inf and NaN: NaN comes back as the canonical quiet NaN 0x7fc00000, and
 * NaN payloads are not part of results).
 *
 * Zeros and non-finite values: c == 0 (all inputs -0) gives -0; S == 0
 * otherwise gives +0 (as IEEE's x + -x). c == 255 (some input inf or NaN):
 * the terms count them instead, t = 1 for +inf, B for -inf, B^2 for NaN and
 * 0 for finite inputs, B = K + 1, so S = P + B*M + B^2*N decodes the counts
 * exactly (B^3 <= 2^(W-1) for the K this accepts); the result is NaN when
 * N > 0 or both P and M are, else +inf or -inf: what the exact sum is.
 */
#ifndef SAMEBITS_DIST_EXACT_SUM_H
#define SAMEBITS_DIST_EXACT_SUM_H

#include <stddef.h>
#include <stdint.h>
#include "samebits/status.h"

/* The most inputs one reduction takes (B^3 = (K+1)^3 <= 2^63). */
#define SB_EXACT_MAX_TERMS (INT64_C(1) << 20)

/* Checks 1 <= k <= SB_EXACT_MAX_TERMS; fn names the caller in the message. */
sb_status sb_exact_check_terms(const char *fn, int64_t k);
/* W: 32 for k <= 128, else 64. Partial sums fit a signed word of this width. */
int sb_exact_word_bits(int64_t k);
/* G = W - 25 - ceil(log2 k). */
int sb_exact_guard_bits(int64_t k);
uint8_t sb_exact_code(float x);

/* codes[i] = max(codes[i], code(x[i])). Start from zeros. */
void sb_exact_codes_max(const float *x, size_t n, uint8_t *codes);
/* acc[i] += term(x[i], codes[i], k); codes are the agreed (global) ones. */
void sb_exact_add(const float *x, size_t n, const uint8_t *codes, int64_t k, int64_t *acc);
/* out[i] = the rounded result of acc[i] (the global sums). */
void sb_exact_finish(const int64_t *acc, const uint8_t *codes, size_t n, int64_t k, float *out);

/* The whole reduction in one process: out[i] = sum over k of xs[k][i].
 * SB_ERR_ARG if k is out of range, SB_ERR_NOMEM; out may alias no input. */
sb_status sb_exact_sum(const float *const *xs, int64_t k, size_t n, float *out);

#endif
