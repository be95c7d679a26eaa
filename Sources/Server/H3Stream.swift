import CSys
import Core
import Gateway
import HTTP3
import HTTPFields
import QUIC

/// One HTTP/3 request/response exchange on an `H3Connection`: the request
/// as the gateway sees it, the request body received so far, and the part
/// of the response the QUIC stream's send buffer has not taken yet.
///
/// Memory is bounded both ways. Request body: the connection stops reading
/// the QUIC stream while more than `bodyHighWater` bytes wait here for the
/// application, so the rest stays in QUIC's receive buffer, whose size the
/// stream's flow-control window bounds; the client is held by that window.
/// Such a stream is parked in QUIC (`setReadingParked`): its bytes do not
/// hold the connection's window, which the streams being read need.
/// Response: what QUIC's send buffer does not take waits in `pendingOut`
/// and makes ASGI `send()` wait past `H3Connection.highWater`; a WSGI
/// application waits in the call.
final class H3Stream {
    unowned(unsafe) let connection: H3Connection
    let id: UInt64
    var decoded: DecodedRequest
    var request: GatewayRequest!
    var exchange: HTTPExchange
    var accessLine: AccessLog.RequestLine?
    /// Metered until it ends (RequestMetering).
    var metered: MetricsProtocol?

    // Request body.
    var body = ByteBuffer()
    /// The request is complete (FIN after the body, or trailers).
    var bodyEnded = false
    /// Since when the ASGI application waits for body (nil: it does not).
    var bodyWaitSince: Instant?
    /// The stream was reset (either way) or the connection is gone: the
    /// application's reads and writes fail from now on.
    var reset = false
    /// The connection stopped reading this stream while the body buffer was
    /// full; it reads again as the application takes body.
    var readPaused = false

    // Response.
    /// Framed response bytes (HEADERS, DATA headers and payloads) the QUIC
    /// stream has not taken yet.
    var pendingOut = ByteBuffer()
    var pendingFile: PendingFile?
    /// The body's end follows `pendingOut`/`pendingFile`.
    var endAfterPending = false
    /// Trailer fields waiting for the pending body.
    var pendingTrailers: [(name: [UInt8], value: [UInt8])]?
    /// The response is complete and in the QUIC stream (FIN given).
    var responseEnded = false
    var drainWanted = false
    /// The application returned (WSGI) or the exchange ended (ASGI).
    var finishedByApplication = false

    var delegate: AsyncExchangeDelegate?
    /// In flight for --limit-concurrency (`Admission.ended` when it ends).
    var counted = false
    /// Set when an extended CONNECT opened a WebSocket over this stream
    /// (RFC 9220); see +WebSocket.
    var webSocket: H3WebSocket?
    /// Set when an extended CONNECT opened a WebTransport session on this
    /// stream; see H3Connection+WebTransport.
    var webTransport: H3WebTransportSession?

    /// Body bytes held here before the stream's reading pauses.
    static let bodyHighWater = 256 * 1024

    init(connection: H3Connection, id: UInt64, head: RequestHead) {
        self.connection = connection
        self.id = id
        exchange = HTTPExchange(isHead: DecodedRequest.isHead(head), declaredBodyLength: head.contentLength,
                                maxBody: connection.worker.config.maxBody, start: connection.worker.now,
                                expectsContinue: head.expectsContinue, minBodyRate: connection.worker.config.minBodyRate)
        decoded = DecodedRequest(head)
    }

    deinit {
        body.detach()?.deallocate()
        pendingOut.detach()?.deallocate()
        if let file = pendingFile { _ = csys_close(file.fd) }
    }

    var hasPendingOutput: Bool { pendingOut.readableCount > 0 || pendingFile != nil }
    var pendingOutputBytes: Int { pendingOut.readableCount + Int(pendingFile?.remaining ?? 0) }

    func prepareRequest(_ head: RequestHead, peer: PeerInfo) -> Bool {
        guard let r = decoded.gatewayRequest(head, httpVersion: "HTTP/3", isHead: exchange.isHead, peer: peer) else {
            return false
        }
        request = r
        return true
    }

    // MARK: - Request body

    func receive(_ bytes: UnsafeRawBufferPointer, end: Bool) {
        if !bytes.isEmpty { body.appendGrowing(bytes) }
        if end { bodyEnded = true }
    }

    /// Copies buffered body bytes out; a paused stream is read again once
    /// the buffer is low.
    func copyBody(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let n = min(buffer.count, body.readableCount)
        guard n > 0 else { return 0 }
        buffer.baseAddress!.copyMemory(from: body.readable.baseAddress!, byteCount: n)
        body.readerIndex += n
        if body.isEmpty { body.detach()?.deallocate() }
        if readPaused && body.readableCount < H3Stream.bodyHighWater / 2 {
            readPaused = false
            connection.quic.setReadingParked(stream: id, false)
            connection.resumeReading(self)
        }
        return n
    }

    // MARK: - Response

    /// A head the server sends itself (a refusal): planned by the exchange,
    /// framed like the application's.
    func encodeHead(_ head: ResponseHead, endStream: Bool) {
        writeHead(head, plan: exchange.beginResponse(head), endStream: endStream)
    }

    /// Encodes the response head the exchange planned: the application's
    /// fields, then `date` and `content-length`. A head over the client's
    /// field section limit becomes a bare 500.
    func writeHead(_ head: ResponseHead, plan: HTTPExchange.ResponsePlan, endStream: Bool) {
        let core = connection.core
        core.beginHeaders(streamID: id, status: plan.status)
        for f in head.fields { core.addField(name: f.name, value: f.value) }
        let requestID = request?.requestID
        if let requestID, !requestID.isSet(in: head.fields) {
            requestID.lowerName.withUnsafeBytes { name in requestID.value.withUnsafeBytes { core.addField(name: name, value: $0) } }
        }
        connection.worker.defaultFields?.lines(for: head.fields).forEach { core.addField(name: $0, value: $1) }
        addPlannedFields(plan)
        accessLine?.captureResponse(head.fields, contentLength: plan.contentLength,
                                    names: connection.worker.accessLog.responseFieldNames, requestID: requestID)
        var out = connection.takeScratch()
        if !core.endHeaders(into: &out) {
            // RFC 9114 §4.2.2: the client would refuse a section this big.
            core.beginHeaders(streamID: id, status: 500)
            var bare = plan
            bare.status = 500
            bare.contentLength = nil
            addPlannedFields(bare)
            _ = core.endHeaders(into: &out)
        }
        emit(out)
        connection.giveScratch(out)
        if endStream { endResponse() }
    }

    private func addPlannedFields(_ plan: HTTPExchange.ResponsePlan) {
        let core = connection.core
        if plan.addsDate && connection.worker.sendsDate {
            core.addField(name: H2Stream.dateName, value: connection.worker.date.bytes)
        }
        if let length = plan.contentLength {
            var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
            withUnsafeMutableBytes(of: &digits) { d in
                let n = H2Stream.decimal(length, into: d)
                core.addField(name: H2Stream.contentLengthName, value: UnsafeRawBufferPointer(rebasing: d[0..<n]))
            }
        }
    }

    /// Writes framed bytes to the QUIC stream in order: behind what is
    /// pending, or straight in, keeping what it does not take.
    func emit(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty, !reset else { return }
        if pendingOut.readableCount == 0 {
            let n = connection.quic.write(stream: id, bytes, fin: false)
            if n == bytes.count { return }
            pendingOut.appendGrowing(UnsafeRawBufferPointer(rebasing: bytes[n...]))
        } else {
            pendingOut.appendGrowing(bytes)
        }
        connection.enqueueForSending(self)
    }

    func emit(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { emit($0) }
    }

    /// Frames `bytes` as one DATA frame, if the stream's send buffer can
    /// take it now (`force`: queue it regardless). Returns how many body
    /// bytes were framed.
    func frame(_ bytes: UnsafeRawBufferPointer, force: Bool) -> Int {
        guard !reset, !bytes.isEmpty else { return 0 }
        var n = bytes.count
        if !force {
            guard pendingOut.readableCount == 0 else { return 0 }
            // Room for the frame header (at most 9 bytes) and the payload.
            n = min(n, connection.quic.sendBufferSpace(stream: id) - 9)
            if n <= 0 { return 0 }
        }
        var header: (UInt64, UInt64) = (0, 0)
        let headerLength = withUnsafeMutableBytes(of: &header) { h in H3Stream.dataHeader(length: n, into: h) }
        withUnsafeBytes(of: &header) { h in emit(UnsafeRawBufferPointer(rebasing: h[0..<headerLength])) }
        emit(UnsafeRawBufferPointer(rebasing: bytes[0..<n]))
        return n
    }

    /// A DATA frame header (RFC 9114 §7.2.1): type 0x00, then the length.
    static func dataHeader(length: Int, into h: UnsafeMutableRawBufferPointer) -> Int {
        h[0] = 0x00
        let v = UInt64(length)
        let n = QUICVarInt.encodedLength(v)
        // RFC 9000 §16: the two high bits of the first byte give the length.
        let prefix: UInt8 = n == 1 ? 0x00 : n == 2 ? 0x40 : n == 4 ? 0x80 : 0xC0
        for i in 0..<n { h[1 + i] = UInt8(truncatingIfNeeded: v >> UInt64(8 * (n - 1 - i))) }
        h[1] |= prefix
        return 1 + n
    }

    /// The response is complete: FIN once everything framed is in QUIC.
    func endResponse() {
        guard !responseEnded else { return }
        endAfterPending = true
        guard !hasPendingOutput, pendingTrailers == nil else {
            connection.enqueueForSending(self)
            return
        }
        responseEnded = true
        connection.core.endResponse(streamID: id)
        if !reset { connection.quic.finish(stream: id) }
        connection.checkDone(self)
    }

    /// Moves pending bytes into the QUIC stream as its send buffer frees,
    /// then the file, trailers and FIN that wait for them. True if anything
    /// moved.
    @discardableResult
    func pushPending() -> Bool {
        guard !reset else { return false }
        var progressed = false
        while pendingOut.readableCount > 0 {
            let n = connection.quic.write(stream: id, pendingOut.readable, fin: false)
            if n == 0 { break }
            progressed = true
            pendingOut.readerIndex += n
            if pendingOut.isEmpty { pendingOut.detach()?.deallocate() }
        }
        if pendingOut.readableCount == 0, var file = pendingFile {
            let scratch = connection.worker.fileScratch
            while file.remaining > 0 {
                let room = connection.quic.sendBufferSpace(stream: id) - 9
                let want = min(Int(file.remaining), scratch.count, room)
                if want <= 0 { break }
                let got = csys_pread(file.fd, scratch.baseAddress, want, file.offset)
                if got <= 0 {
                    if got < 0 && csys_eintr(csys_errno()) != 0 { continue }
                    // The file shrank: the body cannot be completed.
                    _ = csys_close(file.fd)
                    pendingFile = nil
                    connection.resetStream(self)
                    return true
                }
                let n = frame(UnsafeRawBufferPointer(rebasing: scratch[0..<got]), force: true)
                file.offset += Int64(n)
                file.remaining -= Int64(n)
                exchange.countOut(n)
                progressed = true
            }
            if file.remaining == 0 {
                _ = csys_close(file.fd)
                pendingFile = nil
            } else {
                pendingFile = file
            }
        }
        if !hasPendingOutput && endAfterPending && !responseEnded {
            if let trailers = pendingTrailers {
                pendingTrailers = nil
                let core = connection.core
                core.beginTrailers(streamID: id)
                for t in trailers {
                    t.name.withUnsafeBytes { n in t.value.withUnsafeBytes { v in core.addField(name: n, value: v) } }
                }
                var out = connection.takeScratch()
                if core.endHeaders(into: &out) { emit(out) }  // too big for the client: the body ends without them
                connection.giveScratch(out)
                if hasPendingOutput { return true }
            }
            endResponse()
            progressed = true
        }
        return progressed
    }
}
