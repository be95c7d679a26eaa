/* openloop: options, the fixed-rate schedule, the event loop and the report (see README.md). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "load.h"

struct load g;
static volatile sig_atomic_t stopping;
static unsigned notes;

int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void note(const struct conn *c, const char *what) {
    if (notes++ < 20) {
        fprintf(stderr, "openloop: connection %d: %s\n", c->id, what);
    }
}

static double cpu_seconds(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
           (double)u.ru_stime.tv_usec / 1e6;
}

void request_ended(int64_t intended, int status, int64_t now) {
    if (now >= g.t_measure && now < g.t_end && status >= 200) {
        g.completed_in_window++;
    }
    if (intended < g.t_measure || intended >= g.t_end) {
        return; /* warm-up, or the drain after the window */
    }
    g.done++;
    if (status == 0) {
        return; /* failed: counted in errors where it failed */
    }
    g.status[status / 100 < 6 ? status / 100 : 0]++;
    /* wrk2's correction for coordinated omission: from when the request was due, not when it was written. */
    histogram_record(&g.latency, (uint64_t)(now - intended) / 1000);
}

static void on_signal(int signal) {
    (void)signal;
    stopping = 1;
}

static int usage(void) {
    fputs("usage: openloop -R RATE [-c CONNECTIONS] [-d SECONDS] [-w WARMUP_SECONDS] [-t TIMEOUT_SECONDS] [-q]\n"
          "                http://HOST:PORT/PATH   (HOST an address literal: 127.0.0.1 or [::1])\n",
          stderr);
    return 2;
}

static int parse_url(const char *url) {
    const char *p = url;
    if (strncmp(p, "http://", 7) != 0) {
        return -1;
    }
    p += 7;
    char host[64];
    const char *end;
    if (*p == '[') {
        end = strchr(p, ']');
        if (end == NULL || end - p - 1 >= (long)sizeof(host)) return -1;
        memcpy(host, p + 1, (size_t)(end - p - 1));
        host[end - p - 1] = 0;
        end++;
    } else {
        end = p + strcspn(p, ":/");
        if (end - p >= (long)sizeof(host)) return -1;
        memcpy(host, p, (size_t)(end - p));
        host[end - p] = 0;
    }
    if (*end != ':') return -1;
    char *after;
    long port = strtol(end + 1, &after, 10);
    if (port <= 0 || port > 65535 || (*after != '/' && *after != 0)) return -1;
    const char *path = *after == '/' ? after : "/";
    memset(&g.addr, 0, sizeof(g.addr));
    struct sockaddr_in *v4 = (struct sockaddr_in *)&g.addr;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&g.addr;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        g.addrlen = sizeof(*v4);
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        g.addrlen = sizeof(*v6);
    } else {
        return -1;
    }
    int n = snprintf(g.request, sizeof(g.request), "GET %s HTTP/1.1\r\nHost: %.*s\r\n\r\n", path,
                     (int)(after - (url + 7)), url + 7);
    if (n <= 0 || (size_t)n >= sizeof(g.request)) return -1;
    g.request_len = (size_t)n;
    return 0;
}

/* Waits for events until `until` (ns on the monotonic clock; epoll_pwait2's nanosecond timeout, so a request is
 * written when it is due, not at the next millisecond). */
static int wait_until(struct epoll_event *events, int max, int64_t until) {
    int64_t left = until - now_ns();
    if (left < 0) left = 0;
    struct timespec timeout = {.tv_sec = left / 1000000000LL, .tv_nsec = left % 1000000000LL};
    return epoll_pwait2(g.epfd, events, max, &timeout, NULL);
}

static void report(double rate, double seconds, double cpu) {
    const double qs[] = {0.5, 0.9, 0.99, 0.999};
    const char *names[] = {"p50", "p90", "p99", "p99_9"};
    printf("{\"connections\": %d, \"rate\": %.1f, \"seconds\": %.3f, \"scheduled\": %llu, \"requests\": %llu, "
           "\"rps\": %.1f, \"status\": {\"2xx\": %llu, \"3xx\": %llu, \"4xx\": %llu, \"5xx\": %llu}, "
           "\"errors\": %llu, \"dropped\": %llu, \"reconnects\": %llu, \"pipelining\": %s, \"fallbacks\": %llu, "
           "\"latency_us\": {",
           g.nconns, rate, seconds, (unsigned long long)g.scheduled, (unsigned long long)g.latency.total,
           seconds > 0 ? (double)g.completed_in_window / seconds : 0.0, (unsigned long long)g.status[2],
           (unsigned long long)g.status[3], (unsigned long long)g.status[4], (unsigned long long)g.status[5],
           (unsigned long long)g.errors, (unsigned long long)g.dropped, (unsigned long long)g.reconnects,
           g.pipelining ? "true" : "false", (unsigned long long)g.fallbacks);
    for (int i = 0; i < 4; i++) {
        printf("\"%s\": %llu, ", names[i], (unsigned long long)histogram_quantile(&g.latency, qs[i]));
    }
    printf("\"max\": %llu}, \"send_lag_us\": {\"p99\": %llu, \"max\": %llu}, \"cpu_seconds\": %.4f}\n",
           (unsigned long long)g.latency.max, (unsigned long long)histogram_quantile(&g.send_lag, 0.99),
           (unsigned long long)g.send_lag.max, cpu);
}

int main(int argc, char **argv) {
    double rate = 0, seconds = 10, warmup = 2, timeout = 5;
    int nconns = 64, opt;
    while ((opt = getopt(argc, argv, "R:c:d:w:t:q")) != -1) {
        switch (opt) {
        case 'R': rate = atof(optarg); break;
        case 'c': nconns = atoi(optarg); break;
        case 'd': seconds = atof(optarg); break;
        case 'w': warmup = atof(optarg); break;
        case 't': timeout = atof(optarg); break;
        case 'q': g.queue_only = 1; break;
        default: return usage();
        }
    }
    if (optind != argc - 1 || rate <= 0 || nconns < 1 || seconds <= 0 || warmup < 0 || timeout <= 0 ||
        parse_url(argv[optind]) < 0) {
        return usage();
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    prctl(PR_SET_TIMERSLACK, 1UL); /* wake when a request is due, not up to 50 µs later */
    /* The warm-up counts from here, as the harness's clock does (it reads the server's CPU time `-w` seconds after
     * starting openloop): connecting and the pipelining probe are part of the warm-up. */
    int64_t t_start = now_ns();
    g.nconns = nconns;
    g.timeout_ns = (int64_t)(timeout * 1e9);
    g.conns = calloc((size_t)nconns, sizeof(struct conn));
    g.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (g.conns == NULL || g.epfd < 0) {
        perror("openloop");
        return 1;
    }
    g.t_measure = g.t_end = INT64_MAX; /* nothing is measured while connecting */
    for (int i = 0; i < nconns; i++) {
        g.conns[i].id = i;
        g.conns[i].queueing = g.queue_only;
        if (conn_open(&g.conns[i]) < 0) {
            perror("openloop: connect");
            return 1;
        }
    }
    /* Every connection is up before the schedule starts (the connect is not part of any request's latency). */
    int64_t limit = now_ns() + g.timeout_ns;
    struct epoll_event events[256];
    for (int up = 0; up < nconns && !stopping;) {
        int n = epoll_wait(g.epfd, events, 256, 100);
        for (int i = 0; i < n; i++) {
            if (events[i].data.ptr != NULL) conn_event(events[i].data.ptr, events[i].events);
        }
        up = 0;
        for (int i = 0; i < nconns; i++) up += g.conns[i].connected;
        if (now_ns() > limit) {
            fprintf(stderr, "openloop: %d of %d connections up after %.0f s\n", up, nconns, timeout);
            return 1;
        }
    }
    /* Does the server answer pipelined requests (RFC 9112 §9.3.2)? One that loses them would shift every later
     * response onto the wrong request; this run then writes one request at a time on every connection. */
    if (!g.queue_only && !stopping) {
        g.pipelining = conn_probe_pipelining(&g.conns[0]);
        if (!g.pipelining) {
            fprintf(stderr, "openloop: the server did not answer two pipelined requests: one request at a time\n");
            g.queue_only = 1;
            for (int i = 0; i < nconns; i++) g.conns[i].queueing = 1;
        }
    }
    g.errors = g.reconnects = g.fallbacks = g.messages = 0; /* the connects and the probe are not measured */
    if (!g.conns[0].connected) {
        fprintf(stderr, "openloop: could not reconnect after the pipelining probe\n");
        return 1;
    }
    /* Request j (of all connections) is due at t0 + j / R, on connection j mod N: each connection's requests are
     * N / R apart, the connections' schedules staggered evenly. */
    int64_t t0 = now_ns();
    double period = 1e9 / rate;
    g.t_measure = t_start + (int64_t)(warmup * 1e9);
    if (g.t_measure < t0) {
        fprintf(stderr, "openloop: connecting and the probe took %.3f s, longer than the warm-up\n",
                (double)(t0 - t_start) / 1e9);
        g.t_measure = t0;
    }
    g.t_end = g.t_measure + (int64_t)(seconds * 1e9);
    uint64_t next = 0;
    double cpu_start = -1, cpu = 0;
    int64_t drain_until = 0, checked = t0;
    for (;;) {
        int64_t now = now_ns();
        if (cpu_start < 0 && now >= g.t_measure) cpu_start = cpu_seconds();
        int64_t due = t0 + (int64_t)((double)next * period);
        while (due <= now && due < g.t_end && !stopping) {
            struct conn *c = &g.conns[next % (uint64_t)nconns];
            if (due >= g.t_measure) g.scheduled++;
            if (c->count == QUEUE) {
                g.errors++;
                g.dropped++;
                request_ended(due, 0, now);
            } else {
                c->due[(c->head + c->count) % QUEUE] = due;
                c->count++;
                conn_pump(c, now);
            }
            next++;
            due = t0 + (int64_t)((double)next * period);
        }
        if (drain_until == 0 && (due >= g.t_end || stopping)) {
            cpu = cpu_seconds() - (cpu_start < 0 ? cpu_seconds() : cpu_start);
            if (stopping && now < g.t_end) g.t_end = now > g.t_measure ? now : g.t_measure;
            drain_until = now + g.timeout_ns; /* the window's requests still in flight are waited for */
        }
        if (drain_until != 0 && (g.done >= g.scheduled || now >= drain_until)) break;
        if (now - checked >= 50000000LL) {
            checked = now;
            for (int i = 0; i < nconns; i++) conn_check(&g.conns[i], now);
        }
        int64_t wake = checked + 50000000LL; /* the next stall check */
        if (drain_until == 0 && due < wake) wake = cpu_start < 0 && g.t_measure < due ? g.t_measure : due;
        int n = wait_until(events, 256, wake);
        for (int i = 0; i < n; i++) conn_event(events[i].data.ptr, events[i].events);
    }
    uint64_t unfinished = g.scheduled - g.done;
    g.errors += unfinished; /* due in the window, never answered */
    double measured = (double)(g.t_end - g.t_measure) / 1e9;
    report(rate, measured > 0 ? measured : 0, cpu);
    return g.latency.total > 0 && g.errors == 0 ? 0 : 1;
}
