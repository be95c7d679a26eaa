// See allocation_counter.h.
#define _GNU_SOURCE
#include "allocation_counter.h"

#include <errno.h>
#include <malloc.h>
#include <stddef.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

// Initial-exec TLS of the executable: reading it never allocates (a
// dynamically allocated TLS block would recurse into malloc).
static __thread long long allocations __attribute__((tls_model("initial-exec")));
// Usable bytes of the blocks this thread allocated minus those it freed.
static __thread long long live __attribute__((tls_model("initial-exec")));

long long allocation_counter_thread_total(void) { return allocations; }
long long allocation_counter_thread_live_bytes(void) { return live; }

static void *counted(void *p) {
    if (p) live += (long long)malloc_usable_size(p);
    return p;
}

void *malloc(size_t size) {
    allocations++;
    return counted(__libc_malloc(size));
}

void *calloc(size_t count, size_t size) {
    allocations++;
    return counted(__libc_calloc(count, size));
}

void *realloc(void *pointer, size_t size) {
    allocations++;
    long long old = pointer ? (long long)malloc_usable_size(pointer) : 0;
    void *p = __libc_realloc(pointer, size);
    // A failed realloc leaves the old block as it was.
    if (p || size == 0) live -= old;
    return counted(p);
}

void *memalign(size_t alignment, size_t size) {
    allocations++;
    return counted(__libc_memalign(alignment, size));
}

void *aligned_alloc(size_t alignment, size_t size) {
    allocations++;
    return counted(__libc_memalign(alignment, size));
}

void free(void *pointer) {
    if (pointer) live -= (long long)malloc_usable_size(pointer);
    __libc_free(pointer);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    allocations++;
    void *p = counted(__libc_memalign(alignment, size));
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
