// See include/ctls.h. All OpenSSL use of the server lives here.
#define _GNU_SOURCE
#include "ctls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

// The largest TLS record payload (RFC 8446 §5.1): a write of up to this
// many bytes becomes one record.
#define RECORD_MAX 16384

struct pair {
    SSL_CTX *ctx;
    char **names;  // lower-case DNS names (wildcards kept as "*.x.y")
    int nnames;
    char *pem;
};

struct ticket_key {
    int64_t index;  // period index; -1: unused
    uint8_t name[16];
    uint8_t aes[32];
    uint8_t hmac[32];
};

struct ctls_server {
    char *ciphers;
    char *ca_file;
    int client_cert_mode;
    uint8_t *alpn;
    size_t alpn_len;
    struct pair *pairs;
    int npairs;
    uint8_t secret[64];
    size_t secret_len;
    int period;
    struct ticket_key keys[3];
};

struct ctls_conn {
    SSL *ssl;
    ctls_server *server;
    unsigned char *fbuf;  // ctls_sendfile's bytes not yet taken by SSL_write
    size_t flen;
    int shut;
};

static void set_err(char *err, size_t errlen, const char *fmt, const char *a, const char *b) {
    if (!err || errlen == 0) return;
    // The most specific OpenSSL reason, if any, goes after the text.
    unsigned long e = ERR_peek_last_error();
    char reason[200] = "";
    if (e) {
        const char *r = ERR_reason_error_string(e);
        if (r) snprintf(reason, sizeof reason, " (%s)", r);
    }
    char text[700];
    snprintf(text, sizeof text, fmt, a ? a : "", b ? b : "");
    snprintf(err, errlen, "%s%s", text, reason);
    ERR_clear_error();
}

static char *dup_str(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s);
    char *p = malloc(n + 1);
    if (p) memcpy(p, s, n + 1);
    return p;
}

static char *bio_text(BIO *bio) {
    char *data = NULL;
    long n = BIO_get_mem_data(bio, &data);
    char *out = malloc((size_t)n + 1);
    if (out) {
        if (n > 0) memcpy(out, data, (size_t)n);
        out[n] = 0;
    }
    BIO_free(bio);
    return out;
}

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

// RFC 6125 §6.4.3: `*.example.com` matches one whole left-most label.
static int name_matches(const char *pattern, const char *host) {
    if (pattern[0] == '*' && pattern[1] == '.') {
        const char *dot = strchr(host, '.');
        if (!dot || dot == host) return 0;
        return strcasecmp(dot + 1, pattern + 2) == 0;
    }
    return strcasecmp(pattern, host) == 0;
}

static int find_pair(ctls_server *s, const char *host) {
    // Exact names win over wildcards; the first pair listed wins a tie.
    for (int wild = 0; wild < 2; wild++)
        for (int i = 0; i < s->npairs; i++)
            for (int j = 0; j < s->pairs[i].nnames; j++) {
                const char *n = s->pairs[i].names[j];
                int isWild = n[0] == '*';
                if (isWild == wild && name_matches(n, host)) return i;
            }
    return 0;
}

static int servername(SSL *ssl, int *alert, void *arg) {
    (void)alert;
    ctls_server *s = arg;
    const char *host = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    if (!host || s->npairs < 2) return SSL_TLSEXT_ERR_OK;
    char buf[256];
    size_t n = strlen(host);
    if (n == 0 || n >= sizeof buf) return SSL_TLSEXT_ERR_OK;
    memcpy(buf, host, n + 1);
    if (buf[n - 1] == '.') buf[n - 1] = 0;
    int i = find_pair(s, buf);
    if (i > 0) SSL_set_SSL_CTX(ssl, s->pairs[i].ctx);
    // Unknown names get the first pair rather than an alert.
    return SSL_TLSEXT_ERR_OK;
}

static int derive_key(ctls_server *s, int64_t index, struct ticket_key *k) {
    uint8_t out[80];
    size_t outlen = sizeof out;
    uint8_t info[24] = "peregrine ticket key ";
    for (int i = 0; i < 8; i++) info[16 + i] = (uint8_t)((uint64_t)index >> (56 - 8 * i));
    int ok = 0;
    EVP_PKEY_CTX *p = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
    if (p && EVP_PKEY_derive_init(p) > 0 && EVP_PKEY_CTX_set_hkdf_md(p, EVP_sha256()) > 0 &&
        EVP_PKEY_CTX_set1_hkdf_key(p, s->secret, (int)s->secret_len) > 0 &&
        EVP_PKEY_CTX_add1_hkdf_info(p, info, sizeof info) > 0 && EVP_PKEY_derive(p, out, &outlen) > 0) {
        memcpy(k->name, out, 16);
        memcpy(k->aes, out + 16, 32);
        memcpy(k->hmac, out + 48, 32);
        k->index = index;
        ok = 1;
    }
    EVP_PKEY_CTX_free(p);
    OPENSSL_cleanse(out, sizeof out);
    return ok;
}

static struct ticket_key *key_for(ctls_server *s, int64_t index) {
    for (int i = 0; i < 3; i++)
        if (s->keys[i].index == index) return &s->keys[i];
    // Replace the oldest slot.
    int victim = 0;
    for (int i = 1; i < 3; i++)
        if (s->keys[i].index < s->keys[victim].index) victim = i;
    if (!derive_key(s, index, &s->keys[victim])) {
        s->keys[victim].index = -1;
        return NULL;
    }
    return &s->keys[victim];
}

static int set_mac(EVP_MAC_CTX *mac, struct ticket_key *k) {
    OSSL_PARAM params[3];
    params[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, k->hmac, 32);
    params[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0);
    params[2] = OSSL_PARAM_construct_end();
    return EVP_MAC_CTX_set_params(mac, params);
}

// Every worker derives the same keys from the supervisor's secret, so a
// ticket from one worker resumes on any other.
static int ticket_key_cb(SSL *ssl, unsigned char *key_name, unsigned char *iv, EVP_CIPHER_CTX *cipher,
                         EVP_MAC_CTX *mac, int enc) {
    ctls_server *s = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
    if (!s || s->secret_len == 0) return 0;
    int64_t now = (int64_t)time(NULL) / s->period;
    if (enc) {
        struct ticket_key *k = key_for(s, now);
        if (!k || RAND_bytes(iv, 16) != 1) return -1;
        memcpy(key_name, k->name, 16);
        if (EVP_EncryptInit_ex(cipher, EVP_aes_256_cbc(), NULL, k->aes, iv) != 1 || !set_mac(mac, k)) return -1;
        return 1;
    }
    for (int64_t index = now; index >= now - 1; index--) {
        struct ticket_key *k = key_for(s, index);
        if (!k || memcmp(key_name, k->name, 16) != 0) continue;
        if (!set_mac(mac, k) || EVP_DecryptInit_ex(cipher, EVP_aes_256_cbc(), NULL, k->aes, iv) != 1) return -1;
        return index == now ? 1 : 2;  // 2: valid, but issue a ticket under the current key
    }
    return 0;  // unknown or expired key: a full handshake
}

// MARK: - Configuration

static SSL_CTX *make_ctx(ctls_server *s, char *err, size_t errlen) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        set_err(err, errlen, "cannot create a TLS context%s%s", NULL, NULL);
        return NULL;
    }
    SSL_CTX_set_app_data(ctx, s);
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
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
    SSL_CTX_set_num_tickets(ctx, 1);
    if (s->ciphers && SSL_CTX_set_cipher_list(ctx, s->ciphers) != 1) {
        set_err(err, errlen, "--tls-ciphers '%s' selects no TLS 1.2 cipher%s", s->ciphers, NULL);
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (s->ca_file) {
        if (SSL_CTX_load_verify_locations(ctx, s->ca_file, NULL) != 1) {
            set_err(err, errlen, "cannot load the CA certificates in %s%s", s->ca_file, NULL);
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
    SSL_CTX_set_tlsext_servername_callback(ctx, servername);
    SSL_CTX_set_tlsext_servername_arg(ctx, s);
    return ctx;
}

ctls_server *ctls_server_new(const char *ciphers, const char *ca_file, int client_cert_mode, const uint8_t *alpn,
                             size_t alpn_len, char *err, size_t errlen) {
    ctls_server *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->ciphers = dup_str(ciphers);
    s->ca_file = dup_str(ca_file);
    s->client_cert_mode = client_cert_mode;
    if (alpn_len > 0) {
        s->alpn = malloc(alpn_len);
        memcpy(s->alpn, alpn, alpn_len);
        s->alpn_len = alpn_len;
    }
    for (int i = 0; i < 3; i++) s->keys[i].index = -1;
    s->period = 3600;
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

static int readable(const char *path, const char *what, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        char text[300];
        snprintf(text, sizeof text, "cannot read %s %%s: %s%%s", what, strerror(errno));
        ERR_clear_error();
        set_err(err, errlen, text, path, NULL);
        return 0;
    }
    fclose(f);
    return 1;
}

static void collect_names(struct pair *p, X509 *x) {
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    int count = gens ? sk_GENERAL_NAME_num(gens) : 0;
    p->names = calloc((size_t)count + 1, sizeof(char *));
    for (int i = 0; i < count; i++) {
        GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        if (g->type != GEN_DNS) continue;
        const unsigned char *d = ASN1_STRING_get0_data(g->d.dNSName);
        int n = ASN1_STRING_length(g->d.dNSName);
        if (n <= 0 || memchr(d, 0, (size_t)n)) continue;
        char *name = malloc((size_t)n + 1);
        memcpy(name, d, (size_t)n);
        name[n] = 0;
        p->names[p->nnames++] = name;
    }
    GENERAL_NAMES_free(gens);
    if (p->nnames == 0) {
        // No DNS names: the subject's common name stands in (RFC 6125 §6.4.4).
        char cn[256];
        if (X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof cn) > 0)
            p->names[p->nnames++] = dup_str(cn);
    }
    ERR_clear_error();
}

int ctls_server_add_pair(ctls_server *s, const char *cert_file, const char *key_file, char *err, size_t errlen) {
    if (!readable(cert_file, "certificate file", err, errlen) || !readable(key_file, "key file", err, errlen))
        return -1;
    SSL_CTX *ctx = make_ctx(s, err, errlen);
    if (!ctx) return -1;
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
        set_err(err, errlen, "cannot load the certificate chain in %s%s", cert_file, NULL);
        SSL_CTX_free(ctx);
        return -1;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
        if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
            ERR_clear_error();
            set_err(err, errlen, "the private key in %s does not match the certificate in %s", key_file, cert_file);
        } else {
            set_err(err, errlen, "cannot load the private key in %s%s", key_file, NULL);
        }
        SSL_CTX_free(ctx);
        return -1;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        ERR_clear_error();
        set_err(err, errlen, "the private key in %s does not match the certificate in %s", key_file, cert_file);
        SSL_CTX_free(ctx);
        return -1;
    }
    struct pair *grown = realloc(s->pairs, sizeof(struct pair) * (size_t)(s->npairs + 1));
    if (!grown) {
        SSL_CTX_free(ctx);
        return -1;
    }
    s->pairs = grown;
    struct pair *p = &s->pairs[s->npairs++];
    memset(p, 0, sizeof *p);
    p->ctx = ctx;
    X509 *x = SSL_CTX_get0_certificate(ctx);
    collect_names(p, x);
    BIO *bio = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(bio, x);
    p->pem = bio_text(bio);
    if (s->secret_len > 0) SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticket_key_cb);
    return 0;
}

int ctls_server_set_ticket_secret(ctls_server *s, const uint8_t *secret, size_t len, int period_seconds) {
    if (len == 0 || len > sizeof s->secret || period_seconds <= 0) return -1;
    memcpy(s->secret, secret, len);
    s->secret_len = len;
    s->period = period_seconds;
    for (int i = 0; i < 3; i++) s->keys[i].index = -1;
    for (int i = 0; i < s->npairs; i++) SSL_CTX_set_tlsext_ticket_key_evp_cb(s->pairs[i].ctx, ticket_key_cb);
    return 0;
}

void ctls_server_free(ctls_server *s) {
    if (!s) return;
    for (int i = 0; i < s->npairs; i++) {
        SSL_CTX_free(s->pairs[i].ctx);
        for (int j = 0; j < s->pairs[i].nnames; j++) free(s->pairs[i].names[j]);
        free(s->pairs[i].names);
        free(s->pairs[i].pem);
    }
    free(s->pairs);
    free(s->ciphers);
    free(s->ca_file);
    free(s->alpn);
    OPENSSL_cleanse(s->secret, sizeof s->secret);
    OPENSSL_cleanse(s->keys, sizeof s->keys);
    free(s);
}


// MARK: - Connections

ctls_conn *ctls_conn_new(ctls_server *s, int fd) {
    if (!s || s->npairs == 0) return NULL;
    ctls_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->server = s;
    c->ssl = SSL_new(s->pairs[0].ctx);
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
    if (r == 1) return 1;
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
    SSL_CTX *ctx = SSL_get_SSL_CTX(c->ssl);
    for (int i = 0; i < c->server->npairs; i++)
        if (c->server->pairs[i].ctx == ctx) return c->server->pairs[i].pem;
    return NULL;
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
    return bio_text(bio);
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
    return bio_text(bio);
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
