import CSys
import Core
import Gateway
import HTTP1

/// The non-blocking `AsyncExchange` an ASGI request runs against. Nothing
/// here waits: body reads report `.wait` and resume through `bodyReady`,
/// writes queue what the socket does not take and report backpressure.
extension H1Connection: AsyncExchange {
    func attach(_ delegate: AsyncExchangeDelegate) {
        asyncRequest.delegate = delegate
    }

    var bodyComplete: Bool { requestBody.complete }

    func pollBody(into buffer: UnsafeMutableRawBufferPointer) -> BodyPoll {
        if let failure = exchange.bodyFailure { return .failed(status: failure) }
        switch copyBody(into: buffer) {
        case .success(let n)?:
            return .data(n)
        case .failure(let error)?:
            exchange.failBody(status: error.status)
            return .failed(status: error.status)
        case nil:
            return requestBody.complete ? .end : .wait
        }
    }

    func wantBody() {
        guard phase == .request, !asyncRequest.bodyWanted else { return }
        if !continueIfExpected() { clientGone(); return }
        asyncRequest.bodyWanted = true
        worker.arm(self, milliseconds: worker.config.requestTimeoutMilliseconds)
        updateInterest()
    }

    /// Readable while the application waits for body.
    func readForBody() {
        switch fill() {
        case .data:
            asyncRequest.bodyWanted = false
            if !hasPendingOutput { worker.disarm(self) }
            updateInterest()
            asyncRequest.delegate?.bodyReady()
        case .again:
            return
        case .eof, .error:
            keepAlive = false
            exchange.failBody(status: 0)
            clientGone()
        }
    }

    func sendInformational(status: Int, fields: UnsafeBufferPointer<ResponseField>) -> SendOutcome {
        guard phase == .request, !writeFailed else { return .closed }
        guard !headSent, H1ResponseFraming.allowsInformational(to: version) else { return .done }
        let head = H1InformationalHead(status: status, fields: fields)
        worker.out.write(head.length) { head.write(into: $0) }
        return outcome(transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: false))
    }

    func sendHead(_ head: ResponseHead, trailers: Bool) -> SendOutcome {
        guard phase == .request, !writeFailed else { return .closed }
        stageHead(head, trailers: trailers)
        return .done
    }

    func sendBody(_ bytes: UnsafeRawBufferPointer, final: Bool) -> SendOutcome {
        guard phase == .request, !writeFailed else { worker.out.count = 0; return .closed }
        if final {
            guard emitBody(bytes, flush: false, blocking: false) else { return .closed }
            if exchange.bodyEndedShort() {
                // Cut off (see the WSGI finish): what was given goes out,
                // then the connection closes. The send itself succeeded.
                _ = transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: false)
                abort()
                return .done
            }
            if trailersOut {
                return outcome(transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: false))
            }
            stageBodyEnd(trailers: nil)
            asyncRequest.responseComplete = true
        } else {
            guard emitBody(bytes, flush: false, blocking: false) else { return .closed }
        }
        return outcome(transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: false, final: asyncRequest.responseComplete))
    }

    func sendFile(fd file: Int32, offset: Int64, count: Int64) -> SendOutcome {
        guard phase == .request, !writeFailed else { _ = csys_close(file); worker.out.count = 0; return .closed }
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
            output.file = PendingFile(fd: file, offset: offset, remaining: count)
        }
        if !trailersOut {
            asyncRequest.responseComplete = true
        }
        // The staged head goes first; the file follows from onWritable or
        // right away if the socket takes it.
        guard transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: false) else { return .closed }
        guard writePending() else { clientGone(); return .closed }
        return outcome(true)
    }

    func sendTrailers(_ fields: UnsafeBufferPointer<ResponseField>) -> SendOutcome {
        guard phase == .request, !writeFailed else { return .closed }
        stageBodyEnd(trailers: fields)
        asyncRequest.responseComplete = true
        return outcome(transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: false))
    }

    /// After a write: finish the exchange if the response is complete and
    /// flushed, else report whether the sender should wait.
    private func outcome(_ transmitted: Bool) -> SendOutcome {
        guard transmitted else { clientGone(); return .closed }
        if hasPendingOutput { updateInterest() }
        if asyncRequest.responseComplete && !hasPendingOutput {
            finishAsyncResponse()
            return .done
        }
        if pendingOutputBytes > H1Connection.highWater {
            output.drainWanted = true
            return .backpressure
        }
        return .done
    }
}
