// CSys: the few system calls the server makes, with C-friendly shapes so the
// Swift side never handles sockaddr unions, errno macros or varargs.
// Every function returns -1 and leaves errno set on failure unless noted.
#ifndef PEREGRINE_CSYS_H
#define PEREGRINE_CSYS_H

#include <stddef.h>
#include <stdint.h>
// Only stdint/stddef here: system headers pulled in through this module
// would clash with the same headers seen through Python.h (which compiles
// them with other feature macros) in any Swift module that imports both.
struct iovec;

// Listening sockets. The error text (if any) goes to `err` (NUL-terminated).
int csys_listen_tcp(const char *host, int port, int backlog, char *err, size_t errlen);
int csys_listen_unix(const char *path, int backlog, char *err, size_t errlen);
// Bound local port of a socket (for --port 0), or -1.
int csys_local_port(int fd);

// Accepted connection, non-blocking and close-on-exec, TCP_NODELAY set on TCP.
// The peer's address is written as text to `addr` and its port to `*port`
// (0 and an empty string for a unix-socket peer); `*is_unix` tells which.
// The address in network order goes to `raw` (16 bytes of room): `*raw_len`
// is 4 for IPv4 (an IPv4-mapped IPv6 peer included, as in the text), 16 for
// IPv6, 0 for a unix-socket peer.
int csys_accept(int listen_fd, char *addr, size_t addrlen, int *port, int *is_unix, unsigned char *raw,
                int *raw_len);
// The local address of an accepted socket as text (for SERVER_NAME defaults).
int csys_local_address(int fd, char *addr, size_t addrlen, int *port);

int csys_errno(void);
const char *csys_strerror(int err);
int csys_eagain(int err);   // EAGAIN or EWOULDBLOCK
// What an accept(2) errno means for the accepting loop (see Core's
// AcceptFailure): 0 queue empty (EAGAIN), 1 that one connection was lost
// (EINTR, ECONNABORTED, EPROTO, EPERM and the network errors accept(2) passes
// on), 2 EMFILE, 3 ENFILE, 4 ENOMEM, 5 ENOBUFS, 7 EINVAL (the socket was shut
// down: no longer listening), 6 anything else.
int csys_accept_failure(int err);
// Worker contexts of this process inside an accept shortage (descriptors are
// the process's, so the contexts meet one together): `enter` returns the
// count before, `leave` the count after (atomic).
int csys_accept_shortage_enter(void);
int csys_accept_shortage_leave(void);
int csys_eintr(int err);
int csys_eaddrinuse(int err);

long csys_read(int fd, void *buf, size_t len);
/// read(2) at an offset, leaving the file position alone.
long csys_pread(int fd, void *buf, size_t len, int64_t offset);
long csys_write(int fd, const void *buf, size_t len);
long csys_writev(int fd, const struct iovec *iov, int count);
// writev of two buffers (a response head and a body block): one syscall.
long csys_write2(int fd, const void *a, size_t alen, const void *b, size_t blen);
// sendfile(2) from `in_fd` at `*offset`; advances `*offset`.
long csys_sendfile(int out_fd, int in_fd, int64_t *offset, size_t count);
int csys_close(int fd);
int csys_dup(int fd);
// open(2) read-only, close-on-exec.
int csys_open_read(const char *path);
int csys_shutdown_write(int fd);
// Wait until `fd` is readable (events=1) or writable (events=2); returns
// 1 ready, 0 timeout, -1 error. `timeout_ms` < 0 waits forever.
int csys_poll_one(int fd, int events, int timeout_ms);
/* Sleeps this long (no signal handling: interrupted sleeps end early). */
void csys_sleep_milliseconds(int ms);
// The regular-file size of `fd`, or -1 if it is not a regular file.
int64_t csys_regular_file_size(int fd);
int64_t csys_file_offset(int fd);

// epoll. Event bits: 1 readable, 2 writable, 4 hang-up/error, 8 peer shut
// down its side (EPOLLRDHUP; reported only when asked for).
int csys_epoll_create(void);
int csys_epoll_add(int epfd, int fd, uint64_t token, int events, int edge);
int csys_epoll_mod(int epfd, int fd, uint64_t token, int events, int edge);
int csys_epoll_del(int epfd, int fd);
typedef struct { uint64_t token; uint32_t events; uint32_t _pad; } csys_event;
int csys_epoll_wait(int epfd, csys_event *events, int max, int timeout_ms);

// Clocks.
int64_t csys_monotonic_ns(void);
int64_t csys_thread_cpu_ns(void);
int64_t csys_realtime_s(void);
// IMF-fixdate (RFC 9110 §5.6.7) for a Unix time, 29 bytes written to out.
void csys_http_date(int64_t unix_seconds, char out[29]);

// Signals: SIGINT/SIGTERM/SIGHUP/SIGUSR1 (and SIGCHLD with `with_child`)
// are blocked and delivered through a signalfd, so the event loop sees them
// as readable events; SIGPIPE ignored.
int csys_signalfd_open(int with_child);
int csys_sig_int(void);
int csys_sig_term(void);
int csys_sig_hup(void);
int csys_sig_usr1(void);
int csys_sig_chld(void);
int csys_sig_kill(void);

// Processes (the supervisor side).
// fork + exec `exe` with `argv` (NULL-terminated). The child gets its own
// process group (terminal signals go to the supervisor only), is sent
// SIGTERM if the supervisor dies, and keeps the descriptors in `keep`
// open across exec (all others are close-on-exec). Returns the pid or -1.
int csys_spawn(const char *exe, char *const argv[], const int *keep, int nkeep);
// A child that has exited: its pid (0 if none, -1 on error), with either
// its exit status or the signal that killed it.
int csys_reap(int *exit_status, int *signal);
// Waits for child `pid` to end: 0 with its exit status or signal, or -1.
int csys_wait(int pid, int *exit_status, int *signal);
int csys_kill(int pid, int sig);
// Random bits for jitter (not for secrets).
unsigned csys_random(void);
// `len` (<= 64) random bytes from getrandom(2), set hex-encoded as the
// environment variable `name` (inherited by processes spawned after).
int csys_export_random_secret(const char *name, size_t len);
// pipe2 with O_CLOEXEC; read end non-blocking.
int csys_pipe(int fds[2]);
// CPUs this process may run on.
int csys_cpu_count(void);
void csys_yield(void);

// Load board shared by the supervisor and its workers: one 64-bit slot per
// worker holding its open-connection count (INT64_MAX: not accepting).
// The supervisor creates it (a memfd, inherited by workers) and maps it.
int csys_board_create(int slots);

/// Whole pages for buffer-pool blocks: mapped, unmapped, and emptied
/// (madvise DONTNEED: the memory goes back to the system, the mapping stays
/// and reads as zeros when touched again).
void *csys_pages_map(size_t bytes);
void csys_pages_unmap(void *p, size_t bytes);
void csys_pages_discard(void *p, size_t bytes);
int64_t *csys_board_map(int fd, int slots);
void csys_board_store(int64_t *board, int slot, int64_t value);
int64_t csys_board_load(int64_t *board, int slot);
// The path of the running executable (/proc/self/exe), into out.
int csys_self_exe(char *out, size_t len);

// inotify: a non-blocking instance, watches, and the next event's name.
int csys_inotify_open(void);
int csys_inotify_watch(int fd, const char *dir);
// Reads pending events; returns how many, writing up to `max` watch
// descriptors/names (names joined in `names`, each NUL-terminated) and
// flagging directories created (to be watched too).
// Watches `root` and every directory below it (skipping hidden ones,
// __pycache__ and node_modules); returns the number of watches added.
int csys_inotify_watch_tree(int fd, const char *root);
int csys_fnmatch(const char *pattern, const char *name);
int csys_inotify_read(int fd, int *wds, int *is_dir, char *names, size_t names_len, int max);
// Reads one pending signal number from the signalfd, or 0 if none.
int csys_signalfd_read(int fd);
void csys_ignore_sigpipe(void);

int csys_getpid(void);
// getenv, NULL if unset.
const char *csys_getenv(const char *name);
int csys_file_exists(const char *path);
void csys_exit(int status) __attribute__((noreturn));
// WSGI workers take SIGTERM/SIGINT/SIGUSR1 on a thread of their own, since
// the main thread may be inside an application call: the thread records the
// signal (csys_signal_thread_take), writes a byte to `notify_fd` for the
// main loop, and ends the process (status 0) once `graceful_ms` have
// passed; a second stop signal ends it at once. Block the signals first
// (csys_block_stop_signals) so no other thread receives them.
int csys_signal_thread_start(int notify_fd, long graceful_ms);
int csys_signal_thread_take(void);
// Nonzero once a stop signal has arrived (even while the main thread is
// still inside an application call and has not taken it).
int csys_signal_thread_seen(void);
// Nonzero once per SIGUSR2 the signal thread took (stats; never a stop).
int csys_signal_thread_take_stats(void);
int csys_block_stop_signals(void);
int csys_sig_usr2(void);
// This process's resident set size in bytes (/proc/self/statm), or -1.
long csys_rss_bytes(void);
// shutdown(2) of a listening socket: it refuses new connections at once, in
// every process that shares it.
int csys_shutdown_listener(int fd);



// Plain write(2) for log output (stderr/stdout are not sockets).
long csys_write_plain(int fd, const void *buf, size_t len);
// "2026-11-30 14:00:00 +0000" (UTC) into out.
void csys_log_time(char *out, size_t len);

// The WSGI pool's hand-off primitives.
#include "csys_handoff.h"
// UDP sockets, batches and steering for QUIC.
#include "csys_udp.h"
// Log files, their reopen signal, log time stamps.
#include "csys_logfiles.h"
// The file pages touched at start-up, given back once serving.
#include "csys_startup_pages.h"
// Where the thread's allocations should go (the worker's malloc reads it).
#include "csys_allocation_zone.h"
#endif
