/* Tensor-level elementwise ops: validation, broadcasting, the strided
 * pointwise engine, and the sums that take broadcast gradients back to an
 * input's shape. The arithmetic itself lives in src/ref/elementwise.c. */
#include <stdio.h>
#include <stdlib.h>
#include "samebits/elementwise.h"
#include "core/fpenv.h"
#include "core/internal.h"
#include "cpu/ops_internal.h"
#include "ref/ref_pointwise.h"

/* ---- the pointwise engine ------------------------------------------------ */

enum { PW_CHUNK = 256 };

void sb_pw_run(int nin, const sb_tensor *in, sb_tensor *out, sb_pw_kernel kernel, const void *ctx) {
    int nd = out->ndim;
    int64_t numel = sb_tensor_numel(out);
    if (numel == 0) return;
    int64_t len = nd ? out->shape[nd - 1] : 1;
    int64_t nouter = numel / len;
    int64_t istr[SB_PW_MAX_IN], ostr = nd ? out->strides[nd - 1] : 0;
    for (int k = 0; k < nin; k++) istr[k] = nd ? in[k].strides[nd - 1] : 0;
    float buf[SB_PW_MAX_IN][PW_CHUNK], obuf[PW_CHUNK];
    int64_t idx[SB_MAX_DIMS] = {0}, off[SB_PW_MAX_IN + 1] = {0};
    for (int64_t o = 0; o < nouter; o++) {
        for (int64_t c = 0; c < len; c += PW_CHUNK) {
            int64_t m = len - c < PW_CHUNK ? len - c : PW_CHUNK;
            const float *ptr[SB_PW_MAX_IN];
            for (int k = 0; k < nin; k++) {
                const float *base = (const float *)in[k].data + off[k] + c * istr[k];
                if (istr[k] == 1 || m == 1) {
                    ptr[k] = base;
                } else {
                    for (int64_t i = 0; i < m; i++) buf[k][i] = base[i * istr[k]];
                    ptr[k] = buf[k];
                }
            }
            float *obase = (float *)out->data + off[nin] + c * ostr;
            if (ostr == 1 || m == 1) {
                kernel(ctx, m, ptr, obase);
            } else {
                kernel(ctx, m, ptr, obuf);
                for (int64_t i = 0; i < m; i++) obase[i * ostr] = obuf[i];
            }
        }
        /* next row: row-major odometer over dims 0..nd-2 */
        for (int d = nd - 2; d >= 0; d--) {
            if (++idx[d] < out->shape[d]) {
                for (int k = 0; k < nin; k++) off[k] += in[k].strides[d];
                off[nin] += out->strides[d];
                break;
            }
            idx[d] = 0;
            for (int k = 0; k < nin; k++) off[k] -= (out->shape[d] - 1) * in[k].strides[d];
            off[nin] -= (out->shape[d] - 1) * out->strides[d];
        }
    }
}

/* ---- shared checks --------------------------------------------------------- */

sb_status sb_pw_broadcast_view(const char *fn, const char *name, const sb_tensor *t, int ndim,
                               const int64_t *shape, sb_tensor *view) {
    if (t->ndim > ndim) {
        char buf[128];
        return sb_fail(SB_ERR_SHAPE, "%s: %s has shape %s with more than %d dimensions", fn, name,
                       sb_shape_str(t, buf, sizeof buf), ndim);
    }
    *view = *t;
    view->ndim = ndim;
    int lead = ndim - t->ndim;
    for (int i = ndim - 1; i >= 0; i--) {
        int64_t s = i >= lead ? t->shape[i - lead] : 1;
        int64_t st = i >= lead ? t->strides[i - lead] : 0;
        if (s != shape[i] && s != 1) {
            char buf[128];
            return sb_fail(SB_ERR_SHAPE, "%s: %s of shape %s cannot broadcast to size %lld at dimension %d",
                           fn, name, sb_shape_str(t, buf, sizeof buf), (long long)shape[i], i);
        }
        view->shape[i] = shape[i];
        view->strides[i] = s == shape[i] ? st : 0;
        if (shape[i] == 1) view->strides[i] = 0; /* size 1: any stride is the same element */
    }
    return SB_OK;
}

sb_status sb_pw_check_out(const char *fn, const char *name, const sb_tensor *out) {
    if (sb_tensor_numel(out) == 0) return SB_OK;
    /* Sufficient test for distinct elements: sorted by |stride|, each
     * dimension's step must clear the whole extent of the smaller ones. */
    int64_t st[SB_MAX_DIMS], sh[SB_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < out->ndim; i++) {
        if (out->shape[i] <= 1) continue;
        int64_t s = out->strides[i] < 0 ? -out->strides[i] : out->strides[i];
        int j = n++;
        while (j > 0 && st[j - 1] > s) { st[j] = st[j - 1]; sh[j] = sh[j - 1]; j--; }
        st[j] = s;
        sh[j] = out->shape[i];
    }
    int64_t extent = 0;
    for (int i = 0; i < n; i++) {
        if (st[i] <= extent)
            return sb_fail(SB_ERR_ARG, "%s: %s has overlapping elements (stride %lld); it must not overlap itself",
                           fn, name, (long long)st[i]);
        extent += (sh[i] - 1) * st[i];
    }
    return SB_OK;
}

/* Byte range [lo, hi) touched by t. */
static void span(const sb_tensor *t, uintptr_t *lo, uintptr_t *hi) {
    int64_t mn = 0, mx = 0;
    for (int i = 0; i < t->ndim; i++) {
        int64_t e = (t->shape[i] - 1) * t->strides[i];
        if (e < 0) mn += e; else mx += e;
    }
    size_t es = sb_dtype_size(t->dtype);
    uintptr_t base = (uintptr_t)t->data;
    *lo = base + (uintptr_t)(mn * (int64_t)es);
    *hi = base + (uintptr_t)((mx + 1) * (int64_t)es);
}

bool sb_pw_overlap(const sb_tensor *a, const sb_tensor *b) {
    if (sb_tensor_numel(a) == 0 || sb_tensor_numel(b) == 0) return false;
    uintptr_t alo, ahi, blo, bhi;
    span(a, &alo, &ahi);
    span(b, &blo, &bhi);
    return alo < bhi && blo < ahi;
}

sb_status sb_pw_check_alias(const char *fn, const char *in_name, const sb_tensor *in_orig,
                            const sb_tensor *in_view, const char *out_name,
                            const sb_tensor *out) {
    if (!sb_pw_overlap(in_orig, out)) return SB_OK;
    int same = in_view->data == out->data && in_view->ndim == out->ndim;
    for (int i = 0; same && i < out->ndim; i++)
        same = out->shape[i] <= 1 || in_view->strides[i] == out->strides[i];
    if (!same)
        return sb_fail(SB_ERR_ARG, "%s: %s overlaps %s without the identical layout (in-place needs the same data and strides)",
                       fn, out_name, in_name);
    return SB_OK;
}

sb_status sb_pw_check_same(const char *fn, int nin, const sb_tensor *const *in,
                           const char *const *names, const sb_tensor *out, const char *out_name) {
    for (int k = 0; k < nin; k++) SB_TRY(sb_check_tensor(fn, names[k], in[k], SB_F32, -1));
    SB_TRY(sb_check_tensor(fn, out_name, out, SB_F32, -1));
    for (int k = 0; k < nin; k++) SB_TRY(sb_check_same_shape(fn, out_name, out, names[k], in[k]));
    SB_TRY(sb_pw_check_out(fn, out_name, out));
    for (int k = 0; k < nin; k++) SB_TRY(sb_pw_check_alias(fn, names[k], in[k], in[k], out_name, out));
    return SB_OK;
}

static bool valid_binary(sb_binary_op op) {
    return (int)op >= (int)SB_BINARY_ADD && (int)op <= (int)SB_BINARY_MINIMUM;
}

static bool valid_unary(sb_unary_op op) {
    return (int)op >= (int)SB_UNARY_NEG && (int)op <= (int)SB_UNARY_RECIPROCAL;
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

sb_status sb_pw_check_shape(const char *fn, const char *name, const sb_tensor *t, int nd,
                                   const int64_t *shape, const char *what) {
    int same = t->ndim == nd;
    for (int i = 0; same && i < nd; i++) same = t->shape[i] == shape[i];
    if (!same) {
        sb_tensor want = { .ndim = nd };
        for (int i = 0; i < nd; i++) want.shape[i] = shape[i];
        char bt[128], bw[128];
        return sb_fail(SB_ERR_SHAPE, "%s: %s has shape %s, expected %s %s", fn, name,
                       sb_shape_str(t, bt, sizeof bt), what, sb_shape_str(&want, bw, sizeof bw));
    }
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
    sb_cpu_pw_run(2, v, out, sb_cpu_binary_kernel, &op);
    return SB_OK;
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
    sb_tensor st = { .dtype = SB_F32, .device = x->device, .ndim = 0, .data = &s };
    SB_TRY(sb_check_tensor(fn, "out", out, SB_F32, -1));
    SB_TRY(sb_check_same_shape(fn, "out", out, "x", x));
    SB_TRY(sb_pw_check_out(fn, "out", out));
    sb_tensor v[2];
    SB_TRY(sb_pw_broadcast_view(fn, "x", x, out->ndim, out->shape, &v[0]));
    SB_TRY(sb_pw_broadcast_view(fn, "s", &st, out->ndim, out->shape, &v[1]));
    SB_TRY(sb_pw_check_alias(fn, "x", x, &v[0], "out", out));
    sb_cpu_pw_run(2, v, out, sb_cpu_binary_kernel, &op);
    return SB_OK;
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

/* grad's shape is known to be a broadcast of out's; out does not overlap
 * grad. Reduced dims: grad's extra leading dims and those where out has 1. */
static void reduce_to_shape_raw(const sb_tensor *grad, sb_tensor *out) {
    sb_ref_reduce_geom g = {0};
    int lead = grad->ndim - out->ndim;
    for (int i = 0; i < grad->ndim; i++) {
        int io = i - lead;
        if (io >= 0 && out->shape[io] == grad->shape[i]) {
            g.keep_shape[g.nkeep] = grad->shape[i];
            g.keep_xstride[g.nkeep] = grad->strides[i];
            g.keep_ostride[g.nkeep] = out->strides[io];
            g.nkeep++;
        } else {
            g.red_shape[g.nred] = grad->shape[i];
            g.red_xstride[g.nred] = grad->strides[i];
            g.nred++;
        }
    }
    sb_cpu_reduce(SB_REF_REDUCE_SUM, &g, grad->data, 0, out->data);
}

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
    reduce_to_shape_raw(grad, out);
    return SB_OK;
}

/* ---- binary backward ----------------------------------------------------- */

typedef struct { sb_binary_op op; int which; /* 0: ga, 1: gb */ } grad_ctx;

static void binary_grad_kernel(const void *ctx, int64_t n, const float *const *in, float *out) {
    const grad_ctx *c = ctx;
    sb_ref_binary_backward(c->op, n, in[0], in[1], in[2], c->which == 0 ? out : NULL,
                           c->which == 1 ? out : NULL);
}

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
    int64_t n = sb_tensor_numel(dy);
    float *tmp = sb_malloc(fn, (size_t)n * sizeof(float));
    if (!tmp) return SB_ERR_NOMEM;
    sb_tensor v[3], full = { .dtype = SB_F32, .ndim = nd, .data = tmp };
    int64_t stride = 1;
    for (int i = nd - 1; i >= 0; i--) { full.shape[i] = shape[i]; full.strides[i] = stride; stride *= shape[i]; }
    v[0] = *dy;
    (void)sb_pw_broadcast_view(fn, "a", a, nd, shape, &v[1]); /* validated by broadcast_shape */
    (void)sb_pw_broadcast_view(fn, "b", b, nd, shape, &v[2]);
    for (int w = 0; w < 2; w++) {
        if (!grads[w]) continue;
        grad_ctx c = { op, w };
        sb_cpu_pw_run(3, v, &full, binary_grad_kernel, &c);
        reduce_to_shape_raw(&full, grads[w]);
    }
    free(tmp);
    return SB_OK;
}

/* ---- unary ------------------------------------------------------------------ */

static sb_status unary_impl(const char *fn, sb_unary_op op, const sb_tensor *x, sb_tensor *out) {
    if (!valid_unary(op)) return sb_fail(SB_ERR_ARG, "%s: op = %d is not an sb_unary_op", fn, (int)op);
    const sb_tensor *in[1] = { x };
    const char *names[1] = { "x" };
    SB_TRY(sb_pw_check_same(fn, 1, in, names, out, "out"));
    sb_cpu_pw_run(1, x, out, sb_cpu_unary_kernel, &op);
    return SB_OK;
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

static void unary_grad_kernel(const void *ctx, int64_t n, const float *const *in, float *out) {
    SB_FPENV_GUARD();
    sb_ref_unary_backward(*(const sb_unary_op *)ctx, n, in[0], in[1], in[2], out);
}

sb_status sb_unary_backward(sb_unary_op op, const sb_tensor *x, const sb_tensor *y,
                            const sb_tensor *dy, sb_tensor *dx) {
    SB_FPENV_GUARD();
    const char *fn = "sb_unary_backward";
    if (!valid_unary(op)) return sb_fail(SB_ERR_ARG, "%s: op = %d is not an sb_unary_op", fn, (int)op);
    const sb_tensor *in[3] = { x, y, dy };
    const char *names[3] = { "x", "y", "dy" };
    SB_TRY(sb_pw_check_same(fn, 3, in, names, dx, "dx"));
    sb_tensor v[3] = { *x, *y, *dy };
    sb_cpu_pw_run(3, v, dx, unary_grad_kernel, &op);
    return SB_OK;
}
