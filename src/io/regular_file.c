/* Opening an input file that must be a regular file.
 *
 * Every path a reader is given is untrusted. open() on a FIFO blocks until
 * a writer appears, and read() on one (or on a terminal or socket) can wait
 * forever; a directory or device is never what a file reader expects. So the
 * file is opened with O_NONBLOCK (which makes open() on a FIFO return at
 * once), fstat'ed on the descriptor (no race between the check and the
 * open), refused unless it is a regular file, and only then switched back to
 * blocking reads. A size bound, when given, is checked on the same fstat. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "io/io_internal.h"

static const char *file_kind(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

sb_status sb_open_regular_fd(const char *fn, const char *path, uint64_t max_bytes, int *fd,
                             uint64_t *size) {
    if (!fn) fn = "sb_open_regular_fd";
    if (!fd) return sb_fail(SB_ERR_NULL, "%s: fd is NULL", fn);
    *fd = -1;
    if (size) *size = 0;
    if (!path) return sb_fail(SB_ERR_NULL, "%s: path is NULL", fn);
    int d = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (d < 0) return sb_fail(SB_ERR_IO, "%s: cannot open '%s': %s", fn, path, strerror(errno));
    struct stat st;
    sb_status s = SB_OK;
    int flags;
    if (fstat(d, &st) != 0)
        s = sb_fail(SB_ERR_IO, "%s: cannot stat '%s': %s", fn, path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        s = sb_fail(SB_ERR_IO, "%s: '%s' is %s, not a regular file; refusing to read it", fn, path,
                    file_kind(st.st_mode));
    else if (max_bytes && (uint64_t)st.st_size > max_bytes)
        s = sb_fail(SB_ERR_RANGE, "%s: '%s' is %llu bytes, more than the limit of %llu bytes", fn,
                    path, (unsigned long long)st.st_size, (unsigned long long)max_bytes);
    else if ((flags = fcntl(d, F_GETFL)) < 0 || fcntl(d, F_SETFL, flags & ~O_NONBLOCK) != 0)
        s = sb_fail(SB_ERR_IO, "%s: cannot set '%s' to blocking reads: %s", fn, path, strerror(errno));
    if (s != SB_OK) {
        close(d);
        return s;
    }
    *fd = d;
    if (size) *size = (uint64_t)st.st_size;
    return SB_OK;
}

sb_status sb_fopen_regular(const char *fn, const char *path, uint64_t max_bytes, FILE **out,
                           uint64_t *size) {
    if (!fn) fn = "sb_fopen_regular";
    if (!out) return sb_fail(SB_ERR_NULL, "%s: out is NULL", fn);
    *out = NULL;
    int d;
    SB_TRY(sb_open_regular_fd(fn, path, max_bytes, &d, size));
    FILE *fp = fdopen(d, "rb");
    if (!fp) {
        sb_status s = sb_fail(SB_ERR_IO, "%s: fdopen '%s': %s", fn, path, strerror(errno));
        close(d);
        return s;
    }
    *out = fp;
    return SB_OK;
}
