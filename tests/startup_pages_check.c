// Driver for tests/test_startup_pages.py: csys_release_clean_file_pages
// (Sources/CSys/startup_pages.c) on mappings of a file this program made.
//
//   startup_pages_check FILE MODE
//
// FILE holds three pages: page i filled with the byte 'a' + i. MODE:
//   readonly  - mapped private read-only, all three pages read: after the
//               release none is resident and each still reads its bytes.
//   copied    - mapped private writable, page 1 written ('X'), then made
//               read-only: after the release only the written copy is
//               resident, and it still reads 'X'.
//   writable  - mapped private writable, page 1 written: the same, in a
//               single-threaded process.
//   threaded  - as writable, with a second thread alive: the writable
//               mapping is left as it is (all three pages resident).
// Prints "ok" and exits 0, or prints what differed and exits 1.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "csys_startup_pages.h"

static long resident_kib(void *start) {
    FILE *smaps = fopen("/proc/self/smaps", "r");
    char line[4352];
    int in = 0;
    long rss = -1;
    while (fgets(line, sizeof line, smaps) != NULL) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = a == (unsigned long)(uintptr_t)start;
        } else if (in && strncmp(line, "Rss:", 4) == 0) {
            rss = strtol(line + 4, NULL, 10);
            in = 0;
        }
    }
    fclose(smaps);
    return rss;
}

static void *idle_thread(void *arg) {
    (void)arg;
    pause();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    const char *mode = argv[2];
    long page = sysconf(_SC_PAGESIZE);
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror("open"); return 2; }
    int readonly = strcmp(mode, "readonly") == 0;
    unsigned char *map = mmap(NULL, 3 * page, readonly ? PROT_READ : PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) { perror("mmap"); return 2; }
    volatile unsigned sum = 0;
    for (int i = 0; i < 3; i++) sum += map[i * page];
    if (!readonly) map[page] = 'X';
    if (strcmp(mode, "copied") == 0) mprotect(map, 3 * page, PROT_READ);
    pthread_t thread;
    if (strcmp(mode, "threaded") == 0) pthread_create(&thread, NULL, idle_thread, NULL);
    long before = resident_kib(map);
    long released = csys_release_clean_file_pages();
    long after = resident_kib(map);  // read before any page of the mapping is touched again
    int failed = 0;
    long want = readonly ? 0 : strcmp(mode, "threaded") == 0 ? before : page / 1024;
    if (released <= 0) { printf("released %ld KiB\n", released); failed = 1; }
    if (after != want) { printf("resident %ld KiB before, %ld after, wanted %ld\n", before, after, want); failed = 1; }
    for (int i = 0; i < 3; i++) {
        unsigned char expected = (!readonly && i == 1) ? 'X' : (unsigned char)('a' + i);
        if (map[i * page] != expected || map[i * page + page - 1] != (i == 1 && !readonly ? 'b' : 'a' + i)) {
            printf("page %d reads %c...%c\n", i, map[i * page], map[i * page + page - 1]);
            failed = 1;
        }
    }
    if (!failed) puts("ok");
    return failed;
}
