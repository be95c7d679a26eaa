import Core

/// Field syntax shared by the head parser, the trailer parser and the
/// response side.
///
///     field-line  = field-name ":" OWS field-value OWS        (RFC 9112 §5)
///     field-name  = token                                     (RFC 9110 §5.1)
///     field-value = *field-content ; field-vchar, SP, HTAB    (RFC 9110 §5.5)
public enum H1Field {
    /// Whether `bytes` is a token (1*tchar, RFC 9110 §5.6.2): a valid field
    /// name or method.
    public static func isToken(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !bytes.isEmpty else { return false }
        for b in bytes where !ByteClass.isTchar(b) { return false }
        return true
    }

    /// Whether `bytes` may be sent as a field value: no NUL, CR, LF, DEL or
    /// other CTL except HTAB (RFC 9110 §5.5: "Field values containing CR, LF,
    /// or NUL characters are invalid and dangerous"); obs-text is allowed.
    public static func isValidValue(_ bytes: UnsafeRawBufferPointer) -> Bool {
        for b in bytes where !ByteClass.isFieldValueByte(b) { return false }
        return true
    }
}

/// One parsed field line, as spans into the buffer.
struct FieldLine {
    var name: ByteSpan
    var value: ByteSpan
    var token: HeaderToken
    /// Not to be stored: the name contains "_" (it would collide with a
    /// dash-named field once the gateway maps names to CGI/WSGI keys) or is
    /// "Proxy" (httpoxy: it would become HTTP_PROXY in a WSGI environ).
    var dropped: Bool

    /// Parses the field line `start..<end` (its CRLF excluded, so any CR or
    /// LF inside is an error); `b[end]` is the CR of its CRLF.
    static func parse(_ b: Bytes, _ start: Int, _ end: Int) throws(H1Error) -> FieldLine {
        let (field, lineEnd) = try parse(b, start, before: end + 1)
        // The first CR followed by LF ends the line; the caller found that
        // LF at end + 1 and no LF before it.
        precondition(lineEnd == end, "field line ended before the CRLF the caller found")
        return field
    }

    /// Parses the field line that starts at `start` and ends at the first
    /// CRLF, which the caller knows lies at or before `limit - 1` (so no
    /// byte loop needs a bound of its own); returns the field and the index
    /// of that CR. Every CR, LF or other CTL met before it is an error.
    static func parse(_ b: Bytes, _ start: Int, before limit: Int) throws(H1Error) -> (FieldLine, lineEnd: Int) {
        // RFC 9112 §5.2: "A server that receives an obs-fold in a request
        // message ... MUST either reject the message by sending a 400 (Bad
        // Request) ... or replace each received obs-fold with one or more SP".
        // We reject: unfolding changes the bytes a proxy in front of us saw.
        if ByteClass.isOWS(b[start]) { throw .obsFold }
        var i = start
        var hasUnderscore = false
        // The name: tchar bytes up to ":". The line's CR is not a tchar, so
        // the loop stops inside the line without a bound check.
        while true {
            while ByteClassTable.has(b[i], ByteClassTable.nameByte) { i += 1 }
            guard b[i] == Byte.underscore else { break }
            hasUnderscore = true
            i += 1
        }
        let nameEnd = i
        let c = b[i]
        if c != Byte.colon {
            // RFC 9112 §5.1: "A server MUST reject, with a response status
            // code of 400 (Bad Request), any received request message that
            // contains whitespace between a header field name and colon."
            if ByteClass.isOWS(c) { throw .whitespaceBeforeColon }
            if c == Byte.cr && b[i + 1] == Byte.lf { throw .missingColon }
            throw .invalidFieldName
        }
        if i == start { throw .invalidFieldName }
        i += 1
        while ByteClass.isOWS(b[i]) { i += 1 }
        let valueStart = i
        let lineEnd = try valueEnd(b, from: i, before: limit)
        var valueEnd = lineEnd
        while valueEnd > valueStart && ByteClass.isOWS(b[valueEnd - 1]) { valueEnd -= 1 }
        let token = HeaderToken.recognise(b, start, nameEnd)
        let dropped = hasUnderscore
            || (nameEnd - start == 5 && token == .other && b.equalsIgnoringCase(start, nameEnd, "proxy"))
        let field = FieldLine(
            name: ByteSpan(offset: start, length: nameEnd - start),
            value: ByteSpan(offset: valueStart, length: valueEnd - valueStart),
            token: token, dropped: dropped)
        return (field, lineEnd)
    }

    /// The index of the CR that ends a field value starting at `i`: the first
    /// byte that is a CTL other than HTAB, or DEL, must be a CR followed by
    /// LF. RFC 9110 §5.5: CR, LF and NUL are invalid; we refuse every CTL
    /// but HTAB, and DEL, as no field-vchar includes them. Eight bytes a step
    /// while a whole word lies before `limit` (`Bytes.controlOrDEL`), then
    /// byte by byte.
    @inline(__always)
    private static func valueEnd(_ b: Bytes, from start: Int, before limit: Int) throws(H1Error) -> Int {
        var i = start
        while true {
            var hit = limit
            while i + 8 <= limit {
                let flags = Bytes.controlOrDEL(b.load64(i))
                if flags != 0 {
                    hit = i + flags.trailingZeroBitCount &>> 3
                    break
                }
                i += 8
            }
            if hit == limit {
                while i < limit && ByteClass.isFieldValueByte(b[i]) { i += 1 }
                // The caller guarantees a CRLF before `limit`.
                precondition(i < limit, "field line without its CRLF")
                hit = i
            }
            let c = b[hit]
            if c == Byte.htab {
                i = hit + 1
                continue
            }
            guard c == Byte.cr && b[hit + 1] == Byte.lf else { throw .invalidFieldValue }
            return hit
        }
    }
}
