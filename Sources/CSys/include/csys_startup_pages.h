// Giving back the file pages a process touched while it started (see
// StartupPages in Core and ARCHITECTURE.md, "Memory after start-up").
//
// Every first touch of a page of a mapped file (code, read-only data) maps
// the whole 64 KiB around it (the kernel's fault-around), and the start-up
// of a Swift executable that embeds CPython touches code in most blocks of
// the binary, libpython, libcrypto and the extension modules: several MiB
// of resident pages that no request uses again. madvise(MADV_DONTNEED) on a
// private file mapping drops this process's page-table entries; a page
// touched again is mapped again from the page cache, with the same bytes.
#ifndef PEREGRINE_CSYS_STARTUP_PAGES_H
#define PEREGRINE_CSYS_STARTUP_PAGES_H

// Drops the resident pages of /proc/self/smaps's private mappings of files
// that still exist (not locked) that are the file's own page-cache pages,
// so nothing is lost: all of a read-only mapping without anonymous
// (copied-on-write) pages; the file pages /proc/self/pagemap shows in a
// read-only one with some; and, when the process has one thread (signals
// are blocked meanwhile), those of writable mappings too. Returns the KiB
// dropped (a whole mapping counts its smaps Rss), or -1 when
// /proc/self/smaps cannot be read.
long csys_release_clean_file_pages(void);

#endif
