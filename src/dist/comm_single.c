/* The one-process communicator: every collective over one process is the
 * identity. */
#include "dist/comm.h"

static sb_status single_max_u8(sb_comm *c, uint8_t *v, size_t n) {
    (void)c, (void)v, (void)n;
    return SB_OK;
}

static sb_status single_sum_i64(sb_comm *c, int64_t *v, size_t n, int bits) {
    (void)c, (void)v, (void)n, (void)bits;
    return SB_OK;
}

static sb_status single_agree(sb_comm *c, const unsigned char digest[32], const char *what) {
    (void)c, (void)digest, (void)what;
    return SB_OK;
}

sb_comm *sb_comm_single(void) {
    static sb_comm single = {0, 1, single_max_u8, single_sum_i64, single_agree, NULL};
    return &single;
}
