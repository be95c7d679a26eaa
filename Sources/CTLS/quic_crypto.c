// See include/ctls_quic.h. QUIC packet protection primitives (RFC 9001 §5).
#include "ctls_quic.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

static const char *digest_name(int hash) { return hash == CTLS_QUIC_SHA384 ? "SHA384" : "SHA256"; }

static int hkdf(int mode, int hash, const uint8_t *salt, size_t salt_len, const uint8_t *key, size_t key_len,
                const uint8_t *info, size_t info_len, uint8_t *out, size_t out_len) {
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    if (kdf == NULL) return -1;
    EVP_KDF_CTX *ctx = EVP_KDF_CTX_new(kdf);
    EVP_KDF_free(kdf);
    if (ctx == NULL) return -1;
    OSSL_PARAM params[6], *p = params;
    *p++ = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
    *p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)digest_name(hash), 0);
    *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)key, key_len);
    if (salt != NULL) *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len);
    if (info != NULL) *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, info_len);
    *p = OSSL_PARAM_construct_end();
    int ok = EVP_KDF_derive(ctx, out, out_len, params) == 1;
    EVP_KDF_CTX_free(ctx);
    return ok ? 0 : -1;
}

int ctls_quic_hkdf_extract(int hash, const uint8_t *salt, size_t salt_len, const uint8_t *ikm, size_t ikm_len,
                           uint8_t *out, size_t out_cap) {
    size_t n = hash == CTLS_QUIC_SHA384 ? 48 : 32;
    if (out_cap < n) return -1;
    // An empty IKM is legal (a zero-length connection ID); OpenSSL wants a
    // non-NULL key pointer even then.
    static const uint8_t none[1] = {0};
    if (hkdf(EVP_KDF_HKDF_MODE_EXTRACT_ONLY, hash, salt, salt_len, ikm_len ? ikm : none, ikm_len, NULL, 0, out,
             n) != 0)
        return -1;
    return (int)n;
}

int ctls_quic_hkdf_expand_label(int hash, const uint8_t *secret, size_t secret_len, const uint8_t *label,
                                size_t label_len, const uint8_t *context, size_t context_len, uint8_t *out,
                                size_t out_len) {
    // struct { uint16 length; opaque label<7..255> = "tls13 " + Label;
    //          opaque context<0..255>; } HkdfLabel;   (RFC 9846 §7.1)
    uint8_t info[2 + 1 + 255 + 1 + 255];
    if (label_len + 6 > 255 || context_len > 255 || out_len > 0xffff) return -1;
    size_t i = 0;
    info[i++] = (uint8_t)(out_len >> 8);
    info[i++] = (uint8_t)out_len;
    info[i++] = (uint8_t)(6 + label_len);
    memcpy(info + i, "tls13 ", 6);
    i += 6;
    memcpy(info + i, label, label_len);
    i += label_len;
    info[i++] = (uint8_t)context_len;
    if (context_len) memcpy(info + i, context, context_len);
    i += context_len;
    return hkdf(EVP_KDF_HKDF_MODE_EXPAND_ONLY, hash, NULL, 0, secret, secret_len, info, i, out, out_len);
}

struct ctls_quic_aead {
    EVP_CIPHER_CTX *ctx;
};

static const EVP_CIPHER *aead_cipher(int suite, size_t key_len) {
    switch (suite) {
    case CTLS_QUIC_AES_128_GCM: return key_len == 16 ? EVP_aes_128_gcm() : NULL;
    case CTLS_QUIC_AES_256_GCM: return key_len == 32 ? EVP_aes_256_gcm() : NULL;
    case CTLS_QUIC_CHACHA20_POLY1305: return key_len == 32 ? EVP_chacha20_poly1305() : NULL;
    default: return NULL;
    }
}

ctls_quic_aead *ctls_quic_aead_new(int suite, const uint8_t *key, size_t key_len) {
    const EVP_CIPHER *cipher = aead_cipher(suite, key_len);
    if (cipher == NULL) return NULL;
    // OPENSSL_zalloc: routed as OpenSSL's own blocks are (the handshake heap
    // when the caller is inside it, ctls_handshake_heap.h).
    ctls_quic_aead *a = OPENSSL_zalloc(sizeof *a);
    if (a == NULL) return NULL;
    a->ctx = EVP_CIPHER_CTX_new();
    // Both GCM and ChaCha20-Poly1305 default to the 12-byte nonce QUIC uses.
    if (a->ctx == NULL || EVP_CipherInit_ex(a->ctx, cipher, NULL, key, NULL, 1) != 1) {
        ctls_quic_aead_free(a);
        return NULL;
    }
    return a;
}

void ctls_quic_aead_free(ctls_quic_aead *a) {
    if (a == NULL) return;
    EVP_CIPHER_CTX_free(a->ctx);
    OPENSSL_free(a);
}

int ctls_quic_aead_seal(ctls_quic_aead *a, const uint8_t *nonce, const uint8_t *aad, size_t aad_len, uint8_t *data,
                        size_t len, uint8_t *tag) {
    int n;
    // The key stays; only the nonce (and direction) change per packet.
    if (EVP_CipherInit_ex(a->ctx, NULL, NULL, NULL, nonce, 1) != 1) return -1;
    if (aad_len && EVP_CipherUpdate(a->ctx, NULL, &n, aad, (int)aad_len) != 1) return -1;
    if (len && EVP_CipherUpdate(a->ctx, data, &n, data, (int)len) != 1) return -1;
    if (EVP_CipherFinal_ex(a->ctx, data + len, &n) != 1) return -1;
    if (EVP_CIPHER_CTX_ctrl(a->ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag) != 1) return -1;
    return 0;
}

int ctls_quic_aead_open(ctls_quic_aead *a, const uint8_t *nonce, const uint8_t *aad, size_t aad_len, uint8_t *data,
                        size_t len, const uint8_t *tag) {
    int n;
    if (EVP_CipherInit_ex(a->ctx, NULL, NULL, NULL, nonce, 0) != 1) return -1;
    if (aad_len && EVP_CipherUpdate(a->ctx, NULL, &n, aad, (int)aad_len) != 1) return -1;
    if (len && EVP_CipherUpdate(a->ctx, data, &n, data, (int)len) != 1) return -1;
    if (EVP_CIPHER_CTX_ctrl(a->ctx, EVP_CTRL_AEAD_SET_TAG, 16, (void *)tag) != 1) return -1;
    return EVP_CipherFinal_ex(a->ctx, data + len, &n) == 1 ? 0 : -1;
}

struct ctls_quic_hp {
    EVP_CIPHER_CTX *ctx;
    int chacha;
};

ctls_quic_hp *ctls_quic_hp_new(int suite, const uint8_t *key, size_t key_len) {
    const EVP_CIPHER *cipher;
    switch (suite) {
    case CTLS_QUIC_AES_128_GCM: cipher = key_len == 16 ? EVP_aes_128_ecb() : NULL; break;
    case CTLS_QUIC_AES_256_GCM: cipher = key_len == 32 ? EVP_aes_256_ecb() : NULL; break;
    case CTLS_QUIC_CHACHA20_POLY1305: cipher = key_len == 32 ? EVP_chacha20() : NULL; break;
    default: cipher = NULL;
    }
    if (cipher == NULL) return NULL;
    ctls_quic_hp *h = OPENSSL_zalloc(sizeof *h);
    if (h == NULL) return NULL;
    h->chacha = suite == CTLS_QUIC_CHACHA20_POLY1305;
    h->ctx = EVP_CIPHER_CTX_new();
    if (h->ctx == NULL || EVP_EncryptInit_ex(h->ctx, cipher, NULL, key, NULL) != 1) {
        ctls_quic_hp_free(h);
        return NULL;
    }
    if (!h->chacha) EVP_CIPHER_CTX_set_padding(h->ctx, 0);
    return h;
}

void ctls_quic_hp_free(ctls_quic_hp *h) {
    if (h == NULL) return;
    EVP_CIPHER_CTX_free(h->ctx);
    OPENSSL_free(h);
}

int ctls_quic_hp_mask(ctls_quic_hp *h, const uint8_t *sample, uint8_t *mask) {
    uint8_t out[32];
    int n;
    if (h->chacha) {
        // RFC 9001 §5.4.4: counter = sample[0..3] (little-endian), nonce =
        // sample[4..15]; OpenSSL's 16-byte ChaCha20 IV is exactly that
        // layout. The mask is the keystream over five zero bytes.
        static const uint8_t zeros[5] = {0};
        if (EVP_EncryptInit_ex(h->ctx, NULL, NULL, NULL, sample) != 1) return -1;
        if (EVP_EncryptUpdate(h->ctx, out, &n, zeros, 5) != 1) return -1;
    } else {
        // §5.4.3: mask = AES-ECB(hp_key, sample).
        if (EVP_EncryptUpdate(h->ctx, out, &n, sample, 16) != 1) return -1;
    }
    memcpy(mask, out, 5);
    return 0;
}

int ctls_quic_random(uint8_t *out, size_t len) {
    return RAND_bytes(out, (int)len) == 1 ? 0 : -1;
}
