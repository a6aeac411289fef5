/* libFuzzer target for the IDX reader. Every input goes to the in-memory
 * parser; inputs that start with the gzip magic also go through
 * sb_idx_read (zlib path) via a temp file. Build and run: fuzz/run.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "io/io_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char tmp_path[64];

static void remove_tmp(void) { unlink(tmp_path); }

static void check(sb_status s, sb_idx *idx, size_t size_if_plain) {
    if (s != SB_OK) {
        /* Failures are clean: no result, a message naming the input. */
        if (idx || !sb_last_error()[0]) abort();
        return;
    }
    if (!idx || idx->ndim < 1 || idx->ndim > SB_IDX_MAX_DIMS || idx->count > SB_IDX_MAX_ELEMENTS) abort();
    int64_t n = 1;
    for (int i = 0; i < idx->ndim; i++) n *= idx->dims[i];
    if (n != idx->count) abort();
    if (size_if_plain && 4 + 4 * (size_t)idx->ndim + (size_t)n * idx->elem_size != size_if_plain) abort();
    /* Touch every byte so ASan sees the whole allocation. */
    volatile unsigned char sink = 0;
    for (size_t i = 0; i < (size_t)n * idx->elem_size; i++) sink ^= ((unsigned char *)idx->data)[i];
    (void)sink;
    sb_idx_free(idx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sb_idx *idx = NULL;
    sb_clear_error();
    check(sb_idx_parse_buffer(data, size, "fuzz", &idx), idx, size);
    if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
        if (!tmp_path[0]) {
            snprintf(tmp_path, sizeof tmp_path, "/tmp/sb_fuzz_idx_%ld.gz", (long)getpid());
            atexit(remove_tmp);
        }
        FILE *f = fopen(tmp_path, "wb");
        if (!f) return 0;
        fwrite(data, 1, size, f);
        fclose(f);
        idx = NULL;
        sb_clear_error();
        check(sb_idx_read(tmp_path, &idx), idx, 0);
    }
    return 0;
}
