import CSys
import Core
import Gateway

/// A WSGI request running on a pool thread, as the loop thread sees it: it
/// performs the thread's operations on the request's transport and answers
/// them. The transport is driven through its non-blocking `AsyncExchange`
/// side, the one ASGI uses, so every per-request decision (100-continue,
/// the 408 after --request-timeout without body progress, --max-body,
/// bytes past the declared length, the body end, sendfile, the byte
/// counts) is the exchange layer's, written once; only the waiting differs:
/// where ASGI resolves a future, this answers the waiting thread.
///
/// An operation is answered at once, or parked until the transport reports:
///
///     readBody ── data / end / failure ──────────────▶ answered
///        └── nothing buffered: wantBody ── bodyReady ──▶ read again
///     sendBody ── in pieces of `piece` bytes ──▶ answered
///        └── backpressure ── outputDrained ──▶ next piece
///     sendFile ── queued as the rest of the body ── exchangeEnded ──▶ answered
///     exchangeEnded (disconnected) ──▶ a parked operation fails; later ones fail at once
///
/// So a slow reader holds the pool thread in its `write()` or iteration,
/// with at most the transport's high-water mark (64 KiB) plus one piece
/// buffered for it: memory does not grow with what the application sends.
///
/// One object per request: after the thread's Python work is over the
/// transport may still be writing the response's last bytes and will
/// report the end here, while the thread already runs another request.
final class PooledRequest: AsyncExchangeDelegate {
    /// The most of one body block handed to the transport at a time.
    static let piece = 64 * 1024

    private let thread: WSGIPoolThread
    /// Until the exchange ends; never touched after.
    private var transport: (any ExchangeTransport)?
    private var disconnected = false
    /// The end of the body has been framed (finish, a file, or the block
    /// that reached the declared length).
    private var responseFramed = false
    /// The exchange as it stood when a block reached the declared length:
    /// what later blocks are held to (the transport may carry another
    /// request by then).
    private var completedExchange: HTTPExchange?
    private var parked = Parked.nothing

    private enum Parked {
        case nothing
        case read(UnsafeMutableRawBufferPointer)
        case send(UnsafeRawBufferPointer, offset: Int)
        case file(count: Int64)
    }

    init(thread: WSGIPoolThread, transport: any ExchangeTransport) {
        self.thread = thread
        self.transport = transport
    }

    private func answer(_ a: PoolAnswer) {
        parked = .nothing
        thread.answer = a
        csys_slot_signal_post(thread.signal)
    }

    // MARK: - Operations

    /// The thread's pending operation (not `.done`).
    func perform() {
        let op = thread.operation
        if let head = thread.pendingHead {
            thread.pendingHead = nil
            // Staged; it leaves with the operation's own bytes.
            if let t = transport {
                _ = t.sendHead(head, trailers: false)
                // A read sends nothing of its own: the head goes out now
                // (the other operations push it with their bytes).
                if case .readBody = op { _ = t.pushOutput() }
            }
        }
        switch op {
        case .readBody(let buffer):
            read(into: buffer)
        case .sendBody(let bytes):
            send(bytes, from: 0)
        case .sendFile(let fd, let offset, let count):
            sendFile(fd: fd, offset: offset, count: count)
        case .finish:
            finish()
        case .abort:
            transport?.abort()
            answer(.sent(true))
        case .done:
            break
        }
    }

    private func read(into buffer: UnsafeMutableRawBufferPointer) {
        guard let t = transport else {
            answer(.body(.failed("the client went away mid-body", status: 0)))
            return
        }
        switch t.pollBody(into: buffer) {
        case .data(let n):
            answer(.body(.data(n)))
        case .end:
            answer(.body(.end))
        case .failed(let status):
            answer(.body(PooledRequest.bodyRead(failure: status)))
        case .wait:
            parked = .read(buffer)
            // Reads on (100 Continue first, if the client waits for it);
            // `bodyReady` or `exchangeEnded` follows, maybe at once.
            t.wantBody()
        }
    }

    static func bodyRead(failure status: Int) -> BodyRead {
        switch status {
        case 413: return .tooLarge
        case 408: return .failed("timed out waiting for the request body", status: 408)
        case 0: return .failed("the client went away mid-body", status: 0)
        default: return .failed("the request body cannot be read", status: status)
        }
    }

    private func send(_ bytes: UnsafeRawBufferPointer, from start: Int) {
        var offset = start
        repeat {
            if completedExchange != nil {
                // Past the declared length: dropped, and logged once, as
                // the exchange does.
                _ = completedExchange!.admitBody(Int64(bytes.count - offset))
                answer(.sent(true))
                return
            }
            guard let t = transport else { answer(.sent(false)); return }
            let exchange = t.exchange
            var n = min(bytes.count - offset, PooledRequest.piece)
            // The piece that reaches the declared length ends the response
            // now, not at the gateway's `finish`: the client has what it
            // waited for and may close at once, which must not read as
            // leaving mid-response.
            let final = PooledRequest.completes(exchange, adding: n)
            if final, !exchange.bodyless, let length = exchange.responseLength {
                n = Int(length - exchange.bodyAdmitted)  // the rest is excess, below
            }
            let outcome = t.sendBody(UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + n]), final: final)
            offset += n
            if final {
                // Ending the response may have moved the connection on to
                // its next request: this one's bookkeeping is kept here.
                var kept = exchange
                if !kept.bodyless { _ = kept.admitBody(Int64(n)) }
                completedExchange = kept
                responseFramed = true
                thread.responseEnded = true
                if offset < bytes.count { _ = completedExchange!.admitBody(Int64(bytes.count - offset)) }
                answer(.sent(outcome != .closed))
                return
            }
            switch outcome {
            case .closed:
                answer(.sent(false))
                return
            case .backpressure:
                // Answered (or the next piece given) once the output drains.
                parked = .send(bytes, offset: offset)
                return
            case .done:
                continue
            }
        } while offset < bytes.count
        answer(.sent(true))
    }

    /// The response body is complete with `n` more bytes: its declared
    /// length is reached, or it has none to carry (HEAD, 204, 304).
    static func completes(_ exchange: HTTPExchange, adding n: Int) -> Bool {
        if exchange.bodyless { return true }
        guard let length = exchange.responseLength else { return false }
        return exchange.bodyAdmitted + Int64(n) >= length
    }

    private func sendFile(fd: Int32, offset: Int64, count: Int64) {
        guard let t = transport else { answer(.fileSent(0)); return }
        // The transport takes ownership of the descriptor it is given; the
        // thread keeps its own.
        let own = csys_dup(fd)
        guard own >= 0 else { answer(.fileSent(0)); return }
        responseFramed = true
        thread.responseEnded = true
        parked = .file(count: count)
        if case .closed = t.sendFile(fd: own, offset: offset, count: count), case .file = parked {
            answer(.fileSent(0))
        }
        // Otherwise answered when the exchange ends (maybe already has).
    }

    private func finish() {
        guard let t = transport, !responseFramed else {
            answer(.sent(responseFramed && !disconnected))
            return
        }
        responseFramed = true
        // A body short of its declared length is cut off here (the
        // exchange's decision).
        if case .closed = t.sendBody(UnsafeRawBufferPointer(start: nil, count: 0), final: true) {
            answer(.sent(false))
        } else {
            answer(.sent(!disconnected))
        }
    }

    /// The thread's Python work for this request is over. A response that
    /// was never completed (the application raised after the head, or the
    /// gateway gave up on a lost connection) is cut off, as an inline
    /// request's connection is closed.
    func pythonFinished() {
        if !responseFramed, let t = transport { t.abort() }
    }

    // MARK: - AsyncExchangeDelegate

    func bodyReady() {
        guard case .read(let buffer) = parked else { return }
        parked = .nothing
        read(into: buffer)
    }

    func outputDrained() {
        guard case .send(let bytes, let offset) = parked else { return }
        parked = .nothing
        if offset >= bytes.count { answer(.sent(transport != nil)); return }
        send(bytes, from: offset)
    }

    func exchangeEnded(disconnected: Bool) {
        transport = nil
        self.disconnected = disconnected
        switch parked {
        case .nothing:
            break
        case .read:
            answer(.body(.failed("the client went away mid-body", status: 0)))
        case .send:
            answer(.sent(false))
        case .file(let count):
            answer(.fileSent(disconnected ? 0 : count))
        }
    }
}
