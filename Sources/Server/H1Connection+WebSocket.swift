import CSys
import Core
import Gateway
import HTTP1
import WebSocket

/// WebSocket over HTTP/1.1 (RFC 6455) for ASGI applications: the opening
/// handshake and the connection as a `WebSocketTransport`; the conversation
/// itself (frames, messages, deflate, keepalive, closing handshake) is the
/// transport-independent `WebSocketConversation`.
///
/// A request with `Upgrade: websocket` is judged by `UpgradeRequest`: not a
/// WebSocket request → served as plain HTTP; broken → 400, or 426 with
/// `Sec-WebSocket-Version: 13`; valid → the application gets a `websocket`
/// scope and decides. Until it accepts, nothing more is read. After a 101,
/// the socket is read whenever the conversation wants input; the
/// connection closes once the conversation's last frame (its close) is
/// flushed, and is cut when it aborts.
extension H1Connection: WebSocketTransport {
    /// The handshake verdict for a request carrying `Upgrade`; nil to serve
    /// it as plain HTTP.
    func webSocketVerdict(_ head: H1RequestHead) -> HandshakeVerdict? {
        var upgrade = UpgradeRequest()
        let table = worker.headerTable
        let base = UnsafeRawPointer(input.readable.baseAddress!) - head.headLength
        for i in 0..<table.count {
            let name = UnsafeRawBufferPointer(start: base + table.name(i).start, count: table.name(i).count)
            if let field = HandshakeField(name: name) {
                upgrade.receive(field, value: UnsafeRawBufferPointer(start: base + table.value(i).start, count: table.value(i).count))
            }
        }
        let verdict = upgrade.verdict(isGET: head.method == .get, isHTTP11OrLater: perRequest.request.version != .http10)
        if case .notWebSocket = verdict { return nil }
        return verdict
    }

    func startWebSocket(_ verdict: HandshakeVerdict, request: GatewayRequest) {
        switch verdict {
        case .notWebSocket:
            return
        case .reject(let rejection):
            sendErrorAndLinger(Int(rejection.status),
                               extraField: rejection.requiresVersionField ? "sec-websocket-version: 13" : nil)
        case .accept(let key):
            phase = .websocket
            releaseParsing()
            let conversation = WebSocketConversation(transport: self, request: request)
            webSocket = H1WebSocket(conversation: conversation, key: key)
            updateInterest()
            worker.asgi!.startWebSocket(request, subprotocols: WebSocketConversation.subprotocolOffers(request),
                                        exchange: conversation)
        }
    }

    // MARK: - WebSocketTransport

    func webSocketSendAccept(subprotocol: UnsafeRawBufferPointer?, deflate: PerMessageDeflateParameters?,
                             fields: UnsafeBufferPointer<ResponseField>) -> Bool {
        guard phase == .websocket, !writeFailed, let key = webSocket?.key else { return false }
        perRequest.exchange.respondDirectly(status: 101)
        worker.out.append("HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: ")
        worker.out.reserve(SecWebSocketKey.acceptLength)
        worker.out.count += key.writeAccept(into: UnsafeMutableRawBufferPointer(start: worker.out.base + worker.out.count,
                                                                                count: SecWebSocketKey.acceptLength))
        worker.out.append("\r\n")
        if let subprotocol {
            worker.out.append("sec-websocket-protocol: ")
            worker.out.append(subprotocol)
            worker.out.append("\r\n")
        }
        if let deflate {
            worker.out.append("sec-websocket-extensions: ")
            var value = deflate.responseValue
            value.withUTF8 { worker.out.append(UnsafeRawBufferPointer($0)) }
            worker.out.append("\r\n")
        }
        stageFields(fields)
        if let lines = worker.defaultFields?.lines(for: fields) {
            worker.out.write(lines.length) { lines.write(into: $0) }
        }
        worker.out.append("\r\n")
        if let line = perRequest.request.accessLine {
            worker.accessLog.record(line, perRequest.exchange, peer: peer, now: worker.now)
            perRequest.request.accessLine = nil
        }
        return true
    }

    func webSocketDenyHead(_ head: ResponseHead) -> SendOutcome {
        guard phase == .websocket, !writeFailed else { return .closed }
        _ = stageHead(head, plan: perRequest.exchange.beginResponse(head), trailers: false)
        return .done
    }

    func webSocketDenyBody(_ bytes: UnsafeRawBufferPointer, final: Bool) -> SendOutcome {
        guard phase == .websocket, !writeFailed else { worker.out.count = 0; return .closed }
        let body = admitted(bytes)
        perRequest.exchange.countOut(body.count)
        guard body.isEmpty || emitBody(body, blocking: false) else { return .closed }
        if final {
            stageBodyEnd(trailers: nil)
            webSocket?.closeWhenFlushed = true
        }
        guard transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: false) else { clientGone(); return .closed }
        if webSocket?.closeWhenFlushed == true && !hasPendingOutput {
            close()
            return .done
        }
        return webSocketBackpressure() ? .backpressure : .done
    }

    var webSocketInput: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(mutating: input.readable) }

    func webSocketConsumed(_ n: Int) {
        input.readerIndex += n
        if input.isEmpty { releaseInput() }
    }

    var webSocketInputEnded: Bool { false }

    func webSocketReadingChanged() {
        updateInterest()
    }

    func webSocketTransmit(_ extra: UnsafeRawBufferPointer) -> Bool {
        guard phase == .websocket else { worker.out.count = 0; return false }
        return transmit(extra, blocking: false)
    }

    func webSocketBackpressure() -> Bool {
        guard pendingOutputBytes > H1Connection.highWater else { return false }
        perRequest.output.drainWanted = true
        return true
    }

    var webSocketTimerBusy: Bool { hasPendingOutput }

    func webSocketArmTimer(milliseconds: Int?) {
        if let milliseconds { worker.arm(self, milliseconds: milliseconds) } else { worker.disarm(self) }
    }

    func webSocketFinish() {
        guard phase == .websocket else { return }
        if hasPendingOutput {
            webSocket?.closeWhenFlushed = true
            updateInterest()
        } else {
            close()
        }
    }

    func webSocketAbort() {
        guard phase == .websocket else { return }
        clientGone()
    }

    // MARK: - Events

    func webSocketReadable(_ events: IOEvents) {
        guard let conversation = webSocket?.conversation, conversation.accepted && !conversation.doneReading else {
            if events.contains(.peerClosed) || events.contains(.error) { clientGone() }
            return
        }
        if conversation.paused { return }
        switch fill() {
        case .data: conversation.inputArrived()
        case .again: return
        case .eof, .error: clientGone()
        }
    }

    func webSocketWritable() {
        if perRequest.output.drainWanted && pendingOutputBytes < H1Connection.lowWater {
            perRequest.output.drainWanted = false
            webSocket?.conversation.outputDrained()
            if phase != .websocket { return }
        }
        if !hasPendingOutput {
            if webSocket?.closeWhenFlushed == true { close(); return }
            webSocket?.conversation.outputFlushed()
        }
        updateInterest()
    }

    func webSocketTimeout() {
        webSocket?.conversation.timeout()
    }

    /// Graceful shutdown: close with 1001 (going away).
    func closeWebSocketGoingAway() {
        guard phase == .websocket else { return }
        webSocket?.conversation.closeGoingAway()
    }
}
