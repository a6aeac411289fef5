/* src/ops/recurrent.c - the time loop of the recurrent layers
 * (include/samebits/recurrent.h; docs/CONTRACT.md, "Recurrent layers").
 *
 * Every step is the contract's sequence of public ops, called here on views
 * of the caller's tensors, so the bits are those ops' bits on any device and
 * ISA level; what this file adds is only the walk over the steps. Two
 * choices are about speed and change no bit:
 *   - The products by W_hh (and W_hr) run on copies made once per call,
 *     row-major (K, N) with rows a little more than N apart (`operand`):
 *     gh = h . W_hh^T is h times the copy of W_hh^T, the same chain over p of
 *     fmaf(h[p], W_hh[o][p]) as sb_linear_forward's, but the CPU's GEMM reads
 *     a few rows times a row-major (K, N) operand in place, where W_hh^T
 *     would be repacked at every step (costing more than the step's
 *     multiply-adds); rows 1 KB apart, or a multiple of it, would fall into
 *     a few cache sets, hence the padding.
 *   - The states are the caller's h_n / c_n (and dh0 / dc0 backward),
 *     updated in place step after step.
 *   - On the CPU a step runs as slices of its batch rows on the thread
 *     pool (over_slices): every op of a step is elementwise or a product
 *     row by row (a row's chains never read another row), so a slice's ops
 *     compute the bits of the whole step's on those rows. One pool job per
 *     step instead of a dozen ops each too small to split (an LSTM step of
 *     32 x 256 left the second thread idle for all but its product).
 * Validation is complete before anything is written. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include "samebits/elementwise.h"
#include "samebits/linalg.h"
#include "samebits/recurrent.h"
#include "core/checked.h"
#include "core/fpenv.h"
#include "cpu/cpu.h"
#include "ops/validate.h"

enum { MAX_RNN_TENSORS = 11 };

/* A right-hand matrix of the steps' products: (k, n) at data, rows ld apart. */
typedef struct operand {
    float *data;
    int64_t k, n, ld;
} operand;

/* One call: its sizes (recurrent.h's names), device and the right operands
 * of its products (forward: W_hh^T and W_hr^T; backward: W_hh and W_hr). */
typedef struct rnn_dims {
    const char *fn;
    const sb_backend *be;
    sb_rnn_mode mode;
    int gates, planes;
    int64_t R, N, H, P, GH;
    bool proj;
    operand w_step, w_proj;
} rnn_dims;

static int gates_of(sb_rnn_mode m) { return m == SB_RNN_LSTM ? 4 : m == SB_RNN_GRU ? 3 : 1; }
static int planes_of(sb_rnn_mode m) { return m == SB_RNN_LSTM ? 7 : m == SB_RNN_GRU ? 5 : 2; }

static sb_status check_mode(const char *fn, const sb_rnn_sequence *seq) {
    if (!seq) return sb_fail(SB_ERR_NULL, "%s: seq is NULL", fn);
    if ((int)seq->mode < (int)SB_RNN_TANH || (int)seq->mode > (int)SB_RNN_GRU)
        return sb_fail(SB_ERR_ARG, "%s: seq->mode = %d is not an sb_rnn_mode", fn, (int)seq->mode);
    return SB_OK;
}

/* The batch sizes against N, the rows of the state `nname`, and R, the rows
 * of the sequence `rname`. */
static sb_status check_batch_sizes(const char *fn, const sb_rnn_sequence *seq, int64_t N,
                                   const char *nname, int64_t R, const char *rname) {
    if (seq->steps < 0)
        return sb_fail(SB_ERR_ARG, "%s: seq->steps = %lld is negative", fn, (long long)seq->steps);
    if (seq->steps > 0 && !seq->batch_sizes)
        return sb_fail(SB_ERR_NULL, "%s: seq->batch_sizes is NULL with seq->steps = %lld", fn,
                       (long long)seq->steps);
    int64_t rows = 0;
    for (int64_t t = 0; t < seq->steps; t++) {
        /* every size is >= 1, so more steps than R rows fail here before
         * reading past the rows' worth of entries */
        if (rows >= R)
            return sb_fail(SB_ERR_SHAPE, "%s: step %lld of seq->steps = %lld starts after the last of the %lld rows of %s",
                           fn, (long long)t, (long long)seq->steps, (long long)R, rname);
        int64_t b = seq->batch_sizes[t], cap = t ? seq->batch_sizes[t - 1] : N;
        if (b < 1 || b > cap)
            return sb_fail(SB_ERR_RANGE, "%s: seq->batch_sizes[%lld] = %lld must be in [1, %lld] (%s%s)",
                           fn, (long long)t, (long long)b, (long long)cap,
                           t ? "batch sizes never increase" : "at most N, the rows of ",
                           t ? "" : nname);
        rows += b;
    }
    if (rows != R)
        return sb_fail(SB_ERR_SHAPE, "%s: seq->batch_sizes add up to %lld rows, but %s has R = %lld",
                       fn, (long long)rows, rname, (long long)R);
    return SB_OK;
}

/* A float32 contiguous tensor of exactly (ndim, shape): required, or
 * required to be NULL (`wanted` false, with `why` saying when it is used). */
static sb_status check_slot(const char *fn, const char *name, const sb_tensor *t, bool wanted,
                            const char *why, int ndim, const int64_t *shape) {
    if (!wanted) {
        if (t) return sb_fail(SB_ERR_ARG, "%s: %s must be NULL: %s", fn, name, why);
        return SB_OK;
    }
    if (!t) return sb_fail(SB_ERR_NULL, "%s: %s is NULL", fn, name);
    SB_TRY(sb_check_dense(fn, name, t, ndim, ndim));
    return sb_expect_shape(fn, name, t, ndim, shape);
}

/* H and P from w_hh (G*H, P) and w_hr (P, H) or NULL; N from the state
 * `state0` (N, P) and R from `rows_of` (R, .). Headers are checked first. */
static sb_status plan_dims(const char *fn, const sb_rnn_sequence *seq, const sb_tensor *w_hh,
                           const sb_tensor *w_hr, const char *state_name,
                           const sb_tensor *state0, const char *rows_name,
                           const sb_tensor *rows_of, rnn_dims *d) {
    SB_TRY(check_mode(fn, seq));
    d->mode = seq->mode;
    d->gates = gates_of(seq->mode);
    d->planes = planes_of(seq->mode);
    if (!w_hh) return sb_fail(SB_ERR_NULL, "%s: w_hh is NULL", fn);
    SB_TRY(sb_check_dense(fn, "w_hh", w_hh, 2, 2));
    if (w_hh->shape[0] % d->gates != 0)
        return sb_fail(SB_ERR_SHAPE, "%s: w_hh has %lld rows, not a multiple of the %d gates of the mode",
                       fn, (long long)w_hh->shape[0], d->gates);
    d->GH = w_hh->shape[0];
    d->H = d->GH / d->gates;
    d->P = w_hh->shape[1];
    d->proj = w_hr != NULL;
    if (d->proj) {
        if (seq->mode != SB_RNN_LSTM)
            return sb_fail(SB_ERR_ARG, "%s: w_hr must be NULL: only the LSTM has a projection", fn);
        SB_TRY(check_slot(fn, "w_hr", w_hr, true, NULL, 2, (int64_t[]){d->P, d->H}));
    } else if (d->P != d->H) {
        return sb_fail(SB_ERR_SHAPE, "%s: w_hh has %lld columns but the hidden size is %lld (a state wider or narrower than H needs w_hr)",
                       fn, (long long)d->P, (long long)d->H);
    }
    if (!state0) return sb_fail(SB_ERR_NULL, "%s: %s is NULL", fn, state_name);
    SB_TRY(sb_check_dense(fn, state_name, state0, 2, 2));
    if (!rows_of) return sb_fail(SB_ERR_NULL, "%s: %s is NULL", fn, rows_name);
    SB_TRY(sb_check_dense(fn, rows_name, rows_of, 2, 2));
    d->N = state0->shape[0];
    d->R = rows_of->shape[0];
    SB_TRY(sb_expect_shape(fn, state_name, state0, 2, (int64_t[]){d->N, d->P}));
    return check_batch_sizes(fn, seq, d->N, state_name, d->R, rows_name);
}

/* The tensors of either call, inputs first: RNN_INPUTS inputs, then the
 * outputs. Every output against every other argument, by name. */
enum { RNN_INPUTS = 6 };

static sb_status check_outputs_apart(const char *fn, const sb_tensor *const *all,
                                     const char *const *names) {
    for (int k = RNN_INPUTS; k < MAX_RNN_TENSORS; k++) {
        if (!all[k]) continue;
        for (int j = 0; j < MAX_RNN_TENSORS; j++)
            if (j != k) SB_TRY(sb_check_no_alias(fn, names[k], all[k], names[j], all[j]));
    }
    return SB_OK;
}

/* ---- views ---- */

/* rows x cols floats at `data`, rows `ld` apart, on t's device. */
static sb_tensor mat(const sb_tensor *t, float *data, int64_t rows, int64_t cols, int64_t ld) {
    sb_tensor v = {.dtype = SB_F32, .device = t->device, .ndim = 2};
    v.shape[0] = rows;
    v.shape[1] = cols;
    v.strides[0] = ld;
    v.strides[1] = 1;
    v.data = data;
    return v;
}

static float *f32(const sb_tensor *t) { return (float *)t->data; }

/* Rows [r0, r0 + b) of a contiguous (., cols) tensor, columns [c0, c0 + w). */
static sb_tensor block(const sb_tensor *t, int64_t r0, int64_t b, int64_t c0, int64_t w) {
    int64_t cols = t->shape[t->ndim - 1];
    return mat(t, f32(t) + r0 * cols + c0, b, w, cols);
}
static sb_tensor rows(const sb_tensor *t, int64_t r0, int64_t b) {
    return block(t, r0, b, 0, t->shape[t->ndim - 1]);
}
/* Rows [r0, r0 + b) of plane k of saved (K, R, H). */
static sb_tensor plane(const sb_tensor *saved, int k, int64_t r0, int64_t b) {
    int64_t R = saved->shape[1], H = saved->shape[2];
    return mat(saved, f32(saved) + ((int64_t)k * R + r0) * H, b, H, H);
}

/* ---- scratch on the tensors' device ---- */

typedef struct scratch {
    sb_tensor *t;
    int64_t used, size;
} scratch;

static sb_status scratch_new(const char *fn, scratch *s, sb_device device, int64_t floats) {
    s->used = 0;
    s->size = floats;
    int64_t n = floats > 0 ? floats : 1;
    sb_status st = sb_tensor_new_on(&s->t, device, SB_F32, 1, &n);
    if (st != SB_OK) return sb_fail(st, "%s: no memory for %lld floats of scratch: %s", fn,
                                    (long long)floats, sb_last_error());
    return SB_OK;
}

/* A (rows, cols) contiguous matrix carved from s (sized for it by the caller). */
static sb_tensor carve(scratch *s, int64_t rows, int64_t cols) {
    sb_tensor v = mat(s->t, f32(s->t) + s->used, rows, cols, cols);
    s->used += rows * cols;
    return v;
}

/* count matrices of (rows, cols) and the rest, overflow-checked. */
static sb_status scratch_floats(const char *fn, const int64_t (*mats)[2], int count,
                                int64_t *floats) {
    int64_t total = 0, n;
    for (int k = 0; k < count; k++)
        if (!sb_checked_mul(mats[k][0], mats[k][1], &n) || !sb_checked_add(total, n, &total))
            return sb_fail(SB_ERR_SHAPE, "%s: the scratch size overflows", fn);
    *floats = total;
    return SB_OK;
}

/* n floats rounded up to 64 bytes, plus 64 bytes when that is a multiple of 1 KB. */
static int64_t padded_ld(int64_t n) {
    int64_t ld = (n + 15) / 16 * 16;
    return ld % 256 == 0 ? ld + 16 : ld;
}

/* The scratch size of w's copy (w^T's when transpose; none for NULL). */
static void operand_size(const sb_tensor *w, bool transpose, int64_t size[2]) {
    size[0] = w ? w->shape[transpose ? 1 : 0] : 0;
    size[1] = w ? padded_ld(w->shape[transpose ? 0 : 1]) : 0;
}

/* The copy of the contiguous 2-D w (or w^T) carved from s. */
static sb_status operand_copy(scratch *s, const sb_tensor *w, bool transpose, operand *op) {
    int64_t r = w->shape[0], c = w->shape[1];
    op->k = transpose ? c : r;
    op->n = transpose ? r : c;
    op->ld = padded_ld(op->n);
    op->data = f32(s->t) + s->used;
    s->used += op->k * op->ld;
    sb_tensor src = mat(w, f32(w), op->k, op->n, transpose ? 1 : c);
    src.strides[1] = transpose ? c : 1;
    sb_tensor dst = mat(s->t, op->data, op->k, op->n, op->ld);
    return sb_tensor_copy(&dst, &src);
}

/* The call's scratch on the tensors' device: the copies of W_hh and (with
 * a projection) W_hr first, transposed for the forward (d->w_step,
 * d->w_proj), then room for the `count` matrices of `extra`, which the
 * caller carves in that order. */
static sb_status rnn_scratch(rnn_dims *d, const sb_tensor *w_hh, const sb_tensor *w_hr,
                             bool transpose, const int64_t (*extra)[2], int count, scratch *s) {
    enum { EXTRA_MAX = 5 };
    int64_t sizes[2 + EXTRA_MAX][2];
    int n = count < EXTRA_MAX ? count : EXTRA_MAX;
    operand_size(w_hh, transpose, sizes[0]);
    operand_size(w_hr, transpose, sizes[1]);
    memcpy(sizes + 2, extra, (size_t)n * sizeof *sizes);
    int64_t floats = 0;
    SB_TRY(scratch_floats(d->fn, (const int64_t (*)[2])sizes, 2 + n, &floats));
    SB_TRY(scratch_new(d->fn, s, w_hh->device, floats));
    sb_status st = operand_copy(s, w_hh, transpose, &d->w_step);
    if (st == SB_OK && d->proj) st = operand_copy(s, w_hr, transpose, &d->w_proj);
    if (st != SB_OK) sb_tensor_free(s->t);
    return st;
}

/* out (b, n) = a (b, k) . op, both contiguous: the GEMM chain over p = 0..k-1
 * ascending from +0 (sb_matmul's). */
static sb_status times(const rnn_dims *d, const sb_tensor *a, const operand *op,
                       sb_tensor *out) {
    return SB_BACKEND_RUN(d->fn, d->be, sgemm, 'N', 'N', a->shape[0], op->n, op->k, f32(a),
                          op->k > 1 ? op->k : 1, op->data, op->ld > 1 ? op->ld : 1, f32(out),
                          op->n > 1 ? op->n : 1, false);
}

/* A walk over the steps, t ascending or descending: step by step, its t,
 * batch size and first packed row. */
typedef struct walk {
    const sb_rnn_sequence *seq;
    bool descending;
    int64_t done, cursor; /* steps walked; rows before (ascending) or from (descending) */
} walk;

static walk walk_start(const sb_rnn_sequence *seq, bool descending, int64_t R) {
    return (walk){seq, descending, 0, descending ? R : 0};
}

static bool walk_next(walk *w, int64_t *r0, int64_t *b) {
    if (w->done == w->seq->steps) return false;
    int64_t t = w->descending ? w->seq->steps - 1 - w->done : w->done;
    w->done++;
    *b = w->seq->batch_sizes[t];
    if (w->descending) {
        w->cursor -= *b;
        *r0 = w->cursor;
    } else {
        *r0 = w->cursor;
        w->cursor += *b;
    }
    return true;
}

/* ---- steps in row slices ---- */

/* Elements (rows x gates x H) a slice should have at least: below it a
 * slice costs more to hand out than to compute. */
enum { SLICE_MIN_ELEMENTS = 4096 };

/* Computes rows [q0, q0 + q) of a step of b rows. */
typedef sb_status (*slice_fn)(const void *ctx, int64_t q0, int64_t q);

typedef struct slices {
    slice_fn fn;
    const void *ctx;
    atomic_int failed;   /* 0, or 1 once the first failure's status and message are kept */
    sb_status status;
    char message[256];
} slices;

static void slices_range(void *vctx, int64_t q0, int64_t q1) {
    slices *s = vctx;
    sb_status st = s->fn(s->ctx, q0, q1 - q0);
    int none = 0;
    if (st != SB_OK && atomic_compare_exchange_strong(&s->failed, &none, 1)) {
        s->status = st;
        snprintf(s->message, sizeof s->message, "%s", sb_last_error());
    }
}

/* fn over the step's b rows: on the CPU as slices over the thread pool
 * (a failure's message is carried back to this thread), elsewhere whole. */
static sb_status over_slices(const rnn_dims *d, int64_t b, slice_fn fn, const void *ctx) {
    int64_t threads = sb_num_threads(), min_rows = SLICE_MIN_ELEMENTS / (d->GH > 0 ? d->GH : 1);
    if (d->be->device != SB_DEVICE_CPU || threads < 2 || b < 2 * (min_rows > 1 ? min_rows : 1))
        return fn(ctx, 0, b);
    int64_t grain = (b + threads - 1) / threads;
    slices s = {.fn = fn, .ctx = ctx};
    atomic_init(&s.failed, 0);
    sb_parallel_for(b, grain > min_rows ? grain : min_rows, slices_range, &s);
    if (atomic_load(&s.failed)) return sb_fail(s.status, "%s", s.message);
    return SB_OK;
}

/* ---- forward ---- */

/* Rows of one step: b rows at packed rows r0, their planes at rows rs of
 * saved and their states at rows s0 of h_n and c_n; hp is the state before
 * the step, gh (b, G*H) already h . W_hh^T (+ b_hh). */
static sb_status step_forward(const rnn_dims *d, const sb_tensor *gx, sb_tensor *gh,
                              const sb_tensor *hp, sb_tensor *y,
                              sb_tensor *h_n, sb_tensor *c_n, sb_tensor *saved, sb_tensor *t1,
                              sb_tensor *t2, int64_t rs, int64_t r0, int64_t s0, int64_t b) {
    int64_t H = d->H;
    sb_tensor x_rows = rows(gx, r0, b), y_rows = rows(y, r0, b), h_state = rows(h_n, s0, b);
    switch (d->mode) {
    case SB_RNN_TANH:
    case SB_RNN_RELU: {
        sb_tensor pre = plane(saved, 0, rs, b), h = plane(saved, 1, rs, b);
        SB_TRY(sb_add(&x_rows, gh, &pre));
        SB_TRY(d->mode == SB_RNN_TANH ? sb_tanh_forward(&pre, &h) : sb_relu_forward(&pre, &h));
        SB_TRY(sb_tensor_copy(&y_rows, &h));
        break;
    }
    case SB_RNN_LSTM: {
        sb_tensor i = plane(saved, 0, rs, b), f = plane(saved, 1, rs, b), g = plane(saved, 2, rs, b);
        sb_tensor o = plane(saved, 3, rs, b), cp = plane(saved, 4, rs, b);
        sb_tensor tc = plane(saved, 5, rs, b), m = plane(saved, 6, rs, b);
        sb_tensor c_state = rows(c_n, s0, b);
        SB_TRY(sb_add(&x_rows, gh, gh)); /* a = gx + gh */
        sb_tensor a_i = block(gh, 0, b, 0, H), a_f = block(gh, 0, b, H, H);
        sb_tensor a_g = block(gh, 0, b, 2 * H, H), a_o = block(gh, 0, b, 3 * H, H);
        SB_TRY(sb_sigmoid_forward(&a_i, &i));
        SB_TRY(sb_sigmoid_forward(&a_f, &f));
        SB_TRY(sb_tanh_forward(&a_g, &g));
        SB_TRY(sb_sigmoid_forward(&a_o, &o));
        SB_TRY(sb_tensor_copy(&cp, &c_state));
        SB_TRY(sb_mul(&f, &cp, t1));
        SB_TRY(sb_mul(&i, &g, t2));
        SB_TRY(sb_add(t1, t2, &c_state));
        SB_TRY(sb_tanh_forward(&c_state, &tc));
        SB_TRY(sb_mul(&o, &tc, &m));
        if (d->proj)
            SB_TRY(times(d, &m, &d->w_proj, &y_rows));
        else
            SB_TRY(sb_tensor_copy(&y_rows, &m));
        break;
    }
    case SB_RNN_GRU: {
        sb_tensor r = plane(saved, 0, rs, b), z = plane(saved, 1, rs, b), n = plane(saved, 2, rs, b);
        sb_tensor ghn = plane(saved, 3, rs, b), a = plane(saved, 4, rs, b);
        sb_tensor x_r = block(gx, r0, b, 0, H), x_z = block(gx, r0, b, H, H);
        sb_tensor x_n = block(gx, r0, b, 2 * H, H);
        sb_tensor h_r = block(gh, 0, b, 0, H), h_z = block(gh, 0, b, H, H);
        sb_tensor h_n_gate = block(gh, 0, b, 2 * H, H);
        SB_TRY(sb_add(&x_r, &h_r, t1));
        SB_TRY(sb_sigmoid_forward(t1, &r));
        SB_TRY(sb_add(&x_z, &h_z, t1));
        SB_TRY(sb_sigmoid_forward(t1, &z));
        SB_TRY(sb_tensor_copy(&ghn, &h_n_gate));
        SB_TRY(sb_mul(&r, &ghn, t1));
        SB_TRY(sb_add(&x_n, t1, t2));
        SB_TRY(sb_tanh_forward(t2, &n));
        SB_TRY(sb_sub(hp, &n, &a));
        SB_TRY(sb_mul(&a, &z, t1));
        SB_TRY(sb_add(t1, &n, &y_rows));
        break;
    }
    }
    return sb_tensor_copy(&h_state, &y_rows);
}

/* A forward step (packed rows r0..) and the buffers its slices share. */
typedef struct fwd_step {
    const rnn_dims *d;
    const sb_tensor *gx, *b_hh;
    sb_tensor *h_prev, *h_step, *gh_all, *t1_all, *t2_all, *y, *h_n, *c_n, *saved;
    bool keep;
    int64_t r0;
} fwd_step;

/* Rows [q0, q0 + q) of the step: h_prev = h, gh = h . W_hh^T (+ b_hh), the
 * mode's ops. */
static sb_status fwd_slice(const void *vctx, int64_t q0, int64_t q) {
    const fwd_step *s = vctx;
    const rnn_dims *d = s->d;
    int64_t r0 = s->r0 + q0;
    sb_tensor hp = s->keep ? rows(s->h_prev, r0, q) : rows(s->h_step, q0, q);
    sb_tensor h_state = rows(s->h_n, q0, q), gh = rows(s->gh_all, q0, q);
    sb_tensor t1 = rows(s->t1_all, q0, q), t2 = rows(s->t2_all, q0, q);
    SB_TRY(sb_tensor_copy(&hp, &h_state));
    SB_TRY(times(d, &hp, &d->w_step, &gh));
    if (s->b_hh) SB_TRY(sb_add(&gh, s->b_hh, &gh));
    return step_forward(d, s->gx, &gh, &hp, s->y, s->h_n, s->c_n, s->saved, &t1, &t2,
                        s->keep ? r0 : q0, r0, q0, q);
}

sb_status sb_rnn_forward(const sb_rnn_sequence *seq, const sb_tensor *gx, const sb_tensor *h0,
                         const sb_tensor *c0, const sb_tensor *w_hh, const sb_tensor *b_hh,
                         const sb_tensor *w_hr, sb_tensor *y, sb_tensor *h_n, sb_tensor *c_n,
                         sb_tensor *h_prev, sb_tensor *saved) {
    SB_FPENV_GUARD();
    const char *fn = "sb_rnn_forward";
    rnn_dims d = {0};
    SB_TRY(plan_dims(fn, seq, w_hh, w_hr, "h0", h0, "gx", gx, &d));
    bool lstm = d.mode == SB_RNN_LSTM;
    const char *lstm_only = "only the LSTM has a cell state";
    SB_TRY(check_slot(fn, "gx", gx, true, NULL, 2, (int64_t[]){d.R, d.GH}));
    SB_TRY(check_slot(fn, "c0", c0, lstm, lstm_only, 2, (int64_t[]){d.N, d.H}));
    if (b_hh) SB_TRY(check_slot(fn, "b_hh", b_hh, true, NULL, 1, &d.GH));
    SB_TRY(check_slot(fn, "y", y, true, NULL, 2, (int64_t[]){d.R, d.P}));
    SB_TRY(check_slot(fn, "h_n", h_n, true, NULL, 2, (int64_t[]){d.N, d.P}));
    SB_TRY(check_slot(fn, "c_n", c_n, lstm, lstm_only, 2, (int64_t[]){d.N, d.H}));
    /* both (for a backward) or neither (inference) */
    bool keep = h_prev || saved;
    const char *inference = "h_prev and saved are both given (for a backward) or both NULL";
    SB_TRY(check_slot(fn, "h_prev", h_prev, keep, inference, 2, (int64_t[]){d.R, d.P}));
    SB_TRY(check_slot(fn, "saved", saved, keep, inference, 3, (int64_t[]){d.planes, d.R, d.H}));
    const sb_tensor *all[MAX_RNN_TENSORS] = {gx, h0, c0, w_hh, b_hh, w_hr, y, h_n, c_n, h_prev, saved};
    const char *names[MAX_RNN_TENSORS] = {"gx", "h0", "c0", "w_hh", "b_hh", "w_hr",
                                          "y", "h_n", "c_n", "h_prev", "saved"};
    SB_TRY(check_outputs_apart(fn, all, names));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, gx, h0, c0, w_hh, b_hh, w_hr, y, h_n, c_n, h_prev, saved));

    d.fn = fn;
    d.be = be;

    /* scratch: W_hh^T, W_hr^T, then gh (N, G*H), t1 and t2 (N, H); without
     * h_prev and saved, the step's h (N, P) and planes (K, N, H) */
    const int64_t extra[5][2] = {{d.N, d.GH}, {d.N, d.H}, {d.N, d.H}, {keep ? 0 : d.N, d.P},
                                 {keep ? 0 : d.planes * d.N, d.H}};
    scratch s;
    SB_TRY(rnn_scratch(&d, w_hh, w_hr, true, extra, 5, &s));
    sb_status st = SB_OK;
    sb_tensor gh_all = carve(&s, d.N, d.GH), t1_all = carve(&s, d.N, d.H), t2_all = carve(&s, d.N, d.H);
    /* Inference keeps one step's planes: rows 0..b-1 of (K, N, H) */
    sb_tensor h_step = carve(&s, keep ? 0 : d.N, d.P), planes = carve(&s, keep ? 0 : d.planes * d.N, d.H);
    planes.ndim = 3;
    planes.shape[0] = d.planes;
    planes.shape[1] = keep ? 0 : d.N;
    planes.shape[2] = d.H;
    if (st == SB_OK) st = sb_tensor_copy(h_n, h0);
    if (st == SB_OK && lstm) st = sb_tensor_copy(c_n, c0);
    walk w = walk_start(seq, seq->reverse, d.R);
    fwd_step step = {&d, gx, b_hh, h_prev, &h_step, &gh_all, &t1_all, &t2_all, y, h_n, c_n,
                     keep ? saved : &planes, keep, 0};
    int64_t b;
    while (st == SB_OK && walk_next(&w, &step.r0, &b)) st = over_slices(&d, b, fwd_slice, &step);
    sb_tensor_free(s.t);
    return st;
}

/* ---- backward ---- */

/* Temporaries of one backward step, each (b, H) (dh: (b, P)). */
typedef struct step_tmp {
    sb_tensor dh, dm, dc, t1, t2;
} step_tmp;

/* One step's gradients for b of its rows, at packed rows r0 and state rows
 * s0, from tmp->dh = dy_t + dh_s: writes dgx's (and the GRU's dgh's) rows
 * and the carried state gradients (those rows of dh0 / dc0). */
static sb_status step_backward(const rnn_dims *d, const sb_tensor *saved, sb_tensor *dgx, sb_tensor *dgh,
                               sb_tensor *dh0, sb_tensor *dc0, step_tmp *x, int64_t r0,
                               int64_t s0, int64_t b) {
    int64_t H = d->H;
    sb_tensor dgx_rows = rows(dgx, r0, b), dh_state = rows(dh0, s0, b);
    switch (d->mode) {
    case SB_RNN_TANH:
    case SB_RNN_RELU: {
        sb_tensor pre = plane(saved, 0, r0, b), h = plane(saved, 1, r0, b);
        SB_TRY(d->mode == SB_RNN_TANH ? sb_tanh_backward(&h, &x->dh, &dgx_rows)
                                      : sb_relu_backward(&pre, &x->dh, &dgx_rows));
        return times(d, &dgx_rows, &d->w_step, &dh_state);
    }
    case SB_RNN_LSTM: {
        sb_tensor i = plane(saved, 0, r0, b), f = plane(saved, 1, r0, b), g = plane(saved, 2, r0, b);
        sb_tensor o = plane(saved, 3, r0, b), cp = plane(saved, 4, r0, b);
        sb_tensor tc = plane(saved, 5, r0, b), dc_state = rows(dc0, s0, b);
        sb_tensor d_i = block(dgx, r0, b, 0, H), d_f = block(dgx, r0, b, H, H);
        sb_tensor d_g = block(dgx, r0, b, 2 * H, H), d_o = block(dgx, r0, b, 3 * H, H);
        const sb_tensor *dm = &x->dh;
        if (d->proj) {
            SB_TRY(times(d, &x->dh, &d->w_proj, &x->dm));
            dm = &x->dm;
        }
        SB_TRY(sb_mul(dm, &tc, &x->t1));
        SB_TRY(sb_sigmoid_backward(&o, &x->t1, &d_o));
        SB_TRY(sb_mul(dm, &o, &x->t1));
        SB_TRY(sb_tanh_backward(&tc, &x->t1, &x->t2));
        SB_TRY(sb_add(&x->t2, &dc_state, &x->dc));
        SB_TRY(sb_mul(&x->dc, &g, &x->t1));
        SB_TRY(sb_sigmoid_backward(&i, &x->t1, &d_i));
        SB_TRY(sb_mul(&x->dc, &cp, &x->t1));
        SB_TRY(sb_sigmoid_backward(&f, &x->t1, &d_f));
        SB_TRY(sb_mul(&x->dc, &i, &x->t1));
        SB_TRY(sb_tanh_backward(&g, &x->t1, &d_g));
        SB_TRY(times(d, &dgx_rows, &d->w_step, &dh_state));
        return sb_mul(&x->dc, &f, &dc_state);
    }
    case SB_RNN_GRU: {
        sb_tensor r = plane(saved, 0, r0, b), z = plane(saved, 1, r0, b), n = plane(saved, 2, r0, b);
        sb_tensor ghn = plane(saved, 3, r0, b), a = plane(saved, 4, r0, b);
        sb_tensor d_r = block(dgx, r0, b, 0, H), d_z = block(dgx, r0, b, H, H);
        sb_tensor d_n = block(dgx, r0, b, 2 * H, H);
        sb_tensor dgh_rz = block(dgh, r0, b, 0, 2 * H), dgx_rz = block(dgx, r0, b, 0, 2 * H);
        sb_tensor dgh_n = block(dgh, r0, b, 2 * H, H), dgh_rows = rows(dgh, r0, b);
        sb_tensor *dd = &x->dc; /* dh * z */
        SB_TRY(sb_mul(&x->dh, &z, dd));
        SB_TRY(sb_mul(&x->dh, &a, &x->t1)); /* dz */
        SB_TRY(sb_sub(&x->dh, dd, &x->t2));
        SB_TRY(sb_tanh_backward(&n, &x->t2, &d_n));
        SB_TRY(sb_mul(&d_n, &ghn, &x->t2)); /* dr */
        SB_TRY(sb_sigmoid_backward(&r, &x->t2, &d_r));
        SB_TRY(sb_sigmoid_backward(&z, &x->t1, &d_z));
        SB_TRY(sb_tensor_copy(&dgh_rz, &dgx_rz));
        SB_TRY(sb_mul(&d_n, &r, &dgh_n));
        SB_TRY(times(d, &dgh_rows, &d->w_step, &x->t1));
        return sb_add(dd, &x->t1, &dh_state);
    }
    }
    return SB_OK;
}

/* A backward step (packed rows r0..) and the buffers its slices share. */
typedef struct bwd_step {
    const rnn_dims *d;
    const sb_tensor *saved, *dy;
    sb_tensor *dgx, *dgh, *dh_all, *dh_all_s, *dm_all, *dc_all, *t1_all, *t2_all, *dh0, *dc0;
    int64_t r0;
} bwd_step;

/* Rows [q0, q0 + q) of the step: dh = dy_t + dh_s, then the mode's
 * gradients. */
static sb_status bwd_slice(const void *vctx, int64_t q0, int64_t q) {
    const bwd_step *s = vctx;
    int64_t r0 = s->r0 + q0;
    step_tmp x = {s->dh_all ? rows(s->dh_all, r0, q) : rows(s->dh_all_s, q0, q),
                  rows(s->dm_all, q0, q), rows(s->dc_all, q0, q), rows(s->t1_all, q0, q),
                  rows(s->t2_all, q0, q)};
    sb_tensor dy_rows = rows(s->dy, r0, q), dh_state = rows(s->dh0, q0, q);
    SB_TRY(sb_add(&dy_rows, &dh_state, &x.dh));
    return step_backward(s->d, s->saved, s->dgx, s->dgh, s->dh0, s->dc0, &x, r0, q0, q);
}

sb_status sb_rnn_backward(const sb_rnn_sequence *seq, const sb_tensor *w_hh, const sb_tensor *w_hr,
                          const sb_tensor *saved, const sb_tensor *dy, const sb_tensor *dh_n,
                          const sb_tensor *dc_n, sb_tensor *dgx, sb_tensor *dgh,
                          sb_tensor *dh_all, sb_tensor *dh0, sb_tensor *dc0) {
    SB_FPENV_GUARD();
    const char *fn = "sb_rnn_backward";
    rnn_dims d = {0};
    SB_TRY(plan_dims(fn, seq, w_hh, w_hr, "dh_n", dh_n, "dy", dy, &d));
    bool lstm = d.mode == SB_RNN_LSTM, gru = d.mode == SB_RNN_GRU;
    const char *lstm_only = "only the LSTM has a cell state";
    SB_TRY(check_slot(fn, "saved", saved, true, NULL, 3, (int64_t[]){d.planes, d.R, d.H}));
    SB_TRY(check_slot(fn, "dy", dy, true, NULL, 2, (int64_t[]){d.R, d.P}));
    SB_TRY(check_slot(fn, "dc_n", dc_n, lstm, lstm_only, 2, (int64_t[]){d.N, d.H}));
    SB_TRY(check_slot(fn, "dgx", dgx, true, NULL, 2, (int64_t[]){d.R, d.GH}));
    SB_TRY(check_slot(fn, "dgh", dgh, gru, "only the GRU's gh gradient differs from dgx", 2,
                      (int64_t[]){d.R, d.GH}));
    if (dh_all) SB_TRY(check_slot(fn, "dh_all", dh_all, true, NULL, 2, (int64_t[]){d.R, d.P}));
    SB_TRY(check_slot(fn, "dh0", dh0, true, NULL, 2, (int64_t[]){d.N, d.P}));
    SB_TRY(check_slot(fn, "dc0", dc0, lstm, lstm_only, 2, (int64_t[]){d.N, d.H}));
    const sb_tensor *all[MAX_RNN_TENSORS] = {w_hh, w_hr, saved, dy, dh_n, dc_n,
                                             dgx, dgh, dh_all, dh0, dc0};
    const char *names[MAX_RNN_TENSORS] = {"w_hh", "w_hr", "saved", "dy", "dh_n", "dc_n",
                                          "dgx", "dgh", "dh_all", "dh0", "dc0"};
    SB_TRY(check_outputs_apart(fn, all, names));
    const sb_backend *be;
    SB_TRY(SB_OPS_BACKEND(fn, &be, w_hh, w_hr, saved, dy, dh_n, dc_n, dgx, dgh, dh_all, dh0, dc0));
    d.fn = fn;
    d.be = be;

    /* scratch: W_hh, W_hr, then dh (N, P) unless dh_all holds it; dm, dc,
     * t1, t2 (N, H) */
    const int64_t extra[5][2] = {{dh_all ? 0 : d.N, d.P}, {d.N, d.H}, {d.N, d.H}, {d.N, d.H},
                                 {d.N, d.H}};
    scratch s;
    SB_TRY(rnn_scratch(&d, w_hh, w_hr, false, extra, 5, &s));
    sb_status st = SB_OK;
    sb_tensor dh_all_s = carve(&s, dh_all ? 0 : d.N, d.P), dm_all = carve(&s, d.N, d.H);
    sb_tensor dc_all = carve(&s, d.N, d.H), t1_all = carve(&s, d.N, d.H), t2_all = carve(&s, d.N, d.H);
    if (st == SB_OK) st = sb_tensor_copy(dh0, dh_n);
    if (st == SB_OK && lstm) st = sb_tensor_copy(dc0, dc_n);
    walk w = walk_start(seq, !seq->reverse, d.R);
    bwd_step step = {&d, saved, dy, dgx, dgh, dh_all, &dh_all_s, &dm_all, &dc_all, &t1_all,
                     &t2_all, dh0, dc0, 0};
    int64_t b;
    while (st == SB_OK && walk_next(&w, &step.r0, &b)) st = over_slices(&d, b, bwd_slice, &step);
    sb_tensor_free(s.t);
    return st;
}
