import Exchanges

/// The per-request state lives in a pooled `H1RequestState`, not in the
/// connection: an idle keep-alive connection holds none. The class reaches
/// the request's fields through `perRequest` (`perRequest.exchange`, ...);
/// reached with no state held (an idle connection asked about its last
/// request), it takes one from the pool, which `becomeIdle` gives back.
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

    /// ExchangeTransport's view of the exchange (the shared code in
    /// Exchanges reads and writes it through the protocol).
    var exchange: HTTPExchange {
        get { perRequest.exchange }  // no references in it: a copy costs no retain (and no coroutine frame in debug builds)
        _modify { yield &perRequest.exchange }
    }
}
