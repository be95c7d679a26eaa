#define _GNU_SOURCE
#include "csys.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fnmatch.h>
#include <pthread.h>
#include <sched.h>
#include <sys/random.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/sendfile.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static void set_err(char *err, size_t errlen, const char *what, const char *detail) {
    if (err && errlen) snprintf(err, errlen, "%s: %s", what, detail);
}

int csys_listen_tcp(const char *host, int port, int backlog, char *err, size_t errlen) {
    struct addrinfo hints, *res = NULL, *ai;
    char portstr[16];
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(portstr, sizeof portstr, "%d", port);
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0) {
        set_err(err, errlen, "cannot resolve host", gai_strerror(rc));
        errno = EINVAL;
        return -1;
    }
    int fd = -1, saved = 0;
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) { saved = errno; continue; }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (ai->ai_family == AF_INET6) {
            int zero = 0;  // "::" also accepts IPv4, as users expect of a wildcard
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        }
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog) == 0) break;
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        set_err(err, errlen, "cannot listen", strerror(saved));
        errno = saved;
    }
    return fd;
}

int csys_listen_unix(const char *path, int backlog, char *err, size_t errlen) {
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path) {
        set_err(err, errlen, "unix socket path too long", path);
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) { set_err(err, errlen, "socket", strerror(errno)); return -1; }
    // A stale socket file from an earlier run would make bind fail; remove it
    // only if it is a socket nobody listens on.
    struct stat st;
    if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (probe >= 0) {
            if (connect(probe, (struct sockaddr *)&sa, sizeof sa) != 0) unlink(path);
            close(probe);
        }
    }
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, backlog) != 0) {
        int saved = errno;
        set_err(err, errlen, "cannot listen", strerror(saved));
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int csys_local_port(int fd) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) return -1;
    if (ss.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return 0;
}

static void format_addr(const struct sockaddr_storage *ss, char *addr, size_t addrlen, int *port, int *is_unix) {
    if (addrlen) addr[0] = 0;
    *port = 0;
    if (is_unix) *is_unix = 0;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &sin->sin_addr, addr, (socklen_t)addrlen);
        *port = ntohs(sin->sin_port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
        if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
            inet_ntop(AF_INET, &sin6->sin6_addr.s6_addr[12], addr, (socklen_t)addrlen);
        } else {
            inet_ntop(AF_INET6, &sin6->sin6_addr, addr, (socklen_t)addrlen);
        }
        *port = ntohs(sin6->sin6_port);
    } else if (is_unix) {
        *is_unix = 1;
    }
}

int csys_accept(int listen_fd, char *addr, size_t addrlen, int *port, int *is_unix, unsigned char *raw,
                int *raw_len) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    int fd = accept4(listen_fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return -1;
    format_addr(&ss, addr, addrlen, port, is_unix);
    *raw_len = 0;
    if (ss.ss_family == AF_INET) {
        memcpy(raw, &((const struct sockaddr_in *)&ss)->sin_addr, 4);
        *raw_len = 4;
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&ss;
        if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
            memcpy(raw, &sin6->sin6_addr.s6_addr[12], 4);
            *raw_len = 4;
        } else {
            memcpy(raw, &sin6->sin6_addr, 16);
            *raw_len = 16;
        }
    }
    if (!*is_unix) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return fd;
}

int csys_local_address(int fd, char *addr, size_t addrlen, int *port) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) return -1;
    format_addr(&ss, addr, addrlen, port, NULL);
    return 0;
}

int csys_errno(void) { return errno; }
const char *csys_strerror(int err) { return strerror(err); }
int csys_eagain(int err) { return err == EAGAIN || err == EWOULDBLOCK; }
int csys_eintr(int err) { return err == EINTR; }
int csys_eaddrinuse(int err) { return err == EADDRINUSE; }

int csys_accept_failure(int err) {
    switch (err) {
    case EAGAIN:
#if EWOULDBLOCK != EAGAIN
    case EWOULDBLOCK:
#endif
        return 0;
    // accept(2), Linux notes: errors already pending on the new socket are
    // passed on by accept; "treat them like EAGAIN by retrying".
    case EINTR: case ECONNABORTED: case EPROTO: case EPERM: case ENETDOWN: case ENOPROTOOPT:
    case EHOSTDOWN: case ENONET: case EHOSTUNREACH: case EOPNOTSUPP: case ENETUNREACH: case ETIMEDOUT:
        return 1;
    case EMFILE: return 2;
    case ENFILE: return 3;
    case ENOMEM: return 4;
    case ENOBUFS: return 5;
    // Linux: "Socket is not listening for connections": the supervisor shut
    // the shared listener down (shutdown(2)) because the server is stopping.
    case EINVAL: return 7;
    default: return 6;
    }
}

static int accept_shortages;
int csys_accept_shortage_enter(void) { return __atomic_fetch_add(&accept_shortages, 1, __ATOMIC_RELAXED); }
int csys_accept_shortage_leave(void) { return __atomic_sub_fetch(&accept_shortages, 1, __ATOMIC_RELAXED); }

long csys_read(int fd, void *buf, size_t len) { return read(fd, buf, len); }
long csys_pread(int fd, void *buf, size_t len, int64_t offset) { return pread(fd, buf, len, (off_t)offset); }
long csys_write(int fd, const void *buf, size_t len) { return send(fd, buf, len, MSG_NOSIGNAL); }
long csys_writev(int fd, const struct iovec *iov, int count) {
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = (struct iovec *)iov;
    msg.msg_iovlen = (size_t)count;
    return sendmsg(fd, &msg, MSG_NOSIGNAL);
}
long csys_sendfile(int out_fd, int in_fd, int64_t *offset, size_t count) {
    off_t off = (off_t)*offset;
    ssize_t n = sendfile(out_fd, in_fd, &off, count);
    *offset = (int64_t)off;
    return n;
}
int csys_close(int fd) { return close(fd); }
int csys_shutdown_write(int fd) { return shutdown(fd, SHUT_WR); }

int csys_poll_one(int fd, int events, int timeout_ms) {
    struct pollfd p = {.fd = fd, .events = 0, .revents = 0};
    if (events & 1) p.events |= POLLIN;
    if (events & 2) p.events |= POLLOUT;
    for (;;) {
        int rc = poll(&p, 1, timeout_ms);
        if (rc < 0 && errno == EINTR) continue;
        return rc > 0 ? 1 : rc;
    }
}

int64_t csys_regular_file_size(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return -1;
    return (int64_t)st.st_size;
}
int64_t csys_file_offset(int fd) { return (int64_t)lseek(fd, 0, SEEK_CUR); }

int csys_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

static uint32_t to_epoll(int events, int edge) {
    uint32_t e = 0;
    if (events & 8) e |= EPOLLRDHUP;
    if (events & 1) e |= EPOLLIN;
    if (events & 2) e |= EPOLLOUT;
    if (edge) e |= EPOLLET;
    return e;
}
int csys_epoll_add(int epfd, int fd, uint64_t token, int events, int edge) {
    struct epoll_event ev = {.events = to_epoll(events, edge), .data.u64 = token};
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}
int csys_epoll_mod(int epfd, int fd, uint64_t token, int events, int edge) {
    struct epoll_event ev = {.events = to_epoll(events, edge), .data.u64 = token};
    return epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev);
}
int csys_epoll_del(int epfd, int fd) { return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL); }

int csys_epoll_wait(int epfd, csys_event *events, int max, int timeout_ms) {
    struct epoll_event raw[256];
    if (max > 256) max = 256;
    int n = epoll_wait(epfd, raw, max, timeout_ms);
    if (n < 0) return errno == EINTR ? 0 : -1;
    for (int i = 0; i < n; i++) {
        uint32_t e = 0;
        if (raw[i].events & EPOLLIN) e |= 1;
        if (raw[i].events & EPOLLOUT) e |= 2;
        if (raw[i].events & (EPOLLERR | EPOLLHUP)) e |= 4;
        if (raw[i].events & EPOLLRDHUP) e |= 1 | 8;
        events[i].token = raw[i].data.u64;
        events[i].events = e;
    }
    return n;
}

int64_t csys_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
// CPU time the calling thread has used (a system call, unlike the vDSO's
// monotonic clock: read it only where a reading serves many events).
int64_t csys_thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
int64_t csys_realtime_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    return (int64_t)ts.tv_sec;
}

void csys_http_date(int64_t unix_seconds, char out[29]) {
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t t = (time_t)unix_seconds;
    struct tm tm;
    gmtime_r(&t, &tm);
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday], tm.tm_mday,
             months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    memcpy(out, tmp, 29);
}

// SIGUSR2 asks for one stats line (supervisor: relayed to every worker;
// worker: logged). Blocked with the stop signals and read where they are
// (signalfd, or the WSGI signal thread): its default action would end the
// process.
static void add_stats_signal(sigset_t *set) { sigaddset(set, SIGUSR2); }

int csys_signalfd_open(int with_child) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    add_stats_signal(&set);
    if (with_child) sigaddset(&set, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) return -1;
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

int csys_signalfd_read(int fd) {
    struct signalfd_siginfo info;
    ssize_t n = read(fd, &info, sizeof info);
    if (n != (ssize_t)sizeof info) return 0;
    return (int)info.ssi_signo;
}

void csys_ignore_sigpipe(void) { signal(SIGPIPE, SIG_IGN); }
int csys_getpid(void) { return (int)getpid(); }
void csys_exit(int status) { _exit(status); }

long csys_write_plain(int fd, const void *buf, size_t len) { return write(fd, buf, len); }

void csys_log_time(char *out, size_t len) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    strftime(out, len, "%Y-%m-%d %H:%M:%S +0000", &tm);
}

long csys_write2(int fd, const void *a, size_t alen, const void *b, size_t blen) {
    // One buffer (the usual small response): send(2) spares the kernel
    // copying in and checking a msghdr and an iovec array.
    if (!blen) return send(fd, a, alen, MSG_NOSIGNAL);
    if (!alen) return send(fd, b, blen, MSG_NOSIGNAL);
    struct iovec iov[2] = {{(void *)a, alen}, {(void *)b, blen}};
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = iov;
    msg.msg_iovlen = 2;
    return sendmsg(fd, &msg, MSG_NOSIGNAL);
}

const char *csys_getenv(const char *name) { return getenv(name); }
int csys_file_exists(const char *path) { struct stat st; return stat(path, &st) == 0; }
int csys_dup(int fd) { return fcntl(fd, F_DUPFD_CLOEXEC, 0); }
int csys_open_read(const char *path) { return open(path, O_RDONLY | O_CLOEXEC); }

int csys_sig_int(void) { return SIGINT; }
int csys_sig_term(void) { return SIGTERM; }
int csys_sig_hup(void) { return SIGHUP; }
int csys_sig_usr1(void) { return SIGUSR1; }
int csys_sig_usr2(void) { return SIGUSR2; }
int csys_sig_chld(void) { return SIGCHLD; }
int csys_sig_kill(void) { return SIGKILL; }

int csys_spawn(const char *exe, char *const argv[], const int *keep, int nkeep) {
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) return pid;
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);  // the supervisor died before prctl
    for (int i = 0; i < nkeep; i++) {
        int flags = fcntl(keep[i], F_GETFD);
        if (flags >= 0) fcntl(keep[i], F_SETFD, flags & ~FD_CLOEXEC);
    }
    // Swift's crash backtracer catches SIGSEGV and friends; a signal sent
    // with kill() would then be survived. A worker must die of it, so the
    // supervisor can see the signal and replace it.
    setenv("SWIFT_BACKTRACE", "enable=no", 0);
    // The supervisor takes SIGCHLD through its signalfd; a worker's
    // application may need it delivered normally.
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_UNBLOCK, &chld, NULL);
    execv(exe, argv);
    _exit(127);
}

int csys_reap(int *exit_status, int *signal) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return pid;
    *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    *signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return pid;
}

int csys_wait(int pid, int *exit_status, int *signal) {
    int status = 0;
    pid_t r;
    do r = waitpid(pid, &status, 0);
    while (r < 0 && errno == EINTR);
    if (r <= 0) return -1;
    *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    *signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return 0;
}

int csys_kill(int pid, int sig) { return kill(pid, sig); }

void csys_sleep_milliseconds(int ms) {
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

int csys_pipe(int fds[2]) {
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    return 0;
}

int csys_cpu_count(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int csys_self_exe(char *out, size_t len) {
    ssize_t n = readlink("/proc/self/exe", out, len - 1);
    if (n < 0) return -1;
    out[n] = 0;
    return 0;
}

int csys_inotify_open(void) { return inotify_init1(IN_NONBLOCK | IN_CLOEXEC); }

int csys_inotify_watch(int fd, const char *dir) {
    return inotify_add_watch(fd, dir, IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM);
}

int csys_inotify_read(int fd, int *wds, int *is_dir, char *names, size_t names_len, int max) {
    char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    int count = 0;
    size_t used = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) break;
        for (char *p = buf; p < buf + n;) {
            struct inotify_event *ev = (struct inotify_event *)p;
            p += sizeof(struct inotify_event) + ev->len;
            if (count >= max) continue;
            const char *name = ev->len ? ev->name : "";
            size_t l = strlen(name) + 1;
            if (used + l > names_len) continue;
            memcpy(names + used, name, l);
            used += l;
            wds[count] = ev->wd;
            is_dir[count] = (ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO)) ? 1 : 0;
            count++;
        }
    }
    return count;
}

unsigned csys_random(void) {
    unsigned r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) r = (unsigned)getpid() * 2654435761u;
    return r;
}

int csys_export_random_secret(const char *name, size_t len) {
    static const char digits[] = "0123456789abcdef";
    unsigned char bytes[64];
    char hex[2 * sizeof bytes + 1];
    if (len > sizeof bytes) return -1;
    // getrandom(2) without GRND_NONBLOCK: a secret waits for an
    // initialised entropy pool rather than being weak.
    for (size_t got = 0; got < len;) {
        ssize_t n = getrandom(bytes + got, len - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        got += (size_t)n;
    }
    for (size_t i = 0; i < len; i++) {
        hex[2 * i] = digits[bytes[i] >> 4];
        hex[2 * i + 1] = digits[bytes[i] & 15];
    }
    hex[2 * len] = 0;
    int r = setenv(name, hex, 1);
    explicit_bzero(bytes, sizeof bytes);
    explicit_bzero(hex, sizeof hex);
    return r;
}

int csys_fnmatch(const char *pattern, const char *name) { return fnmatch(pattern, name, 0) == 0; }

int csys_inotify_watch_tree(int fd, const char *root) {
    int added = 0;
    if (csys_inotify_watch(fd, root) >= 0) added++;
    DIR *d = opendir(root);
    if (!d) return added;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "__pycache__") == 0 || strcmp(e->d_name, "node_modules") == 0) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", root, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) added += csys_inotify_watch_tree(fd, path);
    }
    closedir(d);
    return added;
}

// The WSGI worker's signal thread (see csys.h).
static int sig_notify_fd = -1;
static long sig_graceful_ms = 0;
static volatile int sig_pending = 0;
static volatile int sig_seen = 0;
static volatile int sig_stats = 0;

static void *signal_thread(void *arg) {
    (void)arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGHUP);
    add_stats_signal(&set);
    int stopping = 0;
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0) continue;
        if (sig == SIGHUP) continue;
        if (sig == SIGUSR2) {
            __atomic_store_n(&sig_stats, 1, __ATOMIC_SEQ_CST);
            char b = 2;
            if (write(sig_notify_fd, &b, 1) < 0) {}
            continue;
        }
        if (stopping) {
            if (sig == SIGUSR1) continue;
            _exit(0);  // a second stop signal: at once
        }
        stopping = 1;
        __atomic_store_n(&sig_seen, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&sig_pending, sig, __ATOMIC_SEQ_CST);
        char b = 1;
        if (write(sig_notify_fd, &b, 1) < 0) {}
        // The main thread may be inside a WSGI call that does not return;
        // this thread ends the process at the graceful deadline instead.
        struct timespec ts = {sig_graceful_ms / 1000, (sig_graceful_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
        _exit(0);
    }
    return NULL;
}

int csys_signal_thread_start(int notify_fd, long graceful_ms) {
    sig_notify_fd = notify_fd;
    sig_graceful_ms = graceful_ms;
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, signal_thread, NULL);
    pthread_attr_destroy(&attr);
    return rc;
}

int csys_signal_thread_take(void) { return __atomic_exchange_n(&sig_pending, 0, __ATOMIC_SEQ_CST); }

int csys_signal_thread_seen(void) { return __atomic_load_n(&sig_seen, __ATOMIC_RELAXED); }

int csys_signal_thread_take_stats(void) { return __atomic_exchange_n(&sig_stats, 0, __ATOMIC_SEQ_CST); }

int csys_block_stop_signals(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    add_stats_signal(&set);
    return sigprocmask(SIG_BLOCK, &set, NULL);
}

int csys_shutdown_listener(int fd) { return shutdown(fd, SHUT_RDWR); }
void csys_yield(void) { sched_yield(); }

int csys_board_create(int slots) {
    int fd = memfd_create("peregrine-board", MFD_CLOEXEC);
    if (fd < 0) return -1;
    if (ftruncate(fd, (off_t)slots * 8) != 0) { close(fd); return -1; }
    return fd;
}

int64_t *csys_board_map(int fd, int slots) {
    void *p = mmap(NULL, (size_t)slots * 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : (int64_t *)p;
}

void csys_board_store(int64_t *board, int slot, int64_t value) { __atomic_store_n(&board[slot], value, __ATOMIC_RELAXED); }
int64_t csys_board_load(int64_t *board, int slot) { return __atomic_load_n(&board[slot], __ATOMIC_RELAXED); }

void *csys_pages_map(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}
void csys_pages_unmap(void *p, size_t bytes) { munmap(p, bytes); }
void csys_pages_discard(void *p, size_t bytes) { madvise(p, bytes, MADV_DONTNEED); }

long csys_rss_bytes(void) {
    // /proc/self/statm: size resident shared text lib data dt, in pages.
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buf[128];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    long size = 0, resident = 0;
    if (sscanf(buf, "%ld %ld", &size, &resident) != 2) return -1;
    return resident * sysconf(_SC_PAGESIZE);
}
