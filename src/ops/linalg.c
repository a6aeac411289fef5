/* Tensor-level matmul and linear layers (include/samebits/linalg.h): argument
 * checks, then the device's GEMM and linear entries (on the CPU the fast GEMM
 * of src/cpu/gemm.c, which reproduces the reference GEMM of src/ref/gemm.c
 * bit for bit). */
#include <stdio.h>
#include "samebits/linalg.h"
#include "core/fpenv.h"
#include "ops/validate.h"

/* ---- matmul ---- */

typedef struct mm_plan {
    int64_t batch, m, n, k;
    bool a_batched, b_batched, out_batched;
    int64_t lda, ldb; /* row strides of a and b as stored */
} mm_plan;

static int64_t at_least_1(int64_t v) { return v > 1 ? v : 1; }

static sb_status plan_matmul(const char *fn, const sb_tensor *a, const sb_tensor *b, bool ta,
                             bool tb, mm_plan *p) {
    SB_TRY(sb_check_dense(fn, "a", a, 2, 3));
    SB_TRY(sb_check_dense(fn, "b", b, 2, 3));
    p->a_batched = a->ndim == 3;
    p->b_batched = b->ndim == 3;
    p->out_batched = p->a_batched || p->b_batched;
    if (p->a_batched && p->b_batched && a->shape[0] != b->shape[0])
        return sb_fail(SB_ERR_SHAPE, "%s: batch sizes differ: a has %lld, b has %lld", fn,
                       (long long)a->shape[0], (long long)b->shape[0]);
    p->batch = p->a_batched ? a->shape[0] : p->b_batched ? b->shape[0] : 1;
    const int64_t *as = a->shape + (a->ndim - 2), *bs = b->shape + (b->ndim - 2);
    p->m = ta ? as[1] : as[0];
    int64_t ka = ta ? as[0] : as[1];
    int64_t kb = tb ? bs[1] : bs[0];
    p->n = tb ? bs[0] : bs[1];
    if (ka != kb)
        return sb_fail(SB_ERR_SHAPE,
                       "%s: inner dimensions differ: op(a) is (%lld, %lld) but op(b) is (%lld, %lld)",
                       fn, (long long)p->m, (long long)ka, (long long)kb, (long long)p->n);
    p->k = ka;
    p->lda = at_least_1(as[1]);
    p->ldb = at_least_1(bs[1]);
    return SB_OK;
}

static sb_status check_out(const char *fn, const char *name, const sb_tensor *t, const mm_plan *p,
                           bool batched, int64_t rows, int64_t cols) {
    SB_TRY(sb_check_tensor(fn, name, t, SB_F32, -1));
    int64_t shape[3] = {p->batch, rows, cols};
    SB_TRY(batched ? sb_expect_shape(fn, name, t, 3, shape)
                   : sb_expect_shape(fn, name, t, 2, shape + 1));
    return sb_check_contig(fn, name, t);
}

sb_status sb_matmul(const sb_tensor *a, const sb_tensor *b, bool trans_a, bool trans_b,
                    sb_tensor *out) {
    SB_FPENV_GUARD();
    const char *fn = "sb_matmul";
    mm_plan p = {0};
    SB_TRY(plan_matmul(fn, a, b, trans_a, trans_b, &p));
    SB_TRY(check_out(fn, "out", out, &p, p.out_batched, p.m, p.n));
    SB_TRY(sb_check_no_alias(fn, "out", out, "a", a));
    SB_TRY(sb_check_no_alias(fn, "out", out, "b", b));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, a, b, out));
    const float *A = a->data, *B = b->data;
    float *C = out->data;
    for (int64_t t = 0; t < p.batch; t++)
        SB_TRY(SB_BACKEND_RUN(fn, be, sgemm, trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', p.m, p.n,
                              p.k, A + (p.a_batched ? t * p.m * p.k : 0), p.lda,
                              B + (p.b_batched ? t * p.k * p.n : 0), p.ldb, C + t * p.m * p.n,
                              at_least_1(p.n), false));
    return SB_OK;
}

/* Zero-fills a shared (2-D) gradient so that every batch can continue its
 * chains: the chain then runs over (batch, term) lexicographically and is
 * +0.0f when there are no batches, exactly like a fresh chain. */
static sb_status start_chains(const sb_backend *be, sb_tensor *g) {
    return be->fill(be, g, 0.0f);
}

sb_status sb_matmul_backward(const sb_tensor *dout, const sb_tensor *a, const sb_tensor *b,
                             bool trans_a, bool trans_b, sb_tensor *da, sb_tensor *db) {
    SB_FPENV_GUARD();
    const char *fn = "sb_matmul_backward";
    mm_plan p = {0};
    SB_TRY(plan_matmul(fn, a, b, trans_a, trans_b, &p));
    SB_TRY(sb_check_dense(fn, "dout", dout, 2, 3));
    SB_TRY(check_out(fn, "dout", dout, &p, p.out_batched, p.m, p.n));
    if (da) {
        SB_TRY(sb_check_tensor(fn, "da", da, SB_F32, -1));
        SB_TRY(sb_check_same_shape(fn, "da", da, "a", a));
        SB_TRY(sb_check_contig(fn, "da", da));
    }
    if (db) {
        SB_TRY(sb_check_tensor(fn, "db", db, SB_F32, -1));
        SB_TRY(sb_check_same_shape(fn, "db", db, "b", b));
        SB_TRY(sb_check_contig(fn, "db", db));
    }
    const sb_tensor *ins[3] = {dout, a, b};
    const char *in_names[3] = {"dout", "a", "b"};
    for (int i = 0; i < 3; i++) {
        SB_TRY(sb_check_no_alias(fn, "da", da, in_names[i], ins[i]));
        SB_TRY(sb_check_no_alias(fn, "db", db, in_names[i], ins[i]));
    }
    SB_TRY(sb_check_no_alias(fn, "da", da, "db", db));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dout, a, b, da, db));
    if (!be->ops->sgemm) return sb_backend_unsupported(fn, be, "sgemm");

    const float *A = a->data, *B = b->data, *D = dout->data;
    int64_t m = p.m, n = p.n, k = p.k, ldd = at_least_1(n);
    if (da && !p.a_batched && p.out_batched) SB_TRY(start_chains(be, da));
    if (db && !p.b_batched && p.out_batched) SB_TRY(start_chains(be, db));
    for (int64_t t = 0; t < p.batch; t++) {
        const float *At = A + (p.a_batched ? t * m * k : 0);
        const float *Bt = B + (p.b_batched ? t * k * n : 0);
        const float *Dt = D + t * m * n;
        if (da) {
            /* d op(a)[i][p] = sum_j dout[i][j] * op(b)[p][j], j ascending. */
            float *G = (float *)da->data + (p.a_batched ? t * m * k : 0);
            bool cont = !p.a_batched && p.out_batched;
            if (!trans_a) /* G is (m, k) = dout . op(b)^T */
                SB_TRY(be->ops->sgemm(be, 'N', trans_b ? 'N' : 'T', m, k, n, Dt, ldd, Bt, p.ldb,
                                      G, at_least_1(k), cont));
            else /* G is (k, m) = op(b) . dout^T */
                SB_TRY(be->ops->sgemm(be, trans_b ? 'T' : 'N', 'T', k, m, n, Bt, p.ldb, Dt, ldd,
                                      G, at_least_1(m), cont));
        }
        if (db) {
            /* d op(b)[p][j] = sum_i op(a)[i][p] * dout[i][j], i ascending. */
            float *G = (float *)db->data + (p.b_batched ? t * k * n : 0);
            bool cont = !p.b_batched && p.out_batched;
            if (!trans_b) /* G is (k, n) = op(a)^T . dout */
                SB_TRY(be->ops->sgemm(be, trans_a ? 'N' : 'T', 'N', k, n, m, At, p.lda, Dt, ldd,
                                      G, at_least_1(n), cont));
            else /* G is (n, k) = dout^T . op(a) */
                SB_TRY(be->ops->sgemm(be, 'T', trans_a ? 'T' : 'N', n, k, m, Dt, ldd, At, p.lda,
                                      G, at_least_1(k), cont));
        }
    }
    return SB_OK;
}

/* ---- linear ---- */

typedef struct lin_plan {
    int64_t rows, in, out;
} lin_plan;

/* x is (..., in), w is (out, in); `tname` names the tensor shaped like x. */
static sb_status plan_linear(const char *fn, const char *xname, const sb_tensor *x,
                             const sb_tensor *w, lin_plan *p) {
    SB_TRY(sb_check_dense(fn, xname, x, 1, SB_MAX_DIMS));
    SB_TRY(sb_check_dense(fn, "w", w, 2, 2));
    p->out = w->shape[0];
    p->in = w->shape[1];
    if (x->shape[x->ndim - 1] != p->in) {
        char xs[160], ws[160];
        return sb_fail(SB_ERR_SHAPE, "%s: %s has shape %s but w has shape %s: last dim must be in_features = %lld",
                       fn, xname, sb_shape_str(x, xs, sizeof xs), sb_shape_str(w, ws, sizeof ws),
                       (long long)p->in);
    }
    p->rows = 1;
    for (int i = 0; i < x->ndim - 1; i++) p->rows *= x->shape[i];
    return SB_OK;
}

/* t must be float32, dense and shaped like x with its last dim set to `last`. */
static sb_status check_like_x(const char *fn, const char *name, const sb_tensor *t,
                              const sb_tensor *x, int64_t last) {
    SB_TRY(sb_check_tensor(fn, name, t, SB_F32, -1));
    int64_t shape[SB_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) shape[i] = x->shape[i];
    shape[x->ndim - 1] = last;
    SB_TRY(sb_expect_shape(fn, name, t, x->ndim, shape));
    return sb_check_contig(fn, name, t);
}

static sb_status check_vector(const char *fn, const char *name, const sb_tensor *t, int64_t len) {
    SB_TRY(sb_check_tensor(fn, name, t, SB_F32, -1));
    SB_TRY(sb_expect_shape(fn, name, t, 1, &len));
    return sb_check_contig(fn, name, t);
}

sb_status sb_linear_forward(const sb_tensor *x, const sb_tensor *w, const sb_tensor *bias,
                            sb_tensor *y) {
    SB_FPENV_GUARD();
    const char *fn = "sb_linear_forward";
    lin_plan p = {0};
    SB_TRY(plan_linear(fn, "x", x, w, &p));
    if (bias) SB_TRY(check_vector(fn, "bias", bias, p.out));
    SB_TRY(check_like_x(fn, "y", y, x, p.out));
    SB_TRY(sb_check_no_alias(fn, "y", y, "x", x));
    SB_TRY(sb_check_no_alias(fn, "y", y, "w", w));
    SB_TRY(sb_check_no_alias(fn, "y", y, "bias", bias));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, x, w, bias, y));
    return SB_BACKEND_RUN(fn, be, linear_forward, p.rows, p.in, p.out, x->data, w->data,
                          bias ? bias->data : NULL, y->data);
}

sb_status sb_linear_backward(const sb_tensor *dy, const sb_tensor *x, const sb_tensor *w,
                             sb_tensor *dx, sb_tensor *dw, sb_tensor *db) {
    SB_FPENV_GUARD();
    const char *fn = "sb_linear_backward";
    lin_plan p = {0};
    SB_TRY(plan_linear(fn, "x", x, w, &p));
    SB_TRY(sb_check_dense(fn, "dy", dy, 1, SB_MAX_DIMS));
    SB_TRY(check_like_x(fn, "dy", dy, x, p.out));
    if (dx) SB_TRY(check_like_x(fn, "dx", dx, x, p.in));
    if (dw) {
        SB_TRY(sb_check_tensor(fn, "dw", dw, SB_F32, -1));
        SB_TRY(sb_check_same_shape(fn, "dw", dw, "w", w));
        SB_TRY(sb_check_contig(fn, "dw", dw));
    }
    if (db) SB_TRY(check_vector(fn, "db", db, p.out));
    const sb_tensor *ins[3] = {dy, x, w};
    const char *in_names[3] = {"dy", "x", "w"};
    for (int i = 0; i < 3; i++) {
        SB_TRY(sb_check_no_alias(fn, "dx", dx, in_names[i], ins[i]));
        SB_TRY(sb_check_no_alias(fn, "dw", dw, in_names[i], ins[i]));
        SB_TRY(sb_check_no_alias(fn, "db", db, in_names[i], ins[i]));
    }
    SB_TRY(sb_check_no_alias(fn, "dx", dx, "dw", dw));
    SB_TRY(sb_check_no_alias(fn, "dx", dx, "db", db));
    SB_TRY(sb_check_no_alias(fn, "dw", dw, "db", db));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, dy, x, w, dx, dw, db));
    return SB_BACKEND_RUN(fn, be, linear_backward, p.rows, p.in, p.out, dy->data, x->data,
                          w->data, dx ? dx->data : NULL, dw ? dw->data : NULL,
                          db ? db->data : NULL);
}
