/* The fast canonical sum (src/cpu/sum_internal.h): the reference functions
 * of src/core/canonical_sum.c driven with the kernel context's row adder,
 * and the blocks of a long sum computed by threads. Blocks are independent
 * (rule 3 sums their sums, in block order, by the same rule), so which
 * thread computes a block cannot change its bits. */
#include "cpu/kernels.h"
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

/* Columns are summed a tile of SUM_COLS at a time: a chunk of rows of the
 * tile is transposed into one contiguous run per column and streamed into
 * that column's accumulator, so each column's sum sees its elements in row
 * order, as sb_sum_canonical's stride walk does, and the reads are whole
 * rows (a column at a time, every element was a cache miss). */
enum { SUM_COLS = 16, SUM_ROWS = 256 };

typedef struct columns_ctx {
    const float *x;
    int64_t rows, cols, ld;
    float *out;
} columns_ctx;

static void columns_range(void *vctx, int64_t t0, int64_t t1) {
    const columns_ctx *c = vctx;
    float run[SUM_COLS][SUM_ROWS];
    sb_sum_acc acc[SUM_COLS];
    for (int64_t t = t0; t < t1; t++) {
        int64_t j0 = t * SUM_COLS, w = c->cols - j0 < SUM_COLS ? c->cols - j0 : SUM_COLS;
        for (int64_t k = 0; k < w; k++) sb_sum_init(&acc[k]);
        for (int64_t r0 = 0; r0 < c->rows; r0 += SUM_ROWS) {
            int64_t m = c->rows - r0 < SUM_ROWS ? c->rows - r0 : SUM_ROWS;
            for (int64_t i = 0; i < m; i++) {
                const float *row = c->x + (r0 + i) * c->ld + j0;
                for (int64_t k = 0; k < w; k++) run[k][i] = row[k];
            }
            for (int64_t k = 0; k < w; k++) sb_cpu_sum_add_n(&acc[k], run[k], m);
        }
        for (int64_t k = 0; k < w; k++) c->out[j0 + k] = sb_sum_result(&acc[k]);
    }
}

void sb_cpu_sum_columns(const float *x, int64_t rows, int64_t cols, int64_t ld, float *out) {
    columns_ctx c = {x, rows, cols, ld, out};
    int64_t tiles = (cols + SUM_COLS - 1) / SUM_COLS, per_tile = rows * SUM_COLS;
    /* at least 64K elements per range: below that a hand-off costs more */
    sb_parallel_for(tiles, sb_parallel_grain(tiles, 1 + 65536 / (per_tile > 0 ? per_tile : 1)),
                    columns_range, &c);
}
