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

#include <openssl/bio.h>
#include <openssl/ssl.h>

struct ctls_pair {
    SSL_CTX *ctx;
    char **names;  // lower-case DNS names (wildcards kept as "*.x.y")
    int nnames;
    char *pem;
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
// See ctls_server_set_ticket_secret in ctls.h.
int ctls_identity_set_ticket_secret(struct ctls_identity *id, const uint8_t *secret, size_t len, int period_seconds);
void ctls_identity_free(struct ctls_identity *id);
// The pair whose SSL_CTX `ctx` is, or -1.
int ctls_identity_pair_of(const struct ctls_identity *id, const SSL_CTX *ctx);

// One line of text into `err`, with OpenSSL's most specific reason after it.
void ctls_set_err(char *err, size_t errlen, const char *fmt, const char *a, const char *b);
char *ctls_dup_str(const char *s);
// The memory BIO's bytes as a malloc'd C string; frees the BIO.
char *ctls_bio_text(BIO *bio);

#endif
