import Core
import Gateway
import HTTP3
import WebSocket

/// WebSocket over an HTTP/3 request stream (RFC 9220) for ASGI
/// applications: the extended CONNECT opening and the stream as a
/// `WebSocketTransport` for the same `WebSocketConversation` that HTTP/1.1
/// and HTTP/2 drive.
///
/// Opening (RFC 9220 §3, which reuses RFC 8441 §4–§5): the session
/// advertises SETTINGS_ENABLE_CONNECT_PROTOCOL only for an ASGI application
/// without --no-websockets (Worker.enableHTTP3); the core then accepts
/// CONNECT with `:protocol` (and requires `:scheme`, `:path`,
/// `:authority`). `ExtendedConnectRequest` judges the rest as over HTTP/2:
/// `:protocol` other than websocket → 501; Sec-WebSocket-Version missing,
/// repeated or not 13 → 400 with `sec-websocket-version: 13`. The
/// application gets the usual `websocket` scope (`http_version` "3", scheme
/// wss). Accepting is `:status` 200 with the subprotocol and extension
/// fields, never 101 (RFC 9114 §4.5 has no 101).
///
/// Frames travel in DATA frames (RFC 9220 §3). Incoming DATA is decoded in
/// place when nothing is buffered and copied otherwise; past
/// `H3Stream.bodyHighWater` buffered bytes (the application's queue is
/// full, so the conversation stopped decoding) the QUIC stream is no longer
/// read and parked, so the client is held by the stream's flow-control
/// window, not our memory. Outgoing frames go into the QUIC stream as its
/// send buffer (bounded by the peer's window) takes them; the rest waits in
/// `pendingOut`, and `send()` waits above `H3Connection.highWater`.
///
/// Ending (RFC 9220 §3: the stream's FIN is the TCP FIN, RESET_STREAM the
/// TCP RST): after the closing handshake (or our close for a protocol
/// error) the stream ends with FIN once the close frame is in QUIC; the
/// peer then has min(--request-timeout, 5 s) to end its side before
/// STOP_SENDING (H3_NO_ERROR). The peer's FIN without a close frame, or its
/// RESET_STREAM, is a lost connection (1006); an abortive end on our side
/// is RESET_STREAM (H3_REQUEST_CANCELLED).
extension H3Connection {
    func openWebSocket(_ s: H3Stream, protocolName: ByteSpan) {
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
        s.webSocket = H3WebSocket()
        s.accessLine = worker.accessLog.requestLine(request)
        worker.requestsServed += 1
        meterBegin(s, .websocket)
        service.webSocketOpened(s)
        let conversation = WebSocketConversation(transport: s, request: request)
        s.webSocket?.conversation = conversation
        asgi.startWebSocket(request, subprotocols: WebSocketConversation.subprotocolOffers(request), exchange: conversation)
    }

    /// The stream is leaving the connection: its conversation learns it.
    func webSocketEnded(_ s: H3Stream) {
        service.webSocketClosed(s)
        s.webSocket?.deadline = nil
        s.webSocket?.directInput = nil
        if let conversation = s.webSocket?.conversation {
            s.webSocket?.conversation = nil
            conversation.transportClosed()
        }
    }

    /// The stream's WebSocket timer fired: the conversation's (keepalive,
    /// the wait for the peer's close), or the wait for the peer's FIN.
    func webSocketTimerFired(_ s: H3Stream) {
        guard !closed, streams[s.id] === s else { return }
        if let conversation = s.webSocket?.conversation {
            conversation.timeout()
        } else {
            // The peer did not end its side in time: the stream ends with
            // STOP_SENDING (H3_NO_ERROR), as a response complete before its
            // request may (RFC 9114 §4.1).
            checkDone(s)
        }
        writeLocalOutput()
    }

    /// Graceful shutdown: every WebSocket closes with 1001 (going away).
    func closeWebSocketsGoingAway() {
        for s in Array(streams.values) { s.webSocket?.conversation?.closeGoingAway() }
    }
}

extension H3Stream: WebSocketTransport {
    var worker: Worker { connection.worker }

    /// DATA (or the end of the peer's side) for the WebSocket. The bytes are
    /// QUIC's receive buffer, released once this returns.
    func webSocketData(_ bytes: UnsafeRawBufferPointer, end: Bool) {
        if end { bodyEnded = true }
        guard let conversation = webSocket?.conversation else {
            // Lingering after our FIN: the peer's end is what we wait for.
            if end { connection.checkDone(self) }
            return
        }
        if conversation.doneReading { return }  // nothing after a close frame is read (RFC 6455 §5.5.1)
        if !bytes.isEmpty && body.isEmpty && conversation.wantsInput {
            // Decoded where QUIC keeps it (frames are unmasked in place:
            // the session counts this DATA payload as read, so QUIC
            // releases these bytes when the read returns and nothing reads
            // them again); only a remainder (a frame cut short, or the
            // application's queue filled) is copied.
            webSocket?.directInput = UnsafeMutableRawBufferPointer(mutating: bytes)
            conversation.inputArrived()
            if let left = webSocket?.directInput, !left.isEmpty,
               webSocket?.conversation != nil && !conversation.doneReading && !reset {
                body.appendGrowing(UnsafeRawBufferPointer(left))
            }
            webSocket?.directInput = nil
        } else {
            if !bytes.isEmpty { body.appendGrowing(bytes) }
            conversation.inputArrived()
        }
        pauseReadingIfFull()
    }

    /// The application is slow: past the high-water mark the QUIC stream is
    /// not read (its window holds the client) until the buffer drains.
    private func pauseReadingIfFull() {
        guard body.readableCount >= H3Stream.bodyHighWater, !readPaused, !reset else { return }
        readPaused = true
        connection.quic.setReadingParked(stream: id, true)
    }

    /// Our FIN is out, the peer's is not: keep the stream (dropping its
    /// DATA) until the peer ends it or the deadline passes. True while
    /// lingering.
    func lingerForPeerEnd() -> Bool {
        guard !bodyEnded, !reset else { return false }
        guard let conversation = webSocket?.conversation else { return webSocket?.deadline != nil }
        guard conversation.accepted else { return false }  // a denial: STOP_SENDING at once
        webSocket?.conversation = nil
        webSocket?.directInput = nil
        conversation.transportClosed()
        body.detach()?.deallocate()
        if readPaused {
            readPaused = false
            connection.quic.setReadingParked(stream: id, false)
            connection.resumeReading(self)
        }
        webSocket?.deadline = worker.now.adding(milliseconds: min(worker.config.requestTimeoutMilliseconds, 5000))
        worker.quicDeadlineChanged()
        return true
    }

    // MARK: - WebSocketTransport

    func webSocketSendAccept(subprotocol: UnsafeRawBufferPointer?, deflate: PerMessageDeflateParameters?,
                             fields: UnsafeBufferPointer<ResponseField>) -> Bool {
        guard canSend, !exchange.headSent else { return false }
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        let head = ResponseHead(status: 200, reason: empty, fields: fields, contentLength: nil, close: false)
        let plan = exchange.beginResponse(head)
        let core = connection.core
        core.beginHeaders(streamID: id, status: 200)
        if let subprotocol { core.addField(name: H2Stream.bytes("sec-websocket-protocol"), value: subprotocol) }
        if let deflate {
            var value = deflate.responseValue
            value.withUTF8 { core.addField(name: H2Stream.bytes("sec-websocket-extensions"), value: UnsafeRawBufferPointer($0)) }
        }
        for f in fields { core.addField(name: f.name, value: f.value) }
        worker.defaultFields?.lines(for: fields).forEach { core.addField(name: $0, value: $1) }
        if plan.addsDate && worker.sendsDate { core.addField(name: H2Stream.dateName, value: worker.date.bytes) }
        accessLine?.captureResponse(fields, contentLength: nil, names: worker.accessLog.responseFieldNames, requestID: request?.requestID)
        var out = connection.takeScratch()
        let fits = core.endHeaders(into: &out)
        if fits { emit(out) }
        connection.giveScratch(out)
        // RFC 9114 §4.2.2: fields the client would refuse; the opening fails.
        guard fits else { return false }
        connection.record(self)
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
            return
        }
        body.readerIndex += n
        if body.isEmpty { body.detach()?.deallocate() }
        if readPaused && body.readableCount < H3Stream.bodyHighWater / 2 {
            // The stream is read again; the flow-control credit its bytes
            // return leaves with the next flush.
            readPaused = false
            connection.quic.setReadingParked(stream: id, false)
            connection.resumeReading(self)
        }
    }

    var webSocketInputEnded: Bool { bodyEnded }

    func webSocketReadingChanged() {
        // Nothing to do: buffered bytes past the high-water mark park the
        // stream (`pauseReadingIfFull`).
    }

    func webSocketTransmit(_ extra: UnsafeRawBufferPointer) -> Bool {
        guard canSend, !responseEnded, !endAfterPending else { worker.out.count = 0; return false }
        let staged = worker.out.bytes
        if !staged.isEmpty {
            exchange.countOut(staged.count)
            _ = frame(staged, force: true)
        }
        worker.out.count = 0
        if !extra.isEmpty {
            exchange.countOut(extra.count)
            _ = frame(extra, force: true)
        }
        if hasPendingOutput { connection.enqueueForSending(self) }
        connection.service.scheduleFlush()
        return true
    }

    func webSocketBackpressure() -> Bool {
        guard pendingOutputBytes > H3Connection.highWater else { return false }
        connection.waitForDrain(self)
        return true
    }

    var webSocketTimerBusy: Bool { false }

    func webSocketArmTimer(milliseconds: Int?) {
        webSocket?.deadline = milliseconds.map { worker.now.adding(milliseconds: $0) }
        worker.quicDeadlineChanged()
    }

    func webSocketFinish() {
        guard canSend, !responseEnded else { return }
        webSocket?.deadline = nil
        endResponse()
        connection.service.scheduleFlush()
    }

    func webSocketAbort() {
        guard canSend else { return }
        connection.resetStream(self)
        connection.service.scheduleFlush()
    }
}
