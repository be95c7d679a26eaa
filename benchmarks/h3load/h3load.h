/*
 * h3load: an HTTP/3 load generator on ngtcp2 0.12, nghttp3 0.8 and GnuTLS (Debian bookworm), independent of
 * peregrine's own QUIC and HTTP/3 code (issue 15 point 7).
 *
 * Theory of operation. One thread, one epoll loop, one connected non-blocking UDP socket per QUIC connection
 * (so ICMP port-unreachable reaches the right connection as ECONNREFUSED); the wait ends at the earliest of
 * every connection's ngtcp2 expiry and the run's own deadlines. Each connection keeps
 * `streams` requests in flight (closed loop): a request that ends (FIN received, RFC 9114 §4.1) frees its
 * slot and the slot is refilled before the loop sleeps again. Files:
 *   main.c   options, the loop, the phases (warm-up, window, idle hold), the JSON report;
 *   conn.c   a QUIC connection: socket, TLS session, ngtcp2 callbacks, failure and close;
 *   io.c     its packet I/O: recvmmsg with UDP GRO in, sendmmsg out;
 *   h3.c     the HTTP/3 layer of a connection: nghttp3 callbacks and request slots;
 *   ../histogram/histogram.c  the bounded log-linear latency histogram (shared with openloop).
 * Latency is from the moment the request is submitted (its HEADERS are written in the same loop turn) to
 * the moment its response FIN is read.
 */
#ifndef H3LOAD_H
#define H3LOAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <gnutls/gnutls.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include "../histogram/histogram.h"

struct conn;

/* One request slot of a connection. */
struct request {
    struct conn *conn;
    int64_t stream_id; /* -1: the slot is free */
    uint64_t started;  /* ngtcp2 timestamp (ns) of the submit */
    uint64_t body_left; /* request body bytes still to hand to nghttp3 */
    uint64_t body_received;
    int status;
};

enum conn_state { CONN_FREE, CONN_HANDSHAKING, CONN_READY, CONN_DONE };

/* Packets written per sendmmsg batch (one shared buffer, TX_MAX_PACKETS times the largest UDP payload). A
 * batch the kernel refuses with EAGAIN is dropped like lost packets (QUIC recovers them, RFC 9002) and the
 * connection waits for EPOLLOUT before writing again; with 4 MiB socket buffers on loopback it is rare. */
#define TX_MAX_PACKETS 32
#define TX_STRIDE 65536

struct conn {
    int index;
    enum conn_state state;
    int fd;
    struct sockaddr_storage local;
    socklen_t locallen;
    ngtcp2_crypto_conn_ref conn_ref;
    gnutls_session_t session;
    ngtcp2_conn *quic;
    nghttp3_conn *h3;
    ngtcp2_connection_close_error last_error;
    uint64_t expiry;         /* ngtcp2 expiry, UINT64_MAX: none */
    uint64_t reopen_at;      /* CONN_FREE: when to open a replacement (0: not wanted) */
    int goaway;              /* the server sent GOAWAY (RFC 9114 §5.2): no new requests here */
    int want_write;          /* the socket said EAGAIN */
    uint64_t completed;      /* requests completed on this connection */
    int idle_response;       /* --idle: this connection has its one response */
    struct request *requests; /* `streams` slots */
    size_t active;
};

struct options {
    int conns;
    int streams;
    double seconds;  /* 0: not given */
    double warmup;
    uint64_t requests; /* 0: not given */
    int post;
    uint64_t body_bytes;
    int idle;        /* --idle N: N connections, else 0 */
    double hold;
    const char *alpn;
    char host[256];      /* address literal without brackets */
    char authority[300]; /* as in the URL */
    char path[4096];
    char port[8];
};

enum phase { PHASE_WARMUP, PHASE_WINDOW, PHASE_HOLD, PHASE_DONE };

struct load {
    struct options opt;
    struct sockaddr_storage remote;
    socklen_t remotelen;
    gnutls_certificate_credentials_t cred;
    int epfd;
    struct conn *conns;
    int nconns;
    enum phase phase;
    uint64_t now;          /* ngtcp2 timestamp of the current loop turn */
    uint64_t started, window_start, window_end, hold_end, last_completion;
    double cpu_at_window;
    double cpu_seconds;
    uint64_t inflight;     /* requests submitted and not finished, on every connection */
    int refill;            /* a request gave its -n budget back: try every connection's free slots */
    uint64_t requests;     /* completed in the window */
    uint64_t status[4];    /* 2xx..5xx */
    uint64_t body_bytes;   /* response body bytes of requests completed in the window */
    uint64_t errors;
    uint64_t handshakes;
    uint64_t idle_ready;
    int ready_printed;
    uint64_t failures_logged;
    struct histogram latency;
};

extern struct load g;

uint64_t timestamp_ns(void);
double cpu_seconds_now(void);

/* conn.c */
int conn_open(struct conn *c);
/* The connection is unusable (`why` for the log): counted as an error, freed, replaced at `reopen_at`. */
void conn_fail(struct conn *c, const char *why);
/* Closes the connection with H3_NO_ERROR (RFC 9114 §8.1) and frees it; not an error. */
void conn_close(struct conn *c);
void conn_free(struct conn *c);
/* Writes CONNECTION_CLOSE with last_error unless ngtcp2 is already closing or draining. */
void conn_send_close(struct conn *c);
/* A fatal ngtcp2 result: CONNECTION_CLOSE when the library still may send one, then conn_fail. */
void conn_fatal(struct conn *c, int rv);

/* io.c */
extern uint8_t conn_txbuf[TX_MAX_PACKETS * TX_STRIDE];
void conn_on_readable(struct conn *c);
void conn_on_writable(struct conn *c);
void conn_on_expiry(struct conn *c);
/* Writes whatever ngtcp2 and nghttp3 have to send now and records the next expiry. */
void conn_write(struct conn *c);

/* h3.c */
void h3_init(void);
int h3_setup(struct conn *c);
/* Fills the free request slots while the run wants requests and the peer allows streams. */
void h3_fill(struct conn *c);
/* Whether the run wants one more request now (phase and -n budget). */
int load_wants_request(void);
enum request_end {
    REQUEST_COMPLETED, /* its response FIN arrived */
    REQUEST_RESET,     /* its stream closed without one: counted in `errors` */
    REQUEST_ABANDONED, /* its connection failed (that is the error counted) or the run ended */
};
void request_finished(struct request *r, enum request_end end);

#endif
