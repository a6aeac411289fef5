/* src/cpu/exact_simd.h - the vector loops of the order-free exact reduction
 * (contract section 17), written once with the compiler's generic vector
 * types and included by exact_<isa>.c, which defines
 *
 *   SFX(name)    name with the ISA suffix
 *   EXACT_VB     bytes of one vector register (16, 32, 64)
 *   EXACT_LOAD_CODES(p), EXACT_STORE_CODES(p, v)
 *                the VB/4 code bytes at p widened to a vector of 32-bit
 *                lanes, and back (values <= 255): the set's zero-extend
 *                and pack instructions, which the generic conversion of a
 *                short byte vector does not reach
 *
 * and is compiled with its instruction set, so each lane operation becomes
 * that set's instruction (the per-lane variable shifts are vpsllvd/vpsrlvd
 * from AVX2 on; SSE2 emulates them). Every lane performs the reference's
 * per-element steps of core/exact_elem.h in 32-bit words, and the tails
 * call those steps, so every level gives the reference's bits:
 *
 * - codes: the byte code of each float, combined by max.
 * - terms, K <= 128 only (W = 32): every term and every partial sum fits a
 *   signed 32-bit word (exact_sum.h), and so does each intermediate here:
 *   m < 2^24 shifted left by at most G + 1 <= 8 bits (only c == 0 reaches
 *   G + 1, whose term is discarded) stays below 2^32, the bias is below
 *   2^24; the term is widened to the 64-bit accumulator.
 * - rounding, K <= 128 only: |S| < 2^31, so S's magnitude is a 32-bit
 *   word. With p = floor(log2 |S|) <= 30 and q = c - 150 - G, the bits to
 *   drop d = max(p - 23, -149 - q) - q lie in [-23, 8] (c >= 1), so the
 *   shifted magnitude and its bias stay below 2^31 + 2^8, and the encoded
 *   word ((ulp + 149) << 23) + m below 2^32 before the overflow clamp.
 *   Blocks holding a code 0 or 255 take the scalar steps.
 * Included only when the unit's ISA is compiled in. */
#include "core/exact_elem.h"

typedef uint32_t vu32 __attribute__((vector_size(EXACT_VB)));
typedef int32_t vi32 __attribute__((vector_size(EXACT_VB)));
typedef int64_t vi64 __attribute__((vector_size(2 * EXACT_VB)));
#define EXACT_VN ((int64_t)(EXACT_VB / 4))

static inline vu32 SFX(exact_load_u32)(const float *x) {
    vu32 v;
    memcpy(&v, x, sizeof v);
    return v;
}

static inline vu32 SFX(exact_load_codes)(const uint8_t *c) { return (vu32)EXACT_LOAD_CODES(c); }

/* all ones where the lane condition holds, else 0 */
#define EXACT_MASK(cond) ((vu32)(cond))

static inline vu32 SFX(exact_codes_of)(vu32 u) {
    vu32 b = (u >> 23) & 0xffu;
    vu32 low = EXACT_MASK(u != 0x80000000u) & EXACT_MASK(b == 0u) & 1u;
    return b | low;
}

void SFX(sb_exact_codes_max)(const float *x, int64_t n, uint8_t *codes) {
    int64_t i = 0;
    for (; i + EXACT_VN <= n; i += EXACT_VN) {
        vu32 c = SFX(exact_load_codes)(codes + i), v = SFX(exact_codes_of)(SFX(exact_load_u32)(x + i));
        vu32 gt = EXACT_MASK(v > c);
        EXACT_STORE_CODES(codes + i, (v & gt) | (c & ~gt));
    }
    for (; i < n; i++) {
        uint8_t c = sb_exact_code_of(sb_exact_bits(x[i]));
        codes[i] = c > codes[i] ? c : codes[i];
    }
}

void SFX(sb_exact_add32)(const float *x, int64_t n, const uint8_t *codes, int g, int64_t k, int64_t *acc) {
    const uint32_t base = (uint32_t)k + 1u; /* k <= 128: B^2 fits easily */
    int64_t i = 0;
    for (; i + EXACT_VN <= n; i += EXACT_VN) {
        vu32 u = SFX(exact_load_u32)(x + i), c = SFX(exact_load_codes)(codes + i);
        vu32 b = (u >> 23) & 0xffu;
        vu32 bz = EXACT_MASK(b == 0u);
        vu32 m = (u & 0x7fffffu) | (~bz & 0x800000u);
        /* d = q - e = (c - 150 - g) - (b + (b == 0) - 150) */
        vi32 d = (vi32)c - g - (vi32)b + (vi32)bz;
        vu32 dneg = EXACT_MASK(d < 0);
        vu32 left = (vu32)(-d) & dneg;
        vu32 pos = (vu32)d & ~dneg;
        vu32 big = EXACT_MASK(pos > 25u);
        vu32 right = (pos & ~big) | (25u & big);
        vu32 bias = ((((vu32){0} + 1u) << right >> 1) - 1u + ((m >> right) & 1u)) & EXACT_MASK(right > 0u);
        vu32 t = ((m << left) + bias) >> right;
        vu32 neg = (vu32)((vi32)u >> 31);
        t = (t ^ neg) - neg;
        vu32 mag = u & 0x7fffffffu;
        vu32 nan = EXACT_MASK(mag > 0x7f800000u), inf = EXACT_MASK(mag == 0x7f800000u);
        vu32 nf = (nan & (base * base)) | (inf & (neg & base)) | (inf & ~neg & 1u);
        vu32 c255 = EXACT_MASK(c == 255u), c0 = EXACT_MASK(c == 0u);
        vi32 term = (vi32)((nf & c255) | (t & ~c255 & ~c0));
        vi64 a;
        memcpy(&a, acc + i, sizeof a);
        a += __builtin_convertvector(term, vi64);
        memcpy(acc + i, &a, sizeof a);
    }
    for (; i < n; i++) acc[i] += sb_exact_term(sb_exact_bits(x[i]), codes[i], g, k);
}

void SFX(sb_exact_finish32)(const int64_t *acc, const uint8_t *codes, int64_t n, int g, int64_t k, float *out) {
    int64_t i = 0;
    for (; i + EXACT_VN <= n; i += EXACT_VN) {
        vu32 c = SFX(exact_load_codes)(codes + i);
        vu32 special = EXACT_MASK(c == 0u) | EXACT_MASK(c == 255u);
        uint32_t any = 0;
        for (int j = 0; j < (int)EXACT_VN; j++) any |= special[j];
        if (any) { /* rare: -0 everywhere, or inf/NaN among the inputs */
            for (int64_t j = i; j < i + EXACT_VN; j++) out[j] = sb_exact_result(acc[j], codes[j], g, k);
            continue;
        }
        vi64 a;
        memcpy(&a, acc + i, sizeof a);
        vi32 s = __builtin_convertvector(a, vi32); /* |S| < 2^31 */
        vu32 neg = (vu32)(s >> 31);
        vu32 mag = ((vu32)s ^ neg) - neg;
        vu32 p = (vu32){0}; /* floor(log2 mag), 0 for mag <= 1 */
        for (uint32_t sh = 16; sh; sh >>= 1) p += EXACT_MASK((mag >> (p + sh)) != 0u) & sh;
        vi32 q = (vi32)c - 150 - g;
        vi32 ulp = (vi32)p + q - 23;
        ulp = ulp + ((vi32)EXACT_MASK(ulp < -149) & (-149 - ulp));
        vi32 d = ulp - q;
        vu32 dneg = EXACT_MASK(d < 0);
        vu32 left = (vu32)(-d) & dneg, right = (vu32)d & ~dneg;
        vu32 bias = ((((vu32){0} + 1u) << right >> 1) - 1u + ((mag >> right) & 1u)) & EXACT_MASK(right > 0u);
        vu32 m = ((mag << left) + bias) >> right;
        vu32 enc = ((vu32)(ulp + 149) << 23) + m;
        vu32 over = EXACT_MASK(enc > 0x7f800000u);
        enc = (enc & ~over) | (0x7f800000u & over);
        enc &= ~EXACT_MASK(mag == 0u); /* S == 0: +0 */
        enc |= neg & 0x80000000u;
        memcpy(out + i, &enc, sizeof enc);
    }
    for (; i < n; i++) out[i] = sb_exact_result(acc[i], codes[i], g, k);
}

#undef EXACT_MASK
#undef EXACT_VN
