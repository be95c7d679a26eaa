// What `H2Connection.nextEvent` hands the server: past-tense facts about the
// peer's input (STYLE §5). Control frames the connection answers itself
// (SETTINGS, PING, PRIORITY, WINDOW_UPDATE that opens nothing) make no event.

import Core

/// One thing the server must act on.
public enum H2Event {
    /// A new request. `endStream`: it has no body.
    ///
    /// `head` is lent, like DATA's bytes: its arrays are the connection's,
    /// which the next call rebuilds for the next head. Copy what you keep
    /// and let go of the event before calling again. (Holding it stays
    /// safe — copy-on-write then gives the next head new arrays — but costs
    /// two allocations per request.)
    case request(streamID: UInt32, head: H2RequestHead, endStream: Bool)
    /// Body bytes (padding removed). `bytes` point into the caller's input
    /// and are valid only until the caller's next call.
    /// `flowControlledLength` is what the frame cost in flow control
    /// (padding included); report all of it with `consumed(streamID:_:)` —
    /// the padding share (`flowControlledLength - bytes.count`) at once, the
    /// bytes as the application takes them: that, and only that, returns
    /// flow-control credit. An empty `bytes` comes only with `endStream`.
    case data(streamID: UInt32, bytes: UnsafeRawBufferPointer, flowControlledLength: Int, endStream: Bool)
    /// Trailers; they end the request body. No pseudo-header fields. `head`
    /// is lent, as for `.request`.
    case trailers(streamID: UInt32, head: H2RequestHead)
    /// The stream is gone: the peer's RST_STREAM, or a stream error we
    /// answered with RST_STREAM. The application must be told
    /// (http.disconnect); sends on the stream are discarded from now on.
    case streamReset(streamID: UInt32, code: HTTP2ErrorCode)
    /// Send window grew: on `streamID`, or (0) on the connection or on every
    /// stream (SETTINGS_INITIAL_WINDOW_SIZE raised) — any blocked stream may
    /// try `sendData` again.
    case windowOpened(streamID: UInt32)
    /// The peer's GOAWAY: it starts no new streams; streams above
    /// `lastStreamID` that we started (none: we never push) were not seen.
    case goAway(lastStreamID: UInt32, code: HTTP2ErrorCode)
    /// A connection error: our GOAWAY(code) is queued in `output`. Flush it
    /// and close; further input is ignored.
    case connectionError(code: HTTP2ErrorCode, reason: StaticString)
}
