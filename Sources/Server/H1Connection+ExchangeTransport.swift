import CSys
import Core
import Gateway
import HTTP1

/// The HTTP/1.1 connection as the transport of its current request: the
/// body comes from the input buffer (Content-Length or chunked, +Input), the
/// response is framed by `H1ResponseFraming` (+Output). The exchange itself
/// (`Exchange` for WSGI, `AsyncExchange` for ASGI) is written once, in
/// Exchanges (`ExchangeTransport`).
extension H1Connection: ExchangeTransport {
    var now: Instant { worker.now }
    var requestTimeoutMilliseconds: Int { worker.config.requestTimeoutMilliseconds }
    /// A request is being served (WSGI runs it in the head phase, ASGI in
    /// the request phase) and the socket has not failed.
    var canSend: Bool { !writeFailed && (phase == .request || phase == .head) }

    // MARK: - Request body

    var bodyArrived: Bool { !input.isEmpty }
    var bodyComplete: Bool { perRequest.request.body.complete }

    func takeBody(into buffer: UnsafeMutableRawBufferPointer) -> BodyTake {
        switch copyBody(into: buffer) {
        case .success(let n)?:
            return .data(n)
        case .failure(let error)?:
            return .failed(status: error.status, reason: error.reason)
        case nil:
            return perRequest.request.body.complete ? .end : .wait
        }
    }

    /// WSGI: reads the socket, waiting (GIL released) while it has nothing.
    func awaitBody(milliseconds: Int) -> BodyWait {
        while true {
            switch fill() {
            case .data:
                return .progressed
            case .again:
                if !worker.waitReadable(fd, milliseconds: milliseconds) { return .idle }
            case .eof, .error:
                return .gone
            }
        }
    }

    /// ASGI: the socket is read again (it pauses while nobody asks for the
    /// body; see `updateInterest`), with the request timeout armed.
    func watchBody() {
        guard phase == .request, !perRequest.asyncRequest.bodyWanted else { return }
        perRequest.asyncRequest.bodyWanted = true
        worker.arm(self, milliseconds: worker.config.requestTimeoutMilliseconds)
        updateInterest()
    }

    /// Readable while the ASGI application waits for body.
    func readForBody() {
        switch fill() {
        case .data:
            perRequest.asyncRequest.bodyWanted = false
            if !hasPendingOutput { worker.disarm(self) }
            updateInterest()
            perRequest.asyncRequest.delegate?.bodyReady()
        case .again:
            return
        case .eof, .error:
            perRequest.exchange.failBody(status: 0)
            clientGone()
        }
    }

    func attach(_ delegate: AsyncExchangeDelegate) {
        perRequest.asyncRequest.delegate = delegate
    }

    // MARK: - Response

    func frameInformational(status: Int, fields: UnsafeBufferPointer<ResponseField>) -> Bool {
        // RFC 9110 §15.2: no 1xx to an HTTP/1.0 client.
        guard H1ResponseFraming.allowsInformational(to: perRequest.request.version) else { return false }
        let head = H1InformationalHead(status: status, fields: fields)
        worker.out.write(head.length) { head.write(into: $0) }
        return true
    }

    func frameHead(_ head: ResponseHead, plan: HTTPExchange.ResponsePlan, trailers: Bool) -> Bool {
        stageHead(head, plan: plan, trailers: trailers)
    }

    func frameBody(_ bytes: UnsafeRawBufferPointer, end: Bool, blocking: Bool) -> Bool {
        if !bytes.isEmpty { guard emitBody(bytes, blocking: blocking) else { return false } }
        if end { stageBodyEnd(trailers: nil) }
        return true
    }

    func frameTrailers(_ fields: UnsafeBufferPointer<ResponseField>) {
        stageBodyEnd(trailers: fields)
    }

    var sendsFiles: Bool { true }

    /// Sends the staged head, then the file with sendfile, waiting for the
    /// socket (GIL released).
    func transmitFile(fd file: Int32, offset: Int64, count: Int64) -> Int64 {
        stageChunkSizeLine(count)
        guard transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: true) else { return 0 }
        // The caller keeps ownership of `file`; send from a duplicate so
        // the pending-file machinery can close its own descriptor.
        let own = csys_dup(file)
        guard own >= 0 else { return 0 }
        perRequest.output.file = PendingFile(fd: own, offset: offset, remaining: count)
        if chunkedOut && count > 0 { queueChunkEnd() }
        let before = perRequest.exchange.bytesOut
        _ = drainBlocking()
        if let left = perRequest.output.file {
            _ = csys_close(left.fd)
            perRequest.output.file = nil
        }
        return perRequest.exchange.bytesOut - before
    }

    /// The file follows the staged head from `onWritable`, or at once if
    /// the socket takes it (`pushOutput`). With a Content-Length or
    /// close-delimited body the file is the body's bytes as they are; in a
    /// chunked body (the response announced trailers) it is one chunk
    /// (RFC 9112 §7.1), and what comes after it (the last chunk, trailers)
    /// waits for it.
    func queueFile(fd file: Int32, offset: Int64, count: Int64, end: Bool) {
        stageChunkSizeLine(count)
        // What is staged (the head, the size line) goes before the file.
        if outputHeld { worker.flushHeld() }
        queue(worker.out.bytes)
        worker.out.count = 0
        perRequest.output.file = PendingFile(fd: file, offset: offset, remaining: count)
        if chunkedOut && count > 0 { queueChunkEnd() }
    }

    /// The CRLF that ends a file's chunk, after the file.
    private func queueChunkEnd() {
        let crlf: StaticString = "\r\n"
        queue(UnsafeRawBufferPointer(start: crlf.utf8Start, count: crlf.utf8CodeUnitCount))
    }

    /// In a chunked body, a file of `count` bytes is one chunk: its size
    /// line goes before it.
    private func stageChunkSizeLine(_ count: Int64) {
        guard chunkedOut, count > 0 else { return }
        worker.out.write(H1ChunkedEncoder.maxSizeLineLength) { H1ChunkedEncoder.writeSizeLine(Int(count), into: $0) }
    }

    func flush(blocking: Bool) -> Bool {
        let ok = transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: blocking)
        if !ok && !blocking { clientGone() }
        return ok
    }

    /// Writes what the socket takes; the response's last bytes may be held
    /// for the loop round (`transmit`'s `final`). Once the response is
    /// complete and out, the connection goes on to the next request.
    func pushOutput() -> SendOutcome {
        guard transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: false, final: perRequest.exchange.responseComplete),
              perRequest.output.file == nil || writePending() else {
            clientGone()
            return .closed
        }
        if hasPendingOutput {
            updateInterest()
        } else if perRequest.exchange.responseComplete {
            finishAsyncResponse()
            return .done
        }
        if pendingOutputBytes > H1Connection.highWater {
            perRequest.output.drainWanted = true
            return .backpressure
        }
        return .done
    }

    /// Abandons the response. WSGI closes when `serve` returns; an ASGI
    /// request's connection closes now.
    func abort() {
        aborted = true
        worker.out.count = 0
        if phase == .request { clientGone() }
    }
}
