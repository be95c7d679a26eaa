/*
 * A QUIC connection of h3load: its UDP socket, its GnuTLS session (certificates are not verified: a loopback
 * benchmark) and ngtcp2's callbacks; io.c moves its packets, h3.c is the HTTP/3 layer on its streams.
 *
 * Failure: any error from ngtcp2 (the server's CONNECTION_CLOSE puts the connection in the draining period,
 * RFC 9000 §10.2.2; a stateless reset, §10.3; an idle or handshake timeout; ECONNREFUSED from the socket) makes
 * the connection fail once: conn_fail counts it in `errors`, loses its requests in flight and schedules a
 * replacement.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include "h3load.h"

#define SOCKET_BUFFER (4 * 1024 * 1024)
/* A replacement for a connection that failed before completing any request waits this long, so a server that
 * is gone costs a few failures per second, not a busy loop. */
#define REOPEN_BACKOFF_NS (100 * 1000 * 1000ull)


/* TLS 1.3 only (RFC 9001 §4.2), no middlebox compatibility mode (§8.4). */
static const char priority[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"
                               "+CHACHA20-POLY1305:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:"
                               "%DISABLE_TLS13_COMPAT_MODE";

static struct conn *conn_of(void *user_data) { return user_data; }

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref) { return conn_of(ref->user_data)->quic; }

static void rand_cb(uint8_t *dest, size_t destlen, const ngtcp2_rand_ctx *ctx) {
    (void)ctx;
    (void)gnutls_rnd(GNUTLS_RND_RANDOM, dest, destlen);
}

static int new_connection_id_cb(ngtcp2_conn *q, ngtcp2_cid *cid, uint8_t *token, size_t cidlen, void *ud) {
    (void)q;
    (void)ud;
    if (gnutls_rnd(GNUTLS_RND_RANDOM, cid->data, cidlen) != 0 ||
        gnutls_rnd(GNUTLS_RND_RANDOM, token, NGTCP2_STATELESS_RESET_TOKENLEN) != 0) {
        return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    cid->datalen = cidlen;
    return 0;
}

static int handshake_completed_cb(ngtcp2_conn *q, void *ud) {
    struct conn *c = conn_of(ud);
    g.handshakes++;
    c->state = CONN_READY;
    if (g.opt.idle > 0) {
        /* --hold: PING (RFC 9000 §10.1.2) at half the negotiated idle timeout, at most every 10 s, so idle
         * connections stay open without traffic beyond what keeps them alive. */
        const ngtcp2_transport_params *peer = ngtcp2_conn_get_remote_transport_params(q);
        ngtcp2_duration every = 10 * NGTCP2_SECONDS;
        if (peer != NULL && peer->max_idle_timeout > 0 && peer->max_idle_timeout / 2 < every) {
            every = peer->max_idle_timeout / 2;
        }
        ngtcp2_conn_set_keep_alive_timeout(q, every);
    }
    return 0;
}

static int recv_rx_key_cb(ngtcp2_conn *q, ngtcp2_crypto_level level, void *ud) {
    (void)q;
    if (level != NGTCP2_CRYPTO_LEVEL_APPLICATION) {
        return 0;
    }
    return h3_setup(conn_of(ud)) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

static int recv_stream_data_cb(ngtcp2_conn *q, uint32_t flags, int64_t stream_id, uint64_t offset,
                               const uint8_t *data, size_t datalen, void *ud, void *sud) {
    (void)offset;
    (void)sud;
    struct conn *c = conn_of(ud);
    nghttp3_ssize n = nghttp3_conn_read_stream(c->h3, stream_id, data, datalen, flags & NGTCP2_STREAM_DATA_FLAG_FIN);
    if (n < 0) {
        ngtcp2_connection_close_error_set_application_error(&c->last_error,
                                                            nghttp3_err_infer_quic_app_error_code((int)n), NULL, 0);
        return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    /* Bytes nghttp3 consumed itself (framing, QPACK); body bytes are credited in h3.c when received. */
    ngtcp2_conn_extend_max_stream_offset(q, stream_id, (uint64_t)n);
    ngtcp2_conn_extend_max_offset(q, (uint64_t)n);
    return 0;
}

static int acked_stream_data_offset_cb(ngtcp2_conn *q, int64_t stream_id, uint64_t offset, uint64_t datalen,
                                       void *ud, void *sud) {
    (void)q;
    (void)offset;
    (void)sud;
    return nghttp3_conn_add_ack_offset(conn_of(ud)->h3, stream_id, datalen) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

static int stream_close_cb(ngtcp2_conn *q, uint32_t flags, int64_t stream_id, uint64_t app_error_code, void *ud,
                           void *sud) {
    (void)sud;
    struct conn *c = conn_of(ud);
    if (c->h3 == NULL) {
        return 0;
    }
    if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET)) {
        app_error_code = NGHTTP3_H3_NO_ERROR;
    }
    int rv = nghttp3_conn_close_stream(c->h3, stream_id, app_error_code);
    if (rv == NGHTTP3_ERR_STREAM_NOT_FOUND) {
        /* A stream that carried nothing nghttp3 saw (a server unidirectional stream opened but empty). */
        if (!ngtcp2_is_bidi_stream(stream_id)) {
            ngtcp2_conn_extend_max_streams_uni(q, 1);
        }
        return 0;
    }
    return rv == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

static int stream_reset_cb(ngtcp2_conn *q, int64_t stream_id, uint64_t final_size, uint64_t app_error_code,
                           void *ud, void *sud) {
    (void)q;
    (void)final_size;
    (void)app_error_code;
    (void)sud;
    struct conn *c = conn_of(ud);
    return c->h3 == NULL || nghttp3_conn_shutdown_stream_read(c->h3, stream_id) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

static int stream_stop_sending_cb(ngtcp2_conn *q, int64_t stream_id, uint64_t app_error_code, void *ud, void *sud) {
    return stream_reset_cb(q, stream_id, 0, app_error_code, ud, sud);
}

static int extend_max_stream_data_cb(ngtcp2_conn *q, int64_t stream_id, uint64_t max_data, void *ud, void *sud) {
    (void)q;
    (void)max_data;
    (void)sud;
    struct conn *c = conn_of(ud);
    return c->h3 == NULL || nghttp3_conn_unblock_stream(c->h3, stream_id) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

static int open_socket(struct conn *c) {
    c->fd = socket(g.remote.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        return -1;
    }
    int size = SOCKET_BUFFER;
    (void)setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
    (void)setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    /* UDP GRO (Linux 5.0): a burst the server sent with GSO arrives as one buffer of equal-size datagrams
     * (the size in a UDP_GRO control message), one copy and one syscall slot instead of one per packet. */
    int on = 1;
    (void)setsockopt(c->fd, IPPROTO_UDP, UDP_GRO, &on, sizeof(on));
    if (connect(c->fd, (struct sockaddr *)&g.remote, g.remotelen) != 0) {
        return -1;
    }
    c->locallen = sizeof(c->local);
    if (getsockname(c->fd, (struct sockaddr *)&c->local, &c->locallen) != 0) {
        return -1;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    return epoll_ctl(g.epfd, EPOLL_CTL_ADD, c->fd, &ev);
}

static int open_tls(struct conn *c) {
    if (gnutls_init(&c->session, GNUTLS_CLIENT | GNUTLS_ENABLE_EARLY_DATA | GNUTLS_NO_END_OF_EARLY_DATA) != 0) {
        return -1;
    }
    if (ngtcp2_crypto_gnutls_configure_client_session(c->session) != 0 ||
        gnutls_priority_set_direct(c->session, priority, NULL) != 0 ||
        gnutls_credentials_set(c->session, GNUTLS_CRD_CERTIFICATE, g.cred) != 0) {
        return -1;
    }
    gnutls_session_set_ptr(c->session, &c->conn_ref);
    gnutls_datum_t alpn = {(unsigned char *)g.opt.alpn, (unsigned)strlen(g.opt.alpn)};
    gnutls_alpn_set_protocols(c->session, &alpn, 1, GNUTLS_ALPN_MANDATORY);
    /* The URL names an address literal, which SNI may not carry (RFC 6066 §3); the benchmark certificates
     * name localhost. */
    (void)gnutls_server_name_set(c->session, GNUTLS_NAME_DNS, "localhost", strlen("localhost"));
    return 0;
}

static int open_quic(struct conn *c) {
    ngtcp2_callbacks callbacks = {
        .client_initial = ngtcp2_crypto_client_initial_cb,
        .recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
        .handshake_completed = handshake_completed_cb,
        .encrypt = ngtcp2_crypto_encrypt_cb,
        .decrypt = ngtcp2_crypto_decrypt_cb,
        .hp_mask = ngtcp2_crypto_hp_mask_cb,
        .recv_stream_data = recv_stream_data_cb,
        .acked_stream_data_offset = acked_stream_data_offset_cb,
        .stream_close = stream_close_cb,
        .recv_retry = ngtcp2_crypto_recv_retry_cb,
        .rand = rand_cb,
        .get_new_connection_id = new_connection_id_cb,
        .update_key = ngtcp2_crypto_update_key_cb,
        .stream_reset = stream_reset_cb,
        .extend_max_stream_data = extend_max_stream_data_cb,
        .delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb,
        .delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
        .get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb,
        .stream_stop_sending = stream_stop_sending_cb,
        .version_negotiation = ngtcp2_crypto_version_negotiation_cb,
        .recv_rx_key = recv_rx_key_cb,
    };
    ngtcp2_cid dcid, scid;
    dcid.datalen = 18;
    scid.datalen = 8;
    rand_cb(dcid.data, dcid.datalen, NULL);
    rand_cb(scid.data, scid.datalen, NULL);

    ngtcp2_settings settings;
    ngtcp2_settings_default(&settings);
    settings.initial_ts = g.now;
    settings.initial_rtt = 10 * NGTCP2_MILLISECONDS; /* loopback: first PTOs short (RFC 9002 §6.2.2) */
    settings.max_window = 24 * 1024 * 1024;
    settings.max_stream_window = 16 * 1024 * 1024;

    ngtcp2_transport_params params;
    ngtcp2_transport_params_default(&params);
    params.initial_max_streams_uni = 3;     /* the server's control and QPACK streams (RFC 9114 §6.2) */
    params.initial_max_stream_data_bidi_local = 1024 * 1024;
    params.initial_max_stream_data_uni = 1024 * 1024;
    params.initial_max_data = 4 * 1024 * 1024;
    params.max_idle_timeout = 60 * NGTCP2_SECONDS;

    ngtcp2_path path = {
        {(struct sockaddr *)&c->local, c->locallen},
        {(struct sockaddr *)&g.remote, g.remotelen},
        NULL,
    };
    if (ngtcp2_conn_client_new(&c->quic, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &callbacks, &settings, &params,
                               NULL, c) != 0) {
        c->quic = NULL;
        return -1;
    }
    ngtcp2_conn_set_tls_native_handle(c->quic, c->session);
    return 0;
}

int conn_open(struct conn *c) {
    memset(c->requests, 0, sizeof(struct request) * (size_t)g.opt.streams);
    for (int i = 0; i < g.opt.streams; i++) {
        c->requests[i].conn = c;
        c->requests[i].stream_id = -1;
    }
    c->active = 0;
    c->goaway = 0;
    c->want_write = 0;
    c->completed = 0;
    c->idle_response = 0;
    c->reopen_at = 0;
    c->expiry = UINT64_MAX;
    c->quic = NULL;
    c->h3 = NULL;
    c->session = NULL;
    c->fd = -1;
    c->conn_ref.get_conn = get_conn;
    c->conn_ref.user_data = c;
    ngtcp2_connection_close_error_default(&c->last_error);
    c->state = CONN_HANDSHAKING;
    if (open_socket(c) != 0 || open_tls(c) != 0 || open_quic(c) != 0) {
        conn_fail(c, strerror(errno));
        return -1;
    }
    conn_write(c);
    return 0;
}

void conn_free(struct conn *c) {
    for (int i = 0; i < g.opt.streams; i++) {
        if (c->requests[i].stream_id >= 0) {
            request_finished(&c->requests[i], REQUEST_ABANDONED);
        }
    }
    if (c->h3 != NULL) {
        nghttp3_conn_del(c->h3);
        c->h3 = NULL;
    }
    if (c->quic != NULL) {
        ngtcp2_conn_del(c->quic);
        c->quic = NULL;
    }
    if (c->session != NULL) {
        gnutls_deinit(c->session);
        c->session = NULL;
    }
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
    c->expiry = UINT64_MAX;
    c->state = CONN_FREE;
}

void conn_fail(struct conn *c, const char *why) {
    if (c->state == CONN_FREE) {
        return;
    }
    g.errors++;
    if (g.failures_logged < 10) {
        g.failures_logged++;
        fprintf(stderr, "h3load: connection %d failed after %llu requests: %s\n", c->index,
                (unsigned long long)c->completed, why);
    }
    uint64_t backoff = c->completed > 0 ? 0 : REOPEN_BACKOFF_NS;
    conn_free(c);
    c->reopen_at = g.now + backoff + 1;
}

void conn_send_close(struct conn *c) {
    if (c->quic == NULL || ngtcp2_conn_is_in_closing_period(c->quic) || ngtcp2_conn_is_in_draining_period(c->quic)) {
        return;
    }
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    ngtcp2_pkt_info pi;
    ngtcp2_ssize n = ngtcp2_conn_write_connection_close(c->quic, &ps.path, &pi, conn_txbuf, TX_STRIDE, &c->last_error,
                                                        g.now);
    if (n > 0) {
        (void)send(c->fd, conn_txbuf, (size_t)n, 0);
    }
}

void conn_close(struct conn *c) {
    if (c->state == CONN_FREE) {
        return;
    }
    if (c->state == CONN_READY) {
        ngtcp2_connection_close_error_set_application_error(&c->last_error, NGHTTP3_H3_NO_ERROR, NULL, 0);
    }
    conn_send_close(c);
    conn_free(c);
}

/* A fatal ngtcp2 result: send CONNECTION_CLOSE when the library still may, then fail. */
void conn_fatal(struct conn *c, int rv) {
    if (rv != NGTCP2_ERR_DRAINING && rv != NGTCP2_ERR_DROP_CONN && rv != NGTCP2_ERR_IDLE_CLOSE &&
        rv != NGTCP2_ERR_HANDSHAKE_TIMEOUT) {
        if (c->last_error.error_code == 0 && c->last_error.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT) {
            if (rv == NGTCP2_ERR_CRYPTO) {
                ngtcp2_connection_close_error_set_transport_error_tls_alert(
                    &c->last_error, ngtcp2_conn_get_tls_alert(c->quic), NULL, 0);
            } else {
                ngtcp2_connection_close_error_set_transport_error_liberr(&c->last_error, rv, NULL, 0);
            }
        }
        conn_send_close(c);
    }
    conn_fail(c, rv == NGTCP2_ERR_DRAINING ? "closed by the server" : ngtcp2_strerror(rv));
}
