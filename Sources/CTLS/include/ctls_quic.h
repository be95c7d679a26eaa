// CTLS crypto for QUIC packet protection (RFC 9001 §5): HKDF with the TLS
// 1.3 label format, the three AEADs QUIC uses, and header-protection masks,
// over libcrypto 3.0's EVP interface. Keys become opaque handles once (one
// EVP_CIPHER_CTX each, created when the key is installed); per packet only
// the nonce is set and the data processed in place, so nothing is
// allocated per packet. Plain C types only (see ctls.h for why).
#ifndef PEREGRINE_CTLS_QUIC_H
#define PEREGRINE_CTLS_QUIC_H

#include <stddef.h>
#include <stdint.h>

// Cipher suites, as TLS 1.3 names them (RFC 9846 §B.4).
#define CTLS_QUIC_AES_128_GCM 0x1301
#define CTLS_QUIC_AES_256_GCM 0x1302
#define CTLS_QUIC_CHACHA20_POLY1305 0x1303

// Hashes for HKDF.
#define CTLS_QUIC_SHA256 0
#define CTLS_QUIC_SHA384 1

// HKDF-Extract(salt, ikm) into `out` (32 or 48 bytes); returns the length
// written or -1.
int ctls_quic_hkdf_extract(int hash, const uint8_t *salt, size_t salt_len, const uint8_t *ikm,
                           size_t ikm_len, uint8_t *out, size_t out_cap);
// HKDF-Expand-Label(secret, label, context, out_len) of TLS 1.3 (RFC 9846
// §7.1): `label` without the "tls13 " prefix, which is added here. 0 or -1.
int ctls_quic_hkdf_expand_label(int hash, const uint8_t *secret, size_t secret_len, const uint8_t *label,
                                size_t label_len, const uint8_t *context, size_t context_len, uint8_t *out,
                                size_t out_len);

// An AEAD key. seal/open work in place over `len` bytes with a 12-byte
// nonce and a 16-byte tag; open returns -1 when the tag does not verify.
typedef struct ctls_quic_aead ctls_quic_aead;
ctls_quic_aead *ctls_quic_aead_new(int suite, const uint8_t *key, size_t key_len);
void ctls_quic_aead_free(ctls_quic_aead *a);
int ctls_quic_aead_seal(ctls_quic_aead *a, const uint8_t *nonce, const uint8_t *aad, size_t aad_len,
                        uint8_t *data, size_t len, uint8_t *tag);
int ctls_quic_aead_open(ctls_quic_aead *a, const uint8_t *nonce, const uint8_t *aad, size_t aad_len,
                        uint8_t *data, size_t len, const uint8_t *tag);

// A header-protection key (RFC 9001 §5.4): AES-ECB for the AES suites,
// ChaCha20 for ChaCha20-Poly1305. `mask` gets 5 bytes from a 16-byte sample.
typedef struct ctls_quic_hp ctls_quic_hp;
ctls_quic_hp *ctls_quic_hp_new(int suite, const uint8_t *key, size_t key_len);
void ctls_quic_hp_free(ctls_quic_hp *h);
int ctls_quic_hp_mask(ctls_quic_hp *h, const uint8_t *sample, uint8_t *mask);

// `len` bytes from OpenSSL's DRBG (RAND_bytes: user space, reseeded by
// OpenSSL itself, no system call per call). 0 on success, -1 on failure.
int ctls_quic_random(uint8_t *out, size_t len);

#endif
