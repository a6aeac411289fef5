/* Tensor-level elementwise ops: validation and broadcasting, then the
 * device's pointwise entries (on the CPU the strided engine sb_cpu_pw_run);
 * the backward sums broadcast gradients back to an input's shape. The
 * arithmetic itself is src/ref/elementwise.c. */
#include <stdio.h>
#include <stdlib.h>
#include "samebits/elementwise.h"
#include "core/fpenv.h"
#include "ops/validate.h"

static bool valid_binary(sb_binary_op op) {
    return (int)op >= (int)SB_BINARY_ADD && (int)op <= (int)SB_BINARY_POW;
}

static bool valid_unary(sb_unary_op op) {
    return (int)op >= (int)SB_UNARY_NEG && (int)op <= (int)SB_UNARY_RSQRT;
}

/* The broadcast shape of a and b (NumPy rules). */
static sb_status broadcast_shape(const char *fn, const sb_tensor *a, const sb_tensor *b, int *nd,
                                 int64_t *shape) {
    int n = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int i = 0; i < n; i++) {
        int ia = i - (n - a->ndim), ib = i - (n - b->ndim);
        int64_t sa = ia >= 0 ? a->shape[ia] : 1, sbb = ib >= 0 ? b->shape[ib] : 1;
        if (sa != sbb && sa != 1 && sbb != 1) {
            char ba[128], bb[128];
            return sb_fail(SB_ERR_SHAPE, "%s: shapes %s (a) and %s (b) do not broadcast (%lld vs %lld at dimension %d)",
                           fn, sb_shape_str(a, ba, sizeof ba), sb_shape_str(b, bb, sizeof bb),
                           (long long)sa, (long long)sbb, i);
        }
        shape[i] = sa == 1 ? sbb : sa;
    }
    *nd = n;
    return SB_OK;
}

/* ---- binary forward -------------------------------------------------------- */

static sb_status binary_impl(const char *fn, sb_binary_op op, const sb_tensor *a,
                             const sb_tensor *b, sb_tensor *out) {
    if (!valid_binary(op)) return sb_fail(SB_ERR_ARG, "%s: op = %d is not an sb_binary_op", fn, (int)op);
    SB_TRY(sb_check_tensor(fn, "a", a, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "b", b, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "out", out, SB_F32, -1));
    int nd;
    int64_t shape[SB_MAX_DIMS];
    SB_TRY(broadcast_shape(fn, a, b, &nd, shape));
    SB_TRY(sb_pw_check_shape(fn, "out", out, nd, shape, "the broadcast shape"));
    SB_TRY(sb_pw_check_out(fn, "out", out));
    sb_tensor v[2];
    SB_TRY(sb_pw_broadcast_view(fn, "a", a, nd, shape, &v[0]));
    SB_TRY(sb_pw_broadcast_view(fn, "b", b, nd, shape, &v[1]));
    SB_TRY(sb_pw_check_alias(fn, "a", a, &v[0], "out", out));
    SB_TRY(sb_pw_check_alias(fn, "b", b, &v[1], "out", out));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, a, b, out));
    return SB_BACKEND_RUN(fn, be, binary, op, &v[0], &v[1], out);
}

sb_status sb_binary(sb_binary_op op, const sb_tensor *a, const sb_tensor *b, sb_tensor *out) {
    SB_FPENV_GUARD();
    return binary_impl("sb_binary", op, a, b, out);
}
sb_status sb_add(const sb_tensor *a, const sb_tensor *b, sb_tensor *out) {
    SB_FPENV_GUARD();
    return binary_impl("sb_add", SB_BINARY_ADD, a, b, out);
}
sb_status sb_sub(const sb_tensor *a, const sb_tensor *b, sb_tensor *out) {
    SB_FPENV_GUARD();
    return binary_impl("sb_sub", SB_BINARY_SUB, a, b, out);
}
sb_status sb_mul(const sb_tensor *a, const sb_tensor *b, sb_tensor *out) {
    SB_FPENV_GUARD();
    return binary_impl("sb_mul", SB_BINARY_MUL, a, b, out);
}
sb_status sb_div(const sb_tensor *a, const sb_tensor *b, sb_tensor *out) {
    SB_FPENV_GUARD();
    return binary_impl("sb_div", SB_BINARY_DIV, a, b, out);
}
sb_status sb_maximum(const sb_tensor *a, const sb_tensor *b, sb_tensor *out) {
    SB_FPENV_GUARD();
    return binary_impl("sb_maximum", SB_BINARY_MAXIMUM, a, b, out);
}
sb_status sb_minimum(const sb_tensor *a, const sb_tensor *b, sb_tensor *out) {
    SB_FPENV_GUARD();
    return binary_impl("sb_minimum", SB_BINARY_MINIMUM, a, b, out);
}

/* The scalar is a 0-dim tensor over a local float: the same engine and so
 * the same bits as the tensor form. */
static sb_status scalar_impl(const char *fn, sb_binary_op op, const sb_tensor *x, float s,
                             sb_tensor *out) {
    if (!valid_binary(op)) return sb_fail(SB_ERR_ARG, "%s: op = %d is not an sb_binary_op", fn, (int)op);
    SB_TRY(sb_check_tensor(fn, "x", x, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "out", out, SB_F32, -1));
    SB_TRY(sb_check_same_shape(fn, "out", out, "x", x));
    SB_TRY(sb_pw_check_out(fn, "out", out));
    sb_tensor v;
    SB_TRY(sb_pw_broadcast_view(fn, "x", x, out->ndim, out->shape, &v));
    SB_TRY(sb_pw_check_alias(fn, "x", x, &v, "out", out));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, out));
    return SB_BACKEND_RUN(fn, be, binary_scalar, op, &v, s, out);
}

sb_status sb_binary_scalar(sb_binary_op op, const sb_tensor *x, float s, sb_tensor *out) {
    SB_FPENV_GUARD();
    return scalar_impl("sb_binary_scalar", op, x, s, out);
}
sb_status sb_add_scalar(const sb_tensor *x, float s, sb_tensor *out) {
    SB_FPENV_GUARD();
    return scalar_impl("sb_add_scalar", SB_BINARY_ADD, x, s, out);
}
sb_status sb_sub_scalar(const sb_tensor *x, float s, sb_tensor *out) {
    SB_FPENV_GUARD();
    return scalar_impl("sb_sub_scalar", SB_BINARY_SUB, x, s, out);
}
sb_status sb_mul_scalar(const sb_tensor *x, float s, sb_tensor *out) {
    SB_FPENV_GUARD();
    return scalar_impl("sb_mul_scalar", SB_BINARY_MUL, x, s, out);
}
sb_status sb_div_scalar(const sb_tensor *x, float s, sb_tensor *out) {
    SB_FPENV_GUARD();
    return scalar_impl("sb_div_scalar", SB_BINARY_DIV, x, s, out);
}

/* ---- sums back to an input's shape ------------------------------------------ */

static sb_status check_reduce_to(const char *fn, const char *gname, const sb_tensor *grad,
                                 const char *oname, const sb_tensor *out) {
    int ok = out->ndim <= grad->ndim;
    for (int i = 0; ok && i < out->ndim; i++) {
        int64_t so = out->shape[i], sg = grad->shape[i + grad->ndim - out->ndim];
        ok = so == sg || so == 1;
    }
    if (!ok) {
        char bo[128], bg[128];
        return sb_fail(SB_ERR_SHAPE, "%s: %s of shape %s does not broadcast to %s of shape %s", fn,
                       oname, sb_shape_str(out, bo, sizeof bo), gname,
                       sb_shape_str(grad, bg, sizeof bg));
    }
    return SB_OK;
}

sb_status sb_reduce_to_shape(const sb_tensor *grad, sb_tensor *out) {
    SB_FPENV_GUARD();
    const char *fn = "sb_reduce_to_shape";
    SB_TRY(sb_check_tensor(fn, "grad", grad, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "out", out, SB_F32, -1));
    SB_TRY(check_reduce_to(fn, "grad", grad, "out", out));
    SB_TRY(sb_pw_check_out(fn, "out", out));
    if (sb_pw_overlap(grad, out)) return sb_fail(SB_ERR_ARG, "%s: out overlaps grad", fn);
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, grad, out));
    return SB_BACKEND_RUN(fn, be, reduce_to_shape, grad, out);
}

/* ---- binary backward ----------------------------------------------------- */

sb_status sb_binary_backward(sb_binary_op op, const sb_tensor *dy, const sb_tensor *a,
                             const sb_tensor *b, sb_tensor *da, sb_tensor *db) {
    SB_FPENV_GUARD();
    const char *fn = "sb_binary_backward";
    if (!valid_binary(op)) return sb_fail(SB_ERR_ARG, "%s: op = %d is not an sb_binary_op", fn, (int)op);
    SB_TRY(sb_check_tensor(fn, "dy", dy, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "a", a, SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, "b", b, SB_F32, -1));
    if (da) SB_TRY(sb_check_tensor(fn, "da", da, SB_F32, -1));
    if (db) SB_TRY(sb_check_tensor(fn, "db", db, SB_F32, -1));
    int nd;
    int64_t shape[SB_MAX_DIMS];
    SB_TRY(broadcast_shape(fn, a, b, &nd, shape));
    SB_TRY(sb_pw_check_shape(fn, "dy", dy, nd, shape, "the broadcast shape of a and b"));
    sb_tensor *grads[2] = { da, db };
    const sb_tensor *srcs[2] = { a, b };
    const char *gn[2] = { "da", "db" };
    for (int w = 0; w < 2; w++) {
        if (!grads[w]) continue;
        SB_TRY(sb_pw_check_shape(fn, gn[w], grads[w], srcs[w]->ndim, srcs[w]->shape,
                                  w ? "the shape of b" : "the shape of a"));
        SB_TRY(sb_pw_check_out(fn, gn[w], grads[w]));
        const sb_tensor *others[3] = { dy, a, b };
        const char *on[3] = { "dy", "a", "b" };
        for (int k = 0; k < 3; k++)
            if (sb_pw_overlap(grads[w], others[k]))
                return sb_fail(SB_ERR_ARG, "%s: %s overlaps %s", fn, gn[w], on[k]);
    }
    if (da && db && sb_pw_overlap(da, db)) return sb_fail(SB_ERR_ARG, "%s: da overlaps db", fn);
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, a, b, da, db));
    sb_tensor v[2];
    (void)sb_pw_broadcast_view(fn, "a", a, nd, shape, &v[0]); /* validated by broadcast_shape */
    (void)sb_pw_broadcast_view(fn, "b", b, nd, shape, &v[1]);
    return SB_BACKEND_RUN(fn, be, binary_backward, op, dy, &v[0], &v[1], da, db);
}

/* ---- unary ------------------------------------------------------------------ */

static sb_status unary_impl(const char *fn, sb_unary_op op, const sb_tensor *x, sb_tensor *out) {
    if (!valid_unary(op)) return sb_fail(SB_ERR_ARG, "%s: op = %d is not an sb_unary_op", fn, (int)op);
    const sb_tensor *in[1] = { x };
    const char *names[1] = { "x" };
    SB_TRY(sb_pw_check_same(fn, 1, in, names, out, "out"));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, out));
    return SB_BACKEND_RUN(fn, be, unary, op, x, out);
}

sb_status sb_unary(sb_unary_op op, const sb_tensor *x, sb_tensor *out) {
    SB_FPENV_GUARD();
    return unary_impl("sb_unary", op, x, out);
}
sb_status sb_neg(const sb_tensor *x, sb_tensor *out) {
    SB_FPENV_GUARD();
    return unary_impl("sb_neg", SB_UNARY_NEG, x, out);
}
sb_status sb_abs(const sb_tensor *x, sb_tensor *out) {
    SB_FPENV_GUARD();
    return unary_impl("sb_abs", SB_UNARY_ABS, x, out);
}
sb_status sb_sqrt(const sb_tensor *x, sb_tensor *out) {
    SB_FPENV_GUARD();
    return unary_impl("sb_sqrt", SB_UNARY_SQRT, x, out);
}
sb_status sb_exp(const sb_tensor *x, sb_tensor *out) {
    SB_FPENV_GUARD();
    return unary_impl("sb_exp", SB_UNARY_EXP, x, out);
}
sb_status sb_log(const sb_tensor *x, sb_tensor *out) {
    SB_FPENV_GUARD();
    return unary_impl("sb_log", SB_UNARY_LOG, x, out);
}
sb_status sb_square(const sb_tensor *x, sb_tensor *out) {
    SB_FPENV_GUARD();
    return unary_impl("sb_square", SB_UNARY_SQUARE, x, out);
}
sb_status sb_reciprocal(const sb_tensor *x, sb_tensor *out) {
    SB_FPENV_GUARD();
    return unary_impl("sb_reciprocal", SB_UNARY_RECIPROCAL, x, out);
}
sb_status sb_sin(const sb_tensor *x, sb_tensor *out) {
    SB_FPENV_GUARD();
    return unary_impl("sb_sin", SB_UNARY_SIN, x, out);
}
sb_status sb_cos(const sb_tensor *x, sb_tensor *out) {
    SB_FPENV_GUARD();
    return unary_impl("sb_cos", SB_UNARY_COS, x, out);
}
sb_status sb_exp2(const sb_tensor *x, sb_tensor *out) {
    SB_FPENV_GUARD();
    return unary_impl("sb_exp2", SB_UNARY_EXP2, x, out);
}
sb_status sb_log2(const sb_tensor *x, sb_tensor *out) {
    SB_FPENV_GUARD();
    return unary_impl("sb_log2", SB_UNARY_LOG2, x, out);
}
sb_status sb_rsqrt(const sb_tensor *x, sb_tensor *out) {
    SB_FPENV_GUARD();
    return unary_impl("sb_rsqrt", SB_UNARY_RSQRT, x, out);
}

sb_status sb_unary_backward(sb_unary_op op, const sb_tensor *x, const sb_tensor *y,
                            const sb_tensor *dy, sb_tensor *dx) {
    SB_FPENV_GUARD();
    const char *fn = "sb_unary_backward";
    if (!valid_unary(op)) return sb_fail(SB_ERR_ARG, "%s: op = %d is not an sb_unary_op", fn, (int)op);
    const sb_tensor *in[3] = { x, y, dy };
    const char *names[3] = { "x", "y", "dy" };
    SB_TRY(sb_pw_check_same(fn, 3, in, names, dx, "dx"));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, y, dy, dx));
    return SB_BACKEND_RUN(fn, be, unary_backward, op, x, y, dy, dx);
}
