/* Shared test oracles (see oracle.h) that need only libc: the portability
 * matrix links them into the tests it cross-builds (mk/portability.mk),
 * whose sysroots have no MPFR. The MPFR oracle is in oracle_mpfr.c. */
#include "oracle.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

float oracle_canonical_sum(const float *x, int64_t n) {
    if (n == 0) return 0.0f;
    if (n > 8192) {
        int64_t nb = (n + 8191) / 8192;
        float *blocks = malloc((size_t)nb * sizeof *blocks);
        for (int64_t b = 0; b < nb; b++)
            blocks[b] = oracle_canonical_sum(x + b * 8192, n - b * 8192 < 8192 ? n - b * 8192 : 8192);
        float r = oracle_canonical_sum(blocks, nb);
        free(blocks);
        return r;
    }
    float lane[32];
    for (int j = 0; j < 32; j++) lane[j] = -0.0f;
    for (int64_t i = 0; i < n; i++) lane[i % 32] += x[i];
    for (int s = 16; s >= 1; s /= 2)
        for (int j = 0; j < s; j++) lane[j] += lane[j + s];
    return lane[0];
}

int oracle_same(float a, float b) {
    uint32_t ua, ub;
    memcpy(&ua, &a, 4);
    memcpy(&ub, &b, 4);
    return ua == ub || (isnan(a) && isnan(b));
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

void oracle_seed(uint64_t seed) { rng_state = seed; }

uint64_t oracle_rand(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

float oracle_rand_float(void) {
    float m = 1.0f + (float)(oracle_rand() % 0x800000) / 8388608.0f;
    float v = ldexpf(m, (int)(oracle_rand() % 17) - 8);
    return oracle_rand() & 1 ? -v : v;
}

sb_tensor *oracle_tensor(sb_dtype dtype, int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    int64_t shape[4] = {d0, d1, d2, d3};
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, dtype, ndim, shape) != SB_OK) {
        fprintf(stderr, "tensor allocation failed: %s\n", sb_last_error());
        exit(2);
    }
    return t;
}

void oracle_fill_rand(sb_tensor *t) {
    float *f = t->data;
    for (int64_t i = 0; i < sb_tensor_numel(t); i++) f[i] = oracle_rand_float();
}
