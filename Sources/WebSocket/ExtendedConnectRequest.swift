/// Validation of a WebSocket opening over HTTP/2 (RFC 8441): an extended
/// CONNECT, reduced to a verdict the driver acts on.
///
/// Theory of operation. The HTTP/2 core has already checked the message
/// itself (RFC 8441 §4: `:method` CONNECT with `:protocol`, `:scheme`,
/// `:path` and `:authority`; only after we advertised
/// SETTINGS_ENABLE_CONNECT_PROTOCOL). What is left is the WebSocket part
/// (§5): the driver walks the request's fields once, recognising them with
/// `HandshakeField(name:)` and passing each value to `receive(_:value:)`;
/// `verdict(protocolName:)` then applies, in this order:
///
///     :protocol other than "websocket"        → 501 (no other protocol is implemented here)
///     Sec-WebSocket-Version missing/repeated  → 400 + "sec-websocket-version: 13"
///     Sec-WebSocket-Version ≠ 13              → 400 + "sec-websocket-version: 13"
///     otherwise                               → .accept
///
/// Over HTTP/1.1 an unsupported version is answered 426 (RFC 6455 §4.4), but
/// a 426 response MUST carry `Upgrade` (RFC 9110 §15.5.22), a field HTTP/2
/// forbids (RFC 9113 §8.2.2): here the refusal is 400, still naming the
/// version we speak, which is what §4.4 asks the client to read.
///
/// `Sec-WebSocket-Key` and `Sec-WebSocket-Accept` are not used over HTTP/2
/// (RFC 8441 §5: "the Sec-WebSocket-Key and Sec-WebSocket-Accept header
/// fields are not used"): a key the client sends anyway is ignored, as are
/// `Upgrade` and `Connection`, which the HTTP/2 core refuses before this is
/// reached. `Sec-WebSocket-Protocol` and `Sec-WebSocket-Extensions` are read
/// by the driver with the list readers, as over HTTP/1.1.
public struct ExtendedConnectRequest: Sendable {
    private var versionCount = 0
    private var versionIs13 = false

    public init() {}

    /// Records one field line of the request.
    public mutating func receive(_ field: HandshakeField, value: UnsafeRawBufferPointer) {
        guard field == .secWebSocketVersion else { return }
        versionCount += 1
        let (s, e) = FieldSyntax.trimmed(value)
        versionIs13 = e - s == 2 && value[s] == UInt8(ascii: "1") && value[s + 1] == UInt8(ascii: "3")
    }

    /// What to do with the request (see the table above). `protocolName` is
    /// the `:protocol` value; upgrade tokens compare case-insensitively.
    public func verdict(protocolName: UnsafeRawBufferPointer) -> ExtendedConnectVerdict {
        guard protocolName.count == 9, FieldSyntax.equalsIgnoringCase(protocolName, 0, 9, "websocket") else {
            return .reject(.unsupportedProtocol)
        }
        guard versionCount > 0 else { return .reject(.missingVersionOverHTTP2) }
        guard versionCount == 1 else { return .reject(.repeatedVersionOverHTTP2) }
        guard versionIs13 else { return .reject(.unsupportedVersionOverHTTP2) }
        return .accept
    }
}

public enum ExtendedConnectVerdict: Equatable, Sendable {
    /// A valid WebSocket opening: the application decides; accepting is a
    /// 200 response (RFC 8441 §5: "a 2xx status code"), never 101.
    case accept
    /// Answer with the rejection's status (and `sec-websocket-version: 13`
    /// if it says so).
    case reject(HandshakeRejection)
}

extension HandshakeRejection {
    /// RFC 8441 §4 lets `:protocol` name any protocol from the Upgrade Token
    /// registry; this server implements only "websocket". 501, as for a
    /// plain CONNECT: the request is valid, the method (in this variant) is
    /// what the server does not support (RFC 9110 §15.6.2).
    public static let unsupportedProtocol = HandshakeRejection(status: 501, reason: "unsupported :protocol")
    /// RFC 6455 §4.2.1 item 6 over HTTP/2, see `ExtendedConnectRequest`.
    public static let missingVersionOverHTTP2 = HandshakeRejection(
        status: 400, reason: "missing Sec-WebSocket-Version", requiresVersionField: true)
    public static let repeatedVersionOverHTTP2 = HandshakeRejection(
        status: 400, reason: "repeated Sec-WebSocket-Version", requiresVersionField: true)
    public static let unsupportedVersionOverHTTP2 = HandshakeRejection(
        status: 400, reason: "unsupported Sec-WebSocket-Version", requiresVersionField: true)
}
