// See include/ctls.h. All OpenSSL use of the TCP server lives here; the
// certificates, SNI and ticket keys it shares with QUIC are in tls_identity.c.
#define _GNU_SOURCE
#include "ctls.h"
#include "tls_identity.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

// The largest TLS record payload (RFC 8446 §5.1): a write of up to this
// many bytes becomes one record.
#define RECORD_MAX 16384

struct ctls_server {
    char *ciphers;
    char *ca_file;
    int client_cert_mode;
    int min_version;  // TLS1_2_VERSION or TLS1_3_VERSION
    uint8_t *alpn;
    size_t alpn_len;
    struct ctls_identity id;
};

struct ctls_conn {
    SSL *ssl;
    ctls_server *server;
    unsigned char *fbuf;  // ctls_sendfile's bytes not yet taken by SSL_write
    size_t flen;
    int shut;
};

// MARK: - Callbacks

// Optional client certificates: a certificate that does not verify does not
// end the handshake; the application sees the verification error.
static int verify_optional(int ok, X509_STORE_CTX *store) {
    (void)ok;
    (void)store;
    return 1;
}

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                       unsigned int inlen, void *arg) {
    (void)ssl;
    ctls_server *s = arg;
    unsigned char *chosen = NULL;
    // Server preference: the first of our protocols the client offers.
    if (SSL_select_next_proto(&chosen, outlen, s->alpn, (unsigned)s->alpn_len, in, inlen) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;  // no overlap: go on without ALPN (HTTP/1.1)
    *out = chosen;
    return SSL_TLSEXT_ERR_OK;
}

// MARK: - Configuration

#define CTLS_DEFAULT_TLS12_CIPHERS "ECDHE+AESGCM:ECDHE+CHACHA20"

static SSL_CTX *make_ctx(ctls_server *s, char *err, size_t errlen) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        ctls_set_err(err, errlen, "cannot create a TLS context%s%s", NULL, NULL);
        return NULL;
    }
    ctls_identity_attach(&s->id, ctx);
    SSL_CTX_set_min_proto_version(ctx, s->min_version);
    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE |
                                 SSL_OP_IGNORE_UNEXPECTED_EOF);
    // No 0-RTT: early data could be replayed.
    SSL_CTX_set_max_early_data(ctx, 0);
    SSL_CTX_set_recv_max_early_data(ctx, 0);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    // Resumption is by tickets only: a per-process session cache would not
    // help a client that lands on another worker.
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"peregrine", 9);
    // TLS 1.3: one ticket, sent at the connection's first read or write after
    // the handshake (ctls_handshake asks for it), not the moment the client's
    // Finished arrives.
    SSL_CTX_set_num_tickets(ctx, 0);
    // The TLS 1.2 default is forward-secret AEAD only: OpenSSL's own default
    // also offers CBC suites (LUCKY13-class timing risk; RFC 9113 §9.2.2 lists
    // them as unfit for HTTP/2) and plain-RSA key transport (no forward
    // secrecy, ROBOT-class risk). Every TLS 1.2 client of the last decade
    // offers one of these.
    const char *ciphers = s->ciphers ? s->ciphers : CTLS_DEFAULT_TLS12_CIPHERS;
    if (SSL_CTX_set_cipher_list(ctx, ciphers) != 1) {
        ctls_set_err(err, errlen, "--tls-ciphers '%s' selects no TLS 1.2 cipher%s", s->ciphers, NULL);
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (s->ca_file) {
        if (SSL_CTX_load_verify_locations(ctx, s->ca_file, NULL) != 1) {
            ctls_set_err(err, errlen, "cannot load the CA certificates in %s%s", s->ca_file, NULL);
            SSL_CTX_free(ctx);
            return NULL;
        }
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(s->ca_file);
        if (names) SSL_CTX_set_client_CA_list(ctx, names);
        ERR_clear_error();
        if (s->client_cert_mode == CTLS_CLIENT_CERT_REQUIRED)
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
        else if (s->client_cert_mode == CTLS_CLIENT_CERT_OPTIONAL)
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, verify_optional);
    }
    if (s->alpn_len > 0) SSL_CTX_set_alpn_select_cb(ctx, alpn_select, s);
    return ctx;
}

ctls_server *ctls_server_new(const char *ciphers, const char *ca_file, int client_cert_mode, const uint8_t *alpn,
                             size_t alpn_len, char *err, size_t errlen) {
    ctls_server *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->ciphers = ctls_dup_str(ciphers);
    s->ca_file = ctls_dup_str(ca_file);
    s->client_cert_mode = client_cert_mode;
    s->min_version = TLS1_2_VERSION;
    if (alpn_len > 0) {
        s->alpn = malloc(alpn_len);
        memcpy(s->alpn, alpn, alpn_len);
        s->alpn_len = alpn_len;
    }
    ctls_identity_init(&s->id);
    // Check the shared settings once, so their errors come before any
    // certificate's.
    SSL_CTX *probe = make_ctx(s, err, errlen);
    if (!probe) {
        ctls_server_free(s);
        return NULL;
    }
    SSL_CTX_free(probe);
    return s;
}

int ctls_server_add_pair(ctls_server *s, const char *cert_file, const char *key_file, char *err, size_t errlen) {
    SSL_CTX *ctx = make_ctx(s, err, errlen);
    if (!ctx) return -1;
    return ctls_identity_add_pair(&s->id, ctx, cert_file, key_file, err, errlen);
}

int ctls_server_set_min_version(ctls_server *s, int version) {
    if (version != TLS1_2_VERSION && version != TLS1_3_VERSION) return -1;
    s->min_version = version;
    return 0;
}

int ctls_server_set_key_password(ctls_server *s, const char *password, size_t len) {
    return ctls_identity_set_key_password(&s->id, password, len);
}

int ctls_server_set_ocsp(ctls_server *s, int pair, const char *path, char *err, size_t errlen) {
    return ctls_identity_set_ocsp(&s->id, pair, path, err, errlen);
}

int ctls_server_set_ticket_secret(ctls_server *s, const uint8_t *secret, size_t len, int period_seconds) {
    return ctls_identity_set_ticket_secret(&s->id, secret, len, period_seconds);
}

void ctls_server_free(ctls_server *s) {
    if (!s) return;
    ctls_identity_free(&s->id);
    free(s->ciphers);
    free(s->ca_file);
    free(s->alpn);
    free(s);
}


// MARK: - Connections

ctls_conn *ctls_conn_new(ctls_server *s, int fd) {
    if (!s || s->id.npairs == 0) return NULL;
    ctls_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->server = s;
    c->ssl = SSL_new(s->id.pairs[0].ctx);
    if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
        ERR_clear_error();
        SSL_free(c->ssl);
        free(c);
        return NULL;
    }
    SSL_set_accept_state(c->ssl);
    return c;
}

void ctls_conn_free(ctls_conn *c) {
    if (!c) return;
    SSL_free(c->ssl);
    free(c->fbuf);
    free(c);
}

unsigned long ctls_openssl_version_num(void) { return OpenSSL_version_num(); }

const char *ctls_openssl_version_text(void) { return OpenSSL_version(OPENSSL_VERSION); }

unsigned long ctls_openssl_header_version_num(void) { return OPENSSL_VERSION_NUMBER; }

static __thread char last_error[160];

const char *ctls_last_error(void) { return last_error; }

// Maps a failed call's SSL_get_error to a CTLS_ code.
static long failure(ctls_conn *c, int r) {
    int e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_SSL || e == SSL_ERROR_SYSCALL) {
        unsigned long code = ERR_peek_last_error();
        const char *reason = code ? ERR_reason_error_string(code) : NULL;
        snprintf(last_error, sizeof last_error, "%s", reason ? reason : (e == SSL_ERROR_SYSCALL ? strerror(errno) : "?"));
    }
    ERR_clear_error();
    switch (e) {
    case SSL_ERROR_WANT_READ: return CTLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE: return CTLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN: return 0;
    default: return CTLS_ERROR;
    }
}

int ctls_handshake(ctls_conn *c) {
    ERR_clear_error();
    int r = SSL_do_handshake(c->ssl);
    if (r == 1) {
        // The TLS 1.3 ticket waits for the connection's first read or write
        // (for HTTP/1.1, when the first request arrives). Sent the moment
        // the client's Finished arrives, it reaches the client just as it
        // writes its request, and a client that reads on one thread while it
        // writes on another (the sync client of `websockets`, over Python's
        // ssl) then runs OpenSSL's post-handshake processing and its write on
        // one SSL object at once: under CPU load a few WebSocket handshakes in
        // a thousand lost their request and hung. TLS 1.2 tickets are part of
        // the handshake.
        if (SSL_version(c->ssl) == TLS1_3_VERSION) (void)SSL_new_session_ticket(c->ssl);
        return 1;
    }
    long f = failure(c, r);
    return f == 0 ? CTLS_ERROR : (int)f;
}

long ctls_read(ctls_conn *c, void *buf, size_t len) {
    size_t total = 0;
    while (total < len) {
        ERR_clear_error();
        size_t want = len - total > INT32_MAX ? INT32_MAX : len - total;
        int r = SSL_read(c->ssl, (char *)buf + total, (int)want);
        if (r > 0) {
            total += (size_t)r;
            continue;
        }
        long f = failure(c, r);
        return total > 0 ? (long)total : f;
    }
    return (long)total;
}

static long write_all(ctls_conn *c, const unsigned char *p, size_t len, size_t *done) {
    while (*done < len) {
        ERR_clear_error();
        size_t want = len - *done > INT32_MAX ? INT32_MAX : len - *done;
        int r = SSL_write(c->ssl, p + *done, (int)want);
        if (r <= 0) return failure(c, r);
        *done += (size_t)r;
    }
    return 1;
}

long ctls_write2(ctls_conn *c, const void *a, size_t alen, const void *b, size_t blen) {
    const unsigned char *pa = a, *pb = b;
    size_t total = 0;
    if (alen > 0 && blen > 0 && alen < RECORD_MAX) {
        // A head and the start of its body in one record (and one packet).
        static __thread unsigned char joined[RECORD_MAX];
        size_t take = blen < RECORD_MAX - alen ? blen : RECORD_MAX - alen;
        memcpy(joined, pa, alen);
        memcpy(joined + alen, pb, take);
        size_t done = 0;
        long r = write_all(c, joined, alen + take, &done);
        if (r <= 0 && done == 0) return r == 0 ? CTLS_ERROR : r;
        if (done < alen + take) return (long)done;
        total = done;
        pb += take;
        blen -= take;
        alen = 0;
    }
    size_t done = 0;
    long r = alen > 0 ? write_all(c, pa, alen, &done) : 1;
    total += done;
    if (r <= 0) return total > 0 ? (long)total : (r == 0 ? CTLS_ERROR : r);
    done = 0;
    r = blen > 0 ? write_all(c, pb, blen, &done) : 1;
    total += done;
    if (r <= 0) return total > 0 ? (long)total : (r == 0 ? CTLS_ERROR : r);
    return (long)total;
}

long ctls_sendfile(ctls_conn *c, int file_fd, int64_t *offset, size_t count) {
    if (!c->fbuf) {
        c->fbuf = malloc(RECORD_MAX);
        if (!c->fbuf) return CTLS_ERROR;
    }
    size_t total = 0;
    while (total < count) {
        if (c->flen == 0) {
            size_t want = count - total < RECORD_MAX ? count - total : RECORD_MAX;
            ssize_t n;
            do { n = pread(file_fd, c->fbuf, want, (off_t)*offset); } while (n < 0 && errno == EINTR);
            if (n < 0) return total > 0 ? (long)total : CTLS_ERROR;
            if (n == 0) return total > 0 ? (long)total : CTLS_FILE_ENDED;
            c->flen = (size_t)n;
        }
        ERR_clear_error();
        int r = SSL_write(c->ssl, c->fbuf, (int)c->flen);
        if (r <= 0) {
            // The bytes stay in fbuf: the retry passes them again, as
            // SSL_write requires.
            long f = failure(c, r);
            return total > 0 ? (long)total : (f == 0 ? CTLS_ERROR : f);
        }
        if ((size_t)r < c->flen) memmove(c->fbuf, c->fbuf + r, c->flen - (size_t)r);
        c->flen -= (size_t)r;
        *offset += r;
        total += (size_t)r;
    }
    return (long)total;
}

int ctls_pending(ctls_conn *c) { return SSL_pending(c->ssl); }

void ctls_shutdown(ctls_conn *c) {
    if (c->shut) return;
    c->shut = 1;
    if (!SSL_is_init_finished(c->ssl)) return;
    ERR_clear_error();
    SSL_shutdown(c->ssl);
    ERR_clear_error();
}

// MARK: - Connection facts

void ctls_alpn(ctls_conn *c, const uint8_t **proto, size_t *len) {
    unsigned int n = 0;
    SSL_get0_alpn_selected(c->ssl, proto, &n);
    *len = n;
}

int ctls_version(ctls_conn *c) { return SSL_version(c->ssl); }
int ctls_session_reused(ctls_conn *c) { return SSL_session_reused(c->ssl); }

const char *ctls_version_name(ctls_conn *c) { return SSL_get_version(c->ssl); }

int ctls_cipher_id(ctls_conn *c) {
    const SSL_CIPHER *cipher = SSL_get_current_cipher(c->ssl);
    return cipher ? SSL_CIPHER_get_protocol_id(cipher) : 0;
}

const char *ctls_cipher_name(ctls_conn *c) {
    const SSL_CIPHER *cipher = SSL_get_current_cipher(c->ssl);
    return cipher ? SSL_CIPHER_get_name(cipher) : "";
}

const char *ctls_server_cert_pem(ctls_conn *c) {
    int i = ctls_identity_pair_of(&c->server->id, SSL_get_SSL_CTX(c->ssl));
    return i < 0 ? NULL : c->server->id.pairs[i].pem;
}

int ctls_peer_verify(ctls_conn *c, char *verify_error, size_t len) {
    if (len > 0) verify_error[0] = 0;
    X509 *x = SSL_get0_peer_certificate(c->ssl);
    if (!x) return 0;
    long v = SSL_get_verify_result(c->ssl);
    if (v != X509_V_OK && len > 0) snprintf(verify_error, len, "%s", X509_verify_cert_error_string(v));
    return 1;
}

static char *pem_of(X509 *x) {
    BIO *bio = BIO_new(BIO_s_mem());
    if (!bio) return NULL;
    PEM_write_bio_X509(bio, x);
    return ctls_bio_text(bio);
}

char *ctls_peer_cert_pem(ctls_conn *c, int index) {
    X509 *leaf = SSL_get0_peer_certificate(c->ssl);
    if (!leaf) return NULL;
    if (index == 0) return pem_of(leaf);
    // On the server side the peer chain does not include the leaf.
    STACK_OF(X509) *chain = SSL_get_peer_cert_chain(c->ssl);
    if (!chain || index - 1 >= sk_X509_num(chain)) return NULL;
    X509 *x = sk_X509_value(chain, index - 1);
    if (X509_cmp(x, leaf) == 0) {
        // Some builds put the leaf first after all: skip it.
        if (index >= sk_X509_num(chain)) return NULL;
        x = sk_X509_value(chain, index);
    }
    return pem_of(x);
}

char *ctls_peer_cert_field(ctls_conn *c, int field) {
    X509 *x = SSL_get0_peer_certificate(c->ssl);
    if (!x) return NULL;
    BIO *bio = BIO_new(BIO_s_mem());
    if (!bio) return NULL;
    // RFC 4514 form, UTF-8 left unescaped.
    unsigned long flags = XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB;
    switch (field) {
    case 0: X509_NAME_print_ex(bio, X509_get_subject_name(x), 0, flags); break;
    case 1: X509_NAME_print_ex(bio, X509_get_issuer_name(x), 0, flags); break;
    case 2: {
        BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
        char *hex = bn ? BN_bn2hex(bn) : NULL;
        if (hex) BIO_puts(bio, hex);
        OPENSSL_free(hex);
        BN_free(bn);
        break;
    }
    case 3: ASN1_TIME_print(bio, X509_get0_notBefore(x)); break;
    case 4: ASN1_TIME_print(bio, X509_get0_notAfter(x)); break;
    default: break;
    }
    ERR_clear_error();
    return ctls_bio_text(bio);
}

void ctls_free(void *p) { free(p); }

static int hexval(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

long ctls_import_secret(const char *name, uint8_t *out, size_t cap) {
    char *hex = getenv(name);
    if (!hex) return -1;
    size_t n = strlen(hex);
    long len = -1;
    if (n % 2 == 0 && n / 2 <= cap && n > 0) {
        len = (long)(n / 2);
        for (size_t i = 0; i < n / 2; i++) {
            int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
            if (hi < 0 || lo < 0) { len = -1; break; }
            out[i] = (uint8_t)(hi << 4 | lo);
        }
    }
    OPENSSL_cleanse(hex, n);
    unsetenv(name);
    return len;
}
