// What `H3Session` hands the glue: past-tense facts about the peer's input
// (STYLE §5), in the shape of `H2Event`. Control-stream frames the session
// handles itself (MAX_PUSH_ID, unknown and reserved frames, QPACK encoder and
// decoder instructions) make no event.

import HTTPFields

/// One thing the glue must act on.
public enum H3Event {
    /// A new request on a request stream. `endStream`: the client closed the
    /// stream right after the head (no body, no trailers).
    case request(streamID: UInt64, head: RequestHead, endStream: Bool)
    /// Request content. `bytes` point into the bytes the caller passed and
    /// are valid only until its next call into the session. An empty `bytes`
    /// comes only with `endStream` (the stream ended after a DATA frame or
    /// an unknown frame).
    case data(streamID: UInt64, bytes: UnsafeRawBufferPointer, endStream: Bool)
    /// Trailers; they end the request (a FIN may still follow: nothing more
    /// is reported for it). No pseudo-header fields.
    case trailers(streamID: UInt64, head: RequestHead)
    /// The client cancelled the request: RESET_STREAM on its request stream,
    /// or STOP_SENDING for our response. The application must be told
    /// (http.disconnect); the session has forgotten the stream. Reset what is
    /// still open of it (RESET_STREAM with H3_REQUEST_CANCELLED, STOP_SENDING
    /// with the same) and feed nothing more for it.
    case streamReset(streamID: UInt64, code: H3ErrorCode)
    /// A stream error the session found on a request stream (a malformed
    /// request, H3_MESSAGE_ERROR; a rejected one, H3_REQUEST_REJECTED; …):
    /// send RESET_STREAM and STOP_SENDING with `code`, and feed nothing more
    /// for it. If the application had the request, it must be told
    /// (http.disconnect).
    case streamError(streamID: UInt64, code: H3ErrorCode, reason: StaticString)
    /// The request head was over our SETTINGS_MAX_FIELD_SECTION_SIZE
    /// (RFC 9114 §4.2.2). `response` is a complete 431 response (one HEADERS
    /// frame, valid until the next call): write it and end the stream (FIN);
    /// send STOP_SENDING with H3_NO_ERROR if the client has not finished the
    /// stream (§4.1). The application never sees the request.
    case headTooLarge(streamID: UInt64, response: UnsafeRawBufferPointer)
    /// A client unidirectional stream of an unknown or reserved type
    /// (§6.2.3): send STOP_SENDING with `code` (H3_STREAM_CREATION_ERROR)
    /// and discard its data. Not an error of any kind.
    case unknownStreamIgnored(streamID: UInt64, code: H3ErrorCode)
    /// A WebTransport data stream (only with `H3Limits.webTransport`): a
    /// client bidirectional stream whose first bytes are the signal 0x41, or
    /// a unidirectional stream of type 0x54 (draft-ietf-webtrans-http3 §4.2,
    /// §4.3; draft-02 §4.1, §4.2). The signal or type was consumed; the
    /// session has forgotten the stream: from now on feed its bytes, resets
    /// and STOP_SENDING to the `WebTransportRegistry` (bytes still offered
    /// here are dropped).
    case webTransportStream(streamID: UInt64, bidirectional: Bool)
    /// The client's SETTINGS (the first frame on its control stream).
    case settings(H3Settings)
    /// The client's GOAWAY (§5.2): it will accept no push from `pushID` on
    /// (we never push) and starts no new requests; finish what is open.
    case goAway(pushID: UInt64)
    /// A connection error: close the QUIC connection with CONNECTION_CLOSE
    /// (application close) carrying `code` and `reason`. Further input is
    /// ignored and the send calls do nothing.
    case connectionError(code: H3ErrorCode, reason: StaticString)
}
