/* samebits/hash.h - SHA-256 of bytes, tensors and parameter lists.
 *
 * Hashes identify results across machines, so they are defined over a
 * canonical byte form (contract section "Hashes"): every element in
 * row-major logical order, little-endian, whatever the host's byte order or
 * the tensor's strides; every float NaN is hashed as 0x7fc00000 because NaN
 * payloads are not portable between processors.
 */
#ifndef SAMEBITS_HASH_H
#define SAMEBITS_HASH_H

#include <stddef.h>
#include <stdint.h>
#include "samebits/export.h"
#include "samebits/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sb_sha256 {
    uint32_t state[8];
    uint64_t bytes;
    unsigned char block[64];
    size_t fill;
} sb_sha256_ctx;

SB_API void sb_sha256_init(sb_sha256_ctx *ctx);
SB_API void sb_sha256_update(sb_sha256_ctx *ctx, const void *data, size_t len);
SB_API void sb_sha256_final(sb_sha256_ctx *ctx, unsigned char digest[32]);
SB_API void sb_sha256_bytes(const void *data, size_t len, unsigned char digest[32]);

/* Feed a tensor's canonical bytes into ctx. */
SB_API sb_status sb_sha256_tensor(sb_sha256_ctx *ctx, const sb_tensor *t);
/* SHA-256 of the concatenated canonical bytes of tensors[0..count-1]. */
SB_API sb_status sb_hash_tensors(const sb_tensor *const *tensors, size_t count, unsigned char digest[32]);
/* 64 lowercase hex characters and a NUL. */
SB_API void sb_hex_digest(const unsigned char digest[32], char hex[65]);

#ifdef __cplusplus
}
#endif
#endif
