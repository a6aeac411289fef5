/* The reference element loops of the optimizer updates (contract sections
 * "SGD" and "Adam / AdamW"): plain loops in the contract's order. The
 * validating entry points are sb_sgd_step / sb_adam_step (src/optim/); the
 * fast loops, with the same bits, are sb_cpu_sgd / sb_cpu_adam
 * (src/cpu/optim.c). */
#include <math.h>
#include "ref/ref_optim.h"

/* samebits' maximum: a NaN operand wins (the first if both), -0 < +0. */
static float maximum_f32(float a, float b) {
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    if (a == b) return signbit(a) ? b : a;
    return a > b ? a : b;
}

/* param, grad, m, v, vmax are (n); vmax is used only when f->amsgrad. The
 * reference element loop (the fast one is sb_cpu_adam, src/cpu/optim.c). */
void sb_ref_adam_update(const sb_adam_factors *f, bool first, int64_t n, float *param,
                        const float *grad, float *m_buf, float *v_buf, float *vmax_buf) {
    const float w1 = f->one_minus_beta1;
    // PyTorch's lerp picks its form by the weight so the result is exact at
    // both ends; w1 - 1 is exact (Sterbenz) when the large form is taken.
    const bool lerp_small = w1 < 0.5f;
    const float w1_minus_1 = w1 - 1.0f;
    for (int64_t i = 0; i < n; i++) {
        float p = param[i];
        float g = f->maximize ? -grad[i] : grad[i];
        float m = first ? 0.0f : m_buf[i];
        float v = first ? 0.0f : v_buf[i];
        if (f->use_weight_decay) {
            if (f->decoupled) p = p * f->decay;
            else g = fmaf(p, f->weight_decay, g);
        }
        float d = g - m;
        m = lerp_small ? fmaf(w1, d, m) : fmaf(w1_minus_1, d, g);
        v = v * f->beta2;
        v = v + (f->one_minus_beta2 * g) * g;
        float s = v;
        if (f->amsgrad) {
            float vmax = first ? 0.0f : vmax_buf[i];
            s = maximum_f32(vmax, v);
            vmax_buf[i] = s;
        }
        float denom = sqrtf(s) / f->bias_correction2_sqrt + f->eps;
        m_buf[i] = m;
        v_buf[i] = v;
        param[i] = p + (f->neg_step_size * m) / denom;
    }
}

/* param, grad, buf are (n); buf is used only when f->use_momentum. The
 * reference element loop (the fast one is sb_cpu_sgd, src/cpu/optim.c). */
void sb_ref_sgd_update(const sb_sgd_factors *f, bool nesterov, bool maximize, bool first,
                       int64_t n, float *param, const float *grad, float *buf) {
    for (int64_t i = 0; i < n; i++) {
        float p = param[i];
        float g = maximize ? -grad[i] : grad[i];
        if (f->use_weight_decay) g = fmaf(p, f->weight_decay, g);
        if (f->use_momentum) {
            // PyTorch clones the gradient into a fresh buffer on the first step,
            // so dampening does not apply to it.
            float b = first ? g : fmaf(g, f->one_minus_dampening, buf[i] * f->momentum);
            buf[i] = b;
            g = nesterov ? fmaf(b, f->momentum, g) : b;
        }
        param[i] = fmaf(g, f->neg_lr, p);
    }
}
