/* The checking reader of op-by-op traces behind `samebits trace-diff`
 * (samebits/trace.h; format: src/io/trace_format.h). Trace files are
 * untrusted input: every field is checked, every allocation is bounded by
 * what the file has really delivered or by the reader's value limit. */
#include <errno.h>
#include <stdlib.h>
#ifndef SB_NO_ZLIB
#include <zlib.h>
#endif
#include "io/trace_format.h"
#include "io/io_internal.h"
#include "samebits/hash.h"
#include "samebits/trace.h"

struct sb_trace_reader {
    FILE *fp, *owned;
    char *name;
    unsigned flags;
    uint64_t records;
    uint64_t max_values; /* bytes of one record's values, at most */
    sb_sha256_ctx hash;
    bool finished;
    unsigned char *z, *values; /* the current record's compressed and raw bytes */
    size_t z_len, values_cap;
    bool z_ready;
};

static sb_status bad(const sb_trace_reader *r, const char *what) {
    return sb_fail(SB_ERR_FORMAT, "trace '%s': %s (damaged or not a samebits trace)", r->name, what);
}

/* Exactly n bytes, hashed; a short read is truncation. */
static sb_status get(sb_trace_reader *r, void *buf, size_t n, const char *what) {
    if (n && fread(buf, 1, n, r->fp) != n) {
        if (ferror(r->fp)) return sb_fail(SB_ERR_IO, "trace '%s': read error", r->name);
        char msg[96];
        snprintf(msg, sizeof msg, "truncated in %s", what);
        return bad(r, msg);
    }
    sb_sha256_update(&r->hash, buf, n);
    return SB_OK;
}

sb_status sb_trace_reader_open(sb_trace_reader **out, FILE *fp, const char *name) {
    const char *fn = "sb_trace_reader_open";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    if (!fp) return sb_fail(SB_ERR_NULL, "%s: fp is NULL", fn);
    sb_trace_reader *r = sb_calloc(fn, 1, sizeof *r);
    if (!r) return SB_ERR_NOMEM;
    const char *nm = name ? name : "(stream)";
    r->name = sb_malloc(fn, strlen(nm) + 1);
    if (!r->name) { free(r); return SB_ERR_NOMEM; }
    strcpy(r->name, nm);
    r->fp = fp;
    r->max_values = SB_TRACE_MAX_VALUES_DEFAULT;
    sb_sha256_init(&r->hash);
    unsigned char h[16];
    sb_status s = get(r, h, sizeof h, "the header");
    if (s == SB_OK && memcmp(h, TRACE_MAGIC, 8)) s = bad(r, "bad magic");
    uint32_t version = 0, flags = 0;
    for (int i = 3; i >= 0; i--) {
        version = version << 8 | h[8 + i];
        flags = flags << 8 | h[12 + i];
    }
    if (s == SB_OK && version != TRACE_VERSION) s = bad(r, "unsupported version");
    if (s == SB_OK && (flags & ~SB_TRACE_HASHES_ONLY)) s = bad(r, "unknown flags");
    if (s != SB_OK) { sb_trace_reader_free(r); return s; }
    r->flags = flags;
    *out = r;
    return SB_OK;
}

sb_status sb_trace_reader_open_path(sb_trace_reader **out, const char *path) {
    if (!out) return sb_fail(SB_ERR_NULL, "sb_trace_reader_open_path: out is NULL");
    *out = NULL;
    if (!path) return sb_fail(SB_ERR_NULL, "sb_trace_reader_open_path: path is NULL");
    FILE *fp;
    SB_TRY(sb_fopen_regular("sb_trace_reader_open_path", path, 0, &fp, NULL));
    sb_status s = sb_trace_reader_open(out, fp, path);
    if (s != SB_OK) { fclose(fp); return s; }
    (*out)->owned = fp;
    return SB_OK;
}

sb_status sb_trace_reader_set_max_values(sb_trace_reader *r, uint64_t max_bytes) {
    if (!r) return sb_fail(SB_ERR_NULL, "sb_trace_reader_set_max_values: r is NULL");
    if (max_bytes == 0 || max_bytes > SIZE_MAX / 2)
        return sb_fail(SB_ERR_ARG, "sb_trace_reader_set_max_values: max_bytes = %llu must be in 1..%zu",
                       (unsigned long long)max_bytes, SIZE_MAX / 2);
    r->max_values = max_bytes;
    return SB_OK;
}

void sb_trace_reader_free(sb_trace_reader *r) {
    if (!r) return;
    if (r->owned) fclose(r->owned);
    free(r->name);
    free(r->z);
    free(r->values);
    free(r);
}

static sb_status read_trailer(sb_trace_reader *r) {
    unsigned char digest[32], t[8], want[32];
    SB_TRY(get(r, t, sizeof t, "the trailer"));
    sb_sha256_final(&r->hash, digest);
    if (fread(want, 1, 32, r->fp) != 32) return bad(r, "truncated in the trailer");
    if (get_u64(t) != r->records) return bad(r, "the trailer's record count does not match");
    if (memcmp(want, digest, 32)) return bad(r, "checksum mismatch");
    if (fgetc(r->fp) != EOF) return bad(r, "bytes after the trailer");
    r->finished = true;
    return SB_OK;
}

sb_status sb_trace_reader_next(sb_trace_reader *r, sb_trace_entry *e, bool *done) {
    const char *fn = "sb_trace_reader_next";
    if (!r || !e || !done) return sb_fail(SB_ERR_NULL, "%s: NULL argument", fn);
    *done = false;
    if (r->finished) { *done = true; return SB_OK; }
    r->z_ready = false;
    unsigned char tag;
    SB_TRY(get(r, &tag, 1, "a record tag"));
    if (tag == 'E') {
        SB_TRY(read_trailer(r));
        *done = true;
        return SB_OK;
    }
    if (tag != 'R') return bad(r, "unknown record tag");
    sb_trace_entry x;
    memset(&x, 0, sizeof x);
    unsigned char b[17];
    SB_TRY(get(r, b, 17, "a record"));
    x.step = get_u64(b);
    x.op = get_u64(b + 8);
    size_t len = b[16];
    if (len < 1 || len > NAME_MAX_LEN) return bad(r, "bad op name length");
    SB_TRY(get(r, x.name, len, "an op name"));
    x.name[len] = 0;
    if (!valid_name(x.name)) return bad(r, "op name has unprintable characters");
    SB_TRY(get(r, b, 2, "a record"));
    if (b[0] > SB_I64) return bad(r, "bad dtype");
    if (b[1] > SB_MAX_DIMS) return bad(r, "too many dimensions");
    x.dtype = (sb_dtype)b[0];
    x.ndim = b[1];
    x.numel = 1;
    for (int k = 0; k < x.ndim; k++) {
        SB_TRY(get(r, b, 8, "a shape"));
        uint64_t d = get_u64(b);
        if (d > (uint64_t)1 << 40) return bad(r, "a dimension is implausibly large");
        x.shape[k] = (int64_t)d;
        if (d && x.numel > ((int64_t)1 << 40) / (int64_t)d) return bad(r, "too many elements");
        x.numel *= (int64_t)d;
    }
    SB_TRY(get(r, x.sha256, 32, "a hash"));
    x.has_values = !(r->flags & SB_TRACE_HASHES_ONLY);
    if (x.has_values) {
        SB_TRY(get(r, b, 8, "a value length"));
        uint64_t zlen = get_u64(b);
        uint64_t raw = (uint64_t)x.numel * sb_dtype_size(x.dtype);
        if (zlen < 8 || zlen > raw + raw / 8 + 4096 || raw > zlen * ZLIB_MAX_RATIO)
            return bad(r, "value length does not fit the shape");
        /* A few hundred KB of zlib can claim hundreds of MB of values. */
        if (raw > r->max_values)
            return sb_fail(SB_ERR_RANGE,
                           "trace '%s': record step %llu op %llu (%s) holds %llu bytes of values, over the "
                           "reader's limit of %llu (sb_trace_reader_set_max_values raises it)",
                           r->name, (unsigned long long)x.step, (unsigned long long)x.op, x.name,
                           (unsigned long long)raw, (unsigned long long)r->max_values);
        /* Grow as bytes arrive, so a lying length meets EOF before a big
         * allocation. */
        size_t have = 0;
        while (have < zlen) {
            size_t chunk = zlen - have < ((size_t)1 << 20) ? (size_t)(zlen - have) : (size_t)1 << 20;
            unsigned char *nz = realloc(r->z, have + chunk);
            if (!nz) return sb_fail(SB_ERR_NOMEM, "trace '%s': out of memory", r->name);
            r->z = nz;
            SB_TRY(get(r, r->z + have, chunk, "values"));
            have += chunk;
        }
        r->z_len = (size_t)zlen;
        r->z_ready = true;
    }
    r->records++;
    *e = x;
    return SB_OK;
}

sb_status sb_trace_reader_values(sb_trace_reader *r, sb_trace_entry *e) {
    const char *fn = "sb_trace_reader_values";
    if (!r || !e) return sb_fail(SB_ERR_NULL, "%s: NULL argument", fn);
    if (!e->has_values || !r->z_ready)
        return sb_fail(SB_ERR_ARG, "%s: trace '%s' holds no values for this record", fn, r->name);
    size_t es = sb_dtype_size(e->dtype), raw = (size_t)e->numel * es;
    if (raw + 1 > r->values_cap) {
        unsigned char *v = realloc(r->values, raw + 1);
        if (!v) return sb_fail(SB_ERR_NOMEM, "trace '%s': out of memory", r->name);
        r->values = v;
        r->values_cap = raw + 1;
    }
#ifdef SB_NO_ZLIB
    return sb_fail(SB_ERR_UNSUPPORTED, "%s: this build has no zlib (NO_ZLIB=1) to read trace values", fn);
#else
    uLongf got = (uLongf)raw;
    if (uncompress(r->values, &got, r->z, (uLong)r->z_len) != Z_OK || got != raw)
        return bad(r, "values do not decompress to the record's size");
#endif
    /* The values must hash to the record's hash (canonical NaN, as the writer). */
    sb_sha256_ctx c;
    sb_sha256_init(&c);
    for (size_t i = 0; i < raw; i += es) {
        unsigned char v[8];
        memcpy(v, r->values + i, es);
        if (e->dtype == SB_F32) {
            uint32_t u = (uint32_t)v[0] | (uint32_t)v[1] << 8 | (uint32_t)v[2] << 16 | (uint32_t)v[3] << 24;
            if ((u & 0x7fffffffu) > 0x7f800000u) { v[0] = 0; v[1] = 0; v[2] = 0xc0; v[3] = 0x7f; }
        }
        sb_sha256_update(&c, v, es);
    }
    unsigned char d[32];
    sb_sha256_final(&c, d);
    if (memcmp(d, e->sha256, 32)) return bad(r, "values do not match the record's hash");
    e->values = r->values;
    return SB_OK;
}
