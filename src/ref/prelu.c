/* Reference kernels for PReLU (contract section 9, "PReLU"): PyTorch's CPU
 * formula `x > 0 ? x : w * x` per element, and the weight gradient as one
 * canonical sum per channel in row-major order, so the bits depend neither
 * on threads nor on the machine. No FMA (-ffp-contract=off). The
 * per-element rules are ref/prelu_terms.h, shared with the OpenCL kernels. */
#include "core/canonical_sum.h"
#include "core/internal.h"
#include "ref/prelu_terms.h"
#include "ref/ref_pointwise.h"

// x, y are (outer, c, inner); w is (c,)
void sb_ref_prelu_forward(int64_t outer, int64_t c, int64_t inner, const float *x,
                          const float *w, float *y) {
    for (int64_t o = 0; o < outer; o++)
        for (int64_t ch = 0; ch < c; ch++) {
            const float wc = w[ch];
            const int64_t base = (o * c + ch) * inner;
            for (int64_t j = 0; j < inner; j++) y[base + j] = sb_prelu_y(x[base + j], wc);
        }
}

// x, dy, dx are (outer, c, inner); w, dw are (c,)
void sb_ref_prelu_backward(int64_t outer, int64_t c, int64_t inner, const float *x,
                           const float *w, const float *dy, float *dx, float *dw) {
    /* One pass per channel: each position is read (x, dy) before dx is
     * written there, so dx may be dy. */
    for (int64_t ch = 0; ch < c; ch++) {
        const float wc = w[ch];
        sb_sum_acc acc;
        sb_sum_init(&acc);
        for (int64_t o = 0; o < outer; o++) {
            const int64_t base = (o * c + ch) * inner;
            for (int64_t j = 0; j < inner; j++) {
                const float v = x[base + j], g = dy[base + j];
                if (dw) sb_sum_add(&acc, sb_prelu_dw_term(v, g));
                if (dx) dx[base + j] = sb_prelu_dx(v, wc, g);
            }
        }
        if (dw) dw[ch] = sb_sum_result(&acc);
    }
}
