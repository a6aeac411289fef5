/* The MPFR oracle of oracle.h (the rest, libc only, is in oracle.c). */
#include <mpfr.h>
#include "oracle.h"

float oracle_fma_chain(int64_t k, const float *a, const float *b) {
    mpfr_t acc, x, y;
    mpfr_inits2(24, acc, x, y, (mpfr_ptr)0);
    mpfr_set_zero(acc, +1);
    for (int64_t p = 0; p < k; p++) {
        mpfr_set_flt(x, a[p], MPFR_RNDN);
        mpfr_set_flt(y, b[p], MPFR_RNDN);
        int t = mpfr_fma(acc, x, y, acc, MPFR_RNDN);
        mpfr_subnormalize(acc, t, MPFR_RNDN);
    }
    float r = mpfr_get_flt(acc, MPFR_RNDN);
    mpfr_clears(acc, x, y, (mpfr_ptr)0);
    return r;
}
