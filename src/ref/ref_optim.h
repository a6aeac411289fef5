/* src/ref/ref_optim.h - the reference element loops of the optimizer
 * updates. Not installed. Like every reference kernel they do not validate:
 * sb_sgd_step / sb_adam_step (src/optim/) check every argument first. The
 * factors come from sb_sgd_factors_for / sb_adam_factors_for. */
#ifndef SAMEBITS_REF_OPTIM_H
#define SAMEBITS_REF_OPTIM_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/optim.h"

/* param, grad, m_buf, v_buf, vmax_buf are (n); vmax_buf is used only when
 * f->amsgrad. `first`: step 1 (the state buffers are read as zeros). */
void sb_ref_adam_update(const sb_adam_factors *f, bool first, int64_t n, float *param,
                        const float *grad, float *m_buf, float *v_buf, float *vmax_buf);
/* param, grad, buf are (n); buf is used only when f->use_momentum. */
void sb_ref_sgd_update(const sb_sgd_factors *f, bool nesterov, bool maximize, bool first,
                       int64_t n, float *param, const float *grad, float *buf);

#endif
