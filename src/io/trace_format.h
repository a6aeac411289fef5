/* src/io/trace_format.h - the trace file format, shared by the writer
 * (src/io/trace_writer.c) and the reader (src/io/trace_reader.c).
 * docs/VERIFY-AND-TRACE.md describes it for users. Not installed.
 *
 *   header   "SBTRACE1"  u32 version (1)  u32 flags (bit 0: hashes only)
 *   record   'R' u64 step  u64 op  u8 name_len  name  u8 dtype  u8 ndim
 *            i64 shape[ndim]  sha256[32]  [u64 zlen  zlib(values)]
 *   trailer  'E' u64 record_count  sha256[32] of every byte before it
 * Integers are little-endian; values are the elements' little-endian bytes
 * in row-major order, raw (NaN payloads kept: the diff shows real bits),
 * while the record's sha256 is sb_hash_tensors' canonical hash. */
#ifndef SAMEBITS_TRACE_FORMAT_H
#define SAMEBITS_TRACE_FORMAT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define TRACE_MAGIC "SBTRACE1"
#define TRACE_VERSION 1u
#define NAME_MAX_LEN 63
/* zlib's deflate never compresses better than about 1032:1; a record that
 * claims more is a lie, refused before anything that large is allocated. */
#define ZLIB_MAX_RATIO 1032u

static inline void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* An op name: 1..NAME_MAX_LEN printable ASCII characters, no spaces. */
static inline bool valid_name(const char *s) {
    size_t n = strlen(s);
    if (n < 1 || n > NAME_MAX_LEN) return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x21 || s[i] > 0x7e) return false;
    return true;
}

#endif
