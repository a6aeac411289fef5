/* The order-free exact reduction: codes, fixed-point terms, one rounding.
 * The definition, the proof that no partial sum overflows and the error
 * bound are in exact_sum.h; everything here is integer arithmetic on the
 * float's bits, so no floating-point environment can change it. */
#include <stdlib.h>
#include "core/internal.h"
#include "dist/exact_sum.h"

static uint32_t bits_of(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float float_of(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

sb_status sb_exact_check_terms(const char *fn, int64_t k) {
    if (k < 1 || k > SB_EXACT_MAX_TERMS)
        return sb_fail(SB_ERR_ARG, "%s: %lld inputs to the exact reduction: must be 1..%lld", fn, (long long)k,
                       (long long)SB_EXACT_MAX_TERMS);
    return SB_OK;
}

static int ceil_log2(int64_t k) {
    int l = 0;
    while ((INT64_C(1) << l) < k) l++;
    return l;
}

int sb_exact_word_bits(int64_t k) { return k <= 128 ? 32 : 64; }

int sb_exact_guard_bits(int64_t k) { return sb_exact_word_bits(k) - 25 - ceil_log2(k); }

uint8_t sb_exact_code(float x) {
    uint32_t u = bits_of(x), b = (u >> 23) & 0xffu;
    /* b for normal numbers (1..254) and inf/NaN (255); 1 for +0 and
     * subnormals; 0 only for -0. Branch-free, so the loop vectorises. */
    uint32_t low = (u != 0x80000000u);
    return (uint8_t)(b ? b : low);
}

void sb_exact_codes_max(const float *x, size_t n, uint8_t *codes) {
    for (size_t i = 0; i < n; i++) {
        uint8_t c = sb_exact_code(x[i]);
        codes[i] = c > codes[i] ? c : codes[i];
    }
}

/* The fixed-point term of a finite x at scale 2^q: x / 2^q rounded to the
 * nearest integer, ties to even. Without branches (the exponents of a
 * gradient's elements make any branch unpredictable): shift left by
 * L = max(e - q, 0) (at most G bits: exact), or right by R = min(max(q - e,
 * 0), 25) with the ties-to-even bias 2^(R-1) - 1 + (bit R of m) when R > 0;
 * R = 25 already rounds every m < 2^24 to 0, as any larger shift would. */
static int64_t fixed_term(uint32_t u, int q) {
    uint32_t b = (u >> 23) & 0xffu, frac = u & 0x7fffffu;
    uint64_t m = frac | ((uint64_t)(b != 0) << 23); /* x = +-m * 2^e */
    int e = (int)b + (b == 0) - 150;
    int d = q - e; /* >= -G (exact_sum.h) */
    int left = d < 0 ? -d : 0, right = d > 25 ? 25 : d > 0 ? d : 0;
    uint64_t bias = ((UINT64_C(1) << right >> 1) - 1 + ((m >> right) & 1)) & (UINT64_C(0) - (uint64_t)(right > 0));
    uint64_t t = ((m << left) + bias) >> right;
    uint64_t neg = UINT64_C(0) - (uint64_t)(u >> 31);
    return (int64_t)((t ^ neg) - neg);
}

/* Counts of the non-finite inputs, packed P + B*M + B^2*N (B = k + 1). */
static int64_t nonfinite_term(uint32_t u, int64_t k) {
    int64_t b = k + 1;
    if ((u & 0x7fffffffu) > 0x7f800000u) return b * b; /* NaN */
    if ((u & 0x7fffffffu) == 0x7f800000u) return (u >> 31) ? b : 1;
    return 0;
}

void sb_exact_add(const float *x, size_t n, const uint8_t *codes, int64_t k, int64_t *acc) {
    int g = sb_exact_guard_bits(k);
    for (size_t i = 0; i < n; i++) {
        uint32_t u = bits_of(x[i]);
        if (codes[i] == 255) acc[i] += nonfinite_term(u, k);
        else if (codes[i] != 0) acc[i] += fixed_term(u, (int)codes[i] - 150 - g);
    }
}

/* Leading zero bits of v > 0. */
static int msb_zeros(uint64_t v) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_clzll(v);
#else
    int z = 0;
    while (!(v >> 63)) v <<= 1, z++;
    return z;
#endif
}

/* s * 2^q correctly rounded to float32 (ties to even, subnormals, inf),
 * with the same branch-free shift-and-bias rounding as fixed_term. */
static float round_fixed(int64_t s, int q) {
    uint64_t neg = UINT64_C(0) - (uint64_t)(s < 0);
    uint64_t mag = ((uint64_t)s ^ neg) - neg;
    int p = 63 - msb_zeros(mag | 1); /* mag in [2^p, 2^(p+1)) */
    int ulp = p + q - 23 > -149 ? p + q - 23 : -149;
    int d = ulp - q; /* bits to drop; below 64 (exact_sum.h bounds q and p) */
    int left = d < 0 ? -d : 0, right = d > 0 ? d : 0;
    uint64_t bias = ((UINT64_C(1) << right >> 1) - 1 + ((mag >> right) & 1)) & (UINT64_C(0) - (uint64_t)(right > 0));
    uint64_t m = ((mag << left) + bias) >> right;
    /* value m * 2^ulp with m <= 2^24: biased exponent ulp + 150; a carry to
     * 2^24 or a subnormal m < 2^23 encode correctly by addition. */
    uint64_t enc = ((uint64_t)(ulp + 150 - 1) << 23) + m;
    enc = enc < 0x7f800000u ? enc : 0x7f800000u;
    enc = mag ? enc : 0; /* S == 0: +0 */
    return float_of((uint32_t)enc | (uint32_t)(neg & 0x80000000u));
}

static float nonfinite_result(int64_t s, int64_t k) {
    int64_t b = k + 1, nan = s / (b * b), neg = (s % (b * b)) / b, pos = s % b;
    if (nan > 0 || (pos > 0 && neg > 0)) return float_of(0x7fc00000u);
    return float_of(neg > 0 ? 0xff800000u : 0x7f800000u);
}

void sb_exact_finish(const int64_t *acc, const uint8_t *codes, size_t n, int64_t k, float *out) {
    int g = sb_exact_guard_bits(k);
    for (size_t i = 0; i < n; i++) {
        if (codes[i] == 255) out[i] = nonfinite_result(acc[i], k);
        else if (codes[i] == 0) out[i] = float_of(0x80000000u);
        else out[i] = round_fixed(acc[i], (int)codes[i] - 150 - g);
    }
}

sb_status sb_exact_sum(const float *const *xs, int64_t k, size_t n, float *out) {
    const char *fn = "sb_exact_sum";
    SB_TRY(sb_exact_check_terms(fn, k));
    if (!xs || !out) return sb_fail(SB_ERR_NULL, "%s: NULL argument", fn);
    for (int64_t j = 0; j < k; j++)
        if (!xs[j] && n) return sb_fail(SB_ERR_NULL, "%s: input %lld is NULL", fn, (long long)j);
    if (n == 0) return SB_OK;
    uint8_t *codes = sb_calloc(fn, n, sizeof *codes);
    int64_t *acc = sb_calloc(fn, n, sizeof *acc);
    if (!codes || !acc) { free(codes); free(acc); return SB_ERR_NOMEM; }
    for (int64_t j = 0; j < k; j++) sb_exact_codes_max(xs[j], n, codes);
    for (int64_t j = 0; j < k; j++) sb_exact_add(xs[j], n, codes, k, acc);
    sb_exact_finish(acc, codes, n, k, out);
    free(codes);
    free(acc);
    return SB_OK;
}
