// LD_PRELOAD shim for tests/e2e/test_allocations.py: counts the calls to the
// C allocator a process makes, split by who called, in a file the test reads
// while the process runs.
//
// Who called: the return address of each malloc/calloc/realloc/memalign/
// posix_memalign/aligned_alloc/free call is looked up in the loaded objects
// (dl_iterate_phdr; the table is refreshed only when an object was loaded
// since). Calls from libpython, from a python executable, or from a CPython
// extension module (".cpython-" in the name, or lib-dynload) count as
// Python's: the application's objects and the interpreter's own work. Every
// other caller — the server's executable, libswiftCore (swift_slowAlloc),
// OpenSSL, libc — counts as the server's. The limits: the split is by the
// immediate caller, so a Swift function Python calls (the gateway's callbacks
// that allocate) counts as the server's, and a libc function Python calls
// that allocates for it (strdup, qsort's buffer) counts as the server's too.
//
// Where: $PEREGRINE_TEST_MALLOC_COUNT_DIR/<pid>.counts, eight little-endian
// uint64 counters updated atomically in a shared mapping (so the test reads
// them at any moment, no signal or exit needed, and every process of the
// supervisor/worker tree writes its own file): see `Counter` below. A forked
// child that does not exec gets a file of its own (pthread_atfork).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

enum Counter {
    SERVER_ALLOCATIONS = 0,  // malloc, calloc, realloc, the aligned ones
    PYTHON_ALLOCATIONS = 1,
    SERVER_FREES = 2,
    PYTHON_FREES = 3,
    SERVER_BYTES = 4,        // bytes requested by the server's allocations
    PYTHON_BYTES = 5,
    LIVE_BYTES = 6,          // usable bytes of every caller's blocks still allocated (int64; frees subtract)
    COUNTERS = 8,
};

static uint64_t fallback[COUNTERS];  // before the file is mapped
static uint64_t *counters = fallback;

// Loaded objects: the address range of each one's PT_LOAD segments.
struct Object { uintptr_t start, end; int python; };
#define MAX_OBJECTS 1024
static struct Object objects[MAX_OBJECTS];
static int objectCount;                 // published with release
static unsigned long long loadsSeen;   // dlpi_adds when the table was built
static pthread_mutex_t tableLock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static char executable[4096];
static int executableIsPython;

static int isPythonName(const char *name) {
    if (name == NULL || name[0] == 0) return executableIsPython;
    if (strstr(name, "libpython") != NULL || strstr(name, ".cpython-") != NULL || strstr(name, "/lib-dynload/") != NULL)
        return 1;
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    return strncmp(base, "python", 6) == 0;
}

static int addObject(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    unsigned long long *adds = data;
    *adds = info->dlpi_adds;
    uintptr_t start = UINTPTR_MAX, end = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD) continue;
        uintptr_t s = info->dlpi_addr + p->p_vaddr, e = s + p->p_memsz;
        if (s < start) start = s;
        if (e > end) end = e;
    }
    if (end == 0) return 0;
    int n = __atomic_load_n(&objectCount, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) if (objects[i].start == start) return 0;
    if (n == MAX_OBJECTS) return 0;
    objects[n] = (struct Object){start, end, isPythonName(info->dlpi_name)};
    __atomic_store_n(&objectCount, n + 1, __ATOMIC_RELEASE);
    return 0;
}

static int findPython(uintptr_t address, int *python) {
    int n = __atomic_load_n(&objectCount, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        if (address >= objects[i].start && address < objects[i].end) {
            *python = objects[i].python;
            return 1;
        }
    }
    return 0;
}

// 1 when the caller at `address` is Python's (see the file comment).
static int calledByPython(void *address) {
    int python = 0;
    if (findPython((uintptr_t)address, &python)) return python;
    // Unknown: rebuild once per newly loaded object, else it is not in any
    // object (generated code): the server's.
    pthread_mutex_lock(&tableLock);
    unsigned long long adds = 0;
    dl_iterate_phdr(addObject, &adds);
    loadsSeen = adds;
    pthread_mutex_unlock(&tableLock);
    if (findPython((uintptr_t)address, &python)) return python;
    return 0;
}

static void count(void *caller, enum Counter server, enum Counter python, size_t bytes) {
    int py = calledByPython(caller);
    __atomic_fetch_add(&counters[py ? python : server], 1, __ATOMIC_RELAXED);
    if (bytes) __atomic_fetch_add(&counters[py ? PYTHON_BYTES : SERVER_BYTES], bytes, __ATOMIC_RELAXED);
}

// Live bytes by malloc_usable_size (what the block holds, not what was asked), so that an allocation and
// its free cancel whoever made them.
static void *born(void *pointer) {
    if (pointer != NULL) __atomic_fetch_add(&counters[LIVE_BYTES], malloc_usable_size(pointer), __ATOMIC_RELAXED);
    return pointer;
}

static void dying(void *pointer) {
    if (pointer != NULL) __atomic_fetch_sub(&counters[LIVE_BYTES], malloc_usable_size(pointer), __ATOMIC_RELAXED);
}

static void mapCounters(void) {
    const char *dir = getenv("PEREGRINE_TEST_MALLOC_COUNT_DIR");
    if (dir == NULL) return;
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%d.counts", dir, (int)getpid()) >= (int)sizeof path) return;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    size_t size = sizeof(uint64_t) * COUNTERS;
    if (ftruncate(fd, (off_t)size) == 0) {
        void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m != MAP_FAILED) {
            uint64_t *shared = m;
            for (int i = 0; i < COUNTERS; i++) shared[i] = __atomic_load_n(&counters[i], __ATOMIC_RELAXED);
            counters = shared;
        }
    }
    close(fd);
}

static void afterFork(void) {
    counters = fallback;
    memset(fallback, 0, sizeof fallback);
    mapCounters();
}

__attribute__((constructor)) static void start(void) {
    ssize_t n = readlink("/proc/self/exe", executable, sizeof executable - 1);
    if (n > 0) {
        executable[n] = 0;
        executableIsPython = isPythonName(executable);
    }
    mapCounters();
    pthread_atfork(NULL, NULL, afterFork);
}

void *malloc(size_t size) {
    count(__builtin_return_address(0), SERVER_ALLOCATIONS, PYTHON_ALLOCATIONS, size);
    return born(__libc_malloc(size));
}

void *calloc(size_t n, size_t size) {
    count(__builtin_return_address(0), SERVER_ALLOCATIONS, PYTHON_ALLOCATIONS, n * size);
    return born(__libc_calloc(n, size));
}

void *realloc(void *pointer, size_t size) {
    count(__builtin_return_address(0), SERVER_ALLOCATIONS, PYTHON_ALLOCATIONS, size);
    size_t before = pointer != NULL ? malloc_usable_size(pointer) : 0;
    void *moved = __libc_realloc(pointer, size);
    if (moved != NULL || size == 0) __atomic_fetch_sub(&counters[LIVE_BYTES], before, __ATOMIC_RELAXED);
    return born(moved);
}

void *memalign(size_t alignment, size_t size) {
    count(__builtin_return_address(0), SERVER_ALLOCATIONS, PYTHON_ALLOCATIONS, size);
    return born(__libc_memalign(alignment, size));
}

void *aligned_alloc(size_t alignment, size_t size) {
    count(__builtin_return_address(0), SERVER_ALLOCATIONS, PYTHON_ALLOCATIONS, size);
    return born(__libc_memalign(alignment, size));
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    count(__builtin_return_address(0), SERVER_ALLOCATIONS, PYTHON_ALLOCATIONS, size);
    void *p = __libc_memalign(alignment, size);
    if (p == NULL) return ENOMEM;
    *out = born(p);
    return 0;
}

void free(void *pointer) {
    if (pointer != NULL) count(__builtin_return_address(0), SERVER_FREES, PYTHON_FREES, 0);
    dying(pointer);
    __libc_free(pointer);
}
