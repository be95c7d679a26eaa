import CSys
import Core
import Gateway
import HTTP1

/// One HTTP/1.1 connection: reads and parses request heads, hands each
/// request to the gateway as an `Exchange`, frames the response, and decides
/// whether the connection lives on.
///
/// Phases:
///
///     head ──complete──▶ (application runs inline) ──▶ head (keep-alive)
///       │                                          ├─▶ discarding ─▶ head
///       │                                          └─▶ closed
///       └──bad request──▶ lingering ──EOF/timer──▶ closed
///
/// `head`: waiting for or parsing a request head. The timer is the
/// keep-alive idle timeout until the first byte of a request arrives, then
/// the request timeout counted from that byte (a slow sender gets 408).
/// `discarding`: the application answered without reading the whole body;
/// the rest is read and dropped (bounded) so the connection can be reused.
/// `lingering`: an error response has been sent and our side shut down; the
/// client's remaining bytes are drained briefly so closing does not reset
/// the connection before the client reads the response (RFC 9112 §9.6).
final class H1Connection: Exchange {
    enum Phase { case head, discarding, lingering, closed }

    // The worker owns every connection and outlives it.
    unowned(unsafe) let worker: Worker
    let index: Int
    private(set) var generation: UInt32 = 0
    private(set) var fd: Int32 = -1
    private(set) var phase: Phase = .closed
    var peer: PeerInfo!
    private var input = ByteBuffer()
    private var inputPooled = false
    private var parser: H1HeadParser
    private var requestBytesSeen = false
    private var requestStart = Instant(nanoseconds: 0)

    // The request being served.
    private var isHTTP10 = false
    private var requestKeepAlive = true
    private var framing: H1BodyFraming = .none
    private var remaining: Int64 = 0
    private var chunked: H1ChunkedDecoder
    private var chunkCarry = 0
    private var bodyComplete = true
    private var bodyReceived: Int64 = 0
    private var expectContinue = false
    private var continueSent = false
    private var discardBudget: Int64 = 0

    // The response being written.
    private var isHeadRequest = false
    private var bodyless = false
    private var chunkedOut = false
    private var keepAlive = true
    private(set) var headSent = false
    private var aborted = false
    private var writeFailed = false
    private var status = 0
    private var bytesOut: Int64 = 0

    init(worker: Worker, index: Int, limits: H1Limits) {
        self.worker = worker
        self.index = index
        parser = H1HeadParser(limits: limits)
        chunked = H1ChunkedDecoder(limits: limits)
    }

    var token: UInt64 { UInt64(generation) << 32 | UInt64(index) }

    func open(fd: Int32, peer: PeerInfo, generation: UInt32) {
        self.fd = fd
        self.peer = peer
        self.generation = generation
        phase = .head
        parser.reset()
        requestBytesSeen = false
        aborted = false
        writeFailed = false
        worker.arm(self, milliseconds: worker.config.requestTimeoutMilliseconds)
    }

    // MARK: - Events

    func onReadable() {
        switch phase {
        case .closed:
            return
        case .lingering:
            drainForLinger()
            return
        case .head, .discarding:
            switch fill() {
            case .data:
                process()
            case .again:
                return
            case .eof, .error:
                close()
            }
        }
    }

    func onTimeout() {
        switch phase {
        case .head where requestBytesSeen || input.readableCount > 0:
            // RFC 9110 §15.5.9: the head did not arrive in time.
            sendErrorAndLinger(408)
        default:
            close()
        }
    }

    /// Parses and serves as many buffered requests as are complete
    /// (pipelining: responses go out strictly in request order, since each
    /// is finished before the next head is looked at).
    private func process() {
        while phase == .head || phase == .discarding {
            if phase == .discarding {
                guard discardBody() else { return }
                continue
            }
            if input.isEmpty { becomeIdle(); return }
            if !requestBytesSeen {
                requestBytesSeen = true
                requestStart = worker.now
                worker.arm(self, milliseconds: worker.config.requestTimeoutMilliseconds)
            }
            switch parser.parse(input.readable, headers: worker.headerTable) {
            case .incomplete:
                if input.writableCount == 0 && input.readerIndex == 0 {
                    // The head fills the buffer: move to a larger one (the
                    // parser answers 431 before it can outgrow that).
                    growInput()
                }
                return
            case .failed(let error):
                Log.debug("bad request from \(peer.remoteAddress): \(error.status) \(error.reason)")
                sendErrorAndLinger(Int(error.status))
                return
            case .complete(let head):
                serve(head)
            }
        }
    }

    private func serve(_ head: H1RequestHead) {
        worker.disarm(self)
        let base = UnsafeRawPointer(input.readable.baseAddress!)
        input.readerIndex += head.headLength
        isHTTP10 = head.version == .http10
        requestKeepAlive = head.keepAlive
        isHeadRequest = head.method == .head
        framing = head.framing
        expectContinue = head.expectContinue
        continueSent = false
        chunkCarry = 0
        bodyReceived = 0
        switch head.framing {
        case .none:
            bodyComplete = true
            remaining = 0
        case .contentLength(let n):
            if n > worker.config.maxBody {
                // Decided from the declared length, before reading any of it.
                sendErrorAndLinger(413)
                return
            }
            remaining = n
            bodyComplete = n == 0
        case .chunked:
            chunked = H1ChunkedDecoder(limits: parser.limits)
            bodyComplete = false
            // Bad framing in the part of the body already here is refused
            // before the application runs, like a bad head.
            if let error = prevalidateChunkedBody() {
                sendErrorAndLinger(Int(error.status))
                return
            }
        }
        headSent = false
        aborted = false
        bodyless = false
        chunkedOut = false
        keepAlive = requestKeepAlive
        status = 0
        bytesOut = 0

        let table = worker.headerTable
        let spans = worker.fieldSpans
        for i in 0..<table.count {
            spans[i] = FieldSpans(name: table.name(i), value: table.value(i))
        }
        let request = GatewayRequest(
            base: base, method: head.methodSpan, target: head.target, path: head.path, query: head.query,
            httpVersion: isHTTP10 ? "HTTP/1.0" : "HTTP/1.1", isHead: isHeadRequest,
            fieldCount: table.count, fields: UnsafePointer(spans), peer: peer)
        let logLine = worker.accessLog.enabled ? AccessLog.RequestLine(request) : nil
        worker.requestsServed += 1
        worker.gateway.serve(request, exchange: self, token: worker.nextRequestToken())
        if let logLine {
            worker.accessLog.record(logLine, status: status, bytes: bytesOut, peer: peer,
                                    milliseconds: Double(worker.clockNow().nanoseconds - requestStart.nanoseconds) / 1e6)
        }
        afterResponse()
    }

    private func afterResponse() {
        requestBytesSeen = false
        parser.reset()
        if aborted || writeFailed || status == 0 {
            close()
            return
        }
        if !keepAlive || worker.stopping {
            if bodyComplete { close() } else { lingerAfterResponse() }
            return
        }
        if !bodyComplete {
            if expectContinue && !continueSent {
                // The client may still be waiting for 100 before it sends the
                // body: we cannot know where the next request starts.
                close()
                return
            }
            discardBudget = 1 << 20
            phase = .discarding
            worker.arm(self, milliseconds: worker.config.requestTimeoutMilliseconds)
            return
        }
        phase = .head
    }

    /// No request in progress and nothing buffered: give the buffer back and
    /// wait (keep-alive timeout).
    private func becomeIdle() {
        releaseInput()
        worker.arm(self, milliseconds: worker.config.keepAliveMilliseconds)
    }

    // MARK: - Reading

    enum FillResult { case data, again, eof, error }

    private func fill() -> FillResult {
        if !input.hasStorage {
            input.attach(worker.takeBlock(), capacity: worker.blockSize)
            inputPooled = true
        }
        if input.writableCount == 0 { input.compact() }
        if input.writableCount == 0 { return .data }  // full: let the caller consume first
        let w = input.writable
        while true {
            let n = csys_read(fd, w.baseAddress, w.count)
            if n > 0 {
                input.writerIndex += n
                return .data
            }
            if n == 0 { return .eof }
            let e = csys_errno()
            if csys_eintr(e) != 0 { continue }
            return csys_eagain(e) != 0 ? .again : .error
        }
    }

    private func growInput() {
        let newCapacity = max(worker.config.maxHeaderSize + 4096, input.capacity * 2)
        guard newCapacity > input.capacity else { return }
        let block = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        if let old = input.move(toNewStorage: block, capacity: newCapacity) {
            if inputPooled { worker.giveBlock(old) } else { old.deallocate() }
        }
        inputPooled = false
    }

    private func releaseInput() {
        guard input.hasStorage, input.isEmpty else { return }
        if let s = input.detach() {
            if inputPooled { worker.giveBlock(s) } else { s.deallocate() }
        }
    }

    /// Reads more request bytes while the application waits for them.
    private func fillBlocking() -> BodyRead? {
        while true {
            switch fill() {
            case .data: return nil
            case .again:
                if !worker.waitReadable(fd, milliseconds: worker.config.requestTimeoutMilliseconds) {
                    return .failed("timed out waiting for the request body", status: 408)
                }
            case .eof: return .failed("the client closed the connection mid-body", status: 0)
            case .error: return .failed("the connection failed while reading the body", status: 0)
            }
        }
    }

    /// Takes body bytes out of the input buffer without blocking: returns
    /// the span (relative to the buffer's readable start) and advances past
    /// it, or nil when more bytes are needed. Marks the body complete at its
    /// end. Throws the framing error of a bad chunked body.
    private func nextBodySpan(max: Int) throws(H1Error) -> UnsafeRawBufferPointer? {
        let avail = input.readable
        switch framing {
        case .none:
            bodyComplete = true
            return nil
        case .contentLength:
            let n = Int(min(Int64(min(avail.count, max)), remaining))
            guard n > 0 else { return nil }
            remaining -= Int64(n)
            input.readerIndex += n
            if remaining == 0 { bodyComplete = true }
            return UnsafeRawBufferPointer(rebasing: avail[0..<n])
        case .chunked:
            if chunkCarry > 0 {
                let n = min(chunkCarry, avail.count, max)
                chunkCarry -= n
                input.readerIndex += n
                return UnsafeRawBufferPointer(rebasing: avail[0..<n])
            }
            var offset = 0
            while true {
                let rest = UnsafeRawBufferPointer(rebasing: avail[offset...])
                switch chunked.decode(rest) {
                case .data(let span, let consumed):
                    // `consumed` covers the framing and the payload; hand out
                    // what fits and keep the rest as carry.
                    let start = offset + span.start
                    let n = min(span.count, max)
                    input.readerIndex += offset + consumed - (span.count - n)
                    chunkCarry = span.count - n
                    return UnsafeRawBufferPointer(rebasing: avail[start..<(start + n)])
                case .needMoreData(let consumed):
                    offset += consumed
                    if consumed == 0 {
                        input.readerIndex += offset
                        return nil
                    }
                case .end(let consumed):
                    input.readerIndex += offset + consumed
                    bodyComplete = true
                    return nil
                case .failed(let error):
                    throw error
                }
            }
        }
    }

    /// Runs a copy of the chunked decoder over the buffered body bytes and
    /// returns the framing error, if they contain one.
    private func prevalidateChunkedBody() -> H1Error? {
        var probe = chunked
        var rest = input.readable
        while !rest.isEmpty {
            switch probe.decode(rest) {
            case .data(_, let consumed), .needMoreData(let consumed):
                if consumed == 0 { return nil }
                rest = UnsafeRawBufferPointer(rebasing: rest[consumed...])
            case .end:
                return nil
            case .failed(let error):
                return error
            }
        }
        return nil
    }

    func readBody(into buffer: UnsafeMutableRawBufferPointer) -> BodyRead {
        if bodyComplete { return .end }
        if expectContinue && !continueSent && !headSent && input.isEmpty {
            continueSent = true
            let line: StaticString = "HTTP/1.1 100 Continue\r\n\r\n"
            if !writeNow(UnsafeRawBufferPointer(start: line.utf8Start, count: line.utf8CodeUnitCount)) {
                return .failed("the connection failed", status: 0)
            }
        }
        continueSent = true
        while true {
            do {
                if let span = try nextBodySpan(max: buffer.count) {
                    bodyReceived += Int64(span.count)
                    if bodyReceived > worker.config.maxBody {
                        keepAlive = false
                        return .tooLarge
                    }
                    buffer.baseAddress!.copyMemory(from: span.baseAddress!, byteCount: span.count)
                    return .data(span.count)
                }
            } catch {
                keepAlive = false
                bodyComplete = true  // nothing more can be read from this framing
                return .failed(error.reason, status: Int(error.status))
            }
            if bodyComplete { return .end }
            if let failure = fillBlocking() {
                keepAlive = false
                return failure
            }
        }
    }

    /// Drops body bytes the application did not read; false when waiting
    /// for more input (or the connection was closed).
    private func discardBody() -> Bool {
        while !bodyComplete {
            let span: UnsafeRawBufferPointer?
            do { span = try nextBodySpan(max: Int.max) } catch { close(); return false }
            if let span {
                discardBudget -= Int64(span.count)
                if discardBudget < 0 { close(); return false }
                continue
            }
            if bodyComplete { break }
            if input.isEmpty { releaseInput() }
            return false
        }
        phase = .head
        return true
    }

    // MARK: - Exchange: the response

    func sendHead(_ head: ResponseHead) -> Bool {
        status = head.status
        let s = head.status
        bodyless = isHeadRequest || s < 200 || s == 204 || s == 304
        if head.close { keepAlive = false }
        if worker.stopping { keepAlive = false }
        // A 1.0 client cannot take chunked framing: an unknown length is
        // delimited by closing the connection (RFC 9112 §6.3).
        if head.contentLength == nil && !bodyless && isHTTP10 { keepAlive = false }
        chunkedOut = head.contentLength == nil && !bodyless && !isHTTP10
        // The client may still be sending a body we will not read; closing
        // is the only way to stay in sync if it was never invited (100).
        worker.out.append("HTTP/1.1 ")
        worker.out.append(decimal: Int64(s))
        worker.out.append(" ")
        worker.out.append(head.reason)
        worker.out.append("\r\n")
        var sawDate = false
        for f in head.fields {
            if f.name.count == 4 && equalsIgnoringCaseDate(f.name) { sawDate = true }
            worker.out.append(f.name)
            worker.out.append(": ")
            worker.out.append(f.value)
            worker.out.append("\r\n")
        }
        if !sawDate {
            worker.out.append("date: ")
            worker.out.append(worker.date.bytes)
            worker.out.append("\r\n")
        }
        if let length = head.contentLength, s != 204, s != 304, s >= 200 {
            worker.out.append("content-length: ")
            worker.out.append(decimal: length)
            worker.out.append("\r\n")
        } else if chunkedOut {
            worker.out.append("transfer-encoding: chunked\r\n")
        }
        if !keepAlive {
            worker.out.append("connection: close\r\n")
        } else if isHTTP10 {
            worker.out.append("connection: keep-alive\r\n")
        }
        worker.out.append("\r\n")
        headSent = true
        return true
    }

    func sendBody(_ bytes: UnsafeRawBufferPointer, flush: Bool) -> Bool {
        if writeFailed { return false }
        if bodyless || bytes.isEmpty {
            return flush ? flushOutput() : true
        }
        bytesOut += Int64(bytes.count)
        if chunkedOut {
            worker.out.reserve(H1ChunkedEncoder.maxSizeLineLength)
            worker.out.count += H1ChunkedEncoder.writeSizeLine(bytes.count, into: worker.out.base + worker.out.count)
        }
        let large = bytes.count > 16 * 1024
        if !large {
            worker.out.append(bytes)
            if chunkedOut { worker.out.append("\r\n") }
            return flush || worker.out.count > 64 * 1024 ? flushOutput() : true
        }
        // Large block: write the buffered bytes and the block together
        // without copying the block.
        let ok = SocketWriter.write(fd: fd, worker.out.bytes, bytes, stallMilliseconds: worker.config.requestTimeoutMilliseconds,
                                    waitWritable: worker.waitWritable) == .done
        worker.out.count = 0
        if ok && chunkedOut { worker.out.append("\r\n") }
        if !ok { writeFailed = true; return false }
        return flush ? flushOutput() : true
    }

    func sendFile(fd file: Int32, offset: Int64, count: Int64) -> Int64? {
        guard !bodyless else { return count }
        guard flushOutput() else { return 0 }
        var off = offset
        var left = count
        while left > 0 {
            let n = csys_sendfile(fd, file, &off, Int(min(left, 1 << 30)))
            if n > 0 { left -= Int64(n); continue }
            if n == 0 { break }  // the file shrank
            let e = csys_errno()
            if csys_eintr(e) != 0 { continue }
            if csys_eagain(e) != 0, worker.waitWritable(fd, worker.config.requestTimeoutMilliseconds) { continue }
            writeFailed = true
            break
        }
        bytesOut += count - left
        return count - left
    }

    func finish() -> Bool {
        if writeFailed { return false }
        if chunkedOut {
            worker.out.append("0\r\n\r\n")
        }
        return flushOutput()
    }

    func abort() {
        aborted = true
        worker.out.count = 0
    }

    private func flushOutput() -> Bool {
        if writeFailed { return false }
        let ok = worker.out.count == 0 || SocketWriter.write(fd: fd, worker.out.bytes, UnsafeRawBufferPointer(start: nil, count: 0),
                                                      stallMilliseconds: worker.config.requestTimeoutMilliseconds,
                                                      waitWritable: worker.waitWritable) == .done
        worker.out.count = 0
        if !ok { writeFailed = true }
        return ok
    }

    private func writeNow(_ bytes: UnsafeRawBufferPointer) -> Bool {
        SocketWriter.write(fd: fd, bytes, UnsafeRawBufferPointer(start: nil, count: 0),
                           stallMilliseconds: worker.config.requestTimeoutMilliseconds,
                           waitWritable: worker.waitWritable) == .done
    }

    // MARK: - Errors and closing

    /// Answers a request the server itself refuses, then closes gracefully.
    func sendErrorAndLinger(_ code: Int) {
        status = code
        let reason = StatusText.reason(code)
        worker.out.count = 0
        worker.out.append("HTTP/1.1 ")
        worker.out.append(decimal: Int64(code))
        worker.out.append(" ")
        worker.out.append(reason)
        worker.out.append("\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ")
        worker.out.append(decimal: Int64(reason.utf8CodeUnitCount + 1))
        worker.out.append("\r\nconnection: close\r\ndate: ")
        worker.out.append(worker.date.bytes)
        worker.out.append("\r\n\r\n")
        worker.out.append(reason)
        worker.out.append("\n")
        let ok = flushOutput()
        if worker.accessLog.enabled {
            worker.accessLog.recordRejected(status: code, peer: peer)
        }
        guard ok else { close(); return }
        lingerAfterResponse()
    }

    /// Lingering close (RFC 9112 §9.6): our side is shut down, and what the
    /// client still sends is read and dropped until it has been quiet for
    /// `lingerQuietMilliseconds`, or for at most `lingerMaxMilliseconds` or
    /// `lingerMaxBytes` in all. Closing with unread input would reset the
    /// connection and could destroy the response before the client reads
    /// it. A lingering connection holds no buffer and no longer counts
    /// towards --max-connections.
    static let lingerQuietMilliseconds = 2000
    static let lingerMaxMilliseconds = 30_000
    static let lingerMaxBytes = 1 << 20
    private var lingerDeadline = Instant(nanoseconds: 0)
    private var lingerBytes = 0

    private func lingerAfterResponse() {
        _ = csys_shutdown_write(fd)
        input.readerIndex = input.writerIndex
        releaseInput()
        guard worker.beginLinger(self) else { close(); return }
        phase = .lingering
        lingerBytes = 0
        lingerDeadline = worker.now.adding(milliseconds: H1Connection.lingerMaxMilliseconds)
        worker.arm(self, milliseconds: H1Connection.lingerQuietMilliseconds)
        drainForLinger()
    }

    private func drainForLinger() {
        var scratch: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
        while lingerBytes < H1Connection.lingerMaxBytes {
            let n = withUnsafeMutableBytes(of: &scratch) { csys_read(fd, $0.baseAddress, $0.count) }
            if n > 0 { lingerBytes += n; continue }
            if n < 0 && csys_eintr(csys_errno()) != 0 { continue }
            if n < 0 && csys_eagain(csys_errno()) != 0 {
                if worker.now < lingerDeadline {
                    let left = lingerDeadline.milliseconds(since: worker.now)
                    worker.arm(self, milliseconds: min(H1Connection.lingerQuietMilliseconds, max(left, 1)))
                    return
                }
            }
            break
        }
        close()
    }

    func close() {
        guard phase != .closed else { return }
        let wasLingering = phase == .lingering
        phase = .closed
        worker.disarm(self)
        input.readerIndex = input.writerIndex
        releaseInput()
        worker.connectionClosed(self, wasLingering: wasLingering)
        _ = csys_close(fd)
        fd = -1
        peer = nil
    }
}

@inline(__always)
private func equalsIgnoringCaseDate(_ b: UnsafeRawBufferPointer) -> Bool {
    (b[0] | 0x20) == 0x64 && (b[1] | 0x20) == 0x61 && (b[2] | 0x20) == 0x74 && (b[3] | 0x20) == 0x65
}
