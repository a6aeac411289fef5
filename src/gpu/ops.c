/* src/gpu/ops.c - the op table of every GPU backend (src/gpu/gpu_host.h):
 * each entry resolves its device operands (buffer + element offset),
 * states the geometry, and launches the kernel of src/gpu/kernels/ that
 * computes the reference's bits, through the backend's launcher. Every
 * kernel is described once (src/gpu/kernel_list.h: program, name, variant,
 * parameter count, geometry slot, how its work-items cover the work) and
 * launched by one function, `launch_grid`. Entries without a kernel stay
 * NULL, and families with a kernel for some of their members name the
 * missing one: SB_ERR_UNSUPPORTED, never a CPU fallback. Arguments arrive
 * validated by src/ops. Written against no GPU API: OpenCL and CUDA run
 * this very code. */
#include <stdlib.h>
#include "core/canonical_sum.h"
#include "core/checked.h"
#include "core/internal.h"
#include "gpu/gpu_host.h"
#include "ref/ref_attention.h"
#include "ref/ref_cumulative.h"
#include "ref/ref_index.h"
#include "ref/ref_loss.h"
#include "ref/ref_pad.h"

/* ---- the kernels (src/gpu/kernel_list.h) ---- */

const sb_gpu_kernel sb_gpu_kernels[SB_GPU_KERNELS] = {
#define SB_GPU_KERNEL_ROW(id, program, name, variant, nargs, geom_slot, grid)                      \
    {SB_GPU_K_##id, SB_GPU_PROGRAM_##program, #name, SB_GPU_VARIANT_##variant, nargs, geom_slot,  \
     SB_GPU_GRID_##grid},
    SB_GPU_KERNEL_LIST(SB_GPU_KERNEL_ROW)
#undef SB_GPU_KERNEL_ROW
};

#define K(id) (&sb_gpu_kernels[SB_GPU_K_##id])

/* The device operand p (bytes from it, counted in elem-sized elements). */
static sb_status resolve(const sb_backend *be, const char *fn, const char *what, const void *p,
                         size_t bytes, size_t elem, sb_gpu_ptr *out) {
    return be->launcher->resolve(be, fn, what, p, bytes, elem, out);
}

/* ---- operands ---- */

/* The bytes a view reaches from its first element (all strides >= 0 in
 * tensors the library makes; a negative one is checked from data only). */
static size_t view_bytes(const sb_tensor *t) {
    int64_t last = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] == 0) return 0;
        if (t->strides[d] < 0) return sb_dtype_size(t->dtype);
        last += (t->shape[d] - 1) * t->strides[d];
    }
    return (size_t)(last + 1) * sb_dtype_size(t->dtype);
}

static sb_status view_ptr(const sb_backend *be, const char *fn, const char *what, const sb_tensor *t, sb_gpu_ptr *p) {
    return resolve(be, fn, what, t->data, view_bytes(t), sb_dtype_size(t->dtype), p);
}

static sb_status dense_ptr(const sb_backend *be, const char *fn, const char *what, const void *p, int64_t n,
                           size_t elem, sb_gpu_ptr *out) {
    return resolve(be, fn, what, n > 0 ? p : NULL, n > 0 ? (size_t)n * elem : 0, elem, out);
}

/* An optional dense operand: resolved when p is not NULL (and its bit
 * set in *have), a null operand otherwise. */
static sb_status optional_ptr(const sb_backend *be, const char *fn, const char *what, const void *p, int64_t n, int bit,
                              int32_t *have, sb_gpu_ptr *out) {
    *out = (sb_gpu_ptr){NULL, 0};
    if (!p) return SB_OK;
    *have |= bit;
    return dense_ptr(be, fn, what, p, n, sizeof(float), out);
}

/* A device operand is two kernel parameters: the buffer and the element
 * offset into it. */
#define OPERAND(p) SB_GPU_ARG((p).buf), SB_GPU_ARG((p).off)
/* The placeholder of the geometry buffer, filled in by `launch`. */
#define GEOM_ARG {0, NULL}
/* An argument array and its length, for `launch`. */
#define ARGS(a) (int)(sizeof(a) / sizeof *(a)), (a)

/* ---- the launch: one descriptor per kernel ---- */

/* Queues kernel k over x (by y by z) units of work. geom, when not NULL, is
 * copied to the device and becomes parameter k->geom_slot (a null buffer
 * when geom is NULL). Nothing to do (a zero extent) is success. */
static sb_status launch_grid(const sb_backend *be, const char *fn, const sb_gpu_kernel *k,
                             const void *geom, size_t geom_bytes, int nargs, sb_gpu_arg *args,
                             int64_t x, int64_t y, int64_t z) {
    if (nargs != k->nargs)
        return sb_fail(SB_ERR_INTERNAL, "%s: kernel %s takes %d arguments, %d given", fn, k->name,
                       k->nargs, nargs);
    if (x == 0 || y == 0 || z == 0) return SB_OK;
    sb_gpu_range r = {1, {1, 1, 1}, {1, 1, 1}};
    switch (k->grid) {
    case SB_GPU_GRID_STRIDE:
        r.local[0] = 64;
        r.global[0] = (size_t)(x < (1 << 16) ? x : (1 << 16));
        r.global[0] = (r.global[0] + r.local[0] - 1) / r.local[0] * r.local[0];
        break;
    case SB_GPU_GRID_LANES32:
        r.local[0] = 32;
        r.global[0] = (size_t)x * 32;
        break;
    case SB_GPU_GRID_TILES64:
        r.dims = 3;
        r.local[0] = 256;
        r.global[0] = (size_t)((x + 63) / 64) * 256;
        r.global[1] = (size_t)((y + 63) / 64);
        r.global[2] = (size_t)z;
        break;
    }
    return be->launcher->launch(be, fn, k, geom, geom_bytes, nargs, args, &r);
}

/* The common case: n units. */
static sb_status launch(const sb_backend *be, const char *fn, const sb_gpu_kernel *k,
                        const void *geom, size_t geom_bytes, int nargs, sb_gpu_arg *args,
                        int64_t n) {
    return launch_grid(be, fn, k, geom, geom_bytes, nargs, args, n, 1, 1);
}

sb_status sb_gpu_dense(const sb_backend *be, const char *fn, const char *what, const void *p,
                       int64_t n, size_t elem, sb_gpu_ptr *out) {
    return dense_ptr(be, fn, what, p, n, elem, out);
}

sb_status sb_gpu_launch(const sb_backend *be, const char *fn, const sb_gpu_kernel *k,
                        const void *geom, size_t geom_bytes, int nargs, sb_gpu_arg *args,
                        int64_t n) {
    return launch(be, fn, k, geom, geom_bytes, nargs, args, n);
}

/* ---- the pointwise geometry (src/gpu/kernels/pointwise.cl) ---- */

enum { PW_GEOM = 41 };

/* v[0] ndim, v[1..8] the iteration shape, v[9 + 8k ..] operand k's strides. */
typedef struct pw_geom {
    int64_t v[PW_GEOM];
} pw_geom;

/* The iteration shape is shape_of's; operand k's strides come from
 * views[k] (operand 0 is the output). */
static pw_geom pw_geom_of(const sb_tensor *shape_of, int nviews, const sb_tensor *const *views) {
    pw_geom g;
    memset(&g, 0, sizeof g);
    g.v[0] = shape_of->ndim;
    for (int d = 0; d < shape_of->ndim; d++) g.v[1 + d] = shape_of->shape[d];
    for (int k = 0; k < nviews; k++)
        for (int d = 0; d < views[k]->ndim; d++) g.v[9 + 8 * k + d] = views[k]->strides[d];
    return g;
}

#define PW_GEOM_OF(shape_of, ...)                                                      \
    pw_geom_of((shape_of), (int)(sizeof((const sb_tensor *[]){__VA_ARGS__}) /         \
                                 sizeof(const sb_tensor *)),                            \
               (const sb_tensor *[]){__VA_ARGS__})

/* ---- memory ops on views ---- */

sb_status sb_gpu_copy(const sb_backend *be, const sb_tensor *src, sb_tensor *dst);
sb_status sb_gpu_fill(const sb_backend *be, sb_tensor *t, float value);

static sb_status copy_views(const sb_backend *be, const char *fn, const sb_tensor *src, const sb_tensor *dst) {
    int64_t n = sb_tensor_numel(src);
    sb_gpu_ptr s, d;
    SB_TRY(view_ptr(be, fn, "src", src, &s));
    SB_TRY(view_ptr(be, fn, "dst", dst, &d));
    pw_geom g = PW_GEOM_OF(src, dst, src);
    sb_gpu_arg a[] = {SB_GPU_ARG(n), GEOM_ARG, OPERAND(d), OPERAND(s)};
    return launch(be, fn, sb_dtype_size(src->dtype) == 8 ? K(COPY64) : K(COPY32), g.v, sizeof g.v,
                  ARGS(a), n);
}

/* Any strides; an overlap goes through a dense temporary, as if copied
 * at once. */
sb_status sb_gpu_copy(const sb_backend *be, const sb_tensor *src, sb_tensor *dst) {
    const char *fn = "sb_tensor_copy";
    int64_t n = sb_tensor_numel(src);
    if (n == 0) return SB_OK;
    sb_gpu_ptr s, d;
    SB_TRY(view_ptr(be, fn, "src", src, &s));
    SB_TRY(view_ptr(be, fn, "dst", dst, &d));
    if (s.buf != d.buf) return copy_views(be, fn, src, dst);
    void *tmp = NULL;
    SB_TRY(be->alloc(be, (size_t)n * sb_dtype_size(src->dtype), &tmp));
    sb_tensor t = {.dtype = src->dtype, .device = src->device, .ndim = src->ndim, .data = tmp};
    int64_t stride = 1;
    for (int i = src->ndim - 1; i >= 0; i--) {
        t.shape[i] = src->shape[i];
        t.strides[i] = stride;
        stride *= src->shape[i];
    }
    sb_status st = copy_views(be, fn, src, &t);
    if (st == SB_OK) st = copy_views(be, fn, &t, dst);
    be->release(be, tmp);
    return st;
}

sb_status sb_gpu_fill(const sb_backend *be, sb_tensor *t, float value) {
    const char *fn = "sb_tensor_fill";
    int64_t n = sb_tensor_numel(t);
    if (n == 0) return SB_OK;
    sb_gpu_ptr p;
    SB_TRY(view_ptr(be, fn, "t", t, &p));
    pw_geom g = PW_GEOM_OF(t, t);
    sb_gpu_arg a[] = {SB_GPU_ARG(n), GEOM_ARG, OPERAND(p), SB_GPU_ARG(value)};
    return launch(be, fn, K(FILL), g.v, sizeof g.v, ARGS(a), n);
}

/* ---- pointwise ops ---- */

/* pow needs sb_powf: its kernels are in the math program (math.cl) and
 * take the pointwise kernels' parameters. */
static const sb_gpu_kernel *binary_kernel(sb_binary_op op, const sb_gpu_kernel *pointwise,
                                       const sb_gpu_kernel *math) {
    return op == SB_BINARY_POW ? math : pointwise;
}

static sb_status gpu_binary(const sb_backend *be, sb_binary_op op, const sb_tensor *a,
                            const sb_tensor *b, sb_tensor *out) {
    const char *fn = "sb_binary";
    int64_t n = sb_tensor_numel(out);
    int32_t o = (int32_t)op;
    sb_gpu_ptr pa, pb, po;
    SB_TRY(view_ptr(be, fn, "a", a, &pa));
    SB_TRY(view_ptr(be, fn, "b", b, &pb));
    SB_TRY(view_ptr(be, fn, "out", out, &po));
    pw_geom g = PW_GEOM_OF(out, out, a, b);
    sb_gpu_arg args[] = {SB_GPU_ARG(o), SB_GPU_ARG(n), GEOM_ARG, OPERAND(po), OPERAND(pa),
                         OPERAND(pb)};
    return launch(be, fn, binary_kernel(op, K(BINARY), K(MATH_POW)), g.v, sizeof g.v, ARGS(args), n);
}

static sb_status gpu_binary_scalar(const sb_backend *be, sb_binary_op op, const sb_tensor *x,
                                   float s, sb_tensor *out) {
    const char *fn = "sb_binary_scalar";
    int64_t n = sb_tensor_numel(out);
    int32_t o = (int32_t)op;
    sb_gpu_ptr px, po;
    SB_TRY(view_ptr(be, fn, "x", x, &px));
    SB_TRY(view_ptr(be, fn, "out", out, &po));
    pw_geom g = PW_GEOM_OF(out, out, x);
    sb_gpu_arg args[] = {SB_GPU_ARG(o), SB_GPU_ARG(n), GEOM_ARG, OPERAND(po), OPERAND(px),
                         SB_GPU_ARG(s)};
    return launch(be, fn, binary_kernel(op, K(BINARY_SCALAR), K(MATH_POW_SCALAR)), g.v, sizeof g.v,
                  ARGS(args), n);
}

static sb_status gpu_unary(const sb_backend *be, sb_unary_op op, const sb_tensor *x,
                           sb_tensor *out) {
    const char *fn = "sb_unary";
    /* the correctly rounded ones */
    bool math = op == SB_UNARY_EXP || op == SB_UNARY_LOG || op == SB_UNARY_SIN ||
                op == SB_UNARY_COS || op == SB_UNARY_EXP2 || op == SB_UNARY_LOG2;
    int64_t n = sb_tensor_numel(out);
    int32_t o = (int32_t)op;
    sb_gpu_ptr px, po;
    SB_TRY(view_ptr(be, fn, "x", x, &px));
    SB_TRY(view_ptr(be, fn, "out", out, &po));
    pw_geom g = PW_GEOM_OF(out, out, x);
    sb_gpu_arg args[] = {SB_GPU_ARG(o), SB_GPU_ARG(n), GEOM_ARG, OPERAND(po), OPERAND(px)};
    return launch(be, fn, math ? K(MATH_UNARY) : K(UNARY), g.v, sizeof g.v, ARGS(args), n);
}

static sb_status gpu_unary_backward(const sb_backend *be, sb_unary_op op, const sb_tensor *x,
                                    const sb_tensor *y, const sb_tensor *dy, sb_tensor *dx) {
    const char *fn = "sb_unary_backward";
    int64_t n = sb_tensor_numel(dx);
    int32_t o = (int32_t)op;
    sb_gpu_ptr px, py, pdy, pdx;
    SB_TRY(view_ptr(be, fn, "x", x, &px));
    SB_TRY(view_ptr(be, fn, "y", y, &py));
    SB_TRY(view_ptr(be, fn, "dy", dy, &pdy));
    SB_TRY(view_ptr(be, fn, "dx", dx, &pdx));
    pw_geom g = PW_GEOM_OF(dx, dx, x, y, dy);
    sb_gpu_arg args[] = {SB_GPU_ARG(o), SB_GPU_ARG(n), GEOM_ARG,    OPERAND(pdx),
                         OPERAND(px),   OPERAND(py),   OPERAND(pdy)};
    /* sin and cos differentiate to the other function: the math program */
    bool math = op == SB_UNARY_SIN || op == SB_UNARY_COS;
    return launch(be, fn, math ? K(MATH_UNARY_GRAD) : K(UNARY_GRAD), g.v, sizeof g.v, ARGS(args), n);
}

sb_status sb_gpu_math_eval(const sb_backend *be, int f, const float *x, float *y, int64_t n) {
    const char *fn = "sb_gpu_math_eval";
#define SB_COUNT_ONE(i, name) +1
    enum { FUNCTIONS = 0 SB_GPU_MATH_EVAL_FUNCTIONS(SB_COUNT_ONE) };
#undef SB_COUNT_ONE
    if (f < 0 || f >= FUNCTIONS)
        return sb_fail(SB_ERR_ARG, "%s: f = %d names no function (0..%d)", fn, f, FUNCTIONS - 1);
    if (n == 0) return SB_OK;
    sb_gpu_ptr px, py;
    SB_TRY(dense_ptr(be, fn, "x", x, n, sizeof(float), &px));
    SB_TRY(dense_ptr(be, fn, "y", y, n, sizeof(float), &py));
    int32_t ff = f;
    int64_t nn = n;
    sb_gpu_arg args[] = {SB_GPU_ARG(ff), SB_GPU_ARG(nn), OPERAND(px), OPERAND(py)};
    return launch(be, fn, K(MATH_EVAL), NULL, 0, ARGS(args), n);
}

static const char *act_name(const sb_act_args *a) {
    /* indexed by sb_act_kind: one name per kind */
    static const char *fwd[] = {"relu_forward", "leaky_relu_forward", "tanh_forward",
                                "sigmoid_forward", "silu_forward", "gelu_forward",
                                "softplus_forward", "hardtanh_forward", "hardsigmoid_forward",
                                "hardswish_forward", "elu_forward", "mish_forward",
                                "logsigmoid_forward", "hardshrink_forward", "softshrink_forward",
                                "threshold_forward"};
    static const char *bwd[] = {"relu_backward", "leaky_relu_backward", "tanh_backward",
                                "sigmoid_backward", "silu_backward", "gelu_backward",
                                "softplus_backward", "hardtanh_backward", "hardsigmoid_backward",
                                "hardswish_backward", "elu_backward", "mish_backward",
                                "logsigmoid_backward", "hardshrink_backward", "softshrink_backward",
                                "threshold_backward"};
    _Static_assert(sizeof fwd / sizeof *fwd == SB_ACT_THRESHOLD + 1, "a name per kind");
    _Static_assert(sizeof bwd / sizeof *bwd == SB_ACT_THRESHOLD + 1, "a name per kind");
    return a->backward ? bwd[a->kind] : fwd[a->kind];
}

/* relu, leaky relu, hardtanh, hardsigmoid, hardswish, hardshrink,
 * softshrink, threshold, and tanh/sigmoid backward (from y) in
 * pointwise.cl; tanh, sigmoid, silu, gelu, softplus, elu, mish and
 * logsigmoid forward, and the backward of the last six, in math.cl (over
 * src/math's functions). */
static sb_status gpu_activation(const sb_backend *be, const sb_act_args *a, const sb_tensor *in,
                                sb_tensor *out) {
    char fn[48];
    snprintf(fn, sizeof fn, "sb_%s", act_name(a));
    bool plain = a->kind == SB_ACT_RELU || a->kind == SB_ACT_LEAKY_RELU ||
                 a->kind == SB_ACT_HARDTANH || a->kind == SB_ACT_HARDSIGMOID ||
                 a->kind == SB_ACT_HARDSWISH || a->kind == SB_ACT_HARDSHRINK ||
                 a->kind == SB_ACT_SOFTSHRINK || a->kind == SB_ACT_THRESHOLD ||
                 (a->backward && (a->kind == SB_ACT_TANH || a->kind == SB_ACT_SIGMOID));
    int64_t n = sb_tensor_numel(out);
    int32_t kind = (int32_t)a->kind, backward = a->backward, approximate = a->approximate;
    float p0 = a->p0, p1 = a->p1, p2 = a->p2;
    sb_gpu_ptr px, pdy = {NULL, 0}, po;
    SB_TRY(view_ptr(be, fn, "x", &in[0], &px));
    if (a->backward) SB_TRY(view_ptr(be, fn, "dy", &in[1], &pdy));
    SB_TRY(view_ptr(be, fn, "out", out, &po));
    pw_geom g = a->backward ? PW_GEOM_OF(out, out, &in[0], &in[1]) : PW_GEOM_OF(out, out, &in[0]);
    if (plain) {
        sb_gpu_arg args[] = {SB_GPU_ARG(kind), SB_GPU_ARG(backward), SB_GPU_ARG(p0),
                             SB_GPU_ARG(p1),   SB_GPU_ARG(n),        GEOM_ARG,
                             OPERAND(po),      OPERAND(px),          OPERAND(pdy)};
        return launch(be, fn, K(ACTIVATION), g.v, sizeof g.v, ARGS(args), n);
    }
    sb_gpu_arg args[] = {SB_GPU_ARG(kind), SB_GPU_ARG(backward), SB_GPU_ARG(approximate),
                         SB_GPU_ARG(p0),   SB_GPU_ARG(p1),       SB_GPU_ARG(p2),
                         SB_GPU_ARG(n),    GEOM_ARG,             OPERAND(po),
                         OPERAND(px),      OPERAND(pdy)};
    return launch(be, fn, K(MATH_ACTIVATION), g.v, sizeof g.v, ARGS(args), n);
}

/* ---- the canonical sum (src/gpu/kernels/sum.cl) ---- */

enum { SUM_GEOM = 42, EXTREME_GEOM = 50 };

static int64_t count_of(int nd, const int64_t *shape) {
    int64_t n = 1;
    for (int k = 0; k < nd; k++) n *= shape[k];
    return n;
}

/* sum.cl's geometry: v[0] nkeep, v[1..8] kept shape, v[9..16] their x
 * strides, v[17..24] their out strides, v[25] nred, v[26..33] reduced
 * shape, v[34..41] their x strides, v[42..49] the kept dims' index strides
 * (max/min only: gv has EXTREME_GEOM longs). */
static void sum_geom(const sb_ref_reduce_geom *g, int64_t gv[EXTREME_GEOM]) {
    memset(gv, 0, EXTREME_GEOM * sizeof *gv);
    for (int d = 0; d < g->nkeep; d++) gv[42 + d] = g->keep_istride[d];
    gv[0] = g->nkeep;
    gv[25] = g->nred;
    for (int d = 0; d < g->nkeep; d++) {
        gv[1 + d] = g->keep_shape[d];
        gv[9 + d] = g->keep_xstride[d];
        gv[17 + d] = g->keep_ostride[d];
    }
    for (int d = 0; d < g->nred; d++) {
        gv[26 + d] = g->red_shape[d];
        gv[34 + d] = g->red_xstride[d];
    }
}

/* Sum or mean of nout outputs over n > 8192 elements each: every block of
 * every output folded by its own group (sum.cl's sb_sum_blocks), the block
 * sums streamed in order per output (sb_sum_finish): sb_sum_reduce's bits
 * with n / 8192 times its parallelism. */
static sb_status reduce_blocks(const sb_backend *be, const char *fn, sb_ref_reduce_kind kind,
                               const int64_t *gv, int64_t nout, int64_t n, sb_gpu_ptr px,
                               sb_gpu_ptr po, float nf) {
    int64_t nblocks = (n + SB_SUM_BLOCK - 1) / SB_SUM_BLOCK, no = nout, nn = n, nb = nblocks;
    size_t bytes;
    if (!sb_checked_bytes(nout * nblocks, sizeof(float), &bytes))
        return sb_fail(SB_ERR_NOMEM, "%s: the block sums exceed the address space", fn);
    void *mem = NULL;
    SB_TRY(be->alloc(be, bytes, &mem));
    sb_gpu_ptr pb;
    sb_status st = dense_ptr(be, fn, "the block sums", mem, nout * nblocks, sizeof(float), &pb);
    if (st == SB_OK) {
        sb_gpu_arg args[] = {SB_GPU_ARG(nn), SB_GPU_ARG(nb), GEOM_ARG, OPERAND(px), OPERAND(pb)};
        st = launch(be, fn, K(SUM_BLOCKS), gv, SUM_GEOM * sizeof *gv, ARGS(args), nout * nblocks);
    }
    if (st == SB_OK) {
        int32_t k = (int32_t)kind;
        sb_gpu_arg args[] = {SB_GPU_ARG(k),  SB_GPU_ARG(nf), SB_GPU_ARG(no), SB_GPU_ARG(nb),
                             GEOM_ARG,       OPERAND(pb),    OPERAND(po)};
        st = launch(be, fn, K(SUM_FINISH), gv, SUM_GEOM * sizeof *gv, ARGS(args), nout);
    }
    be->release(be, mem);
    return st;
}

/* sum / mean / var / std over g, as sb_ref_reduce, with nf the divisor of
 * the mean ((float)n for the reductions; the losses pass their count). */
static sb_status reduce_launch(const sb_backend *be, const char *fn, sb_ref_reduce_kind kind,
                               const sb_ref_reduce_geom *g, const float *x, int64_t correction,
                               float *out, float nf) {
    int64_t nout = count_of(g->nkeep, g->keep_shape);
    int64_t n = count_of(g->nred, g->red_shape);
    if (nout == 0) return SB_OK;
    int64_t gv[EXTREME_GEOM];
    sum_geom(g, gv);
    sb_gpu_ptr px, po;
    SB_TRY(resolve(be, fn, "x", n > 0 ? x : NULL, n > 0 ? sizeof(float) : 0, sizeof(float), &px));
    SB_TRY(resolve(be, fn, "out", out, sizeof(float), sizeof(float), &po));
    if ((kind == SB_REF_REDUCE_SUM || kind == SB_REF_REDUCE_MEAN) && n > SB_SUM_BLOCK)
        return reduce_blocks(be, fn, kind, gv, nout, n, px, po, nf);
    int32_t k = (int32_t)kind, nan_result = n - correction <= 0;
    float denom = (float)(n - correction);
    sb_gpu_arg args[] = {SB_GPU_ARG(k),          SB_GPU_ARG(nf), SB_GPU_ARG(denom),
                         SB_GPU_ARG(nan_result), SB_GPU_ARG(n),  GEOM_ARG,
                         OPERAND(px),            OPERAND(po)};
    return launch(be, fn, K(SUM), gv, SUM_GEOM * sizeof *gv, ARGS(args), nout);
}

/* max / min over g with first-occurrence indices (sum.cl); out or indices
 * may be NULL. */
static sb_status gpu_reduce_extreme(const sb_backend *be, bool is_max, const sb_ref_reduce_geom *g,
                                    const float *x, float *out, int64_t *indices) {
    const char *fn = is_max ? "sb_max" : "sb_min";
    int64_t nout = count_of(g->nkeep, g->keep_shape);
    int64_t n = count_of(g->nred, g->red_shape), no = nout;
    if (nout == 0) return SB_OK;
    int64_t gv[EXTREME_GEOM];
    sum_geom(g, gv);
    /* strided operands: the resolver checks their first element; src/ops
     * validated the views */
    sb_gpu_ptr px, po = {NULL, 0}, pi = {NULL, 0};
    SB_TRY(resolve(be, fn, "x", x, sizeof(float), sizeof(float), &px));
    if (out) SB_TRY(resolve(be, fn, "out", out, sizeof(float), sizeof(float), &po));
    if (indices)
        SB_TRY(resolve(be, fn, "indices", indices, sizeof(int64_t), sizeof(int64_t), &pi));
    int32_t mx = is_max, want_out = out != NULL, want_idx = indices != NULL;
    sb_gpu_arg args[] = {SB_GPU_ARG(mx),       SB_GPU_ARG(no),       SB_GPU_ARG(n),
                         GEOM_ARG,             OPERAND(px),          SB_GPU_ARG(want_out),
                         OPERAND(po),          SB_GPU_ARG(want_idx), OPERAND(pi)};
    return launch(be, fn, K(REDUCE_EXTREME), gv, sizeof gv, ARGS(args), nout);
}

static sb_status gpu_reduce_scatter(const sb_backend *be, const sb_ref_reduce_geom *g,
                                    const float *dy, const int64_t *indices, float *dx) {
    const char *fn = "sb_reduce_extreme_backward";
    int64_t nout = count_of(g->nkeep, g->keep_shape);
    int64_t n = count_of(g->nred, g->red_shape), no = nout;
    if (nout == 0 || n == 0) return SB_OK;
    int64_t gv[EXTREME_GEOM];
    sum_geom(g, gv);
    sb_gpu_ptr pdy, pi, pdx;
    SB_TRY(resolve(be, fn, "dy", dy, sizeof(float), sizeof(float), &pdy));
    SB_TRY(resolve(be, fn, "indices", indices, sizeof(int64_t), sizeof(int64_t), &pi));
    SB_TRY(resolve(be, fn, "dx", dx, sizeof(float), sizeof(float), &pdx));
    sb_gpu_arg args[] = {SB_GPU_ARG(no), SB_GPU_ARG(n), GEOM_ARG, OPERAND(pdy), OPERAND(pi),
                         OPERAND(pdx)};
    return launch(be, fn, K(REDUCE_SCATTER), gv, sizeof gv, ARGS(args), nout);
}

static sb_status reduce_run(const sb_backend *be, const char *fn, sb_ref_reduce_kind kind, const sb_ref_reduce_geom *g,
                            const float *x, int64_t correction, float *out) {
    return reduce_launch(be, fn, kind, g, x, correction, out, (float)count_of(g->nred, g->red_shape));
}

static sb_status gpu_reduce(const sb_backend *be, sb_ref_reduce_kind kind,
                            const sb_ref_reduce_geom *g, const float *x, int64_t correction,
                            float *out) {
    return reduce_run(be, "sb_reduce", kind, g, x, correction, out);
}

/* The CPU's geometry (src/ref/reduce.c): grad's dims either kept (out has
 * them) or summed. */
static sb_status gpu_reduce_to_shape(const sb_backend *be, const sb_tensor *grad, sb_tensor *out) {
    sb_ref_reduce_geom g = sb_ref_reduce_to_shape_geom(grad, out);
    return reduce_run(be, "sb_reduce_to_shape", SB_REF_REDUCE_SUM, &g, grad->data, 0, out->data);
}

/* Each gradient formed at the broadcast shape in a dense temporary, then
 * summed back to its input's shape. */
static sb_status gpu_binary_backward(const sb_backend *be, sb_binary_op op, const sb_tensor *dy,
                                     const sb_tensor *a, const sb_tensor *b, sb_tensor *da,
                                     sb_tensor *db) {
    const char *fn = "sb_binary_backward";
    int64_t n = sb_tensor_numel(dy);
    if (n == 0) {
        if (da) SB_TRY(sb_gpu_fill(be, da, 0.0f));
        if (db) SB_TRY(sb_gpu_fill(be, db, 0.0f));
        return SB_OK;
    }
    void *tmp = NULL;
    SB_TRY(be->alloc(be, (size_t)n * sizeof(float), &tmp));
    sb_tensor full = {.dtype = SB_F32, .device = dy->device, .ndim = dy->ndim, .data = tmp};
    int64_t stride = 1;
    for (int i = dy->ndim - 1; i >= 0; i--) {
        full.shape[i] = dy->shape[i];
        full.strides[i] = stride;
        stride *= dy->shape[i];
    }
    sb_gpu_ptr pdy, pa, pb, pf;
    sb_status st = view_ptr(be, fn, "dy", dy, &pdy);
    if (st == SB_OK) st = view_ptr(be, fn, "a", a, &pa);
    if (st == SB_OK) st = view_ptr(be, fn, "b", b, &pb);
    if (st == SB_OK) st = view_ptr(be, fn, "the gradient", &full, &pf);
    pw_geom g = PW_GEOM_OF(dy, &full, dy, a, b);
    sb_tensor *grads[2] = {da, db};
    int32_t o = (int32_t)op;
    for (int32_t w = 0; w < 2 && st == SB_OK; w++) {
        if (!grads[w]) continue;
        sb_gpu_arg args[] = {SB_GPU_ARG(o), SB_GPU_ARG(w), SB_GPU_ARG(n), GEOM_ARG,
                             OPERAND(pf),   OPERAND(pdy),  OPERAND(pa),   OPERAND(pb)};
        st = launch(be, fn, binary_kernel(op, K(BINARY_GRAD), K(MATH_POW_GRAD)), g.v, sizeof g.v,
                    ARGS(args), n);
        if (st == SB_OK) st = gpu_reduce_to_shape(be, &full, grads[w]);
    }
    be->release(be, tmp);
    return st;
}

static sb_status gpu_spread(const sb_backend *be, const sb_tensor *dy, bool divide, float divisor,
                            sb_tensor *dx) {
    const char *fn = "sb_reduce_backward";
    int64_t n = sb_tensor_numel(dx);
    int32_t dv = divide;
    sb_gpu_ptr pdy, pdx;
    SB_TRY(view_ptr(be, fn, "dy", dy, &pdy));
    SB_TRY(view_ptr(be, fn, "dx", dx, &pdx));
    pw_geom g = PW_GEOM_OF(dx, dx, dy);
    sb_gpu_arg args[] = {SB_GPU_ARG(dv), SB_GPU_ARG(divisor), SB_GPU_ARG(n), GEOM_ARG,
                         OPERAND(pdx),   OPERAND(pdy)};
    return launch(be, fn, K(SPREAD), g.v, sizeof g.v, ARGS(args), n);
}

/* ---- elementwise losses ---- */

/* MSE without a weight keeps pointwise.cl's kernels (no function of the
 * math program); every other kind, and weighted MSE, runs loss.cl over
 * src/ref/loss_terms.h in the math program. */
static bool plain_mse(const sb_elementwise_loss *p, const float *w, const float *pw) {
    return p->kind == SB_LOSS_MSE && !w && !pw;
}

static sb_status gpu_elementwise_loss_forward(const sb_backend *be, const sb_elementwise_loss *p,
                                              const float *x, const float *y, const float *w,
                                              const float *pw, int64_t n,
                                              sb_loss_reduction reduction, float *loss) {
    const char *fn = "sb_elementwise_loss_forward";
    sb_gpu_ptr px, py, pl, pwt, ppw;
    int32_t have = 0; /* 1: a weight, 2: a pos_weight */
    SB_TRY(dense_ptr(be, fn, "x", x, n, sizeof(float), &px));
    SB_TRY(dense_ptr(be, fn, "target", y, n, sizeof(float), &py));
    SB_TRY(optional_ptr(be, fn, "weight", w, n, 1, &have, &pwt));
    SB_TRY(optional_ptr(be, fn, "pos_weight", pw, n, 2, &have, &ppw));
    SB_TRY(dense_ptr(be, fn, "loss", loss, reduction == SB_LOSS_NONE ? n : 1, sizeof(float), &pl));
    void *tmp = NULL; /* the terms, summed by the canonical sum unless NONE */
    if (reduction != SB_LOSS_NONE) SB_TRY(be->alloc(be, (size_t)(n ? n : 1) * sizeof(float), &tmp));
    sb_gpu_ptr pq = pl;
    sb_status st = tmp ? dense_ptr(be, fn, "terms", tmp, n, sizeof(float), &pq) : SB_OK;
    int64_t nn = n;
    if (st == SB_OK && plain_mse(p, w, pw)) {
        sb_gpu_arg args[] = {SB_GPU_ARG(nn), OPERAND(px), OPERAND(py), OPERAND(pq)};
        st = launch(be, fn, K(MSE_TERMS), NULL, 0, ARGS(args), n);
    } else if (st == SB_OK) {
        int32_t kind = (int32_t)p->kind, lt = p->log_target, hw = have & 1, hp = (have & 2) != 0;
        float beta = p->beta;
        sb_gpu_arg args[] = {SB_GPU_ARG(kind), SB_GPU_ARG(beta), SB_GPU_ARG(lt), SB_GPU_ARG(hw),
                             SB_GPU_ARG(hp),   SB_GPU_ARG(nn),   OPERAND(px),    OPERAND(py),
                             OPERAND(pwt),     OPERAND(ppw),     OPERAND(pq)};
        st = launch(be, fn, K(LOSS_TERMS), NULL, 0, ARGS(args), n);
    }
    if (st == SB_OK && tmp) { /* sum, or sum / (float)n: the reduction's kinds 0 and 1 */
        sb_ref_reduce_geom g = {0};
        g.nred = 1;
        g.red_shape[0] = n;
        g.red_xstride[0] = 1;
        st = reduce_run(be, fn, reduction == SB_LOSS_MEAN ? SB_REF_REDUCE_MEAN : SB_REF_REDUCE_SUM, &g,
                        tmp, 0, loss);
    }
    be->release(be, tmp);
    return st;
}

static sb_status gpu_elementwise_loss_backward(const sb_backend *be, const sb_elementwise_loss *p,
                                               const float *x, const float *y, const float *w,
                                               const float *pw, int64_t n,
                                               sb_loss_reduction reduction, const float *dloss,
                                               float *dx, float *dy) {
    const char *fn = "sb_elementwise_loss_backward";
    if (n == 0) return SB_OK;
    sb_gpu_ptr px, py, pl, pdx, pdy = {NULL, 0}, pwt, ppw;
    int32_t have = 0; /* 1: a weight, 2: a pos_weight */
    SB_TRY(dense_ptr(be, fn, "x", x, n, sizeof(float), &px));
    SB_TRY(dense_ptr(be, fn, "target", y, n, sizeof(float), &py));
    SB_TRY(optional_ptr(be, fn, "weight", w, n, 1, &have, &pwt));
    SB_TRY(optional_ptr(be, fn, "pos_weight", pw, n, 2, &have, &ppw));
    SB_TRY(dense_ptr(be, fn, "dloss", dloss, reduction == SB_LOSS_NONE ? n : 1, sizeof(float), &pl));
    SB_TRY(dense_ptr(be, fn, "dx", dx, n, sizeof(float), &pdx));
    if (dy) SB_TRY(dense_ptr(be, fn, "dtarget", dy, n, sizeof(float), &pdy));
    /* src/ref/loss.c's factors: MSE's norm, the others' count for MEAN */
    float norm = reduction == SB_LOSS_MEAN ? 2.0f / (float)n : 2.0f, count = (float)n;
    int32_t per = reduction == SB_LOSS_NONE, want = dy != NULL;
    int64_t nn = n;
    if (plain_mse(p, w, pw)) {
        sb_gpu_arg args[] = {SB_GPU_ARG(norm), SB_GPU_ARG(per), SB_GPU_ARG(want), SB_GPU_ARG(nn),
                             OPERAND(px),      OPERAND(py),     OPERAND(pl),      OPERAND(pdx),
                             OPERAND(pdy)};
        return launch(be, fn, K(MSE_GRAD), NULL, 0, ARGS(args), n);
    }
    int32_t kind = (int32_t)p->kind, lt = p->log_target, hw = have & 1, hp = (have & 2) != 0;
    int32_t red = reduction == SB_LOSS_NONE ? 0 : (reduction == SB_LOSS_MEAN ? 1 : 2);
    float beta = p->beta;
    sb_gpu_arg args[] = {SB_GPU_ARG(kind),  SB_GPU_ARG(beta), SB_GPU_ARG(lt),    SB_GPU_ARG(hw),
                         SB_GPU_ARG(hp),    SB_GPU_ARG(red),  SB_GPU_ARG(norm),  SB_GPU_ARG(count),
                         SB_GPU_ARG(want),  SB_GPU_ARG(nn),   OPERAND(px),       OPERAND(py),
                         OPERAND(pwt),      OPERAND(ppw),     OPERAND(pl),       OPERAND(pdx),
                         OPERAND(pdy)};
    return launch(be, fn, K(LOSS_GRAD), NULL, 0, ARGS(args), n);
}

/* ---- softmax and the class losses (softmax.cl, in the math program) ---- */

static sb_status gpu_softmax_forward(const sb_backend *be, const float *x, int64_t outer,
                                     int64_t n, int64_t inner, bool log, float *y) {
    const char *fn = log ? "sb_log_softmax_forward" : "sb_softmax_forward";
    int64_t total = outer * n * inner, rows = outer * inner;
    if (total == 0) return SB_OK;
    sb_gpu_ptr px, py;
    SB_TRY(dense_ptr(be, fn, "x", x, total, sizeof(float), &px));
    SB_TRY(dense_ptr(be, fn, "y", y, total, sizeof(float), &py));
    int32_t lg = log;
    int64_t o = outer, nn = n, in = inner;
    sb_gpu_arg args[] = {SB_GPU_ARG(lg), SB_GPU_ARG(o), SB_GPU_ARG(nn), SB_GPU_ARG(in),
                         OPERAND(px),    OPERAND(py)};
    return launch(be, fn, K(SOFTMAX_FORWARD), NULL, 0, ARGS(args), rows);
}

static sb_status gpu_softmax_backward(const sb_backend *be, const float *y, const float *dy,
                                      int64_t outer, int64_t n, int64_t inner, bool log,
                                      float *dx) {
    const char *fn = log ? "sb_log_softmax_backward" : "sb_softmax_backward";
    int64_t total = outer * n * inner, rows = outer * inner;
    if (total == 0) return SB_OK;
    sb_gpu_ptr py, pdy, pdx;
    SB_TRY(dense_ptr(be, fn, "y", y, total, sizeof(float), &py));
    SB_TRY(dense_ptr(be, fn, "dy", dy, total, sizeof(float), &pdy));
    SB_TRY(dense_ptr(be, fn, "dx", dx, total, sizeof(float), &pdx));
    int32_t lg = log;
    int64_t o = outer, nn = n, in = inner;
    sb_gpu_arg args[] = {SB_GPU_ARG(lg), SB_GPU_ARG(o), SB_GPU_ARG(nn), SB_GPU_ARG(in),
                         OPERAND(py),    OPERAND(pdy),  OPERAND(pdx)};
    return launch(be, fn, K(SOFTMAX_BACKWARD), NULL, 0, ARGS(args), rows);
}

/* MEAN's divisor (src/ref/loss.c's sb_ref_class_mean_divisor) computed on
 * the device into a temporary of be (*mem; *divisor is its one float, at
 * the end): without weights the count of counted rows (class_loss.cl's
 * sb_class_mean_count), with weights the canonical sum (sum.cl) of the
 * terms sb_class_mean_terms writes before it. Nothing is read back. */
static sb_status class_mean_divisor(const char *fn, const sb_backend *be,
                                    const sb_class_problem *p, sb_gpu_ptr pt, void **mem,
                                    float **divisor) {
    int64_t rows = p->N * p->inner, terms = p->weight ? rows : 0;
    *mem = NULL;
    SB_TRY(be->alloc(be, (size_t)(terms + 1) * sizeof(float), mem));
    float *tmp = *mem;
    *divisor = tmp + terms;
    sb_gpu_ptr pd, pv, pw;
    int32_t have = 0;
    int64_t nr = rows, ig = p->ignore_index;
    sb_status st = dense_ptr(be, fn, "the divisor", *divisor, 1, sizeof(float), &pd);
    if (st == SB_OK && !p->weight) {
        sb_gpu_arg args[] = {SB_GPU_ARG(nr), SB_GPU_ARG(ig), OPERAND(pt), OPERAND(pd)};
        return launch(be, fn, K(CLASS_MEAN_COUNT), NULL, 0, ARGS(args), 1);
    }
    if (st == SB_OK) st = dense_ptr(be, fn, "the divisor's terms", tmp, terms, sizeof(float), &pv);
    if (st == SB_OK) st = optional_ptr(be, fn, "weight", p->weight, p->C, 1, &have, &pw);
    if (st == SB_OK) {
        sb_gpu_arg args[] = {SB_GPU_ARG(nr), SB_GPU_ARG(ig), OPERAND(pw), OPERAND(pt), OPERAND(pv)};
        st = launch(be, fn, K(CLASS_MEAN_TERMS), NULL, 0, ARGS(args), rows);
    }
    if (st == SB_OK) { /* the terms in row order, one canonical sum */
        sb_ref_reduce_geom g = {0};
        g.nred = 1;
        g.red_shape[0] = rows;
        g.red_xstride[0] = 1;
        st = reduce_run(be, fn, SB_REF_REDUCE_SUM, &g, tmp, 0, *divisor);
    }
    return st;
}

/* A 0-d tensor over one float of be's memory. */
static sb_tensor scalar_view(const sb_backend *be, float *p) {
    return (sb_tensor){.dtype = SB_F32, .device = be->device, .ndim = 0, .data = p};
}

/* Every class loss (the (N, C) entries are weight NULL, inner 1): one
 * work-item per row (class_loss.cl), SUM and MEAN the canonical sum of the
 * row losses (sum.cl), MEAN then divided by the divisor on the device
 * (pointwise.cl's division: the reference's sum / divisor). */
static sb_status class_loss_forward(const char *fn, const sb_backend *be,
                                    const sb_class_problem *p, const float *a,
                                    const int64_t *targets, float *loss) {
    int64_t rows = p->N * p->inner;
    sb_loss_reduction reduction = p->reduction;
    sb_gpu_ptr pa, pt, pl, pw;
    int32_t have = 0;
    SB_TRY(dense_ptr(be, fn, "input", a, rows * p->C, sizeof(float), &pa));
    SB_TRY(dense_ptr(be, fn, "targets", targets, rows, sizeof(int64_t), &pt));
    SB_TRY(dense_ptr(be, fn, "loss", loss, reduction == SB_LOSS_NONE ? rows : 1, sizeof(float), &pl));
    SB_TRY(optional_ptr(be, fn, "weight", p->weight, p->C, 1, &have, &pw));
    void *tmp = NULL; /* the row losses, summed unless NONE */
    if (reduction != SB_LOSS_NONE)
        SB_TRY(be->alloc(be, (size_t)(rows ? rows : 1) * sizeof(float), &tmp));
    sb_gpu_ptr pv = pl;
    sb_status st = tmp ? dense_ptr(be, fn, "row losses", tmp, rows, sizeof(float), &pv) : SB_OK;
    int32_t lg = p->logits;
    int64_t nr = rows, cc = p->C, in = p->inner, ig = p->ignore_index;
    float eps = p->eps;
    sb_gpu_arg args[] = {SB_GPU_ARG(lg),  SB_GPU_ARG(nr), SB_GPU_ARG(cc),   SB_GPU_ARG(in),
                         SB_GPU_ARG(eps), SB_GPU_ARG(ig), SB_GPU_ARG(have), OPERAND(pw),
                         OPERAND(pa),     OPERAND(pt),    OPERAND(pv)};
    if (st == SB_OK) st = launch(be, fn, K(CLASS_LOSS_ROWS), NULL, 0, ARGS(args), rows);
    if (st == SB_OK && tmp) {
        sb_ref_reduce_geom g = {0};
        g.nred = 1;
        g.red_shape[0] = rows;
        g.red_xstride[0] = 1;
        st = reduce_run(be, fn, SB_REF_REDUCE_SUM, &g, tmp, 0, loss);
    }
    if (st == SB_OK && reduction == SB_LOSS_MEAN) {
        void *mem = NULL;
        float *divisor = NULL;
        st = class_mean_divisor(fn, be, p, pt, &mem, &divisor);
        sb_tensor l = scalar_view(be, loss), d = scalar_view(be, divisor);
        if (st == SB_OK) st = gpu_binary(be, SB_BINARY_DIV, &l, &d, &l);
        be->release(be, mem);
    }
    be->release(be, tmp);
    return st;
}

static sb_status class_loss_backward(const char *fn, const sb_backend *be,
                                     const sb_class_problem *p, const float *a,
                                     const int64_t *targets, const float *dloss, float *da) {
    int64_t rows = p->N * p->inner;
    if (rows == 0 || p->C == 0) return SB_OK;
    sb_gpu_ptr pa, pt, pl, pda, pw, pd = {NULL, 0};
    int32_t have = 0;
    SB_TRY(dense_ptr(be, fn, "input", a, rows * p->C, sizeof(float), &pa));
    SB_TRY(dense_ptr(be, fn, "targets", targets, rows, sizeof(int64_t), &pt));
    SB_TRY(dense_ptr(be, fn, "dloss", dloss, p->reduction == SB_LOSS_NONE ? rows : 1, sizeof(float),
                     &pl));
    SB_TRY(dense_ptr(be, fn, "dinput", da, rows * p->C, sizeof(float), &pda));
    SB_TRY(optional_ptr(be, fn, "weight", p->weight, p->C, 1, &have, &pw));
    void *mem = NULL; /* MEAN's divisor */
    float *divisor = NULL;
    sb_status st = SB_OK;
    if (p->reduction == SB_LOSS_MEAN) {
        st = class_mean_divisor(fn, be, p, pt, &mem, &divisor);
        if (st == SB_OK) st = dense_ptr(be, fn, "the divisor", divisor, 1, sizeof(float), &pd);
    }
    int32_t lg = p->logits, red = (int32_t)p->reduction; /* class_loss.cl: 0 none, 1 mean, 2 sum */
    _Static_assert(SB_LOSS_NONE == 0 && SB_LOSS_MEAN == 1 && SB_LOSS_SUM == 2,
                   "class_loss.cl's reduction codes");
    int64_t nr = rows, cc = p->C, in = p->inner, ig = p->ignore_index;
    float eps = p->eps;
    sb_gpu_arg args[] = {SB_GPU_ARG(lg),  SB_GPU_ARG(nr),   SB_GPU_ARG(cc),  SB_GPU_ARG(in),
                         SB_GPU_ARG(eps), SB_GPU_ARG(ig),   SB_GPU_ARG(red), OPERAND(pd),
                         SB_GPU_ARG(have), OPERAND(pw),     OPERAND(pa),     OPERAND(pt),
                         OPERAND(pl),     OPERAND(pda)};
    if (st == SB_OK) st = launch(be, fn, K(CLASS_LOSS_GRAD), NULL, 0, ARGS(args), rows);
    be->release(be, mem);
    return st;
}

/* The unweighted (N, C) problem of the plain entries. */
static sb_class_problem plain_class_problem(bool logits, int64_t N, int64_t C,
                                            sb_loss_reduction reduction, float eps,
                                            int64_t ignore_index) {
    return (sb_class_problem){.logits = logits, .N = N, .C = C, .inner = 1,
                              .reduction = reduction, .eps = eps, .ignore_index = ignore_index};
}

static sb_status gpu_class_loss_forward(const sb_backend *be, bool logits, const float *a,
                                        const int64_t *targets, int64_t N, int64_t C,
                                        sb_loss_reduction reduction, float eps,
                                        int64_t ignore_index, float *loss) {
    sb_class_problem p = plain_class_problem(logits, N, C, reduction, eps, ignore_index);
    return class_loss_forward(logits ? "sb_cross_entropy_forward" : "sb_nll_loss_forward", be, &p,
                              a, targets, loss);
}

static sb_status gpu_class_loss_backward(const sb_backend *be, bool logits, const float *a,
                                         const int64_t *targets, int64_t N, int64_t C,
                                         sb_loss_reduction reduction, float eps,
                                         int64_t ignore_index, const float *dloss, float *da) {
    sb_class_problem p = plain_class_problem(logits, N, C, reduction, eps, ignore_index);
    return class_loss_backward(logits ? "sb_cross_entropy_backward" : "sb_nll_loss_backward", be,
                               &p, a, targets, dloss, da);
}

static sb_status gpu_class_loss_nd_forward(const sb_backend *be, const sb_class_problem *p,
                                           const float *input, const int64_t *targets,
                                           float *loss) {
    return class_loss_forward("sb_class_loss_forward", be, p, input, targets, loss);
}

static sb_status gpu_class_loss_nd_backward(const sb_backend *be, const sb_class_problem *p,
                                            const float *input, const int64_t *targets,
                                            const float *dloss, float *dinput) {
    return class_loss_backward("sb_class_loss_backward", be, p, input, targets, dloss, dinput);
}

/* ---- SGEMM (src/gpu/kernels/gemm.cl) ---- */

static bool is_t(char t) { return t == 'T' || t == 't'; }

/* The bytes of a rows x cols operand with leading dimension ld. */
static size_t mat_bytes(int64_t rows, int64_t cols, int64_t ld) {
    if (rows == 0 || cols == 0) return 0;
    return (size_t)((rows - 1) * ld + cols) * sizeof(float);
}

static sb_status gemm_run(const sb_backend *be, const char *fn, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                          const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                          int64_t ldc, bool cont, const float *bias) {
    if (m == 0 || n == 0) return SB_OK;
    sb_gpu_ptr pa, pb, pc, pbias = {NULL, 0};
    SB_TRY(resolve(be, fn, "a", k ? a : NULL, mat_bytes(ta ? k : m, ta ? m : k, lda),
                          sizeof(float), &pa));
    SB_TRY(resolve(be, fn, "b", k ? b : NULL, mat_bytes(tb ? n : k, tb ? k : n, ldb),
                          sizeof(float), &pb));
    SB_TRY(resolve(be, fn, "c", c, mat_bytes(m, n, ldc), sizeof(float), &pc));
    if (bias) SB_TRY(resolve(be, fn, "bias", bias, (size_t)n * sizeof(float), sizeof(float), &pbias));
    int64_t M = m, N = n, K = k, LDA = lda, LDB = ldb, LDC = ldc;
    int32_t cn = cont, hb = bias != NULL;
    sb_gpu_arg args[] = {SB_GPU_ARG(M),  SB_GPU_ARG(N),  SB_GPU_ARG(K),      OPERAND(pa),
                         SB_GPU_ARG(LDA), OPERAND(pb),   SB_GPU_ARG(LDB),    OPERAND(pc),
                         SB_GPU_ARG(LDC), SB_GPU_ARG(cn), OPERAND(pbias),    SB_GPU_ARG(hb),
                         GEOM_ARG};
    const sb_gpu_kernel *kern = ta ? (tb ? K(GEMM_TT) : K(GEMM_TN)) : (tb ? K(GEMM_NT) : K(GEMM_NN));
    return launch_grid(be, fn, kern, NULL, 0, ARGS(args), n, m, 1);
}

static sb_status gpu_sgemm(const sb_backend *be, char transa, char transb, int64_t m, int64_t n,
                           int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                           float *c, int64_t ldc, bool continue_chain) {
    return gemm_run(be, "sb_sgemm", is_t(transa), is_t(transb), m, n, k, a, lda, b, ldb, c, ldc,
                    continue_chain, NULL);
}

static int64_t at_least_1(int64_t v) { return v > 1 ? v : 1; }

static sb_status gpu_linear_forward(const sb_backend *be, int64_t rows, int64_t in, int64_t out,
                                    const float *x, const float *w, const float *bias, float *y) {
    /* y (rows, out) = x . w^T, then + bias[o] */
    return gemm_run(be, "sb_linear_forward", false, true, rows, out, in, x, at_least_1(in), w,
                    at_least_1(in), y, at_least_1(out), false, bias);
}

static sb_status gpu_linear_backward(const sb_backend *be, int64_t rows, int64_t in, int64_t out,
                                     const float *dy, const float *x, const float *w, float *dx,
                                     float *dw, float *db) {
    const char *fn = "sb_linear_backward";
    int64_t ldin = at_least_1(in), ldout = at_least_1(out);
    if (dx) /* dx (rows, in) = dy (rows, out) . w (out, in): chain over o */
        SB_TRY(gemm_run(be, fn, false, false, rows, in, out, dy, ldout, w, ldin, dx, ldin, false, NULL));
    if (dw) /* dw (out, in) = dy^T . x: chain over rows */
        SB_TRY(gemm_run(be, fn, true, false, out, in, rows, dy, ldout, x, ldin, dw, ldin, false, NULL));
    if (db) { /* db[o] = canonical sum over rows of dy[r][o] */
        sb_ref_reduce_geom g = {0};
        g.nkeep = 1;
        g.keep_shape[0] = out;
        g.keep_xstride[0] = 1;
        g.keep_ostride[0] = 1;
        g.nred = 1;
        g.red_shape[0] = rows;
        g.red_xstride[0] = out;
        SB_TRY(reduce_run(be, fn, SB_REF_REDUCE_SUM, &g, dy, 0, db));
    }
    return SB_OK;
}

/* ---- conv2d and pooling (gemm.cl modes 1 and 2, conv.cl) ---- */

enum { CONV_GEOM = 16 };

/* gemm.cl's and conv.cl's conv geometry, in sb_conv2d_geom's order. */
static void conv_geom(const sb_conv2d_geom *g, int64_t v[CONV_GEOM]) {
    int64_t t[CONV_GEOM] = {g->n,        g->c_in,  g->h,     g->w,          g->c_out,
                            g->kh,       g->kw,    g->oh,    g->ow,         g->stride_h,
                            g->stride_w, g->pad_h, g->pad_w, g->dilation_h, g->dilation_w,
                            g->groups};
    memcpy(v, t, sizeof t);
}

/* A conv2d GEMM (mode 1 forward, mode 2 weight gradient) over `batch`
 * products of M x N with chains of K. */
static sb_status conv_gemm(const sb_backend *be, const char *fn, int mode, const sb_conv2d_geom *g, int64_t batch,
                           int64_t m, int64_t n, int64_t k, sb_gpu_ptr a, sb_gpu_ptr b,
                           sb_gpu_ptr c, sb_gpu_ptr bias, bool has_bias) {
    int64_t v[CONV_GEOM];
    conv_geom(g, v);
    int64_t M = m, N = n, K = k, one = 1;
    int32_t cont = 0, hb = has_bias;
    sb_gpu_arg args[] = {SB_GPU_ARG(M),   SB_GPU_ARG(N),    SB_GPU_ARG(K), OPERAND(a),
                         SB_GPU_ARG(one), OPERAND(b),       SB_GPU_ARG(one), OPERAND(c),
                         SB_GPU_ARG(one), SB_GPU_ARG(cont), OPERAND(bias), SB_GPU_ARG(hb),
                         GEOM_ARG};
    return launch_grid(be, fn, mode == 1 ? K(GEMM_CONV_FORWARD) : K(GEMM_CONV_WEIGHT), v, sizeof v,
                       ARGS(args), n, m, batch);
}

static sb_status gpu_conv2d_forward(const sb_backend *be, const sb_conv2d_geom *g, const float *x,
                                    const float *w, const float *bias, float *y) {
    const char *fn = "sb_conv2d_forward";
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups, ohw = g->oh * g->ow;
    int64_t kdim = icg * g->kh * g->kw;
    sb_gpu_ptr px, pw, pb = {NULL, 0}, py;
    SB_TRY(dense_ptr(be, fn, "x", x, g->n * g->c_in * g->h * g->w, sizeof(float), &px));
    SB_TRY(dense_ptr(be, fn, "weight", w, g->c_out * kdim, sizeof(float), &pw));
    if (bias) SB_TRY(dense_ptr(be, fn, "bias", bias, g->c_out, sizeof(float), &pb));
    SB_TRY(dense_ptr(be, fn, "y", y, g->n * g->c_out * ohw, sizeof(float), &py));
    return conv_gemm(be, fn, 1, g, g->n * g->groups, ocg, ohw, kdim, pw, px, py, pb, bias != NULL);
}

static sb_status gpu_conv2d_backward(const sb_backend *be, const sb_conv2d_geom *g,
                                     const float *dy, const float *x, const float *w, float *dx,
                                     float *dw, float *db) {
    const char *fn = "sb_conv2d_backward";
    int64_t icg = g->c_in / g->groups, ocg = g->c_out / g->groups, ohw = g->oh * g->ow;
    int64_t kdim = icg * g->kh * g->kw, nx = g->n * g->c_in * g->h * g->w;
    sb_gpu_ptr pdy, none = {NULL, 0};
    SB_TRY(dense_ptr(be, fn, "dy", dy, g->n * g->c_out * ohw, sizeof(float), &pdy));
    if (dx) { /* the taps that read each input element, direct */
        sb_gpu_ptr pw, pdx;
        SB_TRY(dense_ptr(be, fn, "weight", w, g->c_out * kdim, sizeof(float), &pw));
        SB_TRY(dense_ptr(be, fn, "dx", dx, nx, sizeof(float), &pdx));
        int64_t v[CONV_GEOM];
        conv_geom(g, v);
        sb_gpu_arg args[] = {GEOM_ARG, OPERAND(pdy), OPERAND(pw), OPERAND(pdx)};
        SB_TRY(launch(be, fn, K(CONV_BACKWARD_INPUT), v, sizeof v, ARGS(args), nx));
    }
    if (dw) { /* dW_g = dY_g . im2col^T, the chain over (n, r, s) */
        sb_gpu_ptr px, pdw;
        SB_TRY(dense_ptr(be, fn, "x", x, nx, sizeof(float), &px));
        SB_TRY(dense_ptr(be, fn, "dweight", dw, g->c_out * kdim, sizeof(float), &pdw));
        SB_TRY(conv_gemm(be, fn, 2, g, g->groups, ocg, kdim, g->n * ohw, pdy, px, pdw, none, false));
    }
    if (db) { /* db[o] = canonical sum over (n, r, s) of dy[n][o][r][s] */
        sb_ref_reduce_geom rg = {0};
        rg.nkeep = 1;
        rg.keep_shape[0] = g->c_out;
        rg.keep_xstride[0] = ohw;
        rg.keep_ostride[0] = 1;
        rg.nred = 2;
        rg.red_shape[0] = g->n;
        rg.red_xstride[0] = g->c_out * ohw;
        rg.red_shape[1] = ohw;
        rg.red_xstride[1] = 1;
        SB_TRY(reduce_run(be, fn, SB_REF_REDUCE_SUM, &rg, dy, 0, db));
    }
    return SB_OK;
}

enum { POOL_GEOM = 16 }; /* conv.cl's SB_POOL_GEOM */

static void pool_geom(const sb_pool2d_geom *g, int64_t v[POOL_GEOM]) {
    int64_t t[POOL_GEOM] = {g->planes,   g->h,        g->w,        g->oh,
                            g->ow,       g->kh,       g->kw,       g->stride_h,
                            g->stride_w, g->pad_h,    g->pad_w,    g->count_include_pad,
                            g->adaptive, g->dil_h > 1 ? g->dil_h : 1,
                            g->dil_w > 1 ? g->dil_w : 1, g->divisor};
    memcpy(v, t, sizeof t);
}

static sb_status gpu_max_pool2d_forward(const sb_backend *be, const sb_pool2d_geom *g,
                                        const float *x, float *y, int64_t *indices) {
    const char *fn = "sb_max_pool2d_forward";
    int64_t ny = g->planes * g->oh * g->ow;
    sb_gpu_ptr px, py, pi = {NULL, 0};
    SB_TRY(dense_ptr(be, fn, "x", x, g->planes * g->h * g->w, sizeof(float), &px));
    SB_TRY(dense_ptr(be, fn, "y", y, ny, sizeof(float), &py));
    if (indices) SB_TRY(dense_ptr(be, fn, "indices", indices, ny, sizeof(int64_t), &pi));
    int64_t v[POOL_GEOM];
    pool_geom(g, v);
    int32_t has = indices != NULL;
    sb_gpu_arg args[] = {GEOM_ARG, OPERAND(px), OPERAND(py), OPERAND(pi), SB_GPU_ARG(has)};
    return launch(be, fn, K(MAX_POOL_FORWARD), v, sizeof v, ARGS(args), ny);
}

static sb_status gpu_max_pool2d_backward(const sb_backend *be, const sb_pool2d_geom *g,
                                         const float *dy, const int64_t *indices, float *dx) {
    const char *fn = "sb_max_pool2d_backward";
    int64_t ny = g->planes * g->oh * g->ow, nx = g->planes * g->h * g->w;
    sb_gpu_ptr pdy, pi, pdx;
    SB_TRY(dense_ptr(be, fn, "dy", dy, ny, sizeof(float), &pdy));
    SB_TRY(dense_ptr(be, fn, "indices", indices, ny, sizeof(int64_t), &pi));
    SB_TRY(dense_ptr(be, fn, "dx", dx, nx, sizeof(float), &pdx));
    int64_t v[POOL_GEOM];
    pool_geom(g, v);
    sb_gpu_arg args[] = {GEOM_ARG, OPERAND(pdy), OPERAND(pi), OPERAND(pdx)};
    return launch(be, fn, K(MAX_POOL_BACKWARD), v, sizeof v, ARGS(args), nx);
}

static sb_status gpu_avg_pool2d_forward(const sb_backend *be, const sb_pool2d_geom *g,
                                        const float *x, float *y) {
    const char *fn = "sb_avg_pool2d_forward";
    int64_t ny = g->planes * g->oh * g->ow;
    sb_gpu_ptr px, py;
    SB_TRY(dense_ptr(be, fn, "x", x, g->planes * g->h * g->w, sizeof(float), &px));
    SB_TRY(dense_ptr(be, fn, "y", y, ny, sizeof(float), &py));
    int64_t v[POOL_GEOM];
    pool_geom(g, v);
    sb_gpu_arg args[] = {GEOM_ARG, OPERAND(px), OPERAND(py)};
    return launch(be, fn, K(AVG_POOL_FORWARD), v, sizeof v, ARGS(args), ny);
}

static sb_status gpu_avg_pool2d_backward(const sb_backend *be, const sb_pool2d_geom *g,
                                         const float *dy, float *dx) {
    const char *fn = "sb_avg_pool2d_backward";
    int64_t ny = g->planes * g->oh * g->ow, nx = g->planes * g->h * g->w;
    sb_gpu_ptr pdy, pdx;
    SB_TRY(dense_ptr(be, fn, "dy", dy, ny, sizeof(float), &pdy));
    SB_TRY(dense_ptr(be, fn, "dx", dx, nx, sizeof(float), &pdx));
    int64_t v[POOL_GEOM];
    pool_geom(g, v);
    sb_gpu_arg args[] = {GEOM_ARG, OPERAND(pdy), OPERAND(pdx)};
    return launch(be, fn, K(AVG_POOL_BACKWARD), v, sizeof v, ARGS(args), nx);
}

/* ---- index family (index.cl) ---- */

#define INDEX_DIMS 8 /* index.cl's SB_INDEX_DIMS */
_Static_assert(INDEX_DIMS == SB_MAX_DIMS, "index.cl's geometry holds SB_MAX_DIMS dims");

/* index.cl's geometry: ndim, dim, shape, dense, index and table strides. */
static void index_geom(const sb_ref_index_geom *g, int64_t v[2 + 4 * INDEX_DIMS]) {
    memset(v, 0, sizeof(int64_t) * (2 + 4 * INDEX_DIMS));
    v[0] = g->ndim;
    v[1] = g->dim;
    for (int k = 0; k < g->ndim; k++) {
        v[2 + k] = g->shape[k];
        v[2 + INDEX_DIMS + k] = g->dense_stride[k];
        v[2 + 2 * INDEX_DIMS + k] = g->index_stride[k];
        v[2 + 3 * INDEX_DIMS + k] = g->table_stride[k];
    }
}

/* The elements a side reaches over the iteration shape with `strides`
 * (strides >= 0); with skip_dim, without the axis along dim. The table's
 * extent along dim is not in the geometry: src/ops checked every index value
 * against it, so the table's device range is checked up to its first slice
 * along dim. */
static int64_t index_reach(const sb_ref_index_geom *g, const int64_t *strides, bool skip_dim) {
    int64_t last = 0;
    for (int k = 0; k < g->ndim; k++) {
        if (g->shape[k] == 0) return 0;
        if (!(skip_dim && k == g->dim)) last += (g->shape[k] - 1) * strides[k];
    }
    return last + 1;
}

static sb_status index_operands(const sb_backend *be, const char *fn, const sb_ref_index_geom *g, const float *table,
                                const int64_t *index, const float *dense, sb_gpu_ptr *pt,
                                sb_gpu_ptr *pi, sb_gpu_ptr *pd) {
    SB_TRY(dense_ptr(be, fn, "table", table, index_reach(g, g->table_stride, true), sizeof(float),
                     pt));
    SB_TRY(dense_ptr(be, fn, "index", index, index_reach(g, g->index_stride, false), sizeof(int64_t),
                     pi));
    return dense_ptr(be, fn, "dense", dense, index_reach(g, g->dense_stride, false), sizeof(float), pd);
}

static sb_status gpu_index_gather(const sb_backend *be, const sb_ref_index_geom *g,
                                  const float *table, const int64_t *index, float *dense) {
    const char *fn = "sb_index_gather";
    int64_t n = 1;
    for (int k = 0; k < g->ndim; k++) n *= g->shape[k];
    if (n == 0) return SB_OK;
    sb_gpu_ptr pt, pi, pd;
    SB_TRY(index_operands(be, fn, g, table, index, dense, &pt, &pi, &pd));
    int64_t v[2 + 4 * INDEX_DIMS], nn = n;
    index_geom(g, v);
    sb_gpu_arg args[] = {GEOM_ARG, SB_GPU_ARG(nn), OPERAND(pt), OPERAND(pi), OPERAND(pd)};
    return launch(be, fn, K(INDEX_GATHER), v, sizeof v, ARGS(args), n);
}

static sb_status gpu_index_scatter_add(const sb_backend *be, const sb_ref_index_geom *g,
                                       const float *dense, const int64_t *index, bool scale,
                                       float alpha, float *table) {
    const char *fn = "sb_index_scatter_add";
    int64_t fibers = 1;
    for (int k = 0; k < g->ndim; k++) fibers *= g->shape[k];
    if (fibers == 0) return SB_OK;
    fibers /= g->shape[g->dim];
    sb_gpu_ptr pt, pi, pd;
    SB_TRY(index_operands(be, fn, g, table, index, dense, &pt, &pi, &pd));
    int64_t v[2 + 4 * INDEX_DIMS], nf = fibers;
    index_geom(g, v);
    int32_t sc = scale;
    sb_gpu_arg args[] = {GEOM_ARG,    SB_GPU_ARG(nf), SB_GPU_ARG(sc), SB_GPU_ARG(alpha),
                         OPERAND(pd), OPERAND(pi),    OPERAND(pt)};
    return launch(be, fn, K(INDEX_SCATTER_ADD), v, sizeof v, ARGS(args), fibers);
}

/* scatter_reduce: a work-item per column (index.cl over
 * src/ref/scatter_reduce_column.h, the reference's column). */
static sb_status gpu_scatter_reduce(const sb_backend *be, const sb_ref_index_geom *g,
                                    sb_scatter_reduce_op op, bool include_self, int64_t table_len,
                                    const float *src, const int64_t *index, float *table) {
    const char *fn = "sb_scatter_reduce";
    int64_t fibers = 1;
    for (int k = 0; k < g->ndim; k++) fibers *= g->shape[k];
    if (fibers == 0 || table_len == 0) return SB_OK;
    fibers /= g->shape[g->dim];
    sb_gpu_ptr pt, pi, pd;
    SB_TRY(index_operands(be, fn, g, table, index, src, &pt, &pi, &pd));
    /* the whole table along dim, not only its first slice */
    SB_TRY(dense_ptr(be, fn, "out", table,
                     index_reach(g, g->table_stride, true) + (table_len - 1) * g->table_stride[g->dim],
                     sizeof(float), &pt));
    int64_t v[2 + 4 * INDEX_DIMS], nf = fibers, tl = table_len;
    index_geom(g, v);
    int32_t o = (int32_t)op, self = include_self;
    sb_gpu_arg args[] = {GEOM_ARG,       SB_GPU_ARG(nf), SB_GPU_ARG(o), SB_GPU_ARG(self),
                         SB_GPU_ARG(tl), OPERAND(pd),    OPERAND(pi),   OPERAND(pt)};
    return launch(be, fn, K(INDEX_SCATTER_REDUCE), v, sizeof v, ARGS(args), fibers);
}

/* ---- sort, topk, kthvalue, median (sort.cl over src/ref/sort_rank.h) ---- */

#define SORT_DIMS 8 /* sort.cl's SB_SORT_DIMS */
#define SORT_GEOM (6 + 4 * SORT_DIMS)

static void sort_geom(const sb_ref_sort_geom *g, int64_t v[SORT_GEOM]) {
    _Static_assert(SB_MAX_DIMS <= SORT_DIMS, "sort.cl holds every dimension");
    memset(v, 0, SORT_GEOM * sizeof *v);
    int64_t head[6] = {g->ndim, g->dim, g->count, g->descending, g->median, g->start};
    memcpy(v, head, sizeof head);
    for (int k = 0; k < g->ndim; k++) {
        v[6 + k] = g->shape[k];
        v[6 + SORT_DIMS + k] = g->x_stride[k];
        v[6 + 2 * SORT_DIMS + k] = g->v_stride[k];
        v[6 + 3 * SORT_DIMS + k] = g->i_stride[k];
    }
}

/* The elements a side reaches: the shape with `along` along dim (strides
 * >= 0, as the library's views have). */
static int64_t sort_reach(const sb_ref_sort_geom *g, const int64_t *strides, int64_t along) {
    int64_t last = 0;
    for (int k = 0; k < g->ndim; k++) {
        int64_t extent = k == g->dim ? along : g->shape[k];
        if (extent == 0) return 0;
        last += (extent - 1) * strides[k];
    }
    return last + 1;
}

static int64_t sort_columns(const sb_ref_sort_geom *g) {
    int64_t cols = 1;
    for (int k = 0; k < g->ndim; k++)
        if (k != g->dim) cols *= g->shape[k];
    return cols;
}

sb_status sb_gpu_merge_sort(const sb_backend *be, const char *fn, int64_t columns, int64_t n,
                           const sb_gpu_ptr keys[2], const sb_gpu_ptr pos[2], int *sorted) {
    int64_t nc = columns, nn = n;
    int cur = 0;
    sb_status st = SB_OK;
    for (int64_t width = 1; width < n && st == SB_OK; width *= 2, cur ^= 1) {
        sb_gpu_arg args[] = {SB_GPU_ARG(width),   SB_GPU_ARG(nc),    SB_GPU_ARG(nn),
                             OPERAND(keys[cur]),  OPERAND(pos[cur]), OPERAND(keys[cur ^ 1]),
                             OPERAND(pos[cur ^ 1])};
        st = launch(be, fn, K(SORT_MERGE), NULL, 0, ARGS(args), columns * n);
    }
    *sorted = cur;
    return st;
}

/* Every column sorted by (key, position) on the device (sort.cl): the
 * pairs written in position order, log2(n) merge passes between two pairs
 * of work buffers, then the ranks the op writes copied out. */
static sb_status gpu_sort_select(const sb_backend *be, const sb_ref_sort_geom *g, const float *x,
                                 float *values, int64_t *indices) {
    const char *fn = "sb_sort";
    int64_t n = g->shape[g->dim], cols = sort_columns(g), total = n * cols;
    if (g->count == 0 || n == 0 || cols == 0) return SB_OK;
    sb_gpu_ptr px, pv, pi;
    SB_TRY(dense_ptr(be, fn, "x", x, sort_reach(g, g->x_stride, n), sizeof(float), &px));
    SB_TRY(dense_ptr(be, fn, "values", values, sort_reach(g, g->v_stride, g->count), sizeof(float), &pv));
    SB_TRY(dense_ptr(be, fn, "indices", indices, sort_reach(g, g->i_stride, g->count),
                     sizeof(int64_t), &pi));
    /* two (keys, positions) buffers: the keys of both, then the positions of both */
    size_t key_bytes, pos_bytes;
    if (!sb_checked_bytes(total, 2 * sizeof(uint32_t), &key_bytes) ||
        !sb_checked_bytes(total, 2 * sizeof(int64_t), &pos_bytes))
        return sb_fail(SB_ERR_NOMEM, "%s: the sort's work buffers exceed the address space", fn);
    void *keys_mem = NULL, *pos_mem = NULL;
    SB_TRY(be->alloc(be, key_bytes, &keys_mem));
    sb_status st = be->alloc(be, pos_bytes, &pos_mem);
    uint32_t *keys[2] = {keys_mem, (uint32_t *)keys_mem + total};
    int64_t *pos[2] = {pos_mem, (int64_t *)pos_mem + total};
    sb_gpu_ptr pk[2], pp[2];
    for (int b = 0; b < 2 && st == SB_OK; b++) {
        st = dense_ptr(be, fn, "the sort keys", keys[b], total, sizeof(uint32_t), &pk[b]);
        if (st == SB_OK) st = dense_ptr(be, fn, "the sort positions", pos[b], total, sizeof(int64_t), &pp[b]);
    }
    int64_t v[SORT_GEOM], nc = cols;
    sort_geom(g, v);
    if (st == SB_OK) {
        sb_gpu_arg args[] = {GEOM_ARG, SB_GPU_ARG(nc), OPERAND(px), OPERAND(pk[0]), OPERAND(pp[0])};
        st = launch(be, fn, K(SORT_KEYS), v, sizeof v, ARGS(args), total);
    }
    int cur = 0; /* the buffer holding the sorted columns */
    if (st == SB_OK) st = sb_gpu_merge_sort(be, fn, cols, n, pk, pp, &cur);
    if (st == SB_OK) {
        sb_gpu_arg args[] = {GEOM_ARG,        SB_GPU_ARG(nc), OPERAND(px), OPERAND(pp[cur]),
                             OPERAND(pv),     OPERAND(pi)};
        st = launch(be, fn, K(SORT_WRITE), v, sizeof v, ARGS(args), cols * g->count);
    }
    be->release(be, keys_mem);
    be->release(be, pos_mem);
    return st;
}

static sb_status gpu_sort_scatter(const sb_backend *be, const sb_ref_sort_geom *g,
                                  const float *dy, const int64_t *indices, float *dx) {
    const char *fn = "sb_sort_backward";
    int64_t cols = sort_columns(g);
    if (g->count == 0 || cols == 0) return SB_OK;
    sb_gpu_ptr pdy, pi, pdx;
    SB_TRY(dense_ptr(be, fn, "dy", dy, sort_reach(g, g->v_stride, g->count), sizeof(float), &pdy));
    SB_TRY(dense_ptr(be, fn, "indices", indices, sort_reach(g, g->i_stride, g->count),
                     sizeof(int64_t), &pi));
    SB_TRY(dense_ptr(be, fn, "dx", dx, sort_reach(g, g->x_stride, g->shape[g->dim]), sizeof(float),
                     &pdx));
    int64_t v[SORT_GEOM], nc = cols;
    sort_geom(g, v);
    sb_gpu_arg args[] = {GEOM_ARG, SB_GPU_ARG(nc), OPERAND(pdy), OPERAND(pi), OPERAND(pdx)};
    return launch(be, fn, K(SORT_SCATTER), v, sizeof v, ARGS(args), cols);
}

/* ---- cumulative sum and product (cumulative.cl) ---- */

#define CUM_DIMS 8 /* cumulative.cl's SB_CUM_DIMS */

/* An operand of the cumulative geometry: the elements its strides reach. */
static sb_status cum_operand(const sb_backend *be, const char *fn, const char *what, const sb_ref_cum_geom *g,
                             const int64_t *stride, const float *p, sb_gpu_ptr *out) {
    int64_t last = 0;
    for (int k = 0; k < g->ndim; k++) last += (g->shape[k] - 1) * stride[k];
    return dense_ptr(be, fn, what, p, last + 1, sizeof(float), out);
}

static sb_status gpu_cumulative(const sb_backend *be, sb_ref_cum_kind kind,
                                const sb_ref_cum_geom *g, const float *x, const float *y,
                                const float *dy, float *out) {
    const char *fn = "sb_cumulative";
    _Static_assert(SB_MAX_DIMS <= CUM_DIMS, "cumulative.cl holds every dimension");
    for (int k = 0; k < g->ndim; k++)
        if (g->shape[k] == 0) return SB_OK;
    int64_t columns = sb_ref_cum_columns(g);
    sb_gpu_ptr px, py = {NULL, 0}, pdy = {NULL, 0}, po;
    SB_TRY(cum_operand(be, fn, "x", g, g->x_stride, x, &px));
    if (kind == SB_CUM_PROD_BACKWARD) {
        SB_TRY(cum_operand(be, fn, "y", g, g->y_stride, y, &py));
        SB_TRY(cum_operand(be, fn, "dy", g, g->dy_stride, dy, &pdy));
    }
    SB_TRY(cum_operand(be, fn, "out", g, g->out_stride, out, &po));
    int64_t v[2 + 5 * CUM_DIMS] = {g->ndim, g->dim};
    for (int k = 0; k < g->ndim; k++) {
        const int64_t *const col[5] = {g->shape, g->x_stride, g->y_stride, g->dy_stride,
                                       g->out_stride};
        for (int t = 0; t < 5; t++) v[2 + t * CUM_DIMS + k] = col[t][k];
    }
    int32_t kd = (int32_t)kind;
    int64_t nc = columns;
    sb_gpu_arg args[] = {GEOM_ARG,    SB_GPU_ARG(kd), SB_GPU_ARG(nc), OPERAND(px),
                         OPERAND(py), OPERAND(pdy),   OPERAND(po)};
    return launch(be, fn, K(CUMULATIVE), v, sizeof v, ARGS(args), columns);
}

/* ---- PReLU (prelu.cl) ---- */

static sb_status gpu_prelu_forward(const sb_backend *be, int64_t outer, int64_t c, int64_t inner,
                                   const float *x, const float *w, float *y) {
    const char *fn = "sb_prelu_forward";
    int64_t n = outer * c * inner;
    if (n == 0) return SB_OK;
    sb_gpu_ptr px, pw, py;
    SB_TRY(dense_ptr(be, fn, "x", x, n, sizeof(float), &px));
    SB_TRY(dense_ptr(be, fn, "weight", w, c, sizeof(float), &pw));
    SB_TRY(dense_ptr(be, fn, "y", y, n, sizeof(float), &py));
    int64_t o = outer, nc = c, in = inner;
    sb_gpu_arg args[] = {SB_GPU_ARG(o), SB_GPU_ARG(nc), SB_GPU_ARG(in),
                         OPERAND(px),   OPERAND(pw),    OPERAND(py)};
    return launch(be, fn, K(PRELU_FORWARD), NULL, 0, ARGS(args), n);
}

/* dweight first: it reads dy, which dx may overwrite (the queue is in order). */
static sb_status gpu_prelu_backward(const sb_backend *be, int64_t outer, int64_t c, int64_t inner,
                                    const float *x, const float *w, const float *dy, float *dx,
                                    float *dw) {
    const char *fn = "sb_prelu_backward";
    int64_t n = outer * c * inner;
    sb_gpu_ptr px, pw, pdy, pdx, pdw;
    SB_TRY(dense_ptr(be, fn, "x", x, n, sizeof(float), &px));
    SB_TRY(dense_ptr(be, fn, "weight", w, c, sizeof(float), &pw));
    SB_TRY(dense_ptr(be, fn, "dy", dy, n, sizeof(float), &pdy));
    int64_t o = outer, nc = c, in = inner;
    if (dw) {
        SB_TRY(dense_ptr(be, fn, "dweight", dw, c, sizeof(float), &pdw));
        sb_gpu_arg args[] = {SB_GPU_ARG(o), SB_GPU_ARG(nc), SB_GPU_ARG(in),
                             OPERAND(px),   OPERAND(pdy),   OPERAND(pdw)};
        SB_TRY(launch(be, fn, K(PRELU_BACKWARD_DW), NULL, 0, ARGS(args), c));
    }
    if (!dx || n == 0) return SB_OK;
    SB_TRY(dense_ptr(be, fn, "dx", dx, n, sizeof(float), &pdx));
    sb_gpu_arg args[] = {SB_GPU_ARG(o), SB_GPU_ARG(nc), SB_GPU_ARG(in), OPERAND(px),
                         OPERAND(pw),   OPERAND(pdy),   OPERAND(pdx)};
    return launch(be, fn, K(PRELU_BACKWARD_DX), NULL, 0, ARGS(args), n);
}

/* ---- scaled dot-product attention (attention.cl) ---- */

#define SDPA_DIMS 8 /* attention.cl's SB_SDPA_DIMS */
#define SDPA_GEOM (10 + 2 * SDPA_DIMS)

static void sdpa_geom(const sb_ref_sdpa_geom *g, int64_t v[SDPA_GEOM]) {
    _Static_assert(SB_MAX_DIMS <= SDPA_DIMS, "attention.cl holds every leading dimension");
    memset(v, 0, SDPA_GEOM * sizeof *v);
    v[0] = g->nlead;
    for (int d = 0; d < g->nlead; d++) {
        v[1 + d] = g->lead[d];
        v[1 + SDPA_DIMS + d] = g->mask_lead_stride[d];
    }
    int64_t tail[] = {g->mask_stride_i, g->mask_stride_j, g->batch, g->lq, g->lk, g->e, g->ev,
                      (int64_t)g->mask_kind, (int64_t)g->causal};
    memcpy(v + 1 + 2 * SDPA_DIMS, tail, sizeof tail);
}

/* What both passes share: the operands q, k, v and the mask (the elements
 * its broadcast strides reach), and, with dropout, a temporary of keep
 * flags indexed like probs (release it with sdpa_release). */
typedef struct sdpa_operands {
    sb_gpu_ptr q, k, v, mask, keep;
    void *keep_mem;
    int dropout;
    float dscale;
} sdpa_operands;

static void sdpa_release(const sb_backend *be, sdpa_operands *o) {
    if (o->keep_mem) be->release(be, o->keep_mem);
    o->keep_mem = NULL;
}

static sb_status sdpa_prepare(const sb_backend *be, const char *fn, const sb_ref_sdpa_geom *g,
                              const float *q, const float *k, const float *v, const void *mask,
                              sdpa_operands *o) {
    *o = (sdpa_operands){.dropout = g->dropout_p > 0.0f};
    SB_TRY(dense_ptr(be, fn, "q", q, g->batch * g->lq * g->e, sizeof(float), &o->q));
    SB_TRY(dense_ptr(be, fn, "k", k, g->batch * g->lk * g->e, sizeof(float), &o->k));
    SB_TRY(dense_ptr(be, fn, "v", v, g->batch * g->lk * g->ev, sizeof(float), &o->v));
    o->mask = (sb_gpu_ptr){NULL, 0};
    if (mask) {
        int64_t last = (g->lq - 1) * g->mask_stride_i + (g->lk - 1) * g->mask_stride_j;
        for (int d = 0; d < g->nlead; d++) last += (g->lead[d] - 1) * g->mask_lead_stride[d];
        SB_TRY(dense_ptr(be, fn, "mask", mask, last + 1, sizeof(float), &o->mask));
    }
    o->keep = (sb_gpu_ptr){NULL, 0};
    if (!o->dropout) return SB_OK;
    int64_t n = g->batch * g->lq * g->lk;
    o->dscale = sb_dropout_scale(g->dropout_p);
    SB_TRY(be->alloc(be, (size_t)n * sizeof(float), &o->keep_mem));
    sb_status st = dense_ptr(be, fn, "keep", o->keep_mem, n, sizeof(float), &o->keep);
    if (st == SB_OK) {
        float p = g->dropout_p;
        uint64_t seed = g->seed, stream = g->stream, offset = g->offset;
        sb_gpu_arg args[] = {SB_GPU_ARG(n),      SB_GPU_ARG(p),      SB_GPU_ARG(seed),
                             SB_GPU_ARG(stream), SB_GPU_ARG(offset), OPERAND(o->keep)};
        st = launch(be, fn, K(DROPOUT_KEEP), NULL, 0, ARGS(args), n);
    }
    if (st != SB_OK) sdpa_release(be, o);
    return st;
}

static sb_status gpu_sdpa_forward(const sb_backend *be, const sb_ref_sdpa_geom *g, const float *q,
                                  const float *k, const float *v, const void *mask, float *out,
                                  float *probs) {
    const char *fn = "sb_sdpa_forward";
    int64_t rows = g->batch * g->lq;
    if (rows == 0) return SB_OK;
    sb_gpu_ptr po, pp = {NULL, 0};
    SB_TRY(dense_ptr(be, fn, "out", out, rows * g->ev, sizeof(float), &po));
    int32_t want_probs = probs != NULL;
    if (probs) SB_TRY(dense_ptr(be, fn, "probs", probs, rows * g->lk, sizeof(float), &pp));
    sdpa_operands o;
    SB_TRY(sdpa_prepare(be, fn, g, q, k, v, mask, &o));
    int64_t geom[SDPA_GEOM];
    sdpa_geom(g, geom);
    float scale = g->scale;
    int32_t dropout = o.dropout;
    sb_gpu_arg args[] = {GEOM_ARG,       SB_GPU_ARG(scale),  SB_GPU_ARG(dropout),
                         SB_GPU_ARG(o.dscale), OPERAND(o.q), OPERAND(o.k),
                         OPERAND(o.v),   OPERAND(o.mask),    OPERAND(o.keep),
                         OPERAND(po),    SB_GPU_ARG(want_probs), OPERAND(pp)};
    sb_status st = launch(be, fn, K(SDPA_FORWARD), geom, sizeof geom, ARGS(args), rows);
    sdpa_release(be, &o);
    return st;
}

/* The rows kernel (dq, and the score gradients dk needs, in a temporary),
 * then one chain per key feature for dk and for dv. */
static sb_status gpu_sdpa_backward(const sb_backend *be, const sb_ref_sdpa_geom *g,
                                   const float *dout, const float *q, const float *k,
                                   const float *v, const void *mask, const float *probs,
                                   float *dq, float *dk, float *dv) {
    const char *fn = "sb_sdpa_backward";
    int64_t rows = g->batch * g->lq, n = rows * g->lk;
    sb_gpu_ptr pdo, pp, pdq = {NULL, 0}, pdk, pdv, pgs = {NULL, 0};
    SB_TRY(dense_ptr(be, fn, "dout", dout, rows * g->ev, sizeof(float), &pdo));
    SB_TRY(dense_ptr(be, fn, "probs", probs, n, sizeof(float), &pp));
    if (dq) SB_TRY(dense_ptr(be, fn, "dq", dq, rows * g->e, sizeof(float), &pdq));
    sdpa_operands o;
    SB_TRY(sdpa_prepare(be, fn, g, q, k, v, mask, &o));
    int64_t geom[SDPA_GEOM];
    sdpa_geom(g, geom);
    float scale = g->scale;
    int32_t dropout = o.dropout, want_dq = dq != NULL, want_gs = dk != NULL && n > 0;
    void *gs_mem = NULL;
    sb_status st = SB_OK;
    if (want_gs) {
        st = be->alloc(be, (size_t)n * sizeof(float), &gs_mem);
        if (st == SB_OK) st = dense_ptr(be, fn, "the score gradients", gs_mem, n, sizeof(float), &pgs);
    }
    if (st == SB_OK && (want_dq || want_gs)) {
        sb_gpu_arg args[] = {GEOM_ARG,         SB_GPU_ARG(scale),    SB_GPU_ARG(dropout),
                             SB_GPU_ARG(o.dscale), OPERAND(pdo),     OPERAND(o.k),
                             OPERAND(o.v),     OPERAND(o.mask),      OPERAND(o.keep),
                             OPERAND(pp),      SB_GPU_ARG(want_dq),  OPERAND(pdq),
                             SB_GPU_ARG(want_gs), OPERAND(pgs)};
        st = launch(be, fn, K(SDPA_BACKWARD_ROWS), geom, sizeof geom, ARGS(args), rows);
    }
    /* dk from (gs, q), dv from (probs with keep, dout) */
    for (int32_t want_dv = 0; want_dv < 2 && st == SB_OK; want_dv++) {
        float *dst = want_dv ? dv : dk;
        if (!dst) continue;
        int64_t count = g->batch * g->lk * (want_dv ? g->ev : g->e);
        if (count == 0) continue;
        sb_gpu_ptr *pd = want_dv ? &pdv : &pdk, w = want_dv ? pp : pgs, a = want_dv ? pdo : o.q;
        st = dense_ptr(be, fn, want_dv ? "dv" : "dk", dst, count, sizeof(float), pd);
        if (st != SB_OK) break;
        if (rows == 0) { /* no query row: every chain is empty */
            sb_tensor t = {.dtype = SB_F32, .device = be->device, .ndim = 1,
                           .shape = {count}, .strides = {1}, .data = dst};
            st = sb_gpu_fill(be, &t, 0.0f);
            continue;
        }
        sb_gpu_arg args[] = {GEOM_ARG,        SB_GPU_ARG(want_dv), SB_GPU_ARG(dropout),
                             SB_GPU_ARG(o.dscale), OPERAND(o.mask), OPERAND(o.keep),
                             OPERAND(w),      OPERAND(a),          OPERAND(*pd)};
        st = launch(be, fn, K(SDPA_BACKWARD_KEYS), geom, sizeof geom, ARGS(args), count);
    }
    if (gs_mem) be->release(be, gs_mem);
    sdpa_release(be, &o);
    return st;
}

/* ---- the CTC loss (ctc.cl over src/ref/ctc_item.h) ---- */

#define CTC_GEOM 8 /* ctc.cl's SB_CTC_GEOM */

/* The geometry and the problem's index arrays (device memory the caller
 * checked; the targets are resolved at their start), as ctc.cl takes them. */
typedef struct ctc_operands {
    int64_t geom[CTC_GEOM];
    sb_gpu_ptr in_len, tg_len, offset, targets;
} ctc_operands;

static sb_status ctc_operands_of(const sb_backend *be, const char *fn, const sb_ctc_problem *p,
                               ctc_operands *o) {
    int64_t geom[CTC_GEOM] = {p->T, p->N, p->C, p->R, p->W, p->blank, p->zero_infinity,
                              (int64_t)p->reduction};
    memcpy(o->geom, geom, sizeof geom);
    SB_TRY(dense_ptr(be, fn, "input_lengths", p->in_len, p->N, sizeof(int64_t), &o->in_len));
    SB_TRY(dense_ptr(be, fn, "target_lengths", p->tg_len, p->N, sizeof(int64_t), &o->tg_len));
    SB_TRY(dense_ptr(be, fn, "the target offsets", p->offset, p->N, sizeof(int64_t), &o->offset));
    return resolve(be, fn, "targets", p->targets, 0, sizeof(int64_t), &o->targets);
}

#define CTC_INDEX_ARGS(o) OPERAND((o).in_len), OPERAND((o).tg_len), OPERAND((o).offset), \
                          OPERAND((o).targets)

/* The items' terms (a work-item per item; NONE: the losses themselves,
 * written to loss), then SUM / MEAN as the canonical sum of the terms in
 * item order (sum.cl), MEAN's sum / (float)N there. */
static sb_status gpu_ctc_loss_forward(const sb_backend *be, const sb_ctc_problem *p,
                                      const float *log_probs, float *loss) {
    const char *fn = "sb_ctc_loss_forward";
    int64_t N = p->N, block = p->R * p->W;
    bool none = p->reduction == SB_LOSS_NONE;
    ctc_operands o;
    sb_gpu_ptr plp, pl, pw, pv;
    SB_TRY(ctc_operands_of(be, fn, p, &o));
    SB_TRY(dense_ptr(be, fn, "log_probs", log_probs, p->T * N * p->C, sizeof(float), &plp));
    SB_TRY(dense_ptr(be, fn, "loss", loss, none ? N : 1, sizeof(float), &pl));
    /* each item's alpha rows, then (unless NONE) the N terms */
    void *mem = NULL;
    SB_TRY(be->alloc(be, (size_t)(N * block + (none ? 0 : N) + 1) * sizeof(float), &mem));
    float *work = mem, *terms = work + N * block;
    sb_status st = dense_ptr(be, fn, "the alpha rows", work, N * block, sizeof(float), &pw);
    pv = pl;
    if (st == SB_OK && !none) st = dense_ptr(be, fn, "the item terms", terms, N, sizeof(float), &pv);
    if (st == SB_OK) {
        sb_gpu_arg args[] = {GEOM_ARG, CTC_INDEX_ARGS(o), OPERAND(plp), OPERAND(pw), OPERAND(pv)};
        st = launch(be, fn, K(CTC_ITEMS), o.geom, sizeof o.geom, ARGS(args), N);
    }
    if (st == SB_OK && !none) {
        sb_ref_reduce_geom g = {0};
        g.nred = 1;
        g.red_shape[0] = N;
        g.red_xstride[0] = 1;
        bool mean = p->reduction == SB_LOSS_MEAN;
        st = reduce_launch(be, fn, mean ? SB_REF_REDUCE_MEAN : SB_REF_REDUCE_SUM, &g, terms, 0, loss,
                           (float)N);
    }
    be->release(be, work);
    return st;
}

static sb_status gpu_ctc_loss_backward(const sb_backend *be, const sb_ctc_problem *p,
                                       const float *log_probs, const float *dloss,
                                       float *dlog_probs) {
    const char *fn = "sb_ctc_loss_backward";
    int64_t N = p->N, block = p->R * p->W, n = p->T * N * p->C;
    ctc_operands o;
    sb_gpu_ptr plp, pdl, pw, pd;
    SB_TRY(ctc_operands_of(be, fn, p, &o));
    SB_TRY(dense_ptr(be, fn, "log_probs", log_probs, n, sizeof(float), &plp));
    SB_TRY(dense_ptr(be, fn, "dloss", dloss, p->reduction == SB_LOSS_NONE ? N : 1, sizeof(float), &pdl));
    SB_TRY(dense_ptr(be, fn, "dlog_probs", dlog_probs, n, sizeof(float), &pd));
    /* each item's alpha and beta rows */
    void *work = NULL;
    SB_TRY(be->alloc(be, (size_t)(2 * N * block + 1) * sizeof(float), &work));
    sb_status st = dense_ptr(be, fn, "the alpha and beta rows", work, 2 * N * block, sizeof(float), &pw);
    if (st == SB_OK) {
        sb_gpu_arg args[] = {GEOM_ARG,     CTC_INDEX_ARGS(o), OPERAND(plp),
                             OPERAND(pdl), OPERAND(pw),       OPERAND(pd)};
        st = launch(be, fn, K(CTC_GRAD), o.geom, sizeof o.geom, ARGS(args), N);
    }
    be->release(be, work);
    return st;
}

/* ---- 2-D padding (pad.cl) ---- */

#define PAD_GEOM 8 /* pad.cl's SB_PAD_GEOM */

static void pad_geom(const sb_pad2d_geom *g, int64_t v[PAD_GEOM]) {
    int64_t t[PAD_GEOM] = {g->planes, g->h, g->w, g->oh, g->ow, g->top, g->left, (int64_t)g->mode};
    memcpy(v, t, sizeof t);
}

static sb_status gpu_pad2d_forward(const sb_backend *be, const sb_pad2d_geom *g, const float *x,
                                   float *y) {
    const char *fn = "sb_pad2d_forward";
    int64_t nx = g->planes * g->h * g->w, ny = g->planes * g->oh * g->ow;
    sb_gpu_ptr px, py;
    SB_TRY(dense_ptr(be, fn, "x", x, nx, sizeof(float), &px));
    SB_TRY(dense_ptr(be, fn, "y", y, ny, sizeof(float), &py));
    int64_t v[PAD_GEOM];
    pad_geom(g, v);
    float value = g->value;
    sb_gpu_arg args[] = {GEOM_ARG, SB_GPU_ARG(value), OPERAND(px), OPERAND(py)};
    return launch(be, fn, K(PAD2D_FORWARD), v, sizeof v, ARGS(args), ny);
}

static sb_status gpu_pad2d_backward(const sb_backend *be, const sb_pad2d_geom *g, const float *dy,
                                    float *dx) {
    const char *fn = "sb_pad2d_backward";
    int64_t nx = g->planes * g->h * g->w, ny = g->planes * g->oh * g->ow;
    sb_gpu_ptr pdy, pdx;
    SB_TRY(dense_ptr(be, fn, "dy", dy, ny, sizeof(float), &pdy));
    SB_TRY(dense_ptr(be, fn, "dx", dx, nx, sizeof(float), &pdx));
    int64_t v[PAD_GEOM];
    pad_geom(g, v);
    sb_gpu_arg args[] = {GEOM_ARG, OPERAND(pdy), OPERAND(pdx)};
    return launch(be, fn, K(PAD2D_BACKWARD), v, sizeof v, ARGS(args), nx);
}

/* ---- dropout (dropout.cl: Philox on the device, the CPU's keys and counters) ---- */

static sb_status gpu_dropout_forward(const sb_backend *be, const float *x, int64_t n, float p,
                                     bool train, uint64_t seed, uint64_t stream, uint64_t offset,
                                     float *y, float *mask) {
    const char *fn = "sb_dropout_forward";
    sb_gpu_ptr px, py, pm = {NULL, 0};
    SB_TRY(dense_ptr(be, fn, "x", x, n, sizeof(float), &px));
    SB_TRY(dense_ptr(be, fn, "y", y, n, sizeof(float), &py));
    if (mask) SB_TRY(dense_ptr(be, fn, "mask", mask, n, sizeof(float), &pm));
    int64_t nn = n;
    int32_t tr = train, want = mask != NULL;
    float scale = sb_dropout_scale(p);
    uint64_t s = seed, st = stream, off = offset;
    sb_gpu_arg args[] = {SB_GPU_ARG(nn), SB_GPU_ARG(p),   SB_GPU_ARG(tr),  SB_GPU_ARG(scale),
                         SB_GPU_ARG(s),  SB_GPU_ARG(st),  SB_GPU_ARG(off), OPERAND(px),
                         OPERAND(py),    SB_GPU_ARG(want), OPERAND(pm)};
    return launch(be, fn, K(DROPOUT_FORWARD), NULL, 0, ARGS(args), n);
}

static sb_status gpu_dropout_backward(const sb_backend *be, const float *dy, const float *mask,
                                      int64_t n, float p, bool train, float *dx) {
    const char *fn = "sb_dropout_backward";
    sb_gpu_ptr pdy, pm = {NULL, 0}, pdx;
    SB_TRY(dense_ptr(be, fn, "dy", dy, n, sizeof(float), &pdy));
    if (train) SB_TRY(dense_ptr(be, fn, "mask", mask, n, sizeof(float), &pm));
    SB_TRY(dense_ptr(be, fn, "dx", dx, n, sizeof(float), &pdx));
    int64_t nn = n;
    int32_t tr = train;
    float scale = sb_dropout_scale(p);
    sb_gpu_arg args[] = {SB_GPU_ARG(nn), SB_GPU_ARG(tr), SB_GPU_ARG(scale), OPERAND(pdy),
                         OPERAND(pm),    OPERAND(pdx)};
    return launch(be, fn, K(DROPOUT_BACKWARD), NULL, 0, ARGS(args), n);
}

/* ---- batch norm, layer norm and group norm (norm.cl) ---- */

/* norm.cl's `have` bits. */
enum {
    NORM_GAMMA = 1, NORM_BETA = 2, NORM_RUNNING = 4, NORM_SAVE_MEAN = 8, NORM_SAVE_RSTD = 16,
    NORM_DX = 32, NORM_DGAMMA = 64, NORM_DBETA = 128, NORM_RMS = 256
};

static sb_status gpu_batch_norm_forward(const sb_backend *be, const float *x, const float *gamma,
                                        const float *beta, float *running_mean,
                                        float *running_var, bool training, float momentum,
                                        float eps, float *y, float *save_mean, float *save_rstd,
                                        int64_t N, int64_t C, int64_t S) {
    const char *fn = "sb_batch_norm_forward";
    int64_t total = N * C * S, count = N * S;
    int32_t have = 0, tr = training;
    sb_gpu_ptr px, py, pg, pb, prm, prv, psm, psr;
    SB_TRY(dense_ptr(be, fn, "x", x, total, sizeof(float), &px));
    SB_TRY(dense_ptr(be, fn, "y", y, total, sizeof(float), &py));
    SB_TRY(optional_ptr(be, fn, "gamma", gamma, C, NORM_GAMMA, &have, &pg));
    SB_TRY(optional_ptr(be, fn, "beta", beta, C, NORM_BETA, &have, &pb));
    SB_TRY(optional_ptr(be, fn, "running_mean", running_mean, C, NORM_RUNNING, &have, &prm));
    SB_TRY(optional_ptr(be, fn, "running_var", running_var, C, NORM_RUNNING, &have, &prv));
    SB_TRY(optional_ptr(be, fn, "save_mean", save_mean, C, NORM_SAVE_MEAN, &have, &psm));
    SB_TRY(optional_ptr(be, fn, "save_rstd", save_rstd, C, NORM_SAVE_RSTD, &have, &psr));
    /* integer -> float conversions on the host, as the reference's */
    float count_f = (float)count, count_m1_f = (float)(count - 1);
    int64_t n = N, c = C, s = S;
    sb_gpu_arg args[] = {SB_GPU_ARG(n),        SB_GPU_ARG(c),       SB_GPU_ARG(s),
                         SB_GPU_ARG(have),     SB_GPU_ARG(tr),      SB_GPU_ARG(momentum),
                         SB_GPU_ARG(eps),      SB_GPU_ARG(count_f), SB_GPU_ARG(count_m1_f),
                         OPERAND(px),          OPERAND(pg),         OPERAND(pb),
                         OPERAND(prm),         OPERAND(prv),        OPERAND(py),
                         OPERAND(psm),         OPERAND(psr)};
    return launch(be, fn, K(BN_FORWARD), NULL, 0, ARGS(args), C);
}

static sb_status gpu_batch_norm_backward(const sb_backend *be, const float *dy, const float *x,
                                         const float *gamma, const float *save_mean,
                                         const float *save_rstd, bool training, float *dx,
                                         float *dgamma, float *dbeta, int64_t N, int64_t C,
                                         int64_t S) {
    const char *fn = "sb_batch_norm_backward";
    int64_t total = N * C * S;
    int32_t have = 0, tr = training;
    sb_gpu_ptr pdy, px, pg, pm, pr, pdx, pdg, pdb;
    SB_TRY(dense_ptr(be, fn, "dy", dy, total, sizeof(float), &pdy));
    SB_TRY(dense_ptr(be, fn, "x", x, total, sizeof(float), &px));
    SB_TRY(dense_ptr(be, fn, "save_mean", save_mean, C, sizeof(float), &pm));
    SB_TRY(dense_ptr(be, fn, "save_rstd", save_rstd, C, sizeof(float), &pr));
    SB_TRY(optional_ptr(be, fn, "gamma", gamma, C, NORM_GAMMA, &have, &pg));
    SB_TRY(optional_ptr(be, fn, "dx", dx, total, NORM_DX, &have, &pdx));
    SB_TRY(optional_ptr(be, fn, "dgamma", dgamma, C, NORM_DGAMMA, &have, &pdg));
    SB_TRY(optional_ptr(be, fn, "dbeta", dbeta, C, NORM_DBETA, &have, &pdb));
    float count_f = (float)(N * S);
    int64_t n = N, c = C, s = S;
    sb_gpu_arg args[] = {SB_GPU_ARG(n),    SB_GPU_ARG(c),  SB_GPU_ARG(s), SB_GPU_ARG(have),
                         SB_GPU_ARG(tr),   SB_GPU_ARG(count_f), OPERAND(pdy), OPERAND(px),
                         OPERAND(pg),      OPERAND(pm),    OPERAND(pr),   OPERAND(pdx),
                         OPERAND(pdg),     OPERAND(pdb)};
    return launch(be, fn, K(BN_BACKWARD), NULL, 0, ARGS(args), C);
}

/* Layer, group and RMS norm: R rows of D elements, statistics per row,
 * element i of row r scaled by parameter (r % G) * (D / S) + i / S (norm.cl;
 * layer and RMS norm are G = S = 1). P parameters. rms: no mean (NORM_RMS). */
typedef struct rows_geom {
    int64_t R, D, G, S, P;
    bool rms;
} rows_geom;

static sb_status rows_forward(const sb_backend *be, const char *fn, const rows_geom *q, const float *x, const float *w,
                              const float *b, float eps, float *y, float *save_mean,
                              float *save_rstd) {
    int32_t have = q->rms ? NORM_RMS : 0;
    sb_gpu_ptr px, py, pw, pb, psm, psr;
    SB_TRY(dense_ptr(be, fn, "x", x, q->R * q->D, sizeof(float), &px));
    SB_TRY(dense_ptr(be, fn, "y", y, q->R * q->D, sizeof(float), &py));
    SB_TRY(optional_ptr(be, fn, "weight", w, q->P, NORM_GAMMA, &have, &pw));
    SB_TRY(optional_ptr(be, fn, "bias", b, q->P, NORM_BETA, &have, &pb));
    SB_TRY(optional_ptr(be, fn, "save_mean", save_mean, q->R, NORM_SAVE_MEAN, &have, &psm));
    SB_TRY(optional_ptr(be, fn, "save_rstd", save_rstd, q->R, NORM_SAVE_RSTD, &have, &psr));
    float d_f = (float)q->D;
    int64_t rr = q->R, dd = q->D, gg = q->G, ss = q->S;
    sb_gpu_arg args[] = {SB_GPU_ARG(rr),   SB_GPU_ARG(dd), SB_GPU_ARG(gg),  SB_GPU_ARG(ss),
                         SB_GPU_ARG(have), SB_GPU_ARG(eps), SB_GPU_ARG(d_f), OPERAND(px),
                         OPERAND(pw),      OPERAND(pb),    OPERAND(py),     OPERAND(psm),
                         OPERAND(psr)};
    return launch(be, fn, K(ROWS_FORWARD), NULL, 0, ARGS(args), q->R);
}

/* dx first, then the parameter gradients, as the reference. */
static sb_status rows_backward(const sb_backend *be, const char *fn, const rows_geom *q, const float *dy,
                               const float *x, const float *w, const float *save_mean,
                               const float *save_rstd, float *dx, float *dw, float *db) {
    int32_t have = q->rms ? NORM_RMS : 0;
    sb_gpu_ptr pdy, px, pw, pm, pr, pdx, pdw, pdb;
    SB_TRY(dense_ptr(be, fn, "dy", dy, q->R * q->D, sizeof(float), &pdy));
    SB_TRY(dense_ptr(be, fn, "x", x, q->R * q->D, sizeof(float), &px));
    /* RMS norm has no mean: its rrms fills the slot, which NORM_RMS never reads */
    SB_TRY(dense_ptr(be, fn, "save_mean", q->rms ? save_rstd : save_mean, q->R, sizeof(float), &pm));
    SB_TRY(dense_ptr(be, fn, "save_rstd", save_rstd, q->R, sizeof(float), &pr));
    SB_TRY(optional_ptr(be, fn, "weight", w, q->P, NORM_GAMMA, &have, &pw));
    SB_TRY(optional_ptr(be, fn, "dx", dx, q->R * q->D, NORM_DX, &have, &pdx));
    SB_TRY(optional_ptr(be, fn, "dweight", dw, q->P, NORM_DGAMMA, &have, &pdw));
    SB_TRY(optional_ptr(be, fn, "dbias", db, q->P, NORM_DBETA, &have, &pdb));
    float d_f = (float)q->D;
    int64_t rr = q->R, dd = q->D, gg = q->G, ss = q->S;
    if (dx) {
        sb_gpu_arg args[] = {SB_GPU_ARG(rr), SB_GPU_ARG(dd), SB_GPU_ARG(gg),   SB_GPU_ARG(ss),
                             SB_GPU_ARG(have), SB_GPU_ARG(d_f), OPERAND(pdy),  OPERAND(px),
                             OPERAND(pw),    OPERAND(pm),    OPERAND(pr),      OPERAND(pdx)};
        SB_TRY(launch(be, fn, K(ROWS_BACKWARD_DX), NULL, 0, ARGS(args), q->R));
    }
    if (!dw && !db) return SB_OK;
    sb_gpu_arg args[] = {SB_GPU_ARG(rr), SB_GPU_ARG(dd), SB_GPU_ARG(gg), SB_GPU_ARG(ss),
                         SB_GPU_ARG(have), OPERAND(pdy), OPERAND(px),    OPERAND(pm),
                         OPERAND(pr),    OPERAND(pdw),   OPERAND(pdb)};
    return launch(be, fn, K(ROWS_BACKWARD_PARAMS), NULL, 0, ARGS(args), q->P);
}

// x, y are (R,D); w, b are (D); save_mean, save_rstd are (R)
static sb_status gpu_layer_norm_forward(const sb_backend *be, const float *x, const float *w,
                                        const float *b, float eps, float *y, float *save_mean,
                                        float *save_rstd, int64_t R, int64_t D) {
    rows_geom q = {R, D, 1, 1, D, false};
    return rows_forward(be, "sb_layer_norm_forward", &q, x, w, b, eps, y, save_mean, save_rstd);
}

static sb_status gpu_layer_norm_backward(const sb_backend *be, const float *dy, const float *x,
                                         const float *w, const float *save_mean,
                                         const float *save_rstd, float *dx, float *dw, float *db,
                                         int64_t R, int64_t D) {
    rows_geom q = {R, D, 1, 1, D, false};
    return rows_backward(be, "sb_layer_norm_backward", &q, dy, x, w, save_mean, save_rstd, dx, dw,
                         db);
}

// x, y are (R,D); w is (D); save_rrms is (R)
static sb_status gpu_rms_norm_forward(const sb_backend *be, const float *x, const float *w,
                                      float eps, float *y, float *save_rrms, int64_t R,
                                      int64_t D) {
    rows_geom q = {R, D, 1, 1, D, true};
    return rows_forward(be, "sb_rms_norm_forward", &q, x, w, NULL, eps, y, NULL, save_rrms);
}

static sb_status gpu_rms_norm_backward(const sb_backend *be, const float *dy, const float *x,
                                       const float *w, const float *rrms, float *dx, float *dw,
                                       int64_t R, int64_t D) {
    rows_geom q = {R, D, 1, 1, D, true};
    return rows_backward(be, "sb_rms_norm_backward", &q, dy, x, w, NULL, rrms, dx, dw, NULL);
}

// x, y are (N,C,S); gamma, beta are (C); save_mean, save_rstd are (N,G)
static sb_status gpu_group_norm_forward(const sb_backend *be, const float *x, const float *gamma,
                                        const float *beta, float eps, float *y, float *save_mean,
                                        float *save_rstd, int64_t N, int64_t C, int64_t S,
                                        int64_t G) {
    rows_geom q = {N * G, (C / G) * S, G, S, C, false};
    return rows_forward(be, "sb_group_norm_forward", &q, x, gamma, beta, eps, y, save_mean,
                        save_rstd);
}

static sb_status gpu_group_norm_backward(const sb_backend *be, const float *dy, const float *x,
                                         const float *gamma, const float *save_mean,
                                         const float *save_rstd, float *dx, float *dgamma,
                                         float *dbeta, int64_t N, int64_t C, int64_t S,
                                         int64_t G) {
    rows_geom q = {N * G, (C / G) * S, G, S, C, false};
    return rows_backward(be, "sb_group_norm_backward", &q, dy, x, gamma, save_mean, save_rstd, dx,
                         dgamma, dbeta);
}

/* ---- optimizers ---- */

static sb_status gpu_sgd(const sb_backend *be, const sb_sgd_factors *f, bool nesterov,
                         bool maximize, bool first, int64_t n, float *param, const float *grad,
                         float *momentum_buf) {
    const char *fn = "sb_sgd_step";
    if (n == 0) return SB_OK;
    sb_gpu_ptr pp, pg, pm = {NULL, 0};
    SB_TRY(dense_ptr(be, fn, "param", param, n, sizeof(float), &pp));
    SB_TRY(dense_ptr(be, fn, "grad", grad, n, sizeof(float), &pg));
    if (f->use_momentum) SB_TRY(dense_ptr(be, fn, "momentum_buf", momentum_buf, n, sizeof(float), &pm));
    int32_t wd = f->use_weight_decay, mo = f->use_momentum, ne = nesterov, ma = maximize, fi = first;
    int64_t nn = n;
    sb_gpu_arg args[] = {SB_GPU_ARG(f->weight_decay), SB_GPU_ARG(f->momentum),
                         SB_GPU_ARG(f->one_minus_dampening), SB_GPU_ARG(f->neg_lr),
                         SB_GPU_ARG(wd), SB_GPU_ARG(mo), SB_GPU_ARG(ne), SB_GPU_ARG(ma),
                         SB_GPU_ARG(fi), SB_GPU_ARG(nn), OPERAND(pp), OPERAND(pg), OPERAND(pm)};
    return launch(be, fn, K(SGD), NULL, 0, ARGS(args), n);
}

static sb_status gpu_adam(const sb_backend *be, const sb_adam_factors *f, bool first, int64_t n,
                          float *param, const float *grad, float *exp_avg, float *exp_avg_sq,
                          float *max_exp_avg_sq) {
    const char *fn = "sb_adam_step";
    if (n == 0) return SB_OK;
    sb_gpu_ptr pp, pg, pm, pv, px = {NULL, 0};
    SB_TRY(dense_ptr(be, fn, "param", param, n, sizeof(float), &pp));
    SB_TRY(dense_ptr(be, fn, "grad", grad, n, sizeof(float), &pg));
    SB_TRY(dense_ptr(be, fn, "exp_avg", exp_avg, n, sizeof(float), &pm));
    SB_TRY(dense_ptr(be, fn, "exp_avg_sq", exp_avg_sq, n, sizeof(float), &pv));
    if (f->amsgrad) SB_TRY(dense_ptr(be, fn, "max_exp_avg_sq", max_exp_avg_sq, n, sizeof(float), &px));
    int32_t wd = f->use_weight_decay, de = f->decoupled, am = f->amsgrad, ma = f->maximize,
           fi = first;
    int64_t nn = n;
    sb_gpu_arg args[] = {SB_GPU_ARG(f->weight_decay),    SB_GPU_ARG(f->decay),
                         SB_GPU_ARG(f->one_minus_beta1), SB_GPU_ARG(f->beta2),
                         SB_GPU_ARG(f->one_minus_beta2), SB_GPU_ARG(f->bias_correction2_sqrt),
                         SB_GPU_ARG(f->eps),             SB_GPU_ARG(f->neg_step_size),
                         SB_GPU_ARG(wd),     SB_GPU_ARG(de),     SB_GPU_ARG(am),
                         SB_GPU_ARG(ma),     SB_GPU_ARG(fi),     SB_GPU_ARG(nn),
                         OPERAND(pp),        OPERAND(pg),        OPERAND(pm),
                         OPERAND(pv),        OPERAND(px)};
    return launch(be, fn, K(ADAM), NULL, 0, ARGS(args), n);
}

/* Families without an OpenCL kernel yet stay NULL (docs/GPU.md). */
const sb_backend_ops sb_gpu_ops = {
    .sgemm = gpu_sgemm,
    .linear_forward = gpu_linear_forward,
    .linear_backward = gpu_linear_backward,
    .conv2d_forward = gpu_conv2d_forward,
    .conv2d_backward = gpu_conv2d_backward,
    .max_pool2d_forward = gpu_max_pool2d_forward,
    .max_pool2d_backward = gpu_max_pool2d_backward,
    .avg_pool2d_forward = gpu_avg_pool2d_forward,
    .avg_pool2d_backward = gpu_avg_pool2d_backward,
    .adaptive_max_pool2d_forward = gpu_max_pool2d_forward,
    .adaptive_max_pool2d_backward = gpu_max_pool2d_backward,
    .adaptive_avg_pool2d_forward = gpu_avg_pool2d_forward,
    .adaptive_avg_pool2d_backward = gpu_avg_pool2d_backward,
    .pad2d_forward = gpu_pad2d_forward,
    .pad2d_backward = gpu_pad2d_backward,
    .interpolate_forward = sb_gpu_interpolate_forward,
    .interpolate_backward = sb_gpu_interpolate_backward,
    .grid_sample_forward = sb_gpu_grid_sample_forward,
    .grid_sample_backward = sb_gpu_grid_sample_backward,
    .activation = gpu_activation,
    .unary = gpu_unary,
    .unary_backward = gpu_unary_backward,
    .binary = gpu_binary,
    .binary_scalar = gpu_binary_scalar,
    .binary_backward = gpu_binary_backward,
    .reduce_to_shape = gpu_reduce_to_shape,
    .softmax_forward = gpu_softmax_forward,
    .softmax_backward = gpu_softmax_backward,
    .class_loss_forward = gpu_class_loss_forward,
    .class_loss_backward = gpu_class_loss_backward,
    .class_loss_nd_forward = gpu_class_loss_nd_forward,
    .class_loss_nd_backward = gpu_class_loss_nd_backward,
    .ctc_loss_forward = gpu_ctc_loss_forward,
    .ctc_loss_backward = gpu_ctc_loss_backward,
    .elementwise_loss_forward = gpu_elementwise_loss_forward,
    .elementwise_loss_backward = gpu_elementwise_loss_backward,
    .batch_norm_forward = gpu_batch_norm_forward,
    .batch_norm_backward = gpu_batch_norm_backward,
    .layer_norm_forward = gpu_layer_norm_forward,
    .layer_norm_backward = gpu_layer_norm_backward,
    .rms_norm_forward = gpu_rms_norm_forward,
    .rms_norm_backward = gpu_rms_norm_backward,
    .group_norm_forward = gpu_group_norm_forward,
    .group_norm_backward = gpu_group_norm_backward,
    .reduce = gpu_reduce,
    .reduce_extreme = gpu_reduce_extreme,
    .reduce_scatter = gpu_reduce_scatter,
    .spread = gpu_spread,
    .index_gather = gpu_index_gather,
    .index_scatter_add = gpu_index_scatter_add,
    .scatter_reduce = gpu_scatter_reduce,
    .sort_select = gpu_sort_select,
    .sort_scatter = gpu_sort_scatter,
    .cumulative = gpu_cumulative,
    .sdpa_forward = gpu_sdpa_forward,
    .sdpa_backward = gpu_sdpa_backward,
    .prelu_forward = gpu_prelu_forward,
    .prelu_backward = gpu_prelu_backward,
    .dropout_forward = gpu_dropout_forward,
    .dropout_backward = gpu_dropout_backward,
    .sgd = gpu_sgd,
    .adam = gpu_adam,
};
