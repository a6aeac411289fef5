/* src/optim/adam.c - Adam and AdamW with AMSGrad (contract section
 * "Optimizers / Adam, AdamW").
 *
 * The element sequence mirrors PyTorch's single-tensor Adam on the CPU:
 * lerp_ for the first moment (a fused multiply-add in PyTorch's vectorised
 * kernel), mul_ then addcmul_ for the second moment, sqrt / bias correction
 * + eps for the denominator, addcdiv_ for the update. The per-step scalars
 * are formed in binary64 from binary64 hyperparameters and rounded to
 * float32 once, as PyTorch does with Python floats. The element loop itself
 * is sb_ref_adam_update (src/ref/optim.c); the update runs its fast twin
 * sb_cpu_adam. */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "samebits/optim.h"
#include "core/fpenv.h"
#include "core/internal.h"
#include "backend/backend.h"
#include "cpu/ops_internal.h"
#include "ops/validate.h"
#include "optim/optim_internal.h"

#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "samebits optimizers need FLT_EVAL_METHOD == 0 (no excess precision)"
#endif

/* ---- beta^t without pow ------------------------------------------------------ */

/* (ah + al) * (bh + bl) as a normalised double-double. fma gives the exact
 * error of ah*bh; the cross terms are added in a fixed order. */
static void dd_mul(double ah, double al, double bh, double bl, double *rh, double *rl) {
    double p = ah * bh;
    double e = fma(ah, bh, -p);
    double cross = ah * bl + al * bh;
    e = e + cross;
    double s = p + e;
    *rl = e - (s - p);
    *rh = s;
}

/* beta^t rounded to binary64: square-and-multiply over the bits of t from the
 * least significant, in double-double (about 100 bits), returning the high
 * word. A fixed sequence of IEEE operations, so the same everywhere; close
 * enough to exact that it equals the correctly rounded power except in
 * cases within ~2^-95 of a rounding boundary. O(log t), so step counts in the
 * billions cost nothing. */
static double beta_pow(double beta, int64_t t) {
    double rh = 1.0, rl = 0.0, bh = beta, bl = 0.0;
    uint64_t k = (uint64_t)t;
    for (;;) {
        if (k & 1) dd_mul(rh, rl, bh, bl, &rh, &rl);
        k >>= 1;
        if (!k) break;
        dd_mul(bh, bl, bh, bl, &bh, &bl);
    }
    return rh;
}

/* ---- configuration ---------------------------------------------------------- */

sb_adam_config sb_adam_default_config(double lr) {
    sb_adam_config c = {0};
    c.lr = lr;
    c.beta1 = 0.9;
    c.beta2 = 0.999;
    c.eps = 1e-8;
    return c;
}

sb_adam_config sb_adamw_default_config(double lr) {
    sb_adam_config c = sb_adam_default_config(lr);
    c.weight_decay = 1e-2;
    c.decoupled_weight_decay = true;
    return c;
}

static sb_status adam_check(const char *fn, const sb_adam_config *cfg) {
    if (!cfg) return sb_fail(SB_ERR_NULL, "%s: cfg is NULL", fn);
    SB_TRY(sb_optim_check_finite(fn, "lr", cfg->lr));
    SB_TRY(sb_optim_check_finite(fn, "beta1", cfg->beta1));
    SB_TRY(sb_optim_check_finite(fn, "beta2", cfg->beta2));
    SB_TRY(sb_optim_check_finite(fn, "eps", cfg->eps));
    SB_TRY(sb_optim_check_finite(fn, "weight_decay", cfg->weight_decay));
    if (cfg->lr < 0) return sb_fail(SB_ERR_ARG, "%s: lr = %g must be >= 0", fn, cfg->lr);
    if (!(cfg->beta1 >= 0 && cfg->beta1 < 1))
        return sb_fail(SB_ERR_ARG, "%s: beta1 = %.17g is outside [0, 1)", fn, cfg->beta1);
    if (!(cfg->beta2 >= 0 && cfg->beta2 < 1))
        return sb_fail(SB_ERR_ARG, "%s: beta2 = %.17g is outside [0, 1)", fn, cfg->beta2);
    // PyTorch accepts eps == 0, which turns a zero second moment into 0/0;
    // samebits asks for a positive float so the denominator is never 0.
    if (!(cfg->eps > 0) || (float)cfg->eps == 0)
        return sb_fail(SB_ERR_ARG, "%s: eps = %g must be > 0 and not round to 0 as a float", fn,
                       cfg->eps);
    if (cfg->weight_decay < 0)
        return sb_fail(SB_ERR_ARG, "%s: weight_decay = %g must be >= 0", fn, cfg->weight_decay);
    return SB_OK;
}

sb_status sb_adam_check_config(const sb_adam_config *cfg) {
    SB_FPENV_GUARD();
    return adam_check("sb_adam_check_config", cfg);
}

static sb_status adam_check_step(const char *fn, const sb_adam_config *cfg, int64_t step) {
    SB_TRY(adam_check(fn, cfg));
    if (step < 1) return sb_fail(SB_ERR_ARG, "%s: step = %lld must be >= 1 (steps count from 1)",
                                 fn, (long long)step);
    return SB_OK;
}

/* cfg is valid and step >= 1. */
static sb_adam_factors adam_factors(const sb_adam_config *cfg, int64_t step) {
    sb_adam_factors f;
    f.beta1_pow = beta_pow(cfg->beta1, step);
    f.beta2_pow = beta_pow(cfg->beta2, step);
    f.bias_correction1 = 1.0 - f.beta1_pow;
    f.bias_correction2 = 1.0 - f.beta2_pow;
    f.step_size = cfg->lr / f.bias_correction1;
    f.weight_decay = (float)cfg->weight_decay;
    f.decay = (float)(1.0 - cfg->lr * cfg->weight_decay);
    f.one_minus_beta1 = (float)(1.0 - cfg->beta1);
    f.beta2 = (float)cfg->beta2;
    f.one_minus_beta2 = (float)(1.0 - cfg->beta2);
    f.bias_correction2_sqrt = (float)sqrt(f.bias_correction2);
    f.eps = (float)cfg->eps;
    f.neg_step_size = (float)(-f.step_size);
    f.use_weight_decay = cfg->weight_decay != 0;
    f.decoupled = cfg->decoupled_weight_decay;
    f.amsgrad = cfg->amsgrad;
    f.maximize = cfg->maximize;
    return f;
}

sb_status sb_adam_factors_for(const sb_adam_config *cfg, int64_t step, sb_adam_factors *out) {
    SB_FPENV_GUARD();
    const char *fn = "sb_adam_factors_for";
    SB_TRY(adam_check_step(fn, cfg, step));
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = adam_factors(cfg, step);
    return SB_OK;
}

/* ---- the update ------------------------------------------------------------- */

sb_status sb_adam_step(const sb_adam_config *cfg, int64_t step, int64_t n, float *param,
                       const float *grad, float *exp_avg, float *exp_avg_sq,
                       float *max_exp_avg_sq) {
    SB_FPENV_GUARD();
    const char *fn = "sb_adam_step";
    SB_TRY(adam_check_step(fn, cfg, step));
    if (!param) return sb_fail(SB_ERR_NULL, "%s: param is NULL", fn);
    if (!grad) return sb_fail(SB_ERR_NULL, "%s: grad is NULL", fn);
    if (!exp_avg) return sb_fail(SB_ERR_NULL, "%s: exp_avg is NULL", fn);
    if (!exp_avg_sq) return sb_fail(SB_ERR_NULL, "%s: exp_avg_sq is NULL", fn);
    if (cfg->amsgrad && !max_exp_avg_sq)
        return sb_fail(SB_ERR_NULL, "%s: max_exp_avg_sq is NULL but amsgrad is set", fn);
    sb_optim_buf bufs[] = {{"param", param},
                           {"grad", grad},
                           {"exp_avg", exp_avg},
                           {"exp_avg_sq", exp_avg_sq},
                           {"max_exp_avg_sq", cfg->amsgrad ? max_exp_avg_sq : NULL}};
    SB_TRY(sb_optim_check_buffers(fn, n, bufs, 5));
    sb_adam_factors f = adam_factors(cfg, step);
    /* Raw pointers are host memory: the CPU backend's update. */
    const sb_backend *be = &sb_backend_cpu;
    return SB_BACKEND_RUN(fn, be, adam, &f, step == 1, n, param, grad, exp_avg, exp_avg_sq,
                          max_exp_avg_sq);
}

sb_status sb_adam_step_tensor(const sb_adam_config *cfg, int64_t step, sb_tensor *param,
                              const sb_tensor *grad, sb_tensor *exp_avg, sb_tensor *exp_avg_sq,
                              sb_tensor *max_exp_avg_sq) {
    SB_FPENV_GUARD();
    const char *fn = "sb_adam_step_tensor";
    SB_TRY(adam_check_step(fn, cfg, step));
    SB_TRY(sb_optim_check_state_tensor(fn, "param", param, param));
    SB_TRY(sb_optim_check_state_tensor(fn, "grad", grad, param));
    SB_TRY(sb_optim_check_state_tensor(fn, "exp_avg", exp_avg, param));
    SB_TRY(sb_optim_check_state_tensor(fn, "exp_avg_sq", exp_avg_sq, param));
    if (cfg->amsgrad) {
        if (!max_exp_avg_sq)
            return sb_fail(SB_ERR_NULL, "%s: max_exp_avg_sq is NULL but amsgrad is set", fn);
        SB_TRY(sb_optim_check_state_tensor(fn, "max_exp_avg_sq", max_exp_avg_sq, param));
    }
    int64_t n = sb_tensor_numel(param);
    float *vmax = cfg->amsgrad ? (float *)max_exp_avg_sq->data : NULL;
    sb_optim_buf bufs[] = {{"param", param->data},
                           {"grad", grad->data},
                           {"exp_avg", exp_avg->data},
                           {"exp_avg_sq", exp_avg_sq->data},
                           {"max_exp_avg_sq", vmax}};
    SB_TRY(sb_optim_check_buffers(fn, n, bufs, 5));
    const sb_backend *be;
    SB_TRY(sb_ops_backend_of(fn, "param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq", 5,
                             (const sb_tensor *[]){param, grad, exp_avg, exp_avg_sq,
                                                   cfg->amsgrad ? max_exp_avg_sq : NULL},
                             &be));
    sb_adam_factors f = adam_factors(cfg, step);
    return SB_BACKEND_RUN(fn, be, adam, &f, step == 1, n, (float *)param->data,
                          (const float *)grad->data, (float *)exp_avg->data,
                          (float *)exp_avg_sq->data, vmax);
}
