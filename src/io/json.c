/* The strict JSON reader behind the safetensors header (json.h). It reads
 * exactly what the callers ask for, one token at a time, never recurses and
 * never reads past the n bytes it was given; every error names the byte. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/json.h"

size_t sb_utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; min = 0x10000; }
    else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

bool sb_utf8_valid(const char *str) {
    const unsigned char *s = (const unsigned char *)str;
    size_t n = strlen(str);
    for (size_t i = 0; i < n;) {
        size_t k = sb_utf8_seq(s + i, n - i);
        if (!k) return false;
        i += k;
    }
    return true;
}

sb_status sb_json_fail(const sb_json *j, const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return sb_fail(SB_ERR_FORMAT, "%s: '%s': invalid JSON header at byte %zu: %s", j->fn, j->name,
                   j->pos, what);
}

static void skip_ws(sb_json *j) {
    while (j->pos < j->n) {
        unsigned char c = j->s[j->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        j->pos++;
    }
}

int sb_json_peek(sb_json *j) {
    skip_ws(j);
    return j->pos < j->n ? j->s[j->pos] : -1;
}

sb_status sb_json_expect(sb_json *j, char c) {
    int got = sb_json_peek(j);
    if (got != c) {
        if (got < 0) return sb_json_fail(j, "expected '%c', got the end of the header", c);
        return sb_json_fail(j, "expected '%c', got '%c'", c, got >= 0x20 && got < 0x7F ? got : '?');
    }
    j->pos++;
    return SB_OK;
}

static int hex4(const unsigned char *p, uint32_t *v) {
    *v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return 0;
        *v = *v << 4 | d;
    }
    return 1;
}

static size_t put_utf8(unsigned char *o, uint32_t cp) {
    if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) { o[0] = (unsigned char)(0xC0 | cp >> 6); o[1] = (unsigned char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | cp >> 12);
        o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | cp >> 18);
    o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A JSON string as a NUL-terminated UTF-8 heap string. Decoding never grows
 * the text (an escape is at least as long as what it stands for), so the
 * raw length bounds the allocation. U+0000 is refused: names are C strings. */
sb_status sb_json_string(sb_json *j, char **out) {
    *out = NULL;
    SB_TRY(sb_json_expect(j, '"'));
    size_t start = j->pos, end = start;
    while (end < j->n && j->s[end] != '"') end += j->s[end] == '\\' ? 2 : 1;
    if (end >= j->n) return sb_json_fail(j, "unterminated string");
    unsigned char *o = sb_malloc(j->fn, end - start + 1);
    if (!o) return SB_ERR_NOMEM;
    size_t k = 0;
    while (j->pos < end) {
        unsigned char c = j->s[j->pos];
        if (c < 0x20) { free(o); return sb_json_fail(j, "control character 0x%02x in a string", c); }
        if (c != '\\') {
            size_t len = sb_utf8_seq(j->s + j->pos, end - j->pos);
            if (!len) { free(o); return sb_json_fail(j, "invalid UTF-8 in a string"); }
            memcpy(o + k, j->s + j->pos, len);
            k += len;
            j->pos += len;
            continue;
        }
        unsigned char e = j->s[j->pos + 1]; /* end - pos >= 2: the scan skipped it */
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            static const char map[] = "\"\\/\b\f\n\r\t";
            o[k++] = (unsigned char)map[simple - "\"\\/bfnrt"];
            j->pos += 2;
            continue;
        }
        uint32_t cp, lo;
        if (e != 'u' || end - j->pos < 6 || !hex4(j->s + j->pos + 2, &cp)) {
            free(o);
            return sb_json_fail(j, "invalid escape sequence in a string");
        }
        j->pos += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (end - j->pos < 6 || j->s[j->pos] != '\\' || j->s[j->pos + 1] != 'u' ||
                !hex4(j->s + j->pos + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                free(o);
                return sb_json_fail(j, "unpaired UTF-16 surrogate \\u%04X in a string", (unsigned)cp);
            }
            j->pos += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            free(o);
            return sb_json_fail(j, "unpaired UTF-16 surrogate \\u%04X in a string", (unsigned)cp);
        }
        if (cp == 0) { free(o); return sb_json_fail(j, "\\u0000 in a string is not supported"); }
        k += put_utf8(o + k, cp);
    }
    j->pos = end + 1;
    o[k] = '\0';
    *out = (char *)o;
    return SB_OK;
}

/* A non-negative JSON integer that fits in int64. */
sb_status sb_json_uint(sb_json *j, const char *what, int64_t *out) {
    int c = sb_json_peek(j);
    if (c == '-') return sb_json_fail(j, "%s: negative numbers are not allowed", what);
    if (c < '0' || c > '9') return sb_json_fail(j, "%s: expected a non-negative integer", what);
    if (c == '0' && j->pos + 1 < j->n && j->s[j->pos + 1] >= '0' && j->s[j->pos + 1] <= '9')
        return sb_json_fail(j, "%s: leading zeros are not allowed", what);
    uint64_t v = 0;
    while (j->pos < j->n && j->s[j->pos] >= '0' && j->s[j->pos] <= '9') {
        unsigned d = j->s[j->pos] - '0';
        if (v > ((uint64_t)INT64_MAX - d) / 10) return sb_json_fail(j, "%s: integer too large", what);
        v = v * 10 + d;
        j->pos++;
    }
    if (j->pos < j->n && (j->s[j->pos] == '.' || j->s[j->pos] == 'e' || j->s[j->pos] == 'E'))
        return sb_json_fail(j, "%s: only integers are allowed", what);
    *out = (int64_t)v;
    return SB_OK;
}

/* [int, ...] with at most max entries. */
sb_status sb_json_uint_array(sb_json *j, const char *what, int64_t *vals, int max, int *count) {
    *count = 0;
    SB_TRY(sb_json_expect(j, '['));
    if (sb_json_peek(j) == ']') { j->pos++; return SB_OK; }
    for (;;) {
        if (*count == max) return sb_json_fail(j, "%s: more than %d entries", what, max);
        SB_TRY(sb_json_uint(j, what, &vals[(*count)++]));
        int c = sb_json_peek(j);
        if (c == ']') { j->pos++; return SB_OK; }
        if (c != ',') return sb_json_fail(j, "%s: expected ',' or ']'", what);
        j->pos++;
    }
}
