/* tests/support/fastpath.h - the configurations a differential test of the
 * fast CPU backend runs: every ISA level this machine supports times the
 * thread counts 1, 2, 3, 4 and 7 (fewer under SB_TEST_QUICK; the list
 * SB_TEST_THREADS="1,2,3" replaces them).
 *
 *     for (int c = 0; c < sb_test_config_count(); c++) {
 *         sb_test_config_apply(c);
 *         ... call the public op, compare with the sb_ref_* kernel ...
 *         CHECK_BITS(..., "%s: ...", sb_test_config_name(c));
 *     }
 *     sb_test_config_reset();
 */
#ifndef SB_TEST_FASTPATH_H
#define SB_TEST_FASTPATH_H

int sb_test_config_count(void);
/* Sets the ISA level and thread count of configuration c. */
void sb_test_config_apply(int c);
/* "avx2/3t" */
const char *sb_test_config_name(int c);
/* Back to the best level and the default thread count. */
void sb_test_config_reset(void);

/* Test data: a xorshift stream (each test seeds its own), uniform floats,
 * and a mix in which one value in 16 is special (+-0, +-inf, NaNs with
 * payloads, subnormals, +-FLT_MAX, +-1, the smallest normals), one huge,
 * one tiny, and the rest uniform in [-ordinary, ordinary]. */
#include <stdint.h>
/* Sets the stream's state (0 picks a fixed default); returns the old one. */
uint64_t sb_test_seed(uint64_t seed);
uint32_t sb_test_rand32(void);
float sb_test_unif(float lo, float hi);
float sb_test_from_bits(uint32_t u);
float sb_test_adversarial(float ordinary);

#endif
