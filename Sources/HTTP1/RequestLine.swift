import Core

/// Meaning of a tokenised request line (RFC 9112 §3): the method, the form of
/// the request-target and the HTTP-version. `HeadScanner` has already checked
/// the line's shape (token SP 1*VCHAR SP 1*VCHAR CRLF, single spaces); this
/// decides what the three parts say.
///
///     request-target = origin-form     ; "/" path [ "?" query ]
///                    / absolute-form   ; "http://" authority path...
///                    / authority-form  ; host ":" port   — CONNECT only
///                    / asterisk-form   ; "*"             — OPTIONS only
///
/// RFC 9112 §3.2: "A server that receives a request-target that is not in
/// one of these forms ... SHOULD respond with 400". A '#' fragment is not
/// part of any form; rather than refuse it we leave it out of `path` and
/// `query` (the raw `target` still holds it).
struct RequestLine: Sendable {
    var method: H1Method
    var methodSpan: ByteSpan
    var target: ByteSpan
    var path: ByteSpan
    var query: ByteSpan
    var version: H1Version
    /// The authority of an absolute-form target; it replaces Host
    /// (RFC 9112 §3.2.2).
    var targetAuthority: ByteSpan?

    static func analyze(
        _ b: Bytes, method: Range<Int>, target: Range<Int>, version: Range<Int>
    ) throws(H1Error) -> RequestLine {
        // The version first: a request from another protocol generation
        // ("PRI * HTTP/2.0") should hear 505, not a complaint about its target.
        let parsedVersion = try parseVersion(b, version)
        let m = H1Method.recognise(b, method.lowerBound, method.upperBound)
        var line = RequestLine(
            method: m,
            methodSpan: ByteSpan(offset: method.lowerBound, length: method.count),
            target: ByteSpan(offset: target.lowerBound, length: target.count),
            path: ByteSpan(offset: target.lowerBound, length: 0),
            query: ByteSpan(offset: target.upperBound, length: 0),
            version: parsedVersion,
            targetAuthority: nil)
        let t0 = target.lowerBound, t1 = target.upperBound
        if m == .connect {
            // RFC 9112 §3.2.3: "The authority-form of request-target is only
            // used for CONNECT requests", authority-form = uri-host ":" port.
            guard Authority.isValid(b, t0, t1, requireHost: true, requirePort: true) else {
                throw .invalidTargetAuthority
            }
            return line
        }
        if b[t0] == Byte.slash {
            line.splitPathAndQuery(b, from: t0, to: t1)
            return line
        }
        if t1 - t0 == 1 && b[t0] == Byte.star {
            // RFC 9112 §3.2.4: asterisk-form "is only used for a server-wide
            // OPTIONS request".
            guard m == .options else { throw .invalidTargetForm }
            line.path = line.target
            return line
        }
        // RFC 9112 §3.2.2: "a server MUST accept the absolute-form in requests".
        var authorityStart = 0
        if b.equalsIgnoringCase(t0, Swift.min(t1, t0 + 7), "http://") {
            authorityStart = t0 + 7
        } else if b.equalsIgnoringCase(t0, Swift.min(t1, t0 + 8), "https://") {
            authorityStart = t0 + 8
        } else {
            throw .invalidTargetForm
        }
        var authorityEnd = authorityStart
        while authorityEnd < t1 {
            let c = b[authorityEnd]
            if c == Byte.slash || c == Byte.question || c == Byte.hash { break }
            authorityEnd += 1
        }
        guard Authority.isValid(b, authorityStart, authorityEnd, requireHost: true, requirePort: false) else {
            throw .invalidTargetAuthority
        }
        line.targetAuthority = ByteSpan(offset: authorityStart, length: authorityEnd - authorityStart)
        line.splitPathAndQuery(b, from: authorityEnd, to: t1)
        if line.path.isEmpty {
            // No path: it means "/" (RFC 9110 §4.2.3). The HTTP-version
            // "HTTP/1.x" always holds a '/' at its fifth byte; point there so
            // `path` stays a span into the caller's buffer.
            line.path = ByteSpan(offset: version.lowerBound + 4, length: 1)
        }
        return line
    }

    private mutating func splitPathAndQuery(_ b: Bytes, from start: Int, to end: Int) {
        var i = start
        while i < end && b[i] != Byte.question && b[i] != Byte.hash { i += 1 }
        path = ByteSpan(offset: start, length: i - start)
        query = ByteSpan(offset: i, length: 0)
        if i < end && b[i] == Byte.question {
            let queryStart = i + 1
            i = queryStart
            while i < end && b[i] != Byte.hash { i += 1 }
            query = ByteSpan(offset: queryStart, length: i - queryStart)
        }
    }

    /// HTTP-version = HTTP-name "/" DIGIT "." DIGIT, HTTP-name = %s"HTTP"
    /// (RFC 9112 §2.3, case-sensitive). RFC 9110 §6.2: a recipient treats an
    /// unknown higher minor version of its major as the highest minor it
    /// implements, so HTTP/1.2..1.9 are handled as 1.1; another major -> 505.
    private static func parseVersion(_ b: Bytes, _ v: Range<Int>) throws(H1Error) -> H1Version {
        guard v.count == 8, b.equals(v.lowerBound, v.lowerBound + 5, "HTTP/"),
              ByteClass.isDigit(b[v.lowerBound + 5]), b[v.lowerBound + 6] == Byte.dot,
              ByteClass.isDigit(b[v.lowerBound + 7]) else { throw .malformedVersion }
        guard b[v.lowerBound + 5] == UInt8(ascii: "1") else { throw .unsupportedVersion }
        return b[v.lowerBound + 7] == UInt8(ascii: "0") ? .http10 : .http11
    }
}
