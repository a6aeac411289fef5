/* libFuzzer target for the command-line option parser: the input is split
 * at NUL bytes into an argv for `samebits train` (src/cli/train_options.c,
 * src/cli/options.h). Whatever the input, parsing either fails with a
 * message naming the subcommand, or succeeds with every value inside its
 * documented range. Each token is also fed to the number parsers directly,
 * and every accepted number must print back as the same digits.
 * Build and run: fuzz/run.sh. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/train_options.h"
#include "io/io_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_ARGS = 64 };

/* text without leading zeros ("0" for all zeros), for the print-back check. */
static const char *strip_zeros(const char *t) {
    while (t[0] == '0' && t[1]) t++;
    return t;
}

static void check_numbers(const char *t) {
    int64_t i;
    uint64_t u;
    double r;
    char back[32];
    if (sb_parse_i64("fuzz", "i64", t, INT64_MIN, INT64_MAX, &i) == SB_OK) {
        snprintf(back, sizeof back, "%" PRId64, i);
        const char *digits = t[0] == '-' ? t + 1 : t;
        if (i == 0 ? strcmp(strip_zeros(digits), "0")
                   : strcmp(back + (i < 0), strip_zeros(digits)) || (i < 0) != (t[0] == '-'))
            abort();
    } else if (!sb_last_error()[0]) {
        abort();
    }
    if (sb_parse_u64("fuzz", "u64", t, 0, UINT64_MAX, &u) == SB_OK) {
        snprintf(back, sizeof back, "%" PRIu64, u);
        if (strcmp(back, strip_zeros(t))) abort();
    }
    if (sb_parse_real("fuzz", "real", t, -DBL_MAX, DBL_MAX, &r) == SB_OK) {
        float f = (float)r, mag = f < 0.0f ? -f : f;
        if (!isfinite(r) || (r != 0.0 && !(mag >= FLT_MIN && mag <= FLT_MAX))) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* A NUL-terminated copy, cut into tokens at each NUL. */
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[MAX_ARGS];
    int argc = 0;
    for (char *p = buf; p <= buf + size && argc < MAX_ARGS; p += strlen(p) + 1) argv[argc++] = p;
    if (argc > 0 && size > 0 && buf[size - 1] == '\0') argc--; /* a final NUL ends the last token */
    sb_train_options o;
    sb_clear_error();
    if (sb_cli_train_options(argc, argv, &o) == SB_OK) {
        if (o.epochs < 1 || o.epochs > SB_TRAIN_MAX_EPOCHS) abort();
        if (o.batch_size < 1 || o.batch_size > SB_TRAIN_MAX_BATCH_SIZE) abort();
        if (o.limit_batches < 0 || o.limit_batches > SB_TRAIN_MAX_LIMIT_BATCHES) abort();
        if (o.threads < 0 || o.threads > 256) abort();
        float lr = (float)o.lr;
        if (!(o.lr > 0) || !(lr >= FLT_MIN && lr <= FLT_MAX)) abort();
        if (!o.data || !*o.data || (o.save && !*o.save) || (o.resume && !*o.resume)) abort();
    } else if (strncmp(sb_last_error(), "train: ", 7)) {
        abort();
    }
    for (int i = 0; i < argc; i++) check_numbers(argv[i]);
    free(buf);
    return 0;
}
