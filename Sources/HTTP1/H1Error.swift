import Core

/// A "remote" error: the peer's bytes broke HTTP/1.1, and the request must be
/// answered with `status` and the connection closed. The application never
/// sees such a request (DESIGN principle 7).
///
/// Errors are a status plus a static reason, never a boxed `any Error`: the
/// parsers return them by value, and every one the module can produce is a
/// named constant in `H1Error+Catalogue.swift`, so tests (and logs) compare
/// against the same constant the parser used and the status for each rule is
/// chosen in exactly one place (STYLE §4).
public struct H1Error: Error, Sendable {
    /// The response status: 400, 413, 414, 417, 431, 501 or 505.
    public let status: UInt16
    /// A short, fixed description, suitable for a log line or a response body.
    public let reason: StaticString

    public init(status: UInt16, reason: StaticString) {
        self.status = status
        self.reason = reason
    }
}

extension H1Error: Equatable {
    /// Same status and same reason text.
    public static func == (lhs: H1Error, rhs: H1Error) -> Bool {
        lhs.status == rhs.status && lhs.reason.sameText(as: rhs.reason)
    }
}

extension H1Error: CustomStringConvertible {
    public var description: String { "\(status) \(reason)" }
}
