// Control frames (RFC 9113 §6.3–§6.9) and the stream-level verdicts shared
// by every receive path.

import Core

extension H2Connection {
    // MARK: SETTINGS (§6.5)

    func receiveSettings(_ f: SettingsFrame, in view: UnsafeRawBufferPointer) -> H2Event? {
        if f.ack {
            // An ack we did not ask for changes nothing (§6.5.3 has no rule).
            guard settingsAckPending else { return nil }
            settingsAckPending = false
            settingsDeadline = nil
            applyAcknowledgedSettings()
            return nil
        }
        // Values were validated by the frame layer; later pairs win (§6.5).
        var initialWindow: Int?
        for i in 0 ..< f.count {
            let s = f.parameter(i, in: view)
            switch s.parameter {
            case .headerTableSize: encoder.setPeerMaxTableSize(Int(s.value))
            case .initialWindowSize: initialWindow = Int(s.value)
            case .maxFrameSize: peerMaxFrameSize = Int(s.value)
            case .maxHeaderListSize: peerMaxHeaderListSize = Int(s.value)
            default: break  // ENABLE_PUSH (we never push), MAX_CONCURRENT_STREAMS (we open none), unknown.
            }
        }
        // §6.5.3: "Upon receiving a SETTINGS frame ... the recipient MUST
        // immediately emit a SETTINGS frame with the ACK flag set"; queued
        // before any field block encoded with the new table size.
        writeFrame(size: FrameEncoder.settingsAckSize) { FrameEncoder.encodeSettingsAck(into: $0) }
        if let flood = countControlFrame() { return flood }
        guard let initialWindow else { return nil }
        // §6.9.2: the change applies to every stream's send window at once;
        // one overflowing is a connection FLOW_CONTROL_ERROR.
        let delta = initialWindow - peerInitialWindow
        peerInitialWindow = initialWindow
        guard streams.shiftSendWindows(by: delta) else { return fail(.sendWindowOverflow) }
        return delta > 0 && streams.count > 0 ? .windowOpened(streamID: 0) : nil
    }

    /// §6.5.3: our values bind us once the peer has acknowledged them.
    func applyAcknowledgedSettings() {
        if limits.headerTableSize != 4096 { decoder.setMaxTableSizeSetting(limits.headerTableSize) }
        parser.maxFrameSize = limits.maxFrameSize
        if streamReceiveWindow != limits.initialStreamWindow {
            streamReceiveWindow = limits.initialStreamWindow
            streams.rebaseReceiveWindows(to: streamReceiveWindow)
        }
    }

    // MARK: PING (§6.7)

    func receivePing(_ f: PingFrame) -> H2Event? {
        guard !f.ack else { return nil }
        // "Receivers of a PING frame that does not include an ACK flag MUST
        // send a PING frame with the ACK flag set in response, with an
        // identical frame payload."
        writeFrame(size: FrameEncoder.pingSize) { FrameEncoder.encodePing(ack: true, opaqueData: f.opaqueData, into: $0) }
        return countControlFrame()
    }

    // MARK: WINDOW_UPDATE (§6.9)

    func receiveWindowUpdate(_ f: WindowUpdateFrame) -> H2Event? {
        let increment = Int(f.increment)
        if f.streamID == 0 {
            guard connectionSend.increase(by: increment) else { return fail(.sendWindowOverflow) }
            return .windowOpened(streamID: 0)
        }
        switch lookup(f.streamID) {
        case .idle:
            return fail(.frameOnIdleStream)
        case .closed:
            // §5.1: may arrive after our END_STREAM or RST_STREAM.
            return nil
        case .live(let i):
            guard streams[i].sendWindow.increase(by: increment) else { return streamError(at: i, .sendWindowOverflow) }
            return streams[i].state.mayWeSend && streams[i].response == .headersSent
                ? .windowOpened(streamID: f.streamID) : nil
        }
    }

    // MARK: RST_STREAM (§6.4)

    func receiveRstStream(_ f: RstStreamFrame) -> H2Event? {
        switch lookup(f.streamID) {
        case .idle:
            // §6.4: "If a RST_STREAM frame identifying an idle stream is
            // received, the recipient MUST treat this as a connection error".
            return fail(.frameOnIdleStream)
        case .closed:
            return nil
        case .live(let i):
            removeStream(at: i, .closed)
            if !resetBudget.take(now: now) { return fail(.rapidReset) }
            return .streamReset(streamID: f.streamID, code: f.errorCode)
        }
    }

    // MARK: stream verdicts

    /// Ends a live stream: returns the body bytes the application never
    /// consumed to the connection window, and remembers how it closed.
    func removeStream(at i: Int, _ how: ClosedHow) {
        let s = streams.remove(at: i)
        closedStreams.remember(s.id, how)
        if s.unconsumed > 0 { returnConnectionCredit(s.unconsumed) }
    }

    /// A stream error on a live stream: RST_STREAM, and the server is told.
    func streamError(at i: Int, _ error: H2Error) -> H2Event? {
        let id = streams[i].id
        removeStream(at: i, .resetByUs)
        writeRstStream(id, error.code)
        if let flood = countControlFrame() { return flood }
        if !resetBudget.take(now: now) { return fail(.rapidReset) }
        return .streamReset(streamID: id, code: error.code)
    }

    /// A stream error on a stream the server never saw (refused, malformed):
    /// RST_STREAM only. `remember`: how to treat its late frames.
    func refuse(_ id: UInt32, _ error: H2Error, remember how: ClosedHow? = .resetByUs) -> H2Event? {
        if let how { closedStreams.remember(id, how) }
        writeRstStream(id, error.code)
        if let flood = countControlFrame() { return flood }
        if !resetBudget.take(now: now) { return fail(.rapidReset) }
        return nil
    }

    /// Flow-control credit for bytes the application will never see
    /// (padding, dropped frames, unconsumed body of a closed stream).
    func returnConnectionCredit(_ n: Int) {
        if let increment = connectionReceive.release(n) { writeWindowUpdate(0, increment) }
    }

    /// Takes one empty-frame token; the flood error when none is left.
    func spendEmptyFrame() -> H2Event? {
        emptyFrameBudget.take(now: now) ? nil : fail(.emptyFrameFlood)
    }
}
