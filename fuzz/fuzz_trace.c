/* libFuzzer target for the trace reader (samebits/trace.h) behind
 * `samebits trace-diff`. Every input is read to the end, values included;
 * a failure must be clean (a message, no partial state), and an accepted
 * record must be self-consistent. The deterministic part (every truncation
 * and every bit flip of a small trace) runs in tests/test_trace.c.
 * Build and run: fuzz/run.sh SECONDS fuzz_trace (it needs src/io/trace_reader.c,
 * src/io/trace_writer.c, src/autograd/trace_hook.c and src/core/fpenv.c in
 * the script's library list). */
#include <stdio.h>
#include <stdlib.h>
#include "core/internal.h"
#include "samebits/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0; /* fmemopen needs a non-empty buffer */
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f) return 0;
    sb_clear_error();
    sb_trace_reader *r = NULL;
    sb_status s = sb_trace_reader_open(&r, f, "fuzz");
    if (s != SB_OK) {
        if (r || !sb_last_error()[0]) abort();
        fclose(f);
        return 0;
    }
    for (;;) {
        sb_trace_entry e;
        bool done = false;
        s = sb_trace_reader_next(r, &e, &done);
        if (s != SB_OK) {
            if (!sb_last_error()[0]) abort();
            break;
        }
        if (done) break;
        if (e.ndim < 0 || e.ndim > SB_MAX_DIMS || e.name[0] == 0 || strlen(e.name) > 63) abort();
        int64_t n = 1;
        for (int k = 0; k < e.ndim; k++) n *= e.shape[k];
        if (n != e.numel) abort();
        if (e.has_values && sb_trace_reader_values(r, &e) == SB_OK) {
            /* Touch every byte so ASan sees the whole buffer. */
            volatile unsigned char sink = 0;
            for (size_t i = 0; i < (size_t)e.numel * sb_dtype_size(e.dtype); i++) sink ^= e.values[i];
            (void)sink;
        }
    }
    sb_trace_reader_free(r);
    fclose(f);
    return 0;
}
