/* Tensor-level batch, layer, RMS and group norm: argument validation around the
 * device's kernels (on the CPU the fast kernels of src/cpu/norm.c, bit for
 * bit the reference kernels of src/ref/norm.c, threaded; contract section
 * "Normalisation").
 * Every check runs before the first write, so a failing call leaves all
 * outputs and running statistics untouched. */
#include <math.h>
#include "samebits/norm.h"
#include "core/fpenv.h"
#include "ops/validate.h"

/* Empty tensors have nothing to lay out, so they count as contiguous
 * whatever strides their header carries. */
static sb_status check_contig(const char *fn, const char *name, const sb_tensor *t) {
    return sb_tensor_numel(t) == 0 ? SB_OK : sb_check_contiguous(fn, name, t);
}

/* A float32, contiguous CPU tensor of exactly `ndim` dims and `shape`.
 * `what` says in words what the shape must be, for the message. */
static sb_status check_exact(const char *fn, const char *name, const sb_tensor *t, int ndim,
                             const int64_t *shape, const char *what) {
    SB_TRY(sb_check_tensor(fn, name, t, SB_F32, -1));
    int ok = t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = t->shape[i] == shape[i];
    if (!ok) {
        char want[160], got[128];
        sb_tensor tmp = {0};
        tmp.ndim = ndim;
        for (int i = 0; i < ndim; i++) tmp.shape[i] = shape[i];
        return sb_fail(SB_ERR_SHAPE, "%s: %s must have shape %s (%s), got %s", fn, name,
                       sb_shape_str(&tmp, want, sizeof want), what,
                       sb_shape_str(t, got, sizeof got));
    }
    return check_contig(fn, name, t);
}

/* Same as above, for a tensor that may be NULL. */
static sb_status check_optional(const char *fn, const char *name, const sb_tensor *t, int ndim,
                                const int64_t *shape, const char *what) {
    return t ? check_exact(fn, name, t, ndim, shape, what) : SB_OK;
}

static sb_status check_eps(const char *fn, float eps) {
    if (!(eps > 0.0f) || isinf(eps))
        return sb_fail(SB_ERR_ARG, "%s: eps = %g must be finite and > 0", fn, (double)eps);
    return SB_OK;
}

static float *f32(const sb_tensor *t) { return t ? (float *)t->data : NULL; }

/* ---- batch norm ---- */

/* Validates x as (N, C, spatial...) and returns N, C and S = prod(spatial). */
static sb_status bn_input(const char *fn, const char *name, const sb_tensor *x, int64_t *N,
                          int64_t *C, int64_t *S) {
    SB_TRY(sb_check_tensor(fn, name, x, SB_F32, -1));
    if (x->ndim < 2) {
        char buf[128];
        return sb_fail(SB_ERR_SHAPE,
                       "%s: %s must have at least 2 dimensions (N, C, spatial...), got shape %s",
                       fn, name, sb_shape_str(x, buf, sizeof buf));
    }
    SB_TRY(check_contig(fn, name, x));
    *N = x->shape[0];
    *C = x->shape[1];
    *S = 1;
    for (int i = 2; i < x->ndim; i++) *S *= x->shape[i];
    return SB_OK;
}

sb_status sb_batch_norm_forward(const sb_tensor *x, const sb_tensor *gamma,
                                const sb_tensor *beta, sb_tensor *running_mean,
                                sb_tensor *running_var, bool training, float momentum,
                                float eps, sb_tensor *y, sb_tensor *save_mean,
                                sb_tensor *save_rstd) {
    SB_FPENV_GUARD();
    const char *fn = "sb_batch_norm_forward";
    int64_t N = 0, C = 0, S = 0;
    SB_TRY(bn_input(fn, "x", x, &N, &C, &S));
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    SB_TRY(check_exact(fn, "y", y, x->ndim, x->shape, "the shape of x"));
    SB_TRY(check_eps(fn, eps));
    if (!(momentum >= 0.0f && momentum <= 1.0f))
        return sb_fail(SB_ERR_ARG, "%s: momentum = %g must be in [0, 1]", fn, (double)momentum);

    const int64_t vec[1] = {C};
    const char *what = "one value per channel, C = x.shape[1]";
    SB_TRY(check_optional(fn, "gamma", gamma, 1, vec, what));
    SB_TRY(check_optional(fn, "beta", beta, 1, vec, what));
    if (!training && !running_mean)
        return sb_fail(SB_ERR_NULL, "%s: running_mean is NULL (eval mode normalises with the "
                       "running statistics)", fn);
    if (!running_mean != !running_var)
        return sb_fail(SB_ERR_NULL, "%s: %s is NULL but %s is given (pass both or neither)", fn,
                       running_mean ? "running_var" : "running_mean",
                       running_mean ? "running_mean" : "running_var");
    SB_TRY(check_optional(fn, "running_mean", running_mean, 1, vec, what));
    SB_TRY(check_optional(fn, "running_var", running_var, 1, vec, what));
    SB_TRY(check_optional(fn, "save_mean", save_mean, 1, vec, what));
    SB_TRY(check_optional(fn, "save_rstd", save_rstd, 1, vec, what));

    int64_t count = N * S;
    if (training && C > 0 && count < 1)
        return sb_fail(SB_ERR_SHAPE, "%s: training mode needs at least 1 value per channel "
                       "(N * spatial = 0)", fn);
    if (training && C > 0 && running_mean && count < 2)
        return sb_fail(SB_ERR_SHAPE, "%s: updating running_var needs more than 1 value per "
                       "channel (the unbiased variance divides by count - 1); got count = %lld",
                       fn, (long long)count);

    /* y may be x itself (in place, tested bit for bit); nothing else may overlap. */
    SB_TRY(sb_check_disjoint(fn, 5, (const char *const[]){"y", "save_mean", "save_rstd", "running_mean", "running_var"},
                             (const sb_tensor *const[]){y, save_mean, save_rstd, running_mean, running_var},
                             2, (const char *const[]){"gamma", "beta"}, (const sb_tensor *const[]){gamma, beta}));
    SB_TRY(sb_check_disjoint(fn, 4, (const char *const[]){"save_mean", "save_rstd", "running_mean", "running_var"},
                             (const sb_tensor *const[]){save_mean, save_rstd, running_mean, running_var},
                             1, (const char *const[]){"x"}, (const sb_tensor *const[]){x}));
    SB_TRY(sb_check_in_place(fn, "y", y, "x", x));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, gamma, beta, running_mean, running_var, y, save_mean,
                          save_rstd));
    return SB_BACKEND_RUN(fn, be, batch_norm_forward, f32(x), f32(gamma), f32(beta),
                          f32(running_mean), f32(running_var), training, momentum, eps, f32(y),
                          f32(save_mean), f32(save_rstd), N, C, S);
}

sb_status sb_batch_norm_backward(const sb_tensor *dy, const sb_tensor *x,
                                 const sb_tensor *gamma, const sb_tensor *save_mean,
                                 const sb_tensor *save_rstd, bool training, sb_tensor *dx,
                                 sb_tensor *dgamma, sb_tensor *dbeta) {
    SB_FPENV_GUARD();
    const char *fn = "sb_batch_norm_backward";
    int64_t N = 0, C = 0, S = 0;
    SB_TRY(bn_input(fn, "x", x, &N, &C, &S));
    if (!dy) return sb_fail(SB_ERR_NULL, "%s: dy is NULL", fn);
    SB_TRY(check_exact(fn, "dy", dy, x->ndim, x->shape, "the shape of x"));
    SB_TRY(check_optional(fn, "dx", dx, x->ndim, x->shape, "the shape of x"));

    const int64_t vec[1] = {C};
    const char *what = "one value per channel, C = x.shape[1]";
    SB_TRY(check_optional(fn, "gamma", gamma, 1, vec, what));
    if (!save_mean)
        return sb_fail(SB_ERR_NULL, "%s: save_mean is NULL (pass the save_mean written by "
                       "sb_batch_norm_forward)", fn);
    if (!save_rstd)
        return sb_fail(SB_ERR_NULL, "%s: save_rstd is NULL (pass the save_rstd written by "
                       "sb_batch_norm_forward)", fn);
    SB_TRY(check_exact(fn, "save_mean", save_mean, 1, vec, what));
    SB_TRY(check_exact(fn, "save_rstd", save_rstd, 1, vec, what));
    SB_TRY(check_optional(fn, "dgamma", dgamma, 1, vec, what));
    SB_TRY(check_optional(fn, "dbeta", dbeta, 1, vec, what));

    /* dx may be dy or x itself (in place); nothing else may overlap. */
    SB_TRY(sb_check_disjoint(fn, 3, (const char *const[]){"dx", "dgamma", "dbeta"},
                             (const sb_tensor *const[]){dx, dgamma, dbeta},
                             3, (const char *const[]){"gamma", "save_mean", "save_rstd"},
                             (const sb_tensor *const[]){gamma, save_mean, save_rstd}));
    SB_TRY(sb_check_disjoint(fn, 2, (const char *const[]){"dgamma", "dbeta"}, (const sb_tensor *const[]){dgamma, dbeta},
                             2, (const char *const[]){"dy", "x"}, (const sb_tensor *const[]){dy, x}));
    SB_TRY(sb_check_in_place(fn, "dx", dx, "dy", dy));
    SB_TRY(sb_check_in_place(fn, "dx", dx, "x", x));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, x, gamma, save_mean, save_rstd, dx, dgamma, dbeta));
    return SB_BACKEND_RUN(fn, be, batch_norm_backward, f32(dy), f32(x), f32(gamma),
                          f32(save_mean), f32(save_rstd), training, f32(dx), f32(dgamma),
                          f32(dbeta), N, C, S);
}

/* ---- layer norm ---- */

/* Validates x and normalized_ndim; returns R (rows), D (row length) and the
 * number of leading dims. */
static sb_status ln_input(const char *fn, const sb_tensor *x, int normalized_ndim, int64_t *R,
                          int64_t *D, int *lead) {
    SB_TRY(sb_check_tensor(fn, "x", x, SB_F32, -1));
    if (normalized_ndim < 1 || normalized_ndim > x->ndim) {
        char buf[128];
        return sb_fail(SB_ERR_ARG, "%s: normalized_ndim = %d must be in 1..x.ndim = %d (x has "
                       "shape %s)", fn, normalized_ndim, x->ndim,
                       sb_shape_str(x, buf, sizeof buf));
    }
    SB_TRY(check_contig(fn, "x", x));
    *lead = x->ndim - normalized_ndim;
    *R = 1;
    *D = 1;
    for (int i = 0; i < *lead; i++) *R *= x->shape[i];
    for (int i = *lead; i < x->ndim; i++) *D *= x->shape[i];
    if (*D == 0)
        return sb_fail(SB_ERR_SHAPE, "%s: the normalized dims of x hold 0 elements (mean and "
                       "variance are undefined)", fn);
    return SB_OK;
}

/* Layer norm and RMS norm share their tensors' shapes: per-position
 * parameters over the normalized (trailing) dims, per-row statistics over
 * the leading ones (`lead` of them). */
static sb_status ln_param(const char *fn, const char *name, const sb_tensor *t,
                          const sb_tensor *x, int lead) {
    return check_optional(fn, name, t, x->ndim - lead, x->shape + lead,
                          "the last normalized_ndim dims of x");
}

/* A per-row statistic; a required one names the forward that writes it. */
static sb_status ln_stat(const char *fn, const char *name, const sb_tensor *t, const sb_tensor *x,
                         int lead, const char *written_by) {
    if (!t && written_by)
        return sb_fail(SB_ERR_NULL, "%s: %s is NULL (pass the %s written by %s)", fn, name, name,
                       written_by);
    return check_optional(fn, name, t, lead, x->shape,
                          "the leading dims of x, before the normalized ones");
}

/* x, normalized_ndim and the tensor of x's shape (y, or dy and dx). */
static sb_status ln_rows(const char *fn, const sb_tensor *x, int normalized_ndim,
                         const char *name, const sb_tensor *like_x, const char *opt_name,
                         const sb_tensor *opt_like_x, int64_t *R, int64_t *D, int *lead) {
    SB_TRY(ln_input(fn, x, normalized_ndim, R, D, lead));
    if (!like_x) return sb_fail(SB_ERR_NULL, "%s: %s is NULL", fn, name);
    SB_TRY(check_exact(fn, name, like_x, x->ndim, x->shape, "the shape of x"));
    return opt_name ? check_optional(fn, opt_name, opt_like_x, x->ndim, x->shape, "the shape of x")
                    : SB_OK;
}

sb_status sb_layer_norm_forward(const sb_tensor *x, int normalized_ndim, const sb_tensor *gamma,
                                const sb_tensor *beta, float eps, sb_tensor *y,
                                sb_tensor *save_mean, sb_tensor *save_rstd) {
    SB_FPENV_GUARD();
    const char *fn = "sb_layer_norm_forward";
    int64_t R, D;
    int lead;
    SB_TRY(ln_rows(fn, x, normalized_ndim, "y", y, NULL, NULL, &R, &D, &lead));
    SB_TRY(check_eps(fn, eps));
    SB_TRY(ln_param(fn, "gamma", gamma, x, lead));
    SB_TRY(ln_param(fn, "beta", beta, x, lead));
    SB_TRY(ln_stat(fn, "save_mean", save_mean, x, lead, NULL));
    SB_TRY(ln_stat(fn, "save_rstd", save_rstd, x, lead, NULL));

    /* y may be x itself (in place); nothing else may overlap. */
    SB_TRY(sb_check_disjoint(fn, 3, (const char *const[]){"y", "save_mean", "save_rstd"},
                             (const sb_tensor *const[]){y, save_mean, save_rstd},
                             2, (const char *const[]){"gamma", "beta"}, (const sb_tensor *const[]){gamma, beta}));
    SB_TRY(sb_check_disjoint(fn, 2, (const char *const[]){"save_mean", "save_rstd"},
                             (const sb_tensor *const[]){save_mean, save_rstd},
                             1, (const char *const[]){"x"}, (const sb_tensor *const[]){x}));
    SB_TRY(sb_check_in_place(fn, "y", y, "x", x));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, gamma, beta, y, save_mean, save_rstd));
    return SB_BACKEND_RUN(fn, be, layer_norm_forward, f32(x), f32(gamma), f32(beta), eps, f32(y),
                          f32(save_mean), f32(save_rstd), R, D);
}

sb_status sb_layer_norm_backward(const sb_tensor *dy, const sb_tensor *x, int normalized_ndim,
                                 const sb_tensor *gamma, const sb_tensor *save_mean,
                                 const sb_tensor *save_rstd, sb_tensor *dx, sb_tensor *dgamma,
                                 sb_tensor *dbeta) {
    SB_FPENV_GUARD();
    const char *fn = "sb_layer_norm_backward";
    int64_t R, D;
    int lead;
    SB_TRY(ln_rows(fn, x, normalized_ndim, "dy", dy, "dx", dx, &R, &D, &lead));
    SB_TRY(ln_param(fn, "gamma", gamma, x, lead));
    SB_TRY(ln_stat(fn, "save_mean", save_mean, x, lead, "sb_layer_norm_forward"));
    SB_TRY(ln_stat(fn, "save_rstd", save_rstd, x, lead, "sb_layer_norm_forward"));
    SB_TRY(ln_param(fn, "dgamma", dgamma, x, lead));
    SB_TRY(ln_param(fn, "dbeta", dbeta, x, lead));

    /* Outputs overlap nothing (dx = dy in place would change the bits). */
    SB_TRY(sb_check_disjoint(fn, 3, (const char *const[]){"dx", "dgamma", "dbeta"}, (const sb_tensor *const[]){dx, dgamma, dbeta},
                             5, (const char *const[]){"dy", "x", "gamma", "save_mean", "save_rstd"},
                             (const sb_tensor *const[]){dy, x, gamma, save_mean, save_rstd}));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, x, gamma, save_mean, save_rstd, dx, dgamma, dbeta));
    return SB_BACKEND_RUN(fn, be, layer_norm_backward, f32(dy), f32(x), f32(gamma), f32(save_mean),
                          f32(save_rstd), f32(dx), f32(dgamma), f32(dbeta), R, D);
}

/* ---- RMS norm ---- */

sb_status sb_rms_norm_forward(const sb_tensor *x, int normalized_ndim, const sb_tensor *weight,
                              float eps, sb_tensor *y, sb_tensor *save_rrms) {
    SB_FPENV_GUARD();
    const char *fn = "sb_rms_norm_forward";
    int64_t R, D;
    int lead;
    SB_TRY(ln_rows(fn, x, normalized_ndim, "y", y, NULL, NULL, &R, &D, &lead));
    SB_TRY(check_eps(fn, eps));
    SB_TRY(ln_param(fn, "weight", weight, x, lead));
    SB_TRY(ln_stat(fn, "save_rrms", save_rrms, x, lead, NULL));

    /* y may be x itself (in place); nothing else may overlap. */
    SB_TRY(sb_check_disjoint(fn, 2, (const char *const[]){"y", "save_rrms"},
                             (const sb_tensor *const[]){y, save_rrms},
                             1, (const char *const[]){"weight"}, (const sb_tensor *const[]){weight}));
    SB_TRY(sb_check_disjoint(fn, 1, (const char *const[]){"save_rrms"},
                             (const sb_tensor *const[]){save_rrms},
                             1, (const char *const[]){"x"}, (const sb_tensor *const[]){x}));
    SB_TRY(sb_check_in_place(fn, "y", y, "x", x));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, weight, y, save_rrms));
    return SB_BACKEND_RUN(fn, be, rms_norm_forward, f32(x), f32(weight), eps, f32(y),
                          f32(save_rrms), R, D);
}

sb_status sb_rms_norm_backward(const sb_tensor *dy, const sb_tensor *x, int normalized_ndim,
                               const sb_tensor *weight, const sb_tensor *save_rrms, sb_tensor *dx,
                               sb_tensor *dweight) {
    SB_FPENV_GUARD();
    const char *fn = "sb_rms_norm_backward";
    int64_t R, D;
    int lead;
    SB_TRY(ln_rows(fn, x, normalized_ndim, "dy", dy, "dx", dx, &R, &D, &lead));
    SB_TRY(ln_param(fn, "weight", weight, x, lead));
    SB_TRY(ln_stat(fn, "save_rrms", save_rrms, x, lead, "sb_rms_norm_forward"));
    SB_TRY(ln_param(fn, "dweight", dweight, x, lead));

    /* Outputs overlap nothing (dx = dy in place would change the bits). */
    SB_TRY(sb_check_disjoint(fn, 2, (const char *const[]){"dx", "dweight"}, (const sb_tensor *const[]){dx, dweight},
                             4, (const char *const[]){"dy", "x", "weight", "save_rrms"},
                             (const sb_tensor *const[]){dy, x, weight, save_rrms}));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, x, weight, save_rrms, dx, dweight));
    return SB_BACKEND_RUN(fn, be, rms_norm_backward, f32(dy), f32(x), f32(weight),
                          f32(save_rrms), f32(dx), f32(dweight), R, D);
}

/* ---- group norm ---- */

/* Validates x as (N, C, spatial...) and groups; returns N, C, S. */
static sb_status gn_input(const char *fn, const sb_tensor *x, int64_t groups, int64_t *N,
                          int64_t *C, int64_t *S) {
    SB_TRY(bn_input(fn, "x", x, N, C, S));
    if (groups < 1 || *C % groups != 0)
        return sb_fail(SB_ERR_ARG, "%s: groups = %lld must be >= 1 and divide the channel count "
                       "C = x.shape[1] = %lld", fn, (long long)groups, (long long)*C);
    if (*C == 0 || *S == 0)
        return sb_fail(SB_ERR_SHAPE, "%s: each group of x holds 0 elements (C = %lld, spatial "
                       "size %lld; mean and variance are undefined)", fn, (long long)*C,
                       (long long)*S);
    return SB_OK;
}

sb_status sb_group_norm_forward(const sb_tensor *x, int64_t groups, const sb_tensor *gamma,
                                const sb_tensor *beta, float eps, sb_tensor *y,
                                sb_tensor *save_mean, sb_tensor *save_rstd) {
    SB_FPENV_GUARD();
    const char *fn = "sb_group_norm_forward";
    int64_t N = 0, C = 0, S = 0;
    SB_TRY(gn_input(fn, x, groups, &N, &C, &S));
    if (!y) return sb_fail(SB_ERR_NULL, "%s: y is NULL", fn);
    SB_TRY(check_exact(fn, "y", y, x->ndim, x->shape, "the shape of x"));
    SB_TRY(check_eps(fn, eps));
    const int64_t vec[1] = {C}, stat[2] = {N, groups};
    const char *what = "one value per channel, C = x.shape[1]";
    const char *per_group = "(N, groups)";
    SB_TRY(check_optional(fn, "gamma", gamma, 1, vec, what));
    SB_TRY(check_optional(fn, "beta", beta, 1, vec, what));
    SB_TRY(check_optional(fn, "save_mean", save_mean, 2, stat, per_group));
    SB_TRY(check_optional(fn, "save_rstd", save_rstd, 2, stat, per_group));

    /* y may be x itself (in place); nothing else may overlap. */
    SB_TRY(sb_check_disjoint(fn, 3, (const char *const[]){"y", "save_mean", "save_rstd"},
                             (const sb_tensor *const[]){y, save_mean, save_rstd},
                             2, (const char *const[]){"gamma", "beta"}, (const sb_tensor *const[]){gamma, beta}));
    SB_TRY(sb_check_disjoint(fn, 2, (const char *const[]){"save_mean", "save_rstd"},
                             (const sb_tensor *const[]){save_mean, save_rstd},
                             1, (const char *const[]){"x"}, (const sb_tensor *const[]){x}));
    SB_TRY(sb_check_in_place(fn, "y", y, "x", x));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, gamma, beta, y, save_mean, save_rstd));
    return SB_BACKEND_RUN(fn, be, group_norm_forward, f32(x), f32(gamma), f32(beta), eps, f32(y),
                          f32(save_mean), f32(save_rstd), N, C, S, groups);
}

sb_status sb_group_norm_backward(const sb_tensor *dy, const sb_tensor *x, int64_t groups,
                                 const sb_tensor *gamma, const sb_tensor *save_mean,
                                 const sb_tensor *save_rstd, sb_tensor *dx, sb_tensor *dgamma,
                                 sb_tensor *dbeta) {
    SB_FPENV_GUARD();
    const char *fn = "sb_group_norm_backward";
    int64_t N = 0, C = 0, S = 0;
    SB_TRY(gn_input(fn, x, groups, &N, &C, &S));
    if (!dy) return sb_fail(SB_ERR_NULL, "%s: dy is NULL", fn);
    SB_TRY(check_exact(fn, "dy", dy, x->ndim, x->shape, "the shape of x"));
    SB_TRY(check_optional(fn, "dx", dx, x->ndim, x->shape, "the shape of x"));
    const int64_t vec[1] = {C}, stat[2] = {N, groups};
    const char *what = "one value per channel, C = x.shape[1]";
    const char *per_group = "(N, groups)";
    SB_TRY(check_optional(fn, "gamma", gamma, 1, vec, what));
    if (!save_mean)
        return sb_fail(SB_ERR_NULL, "%s: save_mean is NULL (pass the save_mean written by "
                       "sb_group_norm_forward)", fn);
    if (!save_rstd)
        return sb_fail(SB_ERR_NULL, "%s: save_rstd is NULL (pass the save_rstd written by "
                       "sb_group_norm_forward)", fn);
    SB_TRY(check_exact(fn, "save_mean", save_mean, 2, stat, per_group));
    SB_TRY(check_exact(fn, "save_rstd", save_rstd, 2, stat, per_group));
    SB_TRY(check_optional(fn, "dgamma", dgamma, 1, vec, what));
    SB_TRY(check_optional(fn, "dbeta", dbeta, 1, vec, what));

    /* Outputs overlap nothing (dx = dy in place would change the bits). */
    SB_TRY(sb_check_disjoint(fn, 3, (const char *const[]){"dx", "dgamma", "dbeta"}, (const sb_tensor *const[]){dx, dgamma, dbeta},
                             5, (const char *const[]){"dy", "x", "gamma", "save_mean", "save_rstd"},
                             (const sb_tensor *const[]){dy, x, gamma, save_mean, save_rstd}));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, x, gamma, save_mean, save_rstd, dx, dgamma, dbeta));
    return SB_BACKEND_RUN(fn, be, group_norm_backward, f32(dy), f32(x), f32(gamma),
                          f32(save_mean), f32(save_rstd), f32(dx), f32(dgamma), f32(dbeta), N, C,
                          S, groups);
}
