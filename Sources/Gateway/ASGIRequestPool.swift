/// Finished `ASGIRequest`s kept for the next requests, so a keep-alive hello
/// allocates no request object and no header storage (issue 20; counted by
/// tests/e2e/test_allocations.py).
///
/// A request is only reused when nothing but the pool refers to it: its
/// task has ended, its transport dropped it (`exchangeEnded`), and the
/// Python objects bound to it (`receive`, `send`, the done callback, a
/// pending receive) are gone — which `isKnownUniquelyReferenced` tells
/// exactly, so an application that keeps `send` after its task ended keeps
/// that request out of circulation instead of sharing it. The pool is small
/// and drops its oldest entry when full: memory stays bounded whatever
/// applications hold on to.
struct ASGIRequestPool {
    /// Requests kept at most; a few suffice, since a request is usually free
    /// again by the time its connection's next request starts.
    static let capacity = 16
    private var spare: [ASGIRequest] = []

    init() { spare.reserveCapacity(Self.capacity) }

    /// A free request set up for `exchange`, or a new one.
    mutating func take(gateway: ASGIGateway, exchange: AsyncExchange, isHead: Bool) -> ASGIRequest {
        var i = spare.count - 1
        while i >= 0 {
            if spare[i].isFinished && isKnownUniquelyReferenced(&spare[i]) {
                let r = spare.remove(at: i)
                r.reuse(exchange: exchange, isHead: isHead)
                return r
            }
            i -= 1
        }
        return ASGIRequest(gateway: gateway, exchange: exchange, isHead: isHead)
    }

    /// Keeps `request`, whose task has just ended, for a later `take`.
    mutating func giveBack(_ request: ASGIRequest) {
        if spare.count == Self.capacity { spare.removeFirst() }
        spare.append(request)
    }
}
