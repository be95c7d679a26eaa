// See include/callocator.h.
#define _GNU_SOURCE
#include "callocator.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "csys_allocation_zone.h"
#include "ctls_handshake_heap.h"

int callocator_linked(void) { return 1; }

// MARK: - The next allocator

// glibc's, or one an LD_PRELOAD library put before it (jemalloc, a
// profiler, tests/e2e/malloc_count.c): the executable's definitions are
// found first, so these pass everything but zoned blocks on to whatever
// would have been malloc without them. The calls are tail calls even in
// debug builds (musttail), so the next one sees its caller's return
// address, not ours. Each starts as a stub that looks them all up, so the
// calls need no "looked up yet?" test.
static void *first_malloc(size_t);
static void *first_calloc(size_t, size_t);
static void *first_realloc(void *, size_t);
static void first_free(void *);
static int first_posix_memalign(void **, size_t, size_t);
static void *first_aligned_alloc(size_t, size_t);
static void *first_memalign(size_t, size_t);
static size_t first_usable_size(void *);

static void *(*next_malloc)(size_t) = first_malloc;
static void *(*next_calloc)(size_t, size_t) = first_calloc;
static void *(*next_realloc)(void *, size_t) = first_realloc;
static void (*next_free)(void *) = first_free;
static int (*next_posix_memalign)(void **, size_t, size_t) = first_posix_memalign;
static void *(*next_aligned_alloc)(size_t, size_t) = first_aligned_alloc;
static void *(*next_memalign)(size_t, size_t) = first_memalign;
static size_t (*next_usable_size)(void *) = first_usable_size;

// What dlsym allocates while they are being looked up (the first call, in
// the dynamic loader's start-up, on one thread): never freed.
static _Alignas(16) char boot[16384];
static size_t boot_used;
static int looking_up;

static int from_boot(const void *p) { return (uintptr_t)p - (uintptr_t)boot < sizeof boot; }

static void *boot_alloc(size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n > sizeof boot - boot_used) return NULL;
    void *p = boot + boot_used;
    boot_used += n;
    return p;  // static storage: zeroed, and never handed out twice
}

// 1 once the next allocator is known; 0 while it is being looked up.
__attribute__((cold)) static int look_up(void) {
    if (next_usable_size != first_usable_size) return 1;
    if (looking_up) return 0;
    looking_up = 1;
    void *m = dlsym(RTLD_NEXT, "malloc"), *c = dlsym(RTLD_NEXT, "calloc"), *r = dlsym(RTLD_NEXT, "realloc");
    void *f = dlsym(RTLD_NEXT, "free"), *pm = dlsym(RTLD_NEXT, "posix_memalign");
    void *aa = dlsym(RTLD_NEXT, "aligned_alloc"), *ma = dlsym(RTLD_NEXT, "memalign");
    void *us = dlsym(RTLD_NEXT, "malloc_usable_size");
    next_malloc = (void *(*)(size_t))m;
    next_calloc = (void *(*)(size_t, size_t))c;
    next_realloc = (void *(*)(void *, size_t))r;
    next_free = (void (*)(void *))f;
    next_posix_memalign = (int (*)(void **, size_t, size_t))pm;
    next_aligned_alloc = (void *(*)(size_t, size_t))aa;
    next_memalign = (void *(*)(size_t, size_t))ma;
    next_usable_size = (size_t (*)(void *))us;
    looking_up = 0;
    return 1;
}

static void *first_malloc(size_t n) { return look_up() ? next_malloc(n) : boot_alloc(n); }
static void *first_calloc(size_t count, size_t n) { return look_up() ? next_calloc(count, n) : boot_alloc(count * n); }
static void *first_realloc(void *p, size_t n) { return look_up() ? next_realloc(p, n) : NULL; }
// Before the look-up every block came from `boot`: nothing to free.
static void first_free(void *p) { (void)p; }
static int first_posix_memalign(void **out, size_t a, size_t n) { return look_up() ? next_posix_memalign(out, a, n) : ENOMEM; }
static void *first_aligned_alloc(size_t a, size_t n) { return look_up() ? next_aligned_alloc(a, n) : NULL; }
static void *first_memalign(size_t a, size_t n) { return look_up() ? next_memalign(a, n) : NULL; }
static size_t first_usable_size(void *p) { return look_up() ? next_usable_size(p) : 0; }

// MARK: - Zoned blocks

// A block of the thread's zone, or NULL: no hint, or the heap is full.
static inline void *zoned(size_t size) {
    int zone = csys_allocation_zone_current;
    return __builtin_expect(zone == CSYS_ZONE_NONE, 1) ? NULL : ctls_handshake_heap_take(zone, size);
}

// MARK: - The allocator

void *malloc(size_t size) {
    void *p = zoned(size);
    if (p) return p;
    __attribute__((musttail)) return next_malloc(size);
}

void *calloc(size_t count, size_t size) {
    size_t n;
    if (__builtin_mul_overflow(count, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = zoned(n);
    if (p) return memset(p, 0, n);  // the heap reuses freed blocks as they are
    __attribute__((musttail)) return next_calloc(count, size);
}

void free(void *pointer) {
    if (ctls_handshake_heap_owns_inline(pointer)) {
        ctls_handshake_heap_give(pointer);
        return;
    }
    if (from_boot(pointer)) return;
    __attribute__((musttail)) return next_free(pointer);
}

void *realloc(void *pointer, size_t size) {
    if (!pointer) return malloc(size);
    if (from_boot(pointer)) {
        // A look-up's block moving on: its size is not known, but it lies
        // in `boot` (copying what follows it there is harmless).
        void *moved = malloc(size);
        size_t room = (size_t)(boot + sizeof boot - (char *)pointer);
        if (moved) memcpy(moved, pointer, size < room ? size : room);
        return moved;
    }
    // The next allocator's block stays its own, under a zone hint or not.
    if (!ctls_handshake_heap_owns_inline(pointer)) {
        __attribute__((musttail)) return next_realloc(pointer, size);
    }
    if (size == 0) {
        ctls_handshake_heap_give(pointer);
        return NULL;
    }
    size_t have = ctls_handshake_heap_usable_size(pointer);
    // Fits its size class, and not so loosely that moving is worth it.
    if (size <= have && size > have / 2) return pointer;
    // Moves: to the thread's zone under a hint, else to the next allocator.
    void *moved = malloc(size);
    if (!moved) return NULL;
    memcpy(moved, pointer, size < have ? size : have);
    ctls_handshake_heap_give(pointer);
    return moved;
}

void *reallocarray(void *pointer, size_t count, size_t size) {
    size_t n;
    if (__builtin_mul_overflow(count, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(pointer, n);
}

size_t malloc_usable_size(void *pointer) {
    if (ctls_handshake_heap_owns_inline(pointer)) return ctls_handshake_heap_usable_size(pointer);
    if (!pointer || from_boot(pointer)) return 0;
    __attribute__((musttail)) return next_usable_size(pointer);
}

// The heap's blocks are 16-byte aligned (its size classes are multiples of
// 16, in 64 KiB-aligned chunks): enough for Swift, whose
// UnsafeMutablePointer.allocate asks for its alignment through
// posix_memalign even when malloc's would do.
int posix_memalign(void **out, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    void *p = alignment <= 16 ? zoned(size) : NULL;
    if (p) {
        *out = p;
        return 0;
    }
    __attribute__((musttail)) return next_posix_memalign(out, alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    void *p = alignment <= 16 ? zoned(size) : NULL;
    if (p) return p;
    __attribute__((musttail)) return next_aligned_alloc(alignment, size);
}

void *memalign(size_t alignment, size_t size) {
    void *p = alignment <= 16 ? zoned(size) : NULL;
    if (p) return p;
    __attribute__((musttail)) return next_memalign(alignment, size);
}
