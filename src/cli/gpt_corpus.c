/* The character corpus of the GPT commands (gpt_cli.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/gpt_cli.h"
#include "core/internal.h"
#include "io/io_internal.h"
#include "samebits/hash.h"

#define SB_CORPUS_MAX_BYTES (UINT64_C(1) << 30)

sb_status sb_corpus_load(const char *cmd, const char *path, sb_corpus *c) {
    memset(c, 0, sizeof *c);
    FILE *f = NULL;
    uint64_t size = 0;
    SB_TRY(sb_fopen_regular(cmd, path, SB_CORPUS_MAX_BYTES, &f, &size));
    if (size == 0) {
        fclose(f);
        return sb_fail(SB_ERR_FORMAT, "%s: the corpus %s is empty", cmd, path);
    }
    unsigned char *raw = malloc((size_t)size);
    c->ids = malloc((size_t)size * sizeof *c->ids);
    size_t got = raw && c->ids ? fread(raw, 1, (size_t)size, f) : 0;
    fclose(f);
    if (!raw || !c->ids || got != (size_t)size) {
        free(raw);
        sb_corpus_free(c);
        return sb_fail(SB_ERR_IO, "%s: cannot read the corpus %s", cmd, path);
    }
    c->n = (int64_t)size;
    sb_sha256_bytes(raw, (size_t)size, c->sha256);
    bool seen[256] = {false};
    for (int64_t i = 0; i < c->n; i++) seen[raw[i]] = true;
    for (int b = 0; b < 256; b++) {
        c->token_of[b] = -1;
        if (seen[b]) {
            c->token_of[b] = (int16_t)c->vocab;
            c->bytes[c->vocab++] = (unsigned char)b;
        }
    }
    for (int64_t i = 0; i < c->n; i++) c->ids[i] = c->token_of[raw[i]];
    free(raw);
    return SB_OK;
}

void sb_corpus_free(sb_corpus *c) {
    free(c->ids);
    c->ids = NULL;
}

void sb_gpt_model_options(sb_gpt_config *cfg, bool *tied, sb_cli_option out[SB_GPT_MODEL_OPTIONS]) {
    const sb_cli_option opts[SB_GPT_MODEL_OPTIONS] = {
        {.name = "--context", .kind = SB_CLI_I64, .dest = &cfg->context, .imin = 1, .imax = 4096},
        {.name = "--d-model", .kind = SB_CLI_I64, .dest = &cfg->d_model, .imin = 2, .imax = 4096},
        {.name = "--heads", .kind = SB_CLI_I64, .dest = &cfg->heads, .imin = 1, .imax = 4096},
        {.name = "--layers", .kind = SB_CLI_I64, .dest = &cfg->layers, .imin = 0, .imax = 64},
        {.name = "--tied", .kind = SB_CLI_FLAG, .dest = tied},
    };
    memcpy(out, opts, sizeof opts);
}
