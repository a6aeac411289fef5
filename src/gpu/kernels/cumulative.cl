/* src/gpu/kernels/cumulative.cl - cumsum and cumprod, forward and backward
 * (contract section 10, "Cumulative sum and product"), in the portable
 * dialect. The pointwise program embeds src/ref/cumulative_chain.h (the
 * chains every implementation shares) before this file.
 *
 * Geometry (SB_CUM_GEOM longs, src/ref/ref_cumulative.h's sb_ref_cum_geom):
 * ndim, dim, then SB_CUM_DIMS each of the shape and the strides of x (dy
 * for the cumsum backward), y, dy and out.
 *
 * One work-item per column (the positions that differ only along dim): a
 * column is one sequential chain, and columns write disjoint elements. */

#define SB_CUM_DIMS 8
#define SB_CUM_GEOM (2 + 5 * SB_CUM_DIMS)

// x, y, dy, out share one shape; y and dy are read by the cumprod backward only
SB_KERNEL sb_cumulative(SB_GLOBAL const SB_LONG *g, int kind, SB_LONG columns,
                        SB_GLOBAL const float *x, SB_LONG x0, SB_GLOBAL const float *y, SB_LONG y0,
                        SB_GLOBAL const float *dy, SB_LONG dy0, SB_GLOBAL float *out,
                        SB_LONG out0) {
    const int ndim = (int)g[0], dim = (int)g[1];
    int64_t shape[SB_CUM_DIMS], s[4][SB_CUM_DIMS];
    for (int k = 0; k < ndim; k++) {
        shape[k] = g[2 + k];
        for (int t = 0; t < 4; t++) s[t][k] = g[2 + (1 + t) * SB_CUM_DIMS + k];
    }
    const int backward = kind == SB_CUM_PROD_BACKWARD;
    SB_FOR_EACH(col, columns) {
        int64_t o[4];
        sb_cum_column_offsets(ndim, dim, shape, s[0], s[1], s[2], s[3], col, o);
        sb_cum_column(kind, shape[dim], x + x0 + o[0], s[0][dim], backward ? y + y0 + o[1] : x,
                      s[1][dim], backward ? dy + dy0 + o[2] : x, s[2][dim], out + out0 + o[3],
                      s[3][dim]);
    }
}
