/* src/io/io_internal.h - internals of the file-format readers and writers:
 * in-memory parsers (what the fuzz targets drive), atomic file writing and
 * a fault-injection hook for the atomicity tests. Not installed. */
#ifndef SAMEBITS_IO_INTERNAL_H
#define SAMEBITS_IO_INTERNAL_H

#include <stdio.h>
#include "core/internal.h"
#include "samebits/io.h"

/* Parse a whole IDX file already in memory (uncompressed). `name` is used in
 * error messages in place of a path. Same checks as sb_idx_read. */
sb_status sb_idx_parse_buffer(const void *buf, size_t len, const char *name, sb_idx **out);

/* Parse a whole safetensors file already in memory. Same checks as
 * sb_safetensors_read, including the checksum. */
sb_status sb_safetensors_parse_buffer(const void *buf, size_t len, const char *name,
                                      sb_safetensors **out);

/* ---- reading input files ----
 * Open `path` for reading only if it is a regular file: a FIFO, directory,
 * device or socket is refused at once (never blocks) with a message naming
 * the path and what it is. When max_bytes is not 0, a file larger than that
 * is refused too (SB_ERR_RANGE), so a caller can bound what it allocates.
 * *size (may be NULL) receives the file size. `fn` prefixes the messages.
 * Use these for every file a reader is handed (data, checkpoints, traces,
 * vector files) instead of fopen(). */
sb_status sb_open_regular_fd(const char *fn, const char *path, uint64_t max_bytes, int *fd,
                             uint64_t *size);
sb_status sb_fopen_regular(const char *fn, const char *path, uint64_t max_bytes, FILE **out,
                           uint64_t *size);

/* ---- numbers written as text ----
 * For command-line option values and checkpoint metadata: the whole text
 * must be a decimal integer (digits, and one leading '-' only for i64; no
 * spaces, '+' or trailing characters), overflow is an error (never a
 * clamp), and the value must lie in [min, max]. sb_parse_real takes what
 * strtod reads, and refuses non-finite values, values outside [min, max]
 * and non-zero values whose float32 rounding is 0, subnormal or infinite.
 * Failures are SB_ERR_ARG with `what` (e.g. "--epochs") and the text in
 * the message; *out is written only on success. */
sb_status sb_parse_i64(const char *fn, const char *what, const char *text, int64_t min,
                       int64_t max, int64_t *out);
sb_status sb_parse_u64(const char *fn, const char *what, const char *text, uint64_t min,
                       uint64_t max, uint64_t *out);
sb_status sb_parse_real(const char *fn, const char *what, const char *text, double min, double max,
                        double *out);

/* ---- atomic files ----
 * open creates "<path>.tmp.<pid>"; writes go there; commit flushes, fsyncs,
 * closes, renames over path and fsyncs the directory; abort (and commit on
 * failure) removes the temp file. After open succeeds exactly one of commit
 * or abort must be called. */
typedef struct sb_atomic_file {
    FILE *fp;
    char *path;
    char *tmp_path;
} sb_atomic_file;

/* open also refuses a path that is an existing directory, and first removes
 * "<path>.tmp.<pid>" files whose writer process no longer exists (a save
 * that was killed); a live writer's temp file is never touched. */
sb_status sb_atomic_open(sb_atomic_file *af, const char *fn, const char *path);
/* Proves now that path can be written later: opens and aborts once (the
 * directory exists and is writable, path is not a directory). For checking
 * an output path before a long computation. */
sb_status sb_atomic_probe(const char *fn, const char *path);
sb_status sb_atomic_write(sb_atomic_file *af, const char *fn, const void *buf, size_t n);
/* Overwrite n bytes at absolute offset `at` (already written), then return
 * to the end of the file. */
sb_status sb_atomic_rewrite(sb_atomic_file *af, const char *fn, uint64_t at, const void *buf,
                            size_t n);
sb_status sb_atomic_commit(sb_atomic_file *af, const char *fn);
void sb_atomic_abort(sb_atomic_file *af);

/* Test hook: make the n-th I/O step from now (open, each write, flush,
 * fsync, close, rename, directory fsync; 1-based) fail as if the system
 * call returned EIO. 0 disables. Not thread-safe; tests only. */
void sb_io_set_fault(int n);
/* True (and disarms) when the armed step is reached. */
int sb_io_fault_hit(void);

#endif
