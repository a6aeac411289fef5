/* Per-thread scratch buffers of the fast kernels (src/cpu/cpu.h).
 *
 * Packing panels and im2col matrices are megabytes, needed on every call,
 * and dead at its end. Taking them from malloc each time costs more than
 * the arithmetic for LeNet-sized layers: glibc serves such sizes with
 * fresh mmap()s, so every call pays page faults and the kernel zeroing
 * each page. A grow-only buffer per thread and slot is faulted in once. */
#include <pthread.h>
#include <stdlib.h>
#include "cpu/cpu.h"

typedef struct {
    void *ptr[SB_SCRATCH_SLOTS];
    size_t size[SB_SCRATCH_SLOTS];
} scratch_set;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p) {
    scratch_set *s = p;
    for (int i = 0; i < SB_SCRATCH_SLOTS; i++) free(s->ptr[i]);
    free(s);
}

static void scratch_init(void) { (void)pthread_key_create(&scratch_key, scratch_free); }

void *sb_scratch(sb_scratch_slot slot, size_t bytes) {
    if ((unsigned)slot >= SB_SCRATCH_SLOTS) return NULL;
    pthread_once(&scratch_once, scratch_init);
    scratch_set *s = pthread_getspecific(scratch_key);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s || pthread_setspecific(scratch_key, s) != 0) {
            free(s);
            return NULL;
        }
    }
    if (bytes == 0) bytes = 1;
    if (s->size[slot] < bytes) {
        /* Grow by half again so that slowly growing requests settle. */
        size_t want = bytes + bytes / 2;
        want = (want + 63) / 64 * 64;
        void *p = aligned_alloc(64, want);
        if (!p) return NULL;
        free(s->ptr[slot]);
        s->ptr[slot] = p;
        s->size[slot] = want;
    }
    return s->ptr[slot];
}
