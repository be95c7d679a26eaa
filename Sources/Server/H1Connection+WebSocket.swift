import CSys
import Core
import Gateway
import HTTP1
import WebSocket

/// What a connection keeps once it carries a WebSocket.
struct WebSocketState {
    var delegate: WebSocketDelegate?
    var key: SecWebSocketKey?
    var decoder: FrameDecoder?
    var accepted = false
    var paused = false
    var closeSent = false
    var closeReceived = false
    var closeWhenFlushed = false
    var denying = false
    /// A keepalive ping is out and its pong not yet back.
    var pingOutstanding = false
    /// The message being assembled from fragments.
    var message: [UInt8] = []
    var messageIsText = false
    /// permessage-deflate (RFC 7692, `--ws-compress`): what the handshake
    /// agreed, then each direction's compression state once accepted.
    var deflate: PerMessageDeflateParameters?
    var deflater: MessageDeflater?
    var inflater: MessageInflater?
}

/// WebSocket over HTTP/1.1 (RFC 6455) for ASGI applications: the opening
/// handshake, then frames both ways through the sans-I/O `WebSocket`
/// codec.
///
/// A request with `Upgrade: websocket` is judged by `UpgradeRequest`: not a
/// WebSocket request → served as plain HTTP; broken → 400, or 426 with
/// `Sec-WebSocket-Version: 13`; valid → the application gets a `websocket`
/// scope and decides. Until it accepts, nothing more is read. After a 101,
/// frames are read whenever the application's queue has room; pings are
/// answered here; a protocol error closes with its code (1002, 1007, 1009).
/// A close from either side completes the closing handshake (RFC 6455 §7)
/// and the server closes the TCP connection once its close frame is
/// flushed; a peer that never answers our close is cut at the request
/// timeout.
///
/// With `--ws-compress`, permessage-deflate (RFC 7692) is negotiated from
/// the client's offers at the upgrade (`PerMessageDeflateParameters`) and
/// answered in the 101; compressed messages are then inflated as their
/// frames arrive (`MessageInflater`, bounded by `--ws-max-message`) and the
/// application's messages of 64 bytes or more are deflated straight into the
/// output buffer (`MessageDeflater`).
extension H1Connection: WebSocketExchange {
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
        let verdict = upgrade.verdict(isGET: head.method == .get, isHTTP11OrLater: !isHTTP10)
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
            var offers: [UnsafeRawBufferPointer] = []
            for i in 0..<request.fieldCount {
                let f = request.fields[i]
                guard HandshakeField(name: request.bytes(f.name)) == .secWebSocketProtocol else { continue }
                let value = request.bytes(f.value)
                var reader = ProtocolListReader(value)
                while let span = try? reader.next() {
                    offers.append(UnsafeRawBufferPointer(rebasing: value[span.start..<span.end]))
                }
            }
            phase = .websocket
            ws = WebSocketState()
            ws.key = key
            if worker.config.wsCompress {
                var values: [UnsafeRawBufferPointer] = []
                for i in 0..<request.fieldCount where HandshakeField(name: request.bytes(request.fields[i].name)) == .secWebSocketExtensions {
                    values.append(request.bytes(request.fields[i].value))
                }
                ws.deflate = PerMessageDeflateParameters.negotiate(fieldValues: values)
            }
            updateInterest()
            worker.asgi!.startWebSocket(request, subprotocols: offers, exchange: self)
        }
    }

    // MARK: - WebSocketExchange

    func attachWebSocket(_ delegate: WebSocketDelegate) {
        ws.delegate = delegate
    }

    func acceptWebSocket(subprotocol: UnsafeRawBufferPointer?, fields: UnsafeBufferPointer<ResponseField>) -> SendOutcome {
        guard phase == .websocket, !writeFailed, let key = ws.key else { return .closed }
        status = 101
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
        if let agreed = ws.deflate {
            worker.out.append("sec-websocket-extensions: ")
            var value = agreed.responseValue
            value.withUTF8 { worker.out.append(UnsafeRawBufferPointer($0)) }
            worker.out.append("\r\n")
            ws.deflater = MessageDeflater(parameters: agreed)
            ws.inflater = MessageInflater(parameters: agreed, maxMessageLength: worker.config.wsMaxMessage)
        }
        stageFields(fields)
        worker.out.append("\r\n")
        ws.accepted = true
        ws.decoder = FrameDecoder(configuration: .init(maxMessageLength: worker.config.wsMaxMessage, allowRSV1: ws.deflate != nil))
        headSent = true
        if let line = accessLine {
            worker.accessLog.record(line, status: 101, bytes: 0, peer: peer,
                                    milliseconds: Double(Instant.now().nanoseconds - requestStart.nanoseconds) / 1e6)
            accessLine = nil
        }
        let result = webSocketOutcome(transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: false))
        updateInterest()
        if phase == .websocket && !hasPendingOutput { armKeepalive() }
        // Frames the client sent right behind its handshake are already here.
        if phase == .websocket && !input.isEmpty { processFrames() }
        return result
    }

    func denyWebSocket(_ head: ResponseHead) -> SendOutcome {
        guard phase == .websocket, !writeFailed else { return .closed }
        ws.denying = true
        stageHead(head, trailers: false)
        return .done
    }

    func denyBody(_ bytes: UnsafeRawBufferPointer, final: Bool) -> SendOutcome {
        guard phase == .websocket, !writeFailed, ws.denying else { worker.out.count = 0; return .closed }
        guard emitBody(bytes, flush: false, blocking: false) else { return .closed }
        if final {
            stageBodyEnd(trailers: nil)
            ws.closeWhenFlushed = true
        }
        return webSocketOutcome(transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: false))
    }

    func sendMessage(_ bytes: UnsafeRawBufferPointer, text: Bool) -> SendOutcome {
        guard phase == .websocket, ws.accepted, !ws.closeSent, !writeFailed else { return .closed }
        if let deflater = ws.deflater, deflater.shouldCompress(length: bytes.count) {
            return sendCompressed(bytes, text: text, deflater)
        }
        let headerLength = FrameEncoder.headerLength(payloadLength: bytes.count)
        worker.out.reserve(headerLength)
        worker.out.count += FrameEncoder.writeHeader(
            opcode: text ? .text : .binary, fin: true, payloadLength: bytes.count,
            into: UnsafeMutableRawBufferPointer(start: worker.out.base + worker.out.count, count: headerLength))
        bytesOut += Int64(bytes.count)
        if bytes.count <= 16 * 1024 {
            worker.out.append(bytes)
            return webSocketOutcome(transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: false))
        }
        return webSocketOutcome(transmit(bytes, blocking: false))
    }

    /// One compressed frame (RFC 7692 §7.2.1, RSV1 set), deflated straight
    /// into the output buffer behind room for the header, which is written
    /// once the payload length is known (the payload moves only if the
    /// header turns out shorter than guessed from the uncompressed length).
    private func sendCompressed(_ bytes: UnsafeRawBufferPointer, text: Bool, _ deflater: MessageDeflater) -> SendOutcome {
        let frameStart = worker.out.count
        let guess = FrameEncoder.headerLength(payloadLength: bytes.count)
        worker.out.reserve(guess + MessageDeflater.bound(length: bytes.count))
        worker.out.count += guess
        var consumed = 0
        while true {
            // `count` covers what is written, so a reserve keeps it.
            let step = deflater.compress(UnsafeRawBufferPointer(rebasing: bytes[consumed...]),
                                         into: UnsafeMutableRawBufferPointer(start: worker.out.base + worker.out.count, count: worker.out.free))
            consumed += step.consumed
            worker.out.count += step.written
            if step.isFinished { break }
            worker.out.reserve(max(worker.out.count - frameStart, 16 * 1024))
        }
        let payloadLength = worker.out.count - frameStart - guess - MessageDeflater.tailLength
        let headerLength = FrameEncoder.headerLength(payloadLength: payloadLength)
        if headerLength != guess {
            // Incompressible data can come out longer than it went in.
            if headerLength > guess { worker.out.reserve(headerLength - guess) }
            (worker.out.base + frameStart + headerLength).copyMemory(from: worker.out.base + frameStart + guess, byteCount: payloadLength)
        }
        FrameEncoder.writeHeader(opcode: text ? .text : .binary, fin: true, rsv1: true, payloadLength: payloadLength,
                                 into: UnsafeMutableRawBufferPointer(start: worker.out.base + frameStart, count: headerLength))
        worker.out.count = frameStart + headerLength + payloadLength
        bytesOut += Int64(bytes.count)
        return webSocketOutcome(transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: false))
    }

    func sendClose(code: Int, reason: UnsafeRawBufferPointer) -> SendOutcome {
        guard phase == .websocket, ws.accepted, !ws.closeSent, !writeFailed else { return .closed }
        stageClose(code: CloseCode(rawValue: UInt16(clamping: code)), reason: reason)
        if ws.closeReceived {
            ws.closeWhenFlushed = true
        } else {
            // Wait for the peer's close, but not forever.
            worker.arm(self, milliseconds: min(worker.config.requestTimeoutMilliseconds, 5000))
        }
        return webSocketOutcome(transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: false))
    }

    func pauseReading() {
        ws.paused = true
        updateInterest()
    }

    func resumeReading() {
        guard ws.paused else { return }
        ws.paused = false
        updateInterest()
        if phase == .websocket && !input.isEmpty { processFrames() }
    }

    // MARK: - Events

    func webSocketReadable(_ events: IOEvents) {
        guard ws.accepted && !ws.closeReceived else {
            if events.contains(.peerClosed) || events.contains(.error) { clientGone() }
            return
        }
        if ws.paused { return }
        switch fill() {
        case .data:
            processFrames()
            if phase == .websocket && !hasPendingOutput && !ws.pingOutstanding { armKeepalive() }
        case .again: return
        case .eof, .error: clientGone()
        }
    }

    func webSocketWritable() {
        if drainWanted && pendingOutputBytes < H1Connection.lowWater {
            drainWanted = false
            ws.delegate?.outputDrained()
            if phase != .websocket { return }
        }
        if !hasPendingOutput {
            if ws.closeWhenFlushed { close(); return }
            if !ws.closeSent { armKeepalive() }
        }
        updateInterest()
    }

    /// The connection's one timer, in this phase: write stall while output
    /// is pending, the wait for the peer's close after ours, otherwise the
    /// keepalive ping and then the wait for its pong.
    func armKeepalive() {
        if ws.closeSent || ws.denying || !ws.accepted { return }
        let interval = ws.pingOutstanding ? worker.config.wsPingTimeoutMilliseconds : worker.config.wsPingIntervalMilliseconds
        if interval > 0 { worker.arm(self, milliseconds: interval) } else { worker.disarm(self) }
    }

    func webSocketTimeout() {
        if hasPendingOutput || ws.closeSent || !ws.accepted {
            // Not draining, or the peer never answered our close.
            clientGone()
            return
        }
        if ws.pingOutstanding {
            // RFC 6455 §7.4.1 1011: the keepalive pong never came.
            stageClose(code: CloseCode(rawValue: 1011), reason: UnsafeRawBufferPointer(start: nil, count: 0))
            ws.closeWhenFlushed = true
            endWebSocket(code: 1006, reason: UnsafeRawBufferPointer(start: nil, count: 0))
            if transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: false) && !hasPendingOutput { close() }
            return
        }
        let payload: StaticString = "peregrine"
        worker.out.reserve(2 + payload.utf8CodeUnitCount)
        worker.out.count += FrameEncoder.writePing(
            payload: UnsafeRawBufferPointer(start: payload.utf8Start, count: payload.utf8CodeUnitCount),
            into: UnsafeMutableRawBufferPointer(start: worker.out.base + worker.out.count, count: 2 + payload.utf8CodeUnitCount))
        ws.pingOutstanding = true
        guard transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: false) else { clientGone(); return }
        if !hasPendingOutput { armKeepalive() }
    }

    /// Graceful shutdown: close with 1001 (going away).
    func closeWebSocketGoingAway() {
        guard phase == .websocket else { return }
        guard ws.accepted, !ws.closeSent else { if !ws.accepted { clientGone() }; return }
        _ = sendClose(code: 1001, reason: UnsafeRawBufferPointer(start: nil, count: 0))
    }

    /// Decodes and delivers the frames in the input buffer.
    private func processFrames() {
        while phase == .websocket, !ws.paused, !ws.closeReceived, var decoder = ws.decoder, !input.isEmpty {
            let readable = UnsafeMutableRawBufferPointer(mutating: input.readable)
            let step: DecodeStep
            do {
                step = try decoder.decode(readable)
            } catch {
                failWebSocket(error)
                return
            }
            ws.decoder = decoder
            switch step {
            case .needMoreData(let consumed):
                input.readerIndex += consumed
                if input.isEmpty { releaseInput() }
                return
            case .event(let event, let consumed):
                handle(event, in: UnsafeRawBufferPointer(readable))
                if phase != .websocket { return }
                input.readerIndex += consumed
            }
        }
        if input.isEmpty { releaseInput() }
    }

    private func handle(_ event: FrameEvent, in buffer: UnsafeRawBufferPointer) {
        func bytes(_ span: ByteSpan) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(rebasing: buffer[span.start..<span.end])
        }
        switch event {
        case .messageData(let piece):
            let data = bytes(piece.span)
            if piece.isCompressed, let inflater = ws.inflater {
                if piece.isFirst { ws.messageIsText = piece.opcode == .text }
                do {
                    if let message = try inflater.inflate(data, isFirst: piece.isFirst, isLast: piece.isLast, text: ws.messageIsText) {
                        ws.delegate?.messageReceived(message, text: ws.messageIsText)
                        inflater.release()
                    }
                } catch {
                    inflater.release()
                    failWebSocket(error)
                }
                return
            }
            if piece.isFirst && piece.isLast {
                // A whole message in one frame: no copy.
                ws.delegate?.messageReceived(data, text: piece.opcode == .text)
                return
            }
            if piece.isFirst {
                ws.message.removeAll(keepingCapacity: true)
                ws.messageIsText = piece.opcode == .text
            }
            ws.message.append(contentsOf: data)
            if piece.isLast {
                let text = ws.messageIsText
                ws.message.withUnsafeBytes { ws.delegate?.messageReceived($0, text: text) }
                ws.message.removeAll(keepingCapacity: ws.message.capacity <= 1 << 20)
            }
        case .pingReceived(let span):
            guard !ws.closeSent else { return }
            let payload = bytes(span)
            worker.out.reserve(2 + payload.count)
            worker.out.count += FrameEncoder.writePong(
                payload: payload,
                into: UnsafeMutableRawBufferPointer(start: worker.out.base + worker.out.count, count: 2 + payload.count))
            _ = transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: false)
        case .pongReceived:
            ws.pingOutstanding = false
            if !hasPendingOutput { armKeepalive() }
        case .closeReceived(let code, let reasonSpan):
            ws.closeReceived = true
            let reason = bytes(reasonSpan)
            if !ws.closeSent {
                // Echo the peer's code (RFC 6455 §5.5.1), then close.
                stageClose(code: code, reason: UnsafeRawBufferPointer(start: nil, count: 0))
            }
            ws.closeWhenFlushed = true
            endWebSocket(code: Int(code?.rawValue ?? 1005), reason: reason)
            if transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: false) && !hasPendingOutput {
                close()
            } else {
                updateInterest()
            }
        }
    }

    /// A protocol error from the peer: close with its code.
    private func failWebSocket(_ error: WebSocketError) {
        if !ws.closeSent {
            worker.out.reserve(4 + 123)
            worker.out.count += FrameEncoder.writeClose(
                for: error, into: UnsafeMutableRawBufferPointer(start: worker.out.base + worker.out.count, count: 4 + 123))
            ws.closeSent = true
        }
        ws.closeReceived = true
        ws.closeWhenFlushed = true
        let reason = error.reason
        endWebSocket(code: Int(error.closeCode.rawValue),
                     reason: UnsafeRawBufferPointer(start: reason.utf8Start, count: reason.utf8CodeUnitCount))
        if transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: false) && !hasPendingOutput {
            close()
        } else {
            updateInterest()
        }
    }

    private func stageClose(code: CloseCode?, reason: UnsafeRawBufferPointer) {
        let length = FrameEncoder.closeFrameLength(code: code, reasonLength: reason.count)
        worker.out.reserve(length)
        worker.out.count += FrameEncoder.writeClose(
            code: code, reason: reason,
            into: UnsafeMutableRawBufferPointer(start: worker.out.base + worker.out.count, count: length))
        ws.closeSent = true
    }

    private func webSocketOutcome(_ transmitted: Bool) -> SendOutcome {
        guard transmitted else { clientGone(); return .closed }
        if ws.closeWhenFlushed && !hasPendingOutput {
            close()
            return .done
        }
        if hasPendingOutput { updateInterest() }
        if pendingOutputBytes > H1Connection.highWater {
            drainWanted = true
            return .backpressure
        }
        return .done
    }

    /// Tells the application the connection is over (once).
    func endWebSocket(code: Int, reason: UnsafeRawBufferPointer) {
        guard let d = ws.delegate else { return }
        ws.delegate = nil
        d.webSocketEnded(code: code, reason: reason)
    }
}
