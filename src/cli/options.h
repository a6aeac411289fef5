/* src/cli/options.h - one checked parser for every subcommand's options.
 *
 * A subcommand describes its options in a table; sb_cli_parse_options
 * walks argv once, and every numeric value goes through the checked parsers
 * of src/io/parse_number.c (decimal text only, overflow is an error, a range
 * per option). Failures return SB_ERR_ARG with a message naming the option
 * (sb_last_error()); the CLI prints it and exits with 2. */
#ifndef SAMEBITS_CLI_OPTIONS_H
#define SAMEBITS_CLI_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include "samebits/status.h"

typedef enum {
    SB_CLI_FLAG, /* no value; dest is bool, set to true */
    SB_CLI_TEXT, /* dest is const char *, pointing into argv */
    SB_CLI_I64,  /* dest is int64_t, in [imin, imax] */
    SB_CLI_U64,  /* dest is uint64_t, in [umin, umax] */
    SB_CLI_REAL, /* dest is double, in [rmin, rmax], a normal float32 unless 0 */
} sb_cli_kind;

typedef struct sb_cli_option {
    const char *name; /* "--epochs" */
    sb_cli_kind kind;
    void *dest;
    int64_t imin, imax;
    uint64_t umin, umax;
    double rmin, rmax;
} sb_cli_option;

/* `cmd` names the subcommand in messages ("train"). Options may repeat (the
 * last wins); an unknown option or a missing value is an error. */
sb_status sb_cli_parse_options(const char *cmd, const sb_cli_option *opts, size_t n_opts, int argc,
                               char **argv);

#endif
