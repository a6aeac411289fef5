/* src/io/json.h - a strict, non-recursive JSON reader for the file formats
 * (the safetensors header): the caller drives it token by token. Input is
 * untrusted; nothing is read past the n bytes given. Not installed.
 * Its own fuzz target is fuzz/fuzz_json.c. */
#ifndef SAMEBITS_IO_JSON_H
#define SAMEBITS_IO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/internal.h"

/* A cursor over s[0..n): pos is the next byte. fn and name prefix every
 * message: "<fn>: '<name>': invalid JSON header at byte <pos>: ...". */
typedef struct sb_json {
    const unsigned char *s;
    size_t n, pos;
    const char *fn, *name;
} sb_json;

/* SB_ERR_FORMAT with the message above. */
sb_status sb_json_fail(const sb_json *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Skips whitespace; the next byte, or -1 at the end of the input. */
int sb_json_peek(sb_json *j);

/* Skips whitespace and consumes byte c, or fails naming what came instead. */
sb_status sb_json_expect(sb_json *j, char c);

/* A string as a NUL-terminated UTF-8 heap string (*out, free() it; NULL on
 * failure). Escapes and surrogate pairs are decoded; invalid UTF-8, control
 * characters, lone surrogates and U+0000 are refused. */
sb_status sb_json_string(sb_json *j, char **out);

/* A non-negative integer that fits in int64 (no sign, fraction, exponent or
 * leading zero). `what` names it in messages. */
sb_status sb_json_uint(sb_json *j, const char *what, int64_t *out);

/* [int, ...] of at most max sb_json_uint entries into vals; *count of them. */
sb_status sb_json_uint_array(sb_json *j, const char *what, int64_t *vals, int max, int *count);

/* Length of the valid UTF-8 sequence at s (n >= 1 bytes available), 0 if invalid:
 * no overlong forms, no surrogates, nothing above U+10FFFF. */
size_t sb_utf8_seq(const unsigned char *s, size_t n);

/* True when the C string is valid UTF-8. */
bool sb_utf8_valid(const char *str);

#endif
