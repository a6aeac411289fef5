/* src/ref/ref_attention.h - reference kernels of scaled dot-product
 * attention (contract section "Attention"). Internal: not installed.
 *
 * One geometry serves the forward and the backward pass: the batch (the
 * product of the leading dimensions, with their sizes so that a broadcast
 * mask can be addressed), the four sizes, the mask's strides (0 along its
 * broadcast dimensions) and the causal alignment, scale and dropout key.
 * q, k, v, out, probs and the gradients are dense row-major buffers; the
 * caller has validated everything. */
#ifndef SAMEBITS_REF_ATTENTION_H
#define SAMEBITS_REF_ATTENTION_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/attention.h"

typedef enum sb_ref_sdpa_mask_kind {
    SB_REF_SDPA_MASK_NONE = 0,
    SB_REF_SDPA_MASK_BOOL = 1, /* int32: 0 excludes the key */
    SB_REF_SDPA_MASK_ADD = 2   /* float32: added to the scaled score */
} sb_ref_sdpa_mask_kind;

typedef struct sb_ref_sdpa_geom {
    int nlead;                        /* leading dimensions, 0..SB_MAX_DIMS-2 */
    int64_t lead[SB_MAX_DIMS];        /* their sizes */
    int64_t batch;                    /* product of lead */
    int64_t lq, lk, e, ev;
    sb_ref_sdpa_mask_kind mask_kind;
    int64_t mask_lead_stride[SB_MAX_DIMS]; /* per leading dimension, 0 when broadcast */
    int64_t mask_stride_i, mask_stride_j;
    sb_sdpa_causal causal;
    float scale;
    float dropout_p;                  /* 0: no dropout */
    uint64_t seed, stream, offset;
} sb_ref_sdpa_geom;

/* ---- the rules every implementation shares (src/ref/attention.c) ---- */

/* Keys j < causal_end are not excluded by the causal rule for row i (Lk
 * without one; may be 0). */
int64_t sb_ref_sdpa_causal_end(const sb_ref_sdpa_geom *g, int64_t i);
/* Element offset of mask row (b, i) (mask[that + j * mask_stride_j]). */
int64_t sb_ref_sdpa_mask_row(const sb_ref_sdpa_geom *g, int64_t b, int64_t i);
/* True when key j is excluded for the row (causal end, boolean mask row). */
static inline bool sb_ref_sdpa_excluded(const sb_ref_sdpa_geom *g, const void *mask,
                                        int64_t mrow, int64_t cend, int64_t j) {
    if (j >= cend) return true;
    return g->mask_kind == SB_REF_SDPA_MASK_BOOL &&
           ((const int32_t *)mask)[mrow + j * g->mask_stride_j] == 0;
}
/* The dropout multiplier keep * dscale of element (b, i, j), 1.0f without
 * dropout. */
float sb_ref_sdpa_drop(const sb_ref_sdpa_geom *g, int64_t b, int64_t i, int64_t j);

/* q (batch, lq, e), k (batch, lk, e), v (batch, lk, ev), out (batch, lq, ev),
 * probs (batch, lq, lk) or NULL. */
void sb_ref_sdpa_forward(const sb_ref_sdpa_geom *g, const float *q, const float *k,
                         const float *v, const void *mask, float *out, float *probs);
/* dq, dk, dv may each be NULL; probs from the forward pass. */
void sb_ref_sdpa_backward(const sb_ref_sdpa_geom *g, const float *dout, const float *q,
                          const float *k, const float *v, const void *mask, const float *probs,
                          float *dq, float *dk, float *dv);

#endif
