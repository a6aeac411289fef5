/* The fast GEMM (src/cpu/cpu.h), BLIS-style: packed panels, cache blocking,
 * register-tile micro-kernels per ISA (src/cpu/gemm_*.c, chosen through the
 * kernel context of cpu/kernels.h), threads over
 * independent tiles of C. Same bits as sb_ref_sgemm, for these reasons:
 *
 *  - every C[i][j] lives in one accumulator lane, and a micro-kernel step is
 *    acc = fma(A[i][p], B[p][j], acc) with p ascending: the contract's chain;
 *  - k is cut into blocks of KC terms that run one after the other; the
 *    first block starts its accumulators from +0.0f (or from C under
 *    continue_chain), every later block loads them FROM C, where the previous
 *    block left the chain: no partial sums started from zero, hence no
 *    reassociation (a zero-started block would compute
 *    (0 + a_kc*b_kc + ...) and then add it to the earlier part: other bits);
 *  - threads split only the i and j extents: one tile of C is computed by one
 *    range, all of its k blocks in order (every k block is one pass of
 *    sb_parallel_for, which returns only when the pass is complete);
 *  - packing only copies values (zero padding feeds lanes that are never
 *    stored), so the operands are bit-identical.
 *
 * Blocking (for a modern x86 core: L1d 32-48 KiB, L2 1 MiB): per k block the
 * whole op(A) (m x kc) and op(B) (kc x n) are packed once, in parallel, into
 * micro-panels of MR rows / NR columns. A tile of C is up to MC x NC; inside
 * it each A micro-panel (MR x kc, 12 x 256 floats = 12 KiB) stays in L1 while
 * the B micro-panels of the tile (kc x NC = 256 x 512 floats = 512 KiB) stream
 * from L2. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/cpu.h"
#include "cpu/gemm_internal.h"
#include "cpu/kernels.h"
#include "ref/ref_linalg.h"

/* Block sizes (overridable at build time for tuning experiments). */
#ifndef SB_GEMM_KC
#define SB_GEMM_KC 256 /* k terms per block */
#endif
#ifndef SB_GEMM_MC
#define SB_GEMM_MC 144 /* rows of C per tile (a multiple of every MR) */
#endif
#ifndef SB_GEMM_NC
#define SB_GEMM_NC 512 /* columns of C per tile */
#endif
enum {
    KC = SB_GEMM_KC,
    MC_ROWS = SB_GEMM_MC,
    NC_COLS = SB_GEMM_NC,
    SMALL_FLOPS = 1 << 16, /* m*n*k below this: one thread, no heap */
    STACK_FLOATS = 4096,
    PAR_PACK_FLOPS = 1 << 24,
    B_DIRECT_MAX_M = 128, /* rows of C up to which op(B) = B is read unpacked (b_direct) */
    GEMV_T_MAX_M = 4,    /* rows of C up to which op(B) = B^T is read unpacked (gemv_t) */
    GEMV_T_COLS = 64,    /* columns of C per thread range there */
};

typedef struct kernel {
    int mr, nr;
    sb_gemm_ukernel_fn fn;
    sb_gemm_flex_fn flex;     /* when set, used instead of fn (gemm_internal.h) */
    sb_gemm_offset_fn offset; /* the implicit-GEMM kernel of the same tile */
    sb_gemm_gather_fn gather; /* the gathered-A kernel of the same tile */
} kernel;

/* ---- the portable micro-kernel ---- */

#define MR_S SB_GEMM_MR_SCALAR
#define NR_S SB_GEMM_NR_SCALAR

void sb_gemm_ukernel_scalar(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                            bool load_c) {
    float acc[MR_S][NR_S];
    for (int i = 0; i < MR_S; i++)
        for (int j = 0; j < NR_S; j++) acc[i][j] = load_c ? c[i * ldc + j] : 0.0f;
    for (int64_t p = 0; p < kc; p++, a += MR_S, b += NR_S)
        for (int i = 0; i < MR_S; i++)
            for (int j = 0; j < NR_S; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    for (int i = 0; i < MR_S; i++)
        for (int j = 0; j < NR_S; j++) c[i * ldc + j] = acc[i][j];
}

/* The tile of one call, from the level's GEMM kernels (the kernel context,
 * cpu/kernels.h): the flexible kernel whose row count suits m, or the fixed
 * kernel when the level has no flexible ones. Full tiles of packed panels
 * with the fixed kernel's row count keep the fixed (unrolled) kernel.
 *
 * The choice weighs padding against tile height and kernel. Per k step and
 * vector of columns, a tile costs its MR FMAs, plus about half of one more
 * for the flexible kernels (not unrolled, masked B loads, no prefetch): on
 * Zen 4 (2 threads) the flexible MR 8, 6 and 4 ran at 97-99%, 94-98% and
 * 88-96% of the fixed MR 12 on products all of them divide (m = 24, 48,
 * 96). So the row count
 * minimising ceil(m / MR) * (MR + 0.5 if flexible) wins, the taller on a
 * tie: 64 rows take MR 8 (MR 12 pads 8 rows, 11%, and ran 6-10% slower on
 * ResNet's 64-channel products); 100 rows keep MR 12 (MR 8 pads less but
 * ran 8% slower at n = 84 and 120); LeNet's 6 and 16 rows take MR 6 and 8. */
static kernel pick_kernel(const sb_gemm_kernels *g, int64_t m) {
    if (g->nflex == 0) return (kernel){g->mr, g->nr, g->ukernel, NULL, NULL, NULL};
    const sb_gemm_flex_kernel *opts = g->flex;
    int best = 0;
    int64_t best_cost = INT64_MAX;
    for (int i = 0; i < g->nflex; i++) { /* tallest first */
        int64_t tiles = (m + opts[i].mr - 1) / opts[i].mr;
        int64_t cost = tiles * (10 * opts[i].mr + (opts[i].mr == g->mr ? 0 : 5));
        if (cost < best_cost) {
            best = i;
            best_cost = cost;
        }
    }
    return (kernel){opts[best].mr, g->nr, opts[best].mr == g->mr ? g->ukernel : NULL,
                    opts[best].flex, opts[best].offset, opts[best].gather};
}

/* ---- one call's plan ---- */

typedef struct job {
    kernel kern;
    bool ta, tb;
    const float *a, *b;
    int64_t lda, ldb, ldc;
    float *c;
    int64_t m, n;
    int64_t pc, kc;   /* the current k block: terms pc .. pc+kc-1 */
    bool load_c;      /* accumulators start from C (not +0) */
    float *apack;     /* mpanels panels of mr x kc */
    float *bpack;     /* npanels panels of kc x nr */
    bool b_direct;    /* the flexible kernel reads op(B) = B ('N') in place */
    bool b_in_tile;   /* each tile packs its own B panels (one tile row) */
    sb_gemm_pack_bt_fn pack_bt; /* the level's transposing panel copy, or NULL */
    int64_t mpanels, npanels;
    int64_t tile_mp, tile_np; /* a tile's size in micro-panels */
    int64_t tiles_m, tiles_n;
} job;

/* op(A)[i][p] is a[i*lda + p] ('N') or a[p*lda + i] ('T'). Packed:
 * dst[p*mr + r] = op(A)[i0 + r][pc + p], rows past m are zero. */
static void pack_a(const job *J, int64_t panel) {
    int mr = J->kern.mr;
    int64_t i0 = panel * mr, rows = J->m - i0 < mr ? J->m - i0 : mr, kc = J->kc;
    float *dst = J->apack + panel * mr * kc;
    if (J->ta) {
        /* contiguous along i: one short copy per k step */
        const float *src = J->a + J->pc * J->lda + i0;
        for (int64_t p = 0; p < kc; p++, src += J->lda) {
            float *d = dst + p * mr;
            memcpy(d, src, (size_t)rows * sizeof(float));
            for (int64_t r = rows; r < mr; r++) d[r] = 0.0f;
        }
    } else if (J->pack_bt) {
        /* rows contiguous along k: the same transposing copy as a panel of
         * op(B) = B^T (pack_b), with MR in NR's place */
        J->pack_bt(kc, rows, mr, J->a + i0 * J->lda + J->pc, J->lda, dst);
    } else {
        for (int64_t r = 0; r < rows; r++) {
            const float *src = J->a + (i0 + r) * J->lda + J->pc;
            for (int64_t p = 0; p < kc; p++) dst[p * mr + r] = src[p];
        }
        for (int64_t r = rows; r < mr; r++)
            for (int64_t p = 0; p < kc; p++) dst[p * mr + r] = 0.0f;
    }
}

/* op(B)[p][j] is b[p*ldb + j] ('N') or b[j*ldb + p] ('T'). Packed:
 * dst[p*nr + c] = op(B)[pc + p][j0 + c], columns past n are zero. */
static void pack_b(const job *J, int64_t panel) {
    int nr = J->kern.nr;
    int64_t j0 = panel * nr, cols = J->n - j0 < nr ? J->n - j0 : nr, kc = J->kc;
    float *dst = J->bpack + panel * nr * kc;
    if (!J->tb) {
        const float *src = J->b + J->pc * J->ldb + j0;
        /* Whole panels of the AVX2 and AVX-512 widths: copies of a size
         * known here, a few vector moves instead of a memcpy call per row. */
        if (cols == 16 && nr == 16) {
            for (int64_t p = 0; p < kc; p++, src += J->ldb)
                memcpy(dst + p * 16, src, 16 * sizeof(float));
            return;
        }
        if (cols == 32 && nr == 32) {
            for (int64_t p = 0; p < kc; p++, src += J->ldb)
                memcpy(dst + p * 32, src, 32 * sizeof(float));
            return;
        }
        for (int64_t p = 0; p < kc; p++, src += J->ldb) {
            float *d = dst + p * nr;
            memcpy(d, src, (size_t)cols * sizeof(float));
            for (int64_t q = cols; q < nr; q++) d[q] = 0.0f;
        }
    } else if (J->pack_bt) {
        J->pack_bt(kc, cols, nr, J->b + j0 * J->ldb + J->pc, J->ldb, dst);
    } else {
        for (int64_t q = 0; q < cols; q++) {
            const float *src = J->b + (j0 + q) * J->ldb + J->pc;
            for (int64_t p = 0; p < kc; p++) dst[p * nr + q] = src[p];
        }
        for (int64_t q = cols; q < nr; q++)
            for (int64_t p = 0; p < kc; p++) dst[p * nr + q] = 0.0f;
    }
}

/* B panels [jp0, jp1) for one tile. The whole panels of op(B) = B ('N')
 * go row by row: each k step copies one contiguous run of the row across
 * all of them (sequential reads the prefetcher follows, where a panel at a
 * time reads 128 bytes of each of kc rows, kc streams at once). A ragged
 * last panel, and op(B) = B^T, go through pack_b. The same panels as
 * pack_b's either way. */
static void pack_b_panels(const job *J, int64_t jp0, int64_t jp1) {
    int nr = J->kern.nr;
    int64_t kc = J->kc, whole = J->tb ? jp0 : (J->n / nr < jp1 ? J->n / nr : jp1);
    const float *src = J->b + J->pc * J->ldb;
    for (int64_t p = 0; p < kc && jp0 < whole; p++, src += J->ldb)
        for (int64_t jp = jp0; jp < whole; jp++)
            memcpy(J->bpack + (jp * kc + p) * nr, src + jp * nr, (size_t)nr * sizeof(float));
    for (int64_t jp = whole > jp0 ? whole : jp0; jp < jp1; jp++) pack_b(J, jp);
}

/* Prefetch hints for rows [p0, p1) of the k block's op(B) = B over panels
 * [jp0, jp1) (hints only: nothing is read into the computation). */
static void prefetch_b_rows(const job *J, int64_t jp0, int64_t jp1, int64_t p0, int64_t p1) {
    int nr = J->kern.nr;
    int64_t last = jp1 * nr < J->n ? jp1 * nr : J->n;
    size_t bytes = (size_t)(last - jp0 * nr) * sizeof(float);
    if (p1 > J->kc) p1 = J->kc;
    for (int64_t p = p0; p < p1; p++) {
        const char *row = (const char *)(J->b + (J->pc + p) * J->ldb + jp0 * nr);
        for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(row + off, 0, 2);
    }
}

/* Ranges over A panels, then B panels. */
static void pack_range(void *ctx, int64_t begin, int64_t end) {
    const job *J = ctx;
    for (int64_t r = begin; r < end; r++) {
        if (r < J->mpanels)
            pack_a(J, r);
        else
            pack_b(J, r - J->mpanels);
    }
}

/* One micro-tile at panel (ip, jp). An edge tile runs on a full scratch
 * tile: C's valid part copied in (when the chain continues), the rest +0,
 * and only the valid part copied back. */
static void micro_tile(const job *J, int64_t ip, int64_t jp) {
    int mr = J->kern.mr, nr = J->kern.nr;
    int64_t i0 = ip * mr, j0 = jp * nr;
    const float *ap = J->apack + ip * mr * J->kc, *bp = J->bpack + jp * nr * J->kc;
    float *c = J->c + i0 * J->ldc + j0;
    int64_t rows = J->m - i0 < mr ? J->m - i0 : mr, cols = J->n - j0 < nr ? J->n - j0 : nr;
    if (J->kern.flex && !(rows == mr && cols == nr && J->kern.fn && !J->b_direct)) {
        if (J->b_direct)
            J->kern.flex(J->kc, ap, J->b + J->pc * J->ldb + j0, J->ldb, c, J->ldc, J->load_c,
                         (int)rows, (int)cols);
        else
            J->kern.flex(J->kc, ap, bp, nr, c, J->ldc, J->load_c, (int)rows, (int)cols);
        return;
    }
    if (rows == mr && cols == nr) {
        J->kern.fn(J->kc, ap, bp, c, J->ldc, J->load_c);
        return;
    }
    float tile[SB_GEMM_MR_MAX * SB_GEMM_NR_MAX] __attribute__((aligned(64)));
    if (J->load_c) {
        for (int64_t r = 0; r < mr; r++)
            for (int64_t q = 0; q < nr; q++)
                tile[r * nr + q] = r < rows && q < cols ? c[r * J->ldc + q] : 0.0f;
    }
    J->kern.fn(J->kc, ap, bp, tile, nr, J->load_c);
    for (int64_t r = 0; r < rows; r++)
        memcpy(c + r * J->ldc, tile + r * nr, (size_t)cols * sizeof(float));
}

/* Tiles of C, each owned by one range: A micro-panel outer (it stays in
 * L1), B micro-panels inner (they stay in L2 across the tile's rows). */
static void tile_range(void *ctx, int64_t begin, int64_t end) {
    const job *J = ctx;
    for (int64_t t = begin; t < end; t++) {
        int64_t tm = t / J->tiles_n, tn = t % J->tiles_n;
        int64_t ip0 = tm * J->tile_mp, ip1 = ip0 + J->tile_mp;
        int64_t jp0 = tn * J->tile_np, jp1 = jp0 + J->tile_np;
        if (ip1 > J->mpanels) ip1 = J->mpanels;
        if (jp1 > J->npanels) jp1 = J->npanels;
        if (J->b_in_tile) pack_b_panels(J, jp0, jp1);
        /* the next tile's rows of B, fetched while this one computes */
        int64_t nj0 = jp1, nj1 = jp1 + J->tile_np < J->npanels ? jp1 + J->tile_np : J->npanels;
        bool ahead = J->b_in_tile && !J->tb && t + 1 < end && nj0 < nj1;
        int64_t steps = ip1 - ip0, per = ahead ? (J->kc + steps - 1) / steps : 0;
        for (int64_t ip = ip0; ip < ip1; ip++) {
            for (int64_t jp = jp0; jp < jp1; jp++) micro_tile(J, ip, jp);
            if (ahead) prefetch_b_rows(J, nj0, nj1, (ip - ip0) * per, (ip - ip0 + 1) * per);
        }
    }
}

static int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }

void sb_gemv_t_chains(int64_t n, int64_t k, const float *a, const float *b, int64_t ldb, float *c,
                      bool load_c) {
    for (int64_t j = 0; j < n; j++) {
        const float *r = b + j * ldb;
        float acc = load_c ? c[j] : 0.0f;
        for (int64_t p = 0; p < k; p++) acc = fmaf(a[p], r[p], acc);
        c[j] = acc;
    }
}

/* A few rows of C = A B^T, A ('N') and B row-major, on the level's gemv_t:
 * each range owns columns [j0, j1) of every row. */
typedef struct gemv_job {
    sb_gemv_t_fn fn;
    int64_t m, n, k, lda, ldb, ldc;
    const float *a, *b;
    float *c;
    bool load_c;
} gemv_job;

static void gemv_range(void *ctx, int64_t begin, int64_t end) {
    const gemv_job *G = ctx;
    int64_t j0 = begin * GEMV_T_COLS, j1 = end * GEMV_T_COLS < G->n ? end * GEMV_T_COLS : G->n;
    for (int64_t i = 0; i < G->m; i++)
        G->fn(j1 - j0, G->k, G->a + i * G->lda, G->b + j0 * G->ldb, G->ldb, G->c + i * G->ldc + j0,
              G->load_c);
}

void sb_cpu_sgemm(char transa, char transb, int64_t m, int64_t n, int64_t k, const float *a,
                  int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
                  bool continue_chain) {
    if (m <= 0 || n <= 0) return;
    if (k == 0) {
        /* An empty chain is its start; the operands are not read. */
        if (!continue_chain)
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) c[i * ldc + j] = 0.0f;
        return;
    }
    const sb_gemm_kernels *gk = &sb_kernels()->gemm;
    bool ta = transa == 'T' || transa == 't', tb = transb == 'T' || transb == 't';
    if (gk->gemv_t && !ta && tb && m <= GEMV_T_MAX_M) {
        gemv_job G = {gk->gemv_t, m, n, k, lda, ldb, ldc, a, b, c, continue_chain};
        int64_t ranges = ceil_div(n, GEMV_T_COLS);
        if ((double)m * (double)n * (double)k < SMALL_FLOPS * 4)
            gemv_range(&G, 0, ranges);
        else
            sb_parallel_for(ranges, 1, gemv_range, &G);
        return;
    }
    job J = {
        .kern = pick_kernel(gk, m),
        .pack_bt = gk->pack_bt,
        .ta = ta,
        .tb = tb,
        .a = a, .b = b, .c = c, .lda = lda, .ldb = ldb, .ldc = ldc, .m = m, .n = n,
    };
    int mr = J.kern.mr, nr = J.kern.nr;
    /* Packing B pays for itself when each packed panel feeds many row
     * panels; up to 128 rows it cost more than it saved on Zen 4: with B
     * read in place, 64x256x3136 ran at 108 GF/s against 92 packed,
     * 128x1152x784 at 105 against 95, 64x64x12544 at 102 against 93 (1
     * thread; 2 threads alike), and power-of-two row strides (k x 4096)
     * no worse; from 192 rows on it lost on some shapes. */
    J.b_direct = J.kern.flex && !J.tb && m <= B_DIRECT_MAX_M;
    J.mpanels = ceil_div(m, mr);
    J.npanels = ceil_div(n, nr);
    /* Equal k blocks (a short last block would waste a pass). */
    int64_t kblocks = ceil_div(k, KC), kc_max = ceil_div(k, kblocks);

    bool small = (double)m * (double)n * (double)k < SMALL_FLOPS;
    int threads = small ? 1 : sb_num_threads();
    J.tile_mp = ceil_div(MC_ROWS, mr);
    J.tile_np = ceil_div(NC_COLS, nr);
    if (J.tile_mp > J.mpanels) J.tile_mp = J.mpanels;
    if (J.tile_np > J.npanels) J.tile_np = J.npanels;
    /* Enough tiles for every thread to get several (load balance), by
     * halving the longer side of a tile. */
    while (threads > 1 && ceil_div(J.mpanels, J.tile_mp) * ceil_div(J.npanels, J.tile_np) <
                              4 * (int64_t)threads) {
        if (J.tile_mp == 1 && J.tile_np == 1) break;
        if (J.tile_mp * mr >= J.tile_np * nr && J.tile_mp > 1)
            J.tile_mp = ceil_div(J.tile_mp, 2);
        else if (J.tile_np > 1)
            J.tile_np = ceil_div(J.tile_np, 2);
        else
            J.tile_mp = ceil_div(J.tile_mp, 2);
    }
    J.tiles_m = ceil_div(J.mpanels, J.tile_mp);
    J.tiles_n = ceil_div(J.npanels, J.tile_np);
    /* With one row of tiles each B panel feeds one tile only: the tile's
     * range packs it right before its products read it, so the panels are
     * still in cache (a 64-row C with n = 3136 packed B whole first, 3 MB
     * per k block, and read it back from memory: 40% of a 1x1
     * convolution's time). */
    J.b_in_tile = !J.b_direct && J.tiles_m == 1;

    size_t afloats = (size_t)(J.mpanels * mr * kc_max), bfloats = J.b_direct ? 0 : (size_t)(J.npanels * nr * kc_max);
    float stack[STACK_FLOATS] __attribute__((aligned(64)));
    float *buf = stack;
    if (afloats + bfloats > STACK_FLOATS) {
        /* Per-thread scratch: fresh mallocs of this size cost page faults
         * on every call (src/cpu/scratch.c). */
        buf = sb_scratch(SB_SCRATCH_GEMM, (afloats + bfloats) * sizeof(float));
        if (!buf) {
            /* Out of memory for the panels: the reference loops need none
             * and give the same bits. */
            sb_ref_sgemm(transa, transb, m, n, k, a, lda, b, ldb, c, ldc, continue_chain);
            return;
        }
    }
    J.apack = buf;
    J.bpack = buf + afloats;

    int64_t ntiles = J.tiles_m * J.tiles_n;
    int64_t npack = J.mpanels + (J.b_direct || J.b_in_tile ? 0 : J.npanels);
    for (int64_t pc = 0; pc < k; pc += kc_max) {
        J.pc = pc;
        J.kc = k - pc < kc_max ? k - pc : kc_max;
        J.load_c = pc > 0 || continue_chain;
        /* Packing is O((m + n) kc) against O(m n kc) for the tiles: below
         * PAR_PACK_FLOPS waking the pool for it costs more than it saves. */
        if (threads == 1 || (double)m * (double)n * (double)J.kc < PAR_PACK_FLOPS)
            pack_range(&J, 0, npack);
        else
            sb_parallel_for(npack, sb_parallel_grain(npack, 4), pack_range, &J);
        if (threads == 1)
            tile_range(&J, 0, ntiles);
        else
            sb_parallel_for(ntiles, 1, tile_range, &J);
    }
}

bool sb_cpu_sgemm_offset_available(void) { return sb_kernels()->gemm.nflex > 0; }

/* The k blocks of an implicit GEMM over k terms: equal blocks of at most KC. */
static int64_t offset_kc(int64_t k) { return ceil_div(k, ceil_div(k, KC)); }

int64_t sb_cpu_sgemm_offset_packed_floats(int64_t m, int64_t k) {
    kernel kern = pick_kernel(&sb_kernels()->gemm, m);
    if (!kern.offset || m <= 0 || k <= 0) return 0;
    return ceil_div(m, kern.mr) * kern.mr * k;
}

/* Block pc of A (kc terms) as micro-panels: apack[panel][p*mr + r] =
 * A[panel*mr + r][acol[pc + p]] (acol NULL: pc + p), rows past m zero.
 * Term after term, so that the panel is written in order while its mr
 * rows are read as mr streams (row after row, every write went to a new
 * line of a panel too large for L1). */
static void offset_pack_panels(int mr, int64_t m, int64_t pc, int64_t kc, const float *a,
                               int64_t lda, const int64_t *acol, int64_t ip0, int64_t ip1,
                               float *apack) {
    for (int64_t ip = ip0; ip < ip1; ip++) {
        float *dst = apack + ip * mr * kc;
        int64_t i0 = ip * mr, rows = m - i0 < mr ? m - i0 : mr;
        const float *src = a + i0 * lda;
        for (int64_t p = 0; p < kc; p++, dst += mr) {
            int64_t col = acol ? acol[pc + p] : pc + p;
            for (int64_t r = 0; r < rows; r++) dst[r] = src[r * lda + col];
            for (int64_t r = rows; r < mr; r++) dst[r] = 0.0f;
        }
    }
}

static void offset_pack_block(int mr, int64_t m, int64_t pc, int64_t kc, const float *a,
                              int64_t lda, float *apack) {
    offset_pack_panels(mr, m, pc, kc, a, lda, NULL, 0, ceil_div(m, mr), apack);
}

/* Block pc of the product from its packed panels (apack). Every tile runs
 * its k blocks in order: block pc+1 starts from the C block pc stored. */
static void offset_run_block(const kernel *kern, int64_t m, int64_t n, int64_t pc, int64_t kc,
                             const float *apack, const float *b, const int64_t *boff, float *c,
                             int64_t ldc) {
    int mr = kern->mr, nr = kern->nr;
    for (int64_t ip = 0; ip < ceil_div(m, mr); ip++) {
        int64_t i0 = ip * mr, rows = m - i0 < mr ? m - i0 : mr;
        for (int64_t j0 = 0; j0 < n; j0 += nr) {
            int64_t cols = n - j0 < nr ? n - j0 : nr;
            kern->offset(kc, apack + ip * mr * kc, b + j0, boff + pc, c + i0 * ldc + j0, ldc,
                         pc > 0, (int)rows, (int)cols);
        }
    }
}

void sb_cpu_sgemm_offset_pack(int64_t m, int64_t k, const float *a, int64_t lda, float *apack) {
    kernel kern = pick_kernel(&sb_kernels()->gemm, m);
    int64_t kc_max = offset_kc(k), mpad = ceil_div(m, kern.mr) * kern.mr;
    for (int64_t pc = 0; pc < k; pc += kc_max) {
        int64_t kc = k - pc < kc_max ? k - pc : kc_max;
        offset_pack_block(kern.mr, m, pc, kc, a, lda, apack + mpad * pc);
    }
}

void sb_cpu_sgemm_offset_packed(int64_t m, int64_t n, int64_t k, const float *apack,
                                const float *b, const int64_t *boff, float *c, int64_t ldc) {
    kernel kern = pick_kernel(&sb_kernels()->gemm, m);
    int64_t kc_max = offset_kc(k), mpad = ceil_div(m, kern.mr) * kern.mr;
    for (int64_t pc = 0; pc < k; pc += kc_max) {
        int64_t kc = k - pc < kc_max ? k - pc : kc_max;
        offset_run_block(&kern, m, n, pc, kc, apack + mpad * pc, b, boff, c, ldc);
    }
}

int sb_cpu_sgemm_gather_mr(int64_t m) { return pick_kernel(&sb_kernels()->gemm, m).mr; }

int64_t sb_cpu_sgemm_gather_floats(int64_t m, int64_t k) {
    int mr = sb_cpu_sgemm_gather_mr(m);
    return m <= 0 || k <= 0 ? 0 : ceil_div(m, mr) * mr * k;
}

void sb_cpu_sgemm_gather_pack(int64_t m, int64_t k, const float *a, int64_t lda,
                              const int64_t *acol, int64_t panel0, int64_t panel1, float *apack) {
    if (m > 0 && k > 0)
        offset_pack_panels(sb_cpu_sgemm_gather_mr(m), m, 0, k, a, lda, acol, panel0, panel1, apack);
}

void sb_cpu_sgemm_gather(int64_t m, int64_t n, int64_t k, int64_t ks, const float *apack,
                         const int64_t *aoff, const float *b, const int64_t *boff, float *c,
                         int64_t ldc, bool continue_chain) {
    kernel kern = pick_kernel(&sb_kernels()->gemm, m);
    int mr = kern.mr;
    if (!kern.gather) {
        /* no vector kernel at this level: the same chains one by one */
        for (int64_t i = 0; i < m; i++)
            for (int64_t q = 0; q < n; q++) {
                const float *panel = apack + i / mr * mr * k;
                float acc = continue_chain ? c[i * ldc + q] : 0.0f;
                for (int64_t s = 0; s < ks; s++)
                    acc = fmaf(panel[aoff[s] + i % mr], b[boff[s] + q], acc);
                c[i * ldc + q] = acc;
            }
        return;
    }
    /* k blocks of at most KC terms, each over every tile (its B rows stay
     * in cache across the row panels); block pc+1 continues the chains
     * block pc stored in C */
    int64_t kc_max = offset_kc(ks > 0 ? ks : 1);
    for (int64_t pc = 0; pc < ks || pc == 0; pc += kc_max) {
        int64_t kc = ks - pc < kc_max ? ks - pc : kc_max;
        for (int64_t ip = 0; ip < ceil_div(m, mr); ip++) {
            int64_t i0 = ip * mr, rows = m - i0 < mr ? m - i0 : mr;
            for (int64_t j0 = 0; j0 < n; j0 += kern.nr) {
                int64_t cols = n - j0 < kern.nr ? n - j0 : kern.nr;
                kern.gather(kc, apack + ip * mr * k, aoff + pc, b + j0, boff + pc,
                            c + i0 * ldc + j0, ldc, pc > 0 || continue_chain, (int)rows,
                            (int)cols);
            }
        }
        if (ks == 0) break;
    }
}

bool sb_cpu_sgemm_offset(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                         const float *b, const int64_t *boff, float *c, int64_t ldc) {
    kernel kern = pick_kernel(&sb_kernels()->gemm, m);
    if (!kern.offset) return false;
    if (m <= 0 || n <= 0) return true;
    if (k == 0) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t q = 0; q < n; q++) c[i * ldc + q] = 0.0f;
        return true;
    }
    int64_t kc_max = offset_kc(k);
    size_t afloats = (size_t)(ceil_div(m, kern.mr) * kern.mr * kc_max);
    float stack[STACK_FLOATS] __attribute__((aligned(64)));
    float *apack = afloats <= STACK_FLOATS ? stack : sb_scratch(SB_SCRATCH_GEMM, afloats * sizeof(float));
    if (!apack) return false;
    /* one block packed at a time, run, then the next into the same panels */
    for (int64_t pc = 0; pc < k; pc += kc_max) {
        int64_t kc = k - pc < kc_max ? k - pc : kc_max;
        offset_pack_block(kern.mr, m, pc, kc, a, lda, apack);
        offset_run_block(&kern, m, n, pc, kc, apack, b, boff, c, ldc);
    }
    return true;
}
