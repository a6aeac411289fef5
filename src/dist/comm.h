/* src/dist/comm.h - the processes a training step is spread over.
 *
 * The library never depends on a message-passing runtime: it sees only this
 * small table. sb_comm_single() is the one-process implementation (every
 * collective is the identity); the MPI implementation lives outside the
 * library (src/mpi/, built into the samebits-mpi command when Open MPI is
 * found). A collective either completes on every process or fails with a
 * message (sb_last_error()). Each collective is an associative and
 * commutative integer operation, so its result is the same for any number
 * of processes and any reduction tree (contract section 17). */
#ifndef SAMEBITS_DIST_COMM_H
#define SAMEBITS_DIST_COMM_H

#include <stddef.h>
#include <stdint.h>
#include "samebits/status.h"

/* Names the rules processes must share to combine their results (contract
 * section 17); processes compare it at start. */
#define SB_DIST_CONTRACT "exact-reduction-1"

typedef struct sb_comm sb_comm;
struct sb_comm {
    int rank, size; /* 0 <= rank < size */
    /* v[i] = max over processes of v[i] (unsigned bytes), in place. */
    sb_status (*max_u8)(sb_comm *c, uint8_t *v, size_t n);
    /* v[i] = sum over processes of v[i], in place. Every partial sum fits a
     * signed word of `bits` bits (32 or 64), so an implementation may send
     * 32-bit words when bits == 32. */
    sb_status (*sum_i64)(sb_comm *c, int64_t *v, size_t n, int bits);
    /* Every process passes a digest of what must agree (`what` names it);
     * fails on every process, naming the ranks that differ from rank 0, if
     * any digest differs. */
    sb_status (*agree)(sb_comm *c, const unsigned char digest[32], const char *what);
    void *impl;
};

/* The single-process communicator (rank 0 of 1). */
sb_comm *sb_comm_single(void);

#endif
