/* samebits/random.h - counter-based random numbers (Philox4x32-10).
 *
 * Every random value samebits produces is a pure function of
 * (seed, stream, index): there is no hidden generator state, so element i
 * can be computed without computing elements 0..i-1, and any number of
 * threads, in any order, produce the same bits (contract section "Random
 * numbers", docs/CONTRACT.md).
 *
 * Block layout. The 128-bit Philox counter and 64-bit key of the block
 * (seed, stream, index, domain) are
 *     key     = { lo32(seed), hi32(seed) }
 *     counter = { lo32(index),
 *                 (hi32(index) & 0x00FFFFFF) | (domain << 24),
 *                 lo32(stream), hi32(stream) }
 * index is taken modulo 2^56 (SB_RNG_INDEX_LIMIT); the top byte of counter
 * word 1 is the domain, which keeps uniform, normal and bounded-integer
 * draws at the same index independent of one another:
 *     domain 0          uniform floats (word 0 of the block)
 *     domain 1..127     normal floats, attempt block 0..126
 *     domain 128..255   bounded integers, attempt block 0..127
 *
 * Mappings (exact; see the contract for the reasons):
 *   uniform  u = (w0 >> 8) * 0x1p-24f, with w0 word 0 of block
 *            (seed, stream, index, 0): a multiple of 2^-24 in [0, 1 - 2^-24],
 *            exact, all 24 bits significant.
 *   range    lo + (hi - lo) * u: d = hi - lo, t = d * u, r = lo + t, each
 *            rounded to nearest; r may equal hi by rounding.
 *   normal   Marsaglia polar method, one output per accepted pair.
 *   bounded  Lemire multiply-shift with rejection on 32-bit words.
 *   permutation  Fisher-Yates from the last position down.
 */
#ifndef SAMEBITS_RANDOM_H
#define SAMEBITS_RANDOM_H
#include <stdint.h>
#include "samebits/export.h"
#include "samebits/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Indices are 56-bit: the counter's top byte holds the domain. */
#define SB_RNG_INDEX_LIMIT ((uint64_t)1 << 56)
#define SB_RNG_DOMAIN_UNIFORM 0u
#define SB_RNG_DOMAIN_NORMAL 1u    /* + attempt block, 0..126 */
#define SB_RNG_NORMAL_BLOCKS 127u
#define SB_RNG_DOMAIN_BOUNDED 128u /* + attempt block, 0..127 */
#define SB_RNG_BOUNDED_BLOCKS 128u

/* The Philox4x32-10 bijection of Salmon et al. (SC'11, Random123):
 * 10 rounds, multipliers 0xD2511F53 / 0xCD9E8D57, Weyl key increments
 * 0x9E3779B9 / 0xBB67AE85. Pure function; out may not alias counter. */
SB_API void sb_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

/* The four words of block (seed, stream, index mod 2^56, domain & 0xFF). */
SB_API void sb_rng_block(uint64_t seed, uint64_t stream, uint64_t index, unsigned domain,
                  uint32_t out[4]);

/* Single elements, addressable by index (index taken modulo 2^56). */
SB_API float sb_rng_uniform_at(uint64_t seed, uint64_t stream, uint64_t index);
/* Standard normal element `index` (mean 0, variance 1); never -0.0f. */
SB_API float sb_rng_normal_at(uint64_t seed, uint64_t stream, uint64_t index);
/* Uniform integer in [0, bound), exactly unbiased; bound 0 gives 0. */
SB_API uint32_t sb_rng_bounded_at(uint64_t seed, uint64_t stream, uint64_t index, uint32_t bound);

/* A generator position. `counter` is a plain element index, so a
 * checkpoint is these three integers. */
typedef struct sb_rng {
    uint64_t seed;
    uint64_t stream;
    uint64_t counter;
} sb_rng;

/* {seed, stream, 0}. */
SB_API sb_rng sb_rng_make(uint64_t seed, uint64_t stream);

/* Fill out[j] = element (index + j) of the stream (rng->seed, rng->stream),
 * j = 0..n-1; rng->counter is neither read nor changed. Filling [0, n) at
 * once equals filling it in any chunks. Errors: NULL rng / out (n > 0),
 * n < 0, index + n > SB_RNG_INDEX_LIMIT, bad range arguments. */
SB_API sb_status sb_rng_uniform(const sb_rng *rng, uint64_t index, float *out, int64_t n);
/* out[j] = lo + (hi - lo) * u; lo, hi finite, lo <= hi, hi - lo finite. */
SB_API sb_status sb_rng_uniform_range(const sb_rng *rng, uint64_t index, float lo, float hi,
                               float *out, int64_t n);
/* out[j] = mean + std * z (two roundings, no fma); mean, std finite,
 * std >= 0. mean 0, std 1 gives z exactly. */
SB_API sb_status sb_rng_normal(const sb_rng *rng, uint64_t index, float mean, float std, float *out,
                        int64_t n);
/* out[j] = bounded element (index + j), bound >= 1. */
SB_API sb_status sb_rng_bounded(const sb_rng *rng, uint64_t index, uint32_t bound, uint32_t *out,
                         int64_t n);

/* Sequential use: the same as the calls above at index rng->counter, after
 * which rng->counter += n. On error the counter is unchanged. */
SB_API sb_status sb_rng_next_uniform(sb_rng *rng, float *out, int64_t n);
SB_API sb_status sb_rng_next_normal(sb_rng *rng, float mean, float std, float *out, int64_t n);
SB_API sb_status sb_rng_next_bounded(sb_rng *rng, uint32_t bound, uint32_t *out, int64_t n);

/* A uniformly random permutation of 0..n-1 (0 <= n <= 2^32 - 1):
 *     perm[k] = k;  for i = n-1 down to 1:
 *         j = sb_rng_bounded_at(seed, stream, i, i + 1); swap(perm[i], perm[j]) */
SB_API sb_status sb_rng_permutation(uint64_t seed, uint64_t stream, int64_t n, int64_t *perm);

#ifdef __cplusplus
}
#endif
#endif
