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
//
// A reliable reset (RESET_STREAM_AT, draft-ietf-quic-reliable-stream-reset
// §5) keeps the bytes below its Reliable Size: in Reset Sent they are still
// sent and resent until acknowledged, the rest is dropped, and Reset Recvd
// needs both the frame and those bytes acknowledged. Bytes below the
// Reliable Size that were never sent count toward flow control at once
// (the peer counts the Final Size when the frame arrives, RFC 9000 §4.5),
// so the reliable size is capped by the credit left and the connection
// reserves it (`resetStream`'s `reserved`).

final class StreamSendSide {
    enum State: Equatable {
        case sending, dataSent, dataReceived, resetSent, resetReceived
    }

    private(set) var buffer = SendBuffer()
    /// The peer's limit for this stream (§4.1).
    private(set) var peerMaxData: UInt64
    /// Where the stream ends, once the application said so.
    private(set) var finOffset: UInt64?
    /// The FIN is owed (never sent, or its packet was lost).
    private(set) var finPending = false
    private var finAcked = false
    /// Our RESET_STREAM: its code and final size, and the Reliable Size of a
    /// RESET_STREAM_AT (nil: a plain RESET_STREAM); `resetPending` while owed.
    private(set) var reset: (errorCode: UInt64, finalSize: UInt64, reliableSize: UInt64?)?
    private(set) var resetPending = false
    private var resetAcked = false
    /// A STREAM_DATA_BLOCKED at this limit is owed (§4.1, §19.13).
    var blockedPending: UInt64?
    // (Here, in the padding after an optional.)
    private(set) var state = State.sending
    private var blockedSentAt: UInt64?
    /// `write` took less than offered: tell the application when space frees.
    var wantsWritable = false

    init(peerMaxData: UInt64) {
        self.peerMaxData = peerMaxData
    }

    /// The buffer's spare capacity back (an idle stream).
    func releaseIdleCapacity() { buffer.releaseIdleCapacity() }

    var isTerminal: Bool { state == .dataReceived || state == .resetReceived }
    var acceptsData: Bool { state == .sending && finOffset == nil }

    func space(limit: Int) -> Int { acceptsData ? max(0, limit - buffer.bufferedCount) : 0 }

    func write(_ bytes: UnsafeRawBufferPointer, limit: Int) -> Int {
        let n = min(bytes.count, space(limit: limit))
        if n > 0 { buffer.append(UnsafeRawBufferPointer(rebasing: bytes[0..<n])) }
        if n < bytes.count { wantsWritable = true }
        return n
    }

    func finish() {
        guard acceptsData else { return }
        finOffset = buffer.end
        finPending = true
    }

    /// Whether a STREAM frame could go out now with `connectionCredit` new
    /// bytes allowed by the connection limit.
    func hasFrameToSend(connectionCredit: UInt64) -> Bool {
        guard sendsData else { return false }
        if buffer.hasLostData || bareFinOffset != nil { return true }
        // After a reliable reset the new bytes left were within both limits
        // and reserved when it was made.
        if reset != nil { return buffer.hasNewData }
        return buffer.hasNewData && buffer.nextNew < peerMaxData && connectionCredit > 0
    }

    /// STREAM frames may go out: the stream is open, or reset reliably with
    /// bytes below the Reliable Size not yet acknowledged.
    private var sendsData: Bool {
        switch state {
        case .sending, .dataSent: true
        case .resetSent: reset?.reliableSize != nil && !buffer.allAcknowledged
        case .dataReceived, .resetReceived: false
        }
    }

    /// The next chunk to frame: at most `maxLength` bytes, new bytes within
    /// both limits. nil when only a FIN (or nothing) is owed.
    func nextChunk(maxLength: Int, connectionCredit: UInt64) -> (offset: UInt64, length: Int, isNew: Bool)? {
        guard sendsData else { return nil }
        let newLimit = reset != nil ? buffer.end : min(peerMaxData, buffer.nextNew + connectionCredit)
        return buffer.nextChunk(maxLength: maxLength, newLimit: newLimit)
    }

    /// Whether a frame ending at `end` carries the FIN.
    func finGoesWith(end: UInt64) -> Bool { finPending && finOffset == end }

    /// The offset a FIN-only frame is sent at, when only the FIN is owed.
    var bareFinOffset: UInt64? {
        guard finPending, let finOffset, !buffer.hasLostData, buffer.nextNew == finOffset else { return nil }
        return finOffset
    }

    func markSent(offset: UInt64, length: Int, fin: Bool) {
        buffer.markSent(offset: offset, length: length)
        if fin {
            finPending = false
            if state == .sending { state = .dataSent }
        }
        if let blockedSentAt, peerMaxData > blockedSentAt { self.blockedSentAt = nil }
    }

    /// Whether the stream is blocked by its own limit with data waiting, and
    /// STREAM_DATA_BLOCKED was not sent at this limit yet.
    func noteBlockedIfNeeded() {
        guard state == .sending, buffer.hasNewData, buffer.nextNew >= peerMaxData, blockedSentAt != peerMaxData else { return }
        blockedSentAt = peerMaxData
        blockedPending = peerMaxData
    }

    func acked(offset: UInt64, length: Int, fin: Bool) {
        guard sendsData else { return }
        buffer.markAcked(offset: offset, length: length)
        if state == .resetSent {
            if resetAcked && buffer.allAcknowledged { state = .resetReceived }
            return
        }
        if fin { finAcked = true }
        if finAcked && buffer.allAcknowledged { state = .dataReceived }
    }

    func lost(offset: UInt64, length: Int, fin: Bool) {
        guard sendsData else { return }
        buffer.markLost(offset: offset, length: length)
        if fin && !finAcked && reset == nil { finPending = true }
    }

    /// MAX_STREAM_DATA (§19.10): limits only grow.
    func raiseLimit(_ limit: UInt64) -> Bool {
        guard limit > peerMaxData else { return false }
        peerMaxData = limit
        return true
    }

    /// Resets the stream (§3.1, §19.4). The final size is what was sent so
    /// far. Returns false when it is already reset or all data was acknowledged.
    func resetStream(errorCode: UInt64) -> Bool {
        guard state == .sending || state == .dataSent else { return false }
        reset = (errorCode, buffer.nextNew, nil)
        resetPending = true
        finPending = false
        buffer.abandon()
        state = .resetSent
        return true
    }

    /// Resets the stream with RESET_STREAM_AT (draft-ietf-quic-reliable-
    /// stream-reset §4, §5): the bytes below `reliableSize` are still
    /// delivered. The reliable size is capped by what was written and by
    /// the stream's and the connection's credit (`connectionCredit`) for
    /// bytes not sent yet. Returns nil when it is already reset or all data
    /// was acknowledged, else the bytes beyond those sent that the final
    /// size covers — the caller counts them against the connection's limit.
    func resetStream(errorCode: UInt64, reliableSize: UInt64, connectionCredit: UInt64) -> UInt64? {
        guard state == .sending || state == .dataSent else { return nil }
        let sent = buffer.nextNew
        let reliable = min(reliableSize, buffer.end, max(sent, min(peerMaxData, sent + connectionCredit)))
        let finalSize = max(sent, reliable)
        reset = (errorCode, finalSize, reliable)
        resetPending = true
        finPending = false
        buffer.truncate(at: reliable)
        state = .resetSent
        return finalSize - sent
    }

    func resetStreamSent() { resetPending = false }
    func resetStreamLost() { if state == .resetSent { resetPending = true } }
    func resetStreamAcked() {
        guard state == .resetSent else { return }
        resetAcked = true
        if buffer.allAcknowledged { state = .resetReceived }
    }
}
