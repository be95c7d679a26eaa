import Core

/// The blocking exchange (WSGI: the application runs inline), written once
/// for every transport. Reads wait through `awaitBody`, bounded by
/// --request-timeout counted from the last bytes that arrived; writes wait
/// inside the transport's `frameBody(blocking: true)` and `flush`.
extension ExchangeTransport {
    @inlinable
    public func readBody(into buffer: UnsafeMutableRawBufferPointer) -> BodyRead {
        if let failure = exchange.bodyFailure { return Self.bodyRead(failure: failure) }
        if bodyComplete { return .end }
        guard continueIfNeeded(blocking: true) else {
            exchange.failBody(status: 0)
            return .failed("the connection failed", status: 0)
        }
        let timeout = requestTimeoutMilliseconds
        var lastProgress = now
        while true {
            // A failure found while waiting (say, DATA past --max-body).
            if let failure = exchange.bodyFailure { return Self.bodyRead(failure: failure) }
            switch takeBody(into: buffer) {
            case .data(let n):
                if exchange.bodyWaitEnds(now: now, graceMilliseconds: timeout) {
                    return .failed("the request body arrives slower than --min-body-rate", status: 408)
                }
                return .data(n)
            case .end:
                return .end
            case .failed(let status, let reason):
                exchange.failBody(status: status)
                return status == 413 ? .tooLarge : .failed(reason, status: status)
            case .wait:
                exchange.bodyWaitBegins(now: now)
            }
            let waited = now.milliseconds(since: lastProgress)
            if waited >= timeout {
                // RFC 9110 §15.5.9: the client did not send in time.
                exchange.failBody(status: 408)
                return .failed("timed out waiting for the request body", status: 408)
            }
            switch awaitBody(milliseconds: timeout - waited) {
            case .progressed:
                lastProgress = now
            case .idle:
                continue
            case .gone:
                exchange.failBody(status: 0)
                return .failed("the client went away mid-body", status: 0)
            }
        }
    }

    @inlinable
    static func bodyRead(failure: Int) -> BodyRead {
        failure == 413 ? .tooLarge : .failed("the request body cannot be read", status: failure)
    }

    @inlinable
    public func sendHead(_ head: ResponseHead) -> Bool {
        guard canSend else { return false }
        let plan = exchange.beginResponse(head)
        _ = frameHead(head, plan: plan, trailers: false)
        return true
    }

    @inlinable
    public func sendBody(_ given: UnsafeRawBufferPointer, flush wanted: Bool) -> Bool {
        guard canSend else { return false }
        let bytes = admitted(given)
        if !bytes.isEmpty {
            exchange.countOut(bytes.count)
            guard frameBody(bytes, end: false, blocking: true) else { return false }
        }
        return wanted ? flush(blocking: true) : true
    }

    /// Returns the bytes of the file dealt with: sent, or dropped as past
    /// the declared length (or a HEAD response's); nil when the transport
    /// cannot send files.
    @inlinable
    public func sendFile(fd: Int32, offset: Int64, count asked: Int64) -> Int64? {
        guard sendsFiles else { return nil }
        guard !exchange.bodyless else { return asked }
        let count = exchange.admitBody(asked)
        guard count > 0 else { return asked }
        let sent = transmitFile(fd: fd, offset: offset, count: count)
        return sent == count ? asked : sent
    }

    @inlinable
    public func finish() -> Bool {
        guard canSend else { return false }
        // A body short of its declared length cannot be completed: what was
        // given goes out, then the transport cuts the response off (closes
        // the connection, resets the stream) so the client can tell.
        if exchange.bodyEndedShort() {
            _ = flush(blocking: true)
            abort()
            return false
        }
        guard frameBody(UnsafeRawBufferPointer(start: nil, count: 0), end: true, blocking: true) else { return false }
        return flush(blocking: true)
    }
}
