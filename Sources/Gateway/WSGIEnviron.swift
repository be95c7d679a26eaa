import CPython
import CPyShim
import Core
import PyBridge

/// Builds the PEP 3333 environ for one request.
///
/// The constant part (wsgi.version, wsgi.errors, SCRIPT_NAME, ...) is a
/// template dict made once per worker; each request starts from a copy of it
/// and sets only what varies.
///
/// The keys every request sets from its request line, its connection and
/// the server (REQUEST_METHOD, PATH_INFO, QUERY_STRING, RAW_URI,
/// REQUEST_URI, SERVER_PROTOCOL, REMOTE_*, SERVER_*, wsgi.input) are set in
/// the template itself, before the copy, and only when the value differs
/// from what it holds: requests in a row mostly repeat them (the same
/// method, path, listener, client; the same wsgi.input object, see
/// WSGIObjectSlot), and a dict assignment was the largest share of building
/// an environ (about 165 instructions each, a dozen per request). The copy
/// then carries them; the application gets its own dict as before.
///
/// The copy itself (cloning the table, then freeing it after the response:
/// a malloc and a free, since a table that size is past Python's small-object
/// allocator) was a tenth of a small WSGI request. So an environ the
/// application neither kept nor changed is not freed: `finish` keeps it as
/// the spare, and the next plain request (no TLS variables, no proxy's
/// word, no generated request id; at most 32 fields) fills it in with the
/// same only-when-different rule as the template, its fields replaced only
/// when they differ from the last request's. "Neither kept nor changed" is
/// the dict's reference count (ours alone) and its PEP 509 version tag,
/// which every change advances; on CPython 3.14 and later, which no longer
/// keep the tag, every request gets a copy.
struct WSGIEnvironBuilder: ~Copyable {
    let keys: WSGIKeys
    let template: PyRef
    let rootPath: [UInt8]
    private var headerKeys = FieldNameCache(form: .cgiKey)
    private var decoded = [UInt8](repeating: 0, count: 1024)
    private var recentRemoteAddress = RecentString<String>(Py.str)
    private var recentServerName = RecentString<String>(Py.str)
    private var recentServerPort = RecentString<Int> { pshim_unicode_decimal(Int64($0))! }
    private var remotePorts = PortStrings()
    private var recentFields = RecentFields()
    private var recentPath = RecentLatin1()
    private var recentQuery = RecentLatin1()
    private var recentTarget = RecentLatin1()
    /// What the template holds under the per-request keys (borrowed: the
    /// template keeps each alive, so an equal pointer is the same object).
    private var held = HeldValues()
    /// The environ of the request in progress (a strong reference), from
    /// `build` to `finish`.
    private var current: PyRef?
    /// An environ handed out before, that nothing else holds and the
    /// application left as it was (a strong reference).
    private var spare: PyRef?
    /// Whether `current` may become the spare, and its version tag when it
    /// was handed out.
    private var currentReusable = false
    private var currentVersion: UInt64 = 0
    /// What `current` (then `spare`) holds under the per-request keys.
    private var heldOut = HeldValues()
    /// The fields `current` (then `spare`) was given.
    private var given = GivenFields()
    /// The interpreter keeps version tags (CPython before 3.14).
    private let reuseSupported: Bool
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
        var tag: UInt64 = 0
        reuseSupported = pshim_dict_version(t, &tag) != 0
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

    /// Puts `value` (borrowed) in the template under `key` unless it holds
    /// it already; false (exception set) if it could not.
    @inline(__always)
    private static func put(_ template: PyRef, _ key: PyRef, _ held: inout PyRef?, _ value: PyRef?) -> Bool {
        guard let value else { return false }
        if held == value { return true }
        guard PyDict_SetItem(template, key, value) == 0 else { return false }
        held = value
        return true
    }

    /// The environ for `request` (borrowed: valid until `finish`), or nil
    /// with a Python exception set.
    mutating func build(_ request: GatewayRequest, input: PyRef) -> PyRef? {
        let plain = reuseSupported && request.fieldCount <= GivenFields.capacity && request.peer.tls == nil
            && request.peer.proxySSL == nil && request.forwarded == nil && request.requestID?.generated != true
        if plain, let env = spare {
            spare = nil
            var h = heldOut
            let filled = setRequestLine(env, &h, request) && setPeer(env, &h, request.peer)
                && Self.put(env, keys.wsgiInput, &h.input, input)
            heldOut = h
            guard filled else { Py.decref(env); return nil }
            if fieldPairs(request) {
                if !given.matchesPairs(request.fieldCount) {
                    given.remove(from: env)
                    insertPairs(env, request)
                }
                return handOut(env, reusable: true)
            }
            // A field's str could not be made: start again from a copy,
            // whose loop skips such a field.
            Py.decref(env)
        } else if let old = spare {
            spare = nil
            Py.decref(old)
        }
        return buildByCopy(request, input: input, plain: plain)
    }

    /// The application has returned and its iterable is closed and
    /// released: the environ becomes the spare if nothing holds it and it
    /// is as it was handed out.
    mutating func finish() {
        guard let env = current else { return }
        current = nil
        var version: UInt64 = 0
        if currentReusable && pshim_refcnt(env) == 1 && pshim_dict_version(env, &version) != 0
            && version == currentVersion {
            spare = env
        } else {
            Py.decref(env)
        }
    }

    private mutating func handOut(_ env: PyRef, reusable: Bool) -> PyRef {
        current = env
        currentReusable = reusable
        if reusable { _ = pshim_dict_version(env, &currentVersion) }
        return env
    }

    /// A copy of the template, filled in.
    private mutating func buildByCopy(_ request: GatewayRequest, input: PyRef, plain: Bool) -> PyRef? {
        var h = held
        let filled = setRequestLine(template, &h, request) && setPeer(template, &h, request.peer)
            && Self.put(template, keys.wsgiInput, &h.input, input)
        held = h
        guard filled, let env = PyDict_Copy(template) else { return nil }
        heldOut = held
        given.forget()
        if plain && fieldPairs(request) {
            insertPairs(env, request)
            return handOut(env, reusable: true)
        }
        if let tls = request.peer.tls, let variables = tls.wsgiVariables() { PyDict_Update(env, variables) }
        if let ssl = request.peer.proxySSL, let value = PyOwned(stealing: ssl.pythonDict()) {
            PyDict_SetItemString(env, "peregrine.proxy_ssl", value.ref)
        }
        for i in 0..<request.fieldCount {
            guard let (key, v) = fieldObjects(request, i) else { continue }
            Self.insertField(env, key, v, name: request.bytes(request.fields[i].name))
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
        return handOut(env, reusable: false)
    }

    /// The key and value of each of the request's fields (at most
    /// `GivenFields.capacity`) into `given`'s scratch pairs, borrowed from
    /// `recentFields` (distinct positions: each stays valid for the whole
    /// request); false (no exception set) if one could not be made.
    private mutating func fieldPairs(_ request: GatewayRequest) -> Bool {
        for i in 0..<request.fieldCount {
            guard let (key, v) = fieldObjects(request, i) else { return false }
            given.setPair(i, key, v)
        }
        return true
    }

    /// Field `i`'s environ key and value, borrowed from `recentFields`,
    /// which keeps them until field `i` of a later request differs (made
    /// when this one's bytes differ from the last); nil (no exception set)
    /// if one could not be made.
    private mutating func fieldObjects(_ request: GatewayRequest, _ i: Int) -> (PyRef, PyRef)? {
        let f = request.fields[i]
        let name = request.bytes(f.name)
        let value = request.bytes(f.value)
        if let same = recentFields.cached(i, name: name, value: value) { return same }
        guard let madeKey = fieldKey(name), let madeValue = PyOwned(stealing: Py.latin1(value)) else {
            PyErr_Clear()
            return nil
        }
        return recentFields.keep(i, name: name, value: value, key: madeKey, value: madeValue)
    }

    /// Inserts the scratch pairs and records them as `env`'s fields.
    private mutating func insertPairs(_ env: PyRef, _ request: GatewayRequest) {
        for i in 0..<request.fieldCount {
            let (key, v) = given.pair(i)
            Self.insertField(env, key, v, name: request.bytes(request.fields[i].name))
        }
        given.recordPairs(request.fieldCount)
    }

    /// One field into the environ. One lookup: stores `v` unless the key is
    /// there already. The size tells which: a one-character value is a str
    /// CPython shares, so two fields may give the same `v`.
    private static func insertField(_ env: PyRef, _ key: PyRef, _ v: PyRef, name: UnsafeRawBufferPointer) {
        let before = PyDict_Size(env)
        // Borrowed (`env` is not yet the application's).
        guard let existing = PyDict_SetDefault(env, key, v) else { PyErr_Clear(); return }
        guard PyDict_Size(env) == before else { return }
        // Repeated fields are one field with a list value (RFC 9110
        // §5.3); cookies are joined the way the Cookie header joins
        // them (RFC 6265 §5.4). Content-Length and Content-Type are
        // single-valued; the parser has already refused differing
        // Content-Lengths.
        let separator = name.equalsIgnoringASCIICase("cookie") ? "; " : ", "
        let sep = PyOwned(stealing: Py.str(separator))
        if let joined = PyOwned(stealing: PyUnicode_Concat(existing, sep.ref)),
           let full = PyOwned(stealing: PyUnicode_Concat(joined.ref, v)) {
            PyDict_SetItem(env, key, full.ref)
        } else {
            PyErr_Clear()
        }
    }

    /// The environ key of a request field (a new reference), or nil (the
    /// field is skipped) if it could not be made.
    private mutating func fieldKey(_ name: UnsafeRawBufferPointer) -> PyOwned? {
        if name.count == 12 && name.equalsIgnoringASCIICase("content-type") {
            return PyOwned(borrowing: keys.contentType)
        }
        if name.count == 14 && name.equalsIgnoringASCIICase("content-length") {
            return PyOwned(borrowing: keys.contentLength)
        }
        return PyOwned(stealing: headerKeys.key(for: name))
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

    /// REQUEST_METHOD, PATH_INFO, QUERY_STRING, RAW_URI, REQUEST_URI and
    /// SERVER_PROTOCOL into `env` (the template or the spare), `held` being
    /// what it holds; false with an exception set.
    private mutating func setRequestLine(_ env: PyRef, _ held: inout HeldValues, _ request: GatewayRequest) -> Bool {
        guard let method = PyOwned(stealing: keys.method(request.bytes(request.method))),
              Self.put(env, keys.requestMethod, &held.method, method.ref) else { return false }
        let path = request.bytes(request.path)
        let pathInfo = recentPath.cached(path) ?? recentPath.keep(path, decodedPath(path))
        guard Self.put(env, keys.pathInfo, &held.path, pathInfo) else { return false }
        let q = request.bytes(request.query)
        let query = q.isEmpty ? keys.emptyString : recentQuery.cached(q) ?? recentQuery.keep(q, Py.latin1(q))
        guard Self.put(env, keys.queryString, &held.query, query) else { return false }
        let t = request.bytes(request.target)
        let target = recentTarget.cached(t) ?? recentTarget.keep(t, Py.latin1(t))
        guard Self.put(env, keys.rawURI, &held.rawURI, target),
              Self.put(env, keys.requestURI, &held.requestURI, target) else { return false }
        let proto: PyRef
        switch request.httpVersion.utf8CodeUnitCount {
        case 8 where request.httpVersion.utf8Start[7] == 0x30: proto = keys.http10
        case 8: proto = keys.http11
        default: proto = request.httpVersion.utf8Start[5] == 0x33 ? keys.http3 : keys.http2
        }
        return Self.put(env, keys.serverProtocol, &held.proto, proto)
    }

    /// REMOTE_* and SERVER_* into `env` (the template or the spare), `held`
    /// being what it holds: the address strings repeat
    /// from request to request (one listener, few client addresses), so the
    /// last of each is kept, and the client ports of recent connections;
    /// false with an exception set.
    private mutating func setPeer(_ env: PyRef, _ held: inout HeldValues, _ peer: PeerInfo) -> Bool {
        let remotePort = peer.isUnix ? keys.emptyString : remotePorts.object(peer.remotePort)
        return Self.put(env, keys.remoteAddr, &held.remoteAddr,
                        recentRemoteAddress.object(peer.isUnix ? "" : peer.remoteAddress))
            && Self.put(env, keys.remotePort, &held.remotePort, remotePort)
            && Self.put(env, keys.serverName, &held.serverName, recentServerName.object(peer.serverName))
            && Self.put(env, keys.serverPort, &held.serverPort, recentServerPort.object(peer.serverPort))
    }

    /// PATH_INFO is the percent-decoded path as latin-1 (PEP 3333 "native
    /// strings": bytes carried in a str one-to-one), with --root-path taken
    /// off the front when the path is under it. A new reference, or nil
    /// with an exception set.
    private mutating func decodedPath(_ raw: UnsafeRawBufferPointer) -> PyRef? {
        let n = percentDecode(raw, into: &decoded)
        var start = 0
        if !rootPath.isEmpty && n >= rootPath.count {
            var under = true
            for j in 0..<rootPath.count where decoded[j] != rootPath[j] { under = false; break }
            if under && (n == rootPath.count || decoded[rootPath.count] == 0x2F) { start = rootPath.count }
        }
        return decoded.withUnsafeBytes { b in
            Py.latin1(UnsafeRawBufferPointer(rebasing: b[start..<n]))
        }
    }
}

/// The objects the environ template holds under the keys set per request.
struct HeldValues {
    var method: PyRef?
    var path: PyRef?
    var query: PyRef?
    var rawURI: PyRef?
    var requestURI: PyRef?
    var proto: PyRef?
    var remoteAddr: PyRef?
    var remotePort: PyRef?
    var serverName: PyRef?
    var serverPort: PyRef?
    var input: PyRef?
}

/// The str made last from some bytes (a path, a query, a request target),
/// for the next request that brings the same bytes. Bytes longer than the
/// buffer are not kept (their str is made each time).
struct RecentLatin1: ~Copyable {
    private static let capacity = 256
    private let stored: UnsafeMutablePointer<UInt8>
    private var count = -1
    private var object: PyRef?

    init() { stored = .allocate(capacity: Self.capacity) }

    /// The kept str (borrowed, valid until `keep`) if `bytes` are the ones
    /// it was made from.
    func cached(_ bytes: UnsafeRawBufferPointer) -> PyRef? {
        guard bytes.count == count, let object else { return nil }
        if let b = bytes.baseAddress, !sameBytes(stored, b, count) { return nil }
        return object
    }

    /// Keeps `made` (a new reference, or nil on failure) as the str of
    /// `bytes`; returns it borrowed.
    mutating func keep(_ bytes: UnsafeRawBufferPointer, _ made: PyRef?) -> PyRef? {
        guard let made else { return nil }
        Py.xdecref(object)
        object = made
        if bytes.count <= Self.capacity {
            if let base = bytes.baseAddress { stored.update(from: base.assumingMemoryBound(to: UInt8.self), count: bytes.count) }
            count = bytes.count
        } else {
            count = -1
        }
        return made
    }

    deinit {
        Py.xdecref(object)
        stored.deallocate()
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

/// REMOTE_PORT strs of the connections served lately: a request on a
/// kept-alive connection finds its port's str instead of formatting a new
/// one (a new str and its free were a fiftieth of a small WSGI request).
/// Direct-mapped by a hash of the port: a few connections served in turn
/// usually have ports in distinct slots.
struct PortStrings: ~Copyable {
    private static let slots = 64
    private let ports: UnsafeMutablePointer<Int>
    private let strings: UnsafeMutablePointer<PyRef?>

    init() {
        ports = .allocate(capacity: Self.slots)
        ports.initialize(repeating: -1, count: Self.slots)
        strings = .allocate(capacity: Self.slots)
        strings.initialize(repeating: nil, count: Self.slots)
    }

    /// The str of `port` (borrowed, valid until the next call), or nil with
    /// an exception set.
    mutating func object(_ port: Int) -> PyRef? {
        // Fibonacci hashing: Linux hands out ephemeral ports of one parity,
        // so the low bits alone would use half the slots.
        let i = Int(truncatingIfNeeded: (UInt32(truncatingIfNeeded: port) &* 0x9E37_79B1) >> 26)
        if ports[i] == port, let cached = strings[i] { return cached }
        guard let fresh = pshim_unicode_decimal(Int64(port)) else { return nil }
        Py.xdecref(strings[i])
        strings[i] = fresh
        ports[i] = port
        return fresh
    }

    deinit {
        for i in 0..<Self.slots { Py.xdecref(strings[i]) }
        ports.deallocate()
        strings.deallocate()
    }
}
