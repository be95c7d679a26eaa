/*
 * The HTTP/3 layer of an h3load connection (nghttp3 0.8): the control and QPACK streams (RFC 9114 §6.2,
 * RFC 9204 §4.2), requests on client bidirectional streams (§4.1) and their responses.
 *
 * A request slot is taken when its stream is opened and freed when the response's FIN arrives (nghttp3's
 * end_stream) or when the stream closes without one (reset by the server, H3 error): the stream's user data
 * is cleared at that point so late callbacks for the stream never reach a slot already reused.
 */
#include <stdio.h>
#include <string.h>

#include "h3load.h"

/* Request bodies are `x` bytes (for an echo application), handed to nghttp3 from this shared buffer, which
 * outlives every stream (nghttp3 keeps pointers into it until the bytes are acknowledged). */
static uint8_t body_chunk[16384];

/* The request's content-length value (-b), formatted once. */
static char content_length[24];
static size_t content_length_len;

void h3_init(void) {
    memset(body_chunk, 'x', sizeof(body_chunk));
    content_length_len = (size_t)snprintf(content_length, sizeof(content_length), "%llu",
                                          (unsigned long long)g.opt.body_bytes);
}

static struct conn *conn_of(void *user_data) { return user_data; }

static void consume(struct conn *c, int64_t stream_id, size_t n) {
    ngtcp2_conn_extend_max_stream_offset(c->quic, stream_id, n);
    ngtcp2_conn_extend_max_offset(c->quic, n);
}

static int recv_data_cb(nghttp3_conn *h3, int64_t stream_id, const uint8_t *data, size_t datalen, void *ud,
                        void *sud) {
    (void)h3;
    (void)data;
    consume(conn_of(ud), stream_id, datalen);
    struct request *r = sud;
    if (r != NULL) {
        r->body_received += datalen;
    }
    return 0;
}

static int deferred_consume_cb(nghttp3_conn *h3, int64_t stream_id, size_t n, void *ud, void *sud) {
    (void)h3;
    (void)sud;
    consume(conn_of(ud), stream_id, n);
    return 0;
}

static int recv_header_cb(nghttp3_conn *h3, int64_t stream_id, int32_t token, nghttp3_rcbuf *name,
                          nghttp3_rcbuf *value, uint8_t flags, void *ud, void *sud) {
    (void)h3;
    (void)stream_id;
    (void)name;
    (void)flags;
    (void)ud;
    struct request *r = sud;
    if (r == NULL || token != NGHTTP3_QPACK_TOKEN__STATUS) {
        return 0;
    }
    nghttp3_vec v = nghttp3_rcbuf_get_buf(value);
    int status = 0;
    for (size_t i = 0; i < v.len && i < 3; i++) {
        status = status * 10 + (v.base[i] - '0');
    }
    r->status = status; /* a 1xx is replaced by the final response's (RFC 9114 §4.1) */
    return 0;
}

static int end_stream_cb(nghttp3_conn *h3, int64_t stream_id, void *ud, void *sud) {
    (void)ud;
    struct request *r = sud;
    if (r != NULL) {
        nghttp3_conn_set_stream_user_data(h3, stream_id, NULL);
        request_finished(r, REQUEST_COMPLETED);
    }
    return 0;
}

static int stream_close_cb(nghttp3_conn *h3, int64_t stream_id, uint64_t app_error_code, void *ud, void *sud) {
    (void)h3;
    (void)app_error_code;
    struct conn *c = conn_of(ud);
    if (!ngtcp2_is_bidi_stream(stream_id)) {
        ngtcp2_conn_extend_max_streams_uni(c->quic, 1);
        return 0;
    }
    struct request *r = sud;
    if (r != NULL) {
        request_finished(r, REQUEST_RESET); /* closed before its response ended */
    }
    return 0;
}

static int stop_sending_cb(nghttp3_conn *h3, int64_t stream_id, uint64_t app_error_code, void *ud, void *sud) {
    (void)h3;
    (void)sud;
    return ngtcp2_conn_shutdown_stream_read(conn_of(ud)->quic, stream_id, app_error_code) == 0
               ? 0
               : NGHTTP3_ERR_CALLBACK_FAILURE;
}

static int reset_stream_cb(nghttp3_conn *h3, int64_t stream_id, uint64_t app_error_code, void *ud, void *sud) {
    (void)h3;
    (void)sud;
    return ngtcp2_conn_shutdown_stream_write(conn_of(ud)->quic, stream_id, app_error_code) == 0
               ? 0
               : NGHTTP3_ERR_CALLBACK_FAILURE;
}

static int shutdown_cb(nghttp3_conn *h3, int64_t id, void *ud) {
    (void)h3;
    (void)id;
    conn_of(ud)->goaway = 1; /* RFC 9114 §5.2: no new requests on this connection */
    return 0;
}

static nghttp3_ssize read_body_cb(nghttp3_conn *h3, int64_t stream_id, nghttp3_vec *vec, size_t veccnt,
                                  uint32_t *pflags, void *ud, void *sud) {
    (void)h3;
    (void)stream_id;
    (void)veccnt;
    (void)ud;
    struct request *r = sud;
    size_t n = r->body_left < sizeof(body_chunk) ? (size_t)r->body_left : sizeof(body_chunk);
    vec[0].base = body_chunk;
    vec[0].len = n;
    r->body_left -= n;
    if (r->body_left == 0) {
        *pflags |= NGHTTP3_DATA_FLAG_EOF;
    }
    return 1;
}

int h3_setup(struct conn *c) {
    if (c->h3 != NULL) {
        return 0;
    }
    if (ngtcp2_conn_get_max_local_streams_uni(c->quic) < 3) {
        return -1;
    }
    nghttp3_callbacks callbacks = {
        .stream_close = stream_close_cb,
        .recv_data = recv_data_cb,
        .deferred_consume = deferred_consume_cb,
        .recv_header = recv_header_cb,
        .stop_sending = stop_sending_cb,
        .end_stream = end_stream_cb,
        .reset_stream = reset_stream_cb,
        .shutdown = shutdown_cb,
    };
    nghttp3_settings settings;
    nghttp3_settings_default(&settings);
    settings.qpack_max_dtable_capacity = 4096;
    settings.qpack_blocked_streams = 100;
    if (nghttp3_conn_client_new(&c->h3, &callbacks, &settings, NULL, c) != 0) {
        c->h3 = NULL;
        return -1;
    }
    int64_t control, encoder, decoder;
    if (ngtcp2_conn_open_uni_stream(c->quic, &control, NULL) != 0 ||
        nghttp3_conn_bind_control_stream(c->h3, control) != 0 ||
        ngtcp2_conn_open_uni_stream(c->quic, &encoder, NULL) != 0 ||
        ngtcp2_conn_open_uni_stream(c->quic, &decoder, NULL) != 0 ||
        nghttp3_conn_bind_qpack_streams(c->h3, encoder, decoder) != 0) {
        return -1;
    }
    return 0;
}

static nghttp3_nv header(const char *name, const char *value, size_t valuelen) {
    nghttp3_nv nv = {(uint8_t *)name, (uint8_t *)value, strlen(name), valuelen, NGHTTP3_NV_FLAG_NONE};
    return nv;
}

/* Opens a stream and submits one request on slot r; -1 when the peer allows no more streams. */
static int submit(struct conn *c, struct request *r) {
    int64_t stream_id;
    if (ngtcp2_conn_open_bidi_stream(c->quic, &stream_id, NULL) != 0) {
        return -1;
    }
    nghttp3_nv nva[5] = {
        header(":method", g.opt.post ? "POST" : "GET", g.opt.post ? 4 : 3),
        header(":scheme", "https", 5),
        header(":authority", g.opt.authority, strlen(g.opt.authority)),
        header(":path", g.opt.path, strlen(g.opt.path)),
        header("content-length", content_length, content_length_len),
    };
    r->stream_id = stream_id;
    r->started = g.now;
    r->body_left = g.opt.post ? g.opt.body_bytes : 0;
    r->body_received = 0;
    r->status = 0;
    nghttp3_data_reader reader = {.read_data = read_body_cb};
    int post_with_body = g.opt.post && g.opt.body_bytes > 0;
    if (nghttp3_conn_submit_request(c->h3, stream_id, nva, g.opt.post ? 5 : 4, post_with_body ? &reader : NULL,
                                    r) != 0) {
        r->stream_id = -1;
        return -1;
    }
    c->active++;
    g.inflight++;
    return 0;
}

void h3_fill(struct conn *c) {
    if (c->state != CONN_READY || c->h3 == NULL || c->goaway) {
        return;
    }
    if (g.opt.idle > 0) {
        /* --idle: one GET per connection, then silence. */
        if (c->completed == 0 && c->active == 0 && g.phase != PHASE_DONE) {
            (void)submit(c, &c->requests[0]);
        }
        return;
    }
    for (int i = 0; i < g.opt.streams && c->active < (size_t)g.opt.streams; i++) {
        struct request *r = &c->requests[i];
        if (r->stream_id >= 0) {
            continue;
        }
        if (!load_wants_request()) {
            return;
        }
        if (submit(c, r) != 0) {
            return;
        }
    }
}
