/* samebits/trace.h - op-by-op traces of a run, to find where two runs part.
 *
 * While a trace is open, every autograd op (sb_ag_*) appends a record when
 * its forward output is made, and every backward rule appends one record per
 * input gradient contribution it produces, before the contribution is
 * accumulated. A record holds the step (sb_trace_step), the op's index
 * within that step (0, 1, 2, ... in execution order), the op's name
 * ("conv2d", "relu", "conv2d.d_in1", ...), its dtype and shape, the SHA-256
 * of its canonical bytes (the same hash as sb_hash_tensors) and, unless
 * SB_TRACE_HASHES_ONLY, the output values themselves (zlib-compressed), so
 * `samebits trace-diff A B` can name the first differing element.
 * docs/VERIFY-AND-TRACE.md describes the file format.
 *
 * The trace is process-wide (one open trace at a time) and thread-safe. The
 * file is written atomically: it appears complete at sb_trace_close, or not
 * at all. A write error during the run does not disturb the computation; it
 * is kept and returned by sb_trace_close (nothing is left behind then).
 *
 * Recording changes no result bit (it reads outputs only), except for the
 * deliberate one-ulp injection below.
 */
#ifndef SAMEBITS_TRACE_H
#define SAMEBITS_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "samebits/export.h"
#include "samebits/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* sb_trace_open flags. */
#define SB_TRACE_HASHES_ONLY 1u /* skip the values: smaller, but no element diff */

/* Start recording to `path` (replaced at sb_trace_close). The step starts at
 * 0. SB_ERR_ARG if a trace is already open or flags are unknown. The
 * environment variable SB_TRACE_INJECT=STEP:OP arms sb_trace_inject_ulp. */
SB_API sb_status sb_trace_open(const char *path, unsigned flags);
/* Finish the file and rename it into place; returns the first error the
 * trace met (then no file is written). SB_ERR_ARG if no trace is open. */
SB_API sb_status sb_trace_close(void);
/* Drop the trace being written (no file appears). */
SB_API void sb_trace_abort(void);
SB_API bool sb_trace_active(void);
/* Begin step `step`: later records carry it, op indices restart at 0. */
SB_API sb_status sb_trace_step(uint64_t step);
/* Append a record for a tensor the caller produced (e.g. parameters after an
 * optimizer step), as the next op of the current step. name: 1..63
 * printable ASCII characters without spaces. A no-op when no trace is open.
 * The injection applies here too, so t must be writable when it is armed. */
SB_API sb_status sb_trace_record(const char *name, sb_tensor *t);

/* Test hook: the record (step, op) changes one element of its output by one
 * unit in the last place (the lowest bit of element numel/2 is flipped)
 * BEFORE it is recorded and before anything downstream reads it, so the
 * change propagates like a real divergence. Float32 outputs only (others are
 * left alone). Disarm with sb_trace_inject_ulp(UINT64_MAX, UINT64_MAX). */
SB_API void sb_trace_inject_ulp(uint64_t step, uint64_t op);

/* ---- reading ---------------------------------------------------------------
 * Trace files are untrusted input: every field is checked, and a damaged,
 * truncated or tampered file gives SB_ERR_FORMAT naming the file. */
typedef struct sb_trace_reader sb_trace_reader;

typedef struct sb_trace_entry {
    uint64_t step, op;
    char name[64];
    sb_dtype dtype;
    int ndim;
    int64_t shape[SB_MAX_DIMS];
    int64_t numel;
    unsigned char sha256[32];
    bool has_values;
    /* The values as little-endian bytes (numel * dtype size), filled by
     * sb_trace_reader_values; valid until the next call on the reader. */
    const unsigned char *values;
} sb_trace_entry;

/* `name` is used in messages (a path, say). The reader takes over nothing:
 * close fp yourself after sb_trace_reader_free. */
SB_API sb_status sb_trace_reader_open(sb_trace_reader **out, FILE *fp, const char *name);
/* path must be a regular file: a FIFO or device is refused (SB_ERR_IO)
 * without blocking. */
SB_API sb_status sb_trace_reader_open_path(sb_trace_reader **out, const char *path);
/* Records whose values take more than max_bytes (uncompressed) are refused
 * with SB_ERR_RANGE before anything is allocated for them: a small file can
 * claim a huge record (deflate compresses zeros 1032:1). The default is
 * SB_TRACE_MAX_VALUES_DEFAULT; max_bytes must be 1..SIZE_MAX/2. */
#define SB_TRACE_MAX_VALUES_DEFAULT ((uint64_t)64 << 20)
SB_API sb_status sb_trace_reader_set_max_values(sb_trace_reader *r, uint64_t max_bytes);
SB_API void sb_trace_reader_free(sb_trace_reader *r);
/* Next record into *e: *done is true (and e untouched) after the last one,
 * once the trailer's record count and checksum have been verified. */
SB_API sb_status sb_trace_reader_next(sb_trace_reader *r, sb_trace_entry *e, bool *done);
/* Decompress the current record's values into e->values (checked against
 * the record's SHA-256). SB_ERR_ARG when the trace has no values. */
SB_API sb_status sb_trace_reader_values(sb_trace_reader *r, sb_trace_entry *e);

#ifdef __cplusplus
}
#endif
#endif
