// The receiving part of a stream (RFC 9000 §3.2), with its flow control
// (§4.1, §4.5).
//
//        o
//        | STREAM / STREAM_DATA_BLOCKED / RESET_STREAM
//        v
//    +-------+  STREAM + FIN   +------------+  all data  +------------+  app read  +-----------+
//    | Recv  |---------------->| Size Known |----------->| Data Recvd |----------->| Data Read |
//    +-------+                 +------------+            +------------+            +-----------+
//        | RESET_STREAM            | RESET_STREAM
//        v                         v
//    +--------------+  app notified  +------------+
//    | Reset Recvd  |--------------->| Reset Read |
//    +--------------+                +------------+
//
// Our differences from the diagram: a RESET_STREAM that arrives in Data
// Recvd is ignored (§3.2 allows either), and "Reset Read" is entered as soon
// as the application is told (the event is the reading).
//
// RESET_STREAM_AT (draft-ietf-quic-reliable-stream-reset §5) is a reset
// that waits: in Recv or Size Known it fixes the final size and records
// `reliableReset`, the side stays in Size Known, the bytes below the
// Reliable Size are still delivered (no further, and no FIN), and once the
// application has read them all the side moves to Reset Recvd as a
// RESET_STREAM would have moved it. A later RESET_STREAM_AT or RESET_STREAM
// (Reliable Size 0) can lower the reliable size, never raise it. Data is delivered
// only in order; the advertised limit (`maxData`) moves up as the
// application reads, never as bytes arrive (DESIGN principle 6), by a window
// at a time once half of it is used. An application that gives up on the
// receive side (`abandon`) has further data discarded, its flow-control
// credit still returned.
//
// Connection credit (MAX_DATA, §4.1) follows the same reading, with one
// exception: a side the application has parked (it stopped reading for
// now, its own buffer full; `QUICStream.readingParked`) gives the
// connection its bytes back as they arrive. Otherwise streams nobody reads (requests queued behind a WSGI
// application, or applications that do not read) would hold the whole
// connection window and starve the stream that is being read; the stream's
// own window still bounds what it holds.

final class StreamReceiveSide {
    enum State: Equatable {
        case receiving, sizeKnown, dataReceived, dataRead, resetReceived, resetRead
    }

    private(set) var buffer = ReassemblyBuffer()
    private(set) var finalSize: UInt64?
    // (These two here, in the padding after an optional.)
    private(set) var state = State.receiving
    /// The application gave up reading: data is dropped on arrival.
    private(set) var abandoned = false
    /// The highest offset received (counts toward connection flow control).
    private(set) var highestReceived: UInt64 = 0
    /// The limit we advertised.
    private(set) var maxData: UInt64
    let window: UInt64
    /// A reset whose reliable bytes are not all read yet: the error code
    /// and the Reliable Size in force (the lowest received).
    private(set) var reliableReset: (errorCode: UInt64, reliableSize: UInt64)?

    init(window: UInt64) {
        self.window = window
        maxData = window
    }

    /// The buffer's spare capacity back (an idle stream).
    func releaseIdleCapacity() { buffer.releaseIdleCapacity() }

    var isTerminal: Bool { state == .dataRead || state == .resetRead }

    /// Where the application has read up to, for credit: everything received
    /// counts as read once the side is abandoned or reset.
    var creditOffset: UInt64 {
        if abandoned || state == .resetReceived || state == .resetRead { return highestReceived }
        // Under a reliable reset the bytes above the Reliable Size will
        // never be read either: credited now (once all below are read, this
        // is the final size, as after a reset).
        if let r = reliableReset, let finalSize { return buffer.readOffset + (finalSize - max(r.reliableSize, buffer.readOffset)) }
        return buffer.readOffset
    }

    /// Bytes the application may read now: in order, and below the Reliable
    /// Size of a pending reliable reset.
    var readableCount: Int {
        let n = buffer.contiguousCount
        guard let r = reliableReset else { return n }
        return r.reliableSize > buffer.readOffset ? min(n, Int(r.reliableSize - buffer.readOffset)) : 0
    }

    /// Applies a STREAM frame. Returns how much `highestReceived` grew (the
    /// connection's flow-control accounting) and whether there is something
    /// new for the application to read.
    func receive(offset: UInt64, _ bytes: UnsafeRawBufferPointer, fin: Bool) throws(QUICError) -> (growth: UInt64, readable: Bool) {
        let end = offset + UInt64(bytes.count)  // ≤ 2^62-1, checked by the frame decoder
        if let finalSize {
            guard end <= finalSize else { throw .dataBeyondFinalSize }
            if fin && end != finalSize { throw .finalSizeChanged }
        } else if fin && end < highestReceived {
            throw .finalSizeBelowReceived
        }
        guard end <= maxData else { throw .streamFlowControl }
        let growth = end > highestReceived ? end - highestReceived : 0
        highestReceived = max(highestReceived, end)
        switch state {
        case .receiving, .sizeKnown:
            break
        default:
            return (growth, false)  // all data already here, or reset: nothing to do
        }
        if fin && finalSize == nil {
            finalSize = end
            state = .sizeKnown
        }
        if abandoned {
            buffer.discard(upTo: highestReceived)
            if let finalSize, highestReceived == finalSize { state = .dataRead }
            return (growth, false)
        }
        let before = readableCount
        if let r = reliableReset {
            // Only the reliable part will be read: keep no more of it.
            guard offset < r.reliableSize else { return (growth, false) }
            let kept = Int(min(end, r.reliableSize) - offset)
            buffer.write(offset: offset, UnsafeRawBufferPointer(rebasing: bytes[0..<kept]))
            return (growth, readableCount > before)
        }
        buffer.write(offset: offset, bytes)
        if let finalSize, buffer.readOffset + UInt64(buffer.contiguousCount) == finalSize { state = .dataReceived }
        return (growth, readableCount > before || (state == .dataReceived && fin))
    }

    /// Applies a RESET_STREAM (§3.2, §4.5), or a RESET_STREAM_AT with its
    /// `reliableSize` (draft-ietf-quic-reliable-stream-reset §5; 0 for
    /// RESET_STREAM). Returns the growth of `highestReceived` and the error
    /// code when the application must be told now (nil when the reset
    /// changes nothing, or waits for the reliable bytes to be read:
    /// `completeReliableReset`). The bytes that will never be read are
    /// credited back by `QUICStream.takeConnectionCredit`.
    func receiveReset(finalSize size: UInt64, reliableSize: UInt64 = 0,
                               errorCode: UInt64) throws(QUICError) -> (growth: UInt64, notify: UInt64?) {
        if let finalSize, finalSize != size { throw .finalSizeChanged }
        guard size >= highestReceived else { throw .finalSizeBelowReceived }
        guard size <= maxData else { throw .streamFlowControl }
        let growth = size - highestReceived
        highestReceived = size
        finalSize = size
        switch state {
        case .receiving, .sizeKnown:
            // §5: a later reset "can only lower the reliable size".
            if reliableReset == nil || reliableSize < reliableReset!.reliableSize {
                reliableReset = (errorCode, reliableSize)
            }
            state = .sizeKnown
            return (growth, completeReliableReset())
        default:
            return (growth, nil)
        }
    }

    /// Once every byte below the Reliable Size was read, the pending reset
    /// takes effect (Reset Recvd): returns its error code when the
    /// application must be told (not when it abandoned the side).
    func completeReliableReset() -> UInt64? {
        guard let r = reliableReset, state == .sizeKnown, abandoned || buffer.readOffset >= r.reliableSize else { return nil }
        buffer.discard(upTo: finalSize!)
        // Given up by the application (STOP_SENDING): nobody is told, and
        // the side is done at once — "Reset Read" — so that the stream can
        // be forgotten (a side left in Reset Recvd would keep it, and its
        // MAX_STREAMS slot, for the connection's life).
        state = abandoned ? .resetRead : .resetReceived
        return abandoned ? nil : r.errorCode
    }

    /// The application was told of the reset.
    func resetRead() {
        if state == .resetReceived { state = .resetRead }
    }

    /// Whether the FIN comes right after the readable bytes.
    var finAfterReadable: Bool {
        guard let finalSize, reliableReset == nil else { return false }
        return buffer.readOffset + UInt64(buffer.contiguousCount) == finalSize
    }

    func withReadableBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        let n = readableCount
        // `body` may act on this side while it reads (abandon it, reset
        // it): it reads a copy of the buffer, gone before the side is
        // consumed (alive, it would make consuming copy the storage).
        let view = buffer
        return view.withContiguousBytes { body(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
    }

    /// The application read `n` bytes. Returns the bytes of credit released.
    func consume(_ n: Int) -> UInt64 {
        let before = creditOffset
        buffer.consume(n)
        if state == .dataReceived && buffer.readOffset == finalSize { state = .dataRead }
        return creditOffset - before
    }

    /// A FIN with no bytes before it was read (the empty end of a stream).
    func finRead() {
        if state == .dataReceived && buffer.readOffset == finalSize { state = .dataRead }
    }

    /// The application will not read any more (§3.5 STOP_SENDING): data is
    /// dropped, its credit returned (`limitUpdate`, `QUICStream.takeConnectionCredit`).
    func abandon() {
        guard !abandoned else { return }
        abandoned = true
        buffer.discard(upTo: highestReceived)
        if reliableReset != nil && state == .sizeKnown {
            state = .resetRead  // the reset was pending; nobody is told of it now
            return
        }
        if state == .dataReceived || (state == .sizeKnown && highestReceived == finalSize) { state = .dataRead }
        if state == .resetReceived { state = .resetRead }
    }

    /// The new limit to advertise, if the application has read enough of
    /// the window (half) to make a MAX_STREAM_DATA worth sending (§4.2).
    var limitUpdate: UInt64? {
        guard finalSize == nil, !abandoned else { return nil }  // no more data will need credit
        let proposed = creditOffset + window
        return proposed > maxData && proposed - maxData >= window / 2 ? proposed : nil
    }

    func advertise(_ limit: UInt64) {
        maxData = max(maxData, limit)
    }
}
