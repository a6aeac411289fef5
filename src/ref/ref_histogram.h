/* src/ref/ref_histogram.h - reference kernels of bincount and histc
 * (contract section 18, "bincount and histc"). Internal: not installed.
 * Strides are in elements; arguments are validated by the caller. */
#ifndef SAMEBITS_REF_HISTOGRAM_H
#define SAMEBITS_REF_HISTOGRAM_H

#include <stdint.h>

/* counts[b] (nbins of them, zeroed first) = the number of i with x[i] == b;
 * or, with weights, sums[b] = +0 + the weights of those i in ascending i,
 * one float32 rounding per add. Exactly one of counts and sums is used. */
void sb_ref_bincount(int64_t n, const int64_t *x, int64_t xs, const float *weights, int64_t ws,
                     int64_t nbins, int64_t *counts, int64_t cs, float *sums, int64_t ss);

/* The bin of v for bins over [lo, hi] (lo < hi, both finite): -1 when v is
 * outside [lo, hi] or NaN, else (int64)(((v - lo) * bins) / (hi - lo)) with
 * three float32 roundings, a quotient of bins or more (or NaN, when hi - lo
 * overflows) mapped to bins - 1. */
int64_t sb_ref_histc_bin(float v, int64_t bins, float lo, float hi);

/* out[b] = (float) the number of the n elements x[i * xs] in bin b,
 * counted exactly in counts (scratch for `bins` int64) and converted once. */
void sb_ref_histc(int64_t n, const float *x, int64_t xs, int64_t bins, float lo, float hi,
                  int64_t *counts, float *out, int64_t os);

#endif
