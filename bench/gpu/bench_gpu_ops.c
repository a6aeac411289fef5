/* `make bench-gpu-ops`: the GPU kernels that once were not GPU code (a
 * host round trip, one work-item, O(n^2) work) timed on the OpenCL device,
 * each result brought back to the host (which waits for the queue) and
 * compared bit for bit with the CPU's:
 *   sort      one column of --sort-n floats (default 1 << 16), ascending;
 *             topk (k = 100) and median of the same column
 *   ctc       the CTC loss of a batch of 64 (T 50, C 20, targets of 10),
 *             MEAN, forward and backward
 *   class     cross-entropy over --rows rows (default 1 << 20) of 4
 *             classes, MEAN, forward and backward, without and with class
 *             weights (the divisor: the count, or the targets' weight sum)
 *   grid      grid sampling's backward (dx and dgrid), batch 4, 8 channels,
 *             64 x 64 from a 64 x 64 grid, bilinear
 *   sum       sb_sum of 4 * --rows floats to one value (the canonical sum
 *             of one long output)
 * Prints "OP ms T bits same" per line (the best of a few runs after one
 * that builds the programs); "bits DIFFER" fails the run. */
#include <string.h>
#include "../bench_common.h"
#include "bench_gpu_device.h"

#define die(what) bench_fail("bench_gpu_ops", what)

typedef struct twin {
    sb_tensor *c, *d; /* the CPU tensor and its device copy */
} twin;

static int twin_of(sb_tensor *c, twin *t) {
    t->c = c;
    t->d = NULL;
    return !c || sb_tensor_to(&t->d, c, SB_DEVICE_OPENCL) != SB_OK;
}

static int twin_new(sb_dtype dtype, int ndim, const int64_t *shape, twin *t) {
    *t = (twin){NULL, NULL};
    return sb_tensor_new(&t->c, dtype, ndim, shape) != SB_OK ||
           sb_tensor_new_on(&t->d, SB_DEVICE_OPENCL, dtype, ndim, shape) != SB_OK;
}

static void twin_free(twin *t) {
    sb_tensor_free(t->c);
    sb_tensor_free(t->d);
}

/* 1 when the device tensor, brought back, has the CPU tensor's bytes. */
static int same_bits(const twin *t) {
    sb_tensor *back = NULL;
    if (sb_tensor_to(&back, t->d, SB_DEVICE_CPU) != SB_OK) return 0;
    size_t bytes = (size_t)sb_tensor_numel(t->c) * sb_dtype_size(t->c->dtype);
    int same = memcmp(back->data, t->c->data, bytes) == 0;
    sb_tensor_free(back);
    return same;
}

/* What one benchmark runs: on the device (cpu false) or the CPU. */
typedef sb_status (*bench_op)(void *ctx, bool cpu);

/* The best of a few timed device runs (after one that builds the programs),
 * each ended by bringing `sync` back; then the CPU run and the comparison
 * of every output. */
static int timed(const char *name, bench_op op, void *ctx, twin *sync, twin *const *outs, int nouts) {
    double best = 1e30, spent = 0.0;
    for (int r = -1; r < 10 && (r < 2 || spent < 3000.0); r++) {
        double t0 = bench_now_ms();
        sb_tensor *back = NULL;
        if (op(ctx, false) != SB_OK || sb_tensor_to(&back, sync->d, SB_DEVICE_CPU) != SB_OK)
            return die(name);
        sb_tensor_free(back);
        double t = bench_now_ms() - t0;
        if (r >= 0) {
            spent += t;
            if (t < best) best = t;
        }
    }
    if (op(ctx, true) != SB_OK) return die(name);
    int same = 1;
    for (int i = 0; i < nouts; i++) same &= same_bits(outs[i]);
    printf("%s ms %.3f bits %s\n", name, best, same ? "same" : "DIFFER");
    fflush(stdout);
    return !same;
}

#define SIDE(t, cpu) ((cpu) ? (t).c : (t).d)

/* ---- sort, topk, median of one column ---- */

typedef struct sort_ctx {
    twin x, v, i, tv, ti, mv, mi;
} sort_ctx;

static sb_status run_sort(void *p, bool cpu) {
    sort_ctx *s = p;
    return sb_sort(SIDE(s->x, cpu), 0, false, SIDE(s->v, cpu), SIDE(s->i, cpu));
}

static sb_status run_topk(void *p, bool cpu) {
    sort_ctx *s = p;
    return sb_topk(SIDE(s->x, cpu), 100, 0, true, SIDE(s->tv, cpu), SIDE(s->ti, cpu));
}

static sb_status run_median(void *p, bool cpu) {
    sort_ctx *s = p;
    return sb_median(SIDE(s->x, cpu), 0, false, SIDE(s->mv, cpu), SIDE(s->mi, cpu));
}

static int bench_sort(int64_t n) {
    sort_ctx s;
    int64_t shape[1] = {n}, k[1] = {100};
    sb_tensor *x = NULL;
    if (sb_tensor_new(&x, SB_F32, 1, shape) != SB_OK) return die("sort setup");
    sb_rng rng = sb_rng_make(3, 0);
    float *v = x->data;
    if (sb_rng_uniform_range(&rng, 0, -4.0f, 4.0f, v, n) != SB_OK) return die("sort setup");
    for (int64_t j = 0; j < n; j += 7) v[j] = (float)(j % 5); /* ties */
    if (twin_of(x, &s.x) || twin_new(SB_F32, 1, shape, &s.v) || twin_new(SB_I64, 1, shape, &s.i) ||
        twin_new(SB_F32, 1, k, &s.tv) || twin_new(SB_I64, 1, k, &s.ti) ||
        twin_new(SB_F32, 0, NULL, &s.mv) || twin_new(SB_I64, 0, NULL, &s.mi))
        return die("sort setup");
    char name[64];
    snprintf(name, sizeof name, "sort n %lld", (long long)n);
    int failed = timed(name, run_sort, &s, &s.i, (twin *[]){&s.v, &s.i}, 2);
    snprintf(name, sizeof name, "topk100 n %lld", (long long)n);
    failed |= timed(name, run_topk, &s, &s.ti, (twin *[]){&s.tv, &s.ti}, 2);
    snprintf(name, sizeof name, "median n %lld", (long long)n);
    failed |= timed(name, run_median, &s, &s.mi, (twin *[]){&s.mv, &s.mi}, 2);
    twin all[] = {s.x, s.v, s.i, s.tv, s.ti, s.mv, s.mi};
    for (size_t j = 0; j < sizeof all / sizeof *all; j++) twin_free(&all[j]);
    return failed;
}

/* ---- the CTC loss of a batch of 64 ---- */

enum { CTC_T = 50, CTC_N = 64, CTC_C = 20, CTC_S = 10 };

typedef struct ctc_ctx {
    twin lp, tg, il, tl, loss, dloss, dlp;
} ctc_ctx;

static sb_status run_ctc(void *p, bool cpu) {
    ctc_ctx *c = p;
    sb_ctc_loss prm = {0, false};
    sb_status st = sb_ctc_loss_forward(&prm, SIDE(c->lp, cpu), SIDE(c->tg, cpu), SIDE(c->il, cpu),
                                       SIDE(c->tl, cpu), SB_LOSS_MEAN, SIDE(c->loss, cpu));
    if (st != SB_OK) return st;
    return sb_ctc_loss_backward(&prm, SIDE(c->lp, cpu), SIDE(c->tg, cpu), SIDE(c->il, cpu),
                                SIDE(c->tl, cpu), SB_LOSS_MEAN, SIDE(c->dloss, cpu),
                                SIDE(c->dlp, cpu));
}

static int bench_ctc(void) {
    ctc_ctx c;
    int64_t lps[3] = {CTC_T, CTC_N, CTC_C}, ts[2] = {CTC_N, CTC_S}, ns[1] = {CTC_N};
    sb_tensor *logits = NULL, *lp = NULL, *tg = NULL, *il = NULL, *tl = NULL, *g = NULL;
    if (sb_tensor_new(&logits, SB_F32, 3, lps) != SB_OK || sb_tensor_new(&lp, SB_F32, 3, lps) != SB_OK ||
        sb_tensor_new(&tg, SB_I64, 2, ts) != SB_OK || sb_tensor_new(&il, SB_I64, 1, ns) != SB_OK ||
        sb_tensor_new(&tl, SB_I64, 1, ns) != SB_OK || sb_tensor_new(&g, SB_F32, 0, NULL) != SB_OK)
        return die("ctc setup");
    sb_rng rng = sb_rng_make(5, 0);
    if (sb_rng_uniform_range(&rng, 0, -3.0f, 3.0f, logits->data, CTC_T * CTC_N * CTC_C) != SB_OK ||
        sb_log_softmax_forward(logits, 2, lp) != SB_OK)
        return die("ctc setup");
    int64_t *t = tg->data, *inl = il->data, *tgl = tl->data;
    for (int64_t j = 0; j < CTC_N * CTC_S; j++) t[j] = 1 + (j * 7 + j / CTC_S) % (CTC_C - 1);
    for (int64_t b = 0; b < CTC_N; b++) inl[b] = CTC_T - b % 5, tgl[b] = CTC_S - b % 4;
    ((float *)g->data)[0] = 1.0f;
    sb_tensor_free(logits);
    if (twin_of(lp, &c.lp) || twin_of(tg, &c.tg) || twin_of(il, &c.il) || twin_of(tl, &c.tl) ||
        twin_of(g, &c.dloss) || twin_new(SB_F32, 0, NULL, &c.loss) ||
        twin_new(SB_F32, 3, lps, &c.dlp))
        return die("ctc setup");
    int failed = timed("ctc batch 64 mean fwd+bwd", run_ctc, &c, &c.dlp,
                       (twin *[]){&c.loss, &c.dlp}, 2);
    twin all[] = {c.lp, c.tg, c.il, c.tl, c.loss, c.dloss, c.dlp};
    for (size_t j = 0; j < sizeof all / sizeof *all; j++) twin_free(&all[j]);
    return failed;
}

/* ---- cross-entropy, MEAN, without and with weights ---- */

enum { CLASS_C = 4 };

typedef struct class_ctx {
    twin in, tg, w, loss, dloss, din;
    bool weighted;
} class_ctx;

static sb_status run_class(void *p, bool cpu) {
    class_ctx *c = p;
    sb_class_loss prm = {SB_LOSS_CROSS_ENTROPY, 0.0f, -100};
    const sb_tensor *w = c->weighted ? SIDE(c->w, cpu) : NULL;
    sb_status st = sb_class_loss_forward(&prm, SIDE(c->in, cpu), SIDE(c->tg, cpu), w, SB_LOSS_MEAN,
                                         SIDE(c->loss, cpu));
    if (st != SB_OK) return st;
    return sb_class_loss_backward(&prm, SIDE(c->in, cpu), SIDE(c->tg, cpu), w,
                                  SB_LOSS_MEAN, SIDE(c->dloss, cpu), SIDE(c->din, cpu));
}

static int bench_class(int64_t rows) {
    class_ctx c;
    int64_t is[2] = {rows, CLASS_C}, rs[1] = {rows}, cs[1] = {CLASS_C};
    sb_tensor *in = NULL, *tg = NULL, *w = NULL, *g = NULL;
    if (sb_tensor_new(&in, SB_F32, 2, is) != SB_OK || sb_tensor_new(&tg, SB_I64, 1, rs) != SB_OK ||
        sb_tensor_new(&w, SB_F32, 1, cs) != SB_OK || sb_tensor_new(&g, SB_F32, 0, NULL) != SB_OK)
        return die("class loss setup");
    sb_rng rng = sb_rng_make(9, 0);
    if (sb_rng_uniform_range(&rng, 0, -4.0f, 4.0f, in->data, rows * CLASS_C) != SB_OK ||
        sb_rng_uniform_range(&rng, 1, 0.5f, 2.0f, w->data, CLASS_C) != SB_OK)
        return die("class loss setup");
    int64_t *t = tg->data;
    for (int64_t r = 0; r < rows; r++) t[r] = r % 13 == 5 ? -100 : (r * 2654435761u >> 7) % CLASS_C;
    ((float *)g->data)[0] = 1.0f;
    if (twin_of(in, &c.in) || twin_of(tg, &c.tg) || twin_of(w, &c.w) || twin_of(g, &c.dloss) ||
        twin_new(SB_F32, 0, NULL, &c.loss) || twin_new(SB_F32, 2, is, &c.din))
        return die("class loss setup");
    int failed = 0;
    for (int weighted = 0; weighted < 2; weighted++) {
        char name[80];
        snprintf(name, sizeof name, "class_loss rows %lld %s mean fwd+bwd", (long long)rows,
                 weighted ? "weighted" : "unweighted");
        c.weighted = weighted;
        failed |= timed(name, run_class, &c, &c.din, (twin *[]){&c.loss, &c.din}, 2);
    }
    twin all[] = {c.in, c.tg, c.w, c.loss, c.dloss, c.din};
    for (size_t j = 0; j < sizeof all / sizeof *all; j++) twin_free(&all[j]);
    return failed;
}

/* ---- grid sampling's backward ---- */

enum { GRID_N = 4, GRID_C = 8, GRID_S = 64 };

typedef struct grid_ctx {
    twin x, grid, dy, dx, dgrid;
} grid_ctx;

static sb_status run_grid(void *p, bool cpu) {
    grid_ctx *c = p;
    sb_grid_sample_params prm = {SB_GRID_BILINEAR, SB_GRID_ZEROS, false};
    return sb_grid_sample_backward(SIDE(c->dy, cpu), SIDE(c->x, cpu), SIDE(c->grid, cpu), &prm,
                                   SIDE(c->dx, cpu), SIDE(c->dgrid, cpu));
}

static int bench_grid(void) {
    grid_ctx c;
    int64_t xs[4] = {GRID_N, GRID_C, GRID_S, GRID_S}, gs[4] = {GRID_N, GRID_S, GRID_S, 2};
    sb_tensor *x = NULL, *grid = NULL, *dy = NULL;
    if (sb_tensor_new(&x, SB_F32, 4, xs) != SB_OK || sb_tensor_new(&grid, SB_F32, 4, gs) != SB_OK ||
        sb_tensor_new(&dy, SB_F32, 4, xs) != SB_OK)
        return die("grid sampling setup");
    sb_rng rng = sb_rng_make(11, 0);
    if (sb_rng_uniform_range(&rng, 0, -2.0f, 2.0f, x->data, sb_tensor_numel(x)) != SB_OK ||
        sb_rng_uniform_range(&rng, 1, -1.1f, 1.1f, grid->data, sb_tensor_numel(grid)) != SB_OK ||
        sb_rng_uniform_range(&rng, 2, -1.0f, 1.0f, dy->data, sb_tensor_numel(dy)) != SB_OK)
        return die("grid sampling setup");
    if (twin_of(x, &c.x) || twin_of(grid, &c.grid) || twin_of(dy, &c.dy) ||
        twin_new(SB_F32, 4, xs, &c.dx) || twin_new(SB_F32, 4, gs, &c.dgrid))
        return die("grid sampling setup");
    int failed = timed("grid_sample backward 4x8x64x64 bilinear", run_grid, &c, &c.dx,
                       (twin *[]){&c.dx, &c.dgrid}, 2);
    twin all[] = {c.x, c.grid, c.dy, c.dx, c.dgrid};
    for (size_t j = 0; j < sizeof all / sizeof *all; j++) twin_free(&all[j]);
    return failed;
}

/* ---- the canonical sum of one long output ---- */

typedef struct sum_ctx {
    twin x, out;
} sum_ctx;

static sb_status run_sum(void *p, bool cpu) {
    sum_ctx *c = p;
    int dims[1] = {0};
    return sb_sum(SIDE(c->x, cpu), dims, 1, false, SIDE(c->out, cpu));
}

static int bench_sum(int64_t n) {
    sum_ctx c;
    int64_t shape[1] = {n};
    sb_tensor *x = NULL;
    if (sb_tensor_new(&x, SB_F32, 1, shape) != SB_OK) return die("sum setup");
    sb_rng rng = sb_rng_make(13, 0);
    if (sb_rng_uniform_range(&rng, 0, -1.0f, 1.0f, x->data, n) != SB_OK) return die("sum setup");
    if (twin_of(x, &c.x) || twin_new(SB_F32, 0, NULL, &c.out)) return die("sum setup");
    char name[64];
    snprintf(name, sizeof name, "sum n %lld", (long long)n);
    int failed = timed(name, run_sum, &c, &c.out, (twin *[]){&c.out}, 1);
    twin_free(&c.x);
    twin_free(&c.out);
    return failed;
}

int main(int argc, char **argv) {
    int64_t sort_n = 1 << 16, rows = 1 << 20;
    const char *only = ""; /* --only sort,ctc,class,grid,sum: a subset */
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--sort-n")) sort_n = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--rows")) rows = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--only")) only = argv[i + 1];
    }
    if (sort_n < 100 || rows < 1) {
        fprintf(stderr, "bench_gpu_ops: --sort-n needs at least 100, --rows at least 1\n");
        return 2;
    }
    if (!bench_gpu_device()) return 0;
    int failed = 0;
    if (!*only || strstr(only, "sort")) failed |= bench_sort(sort_n);
    if (!*only || strstr(only, "ctc")) failed |= bench_ctc();
    if (!*only || strstr(only, "class")) failed |= bench_class(rows);
    if (!*only || strstr(only, "grid")) failed |= bench_grid();
    if (!*only || strstr(only, "sum")) failed |= bench_sum(rows * 4);
    return failed;
}
