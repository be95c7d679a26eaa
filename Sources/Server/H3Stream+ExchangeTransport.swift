import CSys
import Core
import Gateway

/// An HTTP/3 request stream as the transport of its request: the body is
/// the DATA the connection delivered, the response is HEADERS and DATA
/// frames written into the QUIC stream. The exchange itself is written
/// once, in Exchanges (`ExchangeTransport`).
///
/// WSGI: the application runs inline; a wait for body or for send room is
/// the worker's QUIC I/O done meanwhile (`QUICService.waitForIO`), bounded
/// by the request timeout counted from the last progress. ASGI: what the
/// QUIC stream does not take now waits in `pendingOut`, and the connection
/// offers it again as the stream's send buffer frees.
extension H3Stream: ExchangeTransport {
    var now: Instant { connection.worker.now }
    var requestTimeoutMilliseconds: Int { connection.worker.config.requestTimeoutMilliseconds }
    var canSend: Bool { !reset && !connection.closed }

    // MARK: - Request body

    var bodyArrived: Bool { body.readableCount > 0 || bodyEnded }
    var bufferedBodyBytes: Int { body.readableCount }
    var bodyComplete: Bool { bodyEnded && body.readableCount == 0 }

    func takeBody(into buffer: UnsafeMutableRawBufferPointer) -> BodyTake {
        if reset { return .failed(status: 0, reason: "the stream was reset") }
        let n = copyBody(into: buffer)
        if n > 0 { return .data(n) }
        return bodyEnded ? .end : .wait
    }

    func awaitBody(milliseconds: Int) -> BodyWait {
        let before = body.readableCount
        _ = connection.service.waitForIO(milliseconds: milliseconds)
        if reset || connection.closed { return .gone }
        return body.readableCount > before || bodyEnded || exchange.bodyFailure != nil ? .progressed : .idle
    }

    func watchBody() {
        if body.readableCount > 0 || bodyEnded || exchange.bodyFailure != nil {
            delegate?.bodyReady()
            return
        }
        connection.waitForBody(self)
    }

    func attach(_ delegate: AsyncExchangeDelegate) {
        self.delegate = delegate
    }

    // MARK: - Response

    func frameInformational(status: Int, fields: UnsafeBufferPointer<ResponseField>) -> Bool {
        // RFC 9114 §4.5: HTTP/3 has no 101 (Switching Protocols).
        guard (100...199).contains(status), status != 101, !reset else { return false }
        let core = connection.core
        core.beginHeaders(streamID: id, status: status)
        for f in fields { core.addField(name: f.name, value: f.value) }
        var out = connection.takeScratch()
        if core.endHeaders(into: &out) { emit(out) }
        connection.giveScratch(out)
        return true
    }

    /// HTTP/3 carries trailers after any response (a HEADERS frame after
    /// the DATA, RFC 9114 §4.1).
    func frameHead(_ head: ResponseHead, plan: HTTPExchange.ResponsePlan, trailers: Bool) -> Bool {
        writeHead(head, plan: plan, endStream: false)
        return trailers
    }

    func frameBody(_ bytes: UnsafeRawBufferPointer, end: Bool, blocking: Bool) -> Bool {
        blocking ? frameBodyWaiting(bytes, end: end) : frameBodyQueueing(bytes, end: end)
    }

    /// Frames all of `bytes` now (what the QUIC stream does not take waits
    /// in `pendingOut`; the sender is held back by `pushOutput`).
    private func frameBodyQueueing(_ bytes: UnsafeRawBufferPointer, end: Bool) -> Bool {
        guard !reset else { return false }
        _ = frame(bytes, force: true)
        if end { endResponse() }
        return true
    }

    /// WSGI: frames all of `bytes`, doing the worker's QUIC I/O while the
    /// stream's send buffer is full; gives up (H3_REQUEST_CANCELLED) after
    /// the request timeout without progress.
    private func frameBodyWaiting(_ bytes: UnsafeRawBufferPointer, end: Bool) -> Bool {
        var offset = 0
        var lastProgress = now
        let timeout = requestTimeoutMilliseconds
        while offset < bytes.count {
            if reset || connection.closed { return false }
            if hasPendingOutput { pushPending() }
            let n = hasPendingOutput ? 0 : frame(UnsafeRawBufferPointer(rebasing: bytes[offset...]), force: false)
            offset += n
            if offset == bytes.count { break }
            if n > 0 {
                lastProgress = now
                connection.service.flush()
                continue
            }
            let waited = now.milliseconds(since: lastProgress)
            if waited >= timeout {
                connection.resetStream(self)
                return false
            }
            _ = connection.service.waitForIO(milliseconds: timeout - waited)
        }
        if end { endResponse() }
        return !reset
    }

    func frameTrailers(_ fields: UnsafeBufferPointer<ResponseField>) {
        pendingTrailers = fields.map { f in (name: Array(f.name), value: Array(f.value)) }
        endAfterPending = true
        pushPending()
        if !responseEnded { connection.enqueueForSending(self) }
    }

    /// WSGI file wrappers over HTTP/3 are read by the gateway and sent as
    /// body blocks (there is no sendfile into QUIC packets).
    var sendsFiles: Bool { false }

    func transmitFile(fd: Int32, offset: Int64, count: Int64) -> Int64 { 0 }

    /// The file is read into DATA frames as the stream's send buffer frees
    /// (`pushPending`).
    func queueFile(fd file: Int32, offset: Int64, count: Int64, end: Bool) {
        pendingFile = PendingFile(fd: file, offset: offset, remaining: count)
        if end { endAfterPending = true }
        pushPending()
        if hasPendingOutput || (endAfterPending && !responseEnded) { connection.enqueueForSending(self) }
    }

    func flush(blocking: Bool) -> Bool {
        if blocking {
            connection.service.flush()
        } else {
            connection.service.scheduleFlush()
        }
        return canSend
    }

    /// Lets the loop round send the datagrams, and asks the sender to wait
    /// while this stream has more than the high-water mark pending.
    func pushOutput() -> SendOutcome {
        connection.checkDone(self)
        if reset || connection.closed { return .closed }
        connection.service.scheduleFlush()
        if pendingOutputBytes > H3Connection.highWater {
            connection.waitForDrain(self)
            return .backpressure
        }
        return .done
    }

    /// Resets the stream: the client sees the response cut off.
    func abort() {
        guard canSend else { return }
        connection.resetStream(self)
        connection.service.flush()
    }
}
