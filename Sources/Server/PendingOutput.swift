import Core

/// A regular file being sent as the rest of a response body.
struct PendingFile {
    var fd: Int32
    var offset: Int64
    var remaining: Int64
}

/// What a TCP connection has produced but the socket has not taken yet
/// (whatever the protocol: HTTP/1.1 responses, WebSocket frames), and who
/// waits for it (see H1Connection+Output).
struct PendingOutput {
    var bytes = ByteBuffer()
    var file: PendingFile?
    /// The worker holds this connection's last response (CoalescedOutput).
    var held = false
    /// A sender (ASGI `send()`, a WebSocket) waits for this to drain below
    /// the low-water mark.
    var drainWanted = false

    var isEmpty: Bool { bytes.readableCount == 0 && file == nil }
    var count: Int { bytes.readableCount + Int(file?.remaining ?? 0) }
}
