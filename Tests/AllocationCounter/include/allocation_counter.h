// Counts the heap allocations a thread makes, for tests that pin "no
// allocation per packet" (STYLE.md §6; swift-nio counts mallocs the same
// way in its allocation-count integration tests).
//
// Linked into the test executable, this file's malloc, calloc, realloc,
// posix_memalign, aligned_alloc and memalign interpose the C library's for
// the whole process (an executable's definitions come first in symbol
// lookup, also for calls from libswiftCore and libc++), count, and forward
// to glibc's own entry points (__libc_malloc...). free is not replaced.
// The count is per thread, so tests running elsewhere do not disturb it.
#ifndef PEREGRINE_ALLOCATION_COUNTER_H
#define PEREGRINE_ALLOCATION_COUNTER_H

/// Allocations made by the calling thread since it started.
long long allocation_counter_thread_total(void);

#endif
