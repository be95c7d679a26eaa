// CTLS handshake heap: where OpenSSL's allocations made during a QUIC
// handshake go, so that the ~50–70 KB each handshake allocates and frees
// (SSL object, BIOs, buffers) never sits between the blocks the
// connections keep in malloc's heap (TRANSPORT.md, "What an idle HTTP/3
// connection holds").
//
// OpenSSL allocates through three functions installed before its first
// allocation (CRYPTO_set_mem_functions, from a constructor at load time).
// They route by a thread-local depth set around our calls into OpenSSL for
// a QUIC handshake (quic_tls.c): while it is above zero, allocations come
// from this heap, otherwise from malloc. A block is known as ours by its
// address (one reserved range), so free and realloc route right from
// anywhere, flagged or not, on any thread.
//
// The heap: one reserved range of 64 KiB chunks; blocks up to 16 KiB in
// size classes, each chunk holding one class with a live count; larger
// blocks a run of whole chunks. A chunk whose last block is freed gives
// its pages back (madvise MADV_DONTNEED), but for one kept as a spare.
// One mutex: handshakes are not the request path. When the range is
// exhausted (or cannot be reserved) allocations fall back to malloc.
#ifndef PEREGRINE_CTLS_HANDSHAKE_HEAP_H
#define PEREGRINE_CTLS_HANDSHAKE_HEAP_H

#include <stddef.h>
#include <stdint.h>

// Whether OpenSSL's allocations go through the routing functions (they
// could not be installed if OpenSSL had allocated before the constructor).
int ctls_handshake_heap_installed(void);

// Marks the calling thread as inside a QUIC handshake (nestable).
void ctls_handshake_heap_enter(void);
void ctls_handshake_heap_leave(void);

// The routing functions OpenSSL gets: from this heap while the thread is
// inside a handshake, else from malloc; free and realloc take a block of
// either origin. A size of 0 gives NULL (as OpenSSL's own do).
void *ctls_handshake_heap_malloc(size_t n);
void *ctls_handshake_heap_realloc(void *p, size_t n);
void ctls_handshake_heap_free(void *p);

// Whether `p` is a block of this heap.
int ctls_handshake_heap_owns(const void *p);

#ifndef __swift__
// The same, inline, for the worker's free (every free asks): one
// subtraction and one comparison against the reserved range's start, which
// until the range is reserved (or if reserving failed) is an address no
// pointer comes within the range's length of (the top of the address
// space, where no user-space pointer lies).
extern unsigned char *ctls_handshake_heap_range;
#define CTLS_HANDSHAKE_HEAP_RANGE_BYTES ((size_t)16384 << 16)
static inline int ctls_handshake_heap_owns_inline(const void *p) {
    unsigned char *b = __atomic_load_n(&ctls_handshake_heap_range, __ATOMIC_ACQUIRE);
    return (uintptr_t)p - (uintptr_t)b < CTLS_HANDSHAKE_HEAP_RANGE_BYTES;
}
#endif

// Zones: each chunk holds blocks of one zone, so that blocks which die
// together share chunks, which then empty together and go back to the
// kernel, and blocks which stay are packed together rather than spread
// between holes. The handshake zone: OpenSSL's handshake allocations and
// what else dies with the handshake. The connection zone: what a QUIC
// connection keeps for its life. (The numbers are CSys's zone hints,
// csys_allocation_zone.h, which the worker's malloc passes on.)
#define CTLS_HEAP_HANDSHAKE 0
#define CTLS_HEAP_CONNECTION 1
#define CTLS_HEAP_ZONES 2

// For a malloc replacement (Sources/CAllocator). `take`: a block of `zone`,
// or NULL when there is no such zone or the heap has no room (the caller
// then uses its own allocator). `give` and `usable_size` take only blocks
// this heap owns (ctls_handshake_heap_owns).
void *ctls_handshake_heap_take(int zone, size_t n);
void ctls_handshake_heap_give(void *p);
size_t ctls_handshake_heap_usable_size(const void *p);

// What the heap holds, for tests and the stats line.
typedef struct {
    size_t live_blocks;     // blocks allocated and not freed
    size_t live_bytes;      // their sizes (size classes, whole chunks)
    size_t used_chunks;     // chunks holding at least one live block
    size_t spare_chunks;    // empty chunks kept resident (at most 1)
    size_t released_chunks; // times a chunk's pages were given back
    size_t fallbacks;       // allocations that went to malloc: range full
} ctls_handshake_heap_stats;
void ctls_handshake_heap_get_stats(ctls_handshake_heap_stats *out);

#endif
