/* The op table compiled: the redeclarations that tie src/ops/op_table.h to
 * the public headers, and the rows as data for the tools and tests that
 * print or check them. */
#include <string.h>
#include "ops/op_table.h"
#include "samebits.h"
#include "samebits/train.h"
#include "core/canonical_sum.h"
#include "cpu/ops_internal.h"
#include "ref/ref_attention.h"
#include "ref/ref_cumulative.h"
#include "ref/ref_index.h"
#include "ref/ref_grid.h"
#include "ref/ref_histogram.h"
#include "ref/ref_interp.h"
#include "ref/ref_linalg.h"
#include "ref/ref_scatter_reduce.h"
#include "ref/ref_sort.h"
#include "ref/ref_loss.h"
#include "ref/ref_norm.h"
#include "ref/ref_optim.h"
#include "ref/ref_pad.h"
#include "ref/ref_pointwise.h"

/* Every function again, spelled from the table. If a header changes a
 * return type, a parameter's type or the number of parameters and the table
 * does not follow, this is "conflicting types for 'sb_...'": a build error
 * with any flags, so the table cannot drift from the declarations. */
#define SB_OP_REDECLARE(name, ret, params, ...) ret name params;
#define SB_SUPPORT_REDECLARE(name, ret, params, family) ret name params;
SB_OP_TABLE(SB_OP_REDECLARE)
SB_SUPPORT_TABLE(SB_SUPPORT_REDECLARE)

#define SB_OP_ROW(name_, ret_, params_, family_, trace_, shape_, ref_, backward_, verify_) \
    {.name = #name_, .ret = #ret_, .params = #params_, .family = #family_,                \
     .trace = trace_, .shape_rule = #shape_, .reference = #ref_, .backward = #backward_, \
     .verify = verify_, .fn = (sb_op_fn)name_, .shape_fn = (sb_op_fn)shape_,              \
     .reference_fn = (sb_op_fn)ref_, .backward_fn = (sb_op_fn)backward_},
#define SB_SUPPORT_ROW(name_, ret_, params_, family_) \
    {.name = #name_, .ret = #ret_, .params = #params_, .family = #family_, .fn = (sb_op_fn)name_},

const sb_op_info sb_op_table[] = {SB_OP_TABLE(SB_OP_ROW)};
const size_t sb_op_table_count = sizeof sb_op_table / sizeof sb_op_table[0];
const sb_op_info sb_support_table[] = {SB_SUPPORT_TABLE(SB_SUPPORT_ROW)};
const size_t sb_support_table_count = sizeof sb_support_table / sizeof sb_support_table[0];

const sb_op_info *sb_op_by_trace_name(const char *trace) {
    if (!trace) return NULL;
    for (size_t i = 0; i < sb_op_table_count; i++)
        if (sb_op_table[i].trace && !strcmp(sb_op_table[i].trace, trace)) return &sb_op_table[i];
    return NULL;
}
