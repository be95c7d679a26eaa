/// The elements of one `Forwarded` field line (RFC 7239 §4), left to right.
///
///     Forwarded         = 1#forwarded-element
///     forwarded-element = [ forwarded-pair ] *( ";" [ forwarded-pair ] )
///     forwarded-pair    = token "=" value
///     value             = token / quoted-string
///
/// `1#` is RFC 9110 §5.6.1's list: OWS around commas, empty elements
/// ignored. Beyond the grammar we accept OWS around ";" (people write
/// `for=x; proto=https` by hand in proxy configurations); never around "=".
///
/// Parameter names are case-insensitive (RFC 7239 §4). `for`, `proto` and
/// `host` are read; `by` and extension parameters (§5.5) are checked for
/// syntax and ignored. Each parameter "MUST NOT occur more than once per
/// forwarded-element" (§4): a repeated one counts as not valid.
///
/// Errors are per element, never per request: a syntax error makes the
/// element `malformed` (its node stops the chain walk; its proto and host
/// are ignored) and parsing resumes after the next comma outside a quoted
/// string. A value that is well-formed but not valid for its parameter
/// (a bad address, an unknown scheme, a host with bad characters) spoils
/// only that parameter.
///
/// quoted-string (RFC 9110 §5.6.4) is parsed with its quoted-pairs, so a
/// `\"` or a comma inside quotes never splits an element. The values we
/// read are handed out as slices of the input, which a quoted-pair would
/// need unescaping to become; no valid node, scheme or host contains a
/// character that needs escaping, so a value with a quoted-pair is treated
/// as not valid for its parameter.
struct ForwardedElements {
    private let line: UnsafeRawBufferPointer
    private var position = 0

    init(_ line: UnsafeRawBufferPointer) { self.line = line }

    /// One element: what its `for`, `proto` and `host` say.
    struct Element {
        var node: HopNode = .absent
        var scheme: ForwardedScheme? = nil
        var host: UnsafeRawBufferPointer? = nil
        var hostPort: UInt16? = nil
    }

    /// The next non-empty element, or nil at the end of the line.
    mutating func next() -> Element? {
        let n = line.count
        // Empty elements and the OWS around commas (RFC 9110 §5.6.1).
        while position < n && (ByteText.isOWS(line[position]) || line[position] == 0x2C) { position += 1 }
        if position >= n { return nil }
        let elementStart = position
        var element = Element()
        var seenFor = false, seenProto = false, seenHost = false
        var schemeValid = false, hostValid = false
        while true {
            skipOWS()
            if position < n && line[position] == 0x3B {
                // An empty forwarded-pair: ";;" or a leading ";".
                position += 1
                continue
            }
            if position >= n || line[position] == 0x2C { break }
            guard let (name, value, escaped) = pair() else {
                skipMalformed(from: elementStart)
                return Element(node: .malformed)
            }
            if name.equalsIgnoringCase("for") {
                element.node = seenFor || escaped ? .malformed
                    : (ForwardedNode.parseRFC7239(value).map { HopNode.node($0) } ?? .malformed)
                seenFor = true
            } else if name.equalsIgnoringCase("proto") {
                element.scheme = escaped ? nil : ForwardedScheme.parse(value)
                schemeValid = !seenProto && element.scheme != nil
                seenProto = true
            } else if name.equalsIgnoringCase("host") {
                let check = ForwardedHost.validate(value)
                hostValid = !seenHost && !escaped && check.valid
                element.host = value
                element.hostPort = check.port
                seenHost = true
            }
            skipOWS()
            if position >= n || line[position] == 0x2C { break }
            guard line[position] == 0x3B else {
                skipMalformed(from: elementStart)
                return Element(node: .malformed)
            }
            position += 1
        }
        if !schemeValid { element.scheme = nil }
        if !hostValid {
            element.host = nil
            element.hostPort = nil
        }
        return element
    }

    /// `token "=" value` at the cursor: the name, the value (a token, or a
    /// quoted string's content) and whether that content holds a quoted-pair.
    private mutating func pair() -> (UnsafeRawBufferPointer, UnsafeRawBufferPointer, Bool)? {
        let n = line.count
        let nameStart = position
        while position < n && ByteText.isTchar(line[position]) { position += 1 }
        guard position > nameStart, position < n, line[position] == 0x3D else { return nil }
        let name = line.slice(nameStart, position)
        position += 1
        guard position < n else { return nil }
        if line[position] == 0x22 {
            guard let (content, escaped) = quotedString() else { return nil }
            return (name, content, escaped)
        }
        let valueStart = position
        while position < n && ByteText.isTchar(line[position]) { position += 1 }
        guard position > valueStart else { return nil }
        return (name, line.slice(valueStart, position), false)
    }

    /// quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE
    /// qdtext        = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text
    /// quoted-pair   = "\" ( HTAB / SP / VCHAR / obs-text )   (RFC 9110 §5.6.4)
    private mutating func quotedString() -> (UnsafeRawBufferPointer, Bool)? {
        let n = line.count
        position += 1
        let start = position
        var escaped = false
        while position < n {
            let b = line[position]
            if b == 0x22 {
                let content = line.slice(start, position)
                position += 1
                return (content, escaped)
            }
            if b == 0x5C {
                guard position + 1 < n, Self.isQuotable(line[position + 1]) else { return nil }
                escaped = true
                position += 2
                continue
            }
            guard Self.isQuotable(b) else { return nil }
            position += 1
        }
        return nil
    }

    /// HTAB / SP / VCHAR / obs-text: everything but other controls and DEL.
    private static func isQuotable(_ b: UInt8) -> Bool { b == 0x09 || (b >= 0x20 && b != 0x7F) }

    private mutating func skipOWS() {
        while position < line.count && ByteText.isOWS(line[position]) { position += 1 }
    }

    /// After a syntax error: from the element's start on to the next comma
    /// outside a quoted string (an unterminated quote runs to the end of
    /// the line), so a bad byte inside quotes never splits the element.
    private mutating func skipMalformed(from elementStart: Int) {
        let n = line.count
        position = elementStart
        var quoted = false
        while position < n {
            let b = line[position]
            if quoted {
                if b == 0x5C { position += 1 } else if b == 0x22 { quoted = false }
            } else if b == 0x22 {
                quoted = true
            } else if b == 0x2C {
                return
            }
            position += 1
        }
    }
}
