// Counts the heap allocations a thread makes, for tests that pin "no
// allocation per packet" (STYLE.md §6; swift-nio counts mallocs the same
// way in its allocation-count integration tests).
//
// Linked into the test executable, this file's malloc, calloc, realloc,
// posix_memalign, aligned_alloc and memalign interpose the C library's for
// the whole process (an executable's definitions come first in symbol
// lookup, also for calls from libswiftCore and libc++), count, and forward
// to glibc's own entry points (__libc_malloc...); free too, for the live
// bytes. The counts are per thread, so tests running elsewhere do not
// disturb them (a block freed by another thread than the one that
// allocated it skews both threads' live bytes: measure on one thread).
#ifndef PEREGRINE_ALLOCATION_COUNTER_H
#define PEREGRINE_ALLOCATION_COUNTER_H

/// Allocations made by the calling thread since it started.
long long allocation_counter_thread_total(void);
/// Usable bytes (malloc_usable_size) of the blocks the calling thread
/// allocated, minus those it freed: its live heap, as a difference between
/// two readings.
long long allocation_counter_thread_live_bytes(void);

#endif
