/* Checked parsing of numbers written as text: command-line option values
 * and checkpoint metadata fields.
 *
 * strtoll/strtoull alone are not enough: they skip leading spaces, accept a
 * sign (strtoull("-1") is 2^64-1), clamp on overflow and only report it in
 * errno, and stop at the first bad character. Here the whole text must be
 * decimal digits (with one leading '-' for signed values), overflow is an
 * error, and every value has an explicit range. */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h> /* isfinite */
#include <stdlib.h>
#include "io/io_internal.h"

/* Digits only, after an optional '-' when allowed; at least one digit. */
static int is_decimal(const char *t, int allow_minus) {
    if (allow_minus && *t == '-') t++;
    if (!*t) return 0;
    for (; *t; t++)
        if (*t < '0' || *t > '9') return 0;
    return 1;
}

sb_status sb_parse_i64(const char *fn, const char *what, const char *text, int64_t min,
                       int64_t max, int64_t *out) {
    if (!text) return sb_fail(SB_ERR_ARG, "%s: %s needs a value", fn, what);
    if (!is_decimal(text, 1))
        return sb_fail(SB_ERR_ARG, "%s: %s must be a decimal integer from %lld to %lld, got \"%.40s\"",
                       fn, what, (long long)min, (long long)max, text);
    errno = 0;
    long long x = strtoll(text, NULL, 10);
    if (errno == ERANGE || x < min || x > max)
        return sb_fail(SB_ERR_ARG, "%s: %s = %.40s is out of range %lld..%lld", fn, what, text,
                       (long long)min, (long long)max);
    *out = x;
    return SB_OK;
}

sb_status sb_parse_u64(const char *fn, const char *what, const char *text, uint64_t min,
                       uint64_t max, uint64_t *out) {
    if (!text) return sb_fail(SB_ERR_ARG, "%s: %s needs a value", fn, what);
    if (!is_decimal(text, 0))
        return sb_fail(SB_ERR_ARG,
                       "%s: %s must be a decimal integer from %llu to %llu, got \"%.40s\"", fn, what,
                       (unsigned long long)min, (unsigned long long)max, text);
    errno = 0;
    unsigned long long x = strtoull(text, NULL, 10);
    if (errno == ERANGE || x < min || x > max)
        return sb_fail(SB_ERR_ARG, "%s: %s = %.40s is out of range %llu..%llu", fn, what, text,
                       (unsigned long long)min, (unsigned long long)max);
    *out = x;
    return SB_OK;
}

sb_status sb_parse_real(const char *fn, const char *what, const char *text, double min, double max,
                        double *out) {
    if (!text) return sb_fail(SB_ERR_ARG, "%s: %s needs a value", fn, what);
    char *end;
    errno = 0;
    double x = *text && !isspace((unsigned char)*text) ? strtod(text, &end) : 0.0;
    if (!*text || isspace((unsigned char)*text) || *end)
        return sb_fail(SB_ERR_ARG, "%s: %s must be a number from %g to %g, got \"%.40s\"", fn, what,
                       min, max, text);
    if (!isfinite(x))
        return sb_fail(SB_ERR_ARG, "%s: %s = %.40s is not a finite number", fn, what, text);
    /* The value is used in binary32 arithmetic: one that rounds to 0, to a
     * subnormal or to infinity there would silently act as another value.
     * Checked before the range so the message says why. */
    float f = (float)x, mag = f < 0.0f ? -f : f;
    if (x != 0.0 && !(mag >= FLT_MIN && mag <= FLT_MAX))
        return sb_fail(SB_ERR_ARG,
                       "%s: %s = %.40s is %s in float32 (normal float32 magnitudes are %g..%g)", fn,
                       what, text, mag > FLT_MAX ? "infinite" : mag == 0.0f ? "rounded to 0" : "subnormal",
                       (double)FLT_MIN, (double)FLT_MAX);
    if (!(x >= min && x <= max))
        return sb_fail(SB_ERR_ARG, "%s: %s = %.40s is out of range %g..%g", fn, what, text, min, max);
    *out = x;
    return SB_OK;
}
