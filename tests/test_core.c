/* Core: tensors, views, arenas, the canonical sum, SHA-256 and hashing. */
#include <math.h>
#include "harness.h"
#include "support/fastpath.h"
#include "core/checked.h"
#include "core/canonical_sum.h"

/* ---- an independent statement of the canonical sum: recursive, array-based ---- */
static float ref_block(const float *x, int64_t n) {
    float lane[32];
    for (int j = 0; j < 32; j++) lane[j] = -0.0f;
    for (int64_t i = 0; i < n; i++) lane[i % 32] += x[i];
    for (int s = 16; s >= 1; s >>= 1)
        for (int j = 0; j < s; j++) lane[j] += lane[j + s];
    return lane[0];
}

static float ref_canonical(const float *x, int64_t n) {
    if (n == 0) return 0.0f;
    if (n <= 8192) return ref_block(x, n);
    int64_t nb = (n + 8191) / 8192;
    float *partial = malloc((size_t)nb * sizeof *partial);
    for (int64_t b = 0; b < nb; b++) {
        int64_t len = n - b * 8192 < 8192 ? n - b * 8192 : 8192;
        partial[b] = ref_block(x + b * 8192, len);
    }
    float r = ref_canonical(partial, nb);
    free(partial);
    return r;
}

static uint32_t lcg_state = 12345;
static float lcg_float(void) { /* wide dynamic range, both signs */
    lcg_state = lcg_state * 1664525u + 1013904223u;
    float mant = (float)(lcg_state >> 8) * 0x1p-24f;
    lcg_state = lcg_state * 1664525u + 1013904223u;
    int e = (int)(lcg_state >> 27) - 16;
    return ((lcg_state >> 5) & 1 ? -1.0f : 1.0f) * ldexpf(mant, e);
}

static void test_canonical_sum(void) {
    static const int64_t sizes[] = {0, 1, 2, 31, 32, 33, 64, 100, 8191, 8192, 8193,
                                    16384, 16385, 20000, 8192 * 8192 + 5};
    int64_t max_n = sb_test_quick() ? 300000 : 8192 * 8192 + 5;
    float *x = malloc((size_t)max_n * sizeof *x);
    for (int64_t i = 0; i < max_n; i++) x[i] = lcg_float();
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int64_t n = sizes[s];
        if (n > max_n) continue;
        CHECK_BITS(sb_sum_canonical(x, n, 1), ref_canonical(x, n), "n = %lld", (long long)n);
        CHECK_BITS(sb_test_ssum(n, x, 1), ref_canonical(x, n), "sb_ssum n = %lld", (long long)n);
    }
    /* fewer terms than lanes: the lanes past n keep their -0 (the fold skips
     * them); signed zeros, infinities, NaN, subnormals and cancellation must
     * still come out as the literal rule's */
    {
        const float special[10] = {0.0f, -0.0f, 1.0f, -1.0f, sb_test_from_bits(0x7f800000),
                                   sb_test_from_bits(0xff800000), sb_test_from_bits(0x7fc00000),
                                   1e30f, -1e30f, 0x1p-149f};
        float z[40];
        for (int trial = 0; trial < 400; trial++) {
            int64_t n = 1 + trial % 40;
            for (int64_t i = 0; i < n; i++) {
                lcg_state = lcg_state * 1664525u + 1013904223u;
                /* trials 0-79: all -0, then all +0; later ones mixed */
                z[i] = trial < 40 ? -0.0f : trial < 80 ? 0.0f : special[(lcg_state >> 16) % 10];
            }
            CHECK_BITS(sb_sum_canonical(z, n, 1), ref_canonical(z, n), "special n = %lld", (long long)n);
            CHECK_BITS(sb_test_ssum(n, z, 1), ref_canonical(z, n), "sb_ssum special n = %lld",
                       (long long)n);
        }
    }
    /* strided: every third element */
    float *y = malloc(20000 * sizeof *y);
    for (int i = 0; i < 20000; i++) y[i] = x[3 * i];
    CHECK_BITS(sb_test_ssum(20000, x, 3), ref_canonical(y, 20000), "stride 3");
    free(y);

    /* The order is observable: left-to-right gives 0 here, the canonical
     * rule gives 2 (lane 0 holds 1e8 + -1e8, lanes 1 and 3 hold the ones). */
    float z[4] = {1e8f, 1.0f, -1e8f, 1.0f};
    float naive = ((z[0] + z[1]) + z[2]) + z[3];
    CHECK_BITS(naive, 1.0f, "naive order reference");
    float lanes_ab[33] = {0};
    lanes_ab[0] = 1e8f; lanes_ab[32] = -1e8f; lanes_ab[1] = 1.0f;
    CHECK_BITS(sb_test_ssum(33, lanes_ab, 1), 1.0f, "lane 0 cancels exactly before the tree");
    CHECK_BITS(sb_test_ssum(4, z, 1), ref_block(z, 4), "4 elements");
    CHECK_BITS(sb_test_ssum(4, z, 1), 2.0f, "tree order: (1e8 + -1e8) + (1 + 1)");

    /* zero signs: the empty sum is +0, a sum of -0s is -0, -0 + +0 = +0 */
    float mz[40];
    for (int i = 0; i < 40; i++) mz[i] = -0.0f;
    CHECK_BITS(sb_test_ssum(0, mz, 1), 0.0f, "empty sum");
    CHECK_BITS(sb_test_ssum(40, mz, 1), -0.0f, "sum of -0");
    mz[7] = 0.0f;
    CHECK_BITS(sb_test_ssum(40, mz, 1), 0.0f, "-0s and one +0");
    /* special values */
    float sp[3] = {INFINITY, 1.0f, -INFINITY};
    CHECK(isnan(sb_test_ssum(3, sp, 1)), "inf + -inf is NaN");
    float sub[64];
    for (int i = 0; i < 64; i++) sub[i] = 0x1p-149f;
    CHECK_BITS(sb_test_ssum(64, sub, 1), 0x1p-143f, "subnormals are not flushed");

    /* streaming in pieces equals one pass; reading the result twice is harmless */
    sb_sum_acc acc;
    sb_sum_init(&acc);
    for (int i = 0; i < 20000; i++) sb_sum_add(&acc, x[i]);
    float first = sb_sum_result(&acc);
    CHECK_BITS(sb_sum_result(&acc), first, "result does not disturb the state");
    CHECK_BITS(first, ref_canonical(x, 20000), "streaming");

    /* bad input */
    sb_clear_error();
    float out = 42.0f;
    CHECK_ERROR(sb_ssum(-1, x, 1, &out), SB_ERR_ARG, "negative");
    CHECK_ERROR(sb_ssum(5, NULL, 1, &out), SB_ERR_NULL, "x is NULL");
    CHECK_ERROR(sb_ssum(5, x, 0, &out), SB_ERR_ARG, "incx");
    CHECK_ERROR(sb_ssum(5, x, 1, NULL), SB_ERR_NULL, "out is NULL");
    /* (n-1)*incx past INT64_MAX: refused before any address is formed */
    CHECK_ERROR(sb_ssum(INT64_C(4611686018427387904), x, 4, &out), SB_ERR_ARG, "addressable");
    CHECK_ERROR(sb_ssum(INT64_MAX, x, INT64_MAX, &out), SB_ERR_ARG, "addressable");
    CHECK_BITS(out, 42.0f, "nothing written on error");
    /* a NaN sum is a result, with SB_OK */
    float nanx[3] = {1.0f, INFINITY, -INFINITY};
    CHECK_OK(sb_ssum(3, nanx, 1, &out));
    CHECK(isnan(out), "NaN sum returned with SB_OK");
    free(x);
}

static void test_tensors(void) {
    sb_tensor *t = NULL, *v = NULL, *w = NULL;
    int64_t shape[3] = {2, 3, 4};
    CHECK_OK(sb_tensor_new(&t, SB_F32, 3, shape));
    CHECK(sb_tensor_numel(t) == 24 && sb_tensor_is_contiguous(t), "new tensor");
    CHECK(t->strides[0] == 12 && t->strides[1] == 4 && t->strides[2] == 1, "row-major strides");
    float *p = sb_tensor_f32(t);
    for (int i = 0; i < 24; i++) CHECK_BITS(p[i], 0.0f, "zero-filled");
    for (int i = 0; i < 24; i++) p[i] = (float)i;

    int64_t flat[2] = {-1, 4};
    CHECK_OK(sb_tensor_reshape(&v, t, 2, flat));
    CHECK(v && v->shape[0] == 6 && v->shape[1] == 4 && v->data == t->data, "reshape view");
    sb_tensor_free(v);
    CHECK_OK(sb_tensor_flatten(&v, t, 1, -1));
    CHECK(v && v->ndim == 2 && v->shape[1] == 12, "flatten");
    sb_tensor_free(v);

    CHECK_OK(sb_tensor_transpose(&v, t, 0, 2));
    CHECK(v && v->shape[0] == 4 && v->shape[2] == 2 && !sb_tensor_is_contiguous(v), "transpose view");
    int64_t tshape[3] = {4, 3, 2};
    CHECK_OK(sb_tensor_new(&w, SB_F32, 3, tshape));
    CHECK_OK(sb_tensor_copy(w, v));
    CHECK_BITS(sb_tensor_f32(w)[1], 12.0f, "copy of a transposed view");
    /* hashing is defined over logical order, so a view and its copy agree */
    unsigned char d1[32], d2[32];
    const sb_tensor *one[1] = {v}, *two[1] = {w};
    CHECK_OK(sb_hash_tensors(one, 1, d1));
    CHECK_OK(sb_hash_tensors(two, 1, d2));
    CHECK(memcmp(d1, d2, 32) == 0, "hash of strided view equals hash of its contiguous copy");
    sb_tensor *refused = NULL;
    CHECK_ERROR(sb_tensor_reshape(&refused, v, 1, flat + 1), SB_ERR_ARG, "contiguous");
    CHECK(refused == NULL, "a refused reshape leaves NULL");
    sb_tensor_free(v);
    sb_tensor_free(w);

    /* scalars and empty tensors */
    CHECK_OK(sb_tensor_new(&w, SB_I64, 0, NULL));
    CHECK(sb_tensor_numel(w) == 1, "0-d tensor has one element");
    sb_tensor_free(w);
    int64_t empty[2] = {0, 5};
    CHECK_OK(sb_tensor_new(&w, SB_F32, 2, empty));
    CHECK(sb_tensor_numel(w) == 0, "empty tensor");
    sb_tensor_free(w);

    /* wrap: zero-copy */
    float buf[6] = {1, 2, 3, 4, 5, 6};
    int64_t s2[2] = {2, 3};
    CHECK_OK(sb_tensor_wrap(&w, buf, SB_F32, 2, s2, NULL));
    CHECK_OK(sb_tensor_fill(w, 7.0f));
    CHECK_BITS(buf[5], 7.0f, "wrap is zero-copy");
    sb_tensor_free(w);

    /* bad input */
    int64_t neg[1] = {-2};
    CHECK_ERROR(sb_tensor_new(&w, SB_F32, 1, neg), SB_ERR_SHAPE, "negative");
    CHECK(w == NULL, "failed creation leaves NULL");
    CHECK_ERROR(sb_tensor_new(&w, SB_F32, 9, shape), SB_ERR_SHAPE, "ndim 9");
    CHECK_ERROR(sb_tensor_new(&w, (sb_dtype)7, 1, shape), SB_ERR_DTYPE, "invalid dtype");
    CHECK_ERROR(sb_tensor_new(NULL, SB_F32, 1, shape), SB_ERR_NULL, "out is NULL");
    CHECK_ERROR(sb_tensor_new(&w, SB_F32, 2, NULL), SB_ERR_NULL, "shape is NULL");
    int64_t huge[3] = {INT64_MAX / 2, 4, 4};
    CHECK_ERROR(sb_tensor_new(&w, SB_F32, 3, huge), SB_ERR_SHAPE, "too large");
    CHECK_ERROR(sb_tensor_wrap(&w, NULL, SB_F32, 2, s2, NULL), SB_ERR_NULL, "data is NULL");
    int64_t bad[2] = {5, 5};
    CHECK_ERROR(sb_tensor_reshape(&v, t, 2, bad), SB_ERR_SHAPE, "cannot view 24");
    int64_t two_infer[2] = {-1, -1};
    CHECK_ERROR(sb_tensor_reshape(&v, t, 2, two_infer), SB_ERR_SHAPE, "more than one -1");
    CHECK_ERROR(sb_tensor_flatten(&v, t, 2, 1), SB_ERR_ARG, "invalid");
    CHECK_ERROR(sb_tensor_transpose(&v, t, 0, 3), SB_ERR_ARG, "out of range");
    sb_tensor *i32 = NULL;
    CHECK_OK(sb_tensor_new(&i32, SB_I32, 3, shape));
    CHECK_ERROR(sb_tensor_copy(i32, t), SB_ERR_DTYPE, "dtype");
    CHECK_ERROR(sb_tensor_fill(i32, 1.0f), SB_ERR_DTYPE, "expected float32");
    CHECK_ERROR(sb_tensor_copy(NULL, t), SB_ERR_NULL, "dst is NULL");
    sb_tensor_free(i32);
    sb_tensor_free(t);
    sb_tensor_free(NULL);
}

static void test_arena(void) {
    sb_arena *a = NULL;
    CHECK_OK(sb_arena_new(&a, 1024));
    sb_tensor *t[10];
    int64_t shape[2] = {16, 16};
    for (int i = 0; i < 10; i++) CHECK_OK(sb_tensor_new_in(&t[i], a, SB_F32, 2, shape));
    CHECK(((uintptr_t)t[3]->data & 63) == 0, "64-byte aligned");
    for (int i = 0; i < 10; i++) sb_tensor_fill(t[i], (float)i);
    CHECK_BITS(sb_tensor_f32(t[4])[255], 4.0f, "arena tensors do not overlap");
    CHECK_BITS(sb_tensor_f32(t[5])[0], 5.0f, "arena tensors do not overlap");
    size_t used = sb_arena_used(a);
    CHECK(used >= 10 * 1024, "used %zu", used);
    sb_arena_reset(a);
    CHECK(sb_arena_used(a) == 0, "reset");
    for (int i = 0; i < 10; i++) CHECK_OK(sb_tensor_new_in(&t[i], a, SB_F32, 2, shape));
    CHECK_BITS(sb_tensor_f32(t[9])[3], 0.0f, "arena tensors are zeroed");
    sb_tensor_free(t[0]); /* a no-op for arena tensors */
    CHECK_ERROR(sb_tensor_new_in(&t[0], NULL, SB_F32, 2, shape), SB_ERR_NULL, "arena is NULL");
    CHECK_ERROR(sb_arena_new(NULL, 0), SB_ERR_NULL, "out is NULL");
    sb_arena_free(a);
}

static void test_sha256(void) {
    /* FIPS 180-4 example vectors */
    struct { const char *msg; const char *hex; } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        unsigned char d[32];
        char hex[65];
        sb_sha256_bytes(v[i].msg, strlen(v[i].msg), d);
        sb_hex_digest(d, hex);
        CHECK(strcmp(hex, v[i].hex) == 0, "sha256(\"%s\") = %s", v[i].msg, hex);
    }
    /* one million 'a', fed in uneven pieces */
    sb_sha256_ctx ctx;
    sb_sha256_init(&ctx);
    char chunk[997];
    memset(chunk, 'a', sizeof chunk);
    size_t left = 1000000;
    while (left) {
        size_t n = left < sizeof chunk ? left : sizeof chunk;
        sb_sha256_update(&ctx, chunk, n);
        left -= n;
    }
    unsigned char d[32];
    char hex[65];
    sb_sha256_final(&ctx, d);
    sb_hex_digest(d, hex);
    CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0,
          "million a: %s", hex);

    /* tensor hashing: little-endian canonical bytes, NaN canonicalised */
    float vals[2] = {1.0f, 0};
    uint32_t odd_nan = 0xffc12345u;
    memcpy(&vals[1], &odd_nan, 4);
    sb_tensor *t = NULL;
    int64_t shape[1] = {2};
    CHECK_OK(sb_tensor_wrap(&t, vals, SB_F32, 1, shape, NULL));
    unsigned char want_bytes[8] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0xc0, 0x7f}, want[32], got[32];
    sb_sha256_bytes(want_bytes, 8, want);
    const sb_tensor *list[1] = {t};
    CHECK_OK(sb_hash_tensors(list, 1, got));
    CHECK(memcmp(want, got, 32) == 0, "canonical tensor bytes");
    CHECK_ERROR(sb_hash_tensors(NULL, 1, got), SB_ERR_NULL, "tensors is NULL");
    const sb_tensor *nul[1] = {NULL};
    CHECK_ERROR(sb_hash_tensors(nul, 1, got), SB_ERR_NULL, "tensor is NULL");
    sb_tensor_free(t);
}

/* Sizes computed from caller values never wrap (src/core/checked.h). */
static void test_size_arithmetic(void) {
    sb_tensor *t = NULL;
    /* No element, but the contiguous strides would be 2^124. */
    int64_t wide[3] = {0, (int64_t)1 << 62, (int64_t)1 << 62};
    CHECK_ERROR(sb_tensor_new(&t, SB_F32, 3, wide), SB_ERR_SHAPE, "too large");
    CHECK(t == NULL, "refused new leaves NULL");
    sb_arena *a = NULL;
    CHECK_OK(sb_arena_new(&a, 0));
    CHECK_ERROR(sb_tensor_new_in(&t, a, SB_F32, 3, wide), SB_ERR_SHAPE, "too large");
    CHECK_ERROR(sb_tensor_wrap(&t, NULL, SB_F32, 3, wide, NULL), SB_ERR_SHAPE, "too large");
    int64_t just_over[2] = {SB_NUMEL_MAX / 2 + 1, 2};
    CHECK_ERROR(sb_tensor_new(&t, SB_I64, 2, just_over), SB_ERR_SHAPE, "too large");
    CHECK(sb_arena_alloc(a, SIZE_MAX - 8) == NULL && strstr(sb_last_error(), "too large"),
          "arena refuses a size that wraps: %s", sb_last_error());
    sb_arena_free(a);

    /* Views: a reshape of an empty tensor to the same wide shape, a product
     * that overflows, and caller strides whose offsets overflow. */
    int64_t empty[1] = {0};
    CHECK_OK(sb_tensor_new(&t, SB_F32, 1, empty));
    sb_tensor *v = NULL;
    CHECK_ERROR(sb_tensor_reshape(&v, t, 3, wide), SB_ERR_SHAPE, "too large");
    CHECK(v == NULL, "refused reshape leaves NULL");
    sb_tensor_free(t);
    int64_t four[1] = {4};
    CHECK_OK(sb_tensor_new(&t, SB_F32, 1, four));
    int64_t wraps[3] = {(int64_t)1 << 62, 4, 4}; /* product 2^66 wraps to 0 in int64 */
    CHECK_ERROR(sb_tensor_reshape(&v, t, 3, wraps), SB_ERR_SHAPE, "overflow");
    sb_tensor_free(t);
    float buf[4] = {0};
    int64_t s2[2] = {2, 2}, far[2] = {INT64_MAX, 1};
    CHECK_ERROR(sb_tensor_wrap(&t, buf, SB_F32, 2, s2, far), SB_ERR_SHAPE, "strides");

    /* A hand-built header whose size overflows: numel says -1, not a wrapped count. */
    sb_tensor h = {.dtype = SB_F32, .ndim = 2, .shape = {(int64_t)1 << 40, (int64_t)1 << 40}, .data = buf};
    CHECK(sb_tensor_numel(&h) == -1, "numel of an overflowing header: %lld", (long long)sb_tensor_numel(&h));
    h.ndim = 100;
    CHECK(sb_tensor_numel(&h) == -1 && !sb_tensor_is_contiguous(&h), "numel of ndim 100");

    /* Geometry helpers. */
    int64_t oh = -7, ow = -7;
    sb_conv2d_params cp = SB_CONV2D_PARAMS_DEFAULT;
    cp.pad_h = cp.pad_w = 1;
    CHECK_ERROR(sb_conv2d_output_size(INT64_MAX, 8, 3, 3, &cp, &oh, &ow), SB_ERR_ARG, "overflows");
    CHECK(oh == -7 && ow == -7, "outputs untouched");
    CHECK_ERROR(sb_conv2d_output_size(8, INT64_MAX - 1, 3, 3, &cp, &oh, &ow), SB_ERR_ARG, "width");
    sb_pool2d_params pp = {.kernel_h = 2, .kernel_w = 2, .pad_h = 1, .pad_w = 1};
    CHECK_ERROR(sb_pool2d_output_size(INT64_MAX, 8, &pp, &oh, &ow), SB_ERR_ARG, "overflows");
    pp = (sb_pool2d_params){.kernel_h = 1, .kernel_w = 1, .stride_h = 1000, .stride_w = 1, .ceil_mode = true};
    CHECK_ERROR(sb_pool2d_output_size(INT64_MAX, 8, &pp, &oh, &ow), SB_ERR_ARG, "ceil_mode");
    CHECK(oh == -7 && ow == -7, "outputs untouched");
    pp.ceil_mode = false; /* the largest input that fits is still answered exactly */
    CHECK_OK(sb_pool2d_output_size(INT64_MAX, 8, &pp, &oh, &ow));
    CHECK(oh == (INT64_MAX - 1) / 1000 + 1 && ow == 8, "pool size %lld x %lld", (long long)oh, (long long)ow);

    /* Raw-buffer kernels: the last offset must be addressable. */
    float x[4] = {1, 2, 3, 4}, c[4];
    float sum = -1.0f;
    CHECK_ERROR(sb_ssum((int64_t)1 << 62, x, 4, &sum), SB_ERR_ARG, "incx");
    CHECK(sum == -1.0f, "refused ssum left its out alone");
    CHECK_ERROR((sb_status)sb_sgemm('N', 'N', (int64_t)1 << 40, 1, 1, x, (int64_t)1 << 40, x, 1, c, 1),
                SB_ERR_ARG, "too large");

    /* sb_sum must not read dims past what it can use. */
    sb_tensor *m = NULL, *out = NULL;
    int64_t ms[2] = {2, 3};
    CHECK_OK(sb_tensor_new(&m, SB_F32, 2, ms));
    CHECK_OK(sb_tensor_new(&out, SB_F32, 0, NULL));
    int dims[2] = {0, 1};
    CHECK_ERROR(sb_sum(m, dims, 1 << 30, false, out), SB_ERR_ARG, "ndims");
    sb_tensor_free(m);
    sb_tensor_free(out);
}

/* A hand-built header is validated before any shape entry is read, and the
 * message never prints memory past ndim. */
static void test_hand_built_headers(void) {
    float buf[8] = {0}, ybuf[8];
    int64_t s1[1] = {8};
    sb_tensor *y = NULL;
    CHECK_OK(sb_tensor_wrap(&y, ybuf, SB_F32, 1, s1, NULL));
    for (int i = 0; i < 8; i++) ybuf[i] = 42.0f;
    struct { sb_tensor h; sb_status want; const char *needle; } cases[] = {
        {{.dtype = SB_F32, .ndim = 100, .data = buf}, SB_ERR_SHAPE, "ndim 100 is outside 0..8"},
        {{.dtype = SB_F32, .ndim = -3, .data = buf}, SB_ERR_SHAPE, "ndim -3 is outside"},
        {{.dtype = SB_F32, .ndim = 1, .shape = {-8}, .strides = {1}, .data = buf}, SB_ERR_SHAPE, "shape[0] = -8"},
        {{.dtype = (sb_dtype)9, .ndim = 1, .shape = {8}, .strides = {1}, .data = buf}, SB_ERR_DTYPE, "dtype 9"},
        {{.dtype = SB_F32, .device = (sb_device)5, .ndim = 1, .shape = {8}, .strides = {1}, .data = buf},
         SB_ERR_DEVICE, "device 5"},
        {{.dtype = SB_F32, .ndim = 2, .shape = {(int64_t)1 << 40, (int64_t)1 << 40}, .data = buf},
         SB_ERR_SHAPE, "exceeds"},
        {{.dtype = SB_F32, .ndim = 2, .shape = {4, 2}, .strides = {INT64_MAX, 1}, .data = buf},
         SB_ERR_SHAPE, "strides"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const sb_tensor *h = &cases[i].h;
        CHECK_ERROR(sb_relu_forward(h, y), cases[i].want, cases[i].needle);
        CHECK(strstr(sb_last_error(), "sb_relu_forward: x is not a valid tensor"), "case %zu: %s", i,
              sb_last_error());
        CHECK_ERROR(sb_sum(h, NULL, 0, false, y), cases[i].want, cases[i].needle);
        sb_tensor *v = NULL;
        CHECK_ERROR(sb_tensor_reshape(&v, h, 1, s1), cases[i].want, cases[i].needle);
        CHECK_ERROR(sb_tensor_flatten(&v, h, 0, -1), cases[i].want, cases[i].needle);
        CHECK_ERROR(sb_tensor_transpose(&v, h, 0, 0), cases[i].want, cases[i].needle);
        CHECK_ERROR(sb_tensor_copy(y, h), cases[i].want, cases[i].needle);
        CHECK(v == NULL, "case %zu: no view", i);
    }
    for (int i = 0; i < 8; i++) CHECK_BITS(ybuf[i], 42.0f, "y untouched");
    sb_tensor_free(y);
}

int main(int argc, char **argv) {
    (void)argc;
    SB_TEST_MAIN_NAME(argv[0]);
    test_canonical_sum();
    test_tensors();
    test_arena();
    test_sha256();
    test_size_arithmetic();
    test_hand_built_headers();
    CHECK(strcmp(sb_status_name(SB_ERR_SHAPE), "shape error") == 0, "status names");
    return sb_test_finish();
}
