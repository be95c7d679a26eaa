/*
 * Packet I/O of an h3load connection: recvmmsg (with UDP GRO) into ngtcp2, and ngtcp2's output (stream data
 * from nghttp3) out through sendmmsg in bursts of at most the send quantum, paced by ngtcp2 (RFC 9002 §7.7).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <netinet/in.h>
#include <netinet/udp.h>

#include "h3load.h"

#define RX_BATCH 16
#define RX_SIZE 65536

uint8_t conn_txbuf[TX_MAX_PACKETS * TX_STRIDE];
static uint8_t rxbuf[RX_BATCH][RX_SIZE];

/* The segment size of a GRO-coalesced buffer, or 0 when it holds one datagram. */
static size_t gro_segment_size(struct msghdr *msg) {
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm != NULL; cm = CMSG_NXTHDR(msg, cm)) {
        if (cm->cmsg_level == IPPROTO_UDP && cm->cmsg_type == UDP_GRO) {
            int size;
            memcpy(&size, CMSG_DATA(cm), sizeof(size));
            return size > 0 ? (size_t)size : 0;
        }
    }
    return 0;
}

void conn_on_readable(struct conn *c) {
    struct mmsghdr msgs[RX_BATCH];
    struct iovec iov[RX_BATCH];
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control[RX_BATCH];
    for (;;) {
        for (int i = 0; i < RX_BATCH; i++) {
            iov[i].iov_base = rxbuf[i];
            iov[i].iov_len = RX_SIZE;
            memset(&msgs[i].msg_hdr, 0, sizeof(msgs[i].msg_hdr));
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
            msgs[i].msg_hdr.msg_control = control[i].buf;
            msgs[i].msg_hdr.msg_controllen = sizeof(control[i].buf);
        }
        int n = recvmmsg(c->fd, msgs, RX_BATCH, MSG_DONTWAIT, NULL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                break;
            }
            conn_fail(c, strerror(errno)); /* ECONNREFUSED: nothing listens on the port any more */
            return;
        }
        g.now = timestamp_ns();
        ngtcp2_path path = {
            {(struct sockaddr *)&c->local, c->locallen},
            {(struct sockaddr *)&g.remote, g.remotelen},
            NULL,
        };
        for (int i = 0; i < n; i++) {
            size_t len = msgs[i].msg_len;
            size_t segment = gro_segment_size(&msgs[i].msg_hdr);
            if (segment == 0) {
                segment = len;
            }
            for (size_t at = 0; at < len; at += segment) {
                size_t size = len - at < segment ? len - at : segment;
                ngtcp2_pkt_info pi = {0};
                int rv = ngtcp2_conn_read_pkt(c->quic, &path, &pi, rxbuf[i] + at, size, g.now);
                if (rv != 0) {
                    conn_fatal(c, rv);
                    return;
                }
            }
        }
        if (n < RX_BATCH) {
            break;
        }
    }
    if (c->goaway && c->active == 0) {
        /* The server announced its shutdown (RFC 9114 §5.2) and our requests on it are done: close it rather
         * than wait for the server to, and let a new connection take over. A server closing is an error. */
        ngtcp2_connection_close_error_set_application_error(&c->last_error, NGHTTP3_H3_NO_ERROR, NULL, 0);
        conn_send_close(c);
        conn_fail(c, "GOAWAY from the server");
        return;
    }
    h3_fill(c);
    conn_write(c);
}

void conn_on_writable(struct conn *c) {
    c->want_write = 0;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    (void)epoll_ctl(g.epfd, EPOLL_CTL_MOD, c->fd, &ev);
    conn_write(c);
}

void conn_on_expiry(struct conn *c) {
    int rv = ngtcp2_conn_handle_expiry(c->quic, g.now);
    if (rv != 0) {
        conn_fatal(c, rv);
        return;
    }
    conn_write(c);
}

/* Sends `count` packets laid out TX_STRIDE apart; 0, or -1 when the socket is full or failed. */
static int flush(struct conn *c, const size_t *lens, int count) {
    struct mmsghdr msgs[TX_MAX_PACKETS];
    struct iovec iov[TX_MAX_PACKETS];
    for (int i = 0; i < count; i++) {
        iov[i].iov_base = conn_txbuf + (size_t)i * TX_STRIDE;
        iov[i].iov_len = lens[i];
        memset(&msgs[i].msg_hdr, 0, sizeof(msgs[i].msg_hdr));
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    int sent = 0;
    while (sent < count) {
        int n = sendmmsg(c->fd, msgs + sent, (unsigned)(count - sent), 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                c->want_write = 1;
                struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
                (void)epoll_ctl(g.epfd, EPOLL_CTL_MOD, c->fd, &ev);
                return -1;
            }
            conn_fail(c, strerror(errno));
            return -1;
        }
        sent += n;
    }
    return 0;
}

void conn_write(struct conn *c) {
    if (c->state == CONN_FREE) {
        return;
    }
    if (c->want_write) {
        c->expiry = UINT64_MAX; /* EPOLLOUT wakes the connection; its timers are served then */
        return;
    }
    size_t lens[TX_MAX_PACKETS];
    size_t max_payload = ngtcp2_conn_get_max_tx_udp_payload_size(c->quic);
    size_t quantum = ngtcp2_conn_get_send_quantum(c->quic) / max_payload;
    int burst = quantum < 1 ? 1 : quantum > TX_MAX_PACKETS ? TX_MAX_PACKETS : (int)quantum;
    int count = 0;
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    for (;;) {
        int64_t stream_id = -1;
        int fin = 0;
        nghttp3_vec vec[16];
        nghttp3_ssize nvec = 0;
        if (c->h3 != NULL && ngtcp2_conn_get_max_data_left(c->quic) > 0) {
            nvec = nghttp3_conn_writev_stream(c->h3, &stream_id, &fin, vec, 16);
            if (nvec < 0) {
                ngtcp2_connection_close_error_set_application_error(
                    &c->last_error, nghttp3_err_infer_quic_app_error_code((int)nvec), NULL, 0);
                conn_fatal(c, NGTCP2_ERR_CALLBACK_FAILURE);
                return;
            }
        }
        uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE | (fin ? NGTCP2_WRITE_STREAM_FLAG_FIN : 0);
        ngtcp2_ssize written = -1;
        ngtcp2_pkt_info pi;
        ngtcp2_ssize n = ngtcp2_conn_writev_stream(c->quic, &ps.path, &pi, conn_txbuf + (size_t)count * TX_STRIDE,
                                                   max_payload, &written, flags, stream_id,
                                                   (const ngtcp2_vec *)vec, (size_t)nvec, g.now);
        if (n < 0) {
            if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
                nghttp3_conn_block_stream(c->h3, stream_id);
                continue;
            }
            if (n == NGTCP2_ERR_STREAM_SHUT_WR) {
                nghttp3_conn_shutdown_stream_write(c->h3, stream_id);
                continue;
            }
            if (n == NGTCP2_ERR_WRITE_MORE) {
                if (nghttp3_conn_add_write_offset(c->h3, stream_id, (size_t)written) != 0) {
                    conn_fatal(c, NGTCP2_ERR_CALLBACK_FAILURE);
                    return;
                }
                continue;
            }
            conn_fatal(c, (int)n);
            return;
        }
        if (written >= 0 && nghttp3_conn_add_write_offset(c->h3, stream_id, (size_t)written) != 0) {
            conn_fatal(c, NGTCP2_ERR_CALLBACK_FAILURE);
            return;
        }
        if (n == 0) {
            break; /* nothing more, or congestion / pacing limited */
        }
        lens[count++] = (size_t)n;
        if (count == burst) {
            break;
        }
    }
    if (count > 0 && flush(c, lens, count) != 0) {
        if (c->state == CONN_FREE) {
            return;
        }
    }
    /* RFC 9002 §7.7: the pacer learns when this burst left, and the expiry below includes the next send time. */
    ngtcp2_conn_update_pkt_tx_time(c->quic, g.now);
    c->expiry = ngtcp2_conn_get_expiry(c->quic);
}
