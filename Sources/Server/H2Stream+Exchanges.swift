import CSys
import Core
import Gateway
import HTTP2

/// WSGI over an HTTP/2 stream: the application runs inline, so a read
/// waits for DATA and a write waits for window or socket room — both by
/// doing the connection's I/O meanwhile (`H2Session.waitForIO`), bounded by
/// the request timeout counted from the last progress. The worker's `now`
/// reads the clock at each use while the application runs.
extension H2Stream: Exchange {
    func readBody(into buffer: UnsafeMutableRawBufferPointer) -> BodyRead {
        if !reset { continueIfExpected() }
        var lastProgress = session.worker.now
        while true {
            if reset { return .failed("the stream was reset", status: 0) }
            if exchange.bodyFailure == 413 { return .tooLarge }
            let n = takeBody(into: buffer)
            if n > 0 {
                session.flush()
                return .data(n)
            }
            if bodyEnded { return .end }
            let timeout = session.worker.config.requestTimeoutMilliseconds
            let waited = session.worker.now.milliseconds(since: lastProgress)
            if waited >= timeout || !session.waitForIO(milliseconds: timeout - waited) {
                if reset || session.closed { return .failed("the connection failed", status: 0) }
                if session.worker.now.milliseconds(since: lastProgress) >= timeout {
                    return .failed("timed out waiting for the request body", status: 408)
                }
            }
            if body.readableCount > 0 { lastProgress = session.worker.now }
        }
    }

    func sendHead(_ head: ResponseHead) -> Bool {
        guard !reset, !session.closed else { return false }
        encodeHead(head, endStream: false)
        return true
    }

    func sendBody(_ given: UnsafeRawBufferPointer, flush: Bool) -> Bool {
        guard !reset, !session.closed else { return false }
        // Held to the declared length (the exchange drops the excess).
        let bytes = bodyless ? given : admitted(given)
        if bodyless || bytes.isEmpty { return flush ? session.flush() : true }
        var offset = 0
        var lastProgress = session.worker.now
        let timeout = session.worker.config.requestTimeoutMilliseconds
        while offset < bytes.count {
            let n = frame(UnsafeRawBufferPointer(rebasing: bytes[offset...]), end: false)
            offset += n
            exchange.countOut(n)
            if offset == bytes.count { break }
            if n > 0 { lastProgress = session.worker.now }
            // Window or socket room is short: write what is framed, then
            // wait for either to open.
            guard session.flush() else { return false }
            if outputRoomOrWindowOpen { continue }
            let waited = session.worker.now.milliseconds(since: lastProgress)
            if waited >= timeout { session.resetStream(self, code: .cancel); return false }
            _ = session.waitForIO(milliseconds: timeout - waited)
            if reset || session.closed { return false }
        }
        return flush ? session.flush() : true
    }

    /// The core could take more of this stream's data now.
    private var outputRoomOrWindowOpen: Bool {
        session.outputRoom > 0 && session.core.sendWindow(streamID: id) > 0
    }

    func sendFile(fd: Int32, offset: Int64, count: Int64) -> Int64? {
        nil  // the gateway reads the file and sends it as body blocks
    }

    func finish() -> Bool {
        guard !reset, !session.closed else { return false }
        // A body short of its declared length cannot be completed: the
        // stream is reset instead, so the client sees it cut off.
        if exchange.bodyEndedShort() {
            abort()
            return false
        }
        if !responseEnded { _ = frame(UnsafeRawBufferPointer(start: nil, count: 0), end: true) }
        return session.flush()
    }

    func abort() {
        guard !reset, !session.closed else { return }
        session.resetStream(self, code: .internalError)
        session.afterIO()
    }
}

/// ASGI over an HTTP/2 stream: nothing blocks. Body reads give back window
/// as they take bytes; writes queue what the windows do not take now and
/// report backpressure above the high-water mark.
extension H2Stream: AsyncExchange {
    func attach(_ delegate: AsyncExchangeDelegate) {
        self.delegate = delegate
    }

    var bufferedBodyBytes: Int { body.readableCount }
    var bodyComplete: Bool { bodyEnded && body.readableCount == 0 }

    func pollBody(into buffer: UnsafeMutableRawBufferPointer) -> BodyPoll {
        if reset { return .failed(status: 0) }
        if let failure = exchange.bodyFailure { return .failed(status: failure) }
        let n = takeBody(into: buffer)
        if n > 0 {
            // The WINDOW_UPDATE leaves with this iteration's writes.
            session.scheduleFlush()
            return .data(n)
        }
        return bodyEnded ? .end : .wait
    }

    func wantBody() {
        guard !reset else { return }
        continueIfExpected()
        if body.readableCount > 0 || bodyEnded || exchange.bodyFailure != nil {
            delegate?.bodyReady()
            return
        }
        session.waitForBody(self)
    }

    func sendInformational(status: Int, fields: UnsafeBufferPointer<ResponseField>) -> SendOutcome {
        guard !reset, !session.closed else { return .closed }
        guard !headSent else { return .done }
        encodeInformational(status: status, fields: fields)
        return outcome()
    }

    func sendHead(_ head: ResponseHead, trailers: Bool) -> SendOutcome {
        guard !reset, !session.closed else { return .closed }
        trailersAnnounced = trailers
        encodeHead(head, endStream: false)
        return .done
    }

    func sendBody(_ bytes: UnsafeRawBufferPointer, final: Bool) -> SendOutcome {
        guard !reset, !session.closed else { return .closed }
        let data = bodyless ? UnsafeRawBufferPointer(start: nil, count: 0) : admitted(bytes)
        // Short of the declared length: what was given is framed, then the
        // stream is reset (see the WSGI finish). The send itself succeeded.
        let short = final && exchange.bodyEndedShort()
        let end = final && !trailersAnnounced && !short
        if end { endAfterPending = true }
        if !hasPendingOutput {
            let n = data.isEmpty && !end ? 0 : frame(data, end: end)
            exchange.countOut(n)
            if n < data.count {
                pendingOut.appendGrowing(UnsafeRawBufferPointer(rebasing: data[n...]))
                exchange.countOut(data.count - n)
                session.enqueueForSending(self)
            } else if end && !responseEnded {
                session.enqueueForSending(self)
            }
        } else {
            if !data.isEmpty { pendingOut.appendGrowing(data) }
            exchange.countOut(data.count)
        }
        if short {
            session.flush()
            abort()
            return .done
        }
        return outcome()
    }

    func sendFile(fd file: Int32, offset: Int64, count: Int64) -> SendOutcome {
        guard !reset, !session.closed else { _ = csys_close(file); return .closed }
        // The file is the rest of the body, held to the declared length.
        let count = bodyless ? count : exchange.admitBody(count)
        if exchange.bodyEndedShort() {
            _ = csys_close(file)
            abort()
            return .done
        }
        if bodyless || count == 0 {
            _ = csys_close(file)
        } else {
            pendingFile = PendingFile(fd: file, offset: offset, remaining: count)
        }
        if !trailersAnnounced { endAfterPending = true }
        pushPending()
        if hasPendingOutput || (endAfterPending && !responseEnded) { session.enqueueForSending(self) }
        return outcome()
    }

    func sendTrailers(_ fields: UnsafeBufferPointer<ResponseField>) -> SendOutcome {
        guard !reset, !session.closed else { return .closed }
        pendingTrailers = fields.map { f in (name: Array(f.name), value: Array(f.value)) }
        endAfterPending = true
        pushPending()
        if !responseEnded { session.enqueueForSending(self) }
        return outcome()
    }

    /// The part of `bytes` the declared length admits.
    private func admitted(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        guard !bytes.isEmpty else { return bytes }
        let n = Int(exchange.admitBody(Int64(bytes.count)))
        return n == bytes.count ? bytes : UnsafeRawBufferPointer(rebasing: bytes[0..<n])
    }

    /// After queueing output: write, end the stream if its response is
    /// complete, and say whether the sender should wait.
    private func outcome() -> SendOutcome {
        session.checkDone(self)
        if reset || session.closed { return .closed }
        session.scheduleFlush()
        if pendingOutputBytes > H2Session.highWater || session.core.output.readableCount > H2Session.highWater {
            session.waitForDrain(self)
            return .backpressure
        }
        return .done
    }
}
