/* tests/test_optim.c - SGD, Adam, AdamW (+AMSGrad) against an independent
 * restatement of the contract sequences (bitwise), against MPFR for the
 * bias-correction powers, against float64 for closeness over many steps, by
 * hand for first steps, with special values and bad input. */
#include <float.h>
#include <math.h>
#include <mpfr.h>
#include <stdint.h>

#include "harness.h"
#include "samebits/optim.h" /* until samebits.h includes it */

/* ---- data ------------------------------------------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng_next(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rng_unit(void) { return (double)(rng_next() >> 11) * 0x1p-53; }
/* Signed values spread over several binades, so products and quotients round
 * in many different ways. */
static float rng_val(double scale) {
    double m = 0.5 + rng_unit();
    double e = ldexp(1.0, (int)(rng_next() % 9) - 4);
    return (float)((rng_next() & 1 ? -1 : 1) * m * e * scale);
}
static void fill(float *x, int n, double scale) {
    for (int i = 0; i < n; i++) x[i] = rng_val(scale);
}

static int bits_differ(const float *a, const float *b, int n) {
    int d = 0;
    for (int i = 0; i < n; i++) d += sb_test_bits(a[i]) != sb_test_bits(b[i]);
    return d;
}

/* ---- beta^t by MPFR, rounded to binary64 ------------------------------------ */

static double mpfr_beta_pow(double beta, uint64_t t) {
    mpfr_t b, r;
    mpfr_init2(b, 53);
    mpfr_init2(r, 53);
    mpfr_set_d(b, beta, MPFR_RNDN);
    mpfr_pow_ui(r, b, (unsigned long)t, MPFR_RNDN); /* correctly rounded to 53 bits */
    double d = mpfr_get_d(r, MPFR_RNDN);
    mpfr_clear(b);
    mpfr_clear(r);
    return d;
}

/* ---- the contract, restated --------------------------------------------------
 * SGD, per element (fw = (float)wd, fm = (float)momentum,
 * fd = (float)(1 - dampening) in binary64, fl = (float)(-lr)):
 *   g = maximize ? -grad : grad
 *   wd != 0:  g = fma(p, fw, g)
 *   momentum != 0: b = step == 1 ? g : fma(g, fd, RN(b*fm)); g = nesterov ? fma(b, fm, g) : b
 *   p = fma(g, fl, p)
 * Variant 1 replaces every fma(x, y, z) by RN(z + RN(x*y)).                  */
static void ref_sgd(const sb_sgd_config *c, int64_t step, int n, float *p, const float *grad,
                    float *buf, int variant) {
    const float fw = (float)c->weight_decay, fm = (float)c->momentum;
    const float fd = (float)(1.0 - c->dampening), fl = (float)(-c->lr);
#define MADD(x, y, z) (variant == 1 ? (z) + (x) * (y) : fmaf((x), (y), (z)))
    for (int i = 0; i < n; i++) {
        float g = grad[i];
        if (c->maximize) g = -g;
        if (c->weight_decay != 0.0) g = MADD(p[i], fw, g);
        if (c->momentum != 0.0) {
            if (step == 1) {
                buf[i] = g;
            } else {
                float scaled = buf[i] * fm;
                buf[i] = MADD(g, fd, scaled);
            }
            g = c->nesterov ? MADD(buf[i], fm, g) : buf[i];
        }
        p[i] = MADD(g, fl, p[i]);
    }
#undef MADD
}

/* Adam variants: each changes one choice of the contract, to show that the
 * bitwise comparisons can tell them apart. */
enum {
    ADAM_CONTRACT = 0,
    ADAM_LERP_TWO_PRODUCTS, /* m = beta1*m + (1-beta1)*g */
    ADAM_LERP_NO_FMA,       /* m = m + (1-beta1)*(g-m), two roundings */
    ADAM_V_SQUARE_FIRST,    /* v = v + (1-beta2)*(g*g) */
    ADAM_V_FMA,             /* v = fma((1-beta2)*g, g, v) */
    ADAM_DIV_FIRST,         /* p = p + (-step)*(m/denom) */
    ADAM_FLOAT_FACTORS,     /* 1 - beta etc. computed in float */
    ADAM_VARIANTS
};

/* Adam, per element, restated from the contract (factors from MPFR's beta^t):
 *   bc1 = 1 - RN64(beta1^t), bc2 = 1 - RN64(beta2^t), s = lr / bc1 (binary64)
 *   w1 = (float)(1 - beta1), fb2 = (float)beta2, w2 = (float)(1 - beta2),
 *   r2 = (float)sqrt(bc2), fe = (float)eps, ns = (float)(-s),
 *   fw = (float)wd, dec = (float)(1 - lr*wd)
 *   g = maximize ? -grad : grad;  wd != 0: AdamW p = p*dec, Adam g = fma(p, fw, g)
 *   m = w1 < 0.5 ? fma(w1, g - m, m) : fma(w1 - 1, g - m, g)
 *   v = RN(RN(v*fb2) + RN(RN(w2*g)*g));  amsgrad: vmax = maximum(vmax, v)
 *   p = p + RN(RN(ns*m) / RN(RN(sqrt(v or vmax)) / r2) + fe)                  */
static void ref_adam(const sb_adam_config *c, int64_t step, int n, float *p, const float *grad,
                     float *m, float *v, float *vmax, int variant) {
    double bc1 = 1.0 - mpfr_beta_pow(c->beta1, (uint64_t)step);
    double bc2 = 1.0 - mpfr_beta_pow(c->beta2, (uint64_t)step);
    double s = c->lr / bc1;
    float w1 = (float)(1.0 - c->beta1), fb1 = (float)c->beta1, fb2 = (float)c->beta2;
    float w2 = (float)(1.0 - c->beta2), r2 = (float)sqrt(bc2), fe = (float)c->eps;
    float ns = (float)(-s), fw = (float)c->weight_decay;
    float dec = (float)(1.0 - c->lr * c->weight_decay);
    if (variant == ADAM_FLOAT_FACTORS) {
        w1 = 1.0f - fb1;
        w2 = 1.0f - fb2;
        dec = 1.0f - (float)c->lr * fw;
    }
    for (int i = 0; i < n; i++) {
        float g = c->maximize ? -grad[i] : grad[i];
        float mi = step == 1 ? 0.0f : m[i], vi = step == 1 ? 0.0f : v[i];
        float pi = p[i];
        if (c->weight_decay != 0.0) {
            if (c->decoupled_weight_decay) pi = pi * dec;
            else g = fmaf(pi, fw, g);
        }
        switch (variant) {
        case ADAM_LERP_TWO_PRODUCTS: mi = fb1 * mi + w1 * g; break;
        case ADAM_LERP_NO_FMA: mi = mi + w1 * (g - mi); break;
        default:
            if (w1 < 0.5f) mi = fmaf(w1, g - mi, mi);
            else mi = fmaf(w1 - 1.0f, g - mi, g);
        }
        vi = vi * fb2;
        if (variant == ADAM_V_SQUARE_FIRST) vi = vi + w2 * (g * g);
        else if (variant == ADAM_V_FMA) vi = fmaf(w2 * g, g, vi);
        else vi = vi + (w2 * g) * g;
        float use = vi;
        if (c->amsgrad) {
            float old = step == 1 ? 0.0f : vmax[i];
            /* vi is never -0 here, so the -0 rule does not matter */
            use = isnan(old) ? old : isnan(vi) ? vi : (vi > old ? vi : old);
            vmax[i] = use;
        }
        float root = sqrtf(use);
        float denom = root / r2 + fe;
        if (variant == ADAM_DIV_FIRST) pi = pi + ns * (mi / denom);
        else pi = pi + (ns * mi) / denom;
        m[i] = mi;
        v[i] = vi;
        p[i] = pi;
    }
}

/* ---- bias-correction powers -------------------------------------------------- */

static void test_beta_powers(void) {
    const double betas[] = {0.9, 0.999, 0.99, 0.95, 0.5, 0.3, 0.0, 0.9999, 1.0 - 0x1p-30,
                            0.123456789};
    const int tmax = sb_test_quick() ? 1500 : 10000;
    for (size_t b = 0; b < sizeof betas / sizeof betas[0]; b++) {
        sb_adam_config c = sb_adam_default_config(1e-3);
        c.beta1 = betas[b];
        c.beta2 = betas[(b + 3) % (sizeof betas / sizeof betas[0])];
        long bad1 = 0, bad2 = 0, badf = 0;
        for (int t = 1; t <= tmax; t++) {
            sb_adam_factors f;
            if (sb_adam_factors_for(&c, t, &f) != SB_OK) { bad1++; continue; }
            double w1 = mpfr_beta_pow(c.beta1, (uint64_t)t), w2 = mpfr_beta_pow(c.beta2, (uint64_t)t);
            /* Near the bottom of the binary64 range the double-double's low
             * word loses bits (and MPFR's 53-bit rounding is not binary64's
             * below DBL_MIN); such powers need only leave bias corrections
             * of exactly 1, which any value below 2^-54 does. */
            if (w1 >= 0x1p-960) bad1 += f.beta1_pow != w1;
            else bad1 += f.beta1_pow >= 0x1p-959 || f.bias_correction1 != 1.0;
            if (w2 >= 0x1p-960) bad2 += f.beta2_pow != w2;
            else bad2 += f.beta2_pow >= 0x1p-959 || f.bias_correction2 != 1.0;
            badf += f.bias_correction1 != 1.0 - f.beta1_pow;
            badf += f.bias_correction2 != 1.0 - f.beta2_pow;
            badf += f.step_size != c.lr / f.bias_correction1;
            badf += sb_test_bits(f.neg_step_size) != sb_test_bits((float)(-(c.lr / f.bias_correction1)));
            badf += sb_test_bits(f.bias_correction2_sqrt) !=
                    sb_test_bits((float)sqrt(f.bias_correction2));
        }
        CHECK(bad1 == 0, "beta1 = %.17g: %ld of %d powers differ from MPFR", c.beta1, bad1, tmax);
        CHECK(bad2 == 0, "beta2 = %.17g: %ld of %d powers differ from MPFR", c.beta2, bad2, tmax);
        CHECK(badf == 0, "beta1 = %.17g: %ld derived factors differ", c.beta1, badf);
    }
    /* Huge step counts: the square-and-multiply still matches MPFR. */
    const struct { double beta; int64_t t; } big[] = {
        {1.0 - 0x1p-40, INT64_C(1) << 40}, {1.0 - 0x1p-40, (INT64_C(1) << 40) + 12345},
        {0.9999999, 10000000}, {1.0 - 0x1p-50, INT64_C(123456789012345)},
        {0.999, INT64_MAX}, {1.0 - 0x1p-53, INT64_MAX}};
    for (size_t k = 0; k < sizeof big / sizeof big[0]; k++) {
        sb_adam_config c = sb_adam_default_config(1e-3);
        c.beta1 = big[k].beta;
        sb_adam_factors f;
        CHECK_OK(sb_adam_factors_for(&c, big[k].t, &f));
        double want = mpfr_beta_pow(big[k].beta, (uint64_t)big[k].t);
        if (want >= 0x1p-960)
            CHECK(f.beta1_pow == want, "beta %.17g ^ %lld = %a, MPFR %a", big[k].beta,
                  (long long)big[k].t, f.beta1_pow, want);
        else
            CHECK(f.bias_correction1 == 1.0, "beta %.17g ^ %lld: bc1 = %a", big[k].beta,
                  (long long)big[k].t, f.bias_correction1);
    }
    /* Factor rounding: PyTorch forms 1 - beta in binary64. */
    sb_adam_config c = sb_adamw_default_config(1e-3);
    sb_adam_factors f;
    CHECK_OK(sb_adam_factors_for(&c, 1, &f));
    CHECK_BITS(f.one_minus_beta1, 0.1f, "(float)(1 - 0.9) is 0.1f, not 1 - 0.9f");
    CHECK(sb_test_bits(f.one_minus_beta1) != sb_test_bits(1.0f - 0.9f), "float factor form");
    CHECK_BITS(f.decay, (float)(1.0 - 1e-3 * 1e-2), "AdamW decay factor");
    CHECK_BITS(f.neg_step_size, -0.01f, "step 1: lr / (1 - 0.9)");
    CHECK(f.use_weight_decay && f.decoupled, "AdamW defaults");
}

/* ---- bitwise against the restatement ---------------------------------------- */

static void test_sgd_bitwise(void) {
    const int n = 1037, steps = sb_test_quick() ? 12 : 60;
    sb_sgd_config cfgs[8];
    for (int k = 0; k < 8; k++) cfgs[k] = sb_sgd_default_config(0.05);
    cfgs[1].momentum = 0.9;
    cfgs[2].momentum = 0.9, cfgs[2].dampening = 0.1;
    cfgs[3].momentum = 0.9, cfgs[3].nesterov = true;
    cfgs[4].momentum = 0.8, cfgs[4].dampening = 0.5, cfgs[4].weight_decay = 1e-3;
    cfgs[5].weight_decay = 0.1, cfgs[5].maximize = true;
    cfgs[6].momentum = 0.95, cfgs[6].nesterov = true, cfgs[6].weight_decay = 5e-4, cfgs[6].lr = 0.3;
    cfgs[7].momentum = 1.5, cfgs[7].dampening = -0.25, cfgs[7].lr = 1e-3; /* unusual but legal */
    float *p = malloc(n * sizeof *p), *g = malloc(n * sizeof *g), *b = malloc(n * sizeof *b);
    float *rp = malloc(n * sizeof *rp), *rb = malloc(n * sizeof *rb), *ap = malloc(n * sizeof *ap);
    float *ab = malloc(n * sizeof *ab);
    for (int k = 0; k < 8; k++) {
        fill(p, n, 1.0);
        memcpy(rp, p, n * sizeof *p);
        memcpy(ap, p, n * sizeof *p);
        int pd = 0, bd = 0, alt = 0;
        for (int s = 1; s <= steps; s++) {
            fill(g, n, 0.1);
            CHECK_OK(sb_sgd_step(&cfgs[k], s, n, p, g, b));
            ref_sgd(&cfgs[k], s, n, rp, g, rb, 0);
            ref_sgd(&cfgs[k], s, n, ap, g, ab, 1);
            pd += bits_differ(p, rp, n);
            if (cfgs[k].momentum != 0) bd += bits_differ(b, rb, n);
        }
        alt = bits_differ(p, ap, n);
        CHECK(pd == 0 && bd == 0, "SGD config %d: %d param / %d buffer bits differ", k, pd, bd);
        CHECK(alt > 0, "SGD config %d: the unfused variant should differ somewhere", k);
    }
    free(p), free(g), free(b), free(rp), free(rb), free(ap), free(ab);
}

static void test_adam_bitwise(void) {
    const int n = 1111, steps = sb_test_quick() ? 10 : 80;
    enum { NC = 9 };
    sb_adam_config cfgs[NC];
    cfgs[0] = sb_adam_default_config(1e-3);
    cfgs[1] = sb_adam_default_config(1e-2), cfgs[1].weight_decay = 1e-2;
    cfgs[2] = sb_adamw_default_config(1e-3);
    cfgs[3] = sb_adamw_default_config(3e-2), cfgs[3].weight_decay = 0.5, cfgs[3].amsgrad = true;
    cfgs[4] = sb_adam_default_config(1e-3), cfgs[4].amsgrad = true, cfgs[4].maximize = true;
    cfgs[5] = sb_adam_default_config(1e-2), cfgs[5].beta1 = 0.3; /* lerp's large-weight form */
    cfgs[6] = sb_adam_default_config(1e-2), cfgs[6].beta1 = 0.0, cfgs[6].beta2 = 0.0;
    cfgs[7] = sb_adam_default_config(0.1), cfgs[7].beta1 = 0.5, cfgs[7].beta2 = 0.99, cfgs[7].eps = 1e-3;
    cfgs[8] = sb_adamw_default_config(1e-3), cfgs[8].beta2 = 0.95, cfgs[8].maximize = true;
    size_t bytes = n * sizeof(float);
    float *p = malloc(bytes), *g = malloc(bytes), *m = malloc(bytes), *v = malloc(bytes),
          *vm = malloc(bytes);
    float *rp[ADAM_VARIANTS], *rm[ADAM_VARIANTS], *rv[ADAM_VARIANTS], *rvm[ADAM_VARIANTS];
    for (int a = 0; a < ADAM_VARIANTS; a++)
        rp[a] = malloc(bytes), rm[a] = malloc(bytes), rv[a] = malloc(bytes), rvm[a] = malloc(bytes);
    int seen[ADAM_VARIANTS] = {0};
    for (int k = 0; k < NC; k++) {
        fill(p, n, 1.0);
        for (int a = 0; a < ADAM_VARIANTS; a++) memcpy(rp[a], p, bytes);
        int diff = 0;
        for (int s = 1; s <= steps; s++) {
            fill(g, n, 0.01);
            if (s % 7 == 0) for (int i = 0; i < n; i += 5) g[i] = 0.0f; /* sparse-ish steps */
            CHECK_OK(sb_adam_step(&cfgs[k], s, n, p, g, m, v, cfgs[k].amsgrad ? vm : NULL));
            for (int a = 0; a < ADAM_VARIANTS; a++)
                ref_adam(&cfgs[k], s, n, rp[a], g, rm[a], rv[a], rvm[a], a);
            diff += bits_differ(p, rp[0], n) + bits_differ(m, rm[0], n) + bits_differ(v, rv[0], n);
            if (cfgs[k].amsgrad) diff += bits_differ(vm, rvm[0], n);
        }
        CHECK(diff == 0, "Adam config %d: %d bits differ from the restatement", k, diff);
        for (int a = 1; a < ADAM_VARIANTS; a++) seen[a] += bits_differ(p, rp[a], n);
    }
    static const char *names[] = {"", "lerp as two products", "lerp without fma",
                                  "g*g first", "fused second moment", "m/denom first",
                                  "float factors"};
    for (int a = 1; a < ADAM_VARIANTS; a++)
        CHECK(seen[a] > 0, "variant '%s' never differed: the test cannot see that choice", names[a]);
    free(p), free(g), free(m), free(v), free(vm);
    for (int a = 0; a < ADAM_VARIANTS; a++) free(rp[a]), free(rm[a]), free(rv[a]), free(rvm[a]);
}

/* ---- closeness to float64 ----------------------------------------------------- */

static void test_float64_closeness(void) {
    const int n = 256, steps = sb_test_quick() ? 100 : 500;
    float p[256], g[256], m[256], v[256], vm[256], b[256];
    double pd[256], md[256], vd[256], vmd[256], bd[256];
    for (int variant = 0; variant < 4; variant++) {
        sb_adam_config ac = variant == 1 ? sb_adamw_default_config(1e-3) : sb_adam_default_config(1e-3);
        ac.amsgrad = variant == 2;
        sb_sgd_config sc = sb_sgd_default_config(0.01);
        sc.momentum = 0.9, sc.nesterov = true, sc.weight_decay = 1e-4;
        fill(p, n, 1.0);
        for (int i = 0; i < n; i++) pd[i] = p[i], md[i] = vd[i] = vmd[i] = 0;
        double worst = 0;
        for (int s = 1; s <= steps; s++) {
            /* a smooth objective: gradient of 0.5*(p - target)^2 plus noise */
            for (int i = 0; i < n; i++) g[i] = (float)(p[i] - 0.25 * (i % 7)) + rng_val(0.01);
            if (variant == 3) {
                CHECK_OK(sb_sgd_step(&sc, s, n, p, g, b));
                for (int i = 0; i < n; i++) {
                    double gi = g[i] + sc.weight_decay * pd[i];
                    bd[i] = s == 1 ? gi : sc.momentum * bd[i] + gi;
                    pd[i] -= sc.lr * (gi + sc.momentum * bd[i]);
                }
                continue;
            }
            CHECK_OK(sb_adam_step(&ac, s, n, p, g, m, v, vm));
            double bc1 = 1 - pow(ac.beta1, s), bc2 = 1 - pow(ac.beta2, s);
            for (int i = 0; i < n; i++) {
                double gi = g[i];
                if (ac.decoupled_weight_decay) pd[i] *= 1 - ac.lr * ac.weight_decay;
                md[i] = ac.beta1 * md[i] + (1 - ac.beta1) * gi;
                vd[i] = ac.beta2 * vd[i] + (1 - ac.beta2) * gi * gi;
                vmd[i] = vd[i] > vmd[i] ? vd[i] : vmd[i];
                double den = sqrt(ac.amsgrad ? vmd[i] : vd[i]) / sqrt(bc2) + ac.eps;
                pd[i] -= ac.lr / bc1 * md[i] / den;
            }
        }
        for (int i = 0; i < n; i++) {
            double e = fabs(p[i] - pd[i]) / (1 + fabs(pd[i]));
            if (e > worst) worst = e;
        }
        /* the float32 path feeds its own gradients to both, so only the
         * update's rounding separates them: ~steps * 2^-24 at most */
        CHECK(worst < 2e-5, "variant %d: float32 and float64 parameters differ by %g", variant, worst);
    }
}

/* ---- by hand ------------------------------------------------------------------ */

static void test_first_steps(void) {
    /* Adam's first step moves each parameter by about lr * sign(g). */
    enum { N = 64 };
    float p[N], g[N], m[N], v[N];
    for (int k = 0; k < 2; k++) {
        sb_adam_config c = k ? sb_adamw_default_config(1e-3) : sb_adam_default_config(1e-3);
        fill(g, N, 1.0);
        for (int i = 0; i < N; i++) p[i] = 0.0f, m[i] = v[i] = NAN; /* state is ignored */
        CHECK_OK(sb_adam_step(&c, 1, N, p, g, m, v, NULL));
        int bad = 0;
        for (int i = 0; i < N; i++) {
            double want = g[i] > 0 ? -1e-3 : 1e-3;
            bad += fabs(p[i] - want) > 1e-3 * 1e-5;
            bad += sb_test_bits(m[i]) != sb_test_bits(0.1f * g[i]);
        }
        CHECK(bad == 0, "first Adam step: %d elements not lr*sign(g)", bad);
    }
    /* g = 1, p = 0: m = 0.1f, v = 0.001f, denom ~ 1, step -0.01f * 0.1f. */
    sb_adam_config c = sb_adam_default_config(1e-3);
    float p1 = 0.0f, g1 = 1.0f, m1, v1;
    CHECK_OK(sb_adam_step(&c, 1, 1, &p1, &g1, &m1, &v1, NULL));
    CHECK_BITS(m1, 0.1f, "m after one step of g = 1");
    CHECK_BITS(v1, 0.001f, "v after one step of g = 1");
    float r = sqrtf(0.001f) / (float)sqrt(1.0 - 0.999);
    CHECK_BITS(p1, (-0.01f * 0.1f) / (r + 1e-8f), "first step of g = 1");
    CHECK(fabsf(p1 + 1e-3f) < 2e-10f, "first step ~ -lr: %a", p1);

    /* SGD with exactly representable numbers. */
    sb_sgd_config s = sb_sgd_default_config(0.25);
    s.momentum = 0.5, s.dampening = 0.5;
    float p2 = 3.0f, g2 = 1.0f, b2 = NAN;
    CHECK_OK(sb_sgd_step(&s, 1, 1, &p2, &g2, &b2));
    CHECK_BITS(b2, 1.0f, "first momentum buffer is the gradient (no dampening)");
    CHECK_BITS(p2, 2.75f, "SGD step 1");
    CHECK_OK(sb_sgd_step(&s, 2, 1, &p2, &g2, &b2));
    CHECK_BITS(b2, 1.0f, "0.5*1 + 0.5*1");
    CHECK_BITS(p2, 2.5f, "SGD step 2");
    s.dampening = 0, s.nesterov = true;
    p2 = 3.0f;
    CHECK_OK(sb_sgd_step(&s, 1, 1, &p2, &g2, &b2));
    CHECK_BITS(p2, 3.0f - 0.375f, "Nesterov step 1: g + 0.5*g");
    CHECK_OK(sb_sgd_step(&s, 2, 1, &p2, &g2, &b2));
    CHECK_BITS(b2, 1.5f, "Nesterov buffer 0.5*1 + 1");
    CHECK_BITS(p2, 3.0f - 0.375f - 0.4375f, "Nesterov step 2: g + 0.5*1.5");
    /* p - lr*g is one rounding (fma), not two. */
    sb_sgd_config plain = sb_sgd_default_config(0.1);
    float p3 = 1.0f, g3 = 0x1.000002p-1f;
    CHECK_OK(sb_sgd_step(&plain, 1, 1, &p3, &g3, NULL));
    CHECK_BITS(p3, (float)(1.0 - (double)g3 * (double)0.1f), "fused p - lr*g");
    /* AdamW decays before the update: zero gradient, huge eps. */
    sb_adam_config w = sb_adamw_default_config(0.5);
    w.weight_decay = 0.5;
    float p4 = 2.0f, g4 = 0.0f, m4, v4;
    CHECK_OK(sb_adam_step(&w, 1, 1, &p4, &g4, &m4, &v4, NULL));
    CHECK_BITS(p4, 1.5f, "AdamW: 2 * (1 - 0.5*0.5)");
}

/* ---- special values --------------------------------------------------------------- */

static void test_special_values(void) {
    enum { N = 6 };
    sb_adam_config c = sb_adam_default_config(1e-3);
    c.amsgrad = true;
    float g[N] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0x1p-130f};
    float p[N], m[N], v[N], vm[N];
    for (int i = 0; i < N; i++) p[i] = i == 5 ? 0.0f : 1.0f;
    CHECK_OK(sb_adam_step(&c, 1, N, p, g, m, v, vm));
    CHECK_BITS(p[0], 1.0f, "zero gradient leaves p");
    CHECK_BITS(p[1], 1.0f, "-0 gradient leaves p");
    CHECK_BITS(m[1], 0.0f, "lerp(+0, -0) is +0");
    CHECK(isnan(p[2]) && isnan(p[3]) && isnan(p[4]), "inf/NaN gradients give NaN: %a %a %a", p[2],
          p[3], p[4]);
    CHECK(isinf(m[2]) && isinf(v[2]) && isnan(m[4]) && isnan(vm[4]), "inf/NaN moments");
    /* subnormal gradient: m stays subnormal (no flush), v underflows to 0,
     * denom is eps, and p moves a little. */
    CHECK(m[5] != 0.0f && fabsf(m[5]) < FLT_MIN, "subnormal m = %a", m[5]);
    CHECK_BITS(v[5], 0.0f, "v of a subnormal gradient underflows");
    float want = 0.0f + (-0.01f * m[5]) / 1e-8f;
    CHECK_BITS(p[5], want, "subnormal gradient update");
    CHECK(p[5] < 0.0f && isnormal(p[5]), "subnormal gradient update is visible: %a", p[5]);
    float rp[N], rm[N], rv[N], rvm[N];
    for (int i = 0; i < N; i++) rp[i] = i == 5 ? 0.0f : 1.0f;
    ref_adam(&c, 1, N, rp, g, rm, rv, rvm, ADAM_CONTRACT);
    int sd = 0;
    for (int i = 0; i < N; i++)
        sd += isnan(p[i]) ? !isnan(rp[i]) : sb_test_bits(p[i]) != sb_test_bits(rp[i]);
    CHECK(sd == 0, "specials vs restatement: %d differ", sd);
    /* AMSGrad: the max never decreases, and a NaN sticks. */
    float g2[N] = {1.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (int s = 2; s <= 6; s++) {
        float before = vm[0];
        CHECK_OK(sb_adam_step(&c, s, N, p, g2, m, v, vm));
        CHECK(vm[0] >= before && vm[0] >= v[0], "amsgrad max is monotone");
    }
    CHECK(isnan(vm[4]), "a NaN second moment stays in the max");
    CHECK(v[2] != v[2] || isinf(vm[2]), "inf stays in the max");

    /* SGD: inf gradient sends p to -inf, NaN to NaN, zero leaves p. */
    sb_sgd_config s = sb_sgd_default_config(0.1);
    float sp[4] = {1, 1, 1, 1}, sg[4] = {INFINITY, NAN, 0.0f, 0x1p-149f};
    CHECK_OK(sb_sgd_step(&s, 1, 4, sp, sg, NULL));
    CHECK(isinf(sp[0]) && sp[0] < 0 && isnan(sp[1]), "SGD inf/NaN: %a %a", sp[0], sp[1]);
    CHECK_BITS(sp[2], 1.0f, "SGD zero gradient");
    CHECK_BITS(sp[3], 1.0f, "SGD tiniest gradient rounds away");
    /* momentum buffer keeps subnormals */
    s.momentum = 0.5;
    float bp = 0.0f, bg = 0x1p-148f, bb;
    CHECK_OK(sb_sgd_step(&s, 1, 1, &bp, &bg, &bb));
    CHECK_OK(sb_sgd_step(&s, 2, 1, &bp, &bg, &bb));
    CHECK_BITS(bb, 0x1p-148f + 0x1p-149f, "subnormal momentum buffer");
    /* n == 0 is a no-op */
    CHECK_OK(sb_sgd_step(&s, 3, 0, &bp, &bg, &bb));
    CHECK_OK(sb_adam_step(&c, 3, 0, p, g, m, v, vm));
}

/* ---- tensors ---------------------------------------------------------------------- */

static sb_tensor *new_f32(int ndim, const int64_t *shape) {
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, SB_F32, ndim, shape) != SB_OK) return NULL;
    return t;
}

static void test_tensors(void) {
    const int64_t shape[2] = {7, 9}, other[2] = {9, 7};
    sb_tensor *p = new_f32(2, shape), *g = new_f32(2, shape), *m = new_f32(2, shape),
              *v = new_f32(2, shape), *vm = new_f32(2, shape), *b = new_f32(2, shape),
              *bad = new_f32(2, other), *ti = NULL, *tr = NULL;
    CHECK_OK(sb_tensor_new(&ti, SB_I32, 2, shape));
    CHECK_OK(sb_tensor_transpose(&tr, bad, 0, 1));
    float rp[63], rg[63], rm[63], rv[63], rvm[63], rb[63];
    fill(sb_tensor_f32(p), 63, 1.0);
    memcpy(rp, sb_tensor_f32(p), sizeof rp);
    sb_adam_config c = sb_adamw_default_config(1e-2);
    c.amsgrad = true;
    for (int s = 1; s <= 5; s++) {
        fill(sb_tensor_f32(g), 63, 0.1);
        memcpy(rg, sb_tensor_f32(g), sizeof rg);
        CHECK_OK(sb_adam_step_tensor(&c, s, p, g, m, v, vm));
        CHECK_OK(sb_adam_step(&c, s, 63, rp, rg, rm, rv, rvm));
    }
    CHECK(bits_differ(rp, sb_tensor_f32(p), 63) == 0 && bits_differ(rvm, sb_tensor_f32(vm), 63) == 0,
          "tensor Adam = raw Adam");
    sb_sgd_config sc = sb_sgd_default_config(0.1);
    sc.momentum = 0.9;
    memcpy(rp, sb_tensor_f32(p), sizeof rp);
    for (int s = 1; s <= 3; s++) {
        CHECK_OK(sb_sgd_step_tensor(&sc, s, p, g, b));
        CHECK_OK(sb_sgd_step(&sc, s, 63, rp, rg, rb));
    }
    CHECK(bits_differ(rp, sb_tensor_f32(p), 63) == 0, "tensor SGD = raw SGD");

    memcpy(rp, sb_tensor_f32(p), sizeof rp);
    CHECK_ERROR(sb_adam_step_tensor(&c, 1, p, bad, m, v, vm), SB_ERR_SHAPE, "grad has shape [9, 7]");
    CHECK_ERROR(sb_adam_step_tensor(&c, 1, p, g, m, bad, vm), SB_ERR_SHAPE, "exp_avg_sq");
    CHECK_ERROR(sb_adam_step_tensor(&c, 1, p, g, m, v, NULL), SB_ERR_NULL, "max_exp_avg_sq is NULL");
    CHECK_ERROR(sb_adam_step_tensor(&c, 1, p, ti, m, v, vm), SB_ERR_DTYPE, "grad has dtype");
    CHECK_ERROR(sb_adam_step_tensor(&c, 1, p, g, NULL, v, vm), SB_ERR_NULL, "exp_avg is NULL");
    CHECK_ERROR(sb_adam_step_tensor(&c, 1, p, g, m, m, vm), SB_ERR_ARG, "exp_avg and exp_avg_sq overlap");
    CHECK_ERROR(sb_adam_step_tensor(&c, 1, bad, tr, m, v, vm), SB_ERR_ARG, "grad must be contiguous");
    CHECK_ERROR(sb_adam_step_tensor(&c, 0, p, g, m, v, vm), SB_ERR_ARG, "step = 0");
    CHECK_ERROR(sb_sgd_step_tensor(&sc, 2, p, g, NULL), SB_ERR_NULL, "momentum_buf is NULL");
    CHECK_ERROR(sb_sgd_step_tensor(&sc, 2, p, g, bad), SB_ERR_SHAPE, "momentum_buf has shape");
    CHECK_ERROR(sb_sgd_step_tensor(&sc, 2, p, p, b), SB_ERR_ARG, "param and grad overlap");
    CHECK_ERROR(sb_sgd_step_tensor(&sc, 2, NULL, g, b), SB_ERR_NULL, "param is NULL");
    CHECK_ERROR(sb_sgd_step_tensor(NULL, 2, p, g, b), SB_ERR_NULL, "cfg is NULL");
    CHECK(bits_differ(rp, sb_tensor_f32(p), 63) == 0, "failed calls wrote nothing");
    sc.momentum = 0;
    CHECK_OK(sb_sgd_step_tensor(&sc, 2, p, g, NULL)); /* no buffer needed */
    sb_tensor *list[] = {p, g, m, v, vm, b, bad, ti, tr};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sb_tensor_free(list[i]);
}

/* ---- bad input ------------------------------------------------------------------- */

static void test_bad_input(void) {
    float p[4] = {1, 2, 3, 4}, g[4] = {1, 1, 1, 1}, m[4], v[4], vm[4], b[4];
    const float keep[4] = {1, 2, 3, 4};
    sb_sgd_config s = sb_sgd_default_config(0.1);
    s.momentum = 0.9;
    CHECK_ERROR(sb_sgd_step(NULL, 1, 4, p, g, b), SB_ERR_NULL, "sb_sgd_step: cfg is NULL");
    CHECK_ERROR(sb_sgd_step(&s, 1, 4, NULL, g, b), SB_ERR_NULL, "param is NULL");
    CHECK_ERROR(sb_sgd_step(&s, 1, 4, p, NULL, b), SB_ERR_NULL, "grad is NULL");
    CHECK_ERROR(sb_sgd_step(&s, 1, 4, p, g, NULL), SB_ERR_NULL, "momentum_buf is NULL");
    CHECK_ERROR(sb_sgd_step(&s, 0, 4, p, g, b), SB_ERR_ARG, "step = 0 must be >= 1");
    CHECK_ERROR(sb_sgd_step(&s, -3, 4, p, g, b), SB_ERR_ARG, "step = -3");
    CHECK_ERROR(sb_sgd_step(&s, 1, -1, p, g, b), SB_ERR_ARG, "n = -1 is negative");
    CHECK_ERROR(sb_sgd_step(&s, 1, 4, p, p + 2, b), SB_ERR_ARG, "param and grad overlap");
    CHECK_ERROR(sb_sgd_step(&s, 1, 4, p, g, g), SB_ERR_ARG, "grad and momentum_buf overlap");
    sb_sgd_config bad = s;
    bad.lr = -0.1;
    CHECK_ERROR(sb_sgd_step(&bad, 1, 4, p, g, b), SB_ERR_ARG, "lr = -0.1 must be >= 0");
    bad = s, bad.lr = NAN;
    CHECK_ERROR(sb_sgd_step(&bad, 1, 4, p, g, b), SB_ERR_ARG, "lr = nan is not finite");
    bad = s, bad.momentum = -0.5;
    CHECK_ERROR(sb_sgd_step(&bad, 1, 4, p, g, b), SB_ERR_ARG, "momentum = -0.5");
    bad = s, bad.weight_decay = -1;
    CHECK_ERROR(sb_sgd_check_config(&bad), SB_ERR_ARG, "sb_sgd_check_config: weight_decay = -1");
    bad = s, bad.nesterov = true, bad.dampening = 0.1;
    CHECK_ERROR(sb_sgd_step(&bad, 1, 4, p, g, b), SB_ERR_ARG, "nesterov needs momentum > 0 and dampening == 0");
    bad = s, bad.nesterov = true, bad.momentum = 0;
    CHECK_ERROR(sb_sgd_step(&bad, 1, 4, p, g, b), SB_ERR_ARG, "nesterov needs momentum > 0");
    bad = s, bad.dampening = INFINITY;
    CHECK_ERROR(sb_sgd_check_config(&bad), SB_ERR_ARG, "dampening = inf is not finite");
    CHECK_ERROR(sb_sgd_factors_for(&s, NULL), SB_ERR_NULL, "out is NULL");
    CHECK_OK(sb_sgd_check_config(&s));

    sb_adam_config a = sb_adam_default_config(1e-3);
    a.amsgrad = true;
    CHECK_ERROR(sb_adam_step(NULL, 1, 4, p, g, m, v, vm), SB_ERR_NULL, "sb_adam_step: cfg is NULL");
    CHECK_ERROR(sb_adam_step(&a, 1, 4, NULL, g, m, v, vm), SB_ERR_NULL, "param is NULL");
    CHECK_ERROR(sb_adam_step(&a, 1, 4, p, NULL, m, v, vm), SB_ERR_NULL, "grad is NULL");
    CHECK_ERROR(sb_adam_step(&a, 1, 4, p, g, NULL, v, vm), SB_ERR_NULL, "exp_avg is NULL");
    CHECK_ERROR(sb_adam_step(&a, 1, 4, p, g, m, NULL, vm), SB_ERR_NULL, "exp_avg_sq is NULL");
    CHECK_ERROR(sb_adam_step(&a, 1, 4, p, g, m, v, NULL), SB_ERR_NULL, "max_exp_avg_sq is NULL");
    CHECK_ERROR(sb_adam_step(&a, 0, 4, p, g, m, v, vm), SB_ERR_ARG, "step = 0");
    CHECK_ERROR(sb_adam_step(&a, 1, -2, p, g, m, v, vm), SB_ERR_ARG, "n = -2");
    CHECK_ERROR(sb_adam_step(&a, 1, 4, p, g, m, v, v), SB_ERR_ARG, "exp_avg_sq and max_exp_avg_sq overlap");
    sb_adam_config ab = a;
    ab.lr = -1;
    CHECK_ERROR(sb_adam_step(&ab, 1, 4, p, g, m, v, vm), SB_ERR_ARG, "lr = -1 must be >= 0");
    const double betas[] = {1.0, -0.1, 1.5, NAN};
    for (int k = 0; k < 4; k++) {
        ab = a, ab.beta1 = betas[k];
        CHECK_ERROR(sb_adam_step(&ab, 1, 4, p, g, m, v, vm), SB_ERR_ARG, "beta1");
        ab = a, ab.beta2 = betas[k];
        CHECK_ERROR(sb_adam_check_config(&ab), SB_ERR_ARG, "beta2");
    }
    ab = a, ab.beta2 = 1.0;
    CHECK_ERROR(sb_adam_check_config(&ab), SB_ERR_ARG, "beta2 = 1 is outside [0, 1)");
    const double epss[] = {0.0, -1e-8, 1e-50};
    for (int k = 0; k < 3; k++) {
        ab = a, ab.eps = epss[k];
        CHECK_ERROR(sb_adam_step(&ab, 1, 4, p, g, m, v, vm), SB_ERR_ARG, "eps");
    }
    ab = a, ab.weight_decay = -0.01;
    CHECK_ERROR(sb_adam_step(&ab, 1, 4, p, g, m, v, vm), SB_ERR_ARG, "weight_decay = -0.01");
    ab = a, ab.lr = INFINITY;
    CHECK_ERROR(sb_adam_factors_for(&ab, 1, &(sb_adam_factors){0}), SB_ERR_ARG, "lr = inf is not finite");
    CHECK_ERROR(sb_adam_factors_for(&a, 1, NULL), SB_ERR_NULL, "out is NULL");
    CHECK_ERROR(sb_adam_factors_for(&a, 0, &(sb_adam_factors){0}), SB_ERR_ARG, "step = 0");
    CHECK(bits_differ(p, keep, 4) == 0, "failed calls left param alone");
    a.amsgrad = false;
    CHECK_OK(sb_adam_step(&a, 1, 4, p, g, m, v, NULL)); /* vmax unused without amsgrad */
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_beta_powers();
    test_sgd_bitwise();
    test_adam_bitwise();
    test_float64_closeness();
    test_first_steps();
    test_special_values();
    test_tensors();
    test_bad_input();
    return sb_test_finish();
}
