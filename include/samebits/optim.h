/* samebits/optim.h - optimizer update rules: SGD (momentum, dampening,
 * Nesterov, L2 weight decay) and Adam / AdamW (with AMSGrad), as exact
 * float32 sequences (docs/CONTRACT.md section "Optimizers").
 *
 * These are the raw per-parameter update kernels and their state; a training
 * loop keeps one step counter per parameter group and calls one of them per
 * parameter tensor. They follow PyTorch's torch.optim.SGD / Adam / AdamW
 * (single-tensor path, foreach=False) operation for operation, with every
 * rounding written down, so the bits are the same on every machine.
 *
 * Hyperparameters are binary64 (double), like the Python floats PyTorch gets:
 * factors such as 1 - beta1 or 1 - lr*weight_decay are formed in binary64 and
 * rounded to float32 once, which is what PyTorch does ((float)(1 - 0.9) is
 * 0.1f, while 1 - 0.9f is 0.100000024f). No pow/exp is ever called: beta^t is
 * a fixed square-and-multiply in double-double arithmetic.
 *
 * Buffers: param, grad and every state buffer hold n floats and must not
 * overlap one another (overlap is rejected). State needs no initialisation:
 * at step 1 the state buffers are read as +0 (SGD's momentum buffer is set to
 * the gradient, as PyTorch does) and then written. On any validation error
 * nothing is written.
 */
#ifndef SAMEBITS_OPTIM_H
#define SAMEBITS_OPTIM_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/export.h"
#include "samebits/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- SGD ------------------------------------------------------------------ */

typedef struct sb_sgd_config {
    double lr;           /* learning rate, finite and >= 0 */
    double momentum;     /* finite and >= 0; 0 disables the momentum buffer */
    double dampening;    /* finite; must be 0 when nesterov */
    double weight_decay; /* finite and >= 0; L2 penalty added to the gradient */
    bool nesterov;       /* needs momentum > 0 and dampening == 0 */
    bool maximize;       /* ascend instead of descend (gradient negated) */
} sb_sgd_config;

/* PyTorch's defaults: momentum 0, dampening 0, weight_decay 0, no flags. */
SB_API sb_sgd_config sb_sgd_default_config(double lr);

/* Validates cfg; the message names `sb_sgd_check_config` and the field. */
SB_API sb_status sb_sgd_check_config(const sb_sgd_config *cfg);

/* The float32 factors every element of a step uses (contract: computed once
 * per step on the host; a GPU kernel receives exactly these). */
typedef struct sb_sgd_factors {
    float weight_decay;        /* (float)weight_decay */
    float momentum;            /* (float)momentum */
    float one_minus_dampening; /* (float)(1.0 - dampening), binary64 subtraction */
    float neg_lr;              /* (float)(-lr) */
    bool use_weight_decay;     /* weight_decay != 0 (tested in binary64) */
    bool use_momentum;         /* momentum != 0 (tested in binary64) */
} sb_sgd_factors;

SB_API sb_status sb_sgd_factors_for(const sb_sgd_config *cfg, sb_sgd_factors *out);

/* One SGD step, in place, over n elements:
 *   param        (n) updated;
 *   grad         (n) read only;
 *   momentum_buf (n) read and written when momentum != 0, otherwise unused
 *                    and may be NULL. At step == 1 it is set from the
 *                    gradient (its previous contents are ignored).
 * step is 1-based (1 on the first update of this parameter). */
SB_API sb_status sb_sgd_step(const sb_sgd_config *cfg, int64_t step, int64_t n, float *param,
                      const float *grad, float *momentum_buf);

/* Tensor form: all tensors F32, contiguous, on the CPU, of param's shape. */
SB_API sb_status sb_sgd_step_tensor(const sb_sgd_config *cfg, int64_t step, sb_tensor *param,
                             const sb_tensor *grad, sb_tensor *momentum_buf);

/* ---- Adam / AdamW ------------------------------------------------------- */

typedef struct sb_adam_config {
    double lr;           /* finite and >= 0 */
    double beta1, beta2; /* each in [0, 1) */
    double eps;          /* finite, > 0, and not 0 once rounded to float */
    double weight_decay; /* finite and >= 0 */
    bool amsgrad;        /* keep max_exp_avg_sq and normalise by it */
    bool decoupled_weight_decay; /* true: AdamW (p *= 1 - lr*wd); false: L2 */
    bool maximize;
} sb_adam_config;

/* PyTorch's defaults. Adam: betas (0.9, 0.999), eps 1e-8, weight_decay 0.
 * AdamW: the same with weight_decay 0.01 and decoupled_weight_decay. */
SB_API sb_adam_config sb_adam_default_config(double lr);
SB_API sb_adam_config sb_adamw_default_config(double lr);

SB_API sb_status sb_adam_check_config(const sb_adam_config *cfg);

/* The scalar factors of step t (contract "Adam scalar factors"). The binary64
 * values are kept for inspection and tests; the float ones feed the kernel. */
typedef struct sb_adam_factors {
    double beta1_pow, beta2_pow;               /* beta^t rounded to binary64 */
    double bias_correction1, bias_correction2; /* 1 - beta^t in binary64 */
    double step_size;                          /* lr / bias_correction1 */
    float weight_decay;          /* (float)weight_decay (L2 form) */
    float decay;                 /* (float)(1 - lr*weight_decay) (AdamW form) */
    float one_minus_beta1;       /* (float)(1 - beta1) */
    float beta2;                 /* (float)beta2 */
    float one_minus_beta2;       /* (float)(1 - beta2) */
    float bias_correction2_sqrt; /* (float)sqrt(bias_correction2) */
    float eps;                   /* (float)eps */
    float neg_step_size;         /* (float)(-step_size) */
    bool use_weight_decay;       /* weight_decay != 0 (tested in binary64) */
    bool decoupled;              /* AdamW form */
    bool amsgrad;
    bool maximize;
} sb_adam_factors;

SB_API sb_status sb_adam_factors_for(const sb_adam_config *cfg, int64_t step, sb_adam_factors *out);

/* One Adam/AdamW step, in place, over n elements:
 *   param          (n) updated;        grad (n) read only;
 *   exp_avg        (n) first moment,   exp_avg_sq (n) second moment;
 *   max_exp_avg_sq (n) running max of exp_avg_sq when amsgrad, otherwise
 *                      unused and may be NULL.
 * At step == 1 the state buffers are read as +0. step is 1-based. */
SB_API sb_status sb_adam_step(const sb_adam_config *cfg, int64_t step, int64_t n, float *param,
                       const float *grad, float *exp_avg, float *exp_avg_sq,
                       float *max_exp_avg_sq);

/* Tensor form: all tensors F32, contiguous, on the CPU, of param's shape. */
SB_API sb_status sb_adam_step_tensor(const sb_adam_config *cfg, int64_t step, sb_tensor *param,
                              const sb_tensor *grad, sb_tensor *exp_avg, sb_tensor *exp_avg_sq,
                              sb_tensor *max_exp_avg_sq);

#ifdef __cplusplus
}
#endif
#endif
