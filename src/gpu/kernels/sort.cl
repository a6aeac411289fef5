/* src/gpu/kernels/sort.cl - sort, topk, kthvalue and median with indices,
 * and their backward (contract section 18; src/ref/sort.c), in the
 * portable dialect. The program text embeds src/ref/sort_rank.h (the key,
 * the order, ranks: one text with the reference) before this file.
 *
 * Geometry (SB_SORT_GEOM longs, src/ref/ref_sort.h's sb_ref_sort_geom):
 * ndim, dim, count, descending, median, start, then SB_SORT_DIMS each of
 * the shape, x's (dx's), values' (dy's) and indices' strides.
 *
 * The forward is the reference's definition: a work-item per element
 * counts the elements of its column ordered before it, and writes itself
 * to that rank when the rank is one the column writes (ranks are distinct,
 * so no two work-items write one place). The backward is a work-item per
 * column scattering dy in ascending p, a repeated index keeping the later
 * p, as the reference. */

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

// values / indices: ranks [first, first + count) of every column of x
SB_KERNEL sb_sort_select(SB_GLOBAL const SB_LONG *g, SB_LONG columns, SB_GLOBAL const float *x,
                         SB_LONG x0, SB_GLOBAL float *values, SB_LONG v0,
                         SB_GLOBAL SB_LONG *indices, SB_LONG i0) {
    const int dim = (int)g[1];
    const SB_LONG n = SB_SORT_SHAPE(g, dim), count = g[2];
    const bool descending = g[3] != 0, median = g[4] != 0;
    const SB_LONG xs = SB_SORT_XS(g, dim), vs = SB_SORT_VS(g, dim), is = SB_SORT_IS(g, dim);
    SB_FOR_EACH(e, columns * n) {
        SB_LONG i = e % n, xo, vo, io;
        sb_sort_column_at(g, e / n, &xo, &vo, &io);
        SB_GLOBAL const float *xc = x + x0 + xo;
        SB_LONG first = sb_sort_first_rank(median, g[5], xc, xs, n);
        SB_LONG rank = sb_sort_rank(xc, xs, n, i, descending);
        if (rank >= first && rank < first + count) {
            values[v0 + vo + (rank - first) * vs] = xc[i * xs];
            indices[i0 + io + (rank - first) * is] = i;
        }
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
