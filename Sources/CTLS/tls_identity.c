// See tls_identity.h. Moved out of ctls.c so the QUIC server context loads
// certificates, picks them by SNI and issues tickets exactly as TCP does.
#define _GNU_SOURCE
#include "tls_identity.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

void ctls_set_err(char *err, size_t errlen, const char *fmt, const char *a, const char *b) {
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

char *ctls_dup_str(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s);
    char *p = malloc(n + 1);
    if (p) memcpy(p, s, n + 1);
    return p;
}

char *ctls_bio_text(BIO *bio) {
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

// MARK: - SNI

// RFC 6125 §6.4.3: `*.example.com` matches one whole left-most label.
static int name_matches(const char *pattern, const char *host) {
    if (pattern[0] == '*' && pattern[1] == '.') {
        const char *dot = strchr(host, '.');
        if (!dot || dot == host) return 0;
        return strcasecmp(dot + 1, pattern + 2) == 0;
    }
    return strcasecmp(pattern, host) == 0;
}

static int find_pair(struct ctls_identity *id, const char *host) {
    // Exact names win over wildcards; the first pair listed wins a tie.
    for (int wild = 0; wild < 2; wild++)
        for (int i = 0; i < id->npairs; i++)
            for (int j = 0; j < id->pairs[i].nnames; j++) {
                const char *n = id->pairs[i].names[j];
                int isWild = n[0] == '*';
                if (isWild == wild && name_matches(n, host)) return i;
            }
    return 0;
}

static int servername(SSL *ssl, int *alert, void *arg) {
    (void)alert;
    struct ctls_identity *id = arg;
    const char *host = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    if (!host || id->npairs < 2) return SSL_TLSEXT_ERR_OK;
    char buf[256];
    size_t n = strlen(host);
    if (n == 0 || n >= sizeof buf) return SSL_TLSEXT_ERR_OK;
    memcpy(buf, host, n + 1);
    if (buf[n - 1] == '.') buf[n - 1] = 0;
    int i = find_pair(id, buf);
    // Every pair's SSL_CTX was made by the same server kind, so switching
    // keeps the callbacks (and custom extensions) the connection started with.
    if (i > 0) SSL_set_SSL_CTX(ssl, id->pairs[i].ctx);
    // Unknown names get the first pair rather than an alert.
    return SSL_TLSEXT_ERR_OK;
}

int ctls_identity_pair_of(const struct ctls_identity *id, const SSL_CTX *ctx) {
    for (int i = 0; i < id->npairs; i++)
        if (id->pairs[i].ctx == ctx) return i;
    return -1;
}

// MARK: - Session tickets

static int derive_key(struct ctls_identity *id, int64_t index, struct ctls_ticket_key *k) {
    uint8_t out[80];
    size_t outlen = sizeof out;
    uint8_t info[24] = "peregrine ticket key ";
    for (int i = 0; i < 8; i++) info[16 + i] = (uint8_t)((uint64_t)index >> (56 - 8 * i));
    int ok = 0;
    EVP_PKEY_CTX *p = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
    if (p && EVP_PKEY_derive_init(p) > 0 && EVP_PKEY_CTX_set_hkdf_md(p, EVP_sha256()) > 0 &&
        EVP_PKEY_CTX_set1_hkdf_key(p, id->secret, (int)id->secret_len) > 0 &&
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

static struct ctls_ticket_key *key_for(struct ctls_identity *id, int64_t index) {
    for (int i = 0; i < 3; i++)
        if (id->keys[i].index == index) return &id->keys[i];
    // Replace the oldest slot.
    int victim = 0;
    for (int i = 1; i < 3; i++)
        if (id->keys[i].index < id->keys[victim].index) victim = i;
    if (!derive_key(id, index, &id->keys[victim])) {
        id->keys[victim].index = -1;
        return NULL;
    }
    return &id->keys[victim];
}

static int set_mac(EVP_MAC_CTX *mac, struct ctls_ticket_key *k) {
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
    struct ctls_identity *id = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
    if (!id || id->secret_len == 0) return 0;
    int64_t now = (int64_t)time(NULL) / id->period;
    if (enc) {
        struct ctls_ticket_key *k = key_for(id, now);
        if (!k || RAND_bytes(iv, 16) != 1) return -1;
        memcpy(key_name, k->name, 16);
        if (EVP_EncryptInit_ex(cipher, EVP_aes_256_cbc(), NULL, k->aes, iv) != 1 || !set_mac(mac, k)) return -1;
        return 1;
    }
    for (int64_t index = now; index >= now - 1; index--) {
        struct ctls_ticket_key *k = key_for(id, index);
        if (!k || memcmp(key_name, k->name, 16) != 0) continue;
        if (!set_mac(mac, k) || EVP_DecryptInit_ex(cipher, EVP_aes_256_cbc(), NULL, k->aes, iv) != 1) return -1;
        return index == now ? 1 : 2;  // 2: valid, but issue a ticket under the current key
    }
    return 0;  // unknown or expired key: a full handshake
}

int ctls_identity_set_ticket_secret(struct ctls_identity *id, const uint8_t *secret, size_t len, int period_seconds) {
    if (len == 0 || len > sizeof id->secret || period_seconds <= 0) return -1;
    memcpy(id->secret, secret, len);
    id->secret_len = len;
    id->period = period_seconds;
    for (int i = 0; i < 3; i++) id->keys[i].index = -1;
    for (int i = 0; i < id->npairs; i++) SSL_CTX_set_tlsext_ticket_key_evp_cb(id->pairs[i].ctx, ticket_key_cb);
    return 0;
}

// MARK: - Pairs

void ctls_identity_init(struct ctls_identity *id) {
    memset(id, 0, sizeof *id);
    for (int i = 0; i < 3; i++) id->keys[i].index = -1;
    id->period = 3600;
}

void ctls_identity_attach(struct ctls_identity *id, SSL_CTX *ctx) {
    SSL_CTX_set_app_data(ctx, id);
    SSL_CTX_set_tlsext_servername_callback(ctx, servername);
    SSL_CTX_set_tlsext_servername_arg(ctx, id);
    SSL_CTX_set_tlsext_status_cb(ctx, ctls_ocsp_staple);
    SSL_CTX_set_tlsext_status_arg(ctx, id);
}

// MARK: - Key passwords

// OpenSSL's PEM password callback. Without a password it fails at once:
// OpenSSL's default would prompt on the terminal of a server.
static int key_password(char *buf, int size, int rwflag, void *arg) {
    (void)rwflag;
    struct ctls_identity *id = arg;
    id->password_asked = 1;
    if (!id->password || size < 0 || id->password_len > (size_t)size) return -1;
    memcpy(buf, id->password, id->password_len);
    return (int)id->password_len;
}

int ctls_identity_set_key_password(struct ctls_identity *id, const char *password, size_t len) {
    if (id->password) {
        OPENSSL_cleanse(id->password, id->password_len);
        free(id->password);
    }
    id->password = NULL;
    id->password_len = 0;
    if (!password) return 0;
    id->password = malloc(len + 1);
    if (!id->password) return -1;
    memcpy(id->password, password, len);
    id->password[len] = 0;
    id->password_len = len;
    return 0;
}

static int readable(const char *path, const char *what, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        char text[300];
        snprintf(text, sizeof text, "cannot read %s %%s: %s%%s", what, strerror(errno));
        ERR_clear_error();
        ctls_set_err(err, errlen, text, path, NULL);
        return 0;
    }
    fclose(f);
    return 1;
}

static void collect_names(struct ctls_pair *p, X509 *x) {
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
            p->names[p->nnames++] = ctls_dup_str(cn);
    }
    ERR_clear_error();
}

int ctls_identity_add_pair(struct ctls_identity *id, SSL_CTX *ctx, const char *cert_file, const char *key_file,
                           char *err, size_t errlen) {
    if (!readable(cert_file, "certificate file", err, errlen) || !readable(key_file, "key file", err, errlen)) {
        SSL_CTX_free(ctx);
        return -1;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
        ctls_set_err(err, errlen, "cannot load the certificate chain in %s%s", cert_file, NULL);
        SSL_CTX_free(ctx);
        return -1;
    }
    // Encrypted keys (PKCS#8 "ENCRYPTED PRIVATE KEY" or the traditional
    // "Proc-Type: 4,ENCRYPTED" PEM) ask key_password.
    SSL_CTX_set_default_passwd_cb(ctx, key_password);
    SSL_CTX_set_default_passwd_cb_userdata(ctx, id);
    id->password_asked = 0;
    int loaded = SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM);
    SSL_CTX_set_default_passwd_cb(ctx, NULL);
    SSL_CTX_set_default_passwd_cb_userdata(ctx, NULL);
    if (loaded != 1) {
        if (id->password_asked && !id->password) {
            ERR_clear_error();
            ctls_set_err(err, errlen,
                         "the private key in %s is encrypted: give its password with --tls-key-password-file%s",
                         key_file, NULL);
        } else if (id->password_asked) {
            ERR_clear_error();
            ctls_set_err(err, errlen, "cannot decrypt the private key in %s: wrong password%s", key_file, NULL);
        } else if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
            ERR_clear_error();
            ctls_set_err(err, errlen, "the private key in %s does not match the certificate in %s", key_file,
                         cert_file);
        } else {
            ctls_set_err(err, errlen, "cannot load the private key in %s%s", key_file, NULL);
        }
        SSL_CTX_free(ctx);
        return -1;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        ERR_clear_error();
        ctls_set_err(err, errlen, "the private key in %s does not match the certificate in %s", key_file, cert_file);
        SSL_CTX_free(ctx);
        return -1;
    }
    struct ctls_pair *grown = realloc(id->pairs, sizeof(struct ctls_pair) * (size_t)(id->npairs + 1));
    if (!grown) {
        SSL_CTX_free(ctx);
        return -1;
    }
    id->pairs = grown;
    struct ctls_pair *p = &id->pairs[id->npairs++];
    memset(p, 0, sizeof *p);
    p->ctx = ctx;
    X509 *x = SSL_CTX_get0_certificate(ctx);
    collect_names(p, x);
    BIO *bio = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(bio, x);
    p->pem = ctls_bio_text(bio);
    if (id->secret_len > 0) SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticket_key_cb);
    return 0;
}

void ctls_identity_free(struct ctls_identity *id) {
    for (int i = 0; i < id->npairs; i++) {
        SSL_CTX_free(id->pairs[i].ctx);
        for (int j = 0; j < id->pairs[i].nnames; j++) free(id->pairs[i].names[j]);
        free(id->pairs[i].names);
        free(id->pairs[i].pem);
        free(id->pairs[i].ocsp);
    }
    free(id->pairs);
    id->pairs = NULL;
    ctls_identity_set_key_password(id, NULL, 0);
    id->npairs = 0;
    OPENSSL_cleanse(id->secret, sizeof id->secret);
    OPENSSL_cleanse(id->keys, sizeof id->keys);
}
