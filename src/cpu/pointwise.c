/* The fast pointwise family: the threaded strided engine behind every
 * elementwise op and activation, around the vector loops of
 * pointwise_<isa>.c that the kernel context holds (cpu/kernels.h), and the
 * scalar level's loops.
 *
 * Pointwise results depend on nothing but the element's own inputs
 * (contract "Elementwise": loop order, vector width and thread split are
 * free), so the engine may cut the index space anywhere: contiguous
 * operands are cut into flat element ranges, anything else into ranges of
 * rows of the last dimension. */
#include <string.h>
#include "cpu/kernels.h"
#include "cpu/ops_internal.h"
#include "cpu/vmath.h"

/* ---- the scalar level's loops -------------------------------------------------------- */

static void binary_scalar_loop(sb_binary_op op, int64_t n, const float *a, int64_t sa,
                               const float *b, int64_t sb, float *out) {
    for (int64_t i = 0; i < n; i++) out[i] = sb_ref_binary1(op, a[i * sa], b[i * sb]);
}

void sb_pwv_adam_scalar(const sb_adam_factors *f, bool first, int64_t n, float *param,
                        const float *grad, float *m, float *v, float *vmax) {
    for (int64_t i = 0; i < n; i++)
        sb_adam_elem(f, first, param + i, grad + i, m + i, v + i, f->amsgrad ? vmax + i : NULL);
}

void sb_pwv_sgd_scalar(const sb_sgd_factors *f, bool nesterov, bool maximize, bool first,
                       int64_t n, float *param, const float *grad, float *buf) {
    for (int64_t i = 0; i < n; i++)
        sb_sgd_elem(f, nesterov, maximize, first, param + i, grad + i, buf ? buf + i : NULL);
}

void sb_pwv_fma_acc_scalar(int64_t n, float a, const float *x, float *y) {
    for (int64_t i = 0; i < n; i++) y[i] = fmaf(a, x[i], y[i]);
}

void sb_pwv_piecewise_fwd_scalar(sb_pwl_kind kind, int64_t n, const float *x, float p0, float p1,
                                 float *y) {
    switch (kind) {
    case SB_PWL_HARDTANH: sb_ref_hardtanh_forward(n, x, p0, p1, y); break;
    case SB_PWL_HARDSIGMOID: sb_ref_hardsigmoid_forward(n, x, y); break;
    case SB_PWL_HARDSWISH: sb_ref_hardswish_forward(n, x, y); break;
    case SB_PWL_LEAKY_RELU: sb_ref_leaky_relu_forward(n, x, p0, y); break;
    }
}

void sb_pwv_piecewise_bwd_scalar(sb_pwl_kind kind, int64_t n, const float *x, const float *dy,
                                 float p0, float p1, float *dx) {
    switch (kind) {
    case SB_PWL_HARDTANH: sb_ref_hardtanh_backward(n, x, dy, p0, p1, dx); break;
    case SB_PWL_HARDSIGMOID: sb_ref_hardsigmoid_backward(n, x, dy, dx); break;
    case SB_PWL_HARDSWISH: sb_ref_hardswish_backward(n, x, dy, dx); break;
    case SB_PWL_LEAKY_RELU: sb_ref_leaky_relu_backward(n, x, dy, p0, dx); break;
    }
}

void sb_pwv_sqdev_scalar(int64_t n, const float *x, float m, float *out) {
    for (int64_t q = 0; q < n; q++) {
        float d = x[q] - m;
        out[q] = d * d;
    }
}

void sb_pwv_norm_map_scalar(int64_t n, const float *x, float m, float r, const float *w,
                            int64_t ws, const float *b, int64_t bs, float *y) {
    for (int64_t q = 0; q < n; q++) {
        float v = (x[q] - m) * r;
        if (w) v = v * w[q * ws];
        if (b) v = v + b[q * bs];
        y[q] = v;
    }
}

void sb_pwv_norm_grad_terms_scalar(int64_t n, const float *x, const float *dy, const float *w,
                                   int64_t ws, float m, float r, float *ga, float *gx) {
    for (int64_t q = 0; q < n; q++) {
        float xhat = (x[q] - m) * r;
        float g = w ? dy[q] * w[q * ws] : dy[q];
        if (ga) ga[q] = g;
        gx[q] = g * xhat;
    }
}

void sb_pwv_norm_dx_scalar(int64_t n, const float *x, const float *dy, const float *w, int64_t ws,
                           float m, float r, float k, float a, float c, float *dx) {
    for (int64_t q = 0; q < n; q++) {
        float xhat = (x[q] - m) * r;
        float g = w ? dy[q] * w[q * ws] : dy[q];
        dx[q] = k * ((g - a) - xhat * c);
    }
}

/* The reference's scan, one element at a time: m is replaced by a later v
 * only when v > m (ties keep the first) or v is the first NaN. */
float sb_pwv_row_max_scalar(int64_t n, const float *x, int64_t stride) {
    float m = n > 0 ? x[0] : -INFINITY;
    for (int64_t j = 1; j < n; j++) {
        float v = x[j * stride];
        if (sb_isnanf(v) || v > m) m = sb_isnanf(m) ? m : v;
    }
    return m;
}

float sb_pwv_row_max_dense(int64_t n, const float *x) { return sb_pwv_row_max_scalar(n, x, 1); }

const sb_pwv_table sb_pwv_scalar = {
    sb_ref_relu_forward,        sb_ref_relu_backward,        binary_scalar_loop,
    sb_pwv_adam_scalar,         sb_pwv_sgd_scalar,           sb_pwv_fma_acc_scalar,
    sb_pwv_piecewise_fwd_scalar, sb_pwv_piecewise_bwd_scalar, sb_pwv_sqdev_scalar,
    sb_pwv_norm_map_scalar,     sb_pwv_norm_grad_terms_scalar, sb_pwv_norm_dx_scalar,
    sb_pwv_row_max_dense,
};

/* ---- the engine ------------------------------------------------------------------ */

enum {
    FLAT_CHUNK = 2048, /* elements per kernel call in the flat path */
    ROW_CHUNK = 256,   /* gather buffer of the strided path */
    MIN_GRAIN = 16384  /* elements below which a thread hand-off does not pay */
};

typedef struct pw_job {
    int nin;
    const sb_tensor *in;
    sb_tensor *out;
    sb_pw_kernel kernel;
    const void *ctx;
    bool constant[SB_PW_MAX_IN]; /* every stride 0: one value for all */
    int64_t len;                 /* strided path: row length (last dim) */
} pw_job;

/* Row-major contiguous over the dimensions that matter (size > 1). */
static bool dense(const sb_tensor *t) {
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] == 1) continue;
        if (t->strides[d] != expect) return false;
        expect *= t->shape[d];
    }
    return true;
}

static bool all_zero_strides(const sb_tensor *t) {
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] != 1 && t->strides[d] != 0) return false;
    return true;
}

static void flat_range(void *vjob, int64_t begin, int64_t end) {
    const pw_job *job = vjob;
    float cbuf[SB_PW_MAX_IN][FLAT_CHUNK];
    for (int k = 0; k < job->nin; k++)
        if (job->constant[k]) {
            float v = *(const float *)job->in[k].data;
            for (int i = 0; i < FLAT_CHUNK; i++) cbuf[k][i] = v;
        }
    float *out = job->out->data;
    for (int64_t c = begin; c < end; c += FLAT_CHUNK) {
        int64_t m = end - c < FLAT_CHUNK ? end - c : FLAT_CHUNK;
        const float *ptr[SB_PW_MAX_IN];
        for (int k = 0; k < job->nin; k++)
            ptr[k] = job->constant[k] ? cbuf[k] : (const float *)job->in[k].data + c;
        job->kernel(job->ctx, m, ptr, out + c);
    }
}

/* Rows [r0, r1) of the last dimension, each gathered/scattered in chunks
 * when not unit-stride (as sb_pw_run does, from any starting row). */
static void rows_range(void *vjob, int64_t r0, int64_t r1) {
    const pw_job *job = vjob;
    const sb_tensor *out = job->out;
    int nd = out->ndim, nin = job->nin;
    int64_t len = job->len;
    int64_t istr[SB_PW_MAX_IN], ostr = nd ? out->strides[nd - 1] : 0;
    for (int k = 0; k < nin; k++) istr[k] = nd ? job->in[k].strides[nd - 1] : 0;
    int64_t idx[SB_MAX_DIMS] = {0}, off[SB_PW_MAX_IN + 1] = {0};
    /* the odometer position of row r0 */
    int64_t rem = r0;
    for (int d = nd - 2; d >= 0; d--) {
        idx[d] = rem % out->shape[d];
        rem /= out->shape[d];
        for (int k = 0; k < nin; k++) off[k] += idx[d] * job->in[k].strides[d];
        off[nin] += idx[d] * out->strides[d];
    }
    float buf[SB_PW_MAX_IN][ROW_CHUNK], obuf[ROW_CHUNK];
    for (int64_t o = r0; o < r1; o++) {
        for (int64_t c = 0; c < len; c += ROW_CHUNK) {
            int64_t m = len - c < ROW_CHUNK ? len - c : ROW_CHUNK;
            const float *ptr[SB_PW_MAX_IN];
            for (int k = 0; k < nin; k++) {
                const float *base = (const float *)job->in[k].data + off[k] + c * istr[k];
                if (istr[k] == 1 || m == 1) {
                    ptr[k] = base;
                } else {
                    for (int64_t i = 0; i < m; i++) buf[k][i] = base[i * istr[k]];
                    ptr[k] = buf[k];
                }
            }
            float *obase = (float *)out->data + off[nin] + c * ostr;
            if (ostr == 1 || m == 1) {
                job->kernel(job->ctx, m, ptr, obase);
            } else {
                job->kernel(job->ctx, m, ptr, obuf);
                for (int64_t i = 0; i < m; i++) obase[i * ostr] = obuf[i];
            }
        }
        for (int d = nd - 2; d >= 0; d--) {
            if (++idx[d] < out->shape[d]) {
                for (int k = 0; k < nin; k++) off[k] += job->in[k].strides[d];
                off[nin] += out->strides[d];
                break;
            }
            idx[d] = 0;
            for (int k = 0; k < nin; k++) off[k] -= (out->shape[d] - 1) * job->in[k].strides[d];
            off[nin] -= (out->shape[d] - 1) * out->strides[d];
        }
    }
}

void sb_cpu_pw_run(int nin, const sb_tensor *in, sb_tensor *out, sb_pw_kernel kernel,
                   const void *ctx) {
    int64_t numel = sb_tensor_numel(out);
    if (numel == 0) return;
    pw_job job = {.nin = nin, .in = in, .out = out, .kernel = kernel, .ctx = ctx};
    bool flat = dense(out);
    for (int k = 0; k < nin; k++) {
        job.constant[k] = all_zero_strides(&in[k]);
        if (!job.constant[k] && !dense(&in[k])) flat = false;
    }
    if (flat) {
        sb_parallel_for(numel, sb_parallel_grain(numel, MIN_GRAIN), flat_range, &job);
        return;
    }
    int nd = out->ndim;
    job.len = nd ? out->shape[nd - 1] : 1;
    int64_t rows = numel / job.len;
    int64_t min_rows = MIN_GRAIN / job.len > 0 ? MIN_GRAIN / job.len : 1;
    sb_parallel_for(rows, sb_parallel_grain(rows, min_rows), rows_range, &job);
}

/* ---- kernels ------------------------------------------------------------------------ */

void sb_cpu_binary_kernel(const void *ctx, int64_t n, const float *const *in, float *out) {
    sb_kernels()->pointwise->binary(*(const sb_binary_op *)ctx, n, in[0], 1, in[1], 1, out);
}

void sb_cpu_unary_kernel(const void *ctx, int64_t n, const float *const *in, float *out) {
    sb_unary_op op = *(const sb_unary_op *)ctx;
    /* the batch functions are bit-identical to sb_expf, sb_logf, sb_sinf,
     * sb_cosf, sb_exp2f, sb_log2f (cpu/vmath.h) */
    switch (op) {
    case SB_UNARY_EXP: sb_cpu_expf_n(in[0], out, n); break;
    case SB_UNARY_LOG: sb_cpu_logf_n(in[0], out, n); break;
    case SB_UNARY_SIN: sb_cpu_sinf_n(in[0], out, n); break;
    case SB_UNARY_COS: sb_cpu_cosf_n(in[0], out, n); break;
    case SB_UNARY_EXP2: sb_cpu_exp2f_n(in[0], out, n); break;
    case SB_UNARY_LOG2: sb_cpu_log2f_n(in[0], out, n); break;
    default: sb_ref_unary(op, n, in[0], out); break;
    }
}

void sb_cpu_relu_forward(int64_t n, const float *x, float *y) {
    sb_kernels()->pointwise->relu_fwd(n, x, y);
}

void sb_cpu_relu_backward(int64_t n, const float *x, const float *dy, float *dx) {
    sb_kernels()->pointwise->relu_bwd(n, x, dy, dx);
}

void sb_cpu_piecewise_forward(sb_pwl_kind kind, int64_t n, const float *x, float p0, float p1,
                              float *y) {
    sb_kernels()->pointwise->piecewise_fwd(kind, n, x, p0, p1, y);
}

void sb_cpu_piecewise_backward(sb_pwl_kind kind, int64_t n, const float *x, const float *dy,
                               float p0, float p1, float *dx) {
    sb_kernels()->pointwise->piecewise_bwd(kind, n, x, dy, p0, p1, dx);
}
