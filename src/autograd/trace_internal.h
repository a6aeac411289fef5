/* src/autograd/trace_internal.h - the hooks through which the autograd graph
 * feeds an open trace (samebits/trace.h). Not installed. */
#ifndef SAMEBITS_TRACE_INTERNAL_H
#define SAMEBITS_TRACE_INTERNAL_H

#include <stdatomic.h>
#include "samebits/trace.h"

/* True while a trace is open; read without the lock so that the hooks cost
 * one load when tracing is off. */
extern atomic_bool sb_trace_is_on;

/* Record t as the next op of the current step under the name `op` (an
 * "sb_ag_" prefix is dropped) followed by `suffix` (may be NULL). Errors are
 * kept for sb_trace_close; the computation is never disturbed. */
void sb_trace_hook(const char *op, const char *suffix, sb_tensor *t);

#define SB_TRACE_HOOK(op, suffix, t) \
    do { if (atomic_load_explicit(&sb_trace_is_on, memory_order_relaxed)) sb_trace_hook((op), (suffix), (t)); } while (0)

#endif
