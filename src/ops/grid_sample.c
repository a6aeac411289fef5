/* Tensor-level grid sampling (contract section 8, "Grid sampling"):
 * argument checks, the geometry, then the device's entry. */
#include "samebits/conv.h"
#include "core/fpenv.h"
#include "ops/validate.h"

/* x (N, C, H, W), grid (N, OH, OW, 2); y-side `yname` (N, C, OH, OW). */
static sb_status plan(const char *fn, const sb_grid_sample_params *params, const sb_tensor *x,
                      const sb_tensor *grid, const char *yname, const sb_tensor *y,
                      sb_grid_geom *g) {
    if (!params) return sb_fail(SB_ERR_NULL, "%s: params is NULL", fn);
    if ((int)params->mode < SB_GRID_BILINEAR || (int)params->mode > SB_GRID_NEAREST)
        return sb_fail(SB_ERR_ARG, "%s: params->mode = %d is not an sb_grid_mode", fn,
                       (int)params->mode);
    if ((int)params->padding_mode < SB_GRID_ZEROS || (int)params->padding_mode > SB_GRID_REFLECTION)
        return sb_fail(SB_ERR_ARG, "%s: params->padding_mode = %d is not an sb_grid_padding", fn,
                       (int)params->padding_mode);
    SB_TRY(sb_check_dense(fn, "x", x, 4, 4));
    SB_TRY(sb_check_dense(fn, "grid", grid, 4, 4));
    int64_t gshape[4] = {x->shape[0], grid->shape[1], grid->shape[2], 2};
    SB_TRY(sb_expect_shape(fn, "grid", grid, 4, gshape));
    int64_t yshape[4] = {x->shape[0], x->shape[1], grid->shape[1], grid->shape[2]};
    SB_TRY(sb_check_dense(fn, yname, y, 4, 4));
    SB_TRY(sb_expect_shape(fn, yname, y, 4, yshape));
    static const char *const axes[2] = {"height", "width"};
    for (int a = 0; a < 2; a++) {
        int64_t s = x->shape[2 + a];
        if (s < 1 || s > INT32_MAX)
            return sb_fail(SB_ERR_SHAPE, "%s: x's %s is %lld, must be in 1..%d", fn, axes[a],
                           (long long)s, INT32_MAX);
    }
    *g = (sb_grid_geom){.n = x->shape[0], .c = x->shape[1], .h = x->shape[2], .w = x->shape[3],
                        .oh = grid->shape[1], .ow = grid->shape[2], .mode = params->mode,
                        .padding = params->padding_mode, .align_corners = params->align_corners};
    return SB_OK;
}

sb_status sb_grid_sample_forward(const sb_tensor *x, const sb_tensor *grid,
                                 const sb_grid_sample_params *params, sb_tensor *y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_grid_sample_forward";
    sb_grid_geom g;
    SB_TRY(plan(fn, params, x, grid, "y", y, &g));
    SB_TRY(sb_check_no_alias(fn, "y", y, "x", x));
    SB_TRY(sb_check_no_alias(fn, "y", y, "grid", grid));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, grid, y));
    if (sb_tensor_numel(y) == 0) return SB_OK;
    return SB_BACKEND_RUN(fn, be, grid_sample_forward, &g, x->data, grid->data, y->data);
}

sb_status sb_grid_sample_backward(const sb_tensor *dy, const sb_tensor *x, const sb_tensor *grid,
                                  const sb_grid_sample_params *params, sb_tensor *dx,
                                  sb_tensor *dgrid) {
    SB_FPENV_GUARD();
    const char *fn = "sb_grid_sample_backward";
    sb_grid_geom g;
    SB_TRY(plan(fn, params, x, grid, "dy", dy, &g));
    if (dx) {
        SB_TRY(sb_check_dense(fn, "dx", dx, 4, 4));
        SB_TRY(sb_check_same_shape(fn, "dx", dx, "x", x));
    }
    if (dgrid) {
        SB_TRY(sb_check_dense(fn, "dgrid", dgrid, 4, 4));
        SB_TRY(sb_check_same_shape(fn, "dgrid", dgrid, "grid", grid));
    }
    SB_TRY(sb_check_disjoint(fn, 2, (const char *const[]){"dx", "dgrid"},
                             (const sb_tensor *const[]){dx, dgrid}, 3,
                             (const char *const[]){"dy", "x", "grid"},
                             (const sb_tensor *const[]){dy, x, grid}));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, x, grid, dx, dgrid));
    return SB_BACKEND_RUN(fn, be, grid_sample_backward, &g, x->data, grid->data, dy->data,
                          dx ? dx->data : NULL, dgrid ? dgrid->data : NULL);
}
