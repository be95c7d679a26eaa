// Data streams of sessions: the peer's (header, holding, data, resets) and
// ours (opening under the peer's limit, the header we write), and the
// session's flow control around them (draft-ietf-webtrans-http3 §4.2–§4.6,
// §5; draft-02 §4.1–§4.5).

import Core

extension WebTransportRegistry {
    /// `H3Session` handed over stream `id`; its signal or type took the
    /// first `signalLength` bytes (what `receive` consumed with the event).
    public func streamOpened(streamID id: UInt64, bidirectional: Bool, signalLength: Int = 2) {
        guard !failed, pending[id] == nil, attached[id] == nil else { return }
        pending[id] = .header(H3UniStreamPreamble(), bidirectional: bidirectional, read: signalLength)
    }

    /// Feeds the next bytes of a peer stream handed over by `H3Session`, in
    /// order, as `H3Session.receive` does. - Returns: `.streamData` (the
    /// bytes point into `bytes`) or nil, and how many bytes were used; other
    /// events wait in `nextEvent`. A held stream uses nothing: offer the
    /// bytes again after its `.streamReleased`.
    public func receive(streamID id: UInt64, _ bytes: UnsafeRawBufferPointer, fin: Bool) -> (event: WebTransportEvent?, consumed: Int) {
        guard !failed else { return (nil, bytes.count) }
        var i = 0
        if let p = pending[id] {
            switch p {
            case .header(var reader, let bidi, let read):
                let (value, n) = reader.read(bytes)
                i = n
                guard let value else {
                    // A stream that ends inside its header is nothing (§4.2
                    // gives it no meaning; RFC 9114 §6.2 tolerates the same).
                    pending[id] = fin ? nil : .header(reader, bidirectional: bidi, read: read + n)
                    return (nil, i)
                }
                let session = value.rawValue
                guard WebTransportStreamHeader.isValidSessionID(session) else {
                    failConnection(.idError, "WebTransport session ID is not a client bidirectional stream")
                    return (nil, bytes.count)
                }
                pending[id] = .held(session: session, bidirectional: bidi, headerLength: read + n)
                heldCount += 1
                if let refusal = admit(id, session: session) {
                    emit(.abortStream(streamID: id, code: refusal))
                    return (nil, bytes.count)
                }
            case .held:
                break
            }
            guard case .held(let session, let bidi, let headerLength) = pending[id]! else { preconditionFailure() }
            guard let s = sessions[session], s.state == .accepted else { return (nil, i) }
            pending[id] = nil
            heldCount -= 1
            if s.flow != nil {
                do { try s.flow!.peerOpenedStream(bidirectional: bidi) } catch {
                    // §5.6.2: "If an endpoint receives an incoming stream for
                    // a session that would exceed the advertised Maximum
                    // Streams value, it MUST close the WebTransport session
                    // with a WT_FLOW_CONTROL_ERROR error code."
                    emit(.abortStream(streamID: id, code: WebTransportErrorCode.sessionGone))
                    fail(s, code: WebTransportErrorCode.flowControlError)
                    return (nil, bytes.count)
                }
            }
            s.streams.insert(id)
            attached[id] = session
            peerStreamBytes[id] = (headerLength, 0)
        }
        guard let session = attached[id], let s = sessions[session] else { return (nil, bytes.count) }
        var body = UnsafeRawBufferPointer(rebasing: bytes[i...])
        var ends = fin
        if let allowed = count(UInt64(body.count), on: id, in: s) {
            // Over the session's limit: the bytes within it are still
            // delivered, then the session has failed (whatever the cuts, the
            // application sees the same bytes: fuzz-h3-session,
            // regression-wt-flow-limit-split).
            body = UnsafeRawBufferPointer(rebasing: body[..<allowed])
            ends = false
        }
        guard !body.isEmpty || ends else { return (nil, bytes.count) }
        return (.streamData(sessionID: session, streamID: id, bytes: body, fin: ends), bytes.count)
    }

    /// Whether a peer stream whose header names `session` may wait for it;
    /// the code to abort it with otherwise.
    private func admit(_ id: UInt64, session: UInt64) -> H3ErrorCode? {
        if let s = sessions[session], s.state == .accepted { return nil }
        let refusal: H3ErrorCode?
        if sessions[session] == nil && gone.contains(session) {
            refusal = WebTransportErrorCode.sessionGone
        } else if heldCount > limits.maxBufferedStreams {
            // §4.6: "When the number of buffered streams is exceeded, a
            // stream MUST be closed by sending a RESET_STREAM and/or
            // STOP_SENDING with the WT_BUFFERED_STREAM_REJECTED error code."
            refusal = WebTransportErrorCode.bufferedStreamRejected
        } else {
            refusal = nil
        }
        if refusal != nil {
            pending[id] = nil
            heldCount -= 1
        }
        return refusal
    }

    /// Counts body bytes of peer stream `id` against the session's data
    /// limit. Nil if they fit; otherwise the session has failed, and the
    /// result is how many of them were within the limit.
    private func count(_ n: UInt64, on id: UInt64, in s: WebTransportSessionRecord) -> Int? {
        if let b = peerStreamBytes[id] { peerStreamBytes[id] = (b.header, b.body + n) }
        guard s.flow != nil else { return nil }
        let allowance = s.flow!.receiveAllowance
        do { try s.flow!.receivedData(Int(n)) } catch {
            // §5.6.4: "If an endpoint receives Stream Body data in excess of
            // this limit, it MUST close the WebTransport session with a
            // WT_FLOW_CONTROL_ERROR error code."
            fail(s, code: WebTransportErrorCode.flowControlError)
            return Int(allowance)
        }
        return nil
    }

    /// The peer reset its side of stream `id` (RESET_STREAM) at `finalSize`
    /// bytes (if QUIC tells): body bytes it sent that never arrived still
    /// count against the session's data limit (§5.4: "implementing
    /// WT_MAX_DATA requires that the QUIC stack provide ... the final size").
    public func peerReset(streamID id: UInt64, code: H3ErrorCode, finalSize: UInt64? = nil) {
        guard !failed else { return }
        if let p = pending.removeValue(forKey: id) {
            if case .held = p { heldCount -= 1 }
            return
        }
        guard let session = attached[id] else { return }
        if let finalSize, let b = peerStreamBytes[id], let s = sessions[session] {
            let body = finalSize > UInt64(b.header) ? finalSize - UInt64(b.header) : 0
            if body > b.body {
                guard count(body - b.body, on: id, in: s) == nil else { return }
                // Never read: the application cannot consume it; credit it now.
                dataConsumed(sessionID: session, count: Int(body - b.body))
            }
        }
        emit(.streamReset(sessionID: session, streamID: id, applicationCode: WebTransportErrorCode.applicationCode(http3: code)))
    }

    /// The peer asked us to stop sending on stream `id` (STOP_SENDING).
    public func peerStopSending(streamID id: UInt64, code: H3ErrorCode) {
        guard !failed, let session = attached[id] else { return }
        emit(.streamStopped(sessionID: session, streamID: id, applicationCode: WebTransportErrorCode.applicationCode(http3: code)))
    }

    /// Stream `id` is done both ways (or given up): it leaves its session;
    /// a peer stream's slot is given back (WT_MAX_STREAMS, §5.3).
    public func streamFinished(streamID id: UInt64) {
        if let p = pending.removeValue(forKey: id) {
            if case .held = p { heldCount -= 1 }
            return
        }
        guard let session = attached.removeValue(forKey: id) else { return }
        let wasPeers = peerStreamBytes.removeValue(forKey: id) != nil
        guard let s = sessions[session] else { return }
        s.streams.remove(id)
        guard wasPeers, s.flow != nil else { return }
        // Client-initiated: bidirectional IDs end in 0b00, unidirectional in 0b10.
        let bidi = id & 0x2 == 0
        if let n = s.flow!.peerStreamFinished(bidirectional: bidi) { queue(.maxStreams(bidirectional: bidi, n), on: s) }
    }

    /// The application took `count` bytes of session `id`'s streams: credit
    /// goes back (WT_MAX_DATA) as half a window is used.
    public func dataConsumed(sessionID id: UInt64, count: Int) {
        guard let s = sessions[id], s.flow != nil else { return }
        if let n = s.flow!.consumedData(count) { queue(.maxData(n), on: s) }
    }

    // MARK: our streams

    /// Whether a stream may be opened in session `id` now (the client's
    /// WT_MAX_STREAMS allows it; always without flow control). If so it is
    /// counted: open the QUIC stream and call `localStreamOpened`. If not,
    /// WT_STREAMS_BLOCKED is queued once per limit; try again after the
    /// client raises it (`canOpenStreamSoon`).
    public func openStream(sessionID id: UInt64, bidirectional: Bool) -> Bool {
        guard let s = sessions[id], s.state == .accepted else { return false }
        guard s.flow != nil else { return true }
        if s.flow!.openStream(bidirectional: bidirectional) { return true }
        if let n = s.flow!.streamsBlocked(bidirectional: bidirectional) {
            queue(.streamsBlocked(bidirectional: bidirectional, n), on: s)
        }
        return false
    }

    /// A stream we opened for session `id`. - Returns: its header, to write
    /// first on it.
    public func localStreamOpened(sessionID id: UInt64, streamID: UInt64, bidirectional: Bool) -> [UInt8] {
        var header: [UInt8] = []
        WebTransportStreamHeader.append(sessionID: id, bidirectional: bidirectional, to: &header)
        if let s = sessions[id] {
            s.streams.insert(streamID)
            attached[streamID] = id
        }
        return header
    }

    /// Stream body bytes we may send in session `id` now (unbounded without
    /// flow control). At 0, WT_DATA_BLOCKED is queued once per limit.
    public func sendAllowance(sessionID id: UInt64) -> UInt64 {
        guard let s = sessions[id], s.state == .accepted else { return 0 }
        guard s.flow != nil else { return .max }
        let n = s.flow!.sendAllowance
        if n == 0, let limit = s.flow!.dataBlocked() { queue(.dataBlocked(limit), on: s) }
        return n
    }

    /// `count` stream body bytes were sent in session `id` (at most
    /// `sendAllowance`).
    public func didSend(sessionID id: UInt64, count: Int) {
        guard let s = sessions[id], s.flow != nil else { return }
        s.flow!.didSend(count)
    }
}
