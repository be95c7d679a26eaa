import Exchanges

/// The per-request state lives in a pooled `H1RequestState`, not in the
/// connection: an idle keep-alive connection holds none. These accessors
/// keep the request's fields where the rest of the class expects them; one
/// that is reached with no state held (an idle connection asked about its
/// last request) takes one from the pool, which `becomeIdle` gives back.
extension H1Connection {
    var perRequest: H1RequestState {
        if let s = requestState { return s }
        return takeRequestState()
    }

    @inline(never)
    private func takeRequestState() -> H1RequestState {
        let s = worker.takeRequestState()
        requestState = s
        return s
    }

    /// Idle with nothing to write: the state goes back to the pool.
    func releaseRequestState() {
        guard let s = requestState, s.releasable else { return }
        requestState = nil
        worker.giveRequestState(s)
    }

    var request: H1Request {
        get { perRequest.request }
        _modify { yield &perRequest.request }
    }

    var exchange: HTTPExchange {
        get { perRequest.exchange }
        _modify { yield &perRequest.exchange }
    }

    var asyncRequest: H1AsyncRequest {
        get { perRequest.asyncRequest }
        _modify { yield &perRequest.asyncRequest }
    }

    var output: PendingOutput {
        get { perRequest.output }
        _modify { yield &perRequest.output }
    }

    var poolThread: Int? {
        get { perRequest.poolThread }
        _modify { yield &perRequest.poolThread }
    }
}
