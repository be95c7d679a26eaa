import Core

/// Reads the subprotocols a client offers in `Sec-WebSocket-Protocol`
/// (RFC 6455 §4.1 item 10, §11.3.4), one token at a time, without allocating.
///
///     Sec-WebSocket-Protocol-Client = 1#token
///
/// Theory of operation. A cursor over one field line's value: each `next()`
/// skips OWS and empty list elements (RFC 9110 §5.6.1 requires accepting
/// them) and returns the next token's span, relative to the value. Anything
/// that is not a token between commas is a malformed handshake (400). The
/// field may be repeated; the driver reads each line in order, which keeps
/// the client's preference order for the ASGI scope's `subprotocols`.
///
/// Usage:
///
///     var reader = ProtocolListReader(value)
///     while let span = try reader.next() { subprotocols.append(span) }
public struct ProtocolListReader {
    private let value: UnsafeRawBufferPointer
    private var position = 0

    public init(_ value: UnsafeRawBufferPointer) {
        self.value = value
    }

    /// The next offered subprotocol, or nil at the end of the value.
    public mutating func next() throws(HandshakeRejection) -> ByteSpan? {
        var i = position
        guard FieldSyntax.skipToListElement(value, &i) else { position = i; return nil }
        let start = i
        guard FieldSyntax.scanToken(value, &i) else { throw .malformedProtocolList }
        let end = i
        guard FieldSyntax.endListElement(value, &i) else { throw .malformedProtocolList }
        position = i
        return ByteSpan(offset: start, length: end - start)
    }
}
