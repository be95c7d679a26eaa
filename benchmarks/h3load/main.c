/*
 * h3load's options, event loop, phases and report (see h3load.h for the design).
 *
 * Phases of a load run: WARMUP (requests run, nothing is counted) until -w seconds, then WINDOW, which ends
 * after -d seconds or when -n requests have completed in it. The -n budget counts the requests in flight, so
 * exactly -n complete when nothing fails. An --idle run: N connections each complete one GET, `ready` goes to
 * stderr once all N have their response, they stay open (keep-alive PINGs only) for --hold seconds, and close.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/crypto.h>

#include "h3load.h"

struct load g;

static const char usage_text[] =
    "usage: h3load [-c CONNS] [-m STREAMS] [-d SECONDS] [-w WARMUP_SECONDS] [-n REQUESTS] [-b BODY_BYTES]\n"
    "              [--idle N --hold SECONDS] [--alpn h3] URL\n"
    "\n"
    "HTTP/3 load generator (ngtcp2 + nghttp3 + GnuTLS). URL: https://127.0.0.1:PORT/path?query or\n"
    "https://[::1]:PORT/path. The server's certificate is NOT verified: this is a loopback benchmark tool.\n"
    "\n"
    "  -c CONNS      connections (default 1); a failed or server-closed one is counted in errors and replaced\n"
    "  -m STREAMS    requests in flight per connection (default 1), closed loop\n"
    "  -d SECONDS    measure for SECONDS (after the warm-up); default 10 when -n is not given either\n"
    "  -w SECONDS    warm-up before measuring (default 0), requests not counted\n"
    "  -n REQUESTS   stop once REQUESTS completed in the measured window\n"
    "  -b BYTES      POST a body of BYTES 'x' bytes instead of GET\n"
    "  --idle N --hold SECONDS  open N connections, one GET each, print 'ready' on stderr when all have their\n"
    "                response, keep them idle SECONDS (PINGs only), close them\n"
    "  --alpn PROTO  ALPN to offer (default h3)\n"
    "\n"
    "SIGINT or SIGTERM ends the run early (the report covers what was measured).\n"
    "Prints one JSON object on stdout. Exit 0 when at least one request completed and errors == 0, 1 otherwise,\n"
    "2 on a usage error.\n";

static void usage_error(const char *what) {
    fprintf(stderr, "h3load: %s\n%s", what, usage_text);
    exit(2);
}

uint64_t timestamp_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NGTCP2_SECONDS + (uint64_t)ts.tv_nsec;
}

double cpu_seconds_now(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

static double parse_seconds(const char *s, const char *what) {
    char *end;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || !(v >= 0) || v > 1e6) {
        usage_error(what);
    }
    return v;
}

static uint64_t parse_count(const char *s, const char *what, uint64_t min, uint64_t max) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*s == '\0' || *s == '-' || *end != '\0' || errno != 0 || v < min || v > max) {
        usage_error(what);
    }
    return v;
}

/* https://HOST[:PORT][/path[?query]] with HOST an IPv4 literal or a bracketed IPv6 literal. */
static void parse_url(const char *url) {
    const char *prefix = "https://";
    if (strncmp(url, prefix, strlen(prefix)) != 0) {
        usage_error("the URL must start with https://");
    }
    const char *p = url + strlen(prefix);
    const char *slash = strchr(p, '/');
    size_t authlen = slash ? (size_t)(slash - p) : strlen(p);
    if (authlen == 0 || authlen >= sizeof(g.opt.authority)) {
        usage_error("bad URL authority");
    }
    memcpy(g.opt.authority, p, authlen);
    g.opt.authority[authlen] = '\0';
    snprintf(g.opt.path, sizeof(g.opt.path), "%s", slash ? slash : "/");
    const char *hostend, *port = NULL;
    const char *host = g.opt.authority;
    if (host[0] == '[') {
        hostend = strchr(host, ']');
        if (hostend == NULL) {
            usage_error("bad IPv6 literal in the URL");
        }
        host++;
        if (hostend[1] == ':') {
            port = hostend + 2;
        } else if (hostend[1] != '\0') {
            usage_error("bad URL authority");
        }
    } else {
        hostend = strchr(host, ':');
        if (hostend != NULL) {
            port = hostend + 1;
        } else {
            hostend = host + strlen(host);
        }
    }
    size_t hostlen = (size_t)(hostend - host);
    if (hostlen == 0 || hostlen >= sizeof(g.opt.host)) {
        usage_error("bad URL host");
    }
    memcpy(g.opt.host, host, hostlen);
    g.opt.host[hostlen] = '\0';
    snprintf(g.opt.port, sizeof(g.opt.port), "%llu",
             port ? (unsigned long long)parse_count(port, "bad URL port", 1, 65535) : 443ull);

    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV, .ai_socktype = SOCK_DGRAM};
    struct addrinfo *res;
    if (getaddrinfo(g.opt.host, g.opt.port, &hints, &res) != 0) {
        usage_error("the URL host must be an IPv4 or IPv6 address literal");
    }
    memcpy(&g.remote, res->ai_addr, res->ai_addrlen);
    g.remotelen = res->ai_addrlen;
    freeaddrinfo(res);
}

static void parse_options(int argc, char **argv) {
    g.opt.conns = 1;
    g.opt.streams = 1;
    g.opt.alpn = "h3";
    int hold_given = 0;
    enum { OPT_IDLE = 256, OPT_HOLD, OPT_ALPN };
    static const struct option longs[] = {
        {"idle", required_argument, NULL, OPT_IDLE}, {"hold", required_argument, NULL, OPT_HOLD},
        {"alpn", required_argument, NULL, OPT_ALPN}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "c:m:d:w:n:b:h", longs, NULL)) != -1) {
        switch (ch) {
        case 'c': g.opt.conns = (int)parse_count(optarg, "bad -c", 1, 100000); break;
        case 'm': g.opt.streams = (int)parse_count(optarg, "bad -m", 1, 10000); break;
        case 'd': g.opt.seconds = parse_seconds(optarg, "bad -d"); break;
        case 'w': g.opt.warmup = parse_seconds(optarg, "bad -w"); break;
        case 'n': g.opt.requests = parse_count(optarg, "bad -n", 1, UINT64_MAX); break;
        case 'b':
            g.opt.post = 1;
            g.opt.body_bytes = parse_count(optarg, "bad -b", 0, UINT64_MAX / 2);
            break;
        case OPT_IDLE: g.opt.idle = (int)parse_count(optarg, "bad --idle", 1, 100000); break;
        case OPT_HOLD:
            g.opt.hold = parse_seconds(optarg, "bad --hold");
            hold_given = 1;
            break;
        case OPT_ALPN:
            if (optarg[0] == '\0' || strlen(optarg) > 255) {
                usage_error("bad --alpn");
            }
            g.opt.alpn = optarg;
            break;
        case 'h': fputs(usage_text, stdout); exit(0);
        default: usage_error("unknown option");
        }
    }
    if (optind != argc - 1) {
        usage_error("exactly one URL is needed");
    }
    if ((g.opt.idle > 0) != hold_given) {
        usage_error("--idle and --hold go together");
    }
    if (g.opt.idle > 0) {
        if (g.opt.post || g.opt.requests || g.opt.seconds > 0 || g.opt.warmup > 0) {
            usage_error("--idle takes none of -b, -n, -d, -w");
        }
        g.opt.conns = g.opt.idle;
        g.opt.streams = 1;
    } else if (g.opt.seconds == 0 && g.opt.requests == 0) {
        g.opt.seconds = 10;
    }
    parse_url(argv[optind]);
}

static uint64_t ns_of(double seconds) { return (uint64_t)(seconds * 1e9); }

int load_wants_request(void) {
    switch (g.phase) {
    case PHASE_WARMUP: return 1;
    case PHASE_WINDOW: return g.opt.requests == 0 || g.requests + g.inflight < g.opt.requests;
    default: return 0;
    }
}

void request_finished(struct request *r, enum request_end end) {
    struct conn *c = r->conn;
    r->stream_id = -1;
    c->active--;
    g.inflight--;
    if (end != REQUEST_COMPLETED && g.opt.requests > 0) {
        g.refill = 1; /* -n budget given back: connections that stopped for it may start requests again */
    }
    if (end == REQUEST_RESET) {
        g.errors++;
        if (g.failures_logged < 10) {
            g.failures_logged++;
            fprintf(stderr, "h3load: a request on connection %d was reset\n", c->index);
        }
        return;
    }
    if (end != REQUEST_COMPLETED) {
        return;
    }
    c->completed++;
    if (g.opt.idle > 0) {
        c->idle_response = 1;
    } else if (g.phase != PHASE_WINDOW || (g.opt.requests > 0 && g.requests >= g.opt.requests)) {
        return; /* outside the window, or past -n (requests the warm-up left in flight can overshoot it) */
    }
    g.requests++;
    if (r->status >= 200 && r->status < 600) {
        g.status[r->status / 100 - 2]++;
    }
    g.body_bytes += r->body_received;
    histogram_record(&g.latency, (g.now - r->started) / 1000);
    g.last_completion = g.now;
}

static void start_window(void) {
    g.phase = PHASE_WINDOW;
    g.window_start = g.now;
    g.cpu_at_window = cpu_seconds_now();
    g.window_end = g.opt.seconds > 0 ? g.now + ns_of(g.opt.seconds) : UINT64_MAX;
}

static void finish(void) {
    g.phase = PHASE_DONE;
    g.cpu_seconds = cpu_seconds_now() - g.cpu_at_window;
    if (g.opt.idle == 0 && g.opt.requests > 0 && g.requests >= g.opt.requests) {
        g.window_end = g.last_completion; /* -n: the window ends with the last request */
    } else {
        g.window_end = g.now;
    }
}

/* Phase changes due at g.now. */
static void advance_phase(void) {
    if (g.phase == PHASE_WARMUP && g.now >= g.window_start) {
        start_window();
    }
    if (g.opt.idle > 0) {
        if (g.phase == PHASE_WINDOW) {
            int ready = 0;
            for (int i = 0; i < g.nconns; i++) {
                ready += g.conns[i].state == CONN_READY && g.conns[i].idle_response;
            }
            if (ready == g.nconns) {
                fputs("ready\n", stderr);
                fflush(stderr);
                g.phase = PHASE_HOLD;
                g.hold_end = g.now + ns_of(g.opt.hold);
            }
        } else if (g.phase == PHASE_HOLD && g.now >= g.hold_end) {
            finish();
        }
        return;
    }
    if (g.phase == PHASE_WINDOW &&
        (g.now >= g.window_end || (g.opt.requests > 0 && g.requests >= g.opt.requests))) {
        finish();
    }
}

static uint64_t next_deadline(void) {
    uint64_t d = UINT64_MAX;
    for (int i = 0; i < g.nconns; i++) {
        struct conn *c = &g.conns[i];
        uint64_t t = c->state == CONN_FREE ? (c->reopen_at ? c->reopen_at : UINT64_MAX) : c->expiry;
        d = t < d ? t : d;
    }
    if (g.phase == PHASE_WARMUP && g.window_start < d) {
        d = g.window_start;
    }
    if (g.phase == PHASE_WINDOW && g.window_end < d) {
        d = g.window_end;
    }
    if (g.phase == PHASE_HOLD && g.hold_end < d) {
        d = g.hold_end;
    }
    return d;
}

/* Expired ngtcp2 timers, replacements due, requests to start. */
static void service_connections(void) {
    int refill = g.refill;
    g.refill = 0;
    for (int i = 0; i < g.nconns; i++) {
        struct conn *c = &g.conns[i];
        if (c->state == CONN_FREE) {
            if (c->reopen_at != 0 && c->reopen_at <= g.now) {
                (void)conn_open(c);
            }
            continue;
        }
        if (refill && c->state == CONN_READY && c->active < (size_t)g.opt.streams) {
            h3_fill(c);
            conn_write(c);
        }
        if (c->state != CONN_FREE && c->expiry <= g.now) {
            conn_on_expiry(c);
        }
    }
}

/* Waits for socket events until `deadline` (an ngtcp2 timestamp, UINT64_MAX: none). epoll_pwait2 takes the
 * timeout in nanoseconds, so no timer descriptor has to be re-armed each turn (ngtcp2's expiry moves with
 * every packet); kernels before 5.11 fall back to epoll_wait rounded up to the millisecond. */
static int wait_events(struct epoll_event *events, int max, uint64_t deadline) {
    static int no_pwait2;
    uint64_t now = timestamp_ns();
    uint64_t wait = deadline <= now ? 0 : deadline - now;
    if (!no_pwait2) {
        struct timespec ts = {(time_t)(wait / NGTCP2_SECONDS), (long)(wait % NGTCP2_SECONDS)};
        int n = epoll_pwait2(g.epfd, events, max, deadline == UINT64_MAX ? NULL : &ts, NULL);
        if (n >= 0 || errno != ENOSYS) {
            return n;
        }
        no_pwait2 = 1;
    }
    int ms = deadline == UINT64_MAX ? -1 : (int)((wait + 999999) / 1000000);
    return epoll_wait(g.epfd, events, max, ms);
}

/* SIGINT or SIGTERM: end the run now and report what was measured. */
static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int signal_number) {
    (void)signal_number;
    stop_requested = 1;
}

static void run(void) {
    struct epoll_event events[64];
    for (;;) {
        g.now = timestamp_ns();
        advance_phase();
        if (stop_requested && g.phase != PHASE_DONE) {
            if (g.phase == PHASE_WARMUP) {
                start_window(); /* nothing measured: an empty window */
            }
            finish();
        }
        if (g.phase == PHASE_DONE) {
            return;
        }
        service_connections();
        int n = wait_events(events, 64, next_deadline());
        if (n < 0 && errno != EINTR) {
            perror("h3load: epoll_wait");
            exit(1);
        }
        g.now = timestamp_ns();
        for (int i = 0; i < n; i++) {
            struct conn *c = events[i].data.ptr;
            if (c->state == CONN_FREE) {
                continue; /* closed by an earlier event of this batch */
            }
            if (events[i].events & EPOLLOUT) {
                conn_on_writable(c);
            }
            if (c->state != CONN_FREE && (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))) {
                conn_on_readable(c);
            }
        }
    }
}

static double seconds_between(uint64_t a, uint64_t b) { return b > a ? (double)(b - a) / 1e9 : 0.0; }

static void report(void) {
    double seconds = seconds_between(g.window_start, g.window_end);
    if (g.opt.idle > 0) {
        seconds = seconds_between(g.started, g.window_end);
    }
    double rps = seconds > 0 ? (double)g.requests / seconds : 0.0;
    double mib = seconds > 0 ? (double)g.body_bytes / seconds / (1024.0 * 1024.0) : 0.0;
    printf("{\"connections\": %d, \"streams\": %d, \"seconds\": %.6f, \"requests\": %llu, "
           "\"status\": {\"2xx\": %llu, \"3xx\": %llu, \"4xx\": %llu, \"5xx\": %llu}, \"errors\": %llu, "
           "\"body_bytes\": %llu, \"rps\": %.3f, \"mib_per_s\": %.3f, "
           "\"latency_us\": {\"p50\": %llu, \"p90\": %llu, \"p99\": %llu, \"max\": %llu}, \"handshakes\": %llu, "
           "\"cpu_seconds\": %.6f}\n",
           g.opt.conns, g.opt.streams, seconds, (unsigned long long)g.requests, (unsigned long long)g.status[0],
           (unsigned long long)g.status[1], (unsigned long long)g.status[2], (unsigned long long)g.status[3],
           (unsigned long long)g.errors, (unsigned long long)g.body_bytes, rps, mib,
           (unsigned long long)histogram_quantile(&g.latency, 0.50),
           (unsigned long long)histogram_quantile(&g.latency, 0.90),
           (unsigned long long)histogram_quantile(&g.latency, 0.99), (unsigned long long)g.latency.max,
           (unsigned long long)g.handshakes, g.cpu_seconds);
    fflush(stdout);
}

int main(int argc, char **argv) {
    parse_options(argc, argv);
    h3_init();
    struct sigaction stop = {.sa_handler = on_stop_signal};
    sigaction(SIGINT, &stop, NULL);
    sigaction(SIGTERM, &stop, NULL);
    if (gnutls_certificate_allocate_credentials(&g.cred) != 0) {
        fprintf(stderr, "h3load: gnutls credentials\n");
        return 1;
    }
    g.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (g.epfd < 0) {
        perror("h3load: epoll");
        return 1;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max; /* one socket per connection */
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
    g.nconns = g.opt.conns;
    g.conns = calloc((size_t)g.nconns, sizeof(struct conn));
    for (int i = 0; i < g.nconns; i++) {
        g.conns[i].index = i;
        g.conns[i].fd = -1;
        g.conns[i].requests = calloc((size_t)g.opt.streams, sizeof(struct request));
    }
    g.now = g.started = timestamp_ns();
    if (g.opt.warmup > 0) {
        g.phase = PHASE_WARMUP;
        g.window_start = g.started + ns_of(g.opt.warmup);
        g.cpu_at_window = cpu_seconds_now();
    } else {
        start_window();
    }
    for (int i = 0; i < g.nconns; i++) {
        g.now = timestamp_ns();
        (void)conn_open(&g.conns[i]);
    }
    run();
    for (int i = 0; i < g.nconns; i++) {
        conn_close(&g.conns[i]);
    }
    report();
    return g.requests > 0 && g.errors == 0 ? 0 : 1;
}
