/* The communicator over MPI (src/dist/comm.h): built only into the
 * samebits-mpi command, so the library and `samebits` never link MPI.
 * Every collective is an integer MPI_Allreduce or MPI_Allgather, which MPI
 * may evaluate in any tree: integer max and sum give the same result in all
 * of them (contract section 17). Errors return to the caller (no MPI error
 * handler aborts behind its back); the command then ends every rank. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include "core/internal.h"
#include "mpi/comm_mpi.h"

typedef struct {
    MPI_Comm world;
    int32_t *words; /* 32-bit send buffer when partial sums fit in 32 bits */
    size_t words_cap;
    long sums;      /* sum_i64 calls, for the test hook below */
} mpi_impl;

static sb_status mpi_error(const char *fn, int code) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    return sb_fail(SB_ERR_IO, "%s: MPI failed: %.*s", fn, len, text);
}

/* MPI counts are int: large arrays go in pieces of at most 2^30 elements. */
#define PIECE ((size_t)1 << 30)

static sb_status mpi_max_u8(sb_comm *c, uint8_t *v, size_t n) {
    mpi_impl *m = c->impl;
    for (size_t off = 0; off < n; off += PIECE) {
        int cnt = (int)(n - off < PIECE ? n - off : PIECE);
        int rc = MPI_Allreduce(MPI_IN_PLACE, v + off, cnt, MPI_UINT8_T, MPI_MAX, m->world);
        if (rc != MPI_SUCCESS) return mpi_error("max of the exponent codes", rc);
    }
    return SB_OK;
}

/* Test hook: SB_TEST_MPI_KILL=RANK:N makes rank RANK kill itself with
 * SIGKILL at its N-th gradient sum, as a crashed node would vanish
 * (tests/check_mpi.sh). */
static void maybe_die(sb_comm *c, long call) {
    const char *e = getenv("SB_TEST_MPI_KILL");
    int rank;
    long at;
    if (e && sscanf(e, "%d:%ld", &rank, &at) == 2 && rank == c->rank && at == call) raise(SIGKILL);
}

static sb_status mpi_sum_i64(sb_comm *c, int64_t *v, size_t n, int bits) {
    mpi_impl *m = c->impl;
    maybe_die(c, ++m->sums);
    if (bits == 32) { /* each value fits: send 4 bytes instead of 8 */
        if (m->words_cap < n) {
            int32_t *w = realloc(m->words, n * sizeof *w);
            if (!w) return sb_fail(SB_ERR_NOMEM, "sum of the fixed-point terms: out of memory");
            m->words = w;
            m->words_cap = n;
        }
        for (size_t i = 0; i < n; i++) m->words[i] = (int32_t)v[i];
    }
    for (size_t off = 0; off < n; off += PIECE) {
        int cnt = (int)(n - off < PIECE ? n - off : PIECE);
        int rc = bits == 32 ? MPI_Allreduce(MPI_IN_PLACE, m->words + off, cnt, MPI_INT32_T, MPI_SUM, m->world)
                            : MPI_Allreduce(MPI_IN_PLACE, v + off, cnt, MPI_INT64_T, MPI_SUM, m->world);
        if (rc != MPI_SUCCESS) return mpi_error("sum of the fixed-point terms", rc);
    }
    if (bits == 32)
        for (size_t i = 0; i < n; i++) v[i] = m->words[i];
    return SB_OK;
}

static sb_status mpi_agree(sb_comm *c, const unsigned char digest[32], const char *what) {
    mpi_impl *m = c->impl;
    unsigned char *all = malloc((size_t)c->size * 32);
    if (!all) return sb_fail(SB_ERR_NOMEM, "checking the %s across ranks: out of memory", what);
    int rc = MPI_Allgather(digest, 32, MPI_UNSIGNED_CHAR, all, 32, MPI_UNSIGNED_CHAR, m->world);
    if (rc != MPI_SUCCESS) { free(all); return mpi_error(what, rc); }
    char differ[256] = "";
    int n_differ = 0;
    for (int r = 1; r < c->size; r++)
        if (memcmp(all, all + (size_t)r * 32, 32)) {
            size_t len = strlen(differ);
            if (len < sizeof differ - 16) snprintf(differ + len, sizeof differ - len, "%s%d", n_differ ? ", " : "", r);
            n_differ++;
        }
    free(all);
    if (n_differ)
        return sb_fail(SB_ERR_ARG, "the %s of rank%s %s differ%s from rank 0's: every rank must run the same "
                       "build with the same settings and data; stopping every rank", what,
                       n_differ > 1 ? "s" : "", differ, n_differ > 1 ? "" : "s");
    return SB_OK;
}

sb_status sb_comm_mpi_new(sb_comm **out) {
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    sb_comm *c = calloc(1, sizeof *c);
    mpi_impl *m = calloc(1, sizeof *m);
    if (!c || !m) { free(c); free(m); return sb_fail(SB_ERR_NOMEM, "MPI communicator: out of memory"); }
    m->world = MPI_COMM_WORLD;
    *c = (sb_comm){rank, size, mpi_max_u8, mpi_sum_i64, mpi_agree, m};
    *out = c;
    return SB_OK;
}

void sb_comm_mpi_free(sb_comm *c) {
    if (!c) return;
    mpi_impl *m = c->impl;
    if (m) free(m->words);
    free(m);
    free(c);
}
