/* src/gpu/kernels/dropout.cl - dropout forward and backward (contract
 * section 13, src/ref/dropout.c) in the portable dialect.
 *
 * Element i's fate is Philox4x32-10 of (seed, stream, offset + i) in the
 * uniform domain, exactly as on the CPU: the OpenCL program is dialect.h,
 * math_prelude.cl (the fixed-width integer types), src/rng/philox.c itself
 * (its #include lines removed at build time) and this file, so the device
 * runs the very source of the CPU's generator. Integer arithmetic only,
 * then one exact conversion: the same bits on every device. */

#define SB_DROPOUT_DOMAIN 0u /* SB_RNG_DOMAIN_UNIFORM (samebits/random.h) */

/* src/rng/random.c's word_to_unit: the top 24 bits of word 0 times 2^-24,
 * exact, in [0, 1). */
SB_INLINE float sb_dropout_uniform(SB_U64 seed, SB_U64 stream, SB_U64 index) {
    uint32_t w[4];
    sb_rng_block(seed, stream, index, SB_DROPOUT_DOMAIN, w);
    return (float)(w[0] >> 8) * 0x1p-24f;
}

/* y = x * (keep * scale), keep = (u >= p); scale = 1 / (1 - p) from the
 * host (sb_dropout_scale). Not training: y = x, mask = 1. */
SB_KERNEL sb_dropout_forward(SB_LONG n, float p, int train, float scale, SB_U64 seed,
                             SB_U64 stream, SB_U64 offset, SB_GLOBAL const float *x, SB_LONG x0,
                             SB_GLOBAL float *y, SB_LONG y0, int want_mask,
                             SB_GLOBAL float *mask, SB_LONG m0) {
    SB_FOR_EACH(i, n) {
        float keep = 1.0f, v = x[x0 + i];
        if (train) {
            keep = sb_dropout_uniform(seed, stream, offset + (SB_U64)i) >= p ? 1.0f : 0.0f;
            v = v * (keep * scale);
        }
        y[y0 + i] = v;
        if (want_mask) mask[m0 + i] = keep;
    }
}

// dx = dy * (mask * scale) when training, else dy
SB_KERNEL sb_dropout_backward(SB_LONG n, int train, float scale, SB_GLOBAL const float *dy,
                              SB_LONG dy0, SB_GLOBAL const float *mask, SB_LONG m0,
                              SB_GLOBAL float *dx, SB_LONG dx0) {
    SB_FOR_EACH(i, n) {
        dx[dx0 + i] = train ? dy[dy0 + i] * (mask[m0 + i] * scale) : dy[dy0 + i];
    }
}

/* keep[i] = 1 when element i is kept (u >= p), else 0: the flags another
 * kernel multiplies as keep * scale (attention's dropout, indexed like its
 * probabilities). */
SB_KERNEL sb_dropout_keep(SB_LONG n, float p, SB_U64 seed, SB_U64 stream, SB_U64 offset,
                          SB_GLOBAL float *keep, SB_LONG k0) {
    SB_FOR_EACH(i, n) keep[k0 + i] = sb_dropout_uniform(seed, stream, offset + (SB_U64)i) >= p ? 1.0f : 0.0f;
}
