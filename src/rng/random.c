/* samebits' random mappings: Philox words -> uniform, normal, bounded
 * integers and permutations (contract: docs/CONTRACT.md).
 *
 * Each element is a pure function of (seed, stream, index), so the array
 * functions below are loops of the *_at functions and any split of the
 * index range over threads gives the same bits. */
#include <math.h>
#include "samebits/math.h"
#include "samebits/random.h"
#include "core/fpenv.h"
#include "core/internal.h"

/* 24 bits: every value is a float exactly, and w >> 8 < 2^24 keeps it < 1. */
static inline float word_to_unit(uint32_t w) { return (float)(w >> 8) * 0x1p-24f; }

float sb_rng_uniform_at(uint64_t seed, uint64_t stream, uint64_t index) {
    SB_FPENV_GUARD();
    uint32_t w[4];
    sb_rng_block(seed, stream, index, SB_RNG_DOMAIN_UNIFORM, w);
    return word_to_unit(w[0]);
}

float sb_rng_normal_at(uint64_t seed, uint64_t stream, uint64_t index) {
    SB_FPENV_GUARD();
    /* Attempt a uses words 2(a mod 2), 2(a mod 2)+1 of normal block a / 2. */
    for (unsigned b = 0; b < SB_RNG_NORMAL_BLOCKS; b++) {
        uint32_t w[4];
        sb_rng_block(seed, stream, index, SB_RNG_DOMAIN_NORMAL + b, w);
        for (int h = 0; h < 2; h++) {
            /* 2u - 1 is exact: a multiple of 2^-23 in [-1, 1). */
            float u = 2.0f * word_to_unit(w[2 * h]) - 1.0f;
            float v = 2.0f * word_to_unit(w[2 * h + 1]) - 1.0f;
            float uu = u * u;
            float vv = v * v;
            float s = uu + vv;
            if (s >= 1.0f || s == 0.0f) continue;
            float l = sb_logf(s);
            float r = sqrtf((-2.0f * l) / s);
            return u * r;
        }
    }
    return 0.0f; /* all 254 attempts rejected: probability below 1e-169 */
}

uint32_t sb_rng_bounded_at(uint64_t seed, uint64_t stream, uint64_t index, uint32_t bound) {
    SB_FPENV_GUARD();
    if (bound == 0) return 0;
    /* Accept x iff lo32(x * bound) >= 2^32 mod bound: then every result
     * value has exactly floor(2^32 / bound) accepted preimages. */
    uint32_t threshold = (uint32_t)(0u - bound) % bound;
    for (unsigned b = 0; b < SB_RNG_BOUNDED_BLOCKS; b++) {
        uint32_t w[4];
        sb_rng_block(seed, stream, index, SB_RNG_DOMAIN_BOUNDED + b, w);
        for (int k = 0; k < 4; k++) {
            uint64_t m = (uint64_t)w[k] * bound;
            if ((uint32_t)m >= threshold) return (uint32_t)(m >> 32);
        }
    }
    return 0; /* all 512 words rejected: probability below 2^-512 */
}

sb_rng sb_rng_make(uint64_t seed, uint64_t stream) {
    SB_FPENV_GUARD();
    sb_rng r = {seed, stream, 0};
    return r;
}

static sb_status check_fill(const char *fn, const sb_rng *rng, uint64_t index, const void *out,
                            int64_t n) {
    if (!rng) return sb_fail(SB_ERR_NULL, "%s: rng is NULL", fn);
    if (n < 0) return sb_fail(SB_ERR_ARG, "%s: n = %lld is negative", fn, (long long)n);
    if (n > 0 && !out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    if (index > SB_RNG_INDEX_LIMIT || (uint64_t)n > SB_RNG_INDEX_LIMIT - index)
        return sb_fail(SB_ERR_RANGE,
                       "%s: elements [%llu, %llu + %lld) pass the index limit 2^56", fn,
                       (unsigned long long)index, (unsigned long long)index, (long long)n);
    return SB_OK;
}

sb_status sb_rng_uniform(const sb_rng *rng, uint64_t index, float *out, int64_t n) {
    SB_FPENV_GUARD();
    SB_TRY(check_fill("sb_rng_uniform", rng, index, out, n));
    for (int64_t j = 0; j < n; j++)
        out[j] = sb_rng_uniform_at(rng->seed, rng->stream, index + (uint64_t)j);
    return SB_OK;
}

sb_status sb_rng_uniform_range(const sb_rng *rng, uint64_t index, float lo, float hi,
                               float *out, int64_t n) {
    SB_FPENV_GUARD();
    const char *fn = "sb_rng_uniform_range";
    SB_TRY(check_fill(fn, rng, index, out, n));
    if (!isfinite(lo) || !isfinite(hi) || !(lo <= hi))
        return sb_fail(SB_ERR_ARG, "%s: need finite lo <= hi, got lo = %g, hi = %g", fn,
                       (double)lo, (double)hi);
    float d = hi - lo;
    if (!isfinite(d))
        return sb_fail(SB_ERR_ARG, "%s: hi - lo overflows for lo = %g, hi = %g", fn, (double)lo,
                       (double)hi);
    for (int64_t j = 0; j < n; j++) {
        float t = d * sb_rng_uniform_at(rng->seed, rng->stream, index + (uint64_t)j);
        out[j] = lo + t;
    }
    return SB_OK;
}

sb_status sb_rng_normal(const sb_rng *rng, uint64_t index, float mean, float std, float *out,
                        int64_t n) {
    SB_FPENV_GUARD();
    const char *fn = "sb_rng_normal";
    SB_TRY(check_fill(fn, rng, index, out, n));
    if (!isfinite(mean) || !isfinite(std) || std < 0.0f)
        return sb_fail(SB_ERR_ARG, "%s: need finite mean and std >= 0, got mean = %g, std = %g",
                       fn, (double)mean, (double)std);
    for (int64_t j = 0; j < n; j++) {
        float t = std * sb_rng_normal_at(rng->seed, rng->stream, index + (uint64_t)j);
        out[j] = mean + t;
    }
    return SB_OK;
}

sb_status sb_rng_bounded(const sb_rng *rng, uint64_t index, uint32_t bound, uint32_t *out,
                         int64_t n) {
    SB_FPENV_GUARD();
    const char *fn = "sb_rng_bounded";
    SB_TRY(check_fill(fn, rng, index, out, n));
    if (bound == 0) return sb_fail(SB_ERR_ARG, "%s: bound is 0 (need >= 1)", fn);
    for (int64_t j = 0; j < n; j++)
        out[j] = sb_rng_bounded_at(rng->seed, rng->stream, index + (uint64_t)j, bound);
    return SB_OK;
}

sb_status sb_rng_next_uniform(sb_rng *rng, float *out, int64_t n) {
    SB_FPENV_GUARD();
    if (!rng) return sb_fail(SB_ERR_NULL, "sb_rng_next_uniform: rng is NULL");
    sb_status st = sb_rng_uniform(rng, rng->counter, out, n);
    if (st != SB_OK) return sb_fail_as("sb_rng_next_uniform", st);
    rng->counter += (uint64_t)n;
    return SB_OK;
}

sb_status sb_rng_next_normal(sb_rng *rng, float mean, float std, float *out, int64_t n) {
    SB_FPENV_GUARD();
    if (!rng) return sb_fail(SB_ERR_NULL, "sb_rng_next_normal: rng is NULL");
    sb_status st = sb_rng_normal(rng, rng->counter, mean, std, out, n);
    if (st != SB_OK) return sb_fail_as("sb_rng_next_normal", st);
    rng->counter += (uint64_t)n;
    return SB_OK;
}

sb_status sb_rng_next_bounded(sb_rng *rng, uint32_t bound, uint32_t *out, int64_t n) {
    SB_FPENV_GUARD();
    if (!rng) return sb_fail(SB_ERR_NULL, "sb_rng_next_bounded: rng is NULL");
    sb_status st = sb_rng_bounded(rng, rng->counter, bound, out, n);
    if (st != SB_OK) return sb_fail_as("sb_rng_next_bounded", st);
    rng->counter += (uint64_t)n;
    return SB_OK;
}

sb_status sb_rng_permutation(uint64_t seed, uint64_t stream, int64_t n, int64_t *perm) {
    SB_FPENV_GUARD();
    const char *fn = "sb_rng_permutation";
    if (n < 0 || n > (int64_t)UINT32_MAX)
        return sb_fail(SB_ERR_ARG, "%s: n = %lld is outside [0, 2^32 - 1]", fn, (long long)n);
    if (n > 0 && !perm) return sb_fail(SB_ERR_NULL, "%s: perm is NULL", fn);
    for (int64_t k = 0; k < n; k++) perm[k] = k;
    for (int64_t i = n - 1; i >= 1; i--) {
        int64_t j = sb_rng_bounded_at(seed, stream, (uint64_t)i, (uint32_t)(i + 1));
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    return SB_OK;
}
