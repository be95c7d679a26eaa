#define _GNU_SOURCE
#include "csys_logfiles.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <time.h>

int csys_open_append(const char *path) {
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

int csys_sig_reopen(void) { return SIGRTMIN + 1; }

static volatile unsigned reopen_generation = 0;

static void on_reopen(int sig) {
    (void)sig;
    __atomic_add_fetch(&reopen_generation, 1, __ATOMIC_RELAXED);
}

int csys_reopen_block(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN + 1);
    return sigprocmask(SIG_BLOCK, &set, NULL);
}

int csys_reopen_handler_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_reopen;
    // Restart what the signal interrupts: the workers' loops treat EINTR
    // anyway, Python's blocking calls may not.
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGRTMIN + 1, &sa, NULL) != 0) return -1;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN + 1);
    return sigprocmask(SIG_UNBLOCK, &set, NULL);
}

unsigned csys_reopen_generation(void) { return __atomic_load_n(&reopen_generation, __ATOMIC_RELAXED); }

int64_t csys_wall_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec;
}

int csys_format_log_time(int64_t seconds, int style, char *out, size_t len) {
    time_t t = (time_t)seconds;
    struct tm tm;
    if (style == 1) {
        localtime_r(&t, &tm);
        return (int)strftime(out, len, "[%d/%b/%Y:%H:%M:%S %z]", &tm);
    }
    gmtime_r(&t, &tm);
    return (int)strftime(out, len, "%Y-%m-%d %H:%M:%S +0000", &tm);
}
