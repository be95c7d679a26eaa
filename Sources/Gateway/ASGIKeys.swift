import CPython
import CPyShim
import PyBridge

/// Interned scope keys, message keys and message types for ASGI, made once
/// per worker.
struct ASGIKeys {
    let type = Py.intern("type")
    let asgi = Py.intern("asgi")
    let httpVersion = Py.intern("http_version")
    let method = Py.intern("method")
    let scheme = Py.intern("scheme")
    let path = Py.intern("path")
    let rawPath = Py.intern("raw_path")
    let queryString = Py.intern("query_string")
    let rootPath = Py.intern("root_path")
    let headers = Py.intern("headers")
    let client = Py.intern("client")
    let server = Py.intern("server")
    let state = Py.intern("state")
    let extensions = Py.intern("extensions")

    let body = Py.intern("body")
    let moreBody = Py.intern("more_body")
    let status = Py.intern("status")
    let trailers = Py.intern("trailers")
    let moreTrailers = Py.intern("more_trailers")
    let links = Py.intern("links")

    let http = Py.intern("http")
    let https = Py.intern("https")
    let http11 = Py.intern("1.1")
    let http10 = Py.intern("1.0")
    let http2 = Py.intern("2")
    let http3 = Py.intern("3")
    let httpRequest = Py.intern("http.request")
    let httpDisconnect = Py.intern("http.disconnect")
    let responseStart = Py.intern("http.response.start")
    let responseBody = Py.intern("http.response.body")
    let responseTrailers = Py.intern("http.response.trailers")
    let responsePathsend = Py.intern("http.response.pathsend")
    let responseEarlyHint = Py.intern("http.response.early_hint")

    let subprotocols = Py.intern("subprotocols")
    let subprotocol = Py.intern("subprotocol")
    let bytes = Py.intern("bytes")
    let text = Py.intern("text")
    let code = Py.intern("code")
    let reason = Py.intern("reason")
    let websocket = Py.intern("websocket")
    let ws = Py.intern("ws")
    let wss = Py.intern("wss")
    let wsConnect = Py.intern("websocket.connect")
    let wsAccept = Py.intern("websocket.accept")
    let wsReceive = Py.intern("websocket.receive")
    let wsSend = Py.intern("websocket.send")
    let wsClose = Py.intern("websocket.close")
    let wsDisconnect = Py.intern("websocket.disconnect")
    let wsResponseStart = Py.intern("websocket.http.response.start")
    let wsResponseBody = Py.intern("websocket.http.response.body")

    let emptyBytes = PyBytes_FromStringAndSize(nil, 0)!
    let emptyString = Py.intern("")

    /// True if `s` is the interned `key` or a str equal to it.
    @inline(__always)
    func same(_ s: PyRef, _ key: PyRef) -> Bool {
        if s == key { return true }
        return pshim_unicode_check(s) != 0 && PyUnicode_Compare(s, key) == 0
    }
}
