/* src/gpu/kernels/sum_acc.cl - the streaming canonical sum (contract
 * section 3.2) for one work-item, in the portable dialect: the state and
 * the pushes of src/core/canonical_sum.c (sb_sum_acc), so a work-item that
 * feeds elements in their logical order gets the reference's bits. Used by
 * the kernels that sum a few elements per output (pooling windows, the
 * block sums of a long reduction). Levels: 4 (8192^4 = 2^52 elements). */

#define SB_ACC_LANES 32
#define SB_ACC_BLOCK 8192
#define SB_ACC_LEVELS 4

typedef struct sb_acc {
    float lane[SB_ACC_LEVELS][SB_ACC_LANES];
    SB_LONG count[SB_ACC_LEVELS];
} sb_acc;

/* lane[j] += lane[j+s] for s = 16, 8, 4, 2, 1; the sum is lane[0]. */
SB_INLINE float sb_acc_fold(float *lane) {
    for (int s = SB_ACC_LANES / 2; s >= 1; s /= 2)
        for (int j = 0; j < s; j++) lane[j] = lane[j] + lane[j + s];
    return lane[0];
}

SB_INLINE void sb_acc_reset(sb_acc *a, int level) {
    for (int j = 0; j < SB_ACC_LANES; j++) a->lane[level][j] = -0.0f;
    a->count[level] = 0;
}

SB_INLINE void sb_acc_init(sb_acc *a) {
    for (int l = 0; l < SB_ACC_LEVELS; l++) sb_acc_reset(a, l);
}

/* x enters level `from`; a level that fills a block folds into the next. */
SB_INLINE void sb_acc_push(sb_acc *a, int from, float x) {
    for (int l = from; l < SB_ACC_LEVELS; l++) {
        int j = (int)(a->count[l] % SB_ACC_LANES);
        a->lane[l][j] = a->lane[l][j] + x;
        a->count[l]++;
        if (a->count[l] < SB_ACC_BLOCK || l + 1 == SB_ACC_LEVELS) return;
        x = sb_acc_fold(a->lane[l]);
        sb_acc_reset(a, l);
    }
}

SB_INLINE void sb_acc_add(sb_acc *a, float x) { sb_acc_push(a, 0, x); }

/* sb_sum_result: each partial level below the top is one more element of
 * the level above, lowest first; the highest level's fold is the sum.
 * Consumes the state. */
SB_INLINE float sb_acc_result(sb_acc *a) {
    int top = -1;
    for (int l = 0; l < SB_ACC_LEVELS; l++)
        if (a->count[l] > 0) top = l;
    if (top < 0) return 0.0f;
    for (int l = 0; l < top; l++) {
        if (a->count[l] == 0) continue;
        float partial = sb_acc_fold(a->lane[l]);
        sb_acc_reset(a, l);
        sb_acc_push(a, l + 1, partial);
    }
    for (int l = SB_ACC_LEVELS - 1; l >= 0; l--)
        if (a->count[l] > 0) return sb_acc_fold(a->lane[l]);
    return 0.0f;
}
