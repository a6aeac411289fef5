/* src/optim/sgd.c - SGD with momentum, dampening, Nesterov and L2 weight
 * decay (contract section "Optimizers / SGD"), plus the validation helpers
 * both optimizers share.
 *
 * Every "a + alpha*b" of PyTorch's SGD is its add(..., alpha=) kernel, which
 * PyTorch's vectorised CPU code evaluates as one fused multiply-add; the
 * contract fixes exactly that, so each such step here is an explicit fmaf.
 * The element loop is sb_ref_sgd_update (src/ref/optim.c). */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "samebits/optim.h"
#include "core/fpenv.h"
#include "core/internal.h"
#include "backend/backend.h"
#include "cpu/ops_internal.h"
#include "optim/optim_internal.h"
#include "ops/validate.h"

#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "samebits optimizers need FLT_EVAL_METHOD == 0 (no excess precision)"
#endif

/* ---- shared validation ---------------------------------------------------- */

sb_status sb_optim_check_finite(const char *fn, const char *field, double x) {
    if (!isfinite(x)) return sb_fail(SB_ERR_ARG, "%s: %s = %g is not finite", fn, field, x);
    return SB_OK;
}

sb_status sb_optim_check_buffers(const char *fn, int64_t n, const sb_optim_buf *bufs, int count) {
    if (n < 0) return sb_fail(SB_ERR_ARG, "%s: n = %lld is negative", fn, (long long)n);
    if ((uint64_t)n > SIZE_MAX / sizeof(float))
        return sb_fail(SB_ERR_ARG, "%s: n = %lld is too large to address", fn, (long long)n);
    uintptr_t bytes = (uintptr_t)n * sizeof(float);
    // Elementwise in place would tolerate exact aliasing, but a shifted
    // overlap silently mixes elements; one simple rule rejects both.
    for (int i = 0; i < count; i++) {
        if (!bufs[i].ptr || n == 0) continue;
        uintptr_t a = (uintptr_t)bufs[i].ptr;
        for (int j = i + 1; j < count; j++) {
            if (!bufs[j].ptr) continue;
            uintptr_t b = (uintptr_t)bufs[j].ptr;
            if (a < b + bytes && b < a + bytes)
                return sb_fail(SB_ERR_ARG, "%s: %s and %s overlap (every buffer needs its own memory)",
                               fn, bufs[i].name, bufs[j].name);
        }
    }
    return SB_OK;
}

sb_status sb_optim_check_state_tensor(const char *fn, const char *name, const sb_tensor *t,
                                      const sb_tensor *param) {
    SB_TRY(sb_check_tensor(fn, name, t, SB_F32, -1));
    SB_TRY(sb_check_contiguous(fn, name, t));
    if (t != param) SB_TRY(sb_check_same_shape(fn, name, t, "param", param));
    return SB_OK;
}

/* ---- configuration ---------------------------------------------------------- */

sb_sgd_config sb_sgd_default_config(double lr) {
    sb_sgd_config c = {0};
    c.lr = lr;
    return c;
}

static sb_status sgd_check(const char *fn, const sb_sgd_config *cfg) {
    if (!cfg) return sb_fail(SB_ERR_NULL, "%s: cfg is NULL", fn);
    SB_TRY(sb_optim_check_finite(fn, "lr", cfg->lr));
    SB_TRY(sb_optim_check_finite(fn, "momentum", cfg->momentum));
    SB_TRY(sb_optim_check_finite(fn, "dampening", cfg->dampening));
    SB_TRY(sb_optim_check_finite(fn, "weight_decay", cfg->weight_decay));
    if (cfg->lr < 0) return sb_fail(SB_ERR_ARG, "%s: lr = %g must be >= 0", fn, cfg->lr);
    if (cfg->momentum < 0)
        return sb_fail(SB_ERR_ARG, "%s: momentum = %g must be >= 0", fn, cfg->momentum);
    if (cfg->weight_decay < 0)
        return sb_fail(SB_ERR_ARG, "%s: weight_decay = %g must be >= 0", fn, cfg->weight_decay);
    if (cfg->nesterov && (cfg->momentum <= 0 || cfg->dampening != 0))
        return sb_fail(SB_ERR_ARG,
                       "%s: nesterov needs momentum > 0 and dampening == 0 (got momentum = %g, "
                       "dampening = %g)", fn, cfg->momentum, cfg->dampening);
    return SB_OK;
}

sb_status sb_sgd_check_config(const sb_sgd_config *cfg) {
    SB_FPENV_GUARD();
    return sgd_check("sb_sgd_check_config", cfg);
}

static sb_sgd_factors sgd_factors(const sb_sgd_config *cfg) {
    sb_sgd_factors f;
    f.weight_decay = (float)cfg->weight_decay;
    f.momentum = (float)cfg->momentum;
    f.one_minus_dampening = (float)(1.0 - cfg->dampening);
    f.neg_lr = (float)(-cfg->lr);
    f.use_weight_decay = cfg->weight_decay != 0;
    f.use_momentum = cfg->momentum != 0;
    return f;
}

sb_status sb_sgd_factors_for(const sb_sgd_config *cfg, sb_sgd_factors *out) {
    SB_FPENV_GUARD();
    const char *fn = "sb_sgd_factors_for";
    SB_TRY(sgd_check(fn, cfg));
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = sgd_factors(cfg);
    return SB_OK;
}

/* ---- the update ------------------------------------------------------------- */

static sb_status sgd_check_step(const char *fn, const sb_sgd_config *cfg, int64_t step) {
    SB_TRY(sgd_check(fn, cfg));
    if (step < 1) return sb_fail(SB_ERR_ARG, "%s: step = %lld must be >= 1 (steps count from 1)",
                                 fn, (long long)step);
    return SB_OK;
}

sb_status sb_sgd_step(const sb_sgd_config *cfg, int64_t step, int64_t n, float *param,
                      const float *grad, float *momentum_buf) {
    SB_FPENV_GUARD();
    const char *fn = "sb_sgd_step";
    SB_TRY(sgd_check_step(fn, cfg, step));
    if (!param) return sb_fail(SB_ERR_NULL, "%s: param is NULL", fn);
    if (!grad) return sb_fail(SB_ERR_NULL, "%s: grad is NULL", fn);
    sb_sgd_factors f = sgd_factors(cfg);
    if (f.use_momentum && !momentum_buf)
        return sb_fail(SB_ERR_NULL, "%s: momentum_buf is NULL but momentum = %g", fn, cfg->momentum);
    sb_optim_buf bufs[] = {{"param", param}, {"grad", grad},
                           {"momentum_buf", f.use_momentum ? momentum_buf : NULL}};
    SB_TRY(sb_optim_check_buffers(fn, n, bufs, 3));
    /* Raw pointers are host memory: the CPU backend's update. */
    const sb_backend *be = &sb_backend_cpu;
    return SB_BACKEND_RUN(fn, be, sgd, &f, cfg->nesterov, cfg->maximize, step == 1, n, param, grad,
                          momentum_buf);
}

sb_status sb_sgd_step_tensor(const sb_sgd_config *cfg, int64_t step, sb_tensor *param,
                             const sb_tensor *grad, sb_tensor *momentum_buf) {
    SB_FPENV_GUARD();
    const char *fn = "sb_sgd_step_tensor";
    SB_TRY(sgd_check_step(fn, cfg, step));
    SB_TRY(sb_optim_check_state_tensor(fn, "param", param, param));
    SB_TRY(sb_optim_check_state_tensor(fn, "grad", grad, param));
    bool use_momentum = cfg->momentum != 0;
    if (use_momentum) {
        if (!momentum_buf)
            return sb_fail(SB_ERR_NULL, "%s: momentum_buf is NULL but momentum = %g", fn, cfg->momentum);
        SB_TRY(sb_optim_check_state_tensor(fn, "momentum_buf", momentum_buf, param));
    }
    int64_t n = sb_tensor_numel(param);
    sb_optim_buf bufs[] = {{"param", param->data}, {"grad", grad->data},
                           {"momentum_buf", use_momentum ? momentum_buf->data : NULL}};
    SB_TRY(sb_optim_check_buffers(fn, n, bufs, 3));
    const sb_backend *be;
    SB_TRY(sb_ops_backend_of(fn, "param, grad, momentum_buf", 3,
                             (const sb_tensor *[]){param, grad, use_momentum ? momentum_buf : NULL},
                             &be));
    sb_sgd_factors f = sgd_factors(cfg);
    return SB_BACKEND_RUN(fn, be, sgd, &f, cfg->nesterov, cfg->maximize, step == 1, n,
                          (float *)param->data, (const float *)grad->data,
                          use_momentum ? (float *)momentum_buf->data : NULL);
}
