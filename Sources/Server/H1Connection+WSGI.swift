import CSys
import Core
import Gateway
import HTTP1

/// The blocking `Exchange` a WSGI application runs against: reads wait for
/// body bytes and writes wait for the socket (GIL released, bounded by the
/// request timeout), since the application runs inline.
extension H1Connection: Exchange {
    func readBody(into buffer: UnsafeMutableRawBufferPointer) -> BodyRead {
        if let failure = exchange.bodyFailure { return .failed("the request body cannot be read", status: failure) }
        if requestBody.complete { return .end }
        if !continueIfExpected() { return .failed("the connection failed", status: 0) }
        while true {
            switch copyBody(into: buffer) {
            case .success(let n)?:
                return .data(n)
            case .failure(let error)?:
                exchange.failBody(status: error.status)
                return error.status == 413 ? .tooLarge : .failed(error.reason, status: error.status)
            case nil:
                break
            }
            if requestBody.complete { return .end }
            switch fill() {
            case .data:
                continue
            case .again:
                if !worker.waitReadable(fd, milliseconds: worker.config.requestTimeoutMilliseconds) {
                    keepAlive = false
                    exchange.failBody(status: 408)
                    return .failed("timed out waiting for the request body", status: 408)
                }
            case .eof, .error:
                keepAlive = false
                exchange.failBody(status: 0)
                return .failed("the client closed the connection mid-body", status: 0)
            }
        }
    }

    func sendHead(_ head: ResponseHead) -> Bool {
        stageHead(head, trailers: false)
        return true
    }

    func sendBody(_ bytes: UnsafeRawBufferPointer, flush: Bool) -> Bool {
        emitBody(bytes, flush: flush, blocking: true)
    }

    /// Returns the bytes of the file dealt with: sent, or dropped as past
    /// the declared length (or a HEAD response's).
    func sendFile(fd file: Int32, offset: Int64, count asked: Int64) -> Int64? {
        guard !bodyless else { return asked }
        let count = exchange.admitBody(asked)
        guard count > 0 else { return asked }
        guard transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: true) else { return 0 }
        // The caller keeps ownership of `file`; send from a duplicate so
        // the pending-file machinery can close its own descriptor.
        let own = csys_dup(file)
        guard own >= 0 else { return nil }
        output.file = PendingFile(fd: own, offset: offset, remaining: count)
        let before = exchange.bytesOut
        _ = drainBlocking()
        if let left = output.file {
            _ = csys_close(left.fd)
            output.file = nil
        }
        let sent = exchange.bytesOut - before
        return sent == count ? asked : sent
    }

    func finish() -> Bool {
        // A body short of its declared length cannot be completed: the
        // connection closes instead, so the client sees it cut off.
        if exchange.bodyEndedShort() {
            _ = transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: true)
            abort()
            return false
        }
        stageBodyEnd(trailers: nil)
        return transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: true)
    }

    /// Both exchanges: abandon the response. WSGI closes when `serve`
    /// returns; an ASGI request's connection closes now.
    func abort() {
        aborted = true
        worker.out.count = 0
        if phase == .request { clientGone() }
    }
}
