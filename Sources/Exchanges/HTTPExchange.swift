import Core

/// One request and its response, whatever carries them (an HTTP/1.1
/// connection, an HTTP/2 stream, later an HTTP/3 stream): the per-request
/// bookkeeping, and every decision about the exchange that does not depend
/// on how its bytes are framed.
///
/// A transport makes one when a request head arrives, asks it what to do
/// at each step, and frames what it is told:
///
///     var exchange = HTTPExchange(isHead: ..., declaredBodyLength: ..., maxBody: ..., start: now)
///     if let status = exchange.refusal { answer `status` without the application }
///     body bytes arrive:  exchange.receiveBody(count: n)  -> .tooLarge: the reader gets 413
///     the client stalls:  exchange.failBody(status: 408) (or 0: gone, 400: bad framing)
///     the head is sent:   let plan = exchange.beginResponse(head)  -> status, bodyless, date, content-length
///     body is given:      let n = exchange.admitBody(count)  -> at most what the declared length allows
///     body is sent:       exchange.countOut(n)
///     at the last byte:   if exchange.bodyEndedShort() { abort: the client must see a truncated response }
///     the response ends:  exchange.completeResponse()
///     at the end:         access log from `status`, `bytesOut`, `start`
///
/// What stays with the transport is framing: HTTP/1.1's choice between
/// Content-Length, chunked and close-delimited bodies and the keep-alive
/// decision (`HTTP1`), HTTP/2's HEADERS and DATA frames (`HTTP2`).
///
/// No clock is read here: the transport passes the worker's reading.
public struct HTTPExchange: Sendable {
    /// The request's method is HEAD: the response has no body (RFC 9110 §9.3.2).
    public let isHead: Bool
    /// When the request head was complete (the access log's start).
    public let start: Instant
    /// --max-body.
    public let maxBody: Int64
    /// The request's Content-Length, when it declared one.
    public let declaredBodyLength: Int64?
    /// The request carries `Expect: 100-continue` (and is not HTTP/1.0,
    /// whose expectation a server MUST ignore, RFC 9110 §10.1.1).
    public let expectsContinue: Bool
    /// Whether to send `100 Continue` has been decided (it is, once).
    private var continueDecided = false

    /// Request body bytes received so far.
    public private(set) var bodyReceived: Int64 = 0
    /// The status owed once the body cannot be read on: 400 (framing), 408
    /// (the client stalled past --request-timeout), 413 (past --max-body),
    /// or 0 (the client went away: nobody to answer).
    public private(set) var bodyFailure: Int?

    /// The response's status once its head was sent (0 before).
    public private(set) var status = 0
    /// The response has no body: HEAD, 1xx, 204 and 304 (RFC 9110 §6.4.1).
    public private(set) var bodyless = false
    /// Response body bytes handed to the transport.
    public private(set) var bytesOut: Int64 = 0
    /// The length the response declared, when it has a body: what
    /// `admitBody` holds the application to.
    public private(set) var responseLength: Int64?
    /// Response body bytes the application gave and `admitBody` let through.
    public private(set) var bodyAdmitted: Int64 = 0
    private var excessReported = false
    /// Trailer fields will end the body: the application announced them and
    /// the transport's framing carries them.
    public private(set) var trailersFollow = false
    /// The application's response is complete (the end of the body, or its
    /// trailers, has been framed): once it is out, the exchange ends.
    public private(set) var responseComplete = false

    public init(isHead: Bool, declaredBodyLength: Int64?, maxBody: Int64, start: Instant, expectsContinue: Bool = false,
                minBodyRate: Int = 0) {
        self.isHead = isHead
        self.declaredBodyLength = declaredBodyLength
        self.expectsContinue = expectsContinue
        self.maxBody = maxBody
        self.start = start
        self.minBodyRate = minBodyRate
    }

    // MARK: - The minimum body rate (--min-body-rate)

    /// Bytes per second a body must average over the time the application
    /// spent waiting for it, once that time passes the grace period (0: no
    /// rule). The stall timeout alone lets a client send a byte just before
    /// each expiry and hold a request for ever; the average is what stops
    /// that. Only the application's waits count: while it is busy, the
    /// server's own backpressure (a full buffer, a closed window) may hold
    /// the client back, and that is no fault of the client's.
    public let minBodyRate: Int
    /// The application's waits for body bytes so far, summed.
    public private(set) var bodyWaitNanoseconds: Int64 = 0
    private var bodyWaitBegan: Instant?

    /// The application asked for body bytes and none were buffered.
    public mutating func bodyWaitBegins(now: Instant) {
        if bodyWaitBegan == nil { bodyWaitBegan = now }
    }

    /// Body bytes came after a wait. Past the grace period (the request
    /// timeout), a body averaging less than `minBodyRate` over the waits
    /// fails as a stall does (408, RFC 9110 §15.5.9); true then.
    public mutating func bodyWaitEnds(now: Instant, graceMilliseconds: Int) -> Bool {
        guard let began = bodyWaitBegan else { return false }
        bodyWaitBegan = nil
        bodyWaitNanoseconds += max(0, now.nanoseconds - began.nanoseconds)
        guard minBodyRate > 0, bodyWaitNanoseconds >= Int64(graceMilliseconds) * 1_000_000 else { return false }
        let seconds = Double(bodyWaitNanoseconds) / 1e9
        guard Double(bodyReceived) < Double(minBodyRate) * seconds else { return false }
        failBody(status: 408)
        return true
    }

    /// The head has gone to the transport.
    public var headSent: Bool { status != 0 }

    // MARK: - Request body

    /// A status to answer with before the application runs, decided from
    /// the head alone: 413 when the declared body is larger than --max-body
    /// (RFC 9110 §15.5.14), before any of it is read.
    public var refusal: Int? {
        if let length = declaredBodyLength, length > maxBody { return 413 }
        return nil
    }

    /// The application asks for the body: whether to send `100 Continue`
    /// now. RFC 9110 §10.1.1: the client that sent `Expect: 100-continue`
    /// may wait for it before sending the body; a server "MAY omit sending
    /// a 100 (Continue) response if it has already received some or all of
    /// the content", and after the final response began there is nothing
    /// to continue. On demand, not on arrival: an application that answers
    /// without reading (say, 413 or 401) never invites the upload. Decided
    /// once.
    public mutating func continueNeeded(bodyArrived: Bool) -> Bool {
        guard expectsContinue, !continueDecided else { return false }
        continueDecided = true
        return !headSent && !bodyArrived
    }

    /// The client may still be waiting for `100 Continue` before it sends
    /// its body: nothing can tell where a following request would begin.
    public var continuePending: Bool { expectsContinue && !continueDecided }

    public enum BodyVerdict: Sendable, Equatable {
        case accepted
        /// The body grew past --max-body: the reader gets 413 from now on,
        /// and the bytes are dropped.
        case tooLarge
    }

    /// `count` more body bytes arrived (a body without a declared length,
    /// chunked or HTTP/2 DATA, is held to --max-body as it grows).
    public mutating func receiveBody(count: Int) -> BodyVerdict {
        bodyReceived += Int64(count)
        guard bodyReceived <= maxBody else {
            if bodyFailure == nil { bodyFailure = 413 }
            return .tooLarge
        }
        return .accepted
    }

    /// The body cannot be read on (see `bodyFailure`); the first failure is
    /// the one reported.
    public mutating func failBody(status: Int) {
        if bodyFailure == nil { bodyFailure = status }
    }

    // MARK: - Response

    /// What to send for the application's response head.
    public struct ResponsePlan: Sendable, Equatable {
        /// The status to send: the application's, or 500 for one no final
        /// response may carry.
        public var status: Int
        /// No body may follow (the transport drops what the application sends).
        public var bodyless: Bool
        /// Add a `date` field (the application gave none).
        public var addsDate: Bool
        /// The application gave an `alt-svc` field: the server adds none of
        /// its own (RFC 9114 §3.1.1 advertising, with `--http3`).
        public var hasAltSvc: Bool
        /// The `content-length` field to send, if any.
        public var contentLength: Int64?
    }

    /// Decides the head of the final response the application gave.
    ///
    /// - A final response has a status of 200–999: 1xx are interim (RFC 9110
    ///   §15.2; HTTP/2 has no 101 either, RFC 9113 §8.1.1), so anything else
    ///   becomes 500. The gateways refuse such statuses already; this keeps
    ///   a transport from ever framing one.
    /// - An origin server with a clock MUST send `Date` (RFC 9110 §6.6.1):
    ///   added unless the application gave one.
    /// - 204 and 304 carry no `content-length` (RFC 9110 §8.6); a response
    ///   to HEAD keeps the one the application gave (it describes the body a
    ///   GET would get).
    public mutating func beginResponse(_ head: ResponseHead) -> ResponsePlan {
        let s = HTTPSemantics.isFinalStatus(head.status) ? head.status : 500
        status = s
        bodyless = HTTPSemantics.isBodyless(status: s, isHead: isHead)
        let length = HTTPSemantics.statusHasNoContent(s) ? nil : head.contentLength
        responseLength = bodyless ? nil : length
        // One pass over the application's fields for both names.
        var hasDate = false, hasAltSvc = false
        for f in head.fields {
            switch f.name.count {
            case 4: hasDate = hasDate || HTTPSemantics.isDateField(f.name)
            case 7: hasAltSvc = hasAltSvc || HTTPSemantics.isAltSvcField(f.name)
            default: continue
            }
        }
        return ResponsePlan(status: s, bodyless: bodyless, addsDate: !hasDate, hasAltSvc: hasAltSvc, contentLength: length)
    }

    /// The body will end with trailer fields, not with its last block.
    public mutating func carryTrailers() {
        trailersFollow = true
    }

    /// The end of the response has been framed.
    public mutating func completeResponse() {
        responseComplete = true
    }

    /// The server answers by itself (a refusal, an error before the
    /// application answered): the status the access log records.
    public mutating func respondDirectly(status s: Int) {
        status = s
        bodyless = HTTPSemantics.isBodyless(status: s, isHead: isHead)
    }

    /// How many of `count` body bytes the application gives may go out: all,
    /// unless they would run past the declared length. The length is the
    /// content's size (RFC 9110 §8.6): over HTTP/1.1 more bytes would be read
    /// as the start of the next response, and over HTTP/2 they make the
    /// response malformed (RFC 9113 §8.1.1). The excess is dropped and
    /// logged once.
    public mutating func admitBody(_ count: Int64) -> Int64 {
        var n = count
        if let length = responseLength, bodyAdmitted + n > length {
            n = max(0, length - bodyAdmitted)
            if !excessReported {
                excessReported = true
                Log.warning("the application sent more than its Content-Length of \(length) bytes; the excess was dropped")
            }
        }
        bodyAdmitted += n
        return n
    }

    /// The application ended its body short of the declared length. Such a
    /// response cannot be completed: the transport ends it so that the
    /// client can tell (closes the HTTP/1.1 connection, resets the stream).
    /// Logged once, when asked.
    public mutating func bodyEndedShort() -> Bool {
        guard let length = responseLength, bodyAdmitted < length else { return false }
        responseLength = nil
        Log.warning("the application's response ended short (\(bodyAdmitted) bytes) of its Content-Length of \(length) bytes; the response was cut off")
        return true
    }

    /// `count` response body bytes were handed to the transport.
    public mutating func countOut(_ count: Int) {
        bytesOut += Int64(count)
    }

    /// The duration the access log reports, in milliseconds.
    public func milliseconds(until now: Instant) -> Double {
        Double(now.nanoseconds - start.nanoseconds) / 1e6
    }
}
