import CPython
import CPyShim
import Core
import PyBridge

/// What a WebTransport scope says about its session (its
/// `extensions["webtransport"]`).
public struct WebTransportScopeInfo {
    /// "draft02" or "h3" (the current draft, webtransport-h3).
    public var draft: StaticString
    /// Bytes an application may send in one datagram on this connection now.
    public var maxDatagramSize: Int

    public init(draft: StaticString, maxDatagramSize: Int) {
        self.draft = draft
        self.maxDatagramSize = maxDatagramSize
    }
}

extension ASGIGateway {
    /// Starts the application for a WebTransport CONNECT (TRANSPORT.md,
    /// "The WebTransport ASGI extension"): the `webtransport` scope, then
    /// the session's events.
    public func startWebTransport(_ request: GatewayRequest, info: WebTransportScopeInfo, exchange: WebTransportExchange) {
        let session = ASGIWebTransport(gateway: self, exchange: exchange)
        exchange.attachWebTransport(session)
        guard let scopeDict = scope.build(request, methodKeys: methods, state: lifespanState),
              let receive = ASGICallables.make(.receive, for: session),
              let send = ASGICallables.make(.send, for: session) else {
            logFailure("cannot build the ASGI scope")
            session.taskDone(Py.none)
            return
        }
        let d = scopeDict.ref
        let wt = webTransportKeys
        PyDict_SetItem(d, keys.type, wt.webtransport)
        PyDict_SetItem(d, keys.scheme, keys.https)
        PyDict_SetItem(d, keys.method, wt.connectMethod)
        let offered = PyOwned(stealing: PyList_New(0)!)
        for p in ASGIGateway.subprotocolOffers(request) {
            if let s = PyOwned(stealing: Py.latin1(p)) { PyList_Append(offered.ref, s.ref) }
        }
        PyDict_SetItem(d, keys.subprotocols, offered.ref)
        // extensions: a copy of what the scope has (tls, ...) with "webtransport".
        let ext = PyOwned(stealing: PyDict_GetItem(d, keys.extensions).flatMap { PyDict_Copy($0) } ?? PyDict_New())
        if let ext, let dict = PyOwned(stealing: PyDict_New()) {
            let draft = PyOwned(stealing: Py.str("\(info.draft)"))
            PyDict_SetItemString(dict.ref, "draft", draft.ref)
            for flag in ["server_streams", "stream_end", "stream_reset", "close_reason"] {
                PyDict_SetItemString(dict.ref, flag, Py.true)
            }
            let size = PyOwned(stealing: Py.int(info.maxDatagramSize))
            PyDict_SetItemString(dict.ref, "max_datagram_size", size.ref)
            PyDict_SetItem(ext.ref, wt.webtransport, dict.ref)
            PyDict_SetItem(d, keys.extensions, ext.ref)
        }
        run(session, scope: scopeDict, receive: receive, send: send)
    }

    /// The subprotocols the client offers: `wt-available-protocols` (the
    /// current draft: a structured-field list of strings) or
    /// `sec-webtransport-protocol` (comma-separated tokens), in order.
    static func subprotocolOffers(_ request: GatewayRequest) -> [UnsafeRawBufferPointer] {
        var offers: [UnsafeRawBufferPointer] = []
        for i in 0..<request.fieldCount {
            let f = request.fields[i]
            let name = request.bytes(f.name)
            guard name.elementsEqual("wt-available-protocols".utf8) || name.elementsEqual("sec-webtransport-protocol".utf8) else { continue }
            let value = request.bytes(f.value)
            var start = 0
            while start <= value.count {
                var end = start
                while end < value.count && value[end] != UInt8(ascii: ",") { end += 1 }
                var a = start, b = end
                while a < b && (value[a] == 0x20 || value[a] == 0x09) { a += 1 }
                while b > a && (value[b - 1] == 0x20 || value[b - 1] == 0x09) { b -= 1 }
                if b - a >= 2 && value[a] == UInt8(ascii: "\"") && value[b - 1] == UInt8(ascii: "\"") { a += 1; b -= 1 }
                if b > a { offers.append(UnsafeRawBufferPointer(rebasing: value[a..<b])) }
                start = end + 1
            }
        }
        return offers
    }
}
