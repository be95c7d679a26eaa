// Protocol violations the connection finds (RFC 9113 §5, §6, §8), each a
// named constant holding its wire code and a fixed reason (STYLE §4: the code
// is chosen here, once). Scope is decided by the caller and spelled in its
// name: `fail(_:)` sends GOAWAY, `resetStream(_:_:)` sends RST_STREAM. The
// reason goes out as GOAWAY debug data and is what tests compare.

/// A violation: wire code and fixed description.
public struct H2Error: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: HTTP2ErrorCode
    public let reason: StaticString

    public init(code: HTTP2ErrorCode, reason: StaticString) {
        self.code = code
        self.reason = reason
    }

    public static func == (lhs: H2Error, rhs: H2Error) -> Bool {
        lhs.code == rhs.code && lhs.reason.sameText(as: rhs.reason)
    }

    public var description: String { "\(code.rawValue) \(reason)" }
}

extension H2Error {
    init(_ e: FrameError) { self.init(code: e.code, reason: e.reason) }
    init(_ e: HPACKError) { self.init(code: e.errorCode, reason: e.reason) }

    // §3.4: "the connection preface ... MUST be followed by a SETTINGS frame";
    // otherwise a connection error PROTOCOL_ERROR.
    public static let firstFrameNotSettings = H2Error(code: .protocolError, reason: "first frame after the preface is not SETTINGS")
    // §5.1: frames other than HEADERS and PRIORITY on an idle stream.
    public static let frameOnIdleStream = H2Error(code: .protocolError, reason: "frame on an idle stream")
    // §5.1.1: "Streams initiated by a client MUST use odd-numbered stream
    // identifiers"; "The identifier of a newly established stream MUST be
    // numerically greater than all streams that the initiating endpoint has
    // opened or reserved."
    public static let evenStreamID = H2Error(code: .protocolError, reason: "client stream identifier is even")
    public static let streamIDNotIncreasing = H2Error(code: .protocolError, reason: "new stream identifier not greater than earlier ones")
    // §5.1 half-closed (remote): frames other than WINDOW_UPDATE, PRIORITY,
    // RST_STREAM "MUST respond with a stream error of type STREAM_CLOSED";
    // closed: we treat DATA/HEADERS after END_STREAM or the peer's
    // RST_STREAM as a connection error STREAM_CLOSED, which §5.1 permits.
    public static let streamHalfClosed = H2Error(code: .streamClosed, reason: "frame on a half-closed (remote) stream")
    public static let streamClosed = H2Error(code: .streamClosed, reason: "frame on a closed stream")
    // §6.10: "a HEADERS, PUSH_PROMISE, or CONTINUATION frame without the
    // END_HEADERS flag set MUST be followed by a CONTINUATION frame for the
    // same stream. A receiver MUST treat the receipt of any other type of
    // frame or a frame on a different stream as a connection error of type
    // PROTOCOL_ERROR."
    public static let expectedContinuation = H2Error(code: .protocolError, reason: "frame interleaved in a field block")
    public static let unexpectedContinuation = H2Error(code: .protocolError, reason: "CONTINUATION without a field block in progress")
    // §8.4: "A client cannot push. Thus, servers MUST treat the receipt of a
    // PUSH_PROMISE frame as a connection error of type PROTOCOL_ERROR."
    public static let pushPromiseFromClient = H2Error(code: .protocolError, reason: "PUSH_PROMISE from a client")
    // §5.3.1: "A stream cannot depend on itself."
    public static let selfDependency = H2Error(code: .protocolError, reason: "stream depends on itself")
    // §6.9.1: a window "MUST NOT exceed 2^31-1"; overflow by WINDOW_UPDATE is
    // a stream or connection FLOW_CONTROL_ERROR; §6.9.2 an INITIAL_WINDOW_SIZE
    // change overflowing any window is a connection error.
    public static let sendWindowOverflow = H2Error(code: .flowControlError, reason: "flow-control window above 2^31-1")
    // §6.9: a sender "MUST NOT send a flow-controlled frame with a length that
    // exceeds the space available"; a receiver MAY treat it as
    // FLOW_CONTROL_ERROR.
    public static let receiveWindowExceeded = H2Error(code: .flowControlError, reason: "DATA beyond the advertised window")
    // §6.5.3: no SETTINGS ack in time.
    public static let settingsTimeout = H2Error(code: .settingsTimeout, reason: "SETTINGS not acknowledged in time")
    // §8.1: "An endpoint that receives a HEADERS frame without the END_STREAM
    // flag set after receiving the HEADERS frame that opens a request ... MUST
    // treat the corresponding request or response as malformed".
    public static let trailersWithoutEndStream = H2Error(code: .protocolError, reason: "trailers without END_STREAM")
    // §8.1.1: content-length "does not equal the sum of the DATA frame
    // payload lengths" → malformed.
    public static let contentLengthMismatch = H2Error(code: .protocolError, reason: "body length differs from content-length")
    // §5.1.2 over SETTINGS_MAX_CONCURRENT_STREAMS.
    public static let refused = H2Error(code: .refusedStream, reason: "too many concurrent streams")

    // Abuse budgets (H2Limits).
    public static let controlFrameFlood = H2Error(code: .enhanceYourCalm, reason: "too many control frames queued unsent (PING/SETTINGS flood)")
    public static let rapidReset = H2Error(code: .enhanceYourCalm, reason: "too many stream resets (rapid reset)")
    public static let emptyFrameFlood = H2Error(code: .enhanceYourCalm, reason: "too many empty frames")
    public static let continuationFlood = H2Error(code: .enhanceYourCalm, reason: "too many CONTINUATION frames")
    public static let headerBlockTooLarge = H2Error(code: .enhanceYourCalm, reason: "field block larger than the buffering limit")
}
