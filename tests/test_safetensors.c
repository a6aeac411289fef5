/* safetensors reader/writer: round trips (bitwise), a golden file, every
 * rejection the reader promises, atomic replacement under injected faults,
 * and deterministic mutation of valid files (truncations, byte flips). */
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "samebits/io.h"
#include "io/io_internal.h"

static char dir[64];

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) { *len = 0; return NULL; }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}

static void spit(const char *path, const void *buf, size_t len) {
    FILE *f = fopen(path, "wb");
    fwrite(buf, 1, len, f);
    fclose(f);
}

static int count_tmp_files(void) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) n++;
    closedir(d);
    return n;
}

static void path_in(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", dir, name); }

static uint64_t lcg_state = 0x853c49e6748fea9bULL;
static uint32_t lcg(void) {
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(lcg_state >> 33);
}

/* ---- round trips ---- */

static sb_tensor *make(sb_dtype dt, int ndim, const int64_t *shape) {
    sb_tensor *t = NULL;
    CHECK_OK(sb_tensor_new(&t, dt, ndim, shape));
    unsigned char *p = t->data;
    size_t bytes = (size_t)sb_tensor_numel(t) * sb_dtype_size(dt);
    for (size_t i = 0; i < bytes; i++) p[i] = (unsigned char)lcg();
    return t;
}

static int same_tensor(const sb_tensor *a, const sb_tensor *b) {
    if (!a || !b || a->dtype != b->dtype || a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return !memcmp(a->data, b->data, (size_t)sb_tensor_numel(a) * sb_dtype_size(a->dtype));
}

static void test_round_trip(void) {
    char path[128];
    path_in(path, sizeof path, "rt.safetensors");
    int64_t s_empty[1] = {0}, s_odd[3] = {3, 0, 2}, s_one[1] = {1}, s_57[2] = {5, 7},
            s_8d[8] = {2, 3, 1, 2, 1, 1, 2, 3}, s_big[1] = {40000};
    sb_tensor *t[9];
    t[0] = make(SB_F32, 0, NULL);
    t[1] = make(SB_F32, 1, s_empty);
    t[2] = make(SB_I32, 3, s_odd);
    t[3] = make(SB_I64, 1, s_one);
    t[4] = make(SB_F32, 2, s_57);
    t[5] = make(SB_I32, 8, s_8d);
    t[6] = make(SB_I64, 2, s_57);
    t[7] = make(SB_F32, 1, s_big); /* 160 KB: several 64 KiB write chunks */
    /* Adversarial F32 bit patterns survive untouched (no NaN canonicalising). */
    uint32_t special[7] = {0x7fc00001u, 0xffbfffffu, 0x80000000u, 0x00000001u, 0x7f800000u, 0xff800000u, 0x807fffffu};
    memcpy(t[4]->data, special, sizeof special);
    int64_t *i64 = t[6]->data;
    i64[0] = INT64_MIN;
    i64[1] = INT64_MAX;
    i64[2] = -1;
    /* A transposed view: written in row-major logical order. */
    CHECK_OK(sb_tensor_transpose(&t[8], t[4], 0, 1));
    sb_named_tensor nt[9] = {{"scalar", t[0]}, {"empty", t[1]}, {"odd.zero", t[2]}, {"one", t[3]},
                             {"w", t[4]}, {"eight/dims", t[5]}, {"i64", t[6]}, {"big", t[7]},
                             {"w.T \"quoted\" \xc3\xa9\t\\", t[8]}};
    sb_kv meta[4] = {{"epoch", "3"}, {"rng", "0123456789abcdef"}, {"unicode \xe2\x9c\x93", "line\nbreak \x01 \"q\" \\"},
                     {"", ""}};
    CHECK_OK(sb_safetensors_write(path, nt, 9, meta, 4));
    CHECK(count_tmp_files() == 0, "temp file left behind");
    sb_safetensors *st = NULL;
    CHECK_OK(sb_safetensors_read(path, &st));
    CHECK(sb_safetensors_count(st) == 9, "count %zu", sb_safetensors_count(st));
    for (size_t i = 0; i < 9 && st; i++) {
        const char *name = NULL;
        const sb_tensor *got = NULL, *byname = NULL;
        CHECK_OK(sb_safetensors_at(st, i, &name, &got));
        CHECK(name && !strcmp(name, nt[i].name), "order: entry %zu is '%s'", i, name ? name : "(null)");
        CHECK_OK(sb_safetensors_get(st, nt[i].name, &byname));
        CHECK(byname == got, "get and at disagree for %zu", i);
        if (i == 8) {
            /* Compare with an explicit transpose of t[4]. */
            const float *w = t[4]->data, *g = got->data;
            int ok = got->ndim == 2 && got->shape[0] == 7 && got->shape[1] == 5;
            for (int r = 0; ok && r < 7; r++)
                for (int c = 0; c < 5; c++)
                    ok &= sb_test_bits(g[r * 5 + c]) == sb_test_bits(w[c * 7 + r]);
            CHECK(ok, "transposed tensor not written in logical row-major order");
        } else {
            CHECK(same_tensor(got, t[i]), "tensor %zu ('%s') differs after round trip", i, nt[i].name);
        }
        /* (sb_tensor_is_contiguous is not meaningful for zero-size shapes.) */
        CHECK(got && (sb_tensor_numel(got) == 0 || sb_tensor_is_contiguous(got)),
              "read tensor %zu not contiguous", i);
    }
    const sb_tensor *w = NULL;
    CHECK_OK(sb_safetensors_get(st, "w", &w));
    CHECK(w && ((uint32_t *)w->data)[0] == 0x7fc00001u, "NaN payload changed");
    CHECK(sb_safetensors_meta_count(st) == 5, "meta count %zu", sb_safetensors_meta_count(st));
    for (int i = 0; i < 4; i++) {
        const char *v = NULL;
        CHECK_OK(sb_safetensors_get_meta(st, meta[i].key, &v));
        CHECK(v && !strcmp(v, meta[i].value), "meta '%s' = '%s'", meta[i].key, v ? v : "(null)");
    }
    const char *hash = NULL;
    CHECK_OK(sb_safetensors_get_meta(st, SB_SAFETENSORS_SHA256_KEY, &hash));
    CHECK(hash && strlen(hash) == 64, "checksum missing");
    const char *k = NULL, *v = NULL;
    CHECK_OK(sb_safetensors_meta_at(st, 0, &k, &v));
    CHECK(k && !strcmp(k, "epoch") && !strcmp(v, "3"), "metadata order");
    /* Accessor errors. */
    const sb_tensor *none = NULL;
    CHECK_ERROR(sb_safetensors_get(st, "nope", &none), SB_ERR_ARG, "no tensor named \"nope\"");
    CHECK_ERROR(sb_safetensors_get(st, NULL, &none), SB_ERR_NULL, "name is NULL");
    CHECK_ERROR(sb_safetensors_get(NULL, "w", &none), SB_ERR_NULL, "st is NULL");
    CHECK_ERROR(sb_safetensors_get(st, "w", NULL), SB_ERR_NULL, "out is NULL");
    CHECK_ERROR(sb_safetensors_at(st, 9, NULL, NULL), SB_ERR_RANGE, "index 9");
    CHECK_ERROR(sb_safetensors_get_meta(st, "missing", &v), SB_ERR_ARG, "no metadata key");
    CHECK_ERROR(sb_safetensors_meta_at(st, 99, &k, &v), SB_ERR_RANGE, "index 99");
    CHECK(sb_safetensors_count(NULL) == 0 && sb_safetensors_meta_count(NULL) == 0, "NULL counts");
    sb_safetensors_free(st);
    sb_safetensors_free(NULL);

    /* An empty file (no tensors, no user metadata) round-trips too. */
    CHECK_OK(sb_safetensors_write(path, NULL, 0, NULL, 0));
    st = NULL;
    CHECK_OK(sb_safetensors_read(path, &st));
    CHECK(sb_safetensors_count(st) == 0 && sb_safetensors_meta_count(st) == 1, "empty file");
    sb_safetensors_free(st);
    for (int i = 0; i < 9; i++) sb_tensor_free(t[i]);
}

/* ---- golden bytes ---- */

static const char golden_header[] =
    "{\"__metadata__\":{\"k\":\"v\\\"x\",\"samebits.sha256\":"
    "\"29bad5168688fd3a2488920393662e0a13f63a829e20c1b7e3e5bf224f24012b\"},"
    "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
    "\"n\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[8,16]}}    ";

static void test_golden(void) {
    char path[128];
    path_in(path, sizeof path, "golden.safetensors");
    float wv[2] = {1.0f, -2.0f};
    int64_t nv = 5, s2[1] = {2};
    sb_tensor *w = NULL, *n = NULL;
    CHECK_OK(sb_tensor_wrap(&w, wv, SB_F32, 1, s2, NULL));
    CHECK_OK(sb_tensor_wrap(&n, &nv, SB_I64, 0, NULL, NULL));
    sb_named_tensor nt[2] = {{"w", w}, {"n", n}};
    sb_kv meta[1] = {{"k", "v\"x"}};
    CHECK_OK(sb_safetensors_write(path, nt, 2, meta, 1));
    /* Hand-assembled: header length 224 = 0xE0 (220 bytes of JSON plus 4
     * spaces of padding), the JSON, then 1.0f, -2.0f and int64 5, all LE. */
    unsigned char want[8 + 224 + 16] = {0xE0, 0, 0, 0, 0, 0, 0, 0};
    CHECK(sizeof golden_header - 1 == 224, "golden header is %zu bytes", sizeof golden_header - 1);
    memcpy(want + 8, golden_header, 224);
    static const unsigned char data[16] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0,
                                           0x05, 0, 0, 0, 0, 0, 0, 0};
    memcpy(want + 232, data, 16);
    size_t len;
    unsigned char *got = slurp(path, &len);
    CHECK(got && len == sizeof want, "golden file is %zu bytes, want %zu", len, sizeof want);
    if (got && len == sizeof want) {
        size_t i = 0;
        while (i < len && got[i] == want[i]) i++;
        CHECK(i == len, "golden file differs at byte %zu: got 0x%02x want 0x%02x", i, got[i], want[i]);
    }
    free(got);
    sb_tensor_free(w);
    sb_tensor_free(n);
}

/* ---- hand-written files: what other writers may produce ---- */

/* Builds "<len><header><data>" in memory; returns its length. */
static size_t build(unsigned char *out, const char *header, const void *data, size_t dlen) {
    size_t h = strlen(header);
    for (int b = 0; b < 8; b++) out[b] = (unsigned char)((uint64_t)h >> (8 * b));
    memcpy(out + 8, header, h);
    if (dlen) memcpy(out + 8 + h, data, dlen);
    return 8 + h + dlen;
}

static sb_status parse(const char *header, const void *data, size_t dlen) {
    static unsigned char buf[1 << 16];
    size_t n = build(buf, header, data, dlen);
    sb_safetensors *st = NULL;
    sb_status s = sb_safetensors_parse_buffer(buf, n, "mem.st", &st);
    if (s == SB_OK) CHECK(st != NULL, "OK but no result");
    else CHECK(st == NULL, "failure but a result");
    sb_safetensors_free(st);
    return s;
}

static void test_foreign(void) {
    /* Offsets out of header order, whitespace, escapes, no metadata. */
    const char *hdr = " {\n \"b\" : {\"shape\": [1], \"data_offsets\": [0, 4], \"dtype\": \"I32\"},\r\n"
                      "\t\"a\\u00e9\\ud83d\\ude00\\/\": {\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]} } ";
    unsigned char data[12] = {1, 0, 0, 0, 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40};
    unsigned char buf[512];
    size_t n = build(buf, hdr, data, 12);
    sb_safetensors *st = NULL;
    CHECK_OK(sb_safetensors_parse_buffer(buf, n, "foreign", &st));
    const sb_tensor *a = NULL, *b = NULL;
    CHECK_OK(sb_safetensors_get(st, "a\xc3\xa9\xf0\x9f\x98\x80/", &a));
    CHECK_OK(sb_safetensors_get(st, "b", &b));
    CHECK(b && ((int32_t *)b->data)[0] == 1, "b");
    CHECK(a && ((float *)a->data)[0] == 1.0f && ((float *)a->data)[1] == 2.0f, "a");
    const char *first = NULL;
    CHECK_OK(sb_safetensors_at(st, 0, &first, NULL));
    CHECK(first && !strcmp(first, "b"), "header order kept");
    sb_safetensors_free(st);
    /* Zero-size tensors may share an offset with the next tensor. */
    CHECK_OK(parse("{\"z\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[0,0]},"
                   "\"z2\":{\"dtype\":\"I64\",\"shape\":[2,0],\"data_offsets\":[0,0]},"
                   "\"x\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[0,4]}}", data, 4));
    CHECK_OK(parse("{}", NULL, 0));
    /* Three-byte escapes and upper-case hex digits decode to UTF-8. */
    const char *esc = "{\"\\u20AC\\u00E9\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[0,4]}}";
    n = build(buf, esc, data, 4);
    st = NULL;
    CHECK_OK(sb_safetensors_parse_buffer(buf, n, "esc", &st));
    CHECK_OK(sb_safetensors_get(st, "\xe2\x82\xac\xc3\xa9", &a));
    sb_safetensors_free(st);
    CHECK_OK(parse("{\"__metadata__\":{}}", NULL, 0));
}

static void test_rejections(void) {
    unsigned char d[64] = {0};
    const char *F = "SB_ERR_FORMAT";
    (void)F;
#define REJ(hdr, dlen, needle) CHECK_ERROR(parse(hdr, d, dlen), SB_ERR_FORMAT, needle)
    REJ("{\"a\":", 0, "invalid JSON header");
    REJ("[]", 0, "expected '{'");
    REJ("{\"a\":{\"dtype\":\"Q8\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "unknown dtype");
    CHECK_ERROR(parse("{\"a\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,2]}}", d, 2), SB_ERR_UNSUPPORTED, "dtype F16");
    REJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "shape needs 8 bytes");
    REJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, "outside the 4-byte data buffer");
    REJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "overlap");
    REJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "hole in the data buffer");
    REJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "duplicated tensor name \"a\"");
    REJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 6, "2 trailing bytes after the last tensor");
    REJ("{}", 3, "3 trailing bytes");
    REJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4, "begin > end");
    REJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, "only integers");
    REJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[1e2],\"data_offsets\":[0,4]}}", 4, "only integers");
    REJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "negative");
    REJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}", 4, "leading zeros");
    REJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,4]}}", 4, "integer too large");
    REJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4611686018427387904,0],\"data_offsets\":[0,0]}}", 0,
        "absurdly large");
    REJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "more than 8 entries");
    REJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8, "more than 2 entries");
    REJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, "must have 2 entries");
    REJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "lacks \"data_offsets\"");
    REJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", 4, "unknown key \"x\"");
    REJ("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "duplicated key");
    REJ("{\"a\":{}}", 0, "empty entry");
    REJ("{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "empty tensor name");
    REJ("{\"__metadata__\":{},\"__metadata__\":{}}", 0, "duplicated __metadata__");
    REJ("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, "duplicated metadata key \"k\"");
    REJ("{\"__metadata__\":{\"k\":1}}", 0, "must be a string");
    REJ("{\"__metadata__\":{\"k\":{\"deeper\":\"x\"}}}", 0, "must be a string");
    REJ("{\"__metadata__\":{\"k\":\"a\x01\"}}", 0, "control character");
    REJ("{\"__metadata__\":{\"k\":\"\\x\"}}", 0, "invalid escape");
    REJ("{\"__metadata__\":{\"k\":\"\\u12\"}}", 0, "invalid escape");
    REJ("{\"__metadata__\":{\"k\":\"\\ud800\"}}", 0, "unpaired UTF-16 surrogate");
    REJ("{\"__metadata__\":{\"k\":\"\\udc00\\ud800\"}}", 0, "unpaired UTF-16 surrogate");
    REJ("{\"__metadata__\":{\"k\":\"\\u0000\"}}", 0, "\\u0000");
    REJ("{\"__metadata__\":{\"k\":\"\xc0\x80\"}}", 0, "invalid UTF-8");
    REJ("{\"__metadata__\":{\"k\":\"\xed\xa0\x80\"}}", 0, "invalid UTF-8");
    REJ("{\"__metadata__\":{\"k\":\"abc}}", 0, "unterminated string");
    REJ("{\"__metadata__\":{\"k\":\"v\"}} x", 0, "unexpected bytes after the header object");
    REJ("{\"__metadata__\":{\"samebits.sha256\":\"abc\"}}", 0, "not 64 lowercase hex");
    REJ("{\"__metadata__\":{\"samebits.sha256\":"
        "\"0000000000000000000000000000000000000000000000000000000000000000\"}}", 0, "checksum mismatch");
    REJ("{\"a\":true}", 0, "expected '{'");
    REJ("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},}", 4, "invalid JSON header");
    /* Deep nesting is refused at the first level the grammar does not allow,
     * without recursion. */
    static char deep[40100];
    strcpy(deep, "{\"a\":{\"dtype\":\"F32\",\"shape\":");
    size_t at = strlen(deep);
    for (int i = 0; i < 20000; i++) deep[at++] = '[';
    for (int i = 0; i < 20000; i++) deep[at++] = ']';
    strcpy(deep + at, ",\"data_offsets\":[0,4]}}");
    REJ(deep, 4, "expected a non-negative integer");
#undef REJ
    /* Length prefix problems. */
    unsigned char buf[64] = {0};
    sb_safetensors *st = NULL;
    CHECK_ERROR(sb_safetensors_parse_buffer(buf, 7, "short", &st), SB_ERR_FORMAT, "shorter than the 8-byte header length");
    buf[0] = 100;
    CHECK_ERROR(sb_safetensors_parse_buffer(buf, 20, "len", &st), SB_ERR_FORMAT, "header length 100 exceeds the file size");
    uint64_t huge = 100000001u;
    for (int b = 0; b < 8; b++) buf[b] = (unsigned char)(huge >> (8 * b));
    CHECK_ERROR(sb_safetensors_parse_buffer(buf, 20, "len", &st), SB_ERR_FORMAT, "exceeds the 100000000-byte limit");
    memset(buf, 0xff, 8);
    CHECK_ERROR(sb_safetensors_parse_buffer(buf, 20, "len", &st), SB_ERR_FORMAT, "exceeds the 100000000-byte limit");
    memset(buf, 0, 8);
    CHECK_ERROR(sb_safetensors_parse_buffer(buf, 20, "len", &st), SB_ERR_FORMAT, "too short for a JSON object");
    CHECK_ERROR(sb_safetensors_parse_buffer(NULL, 20, "x", &st), SB_ERR_NULL, "buf is NULL");
    CHECK_ERROR(sb_safetensors_parse_buffer(buf, 20, "x", NULL), SB_ERR_NULL, "out is NULL");
    CHECK(st == NULL, "st set on failure");
}

/* ---- files: corruption, truncation, bad paths ---- */

static void write_small(const char *path, float base) {
    float a[6];
    int64_t b[3] = {7, -8, 9}, sa[2] = {2, 3}, sb3[1] = {3};
    for (int i = 0; i < 6; i++) a[i] = base + (float)i;
    sb_tensor *ta = NULL, *tb = NULL;
    CHECK_OK(sb_tensor_wrap(&ta, a, SB_F32, 2, sa, NULL));
    CHECK_OK(sb_tensor_wrap(&tb, b, SB_I64, 1, sb3, NULL));
    sb_named_tensor nt[2] = {{"a", ta}, {"b", tb}};
    sb_kv meta[2] = {{"step", "12"}, {"rng", "state"}};
    CHECK_OK(sb_safetensors_write(path, nt, 2, meta, 2));
    sb_tensor_free(ta);
    sb_tensor_free(tb);
}

static void test_files(void) {
    char path[128], other[160];
    path_in(path, sizeof path, "small.safetensors");
    write_small(path, 1.0f);
    size_t len;
    unsigned char *good = slurp(path, &len);
    sb_safetensors *st = NULL;
    /* Corrupt one data byte: only the checksum can notice. */
    good[len - 1] ^= 1;
    spit(path, good, len);
    CHECK_ERROR(sb_safetensors_read(path, &st), SB_ERR_FORMAT, "checksum mismatch");
    CHECK_ERROR(sb_safetensors_read(path, &st), SB_ERR_FORMAT, "small.safetensors");
    good[len - 1] ^= 1;
    /* Truncated file. */
    spit(path, good, len - 5);
    CHECK_ERROR(sb_safetensors_read(path, &st), SB_ERR_FORMAT, "outside the");
    spit(path, good, 4);
    CHECK_ERROR(sb_safetensors_read(path, &st), SB_ERR_FORMAT, "shorter than the 8-byte header length");
    /* Appended bytes. */
    unsigned char *longer = malloc(len + 3);
    memcpy(longer, good, len);
    memset(longer + len, 0, 3);
    spit(path, longer, len + 3);
    CHECK_ERROR(sb_safetensors_read(path, &st), SB_ERR_FORMAT, "3 trailing bytes");
    free(longer);
    CHECK(st == NULL, "st set on failure");
    spit(path, good, len);
    CHECK_OK(sb_safetensors_read(path, &st));
    sb_safetensors_free(st);
    st = NULL;
    path_in(other, sizeof other, "does-not-exist");
    CHECK_ERROR(sb_safetensors_read(other, &st), SB_ERR_IO, "cannot open");
    CHECK_ERROR(sb_safetensors_read(dir, &st), SB_ERR_IO, "not a regular file");
    CHECK_ERROR(sb_safetensors_read(NULL, &st), SB_ERR_NULL, "path is NULL");
    CHECK_ERROR(sb_safetensors_read(path, NULL), SB_ERR_NULL, "out is NULL");
    free(good);
}

/* ---- the mutation sweep: every truncation and LCG byte flips ---- */

static void test_mutations(void) {
    char path[128];
    path_in(path, sizeof path, "mut.safetensors");
    write_small(path, 0.5f);
    size_t len;
    unsigned char *good = slurp(path, &len);
    unsigned char *buf = malloc(len);
    long failures = 0, bad = 0;
    for (size_t cut = 0; cut < len; cut++) {
        sb_safetensors *st = NULL;
        sb_clear_error();
        sb_status s = sb_safetensors_parse_buffer(good, cut, "mut", &st);
        failures += s != SB_OK;
        bad += s == SB_OK || st || !strstr(sb_last_error(), "'mut'");
    }
    CHECK(failures == (long)len && bad == 0, "truncations: %ld of %zu refused, %ld unclean", failures, len, bad);
    int rounds = sb_test_quick() ? 3000 : 20000, refused = 0;
    bad = 0;
    for (int r = 0; r < rounds; r++) {
        memcpy(buf, good, len);
        int flips = 1 + (int)(lcg() % 4);
        for (int f = 0; f < flips; f++) {
            size_t at = lcg() % len;
            /* Aim most flips at the header, where the parser lives. */
            if (lcg() % 4 && len > 240) at = lcg() % 240;
            buf[at] = lcg() % 3 ? (unsigned char)lcg() : (unsigned char)(buf[at] ^ (1u << (lcg() % 8)));
        }
        sb_safetensors *st = NULL;
        sb_clear_error();
        sb_status s = sb_safetensors_parse_buffer(buf, len, "mut", &st);
        if (s == SB_OK) {
            /* Accepted mutants must be self-consistent. */
            for (size_t i = 0; i < sb_safetensors_count(st); i++) {
                const sb_tensor *t = NULL;
                const char *name = NULL;
                sb_safetensors_at(st, i, &name, &t);
                bad += !t || !name;
            }
            sb_safetensors_free(st);
        } else {
            refused++;
            bad += st != NULL || !strstr(sb_last_error(), "'mut'") ||
                   (s != SB_ERR_FORMAT && s != SB_ERR_UNSUPPORTED);
        }
    }
    CHECK(bad == 0, "%ld mutants handled uncleanly", bad);
    CHECK(refused > rounds / 2, "only %d of %d mutants refused", refused, rounds);
    free(buf);
    free(good);
}

/* ---- atomicity ---- */

static void test_atomic(void) {
    char path[128], stale[192];
    path_in(path, sizeof path, "ckpt.safetensors");
    write_small(path, 1.0f);
    size_t old_len, new_len;
    unsigned char *old = slurp(path, &old_len);
    /* Reference bytes of the replacement, written elsewhere. */
    char ref[128];
    path_in(ref, sizeof ref, "ref.safetensors");
    write_small(ref, 100.0f);
    unsigned char *fresh = slurp(ref, &new_len);
    int k, failed_steps = 0;
    for (k = 1; k < 100; k++) {
        sb_io_set_fault(k);
        float a[6] = {100, 101, 102, 103, 104, 105};
        int64_t b[3] = {7, -8, 9}, sa[2] = {2, 3}, s3[1] = {3};
        sb_tensor *ta = NULL, *tb = NULL;
        sb_tensor_wrap(&ta, a, SB_F32, 2, sa, NULL);
        sb_tensor_wrap(&tb, b, SB_I64, 1, s3, NULL);
        sb_named_tensor nt[2] = {{"a", ta}, {"b", tb}};
        sb_kv meta[2] = {{"step", "12"}, {"rng", "state"}};
        sb_clear_error();
        sb_status s = sb_safetensors_write(path, nt, 2, meta, 2);
        sb_io_set_fault(0);
        sb_tensor_free(ta);
        sb_tensor_free(tb);
        size_t len;
        unsigned char *now = slurp(path, &len);
        CHECK(count_tmp_files() == 0, "fault at step %d left a temp file", k);
        if (s == SB_OK) {
            CHECK(len == new_len && !memcmp(now, fresh, len), "success but wrong bytes");
            free(now);
            break;
        }
        failed_steps++;
        CHECK(s == SB_ERR_IO && strstr(sb_last_error(), "ckpt.safetensors"), "fault %d: %s", k, sb_last_error());
        int is_old = len == old_len && !memcmp(now, old, len);
        int is_new = len == new_len && !memcmp(now, fresh, len);
        /* Only a failed directory fsync (after the rename) may leave the
         * new, complete file; anything earlier leaves the old one. */
        if (strstr(sb_last_error(), "fsyncing its directory")) CHECK(is_new, "dir fsync fault: file not new");
        else CHECK(is_old, "fault at step %d (%s) changed the previous file", k, sb_last_error());
        free(now);
        if (is_new) spit(path, old, old_len);
    }
    /* open, prefix, header, 2 tensors, checksum rewrite, flush, fsync,
     * close, rename, dir fsync = 11 steps. */
    CHECK(failed_steps >= 10, "only %d fault points exercised", failed_steps);

    /* The temp file cannot be created: no such directory. */
    char nodir[160];
    path_in(nodir, sizeof nodir, "missing/ckpt.safetensors");
    sb_named_tensor none[1];
    CHECK_ERROR(sb_safetensors_write(nodir, none, 0, NULL, 0), SB_ERR_IO, "cannot create temporary file");
    /* The target is a directory: refused before anything is created. */
    char target[160];
    path_in(target, sizeof target, "adir");
    mkdir(target, 0755);
    CHECK_ERROR(sb_safetensors_write(target, none, 0, NULL, 0), SB_ERR_ARG, "is a directory");
    struct stat sbuf;
    CHECK(stat(target, &sbuf) == 0 && S_ISDIR(sbuf.st_mode), "directory target clobbered");
    CHECK(count_tmp_files() == 0, "temp left after rename failure");
    rmdir(target);
    /* A read-only directory (meaningless as root, who may write anyway). */
    if (geteuid() != 0) {
        char ro[160], ro_file[200];
        path_in(ro, sizeof ro, "ro");
        mkdir(ro, 0755);
        snprintf(ro_file, sizeof ro_file, "%s/x.safetensors", ro);
        write_small(ro_file, 1.0f);
        size_t l1, l2;
        unsigned char *before = slurp(ro_file, &l1);
        chmod(ro, 0555);
        CHECK_ERROR(sb_safetensors_write(ro_file, none, 0, NULL, 0), SB_ERR_IO, "cannot create temporary file");
        chmod(ro, 0755);
        unsigned char *after = slurp(ro_file, &l2);
        CHECK(l1 == l2 && !memcmp(before, after, l1), "read-only dir: previous file changed");
        free(before);
        free(after);
        unlink(ro_file);
        rmdir(ro);
    }
    /* A live writer's partial temp file (here: our parent's pid, a live
     * process): reads of path ignore it, and later writes neither read nor
     * remove it. */
    snprintf(stale, sizeof stale, "%s.tmp.%ld", path, (long)getppid());
    spit(stale, fresh, new_len / 2);
    sb_safetensors *st = NULL;
    CHECK_OK(sb_safetensors_read(path, &st));
    const sb_tensor *a = NULL;
    CHECK_OK(sb_safetensors_get(st, "a", &a));
    CHECK(a && ((float *)a->data)[0] == 100.0f, "read the committed contents");
    sb_safetensors_free(st);
    write_small(path, 2.0f);
    struct stat s2;
    CHECK(stat(stale, &s2) == 0 && (size_t)s2.st_size == new_len / 2, "foreign temp file touched");
    unlink(stale);
    /* A writer killed mid-save (a pid with no process: a child that has
     * exited and been reaped) left its temp file: the next write to the
     * same path removes it; temp files of other paths and names that are
     * not "<path>.tmp.<digits>" stay. */
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, NULL, 0);
    char other[300], odd[300];
    snprintf(stale, sizeof stale, "%s.tmp.%ld", path, (long)dead);
    snprintf(other, sizeof other, "%s.other.tmp.%ld", path, (long)dead);
    snprintf(odd, sizeof odd, "%s.tmp.%ldx", path, (long)dead);
    spit(stale, fresh, new_len / 2);
    spit(other, "o", 1);
    spit(odd, "x", 1);
    write_small(path, 2.5f);
    CHECK(access(stale, F_OK) != 0, "dead writer's temp file not removed");
    CHECK(access(other, F_OK) == 0 && access(odd, F_OK) == 0, "unrelated temp-like files removed");
    unlink(other);
    unlink(odd);
    /* A stale temp with our own pid (a dead process that had it) is replaced. */
    snprintf(stale, sizeof stale, "%s.tmp.%ld", path, (long)getpid());
    spit(stale, "junk", 4);
    write_small(path, 3.0f);
    CHECK(count_tmp_files() == 0, "own-pid stale temp left");
    st = NULL;
    CHECK_OK(sb_safetensors_read(path, &st));
    CHECK_OK(sb_safetensors_get(st, "a", &a));
    CHECK(a && ((float *)a->data)[0] == 3.0f, "write over stale temp");
    sb_safetensors_free(st);
    /* A relative path (the directory to fsync is "."). */
    char cwd[512];
    if (getcwd(cwd, sizeof cwd) && chdir(dir) == 0) {
        write_small("relative.safetensors", 4.0f);
        st = NULL;
        CHECK_OK(sb_safetensors_read("relative.safetensors", &st));
        sb_safetensors_free(st);
        unlink("relative.safetensors");
        CHECK(chdir(cwd) == 0, "chdir back");
    }
    free(old);
    free(fresh);
    unlink(ref);
}

/* ---- writer argument validation: nothing is created on failure ---- */

static void test_write_args(void) {
    char path[128];
    path_in(path, sizeof path, "args.safetensors");
    float v[2] = {1, 2};
    int64_t s2[1] = {2};
    sb_tensor *t = NULL;
    CHECK_OK(sb_tensor_wrap(&t, v, SB_F32, 1, s2, NULL));
    sb_named_tensor ok1[1] = {{"x", t}};
    sb_named_tensor dup[2] = {{"x", t}, {"x", t}};
    sb_named_tensor nul_name[1] = {{NULL, t}};
    sb_named_tensor empty[1] = {{"", t}};
    sb_named_tensor reserved[1] = {{"__metadata__", t}};
    sb_named_tensor badutf[1] = {{"\xff", t}};
    sb_named_tensor nul_t[1] = {{"x", NULL}};
    sb_kv dupk[2] = {{"k", "1"}, {"k", "2"}}, res[1] = {{SB_SAFETENSORS_SHA256_KEY, "x"}},
          nulv[1] = {{"k", NULL}}, badv[1] = {{"k", "\xc3"}};
    CHECK_ERROR(sb_safetensors_write(NULL, ok1, 1, NULL, 0), SB_ERR_NULL, "path is NULL");
    CHECK_ERROR(sb_safetensors_write(path, NULL, 1, NULL, 0), SB_ERR_NULL, "tensors is NULL");
    CHECK_ERROR(sb_safetensors_write(path, ok1, 1, NULL, 2), SB_ERR_NULL, "metadata is NULL");
    CHECK_ERROR(sb_safetensors_write(path, dup, 2, NULL, 0), SB_ERR_ARG, "duplicated tensor name \"x\"");
    CHECK_ERROR(sb_safetensors_write(path, nul_name, 1, NULL, 0), SB_ERR_NULL, "tensors[0].name is NULL");
    CHECK_ERROR(sb_safetensors_write(path, empty, 1, NULL, 0), SB_ERR_ARG, "is empty, reserved or not UTF-8");
    CHECK_ERROR(sb_safetensors_write(path, reserved, 1, NULL, 0), SB_ERR_ARG, "reserved");
    CHECK_ERROR(sb_safetensors_write(path, badutf, 1, NULL, 0), SB_ERR_ARG, "not UTF-8");
    CHECK_ERROR(sb_safetensors_write(path, nul_t, 1, NULL, 0), SB_ERR_NULL, "tensor \"x\" is NULL");
    CHECK_ERROR(sb_safetensors_write(path, ok1, 1, dupk, 2), SB_ERR_ARG, "duplicated metadata key \"k\"");
    CHECK_ERROR(sb_safetensors_write(path, ok1, 1, res, 1), SB_ERR_ARG, "is reserved");
    CHECK_ERROR(sb_safetensors_write(path, ok1, 1, nulv, 1), SB_ERR_NULL, "NULL key or value");
    CHECK_ERROR(sb_safetensors_write(path, ok1, 1, badv, 1), SB_ERR_ARG, "not valid UTF-8");
    t->device = SB_DEVICE_CUDA;
    CHECK_ERROR(sb_safetensors_write(path, ok1, 1, NULL, 0), SB_ERR_DEVICE, "not on the CPU");
    t->device = SB_DEVICE_CPU;
    t->dtype = (sb_dtype)7;
    CHECK_ERROR(sb_safetensors_write(path, ok1, 1, NULL, 0), SB_ERR_DTYPE, "invalid dtype");
    t->dtype = SB_F32;
    t->data = NULL;
    CHECK_ERROR(sb_safetensors_write(path, ok1, 1, NULL, 0), SB_ERR_NULL, "has no data");
    CHECK_ERROR(sb_safetensors_write("", ok1, 0, NULL, 0), SB_ERR_ARG, "path is empty");
    CHECK(access(path, F_OK) != 0, "a file was created by a failed validation");
    CHECK(count_tmp_files() == 0, "temp file after validation errors");
    sb_tensor_free(t);
}

static void cleanup(void) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[512];
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d) closedir(d);
    rmdir(dir);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    strcpy(dir, "/tmp/sb_test_safetensors_XXXXXX");
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    test_round_trip();
    test_golden();
    test_foreign();
    test_rejections();
    test_files();
    test_mutations();
    test_atomic();
    test_write_args();
    cleanup();
    return sb_test_finish();
}
