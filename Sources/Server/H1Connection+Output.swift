import CSys
import Core
import Gateway
import HTTP1

/// Response framing, writing, and closing.
///
/// Bytes are staged in the worker's output buffer (head, framing, small
/// body blocks) and handed to `transmit`, which writes what the socket
/// takes at once — a small response leaves in one `send`, a large block goes
/// out with the staged bytes in one `writev` without being copied — and
/// keeps the rest in the connection's own pending buffer. WSGI then waits
/// for it to drain (`blocking`); ASGI leaves it to `onWritable` and reports
/// backpressure above `highWater`.
extension H1Connection {
    /// Pending output above this makes ASGI `send()` wait...
    static let highWater = 64 * 1024
    /// ...until it drains below this.
    static let lowWater = 16 * 1024

    var hasPendingOutput: Bool { requestState.map { !$0.output.isEmpty } ?? false }
    var pendingOutputBytes: Int { perRequest.output.count }

    // MARK: - Writing

    /// Writes the staged bytes and then `extra`. Returns false if the
    /// connection failed.
    ///
    /// `final`: these are the last bytes of the response. A small final
    /// write on a connection that stays open is held for the rest of the
    /// loop round and written with the round's other responses (see
    /// CoalescedOutput); anything else written later on this connection
    /// first lets the held bytes out, so order is kept.
    func transmit(_ extra: UnsafeRawBufferPointer, blocking: Bool, final: Bool = false) -> Bool {
        if writeFailed { worker.out.count = 0; return false }
        let staged = worker.out.bytes
        if final && requestKeepAlive && perRequest.request.body.complete && !hasPendingOutput && !worker.stopRequested
            && staged.count + extra.count <= CoalescedOutput.maxResponse {
            outputHeld = true
            worker.hold(self, staged, extra)
            worker.out.count = 0
            return true
        }
        if outputHeld { worker.flushHeld() }
        if !hasPendingOutput {
            let (written, failed) = io.writeSome(staged, extra)
            if failed {
                worker.out.count = 0
                writeFailed = true
                return false
            }
            if written < staged.count {
                queue(UnsafeRawBufferPointer(rebasing: staged[written...]))
                queue(extra)
            } else if written - staged.count < extra.count {
                queue(UnsafeRawBufferPointer(rebasing: extra[(written - staged.count)...]))
            }
        } else {
            queue(staged)
            queue(extra)
        }
        worker.out.count = 0
        if blocking { return drainBlocking() }
        if hasPendingOutput {
            worker.arm(self, milliseconds: worker.config.requestTimeoutMilliseconds)
            updateInterest()
        }
        return true
    }

    /// Keeps `bytes` for the socket, after everything already kept: after
    /// a pending file, if there is one.
    func queue(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        if perRequest.output.file != nil { perRequest.output.afterFile.appendGrowing(bytes) } else { perRequest.output.bytes.appendGrowing(bytes) }
    }

    /// Writes bytes held back by CoalescedOutput: what the socket does not
    /// take becomes pending output, watched like any other.
    func writeHeld(_ bytes: UnsafeRawBufferPointer) {
        if writeFailed { return }
        if hasPendingOutput { queue(bytes); return }
        let (written, failed) = io.writeSome(bytes, UnsafeRawBufferPointer(start: nil, count: 0))
        if failed {
            // The peer reset the connection: its error event closes it.
            writeFailed = true
            return
        }
        if written < bytes.count {
            queue(UnsafeRawBufferPointer(rebasing: bytes[written...]))
            worker.arm(self, milliseconds: worker.config.requestTimeoutMilliseconds)
            updateInterest()
        }
    }

    /// Writes what the socket takes of the pending bytes and file. Returns
    /// false if the connection failed.
    func writePending() -> Bool {
        if perRequest.output.bytes.readableCount > 0 {
            let (written, failed) = io.writeSome(perRequest.output.bytes.readable, UnsafeRawBufferPointer(start: nil, count: 0))
            if failed { writeFailed = true; return false }
            perRequest.output.bytes.readerIndex += written
            if perRequest.output.bytes.isEmpty { perRequest.output.bytes.detach()?.deallocate() } else { return true }
        }
        guard var file = perRequest.output.file else { return true }
        let io = self.io
        while file.remaining > 0 {
            switch io.sendFile(file.fd, offset: &file.offset, count: Int(min(file.remaining, 1 << 30))) {
            case .sent(let n):
                file.remaining -= Int64(n)
                perRequest.exchange.countOut(n)
                continue
            case .again:
                perRequest.output.file = file
                return true
            case .failed:
                break
            }
            // The file shrank or the socket failed: the body cannot be completed.
            _ = csys_close(file.fd)
            perRequest.output.file = nil
            writeFailed = true
            return false
        }
        _ = csys_close(file.fd)
        // What was produced while the file went out follows it (`bytes`
        // is empty here: it went before the file).
        perRequest.output.fileSent()
        return perRequest.output.bytes.readableCount > 0 ? writePending() : true
    }

    /// Waits (GIL released, bounded by the write-stall timeout) until all
    /// pending output is written.
    func drainBlocking() -> Bool {
        while hasPendingOutput {
            guard writePending() else { return false }
            if hasPendingOutput && !worker.waitWritable(fd, worker.config.requestTimeoutMilliseconds) {
                writeFailed = true
                return false
            }
        }
        return true
    }

    func onWritable() {
        guard writePending() else {
            if phase == .request || phase == .websocket { clientGone() } else { close() }
            return
        }
        if phase == .websocket {
            webSocketWritable()
            return
        }
        if phase == .request {
            if perRequest.output.drainWanted && pendingOutputBytes < H1Connection.lowWater {
                perRequest.output.drainWanted = false
                perRequest.asyncRequest.delegate?.outputDrained()
                if phase != .request { return }
            }
            if !hasPendingOutput {
                worker.disarm(self)
                if perRequest.exchange.responseComplete { finishAsyncResponse() }
            } else {
                worker.arm(self, milliseconds: worker.config.requestTimeoutMilliseconds)
            }
        } else if phase == .head && !hasPendingOutput && !bytesSeen && input.isEmpty {
            // A held response that had to wait for the socket is out: the
            // connection is idle again.
            worker.arm(self, milliseconds: worker.config.keepAliveMilliseconds)
        }
        updateInterest()
    }

    /// The ASGI response is complete and on the wire: release the request
    /// and go on with the connection.
    func finishAsyncResponse() {
        let d = perRequest.asyncRequest.delegate
        perRequest.asyncRequest.delegate = nil
        perRequest.asyncRequest.bodyWanted = false
        afterResponse()
        d?.exchangeEnded(disconnected: false)
        if phase == .head || phase == .discarding { process() }
    }

    // MARK: - Framing

    /// Body blocks are framed as chunks.
    var chunkedOut: Bool { perRequest.request.framing?.isChunked ?? false }
    /// Trailer fields may end the body.
    var trailersOut: Bool { perRequest.request.framing?.trailers ?? false }

    /// Decides the response's framing and persistence (`H1ResponseFraming`)
    /// and stages its head; returns whether trailers will be carried.
    func stageHead(_ head: ResponseHead, plan: HTTPExchange.ResponsePlan, trailers: Bool) -> Bool {
        let rs = perRequest  // one reference for the call, not a retain per use
        // One strong reference for the whole head: each access through the
        // unowned(unsafe) `worker` would otherwise retain and release it.
        let w = worker
        let framing = H1ResponseFraming(
            version: rs.request.version, isHead: rs.exchange.isHead, requestKeepAlive: requestKeepAlive, status: plan.status,
            contentLength: plan.contentLength, trailers: trailers, applicationClose: head.close,
            stopping: w.stopRequested || pastMaxAge)
        rs.request.framing = framing
        rs.request.keepAlive = framing.keepAlive
        // A status the exchange replaced (500) takes the registry's reason.
        let reason = plan.status == head.status ? head.reason : UnsafeRawBufferPointer(start: nil, count: 0)
        // HTTP/3 is advertised over TLS only (AltSvcAdvert).
        let altSvc = tls != nil && !plan.hasAltSvc ? w.altSvc?.bytes : nil
        let date = plan.addsDate && w.sendsDate ? w.date.bytes : nil
        if let ids = w.requestIDs, let id = rs.request.requestID {
            ids.withEcho(id, head.fields) { fields in
                let bytes = H1ResponseHead(status: plan.status, reason: reason, fields: fields, framing: framing,
                                           date: date, altSvc: altSvc, defaults: w.defaultFields?.lines(for: fields))
                w.out.write(bytes.length) { bytes.write(into: $0) }
            }
        } else {
            let bytes = H1ResponseHead(status: plan.status, reason: reason, fields: head.fields, framing: framing,
                                       date: date, altSvc: altSvc, defaults: w.defaultFields?.lines(for: head.fields))
            w.out.write(bytes.length) { bytes.write(into: $0) }
        }
        rs.request.accessLine?.captureResponse(head.fields, contentLength: plan.contentLength,
                                            names: w.accessLog.responseFieldNames, requestID: rs.request.requestID)
        return framing.trailers
    }

    /// The request lets the connection persist: its own wish, unless its
    /// body could not be read to the end (nobody knows where the next
    /// request would start).
    var requestKeepAlive: Bool { perRequest.request.keepAlive && perRequest.exchange.bodyFailure == nil }

    /// Stages `name: value` lines.
    func stageFields(_ fields: UnsafeBufferPointer<ResponseField>) {
        let lines = H1FieldLines(fields)
        worker.out.write(lines.length) { lines.write(into: $0) }
    }

    /// Stages (small) or transmits (large) one block of body (admitted and
    /// counted by the exchange) with its chunk framing. Returns false if
    /// the connection failed.
    func emitBody(_ bytes: UnsafeRawBufferPointer, blocking: Bool) -> Bool {
        if writeFailed { return false }
        let chunkedOut = self.chunkedOut
        if chunkedOut {
            worker.out.write(H1ChunkedEncoder.maxSizeLineLength) { H1ChunkedEncoder.writeSizeLine(bytes.count, into: $0) }
        }
        // A WSGI block that completes a Content-Length body goes out with
        // the staged head in one writev instead of being copied after it
        // (a 12 KiB body: 12 KiB less to copy per response).
        let completesBody = blocking && bytes.count >= 2048 && perRequest.request.framing?.isComplete(afterSending: perRequest.exchange.bytesOut) == true
        if bytes.count <= 16 * 1024 && !completesBody {
            worker.out.append(bytes)
            if chunkedOut { worker.out.append("\r\n") }
            if worker.out.count > 64 * 1024 {
                return transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: blocking)
            }
            return true
        }
        // Large block: written with the staged bytes, not copied.
        guard transmit(bytes, blocking: blocking) else { return false }
        if chunkedOut { worker.out.append("\r\n") }
        return true
    }

    /// Stages the end of a chunked body (with trailer fields, if the
    /// framing allows them).
    func stageBodyEnd(trailers: UnsafeBufferPointer<ResponseField>?) {
        guard chunkedOut else { return }
        let none = UnsafeBufferPointer<ResponseField>(start: nil, count: 0)
        let fields = trailersOut ? trailers ?? none : none
        worker.out.write(H1ChunkedEncoder.lastChunkLength(trailers: fields)) {
            H1ChunkedEncoder.writeLastChunk(trailers: fields, into: $0)
        }
    }

    // MARK: - Errors and closing

    /// Answers a request the server itself refuses, then closes gracefully.
    /// A response the worker makes itself (--health-path, a refusal for
    /// --limit-concurrency): the reason phrase as body, at most one extra
    /// field, and the connection lives on as after any response (the
    /// caller goes on with `afterResponse`).
    func respondItself(status: Int, field: ResponseField? = nil) {
        let reason = ReasonPhrase.reason(status)
        let body = UnsafeRawBufferPointer(start: reason.utf8Start, count: reason.utf8CodeUnitCount)
        var extra = field ?? ResponseField(name: body, value: body)
        let sent = withUnsafePointer(to: &extra) { p in
            sendHead(ResponseHead(status: status, reason: body,
                                  fields: UnsafeBufferPointer(start: p, count: field == nil ? 0 : 1),
                                  contentLength: Int64(body.count), close: false))
        }
        if sent && sendBody(body, flush: false) { _ = finish() }
    }

    /// The request counted for --limit-concurrency ended.
    func endCounted() {
        meterEnd()
        guard perRequest.request.counted else { return }
        perRequest.request.counted = false
        worker.admission.ended()
    }

    /// --max-connection-age passed: this response is the last.
    var pastMaxAge: Bool {
        guard let ageDeadline else { return false }
        return worker.now >= ageDeadline
    }

    func sendErrorAndLinger(_ code: Int, extraField: StaticString? = nil) {
        perRequest.exchange.respondDirectly(status: code)
        worker.out.count = 0
        let w = worker
        let response = H1ErrorResponse(status: code, extraField: extraField, date: w.sendsDate ? w.date.bytes : nil,
                                       defaults: w.defaultFields?.lines(except: 0))
        worker.out.write(response.length) { response.write(into: $0) }
        // A short blocking write: the socket buffer of a connection that
        // has sent only a head is empty.
        let ok = transmit(UnsafeRawBufferPointer(start: nil, count: 0), blocking: true)
        worker.metrics.rejected(status: code)
        if worker.accessLog.enabled {
            worker.accessLog.recordRejected(status: code, peer: peer)
        }
        guard ok else { close(); return }
        lingerAfterResponse()
    }

    /// Lingering close (see LingeringClose).
    func lingerAfterResponse() {
        if outputHeld { worker.flushHeld() }
        io.shutdownWrite()
        input.readerIndex = input.writerIndex
        releaseInput()
        let d = perRequest.asyncRequest.delegate
        perRequest.asyncRequest.delegate = nil
        d?.exchangeEnded(disconnected: true)
        guard worker.beginLinger() else { close(); return }
        phase = .lingering
        updateInterest()
        lingering = LingeringClose(now: worker.now)
        worker.arm(self, milliseconds: LingeringClose.quietMilliseconds)
        drainForLinger()
    }

    func drainForLinger() {
        if lingering?.drain(fd) == true, let wait = lingering?.waitMilliseconds(now: worker.now) {
            worker.arm(self, milliseconds: wait)
            return
        }
        close()
    }

    /// The client went away (or stopped reading past the write timeout)
    /// while an ASGI request was in flight.
    func clientGone() {
        aborted = true
        close()
    }

    func close() {
        guard phase != .closed else { return }
        // One idle past the worker's pass holds no request state, and takes
        // none here; one idle since less keeps its last request's, ended.
        let state = requestState
        if state != nil { endCounted() }
        worker.metrics.connectionClosed(.tcp)
        // A handshake that failed, timed out, or lost its client.
        if tls?.handshaking == true { worker.metrics.tlsHandshake(.tcp, .failed) }
        if outputHeld { worker.flushHeld() }
        let wasLingering = phase == .lingering
        phase = .closed
        if let session = h2 {
            h2HandOff = .http1
            session.teardown()
        }
        lingering = nil
        worker.disarm(self)
        input.readerIndex = input.writerIndex
        releaseInput()
        releaseParsing()
        if let state {
            state.output.bytes.detach()?.deallocate()
            state.output.afterFile.detach()?.deallocate()
            if let file = state.output.file {
                _ = csys_close(file.fd)
                state.output.file = nil
            }
        }
        worker.out.count = 0
        worker.connectionClosed(self, wasLingering: wasLingering)
        if let session = tls?.session {
            // close_notify ends a complete exchange; a cut one must look cut.
            if !aborted && !writeFailed { session.shutdown() }
        }
        tls = nil
        _ = csys_close(fd)
        fd = -1
        peer = nil
        if let state {
            state.request.accessLine = nil
            let d = state.asyncRequest.delegate
            state.asyncRequest.delegate = nil
            d?.exchangeEnded(disconnected: true)
        }
        if let ws = webSocket {
            webSocket = nil
            ws.conversation.transportClosed()
        }
    }
}
