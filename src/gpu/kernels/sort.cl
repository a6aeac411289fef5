/* src/gpu/kernels/sort.cl - sort, topk, kthvalue and median with indices,
 * and their backward (contract section 18; src/ref/sort.c), in the
 * portable dialect. The program text embeds src/ref/sort_rank.h (the key,
 * the order, ranks: one text with the reference) before this file.
 *
 * Geometry (SB_SORT_GEOM longs, src/ref/ref_sort.h's sb_ref_sort_geom):
 * ndim, dim, count, descending, median, start, then SB_SORT_DIMS each of
 * the shape, x's (dx's), values' (dy's) and indices' strides.
 *
 * The forward sorts every column by sort_rank.h's (key, position) order
 * (sb_sort_before: a strict total order, so the sorted column is each
 * element at its reference rank) with a merge sort over (key, position)
 * pairs in two work buffers: sb_sort_keys writes each column's pairs in
 * position order; each pass of sb_sort_merge merges the sorted runs of
 * `width` pairs two by two, a work-item per pair placing itself at its
 * rank within its run plus the number of pairs of the other run below it
 * (a binary search), log2(n) passes in all: O(n log^2 n) work per column
 * over n work-items, where the definition counts in O(n^2); sb_sort_write
 * then copies the ranks [first, first + count) a column writes (the
 * median's first rank is sort_rank.h's sb_sort_first_rank). The backward
 * is a work-item per column scattering dy in ascending p, a repeated index
 * keeping the later p, as the reference. */

#define SB_SORT_DIMS 8
#define SB_SORT_GEOM (6 + 4 * SB_SORT_DIMS)
#define SB_SORT_SHAPE(g, k) g[6 + (k)]
#define SB_SORT_XS(g, k) g[6 + SB_SORT_DIMS + (k)]
#define SB_SORT_VS(g, k) g[6 + 2 * SB_SORT_DIMS + (k)]
#define SB_SORT_IS(g, k) g[6 + 3 * SB_SORT_DIMS + (k)]

/* The offsets of column `col` (row-major over the axes other than dim). */
SB_INLINE void sb_sort_column_at(SB_GLOBAL const SB_LONG *g, SB_LONG col, SB_LONG *xo,
                                 SB_LONG *vo, SB_LONG *io) {
    const int ndim = (int)g[0], dim = (int)g[1];
    SB_LONG x = 0, v = 0, i = 0;
    for (int k = ndim - 1; k >= 0; k--) {
        if (k == dim) continue;
        SB_LONG c = col % SB_SORT_SHAPE(g, k);
        col /= SB_SORT_SHAPE(g, k);
        x += c * SB_SORT_XS(g, k);
        v += c * SB_SORT_VS(g, k);
        i += c * SB_SORT_IS(g, k);
    }
    *xo = x;
    *vo = v;
    *io = i;
}

// keys / pos (columns x n, column-major by column): each element's sort key
// and its position along dim, in position order
SB_KERNEL sb_sort_keys(SB_GLOBAL const SB_LONG *g, SB_LONG columns, SB_GLOBAL const float *x,
                       SB_LONG x0, SB_GLOBAL uint32_t *keys, SB_LONG k0, SB_GLOBAL SB_LONG *pos,
                       SB_LONG p0) {
    const int dim = (int)g[1];
    const SB_LONG n = SB_SORT_SHAPE(g, dim), xs = SB_SORT_XS(g, dim);
    const bool descending = g[3] != 0;
    SB_FOR_EACH(e, columns * n) {
        SB_LONG i = e % n, xo, vo, io;
        sb_sort_column_at(g, e / n, &xo, &vo, &io);
        keys[k0 + e] = sb_sort_key_of(x[x0 + xo + i * xs], descending);
        pos[p0 + e] = i;
    }
}

// One merge pass: in every column, the sorted runs [lo, lo + width) and
// [lo + width, lo + 2 width) of (sk, sp) merged into (dk, dp) at lo
SB_KERNEL sb_sort_merge(SB_LONG width, SB_LONG columns, SB_LONG n, SB_GLOBAL const uint32_t *sk,
                        SB_LONG sk0, SB_GLOBAL const SB_LONG *sp, SB_LONG sp0,
                        SB_GLOBAL uint32_t *dk, SB_LONG dk0, SB_GLOBAL SB_LONG *dp, SB_LONG dp0) {
    SB_FOR_EACH(e, columns * n) {
        const SB_LONG base = e - e % n, p = e % n;
        const SB_LONG lo = p - p % (2 * width);
        const SB_LONG mid = lo + width < n ? lo + width : n;
        const SB_LONG hi = lo + 2 * width < n ? lo + 2 * width : n;
        const uint32_t k = sk[sk0 + e];
        const SB_LONG q = sp[sp0 + e];
        const bool left = p < mid;
        /* the other run's pairs below (k, q) form a prefix of it */
        SB_LONG a = left ? mid : lo, b = left ? hi : mid;
        const SB_LONG start = a;
        while (a < b) {
            SB_LONG m = a + (b - a) / 2;
            if (sb_sort_before(sk[sk0 + base + m], sp[sp0 + base + m], k, q)) a = m + 1;
            else b = m;
        }
        const SB_LONG at = lo + (p - (left ? lo : mid)) + (a - start);
        dk[dk0 + base + at] = k;
        dp[dp0 + base + at] = q;
    }
}

// values / indices: ranks [first, first + count) of every column, pos
// holding each column's positions in sorted order
SB_KERNEL sb_sort_write(SB_GLOBAL const SB_LONG *g, SB_LONG columns, SB_GLOBAL const float *x,
                        SB_LONG x0, SB_GLOBAL const SB_LONG *pos, SB_LONG p0,
                        SB_GLOBAL float *values, SB_LONG v0, SB_GLOBAL SB_LONG *indices,
                        SB_LONG i0) {
    const int dim = (int)g[1];
    const SB_LONG n = SB_SORT_SHAPE(g, dim), count = g[2];
    const bool median = g[4] != 0;
    const SB_LONG xs = SB_SORT_XS(g, dim), vs = SB_SORT_VS(g, dim), is = SB_SORT_IS(g, dim);
    SB_FOR_EACH(e, columns * count) {
        SB_LONG c = e / count, j = e % count, xo, vo, io;
        sb_sort_column_at(g, c, &xo, &vo, &io);
        SB_GLOBAL const float *xc = x + x0 + xo;
        SB_LONG rank = sb_sort_first_rank(median, g[5], xc, xs, n) + j;
        if (rank >= n) continue;
        SB_LONG i = pos[p0 + c * n + rank];
        values[v0 + vo + j * vs] = xc[i * xs];
        indices[i0 + io + j * is] = i;
    }
}

// dx[indices[p]] = dy[p] for p ascending in every column (dx holds +0)
SB_KERNEL sb_sort_scatter(SB_GLOBAL const SB_LONG *g, SB_LONG columns, SB_GLOBAL const float *dy,
                          SB_LONG dy0, SB_GLOBAL const SB_LONG *indices, SB_LONG i0,
                          SB_GLOBAL float *dx, SB_LONG dx0) {
    const int dim = (int)g[1];
    const SB_LONG count = g[2];
    const SB_LONG xs = SB_SORT_XS(g, dim), vs = SB_SORT_VS(g, dim), is = SB_SORT_IS(g, dim);
    SB_FOR_EACH(col, columns) {
        SB_LONG xo, vo, io;
        sb_sort_column_at(g, col, &xo, &vo, &io);
        for (SB_LONG p = 0; p < count; p++)
            dx[dx0 + xo + indices[i0 + io + p * is] * xs] = dy[dy0 + vo + p * vs];
    }
}
