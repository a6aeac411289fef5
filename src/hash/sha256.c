/* SHA-256 (FIPS 180-4), written for any byte order: words are assembled from
 * bytes explicitly, never by casting the buffer. */
#include "samebits/hash.h"
#include "core/internal.h"

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void compress(uint32_t h[8], const unsigned char p[64]) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
               (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void sb_sha256_init(sb_sha256_ctx *ctx) {
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(ctx->state, iv, sizeof iv);
    ctx->bytes = 0;
    ctx->fill = 0;
}

void sb_sha256_update(sb_sha256_ctx *ctx, const void *data, size_t len) {
    const unsigned char *p = data;
    ctx->bytes += len;
    while (len > 0) {
        size_t take = 64 - ctx->fill < len ? 64 - ctx->fill : len;
        memcpy(ctx->block + ctx->fill, p, take);
        ctx->fill += take; p += take; len -= take;
        if (ctx->fill == 64) { compress(ctx->state, ctx->block); ctx->fill = 0; }
    }
}

void sb_sha256_final(sb_sha256_ctx *ctx, unsigned char digest[32]) {
    uint64_t bits = ctx->bytes * 8;
    unsigned char pad = 0x80, zero = 0, len[8];
    sb_sha256_update(ctx, &pad, 1);
    while (ctx->fill != 56) sb_sha256_update(ctx, &zero, 1);
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(bits >> (56 - 8 * i));
    sb_sha256_update(ctx, len, 8);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) digest[4 * i + j] = (unsigned char)(ctx->state[i] >> (24 - 8 * j));
}

void sb_sha256_bytes(const void *data, size_t len, unsigned char digest[32]) {
    sb_sha256_ctx ctx;
    sb_sha256_init(&ctx);
    sb_sha256_update(&ctx, data, len);
    sb_sha256_final(&ctx, digest);
}

void sb_hex_digest(const unsigned char digest[32], char hex[65]) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[64] = '\0';
}

/* Canonical bytes: logical row-major order, little-endian, NaN -> 0x7fc00000. */
sb_status sb_sha256_tensor(sb_sha256_ctx *ctx, const sb_tensor *t) {
    if (!ctx) return sb_fail(SB_ERR_NULL, "sb_sha256_tensor: ctx is NULL");
    if (!t) return sb_fail(SB_ERR_NULL, "sb_sha256_tensor: tensor is NULL");
    SB_TRY(sb_check_host_tensor("sb_sha256_tensor", "tensor", t, t->dtype, -1));
    size_t es = sb_dtype_size(t->dtype);
    int64_t n = sb_tensor_numel(t), idx[SB_MAX_DIMS] = {0};
    unsigned char buf[512];
    size_t fill = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int k = 0; k < t->ndim; k++) off += idx[k] * t->strides[k];
        uint64_t v;
        if (t->dtype == SB_F32) {
            uint32_t u = sb_f32_bits(((const float *)t->data)[off]);
            if ((u & 0x7fffffffu) > 0x7f800000u) u = 0x7fc00000u;
            v = u;
        } else if (t->dtype == SB_I32) {
            v = (uint32_t)((const int32_t *)t->data)[off];
        } else {
            v = (uint64_t)((const int64_t *)t->data)[off];
        }
        for (size_t b = 0; b < es; b++) buf[fill++] = (unsigned char)(v >> (8 * b));
        if (fill == sizeof buf) { sb_sha256_update(ctx, buf, fill); fill = 0; }
        for (int k = t->ndim - 1; k >= 0; k--) {
            if (++idx[k] < t->shape[k]) break;
            idx[k] = 0;
        }
    }
    sb_sha256_update(ctx, buf, fill);
    return SB_OK;
}

sb_status sb_hash_tensors(const sb_tensor *const *tensors, size_t count, unsigned char digest[32]) {
    if (!digest) return sb_fail(SB_ERR_NULL, "sb_hash_tensors: digest is NULL");
    if (count && !tensors) return sb_fail(SB_ERR_NULL, "sb_hash_tensors: tensors is NULL");
    sb_sha256_ctx ctx;
    sb_sha256_init(&ctx);
    for (size_t i = 0; i < count; i++) SB_TRY(sb_sha256_tensor(&ctx, tensors[i]));
    sb_sha256_final(&ctx, digest);
    return SB_OK;
}
