// See include/ctls_handshake_heap.h: OpenSSL's QUIC-handshake allocations
// on a heap of their own, whose chunks go back to the kernel when empty.
//
// Why not a bump arena per handshake: OpenSSL creates lazily, during the
// first handshake, globals that live on (provider caches, the thread's
// error state and DRBG); they must be freeable one by one and may pin a
// chunk, not an arena. Hence a real allocator with per-block free.
#define _GNU_SOURCE
#include "ctls_handshake_heap.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <openssl/crypto.h>

#define CHUNK_SHIFT 16
#define CHUNK ((size_t)1 << CHUNK_SHIFT)
// Reserved, not committed: pages cost memory only once touched. About
// 15,000 handshakes at once; beyond it allocations go to malloc.
#define REGION_CHUNKS 16384u
#define SMALL_MAX 16384u
#define NONE UINT32_MAX

// Chunk states besides a size class (1...CLASSES).
#define FREE 0
#define LARGE 0xffff   // first chunk of a large block's run
#define INSIDE 0xfffe  // a later chunk of that run

// Size classes: 16 B steps to 512, 64 B to 2 KiB, 256 B to 4 KiB, 1 KiB to
// 16 KiB (at most an eighth lost to rounding past 512 B, a fifth past
// 4 KiB): a connection's blocks (QUICConnection at about 1.9 KiB, a packet
// space's state at 400 B) fit closely. Class k is 1-based.
#define CLASSES 76

static uint32_t class_size(unsigned k) {
    if (k <= 32) return k * 16;
    if (k <= 56) return 512 + (k - 32) * 64;
    if (k <= 64) return 2048 + (k - 56) * 256;
    return 4096 + (k - 64) * 1024;
}

static unsigned class_of(size_t n) {
    if (n <= 512) return (unsigned)((n + 15) / 16);
    if (n <= 2048) return 32 + (unsigned)((n - 512 + 63) / 64);
    if (n <= 4096) return 56 + (unsigned)((n - 2048 + 255) / 256);
    return 64 + (unsigned)((n - 4096 + 1023) / 1024);
}

struct chunk {
    uint16_t state;    // FREE, a class, LARGE or INSIDE
    uint8_t partial;   // on its zone's and class's list of chunks with room
    uint8_t zone;      // whose blocks it holds (class chunks)
    uint32_t live;     // live blocks (class chunks)
    uint32_t carved;   // bytes handed out by bumping, never touched beyond
    uint32_t span;     // chunks in the run (LARGE)
    uint32_t prev, next;
    void *free;  // freed blocks, each holding the next's address
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int reserved;            // 0 until reserve() ran; 1 reserved, -1 failed
static struct chunk chunks[REGION_CHUNKS];
static uint32_t top;            // chunks below it have been used once
static uint32_t lowest_free;    // no free chunk below it
static uint32_t spare = NONE;   // an empty chunk kept resident
static uint32_t partial[CTLS_HEAP_ZONES][CLASSES + 1];
static ctls_handshake_heap_stats stats;
static int installed;
static _Thread_local int depth;

// MARK: - Chunks

static int reserve(void) {
    if (reserved) return reserved > 0;
    // One chunk more than needed, to align the range on a chunk.
    size_t len = (size_t)REGION_CHUNKS * CHUNK + CHUNK;
    uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        reserved = -1;
        return 0;
    }
    uint8_t *aligned = (uint8_t *)(((uintptr_t)p + CHUNK - 1) & ~(uintptr_t)(CHUNK - 1));
    if (aligned > p) munmap(p, (size_t)(aligned - p));
    munmap(aligned + (size_t)REGION_CHUNKS * CHUNK, CHUNK - (size_t)(aligned - p));
    for (unsigned z = 0; z < CTLS_HEAP_ZONES; z++)
        for (unsigned k = 0; k <= CLASSES; k++) partial[z][k] = NONE;
    // Read without the lock by ctls_handshake_heap_owns.
    __atomic_store_n(&ctls_handshake_heap_range, aligned, __ATOMIC_RELEASE);
    reserved = 1;
    return 1;
}

// The reserved range starts at ctls_handshake_heap_range (below).
static uint8_t *chunk_at(uint32_t i) { return ctls_handshake_heap_range + ((size_t)i << CHUNK_SHIFT); }

static uint32_t chunk_index(const void *p) {
    return (uint32_t)(((const uint8_t *)p - ctls_handshake_heap_range) >> CHUNK_SHIFT);
}

static void give_back(uint32_t first, uint32_t n) {
    madvise(chunk_at(first), (size_t)n << CHUNK_SHIFT, MADV_DONTNEED);
    for (uint32_t i = first; i < first + n; i++) chunks[i].state = FREE;
    if (first < lowest_free) lowest_free = first;
    stats.released_chunks += n;
}

// A run of `n` free chunks: the spare for one, else the lowest fitting run,
// else fresh ones at the top. NONE when the range is full.
static uint32_t take_chunks(uint32_t n) {
    if (n == 1 && spare != NONE) {
        uint32_t i = spare;
        spare = NONE;
        stats.spare_chunks = 0;
        return i;
    }
    uint32_t run = 0, i = lowest_free;
    while (i < top && chunks[i].state != FREE) i++;
    lowest_free = i;
    for (; i < top; i++) {
        // The spare is FREE too but resident: skipping it keeps it spare.
        run = chunks[i].state == FREE && i != spare ? run + 1 : 0;
        if (run == n) return i + 1 - n;
    }
    // A free run reaching the top continues with fresh chunks.
    if (top + (n - run) > REGION_CHUNKS) return NONE;
    top += n - run;
    return top - n;
}

static void list_remove(uint32_t i) {
    struct chunk *c = &chunks[i];
    if (c->prev != NONE) chunks[c->prev].next = c->next;
    else partial[c->zone][c->state] = c->next;
    if (c->next != NONE) chunks[c->next].prev = c->prev;
    c->partial = 0;
}

static void list_push(uint32_t i) {
    struct chunk *c = &chunks[i];
    c->prev = NONE;
    c->next = partial[c->zone][c->state];
    if (c->next != NONE) chunks[c->next].prev = i;
    partial[c->zone][c->state] = i;
    c->partial = 1;
}

// An emptied class chunk: kept as the spare, giving back the previous one.
static void retire(uint32_t i) {
    chunks[i].state = FREE;
    if (spare != NONE) give_back(spare, 1);
    else stats.spare_chunks = 1;
    spare = i;
    if (i < lowest_free) lowest_free = i;
}

// MARK: - Blocks

static void *alloc_locked(unsigned zone, size_t n) {
    if (!reserve()) return NULL;
    if (n > SMALL_MAX) {
        uint32_t span = (uint32_t)((n + CHUNK - 1) >> CHUNK_SHIFT);
        if (n > (size_t)REGION_CHUNKS * CHUNK) return NULL;
        uint32_t i = take_chunks(span);
        if (i == NONE) return NULL;
        chunks[i].state = LARGE;
        chunks[i].span = span;
        for (uint32_t j = i + 1; j < i + span; j++) chunks[j].state = INSIDE;
        stats.live_blocks++;
        stats.live_bytes += (size_t)span << CHUNK_SHIFT;
        stats.used_chunks += span;
        return chunk_at(i);
    }
    unsigned k = class_of(n);
    uint32_t size = class_size(k);
    uint32_t i = partial[zone][k];
    if (i == NONE) {
        i = take_chunks(1);
        if (i == NONE) return NULL;
        chunks[i] = (struct chunk){.state = (uint16_t)k, .zone = (uint8_t)zone};
        list_push(i);
        stats.used_chunks++;
    }
    struct chunk *c = &chunks[i];
    void *p;
    if (c->free) {
        p = c->free;
        memcpy(&c->free, p, sizeof c->free);
    } else {
        p = chunk_at(i) + c->carved;
        c->carved += size;
    }
    c->live++;
    stats.live_blocks++;
    stats.live_bytes += size;
    if (!c->free && c->carved + size > CHUNK) list_remove(i);
    return p;
}

static size_t usable_locked(const void *p) {
    struct chunk *c = &chunks[chunk_index(p)];
    return c->state == LARGE ? (size_t)c->span << CHUNK_SHIFT : class_size(c->state);
}

static void free_locked(void *p) {
    uint32_t i = chunk_index(p);
    struct chunk *c = &chunks[i];
    stats.live_blocks--;
    stats.live_bytes -= usable_locked(p);
    if (c->state == LARGE) {
        stats.used_chunks -= c->span;
        give_back(i, c->span);
        return;
    }
    memcpy(p, &c->free, sizeof c->free);
    c->free = p;
    if (--c->live == 0) {
        if (c->partial) list_remove(i);
        stats.used_chunks--;
        retire(i);
    } else if (!c->partial) {
        list_push(i);
    }
}

// The reserved range once reserved; before, the top of the address space
// (see ctls_handshake_heap_owns_inline).
unsigned char *ctls_handshake_heap_range = (unsigned char *)(UINTPTR_MAX - CTLS_HANDSHAKE_HEAP_RANGE_BYTES + 1);

_Static_assert(CTLS_HANDSHAKE_HEAP_RANGE_BYTES == (size_t)REGION_CHUNKS * CHUNK, "the header's range length");

int ctls_handshake_heap_owns(const void *p) { return ctls_handshake_heap_owns_inline(p); }

// From the heap, or from malloc when it is full.
static void *heap_alloc(size_t n) {
    pthread_mutex_lock(&lock);
    void *p = alloc_locked(CTLS_HEAP_HANDSHAKE, n);
    if (!p) stats.fallbacks++;
    pthread_mutex_unlock(&lock);
    return p ? p : malloc(n);
}

void *ctls_handshake_heap_malloc(size_t n) {
    if (n == 0) return NULL;
    return depth > 0 ? heap_alloc(n) : malloc(n);
}

void ctls_handshake_heap_free(void *p) {
    if (!p) return;
    if (!ctls_handshake_heap_owns(p)) {
        free(p);
        return;
    }
    pthread_mutex_lock(&lock);
    free_locked(p);
    pthread_mutex_unlock(&lock);
}

void *ctls_handshake_heap_realloc(void *p, size_t n) {
    if (!p) return ctls_handshake_heap_malloc(n);
    if (n == 0) {
        ctls_handshake_heap_free(p);
        return NULL;
    }
    // A block made outside a handshake stays in malloc's heap.
    if (!ctls_handshake_heap_owns(p)) return realloc(p, n);
    pthread_mutex_lock(&lock);
    size_t have = usable_locked(p);
    pthread_mutex_unlock(&lock);
    // Growing within its class or run, or shrinking by less than half.
    if (n <= have && (n > SMALL_MAX ? have - n < CHUNK : class_of(n) == class_of(have) || n > have / 2)) return p;
    // Moves: to this heap inside a handshake, else out to malloc.
    void *moved = ctls_handshake_heap_malloc(n);
    if (!moved) return NULL;
    memcpy(moved, p, n < have ? n : have);
    ctls_handshake_heap_free(p);
    return moved;
}

// MARK: - Routing

void ctls_handshake_heap_enter(void) { depth++; }

void ctls_handshake_heap_leave(void) { depth--; }

void *ctls_handshake_heap_take(int zone, size_t n) {
    if (zone < 0 || zone >= CTLS_HEAP_ZONES || n == 0) return NULL;
    pthread_mutex_lock(&lock);
    void *p = alloc_locked((unsigned)zone, n);
    if (!p) stats.fallbacks++;
    pthread_mutex_unlock(&lock);
    return p;
}

void ctls_handshake_heap_give(void *p) {
    pthread_mutex_lock(&lock);
    free_locked(p);
    pthread_mutex_unlock(&lock);
}

size_t ctls_handshake_heap_usable_size(const void *p) {
    pthread_mutex_lock(&lock);
    size_t n = usable_locked(p);
    pthread_mutex_unlock(&lock);
    return n;
}

int ctls_handshake_heap_installed(void) { return installed; }

void ctls_handshake_heap_get_stats(ctls_handshake_heap_stats *out) {
    pthread_mutex_lock(&lock);
    *out = stats;
    pthread_mutex_unlock(&lock);
}

static void *hook_malloc(size_t n, const char *file, int line) {
    (void)file, (void)line;
    return ctls_handshake_heap_malloc(n);
}

static void *hook_realloc(void *p, size_t n, const char *file, int line) {
    (void)file, (void)line;
    return ctls_handshake_heap_realloc(p, n);
}

static void hook_free(void *p, const char *file, int line) {
    (void)file, (void)line;
    ctls_handshake_heap_free(p);
}

// At load time, before anything (the embedded Python's ssl module
// included) has made OpenSSL allocate: after that OpenSSL refuses.
__attribute__((constructor)) static void install(void) {
    installed = CRYPTO_set_mem_functions(hook_malloc, hook_realloc, hook_free) == 1;
}
