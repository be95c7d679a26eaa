import Core
import Gateway
import HTTP3
import QUIC

/// One WebTransport session as its ASGI application sees it
/// (`WebTransportExchange`): the CONNECT stream (`H3Stream`) and the
/// session's record in the connection's `WebTransportRegistry`. Answers
/// (200 / refusal / close capsule) go out on the CONNECT stream; stream
/// bytes go straight into QUIC streams, what QUIC does not take waiting in
/// `H3WebTransportStream.pending`; `send()` waits while the session's
/// pending bytes are above `H3Connection.highWater`.
final class H3WebTransportSession: WebTransportExchange {
    unowned(unsafe) let connection: H3Connection
    let stream: H3Stream
    let draft: WebTransportDraft
    var delegate: WebTransportDelegate?
    var accepted = false
    /// Our side is over (refused, closed, or the peer ended it).
    var ended = false
    /// The application's queue is full: the session's streams are not read.
    var paused = false
    var drainWanted = false
    /// `webtransport.stream.open` requests waiting for the peer's stream limit.
    var pendingOpens: [(unidirectional: Bool, token: Int)] = []

    init(connection: H3Connection, stream: H3Stream, draft: WebTransportDraft) {
        self.connection = connection
        self.stream = stream
        self.draft = draft
    }

    var id: UInt64 { stream.id }
    private var wt: H3WebTransport { connection.webTransport! }

    func attachWebTransport(_ delegate: WebTransportDelegate) { self.delegate = delegate }

    private var usable: Bool { !ended && !connection.closed && !stream.reset }

    func acceptSession(subprotocol: UnsafeRawBufferPointer?, fields: UnsafeBufferPointer<ResponseField>) -> SendOutcome {
        guard usable, !accepted else { return .closed }
        guard connection.sendWebTransportAccept(self, subprotocol: subprotocol, fields: fields) else {
            connection.failWebTransportSession(self, code: .internalError)
            return .closed
        }
        accepted = true
        connection.worker.metrics.webTransportSession(.accepted)
        wt.registry.accept(sessionID: id)
        connection.webTransportProgress()
        return .done
    }

    func rejectSession(status: Int, fields: UnsafeBufferPointer<ResponseField>) -> SendOutcome {
        guard usable, !accepted else { return .closed }
        ended = true
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        _ = stream.sendHead(ResponseHead(status: status, reason: empty, fields: fields, contentLength: 0, close: false), trailers: false)
        _ = stream.sendBody(empty, final: true)
        connection.worker.metrics.webTransportSession(.refused)
        wt.registry.refuse(sessionID: id)
        connection.webTransportProgress()
        return .done
    }

    func closeSession(code: UInt32, reason: UnsafeRawBufferPointer) -> SendOutcome {
        guard usable, accepted else { return .closed }
        ended = true
        delegate = nil  // the application closed: it knows
        let capsules = wt.registry.close(sessionID: id, code: code, message: Array(reason))
        capsules.withUnsafeBytes { _ = stream.frame($0, force: true) }
        stream.endResponse()
        connection.webTransportProgress()
        connection.forgetWebTransportStreams(id)
        return .done
    }

    func sendStream(_ streamID: UInt64, _ bytes: UnsafeRawBufferPointer, end: Bool) -> SendOutcome? {
        guard usable else { return .closed }
        guard let s = wt.streams[streamID], s.session == id else { return nil }
        var target = s
        if s.openedByPeer && s.unidirectional {
            // We cannot write on the client's unidirectional stream: the
            // aioquic-compatible rule pairs it with one of ours.
            if let p = s.paired, let t = wt.streams[p] {
                target = t
            } else if s.paired == nil, let t = connection.openWebTransportStream(self, unidirectional: true) {
                s.paired = t.id
                target = t
            } else {
                return .done  // no stream can be opened (the peer's limit): dropped
            }
        }
        guard !target.ourDone, !target.finPending, !target.stopped else { return .done }
        connection.writeWebTransport(target, bytes, end: end)
        return backpressure()
    }

    /// Whether `send()` should wait for our pending output to drain.
    func backpressure() -> SendOutcome {
        guard pendingBytes > H3Connection.highWater else { return .done }
        drainWanted = true
        return .backpressure
    }

    var pendingBytes: Int {
        var n = 0
        for s in wt.streams.values where s.session == id { n += s.pending.count }
        return n
    }

    func resetStream(_ streamID: UInt64, code: UInt32) -> Bool {
        guard usable else { return true }
        guard let s = wt.streams[streamID], s.session == id else { return false }
        let target = s.paired.flatMap { wt.streams[$0] } ?? s
        guard !target.openedByPeer || !target.unidirectional else { return true }
        connection.resetWebTransportStream(target, code: code)
        return true
    }

    func stopStream(_ streamID: UInt64, code: UInt32) -> Bool {
        guard usable else { return true }
        guard let s = wt.streams[streamID], s.session == id else { return false }
        connection.stopWebTransportStream(s, code: code)
        return true
    }

    func openStream(unidirectional: Bool, token: Int) -> Bool {
        guard usable, accepted else { return false }
        pendingOpens.append((unidirectional, token))
        connection.openPendingWebTransportStreams(self)
        return true
    }

    func sendDatagram(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard usable, accepted, wt.registry.canSendDatagram(sessionID: id) else {
            wt.datagramsDropped(.noSession)
            return false
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 8)
        WebTransportRegistry.appendDatagramPrefix(sessionID: id, to: &out)
        out.append(contentsOf: bytes)
        let sent = out.withUnsafeBytes { connection.quic.sendDatagram($0) }
        switch sent {
        case .queued:
            wt.metrics.webTransportDatagramSent()
        case .dropped:
            wt.datagramsDropped(.queueFull)
            return false
        case .tooLarge, .unsupported:
            // Not negotiated (cannot happen in an accepted session, which
            // needs DATAGRAM frames) leaves a largest payload of 0.
            wt.datagramsDropped(.tooLarge)
            return false
        }
        connection.service.scheduleFlush()
        return true
    }

    var maxDatagramSize: Int {
        // The HTTP Datagram prefix (the quarter stream ID, RFC 9297 §2.1) takes its share.
        max(0, connection.quic.maxDatagramPayload - QUICVarInt.encodedLength(id / 4))
    }

    func pauseReading() {
        paused = true
    }

    func resumeReading() {
        guard paused else { return }
        paused = false
        connection.resumeWebTransportReading(self)
    }
}
