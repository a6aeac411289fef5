/* Batch correctly rounded math (src/cpu/vmath.h): dispatch on sb_isa().
 * The scalar level is the plain loop over the scalar functions, and is
 * what every vector level must reproduce bit for bit. */
#include <stddef.h>
#include "cpu/vmath.h"
#include "samebits/math.h"

static void scalar_loop(float (*f)(float), const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = f(x[i]);
}

static const sb_vmath_table *vmath_table(void) {
    switch (sb_isa()) {
#if SB_HAVE_X86_KERNELS
    case SB_ISA_SSE2: return &sb_vmath_sse2;
    case SB_ISA_AVX2: return &sb_vmath_avx2;
    case SB_ISA_AVX512: return &sb_vmath_avx512;
#endif
#if SB_HAVE_NEON_KERNELS
    case SB_ISA_NEON: return &sb_vmath_neon;
#endif
    default: return NULL;
    }
}

#define SB_VMATH_ENTRY(name)                                                  \
    void sb_cpu_##name##_n(const float *x, float *y, int64_t n) {            \
        const sb_vmath_table *t = vmath_table();                              \
        if (t && t->name##_n) t->name##_n(x, y, n);                           \
        else scalar_loop(sb_##name, x, y, n);                                 \
    }

SB_VMATH_ENTRY(expf)
SB_VMATH_ENTRY(logf)
SB_VMATH_ENTRY(tanhf)
SB_VMATH_ENTRY(expm1f)
SB_VMATH_ENTRY(log1pf)
SB_VMATH_ENTRY(erff)
