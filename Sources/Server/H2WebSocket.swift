import Core

/// A WebSocket over an HTTP/2 stream (RFC 8441): what the stream holds for
/// it from the extended CONNECT on. The stream stays on the session's list
/// of WebSocket streams (their timers) while this is set, also after the
/// conversation has ended.
struct H2WebSocket {
    /// The conversation, until it ends.
    var conversation: WebSocketConversation?
    /// The conversation's timer, or, once our END_STREAM is out, how long
    /// the peer has to end its side.
    var deadline: Instant?
    /// The DATA payload being decoded in place, when nothing was buffered.
    var directInput: UnsafeMutableRawBufferPointer?
}
