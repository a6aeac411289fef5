/* IDX reader and MNIST loader: plain and gzip files generated here, every
 * documented rejection, the exact pixel scaling, a deterministic mutation
 * sweep, and (when installed) the real Fashion-MNIST files. */
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "harness.h"
#include "samebits/io.h"
#include "io/io_internal.h"

static char dir[64];

static void path_in(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", dir, name); }

static void write_file(const char *name, const void *buf, size_t len, int gzip) {
    char p[256];
    path_in(p, sizeof p, name);
    if (gzip) {
        gzFile g = gzopen(p, "wb");
        if (len) gzwrite(g, buf, (unsigned)len);
        gzclose(g);
    } else {
        FILE *f = fopen(p, "wb");
        fwrite(buf, 1, len, f);
        fclose(f);
    }
}

/* An IDX image in memory: header then data; returns the length. */
static size_t make_idx(unsigned char *out, int type, int ndim, const uint32_t *dims, const void *data,
                       size_t data_len) {
    out[0] = 0; out[1] = 0; out[2] = (unsigned char)type; out[3] = (unsigned char)ndim;
    for (int i = 0; i < ndim; i++) {
        out[4 + 4 * i] = (unsigned char)(dims[i] >> 24);
        out[5 + 4 * i] = (unsigned char)(dims[i] >> 16);
        out[6 + 4 * i] = (unsigned char)(dims[i] >> 8);
        out[7 + 4 * i] = (unsigned char)dims[i];
    }
    memcpy(out + 4 + 4 * ndim, data, data_len);
    return 4 + 4 * (size_t)ndim + data_len;
}

static uint64_t lcg_state = 0x9e3779b97f4a7c15ULL;
static uint32_t lcg(void) {
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(lcg_state >> 33);
}

static sb_status read_named(const char *name, sb_idx **out) {
    char p[256];
    path_in(p, sizeof p, name);
    return sb_idx_read(p, out);
}

static void test_read_types(void) {
    static unsigned char buf[4096];
    unsigned char px[2 * 3 * 4];
    for (int i = 0; i < 24; i++) px[i] = (unsigned char)(i * 11);
    uint32_t d3[3] = {2, 3, 4};
    size_t n = make_idx(buf, 0x08, 3, d3, px, 24);
    for (int gz = 0; gz < 2; gz++) {
        write_file(gz ? "u8.idx.gz" : "u8.idx", buf, n, gz);
        sb_idx *idx = NULL;
        CHECK_OK(read_named(gz ? "u8.idx.gz" : "u8.idx", &idx));
        CHECK(idx && idx->type == SB_IDX_U8 && idx->ndim == 3 && idx->dims[0] == 2 &&
                  idx->dims[1] == 3 && idx->dims[2] == 4 && idx->count == 24 && idx->elem_size == 1,
              "u8 header (gzip=%d)", gz);
        CHECK(idx && !memcmp(idx->data, px, 24), "u8 data (gzip=%d)", gz);
        sb_idx_free(idx);
    }
    /* Multi-byte types are big-endian in the file, host order in memory. */
    unsigned char be[16] = {0x12, 0x34, 0xfe, 0xdc, 0x80, 0x00, 0x00, 0x01, 0x3f, 0x80, 0x00, 0x00,
                            0xc0, 0x00, 0x00, 0x00};
    uint32_t d8[1] = {8}, d4[1] = {4}, d2[1] = {2};
    sb_idx *idx = NULL;
    n = make_idx(buf, 0x0B, 1, d8, be, 16);
    CHECK_OK(sb_idx_parse_buffer(buf, n, "i16", &idx));
    CHECK(idx && ((int16_t *)idx->data)[0] == 0x1234 && ((int16_t *)idx->data)[1] == (int16_t)0xfedc, "i16");
    sb_idx_free(idx);
    n = make_idx(buf, 0x0C, 1, d4, be, 16);
    CHECK_OK(sb_idx_parse_buffer(buf, n, "i32", &idx));
    CHECK(idx && ((int32_t *)idx->data)[1] == (int32_t)0x80000001u, "i32");
    sb_idx_free(idx);
    n = make_idx(buf, 0x0D, 1, d4, be, 16);
    CHECK_OK(sb_idx_parse_buffer(buf, n, "f32", &idx));
    CHECK(idx && ((float *)idx->data)[2] == 1.0f && ((float *)idx->data)[3] == -2.0f, "f32");
    sb_idx_free(idx);
    n = make_idx(buf, 0x0E, 1, d2, be, 16);
    CHECK_OK(sb_idx_parse_buffer(buf, n, "f64", &idx));
    uint64_t w0 = 0x1234fedc80000001ULL, got = 0;
    if (idx) memcpy(&got, idx->data, 8);
    CHECK(got == w0, "f64 bits %llx", (unsigned long long)got);
    sb_idx_free(idx);
    n = make_idx(buf, 0x09, 1, d4, be, 4);
    CHECK_OK(sb_idx_parse_buffer(buf, n, "i8", &idx));
    CHECK(idx && ((int8_t *)idx->data)[2] == (int8_t)0xfe, "i8");
    sb_idx_free(idx);
    sb_idx_free(NULL);
}

static void test_rejections(void) {
    static unsigned char buf[4096];
    unsigned char px[64] = {0};
    uint32_t d3[3] = {2, 3, 4};
    size_t n = make_idx(buf, 0x08, 3, d3, px, 24);
    sb_idx *idx = NULL;
    for (int gz = 0; gz < 2; gz++) {
        const char *name = gz ? "t.idx.gz" : "t.idx";
        write_file(name, buf, n - 5, gz);
        CHECK_ERROR(read_named(name, &idx), SB_ERR_FORMAT, "truncated: expected 24 bytes of data, got 19");
        CHECK_ERROR(read_named(name, &idx), SB_ERR_FORMAT, name);
        write_file(name, buf, n + 3, gz); /* px has the extra bytes */
        CHECK_ERROR(read_named(name, &idx), SB_ERR_FORMAT, "trailing bytes after the 24 bytes of data (3 more)");
        write_file(name, buf, 10, gz);
        CHECK_ERROR(read_named(name, &idx), SB_ERR_FORMAT, "truncated: header needs 16 bytes, got 10");
        write_file(name, buf, 2, gz);
        CHECK_ERROR(read_named(name, &idx), SB_ERR_FORMAT, "shorter than the 4-byte IDX magic");
        write_file(name, buf, 0, gz);
        CHECK_ERROR(read_named(name, &idx), SB_ERR_FORMAT, "shorter than the 4-byte IDX magic");
    }
    CHECK_ERROR(sb_idx_parse_buffer(buf, n - 1, "m", &idx), SB_ERR_FORMAT, "truncated: expected 24 bytes of data, got 23");
    CHECK_ERROR(sb_idx_parse_buffer(buf, n + 1, "m", &idx), SB_ERR_FORMAT, "1 trailing bytes");
    unsigned char bad[32];
    memcpy(bad, buf, 32);
    bad[0] = 0x1f;
    CHECK_ERROR(sb_idx_parse_buffer(bad, n, "m", &idx), SB_ERR_FORMAT, "not an IDX file");
    memcpy(bad, buf, 32);
    bad[2] = 0x07;
    CHECK_ERROR(sb_idx_parse_buffer(bad, n, "m", &idx), SB_ERR_FORMAT, "unknown IDX element type 0x07");
    bad[2] = 0x08;
    bad[3] = 0;
    CHECK_ERROR(sb_idx_parse_buffer(bad, n, "m", &idx), SB_ERR_FORMAT, "0 dimensions");
    bad[3] = 5;
    CHECK_ERROR(sb_idx_parse_buffer(bad, n, "m", &idx), SB_ERR_FORMAT, "5 dimensions, supported 1..4");
    uint32_t zero[3] = {2, 0, 4}, huge[3] = {65536, 65536, 2}, big4[4] = {46340, 46340, 1, 1};
    n = make_idx(buf, 0x08, 3, zero, px, 0);
    CHECK_ERROR(sb_idx_parse_buffer(buf, n, "m", &idx), SB_ERR_FORMAT, "dimension 1 is 0");
    /* 2^33 elements: refused from the header alone, plain and gzip, before
     * any allocation. */
    n = make_idx(buf, 0x08, 3, huge, px, 0);
    CHECK_ERROR(sb_idx_parse_buffer(buf, n, "m", &idx), SB_ERR_FORMAT, "more than 2147483648 elements");
    write_file("huge.idx.gz", buf, n, 1);
    CHECK_ERROR(read_named("huge.idx.gz", &idx), SB_ERR_FORMAT, "refusing");
    /* Just under the bound: a lying header costs only what the file holds. */
    n = make_idx(buf, 0x08, 4, big4, px, 64);
    write_file("liar.idx.gz", buf, n, 1);
    CHECK_ERROR(read_named("liar.idx.gz", &idx), SB_ERR_FORMAT, "truncated: expected 2147395600 bytes of data, got 64");
    /* Corrupt gzip stream: flip a byte in the deflate data or the CRC. */
    uint32_t d1[1] = {24};
    n = make_idx(buf, 0x08, 1, d1, "abcdefghijklmnopqrstuvwx", 24);
    write_file("c.idx.gz", buf, n, 1);
    char p[256];
    path_in(p, sizeof p, "c.idx.gz");
    FILE *f = fopen(p, "r+b");
    fseek(f, -6, SEEK_END); /* inside the CRC32 trailer */
    int c = fgetc(f);
    fseek(f, -6, SEEK_END);
    fputc(c ^ 0x55, f);
    fclose(f);
    CHECK_ERROR(read_named("c.idx.gz", &idx), SB_ERR_FORMAT, "corrupt gzip stream");
    CHECK_ERROR(read_named("missing.idx", &idx), SB_ERR_IO, "cannot open");
    CHECK_ERROR(sb_idx_read(NULL, &idx), SB_ERR_NULL, "path is NULL");
    CHECK_ERROR(sb_idx_read("x", NULL), SB_ERR_NULL, "out is NULL");
    CHECK_ERROR(sb_idx_parse_buffer(NULL, 4, "m", &idx), SB_ERR_NULL, "buf is NULL");
    CHECK(idx == NULL, "idx set on failure");
}

/* Appends raw bytes to a file in dir. */
static void append_bytes(const char *name, const void *buf, size_t len) {
    char p[256];
    path_in(p, sizeof p, name);
    FILE *f = fopen(p, "ab");
    fwrite(buf, 1, len, f);
    fclose(f);
}

/* A gzip file must be whole gzip members and nothing else: zlib's gzread
 * would skip bytes after the last member, so they are checked here. */
static void test_gzip_framing(void) {
    static unsigned char buf[256];
    uint32_t d1[1] = {24};
    size_t n = make_idx(buf, 0x08, 1, d1, "abcdefghijklmnopqrstuvwx", 24);
    sb_idx *idx = NULL;
    write_file("g.idx.gz", buf, n, 1);
    CHECK_OK(read_named("g.idx.gz", &idx));
    sb_idx_free(idx);
    idx = NULL;
    append_bytes("g.idx.gz", "garbage", 7);
    CHECK_ERROR(read_named("g.idx.gz", &idx), SB_ERR_FORMAT, "trailing garbage after the gzip data");
    CHECK(idx == NULL, "no result for trailing garbage");
    /* One zero byte of padding, and a lone 0x1f, are garbage too. */
    write_file("g.idx.gz", buf, n, 1);
    append_bytes("g.idx.gz", "\0", 1);
    CHECK_ERROR(read_named("g.idx.gz", &idx), SB_ERR_FORMAT, "trailing garbage");
    write_file("g.idx.gz", buf, n, 1);
    append_bytes("g.idx.gz", "\x1f", 1);
    CHECK_ERROR(read_named("g.idx.gz", &idx), SB_ERR_FORMAT, "trailing garbage");
    /* Two members (gzip a b > c) are one valid stream: the header in the
     * first, the data in the second. */
    write_file("m1.gz", buf, 8, 1);
    write_file("m2.gz", buf + 8, n - 8, 1);
    char p1[256], p2[256];
    path_in(p1, sizeof p1, "m1.gz");
    path_in(p2, sizeof p2, "m2.gz");
    FILE *f = fopen(p2, "rb");
    unsigned char m2[256];
    size_t m2n = fread(m2, 1, sizeof m2, f);
    fclose(f);
    append_bytes("m1.gz", m2, m2n);
    CHECK_OK(sb_idx_read(p1, &idx));
    CHECK(idx && idx->count == 24 && !memcmp(idx->data, "abcdefghijklmnopqrstuvwx", 24), "two gzip members");
    sb_idx_free(idx);
    idx = NULL;
    /* Cut inside the 8-byte CRC/length trailer: all data decodes, but the
     * stream is incomplete and must be refused. */
    write_file("g.idx.gz", buf, n, 1);
    char p[256];
    path_in(p, sizeof p, "g.idx.gz");
    f = fopen(p, "rb");
    unsigned char whole[256];
    size_t wn = fread(whole, 1, sizeof whole, f);
    fclose(f);
    write_file("cut.idx.gz", whole, wn - 3, 0);
    CHECK_ERROR(read_named("cut.idx.gz", &idx), SB_ERR_FORMAT, "unexpected end of file");
    CHECK(idx == NULL, "no result for a cut trailer");
}

/* Paths that are not regular files are refused at once, never read: a FIFO
 * would block open() (no writer) or read() forever. */
static void test_not_regular(void) {
    char p[512];
    sb_idx *idx = NULL;
    path_in(p, sizeof p, "fifo");
    CHECK(mkfifo(p, 0600) == 0, "mkfifo");
    CHECK_ERROR(sb_idx_read(p, &idx), SB_ERR_IO, "is a FIFO (named pipe), not a regular file");
    CHECK_ERROR(sb_idx_read(p, &idx), SB_ERR_IO, p);
    unlink(p);
    CHECK_ERROR(sb_idx_read(dir, &idx), SB_ERR_IO, "is a directory, not a regular file");
    CHECK_ERROR(sb_idx_read("/dev/null", &idx), SB_ERR_IO, "is a character device");
    CHECK(idx == NULL, "no result for a non-regular file");
    /* The MNIST loader finds a FIFO by name and refuses it the same way. */
    char sub[256];
    path_in(sub, sizeof sub, "fifo-data");
    CHECK(mkdir(sub, 0700) == 0, "mkdir");
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte", sub);
    CHECK(mkfifo(p, 0600) == 0, "mkfifo");
    write_file("fifo-data/train-labels-idx1-ubyte", "", 0, 0);
    sb_dataset ds;
    CHECK_ERROR(sb_mnist_load(sub, true, &ds), SB_ERR_IO, "FIFO");
    unlink(p);
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte", sub);
    unlink(p);
    rmdir(sub);
}

/* sb_fopen_regular / sb_open_regular_fd: the size bound and the outputs. */
static void test_open_regular(void) {
    char p[256];
    unsigned char ten[10] = {0};
    write_file("ten.bin", ten, 10, 0);
    path_in(p, sizeof p, "ten.bin");
    FILE *f = (FILE *)1;
    uint64_t size = 99;
    CHECK_OK(sb_fopen_regular("t", p, 10, &f, &size));
    CHECK(f && size == 10 && fgetc(f) == 0, "opened at the bound, size %llu", (unsigned long long)size);
    if (f) fclose(f);
    CHECK_ERROR(sb_fopen_regular("t", p, 9, &f, &size), SB_ERR_RANGE, "is 10 bytes, more than the limit of 9 bytes");
    CHECK(f == NULL && size == 0, "outputs cleared on failure");
    int fd = 7;
    CHECK_ERROR(sb_open_regular_fd("t", dir, 0, &fd, NULL), SB_ERR_IO, "is a directory");
    CHECK(fd == -1, "fd is -1 on failure");
    CHECK_OK(sb_open_regular_fd("t", p, 0, &fd, NULL));
    CHECK(fd >= 0 && close(fd) == 0, "fd returned");
    CHECK_ERROR(sb_fopen_regular("t", NULL, 0, &f, NULL), SB_ERR_NULL, "path is NULL");
    path_in(p, sizeof p, "missing");
    CHECK_ERROR(sb_fopen_regular("t", p, 0, &f, NULL), SB_ERR_IO, "cannot open");
}

static void test_mutations(void) {
    static unsigned char good[256], buf[256];
    unsigned char px[60];
    for (int i = 0; i < 60; i++) px[i] = (unsigned char)(i * 7);
    uint32_t d3[3] = {3, 4, 5};
    size_t len = make_idx(good, 0x08, 3, d3, px, 60);
    long bad = 0, refused = 0;
    for (size_t cut = 0; cut < len; cut++) {
        sb_idx *idx = NULL;
        sb_clear_error();
        sb_status s = sb_idx_parse_buffer(good, cut, "mut", &idx);
        bad += s != SB_ERR_FORMAT || idx || !strstr(sb_last_error(), "'mut'");
    }
    CHECK(bad == 0, "%ld truncations handled uncleanly", bad);
    int rounds = sb_test_quick() ? 5000 : 50000;
    for (int r = 0; r < rounds; r++) {
        memcpy(buf, good, len);
        int flips = 1 + (int)(lcg() % 3);
        for (int k = 0; k < flips; k++) {
            size_t at = lcg() % 16; /* the header is where decisions are made */
            buf[at] = lcg() % 2 ? (unsigned char)lcg() : (unsigned char)(buf[at] ^ (1u << (lcg() % 8)));
        }
        size_t n = len - (lcg() % 4 == 0 ? lcg() % 8 : 0);
        sb_idx *idx = NULL;
        sb_clear_error();
        sb_status s = sb_idx_parse_buffer(buf, n, "mut", &idx);
        if (s == SB_OK) {
            bad += !idx || (size_t)idx->count * idx->elem_size + 4 + 4 * (size_t)idx->ndim != n;
            sb_idx_free(idx);
        } else {
            refused++;
            bad += idx != NULL || s != SB_ERR_FORMAT || !strstr(sb_last_error(), "'mut'");
        }
    }
    CHECK(bad == 0, "%ld mutants handled uncleanly", bad);
    CHECK(refused > rounds / 2, "only %ld of %d mutants refused", refused, rounds);
}

/* ---- MNIST layout ---- */

static void write_split(const char *split, int gz, uint32_t n_img, uint32_t n_lab, uint32_t h,
                        uint32_t w, const unsigned char *px, const unsigned char *labels) {
    static unsigned char buf[1 << 16];
    char name[128];
    uint32_t di[3] = {n_img, h, w}, dl[1] = {n_lab};
    size_t n = make_idx(buf, 0x08, 3, di, px, (size_t)n_img * h * w);
    snprintf(name, sizeof name, "%s-images-idx3-ubyte%s", split, gz ? ".gz" : "");
    write_file(name, buf, n, gz);
    n = make_idx(buf, 0x08, 1, dl, labels, n_lab);
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte%s", split, gz ? ".gz" : "");
    write_file(name, buf, n, gz);
}

static void remove_split(const char *split) {
    const char *kinds[4] = {"images-idx3-ubyte", "images-idx3-ubyte.gz", "labels-idx1-ubyte",
                            "labels-idx1-ubyte.gz"};
    char name[128], p[256];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "%s-%s", split, kinds[i]);
        path_in(p, sizeof p, name);
        unlink(p);
    }
}

static void test_mnist(void) {
    /* 4 images of 8x8: every byte value 0..255 appears exactly once. */
    unsigned char px[256], labels[5] = {0, 9, 3, 7, 1};
    for (int i = 0; i < 256; i++) px[i] = (unsigned char)(255 - i);
    write_split("train", 0, 4, 4, 8, 8, px, labels);
    write_split("t10k", 1, 2, 2, 16, 8, px, labels + 1);
    sb_dataset ds;
    CHECK_OK(sb_mnist_load(dir, true, &ds));
    CHECK(ds.count == 4 && ds.images && ds.images->dtype == SB_F32 && ds.images->ndim == 4 &&
              ds.images->shape[0] == 4 && ds.images->shape[1] == 1 && ds.images->shape[2] == 8 &&
              ds.images->shape[3] == 8,
          "train images shape");
    CHECK(ds.labels && ds.labels->dtype == SB_I64 && ds.labels->ndim == 1 && ds.labels->shape[0] == 4,
          "train labels shape");
    int exact = 1;
    for (int i = 0; i < 256 && ds.images; i++) {
        /* Oracle: the quotient in double, rounded once to float. A double
         * quotient of small integers rounds to float without a double-rounding
         * error (53 >= 2*24 + 2), so this equals the correctly rounded
         * binary32 quotient the contract specifies. */
        float want = (float)((double)px[i] / 255.0);
        exact &= sb_test_bits(((float *)ds.images->data)[i]) == sb_test_bits(want);
    }
    CHECK(exact, "pixel scaling is not x = byte / 255.0f");
    CHECK(ds.images && ((float *)ds.images->data)[0] == 1.0f && ((float *)ds.images->data)[255] == 0.0f,
          "pixel ends");
    CHECK(ds.labels && ((int64_t *)ds.labels->data)[1] == 9 && ((int64_t *)ds.labels->data)[3] == 7, "labels");
    sb_dataset_free(&ds);
    CHECK(ds.images == NULL && ds.count == 0, "sb_dataset_free zeroes");
    sb_dataset_free(NULL);
    CHECK_OK(sb_mnist_load(dir, false, &ds));
    CHECK(ds.count == 2 && ds.images && ds.images->shape[2] == 16 && ds.images->shape[3] == 8, "t10k (gzip) shape");
    sb_dataset_free(&ds);
    /* The ".idx3-ubyte" spelling. */
    remove_split("t10k");
    {
        static unsigned char buf[1024];
        uint32_t di[3] = {1, 2, 2}, dl[1] = {1};
        write_file("t10k-images.idx3-ubyte", buf, make_idx(buf, 0x08, 3, di, px, 4), 0);
        write_file("t10k-labels.idx1-ubyte", buf, make_idx(buf, 0x08, 1, dl, labels, 1), 0);
        CHECK_OK(sb_mnist_load(dir, false, &ds));
        CHECK(ds.count == 1, "dotted spelling");
        sb_dataset_free(&ds);
        char p[256];
        path_in(p, sizeof p, "t10k-images.idx3-ubyte"); unlink(p);
        path_in(p, sizeof p, "t10k-labels.idx1-ubyte"); unlink(p);
    }
    /* Errors. */
    write_split("train", 0, 4, 3, 8, 8, px, labels);
    CHECK_ERROR(sb_mnist_load(dir, true, &ds), SB_ERR_FORMAT, "count mismatch");
    CHECK_ERROR(sb_mnist_load(dir, true, &ds), SB_ERR_FORMAT, "has 4 images but");
    unsigned char badlab[4] = {1, 2, 10, 3};
    write_split("train", 0, 4, 4, 8, 8, px, badlab);
    CHECK_ERROR(sb_mnist_load(dir, true, &ds), SB_ERR_FORMAT, "label 2 is 10, outside 0..9");
    CHECK(ds.images == NULL && ds.labels == NULL && ds.count == 0, "out zeroed on failure");
    {
        /* Images with the wrong rank, labels with the wrong type. */
        static unsigned char buf[1024];
        uint32_t d2[2] = {4, 64}, dl[1] = {4};
        write_file("train-images-idx3-ubyte", buf, make_idx(buf, 0x08, 2, d2, px, 256), 0);
        CHECK_ERROR(sb_mnist_load(dir, true, &ds), SB_ERR_FORMAT, "images must be u8 with 3 dimensions");
        write_split("train", 0, 4, 4, 8, 8, px, labels);
        unsigned char l32[16] = {0};
        write_file("train-labels-idx1-ubyte", buf, make_idx(buf, 0x0C, 1, dl, l32, 16), 0);
        CHECK_ERROR(sb_mnist_load(dir, true, &ds), SB_ERR_FORMAT, "labels must be u8 with 1 dimension");
    }
    remove_split("train");
    CHECK_ERROR(sb_mnist_load(dir, true, &ds), SB_ERR_IO, "no train-images-idx3-ubyte or train-images-idx3-ubyte.gz in");
    write_split("train", 1, 4, 4, 8, 8, px, labels);
    remove_split("train");
    write_split("train", 1, 4, 4, 8, 8, px, labels);
    {
        char p[256];
        path_in(p, sizeof p, "train-labels-idx1-ubyte.gz");
        unlink(p);
    }
    CHECK_ERROR(sb_mnist_load(dir, true, &ds), SB_ERR_IO, "no train-labels-idx1-ubyte");
    remove_split("train");
    CHECK_ERROR(sb_mnist_load(NULL, true, &ds), SB_ERR_NULL, "dir is NULL");
    CHECK_ERROR(sb_mnist_load(dir, true, NULL), SB_ERR_NULL, "out is NULL");
}

/* The real data, when Debian's dataset-fashion-mnist is installed. */
static void test_fashion_mnist(void) {
    const char *fm = "/usr/share/datasets/fashion-mnist";
    struct stat sbuf;
    if (stat(fm, &sbuf) != 0) {
        printf("test_idx: %s not installed; skipping the real-data checks\n", fm);
        return;
    }
    static const int64_t first_train[10] = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5};
    static const int64_t first_test[10] = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
    for (int train = 1; train >= 0; train--) {
        sb_dataset ds;
        CHECK_OK(sb_mnist_load(fm, train, &ds));
        int64_t want = train ? 60000 : 10000;
        CHECK(ds.count == want, "fashion-mnist %s count %lld", train ? "train" : "t10k", (long long)ds.count);
        if (ds.count != want) { sb_dataset_free(&ds); continue; }
        CHECK(ds.images->shape[0] == want && ds.images->shape[1] == 1 && ds.images->shape[2] == 28 &&
                  ds.images->shape[3] == 28,
              "fashion-mnist image shape");
        const int64_t *y = ds.labels->data;
        const int64_t *first = train ? first_train : first_test;
        int ok = 1;
        for (int i = 0; i < 10; i++) ok &= y[i] == first[i];
        CHECK(ok, "fashion-mnist first labels");
        /* Balanced classes: 6000 / 1000 of each. */
        int64_t hist[10] = {0};
        for (int64_t i = 0; i < want; i++) hist[y[i]]++;
        for (int c = 0; c < 10; c++) CHECK(hist[c] == want / 10, "class %d has %lld", c, (long long)hist[c]);
        const float *x = ds.images->data;
        if (train) {
            /* Image 0, row 3: bytes 1 at column 12, 13 at column 15, 73 at
             * column 16 (flat indices 96, 99, 100). */
            CHECK_BITS(x[96], 1.0f / 255.0f, "train[0] pixel 96");
            CHECK_BITS(x[99], 13.0f / 255.0f, "train[0] pixel 99");
            CHECK_BITS(x[100], 0x1.252526p-2f, "train[0] pixel 100 = 73/255");
            CHECK_BITS(x[0], 0.0f, "train[0] pixel 0");
        } else {
            const float *last = x + 9999 * 784;
            CHECK_BITS(last[176], 1.0f / 255.0f, "t10k[9999] pixel 176");
        }
        float mx = 0.0f;
        for (int64_t i = 0; i < want * 784; i++) mx = x[i] > mx ? x[i] : mx;
        CHECK_BITS(mx, 1.0f, "max pixel");
        sb_dataset_free(&ds);
    }
}

static void cleanup(void) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[512];
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (unlink(p) != 0) rmdir(p);
    }
    if (d) closedir(d);
    rmdir(dir);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    strcpy(dir, "/tmp/sb_test_idx_XXXXXX");
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    test_read_types();
    test_rejections();
    test_gzip_framing();
    test_not_regular();
    test_open_regular();
    test_mutations();
    test_mnist();
    test_fashion_mnist();
    cleanup();
    return sb_test_finish();
}
