/* openloop's connections: non-blocking connect, writing due requests (pipelined, or one at a time after the
 * fallback), reading responses in order, and recovering from a close or a stall. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "load.h"

/* A closed connection that had answered nothing is retried after this long (the server may be gone). */
#define RETRY_NS 100000000LL
/* How long the pipelining probe waits for its two answers (at most; -t if shorter): part of the warm-up. */
#define PROBE_NS 1000000000LL

/* Registers c's interest: readable always, writable while connecting or while output waits. A syscall only when
 * that changes (not once per request). */
static void watch(struct conn *c, int op) {
    int out = !c->connected || c->wlen > 0;
    if (op == EPOLL_CTL_MOD && out == c->watching_out) {
        return;
    }
    c->watching_out = out;
    struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(g.epfd, op, c->fd, &ev);
}

int conn_open(struct conn *c) {
    c->fd = socket(g.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        return -1;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(c->fd, (struct sockaddr *)&g.addr, g.addrlen) < 0 && errno != EINPROGRESS) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    c->connected = 0;
    c->retry_at = 0;
    c->answered = 0;
    c->rlen = c->wlen = 0;
    c->inflight = 0; /* whatever was in flight is written again: GET is idempotent (RFC 9110 §9.2.2) */
    response_reset(&c->resp);
    watch(c, EPOLL_CTL_ADD);
    return 0;
}

/* Closes c and opens it again: at once if it had answered something since its connect (or `expected`: the
 * caller has accounted for the close), else after RETRY_NS, as an error (the server may be gone). */
static void conn_restart(struct conn *c, int64_t now, int expected) {
    if (c->fd >= 0) {
        epoll_ctl(g.epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
    }
    g.reconnects++;
    c->connected = 0;
    c->inflight = 0;
    if (c->answered == 0 && !expected) {
        g.errors++;
        note(c, "closed before answering anything");
        c->retry_at = now + RETRY_NS;
        return;
    }
    if (conn_open(c) < 0) {
        g.errors++;
        note(c, "reconnect failed");
        c->retry_at = now + RETRY_NS;
    }
}

/* The connection stopped with requests in flight: if several were pipelined, the server may not pipeline, so
 * this connection falls back to one request at a time (HTTP/1.1 allows a server not to: RFC 9112 §9.3.2). */
static void lost_inflight(struct conn *c) {
    if (c->inflight > 1 && !c->queueing) {
        c->queueing = 1;
        g.fallbacks++;
        note(c, "falls back to one request at a time");
    }
}

static void flush(struct conn *c, int64_t now) {
    size_t sent = 0;
    while (sent < c->wlen) {
        ssize_t n = write(c->fd, c->wbuf + sent, c->wlen - sent);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) {
                break;
            }
            memmove(c->wbuf, c->wbuf + sent, c->wlen - sent);
            c->wlen -= sent;
            lost_inflight(c);
            conn_restart(c, now, 0);
            return;
        }
        sent += (size_t)n;
    }
    memmove(c->wbuf, c->wbuf + sent, c->wlen - sent);
    c->wlen -= sent;
    watch(c, EPOLL_CTL_MOD);
}

void conn_pump(struct conn *c, int64_t now) {
    if (c->fd < 0 || !c->connected) {
        return;
    }
    unsigned limit = c->queueing ? 1 : PIPELINE;
    int wrote = 0;
    while (c->inflight < c->count && c->inflight < limit && c->wlen + g.request_len <= WBUF) {
        int64_t intended = c->due[(c->head + c->inflight) % QUEUE];
        if (intended >= g.t_measure && intended < g.t_end) {
            histogram_record(&g.send_lag, (uint64_t)(now > intended ? now - intended : 0) / 1000);
        }
        if (c->inflight == 0) {
            c->progress_at = now;
        }
        memcpy(c->wbuf + c->wlen, g.request, g.request_len);
        c->wlen += g.request_len;
        c->inflight++;
        wrote = 1;
    }
    if (wrote) {
        flush(c, now);
    }
}

static void on_response(struct conn *c, int status, int64_t now) {
    int64_t intended = c->due[c->head];
    c->head = (c->head + 1) % QUEUE;
    c->count--;
    c->inflight--;
    c->answered++;
    g.messages++;
    request_ended(intended, status, now);
}

static void on_readable(struct conn *c) {
    ssize_t n = read(c->fd, c->rbuf + c->rlen, RBUF - c->rlen);
    int64_t now = now_ns();
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            return;
        }
        if (c->inflight > 0 || c->rlen > 0) {
            lost_inflight(c);
        }
        conn_restart(c, now, 0); /* the server closed (an idle timeout, a request limit, or no pipelining) */
        return;
    }
    c->rlen += (size_t)n;
    c->progress_at = now;
    size_t at = 0;
    for (;;) {
        size_t used = 0;
        enum feed_result got = response_feed(&c->resp, c->rbuf + at, c->rlen - at, &used);
        at += used;
        if (got == FEED_MORE) {
            break;
        }
        if (got == FEED_ERROR || c->inflight == 0) {
            g.errors++;
            note(c, got == FEED_ERROR ? "malformed or unframed response" : "a response to no request");
            if (c->inflight > 0) {
                on_response(c, 0, now);
            }
            conn_restart(c, now, 0);
            return;
        }
        on_response(c, c->resp.done_status, now);
        if (c->resp.done_close) { /* Connection: close (RFC 9112 §9.6): what was pipelined after it is written again */
            conn_restart(c, now, 0);
            return;
        }
    }
    if (at == 0 && c->rlen == RBUF) {
        g.errors++;
        note(c, "response head larger than the read buffer");
        conn_restart(c, now, 0);
        return;
    }
    memmove(c->rbuf, c->rbuf + at, c->rlen - at);
    c->rlen -= at;
    conn_pump(c, now);
}

void conn_event(struct conn *c, uint32_t events) {
    int64_t now = now_ns();
    if (!c->connected && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
        int error = 0;
        socklen_t len = sizeof(error);
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &error, &len);
        if (error != 0) {
            conn_restart(c, now, 0);
            return;
        }
        c->connected = 1;
        watch(c, EPOLL_CTL_MOD);
        conn_pump(c, now);
        return;
    }
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
        on_readable(c);
        if (c->fd < 0) {
            return;
        }
    }
    if ((events & EPOLLOUT) && c->wlen > 0) {
        flush(c, now);
    }
}

void conn_check(struct conn *c, int64_t now) {
    if (c->fd < 0) {
        if (c->retry_at != 0 && now >= c->retry_at && conn_open(c) < 0) {
            g.errors++;
            c->retry_at = now + RETRY_NS;
        }
        return;
    }
    if (c->inflight == 0 || now - c->progress_at < g.timeout_ns) {
        return;
    }
    if (c->inflight > 1 && !c->queueing) {
        lost_inflight(c); /* a server that ignores pipelined requests leaves them unanswered */
    } else {
        g.errors++;
        note(c, "timed out");
        on_response(c, 0, now); /* that request failed; the ones queued behind it are written again */
    }
    conn_restart(c, now, 1);
}

int conn_probe_pipelining(struct conn *c) {
    int64_t now = now_ns(), limit = now + (g.timeout_ns < PROBE_NS ? g.timeout_ns : PROBE_NS);
    c->due[c->head] = c->due[(c->head + 1) % QUEUE] = now;
    c->count = 2;
    conn_pump(c, now); /* both in one write */
    struct epoll_event events[64];
    while (c->count > 0 && c->fd >= 0 && c->retry_at == 0 && now_ns() < limit) {
        int n = epoll_wait(g.epfd, events, 64, 10);
        for (int i = 0; i < n; i++) {
            if (events[i].data.ptr != NULL) conn_event(events[i].data.ptr, events[i].events);
        }
    }
    int answered = c->count == 0 && c->fd >= 0;
    if (!answered) {
        c->count = 0;
        c->answered = 1; /* the server answers: reconnect at once */
        conn_restart(c, now_ns(), 1);
        int64_t deadline = now_ns() + g.timeout_ns;
        while (!c->connected && now_ns() < deadline) {
            int n = epoll_wait(g.epfd, events, 64, 10);
            for (int i = 0; i < n; i++) {
                if (events[i].data.ptr != NULL) conn_event(events[i].data.ptr, events[i].events);
            }
        }
    }
    return answered;
}
