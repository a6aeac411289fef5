/* src/gpu/kernels/sum.cl - the canonical sum (contract section 3.2) and the
 * reductions over axes built on it (section 10), in the portable dialect.
 *
 * One work-group of exactly 32 work-items per output element: work-item l
 * is the contract's lane l. Within a block of 8192 elements lane l adds
 * elements l, l+32, ... in increasing order starting from -0.0f; the lanes
 * are folded by lane[j] + lane[j+s] for s = 16 .. 1 (work-item 0 does the
 * 31 additions in that order); block sums are streamed into the levels
 * above exactly as src/core/canonical_sum.c pushes them (work-item 0 keeps
 * them in an sb_acc of sum_acc.cl, which the program text includes before
 * this file), so a sum of any length has the reference's bits.
 *
 * The reduced elements of output o are enumerated row-major over the
 * reduced dims; `geom` is a device array of SB_SUM_GEOM longs:
 *   geom[0] nkeep, geom[1 + d] keep_shape, geom[9 + d] keep_xstride,
 *   geom[17 + d] keep_ostride, geom[25] nred, geom[26 + d] red_shape,
 *   geom[34 + d] red_xstride; the max/min kernels below add
 *   geom[42 + d] keep_istride (the int64 indices, SB_EXTREME_GEOM longs). */

#define SB_SUM_GEOM 42
#define SB_EXTREME_GEOM 50
#define SB_SUM_LANES_DEV SB_ACC_LANES
#define SB_SUM_BLOCK_DEV SB_ACC_BLOCK

/* The x (which 0), out (1) and index (2) offsets of output o (kept dims,
 * row-major). */
SB_INLINE SB_LONG sb_sum_keep_offset(SB_GLOBAL const SB_LONG *geom, int which, SB_LONG o) {
    SB_LONG off = 0;
    for (int d = (int)geom[0] - 1; d >= 0; d--) {
        SB_LONG s = geom[1 + d];
        off += (o % s) * geom[(which == 0 ? 9 : (which == 1 ? 17 : 42)) + d];
        o /= s;
    }
    return off;
}

/* The x offset of reduced element e. */
SB_INLINE SB_LONG sb_sum_red_offset(SB_GLOBAL const SB_LONG *geom, SB_LONG e) {
    SB_LONG off = 0;
    for (int d = (int)geom[25] - 1; d >= 0; d--) {
        SB_LONG s = geom[26 + d];
        off += (e % s) * geom[34 + d];
        e /= s;
    }
    return off;
}

SB_INLINE float sb_sum_fold32(SB_LOCAL_PTR const float *lanes) {
    float t[SB_SUM_LANES_DEV];
    for (int j = 0; j < SB_SUM_LANES_DEV; j++) t[j] = lanes[j];
    for (int s = SB_SUM_LANES_DEV / 2; s >= 1; s /= 2)
        for (int j = 0; j < s; j++) t[j] = t[j] + t[j + s];
    return t[0];
}

/* Lane `lane`'s part of the block of m reduced elements from b0 of the
 * output at xo: elements lane, lane + 32, ... added in order from -0.0f
 * (pass 1: the squared deviations from mean). */
SB_INLINE float sb_sum_lane(SB_GLOBAL const SB_LONG *geom, SB_GLOBAL const float *x, SB_LONG xo,
                            SB_LONG b0, SB_LONG m, int lane, int pass, float mean) {
    float acc = -0.0f;
    for (SB_LONG i = lane; i < m; i += SB_SUM_LANES_DEV) {
        float v = x[xo + sb_sum_red_offset(geom, b0 + i)];
        if (pass == 1) {
            float d = v - mean;
            v = d * d;
        }
        acc = acc + v;
    }
    return acc;
}

/* out[o] = canonical sum over the reduced elements of x (center 0), or of
 * (x - mean)^2 with mean = sum / nf (center 1); kind: 0 sum, 1 mean
 * (sum / nf), 2 var (ss / denom), 3 std (sqrt(var)); nan_result: var/std
 * with n - correction <= 0 give the default NaN. */
SB_KERNEL sb_sum_reduce(int kind, float nf, float denom, int nan_result, SB_LONG n,
                        SB_GLOBAL const SB_LONG *geom, SB_GLOBAL const float *x, SB_LONG x0,
                        SB_GLOBAL float *out, SB_LONG o0) {
    SB_LOCAL_ARRAY(float, lanes, SB_SUM_LANES_DEV);
    SB_LOCAL_ARRAY(float, result, 1);
    const int lane = SB_LOCAL_ID();
    const SB_LONG o = SB_GROUP_ID(0);
    const SB_LONG xo = x0 + sb_sum_keep_offset(geom, 0, o);
    float mean = 0.0f, r = 0.0f;
    for (int pass = 0; pass < (kind >= 2 ? 2 : 1); pass++) {
        sb_acc blocks; /* work-item 0's: the block sums */
        sb_acc_init(&blocks);
        float s = 0.0f;
        for (SB_LONG b0 = 0; b0 < n; b0 += SB_SUM_BLOCK_DEV) {
            SB_LONG m = n - b0 < SB_SUM_BLOCK_DEV ? n - b0 : SB_SUM_BLOCK_DEV;
            lanes[lane] = sb_sum_lane(geom, x, xo, b0, m, lane, pass, mean);
            SB_BARRIER();
            if (lane == 0) {
                float b = sb_sum_fold32(lanes);
                if (n <= SB_SUM_BLOCK_DEV) s = b;
                else sb_acc_add(&blocks, b);
            }
            SB_BARRIER();
        }
        if (lane == 0) {
            if (n > SB_SUM_BLOCK_DEV) s = sb_acc_result(&blocks);
            result[0] = s;
        }
        SB_BARRIER();
        s = result[0];
        SB_BARRIER();
        if (pass == 0) {
            mean = s / nf;
            r = kind == 0 ? s : mean;
        } else {
            r = s / denom;
            if (kind == 3) r = SB_SQRT(r);
        }
    }
    if (kind >= 2 && nan_result) r = SB_AS_F32(0x7fc00000u);
    if (lane == 0) out[o0 + sb_sum_keep_offset(geom, 1, o)] = r;
}

/* ---- the sum of long reductions, a group per block ----
 * For sum and mean over n > 8192 elements the blocks are independent:
 * sb_sum_blocks folds block k of output o in group o * nblocks + k
 * (sb_sum_reduce's lanes and fold), sb_sum_finish streams each output's
 * block sums in order into an sb_acc, as sb_sum_reduce's work-item 0 does
 * (the levels above the first of src/core/canonical_sum.c), so the bits
 * are sb_sum_reduce's. */

// bsum[o * nblocks + k]: the fold of block k of output o
SB_KERNEL sb_sum_blocks(SB_LONG n, SB_LONG nblocks, SB_GLOBAL const SB_LONG *geom,
                        SB_GLOBAL const float *x, SB_LONG x0, SB_GLOBAL float *bsum, SB_LONG b0) {
    SB_LOCAL_ARRAY(float, lanes, SB_SUM_LANES_DEV);
    const int lane = SB_LOCAL_ID();
    const SB_LONG grp = SB_GROUP_ID(0), o = grp / nblocks, first = (grp % nblocks) * SB_SUM_BLOCK_DEV;
    const SB_LONG m = n - first < SB_SUM_BLOCK_DEV ? n - first : SB_SUM_BLOCK_DEV;
    lanes[lane] = sb_sum_lane(geom, x, x0 + sb_sum_keep_offset(geom, 0, o), first, m, lane, 0, 0.0f);
    SB_BARRIER();
    if (lane == 0) bsum[b0 + grp] = sb_sum_fold32(lanes);
}

// out[o]: the block sums of output o streamed in order (kind 0 sum, 1 sum / nf)
SB_KERNEL sb_sum_finish(int kind, float nf, SB_LONG nout, SB_LONG nblocks,
                        SB_GLOBAL const SB_LONG *geom, SB_GLOBAL const float *bsum, SB_LONG b0,
                        SB_GLOBAL float *out, SB_LONG o0) {
    SB_FOR_EACH(o, nout) {
        sb_acc blocks;
        sb_acc_init(&blocks);
        for (SB_LONG k = 0; k < nblocks; k++) sb_acc_add(&blocks, bsum[b0 + o * nblocks + k]);
        float s = sb_acc_result(&blocks);
        out[o0 + sb_sum_keep_offset(geom, 1, o)] = kind == 0 ? s : s / nf;
    }
}

/* ---- max / min with first-occurrence indices, and their scatter ---- */

/* src/ref/reduce.c's order (contract section 10): v at a later position
 * replaces best when strictly better in the total order of maximum or
 * minimum, NaN on top for both and -0 < +0; ties keep the earlier element,
 * and the first NaN stays. */
SB_INLINE int sb_extreme_better(int is_max, float v, float best) {
    if (SB_ISNAN(best)) return 0;
    if (SB_ISNAN(v)) return 1;
    if (v == best)
        return is_max ? (SB_SIGNBIT(best) && !SB_SIGNBIT(v)) : (!SB_SIGNBIT(best) && SB_SIGNBIT(v));
    return is_max ? v > best : v < best;
}

/* One work-item per output element scans its n >= 1 reduced elements in
 * order (the reference's loop); out and idx are each written when wanted. */
SB_KERNEL sb_reduce_extreme(int is_max, SB_LONG nout, SB_LONG n, SB_GLOBAL const SB_LONG *geom,
                            SB_GLOBAL const float *x, SB_LONG x0, int want_out,
                            SB_GLOBAL float *out, SB_LONG o0, int want_idx,
                            SB_GLOBAL SB_LONG *idx, SB_LONG i0) {
    SB_FOR_EACH(o, nout) {
        const SB_LONG xo = x0 + sb_sum_keep_offset(geom, 0, o);
        float best = x[xo];
        SB_LONG best_e = 0;
        for (SB_LONG e = 1; e < n; e++) {
            float v = x[xo + sb_sum_red_offset(geom, e)];
            if (sb_extreme_better(is_max, v, best)) {
                best = v;
                best_e = e;
            }
        }
        if (want_out) out[o0 + sb_sum_keep_offset(geom, 1, o)] = best;
        if (want_idx) idx[i0 + sb_sum_keep_offset(geom, 2, o)] = best_e;
    }
}

/* The backward of max/min: for output o, every reduced element of dx
 * (through the x strides) becomes +0 except the idx[o]-th, which becomes
 * dy[o] (through the out strides). */
SB_KERNEL sb_reduce_scatter(SB_LONG nout, SB_LONG n, SB_GLOBAL const SB_LONG *geom,
                            SB_GLOBAL const float *dy, SB_LONG dy0, SB_GLOBAL const SB_LONG *idx,
                            SB_LONG i0, SB_GLOBAL float *dx, SB_LONG dx0) {
    SB_FOR_EACH(o, nout) {
        const SB_LONG xo = dx0 + sb_sum_keep_offset(geom, 0, o);
        const SB_LONG chosen = idx[i0 + sb_sum_keep_offset(geom, 2, o)];
        const float g = dy[dy0 + sb_sum_keep_offset(geom, 1, o)];
        for (SB_LONG e = 0; e < n; e++) dx[xo + sb_sum_red_offset(geom, e)] = e == chosen ? g : 0.0f;
    }
}
