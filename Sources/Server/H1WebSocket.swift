import WebSocket

/// A WebSocket on an HTTP/1.1 connection after a valid opening handshake
/// (see H1Connection+WebSocket): the transport-independent conversation,
/// the client's key (the 101 answers it), and whether the connection closes
/// once its output is flushed. A class, so an HTTP/1.1 connection that never
/// upgrades holds one reference for it, not the whole state.
final class H1WebSocket {
    let conversation: WebSocketConversation
    let key: SecWebSocketKey
    var closeWhenFlushed = false

    init(conversation: WebSocketConversation, key: SecWebSocketKey) {
        self.conversation = conversation
        self.key = key
    }
}
