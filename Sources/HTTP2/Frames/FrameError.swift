// Errors found while decoding frames (RFC 9113 §4.2, §5.4, §6).
//
// Scope is in the type (STYLE §4): a connection error ends the connection
// with GOAWAY(code); a stream error resets one stream with RST_STREAM(code)
// and the connection reads on. §5.4.1 allows treating any stream error as a
// connection error, never the reverse; the scopes below follow the RFC's
// wording for each rule, and §4.2 for frame sizes: "A frame size error in a
// frame that could alter the state of the entire connection MUST be treated
// as a connection error; this includes any frame carrying a field block
// (HEADERS, PUSH_PROMISE, and CONTINUATION), a SETTINGS frame, and any frame
// with a stream identifier of 0."
//
// Every error the frame layer produces is a named constant (FrameError+
// Catalogue.swift); the code for each rule is chosen there, once.

import Core

/// A frame-layer protocol violation: scope, wire code and a fixed reason.
public struct FrameError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Scope: Sendable, Equatable {
        /// GOAWAY with `code`.
        case connection
        /// RST_STREAM on this stream with `code`; the frame was consumed.
        case stream(UInt32)
    }

    public var scope: Scope
    public let code: HTTP2ErrorCode
    public let reason: StaticString

    public init(scope: Scope = .connection, code: HTTP2ErrorCode, reason: StaticString) {
        self.scope = scope
        self.code = code
        self.reason = reason
    }

    public var isConnectionError: Bool { scope == .connection }

    /// The same rule as a stream error on `streamID`.
    func onStream(_ streamID: UInt32) -> FrameError {
        var e = self
        e.scope = .stream(streamID)
        return e
    }

    public static func == (lhs: FrameError, rhs: FrameError) -> Bool {
        lhs.scope == rhs.scope && lhs.code == rhs.code && lhs.reason.sameText(as: rhs.reason)
    }

    public var description: String { "\(scope) \(code.rawValue) \(reason)" }
}
