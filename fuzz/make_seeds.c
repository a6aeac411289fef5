/* Writes the seed corpora for the fuzz targets, using samebits' own writers
 * (no downloaded data):
 *   make_seeds <idx_dir> <safetensors_dir> <json_dir> <trace_dir>
 * The JSON seeds are the headers of the safetensors seeds plus strings that
 * reach every escape and error path; the trace seeds are small traces with
 * values and hashes only. (fuzz_verify's seeds are the lines of
 * tests/vectors/ops.txt, split by fuzz/run.sh.) */
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>
#include "io/io_internal.h"
#include "samebits/trace.h"

static void put(const char *dir, const char *name, const void *buf, size_t len, int gz) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (gz) {
        gzFile g = gzopen(p, "wb9");
        gzwrite(g, buf, (unsigned)len);
        gzclose(g);
    } else {
        FILE *f = fopen(p, "wb");
        fwrite(buf, 1, len, f);
        fclose(f);
    }
}

static size_t idx(unsigned char *o, int type, int ndim, const unsigned *dims, size_t elem) {
    size_t n = 1;
    o[0] = o[1] = 0;
    o[2] = (unsigned char)type;
    o[3] = (unsigned char)ndim;
    for (int i = 0; i < ndim; i++) {
        for (int b = 0; b < 4; b++) o[4 + 4 * i + b] = (unsigned char)(dims[i] >> (24 - 8 * b));
        n *= dims[i];
    }
    for (size_t i = 0; i < n * elem; i++) o[4 + 4 * ndim + i] = (unsigned char)(i * 37);
    return 4 + 4 * (size_t)ndim + n * elem;
}

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: make_seeds IDX_DIR ST_DIR JSON_DIR TRACE_DIR\n"); return 2; }
    static unsigned char b[4096];
    unsigned d3[3] = {2, 4, 4}, d1[1] = {10}, d2[2] = {3, 2}, d4[4] = {1, 2, 1, 3};
    size_t n;
    n = idx(b, 0x08, 3, d3, 1); put(argv[1], "images", b, n, 0); put(argv[1], "images.gz", b, n, 1);
    n = idx(b, 0x08, 1, d1, 1); put(argv[1], "labels", b, n, 0); put(argv[1], "labels.gz", b, n, 1);
    n = idx(b, 0x0B, 2, d2, 2); put(argv[1], "i16", b, n, 0);
    n = idx(b, 0x0C, 4, d4, 4); put(argv[1], "i32", b, n, 0);
    n = idx(b, 0x0D, 2, d2, 4); put(argv[1], "f32.gz", b, n, 1);
    n = idx(b, 0x0E, 1, d1, 8); put(argv[1], "f64", b, n, 0);

    float f[6] = {1, -2, 0.5f, 0, -0.0f, 3};
    int32_t i32[4] = {1, -1, 2147483647, -2147483647 - 1};
    int64_t i64v = -5, s23[2] = {2, 3}, s4[1] = {4}, s0[2] = {0, 3};
    sb_tensor *tf = NULL, *ti = NULL, *tl = NULL, *tz = NULL;
    sb_tensor_wrap(&tf, f, SB_F32, 2, s23, NULL);
    sb_tensor_wrap(&ti, i32, SB_I32, 1, s4, NULL);
    sb_tensor_wrap(&tl, &i64v, SB_I64, 0, NULL, NULL);
    sb_tensor_wrap(&tz, f, SB_F32, 2, s0, NULL);
    sb_named_tensor all[4] = {{"weight", tf}, {"idx \"q\"\n\xc3\xa9", ti}, {"step", tl}, {"empty", tz}};
    sb_kv meta[2] = {{"epoch", "7"}, {"rng", "00ff\\\"\t"}};
    char p[512];
    snprintf(p, sizeof p, "%s/full.safetensors", argv[2]);
    if (sb_safetensors_write(p, all, 4, meta, 2) != SB_OK) { fprintf(stderr, "%s\n", sb_last_error()); return 1; }
    snprintf(p, sizeof p, "%s/one.safetensors", argv[2]);
    sb_safetensors_write(p, all, 1, NULL, 0);
    snprintf(p, sizeof p, "%s/none.safetensors", argv[2]);
    sb_safetensors_write(p, NULL, 0, meta, 1);
    /* A file from "another writer": no checksum, offsets out of order. */
    static const char hdr[] = "{\"b\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[4,8]},"
                              "\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
                              "\"__metadata__\":{\"format\":\"pt\",\"u\":\"\\u00e9\\ud83d\\ude00\"}}";
    unsigned char fb[512] = {0};
    size_t hl = sizeof hdr - 1;
    for (int i = 0; i < 8; i++) fb[i] = (unsigned char)(hl >> (8 * i));
    memcpy(fb + 8, hdr, hl);
    memset(fb + 8 + hl, 1, 8);
    put(argv[2], "foreign.safetensors", fb, 8 + hl + 8, 0);

    /* JSON: every safetensors header above, then token soups */
    put(argv[3], "foreign.json", hdr, hl, 0);
    static const char *const names[] = {"full", "one", "none"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s.safetensors", argv[2], names[i]);
        FILE *f = fopen(p, "rb");
        unsigned char h[8], body[2048];
        if (f && fread(h, 1, 8, f) == 8) {
            size_t len = 0;
            for (int b = 7; b >= 0; b--) len = len << 8 | h[b];
            if (len <= sizeof body && fread(body, 1, len, f) == len) {
                char nm[64];
                snprintf(nm, sizeof nm, "%s.json", names[i]);
                put(argv[3], nm, body, len, 0);
            }
        }
        if (f) fclose(f);
    }
    static const char *const soups[] = {
        "\"plain\" : [0, 1, 9223372036854775807] , { }",
        "\"esc \\\" \\\\ \\/ \\b \\f \\n \\r \\t\" \"\\u00e9\\ud83d\\ude00\\u20AC\"",
        "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\" [] [7] 12 0",
        "9223372036854775808 -1 01 1.5 1e3 \"\\ud800\" \"\\u0000\" \"\x01\" \"\xc0\xaf\" \"open",
    };
    for (size_t i = 0; i < sizeof soups / sizeof *soups; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "soup%zu.json", i);
        put(argv[3], nm, soups[i], strlen(soups[i]), 0);
    }

    /* traces: values and hashes only, two steps */
    for (int hashes_only = 0; hashes_only < 2; hashes_only++) {
        snprintf(p, sizeof p, "%s/%s.trace", argv[4], hashes_only ? "hashes" : "values");
        if (sb_trace_open(p, hashes_only ? SB_TRACE_HASHES_ONLY : 0) != SB_OK) {
            fprintf(stderr, "%s\n", sb_last_error());
            return 1;
        }
        sb_trace_record("weight", tf);
        sb_trace_record("idx", ti);
        sb_trace_step(1);
        sb_trace_record("step", tl);
        sb_trace_record("empty", tz);
        if (sb_trace_close() != SB_OK) { fprintf(stderr, "%s\n", sb_last_error()); return 1; }
    }
    sb_tensor_free(tf); sb_tensor_free(ti); sb_tensor_free(tl); sb_tensor_free(tz);
    return 0;
}
