/* src/core/exact_elem.h - the per-element steps of the order-free exact
 * reduction (contract section 17; definition, proofs and error bound in
 * src/dist/exact_sum.h). Shared by the reference loops (src/dist/exact_sum.c,
 * the contract) and the fast loops of the CPU backend (src/cpu/exact.c),
 * which also use them for their scalar tails. Integer arithmetic on the
 * float's bits only, and branch-free, so no floating-point environment can
 * change a result and the loops that call them vectorise. Internal. */
#ifndef SAMEBITS_CORE_EXACT_ELEM_H
#define SAMEBITS_CORE_EXACT_ELEM_H

#include <stdint.h>
#include <string.h>

static inline uint32_t sb_exact_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float sb_exact_float(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* ceil(log2 k) for k >= 1. */
static inline int sb_exact_ceil_log2(int64_t k) {
    int l = 0;
    while ((INT64_C(1) << l) < k) l++;
    return l;
}

/* W: 32 for k <= 128, else 64; G = W - 25 - ceil(log2 k). */
static inline int sb_exact_word_bits_of(int64_t k) { return k <= 128 ? 32 : 64; }
static inline int sb_exact_guard_bits_of(int64_t k) { return sb_exact_word_bits_of(k) - 25 - sb_exact_ceil_log2(k); }

/* The code of a float's bits: b for normal numbers (1..254) and inf/NaN
 * (255); 1 for +0 and subnormals; 0 only for -0. */
static inline uint8_t sb_exact_code_of(uint32_t u) {
    uint32_t b = (u >> 23) & 0xffu;
    uint32_t low = (u != 0x80000000u);
    return (uint8_t)(b ? b : low);
}

/* The fixed-point term of a finite x at scale 2^q: x / 2^q rounded to the
 * nearest integer, ties to even. Without branches (the exponents of a
 * gradient's elements make any branch unpredictable): shift left by
 * L = max(e - q, 0) (at most G bits: exact), or right by R = min(max(q - e,
 * 0), 25) with the ties-to-even bias 2^(R-1) - 1 + (bit R of m) when R > 0;
 * R = 25 already rounds every m < 2^24 to 0, as any larger shift would. */
static inline int64_t sb_exact_fixed_term(uint32_t u, int q) {
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
static inline int64_t sb_exact_nonfinite_term(uint32_t u, int64_t k) {
    int64_t b = k + 1;
    if ((u & 0x7fffffffu) > 0x7f800000u) return b * b; /* NaN */
    if ((u & 0x7fffffffu) == 0x7f800000u) return (u >> 31) ? b : 1;
    return 0;
}

/* The term of x given the agreed code c: counts when c == 255, nothing
 * when c == 0 (every input is -0), else the fixed-point term (g: G). */
static inline int64_t sb_exact_term(uint32_t u, uint8_t c, int g, int64_t k) {
    if (c == 255) return sb_exact_nonfinite_term(u, k);
    return c ? sb_exact_fixed_term(u, (int)c - 150 - g) : 0;
}

/* Leading zero bits of v > 0. */
static inline int sb_exact_clz64(uint64_t v) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_clzll(v);
#else
    int z = 0;
    while (!(v >> 63)) v <<= 1, z++;
    return z;
#endif
}

/* s * 2^q correctly rounded to float32 (ties to even, subnormals, inf),
 * with the same branch-free shift-and-bias rounding as the terms. */
static inline float sb_exact_round_fixed(int64_t s, int q) {
    uint64_t neg = UINT64_C(0) - (uint64_t)(s < 0);
    uint64_t mag = ((uint64_t)s ^ neg) - neg;
    int p = 63 - sb_exact_clz64(mag | 1); /* mag in [2^p, 2^(p+1)) */
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
    return sb_exact_float((uint32_t)enc | (uint32_t)(neg & 0x80000000u));
}

static inline float sb_exact_nonfinite_result(int64_t s, int64_t k) {
    int64_t b = k + 1, nan = s / (b * b), neg = (s % (b * b)) / b, pos = s % b;
    if (nan > 0 || (pos > 0 && neg > 0)) return sb_exact_float(0x7fc00000u);
    return sb_exact_float(neg > 0 ? 0xff800000u : 0x7f800000u);
}

/* The result of the summed terms s given the agreed code c (g: G). */
static inline float sb_exact_result(int64_t s, uint8_t c, int g, int64_t k) {
    if (c == 255) return sb_exact_nonfinite_result(s, k);
    if (c == 0) return sb_exact_float(0x80000000u);
    return sb_exact_round_fixed(s, (int)c - 150 - g);
}

#endif
