/* src/cli/cli.h - the subcommands of build/samebits. */
#ifndef SAMEBITS_CLI_H
#define SAMEBITS_CLI_H
int sb_cli_train(int argc, char **argv);
int sb_cli_eval(int argc, char **argv);
int sb_cli_hash(int argc, char **argv);
int sb_cli_verify(int argc, char **argv);
int sb_cli_trace_diff(int argc, char **argv);
#endif
