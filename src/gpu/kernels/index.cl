/* src/gpu/kernels/index.cl - the index family's gather and scatter-add
 * (contract section 18, src/ref/index.c), in the portable dialect.
 *
 * Geometry (SB_INDEX_GEOM longs, src/ref/ref_index.h's sb_ref_index_geom):
 * ndim, dim, then SB_INDEX_DIMS each of the iteration shape, the dense
 * side's strides, the index's strides and the table's strides.
 *
 * The gather is one work-item per position. The scatter-add is one
 * work-item per fiber along dim (a position with its dim coordinate
 * dropped): every term a table element receives comes from positions that
 * differ only along dim, so one fiber holds all of them, and the work-item
 * adds them in ascending position, the contract's order; fibers write
 * disjoint table elements, so no two work-items touch one element. */

#define SB_INDEX_DIMS 8
#define SB_INDEX_GEOM (2 + 4 * SB_INDEX_DIMS)
#define SB_INDEX_SHAPE(g, k) g[2 + (k)]
#define SB_INDEX_DENSE(g, k) g[2 + SB_INDEX_DIMS + (k)]
#define SB_INDEX_INDEX(g, k) g[2 + 2 * SB_INDEX_DIMS + (k)]
#define SB_INDEX_TABLE(g, k) g[2 + 3 * SB_INDEX_DIMS + (k)]

/* Offsets of row-major position e of the iteration shape, with the extent
 * along dim taken as `dim_extent` (the shape's, or 1 for a fiber). The
 * table offset leaves out the coordinate along dim (the index value's). */
SB_INLINE void sb_index_offsets(SB_GLOBAL const SB_LONG *g, SB_LONG e, SB_LONG dim_extent,
                                SB_LONG *dense, SB_LONG *index, SB_LONG *table) {
    const int ndim = (int)g[0], dim = (int)g[1];
    SB_LONG d = 0, i = 0, t = 0;
    for (int k = ndim - 1; k >= 0; k--) {
        SB_LONG extent = k == dim ? dim_extent : SB_INDEX_SHAPE(g, k);
        SB_LONG c = e % extent;
        e /= extent;
        d += c * SB_INDEX_DENSE(g, k);
        i += c * SB_INDEX_INDEX(g, k);
        if (k != dim) t += c * SB_INDEX_TABLE(g, k);
    }
    *dense = d;
    *index = i;
    *table = t;
}

// dense[p] = table[p with p[dim] = index[p]], n positions
SB_KERNEL sb_index_gather(SB_GLOBAL const SB_LONG *g, SB_LONG n, SB_GLOBAL const float *table,
                          SB_LONG t0, SB_GLOBAL const SB_LONG *index, SB_LONG i0,
                          SB_GLOBAL float *dense, SB_LONG d0) {
    const int dim = (int)g[1];
    SB_FOR_EACH(e, n) {
        SB_LONG d, i, t;
        sb_index_offsets(g, e, SB_INDEX_SHAPE(g, dim), &d, &i, &t);
        dense[d0 + d] = table[t0 + t + index[i0 + i] * SB_INDEX_TABLE(g, dim)];
    }
}

// table[p with p[dim] = index[p]] += (alpha *) dense[p], fibers of the
// iteration shape (nfibers of them), each in ascending position
SB_KERNEL sb_index_scatter_add(SB_GLOBAL const SB_LONG *g, SB_LONG nfibers, int scale, float alpha,
                               SB_GLOBAL const float *dense, SB_LONG d0,
                               SB_GLOBAL const SB_LONG *index, SB_LONG i0, SB_GLOBAL float *table,
                               SB_LONG t0) {
    const int dim = (int)g[1];
    const SB_LONG len = SB_INDEX_SHAPE(g, dim);
    SB_FOR_EACH(f, nfibers) {
        SB_LONG d, i, t;
        sb_index_offsets(g, f, 1, &d, &i, &t);
        for (SB_LONG j = 0; j < len; j++) {
            float v = dense[d0 + d + j * SB_INDEX_DENSE(g, dim)];
            float term = scale ? alpha * v : v;
            SB_LONG at = t0 + t + index[i0 + i + j * SB_INDEX_INDEX(g, dim)] * SB_INDEX_TABLE(g, dim);
            table[at] = table[at] + term;
        }
    }
}

// scatter_reduce: a work-item per fiber along dim (a column: every
// destination of its terms lies in its table column) running the
// reference's column, src/ref/scatter_reduce_column.h (embedded before
// this file), terms in ascending position
SB_KERNEL sb_index_scatter_reduce(SB_GLOBAL const SB_LONG *g, SB_LONG nfibers, int op,
                                  int include_self, SB_LONG table_len,
                                  SB_GLOBAL const float *dense, SB_LONG d0,
                                  SB_GLOBAL const SB_LONG *index, SB_LONG i0,
                                  SB_GLOBAL float *table, SB_LONG t0) {
    const int dim = (int)g[1];
    SB_FOR_EACH(f, nfibers) {
        SB_LONG d, i, t;
        sb_index_offsets(g, f, 1, &d, &i, &t);
        sb_scatter_reduce_column_run(op, include_self != 0, SB_INDEX_SHAPE(g, dim),
                                     dense + d0 + d, SB_INDEX_DENSE(g, dim), index + i0 + i,
                                     SB_INDEX_INDEX(g, dim), table + t0 + t,
                                     SB_INDEX_TABLE(g, dim), table_len, 0);
    }
}
