import CSys
import Core
import Gateway
import HTTP2

/// One HTTP/2 request/response exchange on an `H2Session`: the request as
/// the gateway sees it (its decoded fields are owned here for the whole
/// exchange), the request body received so far, and the part of the
/// response the peer's flow-control windows have not taken yet.
///
/// The body buffer is bounded by the stream window we advertise: window is
/// only given back (`H2Connection.consumed`) as the application reads, so a
/// client cannot make it grow. Response bytes beyond what the windows and
/// the session's output high-water mark allow stay in `pendingOut` (ASGI)
/// and make `send()` wait; a WSGI application simply waits in the call.
final class H2Stream {
    unowned(unsafe) let session: H2Session
    /// Changes only when the session reuses this object for a new stream
    /// (H2Session+StreamPool), every other property reset with it.
    private(set) var id: UInt32
    /// The decoded request, owned for the whole exchange (spans point into it).
    var decoded: DecodedRequest
    var request: GatewayRequest!
    /// The request's bookkeeping and decisions (body limits, the response
    /// head's status, date and length, what the access log reports).
    var exchange: HTTPExchange
    var accessLine: AccessLog.RequestLine?
    /// Metered until it ends (RequestMetering).
    var metered: MetricsProtocol?

    // Request body.
    var body = ByteBuffer()
    /// END_STREAM (or trailers) arrived.
    var bodyEnded = false
    /// Since when the ASGI application waits for body (nil: it does not).
    var bodyWaitSince: Instant?
    /// The peer reset the stream, or it was reset for an error: the
    /// application's reads and writes fail from now on.
    var reset = false

    // Response.
    /// Response bytes the windows have not taken yet (ASGI).
    var pendingOut = ByteBuffer()
    var pendingFile: PendingFile?
    /// END_STREAM goes out once `pendingOut`/`pendingFile` are framed.
    var endAfterPending = false
    /// Trailer fields waiting for the pending body, as encoded name/value pairs.
    var pendingTrailers: [(name: [UInt8], value: [UInt8])]?
    /// The response is complete: END_STREAM is in the session's output.
    var responseEnded = false
    var drainWanted = false

    // ASGI.
    var delegate: AsyncExchangeDelegate?

    /// Set when an extended CONNECT opened a WebSocket over this stream
    /// (RFC 8441); see +WebSocket.
    var webSocket: H2WebSocket?

    init(session: H2Session, id: UInt32, head: H2RequestHead) {
        self.session = session
        self.id = id
        exchange = H2Stream.exchange(for: head, session: session)
        decoded = DecodedRequest(head)
    }

    private static func exchange(for head: H2RequestHead, session: H2Session) -> HTTPExchange {
        HTTPExchange(isHead: DecodedRequest.isHead(head), declaredBodyLength: head.contentLength,
                     maxBody: session.worker.config.maxBody, start: session.worker.now,
                     expectsContinue: head.expectsContinue, minBodyRate: session.worker.config.minBodyRate)
    }

    /// Makes this ended stream's object stream `id`, as new: every stored
    /// property below gets the value `init` gives it (RFC 9113 §5.1: a new
    /// stream starts idle, with nothing of another). Only the session's
    /// pool calls this, and only when nothing else refers to the object.
    func reuse(id: UInt32, head: H2RequestHead) {
        self.id = id
        decoded.refill(head)
        request = nil
        exchange = H2Stream.exchange(for: head, session: session)
        accessLine = nil
        metered = nil
        body.detach()?.deallocate()
        body = ByteBuffer()
        bodyEnded = false
        bodyWaitSince = nil
        reset = false
        pendingOut.detach()?.deallocate()
        pendingOut = ByteBuffer()
        if let file = pendingFile { _ = csys_close(file.fd) }
        pendingFile = nil
        endAfterPending = false
        pendingTrailers = nil
        responseEnded = false
        drainWanted = false
        delegate = nil
        webSocket = nil
        counted = false
        retired = false
    }

    deinit {
        body.detach()?.deallocate()
        pendingOut.detach()?.deallocate()
        if let file = pendingFile { _ = csys_close(file.fd) }
    }

    /// Counted in flight for --limit-concurrency until it ends (Admission).
    var counted = false
    /// Ended and handed to the session's pool (H2Session+StreamPool).
    var retired = false

    var hasPendingOutput: Bool { pendingOut.readableCount > 0 || pendingFile != nil }
    var pendingOutputBytes: Int { pendingOut.readableCount + Int(pendingFile?.remaining ?? 0) }

    /// Builds the gateway's view of the request (see DecodedRequest). False
    /// for a CONNECT request, which no application here can serve.
    func prepareRequest(_ head: H2RequestHead, peer: PeerInfo) -> Bool {
        guard let r = decoded.gatewayRequest(head, httpVersion: "HTTP/2", isHead: exchange.isHead, peer: peer) else {
            return false
        }
        request = r
        return true
    }

    // MARK: - Request body

    /// DATA for this stream: kept until the application reads it.
    func receive(_ bytes: UnsafeRawBufferPointer, end: Bool) {
        if !bytes.isEmpty { body.appendGrowing(bytes) }
        if end { bodyEnded = true }
    }

    /// Copies buffered body bytes out and gives their window back.
    func copyBody(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let n = min(buffer.count, body.readableCount)
        guard n > 0 else { return 0 }
        buffer.baseAddress!.copyMemory(from: body.readable.baseAddress!, byteCount: n)
        body.readerIndex += n
        if body.isEmpty { body.readerIndex = 0; body.writerIndex = 0 }
        session.core.consumed(streamID: id, n)
        return n
    }

    /// Body bytes the application never read: their window goes back so the
    /// connection window is not lost with the stream.
    func releaseBody() {
        let left = body.readableCount
        if left > 0 { session.core.consumed(streamID: id, left) }
        body.detach()?.deallocate()
    }

    // MARK: - Response

    /// A head the server sends itself (a refusal, a WebSocket's answer):
    /// planned by the exchange, framed like the application's.
    func encodeHead(_ head: ResponseHead, endStream: Bool) {
        writeHead(head, plan: exchange.beginResponse(head), endStream: endStream)
    }

    /// Encodes the response head the exchange planned: the application's
    /// fields, then `date` and `content-length` as HTTP/1.1 adds them.
    func writeHead(_ head: ResponseHead, plan: HTTPExchange.ResponsePlan, endStream: Bool) {
        session.core.beginHeaders(streamID: id, status: plan.status)
        for f in head.fields { session.core.addField(name: f.name, value: f.value) }
        let requestID = request?.requestID
        if let requestID, !requestID.isSet(in: head.fields) {
            requestID.lowerName.withUnsafeBytes { name in requestID.value.withUnsafeBytes { session.core.addField(name: name, value: $0) } }
        }
        addServerFields(plan, fields: head.fields)
        accessLine?.captureResponse(head.fields, contentLength: plan.contentLength,
                                    names: session.worker.accessLog.responseFieldNames, requestID: requestID)
        if let length = plan.contentLength {
            var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
            withUnsafeMutableBytes(of: &digits) { d in
                let n = H2Stream.decimal(length, into: d)
                session.core.addField(name: H2Stream.contentLengthName, value: UnsafeRawBufferPointer(rebasing: d[0..<n]))
            }
        }
        session.core.endHeaders(endStream: endStream)
        if endStream { responseEnded = true }
    }

    /// Frames as much of `bytes` as the windows and the output high-water
    /// mark allow; returns how many were taken.
    func frame(_ bytes: UnsafeRawBufferPointer, end: Bool) -> Int {
        let room = session.outputRoom
        let n = min(bytes.count, room)
        if n == 0 && !(bytes.isEmpty && end) { return 0 }
        let taken = session.core.sendData(streamID: id, UnsafeRawBufferPointer(rebasing: bytes[0..<n]),
                                          endStream: end && n == bytes.count)
        if end && taken == bytes.count { responseEnded = true }
        return taken
    }

    /// Moves pending response bytes into the session's output as the
    /// windows allow; then the trailers or END_STREAM that wait for them.
    /// Returns true if anything was framed.
    @discardableResult
    func pushPending() -> Bool {
        var progressed = false
        while pendingOut.readableCount > 0 {
            let end = endAfterPending && pendingFile == nil && pendingTrailers == nil
            let n = frame(pendingOut.readable, end: end)
            if n == 0 { break }
            progressed = true
            pendingOut.readerIndex += n
            if pendingOut.isEmpty { pendingOut.detach()?.deallocate() }
        }
        if pendingOut.readableCount == 0, var file = pendingFile {
            let scratch = session.worker.fileScratch
            while file.remaining > 0 {
                let want = min(Int(file.remaining), scratch.count, session.outputRoom, session.core.sendWindow(streamID: id))
                if want <= 0 { break }
                let got = csys_pread(file.fd, scratch.baseAddress, want, file.offset)
                if got <= 0 {
                    if got < 0 && csys_eintr(csys_errno()) != 0 { continue }
                    // The file shrank: the body cannot be completed.
                    _ = csys_close(file.fd)
                    pendingFile = nil
                    session.resetStream(self, code: .internalError)
                    return true
                }
                let last = Int64(got) == file.remaining && endAfterPending && pendingTrailers == nil
                let n = frame(UnsafeRawBufferPointer(rebasing: scratch[0..<got]), end: last)
                file.offset += Int64(n)
                file.remaining -= Int64(n)
                exchange.countOut(n)
                progressed = true
                if n < got { break }
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
                session.core.beginTrailers(streamID: id)
                for t in trailers {
                    t.name.withUnsafeBytes { n in t.value.withUnsafeBytes { v in session.core.addField(name: n, value: v) } }
                }
                session.core.endHeaders(endStream: true)
                pendingTrailers = nil
                responseEnded = true
            } else {
                _ = frame(UnsafeRawBufferPointer(start: nil, count: 0), end: true)
            }
            progressed = true
        }
        return progressed
    }

    /// What the server adds after the application's fields: the operator's
    /// defaults it did not override, `date`, `alt-svc`.
    func addServerFields(_ plan: HTTPExchange.ResponsePlan, fields: UnsafeBufferPointer<ResponseField>) {
        let w = session.worker
        w.defaultFields?.lines(for: fields).forEach { session.core.addField(name: $0, value: $1) }
        if plan.addsDate && w.sendsDate { session.core.addField(name: H2Stream.dateName, value: w.date.bytes) }
        addAltSvc(plan)
    }

    /// HTTP/3 advertised (AltSvcAdvert): over TLS only, not over h2c.
    func addAltSvc(_ plan: HTTPExchange.ResponsePlan) {
        guard !plan.hasAltSvc, session.connection.tls != nil, let altSvc = session.worker.altSvc else { return }
        session.core.addField(name: AltSvcAdvert.fieldName, value: altSvc.bytes)
    }

    static var dateName: UnsafeRawBufferPointer { bytes("date") }
    static var contentLengthName: UnsafeRawBufferPointer { bytes("content-length") }

    @inline(__always)
    static func bytes(_ s: StaticString) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount)
    }

    /// Writes `value` in decimal; returns the digit count.
    static func decimal(_ value: Int64, into d: UnsafeMutableRawBufferPointer) -> Int {
        var v = UInt64(max(value, 0))
        var tmp: (UInt64, UInt64, UInt64) = (0, 0, 0)
        return withUnsafeMutableBytes(of: &tmp) { t in
            var i = 0
            repeat {
                t[i] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
                i += 1
            } while v > 0
            for j in 0..<i { d[j] = t[i - 1 - j] }
            return i
        }
    }
}
