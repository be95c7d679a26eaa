import CSys
import Core
import Gateway
import HTTP1

/// The worker's staging buffer for response bytes (status line, fields,
/// chunk framing, small body blocks) on their way to `transmit`. It is
/// empty between calls: nothing staged waits across an application's turn.
struct OutputBuffer: ~Copyable {
    private(set) var base: UnsafeMutableRawPointer
    private(set) var capacity: Int
    var count = 0

    init(capacity: Int = 64 * 1024) {
        self.capacity = capacity
        base = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit { base.deallocate() }

    var free: Int { capacity - count }

    mutating func reserve(_ n: Int) {
        guard count + n > capacity else { return }
        var c = capacity
        while c < count + n { c *= 2 }
        let nb = UnsafeMutableRawPointer.allocate(byteCount: c, alignment: 16)
        nb.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = nb
        capacity = c
    }

    /// Returns to the normal size after an unusually large head.
    mutating func shrinkIfLarge() {
        guard capacity > 256 * 1024, count == 0 else { return }
        base.deallocate()
        capacity = 64 * 1024
        base = .allocate(byteCount: capacity, alignment: 16)
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        reserve(bytes.count)
        if bytes.count > 0 { (base + count).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
        count += bytes.count
    }

    @inline(__always)
    mutating func append(_ s: StaticString) {
        append(UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    mutating func append(decimal value: Int64) {
        reserve(20)
        var v = value
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of scratch on the stack
        let n = withUnsafeMutableBytes(of: &digits) { d -> Int in
            var i = 24
            repeat {
                i -= 1
                d[i] = UInt8(truncatingIfNeeded: 0x30 + v % 10)
                v /= 10
            } while v > 0
            let len = 24 - i
            (base + count).copyMemory(from: d.baseAddress! + i, byteCount: len)
            return len
        }
        count += n
    }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }
}

/// Non-blocking writes of two buffers (staged bytes and a body block).
enum SocketWriter {
    /// Writes as much of `a` then `b` as the socket takes now: returns the
    /// bytes written, and whether the connection failed (EPIPE, reset...).
    static func writeSome(fd: Int32, _ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> (Int, Bool) {
        var aOff = 0, bOff = 0
        while aOff < a.count || bOff < b.count {
            let n: Int
            if aOff < a.count {
                n = csys_write2(fd, a.baseAddress! + aOff, a.count - aOff,
                                b.count > bOff ? b.baseAddress! + bOff : nil, b.count - bOff)
            } else {
                n = csys_write(fd, b.baseAddress! + bOff, b.count - bOff)
            }
            if n < 0 {
                let e = csys_errno()
                if csys_eintr(e) != 0 { continue }
                return (aOff + bOff, csys_eagain(e) == 0)
            }
            var left = n
            let fromA = min(left, a.count - aOff)
            aOff += fromA
            left -= fromA
            bOff += left
        }
        return (aOff + bOff, false)
    }
}

/// Reason phrases (RFC 9110 §15) for status lines the application gives
/// no reason for (ASGI has none) and for the server's own responses.
enum StatusText {
    static func reason(_ status: Int) -> StaticString {
        switch status {
        case 100: "Continue"
        case 101: "Switching Protocols"
        case 103: "Early Hints"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 203: "Non-Authoritative Information"
        case 204: "No Content"
        case 205: "Reset Content"
        case 206: "Partial Content"
        case 207: "Multi-Status"
        case 300: "Multiple Choices"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 402: "Payment Required"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 406: "Not Acceptable"
        case 407: "Proxy Authentication Required"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 410: "Gone"
        case 411: "Length Required"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 416: "Range Not Satisfiable"
        case 417: "Expectation Failed"
        case 421: "Misdirected Request"
        case 422: "Unprocessable Content"
        case 425: "Too Early"
        case 426: "Upgrade Required"
        case 428: "Precondition Required"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 451: "Unavailable For Legal Reasons"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default: ""
        }
    }
}
