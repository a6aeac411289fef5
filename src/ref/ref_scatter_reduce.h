/* src/ref/ref_scatter_reduce.h - reference kernel of scatter_reduce (contract
 * section 18, "scatter_reduce"). Internal: not installed.
 *
 * The geometry is the index family's (src/ref/ref_index.h: iteration shape =
 * index's shape, dense = src, table = out). A column is the set of positions
 * that differ only along dim; every destination of a term lies in the table
 * column with the term's other coordinates, so each column is one
 * independent computation (sb_ref_scatter_reduce_column) and the tensor walk
 * only enumerates columns. Index values are validated by the caller. */
#ifndef SAMEBITS_REF_SCATTER_REDUCE_H
#define SAMEBITS_REF_SCATTER_REDUCE_H

#include <stdbool.h>
#include <stdint.h>
#include "samebits/index.h"
#include "ref/ref_index.h"

/* The number of columns (positions of the iteration shape without dim) and
 * the offsets of column `col` on the dense side, the index and the table. */
int64_t sb_ref_scatter_columns(const sb_ref_index_geom *g);
void sb_ref_scatter_column_at(const sb_ref_index_geom *g, int64_t col, int64_t *dense,
                              int64_t *index, int64_t *table);

/* One column of `len` terms, term i = src[i * ss] going to
 * table[index[i * is] * ts]:
 *   1. without include_self, every destination of a term is set to the
 *      reduction's identity (+0 for sum and mean, 1 for prod, -inf for amax,
 *      +inf for amin);
 *   2. for i ascending, d = combine(d, term), one rounding each:
 *      sum/mean d + t, prod d * t, amax (t is NaN or d < t) ? t : d,
 *      amin (t is NaN or t < d) ? t : d;
 *   3. mean: each destination with c > 1 contributions (its terms, plus one
 *      for itself with include_self) is divided by (float)c.
 * counts: NULL, or scratch for `table_len` int64 counts (mean only); without
 * it the counts are found by scanning the column. */
void sb_ref_scatter_reduce_column(sb_scatter_reduce_op op, bool include_self, int64_t len,
                                  const float *src, int64_t ss, const int64_t *index,
                                  int64_t is, float *table, int64_t ts, int64_t table_len,
                                  int64_t *counts);

/* Every column in turn (table_len: out's size along dim). */
void sb_ref_scatter_reduce(const sb_ref_index_geom *g, sb_scatter_reduce_op op, bool include_self,
                           int64_t table_len, const float *src, const int64_t *index,
                           float *table);

#endif
