/* The floating-point environment guard (src/core/fpenv.h): a caller that has
 * changed the rounding mode (fesetround) or set flush-to-zero /
 * denormals-are-zero (MXCSR on x86, FPCR.FZ on aarch64) must get exactly
 * the bits it would get in the default environment, and must find its own
 * environment unchanged when samebits returns.
 *
 * A spread of public ops (correctly rounded math on hard inputs, GEMM,
 * the canonical sum, conv2d forward/backward, softmax and cross-entropy,
 * an Adam step, batch norm, the normal generator) runs on inputs full of
 * subnormals and on values whose rounding differs between modes, first in
 * the default environment and then under each foreign environment, for
 * every ISA level this build supports and with 1 and 3 threads. Every
 * output is compared bit for bit.
 *
 * The inputs are chosen so that the test fails without the guard: a sum of
 * subnormals is +0 under DAZ, products below 2^-126 vanish under FTZ, and
 * almost every rounding differs under directed rounding. (Checked by
 * building with SB_FPENV_GUARD defined as nothing: every foreign mode
 * fails.)
 *
 * This file uses only samebits.h and libc, so the portability matrix
 * (scripts/portability.sh) also builds and runs it for cross targets. */
#include <fenv.h>
#include <math.h>
#include "harness.h"

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE2_MATH__))
#include <xmmintrin.h>
#define HAVE_MXCSR 1
#define MXCSR_DAZ 0x0040u
#define MXCSR_FTZ 0x8000u
#define MXCSR_FLAGS 0x3fu
#else
#define HAVE_MXCSR 0
#endif
#if defined(__aarch64__)
#define HAVE_FPCR 1
#define FPCR_FZ (1ull << 24)
#else
#define HAVE_FPCR 0
#endif

/* ---- environments ---- */

enum { FLUSH_FTZ = 1, FLUSH_DAZ = 2 };

typedef struct env_mode {
    const char *name;
    int round;    /* a FE_* rounding mode */
    int flush;    /* FLUSH_* bits */
} env_mode;

/* The control state a caller can observe: rounding mode and the control
 * register without its sticky exception flags. */
typedef struct env_state {
    int round;
    uint64_t ctrl;
} env_state;

#if HAVE_FPCR
static uint64_t fpcr_read(void) {
    uint64_t v;
    __asm__ volatile("mrs %0, fpcr" : "=r"(v) : : "memory");
    return v;
}
static void fpcr_write(uint64_t v) { __asm__ volatile("msr fpcr, %0" : : "r"(v) : "memory"); }
#endif

static env_state env_get(void) {
    env_state s = {fegetround(), 0};
#if HAVE_MXCSR
    s.ctrl = _mm_getcsr() & ~MXCSR_FLAGS;
#elif HAVE_FPCR
    s.ctrl = fpcr_read();
#endif
    return s;
}

/* Whether this machine can express the mode at all. */
static int env_supported(const env_mode *m) {
#if HAVE_MXCSR
    (void)m;
    return 1;
#elif HAVE_FPCR
    return !(m->flush & FLUSH_DAZ); /* FPCR.FZ flushes inputs and outputs */
#else
    return m->flush == 0;
#endif
}

/* Returns 0 when the mode could not be installed. */
static int env_set(const env_mode *m) {
    if (fesetround(m->round) != 0) return 0;
#if HAVE_MXCSR
    unsigned csr = _mm_getcsr();
    if (m->flush & FLUSH_FTZ) csr |= MXCSR_FTZ;
    if (m->flush & FLUSH_DAZ) csr |= MXCSR_DAZ;
    _mm_setcsr(csr);
#elif HAVE_FPCR
    if (m->flush & FLUSH_FTZ) fpcr_write(fpcr_read() | FPCR_FZ);
#endif
    return 1;
}

static void env_reset(void) {
    fesetround(FE_TONEAREST);
#if HAVE_MXCSR
    _mm_setcsr(0x1f80u | (_mm_getcsr() & MXCSR_FLAGS));
#elif HAVE_FPCR
    fpcr_write(0);
#endif
}

/* ---- inputs and outputs ---- */

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static uint64_t rng_next(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}
/* Uniform in [-1, 1) with 24 random bits: exact in float. */
static float urand(void) { return (float)(rng_next() >> 40) * 0x1p-23f - 1.0f; }
static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
/* A value that makes environments disagree: mostly ordinary values with
 * full 24-bit significands (directed rounding changes their products and
 * sums), with subnormals (DAZ) and values around 2^-64 whose products are
 * subnormal (FTZ) mixed in. */
static float hard_value(void) {
    uint64_t r = rng_next();
    switch (r % 8) {
    case 0: return from_bits((uint32_t)(r >> 32) & 0x807fffffu); /* subnormal or zero */
    case 1: return urand() * 0x1p-64f;
    default: return urand();
    }
}

static sb_tensor *mk(sb_dtype dt, int ndim, const int64_t *shape) {
    sb_tensor *t = NULL;
    if (sb_tensor_new(&t, dt, ndim, shape) != SB_OK) {
        fprintf(stderr, "sb_tensor_new failed: %s\n", sb_last_error());
        exit(2);
    }
    return t;
}
static sb_tensor *scaled_copy(const sb_tensor *src) {
    sb_tensor *t = mk(SB_F32, src->ndim, src->shape);
    const float *s = sb_tensor_f32(src);
    float *p = sb_tensor_f32(t);
    for (int64_t i = 0; i < sb_tensor_numel(t); i++) p[i] = s[i] * 0x1p-70f;
    return t;
}
static sb_tensor *mk_hard(int ndim, const int64_t *shape) {
    sb_tensor *t = mk(SB_F32, ndim, shape);
    float *p = sb_tensor_f32(t);
    for (int64_t i = 0; i < sb_tensor_numel(t); i++) p[i] = hard_value();
    return t;
}

/* Multiplies every `every`-th row of a (rows, cols) array by 2^-70. */
static void scale_rows(float *p, int64_t rows, int64_t cols, int64_t every) {
    for (int64_t r = 0; r < rows; r += every)
        for (int64_t c = 0; c < cols; c++) p[r * cols + c] *= 0x1p-70f;
}

enum { MATH_N = 4096, GEMM_M = 67, GEMM_N = 45, GEMM_K = 129, SUM_N = 100003, ADAM_N = 5000,
       RNG_N = 2000 };

/* Every input and output of one run of the op spread. Outputs are written
 * by the ops only; the inputs are built once, in the default environment. */
typedef struct work {
    float math_in[MATH_N], math_out[6][MATH_N];
    sb_tensor *ga, *gb, *gc;              /* matmul (M,K) x (N,K)^T */
    float *sa, *sb, *sc;                  /* sgemm, raw */
    float *sum_in, sum_out[3];
    sb_tensor *cx, *cw, *cbias, *cy, *cdy, *cdx, *cdw, *cdb; /* conv2d */
    sb_tensor *tx, *tw, *tdy, *ty, *tdx, *tdw;                /* conv2d, tiny */
    sb_tensor *logits, *targets, *probs, *loss, *dloss, *dlogits;
    float *p_init, *grad, *param, *m, *v;  /* Adam */
    sb_tensor *bx, *bgamma, *bbeta, *brm, *brv, *by, *bmean, *brstd, *bdy, *bdx, *bdg, *bdb;
    float normal[RNG_N];
    int status_failures; /* ops that did not return SB_OK */
} work;

static void build_inputs(work *w) {
    /* Hard cases for the elementary functions: subnormal inputs, the
     * subnormal-result ranges of exp, arguments near 0 and 1, plus noise. */
    for (int i = 0; i < MATH_N; i++) {
        float x;
        switch (i % 6) {
        case 0: x = from_bits((uint32_t)rng_next() & 0x807fffffu); break;   /* subnormal */
        case 1: x = -87.0f - 17.0f * (urand() * 0.5f + 0.5f); break;         /* exp -> subnormal */
        case 2: x = 1.0f + urand() * 0x1p-10f; break;                        /* log near 1 */
        case 3: x = urand() * 0x1p-20f; break;                               /* near 0 */
        case 4: x = urand() * 9.0f; break;
        default: x = fabsf(urand()) * 0x1p-100f; break;                      /* tiny positive */
        }
        w->math_in[i] = x;
    }
    int64_t ga_s[2] = {GEMM_M, GEMM_K}, gb_s[2] = {GEMM_N, GEMM_K}, gc_s[2] = {GEMM_M, GEMM_N};
    w->ga = mk_hard(2, ga_s);
    w->gb = mk_hard(2, gb_s);
    w->gc = mk(SB_F32, 2, gc_s);
    w->sa = malloc(sizeof(float) * GEMM_K * GEMM_M);
    w->sb = malloc(sizeof(float) * GEMM_K * GEMM_N);
    w->sc = malloc(sizeof(float) * GEMM_M * GEMM_N);
    w->sum_in = malloc(sizeof(float) * SUM_N);
    w->grad = malloc(sizeof(float) * ADAM_N);
    w->p_init = malloc(sizeof(float) * ADAM_N);
    w->param = malloc(sizeof(float) * ADAM_N);
    w->m = malloc(sizeof(float) * ADAM_N);
    w->v = malloc(sizeof(float) * ADAM_N);
    if (!w->sa || !w->sb || !w->sc || !w->sum_in || !w->grad || !w->p_init || !w->param ||
        !w->m || !w->v) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    for (int i = 0; i < GEMM_K * GEMM_M; i++) w->sa[i] = hard_value();
    for (int i = 0; i < GEMM_K * GEMM_N; i++) w->sb[i] = hard_value();
    /* Some rows of both GEMM operands wholly tiny: their chains run in
     * the subnormal range, which FTZ and DAZ destroy. */
    scale_rows(sb_tensor_f32(w->ga), GEMM_M, GEMM_K, 5);
    scale_rows(sb_tensor_f32(w->gb), GEMM_N, GEMM_K, 4);
    scale_rows(w->sa, GEMM_K, GEMM_M, 1); /* sgemm: every chain subnormal */
    scale_rows(w->sb, GEMM_K, GEMM_N, 1);
    /* Mostly subnormals: under DAZ the sum collapses. */
    for (int i = 0; i < SUM_N; i++)
        w->sum_in[i] = i % 3 ? from_bits((uint32_t)rng_next() & 0x807fffffu) : urand() * 0x1p-120f;
    for (int i = 0; i < ADAM_N; i++) {
        w->grad[i] = hard_value();
        w->p_init[i] = urand();
    }

    int64_t x_s[4] = {2, 3, 9, 8}, w_s[4] = {4, 3, 3, 3}, b_s[1] = {4}, y_s[4] = {2, 4, 9, 8};
    w->cx = mk_hard(4, x_s);
    w->cw = mk_hard(4, w_s);
    w->cbias = mk_hard(1, b_s);
    w->cy = mk(SB_F32, 4, y_s);
    w->cdy = mk_hard(4, y_s);
    w->cdx = mk(SB_F32, 4, x_s);
    w->cdw = mk(SB_F32, 4, w_s);
    w->cdb = mk(SB_F32, 1, b_s);
    /* The same convolution again with every operand scaled by 2^-70: all
     * its chains run in the subnormal range. */
    w->tx = scaled_copy(w->cx);
    w->tw = scaled_copy(w->cw);
    w->tdy = scaled_copy(w->cdy);
    w->ty = mk(SB_F32, 4, y_s);
    w->tdx = mk(SB_F32, 4, x_s);
    w->tdw = mk(SB_F32, 4, w_s);

    int64_t l_s[2] = {37, 10}, t_s[1] = {37};
    w->logits = mk(SB_F32, 2, l_s);
    float *lg = sb_tensor_f32(w->logits);
    /* Wide rows: many softmax terms e_j and outputs are subnormal. */
    for (int i = 0; i < 370; i++) lg[i] = urand() * (i % 20 < 10 ? 50.0f : 3.0f);
    w->targets = mk(SB_I64, 1, t_s);
    for (int i = 0; i < 37; i++) ((int64_t *)w->targets->data)[i] = (int64_t)(rng_next() % 10);
    w->probs = mk(SB_F32, 2, l_s);
    w->loss = mk(SB_F32, 0, NULL);
    w->dloss = mk(SB_F32, 0, NULL);
    sb_tensor_f32(w->dloss)[0] = 1.0f;
    w->dlogits = mk(SB_F32, 2, l_s);

    int64_t bx_s[4] = {5, 3, 4, 7}, c_s[1] = {3};
    w->bx = mk_hard(4, bx_s);
    w->bgamma = mk_hard(1, c_s);
    w->bbeta = mk_hard(1, c_s);
    w->brm = mk(SB_F32, 1, c_s);
    w->brv = mk(SB_F32, 1, c_s);
    w->by = mk(SB_F32, 4, bx_s);
    w->bmean = mk(SB_F32, 1, c_s);
    w->brstd = mk(SB_F32, 1, c_s);
    w->bdy = mk_hard(4, bx_s);
    w->bdx = mk(SB_F32, 4, bx_s);
    w->bdg = mk(SB_F32, 1, c_s);
    w->bdb = mk(SB_F32, 1, c_s);
}

static void free_work(work *w) {
    sb_tensor *ts[] = {w->ga, w->gb, w->gc, w->cx, w->cw, w->cbias, w->cy, w->cdy, w->cdx,
                       w->cdw, w->cdb, w->tx, w->tw, w->tdy, w->ty, w->tdx, w->tdw, w->logits, w->targets, w->probs, w->loss, w->dloss,
                       w->dlogits, w->bx, w->bgamma, w->bbeta, w->brm, w->brv, w->by,
                       w->bmean, w->brstd, w->bdy, w->bdx, w->bdg, w->bdb};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) sb_tensor_free(ts[i]);
    free(w->sa); free(w->sb); free(w->sc); free(w->sum_in); free(w->grad); free(w->p_init);
    free(w->param); free(w->m); free(w->v);
}

/* The op spread. No float arithmetic of the test's own happens here: it
 * may be running under a foreign environment. Integer state (the running
 * statistics, Adam's moments) is reset by copying bits. */
static void run_ops(work *w) {
    int bad = 0;
    for (int i = 0; i < MATH_N; i++) {
        float x = w->math_in[i];
        w->math_out[0][i] = sb_expf(x);
        w->math_out[1][i] = sb_logf(x);
        w->math_out[2][i] = sb_expm1f(x);
        w->math_out[3][i] = sb_log1pf(x);
        w->math_out[4][i] = sb_tanhf(x);
        w->math_out[5][i] = sb_erff(x);
    }
    bad += sb_matmul(w->ga, w->gb, false, true, w->gc) != SB_OK;
    bad += sb_sgemm('T', 'N', GEMM_M, GEMM_N, GEMM_K, w->sa, GEMM_M, w->sb, GEMM_N, w->sc,
                    GEMM_N) != SB_OK;
    bad += sb_ssum(SUM_N, w->sum_in, 1, &w->sum_out[0]) != SB_OK;
    bad += sb_ssum(SUM_N / 3, w->sum_in, 3, &w->sum_out[1]) != SB_OK;
    bad += sb_ssum(1000, w->sum_in + 1, 1, &w->sum_out[2]) != SB_OK;

    sb_conv2d_params cp = SB_CONV2D_PARAMS_DEFAULT;
    cp.pad_h = cp.pad_w = 1;
    bad += sb_conv2d_forward(w->cx, w->cw, w->cbias, &cp, w->cy) != SB_OK;
    bad += sb_conv2d_backward(w->cdy, w->cx, w->cw, &cp, w->cdx, w->cdw, w->cdb) != SB_OK;
    bad += sb_conv2d_forward(w->tx, w->tw, NULL, &cp, w->ty) != SB_OK;
    bad += sb_conv2d_backward(w->tdy, w->tx, w->tw, &cp, w->tdx, w->tdw, NULL) != SB_OK;

    bad += sb_softmax_forward(w->logits, 1, w->probs) != SB_OK;
    bad += sb_cross_entropy_forward(w->logits, w->targets, SB_LOSS_MEAN, 0.1f, -100, w->loss) !=
           SB_OK;
    bad += sb_cross_entropy_backward(w->logits, w->targets, SB_LOSS_MEAN, 0.1f, -100, w->dloss,
                                     w->dlogits) != SB_OK;

    memcpy(w->param, w->p_init, sizeof(float) * ADAM_N);
    memset(w->m, 0, sizeof(float) * ADAM_N);
    memset(w->v, 0, sizeof(float) * ADAM_N);
    sb_adam_config ac = sb_adam_default_config(1e-3);
    for (int64_t step = 1; step <= 3; step++)
        bad += sb_adam_step(&ac, step, ADAM_N, w->param, w->grad, w->m, w->v, NULL) != SB_OK;

    memset(w->brm->data, 0, 3 * sizeof(float));
    static const uint32_t one = 0x3f800000u;
    for (int c = 0; c < 3; c++) memcpy((float *)w->brv->data + c, &one, sizeof one);
    bad += sb_batch_norm_forward(w->bx, w->bgamma, w->bbeta, w->brm, w->brv, true, 0.1f, 1e-5f,
                                 w->by, w->bmean, w->brstd) != SB_OK;
    bad += sb_batch_norm_backward(w->bdy, w->bx, w->bgamma, w->bmean, w->brstd, true, w->bdx,
                                  w->bdg, w->bdb) != SB_OK;

    sb_rng rng = sb_rng_make(7, 3);
    bad += sb_rng_normal(&rng, 12345, 0.25f, 1.5f, w->normal, RNG_N) != SB_OK;
    w->status_failures = bad;
}

/* The outputs of one run, as named bit vectors. */
typedef struct output {
    const char *name;
    const float *p;
    int64_t n;
} output;

static int outputs(const work *w, output *o) {
    static const char *const math_names[6] = {"sb_expf", "sb_logf", "sb_expm1f", "sb_log1pf",
                                              "sb_tanhf", "sb_erff"};
    int k = 0;
    for (int f = 0; f < 6; f++) o[k++] = (output){math_names[f], w->math_out[f], MATH_N};
    o[k++] = (output){"sb_matmul", sb_tensor_f32(w->gc), GEMM_M * GEMM_N};
    o[k++] = (output){"sb_sgemm", w->sc, GEMM_M * GEMM_N};
    o[k++] = (output){"sb_ssum", w->sum_out, 3};
    o[k++] = (output){"sb_conv2d_forward", sb_tensor_f32(w->cy), sb_tensor_numel(w->cy)};
    o[k++] = (output){"sb_conv2d_backward dx", sb_tensor_f32(w->cdx), sb_tensor_numel(w->cdx)};
    o[k++] = (output){"sb_conv2d_backward dw", sb_tensor_f32(w->cdw), sb_tensor_numel(w->cdw)};
    o[k++] = (output){"sb_conv2d_backward db", sb_tensor_f32(w->cdb), 4};
    o[k++] = (output){"sb_conv2d_forward (tiny)", sb_tensor_f32(w->ty), sb_tensor_numel(w->ty)};
    o[k++] = (output){"sb_conv2d_backward dx (tiny)", sb_tensor_f32(w->tdx), sb_tensor_numel(w->tdx)};
    o[k++] = (output){"sb_conv2d_backward dw (tiny)", sb_tensor_f32(w->tdw), sb_tensor_numel(w->tdw)};
    o[k++] = (output){"sb_softmax_forward", sb_tensor_f32(w->probs), 370};
    o[k++] = (output){"sb_cross_entropy_forward", sb_tensor_f32(w->loss), 1};
    o[k++] = (output){"sb_cross_entropy_backward", sb_tensor_f32(w->dlogits), 370};
    o[k++] = (output){"sb_adam_step param", w->param, ADAM_N};
    o[k++] = (output){"sb_adam_step exp_avg", w->m, ADAM_N};
    o[k++] = (output){"sb_adam_step exp_avg_sq", w->v, ADAM_N};
    o[k++] = (output){"sb_batch_norm_forward y", sb_tensor_f32(w->by), sb_tensor_numel(w->by)};
    o[k++] = (output){"sb_batch_norm_forward running_var", sb_tensor_f32(w->brv), 3};
    o[k++] = (output){"sb_batch_norm_forward save_rstd", sb_tensor_f32(w->brstd), 3};
    o[k++] = (output){"sb_batch_norm_backward dx", sb_tensor_f32(w->bdx), sb_tensor_numel(w->bdx)};
    o[k++] = (output){"sb_batch_norm_backward dgamma", sb_tensor_f32(w->bdg), 3};
    o[k++] = (output){"sb_rng_normal", w->normal, RNG_N};
    return k;
}

enum { MAX_OUTPUTS = 32 };

/* Bit copies of every output of a run. */
typedef struct snapshot {
    int count;
    output out[MAX_OUTPUTS];
    uint32_t *bits[MAX_OUTPUTS];
} snapshot;

static void take_snapshot(const work *w, snapshot *s) {
    s->count = outputs(w, s->out);
    for (int i = 0; i < s->count; i++) {
        s->bits[i] = malloc(sizeof(uint32_t) * (size_t)s->out[i].n);
        if (!s->bits[i]) exit(2);
        memcpy(s->bits[i], s->out[i].p, sizeof(uint32_t) * (size_t)s->out[i].n);
    }
}

static void free_snapshot(snapshot *s) {
    for (int i = 0; i < s->count; i++) free(s->bits[i]);
    s->count = 0;
}

/* One check per output: all bits equal; the first difference is shown. */
static void compare(const snapshot *want, const snapshot *got, const char *config) {
    for (int i = 0; i < want->count; i++) {
        int64_t first = -1, diffs = 0;
        for (int64_t j = 0; j < want->out[i].n; j++)
            if (want->bits[i][j] != got->bits[i][j]) {
                if (first < 0) first = j;
                diffs++;
            }
        CHECK(first < 0, "%s: %s differs from the default environment in %lld of %lld values "
              "(first [%lld]: 0x%08" PRIx32 ", want 0x%08" PRIx32 ")",
              config, want->out[i].name, (long long)diffs, (long long)want->out[i].n,
              (long long)first, first < 0 ? 0 : got->bits[i][first],
              first < 0 ? 0 : want->bits[i][first]);
    }
}

static const env_mode modes[] = {
    {"round-toward-zero", FE_TOWARDZERO, 0},
    {"round-upward", FE_UPWARD, 0},
    {"round-downward", FE_DOWNWARD, 0},
    {"FTZ", FE_TONEAREST, FLUSH_FTZ},
    {"DAZ", FE_TONEAREST, FLUSH_DAZ},
    {"FTZ+DAZ", FE_TONEAREST, FLUSH_FTZ | FLUSH_DAZ},
    {"round-upward+FTZ+DAZ", FE_UPWARD, FLUSH_FTZ | FLUSH_DAZ},
    {"round-downward+FTZ", FE_DOWNWARD, FLUSH_FTZ},
};

/* Each mode really is in force when samebits is called: plain C
 * arithmetic of the test's own, under the mode, gives different bits on
 * probes each mode changes (otherwise passing would prove nothing). */
static void probe(float *out) {
    volatile float tiny = 0x1p-70f, sub = 0x1p-140f, one = 1.0f, eps = 0x1p-30f, three = 3.0f;
    out[0] = tiny * tiny;  /* subnormal result: flushed by FTZ */
    out[1] = sub * one;    /* subnormal input: read as zero by DAZ */
    out[2] = one + eps;    /* rounds up only upward */
    out[3] = -one - eps;   /* rounds down only downward */
    out[4] = one / three;  /* nearest rounds up: toward zero and downward differ */
    out[5] = -one / three;
}

static void check_mode_is_felt(const env_mode *m) {
    float want[6], got[6];
    probe(want);
    if (!env_set(m)) return;
    probe(got);
    env_reset();
    CHECK(memcmp(want, got, sizeof want) != 0,
          "%s: plain C arithmetic gives the same bits as in the default environment, so the "
          "mode is not in force", m->name);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    static work w;
    build_inputs(&w);
    env_reset();
    CHECK(env_get().round == FE_TONEAREST, "the test starts in round-to-nearest");

    int nmodes = (int)(sizeof modes / sizeof *modes), tried = 0;
    for (int m = 0; m < nmodes; m++)
        if (env_supported(&modes[m])) check_mode_is_felt(&modes[m]);

    static const int thread_counts[] = {1, 3};
    int initial_threads = sb_num_threads();
    for (int isa = 0; isa < SB_ISA_COUNT; isa++) {
        if (!sb_isa_supported((sb_isa_level)isa)) continue;
        if (sb_test_quick() && isa != (int)sb_isa_best() && isa != SB_ISA_SCALAR) continue;
        for (int t = 0; t < 2; t++) {
            CHECK_OK(sb_set_isa((sb_isa_level)isa));
            CHECK_OK(sb_set_num_threads(thread_counts[t]));
            char config[96];
            snapshot want = {0};
            run_ops(&w);
            CHECK(w.status_failures == 0, "%s/%dt: %d ops failed in the default environment: %s",
                  sb_isa_name((sb_isa_level)isa), thread_counts[t], w.status_failures,
                  sb_last_error());
            take_snapshot(&w, &want);
            for (int m = 0; m < nmodes; m++) {
                const env_mode *mode = &modes[m];
                if (!env_supported(mode)) continue;
                snprintf(config, sizeof config, "%s/%dt under %s", sb_isa_name((sb_isa_level)isa),
                         thread_counts[t], mode->name);
                if (!env_set(mode)) {
                    CHECK(0, "%s: cannot install the environment", config);
                    continue;
                }
                env_state set = env_get();
                /* Workers may be (re)started while the caller's mode is
                 * in force: go through 1 thread and back. */
                sb_set_num_threads(1);
                sb_set_num_threads(thread_counts[t]);
                run_ops(&w);
                env_state after = env_get();
                env_reset();
                tried++;
                CHECK(after.round == set.round,
                      "%s: the caller's rounding mode was not restored (%d, want %d)", config,
                      after.round, set.round);
                CHECK(after.ctrl == set.ctrl,
                      "%s: the caller's control register was not restored (0x%llx, want 0x%llx)",
                      config, (unsigned long long)after.ctrl, (unsigned long long)set.ctrl);
                CHECK(w.status_failures == 0, "%s: %d ops failed", config, w.status_failures);
                snapshot got = {0};
                take_snapshot(&w, &got);
                compare(&want, &got, config);
                free_snapshot(&got);
            }
            free_snapshot(&want);
        }
    }
    CHECK(tried > 0, "no foreign environment could be tried");
    sb_set_isa(sb_isa_best());
    sb_set_num_threads(initial_threads);
    free_work(&w);
    return sb_test_finish();
}
