import Core
import Gateway
import HTTP3
import QUIC

/// WebTransport over HTTP/3 (draft-ietf-webtrans-http3-02 and the current
/// draft) for ASGI applications: the glue between the connection's
/// `WebTransportRegistry` (sans-I/O, Sources/HTTP3/WebTransport) and QUIC,
/// the CONNECT streams, and the gateway (`H3WebTransportSession`).
///
/// On: --http3, not --no-webtransport (Worker.enableHTTP3 sets
/// `H3Limits.webTransport`, QUIC's max_datagram_frame_size and more
/// unidirectional streams); a WSGI application's sessions are refused with
/// 501. Then:
///   * a CONNECT whose `:protocol` is `webtransport` (draft-02) or
///     `webtransport-h3` goes to the registry; once the client's SETTINGS
///     classified it, the application gets a `webtransport` scope;
///   * the CONNECT stream's DATA goes to the registry (capsules), its
///     output (capsules) leaves in DATA frames; a reset ends the session;
///   * streams `H3Session` hands over are read through `registry.receive`;
///     their data, resets and STOP_SENDING reach the application;
///   * QUIC DATAGRAMs go to the registry, the application's go out with
///     the session's prefix.
/// Every other request is `registry.ordinaryRequest`.
extension H3Connection {
    // MARK: - Opening

    /// The WebTransport side, made now if the worker offers WebTransport
    /// and this connection has not used it yet (issue 15: a connection that
    /// never does holds nothing for it). The registry is told what it
    /// would have heard so far: the client's SETTINGS, the ordinary
    /// requests H3Session still remembers but `except` (so that streams
    /// naming them are refused, not held for a CONNECT that will not come),
    /// a GOAWAY already announced.
    func makeWebTransport(except connectID: UInt64? = nil) -> H3WebTransport? {
        if let wt = webTransport { return wt }
        guard let template = service.sessionTemplate.webTransport else { return nil }
        let wt = H3WebTransport(template: template, metrics: worker.metrics)
        webTransport = wt
        if let settings = core.peerSettings { wt.registry.peerSettingsReceived(settings) }
        for id in core.rememberedRequestIDs() where id != connectID { wt.registry.ordinaryRequest(streamID: id) }
        if shutdown.isUnderway { wt.registry.goAway() }
        return wt
    }

    /// A CONNECT with a WebTransport `:protocol` on stream `s`.
    func openWebTransport(_ s: H3Stream, draft: WebTransportDraft) {
        guard let wt = makeWebTransport(except: s.id) else { return }
        let session = H3WebTransportSession(connection: self, stream: s, draft: draft)
        wt.sessions[s.id] = session
        s.webTransport = session
        s.accessLine = worker.accessLog.requestLine(s.request)
        worker.requestsServed += 1
        wt.registry.connectReceived(streamID: s.id, draft: draft)
        webTransportProgress()
    }

    /// The 200 for `session` (draft-02 §3.3: with
    /// `sec-webtransport-http3-draft: draft02`). False if the fields do not fit.
    func sendWebTransportAccept(_ session: H3WebTransportSession, subprotocol: UnsafeRawBufferPointer?,
                                fields: UnsafeBufferPointer<ResponseField>) -> Bool {
        let s = session.stream
        guard s.canSend, !s.exchange.headSent else { return false }
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        let plan = s.exchange.beginResponse(ResponseHead(status: 200, reason: empty, fields: fields, contentLength: nil, close: false))
        core.beginHeaders(streamID: s.id, status: 200)
        if session.draft == .draft02 {
            core.addField(name: H2Stream.bytes("sec-webtransport-http3-draft"), value: H2Stream.bytes("draft02"))
            if let subprotocol { core.addField(name: H2Stream.bytes("sec-webtransport-protocol"), value: subprotocol) }
        } else if let subprotocol {
            // The current draft §3.3: WT-Protocol is a structured-field string.
            let quoted = [UInt8(ascii: "\"")] + Array(subprotocol) + [UInt8(ascii: "\"")]
            quoted.withUnsafeBytes { core.addField(name: H2Stream.bytes("wt-protocol"), value: $0) }
        }
        for f in fields { core.addField(name: f.name, value: f.value) }
        worker.defaultFields?.lines(for: fields).forEach { core.addField(name: $0, value: $1) }
        if plan.addsDate && worker.sendsDate { core.addField(name: H2Stream.dateName, value: worker.date.bytes) }
        s.accessLine?.captureResponse(fields, contentLength: nil, names: worker.accessLog.responseFieldNames, requestID: s.request?.requestID)
        var out = takeScratch()
        let fits = core.endHeaders(into: &out)
        if fits { s.emit(out) }
        giveScratch(out)
        guard fits else { return false }
        record(s)
        service.scheduleFlush()
        return true
    }

    // MARK: - Input

    /// Whether stream `id` is a WebTransport data stream (read through the registry).
    func isWebTransportStream(_ id: UInt64) -> Bool { webTransport?.streams[id] != nil }

    /// A stream `H3Session` handed over (its signal or type consumed).
    func webTransportStreamOpened(_ id: UInt64, bidirectional: Bool) {
        guard let wt = makeWebTransport() else {
            quic.resetStream(id, errorCode: WebTransportErrorCode.bufferedStreamRejected.rawValue)
            quic.stopSending(id, errorCode: WebTransportErrorCode.bufferedStreamRejected.rawValue)
            return
        }
        wt.streams[id] = H3WebTransportStream(id: id, session: nil, peerDone: false, ourDone: false)
        worker.metrics.webTransportStreamOpened()
        wt.registry.streamOpened(streamID: id, bidirectional: bidirectional)
    }

    /// Offers a WebTransport stream's readable bytes to the registry.
    func feedWebTransport(_ id: UInt64) {
        guard let wt = webTransport, let st = wt.streams[id], !st.parked, !st.peerDone else { return }
        if let sid = st.session, let session = wt.sessions[sid], session.paused {
            st.parked = true
            quic.setReadingParked(stream: id, true)
            return
        }
        _ = quic.withReadableBytes(stream: id) { bytes, fin -> (consumed: Int, result: Void) in
            let (event, n) = wt.registry.receive(streamID: id, bytes, fin: fin)
            if case .streamData(let sid, let stream, let data, let end)? = event {
                deliverWebTransportData(sid, stream, data, end: end)
            }
            return (n, ())
        }
        webTransportProgress()
    }

    private func deliverWebTransportData(_ sid: UInt64, _ id: UInt64, _ data: UnsafeRawBufferPointer, end: Bool) {
        guard let wt = webTransport, let st = wt.streams[id] else { return }
        st.session = sid
        if end { st.peerDone = true }
        wt.registry.dataConsumed(sessionID: sid, count: data.count)
        wt.sessions[sid]?.delegate?.streamReceived(id, data, end: end, unidirectional: st.unidirectional,
                                                    openedByPeer: st.openedByPeer)
        finishIfDone(st)
    }

    /// The application's queue has room again: the parked streams are read.
    func resumeWebTransportReading(_ session: H3WebTransportSession) {
        guard let wt = webTransport else { return }
        for st in wt.streams.values where st.parked && st.session == session.id {
            st.parked = false
            quic.setReadingParked(stream: st.id, false)
            refeedLater(st.id)
        }
        kickOutsideInput()
    }

    /// The peer reset (RESET_STREAM) or stopped (STOP_SENDING) a data stream.
    func webTransportPeerReset(_ id: UInt64, code: UInt64) {
        guard let wt = webTransport, let st = wt.streams[id] else { return }
        st.peerDone = true
        wt.registry.peerReset(streamID: id, code: H3ErrorCode(rawValue: code))
        webTransportProgress()
        finishIfDone(st)
    }

    func webTransportPeerStopSending(_ id: UInt64, code: UInt64) {
        guard let wt = webTransport, let st = wt.streams[id] else { return }
        // RFC 9000 §3.5: STOP_SENDING is answered with RESET_STREAM.
        st.stopped = true
        if !st.ourDone {
            st.ourDone = true
            resetWebTransportSendSide(st, errorCode: code)
        }
        st.pending.clear()
        wt.registry.peerStopSending(streamID: id, code: H3ErrorCode(rawValue: code))
        webTransportProgress()
        finishIfDone(st)
    }

    /// QUIC DATAGRAM frames arrived.
    func datagramsReadable() {
        guard !closed else { return }
        guard let wt = makeWebTransport() else {
            while quic.receiveDatagram() != nil {}
            return
        }
        while let d = quic.receiveDatagram() {
            wt.metrics.webTransportDatagramReceived()
            d.withUnsafeBytes { wt.registry.datagramReceived($0) }
        }
        webTransportProgress()
        afterInput()
    }

    /// DATA (or its end) of a session's CONNECT stream.
    func webTransportConnectData(_ s: H3Stream, _ bytes: UnsafeRawBufferPointer, end: Bool) {
        if end { s.bodyEnded = true }
        webTransport?.registry.connectStreamData(sessionID: s.id, bytes, fin: end)
        webTransportProgress()
    }

    // MARK: - The registry's events

    /// Acts on everything the registry has to say, then sends the capsules
    /// it queued.
    func webTransportProgress() {
        guard let wt = webTransport else { return }
        while let e = wt.registry.nextEvent() {
            guard !closed else { return }
            handleWebTransport(e, wt)
        }
        wt.collectDrops(quicReceived: quic.droppedDatagrams.received)
        // Credit may have come (WT_MAX_DATA) for bytes held back.
        for st in wt.streams.values where !st.pending.isEmpty { pushWebTransport(st) }
        for session in wt.sessions.values where !session.pendingOpens.isEmpty && !session.ended {
            openPendingWebTransportStreams(session)
        }
        for sid in wt.registry.sessionsWithOutput {
            let bytes = wt.registry.takeOutput(sessionID: sid)
            guard let session = wt.sessions[sid], !bytes.isEmpty, !session.stream.responseEnded else { continue }
            bytes.withUnsafeBytes { _ = session.stream.frame($0, force: true) }
        }
        service.scheduleFlush()
    }

    private func handleWebTransport(_ e: WebTransportEvent, _ wt: H3WebTransport) {
        switch e {
        case .sessionRequested(let sid, let draft):
            guard let session = wt.sessions[sid] else { return }
            guard let asgi = worker.asgi else {
                // WSGI has no WebTransport interface: 501 (Not Implemented).
                _ = session.rejectSession(status: 501, fields: UnsafeBufferPointer(start: nil, count: 0))
                return
            }
            let info = WebTransportScopeInfo(draft: draft == .draft02 ? "draft02" : "h3", maxDatagramSize: session.maxDatagramSize)
            asgi.startWebTransport(session.stream.request, info: info, exchange: session)
        case .sessionRefused(let sid, let code):
            worker.metrics.webTransportSession(.refused)
            abortConnectStream(sid, code: code)
        case .streamData(let sid, let id, let bytes, let fin):
            deliverWebTransportData(sid, id, bytes, end: fin)
        case .streamReleased(let id):
            refeedLater(id)
            kickOutsideInput()
        case .streamReset(let sid, let id, let code):
            wt.streams[id]?.session = sid
            wt.sessions[sid]?.delegate?.streamReset(id, code: code ?? 0)
        case .streamStopped(let sid, let id, let code):
            wt.sessions[sid]?.delegate?.streamStopped(id, code: code ?? 0)
        case .abortStream(let id, let code):
            quic.resetStream(id, errorCode: code.rawValue)
            quic.stopSending(id, errorCode: code.rawValue)
            if let st = wt.streams.removeValue(forKey: id), let p = st.paired, wt.streams[p] != nil {
                wt.streams[p] = nil
                quic.resetStream(p, errorCode: code.rawValue)
            }
        case .datagram(let sid, let payload):
            let taken = payload.withUnsafeBytes { wt.sessions[sid]?.delegate?.datagramReceived($0) }
            if taken == nil { wt.datagramsDropped(.noSession) } else if taken == false { wt.datagramsDropped(.queueFull) }
        case .sessionDraining(let sid):
            wt.sessions[sid]?.delegate?.sessionDraining()
        case .sessionClosed(let sid, let code, let message):
            guard let session = wt.sessions.removeValue(forKey: sid) else { return }
            session.ended = true
            let d = session.delegate
            session.delegate = nil
            message.withUnsafeBytes { d?.sessionEnded(code: code, reason: $0) }
            forgetWebTransportStreams(sid)
            // draft-02 §5, current draft §6: our side of the CONNECT stream ends too.
            if !session.stream.reset { session.stream.endResponse() }
        case .sessionFailed(let sid, let code):
            abortConnectStream(sid, code: code)
        case .connectionError(let code, let reason):
            fail(code, "\(reason)")
        }
    }

    /// Resets and stops a session's CONNECT stream with `code`; its
    /// application learns the session ended.
    private func abortConnectStream(_ sid: UInt64, code: H3ErrorCode) {
        quic.resetStream(sid, errorCode: code.rawValue)
        quic.stopSending(sid, errorCode: code.rawValue)
        core.resetStream(streamID: sid)
        if let s = streams[sid] { dropStream(s, disconnected: true) }
    }

    func failWebTransportSession(_ session: H3WebTransportSession, code: H3ErrorCode) {
        webTransport?.registry.connectStreamReset(sessionID: session.id)
        abortConnectStream(session.id, code: code)
        webTransportProgress()
    }

    /// The CONNECT stream is leaving the connection (reset either way, the
    /// connection's end): the session is over.
    func webTransportEnded(_ s: H3Stream) {
        guard let session = s.webTransport, let wt = webTransport else { return }
        s.webTransport = nil
        wt.sessions[s.id] = nil
        session.ended = true
        wt.registry.connectStreamReset(sessionID: s.id)
        forgetWebTransportStreams(s.id)
        let d = session.delegate
        session.delegate = nil
        d?.sessionEnded(code: 0, reason: UnsafeRawBufferPointer(start: nil, count: 0))
        if !closed { webTransportProgress() }
    }

    // MARK: - Output

    /// Opens a server stream of `session`: the registry counts it against
    /// the peer's limit, QUIC gives the ID, the header goes first. nil if
    /// it cannot be opened now.
    func openWebTransportStream(_ session: H3WebTransportSession, unidirectional: Bool) -> H3WebTransportStream? {
        guard let wt = webTransport else { return nil }
        // Both limits: the session's (current draft WT_MAX_STREAMS) and QUIC's.
        guard unidirectional ? quic.canOpenUnidirectionalStream : quic.canOpenBidirectionalStream else {
            // Tried anyway: QUIC tells the peer we are blocked (STREAMS_BLOCKED, RFC 9000 §4.6).
            _ = unidirectional ? quic.openUnidirectionalStream() : quic.openBidirectionalStream()
            return nil
        }
        guard wt.registry.openStream(sessionID: session.id, bidirectional: !unidirectional) else { return nil }
        guard let id = unidirectional ? quic.openUnidirectionalStream() : quic.openBidirectionalStream() else { return nil }
        // A bidirectional one is read like the peer's (through the registry).
        let st = H3WebTransportStream(id: id, session: session.id, peerDone: unidirectional, ourDone: false)
        wt.streams[id] = st
        worker.metrics.webTransportStreamOpened()
        let header = wt.registry.localStreamOpened(sessionID: session.id, streamID: id, bidirectional: !unidirectional)
        st.headerLength = header.count
        st.pending.append(header)
        // Every reset of ours keeps the header, also QUIC's answer to a
        // STOP_SENDING (`resetWebTransportSendSide`).
        quic.setReliableResetSize(stream: id, UInt64(header.count))
        pushWebTransport(st)
        return st
    }

    func openPendingWebTransportStreams(_ session: H3WebTransportSession) {
        while let first = session.pendingOpens.first {
            guard let st = openWebTransportStream(session, unidirectional: first.unidirectional) else { break }
            session.pendingOpens.removeFirst()
            session.delegate?.streamOpened(st.id, unidirectional: first.unidirectional, token: first.token)
        }
        service.scheduleFlush()
    }

    /// The application's bytes for our side of `st`.
    func writeWebTransport(_ st: H3WebTransportStream, _ bytes: UnsafeRawBufferPointer, end: Bool) {
        st.pending.append(bytes)
        if end { st.finPending = true }
        pushWebTransport(st)
        service.scheduleFlush()
    }

    /// Moves `st`'s pending bytes into QUIC as far as its send buffer (and,
    /// in the current draft, the session's data credit) allows.
    func pushWebTransport(_ st: H3WebTransportStream) {
        guard let wt = webTransport, !st.ourDone else { return }
        if !st.pending.isEmpty {
            // Our header first, outside the session's credit (current
            // draft, "Data Limits": WT_MAX_DATA counts all data "excluding the
            // stream header"); then body bytes within it.
            let header = Int(UInt64(st.headerLength) - min(st.written, UInt64(st.headerLength)))
            var limit = st.pending.count
            if let sid = st.session {
                limit = header + Int(min(UInt64(limit - min(header, limit)), wt.registry.sendAllowance(sessionID: sid)))
                limit = min(limit, st.pending.count)
            }
            let n = st.pending.withUnsafeBytes { quic.write(stream: st.id, UnsafeRawBufferPointer(rebasing: $0[0..<limit]), fin: false) }
            st.written += UInt64(n)
            let body = n - min(n, header)
            if body > 0, let sid = st.session { wt.registry.didSend(sessionID: sid, count: body) }
            st.pending.consume(n)
        }
        if st.pending.isEmpty && st.finPending {
            quic.finish(stream: st.id)
            st.ourDone = true
            finishIfDone(st)
        }
    }

    /// QUIC's send buffer of data stream `id` has room again.
    func webTransportWritable(_ id: UInt64) {
        guard let wt = webTransport, let st = wt.streams[id] else { return }
        pushWebTransport(st)
        notifyWebTransportDrained()
    }

    /// After acknowledgements: every stream with pending bytes is offered
    /// the room, and sessions whose sends wait are told when they drained.
    func offerWebTransportPending() {
        guard let wt = webTransport else { return }
        for st in wt.streams.values where !st.pending.isEmpty || st.finPending { pushWebTransport(st) }
        notifyWebTransportDrained()
    }

    private func notifyWebTransportDrained() {
        guard let wt = webTransport else { return }
        for session in wt.sessions.values where session.drainWanted && session.pendingBytes < H3Connection.lowWater {
            session.drainWanted = false
            session.delegate?.outputDrained()
        }
    }

    func resetWebTransportStream(_ st: H3WebTransportStream, code: UInt32) {
        guard !st.ourDone else { return }
        st.ourDone = true
        resetWebTransportSendSide(st, errorCode: WebTransportErrorCode.http3Code(application: code).rawValue)
        finishIfDone(st)
        service.scheduleFlush()
    }

    /// Resets our side of `st`, dropping what QUIC has not taken. A stream
    /// we opened begins with our header, which names its session: the
    /// current draft ("Resetting Data Streams") says implementations
    /// "MUST use the RESET_STREAM_AT frame ... with a Reliable Size set to
    /// at least the size of the WebTransport header", so the header goes
    /// into QUIC first if it is still pending, and QUIC sends RESET_STREAM_AT
    /// with it as the Reliable Size. A client without reset_stream_at (the
    /// draft-02 clients: Chromium, aioquic) gets RESET_STREAM, as before.
    /// The peer's streams carry no header of ours: RESET_STREAM (reliable
    /// size 0 is the same thing).
    func resetWebTransportSendSide(_ st: H3WebTransportStream, errorCode: UInt64) {
        let header = UInt64(st.headerLength)
        if st.written < header && !st.pending.isEmpty {
            let missing = Int(min(header - st.written, UInt64(st.pending.count)))
            st.written += UInt64(st.pending.withUnsafeBytes {
                quic.write(stream: st.id, UnsafeRawBufferPointer(rebasing: $0[0..<missing]), fin: false)
            })
        }
        st.pending.clear()
        quic.resetStream(st.id, errorCode: errorCode, reliableSize: header)
    }

    func stopWebTransportStream(_ st: H3WebTransportStream, code: UInt32) {
        guard !st.peerDone else { return }
        st.peerDone = true
        quic.stopSending(st.id, errorCode: WebTransportErrorCode.http3Code(application: code).rawValue)
        finishIfDone(st)
        service.scheduleFlush()
    }

    /// A stream done both ways leaves the connection's map; the registry
    /// gives the peer's slot back (WT_MAX_STREAMS) once the peer's side is
    /// done. A peer unidirectional stream's "side of ours" is the stream
    /// paired with it: it stays (so the application can still answer on
    /// it) until that one is done or the session ends.
    func finishIfDone(_ st: H3WebTransportStream) {
        guard let wt = webTransport else { return }
        let peerUni = st.openedByPeer && st.unidirectional
        if st.peerDone && (st.ourDone || peerUni) && !st.released {
            st.released = true
            wt.registry.streamFinished(streamID: st.id)
        }
        guard st.peerDone && st.ourDone, wt.streams[st.id] === st else { return }
        wt.streams[st.id] = nil
        for owner in wt.streams.values.filter({ $0.paired == st.id }) {
            owner.ourDone = true
            finishIfDone(owner)
        }
    }

    /// The session is over: its streams leave the map (the registry aborted
    /// the ones it still had).
    func forgetWebTransportStreams(_ sid: UInt64) {
        guard let wt = webTransport else { return }
        for st in wt.streams.values.filter({ $0.session == sid }) {
            wt.streams[st.id] = nil
            if !st.ourDone && !(st.openedByPeer && st.unidirectional) {
                resetWebTransportSendSide(st, errorCode: WebTransportErrorCode.sessionGone.rawValue)
            }
            if !st.peerDone { quic.stopSending(st.id, errorCode: WebTransportErrorCode.sessionGone.rawValue) }
        }
    }

    /// From an application's call (not the service's input handling):
    /// refeeds and output happen now.
    func kickOutsideInput() {
        guard !service.handlingInput, !closed else { return }
        afterInput()
        service.flush()
    }
}
