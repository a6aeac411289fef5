/* Batch correctly rounded math (src/cpu/vmath.h): the entry points call the
 * active kernel context's table (cpu/kernels.h). The scalar level is the
 * plain loop over the scalar functions, and is what every vector level
 * must reproduce bit for bit. */
#include <stddef.h>
#include "cpu/kernels.h"
#include "cpu/vmath.h"
#include "samebits/math.h"

#define SB_VMATH_SCALAR(name)                                                 \
    static void name##_scalar_n(const float *x, float *y, int64_t n) {        \
        for (int64_t i = 0; i < n; i++) y[i] = sb_##name(x[i]);               \
    }
SB_VMATH_SCALAR(expf)
SB_VMATH_SCALAR(logf)
SB_VMATH_SCALAR(tanhf)
SB_VMATH_SCALAR(expm1f)
SB_VMATH_SCALAR(log1pf)
SB_VMATH_SCALAR(erff)
SB_VMATH_SCALAR(exp2f)
SB_VMATH_SCALAR(log2f)
SB_VMATH_SCALAR(sinf)
SB_VMATH_SCALAR(cosf)

static void expf_sub_scalar_n(const float *x, float c, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = sb_expf(x[i] - c);
}

static void erff_mul_scalar_n(const float *x, float c, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = sb_erff(x[i] * c);
}

const sb_vmath_table sb_vmath_scalar = {
    .expf_n = expf_scalar_n,     .logf_n = logf_scalar_n,         .tanhf_n = tanhf_scalar_n,
    .expm1f_n = expm1f_scalar_n, .log1pf_n = log1pf_scalar_n,     .erff_n = erff_scalar_n,
    .exp2f_n = exp2f_scalar_n,   .log2f_n = log2f_scalar_n,       .sinf_n = sinf_scalar_n,
    .cosf_n = cosf_scalar_n,     .expf_sub_n = expf_sub_scalar_n, .erff_mul_n = erff_mul_scalar_n};

#define SB_VMATH_ENTRY(name)                                                  \
    void sb_cpu_##name##_n(const float *x, float *y, int64_t n) {            \
        sb_kernels()->vmath->name##_n(x, y, n);                               \
    }
SB_VMATH_ENTRY(expf)
SB_VMATH_ENTRY(logf)
SB_VMATH_ENTRY(tanhf)
SB_VMATH_ENTRY(expm1f)
SB_VMATH_ENTRY(log1pf)
SB_VMATH_ENTRY(erff)
SB_VMATH_ENTRY(exp2f)
SB_VMATH_ENTRY(log2f)
SB_VMATH_ENTRY(sinf)
SB_VMATH_ENTRY(cosf)

void sb_cpu_expf_sub_n(const float *x, float c, float *y, int64_t n) {
    sb_kernels()->vmath->expf_sub_n(x, c, y, n);
}

void sb_cpu_erff_mul_n(const float *x, float c, float *y, int64_t n) {
    sb_kernels()->vmath->erff_mul_n(x, c, y, n);
}
