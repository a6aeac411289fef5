/* libFuzzer target for the safetensors reader. Every input goes to the
 * in-memory parser; an accepted file is written back with
 * sb_safetensors_write and re-read, and must come back bit for bit (names,
 * order, shapes, bytes, metadata). Build and run: fuzz/run.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "io/io_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char tmp_path[64];

static void remove_tmp(void) { unlink(tmp_path); }

static void round_trip(const sb_safetensors *st) {
    size_t n = sb_safetensors_count(st), nm = sb_safetensors_meta_count(st);
    sb_named_tensor *nt = calloc(n + 1, sizeof *nt);
    sb_kv *kv = calloc(nm + 1, sizeof *kv);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (sb_safetensors_at(st, i, &nt[i].name, &nt[i].tensor) != SB_OK) abort();
    for (size_t i = 0; i < nm; i++) {
        if (sb_safetensors_meta_at(st, i, &kv[k].key, &kv[k].value) != SB_OK) abort();
        if (strcmp(kv[k].key, SB_SAFETENSORS_SHA256_KEY)) k++;
    }
    if (!tmp_path[0]) {
        snprintf(tmp_path, sizeof tmp_path, "/tmp/sb_fuzz_st_%ld.safetensors", (long)getpid());
        atexit(remove_tmp);
    }
    if (sb_safetensors_write(tmp_path, nt, n, kv, k) != SB_OK) {
        fprintf(stderr, "rewrite failed: %s\n", sb_last_error());
        abort();
    }
    sb_safetensors *back = NULL;
    if (sb_safetensors_read(tmp_path, &back) != SB_OK) {
        fprintf(stderr, "re-read failed: %s\n", sb_last_error());
        abort();
    }
    if (sb_safetensors_count(back) != n || sb_safetensors_meta_count(back) != k + 1) abort();
    for (size_t i = 0; i < n; i++) {
        const char *name;
        const sb_tensor *t;
        if (sb_safetensors_at(back, i, &name, &t) != SB_OK || strcmp(name, nt[i].name)) abort();
        const sb_tensor *a = nt[i].tensor;
        if (t->dtype != a->dtype || t->ndim != a->ndim) abort();
        for (int d = 0; d < t->ndim; d++)
            if (t->shape[d] != a->shape[d]) abort();
        if (memcmp(t->data, a->data, (size_t)sb_tensor_numel(t) * sb_dtype_size(t->dtype))) abort();
    }
    for (size_t i = 0; i < k; i++) {
        const char *v;
        if (sb_safetensors_get_meta(back, kv[i].key, &v) != SB_OK || strcmp(v, kv[i].value)) abort();
    }
    sb_safetensors_free(back);
    free(nt);
    free(kv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sb_safetensors *st = NULL;
    sb_clear_error();
    sb_status s = sb_safetensors_parse_buffer(data, size, "fuzz", &st);
    if (s != SB_OK) {
        if (st || !strstr(sb_last_error(), "'fuzz'")) abort();
        return 0;
    }
    if (!st) abort();
    round_trip(st);
    sb_safetensors_free(st);
    return 0;
}
