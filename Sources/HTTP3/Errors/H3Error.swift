// Violations the HTTP/3 layer finds, each a named constant holding its wire
// code, its scope and a fixed reason (STYLE §4: the code is chosen here, once).
//
// Scope is in the value: a connection error closes the QUIC connection with
// CONNECTION_CLOSE (RFC 9114 §8); a stream error resets the request stream
// (RESET_STREAM / STOP_SENDING) and the connection carries on. The reason is
// what tests compare and what may go out as the CONNECTION_CLOSE reason phrase.

/// An HTTP/3 violation: scope, wire code and a fixed description.
public struct H3Error: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Scope: Sendable, Equatable {
        /// Close the connection (CONNECTION_CLOSE with `code`).
        case connection
        /// Reset this request stream only (RESET_STREAM with `code`).
        case stream
    }

    public let scope: Scope
    public let code: H3ErrorCode
    public let reason: StaticString

    public init(_ scope: Scope, _ code: H3ErrorCode, _ reason: StaticString) {
        self.scope = scope
        self.code = code
        self.reason = reason
    }

    public var isConnectionError: Bool { scope == .connection }

    public static func == (lhs: H3Error, rhs: H3Error) -> Bool {
        lhs.scope == rhs.scope && lhs.code == rhs.code && lhs.reason.sameText(as: rhs.reason)
    }

    public var description: String { "\(scope) 0x\(String(code.rawValue, radix: 16)) \(reason)" }
}
