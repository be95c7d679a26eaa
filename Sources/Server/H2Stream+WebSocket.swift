import Core
import Gateway
import HTTP2
import WebSocket

/// WebSocket over an HTTP/2 stream (RFC 8441) for ASGI applications: the
/// extended CONNECT opening and the stream as a `WebSocketTransport` for the
/// same `WebSocketConversation` that HTTP/1.1 drives.
///
/// Opening (§4, §5): the session advertises SETTINGS_ENABLE_CONNECT_PROTOCOL
/// only for an ASGI application without --no-websockets; the core then
/// accepts CONNECT with `:protocol` (and requires `:scheme`, `:path`,
/// `:authority`). `ExtendedConnectRequest` judges the rest: `:protocol`
/// other than websocket → 501; Sec-WebSocket-Version missing, repeated or
/// not 13 → 400 with `sec-websocket-version: 13`. The application gets the
/// usual `websocket` scope (`http_version` "2", scheme ws/wss, path and
/// query from `:path`, `host` from `:authority`, subprotocols from
/// sec-websocket-protocol). Accepting is `:status` 200 with the subprotocol
/// and extension fields — never 101, no Sec-WebSocket-Accept; a denial is
/// the application's response, as over HTTP/1.1.
///
/// Frames travel in DATA. Incoming DATA is decoded in place when nothing is
/// buffered, and buffered (bounded by the stream window we advertise)
/// otherwise; window goes back only as the conversation consumes bytes, so
/// an application whose queue is full holds the peer back with HTTP/2 flow
/// control, not our memory. Outgoing frames are framed as the peer's
/// windows allow; the rest waits in `pendingOut`, and `send()` waits above
/// the high-water mark.
///
/// Ending (§5: END_STREAM is the TCP FIN, RST_STREAM(CANCEL) the TCP RST):
/// after the closing handshake (or our close for a protocol error) the
/// stream ends with END_STREAM once the close frame is framed; the peer then
/// has min(--request-timeout, 5 s) to end its side before RST_STREAM
/// (NO_ERROR). The peer's END_STREAM without a close frame, or its
/// RST_STREAM, is a lost connection (1006); an abortive end on our side
/// (the peer never answered our close) is RST_STREAM(CANCEL).
extension H2Session {
    func openWebSocket(_ s: H2Stream, protocolName: ByteSpan) {
        let request = s.request!
        guard let asgi = worker.asgi, worker.config.websockets else {
            respondDirectly(s, status: 501)
            return
        }
        var connect = ExtendedConnectRequest()
        for i in 0..<request.fieldCount {
            let f = request.fields[i]
            if let field = HandshakeField(name: request.bytes(f.name)) { connect.receive(field, value: request.bytes(f.value)) }
        }
        let name = UnsafeRawBufferPointer(start: s.decoded.storage.baseAddress! + protocolName.start, count: protocolName.count)
        if case .reject(let rejection) = connect.verdict(protocolName: name) {
            let field = rejection.requiresVersionField
                ? ResponseField(name: H2Stream.bytes("sec-websocket-version"), value: H2Stream.bytes("13")) : nil
            respondDirectly(s, status: Int(rejection.status), field: field)
            return
        }
        s.webSocket = H2WebSocket()
        s.accessLine = worker.accessLog.requestLine(request)
        worker.requestsServed += 1
        meterBegin(s, .websocket)
        webSockets.append(s)
        let conversation = WebSocketConversation(transport: s, request: request)
        s.webSocket?.conversation = conversation
        asgi.startWebSocket(request, subprotocols: WebSocketConversation.subprotocolOffers(request), exchange: conversation)
    }

    /// The stream is leaving the session: its conversation learns it.
    func webSocketEnded(_ s: H2Stream) {
        if let i = webSockets.firstIndex(where: { $0 === s }) { webSockets.remove(at: i) }
        s.webSocket?.deadline = nil
        s.webSocket?.directInput = nil
        if let conversation = s.webSocket?.conversation {
            s.webSocket?.conversation = nil
            conversation.transportClosed()
        }
    }

    func earliestWebSocketDeadline() -> Instant? {
        var earliest: Instant?
        for s in webSockets {
            if let d = s.webSocket?.deadline, earliest == nil || d < earliest! { earliest = d }
        }
        return earliest
    }

    func fireWebSocketTimers() {
        let now = worker.now.adding(milliseconds: 1)
        for s in webSockets {
            guard let deadline = s.webSocket?.deadline, deadline <= now else { continue }
            s.webSocket?.deadline = nil
            if let conversation = s.webSocket?.conversation {
                conversation.timeout()
            } else {
                checkDone(s)  // the peer did not end its side in time
            }
        }
    }
}

extension H2Stream: WebSocketTransport {
    var worker: Worker { session.worker }

    /// DATA (or the end of the peer's side) for the WebSocket.
    func webSocketData(_ bytes: UnsafeRawBufferPointer, end: Bool) {
        guard let conversation = webSocket?.conversation else {
            session.core.consumed(streamID: id, bytes.count)
            return
        }
        if end { bodyEnded = true }
        if conversation.doneReading {
            // Nothing after a close frame is read (RFC 6455 §5.5.1).
            session.core.consumed(streamID: id, bytes.count)
            return
        }
        if !bytes.isEmpty && body.isEmpty && conversation.wantsInput {
            // Decoded where the connection read it; only a remainder (a frame
            // cut short, or the application's queue filled) is copied.
            webSocket?.directInput = UnsafeMutableRawBufferPointer(mutating: bytes)
            conversation.inputArrived()
            if let left = webSocket?.directInput, !left.isEmpty {
                if webSocket?.conversation != nil && !conversation.doneReading && !reset {
                    body.appendGrowing(UnsafeRawBufferPointer(left))
                } else {
                    session.core.consumed(streamID: id, left.count)
                }
            }
            webSocket?.directInput = nil
            return
        }
        if !bytes.isEmpty { body.appendGrowing(bytes) }
        conversation.inputArrived()
    }

    /// Our END_STREAM is out, the peer's is not: keep the stream (dropping
    /// its DATA) until the peer ends it or the deadline passes. True while
    /// lingering.
    func lingerForPeerEnd() -> Bool {
        guard !bodyEnded, !reset else { return false }
        guard let conversation = webSocket?.conversation else { return webSocket?.deadline != nil }
        guard conversation.accepted else { return false }  // a denial: RST_STREAM(NO_ERROR) at once
        webSocket?.conversation = nil
        webSocket?.directInput = nil
        conversation.transportClosed()
        releaseBody()
        // Bytes delivered but never decoded: their window goes back too.
        session.core.consumed(streamID: id, Int.max)
        webSocket?.deadline = worker.now.adding(milliseconds: min(worker.config.requestTimeoutMilliseconds, 5000))
        return true
    }

    // MARK: - WebSocketTransport

    func webSocketSendAccept(subprotocol: UnsafeRawBufferPointer?, deflate: PerMessageDeflateParameters?,
                             fields: UnsafeBufferPointer<ResponseField>) -> Bool {
        guard !reset, !session.closed, !headSent else { return false }
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        let plan = exchange.beginResponse(ResponseHead(status: 200, reason: empty, fields: fields, contentLength: nil, close: false))
        session.core.beginHeaders(streamID: id, status: 200)
        if let subprotocol { session.core.addField(name: H2Stream.bytes("sec-websocket-protocol"), value: subprotocol) }
        if let deflate {
            var value = deflate.responseValue
            value.withUTF8 { session.core.addField(name: H2Stream.bytes("sec-websocket-extensions"), value: UnsafeRawBufferPointer($0)) }
        }
        for f in fields { session.core.addField(name: f.name, value: f.value) }
        addServerFields(plan, fields: fields)
        session.core.endHeaders(endStream: false)
        session.record(self)
        return true
    }

    func webSocketDenyHead(_ head: ResponseHead) -> SendOutcome {
        sendHead(head, trailers: false)
    }

    func webSocketDenyBody(_ bytes: UnsafeRawBufferPointer, final: Bool) -> SendOutcome {
        sendBody(bytes, final: final)
    }

    var webSocketInput: UnsafeMutableRawBufferPointer {
        webSocket?.directInput ?? UnsafeMutableRawBufferPointer(mutating: body.readable)
    }

    func webSocketConsumed(_ n: Int) {
        guard n > 0 else { return }
        if let direct = webSocket?.directInput {
            webSocket?.directInput = UnsafeMutableRawBufferPointer(rebasing: direct[n...])
        } else {
            body.readerIndex += n
            if body.isEmpty { body.detach()?.deallocate() }
        }
        // The WINDOW_UPDATE (once half a window is due) leaves with the next write.
        session.core.consumed(streamID: id, n)
        session.requestFlush()
    }

    var webSocketInputEnded: Bool { bodyEnded }

    func webSocketReadingChanged() {
        // Nothing to do: DATA keeps arriving until the window we give stops it.
    }

    func webSocketTransmit(_ extra: UnsafeRawBufferPointer) -> Bool {
        guard !reset, !session.closed, !responseEnded else { worker.out.count = 0; return false }
        queueWebSocketBytes(worker.out.bytes)
        worker.out.count = 0
        queueWebSocketBytes(extra)
        session.requestFlush()
        return true
    }

    /// Frames what the windows take now; the rest waits in `pendingOut`.
    private func queueWebSocketBytes(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        exchange.countOut(bytes.count)
        let n = hasPendingOutput ? 0 : frame(bytes, end: false)
        guard n < bytes.count else { return }
        pendingOut.appendGrowing(UnsafeRawBufferPointer(rebasing: bytes[n...]))
        session.enqueueForSending(self)
    }

    func webSocketBackpressure() -> Bool {
        guard pendingOutputBytes > H2Session.highWater || session.core.output.readableCount > H2Session.highWater else {
            return false
        }
        session.waitForDrain(self)
        return true
    }

    var webSocketTimerBusy: Bool { false }

    func webSocketArmTimer(milliseconds: Int?) {
        webSocket?.deadline = milliseconds.map { worker.now.adding(milliseconds: $0) }
        session.requestFlush()  // afterIO re-arms the session's timer
    }

    func webSocketFinish() {
        guard !reset, !responseEnded else { return }
        webSocket?.deadline = nil
        endAfterPending = true
        if hasPendingOutput {
            session.enqueueForSending(self)
        } else {
            _ = frame(UnsafeRawBufferPointer(start: nil, count: 0), end: true)
            session.checkDone(self)
        }
        session.requestFlush()
    }

    func webSocketAbort() {
        guard !reset else { return }
        session.resetStream(self, code: .cancel)
        session.requestFlush()
    }
}
