import CSys
import Core
import Gateway
import HTTP3
import HTTPFields
import QUIC
import TLS

/// HTTP/3 on one QUIC connection (RFC 9114). The sans-I/O `H3Session`
/// does the protocol; this class moves bytes between it and the QUIC
/// connection's streams, and between its request streams and the gateway.
/// The QUIC connection itself (packets, loss, flow control) belongs to the
/// worker's `QUICService` and its endpoint.
///
/// Input: for each stream with new in-order bytes, the bytes are offered to
/// the session as they sit in QUIC's receive buffer, and what it consumed
/// is released (and its flow-control credit returned). Request body is
/// copied into the request's `H3Stream`; a stream whose body the
/// application is slow to read stops being offered (see `H3Stream`).
///
/// Output: the session frames heads and DATA headers; the bytes go into
/// the QUIC streams, and the service sends datagrams.
///
/// ASGI: every request is a task of its own. WSGI: requests queue in the
/// service, which runs them one at a time for the whole worker.
final class H3Connection {
    unowned(unsafe) let service: QUICService
    let quic: QUICConnection
    let core: H3Session
    /// Who the peer is for the requests it makes from now on: it follows
    /// the QUIC connection when the client moves (RFC 9000 §9).
    private(set) var peer: PeerInfo
    var streams: [UInt64: H3Stream] = [:]
    /// WebTransport sessions and streams (H3Connection+WebTransport): made
    /// on first use (`makeWebTransport`), as most connections never use
    /// WebTransport; nil until then, and always when the worker does not
    /// offer it.
    var webTransport: H3WebTransport?
    private(set) var closed = false
    /// Where a graceful shutdown stands (H3Connection+Shutdown.swift).
    var shutdown = H3ShutdownPhase.serving
    /// In the service's list of connections shutting down.
    var shutdownWatched = false
    /// --max-connection-age: past it, the next request begins a graceful
    /// shutdown (nil: no limit).
    private let ageDeadline: Instant?
    /// Streams with response bytes QUIC has not taken yet.
    private var sendQueue: [H3Stream] = []
    /// Streams whose sender waits for output to drain (ASGI backpressure).
    private var drainWaiters: [H3Stream] = []
    /// Bytes of our control and QPACK streams QUIC has not taken yet.
    private var localPending: [[UInt8]] = [[], [], []]
    /// Streams whose held bytes must be offered again (QPACK unblocked them,
    /// or their body buffer drained).
    private var refeed: [UInt64] = []
    private var scratch: [UInt8] = []
    /// The stream `feed` is offering (events for others were released by QPACK).
    private var feeding: UInt64?

    /// Response bytes pending in one stream before its ASGI sender waits.
    static let highWater = 256 * 1024
    static let lowWater = 64 * 1024

    var worker: Worker { service.worker }

    init(service: QUICService, quic: QUICConnection) {
        self.service = service
        self.quic = quic
        core = H3Session(template: service.sessionTemplate, greaseSeed: UInt64.random(in: 0...UInt64.max),
                         headerScratch: service.headerScratch)
        peer = H3Connection.peerInfo(quic)
        ageDeadline = service.worker.admission.connectionDeadline(now: service.worker.now)
    }

    /// Our control stream and QPACK streams (RFC 9114 §6.2: first, in this
    /// order, so their IDs are the ones `H3LocalStream` names).
    func start() {
        // They live as long as the connection (AllocationZone); what is
        // written on them does not.
        let zone = AllocationZone.connection.enter()
        for s in H3LocalStream.allCases {
            guard let id = quic.openUnidirectionalStream(), id == s.streamID else {
                AllocationZone.restore(zone)
                // RFC 9114 §6.2: a client must allow at least three.
                fail(.streamCreationError, "the client allows fewer than three unidirectional streams")
                return
            }
        }
        AllocationZone.restore(zone)
        writeLocalOutput()
    }

    // MARK: - Input from QUIC

    func peerOpened(_ id: UInt64) {
        guard !closed else { return }
        if let e = core.peerOpened(streamID: id) { handle(e) }
        afterInput()
    }

    func readable(_ id: UInt64) {
        guard !closed else { return }
        feed(id)
        afterInput()
    }

    /// Offers `id`'s readable bytes to the session until it takes no more.
    private func feed(_ id: UInt64) {
        if isWebTransportStream(id) { feedWebTransport(id); return }
        if let s = streams[id], s.readPaused { return }
        let outer = feeding
        feeding = id
        defer { feeding = outer }
        var progressed = true
        while progressed && !closed {
            progressed = false
            // Handed over to WebTransport meanwhile: the rest is its.
            if isWebTransportStream(id) { feedWebTransport(id); return }
            _ = quic.withReadableBytes(stream: id) { bytes, fin -> (consumed: Int, result: Void) in
                var offset = 0
                while !closed {
                    let (event, n) = core.receive(streamID: id, UnsafeRawBufferPointer(rebasing: bytes[offset...]), fin: fin)
                    offset += n
                    guard let event else { break }
                    handle(event)
                    if let s = streams[id], s.readPaused { break }
                    if isWebTransportStream(id) { break }
                }
                // A stream paused by its body buffer stops here: the rest
                // waits in QUIC (parked) until the application reads.
                progressed = offset > 0 && offset < bytes.count && !(streams[id]?.readPaused ?? false)
                return (offset, ())
            }
        }
    }

    func peerReset(_ id: UInt64, code: UInt64) {
        guard !closed else { return }
        if isWebTransportStream(id) {
            webTransportPeerReset(id, code: code)
            afterInput()
            return
        }
        if let e = core.peerReset(streamID: id, code: H3ErrorCode(rawValue: code)) { handle(e) }
        afterInput()
    }

    func peerStopSending(_ id: UInt64, code: UInt64) {
        guard !closed else { return }
        if isWebTransportStream(id) {
            webTransportPeerStopSending(id, code: code)
            afterInput()
            return
        }
        if let e = core.peerStopSending(streamID: id, code: H3ErrorCode(rawValue: code)) { handle(e) }
        afterInput()
    }

    /// The QUIC stream's send buffer has room again.
    func writable(_ id: UInt64) {
        guard !closed else { return }
        if let local = H3LocalStream(streamID: id) {
            flushLocal(local)
            return
        }
        if isWebTransportStream(id) {
            webTransportWritable(id)
            return
        }
        guard let s = streams[id] else { return }
        s.pushPending()
        if !s.hasPendingOutput { sendQueue.removeAll { $0 === s } }
        checkDone(s)
        notifyDrained()
    }

    private func handle(_ event: H3Event) {
        switch event {
        case .request(let id, let head, let endStream):
            open(id, head, endStream: endStream)
            // Released by QPACK while another stream was fed: its held
            // bytes (the body after the head) are offered again.
            if id != feeding { refeed.append(id) }
        case .data(let id, let bytes, let end):
            guard let s = streams[id] else { return }
            if s.webSocket != nil {
                s.webSocketData(bytes, end: end)
                return
            }
            if s.webTransport != nil {
                webTransportConnectData(s, bytes, end: end)
                return
            }
            // A body without Content-Length is held to --max-body as it
            // grows (a declared one over it was refused with the head): past
            // it, reads fail with 413 and the bytes are dropped, their
            // flow-control credit returned (as over HTTP/2).
            if s.exchange.receiveBody(count: bytes.count) == .tooLarge {
                if end { s.bodyEnded = true }
            } else {
                s.receive(bytes, end: end)
            }
            if s.body.readableCount >= H3Stream.bodyHighWater && !s.readPaused {
                // Parked in QUIC too: what the client sends meanwhile waits
                // in the stream's window without taking the connection's
                // from the streams that are read (a WSGI request running
                // while others queue behind it).
                s.readPaused = true
                quic.setReadingParked(stream: id, true)
            }
            service.wakeReader(s)
        case .trailers(let id, _):
            if id != feeding { refeed.append(id) }
            guard let s = streams[id] else { return }
            if s.webSocket != nil {
                // Trailers end a WebSocket's stream like a FIN.
                s.webSocketData(UnsafeRawBufferPointer(start: nil, count: 0), end: true)
                return
            }
            if s.webTransport != nil {
                webTransportConnectData(s, UnsafeRawBufferPointer(start: nil, count: 0), end: true)
                return
            }
            s.bodyEnded = true
            service.wakeReader(s)
        case .streamReset(let id, _):
            quic.resetStream(id, errorCode: H3ErrorCode.requestCancelled.rawValue)
            quic.stopSending(id, errorCode: H3ErrorCode.requestCancelled.rawValue)
            if let s = streams[id] { dropStream(s, disconnected: true) }
        case .streamError(let id, let code, _):
            quic.resetStream(id, errorCode: code.rawValue)
            quic.stopSending(id, errorCode: code.rawValue)
            if let s = streams[id] { dropStream(s, disconnected: true) }
        case .headTooLarge(let id, let response):
            _ = quic.write(stream: id, response, fin: true)
            quic.stopSending(id, errorCode: H3ErrorCode.noError.rawValue)
        case .unknownStreamIgnored(let id, let code):
            quic.stopSending(id, errorCode: code.rawValue)
        case .webTransportStream(let id, let bidirectional):
            webTransportStreamOpened(id, bidirectional: bidirectional)
        case .settings(let settings):
            webTransport?.registry.peerSettingsReceived(settings)
            webTransportProgress()
        case .goAway:
            // The client's GOAWAY limits server push (RFC 9114 §5.2), which
            // we never use: nothing changes for its requests.
            break
        case .connectionError(let code, let reason):
            fail(code, "\(reason)")
        }
    }

    /// A new request.
    private func open(_ id: UInt64, _ head: RequestHead, endStream: Bool) {
        let s = H3Stream(connection: self, id: id, head: head)
        s.bodyEnded = endStream
        streams[id] = s
        // This request is served either way: GOAWAY announces, and the real
        // identifier is above it (H3Connection+Shutdown).
        if let ageDeadline, worker.now >= ageDeadline {
            beginShutdown()  // --max-connection-age
        } else if worker.draining {
            announceGoingAway()  // --drain-delay: new requests go elsewhere
        }
        guard s.prepareRequest(head, peer: peer) else {
            // CONNECT: nothing here serves it (RFC 9114 §4.4).
            respondDirectly(s, status: 501)
            return
        }
        if let resolver = worker.forwardedResolver { s.request.resolveForwarded(resolver) }
        if head.protocolName.count > 0 {
            let name = UnsafeRawBufferPointer(start: s.decoded.storage.baseAddress! + head.protocolName.start,
                                              count: head.protocolName.count)
            if service.sessionTemplate.webTransport != nil, let draft = WebTransportDraft.requested(byProtocol: name) {
                openWebTransport(s, draft: draft)
                return
            }
            webTransport?.registry.ordinaryRequest(streamID: id)
            // An extended CONNECT (RFC 9220): a WebSocket, or a refusal.
            openWebSocket(s, protocolName: head.protocolName)
            return
        }
        webTransport?.registry.ordinaryRequest(streamID: id)
        if let status = s.exchange.refusal {
            worker.metrics.rejected(status: status)
            respondDirectly(s, status: status)
            return
        }
        switch worker.admission.admit(path: s.request.bytes(s.request.path)) {
        case .health:
            respondDirectly(s, status: worker.draining ? 503 : 200)
            return
        case .overLimit:
            worker.metrics.rejected(status: 503)
            if worker.accessLog.enabled { worker.accessLog.recordRejected(status: 503, peer: peer) }
            respondDirectly(s, status: 503, field: Admission.retryAfter)
            return
        case .application:
            s.counted = true
        }
        if let ids = worker.requestIDs { s.request.requestID = ids.assign(s.request) }
        s.accessLine = worker.accessLog.requestLine(s.request)
        worker.requestsServed += 1
        meterBegin(s)
        if let asgi = worker.asgi {
            asgi.start(s.request, exchange: s)
        } else {
            service.enqueue(s)
        }
    }

    /// A response the server makes itself (the application never sees the
    /// request): the status and its reason phrase as the body, with at most
    /// one extra field.
    func respondDirectly(_ s: H3Stream, status: Int, field: ResponseField? = nil) {
        let reason = ReasonPhrase.reason(status)
        let body = UnsafeRawBufferPointer(start: reason.utf8Start, count: reason.utf8CodeUnitCount)
        var extra = field ?? ResponseField(name: body, value: body)
        withUnsafePointer(to: &extra) { p in
            let fields = UnsafeBufferPointer<ResponseField>(start: p, count: field == nil ? 0 : 1)
            s.encodeHead(ResponseHead(status: status, reason: body, fields: fields, contentLength: Int64(body.count), close: false),
                         endStream: false)
        }
        _ = s.frame(s.admitted(body), force: true)
        s.endResponse()
    }

    /// After a batch of input: held streams are offered their bytes again,
    /// our streams' output is written, and a finished session closes.
    func afterInput() {
        while !refeed.isEmpty && !closed {
            let ids = refeed
            refeed.removeAll()
            for id in ids { feed(id) }
        }
        guard !closed else { return }
        writeLocalOutput()
        if worker.stopping { beginShutdown() }
    }

    /// Stream `id`'s bytes are offered again after this batch of input.
    func refeedLater(_ id: UInt64) { refeed.append(id) }

    /// An application read body and the stream's buffer is low again.
    func resumeReading(_ s: H3Stream) {
        refeed.append(s.id)
        // During the service's input handling, `afterInput` follows anyway;
        // from an application (an ASGI task, a WSGI read) the bytes are read
        // now and the flow-control credit they return leaves at once.
        guard !service.handlingInput, !closed else { return }
        afterInput()
        service.flush()
    }

    // MARK: - Our unidirectional streams

    /// Our control or QPACK streams have bytes QUIC has not taken yet.
    var hasLocalOutput: Bool { core.hasPendingOutput || localPending.contains { !$0.isEmpty } }

    func writeLocalOutput() {
        guard core.hasPendingOutput || localPending.contains(where: { !$0.isEmpty }) else { return }
        for s in H3LocalStream.allCases {
            core.writeOutput(for: s, into: &localPending[s.rawValue])
            flushLocal(s)
        }
    }

    private func flushLocal(_ s: H3LocalStream) {
        guard !localPending[s.rawValue].isEmpty else { return }
        let n = localPending[s.rawValue].withUnsafeBytes { quic.write(stream: s.streamID, $0, fin: false) }
        if n == localPending[s.rawValue].count {
            // Written once in a while (the SETTINGS, a GOAWAY, QPACK decoder
            // instructions): an idle connection keeps no buffer for them.
            localPending[s.rawValue] = []
        } else {
            localPending[s.rawValue].removeFirst(n)
        }
    }

    /// Gives back what finished requests left in this connection's maps
    /// and lists, and the response scratch buffer (the connection is idle:
    /// QUICService's idle release, issue 15).
    func releaseIdleMemory() {
        if streams.isEmpty {
            streams = [:]
            // No request in flight: no environ or scope is built from them.
            peer.tls?.releaseCachedObjects()
        }
        if sendQueue.isEmpty { sendQueue = [] }
        if drainWaiters.isEmpty { drainWaiters = [] }
        if refeed.isEmpty { refeed = [] }
        scratch = []
        core.releaseIdleMemory()
    }

    // MARK: - Output

    func takeScratch() -> [UInt8] {
        var s: [UInt8] = []
        swap(&s, &scratch)
        s.removeAll(keepingCapacity: true)
        return s
    }

    func giveScratch(_ s: [UInt8]) {
        if s.capacity <= 64 * 1024 { scratch = s }
    }

    func enqueueForSending(_ s: H3Stream) {
        if !sendQueue.contains(where: { $0 === s }) { sendQueue.append(s) }
        if !offerQueued {
            offerQueued = true
            service.offerLater(self)
        }
    }

    /// Queued with the service for `offerPending` after input.
    var offerQueued = false

    /// Gives each stream with pending response bytes the QUIC send room that
    /// acknowledgements freed (QUIC reports no event for that unless a write
    /// was cut short). True while some stream still has bytes waiting.
    func offerPending() -> Bool {
        // A stream that completes leaves the queue inside (checkDone).
        for s in sendQueue where !s.reset {
            s.pushPending()
            checkDone(s)
        }
        sendQueue.removeAll { $0.reset || (!$0.hasPendingOutput && ($0.responseEnded || !$0.endAfterPending)) }
        notifyDrained()
        return !sendQueue.isEmpty && !closed
    }

    func waitForDrain(_ s: H3Stream) {
        guard !s.drainWanted else { return }
        s.drainWanted = true
        drainWaiters.append(s)
    }

    private func notifyDrained() {
        guard !drainWaiters.isEmpty else { return }
        let waiters = drainWaiters
        drainWaiters.removeAll(keepingCapacity: true)
        for s in waiters {
            guard s.drainWanted, !s.reset else { s.drainWanted = false; continue }
            guard s.pendingOutputBytes < H3Connection.lowWater else { drainWaiters.append(s); continue }
            s.drainWanted = false
            s.delegate?.outputDrained()
            s.webSocket?.conversation?.outputDrained()
        }
    }

    func waitForBody(_ s: H3Stream) {
        service.waitForBody(s)
    }

    // MARK: - Stream endings

    /// Ends the stream once its response is in QUIC completely.
    func checkDone(_ s: H3Stream) {
        guard s.responseEnded, !s.hasPendingOutput, streams[s.id] === s else { return }
        if s.webSocket != nil {
            // The peer gets a moment to end its side too (RFC 9220 §3).
            if s.lingerForPeerEnd() { return }
            webSocketEnded(s)
        }
        streams[s.id] = nil
        // A WebTransport session's peer ends its side after our FIN (draft-02
        // §5, current draft §6): no STOP_SENDING, which a browser takes for a
        // failed opening when the close follows the 200 at once.
        let session = s.webTransport != nil
        if session { webTransportEnded(s) }
        sendQueue.removeAll { $0 === s }
        if !s.bodyEnded && !session {
            // RFC 9114 §4.1: a complete response before the whole request;
            // the client may stop sending (STOP_SENDING with H3_NO_ERROR).
            core.stopReading(streamID: s.id)
            quic.stopSending(s.id, errorCode: H3ErrorCode.noError.rawValue)
        }
        s.body.detach()?.deallocate()
        endCounted(s)
        record(s)
        let d = s.delegate
        s.delegate = nil
        d?.exchangeEnded(disconnected: false)
        // The last request of a shutdown: the close waits for its response
        // to be acknowledged (H3Connection+Shutdown).
        if shutdown.isUnderway { _ = advanceShutdown(now: worker.now) }
    }

    /// The stream counted for --limit-concurrency ended.
    private func endCounted(_ s: H3Stream) {
        meterEnd(s)
        guard s.counted else { return }
        s.counted = false
        worker.admission.ended()
    }

    /// A WSGI application returned: a response it did not complete is cut.
    func applicationReturned(_ s: H3Stream) {
        if !s.reset && !s.responseEnded { resetStream(s) }
        checkDone(s)
    }

    /// Gives the stream up from our side (an application error, a stalled
    /// client) and tells its application.
    func resetStream(_ s: H3Stream) {
        guard !s.reset else { return }
        let code = s.exchange.headSent ? H3ErrorCode.requestCancelled : H3ErrorCode.internalError
        core.resetStream(streamID: s.id)
        quic.resetStream(s.id, errorCode: code.rawValue)
        quic.stopSending(s.id, errorCode: code.rawValue)
        dropStream(s, disconnected: true)
    }

    /// The stream is gone (reset either way, or the connection failed).
    func dropStream(_ s: H3Stream, disconnected: Bool) {
        s.reset = true
        if streams[s.id] === s { streams[s.id] = nil }
        sendQueue.removeAll { $0 === s }
        if s.webSocket != nil { webSocketEnded(s) }
        if s.webTransport != nil { webTransportEnded(s) }
        s.body.detach()?.deallocate()
        if let file = s.pendingFile {
            _ = csys_close(file.fd)
            s.pendingFile = nil
        }
        endCounted(s)
        if s.exchange.headSent || s.accessLine != nil { record(s) }
        service.wakeReader(s)
        let d = s.delegate
        s.delegate = nil
        d?.exchangeEnded(disconnected: disconnected)
    }

    func record(_ s: H3Stream) {
        guard let line = s.accessLine else { return }
        s.accessLine = nil
        worker.accessLog.record(line, s.exchange, peer: peer, now: worker.now)
    }

    // MARK: - Connection

    /// The end of a graceful shutdown: everything sent was acknowledged.
    func closeNormally() {
        guard !closed else { return }
        quic.close(errorCode: H3ErrorCode.noError.rawValue, reason: [], application: true)
        teardown()
    }

    func fail(_ code: H3ErrorCode, _ reason: String) {
        guard !closed else { return }
        Log.debug("HTTP/3 connection error 0x\(String(code.rawValue, radix: 16)): \(reason)")
        quic.close(errorCode: code.rawValue, reason: Array(reason.utf8.prefix(64)), application: true)
        teardown()
    }

    /// Past --graceful-timeout: closed at once.
    func cut() {
        guard !closed else { return }
        quic.close(errorCode: H3ErrorCode.requestCancelled.rawValue, reason: [], application: true)
        teardown()
    }

    /// The client moved to another address (or back): requests started
    /// from now on see it (ASGI `client`, the access log).
    func peerAddressChanged() {
        peer = H3Connection.peerInfo(quic)
    }

    /// The QUIC connection ended (idle, the peer closed it, or we did).
    func quicClosed(_ reason: QUICCloseReason) {
        teardown()
    }

    /// Every stream's application learns it is disconnected.
    private func teardown() {
        guard !closed else { return }
        closed = true
        for s in Array(streams.values) { dropStream(s, disconnected: true) }
        sendQueue.removeAll()
        drainWaiters.removeAll()
        service.connectionEnded(self)
    }

    // MARK: - Who the peer is

    private static func peerInfo(_ quic: QUICConnection) -> PeerInfo {
        let path = quic.path
        let address: PeerAddress = path.peer.family == .ipv4
            ? .ip(IPAddress(ipv4: path.peer.ipv4Value))
            : .ip(IPAddress(ipv6High: path.peer.high, low: path.peer.low))
        let info = PeerInfo(address: address, remoteAddress: path.peer.text, remotePort: Int(path.peer.port),
                            serverName: path.local.text, serverPort: Int(path.local.port), isUnix: false, scheme: "https")
        info.tls = TLSInfo.quic(quic)
        return info
    }
}
