import Core

/// The fields that shape how a request is read: Host, Content-Length,
/// Transfer-Encoding, Expect, Connection and Upgrade. `note` sees each field
/// line in order; `finish` applies the rules that need the whole head, in a
/// fixed order so a head breaking several rules always gets the same answer.
///
/// Body framing follows RFC 9112 §6.3 with every ambiguity refused rather
/// than resolved (DESIGN principle 7: anything that enables smuggling is
/// rejected, not normalised):
///
/// 1. Transfer-Encoding on HTTP/1.0 -> 400. §6.1: such a message MUST be
///    treated "as if the framing is faulty".
/// 2. Transfer-Encoding with Content-Length -> 400. §6.1 "A server MAY reject
///    a request that contains both Content-Length and Transfer-Encoding";
///    §6.3 calls it a likely smuggling attempt.
/// 3. Transfer-Encoding in two field lines -> 400 (a proxy may have joined
///    them differently).
/// 4. The coding list: "chunked" exactly once and last -> chunked. §6.3:
///    "If a Transfer-Encoding header field is present in a request and the
///    chunked transfer coding is not the final encoding, ... the server MUST
///    respond with the 400 (Bad Request) status code". Other codings before
///    chunked -> 501 (§6.1: "A server that receives a request message with a
///    transfer coding it does not understand SHOULD respond with 501").
/// 5. Content-Length = 1*DIGIT (RFC 9110 §8.6), exactly one field line with
///    exactly one value, else 400; §6.3 "If a message is received without
///    Transfer-Encoding and with an invalid Content-Length header field, ...
///    the server MUST respond with a 400". §8.6 lets a recipient of
///    `Content-Length: 42, 42` (or of the same value on two lines) either
///    reject it or replace it by the one value; we reject: a proxy in front
///    may have framed the body by another reading of the list, and a single
///    decimal is what reaches the application (WSGI `CONTENT_LENGTH`, ASGI
///    headers) unchanged.
/// 6. Neither -> no body (§6.3: "the message body length is zero").
struct FieldSemantics {
    private var hostCount = 0
    private var host = ByteSpan.empty
    private var contentLength: Int64 = -1  // -1: no Content-Length line yet
    private var transferEncodingLines = 0
    private var transferEncoding = ByteSpan.empty
    private var expectContinue = false
    private var expectOther = false
    private var connectionClose = false
    private var connectionKeepAlive = false
    private var connectionUpgrade = false
    private var hasUpgrade = false

    mutating func note(_ b: Bytes, _ field: FieldLine) throws(H1Error) {
        let v0 = field.value.start, v1 = field.value.end
        switch field.token {
        case .host:
            hostCount += 1
            host = field.value
        case .contentLength:
            try noteContentLength(b, v0, v1)
        case .transferEncoding:
            transferEncodingLines += 1
            transferEncoding = field.value
        case .expect:
            // Expect = #expectation; empty members are ignored (RFC 9110 §5.6.1).
            var list = ListElements(b, start: v0, end: v1)
            while let e = list.next() {
                if e.start == e.end { continue }
                if b.equalsIgnoringCase(e.start, e.end, "100-continue") { expectContinue = true }
                else { expectOther = true }
            }
        case .connection:
            var list = ListElements(b, start: v0, end: v1)
            while let e = list.next() {
                if b.equalsIgnoringCase(e.start, e.end, "close") { connectionClose = true }
                else if b.equalsIgnoringCase(e.start, e.end, "keep-alive") { connectionKeepAlive = true }
                else if b.equalsIgnoringCase(e.start, e.end, "upgrade") { connectionUpgrade = true }
            }
        case .upgrade:
            hasUpgrade = true
        default:
            break
        }
    }

    /// Rule 5: one line, one 1*DIGIT value (the field parser has already
    /// removed the OWS around it).
    private mutating func noteContentLength(_ b: Bytes, _ v0: Int, _ v1: Int) throws(H1Error) {
        if contentLength >= 0 { throw .repeatedContentLength }
        guard v0 < v1 else { throw .invalidContentLength }
        var value: Int64 = 0
        for i in v0..<v1 {
            let c = b[i]
            guard ByteClass.isDigit(c) else { throw Self.contentLengthError(b, v0, v1) }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(Int64(c &- 0x30))
            guard !o1 && !o2 else { throw .invalidContentLength }
            value = sum
        }
        contentLength = value
    }

    /// Names what is wrong with a value that is not all digits: a comma
    /// makes it a list (even `5, 5`), anything else is just invalid.
    private static func contentLengthError(_ b: Bytes, _ v0: Int, _ v1: Int) -> H1Error {
        for i in v0..<v1 where b[i] == Byte.comma { return .contentLengthList }
        return .invalidContentLength
    }

    /// Applies the rules that need the whole head and assembles it.
    func finish(
        _ b: Bytes, _ line: RequestLine, headLength: Int
    ) throws(H1Error) -> H1RequestHead {
        let http11 = line.version == .http11
        // RFC 9112 §3.2: "A server MUST respond with a 400 (Bad Request)
        // status code to any HTTP/1.1 request message that lacks a Host header
        // field and to any request message that contains more than one Host
        // header field line or a Host header field with an invalid field value."
        if http11 && hostCount == 0 { throw .missingHost }
        if hostCount > 1 { throw .multipleHost }
        if hostCount == 1 && !Authority.isValid(b, host.start, host.end, requireHost: false, requirePort: false) {
            throw .invalidHost
        }
        var framing = H1BodyFraming.none
        if transferEncodingLines > 0 {
            if !http11 { throw .transferEncodingInHTTP10 }
            if contentLength >= 0 { throw .contentLengthWithTransferEncoding }
            if transferEncodingLines > 1 { throw .repeatedTransferEncoding }
            try checkTransferCodings(b)
            framing = .chunked
        } else if contentLength >= 0 {
            framing = .contentLength(contentLength)
        }
        // RFC 9110 §10.1.1: "A server that receives an Expect field value
        // containing a member other than 100-continue MAY respond with a 417
        // (Expectation Failed)"; and "A server that receives a 100-continue
        // expectation in an HTTP/1.0 request MUST ignore that expectation."
        if http11 && expectOther { throw .unsupportedExpectation }
        // RFC 9112 §9.3: HTTP/1.1 persists unless "close"; HTTP/1.0 only
        // with "keep-alive".
        let keepAlive = connectionClose ? false : (http11 || connectionKeepAlive)
        return H1RequestHead(
            method: line.method, methodSpan: line.methodSpan, target: line.target,
            path: line.path, query: line.query, version: line.version, framing: framing,
            keepAlive: keepAlive, expectContinue: http11 && expectContinue,
            host: line.targetAuthority ?? (hostCount == 1 ? host : nil),
            upgrade: hasUpgrade && connectionUpgrade, headLength: headLength)
    }

    /// Transfer-Encoding = #transfer-coding (RFC 9112 §6.1). Accepts exactly
    /// "chunked"; see rule 4 above for the rest.
    private func checkTransferCodings(_ b: Bytes) throws(H1Error) {
        var list = ListElements(b, start: transferEncoding.start, end: transferEncoding.end)
        var chunkedCount = 0
        var othersBeforeChunked = false
        var lastIsChunked = false
        while let e = list.next() {
            guard e.start < e.end else { throw .invalidTransferEncoding }
            for i in e.start..<e.end where !ByteClass.isTchar(b[i]) { throw .invalidTransferEncoding }
            lastIsChunked = b.equalsIgnoringCase(e.start, e.end, "chunked")
            if lastIsChunked {
                chunkedCount += 1
            } else if chunkedCount == 0 {
                othersBeforeChunked = true
            }
        }
        if chunkedCount > 1 { throw .chunkedRepeated }
        if !lastIsChunked { throw .chunkedNotLast }
        if othersBeforeChunked { throw .unsupportedTransferCoding }
    }
}
