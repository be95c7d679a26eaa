// One stream: its receiving part, its sending part, or both (RFC 9000 §2,
// §3). A peer's unidirectional stream has only a receiving part; one of ours
// only a sending part. A class, so the connection mutates it in place in the
// stream map without copy-on-write; its parts are classes too, each
// allocated only when the stream has it, so the unidirectional streams
// HTTP/3 keeps open for the whole connection (RFC 9114 §6.2) do not carry
// room for the part they never use.

final class QUICStream {
    let id: UInt64
    var receive: StreamReceiveSide?
    var send: StreamSendSide?
    // (Declared so the flags fill the padding after an optional.)
    /// The offset up to which the receive side's bytes were credited back
    /// to the connection (MAX_DATA).
    private(set) var connectionCredited: UInt64 = 0
    /// The Reliable Size every reset of the send side uses, ours or the one
    /// STOP_SENDING makes (§3.5), when the peer accepts RESET_STREAM_AT
    /// (draft-ietf-quic-reliable-stream-reset): a protocol header at the
    /// stream's start that must arrive (WebTransport's). 0: RESET_STREAM.
    var reliableResetSize: UInt64 = 0
    /// A STOP_SENDING with this code is owed (§3.5).
    var stopSendingPending: UInt64?
    /// Queued in the connection's list of streams with frames to send.
    var queuedForSend = false
    /// A MAX_STREAM_DATA for this stream is owed (the value is computed when sent).
    var maxStreamDataPending = false
    /// The application stopped reading for now (`setReadingParked`): what
    /// arrives is credited to the connection at once (StreamReceiveSide).
    /// This and `connectionCredited` live here, not in the receive side:
    /// the application may park the stream inside `withReadableBytes`.
    var readingParked = false
    private(set) var stopSendingCode: UInt64?

    init(id: UInt64, receive: StreamReceiveSide?, send: StreamSendSide?) {
        self.id = id
        self.receive = receive
        self.send = send
    }

    /// Both parts are done: the stream can be forgotten (§3.3).
    var isClosed: Bool { (receive?.isTerminal ?? true) && (send?.isTerminal ?? true) }

    /// Whether the stream has a control frame or data to send.
    func hasSomethingToSend(connectionCredit: UInt64) -> Bool {
        if maxStreamDataPending || stopSendingPending != nil { return true }
        guard let send else { return false }
        return send.resetPending || send.blockedPending != nil || send.hasFrameToSend(connectionCredit: connectionCredit)
    }

    /// Connection credit owed since the last call: up to what was read, or
    /// up to everything received while parked, abandoned or reset. Each
    /// byte is credited once, however the side's state changes.
    func takeConnectionCredit() -> UInt64 {
        guard let receive else { return 0 }
        let offset = readingParked ? receive.highestReceived : receive.creditOffset
        guard offset > connectionCredited else { return 0 }
        defer { connectionCredited = offset }
        return offset - connectionCredited
    }

    func requestStopSending(_ code: UInt64) {
        guard stopSendingCode == nil else { return }
        stopSendingCode = code
        stopSendingPending = code
    }
}
