import TLS

/// TLS on one TCP connection (see H1Connection+TLS): the session, whether
/// its handshake is still running (no HTTP yet), and whether a readable
/// event for input OpenSSL already decrypted is queued with the worker.
struct ConnectionTLS {
    let session: TLSSession
    var handshaking = false
    var readDeferred = false

    init(_ session: TLSSession) {
        self.session = session
    }
}
