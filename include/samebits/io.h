/* samebits/io.h - file formats: IDX datasets (MNIST, Fashion-MNIST) and
 * safetensors checkpoints.
 *
 * Every reader treats its input as untrusted: sizes are validated before
 * anything is allocated, every byte is bounds-checked, and a malformed file
 * fails with SB_ERR_FORMAT and a message naming the path and the problem.
 * Multi-byte values are decoded by shifts from their on-disk byte order, so
 * results do not depend on the host's byte order (docs/FORMATS.md).
 */
#ifndef SAMEBITS_IO_H
#define SAMEBITS_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "samebits/export.h"
#include "samebits/status.h"
#include "samebits/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- IDX ---------------------------------------------------------------
 * Magic: two zero bytes, a type byte, the number of dimensions; then one
 * big-endian u32 per dimension; then the elements, big-endian, row-major.
 * Plain and gzip-compressed files are read transparently. */

#define SB_IDX_MAX_DIMS 4
/* Larger element counts are refused before any allocation. */
#define SB_IDX_MAX_ELEMENTS ((int64_t)1 << 31)

typedef enum sb_idx_type {
    SB_IDX_U8 = 0x08,
    SB_IDX_I8 = 0x09,
    SB_IDX_I16 = 0x0B,
    SB_IDX_I32 = 0x0C,
    SB_IDX_F32 = 0x0D,
    SB_IDX_F64 = 0x0E
} sb_idx_type;

typedef struct sb_idx {
    sb_idx_type type;
    int ndim;                        /* 1..SB_IDX_MAX_DIMS */
    int64_t dims[SB_IDX_MAX_DIMS];   /* each > 0 */
    int64_t count;                   /* product of dims */
    size_t elem_size;                /* bytes per element: 1, 2, 4 or 8 */
    void *data;                      /* count elements in HOST byte order */
} sb_idx;

/* Reads an IDX file (plain or gzip). On failure *out is NULL. */
SB_API sb_status sb_idx_read(const char *path, sb_idx **out);
SB_API void sb_idx_free(sb_idx *idx); /* NULL is ignored */

/* ---- MNIST-style datasets ----------------------------------------------
 * images: F32 (N, 1, H, W), pixel x = (float)byte / 255.0f (one IEEE
 * binary32 division, round to nearest even: docs/CONTRACT.md).
 * labels: I64 (N), each in 0..9. */
typedef struct sb_dataset {
    sb_tensor *images;
    sb_tensor *labels;
    int64_t count;
} sb_dataset;

/* Loads the train (60000 in MNIST) or test (t10k, 10000) split from dir,
 * which holds {train,t10k}-{images-idx3,labels-idx1}-ubyte, optionally with
 * ".gz" (as Debian's dataset-fashion-mnist installs them under
 * /usr/share/datasets/fashion-mnist) or spelled "-images.idx3-ubyte".
 * On failure *out is zeroed. */
SB_API sb_status sb_mnist_load(const char *dir, bool train, sb_dataset *out);
SB_API void sb_dataset_free(sb_dataset *ds); /* frees both tensors, zeroes *ds */

/* ---- safetensors -------------------------------------------------------
 * u64 little-endian header length N, N bytes of JSON header, then the data
 * buffer. Supported dtypes: F32, I32, I64 (little-endian in the file). */

/* Header lengths beyond this are refused (as in the reference format). */
#define SB_SAFETENSORS_MAX_HEADER 100000000u
/* Metadata key under which the writer stores the SHA-256 (64 lowercase hex
 * digits) of the whole data buffer; the reader verifies it when present. */
#define SB_SAFETENSORS_SHA256_KEY "samebits.sha256"

typedef struct sb_named_tensor {
    const char *name;          /* non-empty UTF-8, unique, not "__metadata__" */
    const sb_tensor *tensor;   /* CPU, any strides; written row-major */
} sb_named_tensor;

typedef struct sb_kv {
    const char *key;           /* UTF-8, unique, not SB_SAFETENSORS_SHA256_KEY */
    const char *value;         /* UTF-8 */
} sb_kv;

typedef struct sb_safetensors sb_safetensors;

/* Writes tensors (in the given order) and metadata atomically: the bytes go
 * to "<path>.tmp.<pid>" in the same directory, which is flushed, fsynced and
 * renamed over path, then the directory is fsynced. On failure the temp
 * file is removed and a previous file at path is left as it was. */
SB_API sb_status sb_safetensors_write(const char *path, const sb_named_tensor *tensors, size_t count,
                               const sb_kv *metadata, size_t n_meta);

/* Reads and validates a whole file. On failure *out is NULL. */
SB_API sb_status sb_safetensors_read(const char *path, sb_safetensors **out);
SB_API void sb_safetensors_free(sb_safetensors *st); /* NULL is ignored */

/* Tensors are owned by st (contiguous, CPU) and live until it is freed. */
SB_API sb_status sb_safetensors_get(const sb_safetensors *st, const char *name, const sb_tensor **out);
/* Enumeration in header order (the writer's order). */
SB_API size_t sb_safetensors_count(const sb_safetensors *st);
SB_API sb_status sb_safetensors_at(const sb_safetensors *st, size_t i, const char **name,
                            const sb_tensor **tensor);

/* Metadata strings are owned by st. The sha256 entry is listed too. */
SB_API sb_status sb_safetensors_get_meta(const sb_safetensors *st, const char *key, const char **value);
SB_API size_t sb_safetensors_meta_count(const sb_safetensors *st);
SB_API sb_status sb_safetensors_meta_at(const sb_safetensors *st, size_t i, const char **key,
                                 const char **value);

#ifdef __cplusplus
}
#endif
#endif
