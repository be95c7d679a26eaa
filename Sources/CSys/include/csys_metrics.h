// Shared-memory counters for the Prometheus metrics (see MetricsRegion in
// Core): a memfd the supervisor creates and every worker maps, holding one
// block of 64-bit counters per worker thread.
//
// Every block has exactly one writer (its worker thread) and one reader
// (the supervisor), so a counter is advanced by a relaxed load and a
// relaxed store of the sum: no read-modify-write instruction, no lock, and
// on x86-64 and arm64 the same two plain moves as a non-atomic `+=`. The
// atomics only promise that the reader never sees a torn value.
#ifndef PEREGRINE_CSYS_METRICS_H
#define PEREGRINE_CSYS_METRICS_H

#include <stddef.h>
#include <stdint.h>

// A memfd of `words` 64-bit zeros, close-on-exec (the supervisor passes it
// to each worker it starts, see spawnProcess's keep list).
int csys_metrics_create(size_t words);
// The region, shared and writable, or NULL.
int64_t *csys_metrics_map(int fd, size_t words);
// sysconf(_SC_CLK_TCK) and the page size: the units of /proc/PID/stat's CPU
// times and /proc/PID/statm's sizes.
long csys_clock_ticks_per_second(void);
long csys_page_bytes(void);

static inline void csys_counter_add(int64_t *block, int index, int64_t amount) {
    int64_t *p = block + index;
    __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + amount, __ATOMIC_RELAXED);
}

static inline void csys_counter_store(int64_t *block, int index, int64_t value) {
    __atomic_store_n(block + index, value, __ATOMIC_RELAXED);
}

static inline int64_t csys_counter_load(const int64_t *block, int index) {
    return __atomic_load_n(block + index, __ATOMIC_RELAXED);
}

#endif
