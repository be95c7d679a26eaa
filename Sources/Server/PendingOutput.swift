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
    /// Bytes produced while a file is pending, which go out after it (the
    /// end of its chunk, trailers): `bytes` always go before the file.
    var afterFile = ByteBuffer()
    /// A sender (ASGI `send()`, a WebSocket) waits for this to drain below
    /// the low-water mark.
    var drainWanted = false

    /// The file is out: what waited for it is next.
    mutating func fileSent() {
        file = nil
        swap(&bytes, &afterFile)
    }

    var isEmpty: Bool { bytes.readableCount == 0 && file == nil && afterFile.readableCount == 0 }
    var count: Int { bytes.readableCount + Int(file?.remaining ?? 0) + afterFile.readableCount }
}
