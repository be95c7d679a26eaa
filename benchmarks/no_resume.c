/*
 * LD_PRELOAD shim for the benchmark's TLS handshake mode: every TLS connection the client makes starts as a
 * full handshake.
 *
 * wrk keeps one SSL object per connection slot and, when the server closes the connection, calls
 * SSL_shutdown + SSL_clear and connects again. SSL_clear keeps a cleanly closed session, so the next
 * SSL_connect offers it (a TLS 1.3 PSK from the server's session ticket, or a TLS 1.2 session id) and the
 * server resumes instead of doing a full handshake. This shim drops the session before the handshake starts,
 * so no session is ever offered. It looks the OpenSSL functions it needs up at run time, so building it takes
 * only a C compiler, not OpenSSL's headers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

typedef struct ssl_st SSL;
typedef struct ssl_session_st SSL_SESSION;

/*
 * Everything is looked up at the first call, so that the library links against nothing but libdl and is
 * harmless in processes without libssl (taskset, which execs wrk with the preload still set).
 */
int SSL_connect(SSL *ssl) {
    static int (*real_connect)(SSL *) = NULL;
    static int (*in_before)(const SSL *) = NULL;
    static int (*set_session)(SSL *, SSL_SESSION *) = NULL;
    if (real_connect == NULL) {
        in_before = (int (*)(const SSL *))dlsym(RTLD_DEFAULT, "SSL_in_before");
        set_session = (int (*)(SSL *, SSL_SESSION *))dlsym(RTLD_DEFAULT, "SSL_set_session");
        real_connect = (int (*)(SSL *))dlsym(RTLD_NEXT, "SSL_connect");
    }
    /* Only before the handshake starts: wrk calls SSL_connect again while a non-blocking handshake runs. */
    if (in_before != NULL && set_session != NULL && in_before(ssl)) {
        set_session(ssl, NULL);
    }
    return real_connect(ssl);
}
