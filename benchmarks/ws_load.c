/*
 * WebSocket load generator for the benchmark harness (one thread, epoll, raw sockets, RFC 6455 client frames).
 *
 *   ws_load HOST PORT MODE CONNECTIONS WARMUP_S DURATION_S [SIZE [WINDOW]]
 *
 * MODE echo: every connection sends a SIZE-byte text message (masked, as a client must) and waits for the
 * same bytes to come back before sending the next; the rate is round trips per second.
 *
 * MODE broadcast: all CONNECTIONS are connected to an application that sends every message it receives to
 * every connected client. Broadcasts are sent in turn by each connection, WINDOW of them in flight: a
 * broadcast is complete when all CONNECTIONS clients (the sender too) have received it, and then the next
 * one is sent. The rate is deliveries (messages received by clients) per second. Before the measurement, a
 * probe message is broadcast every 50 ms until one reaches every client, so that every connection is known
 * to the application before the first counted broadcast.
 *
 * Timing is on this process's clock: WARMUP_S seconds of unmeasured load (connecting and handshaking
 * included), then DURATION_S measured. A message received during the measured interval counts. The handshake
 * (fixed key, no extensions offered: no compression) must answer 101 with the RFC's Sec-WebSocket-Accept;
 * every echoed payload is compared with what was sent. Results go to standard output as key=value lines;
 * the exit status is 1 on any error (a wrong answer, a closed connection, a stall of 5 s).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RBUF 65536
#define WBUF 65536
#define RING 4096
#define MAX_SIZE 1024
#define STALL_NS 5000000000LL

/* RFC 6455 section 1.3's example key and the accept value a server must answer it with. */
static const char KEY[] = "dGhlIHNhbXBsZSBub25jZQ==";
static const char ACCEPT[] = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

enum { CONNECTING, HANDSHAKE, OPEN, CLOSED };

struct conn {
    int fd;
    int id;
    int state;
    size_t rlen;
    size_t wlen;
    uint32_t counter;
    int64_t sent_at;
    char expect[MAX_SIZE];
    unsigned char rbuf[RBUF];
    unsigned char wbuf[WBUF];
};

static struct conn *conns;
static int nconns, mode_broadcast, size, window, epfd, opened;
static char host[64];
static int port;
static int64_t t_start, t_measure, t_end, last_progress;
static uint64_t messages, errors, broadcasts_done, sent_total;
static uint32_t *samples;
static size_t nsamples, capsamples;
static uint32_t rng = 2463534242u;
/* broadcast state */
static uint32_t ring_count[RING];
static int64_t ring_sent[RING];
static uint32_t next_seq, next_sender;
static uint32_t probe_count[256];
static int synced, probe_seq;
static int64_t last_probe;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void fail(const char *what, int id) {
    fprintf(stdout, "error=%s (connection %d)\n", what, id);
    fflush(stdout);
    errors++;
}

static void sample(int64_t ns) {
    if (nsamples == capsamples) {
        capsamples = capsamples ? capsamples * 2 : 1 << 16;
        samples = realloc(samples, capsamples * sizeof *samples);
        if (!samples) {
            perror("realloc");
            exit(2);
        }
    }
    samples[nsamples++] = ns > 0xffffffffLL ? 0xffffffffu : (uint32_t)ns;
}

static void want_write(struct conn *c, int on) {
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static void flush(struct conn *c) {
    while (c->wlen > 0) {
        ssize_t n = write(c->fd, c->wbuf, c->wlen);
        if (n < 0) {
            if (errno == EAGAIN) {
                want_write(c, 1);
                return;
            }
            fail("write failed", c->id);
            c->state = CLOSED;
            return;
        }
        memmove(c->wbuf, c->wbuf + n, c->wlen - (size_t)n);
        c->wlen -= (size_t)n;
    }
}

static void queue(struct conn *c, const void *data, size_t len) {
    if (c->wlen + len > WBUF) {
        fail("output buffer full", c->id);
        return;
    }
    memcpy(c->wbuf + c->wlen, data, len);
    c->wlen += len;
}

/* A masked client frame (FIN set) of `opcode` carrying `len` (< 126) bytes. */
static void send_frame(struct conn *c, int opcode, const char *payload, size_t len) {
    unsigned char frame[6 + 125];
    uint32_t mask;
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    mask = rng;
    frame[0] = (unsigned char)(0x80 | opcode);
    frame[1] = (unsigned char)(0x80 | len);
    memcpy(frame + 2, &mask, 4);
    for (size_t i = 0; i < len; i++) frame[6 + i] = (unsigned char)payload[i] ^ frame[2 + (i & 3)];
    queue(c, frame, 6 + len);
    flush(c);
}

static void pad(char *buf, int used) {
    for (int i = used; i < size; i++) buf[i] = (char)('a' + i % 26);
}

static void send_echo(struct conn *c, int64_t now) {
    int used = snprintf(c->expect, sizeof c->expect, "e%05d %010u ", c->id, c->counter++);
    pad(c->expect, used);
    c->sent_at = now;
    send_frame(c, 1, c->expect, (size_t)size);
    sent_total++;
}

static void send_broadcast(int64_t now) {
    char buf[MAX_SIZE];
    uint32_t seq = next_seq++;
    struct conn *c = &conns[next_sender++ % (uint32_t)nconns];
    int used = snprintf(buf, sizeof buf, "b%010u ", seq);
    pad(buf, used);
    ring_count[seq % RING] = 0;
    ring_sent[seq % RING] = now;
    send_frame(c, 1, buf, (size_t)size);
    sent_total++;
}

static void send_probe(void) {
    char buf[MAX_SIZE];
    int used = snprintf(buf, sizeof buf, "p%03d ", probe_seq % 256);
    pad(buf, used);
    probe_count[probe_seq % 256] = 0;
    probe_seq++;
    send_frame(&conns[0], 1, buf, (size_t)size);
}

static void on_message(struct conn *c, const unsigned char *payload, size_t len, int64_t now) {
    int counted = now >= t_measure && now < t_end;
    last_progress = now;
    if (!mode_broadcast) {
        if (len != (size_t)size || memcmp(payload, c->expect, len) != 0) {
            fail("echo differs from the message sent", c->id);
            return;
        }
        if (counted) {
            messages++;
            sample(now - c->sent_at);
        }
        if (now < t_end) send_echo(c, now);
        return;
    }
    if (len != (size_t)size) {
        fail("broadcast message of the wrong size", c->id);
        return;
    }
    if (payload[0] == 'p') {
        int slot = atoi((const char *)payload + 1) % 256;
        if (++probe_count[slot] == (uint32_t)nconns && !synced) {
            synced = 1;
            for (int i = 0; i < window; i++) send_broadcast(now);
        }
        return;
    }
    if (payload[0] != 'b') {
        fail("unexpected broadcast message", c->id);
        return;
    }
    uint32_t seq = (uint32_t)strtoul((const char *)payload + 1, NULL, 10);
    uint32_t slot = seq % RING;
    if (counted) messages++;
    if (++ring_count[slot] == (uint32_t)nconns) {
        if (counted) {
            broadcasts_done++;
            sample(now - ring_sent[slot]);
        }
        if (now < t_end) send_broadcast(now);
    }
}

static void on_open(struct conn *c, int64_t now) {
    c->state = OPEN;
    opened++;
    if (!mode_broadcast) send_echo(c, now);
    else if (opened == nconns) {
        last_probe = now;
        send_probe();
    }
}

static void parse(struct conn *c, int64_t now) {
    size_t off = 0;
    if (c->state == HANDSHAKE) {
        unsigned char *end = memmem(c->rbuf, c->rlen, "\r\n\r\n", 4);
        if (!end) {
            if (c->rlen == RBUF) fail("response head too long", c->id), c->state = CLOSED;
            return;
        }
        *end = '\0';
        char accept[64];
        snprintf(accept, sizeof accept, "%s", ACCEPT);
        char *found = strcasestr((char *)c->rbuf, "\nsec-websocket-accept:");
        if (strncmp((char *)c->rbuf, "HTTP/1.1 101", 12) != 0) {
            fail("handshake not answered with 101", c->id);
            c->state = CLOSED;
            return;
        }
        if (!found) {
            fail("no Sec-WebSocket-Accept", c->id);
            c->state = CLOSED;
            return;
        }
        found += strlen("\nsec-websocket-accept:");
        while (*found == ' ' || *found == '\t') found++;
        if (strncmp(found, accept, strlen(accept)) != 0) {
            fail("wrong Sec-WebSocket-Accept", c->id);
            c->state = CLOSED;
            return;
        }
        off = (size_t)(end - c->rbuf) + 4;
        on_open(c, now);
    }
    while (c->state == OPEN && c->rlen - off >= 2) {
        unsigned char *p = c->rbuf + off;
        int fin = p[0] & 0x80, opcode = p[0] & 0x0f;
        uint64_t len = p[1] & 0x7f;
        size_t head = 2;
        if (p[1] & 0x80) {
            fail("masked frame from the server", c->id);
            c->state = CLOSED;
            return;
        }
        if (len == 126) {
            if (c->rlen - off < 4) break;
            len = (uint64_t)p[2] << 8 | p[3];
            head = 4;
        } else if (len == 127) {
            if (c->rlen - off < 10) break;
            len = 0;
            for (int i = 0; i < 8; i++) len = len << 8 | p[2 + i];
            head = 10;
        }
        if (len > RBUF - 16) {
            fail("frame too large", c->id);
            c->state = CLOSED;
            return;
        }
        if (c->rlen - off < head + len) break;
        if (opcode == 9) {
            if (len <= 125) send_frame(c, 10, (const char *)p + head, (size_t)len);
        } else if (opcode == 8) {
            fail("the server closed the WebSocket", c->id);
            c->state = CLOSED;
            return;
        } else if (opcode == 1 || opcode == 2) {
            if (!fin) fail("fragmented message", c->id);
            else on_message(c, p + head, (size_t)len, now);
        } else if (opcode != 10) {
            fail("unexpected opcode", c->id);
        }
        off += head + (size_t)len;
    }
    if (off > 0) {
        memmove(c->rbuf, c->rbuf + off, c->rlen - off);
        c->rlen -= off;
    }
    if (c->rlen == RBUF) {
        fail("input buffer full", c->id);
        c->state = CLOSED;
    }
}

static void on_readable(struct conn *c, int64_t now) {
    for (;;) {
        ssize_t n = read(c->fd, c->rbuf + c->rlen, RBUF - c->rlen);
        if (n > 0) {
            c->rlen += (size_t)n;
            parse(c, now);
            if (c->state == CLOSED || c->rlen == RBUF) return;
            if ((size_t)n < RBUF) return; /* level-triggered: the rest comes with the next wait */
            continue;
        }
        if (n == 0) {
            fail("connection closed by the server", c->id);
            c->state = CLOSED;
        } else if (errno != EAGAIN) {
            fail("read failed", c->id);
            c->state = CLOSED;
        }
        return;
    }
}

static void start_connection(struct conn *c) {
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &addr.sin_addr);
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (c->fd < 0) {
        perror("socket");
        exit(2);
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->state = CONNECTING;
    if (connect(c->fd, (struct sockaddr *)&addr, sizeof addr) < 0 && errno != EINPROGRESS) {
        fail("connect failed", c->id);
        c->state = CLOSED;
        return;
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
}

static void on_writable(struct conn *c) {
    if (c->state == CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) {
            fail("connect failed", c->id);
            c->state = CLOSED;
            return;
        }
        char request[256];
        int n = snprintf(request, sizeof request,
                         "GET / HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n",
                         host, port, KEY);
        c->state = HANDSHAKE;
        queue(c, request, (size_t)n);
    }
    want_write(c, 0);
    flush(c);
}

static int compare(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: %s HOST PORT echo|broadcast CONNECTIONS WARMUP_S DURATION_S [SIZE [WINDOW]]\n",
                argv[0]);
        return 2;
    }
    snprintf(host, sizeof host, "%s", argv[1]);
    port = atoi(argv[2]);
    mode_broadcast = strcmp(argv[3], "broadcast") == 0;
    if (!mode_broadcast && strcmp(argv[3], "echo") != 0) {
        fprintf(stderr, "mode must be echo or broadcast\n");
        return 2;
    }
    nconns = atoi(argv[4]);
    double warmup = atof(argv[5]), duration = atof(argv[6]);
    size = argc > 7 ? atoi(argv[7]) : 32;
    window = argc > 8 ? atoi(argv[8]) : 8;
    if (nconns < 1 || size < 16 || size > 125 || window < 1 || window >= RING || duration <= 0) {
        fprintf(stderr, "bad arguments (SIZE 16..125)\n");
        return 2;
    }
    conns = calloc((size_t)nconns, sizeof *conns);
    epfd = epoll_create1(0);
    t_start = now_ns();
    t_measure = t_start + (int64_t)(warmup * 1e9);
    t_end = t_measure + (int64_t)(duration * 1e9);
    last_progress = t_start;
    for (int i = 0; i < nconns; i++) {
        conns[i].id = i;
        start_connection(&conns[i]);
    }
    struct epoll_event events[512];
    for (;;) {
        int64_t now = now_ns();
        if (now >= t_end || errors) break;
        if (now - last_progress > STALL_NS) {
            fail(opened < nconns ? "handshakes stalled" : "no message for 5 s", -1);
            break;
        }
        if (mode_broadcast && opened == nconns && !synced && now - last_probe > 50000000LL) {
            last_probe = now;
            send_probe();
        }
        int timeout = (int)((t_end - now) / 1000000) + 1;
        if (timeout > 10) timeout = 10;
        int n = epoll_wait(epfd, events, 512, timeout);
        now = now_ns();
        for (int i = 0; i < n; i++) {
            struct conn *c = events[i].data.ptr;
            if (c->state == CLOSED) continue;
            if (events[i].events & EPOLLOUT) on_writable(c);
            if (c->state != CLOSED && (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))) on_readable(c, now);
            if (c->state == CLOSED) {
                epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
            }
        }
        if (opened < nconns && now >= t_measure && !errors) {
            fail("not every connection was open when the measurement began", -1);
            break;
        }
        if (mode_broadcast && !synced && now >= t_measure && !errors) {
            fail("no probe had reached every client when the measurement began", -1);
            break;
        }
    }
    /* A clean end: a close frame (1000) on every open connection, then close. */
    for (int i = 0; i < nconns; i++) {
        struct conn *c = &conns[i];
        if (c->state == OPEN) {
            c->wlen = 0;
            send_frame(c, 8, "\x03\xe8", 2);
        }
        if (c->fd > 0) close(c->fd);
    }
    double seconds = duration;
    qsort(samples, nsamples, sizeof *samples, compare);
    double mean = 0;
    for (size_t i = 0; i < nsamples; i++) mean += samples[i];
    mean = nsamples ? mean / (double)nsamples : 0;
    printf("mode=%s\nconnections=%d\nopened=%d\nsize=%d\nwindow=%d\nseconds=%.3f\n", argv[3], nconns, opened, size,
           mode_broadcast ? window : 1, seconds);
    printf("messages=%llu\nrate=%.1f\n", (unsigned long long)messages, (double)messages / seconds);
    if (mode_broadcast) printf("broadcasts=%llu\n", (unsigned long long)broadcasts_done);
    printf("sent=%llu\n", (unsigned long long)sent_total);
    if (nsamples) {
        printf("p50_us=%.1f\np99_us=%.1f\nmean_us=%.1f\nmax_us=%.1f\n", samples[nsamples / 2] / 1e3,
               samples[(size_t)((double)(nsamples - 1) * 0.99)] / 1e3, mean / 1e3, samples[nsamples - 1] / 1e3);
    }
    printf("errors=%llu\n", (unsigned long long)errors);
    return errors ? 1 : 0;
}
