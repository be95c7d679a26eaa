// Where the calling thread's allocations should go: a per-thread hint set
// around code whose blocks share a lifetime (Core's AllocationZone, which
// says why). Only the worker's malloc (Sources/CAllocator) reads it, and
// puts such blocks in a zone of CTLS's handshake heap; elsewhere (tests,
// fuzzers, the supervisor) malloc is glibc's and the hint changes nothing.
#ifndef PEREGRINE_CSYS_ALLOCATION_ZONE_H
#define PEREGRINE_CSYS_ALLOCATION_ZONE_H

// No zone: glibc's heap.
#define CSYS_ZONE_NONE (-1)
// Blocks that die with a QUIC handshake.
#define CSYS_ZONE_HANDSHAKE 0
// Blocks a QUIC connection keeps for its life.
#define CSYS_ZONE_CONNECTION 1

// Sets the thread's zone; returns the previous one, to restore.
int csys_allocation_zone_set(int zone);
int csys_allocation_zone(void);

#ifndef __swift__
// The value itself, for the worker's malloc: one thread-local read, no call.
// Initial-exec: reading it never allocates (a lazily allocated TLS block
// would recurse into malloc).
extern _Thread_local int csys_allocation_zone_current __attribute__((tls_model("initial-exec")));
#endif

#endif
