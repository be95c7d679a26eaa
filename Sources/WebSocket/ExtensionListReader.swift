import Core

/// Reads the extensions a client offers in `Sec-WebSocket-Extensions`
/// (RFC 6455 §9.1), for permessage-deflate negotiation (RFC 7692 §5).
///
///     Sec-WebSocket-Extensions = extension-list
///     extension-list = 1#extension
///     extension = extension-token *( ";" extension-param )
///     extension-token = registered-token
///     registered-token = token
///     extension-param = token [ "=" (token | quoted-string) ]
///         ; When using the quoted-string syntax variant, the value
///         ; after quoted-string unescaping MUST conform to the
///         ; 'token' ABNF.
///
/// Theory of operation. Two cursors, neither allocating. `next()` on the
/// list reader validates one whole extension (name and every parameter) and
/// returns an `ExtensionOffer`: the name's span and the span of its
/// parameter section, relative to the field value. `offer.parameters(in:)`
/// then walks that section, already known to be well-formed, yielding each
/// parameter's name and optional value. So
///
///     permessage-deflate; client_max_window_bits; server_max_window_bits="10", x
///
/// reads as two offers: `permessage-deflate` with parameters
/// (`client_max_window_bits`, nil) and (`server_max_window_bits`, `10`), then
/// `x` with none. A quoted value's span excludes the quotes.
///
/// Deviation: a quoted-string containing a backslash escape is refused (400)
/// rather than unescaped. The result must be a token anyway, and a token
/// never needs escaping, so only a contrived client sends one; refusing it
/// keeps every value a plain span into the buffer.
///
/// Usage:
///
///     var reader = ExtensionListReader(value)
///     while let offer = try reader.next() {
///         var params = offer.parameters(in: value)
///         while let p = params.next() { ... p.name, p.value ... }
///     }
public struct ExtensionListReader {
    private let value: UnsafeRawBufferPointer
    private var position = 0

    public init(_ value: UnsafeRawBufferPointer) {
        self.value = value
    }

    /// The next extension offer, or nil at the end of the value.
    public mutating func next() throws(HandshakeRejection) -> ExtensionOffer? {
        var i = position
        guard FieldSyntax.skipToListElement(value, &i) else { position = i; return nil }
        let nameStart = i
        guard FieldSyntax.scanToken(value, &i) else { throw .malformedExtensionList }
        let name = ByteSpan(offset: nameStart, length: i - nameStart)
        let parametersStart = i
        var parametersEnd = i
        while true {
            FieldSyntax.skipOWS(value, &i)
            guard i < value.count, value[i] == UInt8(ascii: ";") else { break }
            i += 1
            guard ExtensionParameter.scan(value, &i) != nil else { throw .malformedExtensionList }
            parametersEnd = i
        }
        guard FieldSyntax.endListElement(value, &i) else { throw .malformedExtensionList }
        position = i
        return ExtensionOffer(name: name, parameterSection: ByteSpan(offset: parametersStart, length: parametersEnd - parametersStart))
    }
}

/// One extension in a `Sec-WebSocket-Extensions` value; spans are relative
/// to that value.
public struct ExtensionOffer: Equatable, Sendable {
    /// The extension token, e.g. `permessage-deflate`.
    public var name: ByteSpan
    /// Everything after the name up to the end of the last parameter
    /// (`; a; b=1`), already validated.
    public var parameterSection: ByteSpan

    /// A cursor over the parameters; `value` must be the field value the
    /// offer was read from.
    public func parameters(in value: UnsafeRawBufferPointer) -> ExtensionParameterReader {
        ExtensionParameterReader(value: value, position: parameterSection.start, end: parameterSection.end)
    }
}

/// One `extension-param`; spans are relative to the field value.
public struct ExtensionParameter: Equatable, Sendable {
    public var name: ByteSpan
    /// The value (token, or the inside of a quoted-string), nil when absent.
    public var value: ByteSpan?

    /// Parses `OWS token [ OWS "=" OWS ( token / quoted-string ) ]` at `i`
    /// (just after a ";"), advancing `i` past it; nil if malformed.
    static func scan(_ b: UnsafeRawBufferPointer, _ i: inout Int) -> ExtensionParameter? {
        FieldSyntax.skipOWS(b, &i)
        let nameStart = i
        guard FieldSyntax.scanToken(b, &i) else { return nil }
        let name = ByteSpan(offset: nameStart, length: i - nameStart)
        var j = i
        FieldSyntax.skipOWS(b, &j)
        guard j < b.count, b[j] == UInt8(ascii: "=") else { return ExtensionParameter(name: name, value: nil) }
        j += 1
        FieldSyntax.skipOWS(b, &j)
        guard j < b.count else { return nil }
        if b[j] == UInt8(ascii: "\"") {
            // quoted-string whose content is a token (no escapes: see above).
            let start = j + 1
            var k = start
            guard FieldSyntax.scanToken(b, &k), k < b.count, b[k] == UInt8(ascii: "\"") else { return nil }
            i = k + 1
            return ExtensionParameter(name: name, value: ByteSpan(offset: start, length: k - start))
        }
        let start = j
        guard FieldSyntax.scanToken(b, &j) else { return nil }
        i = j
        return ExtensionParameter(name: name, value: ByteSpan(offset: start, length: j - start))
    }
}

/// Walks a validated parameter section (see `ExtensionOffer.parameters`).
public struct ExtensionParameterReader {
    private let value: UnsafeRawBufferPointer
    private var position: Int
    private let end: Int

    init(value: UnsafeRawBufferPointer, position: Int, end: Int) {
        self.value = value
        self.position = position
        self.end = end
    }

    public mutating func next() -> ExtensionParameter? {
        var i = position
        FieldSyntax.skipOWS(value, &i)
        guard i < end, value[i] == UInt8(ascii: ";") else { return nil }
        i += 1
        guard let parameter = ExtensionParameter.scan(value, &i) else {
            preconditionFailure("parameter section was validated by ExtensionListReader")
        }
        position = i
        return parameter
    }
}
