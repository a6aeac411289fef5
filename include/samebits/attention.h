/* samebits/attention.h - scaled dot-product attention, forward and backward.
 *
 * q is (..., Lq, E), k is (..., Lk, E), v is (..., Lk, Ev), out is
 * (..., Lq, Ev), probs (the softmax, before dropout) is (..., Lq, Lk); the
 * leading dimensions ("batch", 0 to 6 of them) are equal in all of them.
 * Every tensor is float32 and contiguous. For each batch entry and query
 * row i, with the keys j of that batch entry:
 *
 *     s_ij = (chain over e ascending of q_ie*k_je) * scale     (one rounding)
 *            + m_ij                     (a float mask only: one rounding)
 *     s_ij = -inf where key j is excluded (causal, or a boolean mask 0)
 *     p_ij = softmax of the row s_i by contract section 11, except that a
 *            row whose maximum is -inf (every key excluded) gives p_ij = +0
 *     d_ij = p_ij * (keep_ij * dscale)  with dropout (dropout_p > 0), else p_ij
 *     out_ic = chain over the keys j not excluded, ascending, of d_ij*v_jc
 *
 * mask (may be NULL) broadcasts to (..., Lq, Lk) (its dimensions are aligned
 * from the right, each 1 or the full size) and is either float32 (added to
 * the scaled scores) or int32 (boolean: 0 excludes the key, any other value
 * keeps it). Dropout keeps (i, j) iff sb_rng_uniform_at(seed, stream,
 * offset + t) >= dropout_p, t the row-major index of (batch, i, j) in probs,
 * and dscale = 1 / (1 - dropout_p) as sb_dropout_forward computes it.
 * Contract: docs/CONTRACT.md, section "Attention".
 */
#ifndef SAMEBITS_ATTENTION_H
#define SAMEBITS_ATTENTION_H
#include <stdint.h>
#include "samebits/export.h"
#include "samebits/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which keys a causal mask excludes from query row i (values stable):
 *   TOP_LEFT     (PyTorch's is_causal): key j is kept iff j <= i;
 *   BOTTOM_RIGHT (a KV-cache decode):   key j is kept iff j <= i + Lk - Lq,
 *                so the last query row sees every key. */
typedef enum sb_sdpa_causal {
    SB_SDPA_NOT_CAUSAL = 0,
    SB_SDPA_CAUSAL_TOP_LEFT = 1,
    SB_SDPA_CAUSAL_BOTTOM_RIGHT = 2
} sb_sdpa_causal;

/* The default scale of a head size E >= 1: (float)(1.0 / sqrt((double)E)),
 * binary64 operations rounded once to float32 (PyTorch's default, which is
 * that binary64 value). */
SB_API sb_status sb_sdpa_default_scale(int64_t e, float *scale);

/* scale finite; dropout_p in [0, 1] (0: no dropout, nothing drawn);
 * offset + numel(probs shape) <= SB_RNG_INDEX_LIMIT when dropout_p > 0.
 * probs may be NULL; sb_sdpa_backward needs it. */
SB_API sb_status sb_sdpa_forward(const sb_tensor *q, const sb_tensor *k, const sb_tensor *v,
                                 const sb_tensor *mask, sb_sdpa_causal causal, float scale,
                                 float dropout_p, uint64_t seed, uint64_t stream, uint64_t offset,
                                 sb_tensor *out, sb_tensor *probs);

/* Gradients given dout (out's shape), the forward's arguments and its probs;
 * dq, dk, dv (shapes of q, k, v) are written, not accumulated, and each may
 * be NULL. With the kept (i, j) of the forward, g_ij = dS_ij * scale:
 *     dP_ij  = (chain over c of dout_ic*v_jc) [* (keep_ij * dscale)]
 *     dot_i  = canonical sum over j ascending of dP_ij * p_ij (excluded: +0)
 *     dS_ij  = p_ij * (dP_ij - dot_i)
 *     dq_ie  = chain over kept j ascending of g_ij*k_je
 *     dk_je  = chain over i ascending (j kept for i) of g_ij*q_ie
 *     dv_jc  = chain over i ascending (j kept for i) of d_ij*dout_ic
 * The float mask gets no gradient. */
SB_API sb_status sb_sdpa_backward(const sb_tensor *dout, const sb_tensor *q, const sb_tensor *k,
                                  const sb_tensor *v, const sb_tensor *mask,
                                  sb_sdpa_causal causal, float scale, float dropout_p,
                                  uint64_t seed, uint64_t stream, uint64_t offset,
                                  const sb_tensor *probs, sb_tensor *dq, sb_tensor *dk,
                                  sb_tensor *dv);

#ifdef __cplusplus
}
#endif
#endif
