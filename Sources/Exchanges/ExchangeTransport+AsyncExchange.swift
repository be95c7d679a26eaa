import Core

/// The non-blocking exchange (ASGI), written once for every transport.
/// Nothing here waits: a read with nothing buffered reports `.wait` and the
/// transport calls `bodyReady` later (`watchBody`); writes queue what cannot
/// go now and report backpressure (`pushOutput`).
extension ExchangeTransport {
    @inlinable
    public func pollBody(into buffer: UnsafeMutableRawBufferPointer) -> BodyPoll {
        if let failure = exchange.bodyFailure { return .failed(status: failure) }
        switch takeBody(into: buffer) {
        case .data(let n):
            if exchange.bodyWaitEnds(now: now, graceMilliseconds: requestTimeoutMilliseconds) { return .failed(status: 408) }
            return .data(n)
        case .end:
            return .end
        case .wait:
            return .wait
        case .failed(let status, _):
            exchange.failBody(status: status)
            return .failed(status: status)
        }
    }

    @inlinable
    public func wantBody() {
        guard canSend, continueIfNeeded(blocking: false) else { return }
        exchange.bodyWaitBegins(now: now)
        watchBody()
    }

    @inlinable
    public func sendInformational(status: Int, fields: UnsafeBufferPointer<ResponseField>) -> SendOutcome {
        guard canSend else { return .closed }
        // Too late once the final head is on its way.
        guard !exchange.headSent, frameInformational(status: status, fields: fields) else { return .done }
        return pushOutput()
    }

    @inlinable
    public func sendHead(_ head: ResponseHead, trailers: Bool) -> SendOutcome {
        guard canSend else { return .closed }
        let plan = exchange.beginResponse(head)
        if frameHead(head, plan: plan, trailers: trailers) { exchange.carryTrailers() }
        return .done
    }

    @inlinable
    public func sendBody(_ given: UnsafeRawBufferPointer, final: Bool) -> SendOutcome {
        guard canSend else { return .closed }
        let bytes = admitted(given)
        // Short of the declared length (see the blocking `finish`): what
        // was given is framed, then the response is cut off. The send
        // itself succeeded.
        let short = final && exchange.bodyEndedShort()
        let end = final && !short && !exchange.trailersFollow
        if !bytes.isEmpty || end {
            exchange.countOut(bytes.count)
            guard frameBody(bytes, end: end, blocking: false) else { return .closed }
        }
        if short {
            _ = flush(blocking: false)
            abort()
            return .done
        }
        if end { exchange.completeResponse() }
        return pushOutput()
    }

    @inlinable
    public func sendFile(fd: Int32, offset: Int64, count asked: Int64) -> SendOutcome {
        guard canSend else { Files.close(fd); return .closed }
        // The file is the rest of the body, held to the declared length.
        let count = exchange.bodyless ? 0 : exchange.admitBody(asked)
        if exchange.bodyEndedShort() {
            Files.close(fd)
            abort()
            return .done
        }
        let end = !exchange.trailersFollow
        if count > 0 {
            queueFile(fd: fd, offset: offset, count: count, end: end)
        } else {
            Files.close(fd)
            if end { guard frameBody(UnsafeRawBufferPointer(start: nil, count: 0), end: true, blocking: false) else { return .closed } }
        }
        if end { exchange.completeResponse() }
        return pushOutput()
    }

    @inlinable
    public func sendTrailers(_ fields: UnsafeBufferPointer<ResponseField>) -> SendOutcome {
        guard canSend else { return .closed }
        frameTrailers(fields)
        exchange.completeResponse()
        return pushOutput()
    }
}
