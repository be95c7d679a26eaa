import Core

/// What the worker's slab, poller and timer wheel know of a connection,
/// whatever its kind: where it sits (its slab entry, which is also its
/// timer-wheel owner, and the generation that makes its poller token
/// unique), and what to do when its events, its deadline, a deferred read
/// or a stop come. Everything else — descriptors, bytes, protocols — is the
/// kind's own business.
///
/// Today's kind is `H1Connection`: a TCP connection, plain or TLS, that
/// speaks HTTP/1.1 or switches to HTTP/2 or WebSocket. A QUIC connection
/// found by connection ID behind a shared UDP socket is meant to be another
/// (see ARCHITECTURE.md, "The worker").
///
/// Class-bound, so the slab holds a reference and a witness table and an
/// event costs one indirect call; the worker's generic services
/// (`arm(_:milliseconds:)`, `setInterest`, ...) are specialised per kind.
protocol WorkerConnection: AnyObject {
    /// The slab entry (and timer owner) while open.
    var index: Int { get }
    /// Bumped by the slab each time the entry is given out.
    var generation: UInt32 { get }

    /// Poller events for this connection's token.
    func onEvents(_ events: IOEvents)
    /// Its one deadline in the timer wheel passed.
    func onTimeout()
    /// It asked for a readable event after the round (`Worker.deferRead`).
    func onDeferredRead()
    /// The worker is stopping (`closeIdle`: SIGTERM/SIGINT) or draining:
    /// finish what is in flight, close what is idle.
    func beginStopping(closeIdle: Bool)
    /// --graceful-timeout passed while it was still open: cut it.
    func cut()
    /// A WSGI pool thread is free for the request this connection queued
    /// (`WSGIPool.wait`); the connection takes it (`WSGIPool.takeThread`)
    /// or, if it no longer needs it, leaves it for the next waiter.
    func poolThreadFree()
    /// The server will stop soon (--drain-delay) or the connection is old
    /// (--max-connection-age): no new work should come on it. What
    /// multiplexes ends with a GOAWAY; the default does nothing (a
    /// response-at-a-time connection closes after its next response, see
    /// `Worker.stopRequested`).
    func announceGoingAway()
    /// The worker's once-a-second pass found it on the list of connections
    /// that went idle holding memory they need only while busy
    /// (`Worker.wentIdle`): still idle, it gives that back. The default
    /// holds nothing of the kind.
    func idlePassed()
}

extension WorkerConnection {
    func announceGoingAway() {}
    func idlePassed() {}
}

extension WorkerConnection {
    /// The poller token: generation above, slab index below. An event for a
    /// closed connection whose entry was given out again carries the old
    /// generation and is dropped.
    var token: UInt64 { UInt64(generation) << 32 | UInt64(index) }
}
