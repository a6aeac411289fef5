/* The fast canonical sum (src/cpu/sum_internal.h): the reference functions
 * of src/core/canonical_sum.c driven with the kernel context's row adder,
 * and the blocks of a long sum computed by threads. Blocks are independent
 * (rule 3 sums their sums, in block order, by the same rule), so which
 * thread computes a block cannot change its bits. */
#include <stdlib.h>
#include "cpu/kernels.h"
#include "cpu/ops_internal.h"
#include "cpu/sum_internal.h"

void sb_cpu_sum_add_n(sb_sum_acc *acc, const float *x, int64_t n) {
    sb_sum_add_rows(acc, x, n, sb_kernels()->sum_rows);
}

/* Rule 2 on 0 < n <= SB_SUM_BLOCK elements with the level's kernels. */
static float block_sum(const sb_cpu_kernels *k, const float *x, int64_t n, int64_t stride) {
    if (stride == 1 && k->sum_block) return k->sum_block(x, n);
    return sb_sum_block(x, n, stride, k->sum_rows);
}

typedef struct blocks_ctx {
    const float *x;    /* the batch's first element */
    int64_t n, stride; /* elements from x to the end of the whole sum */
    float *out;        /* one sum per block of the batch */
    const sb_cpu_kernels *k;
} blocks_ctx;

static void blocks_range(void *vctx, int64_t b0, int64_t b1) {
    const blocks_ctx *c = vctx;
    for (int64_t b = b0; b < b1; b++) {
        int64_t at = b * SB_SUM_BLOCK;
        int64_t len = c->n - at < SB_SUM_BLOCK ? c->n - at : SB_SUM_BLOCK;
        c->out[b] = block_sum(c->k, c->x + at * c->stride, len, c->stride);
    }
}

/* Threads compute the block sums in batches (a bounded buffer, no
 * allocation) that stream into the outer sum. */
float sb_cpu_sum_canonical(const float *x, int64_t n, int64_t stride) {
    if (n <= 0) return 0.0f;
    const sb_cpu_kernels *k = sb_kernels();
    sb_sum_rows_fn rows_fn = k->sum_rows;
    if (n <= SB_SUM_BLOCK) return block_sum(k, x, n, stride);
    enum { BATCH = 1024 }; /* blocks per batch: 8M elements */
    float sums[BATCH];
    int64_t nblocks = (n + SB_SUM_BLOCK - 1) / SB_SUM_BLOCK;
    sb_sum_acc acc;
    sb_sum_init(&acc);
    for (int64_t b = 0; b < nblocks; b += BATCH) {
        int64_t nb = nblocks - b < BATCH ? nblocks - b : BATCH;
        blocks_ctx c = {x + b * SB_SUM_BLOCK * stride, n - b * SB_SUM_BLOCK, stride, sums, k};
        /* at least 8 blocks (64K elements) per range: below that a thread
         * hand-off costs more than it saves */
        sb_parallel_for(nb, sb_parallel_grain(nb, 8), blocks_range, &c);
        sb_sum_add_rows(&acc, sums, nb, rows_fn);
    }
    return sb_sum_result(&acc);
}

/* ---- column sums --------------------------------------------------------------
 * Column c's canonical sum over rows r = 0..rows-1 adds row r to lane r % 32
 * of its block. For a tile of neighbouring columns those additions are one
 * vector addition per row, lane row (r % 32) += matrix row r, across the
 * tile's columns: the pointwise table's vector loops do it over a lane
 * buffer of 32 x tile floats that stays in L1, and the tree s = 16, ..., 1
 * is lane row j += lane row j + s. Every column sees the scalar rule's
 * additions in its order (sb_sum_block); a column of fewer than 32 rows has
 * untouched lanes at -0, whose folding changes no value (sb_sum_few_terms).
 * Blocks of 8192 rows are summed so, and their sums streamed into one
 * accumulator per column, as sb_sum_canonical streams them. */
enum { TILE_COLS = 64 };

typedef struct columns_ctx {
    const sb_column_terms *terms;
    int64_t rows, cols;
    float *const *out;
} columns_ctx;

/* The sums of one block of rows [r0, r1) of the tile's w columns at c0,
 * into blk[m][0..w) for each matrix m. */
static void block_columns(const columns_ctx *c, int64_t r0, int64_t r1, int64_t c0, int64_t w,
                          float (*blk)[TILE_COLS]) {
    const sb_pwv_table *pw = sb_kernels()->pointwise;
    int nmat = c->terms->nmat;
    float lane[2][SB_SUM_LANES][TILE_COLS], buf[2][TILE_COLS];
    float *bufs[2] = {buf[0], buf[1]};
    const float *t[2];
    for (int m = 0; m < nmat; m++)
        for (int j = 0; j < SB_SUM_LANES; j++)
            for (int64_t k = 0; k < w; k++) lane[m][j][k] = -0.0f;
    for (int64_t r = r0; r < r1; r++) {
        c->terms->row(c->terms->ctx, r, c0, w, bufs, t);
        for (int m = 0; m < nmat; m++) {
            float *l = lane[m][(r - r0) % SB_SUM_LANES];
            pw->binary(SB_BINARY_ADD, w, l, 1, t[m], 1, l);
        }
    }
    for (int m = 0; m < nmat; m++) {
        for (int s = SB_SUM_LANES / 2; s >= 1; s /= 2)
            for (int j = 0; j < s; j++)
                pw->binary(SB_BINARY_ADD, w, lane[m][j], 1, lane[m][j + s], 1, lane[m][j]);
        for (int64_t k = 0; k < w; k++) blk[m][k] = lane[m][0][k];
    }
}

/* The plain matrix: each row's stretch read in place. */
typedef struct matrix_rows {
    const float *x;
    int64_t ld;
} matrix_rows;

static void matrix_row(const void *ctx, int64_t r, int64_t c0, int64_t n, float *const bufs[2],
                       const float *t[2]) {
    const matrix_rows *mr = ctx;
    (void)n;
    (void)bufs;
    t[0] = mr->x + r * mr->ld + c0;
}

/* Fewer columns than a vector is wide (a tile of a narrow matrix): a
 * vector addition per row would be its scalar tail, so each column's terms
 * are gathered, NARROW_ROWS rows at a time, into a contiguous run that
 * streams into the column's accumulator (whole lane rows at once). */
enum { NARROW_COLS = 16, NARROW_ROWS = 256 };

static void narrow_columns(const columns_ctx *c, int64_t c0, int64_t w) {
    int nmat = c->terms->nmat;
    float run[2][NARROW_COLS][NARROW_ROWS], buf[2][NARROW_COLS];
    float *bufs[2] = {buf[0], buf[1]};
    const float *t[2];
    sb_sum_acc acc[2][NARROW_COLS];
    for (int m = 0; m < nmat; m++)
        for (int64_t k = 0; k < w; k++) sb_sum_init(&acc[m][k]);
    for (int64_t r0 = 0; r0 < c->rows; r0 += NARROW_ROWS) {
        int64_t len = c->rows - r0 < NARROW_ROWS ? c->rows - r0 : NARROW_ROWS;
        if (c->terms->row == matrix_row) { /* read in place, without a call per row */
            const matrix_rows *mr = c->terms->ctx;
            for (int64_t i = 0; i < len; i++)
                for (int64_t k = 0; k < w; k++) run[0][k][i] = mr->x[(r0 + i) * mr->ld + c0 + k];
        } else {
            for (int64_t i = 0; i < len; i++) {
                c->terms->row(c->terms->ctx, r0 + i, c0, w, bufs, t);
                for (int m = 0; m < nmat; m++)
                    for (int64_t k = 0; k < w; k++) run[m][k][i] = t[m][k];
            }
        }
        for (int m = 0; m < nmat; m++)
            for (int64_t k = 0; k < w; k++) sb_cpu_sum_add_n(&acc[m][k], run[m][k], len);
    }
    for (int m = 0; m < nmat; m++)
        for (int64_t k = 0; k < w; k++) c->out[m][c0 + k] = sb_sum_result(&acc[m][k]);
}

static void columns_range(void *vctx, int64_t t0, int64_t t1) {
    const columns_ctx *c = vctx;
    int nmat = c->terms->nmat;
    float blk[2][TILE_COLS];
    for (int64_t t = t0; t < t1; t++) {
        int64_t c0 = t * TILE_COLS, w = c->cols - c0 < TILE_COLS ? c->cols - c0 : TILE_COLS;
        if (w < NARROW_COLS) {
            narrow_columns(c, c0, w);
            continue;
        }
        if (c->rows <= SB_SUM_BLOCK) {
            if (c->rows > 0) block_columns(c, 0, c->rows, c0, w, blk);
            for (int m = 0; m < nmat; m++)
                for (int64_t k = 0; k < w; k++) c->out[m][c0 + k] = c->rows > 0 ? blk[m][k] : 0.0f;
            continue;
        }
        /* several blocks: their sums streamed per column, a column at a time
         * in its own accumulator (one per column and matrix: 100 KB, so on
         * the heap; without it, one column at a time) */
        sb_sum_acc *acc = malloc((size_t)(nmat * w) * sizeof *acc);
        int64_t kw = acc ? w : 1;
        for (int64_t k0 = 0; k0 < w; k0 += kw) {
            sb_sum_acc one[2];
            sb_sum_acc *a = acc ? acc : one;
            for (int64_t i = 0; i < nmat * kw; i++) sb_sum_init(&a[i]);
            for (int64_t r0 = 0; r0 < c->rows; r0 += SB_SUM_BLOCK) {
                int64_t r1 = c->rows - r0 < SB_SUM_BLOCK ? c->rows : r0 + SB_SUM_BLOCK;
                block_columns(c, r0, r1, c0 + k0, kw, blk);
                for (int m = 0; m < nmat; m++)
                    for (int64_t k = 0; k < kw; k++) sb_sum_add(&a[m * kw + k], blk[m][k]);
            }
            for (int m = 0; m < nmat; m++)
                for (int64_t k = 0; k < kw; k++)
                    c->out[m][c0 + k0 + k] = sb_sum_result(&a[m * kw + k]);
        }
        free(acc);
    }
}

void sb_cpu_sum_columns_of(const sb_column_terms *terms, int64_t rows, int64_t cols,
                           float *const out[2]) {
    columns_ctx c = {terms, rows, cols, out};
    int64_t tiles = (cols + TILE_COLS - 1) / TILE_COLS, per_tile = rows * TILE_COLS * terms->nmat;
    /* at least 64K elements per range: below that a hand-off costs more */
    sb_parallel_for(tiles, sb_parallel_grain(tiles, 1 + 65536 / (per_tile > 0 ? per_tile : 1)),
                    columns_range, &c);
}

void sb_cpu_sum_columns(const float *x, int64_t rows, int64_t cols, int64_t ld, float *out) {
    matrix_rows mr = {x, ld};
    sb_column_terms terms = {matrix_row, &mr, 1};
    float *const outs[2] = {out, NULL};
    sb_cpu_sum_columns_of(&terms, rows, cols, outs);
}
