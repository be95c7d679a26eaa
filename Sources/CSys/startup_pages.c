// Giving back the file pages touched at start-up (see csys_startup_pages.h).
#define _GNU_SOURCE
#include "csys_startup_pages.h"

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// One /proc/self/smaps entry: its header line, then "Key: value kB" lines,
// the last of which is VmFlags (proc(5)); the mapping is judged there.
struct entry {
    uintptr_t start, end;
    int file;      // private and backed by a file that still exists
    int writable;
    long rss, anonymous;
};

static long field_kib(const char *line, const char *key) {
    size_t n = strlen(key);
    if (strncmp(line, key, n) != 0) return -1;
    return strtol(line + n, NULL, 10);
}

// "start-end perms offset dev inode   path". [heap], [stack], [vdso] and
// anonymous mappings have no leading '/'; shared mappings (perms[3] 's')
// are not this process's to judge.
static void parse_header(const char *line, struct entry *e) {
    char perms[8] = {0};
    int path_at = 0;
    unsigned long start = 0, end = 0;
    e->file = e->writable = 0;
    e->rss = e->anonymous = 0;
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &start, &end, perms, &path_at) < 3) return;
    e->start = (uintptr_t)start;
    e->end = (uintptr_t)end;
    const char *path = line + path_at;
    if (path_at == 0 || path[0] != '/' || strstr(path, " (deleted)") != NULL) return;
    e->file = perms[3] == 'p';
    e->writable = perms[1] == 'w';
}

// A header line starts with a hexadecimal address and has a '-' before any
// ':' (the field lines are "Key:  value").
static int is_header(const char *line) {
    const char *dash = strchr(line, '-');
    const char *colon = strchr(line, ':');
    return dash != NULL && (colon == NULL || dash < colon) &&
           ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f'));
}

// VmFlags "lo": locked (mlock), where MADV_DONTNEED would fail anyway.
static int is_locked(const char *flags) {
    for (const char *p = flags; p[0] != '\0' && p[1] != '\0'; p++) {
        if (p[0] == 'l' && p[1] == 'o' && (p == flags || p[-1] == ' ') && (p[2] == ' ' || p[2] == '\n' || p[2] == '\0'))
            return 1;
    }
    return 0;
}

// /proc/self/pagemap (Documentation/admin-guide/mm/pagemap.rst): one
// 64-bit word per virtual page; bit 63 "present", bit 61 "file page or
// shared anonymous". In a private file mapping a present page without bit
// 61 is a private (copied-on-write) copy.
#define PAGEMAP_PRESENT (1ULL << 63)
#define PAGEMAP_FILE (1ULL << 61)

// Drops the runs of present file pages of [start, end), keeping the
// private copies; returns the KiB dropped.
static long release_file_pages(int pagemap, uintptr_t start, uintptr_t end, size_t page) {
    uint64_t words[512];
    long released = 0;
    uintptr_t run = 0;  // start of the current run of file pages, 0: none
    uintptr_t at = start;  // pages before `at` have been read from pagemap
    while (at < end) {
        size_t count = (end - at) / page;
        if (count > 512) count = 512;
        ssize_t got = pread(pagemap, words, count * 8, (off_t)(at / page * 8));
        if (got < 8) break;  // the run ends at the last page read
        count = (size_t)got / 8;
        for (size_t i = 0; i < count; i++, at += page) {
            int file_page = (words[i] & (PAGEMAP_PRESENT | PAGEMAP_FILE)) == (PAGEMAP_PRESENT | PAGEMAP_FILE);
            if (file_page && run == 0) run = at;
            if (!file_page && run != 0) {
                if (madvise((void *)run, at - run, MADV_DONTNEED) == 0) released += (long)((at - run) / 1024);
                run = 0;
            }
        }
    }
    if (run != 0 && madvise((void *)run, at - run, MADV_DONTNEED) == 0) released += (long)((at - run) / 1024);
    return released;
}

// Whether this process has one thread (/proc/self/status "Threads:").
static int single_threaded(void) {
    FILE *status = fopen("/proc/self/status", "re");
    if (status == NULL) return 0;
    char line[256];
    long threads = 0;
    while (fgets(line, sizeof line, status) != NULL) {
        if (strncmp(line, "Threads:", 8) == 0) threads = strtol(line + 8, NULL, 10);
    }
    fclose(status);
    return threads == 1;
}

long csys_release_clean_file_pages(void) {
    FILE *smaps = fopen("/proc/self/smaps", "re");
    if (smaps == NULL) return -1;
    int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    // A writable mapping's file pages are dropped only when no other thread
    // runs and no signal handler can run (blocked here): between reading
    // that a page is the file's and dropping it, nothing may write to it.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int writable_too = single_threaded();
    char line[4096 + 256];
    struct entry e = {0};
    long released = 0;
    while (fgets(line, sizeof line, smaps) != NULL) {
        long v;
        if (is_header(line)) {
            parse_header(line, &e);
        } else if ((v = field_kib(line, "Rss:")) >= 0) {
            e.rss = v;
        } else if ((v = field_kib(line, "Anonymous:")) >= 0) {
            e.anonymous = v;
        } else if (strncmp(line, "VmFlags:", 8) == 0) {
            // Anonymous counts the private copies a write made; a page that
            // is not one is the file's page-cache page (maybe dirty, e.g. a
            // file the linker has just written: it stays in the page cache
            // and is written back as usual). madvise leaves the mappings as
            // they are (no split, no merge), so the rest of smaps reads the
            // same after it.
            if (!e.file || e.rss <= e.anonymous || is_locked(line + 8) || (e.writable && !writable_too)) continue;
            if (e.anonymous == 0 && !e.writable) {
                if (madvise((void *)e.start, e.end - e.start, MADV_DONTNEED) == 0) released += e.rss;
            } else if (pagemap >= 0) {
                released += release_file_pages(pagemap, e.start, e.end, page);
            }
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pagemap >= 0) close(pagemap);
    fclose(smaps);
    return released;
}
