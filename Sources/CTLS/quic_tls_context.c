// See include/ctls_quic_tls.h: the server and client configurations of
// TLS for QUIC, and the OpenSSL callbacks that decide on a ClientHello
// (ALPN, transport parameters) and keep a client's sessions.
#define _GNU_SOURCE
#include "quic_tls_internal.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>

static const char QUIC_SUITES[] = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
// Key exchange groups of the server: elliptic curves, led by the ML-KEM
// hybrid where OpenSSL has it (3.5). No finite-field groups: ffdhe8192
// costs the server milliseconds of CPU per Initial packet, which anyone can
// send from any address; a client offering only such a share is asked for
// another (HelloRetryRequest).
static const char QUIC_GROUPS_PQ[] = "X25519MLKEM768:X25519:P-256:X448:P-384:P-521";
static const char QUIC_GROUPS[] = "X25519:P-256:X448:P-384:P-521";

// RFC 9001 §8.2: a ClientHello without transport parameters is refused with
// missing_extension; §8.1: one without ALPN with no_application_protocol.
static int client_hello(SSL *ssl, int *al, void *arg) {
    (void)arg;
    ctls_quic_tls_conn *c = SSL_get_app_data(ssl);
    const unsigned char *p;
    size_t n;
    if (!SSL_client_hello_get0_ext(ssl, EXT_QUIC_TRANSPORT_PARAMETERS, &p, &n)) {
        *al = ctls_quic_tls_refuse(c, ALERT_MISSING_EXTENSION,
                                   "ClientHello without quic_transport_parameters (RFC 9001 §8.2)");
        return SSL_CLIENT_HELLO_ERROR;
    }
    if (!SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &p, &n)) {
        *al = ctls_quic_tls_refuse(c, ALERT_NO_APPLICATION_PROTOCOL, "ClientHello without ALPN (RFC 9001 §8.1)");
        return SSL_CLIENT_HELLO_ERROR;
    }
    return SSL_CLIENT_HELLO_SUCCESS;
}

// ALPN: "h3" or nothing (RFC 9114 §3.1).
static int alpn_h3(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                   unsigned int inlen, void *arg) {
    (void)arg;
    for (unsigned int i = 0; i < inlen;) {
        unsigned int n = in[i];
        if (n == 0 || i + 1 + n > inlen) break;
        if (n == 2 && in[i + 1] == 'h' && in[i + 2] == '3') {
            *out = in + i + 1;
            *outlen = 2;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + n;
    }
    ctls_quic_tls_conn *c = SSL_get_app_data(ssl);
    ctls_quic_tls_refuse(c, ALERT_NO_APPLICATION_PROTOCOL,
                         "the client offers no ALPN protocol this server speaks (h3)");
    return SSL_TLSEXT_ERR_ALERT_FATAL;  // no_application_protocol
}

static int new_session(SSL *ssl, SSL_SESSION *sess) {
    ctls_quic_tls_conn *c = SSL_get_app_data(ssl);
    int n = i2d_SSL_SESSION(sess, NULL);
    uint8_t *bytes = n > 0 ? malloc((size_t)n) : NULL;
    if (bytes) {
        uint8_t *p = bytes;
        i2d_SSL_SESSION(sess, &p);
        free(c->session);
        c->session = bytes;
        c->session_len = (size_t)n;
    }
    return 0;  // OpenSSL keeps its reference
}

// MARK: - Contexts

static SSL_CTX *make_server_ctx(ctls_quic_tls_server *s, char *err, size_t errlen) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx || ctls_quic_tls_configure(ctx, QUIC_SUITES) != 0) {
        ctls_set_err(err, errlen, "cannot create a TLS context for QUIC%s%s", NULL, NULL);
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (SSL_CTX_set1_groups_list(ctx, QUIC_GROUPS_PQ) != 1) {
        ERR_clear_error();  // no ML-KEM before OpenSSL 3.5
        if (SSL_CTX_set1_groups_list(ctx, QUIC_GROUPS) != 1) {
            ctls_set_err(err, errlen, "cannot set the key exchange groups for QUIC%s%s", NULL, NULL);
            SSL_CTX_free(ctx);
            return NULL;
        }
    }
    ctls_identity_attach(&s->id, ctx);
    SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
    // RFC 9001 §4.6: this server accepts no 0-RTT, so its tickets offer none.
    SSL_CTX_set_max_early_data(ctx, 0);
    SSL_CTX_set_recv_max_early_data(ctx, 0);
    // Stateless tickets only (any worker resumes them); a context of its
    // own, so a session from TLS over TCP never resumes over QUIC.
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"peregrine-quic", 14);
    SSL_CTX_set_num_tickets(ctx, 1);
    SSL_CTX_set_client_hello_cb(ctx, client_hello, NULL);
    SSL_CTX_set_alpn_select_cb(ctx, alpn_h3, NULL);
    return ctx;
}

ctls_quic_tls_server *ctls_quic_tls_server_new(char *err, size_t errlen) {
    ctls_quic_tls_server *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    ctls_identity_init(&s->id);
    SSL_CTX *probe = make_server_ctx(s, err, errlen);
    if (!probe) {
        free(s);
        return NULL;
    }
    SSL_CTX_free(probe);
    return s;
}

int ctls_quic_tls_server_add_pair(ctls_quic_tls_server *s, const char *cert_file, const char *key_file, char *err,
                                  size_t errlen) {
    SSL_CTX *ctx = make_server_ctx(s, err, errlen);
    if (!ctx) return -1;
    return ctls_identity_add_pair(&s->id, ctx, cert_file, key_file, err, errlen);
}

int ctls_quic_tls_server_set_ticket_secret(ctls_quic_tls_server *s, const uint8_t *secret, size_t len,
                                           int period_seconds) {
    return ctls_identity_set_ticket_secret(&s->id, secret, len, period_seconds);
}

int ctls_quic_tls_server_set_key_password(ctls_quic_tls_server *s, const char *password, size_t len) {
    return ctls_identity_set_key_password(&s->id, password, len);
}

int ctls_quic_tls_server_set_ocsp(ctls_quic_tls_server *s, int pair, const char *path, char *err, size_t errlen) {
    return ctls_identity_set_ocsp(&s->id, pair, path, err, errlen);
}

void ctls_quic_tls_server_free(ctls_quic_tls_server *s) {
    if (!s) return;
    ctls_identity_free(&s->id);
    free(s);
}

ctls_quic_tls_client *ctls_quic_tls_client_new(const char *ciphersuites, const char *groups, const char *ca_file,
                                               char *err, size_t errlen) {
    ctls_quic_tls_client *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->ctx = SSL_CTX_new(TLS_client_method());
    if (!c->ctx || ctls_quic_tls_configure(c->ctx, ciphersuites ? ciphersuites : QUIC_SUITES) != 0) {
        ctls_set_err(err, errlen, "cannot create a QUIC client context with suites '%s'%s", ciphersuites, NULL);
        ctls_quic_tls_client_free(c);
        return NULL;
    }
    if (groups && SSL_CTX_set1_groups_list(c->ctx, groups) != 1) {
        ctls_set_err(err, errlen, "cannot use the key exchange groups '%s'%s", groups, NULL);
        ctls_quic_tls_client_free(c);
        return NULL;
    }
    SSL_CTX_set_session_cache_mode(c->ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(c->ctx, new_session);
    if (ca_file) {
        if (SSL_CTX_load_verify_locations(c->ctx, ca_file, NULL) != 1) {
            ctls_set_err(err, errlen, "cannot load the CA certificates in %s%s", ca_file, NULL);
            ctls_quic_tls_client_free(c);
            return NULL;
        }
        c->verify = 1;
    }
    return c;
}

void ctls_quic_tls_client_free(ctls_quic_tls_client *c) {
    if (!c) return;
    SSL_CTX_free(c->ctx);
    free(c);
}

