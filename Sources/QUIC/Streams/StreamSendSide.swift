// The sending part of a stream (RFC 9000 §3.1), with its flow control
// (§4.1).
//
//        o
//        | write / first STREAM sent
//        v
//    +-------+  FIN sent   +-----------+  all acked  +------------+
//    | Send  |------------>| Data Sent |------------>| Data Recvd |
//    +-------+             +-----------+             +------------+
//        | reset                | reset
//        v                      v
//    +------------+  RESET_STREAM acked  +-------------+
//    | Reset Sent |--------------------->| Reset Recvd |
//    +------------+                      +-------------+
//
// ("Ready" and "Send" are one state here: a stream exists because it was
// opened or written.) A reset — ours, or ours in answer to STOP_SENDING
// (§3.5) — abandons the buffered data: nothing more is sent or resent but
// the RESET_STREAM, which is resent until acknowledged (§13.3).

struct StreamSendSide {
    enum State: Equatable {
        case sending, dataSent, dataReceived, resetSent, resetReceived
    }

    private(set) var state = State.sending
    private(set) var buffer = SendBuffer()
    /// The peer's limit for this stream (§4.1).
    private(set) var peerMaxData: UInt64
    /// Where the stream ends, once the application said so.
    private(set) var finOffset: UInt64?
    /// The FIN is owed (never sent, or its packet was lost).
    private(set) var finPending = false
    private var finAcked = false
    /// Our RESET_STREAM: its code and final size; `resetPending` while owed.
    private(set) var reset: (errorCode: UInt64, finalSize: UInt64)?
    private(set) var resetPending = false
    /// A STREAM_DATA_BLOCKED at this limit is owed (§4.1, §19.13).
    var blockedPending: UInt64?
    private var blockedSentAt: UInt64?
    /// `write` took less than offered: tell the application when space frees.
    var wantsWritable = false

    init(peerMaxData: UInt64) {
        self.peerMaxData = peerMaxData
    }

    var isTerminal: Bool { state == .dataReceived || state == .resetReceived }
    var acceptsData: Bool { state == .sending && finOffset == nil }

    func space(limit: Int) -> Int { acceptsData ? max(0, limit - buffer.bufferedCount) : 0 }

    mutating func write(_ bytes: UnsafeRawBufferPointer, limit: Int) -> Int {
        let n = min(bytes.count, space(limit: limit))
        if n > 0 { buffer.append(UnsafeRawBufferPointer(rebasing: bytes[0..<n])) }
        if n < bytes.count { wantsWritable = true }
        return n
    }

    mutating func finish() {
        guard acceptsData else { return }
        finOffset = buffer.end
        finPending = true
    }

    /// Whether a STREAM frame could go out now with `connectionCredit` new
    /// bytes allowed by the connection limit.
    func hasFrameToSend(connectionCredit: UInt64) -> Bool {
        guard state == .sending || state == .dataSent else { return false }
        if buffer.hasLostData || bareFinOffset != nil { return true }
        return buffer.hasNewData && buffer.nextNew < peerMaxData && connectionCredit > 0
    }

    /// The next chunk to frame: at most `maxLength` bytes, new bytes within
    /// both limits. nil when only a FIN (or nothing) is owed.
    func nextChunk(maxLength: Int, connectionCredit: UInt64) -> (offset: UInt64, length: Int, isNew: Bool)? {
        guard state == .sending || state == .dataSent else { return nil }
        let newLimit = min(peerMaxData, buffer.nextNew + connectionCredit)
        return buffer.nextChunk(maxLength: maxLength, newLimit: newLimit)
    }

    /// Whether a frame ending at `end` carries the FIN.
    func finGoesWith(end: UInt64) -> Bool { finPending && finOffset == end }

    /// The offset a FIN-only frame is sent at, when only the FIN is owed.
    var bareFinOffset: UInt64? {
        guard finPending, let finOffset, !buffer.hasLostData, buffer.nextNew == finOffset else { return nil }
        return finOffset
    }

    mutating func markSent(offset: UInt64, length: Int, fin: Bool) {
        buffer.markSent(offset: offset, length: length)
        if fin {
            finPending = false
            if state == .sending { state = .dataSent }
        }
        if let blockedSentAt, peerMaxData > blockedSentAt { self.blockedSentAt = nil }
    }

    /// Whether the stream is blocked by its own limit with data waiting, and
    /// STREAM_DATA_BLOCKED was not sent at this limit yet.
    mutating func noteBlockedIfNeeded() {
        guard state == .sending, buffer.hasNewData, buffer.nextNew >= peerMaxData, blockedSentAt != peerMaxData else { return }
        blockedSentAt = peerMaxData
        blockedPending = peerMaxData
    }

    mutating func acked(offset: UInt64, length: Int, fin: Bool) {
        guard state == .sending || state == .dataSent else { return }
        buffer.markAcked(offset: offset, length: length)
        if fin { finAcked = true }
        if finAcked && buffer.allAcknowledged { state = .dataReceived }
    }

    mutating func lost(offset: UInt64, length: Int, fin: Bool) {
        guard state == .sending || state == .dataSent else { return }
        buffer.markLost(offset: offset, length: length)
        if fin && !finAcked { finPending = true }
    }

    /// MAX_STREAM_DATA (§19.10): limits only grow.
    mutating func raiseLimit(_ limit: UInt64) -> Bool {
        guard limit > peerMaxData else { return false }
        peerMaxData = limit
        return true
    }

    /// Resets the stream (§3.1, §19.4). The final size is what was sent so
    /// far. Returns false when it is already reset or all data was acknowledged.
    mutating func resetStream(errorCode: UInt64) -> Bool {
        guard state == .sending || state == .dataSent else { return false }
        reset = (errorCode, buffer.nextNew)
        resetPending = true
        finPending = false
        buffer.abandon()
        state = .resetSent
        return true
    }

    mutating func resetStreamSent() { resetPending = false }
    mutating func resetStreamLost() { if state == .resetSent { resetPending = true } }
    mutating func resetStreamAcked() { if state == .resetSent { state = .resetReceived } }
}
