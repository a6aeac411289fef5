/* libFuzzer target for the vector files of `samebits verify --vectors`: the
 * parser (src/cli/verify_file.c) on every input, then the op runners
 * (src/cli/verify_runners.c) on the first few vectors it accepts, under a
 * 1 MiB tensor budget. Checked: no crash, leak or undefined behaviour (the
 * sanitizers), a parse either yields cases or has printed why, a run that
 * fails leaves a message, a refused vector is refused before its budget is
 * exceeded, and a successful run produced at most its outputs. The
 * train_* vectors are left out: their cost is the training loop's, not the
 * file's. Seeds: the lines of tests/vectors/ops.txt and the hostile lines
 * of tests/check_verify.sh (fuzz/run.sh writes them).
 * Build and run: fuzz/run.sh SECONDS fuzz_verify. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/verify_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static sb_arena *arena;
    static FILE *sink;
    if (!arena && sb_arena_new(&arena, (size_t)1 << 20) != SB_OK) abort();
    if (!sink && !(sink = fopen("/dev/null", "w"))) abort();
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    vcase *cases = (vcase *)1;
    int count = -1;
    if (!sb_verify_parse_vectors(text, "fuzz", &cases, &count)) {
        if (cases) abort(); /* nothing handed out on failure */
        free(text);
        return 0;
    }
    if (!cases || count < 1) abort();
    for (int i = 0, ran = 0; i < count && ran < 4; i++) {
        const vcase *c = &cases[i];
        if (c->n_out < 0 || c->n_out > MAX_OUT || !sb_verify_known_op(c->op)) abort();
        if (!strncmp(c->op, "train_", 6)) continue;
        ran++;
        run_ctx r;
        sb_status s = sb_verify_run_case(c, &r, arena, "/nonexistent", (size_t)1 << 20);
        if (r.bytes_used > r.max_bytes) abort();
        if (s != SB_OK) {
            if (!sb_last_error()[0]) abort();
            continue;
        }
        if (r.refused || r.n_out < 0 || r.n_out > MAX_OUT) abort();
        sb_verify_print_line(c, &r, sink);
    }
    free(cases);
    free(text);
    return 0;
}
