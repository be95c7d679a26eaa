/// Validation of a client's opening handshake (RFC 6455 §4.2.1) over
/// HTTP/1.1, reduced to a verdict the driver acts on.
///
/// Theory of operation. The driver walks the request's header table once,
/// recognising the handshake fields with `HandshakeField(name:)` and passing
/// each field line's value to `receive(_:value:)`; the accumulator keeps only
/// facts (flags, counts, the decoded key), never pointers into the buffer.
/// `verdict(isGET:isHTTP11OrLater:)` then applies §4.2.1 in this order:
///
///     no "websocket" in Upgrade, or HTTP/1.0  → .notWebSocket (plain request;
///         RFC 9110 §7.8: "A server MUST ignore an Upgrade header field that
///         is received in an HTTP/1.0 request")
///     method ≠ GET                            → 400 (§4.2.1 item 1; why not 405: see `methodNotGET`)
///     Connection lacks "upgrade"              → 400 (§4.2.1 item 4)
///     Sec-WebSocket-Version missing/repeated  → 400 (§4.2.1 item 6, §11.3.5)
///     Sec-WebSocket-Version ≠ 13              → 426 + "Sec-WebSocket-Version: 13" (§4.2.2 item 4, §4.4)
///     Sec-WebSocket-Key missing/repeated/bad  → 400 (§4.2.1 item 5, §11.3.1)
///     otherwise                               → .accept(key)
///
/// The version is checked before the key so that a client speaking an older
/// draft learns which version to retry with. `Host` is the HTTP/1 parser's
/// business (it already refuses a request without one); `Origin` is left to
/// the application (§4.2.2 item 4 makes checking it optional).
/// `Sec-WebSocket-Protocol` and `Sec-WebSocket-Extensions` may be repeated and
/// are read by the driver with `ProtocolListReader` / `ExtensionListReader`.
///
/// Usage:
///
///     var upgrade = UpgradeRequest()
///     for i in 0..<table.count {
///         if let field = HandshakeField(name: bytes(table.name(i))) {
///             upgrade.receive(field, value: bytes(table.value(i)))
///         }
///     }
///     switch upgrade.verdict(isGET: head.method == .get, isHTTP11OrLater: head.version == .http11) {
///     case .notWebSocket: serve as HTTP
///     case .reject(let r): respond(r.status, versionField: r.requiresVersionField)
///     case .accept(let key): hand to the application; on accept write 101 with key.writeAccept
///     }
public struct UpgradeRequest: Sendable {
    private var upgradeHasWebSocket = false
    private var connectionHasUpgrade = false
    private var versionCount = 0
    private var versionIs13 = false
    private var keyCount = 0
    private var key: SecWebSocketKey?

    public init() {}

    /// Records one field line of the request.
    public mutating func receive(_ field: HandshakeField, value: UnsafeRawBufferPointer) {
        switch field {
        case .upgrade:
            if FieldSyntax.listContains(value, "websocket") { upgradeHasWebSocket = true }
        case .connection:
            if FieldSyntax.listContains(value, "upgrade") { connectionHasUpgrade = true }
        case .secWebSocketVersion:
            versionCount += 1
            let (s, e) = FieldSyntax.trimmed(value)
            versionIs13 = e - s == 2 && value[s] == UInt8(ascii: "1") && value[s + 1] == UInt8(ascii: "3")
        case .secWebSocketKey:
            keyCount += 1
            key = SecWebSocketKey(fieldValue: value)
        case .secWebSocketProtocol, .secWebSocketExtensions:
            break  // read by the driver with the list readers
        }
    }

    /// What to do with the request (see the table above).
    public func verdict(isGET: Bool, isHTTP11OrLater: Bool) -> HandshakeVerdict {
        guard upgradeHasWebSocket, isHTTP11OrLater else { return .notWebSocket }
        guard isGET else { return .reject(.methodNotGET) }
        guard connectionHasUpgrade else { return .reject(.missingConnectionUpgrade) }
        guard versionCount > 0 else { return .reject(.missingVersion) }
        guard versionCount == 1 else { return .reject(.repeatedVersion) }
        guard versionIs13 else { return .reject(.unsupportedVersion) }
        guard keyCount > 0 else { return .reject(.missingKey) }
        guard keyCount == 1 else { return .reject(.repeatedKey) }
        guard let key else { return .reject(.invalidKey) }
        return .accept(key)
    }
}

public enum HandshakeVerdict: Equatable, Sendable {
    /// Not a WebSocket upgrade: serve the request as plain HTTP.
    case notWebSocket
    /// A valid opening handshake; answer 101 with the accept value of `key`
    /// if the application accepts.
    case accept(SecWebSocketKey)
    /// A broken handshake: answer with the rejection's status.
    case reject(HandshakeRejection)
}

/// The request fields the opening handshake reads (RFC 6455 §4.1, §11.3).
public enum HandshakeField: UInt8, Sendable, CaseIterable {
    case upgrade
    case connection
    case secWebSocketKey
    case secWebSocketVersion
    case secWebSocketProtocol
    case secWebSocketExtensions

    /// Recognises a field name case-insensitively (RFC 9110 §5.1); nil for
    /// any other field.
    public init?(name: UnsafeRawBufferPointer) {
        let n = name.count
        switch n {
        case 7 where FieldSyntax.equalsIgnoringCase(name, 0, n, "upgrade"): self = .upgrade
        case 10 where FieldSyntax.equalsIgnoringCase(name, 0, n, "connection"): self = .connection
        case 17 where FieldSyntax.equalsIgnoringCase(name, 0, n, "sec-websocket-key"): self = .secWebSocketKey
        case 21 where FieldSyntax.equalsIgnoringCase(name, 0, n, "sec-websocket-version"): self = .secWebSocketVersion
        case 22 where FieldSyntax.equalsIgnoringCase(name, 0, n, "sec-websocket-protocol"): self = .secWebSocketProtocol
        case 24 where FieldSyntax.equalsIgnoringCase(name, 0, n, "sec-websocket-extensions"): self = .secWebSocketExtensions
        default: return nil
        }
    }
}
