/* samebits/status.h - status codes and the last-error message.
 *
 * Every public function that can fail returns an sb_status. On failure it
 * also leaves a readable, specific message for the calling thread, which
 * sb_last_error() returns until the next failing call on that thread.
 */
#ifndef SAMEBITS_STATUS_H
#define SAMEBITS_STATUS_H

#include "samebits/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sb_status {
    SB_OK = 0,
    SB_ERR_NULL,        /* a required pointer argument was NULL */
    SB_ERR_ARG,         /* an argument is out of its documented range */
    SB_ERR_SHAPE,       /* tensor shapes do not fit the operation */
    SB_ERR_DTYPE,       /* a tensor has the wrong element type */
    SB_ERR_DEVICE,      /* tensors live on different or unsupported devices */
    SB_ERR_RANGE,       /* an index or label is outside its valid range */
    SB_ERR_NOMEM,       /* an allocation failed */
    SB_ERR_IO,          /* reading or writing a file failed */
    SB_ERR_FORMAT,      /* a file or buffer is malformed, truncated or corrupt */
    SB_ERR_UNSUPPORTED, /* valid request this build cannot serve */
    SB_ERR_INTERNAL     /* a bug in samebits: please report it */
} sb_status;

/* The message of the most recent failure on this thread ("" if none). */
SB_API const char *sb_last_error(void);

/* A short fixed name for a status code, e.g. "shape error". */
SB_API const char *sb_status_name(sb_status status);

/* Clear this thread's last-error message. */
SB_API void sb_clear_error(void);

#ifdef __cplusplus
}
#endif
#endif
