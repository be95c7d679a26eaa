import Exchanges

/// The per-request state lives in a pooled `H1RequestState`, not in the
/// connection: a keep-alive connection that stays idle holds none. The
/// class reaches the request's fields through `perRequest`
/// (`perRequest.exchange`, ...); reached with no state held, it takes one
/// from the pool.
///
/// Given back lazily, with the parsing state (`H1RequestParsing`), once a
/// client has come back (its first idle gives both back at once, see
/// `becomeIdle`): a connection that goes idle keeps both and puts itself
/// on the worker's list (`Worker.wentIdle`, once until the next pass); the worker's
/// once-a-second pass (`Worker.idlePass`) takes them from the listed
/// connections that are still idle. A connection whose next request comes
/// first (h2load's, a browser's: the common case) reuses its own with no
/// take or give, which cost about 230 instructions per WSGI hello request
/// for the request state and about as much for the parsing state. Reuse by
/// the same connection is reuse as from the pool: a request sets what it
/// reads (see H1RequestState), and the head parser is reset after each
/// response (`afterResponse`), as the pool's give did.
extension H1Connection {
    /// The held state, taken first if there is none. A stored class
    /// reference, so `perRequest.request.framing` reads one field in place
    /// (forwarding properties with accessors copied a request's struct, and
    /// retained the references in it, on every read: 5% more instructions
    /// per WSGI hello request).
    var perRequest: H1RequestState {
        @inline(__always) get {
            if requestState == nil { takeRequestState() }
            return requestState.unsafelyUnwrapped
        }
    }

    @inline(never)
    private func takeRequestState() {
        requestState = worker.takeRequestState()
    }

    /// Idle with nothing to write: the state goes back to the pool.
    func releaseRequestState() {
        guard let s = requestState, s.releasable else { return }
        requestState = nil
        worker.giveRequestState(s)
    }

    /// Gone idle (not listed yet) holding parsing or request state: on the
    /// worker's list for its next pass (once: a connection idle several
    /// times between two passes is listed by its first).
    func keepRequestMemoryUntilPass() {
        guard requestState != nil || parsing != nil else { return }
        idleListed = true
        worker.wentIdle(self)
    }

    /// The worker's pass (see `keepRequestMemoryUntilPass`): still idle —
    /// between requests, no byte of the next one here, nothing buffered —
    /// the parsing and request state go back; busy, it keeps them and is
    /// listed again when it next goes idle.
    func idlePassed() {
        idleListed = false
        guard phase == .head, !bytesSeen, input.isEmpty else { return }
        releaseParsing()
        releaseRequestState()
    }

    /// ExchangeTransport's view of the exchange (the shared code in
    /// Exchanges reads and writes it through the protocol).
    var exchange: HTTPExchange {
        get { perRequest.exchange }  // no references in it: a copy costs no retain (and no coroutine frame in debug builds)
        _modify { yield &perRequest.exchange }
    }
}
