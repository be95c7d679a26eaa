import Core
import Exchanges

/// A transport with no socket: the request body is bytes given up front
/// (and more that "arrive" while a blocking read waits), the clock moves
/// only when a wait passes, and every framing call is recorded as an event
/// the tests compare. What the exchange decides is then all there is to see.
final class FakeTransport: ExchangeTransport {
    enum Event: Equatable {
        case informational(Int)
        case head(status: Int, contentLength: Int64?, addsDate: Bool, bodyless: Bool, trailers: Bool)
        case body(String, end: Bool, blocking: Bool)
        case trailers([String])
        case file(count: Int64, end: Bool)
        case transmittedFile(count: Int64)
        case flush(blocking: Bool)
        case push
        case aborted
    }

    var exchange: HTTPExchange
    var now = Instant(nanoseconds: 1_000_000_000)
    var requestTimeoutMilliseconds = 30_000
    var events: [Event] = []

    // Request side.
    /// Body bytes buffered now.
    var buffered: [UInt8] = []
    /// The whole body has arrived (with what is buffered).
    var ended = false
    /// What each blocking wait brings, in turn; nil: the wait times out.
    var arrivals: [[UInt8]?] = []
    /// The body ends when the last arrival is in.
    var endsWithLastArrival = false
    /// The client goes away at the next wait.
    var goesAway = false
    /// A framing error the next take reports.
    var framingError: (status: Int, reason: StaticString)?
    var watching = false

    // Response side.
    /// Trailers survive this transport's framing (HTTP/1.0 would drop them).
    var carriesTrailers = true
    var sendsFiles = true
    /// What `pushOutput` reports.
    var pushResult = SendOutcome.done
    var closed = false
    weak var delegate: AsyncExchangeDelegate?

    init(isHead: Bool = false, declared: Int64? = nil, maxBody: Int64 = 1 << 20, expectsContinue: Bool = false) {
        exchange = HTTPExchange(isHead: isHead, declaredBodyLength: declared, maxBody: maxBody,
                                start: Instant(nanoseconds: 1_000_000_000), expectsContinue: expectsContinue)
    }

    var canSend: Bool { !closed }

    // MARK: Request body

    var bodyArrived: Bool { !buffered.isEmpty || ended }
    var bufferedBodyBytes: Int { buffered.count }
    var bodyComplete: Bool { ended && buffered.isEmpty }

    func takeBody(into buffer: UnsafeMutableRawBufferPointer) -> BodyTake {
        if let error = framingError { return .failed(status: error.status, reason: error.reason) }
        guard !buffered.isEmpty else { return ended ? .end : .wait }
        let n = min(buffer.count, buffered.count)
        buffered.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: n) }
        buffered.removeFirst(n)
        return .data(n)
    }

    func awaitBody(milliseconds: Int) -> BodyWait {
        if goesAway { return .gone }
        guard !arrivals.isEmpty, let bytes = arrivals.removeFirst() else {
            now = now.adding(milliseconds: milliseconds)
            return .idle
        }
        now = now.adding(milliseconds: 10)
        buffered += bytes
        if exchange.receiveBody(count: bytes.count) == .tooLarge { buffered.removeAll() }
        if endsWithLastArrival && arrivals.isEmpty { ended = true }
        return .progressed
    }

    func watchBody() { watching = true }

    func attach(_ delegate: AsyncExchangeDelegate) { self.delegate = delegate }

    // MARK: Response

    func frameInformational(status: Int, fields: UnsafeBufferPointer<ResponseField>) -> Bool {
        events.append(.informational(status))
        return true
    }

    func frameHead(_ head: ResponseHead, plan: HTTPExchange.ResponsePlan, trailers: Bool) -> Bool {
        let carried = trailers && carriesTrailers
        events.append(.head(status: plan.status, contentLength: plan.contentLength, addsDate: plan.addsDate,
                            bodyless: plan.bodyless, trailers: carried))
        return carried
    }

    func frameBody(_ bytes: UnsafeRawBufferPointer, end: Bool, blocking: Bool) -> Bool {
        guard !closed else { return false }
        events.append(.body(String(decoding: bytes, as: UTF8.self), end: end, blocking: blocking))
        return true
    }

    func frameTrailers(_ fields: UnsafeBufferPointer<ResponseField>) {
        events.append(.trailers(fields.map { String(decoding: $0.name, as: UTF8.self) }))
    }

    func transmitFile(fd: Int32, offset: Int64, count: Int64) -> Int64 {
        events.append(.transmittedFile(count: count))
        return count
    }

    func queueFile(fd: Int32, offset: Int64, count: Int64, end: Bool) {
        events.append(.file(count: count, end: end))
    }

    func flush(blocking: Bool) -> Bool {
        events.append(.flush(blocking: blocking))
        return !closed
    }

    func pushOutput() -> SendOutcome {
        events.append(.push)
        return closed ? .closed : pushResult
    }

    func abort() {
        events.append(.aborted)
        closed = true
    }
}

/// Response heads and bodies from Swift strings, for the tests.
extension FakeTransport {
    /// Runs `body` with a head of `status`, the given field names (empty
    /// values) and declared length.
    func withHead<R>(_ status: Int, length: Int64? = nil, fields: [StaticString] = [], _ body: (ResponseHead) -> R) -> R {
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        let list = fields.map { ResponseField(name: UnsafeRawBufferPointer(start: $0.utf8Start, count: $0.utf8CodeUnitCount), value: empty) }
        return list.withUnsafeBufferPointer { f in
            body(ResponseHead(status: status, reason: empty, fields: f, contentLength: length, close: false))
        }
    }

    @discardableResult
    func send(_ text: String, final: Bool) -> SendOutcome {
        var bytes = Array(text.utf8)
        return bytes.withUnsafeMutableBytes { sendBody(UnsafeRawBufferPointer($0), final: final) }
    }

    @discardableResult
    func send(_ text: String, flush: Bool = false) -> Bool {
        var bytes = Array(text.utf8)
        return bytes.withUnsafeMutableBytes { sendBody(UnsafeRawBufferPointer($0), flush: flush) }
    }

    /// Reads the body the blocking way until it ends or fails.
    func readAll() -> (body: String, last: BodyRead) {
        var out: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 4)
        while true {
            let r = scratch.withUnsafeMutableBytes { readBody(into: $0) }
            guard case .data(let n) = r else { return (String(decoding: out, as: UTF8.self), r) }
            out += scratch[0..<n]
        }
    }
}
