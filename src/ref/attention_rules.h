/* src/ref/attention_rules.h - which keys a query row of scaled dot-product
 * attention sees, and where its mask row lies (contract section 19,
 * "Attention"). One text for every implementation: the reference (and
 * through it the CPU kernels) includes it as C, and the OpenCL math program
 * embeds it before attention.cl (its #include lines are dropped there).
 * Integer arithmetic only. Not installed. */
#ifndef SAMEBITS_ATTENTION_RULES_H
#define SAMEBITS_ATTENTION_RULES_H

#ifdef __OPENCL_VERSION__
#ifndef SB_OPENCL_INT64_T
#define SB_OPENCL_INT64_T
typedef long int64_t;
#endif
/* sb_sdpa_causal's values (include/samebits/attention.h). */
#define SB_SDPA_NOT_CAUSAL 0
#define SB_SDPA_CAUSAL_TOP_LEFT 1
#define SB_SDPA_CAUSAL_BOTTOM_RIGHT 2
#else
#include <stdint.h>
#include "samebits/attention.h"
#endif

/* Keys j < the result are not excluded by the causal rule for query row i
 * of lq rows over lk keys (lk without one; may be 0): top-left keeps
 * j <= i, bottom-right keeps j <= i + lk - lq. */
static inline int64_t sb_sdpa_causal_end(int causal, int64_t i, int64_t lq, int64_t lk) {
    int64_t last; /* the last key row i may see */
    switch (causal) {
    case SB_SDPA_CAUSAL_TOP_LEFT: last = i; break;
    case SB_SDPA_CAUSAL_BOTTOM_RIGHT: last = i + lk - lq; break;
    default: return lk;
    }
    if (last < 0) return 0;
    return last + 1 < lk ? last + 1 : lk;
}

/* Element offset of mask row (b, i): b in row-major order over the nlead
 * leading sizes `lead`, each with its mask stride (0 when broadcast). */
static inline int64_t sb_sdpa_mask_row(int nlead, const int64_t *lead, const int64_t *lead_stride,
                                       int64_t stride_i, int64_t b, int64_t i) {
    int64_t at = i * stride_i;
    for (int d = nlead - 1; d >= 0; d--) {
        at += (b % lead[d]) * lead_stride[d];
        b /= lead[d];
    }
    return at;
}

#endif
