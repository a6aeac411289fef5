/* Tensor-level interpolation (contract section 8, "Interpolation"):
 * argument checks, the geometry (spatial axes right-aligned into three),
 * then the device's entry. */
#include <math.h>
#include "samebits/conv.h"
#include "core/fpenv.h"
#include "ops/validate.h"

#define SIZE_MAX_AXIS INT32_MAX

static const char *const axis_names[3] = {"first", "second", "third"};

/* x-side tensor `xname` (N, C, S...) and y-side `yname` (N, C, O...): both
 * dense float32 of the same rank 3..5, the same N and C, every spatial size
 * in 1..INT32_MAX; params valid for that rank. */
static sb_status plan(const char *fn, const sb_interpolate_params *params, const char *xname,
                      const sb_tensor *x, const char *yname, const sb_tensor *y,
                      sb_interp_geom *g) {
    if (!params) return sb_fail(SB_ERR_NULL, "%s: params is NULL", fn);
    const sb_interpolate_params *p = params;
    if ((int)p->mode < SB_INTERP_NEAREST || (int)p->mode > SB_INTERP_CUBIC)
        return sb_fail(SB_ERR_ARG, "%s: params->mode = %d is not an sb_interp_mode", fn,
                       (int)p->mode);
    if (p->align_corners && (p->mode == SB_INTERP_NEAREST || p->mode == SB_INTERP_NEAREST_EXACT))
        return sb_fail(SB_ERR_ARG,
                       "%s: params->align_corners applies to the linear and cubic modes only", fn);
    SB_TRY(sb_check_dense(fn, xname, x, 3, 5));
    SB_TRY(sb_check_dense(fn, yname, y, x->ndim, x->ndim));
    int nd = x->ndim - 2;
    for (int d = 0; d < 2; d++)
        if (y->shape[d] != x->shape[d]) {
            char bx[160], by[160];
            return sb_fail(SB_ERR_SHAPE, "%s: %s %s and %s %s differ in N or C", fn, xname,
                           sb_shape_str(x, bx, sizeof bx), yname, sb_shape_str(y, by, sizeof by));
        }
    *g = (sb_interp_geom){.planes = x->shape[0] * x->shape[1], .in = {1, 1, 1}, .out = {1, 1, 1},
                          .nd = nd, .mode = p->mode, .align_corners = p->align_corners};
    for (int k = 0; k < 3; k++) {
        double s = p->scales[k];
        if (k >= nd) {
            if (s != 0.0)
                return sb_fail(SB_ERR_ARG,
                               "%s: params->scales[%d] = %g, but %s has %d spatial axes (must be 0)",
                               fn, k, s, xname, nd);
            continue;
        }
        if (!(s >= 0.0) || !isfinite(s) || (s > 0.0 && !isfinite((float)(1.0 / s))))
            return sb_fail(SB_ERR_ARG,
                           "%s: params->scales[%d] = %g must be 0 (none) or a positive scale whose "
                           "reciprocal is a finite float",
                           fn, k, s);
        int64_t in = x->shape[2 + k], out = y->shape[2 + k];
        if (in < 1 || in > SIZE_MAX_AXIS || out < 1 || out > SIZE_MAX_AXIS)
            return sb_fail(SB_ERR_SHAPE,
                           "%s: %s's %s spatial size %lld and %s's %lld must each be in 1..%lld", fn,
                           xname, axis_names[k], (long long)in, yname, (long long)out,
                           (long long)SIZE_MAX_AXIS);
        g->scales[3 - nd + k] = s;
        g->in[3 - nd + k] = in;
        g->out[3 - nd + k] = out;
    }
    return sb_check_no_alias(fn, yname, y, xname, x);
}

sb_status sb_interpolate_forward(const sb_tensor *x, const sb_interpolate_params *params,
                                 sb_tensor *y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_interpolate_forward";
    sb_interp_geom g;
    SB_TRY(plan(fn, params, "x", x, "y", y, &g));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, y));
    if (sb_tensor_numel(y) == 0) return SB_OK;
    return SB_BACKEND_RUN(fn, be, interpolate_forward, &g, x->data, y->data);
}

sb_status sb_interpolate_backward(const sb_tensor *dy, const sb_interpolate_params *params,
                                  sb_tensor *dx) {
    SB_FPENV_GUARD();
    const char *fn = "sb_interpolate_backward";
    sb_interp_geom g;
    SB_TRY(plan(fn, params, "dx", dx, "dy", dy, &g));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, dx));
    if (sb_tensor_numel(dx) == 0) return SB_OK;
    return SB_BACKEND_RUN(fn, be, interpolate_backward, &g, dy->data, dx->data);
}
