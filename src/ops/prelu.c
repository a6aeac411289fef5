/* Tensor-level PReLU (contract section 9, "PReLU"): argument checks, the
 * (outer, c, inner) view of x from PyTorch's channel rule, then the device's
 * entry (on the CPU the reference kernels of src/ref/prelu.c). */
#include "samebits/elementwise.h"
#include "core/fpenv.h"
#include "ops/validate.h"

typedef struct prelu_geom {
    int64_t outer, c, inner;
} prelu_geom;

/* x is (N, C, ...) (rank >= 1) and weight (1,) or (C,) with C = x.shape[1]
 * (1 for a 1-D x, as in PyTorch). A shared weight views x as (1, 1, n) so
 * that its gradient sums every position in row-major order. */
static sb_status plan(const char *fn, const sb_tensor *x, const sb_tensor *weight, prelu_geom *g) {
    SB_TRY(sb_check_dense(fn, "x", x, 1, SB_MAX_DIMS));
    SB_TRY(sb_check_dense(fn, "weight", weight, 1, 1));
    int64_t channels = x->ndim >= 2 ? x->shape[1] : 1;
    int64_t nw = weight->shape[0];
    if (nw != 1 && nw != channels) {
        char buf[160];
        return sb_fail(SB_ERR_SHAPE,
                       "%s: weight has %lld elements; expected 1 or x's channel count %lld "
                       "(x has shape %s)",
                       fn, (long long)nw, (long long)channels, sb_shape_str(x, buf, sizeof buf));
    }
    int64_t n = sb_tensor_numel(x);
    if (nw == 1) {
        *g = (prelu_geom){1, 1, n};
    } else {
        int64_t inner = 1;
        for (int d = 2; d < x->ndim; d++) inner *= x->shape[d]; // bounded by numel
        *g = (prelu_geom){x->ndim >= 1 ? x->shape[0] : 1, channels, inner};
    }
    return SB_OK;
}

static sb_status check_like_x(const char *fn, const char *name, const sb_tensor *t,
                              const sb_tensor *x) {
    SB_TRY(sb_check_dense(fn, name, t, 1, SB_MAX_DIMS));
    return sb_check_same_shape(fn, name, t, "x", x);
}

sb_status sb_prelu_forward(const sb_tensor *x, const sb_tensor *weight, sb_tensor *y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_prelu_forward";
    prelu_geom g;
    SB_TRY(plan(fn, x, weight, &g));
    SB_TRY(check_like_x(fn, "y", y, x));
    /* y may be x itself (in place), never weight. */
    SB_TRY(sb_check_in_place(fn, "y", y, "x", x));
    SB_TRY(sb_check_no_alias(fn, "y", y, "weight", weight));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, weight, y));
    return SB_BACKEND_RUN(fn, be, prelu_forward, g.outer, g.c, g.inner, x->data, weight->data,
                          y->data);
}

sb_status sb_prelu_backward(const sb_tensor *x, const sb_tensor *weight, const sb_tensor *dy,
                            sb_tensor *dx, sb_tensor *dweight) {
    SB_FPENV_GUARD();
    const char *fn = "sb_prelu_backward";
    prelu_geom g;
    SB_TRY(plan(fn, x, weight, &g));
    SB_TRY(check_like_x(fn, "dy", dy, x));
    if (dx) SB_TRY(check_like_x(fn, "dx", dx, x));
    if (dweight) {
        SB_TRY(sb_check_dense(fn, "dweight", dweight, 1, 1));
        SB_TRY(sb_check_same_shape(fn, "dweight", dweight, "weight", weight));
    }
    /* dx may be dy itself; nothing else may share memory with an output. */
    SB_TRY(sb_check_in_place(fn, "dx", dx, "dy", dy));
    SB_TRY(sb_check_disjoint(fn, 2, (const char *const[]){"dx", "dweight"},
                             (const sb_tensor *const[]){dx, dweight}, 2,
                             (const char *const[]){"x", "weight"},
                             (const sb_tensor *const[]){x, weight}));
    SB_TRY(sb_check_no_alias(fn, "dweight", dweight, "dy", dy));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, weight, dy, dx, dweight));
    return SB_BACKEND_RUN(fn, be, prelu_backward, g.outer, g.c, g.inner, x->data, weight->data,
                          dy->data, dx ? dx->data : NULL, dweight ? dweight->data : NULL);
}
