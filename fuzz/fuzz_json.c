/* libFuzzer target for the strict JSON reader of src/io/json.h (the
 * safetensors header's tokenizer). The input is walked token by token the
 * way a format parser drives it: a string where a '"' comes, an integer
 * where a digit or '-' comes, an integer array at '[', any other ASCII byte
 * consumed by sb_json_expect (a non-ASCII one is stepped over). Checked on every input: the cursor never
 * passes the end, a failure has a message naming the input and the byte,
 * a decoded string is valid UTF-8 no longer than its source, an integer
 * is non-negative and reads back as the digits it was parsed from.
 * Build and run: fuzz/run.sh SECONDS fuzz_json. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "io/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_failure(const sb_json *j) {
    if (j->pos > j->n || !strstr(sb_last_error(), "'fuzz': invalid JSON header at byte")) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sb_json j = {data, size, 0, "fuzz_json", "fuzz"};
    sb_clear_error();
    for (int steps = 0; steps < 4096; steps++) {
        int c = sb_json_peek(&j);
        if (j.pos > j.n) abort();
        if (c < 0) break;
        size_t at = j.pos;
        sb_status s;
        if (c == '"') {
            char *str = (char *)1;
            s = sb_json_string(&j, &str);
            if (s == SB_OK) {
                if (!str || !sb_utf8_valid(str) || strlen(str) > j.pos - at) abort();
                free(str);
            } else if (str) {
                abort(); /* *out is NULL on failure */
            }
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            int64_t v = -1;
            s = sb_json_uint(&j, "number", &v);
            if (s == SB_OK) {
                char back[32];
                int len = snprintf(back, sizeof back, "%" PRId64, v);
                if (v < 0 || (size_t)len != j.pos - at || memcmp(back, data + at, (size_t)len)) abort();
            }
        } else if (c == '[') {
            int64_t vals[8];
            int count = -1;
            s = sb_json_uint_array(&j, "array", vals, 8, &count);
            if (s == SB_OK && (count < 0 || count > 8)) abort();
            for (int i = 0; s == SB_OK && i < count; i++)
                if (vals[i] < 0) abort();
        } else if (c < 0x80) {
            /* the callers expect ASCII punctuation only */
            s = sb_json_expect(&j, (char)c);
            if (s != SB_OK || j.pos != at + 1) abort(); /* the byte peek saw is consumed */
        } else {
            j.pos++; /* a byte no caller would expect: step over it */
            continue;
        }
        if (s != SB_OK) {
            check_failure(&j);
            break;
        }
        if (j.pos <= at) abort(); /* every successful token moves forward */
    }
    return 0;
}
