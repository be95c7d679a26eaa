extension QUICEndpoint {
    /// Connections neither closing nor draining (RFC 9000 §10.2):
    /// handshakes under way and established connections. What a server
    /// that stops waits for; a connection in the closing or draining state
    /// has already said (or heard) its last word, and only lingers to answer
    /// stray packets for three probe timeouts.
    public var openConnectionCount: Int {
        context.connections.values.reduce(0) { $0 + ($1.isOpen ? 1 : 0) }
    }
}
