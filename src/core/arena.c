/* Arenas: bump allocation in chained chunks, reset in O(1).
 *
 * A training step allocates its activations and gradients from an arena and
 * resets it at the end of the step, so the steady state does no malloc. When
 * a chunk is full a new one (at least as big as the request) is chained; after
 * a reset, all chunks but the largest are released so the arena settles at
 * one chunk that fits a whole step. */
#include <stdlib.h>
#include "core/internal.h"

#define ARENA_ALIGN 64

typedef struct arena_chunk {
    struct arena_chunk *next;
    size_t size, used;
    unsigned char *base; /* ARENA_ALIGN-aligned */
} arena_chunk;

struct sb_arena {
    arena_chunk *head; /* the chunk being filled */
    size_t chunk_bytes;
};

static arena_chunk *chunk_new(size_t size) {
    arena_chunk *c = malloc(sizeof *c);
    if (!c) return NULL;
    c->base = aligned_alloc(ARENA_ALIGN, (size + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN);
    if (!c->base) { free(c); return NULL; }
    c->next = NULL;
    c->size = size;
    c->used = 0;
    return c;
}

sb_status sb_arena_new(sb_arena **out, size_t chunk_bytes) {
    if (!out) return sb_fail(SB_ERR_NULL, "sb_arena_new: out is NULL");
    *out = NULL;
    if (chunk_bytes == 0) chunk_bytes = (size_t)1 << 20;
    sb_arena *a = malloc(sizeof *a);
    if (!a) return sb_fail(SB_ERR_NOMEM, "sb_arena_new: out of memory");
    a->chunk_bytes = chunk_bytes;
    a->head = chunk_new(chunk_bytes);
    if (!a->head) {
        free(a);
        return sb_fail(SB_ERR_NOMEM, "sb_arena_new: cannot allocate %zu bytes", chunk_bytes);
    }
    *out = a;
    return SB_OK;
}

void *sb_arena_alloc(sb_arena *a, size_t bytes) {
    if (!a) { sb_fail(SB_ERR_NULL, "sb_arena_alloc: arena is NULL"); return NULL; }
    if (bytes > SIZE_MAX - ARENA_ALIGN) {
        sb_fail(SB_ERR_NOMEM, "sb_arena_alloc: %zu bytes is too large", bytes);
        return NULL;
    }
    size_t need = (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    if (need == 0) need = ARENA_ALIGN;
    if (a->head->size - a->head->used < need) {
        size_t size = need > a->chunk_bytes ? need : a->chunk_bytes;
        arena_chunk *c = chunk_new(size);
        if (!c) {
            sb_fail(SB_ERR_NOMEM, "sb_arena_alloc: cannot allocate %zu bytes", size);
            return NULL;
        }
        c->next = a->head;
        a->head = c;
    }
    void *p = a->head->base + a->head->used;
    a->head->used += need;
    return p;
}

size_t sb_arena_used(const sb_arena *a) {
    size_t used = 0;
    for (const arena_chunk *c = a ? a->head : NULL; c; c = c->next) used += c->used;
    return used;
}

void sb_arena_reset(sb_arena *a) {
    if (!a) return;
    /* Keep one chunk big enough for everything used since the last reset. */
    size_t total = 0;
    for (arena_chunk *c = a->head; c; c = c->next) total += c->size;
    if (a->head->next) {
        arena_chunk *c = a->head;
        while (c) { arena_chunk *n = c->next; free(c->base); free(c); c = n; }
        a->head = chunk_new(total);
        if (!a->head) a->head = chunk_new(a->chunk_bytes); /* may still fail: */
        if (!a->head) abort(); /* cannot keep the arena's invariant; out of memory */
        a->chunk_bytes = total > a->chunk_bytes ? total : a->chunk_bytes;
    }
    a->head->used = 0;
}

void sb_arena_free(sb_arena *a) {
    if (!a) return;
    arena_chunk *c = a->head;
    while (c) { arena_chunk *n = c->next; free(c->base); free(c); c = n; }
    free(a);
}
