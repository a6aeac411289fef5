/* Status names and the per-thread last-error message. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "core/internal.h"

static _Thread_local char last_error[512];

const char *sb_last_error(void) { return last_error; }

void sb_clear_error(void) { last_error[0] = '\0'; }

sb_status sb_fail(sb_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

sb_status sb_fail_as(const char *fn, sb_status status) {
    char msg[sizeof last_error];
    const char *colon = strstr(last_error, ": ");
    snprintf(msg, sizeof msg, "%s", colon ? colon + 2 : last_error);
    return sb_fail(status, "%s: %s", fn, msg);
}

const char *sb_status_name(sb_status status) {
    switch (status) {
    case SB_OK: return "ok";
    case SB_ERR_NULL: return "null argument";
    case SB_ERR_ARG: return "invalid argument";
    case SB_ERR_SHAPE: return "shape error";
    case SB_ERR_DTYPE: return "dtype error";
    case SB_ERR_DEVICE: return "device error";
    case SB_ERR_RANGE: return "out of range";
    case SB_ERR_NOMEM: return "out of memory";
    case SB_ERR_IO: return "I/O error";
    case SB_ERR_FORMAT: return "format error";
    case SB_ERR_UNSUPPORTED: return "unsupported";
    case SB_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

void *sb_malloc(const char *fn, size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) sb_fail(SB_ERR_NOMEM, "%s: cannot allocate %zu bytes", fn, bytes);
    return p;
}

void *sb_calloc(const char *fn, size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) sb_fail(SB_ERR_NOMEM, "%s: cannot allocate %zu x %zu bytes", fn, count, size);
    return p;
}
