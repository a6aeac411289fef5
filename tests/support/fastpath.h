/* tests/support/fastpath.h - the configurations a differential test of the
 * fast CPU backend runs: every ISA level this machine supports times the
 * thread counts 1, 2, 3, 4 and 7 (fewer under SB_TEST_QUICK).
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

#endif
