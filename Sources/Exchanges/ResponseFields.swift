import Core

/// What a response field the application gives means to the server.
public enum ResponseFieldRole: Equatable, Sendable {
    /// An ordinary field: passed on as given.
    case regular
    /// `Content-Length`: the response's declared length. Read out, not
    /// passed on: the transport writes the length it frames by.
    case contentLength(Int64)
    /// `Connection`: hop-by-hop (RFC 9110 §7.6.1), not passed on; `close`
    /// when its options ask for the connection to close.
    case connection(close: Bool)
    /// `Transfer-Encoding` or `Keep-Alive`: the server frames the message
    /// and manages the connection itself; not passed on.
    case framing
}

/// Why a response field cannot be sent.
public enum ResponseFieldError: Error, Equatable, Sendable {
    /// The name is not a token (RFC 9110 §5.1, §5.6.2).
    case invalidName
    /// The value holds CR, LF, NUL or another control character (RFC 9110
    /// §5.5): sent as is, it would end the field line early (response
    /// splitting, header injection).
    case controlCharacter
    /// A `Content-Length` that is not a decimal number (RFC 9110 §8.6).
    case invalidContentLength
}

/// The rules for response fields an application hands the server, the
/// same for every interface (WSGI `start_response`, ASGI
/// `http.response.start`) and every HTTP version: each gateway asks
/// `role(name:value:)` for each field and raises its own exception on an
/// error.
public enum ResponseFields {
    /// Judges one field by its name and value bytes.
    public static func role(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws(ResponseFieldError)
        -> ResponseFieldRole {
        guard isToken(name) else { throw .invalidName }
        guard isValidValue(value) else { throw .controlCharacter }
        // The names `isServerOwned` lists, each compared once (by length
        // first: this runs for every field of every response).
        switch name.count {
        case 14 where name.equalsIgnoringASCIICase("content-length"):
            guard let length = parseLength(value) else { throw .invalidContentLength }
            return .contentLength(length)
        case 10 where name.equalsIgnoringASCIICase("connection"):
            return .connection(close: containsToken(value, "close"))
        case 10 where name.equalsIgnoringASCIICase("keep-alive"), 17 where name.equalsIgnoringASCIICase("transfer-encoding"):
            return .framing
        default:
            return .regular
        }
    }

    /// The field is one the server writes itself (`Content-Length`,
    /// `Transfer-Encoding`, `Connection`, `Keep-Alive`): for a gateway that
    /// kept fields it judged before, and now passes them on.
    @inlinable
    public static func isServerOwned(_ name: UnsafeRawBufferPointer) -> Bool {
        // Cheap first: the four names are 10, 17, 10 and 14 bytes long.
        switch name.count {
        case 10: return name.equalsIgnoringASCIICase("connection") || name.equalsIgnoringASCIICase("keep-alive")
        case 14: return name.equalsIgnoringASCIICase("content-length")
        case 17: return name.equalsIgnoringASCIICase("transfer-encoding")
        default: return false
        }
    }

    /// RFC 9110 §5.6.2: `token = 1*tchar`.
    public static func isToken(_ b: UnsafeRawBufferPointer) -> Bool {
        guard !b.isEmpty else { return false }
        for c in b {
            switch c {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: continue
            case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
                 UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): continue
            default: return false
            }
        }
        return true
    }

    /// RFC 9110 §5.5: no CR, LF, NUL or other control except HTAB (obs-text,
    /// 0x80–0xFF, is allowed).
    public static func isValidValue(_ b: UnsafeRawBufferPointer) -> Bool {
        for c in b where (c < 0x20 && c != 0x09) || c == 0x7F { return false }
        return true
    }

    /// A Content-Length value: digits, with optional whitespace around
    /// them (a gateway's list of fields is not wire syntax), at most 18 of
    /// them so the value fits an Int64.
    public static func parseLength(_ b: UnsafeRawBufferPointer) -> Int64? {
        var start = 0, end = b.count
        while start < end && (b[start] == 0x20 || b[start] == 0x09) { start += 1 }
        while end > start && (b[end - 1] == 0x20 || b[end - 1] == 0x09) { end -= 1 }
        guard start < end, end - start <= 18 else { return nil }
        var v: Int64 = 0
        for i in start..<end {
            guard b[i] >= 0x30 && b[i] <= 0x39 else { return nil }
            v = v * 10 + Int64(b[i] - 0x30)
        }
        return v
    }

    /// A comma-separated list (RFC 9110 §5.6.1) holds `token`, in any case.
    public static func containsToken(_ b: UnsafeRawBufferPointer, _ token: StaticString) -> Bool {
        var i = 0
        while i < b.count {
            while i < b.count && (b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x2C) { i += 1 }
            var j = i
            while j < b.count && b[j] != 0x2C { j += 1 }
            var e = j
            while e > i && (b[e - 1] == 0x20 || b[e - 1] == 0x09) { e -= 1 }
            if e > i && UnsafeRawBufferPointer(rebasing: b[i..<e]).equalsIgnoringASCIICase(token) { return true }
            i = j
        }
        return false
    }
}
