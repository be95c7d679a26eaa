import HTTP2

/// Ended streams kept for the session's next ones, so a keep-alive h2c
/// hello allocates no stream object and no block for its decoded head
/// (issue 20 point 2; tests/e2e/test_allocations.py counts).
///
/// An ended stream (`retire`) is reused only when nothing but this pool
/// refers to it — its application's exchange let go (`exchangeEnded`), no
/// WSGI queue, send queue, drain or body waiter, WebSocket conversation
/// holds it — which `isKnownUniquelyReferenced` tells exactly (every holder
/// of an `H2Stream` holds it strongly). `H2Stream.reuse` then resets every
/// property, so the new stream starts as a fresh one would (RFC 9113 §5.1:
/// idle, then open; nothing of the old stream's state, body, response or
/// WebSocket comes along). The pool is small and per session (it goes with
/// the connection); a stream still held elsewhere is passed over, and leaves
/// the pool when newer ones push it out, to be freed by its last holder.
extension H2Session {
    /// Streams kept at most: enough for h2load's 10 in flight per
    /// connection; each costs its object and its head's block.
    static let spareStreamCapacity = 16

    /// A stream object for new stream `id`: a free spare set up as new, or
    /// a new object.
    func makeStream(id: UInt32, head: H2RequestHead) -> H2Stream {
        var i = spareStreams.count - 1
        while i >= 0 {
            if isKnownUniquelyReferenced(&spareStreams[i]) {
                let s = spareStreams.remove(at: i)
                s.reuse(id: id, head: head)
                return s
            }
            i -= 1
        }
        return H2Stream(session: self, id: id, head: head)
    }

    /// `s` has ended (its response is complete or it was reset): kept for
    /// a later `makeStream`, once.
    func retire(_ s: H2Stream) {
        guard !s.retired else { return }
        s.retired = true
        if spareStreams.count == H2Session.spareStreamCapacity { spareStreams.removeFirst() }
        spareStreams.append(s)
    }
}
