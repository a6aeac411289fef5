/* The fast optimizer updates: the element loops of src/optim/adam.c and
 * src/optim/sgd.c (contract "Optimizers"), vectorised per ISA
 * (pointwise_simd.h; the fused multiply-adds are the contract's fmaf, so
 * ISAs without one, SSE2 and scalar, keep the libm fmaf loop) and split
 * over threads. Every element is independent and reads all its inputs
 * before writing, so any split gives the same bits. */
#include "cpu/kernels.h"
#include "cpu/ops_internal.h"

enum { MIN_GRAIN = 16384 };

typedef struct opt_job {
    const sb_adam_factors *adam;
    const sb_sgd_factors *sgd;
    bool first, nesterov, maximize;
    float *param, *m, *v, *vmax, *buf;
    const float *grad;
    const sb_pwv_table *t;
} opt_job;

static void adam_range(void *vjob, int64_t b, int64_t e) {
    const opt_job *j = vjob;
    j->t->adam(j->adam, j->first, e - b, j->param + b, j->grad + b, j->m + b, j->v + b,
               j->vmax ? j->vmax + b : NULL);
}

static void sgd_range(void *vjob, int64_t b, int64_t e) {
    const opt_job *j = vjob;
    j->t->sgd(j->sgd, j->nesterov, j->maximize, j->first, e - b, j->param + b, j->grad + b,
              j->buf ? j->buf + b : NULL);
}

void sb_cpu_adam(const sb_adam_factors *f, bool first, int64_t n, float *param,
                 const float *grad, float *m, float *v, float *vmax) {
    opt_job j = {.adam = f, .first = first, .param = param, .grad = grad, .m = m, .v = v,
                 .vmax = f->amsgrad ? vmax : NULL, .t = sb_kernels()->pointwise};
    sb_parallel_for(n, sb_parallel_grain(n, MIN_GRAIN), adam_range, &j);
}

void sb_cpu_sgd(const sb_sgd_factors *f, bool nesterov, bool maximize, bool first, int64_t n,
                float *param, const float *grad, float *buf) {
    opt_job j = {.sgd = f, .first = first, .nesterov = nesterov, .maximize = maximize,
                 .param = param, .grad = grad, .buf = f->use_momentum ? buf : NULL,
                 .t = sb_kernels()->pointwise};
    sb_parallel_for(n, sb_parallel_grain(n, MIN_GRAIN), sgd_range, &j);
}
