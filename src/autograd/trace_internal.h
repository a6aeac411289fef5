/* src/autograd/trace_internal.h - the hook through which the autograd graph
 * feeds an open trace (samebits/trace.h). Not installed.
 *
 * The trace writer (src/io/trace_writer.c) is in a higher layer than
 * autograd, so autograd does not call it: the writer registers a sink here
 * when a trace opens and removes it when the trace closes, and the graph
 * calls whatever sink is set. */
#ifndef SAMEBITS_TRACE_INTERNAL_H
#define SAMEBITS_TRACE_INTERNAL_H

#include <stdatomic.h>
#include "samebits/tensor.h"

/* Record t as the next op of the current step under the name `op` (an
 * "sb_ag_" prefix is dropped) followed by `suffix` (may be NULL). A sink
 * keeps its errors to itself; the computation is never disturbed. */
typedef void (*sb_trace_sink)(const char *op, const char *suffix, sb_tensor *t);

/* True while a sink is set; read without a lock so that the hooks cost one
 * load when tracing is off. */
extern atomic_bool sb_trace_is_on;

/* Set the sink (NULL: tracing off). */
void sb_trace_set_sink(sb_trace_sink sink);

/* Hand t to the sink, if one is set. */
void sb_trace_hook(const char *op, const char *suffix, sb_tensor *t);

#define SB_TRACE_HOOK(op, suffix, t) \
    do { if (atomic_load_explicit(&sb_trace_is_on, memory_order_relaxed)) sb_trace_hook((op), (suffix), (t)); } while (0)

#endif
