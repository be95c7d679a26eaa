// Internal to CTLS: what quic_tls.c (the per-connection handshake) and
// quic_tls_context.c (the server and client configurations) share.
#ifndef PEREGRINE_CTLS_QUIC_TLS_INTERNAL_H
#define PEREGRINE_CTLS_QUIC_TLS_INTERNAL_H

#include "ctls_quic.h"
#include "ctls_quic_tls.h"
#include "tls_identity.h"

#include <openssl/ssl.h>

// RFC 9001 §8.2: the quic_transport_parameters extension.
#define EXT_QUIC_TRANSPORT_PARAMETERS 0x39
// RFC 9846 §5.1: a record carries at most 2^14 bytes of plaintext.
#define RECORD_PLAINTEXT_MAX 16384
#define RECORD_TAG 16
// RFC 9846 §6: the alerts this layer raises itself.
#define ALERT_UNEXPECTED_MESSAGE 10
#define ALERT_INTERNAL_ERROR 80
#define ALERT_MISSING_EXTENSION 109
#define ALERT_NO_APPLICATION_PROTOCOL 120
// RFC 9846 §4: handshake message types seen here.
#define HANDSHAKE_KEY_UPDATE 24

struct ctls_quic_tls_server {
    struct ctls_identity id;
};

struct ctls_quic_tls_client {
    SSL_CTX *ctx;
    int verify;
};

// The protection of the records wrapped at one level.
struct read_key {
    ctls_quic_aead *aead;
    uint8_t iv[12];
    uint64_t seq;
};

// Where the peer's handshake message stream stands at one level: enough to
// see each message's type as it starts.
struct framing {
    uint8_t header[4];
    uint8_t have;        // header bytes collected
    uint32_t remaining;  // body bytes still to come
};

struct event {
    int kind, level, suite;
    uint8_t *data;
    size_t len;
};

struct ctls_quic_tls_conn {
    SSL *ssl;
    BIO *rbio;  // owned by ssl
    ctls_quic_tls_server *server;
    uint8_t *tp;
    size_t tp_len;
    int omit_tp;  // a client that sends no transport parameters (tests)
    uint8_t *peer_tp;
    size_t peer_tp_len;
    int have_peer_tp;
    int write_level, read_level;
    struct read_key keys[4];
    struct framing framing[4];
    int app_secrets;  // application secrets seen: 2 when both are in
    int complete;
    struct event *events;
    size_t nevents, head, cap;
    uint8_t *taken;  // data of the event last handed out
    int sent_alert;  // the first fatal alert OpenSSL wrote
    int alert;       // the failure; 0 while none
    char reason[160];
    // A callback's verdict when it makes OpenSSL fail. Its alert wins over
    // the one OpenSSL writes: before the version is settled OpenSSL maps
    // TLS 1.3-only alerts (missing_extension) to handshake_failure, and in
    // QUIC the alert is ours to report (as CONNECTION_CLOSE), not OpenSSL's.
    int pending_alert;
    const char *pending_reason;
    uint8_t *session;
    size_t session_len;
    // What ctls_quic_tls_conn_release keeps of the freed SSL (ssl is NULL).
    uint8_t *kept_alpn;
    size_t kept_alpn_len;
    int kept_resumed, kept_suite, kept_pair;
};

// What every QUIC context, server or client, has: TLS 1.3 only with
// `suites`, no middlebox compatibility, the key-log callback and the
// transport parameters extension. 0 or -1.
int ctls_quic_tls_configure(SSL_CTX *ctx, const char *suites);
// A callback refuses the handshake: `alert` and `reason` become the
// failure when OpenSSL gives up. Returns `alert`.
int ctls_quic_tls_refuse(ctls_quic_tls_conn *c, int alert, const char *reason);

#endif
