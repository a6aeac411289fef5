/* IDX reader (the MNIST format) and the MNIST / Fashion-MNIST loader.
 *
 * Input is untrusted: the header is validated and the element count bounded
 * before anything is allocated, and data is read in growing chunks so a
 * header that promises gigabytes costs memory only for bytes actually
 * present. gzip is read through zlib, which passes plain files through.
 *
 * Built with SB_NO_ZLIB (`make NO_ZLIB=1`, for targets without a zlib, such
 * as the cross-compiled portability configurations), plain files are read
 * with stdio and a gzip file is refused with a message naming the option. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#ifndef SB_NO_ZLIB
#include <zlib.h>
#endif
#include "core/fpenv.h"
#include "io/io_internal.h"

enum { IDX_HEADER_MAX = 4 + 4 * SB_IDX_MAX_DIMS };

static size_t idx_type_size(int type) {
    switch (type) {
    case SB_IDX_U8: case SB_IDX_I8: return 1;
    case SB_IDX_I16: return 2;
    case SB_IDX_I32: case SB_IDX_F32: return 4;
    case SB_IDX_F64: return 8;
    }
    return 0;
}

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Validates the 4-byte magic; *header_len is how many bytes the dims need. */
static sb_status parse_magic(const char *fn, const char *name, const unsigned char *m,
                             size_t *header_len) {
    if (m[0] != 0 || m[1] != 0)
        return sb_fail(SB_ERR_FORMAT,
                       "%s: '%s' is not an IDX file: magic 0x%02x%02x%02x%02x does not start with two zero bytes",
                       fn, name, m[0], m[1], m[2], m[3]);
    if (!idx_type_size(m[2]))
        return sb_fail(SB_ERR_FORMAT,
                       "%s: '%s': unknown IDX element type 0x%02x (magic 0x%02x%02x%02x%02x)", fn,
                       name, m[2], m[0], m[1], m[2], m[3]);
    if (m[3] < 1 || m[3] > SB_IDX_MAX_DIMS)
        return sb_fail(SB_ERR_FORMAT, "%s: '%s': IDX header has %d dimensions, supported 1..%d",
                       fn, name, m[3], SB_IDX_MAX_DIMS);
    *header_len = 4 + 4 * (size_t)m[3];
    return SB_OK;
}

/* Fills everything but data from a complete header. */
static sb_status parse_header(const char *fn, const char *name, const unsigned char *h,
                              sb_idx *idx) {
    memset(idx, 0, sizeof *idx);
    idx->type = (sb_idx_type)h[2];
    idx->ndim = h[3];
    idx->elem_size = idx_type_size(h[2]);
    int64_t count = 1;
    for (int i = 0; i < idx->ndim; i++) {
        uint32_t d = be32(h + 4 + 4 * i);
        if (d == 0)
            return sb_fail(SB_ERR_FORMAT, "%s: '%s': dimension %d is 0", fn, name, i);
        idx->dims[i] = d;
        /* d < 2^32 and count <= 2^31 before the multiply: no overflow. */
        count *= d;
        if (count > SB_IDX_MAX_ELEMENTS)
            return sb_fail(SB_ERR_FORMAT,
                           "%s: '%s': header declares more than %lld elements (dimension %d is %u); refusing",
                           fn, name, (long long)SB_IDX_MAX_ELEMENTS, i, d);
    }
    idx->count = count;
    return SB_OK;
}

/* Big-endian file order to host order, in place, for any host. */
static void to_host_order(sb_idx *idx) {
    unsigned char *p = idx->data;
    size_t es = idx->elem_size, n = (size_t)idx->count;
    for (size_t i = 0; i < n && es > 1; i++, p += es) {
        if (es == 2) {
            uint16_t v = (uint16_t)(p[0] << 8 | p[1]);
            memcpy(p, &v, 2);
        } else if (es == 4) {
            uint32_t v = be32(p);
            memcpy(p, &v, 4);
        } else {
            uint64_t v = (uint64_t)be32(p) << 32 | be32(p + 4);
            memcpy(p, &v, 8);
        }
    }
}

void sb_idx_free(sb_idx *idx) {
    if (!idx) return;
    free(idx->data);
    free(idx);
}

sb_status sb_idx_parse_buffer(const void *buf, size_t len, const char *name, sb_idx **out) {
    const char *fn = "sb_idx_parse_buffer";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    if (!buf && len) return sb_fail(SB_ERR_NULL, "%s: buf is NULL", fn);
    if (!name) name = "<buffer>";
    const unsigned char *p = buf;
    size_t hlen = 0; /* set by parse_magic; -O3 cannot see that */
    if (len < 4)
        return sb_fail(SB_ERR_FORMAT, "%s: '%s': truncated: %zu bytes, shorter than the 4-byte IDX magic",
                       fn, name, len);
    SB_TRY(parse_magic(fn, name, p, &hlen));
    if (len < hlen)
        return sb_fail(SB_ERR_FORMAT, "%s: '%s': truncated: header needs %zu bytes, got %zu", fn,
                       name, hlen, len);
    sb_idx h;
    SB_TRY(parse_header(fn, name, p, &h));
    size_t want = (size_t)h.count * h.elem_size, got = len - hlen;
    if (got < want)
        return sb_fail(SB_ERR_FORMAT, "%s: '%s': truncated: expected %zu bytes of data, got %zu", fn,
                       name, want, got);
    if (got > want)
        return sb_fail(SB_ERR_FORMAT, "%s: '%s': %zu trailing bytes after the %zu bytes of data", fn,
                       name, got - want, want);
    sb_idx *idx = sb_malloc(fn, sizeof *idx);
    if (!idx) return SB_ERR_NOMEM;
    *idx = h;
    idx->data = sb_malloc(fn, want);
    if (!idx->data) { free(idx); return SB_ERR_NOMEM; }
    memcpy(idx->data, p + hlen, want);
    to_host_order(idx);
    *out = idx;
    return SB_OK;
}

/* The byte stream sb_idx_read reads: gzip through zlib's inflate, or a
 * plain FILE.
 *
 * The gzip side drives inflate() directly rather than gzread(), because
 * gzread silently skips whatever follows the last gzip member: a damaged or
 * padded file would be accepted. Here the file must be one or more complete
 * gzip members and nothing else; a file that does not start with the gzip
 * magic is read as it is (like gzread's pass-through). */
#ifndef SB_NO_ZLIB
enum { GZ_UNKNOWN, GZ_PLAIN, GZ_GZIP };
enum { GZ_TRAILING = 1000 }; /* err: bytes after the last member */

typedef struct gz_reader {
    FILE *fp;
    int mode;          /* GZ_UNKNOWN until the first read looks at the magic */
    int in_member;     /* inside a gzip member: inflate has not reached its end */
    int at_end;
    int err;           /* 0, Z_ERRNO, a zlib error code or GZ_TRAILING */
    const char *detail; /* why a read came up short, or the error's text */
    uint64_t file_read; /* compressed bytes read from fp so far */
    z_stream z;
    unsigned char in[1 << 16];
} gz_reader;
typedef gz_reader *idx_stream;

static idx_stream stream_from_fd(int fd) {
    gz_reader *g = calloc(1, sizeof *g);
    if (g) g->fp = fdopen(fd, "rb");
    if (!g || !g->fp) {
        free(g);
        close(fd);
        return NULL;
    }
    return g;
}

static void stream_close(idx_stream g) {
    if (g->mode == GZ_GZIP) inflateEnd(&g->z);
    fclose(g->fp);
    free(g);
}

/* Tops the input buffer up (keeping unread bytes). 0, or -1 on a read
 * error. At end of file avail_in simply stays as it is. */
static int gz_fill(gz_reader *g) {
    if (g->z.avail_in && g->z.next_in != g->in) memmove(g->in, g->z.next_in, g->z.avail_in);
    g->z.next_in = g->in;
    size_t got = fread(g->in + g->z.avail_in, 1, sizeof g->in - g->z.avail_in, g->fp);
    g->z.avail_in += (unsigned)got;
    g->file_read += got;
    if (got == 0 && ferror(g->fp)) {
        g->err = Z_ERRNO;
        return -1;
    }
    return 0;
}

/* Up to n bytes of the decoded stream. Returns the number of bytes read
 * (short only at end of stream) or -1. */
static int64_t stream_read(idx_stream g, void *dst, size_t n) {
    unsigned char *out = dst;
    size_t done = 0;
    if (g->err) return -1;
    if (g->mode == GZ_UNKNOWN) {
        g->z.next_in = g->in;
        if (gz_fill(g) != 0) return -1;
        g->mode = g->z.avail_in >= 2 && g->in[0] == 0x1f && g->in[1] == 0x8b ? GZ_GZIP : GZ_PLAIN;
        if (g->mode == GZ_GZIP && inflateInit2(&g->z, 15 + 16) != Z_OK) {
            g->mode = GZ_PLAIN; /* nothing to inflateEnd */
            g->err = Z_MEM_ERROR;
            g->detail = "out of memory";
            return -1;
        }
    }
    if (g->mode == GZ_PLAIN) {
        size_t take = g->z.avail_in < n ? g->z.avail_in : n;
        memcpy(out, g->z.next_in, take);
        g->z.next_in += take;
        g->z.avail_in -= (unsigned)take;
        done = take;
        if (done < n) done += fread(out + done, 1, n - done, g->fp);
        if (done < n && ferror(g->fp)) { g->err = Z_ERRNO; return -1; }
        return (int64_t)done;
    }
    while (done < n && !g->at_end && !g->err) {
        if (!g->in_member) {
            /* Between members: the end of the file, or another member. */
            if (g->z.avail_in < 2 && gz_fill(g) != 0) return -1;
            if (g->z.avail_in == 0) { g->at_end = 1; break; }
            if (g->z.avail_in < 2 || g->z.next_in[0] != 0x1f || g->z.next_in[1] != 0x8b) {
                g->err = GZ_TRAILING;
                return -1;
            }
            if (inflateReset(&g->z) != Z_OK) { g->err = Z_STREAM_ERROR; return -1; }
            g->in_member = 1;
        }
        if (g->z.avail_in == 0) {
            if (gz_fill(g) != 0) return -1;
            if (g->z.avail_in == 0) {
                /* Truncated inside a member: what was decoded is
                 * returned (the caller reports the short count with this
                 * detail); any further read fails. */
                g->detail = "unexpected end of file";
                g->err = Z_BUF_ERROR;
                break;
            }
        }
        size_t step = n - done > (1u << 30) ? (1u << 30) : n - done;
        g->z.next_out = out + done;
        g->z.avail_out = (unsigned)step;
        int r = inflate(&g->z, Z_NO_FLUSH);
        done += step - g->z.avail_out;
        if (r == Z_STREAM_END) g->in_member = 0;
        else if (r != Z_OK && r != Z_BUF_ERROR) {
            g->err = r;
            g->detail = g->z.msg ? g->z.msg : "unknown error";
            return -1;
        }
    }
    return g->err && done == 0 ? -1 : (int64_t)done;
}

static sb_status stream_failure(const char *fn, const char *path, idx_stream g) {
    if (g->err == Z_ERRNO)
        return sb_fail(SB_ERR_IO, "%s: reading '%s' failed: %s", fn, path, strerror(errno));
    if (g->err == Z_MEM_ERROR)
        return sb_fail(SB_ERR_NOMEM, "%s: out of memory decompressing '%s'", fn, path);
    if (g->err == GZ_TRAILING)
        return sb_fail(SB_ERR_FORMAT,
                       "%s: '%s': trailing garbage after the gzip data (byte %llu of the file is "
                       "not the start of another gzip member)",
                       fn, path, (unsigned long long)(g->file_read - g->z.avail_in));
    return sb_fail(SB_ERR_FORMAT, "%s: '%s': corrupt gzip stream (zlib: %s)", fn, path,
                   g->detail ? g->detail : "unknown error");
}

/* Why a read came up short (a truncated gzip stream), or NULL. */
static const char *stream_detail(idx_stream g) { return g->detail; }

static sb_status stream_check_magic(const char *fn, const char *path, const unsigned char *m) {
    (void)fn, (void)path, (void)m;
    return SB_OK;
}
#else
typedef FILE *idx_stream;

static idx_stream stream_from_fd(int fd) {
    FILE *f = fdopen(fd, "rb");
    if (!f) close(fd);
    return f;
}
static void stream_close(idx_stream s) { fclose(s); }

static int64_t stream_read(idx_stream f, void *dst, size_t n) {
    size_t done = fread(dst, 1, n, f);
    return done < n && ferror(f) ? -1 : (int64_t)done;
}

static sb_status stream_failure(const char *fn, const char *path, idx_stream f) {
    (void)f;
    return sb_fail(SB_ERR_IO, "%s: reading '%s' failed: %s", fn, path, strerror(errno));
}

static const char *stream_detail(idx_stream f) {
    (void)f;
    return NULL;
}

/* Without zlib a gzip file would otherwise be reported as a bad IDX magic;
 * say what is really wrong and how to fix it. */
static sb_status stream_check_magic(const char *fn, const char *path, const unsigned char *m) {
    if (m[0] == 0x1f && m[1] == 0x8b)
        return sb_fail(SB_ERR_FORMAT,
                       "%s: '%s' is gzip-compressed, but this samebits was built without zlib "
                       "(make NO_ZLIB=1, SB_NO_ZLIB): gunzip the file, or rebuild without NO_ZLIB",
                       fn, path);
    return SB_OK;
}
#endif

sb_status sb_idx_read(const char *path, sb_idx **out) {
    SB_FPENV_GUARD();
    const char *fn = "sb_idx_read";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    if (!path) return sb_fail(SB_ERR_NULL, "%s: path is NULL", fn);
    int fd;
    SB_TRY(sb_open_regular_fd(fn, path, 0, &fd, NULL));
    idx_stream gz = stream_from_fd(fd);
    if (!gz) return sb_fail(SB_ERR_NOMEM, "%s: cannot start reading '%s': %s", fn, path, strerror(errno));
    unsigned char head[IDX_HEADER_MAX];
    size_t hlen = 0;
    sb_idx *idx = NULL;
    sb_status s = SB_OK;
    int64_t r = stream_read(gz, head, 4);
    if (r < 0) { s = stream_failure(fn, path, gz); goto done; }
    if (r < 4) {
        s = sb_fail(SB_ERR_FORMAT, "%s: '%s': truncated: %lld bytes, shorter than the 4-byte IDX magic",
                    fn, path, (long long)r);
        goto done;
    }
    if ((s = stream_check_magic(fn, path, head)) != SB_OK) goto done;
    if ((s = parse_magic(fn, path, head, &hlen)) != SB_OK) goto done;
    r = stream_read(gz, head + 4, hlen - 4);
    if (r < 0) { s = stream_failure(fn, path, gz); goto done; }
    if ((size_t)r < hlen - 4) {
        s = sb_fail(SB_ERR_FORMAT, "%s: '%s': truncated: header needs %zu bytes, got %lld", fn, path,
                    hlen, (long long)(4 + r));
        goto done;
    }
    idx = sb_malloc(fn, sizeof *idx);
    if (!idx) { s = SB_ERR_NOMEM; goto done; }
    if ((s = parse_header(fn, path, head, idx)) != SB_OK) goto done;
    /* Grow the buffer as bytes arrive: a lying header cannot make us
     * allocate more than about twice what the file really holds. */
    size_t want = (size_t)idx->count * idx->elem_size, have = 0, cap = 0;
    while (have < want) {
        size_t next = cap ? cap * 2 : (size_t)1 << 16;
        if (next > want) next = want;
        void *grown = realloc(idx->data, next);
        if (!grown) { s = sb_fail(SB_ERR_NOMEM, "%s: cannot allocate %zu bytes for '%s'", fn, next, path); goto done; }
        idx->data = grown;
        cap = next;
        r = stream_read(gz, (char *)idx->data + have, cap - have);
        if (r < 0) { s = stream_failure(fn, path, gz); goto done; }
        have += (size_t)r;
        if (have < cap) break;
    }
    if (have < want) {
        const char *zmsg = stream_detail(gz);
        s = sb_fail(SB_ERR_FORMAT, "%s: '%s': truncated: expected %zu bytes of data, got %zu%s%s%s", fn,
                    path, want, have, zmsg ? " (zlib: " : "", zmsg ? zmsg : "", zmsg ? ")" : "");
        goto done;
    }
    /* One more byte must hit the end; reading to the end also makes zlib
     * check the gzip CRC and length trailer. */
    unsigned char extra[256];
    r = stream_read(gz, extra, sizeof extra);
    if (r < 0) { s = stream_failure(fn, path, gz); goto done; }
    if (r > 0) {
        s = sb_fail(SB_ERR_FORMAT, "%s: '%s': trailing bytes after the %zu bytes of data (%s%lld more)",
                    fn, path, want, r == (int64_t)sizeof extra ? "at least " : "", (long long)r);
        goto done;
    }
    to_host_order(idx);
done:
    stream_close(gz);
    if (s != SB_OK) { sb_idx_free(idx); return s; }
    *out = idx;
    return SB_OK;
}

/* ---- MNIST ---- */

void sb_dataset_free(sb_dataset *ds) {
    if (!ds) return;
    sb_tensor_free(ds->images);
    sb_tensor_free(ds->labels);
    memset(ds, 0, sizeof *ds);
}

/* Finds "<dir>/<split>-<kind>-idx<n>-ubyte[.gz]" or the ".idx<n>-ubyte"
 * spelling; *found is a heap string. */
static sb_status find_file(const char *fn, const char *dir, const char *split, const char *kind,
                           int n, char **found) {
    static const char *const patterns[] = {"%s/%s-%s-idx%d-ubyte", "%s/%s-%s-idx%d-ubyte.gz",
                                           "%s/%s-%s.idx%d-ubyte", "%s/%s-%s.idx%d-ubyte.gz"};
    size_t cap = strlen(dir) + 64;
    *found = NULL;
    for (size_t i = 0; i < sizeof patterns / sizeof *patterns; i++) {
        char *p = sb_malloc(fn, cap);
        if (!p) return SB_ERR_NOMEM;
        snprintf(p, cap, patterns[i], dir, split, kind, n);
        /* Existence only: sb_idx_read opens it and refuses anything but a
         * regular file (opening a FIFO here would block). */
        struct stat st;
        if (stat(p, &st) == 0) { *found = p; return SB_OK; }
        free(p);
    }
    return sb_fail(SB_ERR_IO, "%s: no %s-%s-idx%d-ubyte or %s-%s-idx%d-ubyte.gz in '%s'", fn, split,
                   kind, n, split, kind, n, dir);
}

/* The pixel definition of the contract: one binary32 division, rounded to
 * nearest even, so every implementation gets the same 256 values. */
static float pixel_to_f32(unsigned char b) { return (float)b / 255.0f; }

sb_status sb_mnist_load(const char *dir, bool train, sb_dataset *out) {
    SB_FPENV_GUARD();
    const char *fn = "sb_mnist_load";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    memset(out, 0, sizeof *out);
    if (!dir) return sb_fail(SB_ERR_NULL, "%s: dir is NULL", fn);
    const char *split = train ? "train" : "t10k";
    char *img_path = NULL, *lab_path = NULL;
    sb_idx *img = NULL, *lab = NULL;
    sb_tensor *images = NULL, *labels = NULL;
    sb_status s;
    if ((s = find_file(fn, dir, split, "images", 3, &img_path)) != SB_OK) goto done;
    if ((s = find_file(fn, dir, split, "labels", 1, &lab_path)) != SB_OK) goto done;
    if ((s = sb_idx_read(img_path, &img)) != SB_OK) goto done;
    if ((s = sb_idx_read(lab_path, &lab)) != SB_OK) goto done;
    if (img->type != SB_IDX_U8 || img->ndim != 3) {
        s = sb_fail(SB_ERR_FORMAT, "%s: '%s': images must be u8 with 3 dimensions (N, H, W), got type 0x%02x with %d",
                    fn, img_path, (unsigned)img->type, img->ndim);
        goto done;
    }
    if (lab->type != SB_IDX_U8 || lab->ndim != 1) {
        s = sb_fail(SB_ERR_FORMAT, "%s: '%s': labels must be u8 with 1 dimension (N), got type 0x%02x with %d",
                    fn, lab_path, (unsigned)lab->type, lab->ndim);
        goto done;
    }
    int64_t n = img->dims[0], h = img->dims[1], w = img->dims[2];
    if (lab->dims[0] != n) {
        s = sb_fail(SB_ERR_FORMAT, "%s: count mismatch: '%s' has %lld images but '%s' has %lld labels",
                    fn, img_path, (long long)n, lab_path, (long long)lab->dims[0]);
        goto done;
    }
    const unsigned char *lb = lab->data, *px = img->data;
    for (int64_t i = 0; i < n; i++) {
        if (lb[i] >= 10) {
            s = sb_fail(SB_ERR_FORMAT, "%s: '%s': label %lld is %u, outside 0..9", fn, lab_path,
                        (long long)i, lb[i]);
            goto done;
        }
    }
    int64_t ishape[4] = {n, 1, h, w}, lshape[1] = {n};
    if ((s = sb_tensor_new(&images, SB_F32, 4, ishape)) != SB_OK) goto done;
    if ((s = sb_tensor_new(&labels, SB_I64, 1, lshape)) != SB_OK) goto done;
    float *x = images->data;
    int64_t *y = labels->data;
    for (int64_t i = 0; i < img->count; i++) x[i] = pixel_to_f32(px[i]);
    for (int64_t i = 0; i < n; i++) y[i] = lb[i];
    out->images = images;
    out->labels = labels;
    out->count = n;
    images = labels = NULL;
done:
    sb_tensor_free(images);
    sb_tensor_free(labels);
    sb_idx_free(img);
    sb_idx_free(lab);
    free(img_path);
    free(lab_path);
    return s;
}
