/* src/cli/gpt_cli.h - what `samebits train --model gpt` and `samebits
 * generate` share: the character corpus, its vocabulary and the model's
 * options. */
#ifndef SAMEBITS_CLI_GPT_H
#define SAMEBITS_CLI_GPT_H

#include <stdbool.h>
#include <stdint.h>
#include "cli/options.h"
#include "samebits/gpt.h"

/* The default corpus: Debian's fortunes-min package (README, "A small GPT"). */
#define SB_GPT_DEFAULT_CORPUS "/usr/share/games/fortunes/literature"

/* A text file as tokens: the vocabulary is the distinct byte values of the
 * whole file in ascending order, token i the i-th of them. */
typedef struct sb_corpus {
    int64_t n;              /* bytes = tokens */
    int64_t *ids;           /* (n) token of each byte */
    int64_t vocab;          /* distinct bytes */
    unsigned char bytes[256]; /* token -> byte */
    int16_t token_of[256];  /* byte -> token, -1 if absent */
    unsigned char sha256[32]; /* of the file's bytes */
} sb_corpus;

/* Reads path (a regular file of 1 byte .. 2^30 bytes); messages name `cmd`. */
sb_status sb_corpus_load(const char *cmd, const char *path, sb_corpus *c);
void sb_corpus_free(sb_corpus *c);

/* The model's options: a table of entries for sb_cli_parse_options, writing
 * into *cfg and *tied. */
#define SB_GPT_MODEL_OPTIONS 5
void sb_gpt_model_options(sb_gpt_config *cfg, bool *tied, sb_cli_option out[SB_GPT_MODEL_OPTIONS]);

int sb_cli_train_gpt(int argc, char **argv);
int sb_cli_generate(int argc, char **argv);

#endif
