import CPython
import CPyShim
import Core
import PyBridge

/// What a TLS connection tells the application, taken once when its
/// handshake completes (plain connections have none). The Python objects
/// built from it — the WSGI `HTTPS`/`SSL_*` keys and the ASGI `tls` scope
/// extension — are made on the first request and reused by the next ones
/// on the same connection.
public final class TLSInfo {
    /// 0x0303 (TLS 1.2) or 0x0304 (TLS 1.3).
    public let version: Int
    /// "TLSv1.2", "TLSv1.3" (mod_ssl's SSL_PROTOCOL).
    public let versionName: String
    /// IANA cipher suite number, and OpenSSL's name for it (SSL_CIPHER).
    public let cipherSuite: Int
    public let cipherName: String
    public let serverCertificatePEM: String?
    /// The client's certificate, when it sent one.
    public let client: ClientCertificate?

    public struct ClientCertificate {
        /// PEM, leaf first.
        public var chainPEM: [String]
        /// RFC 4514 distinguished names.
        public var subject: String
        public var issuer: String
        public var serial: String
        public var notBefore: String
        public var notAfter: String
        /// nil: verified.
        public var verifyError: String?

        public init(chainPEM: [String], subject: String, issuer: String, serial: String, notBefore: String,
                    notAfter: String, verifyError: String?) {
            self.chainPEM = chainPEM
            self.subject = subject
            self.issuer = issuer
            self.serial = serial
            self.notBefore = notBefore
            self.notAfter = notAfter
            self.verifyError = verifyError
        }
    }

    // Released with the connection, which the worker's loop (holding the
    // GIL) closes.
    private var wsgiKeys: PyOwned?
    private var asgiExtension: PyOwned?

    public init(version: Int, versionName: String, cipherSuite: Int, cipherName: String,
                serverCertificatePEM: String?, client: ClientCertificate?) {
        self.version = version
        self.versionName = versionName
        self.cipherSuite = cipherSuite
        self.cipherName = cipherName
        self.serverCertificatePEM = serverCertificatePEM
        self.client = client
    }

    /// mod_ssl's variables: HTTPS, SSL_PROTOCOL, SSL_CIPHER, SSL_CLIENT_VERIFY
    /// (SUCCESS, NONE or FAILED:reason) and, with a client certificate,
    /// SSL_CLIENT_S_DN, _I_DN, _M_SERIAL, _V_START, _V_END and _CERT.
    /// Borrowed; merged into each environ. Made on first use (with the
    /// GIL held or, free-threaded, by one thread at a time: the WSGI pool
    /// makes it on the loop thread before any of its threads can ask).
    public func wsgiVariables() -> PyRef? {
        if let cached = wsgiKeys.ref { return cached }
        guard let d = PyDict_New() else { return nil }
        func put(_ key: String, _ value: String) {
            let v = PyOwned(stealing: Py.str(value))
            PyDict_SetItemString(d, key, v.ref)
        }
        put("HTTPS", "on")
        put("SSL_PROTOCOL", versionName)
        put("SSL_CIPHER", cipherName)
        if let c = client {
            put("SSL_CLIENT_VERIFY", c.verifyError.map { "FAILED:" + $0 } ?? "SUCCESS")
            put("SSL_CLIENT_S_DN", c.subject)
            put("SSL_CLIENT_I_DN", c.issuer)
            put("SSL_CLIENT_M_SERIAL", c.serial)
            put("SSL_CLIENT_V_START", c.notBefore)
            put("SSL_CLIENT_V_END", c.notAfter)
            if let leaf = c.chainPEM.first { put("SSL_CLIENT_CERT", leaf) }
        } else {
            put("SSL_CLIENT_VERIFY", "NONE")
        }
        wsgiKeys = PyOwned(stealing: d)
        return d
    }

    /// Drops the Python objects made for requests; the next request makes
    /// them again. For an idle connection (issue 15: an idle HTTP/3
    /// connection's Python objects were its largest share outside malloc's
    /// heap), called on the loop's thread with no request of the connection
    /// in flight, so no environ or scope is being built from them.
    public func releaseCachedObjects() {
        wsgiKeys = nil
        asgiExtension = nil
    }

    /// The ASGI "TLS Extension" dict (scope["extensions"]["tls"]). Borrowed.
    func asgiTLSExtension() -> PyRef? {
        if let cached = asgiExtension.ref { return cached }
        guard let d = PyDict_New() else { return nil }
        func put(_ key: StaticString, _ value: consuming PyOwned) {
            PyDict_SetItemString(d, key.description, value.ref)
        }
        put("server_cert", PyOwned(stealing: serverCertificatePEM.map { Py.str($0) } ?? Py.newNone()))
        let chain = PyOwned(stealing: PyList_New(0)!)
        for pem in client?.chainPEM ?? [] {
            let s = PyOwned(stealing: Py.str(pem))
            PyList_Append(chain.ref, s.ref)
        }
        put("client_cert_chain", chain)
        put("client_cert_name", PyOwned(stealing: client.map { Py.str($0.subject) } ?? Py.newNone()))
        put("client_cert_error", PyOwned(stealing: client?.verifyError.map { Py.str($0) } ?? Py.newNone()))
        put("tls_version", PyOwned(stealing: Py.int(version)))
        put("cipher_suite", PyOwned(stealing: Py.int(cipherSuite)))
        asgiExtension = PyOwned(stealing: d)
        return d
    }
}
