#ifndef CSYS_LOGFILES_H
#define CSYS_LOGFILES_H
#include <stddef.h>
#include <stdint.h>

// Log files and their reopening (logrotate). The operator sends SIGUSR1 to
// the supervisor, which relays the reopen signal (SIGRTMIN+1) to each
// worker; a worker's handler only bumps a counter that every access-log
// writer compares before its next write (async-signal-safe, and no thread
// of the worker has to be woken or told).

// open(2) for appending: O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC, mode 0644 on
// create. -1 with errno on failure.
int csys_open_append(const char *path);
// The reopen signal, SIGRTMIN+1.
int csys_sig_reopen(void);
// Supervisor, before it spawns workers: block the reopen signal, so a
// worker started since inherits it blocked and a relay that reaches it
// before its handler exists waits instead of killing it (a real-time
// signal's default action is to terminate).
int csys_reopen_block(void);
// Worker: install the counting handler, then unblock the signal.
int csys_reopen_handler_install(void);
// How many reopen signals this process has received.
unsigned csys_reopen_generation(void);

// The wall clock's seconds (CLOCK_REALTIME).
int64_t csys_wall_seconds(void);
// `seconds` formatted: style 0 "2026-11-30 14:00:00 +0000" (UTC), style 1
// "[10/Oct/2000:13:55:36 -0700]" (local time, the common log format's).
// Returns the length written (without the NUL).
int csys_format_log_time(int64_t seconds, int style, char *out, size_t len);
#endif
