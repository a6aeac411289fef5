/* safetensors reader and writer.
 *
 * Layout: u64 little-endian header length N, N bytes of UTF-8 JSON, then the
 * data buffer. The header is parsed with the strict JSON reader of json.h,
 * driven here for exactly the shape this format needs (an object of tensor entries and one optional
 * "__metadata__" object of strings), so it never recurses and never reads
 * past the N bytes. Every size is validated against the real file length
 * before anything is allocated; the data buffer must be covered exactly by
 * the tensors (no holes, overlaps or trailing bytes), which makes every
 * valid file have exactly one meaning. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include "samebits/hash.h"
#include "samebits/io.h"
#include "io/io_internal.h"
#include "io/json.h"

#define META_KEY "__metadata__"

typedef struct st_entry {
    char *name;
    sb_dtype dtype;
    int ndim;
    int64_t shape[SB_MAX_DIMS];
    uint64_t begin, end;
    sb_tensor *tensor;
} st_entry;

typedef struct st_meta {
    char *key;
    char *value;
} st_meta;

struct sb_safetensors {
    st_entry *t;          /* header order */
    size_t n, cap;
    st_entry **by_name;   /* sorted by name, for lookup */
    st_meta *m;
    size_t nm, capm;
    st_meta **by_key;
};

/* ---- small helpers ---- */

static const char *dtype_tag(sb_dtype d) {
    switch (d) {
    case SB_F32: return "F32";
    case SB_I32: return "I32";
    case SB_I64: return "I64";
    }
    return NULL;
}

static int cmp_entry_name(const void *a, const void *b) {
    return strcmp((*(st_entry *const *)a)->name, (*(st_entry *const *)b)->name);
}
static int cmp_entry_offset(const void *a, const void *b) {
    const st_entry *x = *(st_entry *const *)a, *y = *(st_entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}
static int cmp_meta_key(const void *a, const void *b) {
    return strcmp((*(st_meta *const *)a)->key, (*(st_meta *const *)b)->key);
}

void sb_safetensors_free(sb_safetensors *st) {
    if (!st) return;
    for (size_t i = 0; i < st->n; i++) {
        free(st->t[i].name);
        sb_tensor_free(st->t[i].tensor);
    }
    for (size_t i = 0; i < st->nm; i++) {
        free(st->m[i].key);
        free(st->m[i].value);
    }
    free(st->t);
    free(st->by_name);
    free(st->m);
    free(st->by_key);
    free(st);
}

/* ---- the header parser ---- */

static sb_status parse_dtype(sb_json *j, const char *entry, sb_dtype *out) {
    size_t at = j->pos;
    char *s;
    SB_TRY(sb_json_string(j, &s));
    static const char *const known_other[] = {"F64", "F16", "BF16", "I8", "I16", "U8", "U16",
                                              "U32", "U64", "BOOL", "F8_E4M3", "F8_E5M2"};
    sb_status st = SB_OK;
    if (!strcmp(s, "F32")) *out = SB_F32;
    else if (!strcmp(s, "I32")) *out = SB_I32;
    else if (!strcmp(s, "I64")) *out = SB_I64;
    else {
        st = sb_fail(SB_ERR_FORMAT, "%s: '%s': tensor '%s' has unknown dtype \"%.32s\" (header byte %zu)",
                     j->fn, j->name, entry, s, at);
        for (size_t i = 0; i < sizeof known_other / sizeof *known_other; i++)
            if (!strcmp(s, known_other[i]))
                st = sb_fail(SB_ERR_UNSUPPORTED,
                             "%s: '%s': tensor '%s' has dtype %s; samebits supports F32, I32, I64",
                             j->fn, j->name, entry, s);
    }
    free(s);
    return st;
}

/* {"dtype": ..., "shape": [...], "data_offsets": [b, e]} in any order. */
static sb_status parse_entry(sb_json *j, st_entry *e) {
    int have_dtype = 0, have_shape = 0, have_off = 0;
    SB_TRY(sb_json_expect(j, '{'));
    if (sb_json_peek(j) == '}') return sb_json_fail(j, "tensor '%s' has an empty entry", e->name);
    for (;;) {
        char *key;
        SB_TRY(sb_json_string(j, &key));
        int which = !strcmp(key, "dtype") ? 1 : !strcmp(key, "shape") ? 2 : !strcmp(key, "data_offsets") ? 3 : 0;
        if (!which) {
            sb_status s = sb_json_fail(j, "tensor '%s': unknown key \"%.40s\" (allowed: dtype, shape, data_offsets)",
                               e->name, key);
            free(key);
            return s;
        }
        free(key);
        int *have = which == 1 ? &have_dtype : which == 2 ? &have_shape : &have_off;
        if (*have) return sb_json_fail(j, "tensor '%s': duplicated key", e->name);
        *have = 1;
        SB_TRY(sb_json_expect(j, ':'));
        if (which == 1) {
            SB_TRY(parse_dtype(j, e->name, &e->dtype));
        } else if (which == 2) {
            SB_TRY(sb_json_uint_array(j, "shape", e->shape, SB_MAX_DIMS, &e->ndim));
        } else {
            int64_t off[2];
            int n;
            SB_TRY(sb_json_uint_array(j, "data_offsets", off, 2, &n));
            if (n != 2) return sb_json_fail(j, "tensor '%s': data_offsets must have 2 entries, got %d", e->name, n);
            e->begin = (uint64_t)off[0];
            e->end = (uint64_t)off[1];
        }
        int c = sb_json_peek(j);
        if (c == '}') { j->pos++; break; }
        if (c != ',') return sb_json_fail(j, "expected ',' or '}' in the entry of tensor '%s'", e->name);
        j->pos++;
    }
    if (!have_dtype || !have_shape || !have_off)
        return sb_json_fail(j, "tensor '%s' lacks \"%s\"", e->name,
                    !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
    return SB_OK;
}

static sb_status parse_metadata(sb_json *j, sb_safetensors *st) {
    SB_TRY(sb_json_expect(j, '{'));
    if (sb_json_peek(j) == '}') { j->pos++; return SB_OK; }
    for (;;) {
        if (st->nm == st->capm) {
            size_t cap = st->capm ? st->capm * 2 : 8;
            st_meta *m = realloc(st->m, cap * sizeof *m);
            if (!m) return sb_fail(SB_ERR_NOMEM, "%s: out of memory parsing '%s'", j->fn, j->name);
            st->m = m;
            st->capm = cap;
        }
        st_meta *m = &st->m[st->nm];
        m->key = m->value = NULL;
        st->nm++;
        SB_TRY(sb_json_string(j, &m->key));
        SB_TRY(sb_json_expect(j, ':'));
        if (sb_json_peek(j) != '"') return sb_json_fail(j, "metadata value of \"%.40s\" must be a string", m->key);
        SB_TRY(sb_json_string(j, &m->value));
        int c = sb_json_peek(j);
        if (c == '}') { j->pos++; return SB_OK; }
        if (c != ',') return sb_json_fail(j, "expected ',' or '}' in " META_KEY);
        j->pos++;
    }
}

static sb_status parse_header(sb_json *j, sb_safetensors *st) {
    int have_meta = 0;
    SB_TRY(sb_json_expect(j, '{'));
    if (sb_json_peek(j) == '}') {
        j->pos++;
    } else {
        for (;;) {
            char *name;
            SB_TRY(sb_json_string(j, &name));
            sb_status s = sb_json_expect(j, ':');
            if (s != SB_OK) { free(name); return s; }
            if (!strcmp(name, META_KEY)) {
                free(name);
                if (have_meta) return sb_json_fail(j, "duplicated " META_KEY);
                have_meta = 1;
                SB_TRY(parse_metadata(j, st));
            } else {
                if (st->n == st->cap) {
                    size_t cap = st->cap ? st->cap * 2 : 16;
                    st_entry *t = realloc(st->t, cap * sizeof *t);
                    if (!t) {
                        free(name);
                        return sb_fail(SB_ERR_NOMEM, "%s: out of memory parsing '%s'", j->fn, j->name);
                    }
                    st->t = t;
                    st->cap = cap;
                }
                st_entry *e = &st->t[st->n++];
                memset(e, 0, sizeof *e);
                e->name = name;
                if (!*name) return sb_json_fail(j, "empty tensor name");
                SB_TRY(parse_entry(j, e));
            }
            int c = sb_json_peek(j);
            if (c == '}') { j->pos++; break; }
            if (c != ',') return sb_json_fail(j, "expected ',' or '}' after a top-level entry");
            j->pos++;
        }
    }
    if (sb_json_peek(j) >= 0) return sb_json_fail(j, "unexpected bytes after the header object");
    return SB_OK;
}

/* Shapes agree with offsets, the tensors tile [0, data_len) exactly, and
 * names and metadata keys are unique. Builds the lookup indexes. */
static sb_status check_layout(const char *fn, const char *name, sb_safetensors *st,
                              uint64_t data_len) {
    for (size_t i = 0; i < st->n; i++) {
        st_entry *e = &st->t[i];
        /* The product of the non-zero dims must fit too: tensor strides are
         * computed from it even when another dim is 0. */
        int64_t numel = 1, span = 1, lim = INT64_MAX / 8;
        for (int k = 0; k < e->ndim; k++) {
            int64_t d = e->shape[k];
            if (d > 0 && span > lim / d)
                return sb_fail(SB_ERR_FORMAT, "%s: '%s': tensor '%s' has an absurdly large shape", fn,
                               name, e->name);
            if (d > 0) span *= d;
            numel *= d;
        }
        if (e->begin > e->end)
            return sb_fail(SB_ERR_FORMAT, "%s: '%s': tensor '%s' has data_offsets [%llu, %llu] with begin > end",
                           fn, name, e->name, (unsigned long long)e->begin, (unsigned long long)e->end);
        uint64_t want = (uint64_t)numel * sb_dtype_size(e->dtype);
        if (e->end - e->begin != want)
            return sb_fail(SB_ERR_FORMAT,
                           "%s: '%s': tensor '%s': shape needs %llu bytes but data_offsets [%llu, %llu] span %llu",
                           fn, name, e->name, (unsigned long long)want, (unsigned long long)e->begin,
                           (unsigned long long)e->end, (unsigned long long)(e->end - e->begin));
        if (e->end > data_len)
            return sb_fail(SB_ERR_FORMAT,
                           "%s: '%s': tensor '%s': data_offsets [%llu, %llu] lie outside the %llu-byte data buffer",
                           fn, name, e->name, (unsigned long long)e->begin, (unsigned long long)e->end,
                           (unsigned long long)data_len);
    }
    st->by_name = sb_malloc(fn, (st->n ? st->n : 1) * sizeof *st->by_name);
    st->by_key = sb_malloc(fn, (st->nm ? st->nm : 1) * sizeof *st->by_key);
    if (!st->by_name || !st->by_key) return SB_ERR_NOMEM;
    for (size_t i = 0; i < st->n; i++) st->by_name[i] = &st->t[i];
    for (size_t i = 0; i < st->nm; i++) st->by_key[i] = &st->m[i];
    qsort(st->by_key, st->nm, sizeof *st->by_key, cmp_meta_key);
    for (size_t i = 1; i < st->nm; i++)
        if (!strcmp(st->by_key[i - 1]->key, st->by_key[i]->key))
            return sb_fail(SB_ERR_FORMAT, "%s: '%s': duplicated metadata key \"%s\"", fn, name,
                           st->by_key[i]->key);
    /* Offset order first: the data is then read in that order. */
    qsort(st->by_name, st->n, sizeof *st->by_name, cmp_entry_offset);
    uint64_t at = 0;
    for (size_t i = 0; i < st->n; i++) {
        const st_entry *e = st->by_name[i];
        if (e->begin < at)
            return sb_fail(SB_ERR_FORMAT, "%s: '%s': tensors overlap: '%s' starts at byte %llu, before %llu",
                           fn, name, e->name, (unsigned long long)e->begin, (unsigned long long)at);
        if (e->begin > at)
            return sb_fail(SB_ERR_FORMAT, "%s: '%s': hole in the data buffer: bytes %llu..%llu belong to no tensor",
                           fn, name, (unsigned long long)at, (unsigned long long)e->begin);
        at = e->end;
    }
    if (at != data_len)
        return sb_fail(SB_ERR_FORMAT, "%s: '%s': %llu trailing bytes after the last tensor (data buffer is %llu bytes, tensors cover %llu)",
                       fn, name, (unsigned long long)(data_len - at), (unsigned long long)data_len,
                       (unsigned long long)at);
    return SB_OK;
}

/* Where the data buffer comes from: a FILE positioned at it, or memory. */
typedef struct st_src {
    FILE *fp;
    const unsigned char *mem;
    size_t pos;
} st_src;

static sb_status src_read(const char *fn, const char *name, st_src *src, void *dst, size_t n) {
    if (n == 0) return SB_OK;
    if (src->mem) {
        memcpy(dst, src->mem + src->pos, n); /* bounds were checked by check_layout */
        src->pos += n;
        return SB_OK;
    }
    if (fread(dst, 1, n, src->fp) != n)
        return ferror(src->fp)
                   ? sb_fail(SB_ERR_IO, "%s: reading '%s' failed: %s", fn, name, strerror(errno))
                   : sb_fail(SB_ERR_FORMAT, "%s: '%s': truncated while reading tensor data (file shrank?)",
                             fn, name);
    return SB_OK;
}

static void le_to_host(void *data, size_t n_elems, size_t es) {
    unsigned char *p = data;
    for (size_t i = 0; i < n_elems; i++, p += es) {
        if (es == 4) {
            uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            memcpy(p, &v, 4);
        } else {
            uint64_t v = 0;
            for (int b = 7; b >= 0; b--) v = v << 8 | p[b];
            memcpy(p, &v, 8);
        }
    }
}

static int is_lower_hex64(const char *s) {
    size_t i = 0;
    for (; s[i]; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return i == 64;
}

/* Parses `header` (hlen bytes), validates against data_len, then reads the
 * data buffer from src. */
static sb_status load(const char *fn, const char *name, const unsigned char *header, size_t hlen,
                      uint64_t data_len, st_src *src, sb_safetensors **out) {
    sb_safetensors *st = sb_calloc(fn, 1, sizeof *st);
    if (!st) return SB_ERR_NOMEM;
    sb_json j = {header, hlen, 0, fn, name};
    sb_status s = parse_header(&j, st);
    if (s == SB_OK) s = check_layout(fn, name, st, data_len);
    const char *want_hash = NULL;
    if (s == SB_OK) {
        st_meta key = {SB_SAFETENSORS_SHA256_KEY, NULL}, *kp = &key;
        st_meta **hit = bsearch(&kp, st->by_key, st->nm, sizeof *st->by_key, cmp_meta_key);
        if (hit) {
            want_hash = (*hit)->value;
            if (!is_lower_hex64(want_hash))
                s = sb_fail(SB_ERR_FORMAT, "%s: '%s': metadata \"%s\" is not 64 lowercase hex digits",
                            fn, name, SB_SAFETENSORS_SHA256_KEY);
        }
    }
    sb_sha256_ctx ctx;
    sb_sha256_init(&ctx);
    for (size_t i = 0; s == SB_OK && i < st->n; i++) {
        st_entry *e = st->by_name[i]; /* offset order */
        if ((s = sb_tensor_new(&e->tensor, e->dtype, e->ndim, e->shape)) != SB_OK) break;
        size_t bytes = (size_t)(e->end - e->begin);
        if ((s = src_read(fn, name, src, e->tensor->data, bytes)) != SB_OK) break;
        sb_sha256_update(&ctx, e->tensor->data, bytes);
        le_to_host(e->tensor->data, bytes / sb_dtype_size(e->dtype), sb_dtype_size(e->dtype));
    }
    if (s == SB_OK && want_hash) {
        unsigned char digest[32];
        char hex[65];
        sb_sha256_final(&ctx, digest);
        sb_hex_digest(digest, hex);
        if (strcmp(hex, want_hash))
            s = sb_fail(SB_ERR_FORMAT, "%s: '%s': checksum mismatch: header says sha256 %s, data hashes to %s",
                        fn, name, want_hash, hex);
    }
    if (s == SB_OK) {
        qsort(st->by_name, st->n, sizeof *st->by_name, cmp_entry_name);
        for (size_t i = 1; i < st->n; i++)
            if (!strcmp(st->by_name[i - 1]->name, st->by_name[i]->name)) {
                s = sb_fail(SB_ERR_FORMAT, "%s: '%s': duplicated tensor name \"%s\"", fn, name,
                            st->by_name[i]->name);
                break;
            }
    }
    if (s != SB_OK) { sb_safetensors_free(st); return s; }
    *out = st;
    return SB_OK;
}

static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int b = 7; b >= 0; b--) v = v << 8 | p[b];
    return v;
}

/* The 8-byte length prefix against the total size; *hlen on success. */
static sb_status check_prefix(const char *fn, const char *name, const unsigned char *p,
                              uint64_t total, uint64_t *hlen) {
    uint64_t n = le64(p);
    if (n > SB_SAFETENSORS_MAX_HEADER)
        return sb_fail(SB_ERR_FORMAT, "%s: '%s': header length %llu exceeds the %u-byte limit", fn,
                       name, (unsigned long long)n, SB_SAFETENSORS_MAX_HEADER);
    if (n > total - 8)
        return sb_fail(SB_ERR_FORMAT, "%s: '%s': header length %llu exceeds the file size (%llu bytes)",
                       fn, name, (unsigned long long)n, (unsigned long long)total);
    if (n < 2)
        return sb_fail(SB_ERR_FORMAT, "%s: '%s': header length %llu is too short for a JSON object", fn,
                       name, (unsigned long long)n);
    *hlen = n;
    return SB_OK;
}

sb_status sb_safetensors_parse_buffer(const void *buf, size_t len, const char *name,
                                      sb_safetensors **out) {
    const char *fn = "sb_safetensors_parse_buffer";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    if (!buf && len) return sb_fail(SB_ERR_NULL, "%s: buf is NULL", fn);
    if (!name) name = "<buffer>";
    const unsigned char *p = buf;
    if (len < 8)
        return sb_fail(SB_ERR_FORMAT, "%s: '%s': truncated: %zu bytes, shorter than the 8-byte header length",
                       fn, name, len);
    uint64_t hlen;
    SB_TRY(check_prefix(fn, name, p, len, &hlen));
    st_src src = {NULL, p + 8 + hlen, 0};
    return load(fn, name, p + 8, (size_t)hlen, len - 8 - hlen, &src, out);
}

sb_status sb_safetensors_read(const char *path, sb_safetensors **out) {
    const char *fn = "sb_safetensors_read";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    if (!path) return sb_fail(SB_ERR_NULL, "%s: path is NULL", fn);
    FILE *fp;
    uint64_t total;
    SB_TRY(sb_fopen_regular(fn, path, 0, &fp, &total));
    unsigned char *header = NULL;
    sb_status s = SB_OK;
    unsigned char prefix[8];
    uint64_t hlen = 0;
    if (total < 8) {
        s = sb_fail(SB_ERR_FORMAT, "%s: '%s': truncated: %llu bytes, shorter than the 8-byte header length",
                    fn, path, (unsigned long long)total);
        goto done;
    }
    st_src src = {fp, NULL, 0};
    if ((s = src_read(fn, path, &src, prefix, 8)) != SB_OK) goto done;
    if ((s = check_prefix(fn, path, prefix, total, &hlen)) != SB_OK) goto done;
    header = sb_malloc(fn, (size_t)hlen);
    if (!header) { s = SB_ERR_NOMEM; goto done; }
    if ((s = src_read(fn, path, &src, header, (size_t)hlen)) != SB_OK) goto done;
    if ((s = load(fn, path, header, (size_t)hlen, total - 8 - hlen, &src, out)) != SB_OK) goto done;
    if (fgetc(fp) != EOF) {
        sb_safetensors_free(*out);
        *out = NULL;
        s = sb_fail(SB_ERR_FORMAT, "%s: '%s': file grew while it was being read", fn, path);
    }
done:
    free(header);
    fclose(fp);
    return s;
}

/* ---- accessors ---- */

size_t sb_safetensors_count(const sb_safetensors *st) { return st ? st->n : 0; }
size_t sb_safetensors_meta_count(const sb_safetensors *st) { return st ? st->nm : 0; }

sb_status sb_safetensors_get(const sb_safetensors *st, const char *name, const sb_tensor **out) {
    const char *fn = "sb_safetensors_get";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    if (!st) return sb_fail(SB_ERR_NULL, "%s: st is NULL", fn);
    if (!name) return sb_fail(SB_ERR_NULL, "%s: name is NULL", fn);
    st_entry key = {0}, *kp = &key;
    key.name = (char *)name;
    st_entry **hit = bsearch(&kp, st->by_name, st->n, sizeof *st->by_name, cmp_entry_name);
    if (!hit) return sb_fail(SB_ERR_ARG, "%s: no tensor named \"%s\"", fn, name);
    *out = (*hit)->tensor;
    return SB_OK;
}

sb_status sb_safetensors_at(const sb_safetensors *st, size_t i, const char **name,
                            const sb_tensor **tensor) {
    const char *fn = "sb_safetensors_at";
    if (!st) return sb_fail(SB_ERR_NULL, "%s: st is NULL", fn);
    if (i >= st->n) return sb_fail(SB_ERR_RANGE, "%s: index %zu is outside 0..%zu", fn, i, st->n);
    if (name) *name = st->t[i].name;
    if (tensor) *tensor = st->t[i].tensor;
    return SB_OK;
}

sb_status sb_safetensors_get_meta(const sb_safetensors *st, const char *key, const char **value) {
    const char *fn = "sb_safetensors_get_meta";
    if (!value) return sb_fail(SB_ERR_NULL, "%s: value is NULL", fn);
    *value = NULL;
    if (!st) return sb_fail(SB_ERR_NULL, "%s: st is NULL", fn);
    if (!key) return sb_fail(SB_ERR_NULL, "%s: key is NULL", fn);
    st_meta k = {(char *)key, NULL}, *kp = &k;
    st_meta **hit = bsearch(&kp, st->by_key, st->nm, sizeof *st->by_key, cmp_meta_key);
    if (!hit) return sb_fail(SB_ERR_ARG, "%s: no metadata key \"%s\"", fn, key);
    *value = (*hit)->value;
    return SB_OK;
}

sb_status sb_safetensors_meta_at(const sb_safetensors *st, size_t i, const char **key,
                                 const char **value) {
    const char *fn = "sb_safetensors_meta_at";
    if (!st) return sb_fail(SB_ERR_NULL, "%s: st is NULL", fn);
    if (i >= st->nm) return sb_fail(SB_ERR_RANGE, "%s: index %zu is outside 0..%zu", fn, i, st->nm);
    if (key) *key = st->m[i].key;
    if (value) *value = st->m[i].value;
    return SB_OK;
}

/* ---- the writer ---- */

typedef struct strbuf {
    char *s;
    size_t n, cap;
    int oom;
} strbuf;

static void sb_put(strbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *g = realloc(b->s, cap);
        if (!g) { b->oom = 1; return; }
        b->s = g;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}
static void sb_puts(strbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

/* JSON string; input is valid UTF-8 (checked), so only '"', '\\' and
 * control characters need escaping. */
static void put_json_string(strbuf *b, const char *s) {
    sb_put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') { esc[0] = '\\'; esc[1] = (char)*p; sb_put(b, esc, 2); }
        else if (*p < 0x20) { snprintf(esc, sizeof esc, "\\u%04x", *p); sb_put(b, esc, 6); }
        else sb_put(b, (const char *)p, 1);
    }
    sb_put(b, "\"", 1);
}

static int cmp_cstr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Names must be unique: sorted copy, adjacent compare. */
static sb_status check_unique(const char *fn, const char *what, const char **names, size_t n) {
    qsort(names, n, sizeof *names, cmp_cstr);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(names[i - 1], names[i]))
            return sb_fail(SB_ERR_ARG, "%s: duplicated %s \"%s\"", fn, what, names[i]);
    return SB_OK;
}

static sb_status validate_write_args(const char *fn, const char *path, const sb_named_tensor *tensors,
                                     size_t count, const sb_kv *metadata, size_t n_meta) {
    if (!path) return sb_fail(SB_ERR_NULL, "%s: path is NULL", fn);
    if (!tensors && count) return sb_fail(SB_ERR_NULL, "%s: tensors is NULL but count is %zu", fn, count);
    if (!metadata && n_meta) return sb_fail(SB_ERR_NULL, "%s: metadata is NULL but n_meta is %zu", fn, n_meta);
    for (size_t i = 0; i < count; i++) {
        const char *nm = tensors[i].name;
        const sb_tensor *t = tensors[i].tensor;
        if (!nm) return sb_fail(SB_ERR_NULL, "%s: tensors[%zu].name is NULL", fn, i);
        if (!*nm || !strcmp(nm, META_KEY) || !sb_utf8_valid(nm))
            return sb_fail(SB_ERR_ARG, "%s: tensors[%zu].name \"%s\" is empty, reserved or not UTF-8", fn, i, nm);
        if (!t) return sb_fail(SB_ERR_NULL, "%s: tensor \"%s\" is NULL", fn, nm);
        if (!dtype_tag(t->dtype)) return sb_fail(SB_ERR_DTYPE, "%s: tensor \"%s\" has invalid dtype %d", fn, nm, (int)t->dtype);
        char label[80];
        snprintf(label, sizeof label, "tensor \"%.60s\"", nm);
        SB_TRY(sb_check_host_tensor(fn, label, t, t->dtype, -1));
        for (int k = 0; k < t->ndim; k++)
            if (t->shape[k] < 0) return sb_fail(SB_ERR_SHAPE, "%s: %s has a negative dimension", fn, label);
    }
    for (size_t i = 0; i < n_meta; i++) {
        if (!metadata[i].key || !metadata[i].value)
            return sb_fail(SB_ERR_NULL, "%s: metadata[%zu] has a NULL key or value", fn, i);
        if (!strcmp(metadata[i].key, SB_SAFETENSORS_SHA256_KEY))
            return sb_fail(SB_ERR_ARG, "%s: metadata key \"%s\" is reserved (the writer sets it)", fn,
                           SB_SAFETENSORS_SHA256_KEY);
        if (!sb_utf8_valid(metadata[i].key) || !sb_utf8_valid(metadata[i].value))
            return sb_fail(SB_ERR_ARG, "%s: metadata[%zu] (\"%.60s\") is not valid UTF-8", fn, i, metadata[i].key);
    }
    const char **names = sb_malloc(fn, (count > n_meta ? count : n_meta) * sizeof *names + 1);
    if (!names) return SB_ERR_NOMEM;
    for (size_t i = 0; i < count; i++) names[i] = tensors[i].name;
    sb_status s = check_unique(fn, "tensor name", names, count);
    for (size_t i = 0; s == SB_OK && i < n_meta; i++) names[i] = metadata[i].key;
    if (s == SB_OK) s = check_unique(fn, "metadata key", names, n_meta);
    free(names);
    return s;
}

/* Streams t's elements in row-major logical order as little-endian bytes,
 * whatever its strides or the host's byte order. */
static sb_status write_tensor(const char *fn, sb_atomic_file *af, sb_sha256_ctx *ctx,
                              const sb_tensor *t) {
    unsigned char buf[1 << 16];
    size_t es = sb_dtype_size(t->dtype), fill = 0;
    int64_t n = sb_tensor_numel(t), idx[SB_MAX_DIMS] = {0};
    const unsigned char *base = t->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int k = 0; k < t->ndim; k++) off += idx[k] * t->strides[k];
        const unsigned char *src = base + off * (int64_t)es;
        uint64_t v;
        if (es == 4) { uint32_t w; memcpy(&w, src, 4); v = w; }
        else memcpy(&v, src, 8);
        for (size_t b = 0; b < es; b++) buf[fill++] = (unsigned char)(v >> (8 * b));
        if (fill == sizeof buf) {
            sb_sha256_update(ctx, buf, fill);
            SB_TRY(sb_atomic_write(af, fn, buf, fill));
            fill = 0;
        }
        for (int k = t->ndim - 1; k >= 0; k--) {
            if (++idx[k] < t->shape[k]) break;
            idx[k] = 0;
        }
    }
    sb_sha256_update(ctx, buf, fill);
    return sb_atomic_write(af, fn, buf, fill);
}

sb_status sb_safetensors_write(const char *path, const sb_named_tensor *tensors, size_t count,
                               const sb_kv *metadata, size_t n_meta) {
    const char *fn = "sb_safetensors_write";
    SB_TRY(validate_write_args(fn, path, tensors, count, metadata, n_meta));
    /* The header: metadata first (the checksum last, as 64 placeholder
     * zeros filled in once the data has been streamed), then the tensors in
     * the caller's order with consecutive offsets. */
    strbuf h = {0};
    sb_puts(&h, "{\"" META_KEY "\":{");
    for (size_t i = 0; i < n_meta; i++) {
        put_json_string(&h, metadata[i].key);
        sb_puts(&h, ":");
        put_json_string(&h, metadata[i].value);
        sb_puts(&h, ",");
    }
    sb_puts(&h, "\"" SB_SAFETENSORS_SHA256_KEY "\":\"");
    size_t hash_at = h.n;
    sb_puts(&h, "0000000000000000000000000000000000000000000000000000000000000000\"}");
    uint64_t offset = 0;
    for (size_t i = 0; i < count; i++) {
        const sb_tensor *t = tensors[i].tensor;
        char num[64];
        sb_puts(&h, ",");
        put_json_string(&h, tensors[i].name);
        sb_puts(&h, ":{\"dtype\":\"");
        sb_puts(&h, dtype_tag(t->dtype));
        sb_puts(&h, "\",\"shape\":[");
        for (int k = 0; k < t->ndim; k++) {
            snprintf(num, sizeof num, k ? ",%lld" : "%lld", (long long)t->shape[k]);
            sb_puts(&h, num);
        }
        uint64_t bytes = (uint64_t)sb_tensor_numel(t) * sb_dtype_size(t->dtype);
        snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)offset,
                 (unsigned long long)(offset + bytes));
        sb_puts(&h, num);
        offset += bytes;
    }
    sb_puts(&h, "}");
    /* Spaces (JSON whitespace) pad the header so the data starts 8-aligned. */
    while (h.n % 8) sb_puts(&h, " ");
    if (h.oom) { free(h.s); return sb_fail(SB_ERR_NOMEM, "%s: cannot allocate the header for '%s'", fn, path); }
    if (h.n > SB_SAFETENSORS_MAX_HEADER) {
        free(h.s);
        return sb_fail(SB_ERR_ARG, "%s: header for '%s' would be %zu bytes, over the %u-byte limit", fn,
                       path, h.n, SB_SAFETENSORS_MAX_HEADER);
    }
    unsigned char prefix[8];
    for (int b = 0; b < 8; b++) prefix[b] = (unsigned char)((uint64_t)h.n >> (8 * b));

    sb_atomic_file af;
    sb_status s = sb_atomic_open(&af, fn, path);
    if (s != SB_OK) { free(h.s); return s; }
    sb_sha256_ctx ctx;
    sb_sha256_init(&ctx);
    s = sb_atomic_write(&af, fn, prefix, 8);
    if (s == SB_OK) s = sb_atomic_write(&af, fn, h.s, h.n);
    for (size_t i = 0; s == SB_OK && i < count; i++) s = write_tensor(fn, &af, &ctx, tensors[i].tensor);
    if (s == SB_OK) {
        unsigned char digest[32];
        char hex[65];
        sb_sha256_final(&ctx, digest);
        sb_hex_digest(digest, hex);
        s = sb_atomic_rewrite(&af, fn, 8 + hash_at, hex, 64);
    }
    free(h.s);
    if (s != SB_OK) { sb_atomic_abort(&af); return s; }
    return sb_atomic_commit(&af, fn);
}
