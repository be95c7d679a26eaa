// What the TCP server context (ctls.c) and the QUIC server context
// (quic_tls.c) share: the certificate/key pairs with the DNS names SNI picks
// them by, and the session-ticket keys derived from the secret every worker
// shares. Internal to CTLS (not under include/: it pulls in OpenSSL).
//
// Each pair owns an SSL_CTX built by its server kind (TCP or QUIC); the
// identity loads the certificate into it and installs the SNI and ticket
// callbacks, whose argument (and the SSL_CTX's app data) is the identity.
#ifndef PEREGRINE_CTLS_IDENTITY_H
#define PEREGRINE_CTLS_IDENTITY_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/ssl.h>

struct ctls_pair {
    SSL_CTX *ctx;
    char **names;  // lower-case DNS names (wildcards kept as "*.x.y")
    int nnames;
    char *pem;
    // --tls-ocsp: a DER OCSP response stapled when the client asks
    // (status_request, RFC 6066 §8); not stapled after `ocsp_next_update`
    // (0: the response names none).
    unsigned char *ocsp;
    size_t ocsp_len;
    time_t ocsp_next_update;
};

struct ctls_ticket_key {
    int64_t index;  // period index; -1: unused
    uint8_t name[16];
    uint8_t aes[32];
    uint8_t hmac[32];
};

struct ctls_identity {
    struct ctls_pair *pairs;
    int npairs;
    uint8_t secret[64];
    size_t secret_len;
    int period;
    struct ctls_ticket_key keys[3];
    // --tls-key-password: what the PEM password callback answers for every
    // encrypted key (NULL: none given, so an encrypted key fails rather
    // than OpenSSL prompting on the terminal). `password_asked` records
    // that the key being loaded turned out to be encrypted.
    char *password;
    size_t password_len;
    int password_asked;
};

// An empty identity (no pairs, no secret, one-hour ticket periods).
void ctls_identity_init(struct ctls_identity *id);
// Points `ctx` at the identity: app data, SNI callback. Every SSL_CTX a
// pair will own goes through this before ctls_identity_add_pair.
void ctls_identity_attach(struct ctls_identity *id, SSL_CTX *ctx);
// Loads the chain and key files into `ctx` (made by the caller and attached)
// and appends the pair; on failure frees `ctx`, writes `err` and returns -1.
int ctls_identity_add_pair(struct ctls_identity *id, SSL_CTX *ctx, const char *cert_file, const char *key_file,
                           char *err, size_t errlen);
// See ctls_server_set_key_password in ctls.h.
int ctls_identity_set_key_password(struct ctls_identity *id, const char *password, size_t len);
// See ctls_server_set_ocsp in ctls.h.
int ctls_identity_set_ocsp(struct ctls_identity *id, int pair, const char *path, char *err, size_t errlen);
// See ctls_server_set_ticket_secret in ctls.h.
int ctls_identity_set_ticket_secret(struct ctls_identity *id, const uint8_t *secret, size_t len, int period_seconds);
void ctls_identity_free(struct ctls_identity *id);
// The pair whose SSL_CTX `ctx` is, or -1.
int ctls_identity_pair_of(const struct ctls_identity *id, const SSL_CTX *ctx);

// The status_request callback every attached SSL_CTX gets (tls_ocsp.c):
// staples the response of the pair the connection uses, if it has one.
int ctls_ocsp_staple(SSL *ssl, void *arg);

// One line of text into `err`, with OpenSSL's most specific reason after it.
void ctls_set_err(char *err, size_t errlen, const char *fmt, const char *a, const char *b);
char *ctls_dup_str(const char *s);
// The memory BIO's bytes as a malloc'd C string; frees the BIO.
char *ctls_bio_text(BIO *bio);

#endif
