// OCSP stapling from a file (--tls-ocsp): the certificate status request
// extension of RFC 6066 §8. A client that sends status_request gets the DER
// OCSPResponse (RFC 6960 §4.2.1) of the certificate it is served: in TLS 1.2
// as a CertificateStatus message, in TLS 1.3 inside the leaf's
// CertificateEntry (RFC 8446 §4.4.2.1). OpenSSL does the framing; this file
// loads and checks the response and answers OpenSSL's status callback.
//
// The response is fetched by the operator (`openssl ocsp ... -respout`) and
// re-read by every new worker, so a SIGHUP after the file is refreshed
// staples the new one. The checks at load time catch the mistakes an
// operator can make with a file (not DER, an unsuccessful response, one for
// another certificate, a revoked certificate); the signature is the
// client's to verify. A response past its nextUpdate is no longer stapled
// (a stale staple makes strict clients fail; none makes them ask).
#define _GNU_SOURCE
#include "tls_identity.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/ocsp.h>
#include <openssl/x509v3.h>

// The largest OCSP response file accepted. Real responses are 1–4 KiB (one
// signature, maybe the responder's certificate); anything far larger is
// the wrong file.
#define OCSP_FILE_MAX (64 * 1024)

// The whole file into a malloc'd buffer; NULL with `err` written.
static unsigned char *read_file(const char *path, size_t *len, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        char text[300];
        snprintf(text, sizeof text, "cannot read the OCSP response file %%s: %s%%s", strerror(errno));
        ERR_clear_error();
        ctls_set_err(err, errlen, text, path, NULL);
        return NULL;
    }
    unsigned char *buf = malloc(OCSP_FILE_MAX + 1);
    size_t n = buf ? fread(buf, 1, OCSP_FILE_MAX + 1, f) : 0;
    int failed = buf ? ferror(f) : 1;
    fclose(f);
    if (failed || n == 0 || n > OCSP_FILE_MAX) {
        ERR_clear_error();
        ctls_set_err(err, errlen,
                     failed ? "cannot read the OCSP response file %s%s"
                     : n == 0 ? "the OCSP response file %s is empty%s"
                              : "the OCSP response file %s is larger than 64 KiB: not an OCSP response%s",
                     path, NULL);
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

// The certificate in `ctx`'s chain that issued `leaf`, or NULL.
static X509 *issuer_in_chain(SSL_CTX *ctx, X509 *leaf) {
    STACK_OF(X509) *chain = NULL;
    if (SSL_CTX_get0_chain_certs(ctx, &chain) != 1 || !chain) return NULL;
    for (int i = 0; i < sk_X509_num(chain); i++) {
        X509 *candidate = sk_X509_value(chain, i);
        if (X509_check_issued(candidate, leaf) == X509_V_OK) return candidate;
    }
    return NULL;
}

static time_t to_time(const ASN1_GENERALIZEDTIME *t) {
    struct tm tm;
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1) return 0;
    return timegm(&tm);
}

// Checks the response against the pair's certificate; 0 with *next_update
// set, or -1 with `err` written.
static int check_response(SSL_CTX *ctx, const char *path, const unsigned char *der, size_t len,
                          time_t *next_update, char *err, size_t errlen) {
    const unsigned char *p = der;
    OCSP_RESPONSE *response = d2i_OCSP_RESPONSE(NULL, &p, (long)len);
    if (!response || p != der + len) {
        OCSP_RESPONSE_free(response);
        ctls_set_err(err, errlen, "the file %s is not a DER OCSP response%s", path, NULL);
        return -1;
    }
    int result = -1;
    OCSP_BASICRESP *basic = NULL;
    OCSP_CERTID *id = NULL;
    int status = OCSP_response_status(response);
    if (status != OCSP_RESPONSE_STATUS_SUCCESSFUL) {
        ctls_set_err(err, errlen, "the OCSP response in %s is not a successful one (%s)", path,
                     OCSP_response_status_str(status));
        goto done;
    }
    basic = OCSP_response_get1_basic(response);
    if (!basic) {
        ctls_set_err(err, errlen, "the OCSP response in %s has no basic response%s", path, NULL);
        goto done;
    }
    X509 *leaf = SSL_CTX_get0_certificate(ctx);
    X509 *issuer = leaf ? issuer_in_chain(ctx, leaf) : NULL;
    ASN1_GENERALIZEDTIME *next = NULL;
    if (issuer) {
        // The chain file holds the issuer: the response must speak of this
        // very certificate (its CertID hashes the issuer's name and key).
        int cert_status = 0, reason = 0;
        ASN1_GENERALIZEDTIME *revoked = NULL, *this_update = NULL;
        id = OCSP_cert_to_id(NULL, leaf, issuer);
        if (!id || OCSP_resp_find_status(basic, id, &cert_status, &reason, &revoked, &this_update, &next) != 1) {
            ERR_clear_error();
            ctls_set_err(err, errlen, "the OCSP response in %s is not about the certificate it is paired with%s",
                         path, NULL);
            goto done;
        }
        if (cert_status == V_OCSP_CERTSTATUS_REVOKED) {
            ctls_set_err(err, errlen, "the OCSP response in %s says the certificate is revoked%s", path, NULL);
            goto done;
        }
    } else if (OCSP_resp_count(basic) > 0) {
        // No issuer to compute the CertID with: the first response's
        // nextUpdate still bounds how long it is stapled.
        OCSP_SINGLERESP *single = OCSP_resp_get0(basic, 0);
        OCSP_single_get0_status(single, NULL, NULL, NULL, &next);
    }
    *next_update = to_time(next);
    result = 0;
done:
    OCSP_CERTID_free(id);
    OCSP_BASICRESP_free(basic);
    OCSP_RESPONSE_free(response);
    ERR_clear_error();
    return result;
}

int ctls_identity_set_ocsp(struct ctls_identity *id, int pair, const char *path, char *err, size_t errlen) {
    if (pair < 0 || pair >= id->npairs) {
        ctls_set_err(err, errlen, "--tls-ocsp %s has no certificate to go with%s", path, NULL);
        return -1;
    }
    size_t len = 0;
    unsigned char *der = read_file(path, &len, err, errlen);
    if (!der) return -1;
    time_t next_update = 0;
    if (check_response(id->pairs[pair].ctx, path, der, len, &next_update, err, errlen) != 0) {
        free(der);
        return -1;
    }
    struct ctls_pair *p = &id->pairs[pair];
    free(p->ocsp);
    p->ocsp = der;
    p->ocsp_len = len;
    p->ocsp_next_update = next_update;
    // 1: loaded, but already past its nextUpdate (the caller warns).
    return next_update != 0 && time(NULL) > next_update ? 1 : 0;
}

int ctls_ocsp_staple(SSL *ssl, void *arg) {
    struct ctls_identity *id = arg;
    // After SNI the connection's SSL_CTX is its pair's (see servername).
    int i = ctls_identity_pair_of(id, SSL_get_SSL_CTX(ssl));
    if (i < 0) return SSL_TLSEXT_ERR_NOACK;
    struct ctls_pair *p = &id->pairs[i];
    if (!p->ocsp || (p->ocsp_next_update != 0 && time(NULL) > p->ocsp_next_update)) return SSL_TLSEXT_ERR_NOACK;
    // OpenSSL takes ownership of the copy.
    unsigned char *copy = OPENSSL_memdup(p->ocsp, p->ocsp_len);
    if (!copy) return SSL_TLSEXT_ERR_NOACK;
    if (SSL_set_tlsext_status_ocsp_resp(ssl, copy, (long)p->ocsp_len) != 1) {
        OPENSSL_free(copy);
        return SSL_TLSEXT_ERR_NOACK;
    }
    return SSL_TLSEXT_ERR_OK;
}
