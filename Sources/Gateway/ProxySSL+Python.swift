import CPython
import PyBridge

/// What a PROXY protocol v2 header's `PP2_TYPE_SSL` TLV (HAProxy's spec
/// §2.2.5) tells the application: the client reached the proxy over TLS
/// (`client_ssl`), the raw `client` bits (PP2_CLIENT_SSL 0x01,
/// PP2_CLIENT_CERT_CONN 0x02, PP2_CLIENT_CERT_SESS 0x04) and `verify` (0:
/// the client's certificate was verified). ASGI: `scope["extensions"]
/// ["peregrine.proxy_ssl"]`; WSGI: `environ["peregrine.proxy_ssl"]`. Only
/// present when the proxy sent the TLV.
extension ProxyHeader.SSL {
    /// A new dict, or nil with the exception set.
    func pythonDict() -> PyRef? {
        guard let d = PyDict_New() else { return nil }
        let clientSSL = PyOwned(stealing: Py.bool(clientUsedTLS))
        let client = PyOwned(stealing: Py.int(Int(self.client)))
        let verify = PyOwned(stealing: Py.int(Int(self.verify)))
        PyDict_SetItemString(d, "client_ssl", clientSSL.ref)
        PyDict_SetItemString(d, "client", client.ref)
        PyDict_SetItemString(d, "verify", verify.ref)
        return d
    }
}
