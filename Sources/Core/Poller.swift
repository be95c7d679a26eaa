import CSys

/// Readiness interest and results, as bits.
public struct IOEvents: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let readable = IOEvents(rawValue: 1)
    public static let writable = IOEvents(rawValue: 2)
    public static let error = IOEvents(rawValue: 4)
    /// The peer shut down its sending side (EPOLLRDHUP).
    public static let peerClosed = IOEvents(rawValue: 8)
    // Unions as constants: a literal `[.readable, .peerClosed]` on the
    // per-request path builds an array each time in an unoptimised build
    // (tests/e2e/test_allocations.py counts).
    public static let readableOrPeerClosed = IOEvents(rawValue: 1 | 8)
    /// Results that call for a read: input, an error to collect, or EOF.
    public static let anyInput = IOEvents(rawValue: 1 | 4 | 8)
}

/// One epoll instance, owned by one worker. Level-triggered: a connection
/// that leaves bytes unread is reported again, which keeps the loop simple
/// when a handler stops reading for backpressure.
public struct Poller: ~Copyable {
    public let fd: Int32
    private let events: UnsafeMutablePointer<csys_event>
    public static let batch = 256

    public init() throws(SystemError) {
        let fd = csys_epoll_create()
        guard fd >= 0 else { throw SystemError(call: "epoll_create1", errno: csys_errno()) }
        self.fd = fd
        events = .allocate(capacity: Poller.batch)
    }

    deinit {
        events.deallocate()
        _ = csys_close(fd)
    }

    public func add(_ descriptor: Int32, token: UInt64, interest: IOEvents) throws(SystemError) {
        if csys_epoll_add(fd, descriptor, token, Int32(interest.rawValue), 0) != 0 {
            throw SystemError(call: "epoll_ctl(ADD)", errno: csys_errno())
        }
    }

    public func modify(_ descriptor: Int32, token: UInt64, interest: IOEvents) {
        _ = csys_epoll_mod(fd, descriptor, token, Int32(interest.rawValue), 0)
    }

    public func remove(_ descriptor: Int32) {
        _ = csys_epoll_del(fd, descriptor)
    }

    /// Waits up to `timeoutMilliseconds` (-1: forever) and returns how many
    /// events are ready, at most `maxEvents` (the rest stay ready, in the
    /// order they became so); read them with `event(at:)`.
    public func wait(timeoutMilliseconds: Int32, maxEvents: Int = Poller.batch) -> Int {
        let n = csys_epoll_wait(fd, events, Int32(min(maxEvents, Poller.batch)), timeoutMilliseconds)
        return n < 0 ? 0 : Int(n)
    }

    public func event(at index: Int) -> (token: UInt64, events: IOEvents) {
        let e = events[index]
        return (e.token, IOEvents(rawValue: e.events))
    }
}

/// A failed system call, with the call's name and errno.
public struct SystemError: Error, CustomStringConvertible, Sendable {
    public let call: String
    public let errno: Int32
    public init(call: String, errno: Int32) { self.call = call; self.errno = errno }
    public var description: String {
        "\(call): \(String(cString: csys_strerror(errno)))"
    }
}
