import CPython
import CPyShim
import Core
import PyBridge

/// Builds the ASGI `http` scope (spec 2.4) for one request.
///
/// The parts that never change (`type`, `asgi`, `scheme`, `root_path`,
/// `extensions`) live in a template dict copied per request, which also
/// holds a placeholder for every key set on each request and room for the
/// optional ones, so a copy takes a request without growing (growing it
/// twice was 1.5k of the 40k user-space instructions of a hello request).
/// Header names come from a bounded per-worker cache of lower-cased bytes
/// objects; the `client` and `server` tuples repeat from request to request
/// and are kept (tuples are immutable, so sharing one is safe).
struct ASGIScopeBuilder: ~Copyable {
    let keys: ASGIKeys
    let template: PyRef
    private var names = FieldNameCache(form: .lowercaseBytes)
    private var decoded = [UInt8](repeating: 0, count: 1024)
    private var recentClient = RecentAddressPair()
    private var recentServer = RecentAddressPair()
    /// `--scheme`: true for https, false for http; nil when not forced
    /// (the template's scheme holds unless a trusted proxy says otherwise).
    let forcedSecure: Bool?

    init(keys: ASGIKeys, rootPath: String, scheme: String, schemeForced: Bool = false) {
        self.keys = keys
        forcedSecure = schemeForced ? scheme == "https" : nil
        // 14 keys at most over HTTP (15 with `state`, 16 for a WebSocket's
        // `subprotocols`): presized for 20, a table of 32 slots.
        let t = pshim_dict_new_presized(20)!
        PyDict_SetItem(t, keys.type, keys.http)
        let asgi = PyOwned(stealing: PyDict_New()!)
        let v3 = PyOwned(stealing: Py.str("3.0")), spec = PyOwned(stealing: Py.str("2.4"))
        PyDict_SetItemString(asgi.ref, "version", v3.ref)
        PyDict_SetItemString(asgi.ref, "spec_version", spec.ref)
        PyDict_SetItem(t, keys.asgi, asgi.ref)
        let s = PyOwned(stealing: Py.str(scheme))
        PyDict_SetItem(t, keys.scheme, s.ref)
        let root = PyOwned(stealing: Py.str(rootPath))
        PyDict_SetItem(t, keys.rootPath, root.ref)
        let ext = PyOwned(stealing: PyDict_New()!)
        for name in ["http.response.trailers", "http.response.pathsend", "http.response.early_hint"] {
            let empty = PyOwned(stealing: PyDict_New()!)
            PyDict_SetItemString(ext.ref, name, empty.ref)
        }
        PyDict_SetItem(t, keys.extensions, ext.ref)
        // Set on every request (build): placed here so a request replaces
        // values instead of adding entries.
        for key in [keys.httpVersion, keys.method, keys.rawPath, keys.path, keys.queryString, keys.headers,
                    keys.client, keys.server] {
            PyDict_SetItem(t, key, Py.none)
        }
        template = t
    }

    /// "HTTP/1.0", "HTTP/1.1", "HTTP/2", "HTTP/3" as the scope's `http_version`.
    private func versionKey(_ v: StaticString) -> PyRef {
        if v.utf8CodeUnitCount < 8 { return v.utf8Start[5] == 0x33 ? keys.http3 : keys.http2 }
        return v.utf8Start[7] == 0x30 ? keys.http10 : keys.http11
    }

    // Static: an instance method would hold a copy of `self` while its
    // argument (a mutating `decodedPath`, `headerList`) writes to self's
    // buffers, forcing a copy-on-write of them per request.
    @inline(__always)
    private static func set(_ d: PyRef, _ key: PyRef, _ value: PyRef?) {
        guard let value = PyOwned(stealing: value) else { PyErr_Clear(); return }
        PyDict_SetItem(d, key, value.ref)
    }

    /// A new scope dict, or nil with an exception set.
    mutating func build(_ request: GatewayRequest, methodKeys: WSGIKeys, state: PyRef?) -> PyOwned? {
        guard let owner = PyOwned(stealing: PyDict_Copy(template)) else { return nil }
        let scope = owner.ref
        PyDict_SetItem(scope, keys.httpVersion, versionKey(request.httpVersion))
        Self.set(scope, keys.method, methodKeys.method(request.bytes(request.method)))
        let rawPath = request.bytes(request.path)
        Self.set(scope, keys.rawPath, Py.bytes(rawPath))
        Self.set(scope, keys.path, decodedPath(rawPath))
        Self.set(scope, keys.queryString, Py.bytes(request.bytes(request.query)))
        Self.set(scope, keys.headers, headerList(request))
        let peer = request.peer
        if peer.isUnix {
            PyDict_SetItem(scope, keys.client, Py.none)
            PyDict_SetItem(scope, keys.server, Py.none)
        } else {
            if let client = recentClient.tuple(peer.remoteAddress, peer.remotePort) {
                PyDict_SetItem(scope, keys.client, client)
            } else {
                PyErr_Clear()
            }
            if let server = recentServer.tuple(peer.serverName, peer.serverPort) {
                PyDict_SetItem(scope, keys.server, server)
            } else {
                PyErr_Clear()
            }
        }
        if let forwarded = request.forwarded { applyForwarded(scope, forwarded, request) }
        if let tls = peer.tls { setTLSExtension(scope, tls) }
        if let ssl = peer.proxySSL { setProxySSLExtension(scope, ssl) }
        if let state {
            // Each request gets a shallow copy of the lifespan state.
            Self.set(scope, keys.state, PyDict_Copy(state))
        }
        return owner
    }

    /// The request reports https (wss for a WebSocket): `--scheme`, else
    /// a trusted proxy's word, else TLS on the socket.
    func reportsHTTPS(_ request: GatewayRequest) -> Bool {
        if let forcedSecure { return forcedSecure }
        if let scheme = request.forwarded?.scheme { return scheme == .https }
        return request.peer.tls != nil
    }

    /// A trusted proxy's word on the client, the scheme and the host
    /// (`--forwarded-allow-ips`). `client` is (address, port), port 0 when
    /// the proxy gave none (as uvicorn does); None when the proxy said
    /// `unknown` or gave an obfuscated identifier (RFC 7239 §6.2, §6.3):
    /// the socket peer is the proxy, not the client. `server` changes only
    /// with a forwarded host.
    private func applyForwarded(_ scope: PyRef, _ f: ForwardedResolution, _ request: GatewayRequest) {
        switch f.client {
        case .address(let address, let port)?:
            Self.set(scope, keys.client, Self.pair(pythonText(address), Int(port ?? 0)))
        case .unknown?, .obfuscated?:
            PyDict_SetItem(scope, keys.client, Py.none)
        case nil:
            break
        }
        if forcedSecure == nil, let scheme = f.scheme {
            PyDict_SetItem(scope, keys.scheme, scheme == .https ? keys.https : keys.http)
        }
        if let host = f.host {
            Self.set(scope, keys.server, Self.pair(Py.latin1(ForwardedHostParts.name(host.bytes)),
                                         f.serverPort(secure: reportsHTTPS(request))))
        }
    }

    /// scope["extensions"] becomes a copy of the shared one with "tls"
    /// added (ASGI TLS Extension); the "tls" dict is the connection's.
    /// (`scope` is not yet the application's, so borrowing from it is safe.)
    func setTLSExtension(_ scope: PyRef, _ tls: TLSInfo) {
        guard let shared = PyDict_GetItem(scope, keys.extensions), let ext = PyOwned(stealing: PyDict_Copy(shared)),
              let value = tls.asgiTLSExtension() else { PyErr_Clear(); return }
        PyDict_SetItemString(ext.ref, "tls", value)
        PyDict_SetItem(scope, keys.extensions, ext.ref)
    }

    /// scope["extensions"] becomes a copy with "peregrine.proxy_ssl" added
    /// (see ProxyHeader.SSL+Python).
    func setProxySSLExtension(_ scope: PyRef, _ ssl: ProxyHeader.SSL) {
        guard let shared = PyDict_GetItem(scope, keys.extensions), let ext = PyOwned(stealing: PyDict_Copy(shared)),
              let value = PyOwned(stealing: ssl.pythonDict()) else { PyErr_Clear(); return }
        PyDict_SetItemString(ext.ref, "peregrine.proxy_ssl", value.ref)
        PyDict_SetItem(scope, keys.extensions, ext.ref)
    }

    /// `(host, port)`; takes the reference to `host` (nil: nil, with the
    /// exception set).
    fileprivate static func pair(_ host: PyRef?, _ port: Int) -> PyRef? {
        guard let host = PyOwned(stealing: host), let t = PyTuple_New(2) else { return nil }
        pshim_tuple_set_item(t, 0, host.take())
        pshim_tuple_set_item(t, 1, Py.int(port))
        return t
    }

    /// `[(name, value), ...]`: lower-cased names, bytes, in order, repeats kept.
    /// A generated request id (--request-id-header) comes last, in place
    /// of the client's fields of that name.
    private mutating func headerList(_ request: GatewayRequest) -> PyRef? {
        if let id = request.requestID, id.generated { return headerList(request, adding: id) }
        guard let list = PyOwned(stealing: PyList_New(request.fieldCount)) else { return nil }
        for i in 0..<request.fieldCount {
            let f = request.fields[i]
            guard let t = headerTuple(request.bytes(f.name), request.bytes(f.value)) else { return nil }
            PyList_SetItem(list.ref, i, t)  // steals the tuple
        }
        return list.take()
    }

    private mutating func headerList(_ request: GatewayRequest, adding id: RequestID) -> PyRef? {
        guard let list = PyOwned(stealing: PyList_New(0)) else { return nil }
        for i in 0..<request.fieldCount {
            let f = request.fields[i]
            if id.replaces(fieldName: request.bytes(f.name)) { continue }
            guard let t = PyOwned(stealing: headerTuple(request.bytes(f.name), request.bytes(f.value))),
                  PyList_Append(list.ref, t.ref) == 0 else { return nil }
        }
        let added = id.lowerName.withUnsafeBytes { name in id.value.withUnsafeBytes { headerTuple(name, $0) } }
        guard let t = PyOwned(stealing: added), PyList_Append(list.ref, t.ref) == 0 else { return nil }
        return list.take()
    }

    /// `(name, value)` as bytes, the name lower-cased (new reference).
    private mutating func headerTuple(_ n: UnsafeRawBufferPointer, _ v: UnsafeRawBufferPointer) -> PyRef? {
        guard let name = PyOwned(stealing: names.key(for: n) ?? Py.bytes(n)),
              let value = PyOwned(stealing: Py.bytes(v)),
              let t = PyTuple_New(2) else { return nil }
        // The tuple takes the references over (it steals them).
        pshim_tuple_set_item(t, 0, name.take())
        pshim_tuple_set_item(t, 1, value.take())
        return t
    }

    /// The percent-decoded path as UTF-8 text (undecodable bytes become
    /// U+FFFD, as the common servers do).
    private mutating func decodedPath(_ raw: UnsafeRawBufferPointer) -> PyRef? {
        let n = percentDecode(raw, into: &decoded)
        // The error handler's name as a static C string: a String literal
        // would be copied into a new array per request.
        let replace: StaticString = "replace"
        return decoded.withUnsafeBytes { b in
            UnsafeRawPointer(replace.utf8Start).withMemoryRebound(to: CChar.self, capacity: replace.utf8CodeUnitCount + 1) {
                PyUnicode_DecodeUTF8(b.baseAddress?.assumingMemoryBound(to: CChar.self), n, $0)
            }
        }
    }
}

/// The `(host, port)` tuple of the most recent address asked for: a
/// connection's requests share their client, a listener's its server.
struct RecentAddressPair: ~Copyable {
    private var host = ""
    private var port = -1
    private var cached: PyOwned?

    /// A borrowed reference, valid until the next call; nil with the
    /// exception set.
    mutating func tuple(_ h: String, _ p: Int) -> PyRef? {
        if let cached = cached.ref, p == port, h == host { return cached }
        cached = nil
        guard let fresh = ASGIScopeBuilder.pair(Py.str(h), p) else { return nil }
        cached = PyOwned(stealing: fresh)
        host = h
        port = p
        return fresh
    }
}
