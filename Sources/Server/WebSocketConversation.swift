import Core
import Gateway
import WebSocket

/// What a `WebSocketConversation` needs from the transport carrying it: an
/// HTTP/1.1 connection after its upgrade (`H1Connection+WebSocket`), or an
/// HTTP/2 or HTTP/3 stream opened by an extended CONNECT
/// (`H2Stream+WebSocket`, RFC 8441; `H3Stream+WebSocket`, RFC 9220). The conversation stages frames in `worker.out`; what happens
/// to them then (a socket write, DATA frames as the peer's windows allow) is
/// the transport's business, as are the handshake's answers.
protocol WebSocketTransport: AnyObject {
    var worker: Worker { get }

    // Opening handshake.
    /// Writes the acceptance (HTTP/1.1: 101 with Sec-WebSocket-Accept;
    /// HTTP/2: `:status` 200) with the chosen subprotocol, the agreed
    /// permessage-deflate parameters and the application's fields. False if
    /// the transport cannot send any more.
    func webSocketSendAccept(subprotocol: UnsafeRawBufferPointer?, deflate: PerMessageDeflateParameters?,
                             fields: UnsafeBufferPointer<ResponseField>) -> Bool
    /// The refusal with an HTTP response; the transport ends after the final
    /// part of the body.
    func webSocketDenyHead(_ head: ResponseHead) -> SendOutcome
    func webSocketDenyBody(_ bytes: UnsafeRawBufferPointer, final: Bool) -> SendOutcome

    // Input.
    /// Received bytes not decoded yet (mutable: frames are unmasked in place).
    var webSocketInput: UnsafeMutableRawBufferPointer { get }
    /// The first `n` bytes of the input are done with (HTTP/2: their window
    /// goes back to the peer).
    func webSocketConsumed(_ n: Int)
    /// The peer ended its side (HTTP/2 END_STREAM): the input holds the last
    /// bytes. Over HTTP/1.1 the end of the socket is seen by the reader.
    var webSocketInputEnded: Bool { get }
    /// `WebSocketConversation.wantsInput` changed.
    func webSocketReadingChanged()

    // Output.
    /// Sends the bytes staged in `worker.out`, then `extra`, keeping what
    /// cannot leave now; false if the transport failed.
    func webSocketTransmit(_ extra: UnsafeRawBufferPointer) -> Bool
    /// Whether the application's sends should wait now (output above the
    /// high-water mark); if so, the transport calls `outputDrained()` once
    /// it fell below the low-water mark.
    func webSocketBackpressure() -> Bool
    /// The transport's timer is taken for now (HTTP/1.1: the write-stall
    /// timeout while output is pending), so keepalive waits for it.
    var webSocketTimerBusy: Bool { get }
    /// Arms the conversation's timer (nil disarms); it calls `timeout()`.
    func webSocketArmTimer(milliseconds: Int?)

    // The end.
    /// The conversation is over: end the transport once what is queued has
    /// left (HTTP/1.1: close the connection; HTTP/2: END_STREAM).
    func webSocketFinish()
    /// Abortive end (HTTP/1.1: the connection is cut; HTTP/2:
    /// RST_STREAM(CANCEL), RFC 8441 §5).
    func webSocketAbort()
}

/// One WebSocket connection after a valid opening handshake, whatever
/// carries it (RFC 6455 over HTTP/1.1, RFC 8441 over an HTTP/2 stream): the
/// `WebSocketExchange` the ASGI gateway talks to, owning the frame decoder,
/// message assembly, permessage-deflate state, the keepalive ping and the
/// closing handshake. The transport (`WebSocketTransport`) only moves bytes,
/// answers the handshake and keeps one timer.
///
///     handshake ─▶ accept ─▶ frames both ways ─▶ close sent/received ─▶ finish
///          └─────▶ deny (an HTTP response) ─────────────────────────────▶ end
///
/// Until the application accepts, nothing is decoded. Then frames are
/// decoded whenever the application's queue has room (`pauseReading` stops
/// it; the transport then stops reading, or, over HTTP/2, stops giving the
/// peer window). Pings are answered here; a protocol error closes with its
/// code (1002, 1007, 1009) and ends the transport once the close frame is
/// out. A close from either side completes the closing handshake (RFC 6455
/// §7), whose decisions are `CloseHandshake`'s; a peer that never answers
/// our close is cut after min(--request-timeout, 5 s).
///
/// With `--ws-compress`, permessage-deflate (RFC 7692) is negotiated from
/// the client's offers (`PerMessageDeflateParameters`) and answered with
/// the acceptance; compressed messages are inflated as their frames arrive
/// (`MessageInflater`, bounded by `--ws-max-message`) and the application's
/// messages of 64 bytes or more are deflated straight into the output
/// staging buffer (`MessageDeflater`).
final class WebSocketConversation: WebSocketExchange {
    unowned(unsafe) let worker: Worker
    /// Nil once the transport is gone: every later call answers `.closed`.
    private(set) var transport: WebSocketTransport?
    private var delegate: WebSocketDelegate?
    private var decoder: FrameDecoder?
    private(set) var accepted = false
    private(set) var denying = false
    private(set) var paused = false
    /// The closing handshake: whether data may still be sent or read, and
    /// what each close (ours, the peer's, a failure) calls for.
    private var closing = CloseHandshake()
    /// A keepalive ping is out and its pong not yet back.
    private(set) var pingOutstanding = false
    /// The message being assembled from fragments.
    private var message: [UInt8] = []
    private var messageIsText = false
    /// permessage-deflate: what the handshake agreed, then each direction's
    /// compression state once accepted.
    private let deflate: PerMessageDeflateParameters?
    private var deflater: MessageDeflater?
    private var inflater: MessageInflater?

    init(transport: WebSocketTransport, request: GatewayRequest) {
        worker = transport.worker
        self.transport = transport
        if worker.config.wsCompress {
            var values: [UnsafeRawBufferPointer] = []
            for i in 0..<request.fieldCount where HandshakeField(name: request.bytes(request.fields[i].name)) == .secWebSocketExtensions {
                values.append(request.bytes(request.fields[i].value))
            }
            deflate = PerMessageDeflateParameters.negotiate(fieldValues: values)
        } else {
            deflate = nil
        }
    }

    /// The subprotocols the client offers (Sec-WebSocket-Protocol, every
    /// line, in order); the pointers are into the request.
    static func subprotocolOffers(_ request: GatewayRequest) -> [UnsafeRawBufferPointer] {
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
        return offers
    }

    /// Whether frames should be read and decoded now.
    var wantsInput: Bool { transport != nil && accepted && !paused && closing.mayReceiveData }

    /// The peer's frames are done with: its close arrived (RFC 6455 §1.4:
    /// anything after it is discarded) or the connection failed.
    var doneReading: Bool { !closing.mayReceiveData }

    private static var none: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: nil, count: 0) }

    // MARK: - WebSocketExchange

    func attachWebSocket(_ delegate: WebSocketDelegate) {
        self.delegate = delegate
    }

    func acceptWebSocket(subprotocol: UnsafeRawBufferPointer?, fields: UnsafeBufferPointer<ResponseField>) -> SendOutcome {
        guard let transport, !accepted, !denying,
              transport.webSocketSendAccept(subprotocol: subprotocol, deflate: deflate, fields: fields) else { return .closed }
        if let agreed = deflate {
            deflater = MessageDeflater(parameters: agreed)
            inflater = MessageInflater(parameters: agreed, maxMessageLength: worker.config.wsMaxMessage)
        }
        accepted = true
        decoder = FrameDecoder(configuration: .init(maxMessageLength: worker.config.wsMaxMessage, allowRSV1: deflate != nil))
        let result = outcome(transport.webSocketTransmit(Self.none))
        guard let transport = self.transport else { return result }
        transport.webSocketReadingChanged()
        if !transport.webSocketTimerBusy { armKeepalive() }
        // Frames the client sent right behind its handshake are already here.
        processInput()
        return result
    }

    func denyWebSocket(_ head: ResponseHead) -> SendOutcome {
        guard let transport, !accepted else { return .closed }
        denying = true
        return transport.webSocketDenyHead(head)
    }

    func denyBody(_ bytes: UnsafeRawBufferPointer, final: Bool) -> SendOutcome {
        guard let transport, denying else { worker.out.count = 0; return .closed }
        return transport.webSocketDenyBody(bytes, final: final)
    }

    func sendMessage(_ bytes: UnsafeRawBufferPointer, text: Bool) -> SendOutcome {
        // RFC 6455 §5.5.1: no data frames after our close.
        guard let transport, accepted, closing.maySendData else { return .closed }
        worker.metrics.webSocketMessageSent()
        if let deflater, deflater.shouldCompress(length: bytes.count) {
            stageCompressed(bytes, text: text, deflater)
            return outcome(transport.webSocketTransmit(Self.none))
        }
        let headerLength = FrameEncoder.headerLength(payloadLength: bytes.count)
        worker.out.reserve(headerLength)
        worker.out.count += FrameEncoder.writeHeader(
            opcode: text ? .text : .binary, fin: true, payloadLength: bytes.count,
            into: UnsafeMutableRawBufferPointer(start: worker.out.base + worker.out.count, count: headerLength))
        if bytes.count <= 16 * 1024 {
            worker.out.append(bytes)
            return outcome(transport.webSocketTransmit(Self.none))
        }
        // A large payload leaves behind its header without being copied.
        return outcome(transport.webSocketTransmit(bytes))
    }

    /// One compressed frame (RFC 7692 §7.2.1, RSV1 set), deflated straight
    /// into the staging buffer behind room for the header, which is written
    /// once the payload length is known (the payload moves only if the
    /// header turns out shorter than guessed from the uncompressed length).
    private func stageCompressed(_ bytes: UnsafeRawBufferPointer, text: Bool, _ deflater: MessageDeflater) {
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
    }

    func sendClose(code: Int, reason: UnsafeRawBufferPointer) -> SendOutcome {
        guard let transport, accepted else { return .closed }
        let step = closing.sendClose(CloseCode(rawValue: UInt16(clamping: code)))
        switch step {
        case .writeClose(let code):
            stageClose(code: code, reason: reason)
            // Wait for the peer's close, but not forever.
            transport.webSocketArmTimer(milliseconds: min(worker.config.requestTimeoutMilliseconds, 5000))
            return outcome(transport.webSocketTransmit(Self.none))
        case .writeCloseThenCloseTransport:
            // The answer to a close of the peer's (not reached: the
            // conversation answers at once), and the end.
            perform(step, reason: reason)
            return self.transport == nil ? .closed : .done
        case .nothing, .replyWithClose, .closeTransport:
            return .closed  // a close frame is out already
        }
    }

    func pauseReading() {
        paused = true
        transport?.webSocketReadingChanged()
    }

    func resumeReading() {
        guard paused else { return }
        paused = false
        transport?.webSocketReadingChanged()
        processInput()
    }

    // MARK: - Transport events

    /// New input arrived (or the peer ended its side): decode, and restart
    /// the keepalive silence.
    func inputArrived() {
        processInput()
        if let transport, !transport.webSocketTimerBusy && !pingOutstanding { armKeepalive() }
    }

    /// Pending output fell below the low-water mark.
    func outputDrained() {
        delegate?.outputDrained()
    }

    /// All pending output is written.
    func outputFlushed() {
        armKeepalive()
    }

    /// The transport is gone (closed, reset, or finished): the application
    /// learns it (1006 unless a close was exchanged), nothing more is sent.
    func transportClosed() {
        endWebSocket(code: 1006, reason: Self.none)
        transport = nil
    }

    /// Graceful shutdown: close with 1001 (going away).
    func closeGoingAway() {
        guard let transport else { return }
        guard accepted else { transport.webSocketAbort(); return }
        _ = sendClose(code: 1001, reason: Self.none)  // nothing if our close is out already
    }

    // MARK: - Keepalive

    /// The conversation's timer: the keepalive ping after silence, then the
    /// wait for its pong; after our close, the wait for the peer's (armed by
    /// `sendClose`), so no more pings.
    func armKeepalive() {
        guard let transport, closing.maySendData, !denying, accepted else { return }
        let interval = pingOutstanding ? worker.config.wsPingTimeoutMilliseconds : worker.config.wsPingIntervalMilliseconds
        transport.webSocketArmTimer(milliseconds: interval > 0 ? interval : nil)
    }

    func timeout() {
        guard let transport else { return }
        if transport.webSocketTimerBusy || !closing.maySendData || !accepted {
            // Not draining, or the peer never answered our close.
            transport.webSocketAbort()
            return
        }
        if pingOutstanding {
            // RFC 6455 §7.4.1 1011: the keepalive pong never came, so the
            // connection fails (§7.1.7); the application sees it lost.
            let step = closing.failConnection(.internalError)
            endWebSocket(code: 1006, reason: Self.none)
            perform(step, reason: Self.none)
            return
        }
        let payload: StaticString = "peregrine"
        worker.out.reserve(2 + payload.utf8CodeUnitCount)
        worker.out.count += FrameEncoder.writePing(
            payload: UnsafeRawBufferPointer(start: payload.utf8Start, count: payload.utf8CodeUnitCount),
            into: UnsafeMutableRawBufferPointer(start: worker.out.base + worker.out.count, count: 2 + payload.utf8CodeUnitCount))
        pingOutstanding = true
        guard transport.webSocketTransmit(Self.none) else { transport.webSocketAbort(); return }
        if !transport.webSocketTimerBusy { armKeepalive() }
    }

    // MARK: - Output helpers

    /// Stages a close frame; only on `CloseHandshake`'s say-so.
    private func stageClose(code: CloseCode?, reason: UnsafeRawBufferPointer) {
        let length = FrameEncoder.closeFrameLength(code: code, reasonLength: reason.count)
        worker.out.reserve(length)
        worker.out.count += FrameEncoder.writeClose(
            code: code, reason: reason,
            into: UnsafeMutableRawBufferPointer(start: worker.out.base + worker.out.count, count: length))
    }

    /// Carries out a decision of the closing handshake that ends the
    /// conversation (the peer's close, or a failure); `reason` goes with a
    /// close frame it calls for.
    private func perform(_ step: CloseStep, reason: UnsafeRawBufferPointer) {
        switch step {
        case .writeCloseThenCloseTransport(let code):
            stageClose(code: code, reason: reason)
            transport?.webSocketReadingChanged()
            transmitAndFinish()
        case .closeTransport:
            transport?.webSocketReadingChanged()
            transmitAndFinish()
        case .replyWithClose(let code):
            // Nothing is half sent (every message leaves as one frame), so
            // the answer goes at once (RFC 6455 §5.5.1), with no reason.
            perform(closing.sendClose(code), reason: Self.none)
        case .nothing:
            break  // the handshake is over already
        case .writeClose:
            // Only the application's close in `open` gets this answer, and
            // `sendClose(code:reason:)` handles it (it waits for the peer's).
            break
        }
    }

    /// Sends what is staged (a last close frame) and ends the transport
    /// once it has left.
    func transmitAndFinish() {
        guard let transport else { worker.out.count = 0; return }
        if transport.webSocketTransmit(Self.none) {
            transport.webSocketFinish()
        } else {
            transport.webSocketAbort()
        }
    }

    private func outcome(_ transmitted: Bool) -> SendOutcome {
        guard let transport else { return .closed }
        guard transmitted else {
            transport.webSocketAbort()
            return .closed
        }
        return transport.webSocketBackpressure() ? .backpressure : .done
    }

    /// Tells the application the connection is over (once).
    func endWebSocket(code: Int, reason: UnsafeRawBufferPointer) {
        guard let d = delegate else { return }
        delegate = nil
        d.webSocketEnded(code: code, reason: reason)
    }

    // MARK: - Input

    /// Decodes and delivers the frames in the transport's input.
    func processInput() {
        decoding: while let transport, accepted, !paused, closing.mayReceiveData, var decoder {
            let input = transport.webSocketInput
            if input.isEmpty { break }
            let step: DecodeStep
            do {
                step = try decoder.decode(input)
            } catch {
                fail(error)
                return
            }
            self.decoder = decoder
            switch step {
            case .needMoreData(let consumed):
                transport.webSocketConsumed(consumed)
                break decoding
            case .event(let event, let consumed):
                handle(event, in: UnsafeRawBufferPointer(input))
                guard self.transport != nil else { return }
                transport.webSocketConsumed(consumed)
            }
        }
        // The peer ended its side with no close frame (HTTP/2 END_STREAM, the
        // TCP FIN of RFC 8441 §5) and nothing decodable is left: the
        // connection is lost, not closed.
        if let transport, !paused, closing.mayReceiveData, transport.webSocketInputEnded {
            endWebSocket(code: 1006, reason: Self.none)
            transport.webSocketAbort()
        }
    }

    private func handle(_ event: FrameEvent, in buffer: UnsafeRawBufferPointer) {
        func bytes(_ span: ByteSpan) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(rebasing: buffer[span.start..<span.end])
        }
        switch event {
        case .messageData(let piece):
            if piece.isLast { worker.metrics.webSocketMessageReceived() }
            let data = bytes(piece.span)
            if piece.isCompressed, let inflater {
                if piece.isFirst { messageIsText = piece.opcode == .text }
                do {
                    if let message = try inflater.inflate(data, isFirst: piece.isFirst, isLast: piece.isLast, text: messageIsText) {
                        delegate?.messageReceived(message, text: messageIsText)
                        inflater.release()
                    }
                } catch {
                    inflater.release()
                    fail(error)
                }
                return
            }
            if piece.isFirst && piece.isLast {
                // A whole message in one frame: no copy.
                delegate?.messageReceived(data, text: piece.opcode == .text)
                return
            }
            if piece.isFirst {
                message.removeAll(keepingCapacity: true)
                messageIsText = piece.opcode == .text
            }
            message.append(contentsOf: data)
            if piece.isLast {
                let text = messageIsText
                message.withUnsafeBytes { delegate?.messageReceived($0, text: text) }
                message.removeAll(keepingCapacity: message.capacity <= 1 << 20)
            }
        case .pingReceived(let span):
            // Our close frame is the last frame we send (RFC 6455 §5.5.1).
            guard closing.maySendData, let transport else { return }
            let payload = bytes(span)
            worker.out.reserve(2 + payload.count)
            worker.out.count += FrameEncoder.writePong(
                payload: payload,
                into: UnsafeMutableRawBufferPointer(start: worker.out.base + worker.out.count, count: 2 + payload.count))
            if !transport.webSocketTransmit(Self.none) { transport.webSocketAbort() }
        case .pongReceived:
            pingOutstanding = false
            if let transport, !transport.webSocketTimerBusy { armKeepalive() }
        case .closeReceived(let code, let reasonSpan):
            // Our close answered, or the peer's to echo (RFC 6455 §5.5.1).
            // The application learns the code, 1005 for an empty close (§7.1.5).
            let step = closing.receiveClose(code)
            guard step != .nothing else { return }
            endWebSocket(code: Int(code?.rawValue ?? 1005), reason: bytes(reasonSpan))
            perform(step, reason: Self.none)
        }
    }

    /// A protocol error from the peer fails the connection (RFC 6455
    /// §7.1.7): close with the error's code and reason, then end.
    private func fail(_ error: WebSocketError) {
        let step = closing.failConnection(error.closeCode)
        let reason = UnsafeRawBufferPointer(start: error.reason.utf8Start, count: error.reason.utf8CodeUnitCount)
        endWebSocket(code: Int(error.closeCode.rawValue), reason: reason)
        perform(step, reason: reason)
    }
}
