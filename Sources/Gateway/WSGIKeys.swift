import CPython
import PyBridge

/// The environ keys and constant values, interned once per worker so each
/// request only copies pointers.
struct WSGIKeys {
    let requestMethod = Py.intern("REQUEST_METHOD")
    let scriptName = Py.intern("SCRIPT_NAME")
    let pathInfo = Py.intern("PATH_INFO")
    let queryString = Py.intern("QUERY_STRING")
    let contentType = Py.intern("CONTENT_TYPE")
    let contentLength = Py.intern("CONTENT_LENGTH")
    let serverName = Py.intern("SERVER_NAME")
    let serverPort = Py.intern("SERVER_PORT")
    let serverProtocol = Py.intern("SERVER_PROTOCOL")
    let remoteAddr = Py.intern("REMOTE_ADDR")
    let remotePort = Py.intern("REMOTE_PORT")
    let rawURI = Py.intern("RAW_URI")
    let requestURI = Py.intern("REQUEST_URI")
    let wsgiInput = Py.intern("wsgi.input")
    let wsgiVersion = Py.intern("wsgi.version")
    let wsgiURLScheme = Py.intern("wsgi.url_scheme")
    let wsgiErrors = Py.intern("wsgi.errors")
    let wsgiMultithread = Py.intern("wsgi.multithread")
    let wsgiMultiprocess = Py.intern("wsgi.multiprocess")
    let wsgiRunOnce = Py.intern("wsgi.run_once")
    let wsgiFileWrapper = Py.intern("wsgi.file_wrapper")
    let wsgiInputTerminated = Py.intern("wsgi.input_terminated")
    let serverSoftware = Py.intern("SERVER_SOFTWARE")
    let httpHost = Py.intern("HTTP_HOST")
    let http = Py.intern("http")
    let https = Py.intern("https")

    let http11 = Py.intern("HTTP/1.1")
    let http10 = Py.intern("HTTP/1.0")
    let http2 = Py.intern("HTTP/2")
    let http3 = Py.intern("HTTP/3")
    let emptyString = Py.intern("")
    let close = Py.intern("close")

    let methodGET = Py.intern("GET")
    let methodPOST = Py.intern("POST")
    let methodHEAD = Py.intern("HEAD")
    let methodPUT = Py.intern("PUT")
    let methodDELETE = Py.intern("DELETE")
    let methodOPTIONS = Py.intern("OPTIONS")
    let methodPATCH = Py.intern("PATCH")

    /// The str for a method, shared for the common ones.
    func method(_ bytes: UnsafeRawBufferPointer) -> PyRef? {
        let known: PyRef?
        switch bytes.count {
        case 3: known = equals(bytes, "GET") ? methodGET : (equals(bytes, "PUT") ? methodPUT : nil)
        case 4: known = equals(bytes, "POST") ? methodPOST : (equals(bytes, "HEAD") ? methodHEAD : nil)
        case 5: known = equals(bytes, "PATCH") ? methodPATCH : nil
        case 6: known = equals(bytes, "DELETE") ? methodDELETE : nil
        case 7: known = equals(bytes, "OPTIONS") ? methodOPTIONS : nil
        default: known = nil
        }
        if let k = known {
            Py.incref(k)
            return k
        }
        return Py.latin1(bytes)
    }
}

@inline(__always)
func equals(_ bytes: UnsafeRawBufferPointer, _ literal: StaticString) -> Bool {
    guard bytes.count == literal.utf8CodeUnitCount else { return false }
    let p = literal.utf8Start
    for i in 0..<bytes.count where bytes[i] != p[i] { return false }
    return true
}
