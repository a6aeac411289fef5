/* Optimizers over a module's parameters: the update rules are in
 * src/optim/ (contract "Optimizers"); this keeps the per-parameter state and
 * the step counter, and visits parameters in declaration order. */
#include <stdio.h>
#include <stdlib.h>
#include "core/fpenv.h"
#include "core/internal.h"
#include "train/train_internal.h"

enum { OPT_SGD, OPT_ADAM };
#define MAX_STATE 3

struct sb_optimizer {
    int kind;
    sb_sgd_config sgd;
    sb_adam_config adam;
    int64_t steps;
    size_t n_params;
    sb_named *params;
    size_t n_state;                /* state tensors per parameter */
    const char *state_names[MAX_STATE];
    sb_tensor **state;             /* n_params * n_state, NULL where unused */
};

static sb_status optimizer_new(sb_optimizer **out, sb_module *model, int kind, size_t n_state,
                               const char *const *names) {
    const char *fn = kind == OPT_SGD ? "sb_optimizer_sgd" : "sb_optimizer_adam";
    sb_optimizer *o = sb_calloc(fn, 1, sizeof *o);
    if (!o) return SB_ERR_NOMEM;
    o->kind = kind;
    o->n_state = n_state;
    for (size_t i = 0; i < n_state; i++) o->state_names[i] = names[i];
    sb_status s = sb_module_parameters(model, NULL, 0, &o->n_params);
    if (s == SB_OK) {
        o->params = sb_calloc(fn, o->n_params, sizeof *o->params);
        o->state = sb_calloc(fn, o->n_params * (n_state ? n_state : 1), sizeof *o->state);
        if (!o->params || !o->state) s = SB_ERR_NOMEM;
    }
    if (s == SB_OK) s = sb_module_parameters(model, o->params, o->n_params, &o->n_params);
    for (size_t p = 0; s == SB_OK && p < o->n_params; p++)
        for (size_t k = 0; s == SB_OK && k < n_state; k++) {
            const sb_tensor *v = o->params[p].value;
            s = sb_tensor_new_on(&o->state[p * n_state + k], v->device, SB_F32, v->ndim, v->shape);
        }
    if (s != SB_OK) { sb_optimizer_free(o); return s; }
    *out = o;
    return SB_OK;
}

sb_status sb_optimizer_sgd(sb_optimizer **out, sb_module *model, const sb_sgd_config *cfg) {
    SB_FPENV_GUARD();
    if (!out) return sb_fail(SB_ERR_NULL, "sb_optimizer_sgd: out is NULL");
    *out = NULL;
    if (!model) return sb_fail(SB_ERR_NULL, "sb_optimizer_sgd: model is NULL");
    if (!cfg) return sb_fail(SB_ERR_NULL, "sb_optimizer_sgd: cfg is NULL");
    SB_TRY(sb_sgd_check_config(cfg));
    static const char *names[] = {"momentum_buffer"};
    SB_TRY(optimizer_new(out, model, OPT_SGD, cfg->momentum != 0.0 ? 1 : 0, names));
    (*out)->sgd = *cfg;
    return SB_OK;
}

sb_status sb_optimizer_adam(sb_optimizer **out, sb_module *model, const sb_adam_config *cfg) {
    SB_FPENV_GUARD();
    if (!out) return sb_fail(SB_ERR_NULL, "sb_optimizer_adam: out is NULL");
    *out = NULL;
    if (!model) return sb_fail(SB_ERR_NULL, "sb_optimizer_adam: model is NULL");
    if (!cfg) return sb_fail(SB_ERR_NULL, "sb_optimizer_adam: cfg is NULL");
    SB_TRY(sb_adam_check_config(cfg));
    static const char *names[] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
    SB_TRY(optimizer_new(out, model, OPT_ADAM, cfg->amsgrad ? 3 : 2, names));
    (*out)->adam = *cfg;
    return SB_OK;
}

void sb_optimizer_free(sb_optimizer *o) {
    if (!o) return;
    for (size_t i = 0; o->state && i < o->n_params * o->n_state; i++) sb_tensor_free(o->state[i]);
    free(o->state);
    free(o->params);
    free(o);
}

const char *sb_optimizer_kind(const sb_optimizer *o) {
    return !o ? "(null)" : o->kind == OPT_SGD ? "sgd" : o->adam.decoupled_weight_decay ? "adamw" : "adam";
}

int64_t sb_optimizer_steps(const sb_optimizer *o) { return o ? o->steps : 0; }

sb_status sb_optimizer_step(sb_optimizer *o) {
    SB_FPENV_GUARD();
    if (!o) return sb_fail(SB_ERR_NULL, "sb_optimizer_step: optimizer is NULL");
    if (o->steps >= SB_TRAIN_MAX_STEPS)
        return sb_fail(SB_ERR_RANGE, "sb_optimizer_step: the step counter is at its limit %lld",
                       (long long)SB_TRAIN_MAX_STEPS);
    int64_t step = o->steps + 1;
    for (size_t p = 0; p < o->n_params; p++) {
        sb_tensor **st = &o->state[p * o->n_state];
        if (o->kind == OPT_SGD)
            SB_TRY(sb_sgd_step_tensor(&o->sgd, step, o->params[p].value, o->params[p].grad,
                                      o->n_state ? st[0] : NULL));
        else
            SB_TRY(sb_adam_step_tensor(&o->adam, step, o->params[p].value, o->params[p].grad, st[0],
                                       st[1], o->n_state > 2 ? st[2] : NULL));
    }
    o->steps = step;
    return SB_OK;
}

sb_status sb_optimizer_state(sb_optimizer *o, sb_named *out, size_t cap, size_t *count) {
    if (!o) return sb_fail(SB_ERR_NULL, "sb_optimizer_state: optimizer is NULL");
    if (!count) return sb_fail(SB_ERR_NULL, "sb_optimizer_state: count is NULL");
    if (cap && !out) return sb_fail(SB_ERR_NULL, "sb_optimizer_state: out is NULL");
    size_t n = 0;
    for (size_t p = 0; p < o->n_params; p++)
        for (size_t k = 0; k < o->n_state; k++, n++) {
            if (n >= cap) continue;
            char full[160];
            snprintf(full, sizeof full, "%s.%s", o->params[p].name, o->state_names[k]);
            snprintf(out[n].name, sizeof out[n].name, "%.63s", full);
            out[n].value = o->state[p * o->n_state + k];
            out[n].grad = NULL;
        }
    *count = n;
    return SB_OK;
}

void sb_optimizer_set_steps(sb_optimizer *o, int64_t steps) { o->steps = steps; }
