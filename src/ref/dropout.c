/* Reference dropout (contract: docs/CONTRACT.md, "Dropout").
 *
 * Element i's fate is a function of (seed, stream, offset + i) alone, so
 * any tiling of the tensor over threads drops the same elements. */
#include "samebits/random.h"
#include "core/internal.h"
#include "ref/ref_loss.h"

/* One float division, done once: the kept multiplier every element shares.
 * p == 1 keeps nothing, and 0 (not 1/0) makes the result x * 0. */
float sb_dropout_scale(float p) { return p == 1.0f ? 0.0f : 1.0f / (1.0f - p); }

void sb_ref_dropout_forward(const float *x, int64_t n, float p, bool train, uint64_t seed,
                            uint64_t stream, uint64_t offset, float *y, float *mask) {
    if (!train) {
        for (int64_t i = 0; i < n; i++) {
            y[i] = x[i];
            if (mask) mask[i] = 1.0f;
        }
        return;
    }
    float scale = sb_dropout_scale(p);
    for (int64_t i = 0; i < n; i++) {
        float u = sb_rng_uniform_at(seed, stream, offset + (uint64_t)i);
        float keep = u >= p ? 1.0f : 0.0f;
        /* x * (mask * scale), as PyTorch multiplies by its scaled noise. */
        y[i] = x[i] * (keep * scale);
        if (mask) mask[i] = keep;
    }
}

void sb_ref_dropout_backward(const float *dy, const float *mask, int64_t n, float p, bool train,
                             float *dx) {
    float scale = sb_dropout_scale(p);
    for (int64_t i = 0; i < n; i++) dx[i] = train ? dy[i] * (mask[i] * scale) : dy[i];
}
