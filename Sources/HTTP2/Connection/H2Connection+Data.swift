// Receiving DATA (RFC 9113 §6.1) and returning its flow-control credit
// (§6.9).
//
// Every DATA frame costs its whole payload in the connection window, whatever
// becomes of it (§6.9: frames on closed streams still count); a frame that
// makes no event gives its credit straight back. Credit for a DATA event —
// padding included, as in python-hyper/h2's `acknowledge_received_data` —
// returns only through `consumed`, once half a window is pending
// (`ReceiveWindow`), so the body a connection can hold is bounded by the
// windows we advertise. When a stream goes away, whatever of its delivered
// bytes was not yet reported goes back to the connection window.

import Core

extension H2Connection {
    func receiveData(_ f: DataFrame, in view: UnsafeRawBufferPointer) -> H2Event? {
        let id = f.streamID
        let cost = f.flowControlledLength
        let stream: Int
        switch lookup(id) {
        case .idle:
            // §6.1: "If a DATA frame is received whose stream is not in the
            // "open" or "half-closed (local)" state, the recipient MUST
            // respond with a stream error of type STREAM_CLOSED"; §5.1 makes
            // it a connection PROTOCOL_ERROR on an idle stream.
            return fail(.frameOnIdleStream)
        case .closed(let how):
            guard connectionReceive.receive(cost) else { return fail(.receiveWindowExceeded) }
            returnConnectionCredit(cost)
            // §5.1: "An endpoint MUST ignore frames that it receives on closed
            // streams after it has sent a RST_STREAM frame."
            return how == .resetByUs ? nil : fail(.streamClosed)
        case .live(let i):
            stream = i
        }
        guard connectionReceive.receive(cost) else { return fail(.receiveWindowExceeded) }
        guard streams[stream].state.peerMaySend else {
            returnConnectionCredit(cost)
            return streamError(at: stream, .streamHalfClosed)
        }
        guard streams[stream].receiveWindow.receive(cost) else {
            returnConnectionCredit(cost)
            return streamError(at: stream, .receiveWindowExceeded)
        }
        let length = f.data.count

        // §8.1.1: the DATA lengths must add up to content-length.
        streams[stream].receivedLength += Int64(length)
        if let expected = streams[stream].expectedLength {
            let received = streams[stream].receivedLength
            if received > expected || (f.endStream && received != expected) {
                returnConnectionCredit(cost)
                return streamError(at: stream, .contentLengthMismatch)
            }
        }
        if length == 0 && !f.endStream {
            // Legal, useless, and free for the peer to repeat. No event, so
            // any padding's credit goes back here.
            if cost > 0 { releaseCredit(at: stream, cost) }
            return spendEmptyFrame()
        }
        streams[stream].unconsumed += cost
        if f.endStream {
            if let next = streams[stream].state.receiveEndStream() {
                streams[stream].state = next
            } else {
                removeStream(at: stream, .closed)
            }
        }
        return .data(streamID: id, bytes: UnsafeRawBufferPointer(rebasing: view[f.data.start ..< f.data.end]),
                     flowControlledLength: cost, endStream: f.endStream)
    }

    /// Returns credit for flow-controlled bytes of a live stream that no
    /// event carried: both windows.
    private func releaseCredit(at i: Int, _ n: Int) {
        if let increment = streams[i].receiveWindow.release(n) {
            writeWindowUpdate(streams[i].id, increment)
        }
        returnConnectionCredit(n)
    }

    /// The application is done with `n` flow-controlled bytes of `streamID`:
    /// the padding share of a DATA event (`flowControlledLength -
    /// bytes.count`) at once, its bytes as they are read. WINDOW_UPDATEs for
    /// the stream and the connection are queued once half a window is
    /// pending. At most what events delivered is credited; bytes of a stream
    /// that is gone were returned when it went, so they are ignored here.
    public func consumed(streamID: UInt32, _ n: Int) {
        guard n > 0, failure == nil, let i = streams.find(streamID) else { return }
        let k = min(n, streams[i].unconsumed)
        guard k > 0 else { return }
        streams[i].unconsumed -= k
        if let increment = streams[i].receiveWindow.release(k), streams[i].state.peerMaySend {
            writeWindowUpdate(streamID, increment)
        }
        returnConnectionCredit(k)
    }
}
