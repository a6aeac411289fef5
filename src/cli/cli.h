/* src/cli/cli.h - the subcommands of build/samebits. */
#ifndef SAMEBITS_CLI_H
#define SAMEBITS_CLI_H
int sb_cli_train(int argc, char **argv);
#endif
