// CTLS: the server side of TLS 1.2/1.3 on the system OpenSSL, behind small
// functions with plain C types. Swift sees only this header, which includes
// stdint/stddef alone (as CSys does): OpenSSL's headers pulled in through a
// module would clash with the same system headers seen through Python.h.
//
// A `ctls_server` is the configuration shared by all connections of a
// worker: one SSL_CTX per certificate/key pair (the first is the default,
// the others are chosen by SNI), the cipher list, client-certificate
// verification, the ALPN preference list and the session-ticket keys. A
// `ctls_conn` is one connection's SSL object on a non-blocking socket.
#ifndef PEREGRINE_CTLS_H
#define PEREGRINE_CTLS_H

#include <stddef.h>
#include <stdint.h>

typedef struct ctls_server ctls_server;
typedef struct ctls_conn ctls_conn;

// Results of the I/O calls below (bytes are >= 0).
#define CTLS_WANT_READ (-2)
#define CTLS_WANT_WRITE (-3)
#define CTLS_ERROR (-1)
// ctls_sendfile: the file ended before `count` bytes.
#define CTLS_FILE_ENDED (-4)

// Client-certificate modes.
#define CTLS_CLIENT_CERT_NONE 0
#define CTLS_CLIENT_CERT_OPTIONAL 1
#define CTLS_CLIENT_CERT_REQUIRED 2

// Configuration. Every call that can fail writes one line of text into
// `err` (NUL-terminated) and returns NULL or -1.
//
// `ciphers`: OpenSSL cipher list for TLS 1.2 (NULL: OpenSSL's default);
// TLS 1.3 suites stay the defaults. `ca_file`: PEM CA bundle that client
// certificates are verified against (NULL: none asked for). `alpn`: the
// server's ALPN protocols in preference order, in wire format (length-
// prefixed names).
ctls_server *ctls_server_new(const char *ciphers, const char *ca_file, int client_cert_mode,
                             const uint8_t *alpn, size_t alpn_len, char *err, size_t errlen);
// Adds a certificate chain and its private key (PEM files). The first pair
// is the default; later pairs are chosen when the client's SNI name matches
// one of the certificate's DNS names (subjectAltName; the CN only when there
// are none), `*.example.com` matching exactly one left-most label.
int ctls_server_add_pair(ctls_server *s, const char *cert_file, const char *key_file, char *err, size_t errlen);
// The lowest protocol version accepted: 0x0303 (TLS 1.2, the default) or
// 0x0304 (TLS 1.3); pairs added afterwards use it. -1 for anything else.
int ctls_server_set_min_version(ctls_server *s, int version);
// The password of encrypted PEM keys (PKCS#8 or traditional), used for
// every pair added afterwards. Without one an encrypted key fails to load
// (OpenSSL never prompts); a wrong one fails with "wrong password".
int ctls_server_set_key_password(ctls_server *s, const char *password, size_t len);
// Staples the DER OCSP response in `path` for pair `pair` (0: the first
// added) to clients that send status_request (RFC 6066 §8). The response
// must be successful, and, when the pair's chain file holds the issuer,
// about that certificate and not revoked. 0: loaded; 1: loaded but already
// past its nextUpdate (never stapled; the caller warns); -1: refused, `err`
// written.
int ctls_server_set_ocsp(ctls_server *s, int pair, const char *path, char *err, size_t errlen);
// Session tickets: keys derived with HKDF-SHA256 from `secret` and the
// index of the current `period_seconds` long period; tickets are issued
// under the current key and accepted under it and the previous one.
// Without a secret tickets use OpenSSL's own per-process key.
int ctls_server_set_ticket_secret(ctls_server *s, const uint8_t *secret, size_t len, int period_seconds);
void ctls_server_free(ctls_server *s);


// Connections. ctls_conn_new takes no ownership of `fd`.
ctls_conn *ctls_conn_new(ctls_server *s, int fd);
void ctls_conn_free(ctls_conn *c);
// 1: handshake complete; CTLS_WANT_READ/CTLS_WANT_WRITE: call again when
// the socket is ready; CTLS_ERROR: failed (an alert may have been sent).
int ctls_handshake(ctls_conn *c);
// Reads until `len` bytes or nothing more is available now (OpenSSL keeps
// decrypted bytes the socket will never report again: draining here means
// none are left behind). Bytes read (0: the peer closed), or a CTLS_ code
// when none were read.
long ctls_read(ctls_conn *c, void *buf, size_t len);
// Writes as much of `a` then `b` as the socket takes now; a small `a` is
// copied in front of `b` so both leave in one record. After CTLS_WANT_WRITE
// the next write must begin with the same bytes (the caller queues them).
long ctls_write2(ctls_conn *c, const void *a, size_t alen, const void *b, size_t blen);
// Sends `count` bytes of `file_fd` from `*offset` (advancing it) through an
// internal buffer that survives CTLS_WANT_WRITE; bytes sent, or a CTLS_ code.
long ctls_sendfile(ctls_conn *c, int file_fd, int64_t *offset, size_t count);
// Decrypted bytes waiting inside OpenSSL.
int ctls_pending(ctls_conn *c);
// Sends close_notify once (never waits for the peer's).
void ctls_shutdown(ctls_conn *c);

// After the handshake.
// The negotiated ALPN protocol (not NUL-terminated), or len 0.
void ctls_alpn(ctls_conn *c, const uint8_t **proto, size_t *len);
int ctls_version(ctls_conn *c);              // 0x0303, 0x0304
int ctls_session_reused(ctls_conn *c);       // 1: the handshake resumed a session (a ticket)
const char *ctls_version_name(ctls_conn *c); // "TLSv1.3"
int ctls_cipher_id(ctls_conn *c);            // IANA number, e.g. 0x1301
const char *ctls_cipher_name(ctls_conn *c);  // OpenSSL name
// PEM of the certificate this connection presented (static per pair).
const char *ctls_server_cert_pem(ctls_conn *c);
// Client certificate: 0 none sent, 1 sent. `verify_error` gets the text of
// a failed verification ("" when it passed).
int ctls_peer_verify(ctls_conn *c, char *verify_error, size_t len);
// The peer's chain, leaf first: a malloc'd PEM of certificate `index`, or
// NULL past the end. Free with ctls_free.
char *ctls_peer_cert_pem(ctls_conn *c, int index);
// Fields of the peer's leaf certificate, malloc'd text (NULL if none):
// 0 subject DN (RFC 4514), 1 issuer DN, 2 serial (hex), 3 notBefore,
// 4 notAfter (mod_ssl's "Mon DD HH:MM:SS YYYY GMT").
char *ctls_peer_cert_field(ctls_conn *c, int field);
void ctls_free(void *p);
// Why the last handshake of this thread failed (OpenSSL's reason), or "".
const char *ctls_last_error(void);

// The OpenSSL this process runs on: its version as OpenSSL_version_num
// (0xMNN00PP0: major, minor, patch) and its text ("OpenSSL 3.5.7 ..."), and
// the version of the headers CTLS was compiled against. OpenSSL 3 keeps its
// ABI within the major version, so the library may be newer than the
// headers, never older (scripts/check-openssl35.sh builds against 3.5).
unsigned long ctls_openssl_version_num(void);
const char *ctls_openssl_version_text(void);
unsigned long ctls_openssl_header_version_num(void);

// The session-ticket secret travels from the supervisor to the workers it
// spawns in an environment variable, as hex (the supervisor sets it with
// csys_export_random_secret). Import reads it into `out` and removes it
// from the environment (before Python starts, so applications never see
// it); it returns the length, or -1.
long ctls_import_secret(const char *name, uint8_t *out, size_t cap);

#endif
