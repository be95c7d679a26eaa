// Shared-memory counters (see csys_metrics.h).
#define _GNU_SOURCE
#include "csys_metrics.h"

#include <sys/mman.h>
#include <unistd.h>

int csys_metrics_create(size_t words) {
    int fd = memfd_create("peregrine-metrics", MFD_CLOEXEC);
    if (fd < 0) return -1;
    if (ftruncate(fd, (off_t)(words * 8)) != 0) { close(fd); return -1; }
    return fd;
}

int64_t *csys_metrics_map(int fd, size_t words) {
    void *p = mmap(NULL, words * 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : (int64_t *)p;
}

long csys_clock_ticks_per_second(void) { return sysconf(_SC_CLK_TCK); }
long csys_page_bytes(void) { return sysconf(_SC_PAGESIZE); }
