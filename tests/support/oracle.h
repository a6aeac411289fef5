/* tests/support/oracle.h - independent restatements of the contract that
 * several tests compare the library against, and their input generators. */
#ifndef SAMEBITS_TEST_ORACLE_H
#define SAMEBITS_TEST_ORACLE_H

#include <stdint.h>
#include "samebits.h"

/* acc = +0; acc = fma(a[p], b[p], acc) for p ascending, in exact binary32
 * emulated by MPFR (the caller sets emin -148 / emax 128 for gradual
 * underflow via mpfr_subnormalize). */
float oracle_fma_chain(int64_t k, const float *a, const float *b);

/* The canonical sum restated recursively from its definition: 32 lanes from
 * -0, element i into lane i mod 32, tree fold 16..1; blocks of 8192 summed
 * again by the same rule. */
float oracle_canonical_sum(const float *x, int64_t n);

/* Bitwise equal, or both NaN (NaN payloads are not part of the contract). */
int oracle_same(float a, float b);

/* A xorshift64 stream: each test seeds it so its inputs stay fixed. */
void oracle_seed(uint64_t seed);
uint64_t oracle_rand(void);
/* Values spread over 2^-8..2^8 with both signs, so rounding depends on order. */
float oracle_rand_float(void);

/* A new tensor of up to 4 dims (exits the test on allocation failure). */
sb_tensor *oracle_tensor(sb_dtype dtype, int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3);
void oracle_fill_rand(sb_tensor *t);

#endif
