import Core

/// A request's id (`--request-id-header NAME`): the one the client sent
/// when it is well-formed, otherwise one the worker made
/// (`RequestIDGenerator` in the server). The application sees it as the
/// NAME request field (WSGI `HTTP_<NAME>`, ASGI `headers`), the response
/// echoes it, the access log writes it.
///
/// Well-formed (our definition, documented in CONFIG.md): exactly one NAME
/// field, 1 to `maxLength` bytes, each a visible ASCII character (0x21 to
/// 0x7E: no space, no control, no obs-text), which is what the common
/// generators send (UUIDs, hex, base64, ULIDs) and what a log line can
/// carry unquoted.
///
/// A class: `GatewayRequest` (copied along the request path) then holds one
/// optional reference, nil and free when the option is off.
public final class RequestID: Sendable {
    /// Longest id taken from a client; a longer one is replaced.
    public static let maxLength = 200

    /// The field name as configured (HTTP/1.1 responses) and lower-cased
    /// (ASGI, HTTP/2 and HTTP/3 field names are lower case).
    public let name: [UInt8]
    public let lowerName: [UInt8]
    public let value: [UInt8]
    /// The worker made this id (the client sent none, or a malformed one,
    /// or several): the gateways add it to the request's fields and leave
    /// out the client's NAME fields. False: it is the client's one field,
    /// already among them.
    public let generated: Bool

    public init(name: [UInt8], lowerName: [UInt8], value: [UInt8], generated: Bool) {
        self.name = name
        self.lowerName = lowerName
        self.value = value
        self.generated = generated
    }

    /// The client's id among `request`'s fields when it is well-formed
    /// (see above), else nil. `lowerName` is the field name in lower case.
    public static func clientID(of request: GatewayRequest, lowerName: [UInt8]) -> [UInt8]? {
        var found: UnsafeRawBufferPointer?
        for i in 0..<request.fieldCount {
            let f = request.fields[i]
            guard f.name.count == lowerName.count else { continue }
            let name = request.bytes(f.name)
            guard lowerName.withUnsafeBytes({ name.equalsIgnoringASCIICase($0) }) else { continue }
            if found != nil { return nil }  // several: none is the id
            found = request.bytes(f.value)
        }
        guard let v = found, isWellFormed(v) else { return nil }
        return Array(v)
    }

    public static func isWellFormed(_ v: UnsafeRawBufferPointer) -> Bool {
        guard !v.isEmpty, v.count <= maxLength else { return false }
        for c in v where c < 0x21 || c > 0x7E { return false }
        return true
    }

    /// Whether a request field is one of the client's NAME fields that a
    /// generated id replaces (the gateways skip those).
    @inlinable
    public func replaces(fieldName: UnsafeRawBufferPointer) -> Bool {
        generated && fieldName.count == lowerName.count && lowerName.withUnsafeBytes { fieldName.equalsIgnoringASCIICase($0) }
    }
}

extension RequestID {
    /// The application set the field itself: its value is sent, not ours.
    public func isSet(in fields: UnsafeBufferPointer<ResponseField>) -> Bool {
        lowerName.withUnsafeBytes { name in fields.contains { $0.name.equalsIgnoringASCIICase(name) } }
    }
}
