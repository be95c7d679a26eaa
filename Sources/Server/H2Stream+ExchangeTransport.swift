import CSys
import Core
import Gateway
import HTTP2

/// An HTTP/2 stream as the transport of its request: the body is the DATA
/// the session delivered (window given back as it is taken), the response
/// is HEADERS and DATA frames in the session's output. The exchange itself
/// (`Exchange` for WSGI, `AsyncExchange` for ASGI) is written once, in
/// Exchanges (`ExchangeTransport`).
///
/// WSGI: the application runs inline, so a wait for body or for window is
/// the connection's I/O done meanwhile (`H2Session.waitForIO`), bounded by
/// the request timeout counted from the last progress. ASGI: what the
/// windows do not take now waits in `pendingOut`, and the session offers it
/// again as they open.
extension H2Stream: ExchangeTransport {
    var now: Instant { session.worker.now }
    var requestTimeoutMilliseconds: Int { session.worker.config.requestTimeoutMilliseconds }
    var canSend: Bool { !reset && !session.closed }

    // MARK: - Request body

    var bodyArrived: Bool { body.readableCount > 0 || bodyEnded }
    var bufferedBodyBytes: Int { body.readableCount }
    var bodyComplete: Bool { bodyEnded && body.readableCount == 0 }

    func takeBody(into buffer: UnsafeMutableRawBufferPointer) -> BodyTake {
        if reset { return .failed(status: 0, reason: "the stream was reset") }
        let n = copyBody(into: buffer)
        if n > 0 {
            // The WINDOW_UPDATE leaves now (WSGI) or with this loop round's
            // writes (ASGI).
            if session.worker.asgi == nil { session.flush() } else { session.scheduleFlush() }
            return .data(n)
        }
        return bodyEnded ? .end : .wait
    }

    func awaitBody(milliseconds: Int) -> BodyWait {
        let before = body.readableCount
        _ = session.waitForIO(milliseconds: milliseconds)
        if reset || session.closed { return .gone }
        return body.readableCount > before || bodyEnded || exchange.bodyFailure != nil ? .progressed : .idle
    }

    func watchBody() {
        if body.readableCount > 0 || bodyEnded || exchange.bodyFailure != nil {
            delegate?.bodyReady()
            return
        }
        session.waitForBody(self)
    }

    func attach(_ delegate: AsyncExchangeDelegate) {
        self.delegate = delegate
    }

    // MARK: - Response

    func frameInformational(status: Int, fields: UnsafeBufferPointer<ResponseField>) -> Bool {
        // RFC 9113 §8.1.1: HTTP/2 has no 101 (Switching Protocols).
        guard (100...199).contains(status), status != 101 else { return false }
        session.core.beginHeaders(streamID: id, status: status)
        for f in fields { session.core.addField(name: f.name, value: f.value) }
        session.core.endHeaders(endStream: false)
        return true
    }

    /// HTTP/2 carries trailers after any response (a HEADERS frame that
    /// ends the stream, RFC 9113 §8.1).
    func frameHead(_ head: ResponseHead, plan: HTTPExchange.ResponsePlan, trailers: Bool) -> Bool {
        writeHead(head, plan: plan, endStream: false)
        return trailers
    }

    func frameBody(_ bytes: UnsafeRawBufferPointer, end: Bool, blocking: Bool) -> Bool {
        blocking ? frameBodyWaiting(bytes, end: end) : frameBodyQueueing(bytes, end: end)
    }

    /// Frames what the windows and the output take now; the rest waits in
    /// `pendingOut` for the session to offer it again.
    private func frameBodyQueueing(_ bytes: UnsafeRawBufferPointer, end: Bool) -> Bool {
        if end { endAfterPending = true }
        if hasPendingOutput {
            if !bytes.isEmpty { pendingOut.appendGrowing(bytes) }
            return true
        }
        let n = frame(bytes, end: end)
        if n < bytes.count {
            pendingOut.appendGrowing(UnsafeRawBufferPointer(rebasing: bytes[n...]))
            session.enqueueForSending(self)
        } else if end && !responseEnded {
            session.enqueueForSending(self)
        }
        return true
    }

    /// WSGI: frames all of `bytes`, doing the connection's I/O while the
    /// windows or the socket are full; gives up (CANCEL) after the request
    /// timeout without progress.
    private func frameBodyWaiting(_ bytes: UnsafeRawBufferPointer, end: Bool) -> Bool {
        if bytes.isEmpty {
            if end && !responseEnded { _ = frame(bytes, end: true) }
            return true
        }
        var offset = 0
        var lastProgress = now
        let timeout = requestTimeoutMilliseconds
        while true {
            let n = frame(UnsafeRawBufferPointer(rebasing: bytes[offset...]), end: end)
            offset += n
            if offset == bytes.count { return true }
            if n > 0 { lastProgress = now }
            // Window or socket room is short: write what is framed, then
            // wait for either to open.
            guard session.flush() else { return false }
            if outputRoomOrWindowOpen { continue }
            let waited = now.milliseconds(since: lastProgress)
            if waited >= timeout { session.resetStream(self, code: .cancel); return false }
            _ = session.waitForIO(milliseconds: timeout - waited)
            if reset || session.closed { return false }
        }
    }

    /// The core could take more of this stream's data now.
    private var outputRoomOrWindowOpen: Bool {
        session.outputRoom > 0 && session.core.sendWindow(streamID: id) > 0
    }

    func frameTrailers(_ fields: UnsafeBufferPointer<ResponseField>) {
        pendingTrailers = fields.map { f in (name: Array(f.name), value: Array(f.value)) }
        endAfterPending = true
        pushPending()
        if !responseEnded { session.enqueueForSending(self) }
    }

    /// WSGI file wrappers over HTTP/2 are read by the gateway and sent as
    /// body blocks (there is no sendfile into frames).
    var sendsFiles: Bool { false }

    func transmitFile(fd: Int32, offset: Int64, count: Int64) -> Int64 { 0 }

    /// The file is read into DATA frames as the windows open (`pushPending`).
    func queueFile(fd file: Int32, offset: Int64, count: Int64, end: Bool) {
        pendingFile = PendingFile(fd: file, offset: offset, remaining: count)
        if end { endAfterPending = true }
        pushPending()
        if hasPendingOutput || (endAfterPending && !responseEnded) { session.enqueueForSending(self) }
    }

    func flush(blocking: Bool) -> Bool {
        if blocking { return session.flush() }
        // Held for the call: the flush may find the client gone, and the
        // connection's teardown releases the session (see `pushOutput`).
        let session = self.session
        defer { withExtendedLifetime(session) {} }
        session.requestFlush()
        return canSend
    }

    /// Ends the stream if its response is complete, lets the loop round
    /// write the frames, and asks the sender to wait above the high-water
    /// mark (of this stream's pending bytes or of the connection's output).
    ///
    /// The session is held for the call: `scheduleFlush` writes at once
    /// when the output is past its high-water mark, a write that finds the
    /// client gone (RST) closes the connection, and closing releases the
    /// session, which `session` (unowned) would then read freed. Called
    /// from a WSGI pool thread's doorbell or an ASGI `send()`, nothing else
    /// on the stack holds it (a reset mid-response crashed the worker:
    /// tests/e2e/test_abrupt_clients.py).
    func pushOutput() -> SendOutcome {
        let session = self.session
        defer { withExtendedLifetime(session) {} }
        session.checkDone(self)
        if reset || session.closed { return .closed }
        session.scheduleFlush()
        if reset || session.closed { return .closed }
        if pendingOutputBytes > H2Session.highWater || session.core.output.readableCount > H2Session.highWater {
            session.waitForDrain(self)
            return .backpressure
        }
        return .done
    }

    /// Resets the stream (INTERNAL_ERROR): the client sees the response cut off.
    func abort() {
        guard canSend else { return }
        session.resetStream(self, code: .internalError)
        session.afterIO()
    }
}
