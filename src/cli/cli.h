/* src/cli/cli.h - the subcommands of build/samebits. */
#ifndef SAMEBITS_CLI_H
#define SAMEBITS_CLI_H
#include <stdbool.h>
#include "dist/comm.h"
int sb_cli_train(int argc, char **argv);
/* `samebits train` over the processes of comm (samebits-mpi): rank 0
 * prints and writes; the step's bits do not depend on comm->size.
 * *stopped_together (may be NULL) is set when every rank failed at the same
 * point (the start-up agreement), so they may end without aborting. */
int sb_cli_train_on(int argc, char **argv, sb_comm *comm, bool *stopped_together);
int sb_cli_eval(int argc, char **argv);
int sb_cli_hash(int argc, char **argv);
int sb_cli_verify(int argc, char **argv);
int sb_cli_trace_diff(int argc, char **argv);
#endif
