/* Reference bincount and histc (contract section 18, "bincount and
 * histc"). Counting is integer work (int64, exact in any order); a weighted
 * bincount adds each bin's weights in ascending position, as PyTorch's CPU
 * kernel does. */
#include "ref/ref_histogram.h"

void sb_ref_bincount(int64_t n, const int64_t *x, int64_t xs, const float *weights, int64_t ws,
                     int64_t nbins, int64_t *counts, int64_t cs, float *sums, int64_t ss) {
    for (int64_t b = 0; b < nbins; b++) {
        if (weights) sums[b * ss] = 0.0f;
        else counts[b * cs] = 0;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t b = x[i * xs];
        if (weights) sums[b * ss] = sums[b * ss] + weights[i * ws];
        else counts[b * cs] += 1;
    }
}

int64_t sb_ref_histc_bin(float v, int64_t bins, float lo, float hi) {
    if (!(v >= lo && v <= hi)) return -1; /* NaN fails both comparisons */
    float q = ((v - lo) * (float)bins) / (hi - lo);
    /* q is in [0, bins] up to rounding; a range so wide that hi - lo
     * overflows gives inf / inf = NaN, which goes to the last bin instead of
     * an undefined conversion */
    if (!(q < (float)bins)) return bins - 1;
    return (int64_t)q;
}

void sb_ref_histc(int64_t n, const float *x, int64_t xs, int64_t bins, float lo, float hi,
                  int64_t *counts, float *out, int64_t os) {
    /* counted in int64 and converted once, so that no count stalls at 2^24 */
    for (int64_t b = 0; b < bins; b++) counts[b] = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t b = sb_ref_histc_bin(x[i * xs], bins, lo, hi);
        if (b >= 0) counts[b]++;
    }
    for (int64_t b = 0; b < bins; b++) out[b * os] = (float)counts[b];
}
