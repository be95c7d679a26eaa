// CTLS TLS 1.3 for QUIC (RFC 9001) on OpenSSL 3.0 and later, without the
// QUIC API OpenSSL 3.5 added: OpenSSL's own TLS state machine runs the
// handshake, and this layer translates between its records and QUIC's
// "handshake bytes and secrets per encryption level" (RFC 9001 §4.1):
//
// - each traffic secret comes from the key-log callback as OpenSSL derives
//   it (a QUIC stack needs exactly the secrets SSLKEYLOGFILE exposes);
// - the handshake messages OpenSSL writes come from the message callback,
//   at the level of the last write secret; the records it writes (under
//   keys QUIC never uses) go to a null BIO;
// - the peer's CRYPTO bytes are wrapped back into the records OpenSSL
//   expects: plaintext at the Initial level, and at later levels encrypted
//   here with the peer's traffic secret (TLS 1.3 record protection,
//   RFC 9846 §5.2) under the sequence numbers OpenSSL will count;
// - the transport parameters travel in extension 0x39 (RFC 9001 §8.2), a
//   custom extension in the ClientHello and EncryptedExtensions.
//
// Plain C types only (see ctls.h for why).
#ifndef PEREGRINE_CTLS_QUIC_TLS_H
#define PEREGRINE_CTLS_QUIC_TLS_H

#include <stddef.h>
#include <stdint.h>

// Encryption levels, as QUIC.EncryptionLevel's raw values (RFC 9001 §4.1.4).
#define CTLS_QUIC_LEVEL_INITIAL 0
#define CTLS_QUIC_LEVEL_EARLY_DATA 1
#define CTLS_QUIC_LEVEL_HANDSHAKE 2
#define CTLS_QUIC_LEVEL_APPLICATION 3

// Event kinds.
#define CTLS_QUIC_EVENT_SEND 1          // handshake bytes to send at `level`
#define CTLS_QUIC_EVENT_READ_SECRET 2   // the peer's traffic secret for `level`
#define CTLS_QUIC_EVENT_WRITE_SECRET 3  // our traffic secret for `level`
#define CTLS_QUIC_EVENT_COMPLETE 4      // handshake complete (RFC 9001 §4.1.1)

typedef struct {
    int kind;
    int level;
    int suite;  // secrets: 0x1301, 0x1302 or 0x1303
    const uint8_t *data;
    size_t len;
} ctls_quic_tls_event;

// The server configuration shared by a worker's QUIC connections: TLS 1.3
// only, the AES-GCM and ChaCha20-Poly1305 suites, elliptic-curve (and
// ML-KEM hybrid, where OpenSSL has it) key exchange, ALPN "h3" only (a client offering none refused with
// no_application_protocol), the certificate pairs and SNI selection of the
// TCP context (ctls_server_add_pair), session tickets under keys derived
// from the same shared secret (ctls_server_set_ticket_secret), and no early
// data (tickets carry no early_data extension). Errors as in ctls.h.
typedef struct ctls_quic_tls_server ctls_quic_tls_server;
ctls_quic_tls_server *ctls_quic_tls_server_new(char *err, size_t errlen);
int ctls_quic_tls_server_add_pair(ctls_quic_tls_server *s, const char *cert_file, const char *key_file, char *err,
                                  size_t errlen);
int ctls_quic_tls_server_set_ticket_secret(ctls_quic_tls_server *s, const uint8_t *secret, size_t len,
                                           int period_seconds);
// As ctls_server_set_key_password and ctls_server_set_ocsp (ctls.h).
int ctls_quic_tls_server_set_key_password(ctls_quic_tls_server *s, const char *password, size_t len);
int ctls_quic_tls_server_set_ocsp(ctls_quic_tls_server *s, int pair, const char *path, char *err, size_t errlen);
void ctls_quic_tls_server_free(ctls_quic_tls_server *s);

// A client configuration (tests, and a later client). `ciphersuites`: an
// OpenSSL TLS 1.3 suite list (NULL: the three QUIC uses). `groups`: an
// OpenSSL group list, the first one's key share sent (NULL: OpenSSL's
// default). `ca_file`: PEM bundle the server's certificate is verified
// against, with the server name checked (NULL: no verification).
typedef struct ctls_quic_tls_client ctls_quic_tls_client;
ctls_quic_tls_client *ctls_quic_tls_client_new(const char *ciphersuites, const char *groups, const char *ca_file,
                                               char *err, size_t errlen);
void ctls_quic_tls_client_free(ctls_quic_tls_client *c);

// One connection's handshake. `tp`: this endpoint's encoded transport
// parameters (copied; a client given NULL sends no 0x39 extension, which
// only tests want). The context must outlive the connection.
typedef struct ctls_quic_tls_conn ctls_quic_tls_conn;
ctls_quic_tls_conn *ctls_quic_tls_conn_new_server(ctls_quic_tls_server *s, const uint8_t *tp, size_t tp_len);
// Starts a client handshake: the ClientHello is the first event. `alpn` in
// wire format; `session` a serialized session from
// ctls_quic_tls_conn_session (NULL, or one OpenSSL cannot read: a full
// handshake). NULL when OpenSSL cannot even start (`err` says why).
ctls_quic_tls_conn *ctls_quic_tls_conn_new_client(ctls_quic_tls_client *c, const char *server_name,
                                                  const uint8_t *alpn, size_t alpn_len, const uint8_t *tp,
                                                  size_t tp_len, const uint8_t *session, size_t session_len,
                                                  char *err, size_t errlen);
void ctls_quic_tls_conn_free(ctls_quic_tls_conn *c);
// Server, once the handshake is complete and every event taken: frees the
// OpenSSL connection (SSL, BIOs, buffers) and the record keys, keeping the
// facts below (ALPN, resumption, cipher suite, certificate pair). In QUIC
// a server's TLS has nothing left to do after it has written its session
// tickets (RFC 9001 §4.1.2, §6: key updates are QUIC's). Later CRYPTO bytes
// fail with unexpected_message (RFC 9001 §4.1.3). 0, or -1 (not complete,
// a client, failed, or events still queued: nothing freed).
int ctls_quic_tls_conn_release(ctls_quic_tls_conn *c);
// 1 once ctls_quic_tls_conn_release has freed the OpenSSL connection.
int ctls_quic_tls_conn_released(ctls_quic_tls_conn *c);
// OpenSSL connections (SSL objects) of QUIC handshakes alive in the process.
long ctls_quic_tls_live_connections(void);

// Takes CRYPTO stream bytes the peer sent at `level`, in order, and runs
// the handshake as far as they allow. 0, or -1 when the handshake failed
// (now or before): ctls_quic_tls_conn_failure says how.
int ctls_quic_tls_conn_receive(ctls_quic_tls_conn *c, int level, const uint8_t *data, size_t len);
// The oldest event not yet taken: 1 and `*ev` filled (its data stays valid
// until the next call), or 0 when there is none.
int ctls_quic_tls_conn_next_event(ctls_quic_tls_conn *c, ctls_quic_tls_event *ev);
// The TLS alert the handshake failed with (0: it has not failed), and a
// reason for the log in `*reason`.
int ctls_quic_tls_conn_failure(ctls_quic_tls_conn *c, const char **reason);

// Replaces our transport parameters (copied) before they are sent; -1: out of memory.
int ctls_quic_tls_conn_set_transport_parameters(ctls_quic_tls_conn *c, const uint8_t *tp, size_t tp_len);

// Facts, as soon as they are known.
// The peer's transport parameters (the body of its 0x39 extension), or NULL.
const uint8_t *ctls_quic_tls_conn_peer_transport_parameters(ctls_quic_tls_conn *c, size_t *len);
// The negotiated ALPN protocol, or len 0.
void ctls_quic_tls_conn_alpn(ctls_quic_tls_conn *c, const uint8_t **proto, size_t *len);
// 1 when the handshake resumed a session.
int ctls_quic_tls_conn_resumed(ctls_quic_tls_conn *c);
// The cipher suite (0x1301...), or 0 before it is chosen.
int ctls_quic_tls_conn_cipher_suite(ctls_quic_tls_conn *c);
// Server: the index of the certificate pair SNI chose (-1 on a client).
int ctls_quic_tls_conn_pair_index(ctls_quic_tls_conn *c);
// Client: the latest session the server's NewSessionTicket made, serialized
// for ctls_quic_tls_conn_new_client, or NULL.
const uint8_t *ctls_quic_tls_conn_session(ctls_quic_tls_conn *c, size_t *len);
// Client: connections made afterwards send status_request (RFC 6066 §8).
void ctls_quic_tls_client_request_status(ctls_quic_tls_client *c);
// Client: the OCSP response the server stapled (DER), or NULL.
const uint8_t *ctls_quic_tls_conn_stapled_ocsp(ctls_quic_tls_conn *c, size_t *len);
// Returns the heap's free pages to the system (glibc malloc_trim(0)): the
// memory a burst of handshakes (their SSL objects, released once each is
// confirmed) freed between the connections' long-lived blocks. 1 if some
// was released, 0 if not (or not glibc).
int ctls_quic_tls_trim_heap(void);

#endif
