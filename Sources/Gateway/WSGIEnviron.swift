import CPython
import CPyShim
import Core
import PyBridge

/// Builds the PEP 3333 environ for one request.
///
/// The constant part (wsgi.version, wsgi.errors, SCRIPT_NAME, ...) is a
/// template dict made once per worker; each request starts from a copy of it
/// and sets only what varies.
struct WSGIEnvironBuilder: ~Copyable {
    let keys: WSGIKeys
    let template: PyRef
    let rootPath: [UInt8]
    private var headerKeys = FieldNameCache(form: .cgiKey)
    private var decoded = [UInt8](repeating: 0, count: 1024)
    private var recentRemoteAddress = RecentString<String>(Py.str)
    private var recentServerName = RecentString<String>(Py.str)
    private var recentServerPort = RecentString<Int> { pshim_unicode_decimal(Int64($0))! }
    /// `--scheme`: wsgi.url_scheme is the template's whatever a proxy says.
    let schemeForced: Bool
    /// The template's wsgi.url_scheme is https.
    let secure: Bool

    init(keys: WSGIKeys, rootPath: String, scheme: StaticString, schemeForced: Bool, multiprocess: Bool,
         multithread: Bool, errors: PyRef, fileWrapper: PyRef) {
        self.keys = keys
        self.schemeForced = schemeForced
        secure = scheme.description == "https"
        self.rootPath = Array(rootPath.utf8)
        // Room for the constant keys below, the per-request ones given a
        // placeholder further down, and about twenty header keys: a copy of
        // the template (PyDict_Copy clones the table, free room included)
        // then takes every request without growing. Growing it twice per
        // request was a sixth of the user-space instructions of a small
        // WSGI request.
        let t = pshim_dict_new_presized(32)!
        let version = PyOwned(stealing: PyTuple_New(2)!)
        pshim_tuple_set_item(version.ref, 0, Py.int(1))
        pshim_tuple_set_item(version.ref, 1, Py.int(0))
        PyDict_SetItem(t, keys.wsgiVersion, version.ref)
        let schemeStr = PyOwned(stealing: Py.str(scheme.description))
        PyDict_SetItem(t, keys.wsgiURLScheme, schemeStr.ref)
        PyDict_SetItem(t, keys.wsgiErrors, errors)
        PyDict_SetItem(t, keys.wsgiMultithread, multithread ? Py.true : Py.false)
        PyDict_SetItem(t, keys.wsgiMultiprocess, multiprocess ? Py.true : Py.false)
        PyDict_SetItem(t, keys.wsgiRunOnce, Py.false)
        PyDict_SetItem(t, keys.wsgiFileWrapper, fileWrapper)
        PyDict_SetItem(t, keys.wsgiInputTerminated, Py.true)
        let software = PyOwned(stealing: Py.str("peregrine"))
        PyDict_SetItem(t, keys.serverSoftware, software.ref)
        let script = PyOwned(stealing: Py.str(rootPath))
        PyDict_SetItem(t, keys.scriptName, script.ref)
        // Set on every request (build, setPeer): placed here so a request
        // replaces values instead of adding entries.
        for key in [keys.requestMethod, keys.pathInfo, keys.queryString, keys.rawURI, keys.requestURI,
                    keys.serverProtocol, keys.remoteAddr, keys.remotePort, keys.serverName, keys.serverPort] {
            PyDict_SetItem(t, key, keys.emptyString)
        }
        PyDict_SetItem(t, keys.wsgiInput, Py.none)
        template = t
    }

    /// Sets `key` to a new reference `value` (consumed).
    // Static: an instance method would hold a copy of `self` while its
    // argument (a mutating `decodedPath`, `headerList`) writes to self's
    // buffers, forcing a copy-on-write of them per request.
    @inline(__always)
    private static func set(_ env: PyRef, _ key: PyRef, _ value: PyRef?) {
        guard let value = PyOwned(stealing: value) else { PyErr_Clear(); return }
        PyDict_SetItem(env, key, value.ref)
    }

    /// A new environ dict, or nil with a Python exception set.
    mutating func build(_ request: GatewayRequest, input: PyRef) -> PyOwned? {
        guard let owner = PyOwned(stealing: PyDict_Copy(template)) else { return nil }
        let env = owner.ref
        Self.set(env, keys.requestMethod, keys.method(request.bytes(request.method)))
        setPath(env, request)
        let q = request.bytes(request.query)
        if q.isEmpty {
            PyDict_SetItem(env, keys.queryString, keys.emptyString)
        } else {
            Self.set(env, keys.queryString, Py.latin1(q))
        }
        if let target = PyOwned(stealing: Py.latin1(request.bytes(request.target))) {
            PyDict_SetItem(env, keys.rawURI, target.ref)
            PyDict_SetItem(env, keys.requestURI, target.ref)
        }
        let proto: PyRef
        switch request.httpVersion.utf8CodeUnitCount {
        case 8 where request.httpVersion.utf8Start[7] == 0x30: proto = keys.http10
        case 8: proto = keys.http11
        default: proto = request.httpVersion.utf8Start[5] == 0x33 ? keys.http3 : keys.http2
        }
        PyDict_SetItem(env, keys.serverProtocol, proto)
        setPeer(env, request.peer)
        if let tls = request.peer.tls, let variables = tls.wsgiVariables() { PyDict_Update(env, variables) }
        if let ssl = request.peer.proxySSL, let value = PyOwned(stealing: ssl.pythonDict()) {
            PyDict_SetItemString(env, "peregrine.proxy_ssl", value.ref)
        }
        PyDict_SetItem(env, keys.wsgiInput, input)

        for i in 0..<request.fieldCount {
            let f = request.fields[i]
            let name = request.bytes(f.name)
            let value = request.bytes(f.value)
            let keyOwner: PyOwned
            if name.equalsIgnoringASCIICase("content-type") {
                keyOwner = PyOwned(borrowing: keys.contentType)
            } else if name.equalsIgnoringASCIICase("content-length") {
                keyOwner = PyOwned(borrowing: keys.contentLength)
            } else {
                guard let k = PyOwned(stealing: headerKeys.key(for: name)) else { continue }
                keyOwner = k
            }
            let key = keyOwner.ref
            guard let v = PyOwned(stealing: Py.latin1(value)) else { PyErr_Clear(); continue }
            // Borrowed: `env` is not yet the application's.
            if let existing = PyDict_GetItemWithError(env, key) {
                // Repeated fields are one field with a list value (RFC 9110
                // §5.3); cookies are joined the way the Cookie header joins
                // them (RFC 6265 §5.4).
                let separator = name.equalsIgnoringASCIICase("cookie") ? "; " : ", "
                let sep = PyOwned(stealing: Py.str(separator))
                if let joined = PyOwned(stealing: PyUnicode_Concat(existing, sep.ref)),
                   let full = PyOwned(stealing: PyUnicode_Concat(joined.ref, v.ref)) {
                    PyDict_SetItem(env, key, full.ref)
                }
                // Content-Length and Content-Type are single-valued; the
                // parser has already refused differing Content-Lengths.
            } else {
                PyDict_SetItem(env, key, v.ref)
            }
        }
        // A generated request id replaces whatever the client sent under
        // its name (--request-id-header).
        if let id = request.requestID, id.generated,
           let key = PyOwned(stealing: id.name.withUnsafeBytes { headerKeys.key(for: $0) }),
           let v = PyOwned(stealing: id.value.withUnsafeBytes { Py.latin1($0) }) {
            PyDict_SetItem(env, key.ref, v.ref)
        }
        // After the fields: a forwarded host replaces HTTP_HOST.
        if let forwarded = request.forwarded { applyForwarded(env, forwarded) }
        return owner
    }

    /// A trusted proxy's word (`--forwarded-allow-ips`): REMOTE_ADDR, and
    /// REMOTE_PORT only when the proxy gave one (removed otherwise); an
    /// `unknown` or obfuscated client (RFC 7239 §6.2, §6.3) leaves
    /// REMOTE_ADDR empty, as for a unix-socket peer. wsgi.url_scheme unless
    /// `--scheme` forces it. A forwarded host sets HTTP_HOST as sent, and
    /// SERVER_NAME / SERVER_PORT (its port, X-Forwarded-Port, or the
    /// scheme's default).
    private func applyForwarded(_ env: PyRef, _ f: ForwardedResolution) {
        switch f.client {
        case .address(let address, let port)?:
            Self.set(env, keys.remoteAddr, pythonText(address))
            if let port {
                Self.set(env, keys.remotePort, pshim_unicode_decimal(Int64(port)))
            } else if PyDict_DelItem(env, keys.remotePort) != 0 {
                PyErr_Clear()
            }
        case .unknown?, .obfuscated?:
            PyDict_SetItem(env, keys.remoteAddr, keys.emptyString)
            if PyDict_DelItem(env, keys.remotePort) != 0 { PyErr_Clear() }
        case nil:
            break
        }
        var reportsHTTPS = secure
        if !schemeForced, let scheme = f.scheme {
            reportsHTTPS = scheme == .https
            PyDict_SetItem(env, keys.wsgiURLScheme, reportsHTTPS ? keys.https : keys.http)
        }
        if let host = f.host {
            Self.set(env, keys.httpHost, Py.latin1(host.bytes))
            Self.set(env, keys.serverName, Py.latin1(ForwardedHostParts.name(host.bytes)))
            Self.set(env, keys.serverPort, pshim_unicode_decimal(Int64(f.serverPort(secure: reportsHTTPS))))
        }
    }

    /// REMOTE_* and SERVER_*: the address strings repeat from request to
    /// request (one listener, few client addresses), so the last of each is
    /// kept; the client's port is new with every connection.
    private mutating func setPeer(_ env: PyRef, _ peer: PeerInfo) {
        PyDict_SetItem(env, keys.remoteAddr, recentRemoteAddress.object(peer.isUnix ? "" : peer.remoteAddress))
        if !peer.isUnix, let port = PyOwned(stealing: pshim_unicode_decimal(Int64(peer.remotePort))) {
            PyDict_SetItem(env, keys.remotePort, port.ref)
        }
        PyDict_SetItem(env, keys.serverName, recentServerName.object(peer.serverName))
        PyDict_SetItem(env, keys.serverPort, recentServerPort.object(peer.serverPort))
    }

    /// PATH_INFO is the percent-decoded path as latin-1 (PEP 3333 "native
    /// strings": bytes carried in a str one-to-one), with --root-path taken
    /// off the front when the path is under it.
    private mutating func setPath(_ env: PyRef, _ request: GatewayRequest) {
        let raw = request.bytes(request.path)
        let n = percentDecode(raw, into: &decoded)
        var start = 0
        if !rootPath.isEmpty && n >= rootPath.count {
            var under = true
            for j in 0..<rootPath.count where decoded[j] != rootPath[j] { under = false; break }
            if under && (n == rootPath.count || decoded[rootPath.count] == 0x2F) { start = rootPath.count }
        }
        let value = decoded.withUnsafeBytes { b in
            Py.latin1(UnsafeRawBufferPointer(rebasing: b[start..<n]))
        }
        Self.set(env, keys.pathInfo, value)
    }
}

/// The Python str of the most recent value asked for (an address, a port):
/// built again only when the value changes.
struct RecentString<Value: Equatable>: ~Copyable {
    private let make: (Value) -> PyRef
    private var value: Value?
    private var cached: PyOwned?

    init(_ make: @escaping (Value) -> PyRef) { self.make = make }

    /// A borrowed reference, valid until the next call.
    mutating func object(_ v: Value) -> PyRef {
        if let cached = cached.ref, value == v { return cached }
        let fresh = make(v)
        cached = PyOwned(stealing: fresh)
        value = v
        return fresh
    }
}
