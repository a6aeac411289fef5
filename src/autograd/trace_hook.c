/* The trace hook of the autograd graph (trace_internal.h): a sink set by
 * the trace writer, called for every op output and gradient contribution. */
#include "autograd/trace_internal.h"

atomic_bool sb_trace_is_on;
static _Atomic(sb_trace_sink) current_sink;

void sb_trace_set_sink(sb_trace_sink sink) {
    atomic_store(&current_sink, sink);
    atomic_store(&sb_trace_is_on, sink != NULL);
}

void sb_trace_hook(const char *op, const char *suffix, sb_tensor *t) {
    sb_trace_sink sink = atomic_load(&current_sink);
    if (sink) sink(op, suffix, t);
}
