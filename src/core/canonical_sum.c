/* The canonical sum (docs/CONTRACT.md, "Canonical sum").
 *
 * Rule, for n elements x[0..n-1]:
 *   n == 0:        +0.0f.
 *   n <= 8192:     32 lanes start at -0.0f (the exact identity of IEEE
 *                  addition: -0 + v == v for every v, including +0); element i
 *                  is added to lane i mod 32 in increasing i; then the lanes
 *                  are folded by lane[j] += lane[j+s] for s = 16, 8, 4, 2, 1
 *                  and the result is lane[0].
 *   n > 8192:      each consecutive block of 8192 elements (the last may be
 *                  shorter) is summed as above, and the block sums are summed
 *                  again by this same rule.
 * The 32 lanes match a warp and any SIMD width that divides 32; blocks let
 * threads own whole blocks. Nothing in the rule depends on the machine.
 *
 * This file streams: level L holds the lanes of the block being filled at
 * depth L; a full block is folded and pushed one level up. It is the
 * reference, on one thread with the scalar row adder; the fast backend
 * (src/cpu/sum.c) runs the same functions with its ISA level's row adder
 * (src/cpu/sum_*.c, the very same per-lane additions) and threads the
 * blocks of a long sum. */
#include "core/canonical_sum.h"

float sb_sum_tree32(const float lane_in[SB_SUM_LANES]) {
    float lane[SB_SUM_LANES];
    for (int j = 0; j < SB_SUM_LANES; j++) lane[j] = lane_in[j];
    for (int s = SB_SUM_LANES / 2; s >= 1; s /= 2)
        for (int j = 0; j < s; j++) lane[j] = lane[j] + lane[j + s];
    return lane[0];
}

/* sb_sum_tree32's result when only lanes [0, used) were touched, the others
 * still holding their -0.0f: folding such a lane into another adds -0, and
 * v + -0 == v exactly for every v a lane can hold (a lane is a sum, so never
 * a signalling NaN), so those additions are skipped. A sum of n < 32 terms
 * costs n - 1 additions instead of 31 (a broadcast gradient with nothing to
 * reduce sums one term per output). */
static float tree_of_first(float lane[SB_SUM_LANES], int used) {
    for (int s = SB_SUM_LANES / 2; s >= 1; s /= 2) {
        for (int j = 0; j < s && j + s < used; j++) lane[j] = lane[j] + lane[j + s];
        if (used > s) used = s;
    }
    return lane[0];
}

float sb_sum_few_terms(float *t, int k) {
    if (k <= 0) return 0.0f; /* the empty sum is +0 */
    for (int i = 0; i < k; i++) t[i] = -0.0f + t[i];
    return tree_of_first(t, k);
}

/* ---- row adders ------------------------------------------------------------ */

void sb_sum_rows_scalar(float lane[SB_SUM_LANES], const float *x, int64_t rows) {
    for (int64_t r = 0; r < rows; r++, x += SB_SUM_LANES)
        for (int j = 0; j < SB_SUM_LANES; j++) lane[j] = lane[j] + x[j];
}

/* ---- the streaming accumulator ----------------------------------------------- */

static void reset_level(sb_sum_acc *acc, int level) {
    for (int j = 0; j < SB_SUM_LANES; j++) acc->lane[level][j] = -0.0f;
    acc->count[level] = 0;
}

void sb_sum_init(sb_sum_acc *acc) {
    for (int level = 0; level < SB_SUM_LEVELS; level++) reset_level(acc, level);
}

static void push(sb_sum_acc *acc, int level, float x);

/* Level `level` holds a whole block: fold it into one element of the level
 * above. */
static void complete_block(sb_sum_acc *acc, int level) {
    float block = sb_sum_tree32(acc->lane[level]);
    reset_level(acc, level);
    push(acc, level + 1, block);
}

static void push(sb_sum_acc *acc, int level, float x) {
    int64_t c = acc->count[level];
    acc->lane[level][c % SB_SUM_LANES] = acc->lane[level][c % SB_SUM_LANES] + x;
    acc->count[level] = c + 1;
    if (c + 1 == SB_SUM_BLOCK && level + 1 < SB_SUM_LEVELS) complete_block(acc, level);
}

void sb_sum_add(sb_sum_acc *acc, float x) { push(acc, 0, x); }

void sb_sum_add_n(sb_sum_acc *acc, const float *x, int64_t n) {
    sb_sum_add_rows(acc, x, n, sb_sum_rows_scalar);
}

void sb_sum_add_rows(sb_sum_acc *acc, const float *x, int64_t n, sb_sum_rows_fn rows_fn) {
    int64_t i = 0;
    /* Up to the next lane-0 boundary one at a time, then whole rows. */
    while (i < n && acc->count[0] % SB_SUM_LANES != 0) push(acc, 0, x[i++]);
    if (n - i >= SB_SUM_LANES) {
        while (n - i >= SB_SUM_LANES) {
            int64_t room = (SB_SUM_BLOCK - acc->count[0]) / SB_SUM_LANES;
            int64_t rows = (n - i) / SB_SUM_LANES;
            if (rows > room) rows = room;
            rows_fn(acc->lane[0], x + i, rows);
            acc->count[0] += rows * SB_SUM_LANES;
            i += rows * SB_SUM_LANES;
            if (acc->count[0] == SB_SUM_BLOCK) complete_block(acc, 0);
        }
    }
    while (i < n) push(acc, 0, x[i++]);
}

float sb_sum_result(const sb_sum_acc *acc_in) {
    sb_sum_acc acc = *acc_in; /* finishing must not disturb the caller's state */
    int top = -1;
    for (int level = 0; level < SB_SUM_LEVELS; level++)
        if (acc.count[level] > 0) top = level;
    if (top < 0) return 0.0f;
    /* The partial block at each level below the top is one more element of
     * the level above; push them upward in order, lowest first. */
    for (int level = 0; level < top; level++) {
        if (acc.count[level] == 0) continue;
        float partial = sb_sum_tree32(acc.lane[level]);
        reset_level(&acc, level);
        push(&acc, level + 1, partial);
    }
    for (int level = SB_SUM_LEVELS - 1; level >= 0; level--)
        if (acc.count[level] > 0) return sb_sum_tree32(acc.lane[level]);
    return 0.0f; /* unreachable: the top level kept its elements */
}

/* ---- whole buffers ------------------------------------------------------------ */

/* Rule 2 for one block (canonical_sum.h). Strided elements are gathered a
 * row chunk at a time so that the lanes still see whole rows. */
float sb_sum_block(const float *x, int64_t n, int64_t stride, sb_sum_rows_fn rows_fn) {
    float lane[SB_SUM_LANES];
    for (int j = 0; j < SB_SUM_LANES; j++) lane[j] = -0.0f;
    int64_t full = n / SB_SUM_LANES * SB_SUM_LANES;
    if (stride == 1) {
        rows_fn(lane, x, full / SB_SUM_LANES);
    } else {
        enum { CHUNK = 16 * SB_SUM_LANES };
        float buf[CHUNK];
        for (int64_t i = 0; i < full; i += CHUNK) {
            int64_t m = full - i < CHUNK ? full - i : CHUNK;
            for (int64_t k = 0; k < m; k++) buf[k] = x[(i + k) * stride];
            rows_fn(lane, buf, m / SB_SUM_LANES);
        }
    }
    return sb_sum_block_finish(lane, x, n, stride);
}

float sb_sum_block_finish(float lane[SB_SUM_LANES], const float *x, int64_t n, int64_t stride) {
    for (int64_t i = n / SB_SUM_LANES * SB_SUM_LANES; i < n; i++)
        lane[i % SB_SUM_LANES] = lane[i % SB_SUM_LANES] + x[i * stride];
    return n >= SB_SUM_LANES ? sb_sum_tree32(lane) : tree_of_first(lane, (int)n);
}

/* Rule 3 read literally: the block sums, in block order, are summed again by
 * the same rule (streamed, so no buffer of block sums). */
float sb_sum_canonical(const float *x, int64_t n, int64_t stride) {
    if (n <= 0) return 0.0f;
    if (n <= SB_SUM_BLOCK) return sb_sum_block(x, n, stride, sb_sum_rows_scalar);
    sb_sum_acc acc;
    sb_sum_init(&acc);
    for (int64_t at = 0; at < n; at += SB_SUM_BLOCK) {
        int64_t len = n - at < SB_SUM_BLOCK ? n - at : SB_SUM_BLOCK;
        sb_sum_add(&acc, sb_sum_block(x + at * stride, len, stride, sb_sum_rows_scalar));
    }
    return sb_sum_result(&acc);
}
