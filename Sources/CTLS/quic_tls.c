// See include/ctls_quic_tls.h: TLS 1.3 for QUIC through OpenSSL's own
// state machine (the technique nginx uses where OpenSSL has no QUIC API,
// written anew here).
//
// Theory of operation. OpenSSL believes it talks TLS over a byte stream:
// it reads records from a memory BIO and writes records to a null BIO.
//
//   peer CRYPTO bytes, level L --wrap(L)--> rbio --> OpenSSL state machine
//   OpenSSL --msg_callback(handshake message)--> SEND event at write_level
//   OpenSSL --keylog_callback(secret)--> READ/WRITE_SECRET events
//   OpenSSL --records under its own keys--> null BIO (QUIC never uses them)
//
// Levels follow the secrets: a handshake message OpenSSL writes belongs to
// the level of the last write secret it announced (the secret is logged in
// the same step that switches its record layer to it), and bytes the peer
// sent at a level must be at the level OpenSSL now reads (read_level).
// Wrapping at the Initial level is a plaintext record; at the Handshake
// and application levels it is a TLS 1.3 record (RFC 9846 §5.2) sealed
// with the key and IV OpenSSL itself derives from the peer's secret
// (RFC 9846 §7.3), with the record count as sequence number: OpenSSL's
// record layer opens it as if the peer had sent it. Records never span
// levels, so no record crosses a key change (RFC 9846 §5.1).
#define _GNU_SOURCE
#include "quic_tls_internal.h"
#include "ctls_handshake_heap.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <openssl/err.h>

// MARK: - Events and failures

static int push(ctls_quic_tls_conn *c, int kind, int level, int suite, const void *data, size_t len) {
    // Consecutive handshake messages at one level go out as one SEND.
    if (kind == CTLS_QUIC_EVENT_SEND && c->nevents > c->head) {
        struct event *last = &c->events[c->nevents - 1];
        if (last->kind == CTLS_QUIC_EVENT_SEND && last->level == level) {
            uint8_t *grown = ctls_handshake_heap_realloc(last->data, last->len + len);
            if (!grown) return -1;
            memcpy(grown + last->len, data, len);
            last->data = grown;
            last->len += len;
            return 0;
        }
    }
    if (c->head == c->nevents) c->head = c->nevents = 0;
    if (c->nevents == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        struct event *grown = ctls_handshake_heap_realloc(c->events, cap * sizeof *grown);
        if (!grown) return -1;
        c->events = grown;
        c->cap = cap;
    }
    uint8_t *copy = NULL;
    if (len > 0) {
        copy = ctls_handshake_heap_malloc(len);
        if (!copy) return -1;
        memcpy(copy, data, len);
    }
    c->events[c->nevents++] = (struct event){kind, level, suite, copy, len};
    return 0;
}

// The handshake is complete: announced before the session ticket the
// server writes in the same step, which is application data after it.
static int push_complete(ctls_quic_tls_conn *c) {
    if (push(c, CTLS_QUIC_EVENT_COMPLETE, CTLS_QUIC_LEVEL_APPLICATION, 0, NULL, 0) != 0) return -1;
    size_t at = c->head;
    while (at < c->nevents - 1 &&
           !(c->events[at].kind == CTLS_QUIC_EVENT_SEND && c->events[at].level == CTLS_QUIC_LEVEL_APPLICATION))
        at++;
    struct event done = c->events[c->nevents - 1];
    memmove(&c->events[at + 1], &c->events[at], (c->nevents - 1 - at) * sizeof done);
    c->events[at] = done;
    return 0;
}

static int fail(ctls_quic_tls_conn *c, int alert, const char *reason) {
    if (c->alert == 0) {
        c->alert = alert;
        snprintf(c->reason, sizeof c->reason, "%s", reason);
    }
    return -1;
}

// OpenSSL failed: the alert it sent says how; the most specific reason
// (ours from a callback, else OpenSSL's) says why.
static int fail_openssl(ctls_quic_tls_conn *c) {
    unsigned long code = ERR_peek_last_error();
    const char *reason = c->pending_reason;
    if (!reason) reason = code ? ERR_reason_error_string(code) : NULL;
    ERR_clear_error();
    int alert = c->pending_alert ? c->pending_alert : c->sent_alert ? c->sent_alert : ALERT_INTERNAL_ERROR;
    return fail(c, alert, reason ? reason : "TLS handshake failed");
}

int ctls_quic_tls_refuse(ctls_quic_tls_conn *c, int alert, const char *reason) {
    c->pending_alert = alert;
    c->pending_reason = reason;
    return alert;
}

// MARK: - OpenSSL callbacks

static int hexval(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

static int install_read_key(ctls_quic_tls_conn *c, int level, int suite, const uint8_t *secret, size_t len) {
    // RFC 9846 §7.3: the record key and IV of a traffic secret.
    int hash = suite == CTLS_QUIC_AES_256_GCM ? CTLS_QUIC_SHA384 : CTLS_QUIC_SHA256;
    size_t key_len = suite == CTLS_QUIC_AES_128_GCM ? 16 : 32;
    uint8_t key[32];
    struct read_key *k = &c->keys[level];
    if (ctls_quic_hkdf_expand_label(hash, secret, len, (const uint8_t *)"key", 3, NULL, 0, key, key_len) != 0 ||
        ctls_quic_hkdf_expand_label(hash, secret, len, (const uint8_t *)"iv", 2, NULL, 0, k->iv, 12) != 0)
        return -1;
    ctls_quic_aead_free(k->aead);
    k->aead = ctls_quic_aead_new(suite, key, key_len);
    k->seq = 0;
    OPENSSL_cleanse(key, sizeof key);
    return k->aead ? 0 : -1;
}

// "<LABEL> <client random> <secret>" (hex), once per secret derived.
static void keylog(const SSL *ssl, const char *line) {
    ctls_quic_tls_conn *c = SSL_get_app_data(ssl);
    if (!c || c->alert) return;
    static const struct {
        const char *label;
        int level, client;
    } labels[] = {
        {"CLIENT_HANDSHAKE_TRAFFIC_SECRET ", CTLS_QUIC_LEVEL_HANDSHAKE, 1},
        {"SERVER_HANDSHAKE_TRAFFIC_SECRET ", CTLS_QUIC_LEVEL_HANDSHAKE, 0},
        {"CLIENT_TRAFFIC_SECRET_0 ", CTLS_QUIC_LEVEL_APPLICATION, 1},
        {"SERVER_TRAFFIC_SECRET_0 ", CTLS_QUIC_LEVEL_APPLICATION, 0},
    };
    int which = -1;
    for (int i = 0; i < 4 && which < 0; i++)
        if (strncmp(line, labels[i].label, strlen(labels[i].label)) == 0) which = i;
    // Early-data and exporter secrets: not QUIC's business here.
    if (which < 0) return;
    const char *hex = strchr(line + strlen(labels[which].label), ' ');
    uint8_t secret[64];
    size_t len = 0;
    for (hex = hex ? hex + 1 : ""; hex[0] && hex[1] && len < sizeof secret; hex += 2) {
        int hi = hexval(hex[0]), lo = hexval(hex[1]);
        if (hi < 0 || lo < 0) break;
        secret[len++] = (uint8_t)(hi << 4 | lo);
    }
    const SSL_CIPHER *cipher = SSL_get_pending_cipher(ssl);
    if (!cipher) cipher = SSL_get_current_cipher(ssl);
    int suite = cipher ? SSL_CIPHER_get_protocol_id(cipher) : 0;
    size_t expected = suite == CTLS_QUIC_AES_256_GCM ? 48 : 32;
    if (suite < CTLS_QUIC_AES_128_GCM || suite > CTLS_QUIC_CHACHA20_POLY1305 || len != expected) {
        fail(c, ALERT_INTERNAL_ERROR, "a traffic secret of an unknown cipher suite");
        return;
    }
    int level = labels[which].level;
    int ours = labels[which].client != (c->server != NULL);
    if (ours) {
        c->write_level = level;
    } else {
        if (install_read_key(c, level, suite, secret, len) != 0) {
            fail(c, ALERT_INTERNAL_ERROR, "cannot derive a record key");
            return;
        }
        c->read_level = level;
    }
    if (level == CTLS_QUIC_LEVEL_APPLICATION) c->app_secrets++;
    if (push(c, ours ? CTLS_QUIC_EVENT_WRITE_SECRET : CTLS_QUIC_EVENT_READ_SECRET, level, suite, secret, len) != 0)
        fail(c, ALERT_INTERNAL_ERROR, "out of memory");
    OPENSSL_cleanse(secret, sizeof secret);
}

// Every message OpenSSL writes, whole; alerts it sends end the handshake.
static void on_message(int write_p, int version, int content_type, const void *buf, size_t len, SSL *ssl,
                       void *arg) {
    (void)version;
    (void)ssl;
    ctls_quic_tls_conn *c = arg;
    if (!write_p) return;
    const uint8_t *p = buf;
    if (content_type == SSL3_RT_HANDSHAKE) {
        if (push(c, CTLS_QUIC_EVENT_SEND, c->write_level, 0, buf, len) != 0)
            fail(c, ALERT_INTERNAL_ERROR, "out of memory");
    } else if (content_type == SSL3_RT_ALERT && len >= 2 && p[0] == SSL3_AL_FATAL && c->sent_alert == 0) {
        c->sent_alert = p[1];
    }
}

static int tp_add(SSL *ssl, unsigned int type, unsigned int context, const unsigned char **out, size_t *outlen,
                  X509 *x, size_t chainidx, int *al, void *arg) {
    (void)type, (void)context, (void)x, (void)chainidx, (void)al, (void)arg;
    ctls_quic_tls_conn *c = SSL_get_app_data(ssl);
    if (c->omit_tp) return 0;
    *out = c->tp;
    *outlen = c->tp_len;
    return 1;
}

static void tp_free(SSL *ssl, unsigned int type, unsigned int context, const unsigned char *out, void *arg) {
    // The bytes belong to the connection.
    (void)ssl, (void)type, (void)context, (void)out, (void)arg;
}

static int tp_parse(SSL *ssl, unsigned int type, unsigned int context, const unsigned char *in, size_t inlen,
                    X509 *x, size_t chainidx, int *al, void *arg) {
    (void)type, (void)context, (void)x, (void)chainidx, (void)arg;
    ctls_quic_tls_conn *c = SSL_get_app_data(ssl);
    uint8_t *copy = ctls_handshake_heap_malloc(inlen ? inlen : 1);
    if (!copy) {
        *al = SSL_AD_INTERNAL_ERROR;
        return 0;
    }
    if (inlen) memcpy(copy, in, inlen);
    ctls_handshake_heap_free(c->peer_tp);
    c->peer_tp = copy;
    c->peer_tp_len = inlen;
    c->have_peer_tp = 1;
    return 1;
}

// What both sides' contexts share.
int ctls_quic_tls_configure(SSL_CTX *ctx, const char *suites) {
    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
    // RFC 9001 §8.4: no middlebox compatibility mode (no ChangeCipherSpec).
    SSL_CTX_clear_options(ctx, SSL_OP_ENABLE_MIDDLEBOX_COMPAT);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION);
    SSL_CTX_set_keylog_callback(ctx, keylog);
    if (SSL_CTX_set_ciphersuites(ctx, suites) != 1) return -1;
    // OpenSSL 3.5 knows 0x39 but registers it only on connections that use
    // its own QUIC API (SSL_set_quic_tls_cbs), per connection; it is not a
    // built-in extension (SSL_extension_supported), so adding it as a
    // custom one works on 3.5 as on 3.0.
    return SSL_CTX_add_custom_ext(ctx, EXT_QUIC_TRANSPORT_PARAMETERS,
                                  SSL_EXT_CLIENT_HELLO | SSL_EXT_TLS1_3_ENCRYPTED_EXTENSIONS, tp_add, tp_free, NULL,
                                  tp_parse, NULL) == 1
               ? 0
               : -1;
}

// MARK: - Connections

// SSL objects of QUIC handshakes alive: what a test (and the worker's
// stats line) checks to see TLS state freed after the handshake.
static atomic_long live_connections;

long ctls_quic_tls_live_connections(void) { return atomic_load(&live_connections); }

static void ssl_free(ctls_quic_tls_conn *c) {
    if (!c->ssl) return;
    SSL_free(c->ssl);
    c->ssl = NULL;
    c->rbio = NULL;
    atomic_fetch_sub(&live_connections, 1);
}

static ctls_quic_tls_conn *conn_new(SSL_CTX *ctx, const uint8_t *tp, size_t tp_len) {
    ctls_quic_tls_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->tp = ctls_handshake_heap_malloc(tp_len ? tp_len : 1);
    c->ssl = SSL_new(ctx);
    if (c->ssl) atomic_fetch_add(&live_connections, 1);
    BIO *rbio = BIO_new(BIO_s_mem());
    BIO *wbio = BIO_new(BIO_s_null());
    if (!c->tp || !c->ssl || !rbio || !wbio) {
        BIO_free(rbio);
        BIO_free(wbio);
        ctls_quic_tls_conn_free(c);
        ERR_clear_error();
        return NULL;
    }
    if (tp_len) memcpy(c->tp, tp, tp_len);
    c->tp_len = tp_len;
    c->omit_tp = tp == NULL;
    // An empty read BIO means "wait for more", not end of stream.
    BIO_set_mem_eof_return(rbio, -1);
    SSL_set_bio(c->ssl, rbio, wbio);
    c->rbio = rbio;
    SSL_set_app_data(c->ssl, c);
    SSL_set_msg_callback(c->ssl, on_message);
    SSL_set_msg_callback_arg(c->ssl, c);
    return c;
}

// OpenSSL's allocations while it works for a QUIC handshake go to the
// handshake heap (ctls_handshake_heap.h): freed when the handshake is
// over, they would otherwise leave pages of malloc's heap pinned by the
// blocks connections keep. Our own long-lived blocks (the connection, the
// facts kept after release) stay malloc's; the packet protection keys are
// made by the caller, outside.
ctls_quic_tls_conn *ctls_quic_tls_conn_new_server(ctls_quic_tls_server *s, const uint8_t *tp, size_t tp_len) {
    if (!s || s->id.npairs == 0) return NULL;
    ctls_handshake_heap_enter();
    ctls_quic_tls_conn *c = conn_new(s->id.pairs[0].ctx, tp, tp_len);
    ctls_handshake_heap_leave();
    if (!c) return NULL;
    c->server = s;
    c->omit_tp = 0;
    SSL_set_accept_state(c->ssl);
    return c;
}

static int drive(ctls_quic_tls_conn *c);

static ctls_quic_tls_conn *new_client(ctls_quic_tls_client *cl, const char *server_name, const uint8_t *alpn,
                                      size_t alpn_len, const uint8_t *tp, size_t tp_len, const uint8_t *session,
                                      size_t session_len, char *err, size_t errlen) {
    ctls_quic_tls_conn *c = conn_new(cl->ctx, tp, tp_len);
    if (!c) {
        ctls_set_err(err, errlen, "cannot create a TLS connection%s%s", NULL, NULL);
        return NULL;
    }
    int ok = SSL_set_alpn_protos(c->ssl, alpn, (unsigned)alpn_len) == 0;  // 0 is success here
    if (ok && server_name) {
        ok = SSL_set_tlsext_host_name(c->ssl, server_name) == 1;
        if (ok && cl->verify) ok = SSL_set1_host(c->ssl, server_name) == 1;
    }
    if (cl->verify) SSL_set_verify(c->ssl, SSL_VERIFY_PEER, NULL);
    if (ok && session) {
        const uint8_t *p = session;
        SSL_SESSION *sess = d2i_SSL_SESSION(NULL, &p, (long)session_len);
        if (sess) SSL_set_session(c->ssl, sess);
        SSL_SESSION_free(sess);
        ERR_clear_error();
    }
    SSL_set_connect_state(c->ssl);
    if (!ok || drive(c) != 0) {
        ctls_set_err(err, errlen, "cannot start a TLS handshake: %s%s", c->alert ? c->reason : "", NULL);
        ctls_quic_tls_conn_free(c);
        return NULL;
    }
    return c;
}

ctls_quic_tls_conn *ctls_quic_tls_conn_new_client(ctls_quic_tls_client *cl, const char *server_name,
                                                  const uint8_t *alpn, size_t alpn_len, const uint8_t *tp,
                                                  size_t tp_len, const uint8_t *session, size_t session_len,
                                                  char *err, size_t errlen) {
    ctls_handshake_heap_enter();
    ctls_quic_tls_conn *c =
        new_client(cl, server_name, alpn, alpn_len, tp, tp_len, session, session_len, err, errlen);
    ctls_handshake_heap_leave();
    return c;
}

void ctls_quic_tls_conn_free(ctls_quic_tls_conn *c) {
    if (!c) return;
    ssl_free(c);
    for (int i = 0; i < 4; i++) ctls_quic_aead_free(c->keys[i].aead);
    for (size_t i = c->head; i < c->nevents; i++) {
        OPENSSL_cleanse(c->events[i].data, c->events[i].len);
        ctls_handshake_heap_free(c->events[i].data);
    }
    ctls_handshake_heap_free(c->events);
    ctls_handshake_heap_free(c->taken);
    ctls_handshake_heap_free(c->tp);
    ctls_handshake_heap_free(c->peer_tp);
    free(c->session);
    free(c->kept_alpn);
    free(c);
}

int ctls_quic_tls_conn_release(ctls_quic_tls_conn *c) {
    if (!c->ssl) return 0;
    if (!c->server || !c->complete || c->alert || c->head != c->nevents) return -1;
    const uint8_t *proto;
    unsigned int n = 0;
    SSL_get0_alpn_selected(c->ssl, &proto, &n);
    uint8_t *alpn = malloc(n ? n : 1);
    if (!alpn) return -1;
    if (n) memcpy(alpn, proto, n);
    c->kept_alpn = alpn;
    c->kept_alpn_len = n;
    c->kept_resumed = SSL_session_reused(c->ssl);
    c->kept_suite = ctls_quic_tls_conn_cipher_suite(c);
    c->kept_pair = ctls_quic_tls_conn_pair_index(c);
    ssl_free(c);
    for (int i = 0; i < 4; i++) {
        ctls_quic_aead_free(c->keys[i].aead);
        c->keys[i].aead = NULL;
    }
    ctls_handshake_heap_free(c->events);
    c->events = NULL;
    c->nevents = c->head = c->cap = 0;
    ctls_handshake_heap_free(c->taken);
    c->taken = NULL;
    ctls_handshake_heap_free(c->tp);
    c->tp = NULL;
    c->tp_len = 0;
    // The peer's transport parameters were applied when they arrived.
    ctls_handshake_heap_free(c->peer_tp);
    c->peer_tp = NULL;
    c->peer_tp_len = 0;
    return 0;
}

int ctls_quic_tls_conn_released(ctls_quic_tls_conn *c) { return c->ssl == NULL; }

// Runs OpenSSL until it waits for the peer. The handshake first; after it,
// a read takes post-handshake messages (NewSessionTicket at a client).
static int drive(ctls_quic_tls_conn *c) {
    ERR_clear_error();
    if (!c->complete) {
        int r = SSL_do_handshake(c->ssl);
        if (c->alert) return -1;  // a callback failed
        if (r != 1) return SSL_get_error(c->ssl, r) == SSL_ERROR_WANT_READ ? 0 : fail_openssl(c);
        // RFC 9001 §8.2 and §8.1 from the client's side: the server must
        // have answered with transport parameters and an ALPN protocol.
        const uint8_t *proto;
        unsigned int n;
        SSL_get0_alpn_selected(c->ssl, &proto, &n);
        if (!c->have_peer_tp)
            return fail(c, ALERT_MISSING_EXTENSION, "the server sent no quic_transport_parameters (RFC 9001 §8.2)");
        if (n == 0) return fail(c, ALERT_NO_APPLICATION_PROTOCOL, "the server chose no ALPN protocol (RFC 9001 §8.1)");
        c->complete = 1;
        if (push_complete(c) != 0) return fail(c, ALERT_INTERNAL_ERROR, "out of memory");
    }
    uint8_t byte;
    int r = SSL_read(c->ssl, &byte, 1);
    if (c->alert) return -1;
    if (r > 0) return fail(c, ALERT_UNEXPECTED_MESSAGE, "application data in a QUIC TLS handshake");
    return SSL_get_error(c->ssl, r) == SSL_ERROR_WANT_READ ? 0 : fail_openssl(c);
}

// RFC 9001 §6: "Endpoints MUST treat the receipt of a TLS KeyUpdate message
// as a connection error of type 0x010a" (unexpected_message). Checked on
// the bytes before OpenSSL sees them, which would rekey its record layer.
static int has_key_update(struct framing *f, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n;) {
        if (f->remaining > 0) {
            size_t take = n - i < f->remaining ? n - i : f->remaining;
            f->remaining -= (uint32_t)take;
            i += take;
            continue;
        }
        f->header[f->have++] = p[i++];
        if (f->have == 1 && f->header[0] == HANDSHAKE_KEY_UPDATE) return 1;
        if (f->have == 4) {
            f->remaining = (uint32_t)f->header[1] << 16 | (uint32_t)f->header[2] << 8 | f->header[3];
            f->have = 0;
        }
    }
    return 0;
}

// One record of handshake bytes into the read BIO, as the peer would have
// sent it at `level`.
static int wrap(ctls_quic_tls_conn *c, int level, const uint8_t *p, size_t n) {
    uint8_t record[5 + RECORD_PLAINTEXT_MAX + 1 + RECORD_TAG];
    size_t total;
    if (level == CTLS_QUIC_LEVEL_INITIAL) {
        // TLSPlaintext: handshake(22), legacy_record_version 0x0303.
        record[0] = SSL3_RT_HANDSHAKE;
        total = 5 + n;
        memcpy(record + 5, p, n);
    } else {
        // TLSCiphertext: application_data(23) outside; inside the content,
        // then the real type, no padding (RFC 9846 §5.2). The header is the
        // additional data; the nonce is the IV XOR the sequence number (§5.3).
        struct read_key *k = &c->keys[level];
        size_t sealed = n + 1 + RECORD_TAG;
        record[0] = SSL3_RT_APPLICATION_DATA;
        record[3] = (uint8_t)(sealed >> 8);
        record[4] = (uint8_t)sealed;
        memcpy(record + 5, p, n);
        record[5 + n] = SSL3_RT_HANDSHAKE;
        uint8_t nonce[12];
        memcpy(nonce, k->iv, 12);
        for (int i = 0; i < 8; i++) nonce[4 + i] ^= (uint8_t)(k->seq >> (56 - 8 * i));
        record[1] = 3, record[2] = 3;
        if (ctls_quic_aead_seal(k->aead, nonce, record, 5, record + 5, n + 1, record + 5 + n + 1) != 0) return -1;
        k->seq++;
        total = 5 + sealed;
    }
    record[1] = 3, record[2] = 3;
    record[3] = (uint8_t)((total - 5) >> 8);
    record[4] = (uint8_t)(total - 5);
    return BIO_write(c->rbio, record, (int)total) == (int)total ? 0 : -1;
}

static int receive(ctls_quic_tls_conn *c, int level, const uint8_t *data, size_t len) {
    if (c->alert) return -1;
    // RFC 9001 §4.1.3: CRYPTO data is handed to TLS, which after the
    // handshake takes only post-handshake messages; a QUIC client sends
    // none we accept (no KeyUpdate, §6; no post-handshake authentication
    // asked for; a server's NewSessionTicket is not a client's to send).
    // OpenSSL answered such a message with unexpected_message before it
    // was freed; so does this.
    if (!c->ssl)
        return fail(c, ALERT_UNEXPECTED_MESSAGE, "CRYPTO data after the handshake (RFC 9001 §4.1.3)");
    if (level < CTLS_QUIC_LEVEL_INITIAL || level > CTLS_QUIC_LEVEL_APPLICATION || level != c->read_level)
        return fail(c, ALERT_UNEXPECTED_MESSAGE, "handshake bytes at an encryption level not being read");
    if (has_key_update(&c->framing[level], data, len))
        return fail(c, ALERT_UNEXPECTED_MESSAGE, "a TLS KeyUpdate message (RFC 9001 §6)");
    for (size_t at = 0; at < len;) {
        size_t n = len - at < RECORD_PLAINTEXT_MAX ? len - at : RECORD_PLAINTEXT_MAX;
        if (wrap(c, level, data + at, n) != 0) return fail(c, ALERT_INTERNAL_ERROR, "cannot wrap a TLS record");
        at += n;
        // Hand each record over at once: one that makes OpenSSL change
        // keys must be read before the next is sealed for the new ones.
        if (drive(c) != 0) return -1;
        if (level != c->read_level && at < len)
            return fail(c, ALERT_UNEXPECTED_MESSAGE, "handshake bytes after a key change at the same level");
    }
    return drive(c);
}

int ctls_quic_tls_conn_receive(ctls_quic_tls_conn *c, int level, const uint8_t *data, size_t len) {
    ctls_handshake_heap_enter();
    int r = receive(c, level, data, len);
    ctls_handshake_heap_leave();
    return r;
}

int ctls_quic_tls_conn_next_event(ctls_quic_tls_conn *c, ctls_quic_tls_event *ev) {
    if (c->taken) {
        ctls_handshake_heap_free(c->taken);
        c->taken = NULL;
    }
    if (c->head == c->nevents) return 0;
    struct event *e = &c->events[c->head++];
    c->taken = e->data;
    *ev = (ctls_quic_tls_event){e->kind, e->level, e->suite, e->data, e->len};
    return 1;
}

int ctls_quic_tls_conn_failure(ctls_quic_tls_conn *c, const char **reason) {
    if (reason) *reason = c->reason;
    return c->alert;
}

// Replaces our transport parameters before the handshake sends them (a
// server that switched versions after reading the ClientHello, RFC 9368).
int ctls_quic_tls_conn_set_transport_parameters(ctls_quic_tls_conn *c, const uint8_t *tp, size_t tp_len) {
    ctls_handshake_heap_enter();
    uint8_t *copy = ctls_handshake_heap_malloc(tp_len ? tp_len : 1);
    ctls_handshake_heap_leave();
    if (!copy) return -1;
    if (tp_len) memcpy(copy, tp, tp_len);
    ctls_handshake_heap_free(c->tp);
    c->tp = copy;
    c->tp_len = tp_len;
    return 0;
}

// MARK: - Facts

const uint8_t *ctls_quic_tls_conn_peer_transport_parameters(ctls_quic_tls_conn *c, size_t *len) {
    *len = c->peer_tp_len;
    return c->have_peer_tp ? c->peer_tp : NULL;
}

void ctls_quic_tls_conn_alpn(ctls_quic_tls_conn *c, const uint8_t **proto, size_t *len) {
    if (!c->ssl) {
        *proto = c->kept_alpn;
        *len = c->kept_alpn_len;
        return;
    }
    unsigned int n = 0;
    SSL_get0_alpn_selected(c->ssl, proto, &n);
    *len = n;
}

int ctls_quic_tls_conn_resumed(ctls_quic_tls_conn *c) { return c->ssl ? SSL_session_reused(c->ssl) : c->kept_resumed; }

int ctls_quic_tls_conn_cipher_suite(ctls_quic_tls_conn *c) {
    if (!c->ssl) return c->kept_suite;
    const SSL_CIPHER *cipher = SSL_get_current_cipher(c->ssl);
    if (!cipher) cipher = SSL_get_pending_cipher(c->ssl);
    return cipher ? SSL_CIPHER_get_protocol_id(cipher) : 0;
}

int ctls_quic_tls_conn_pair_index(ctls_quic_tls_conn *c) {
    if (!c->ssl) return c->kept_pair;
    return c->server ? ctls_identity_pair_of(&c->server->id, SSL_get_SSL_CTX(c->ssl)) : -1;
}

const uint8_t *ctls_quic_tls_conn_session(ctls_quic_tls_conn *c, size_t *len) {
    *len = c->session_len;
    return c->session;
}

void ctls_quic_tls_client_request_status(ctls_quic_tls_client *c) {
    SSL_CTX_set_tlsext_status_type(c->ctx, TLSEXT_STATUSTYPE_ocsp);
}

const uint8_t *ctls_quic_tls_conn_stapled_ocsp(ctls_quic_tls_conn *c, size_t *len) {
    const unsigned char *p = NULL;
    if (!c->ssl) {
        *len = 0;
        return NULL;
    }
    long n = SSL_get_tlsext_status_ocsp_resp(c->ssl, &p);
    if (n <= 0 || !p) {
        *len = 0;
        return NULL;
    }
    *len = (size_t)n;
    return p;
}

int ctls_quic_tls_trim_heap(void) {
#if defined(__GLIBC__)
    return malloc_trim(0);
#else
    return 0;
#endif
}
