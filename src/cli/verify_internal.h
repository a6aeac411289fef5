/* src/cli/verify_internal.h - the parts of `samebits verify`: the op
 * runners (verify_runners.c), the vector file (verify_file.c) and the
 * driver (verify.c). Not installed. */
#ifndef SAMEBITS_CLI_VERIFY_INTERNAL_H
#define SAMEBITS_CLI_VERIFY_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "samebits.h"

#define MAX_OUT 8
#define MAX_PARAMS 300
/* Default of --max-memory: the tensor bytes one vector may allocate. The
 * built-in vectors need under 2 MiB (docs/VERIFY-AND-TRACE.md). */
#define DEFAULT_MAX_MIB 256

/* One line of a vector file: OP SEED quick|full PARAMS NAME=SHA256... */
typedef struct {
    char op[32];
    uint64_t seed;
    bool quick;
    int lineno; /* in the vector file, for messages */
    char params[MAX_PARAMS];
    int n_out;
    char out_name[MAX_OUT][32];
    unsigned char out_hash[MAX_OUT][32];
} vcase;


/* The state of one vector while its runner runs: what it produced (names
 * and SHA-256 of the outputs), or why it was skipped or refused. */
typedef struct {
    const vcase *c;
    sb_arena *arena;
    const char *data_dir;
    bool skipped;
    char skip_why[160];
    /* A vector the file may not contain (malformed parameters, or more
     * memory than --max-memory): the file is refused, exit status 2. */
    bool refused;
    size_t bytes_used, max_bytes;
    int n_out;
    char out_name[MAX_OUT][32];
    unsigned char out_hash[MAX_OUT][32];
} run_ctx;

/* ---- verify_runners.c ---- */

/* True when `op` names a runner. */
bool sb_verify_known_op(const char *op);

/* Runs vector c into *r (reset first) with tensors from `arena` (reset too),
 * at most max_bytes of them; data_dir holds Fashion-MNIST for train_fmnist.
 * On failure r->refused tells a vector the file may not contain (exit 2)
 * from an op that failed (a FAIL line). */
sb_status sb_verify_run_case(const vcase *c, run_ctx *r, sb_arena *arena, const char *data_dir,
                             size_t max_bytes);

/* ---- verify_file.c ---- */

/* Parses a whole vector file (NUL-terminated text; `src` names it in
 * messages) into a new array *out of *count cases: 1, or 0 after printing
 * the first error (then *out is NULL). A file without vectors is an error. */
int sb_verify_parse_vectors(const char *text, const char *src, vcase **out, int *count);

/* The whole file as a NUL-terminated string (free() it), or NULL after a
 * message: not a regular file, over 64 MiB, unreadable, or holding NUL. */
char *sb_verify_read_file(const char *path);

/* Prints case c with the outputs r produced as one vector-file line. */
void sb_verify_print_line(const vcase *c, const run_ctx *r, FILE *f);

/* Prints the C source embedding the vector file at path (--emit-c). */
int sb_verify_emit_c(const char *path);

#endif
