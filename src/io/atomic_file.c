/* Atomic file replacement: write a sibling temp file, make it durable, then
 * rename it over the target. rename() within one directory is atomic on
 * POSIX file systems, so a reader sees either the old file or the complete
 * new one, never a torn write. A writer killed mid-save leaves its temp
 * file; the next save to the same path removes those of dead writers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "io/io_internal.h"

static int fault_countdown;

void sb_io_set_fault(int n) { fault_countdown = n > 0 ? n : 0; }

int sb_io_fault_hit(void) {
    if (fault_countdown <= 0) return 0;
    if (--fault_countdown > 0) return 0;
    errno = EIO;
    return 1;
}

static char *dup_str(const char *fn, const char *s) {
    size_t n = strlen(s) + 1;
    char *d = sb_malloc(fn, n);
    if (d) memcpy(d, s, n);
    return d;
}

static void clear(sb_atomic_file *af) {
    free(af->path);
    free(af->tmp_path);
    af->fp = NULL;
    af->path = af->tmp_path = NULL;
}

/* Splits path into a heap copy of its directory ("." when it has none) and
 * a pointer to its last component. */
static char *parent_dir(const char *path, const char **base) {
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    if (!slash) return dup_str("parent_dir", ".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *dir = malloc(n + 1);
    if (dir) { memcpy(dir, path, n); dir[n] = '\0'; }
    return dir;
}

/* The pid in "<base>.tmp.<pid>", or 0 when name is not such a temp file. */
static long temp_owner(const char *name, const char *base, size_t base_len) {
    if (strncmp(name, base, base_len) || strncmp(name + base_len, ".tmp.", 5)) return 0;
    const char *d = name + base_len + 5;
    long pid = 0;
    if (!*d || strlen(d) > 9) return 0;
    for (; *d; d++) {
        if (*d < '0' || *d > '9') return 0;
        pid = pid * 10 + (*d - '0');
    }
    return pid;
}

/* Removes "<path>.tmp.<pid>" files left by writers that were killed: only
 * where no process with that pid exists (kill(pid, 0) fails with ESRCH), so
 * a save in progress in another live process is never touched. Our own pid
 * is left to sb_atomic_open. Best effort: a failure here changes nothing
 * but the clean-up. Assumes the writers share this pid namespace, as on one
 * machine (a directory shared across machines needs one writer per path). */
static void remove_stale_temps(const char *path) {
    const char *base;
    char *dir = parent_dir(path, &base);
    size_t base_len = strlen(base);
    DIR *d = dir ? opendir(dir) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        long pid = temp_owner(e->d_name, base, base_len);
        if (pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        size_t cap = strlen(dir) + strlen(e->d_name) + 2;
        char *victim = malloc(cap);
        if (!victim) break;
        snprintf(victim, cap, "%s/%s", dir, e->d_name);
        unlink(victim);
        free(victim);
    }
    if (d) closedir(d);
    free(dir);
}

sb_status sb_atomic_open(sb_atomic_file *af, const char *fn, const char *path) {
    memset(af, 0, sizeof *af);
    if (!path || !*path) return sb_fail(SB_ERR_ARG, "%s: path is empty", fn);
    size_t n = strlen(path);
    if (path[n - 1] == '/') return sb_fail(SB_ERR_ARG, "%s: path '%s' names a directory", fn, path);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return sb_fail(SB_ERR_ARG, "%s: '%s' is a directory; cannot write a file there", fn, path);
    remove_stale_temps(path);
    af->path = dup_str(fn, path);
    af->tmp_path = sb_malloc(fn, n + 32);
    if (!af->path || !af->tmp_path) { clear(af); return SB_ERR_NOMEM; }
    snprintf(af->tmp_path, n + 32, "%s.tmp.%ld", path, (long)getpid());
    /* O_EXCL so we never write through a symlink or into someone else's
     * file. A leftover temp with our pid can only come from a dead process
     * that had the same pid (or a racing write to the same path in this
     * process, which is a caller error), so it is removed and retried once. */
    int fd = -1;
    for (int attempt = 0; attempt < 2 && fd < 0; attempt++) {
        if (sb_io_fault_hit()) break;
        fd = open(af->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno == EEXIST && attempt == 0 && unlink(af->tmp_path) == 0) continue;
        if (fd < 0) break;
    }
    if (fd < 0) {
        sb_status s = sb_fail(SB_ERR_IO, "%s: cannot create temporary file '%s': %s", fn,
                              af->tmp_path, strerror(errno));
        clear(af);
        return s;
    }
    af->fp = fdopen(fd, "wb");
    if (!af->fp) {
        sb_status s = sb_fail(SB_ERR_IO, "%s: fdopen '%s': %s", fn, af->tmp_path, strerror(errno));
        close(fd);
        unlink(af->tmp_path);
        clear(af);
        return s;
    }
    return SB_OK;
}

sb_status sb_atomic_write(sb_atomic_file *af, const char *fn, const void *buf, size_t n) {
    if (n == 0) return SB_OK;
    if (sb_io_fault_hit() || fwrite(buf, 1, n, af->fp) != n)
        return sb_fail(SB_ERR_IO, "%s: writing '%s' failed: %s", fn, af->tmp_path, strerror(errno));
    return SB_OK;
}

sb_status sb_atomic_rewrite(sb_atomic_file *af, const char *fn, uint64_t at, const void *buf,
                            size_t n) {
    if (at > (uint64_t)INT64_MAX || fseeko(af->fp, (off_t)at, SEEK_SET) != 0)
        return sb_fail(SB_ERR_IO, "%s: seeking in '%s' failed: %s", fn, af->tmp_path, strerror(errno));
    SB_TRY(sb_atomic_write(af, fn, buf, n));
    if (fseeko(af->fp, 0, SEEK_END) != 0)
        return sb_fail(SB_ERR_IO, "%s: seeking in '%s' failed: %s", fn, af->tmp_path, strerror(errno));
    return SB_OK;
}

void sb_atomic_abort(sb_atomic_file *af) {
    if (af->fp) fclose(af->fp);
    if (af->tmp_path) unlink(af->tmp_path);
    clear(af);
}

/* The directory entry made by rename() is durable only once the directory
 * itself is fsynced. */
static int fsync_parent_dir(const char *path) {
    const char *base;
    char *dir = parent_dir(path, &base);
    if (!dir) { errno = ENOMEM; return -1; }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0) return -1;
    int rc = sb_io_fault_hit() ? -1 : fsync(fd);
    int saved = errno;
    close(fd);
    /* Some file systems cannot fsync directories; there is nothing more
     * that could be done there, so that is not an error. */
    if (rc != 0 && (saved == EINVAL || saved == ENOTSUP)) return 0;
    errno = saved;
    return rc;
}

sb_status sb_atomic_commit(sb_atomic_file *af, const char *fn) {
    const char *step = NULL;
    if (sb_io_fault_hit() || fflush(af->fp) != 0) step = "flushing";
    else if (sb_io_fault_hit() || fsync(fileno(af->fp)) != 0) step = "fsyncing";
    if (step) {
        sb_status s = sb_fail(SB_ERR_IO, "%s: %s '%s' failed: %s", fn, step, af->tmp_path,
                              strerror(errno));
        sb_atomic_abort(af);
        return s;
    }
    FILE *fp = af->fp;
    af->fp = NULL;
    int close_failed = sb_io_fault_hit();
    if (fclose(fp) != 0) close_failed = 1;
    if (close_failed) {
        sb_status s = sb_fail(SB_ERR_IO, "%s: closing '%s' failed: %s", fn, af->tmp_path,
                              strerror(errno));
        sb_atomic_abort(af);
        return s;
    }
    if (sb_io_fault_hit() || rename(af->tmp_path, af->path) != 0) {
        sb_status s = sb_fail(SB_ERR_IO, "%s: renaming '%s' to '%s' failed: %s", fn, af->tmp_path,
                              af->path, strerror(errno));
        sb_atomic_abort(af);
        return s;
    }
    /* From here the new file is in place and complete; only its durability
     * across a power loss is unknown if the directory fsync fails. */
    sb_status s = SB_OK;
    if (fsync_parent_dir(af->path) != 0)
        s = sb_fail(SB_ERR_IO, "%s: '%s' was written but fsyncing its directory failed: %s", fn,
                    af->path, strerror(errno));
    clear(af);
    return s;
}

sb_status sb_atomic_probe(const char *fn, const char *path) {
    sb_atomic_file af;
    SB_TRY(sb_atomic_open(&af, fn, path));
    sb_atomic_abort(&af);
    return SB_OK;
}
