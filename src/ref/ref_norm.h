/* src/ref/ref_norm.h - raw-buffer reference kernels for normalisation
 * (contract section "Normalisation"). Buffers are contiguous row-major,
 * already validated by src/ops/norm.c; optional pointers may be NULL. */
#ifndef SAMEBITS_REF_NORM_H
#define SAMEBITS_REF_NORM_H

#include <stdbool.h>
#include <stdint.h>

/* x, y are (N,C,S) with S = prod(spatial dims); gamma, beta, running_mean,
 * running_var, save_mean, save_rstd are (C).
 * training: batch statistics (needs N*S >= 1; N*S >= 2 if running stats are
 * given, which are then updated). eval: running stats (required) are used. */
void sb_ref_batch_norm_forward(const float *x, const float *gamma, const float *beta,
                               float *running_mean, float *running_var, bool training,
                               float momentum, float eps, float *y, float *save_mean,
                               float *save_rstd, int64_t N, int64_t C, int64_t S);

/* dy, x, dx are (N,C,S); gamma, mean, rstd, dgamma, dbeta are (C). */
void sb_ref_batch_norm_backward(const float *dy, const float *x, const float *gamma,
                                const float *mean, const float *rstd, bool training,
                                float *dx, float *dgamma, float *dbeta, int64_t N,
                                int64_t C, int64_t S);

/* x, y are (R,D); w, b are (D); save_mean, save_rstd are (R). D >= 1. */
void sb_ref_layer_norm_forward(const float *x, const float *w, const float *b, float eps,
                               float *y, float *save_mean, float *save_rstd, int64_t R,
                               int64_t D);

/* dy, x, dx are (R,D); w, dw, db are (D); mean, rstd are (R). */
void sb_ref_layer_norm_backward(const float *dy, const float *x, const float *w,
                                const float *mean, const float *rstd, float *dx, float *dw,
                                float *db, int64_t R, int64_t D);

/* Group norm: x, y, dy, dx are (N,C,S); gamma, beta, dgamma, dbeta are (C);
 * save_mean, save_rstd are (N,G), G >= 1 divides C, (C/G) * S >= 1. */
void sb_ref_group_norm_forward(const float *x, const float *gamma, const float *beta, float eps,
                               float *y, float *save_mean, float *save_rstd, int64_t N,
                               int64_t C, int64_t S, int64_t G);
void sb_ref_group_norm_backward(const float *dy, const float *x, const float *gamma,
                                const float *mean, const float *rstd, float *dx, float *dgamma,
                                float *dbeta, int64_t N, int64_t C, int64_t S, int64_t G);

/* RMS norm: x, y, dy, dx are (R,D); w, dw are (D); save_rrms / rrms are (R),
 * the 1/sqrt(mean of squares + eps) of each row. D >= 1; w may be NULL. */
void sb_ref_rms_norm_forward(const float *x, const float *w, float eps, float *y,
                             float *save_rrms, int64_t R, int64_t D);
void sb_ref_rms_norm_backward(const float *dy, const float *x, const float *w, const float *rrms,
                              float *dx, float *dw, int64_t R, int64_t D);

#endif
