import Core

/// Parses one HTTP/1.1 request head (RFC 9112 §2–§6) from bytes that arrive
/// in pieces, without allocating: results are spans into the caller's buffer
/// and fields go to a caller-owned `H1HeaderTable`.
///
/// Theory of operation. Two passes, the first resumable:
///
/// 1. `HeadScanner` walks new bytes only, delimiting the head (CRLF rules,
///    size and count limits, 414 on a long target) and tokenising the
///    request line. When the request line ends, `RequestLine` judges it
///    (version, target form) at once, so a 505 or a bad target is answered
///    without waiting for the rest of the head.
/// 2. When the empty line is found, one pass over the field lines validates
///    each (`FieldLine`, which finds the line's CRLF as it checks the value,
///    eight bytes a step), stores the kept ones in the table and feeds the
///    framing-relevant ones to `FieldSemantics`, which decides Host, body
///    framing, Expect and persistence.
///
/// Every verdict depends only on the bytes of the head, never on how they
/// were split across calls or on what follows the head (a pipelined
/// request). A failure is sticky until `reset()`.
///
/// Usage, per connection:
///
///     var parser = H1HeadParser(limits: limits)
///     let table = H1HeaderTable(capacity: limits.maxHeaderCount)
///     loop {
///         read more into buffer
///         switch parser.parse(buffer.readable, headers: table) {
///         case .incomplete: continue
///         case .failed(let e): respond(e.status); close
///         case .complete(let head):
///             handle(head, table); drop head.headLength bytes (+ the body)
///             parser.reset()
///         }
///     }
public struct H1HeadParser: Sendable {
    public let limits: H1Limits
    private var scanner = HeadScanner()
    private var requestLine: RequestLine?
    private var failure: H1Error?

    public init(limits: H1Limits) {
        self.limits = limits
    }

    /// Forget any partial progress (call before parsing the next request).
    public mutating func reset() {
        scanner = HeadScanner()
        requestLine = nil
        failure = nil
    }

    /// `bytes` holds everything received so far for this request, starting
    /// at its first byte. Call again with a longer buffer (same prefix) after
    /// more bytes arrive; the scan resumes where it stopped, so finding the
    /// end of the head costs O(new bytes), then one pass over the fields.
    /// On `.complete` the header table holds the fields.
    public mutating func parse(_ bytes: UnsafeRawBufferPointer, headers: H1HeaderTable) -> H1HeadResult {
        if let failure { return .failed(failure) }
        let b = Bytes(bytes)
        do throws(H1Error) {
            while true {
                switch try scanner.scan(b, limits) {
                case .needMore:
                    return .incomplete
                case .requestLineEnded:
                    requestLine = try RequestLine.analyze(
                        b, method: scanner.method, target: scanner.target, version: scanner.version)
                case .headEnded:
                    return .complete(try parseFields(b, headers))
                }
            }
        } catch {
            failure = error
            headers.removeAll()
            return .failed(error)
        }
    }

    private func parseFields(_ b: Bytes, _ headers: H1HeaderTable) throws(H1Error) -> H1RequestHead {
        guard let requestLine else { preconditionFailure("head ended before its request line") }
        headers.removeAll()
        var semantics = FieldSemantics()
        var lineStart = scanner.fieldsStart
        let fieldsEnd = scanner.headEnd - 2  // the empty line's CRLF
        while lineStart < fieldsEnd {
            // The scanner saw a CRLF at the end of every line in this range,
            // so the field parser finds each line's end as it validates the
            // value, without a search of its own.
            let (field, lineEnd) = try FieldLine.parse(b, lineStart, before: fieldsEnd)
            if !field.dropped {
                guard headers.append(name: field.name, value: field.value, token: field.token) else {
                    throw .tooManyFields
                }
                try semantics.note(b, field)
            }
            lineStart = lineEnd + 2
        }
        return try semantics.finish(b, requestLine, headLength: scanner.headEnd)
    }
}
