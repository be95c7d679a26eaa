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
    /// LF inside is an error).
    static func parse(_ b: Bytes, _ start: Int, _ end: Int) throws(H1Error) -> FieldLine {
        // RFC 9112 §5.2: "A server that receives an obs-fold in a request
        // message ... MUST either reject the message by sending a 400 (Bad
        // Request) ... or replace each received obs-fold with one or more SP".
        // We reject: unfolding changes the bytes a proxy in front of us saw.
        if start < end && ByteClass.isOWS(b[start]) { throw .obsFold }
        var i = start
        var hasUnderscore = false
        while i < end {
            let c = b[i]
            if c == Byte.colon { break }
            if !ByteClass.isTchar(c) {
                // RFC 9112 §5.1: "A server MUST reject, with a response status
                // code of 400 (Bad Request), any received request message that
                // contains whitespace between a header field name and colon."
                if ByteClass.isOWS(c) { throw .whitespaceBeforeColon }
                throw .invalidFieldName
            }
            if c == Byte.underscore { hasUnderscore = true }
            i += 1
        }
        if i == end { throw .missingColon }
        if i == start { throw .invalidFieldName }
        let nameEnd = i
        i += 1
        while i < end && ByteClass.isOWS(b[i]) { i += 1 }
        let valueStart = i
        var valueEnd = i
        while i < end {
            let c = b[i]
            // RFC 9110 §5.5: CR, LF and NUL are invalid; we refuse every CTL
            // but HTAB, and DEL, as no field-vchar includes them.
            guard ByteClass.isFieldValueByte(c) else { throw .invalidFieldValue }
            i += 1
            if !ByteClass.isOWS(c) { valueEnd = i }
        }
        let token = HeaderToken.recognise(b, start, nameEnd)
        let dropped = hasUnderscore || (token == .other && b.equalsIgnoringCase(start, nameEnd, "proxy"))
        return FieldLine(
            name: ByteSpan(offset: start, length: nameEnd - start),
            value: ByteSpan(offset: valueStart, length: valueEnd - valueStart),
            token: token, dropped: dropped)
    }
}
