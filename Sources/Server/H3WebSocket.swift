import Core

/// A WebSocket over an HTTP/3 request stream (RFC 9220): what the stream
/// holds for it from the extended CONNECT on. While this is set the stream
/// is on the service's list of WebSocket streams (their timers), also after
/// the conversation has ended and while our FIN waits for the peer's.
struct H3WebSocket {
    /// The conversation, until it ends.
    var conversation: WebSocketConversation?
    /// The conversation's timer, or, once our FIN is out, how long the peer
    /// has to end its side.
    var deadline: Instant?
    /// The DATA payload being decoded in place, when nothing was buffered.
    var directInput: UnsafeMutableRawBufferPointer?
}
