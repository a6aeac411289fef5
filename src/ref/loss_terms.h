/* src/ref/loss_terms.h - the per-element terms of the elementwise losses
 * and their derivatives (contract section 11, "Elementwise losses"): one
 * text for the reference and every kernel. Each sequence is written in
 * its exact order of roundings; sb_expf, sb_logf and sb_log1pf are the
 * correctly rounded functions. The OpenCL math program embeds this file
 * after src/math (its #include lines are dropped there, so the block below
 * gives the enum values and the struct in OpenCL C). Not installed. */
#ifndef SAMEBITS_LOSS_TERMS_H
#define SAMEBITS_LOSS_TERMS_H

#ifdef __OPENCL_VERSION__
/* sb_elementwise_loss_kind's values and sb_elementwise_loss
 * (include/samebits/loss.h). */
#define SB_LOSS_MSE 0
#define SB_LOSS_L1 1
#define SB_LOSS_SMOOTH_L1 2
#define SB_LOSS_HUBER 3
#define SB_LOSS_BCE 4
#define SB_LOSS_BCE_WITH_LOGITS 5
#define SB_LOSS_KL_DIV 6
typedef struct sb_elementwise_loss {
    int kind;
    float beta;
    bool log_target;
} sb_elementwise_loss;
#else
#include "samebits/loss.h"
#include "samebits/math.h"
#endif

/* max(v, -100) as PyTorch's BCE clamps a log (a NaN stays NaN). */
static inline float sb_loss_clamp_log(float v) { return v < -100.0f ? -100.0f : v; }

/* log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)). */
static inline float sb_loss_log_sigmoid(float x) {
    float ax = x < 0.0f ? -x : x;
    float lo = x < 0.0f ? x : 0.0f;
    return lo - sb_log1pf(sb_expf(-ax));
}

/* The term of element (x, t); pw is BCE-with-logits' pos_weight (NAN-free
 * 1.0f when absent: has_pw = false skips it). */
static inline float sb_loss_term(const sb_elementwise_loss *p, float x, float t, bool has_pw,
                                 float pw) {
    switch (p->kind) {
    case SB_LOSS_MSE: {
        float d = x - t;
        return d * d;
    }
    case SB_LOSS_L1: {
        float d = x - t;
        return d < 0.0f ? -d : d;
    }
    case SB_LOSS_SMOOTH_L1: {
        float d = x - t, z = d < 0.0f ? -d : d;
        if (p->beta == 0.0f) return z;
        return z < p->beta ? ((0.5f * z) * z) / p->beta : z - 0.5f * p->beta;
    }
    case SB_LOSS_HUBER: {
        float d = x - t, z = d < 0.0f ? -d : d;
        return z < p->beta ? (0.5f * z) * z : p->beta * (z - 0.5f * p->beta);
    }
    case SB_LOSS_BCE:
        return (t - 1.0f) * sb_loss_clamp_log(sb_log1pf(-x)) - t * sb_loss_clamp_log(sb_logf(x));
    case SB_LOSS_BCE_WITH_LOGITS: {
        float ls = sb_loss_log_sigmoid(x);
        if (has_pw) ls = ls * ((pw - 1.0f) * t + 1.0f);
        return (1.0f - t) * x - ls;
    }
    case SB_LOSS_KL_DIV: {
        if (p->log_target) return sb_expf(t) * (t - x);
        float xlogy = t != t ? t : (t == 0.0f ? 0.0f : t * sb_logf(t));
        return xlogy - t * x;
    }
    }
    return 0.0f;
}

/* d term / dx times the upstream gradient g (already divided by the count
 * for MEAN), except MSE, whose factor norm (2, or 2/n for MEAN) comes in
 * PyTorch's order ((x - t) * norm) * g with g the undivided upstream value. */
static inline float sb_loss_grad(const sb_elementwise_loss *p, float x, float t, bool has_pw,
                                 float pw, float g, float mse_norm) {
    switch (p->kind) {
    case SB_LOSS_MSE:
        return ((x - t) * mse_norm) * g;
    case SB_LOSS_L1:
    case SB_LOSS_SMOOTH_L1: {
        float d = x - t;
        if (p->kind == SB_LOSS_L1 || p->beta == 0.0f) /* sgn(d) * g; sgn(+-0) = 0 */
            return (d > 0.0f ? 1.0f : d < 0.0f ? -1.0f : d != d ? d : 0.0f) * g;
        return d <= -p->beta ? -g : d >= p->beta ? g : (d * g) / p->beta;
    }
    case SB_LOSS_HUBER: {
        float d = x - t;
        return d <= -p->beta ? -(p->beta * g) : d >= p->beta ? p->beta * g : d * g;
    }
    case SB_LOSS_BCE: {
        float den = (1.0f - x) * x;
        return (g * (x - t)) / (den < 1e-12f ? 1e-12f : den);
    }
    case SB_LOSS_BCE_WITH_LOGITS: {
        float s = 1.0f / (1.0f + sb_expf(-x)); /* the sigmoid of section 9 */
        if (!has_pw) return (s - t) * g;
        float q = pw * t;
        return (((q + 1.0f) - t) * s - q) * g;
    }
    case SB_LOSS_KL_DIV:
        return -(p->log_target ? sb_expf(t) : t) * g;
    }
    return 0.0f;
}

#endif
