/* openloop's run state, shared by main.c (options, schedule, report) and conn.c (sockets). */
#ifndef OPENLOOP_LOAD_H
#define OPENLOOP_LOAD_H

#include <netinet/in.h>
#include <sys/socket.h>

#include "openloop.h"

#define RBUF 65536
#define WBUF 32768
/* Due requests one connection holds (sent or waiting to be sent); a request due on a full connection is dropped
 * and counted as an error (the server is far behind the schedule). */
#define QUEUE 4096
/* Requests in flight on a pipelining connection. */
#define PIPELINE 256

struct conn {
    int fd, id;
    int connected;          /* the connect completed */
    int queueing;           /* the fallback: one request in flight at a time */
    int watching_out;       /* EPOLLOUT is in the epoll interest */
    int64_t retry_at;       /* closed: reconnect at this time */
    int64_t progress_at;    /* last byte read, or when the oldest request in flight was written */
    uint64_t answered;      /* responses since the last connect */
    int64_t due[QUEUE];     /* intended send times, oldest first (a ring) */
    unsigned head, count;   /* ring position and length */
    unsigned inflight;      /* the first `inflight` of the ring were written */
    size_t rlen, wlen;
    struct response resp;
    char rbuf[RBUF];
    char wbuf[WBUF];
};

struct load {
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char request[1024];
    size_t request_len;
    int epfd, nconns, queue_only, pipelining;
    struct conn *conns;
    int64_t t_measure, t_end; /* the measured window: requests intended in it are the sample */
    int64_t timeout_ns;
    /* counted over the window */
    struct histogram latency, send_lag;
    uint64_t scheduled, done, completed_in_window, status[6], errors, dropped;
    /* counted over the whole run */
    uint64_t reconnects, fallbacks, messages;
};

extern struct load g;

int64_t now_ns(void);
void note(const struct conn *c, const char *what);
int conn_open(struct conn *c);
void conn_pump(struct conn *c, int64_t now);
void conn_event(struct conn *c, uint32_t events);
void conn_check(struct conn *c, int64_t now);
/* Writes two requests at once on c and waits for both answers (up to 1 s, or -t if shorter): whether the server
 * answers pipelined requests. If not, c is reconnected with nothing queued. */
int conn_probe_pipelining(struct conn *c);
/* A request of connection c intended at `intended` has ended (answered with `status`, or failed when 0). */
void request_ended(int64_t intended, int status, int64_t now);

#endif
