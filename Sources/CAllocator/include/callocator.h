// The worker's malloc: glibc's, but for blocks allocated under a zone hint
// (CSys's csys_allocation_zone.h, Core's AllocationZone), which come from
// that zone of CTLS's handshake heap (ctls_handshake_heap.h).
//
// Why: a burst of QUIC handshakes allocates, interleaved, blocks each
// connection keeps and blocks it frees soon (the handshake's, a request's,
// what the idle release gives back). glibc's heap keeps the size the burst
// made it, and every page holding a kept block stays resident with the
// freed blocks around it. With the kept blocks in a zone of their own,
// packed, glibc's heap holds only the short-lived ones, whose pages go
// back once freed (malloc_trim after a burst, QUICService), and the
// handshake zone's chunks go back to the kernel as they empty
// (TRANSPORT.md, "What an idle HTTP/3 connection holds").
//
// Only the worker executable links this target: it replaces malloc, free,
// calloc, realloc, reallocarray, malloc_usable_size, posix_memalign,
// aligned_alloc and memalign for the whole process (glibc supports
// replacing them, "Replacing malloc" in its manual; valloc and pvalloc
// stay glibc's, and free gives their blocks back to glibc). Without a hint
// each is one thread-local read or one address comparison away from
// glibc's own.
#ifndef PEREGRINE_CALLOCATOR_H
#define PEREGRINE_CALLOCATOR_H

// 1: this process's malloc is the one above (the worker).
int callocator_linked(void);

#endif
