// What `WebTransportRegistry` hands the glue: past-tense facts and the
// actions they call for (STYLE §5, like `H3Event`).

import Core

/// One thing the glue must act on for WebTransport.
public enum WebTransportEvent: Equatable {
    /// A WebTransport CONNECT whose draft is now known (the client's
    /// SETTINGS arrived): give it to the application, then `accept` or
    /// `refuse` it.
    case sessionRequested(sessionID: UInt64, draft: WebTransportDraft)
    /// A CONNECT refused at the HTTP/3 layer (the application never sees
    /// it): reset and stop its stream with `code` (H3_REQUEST_REJECTED over
    /// the session limit, H3_MESSAGE_ERROR when the client's SETTINGS do not
    /// allow the draft its `:protocol` names).
    case sessionRefused(sessionID: UInt64, code: H3ErrorCode)
    /// Body bytes of a session's stream, in order (`receive` returns these;
    /// `bytes` point into its input). `fin`: the peer's side ended.
    case streamData(sessionID: UInt64, streamID: UInt64, bytes: UnsafeRawBufferPointer, fin: Bool)
    /// A stream held for its session can be read now: offer its bytes again.
    case streamReleased(streamID: UInt64)
    /// The peer reset its side of a session's stream (RESET_STREAM); the
    /// application code if the HTTP/3 code carries one (§4.4).
    case streamReset(sessionID: UInt64, streamID: UInt64, applicationCode: UInt32?)
    /// The peer asked us to stop sending on a session's stream (STOP_SENDING).
    case streamStopped(sessionID: UInt64, streamID: UInt64, applicationCode: UInt32?)
    /// Give the stream up: RESET_STREAM on our sending side and STOP_SENDING
    /// on the peer's, as far as the stream has them, with `code`
    /// (WT_SESSION_GONE, WT_BUFFERED_STREAM_REJECTED). Feed nothing more for it.
    case abortStream(streamID: UInt64, code: H3ErrorCode)
    case datagram(sessionID: UInt64, payload: [UInt8])
    /// The peer sent WT_DRAIN_SESSION, or we are going away: the application
    /// should finish up.
    case sessionDraining(sessionID: UInt64)
    /// The peer ended the session: a close capsule (its code and message),
    /// or FIN or reset of the CONNECT stream (code 0, no message). Finish
    /// our side of the CONNECT stream (FIN) if it is still open.
    case sessionClosed(sessionID: UInt64, code: UInt32, message: [UInt8])
    /// The session failed: reset and stop its CONNECT stream with `code`
    /// (WT_FLOW_CONTROL_ERROR, H3_MESSAGE_ERROR, H3_EXCESSIVE_LOAD).
    case sessionFailed(sessionID: UInt64, code: H3ErrorCode)
    /// A connection error (a session ID that cannot be one, a malformed
    /// datagram): close the QUIC connection with `code`.
    case connectionError(code: H3ErrorCode, reason: StaticString)

    public static func == (a: WebTransportEvent, b: WebTransportEvent) -> Bool {
        switch (a, b) {
        case let (.sessionRequested(x, d), .sessionRequested(y, e)): x == y && d == e
        case let (.sessionRefused(x, c), .sessionRefused(y, d)): x == y && c == d
        case let (.streamData(s, x, p, f), .streamData(t, y, q, g)): s == t && x == y && f == g && p.elementsEqual(q)
        case let (.streamReleased(x), .streamReleased(y)): x == y
        case let (.streamReset(s, x, c), .streamReset(t, y, d)): s == t && x == y && c == d
        case let (.streamStopped(s, x, c), .streamStopped(t, y, d)): s == t && x == y && c == d
        case let (.abortStream(x, c), .abortStream(y, d)): x == y && c == d
        case let (.datagram(x, p), .datagram(y, q)): x == y && p == q
        case let (.sessionDraining(x), .sessionDraining(y)): x == y
        case let (.sessionClosed(x, c, m), .sessionClosed(y, d, n)): x == y && c == d && m == n
        case let (.sessionFailed(x, c), .sessionFailed(y, d)): x == y && c == d
        case let (.connectionError(c, r), .connectionError(d, s)): c == d && r.sameText(as: s)
        default: false
        }
    }
}
