/* src/ref/prelu_terms.h - PReLU's per-element rules (contract section 9,
 * "PReLU"): one text for the reference and the OpenCL kernels (the norm
 * program embeds it before prelu.cl). Each is one comparison and at most
 * one float32 multiplication. Not installed. */
#ifndef SAMEBITS_PRELU_TERMS_H
#define SAMEBITS_PRELU_TERMS_H

/* y = x for NaN x (w * NaN would pick a payload by operand order, which
 * compilers may swap), else x > 0 ? x : w * x. */
static inline float sb_prelu_y(float x, float w) { return x != x ? x : (x > 0.0f ? x : w * x); }

/* dx = x > 0 ? dy : w * dy. */
static inline float sb_prelu_dx(float x, float w, float dy) { return x > 0.0f ? dy : w * dy; }

/* The term of dweight: x > 0 ? +0 : x * dy. */
static inline float sb_prelu_dw_term(float x, float dy) { return x > 0.0f ? 0.0f : x * dy; }

#endif
