import CSys
import Core
import Gateway
import Options
import Proxy
import TLS

/// The TCP connection kind's side of the worker: the listening socket,
/// whether it is in the poller, the --max-connections accounting (open and
/// lingering connections) and the closed connection objects kept for the
/// next accepts.
///
/// Separate from Worker because accepting and closing are the TCP kind's
/// own (see ARCHITECTURE.md, "Connection kinds"); the worker's loop only
/// asks it for the next connection and tells it when one lingers or closes.
/// The poller stays the worker's: a change of `accepting` is the caller's
/// to apply to it.
struct TCPAcceptor {
    /// Usually one; several when the supervisor inherited several (--fd,
    /// systemd), each accepted from alike.
    let listeners: [Listener]
    /// The TLS configuration (nil: plain connections); set by Main.serve.
    var tlsContext: TLSContext?
    /// The listener is in the poller.
    private(set) var accepting = true
    /// A listener was found shut down (`Outcome.listenerShutDown`).
    private(set) var shutDown = false
    /// accept(2) ran short of descriptors or memory: when to try again.
    private var backoff = AcceptBackoff()
    private(set) var openCount = 0
    private(set) var lingeringCount = 0
    private let maxConnections: Int
    /// Closed TCP connection objects, reused by the next accepts.
    private var spares: [H1Connection] = []

    init(listeners: [Listener], maxConnections: Int) {
        self.listeners = listeners
        self.maxConnections = maxConnections
    }

    /// No connection is open or lingering.
    var isIdle: Bool { openCount == 0 && lingeringCount == 0 }

    /// At --max-connections: further clients wait in the kernel's accept
    /// queue until a connection closes or lingers.
    var isFull: Bool { openCount >= maxConnections }

    /// What one accept gave (see `accept(from:now:)`).
    enum Outcome {
        case connection(fd: Int32, peer: PeerInfo)
        /// Nobody (else) is waiting: the poller reports the next client.
        case waitForReadiness
        /// That connection failed alone: accept the next one.
        case acceptNext
        /// Descriptors or memory ran out: the caller takes the listeners
        /// out of the poller (`pause`) until `retryDue`, which a closing
        /// connection makes due at once (see AcceptBackoff).
        case pause
        /// The listener was shut down (the server is stopping): the caller
        /// takes the listeners out of the poller, never to return.
        case listenerShutDown
    }

    /// Accepts the next connection waiting on `listener` and describes its
    /// peer and the address it reached; on failure, says what to do next.
    /// Logs the first failure of a shortage and the accept that ends it.
    mutating func accept(from listener: Listener, now: Instant) -> Outcome {
        guard let (fd, peer) = acceptOne(from: listener) else {
            let err = csys_errno()
            let failure = AcceptFailure(errno: err)
            switch backoff.failed(failure, now: now) {
            case .waitForReadiness(let ended):
                if let ended { TCPAcceptor.logShortageEnded(failures: ended) }
                return .waitForReadiness
            case .acceptNext: return .acceptNext
            case .stopAccepting:
                shutDown = true
                return .listenerShutDown
            case .pause(_, let episodeBegan):
                // One line per episode of the process: its worker contexts
                // share its descriptors, so they meet a shortage together.
                if episodeBegan && csys_accept_shortage_enter() == 0 { TCPAcceptor.logShortage(failure, errno: err) }
                return .pause
            }
        }
        if let failures = backoff.succeeded() { TCPAcceptor.logShortageEnded(failures: failures) }
        return .connection(fd: fd, peer: peer)
    }

    /// The last line of an episode, once the process's last worker context
    /// in it has left it.
    private static func logShortageEnded(failures: Int) {
        guard csys_accept_shortage_leave() == 0 else { return }
        Log.warning("accepting connections again (\(failures) attempt(s) failed meanwhile)")
    }

    /// The first line of an episode (see AcceptBackoff), naming the shortage.
    private static func logShortage(_ failure: AcceptFailure, errno err: Int32) {
        let name: String
        if case .exhausted(let shortage) = failure { name = "\(shortage.errnoName)" } else { name = "errno \(err)" }
        let text = String(cString: csys_strerror(err))
        Log.warning("accept failed: \(text) (\(name)); open connections are still served, new ones wait in the "
                    + "listen queue; retrying in \(AcceptBackoff.firstDelayMilliseconds) ms, backing off to "
                    + "\(AcceptBackoff.longestDelayMilliseconds) ms, or when a connection closes")
    }

    private func acceptOne(from listener: Listener) -> (fd: Int32, peer: PeerInfo)? {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { addr in
            addr.initialize(repeating: 0)
            var port: Int32 = 0
            var isUnix: Int32 = 0
            var raw: (UInt64, UInt64) = (0, 0)
            var rawLength: Int32 = 0
            let fd = withUnsafeMutableBytes(of: &raw) { r in
                csys_accept(listener.fd, addr.baseAddress, 64, &port, &isUnix,
                            r.baseAddress!.assumingMemoryBound(to: UInt8.self), &rawLength)
            }
            if fd < 0 { return nil }
            let address = withUnsafeBytes(of: &raw) { r in TCPAcceptor.address(r, length: rawLength) }
            let remote = TCPAcceptor.text(addr)
            addr.update(repeating: 0)
            var localPort: Int32 = 0
            var serverName = listener.host
            if !listener.isUnix, csys_local_address(fd, addr.baseAddress, 64, &localPort) == 0 {
                serverName = TCPAcceptor.text(addr)
            }
            let peer = PeerInfo(address: address, remoteAddress: remote, remotePort: Int(port), serverName: serverName,
                                serverPort: listener.isUnix ? 0 : Int(localPort), isUnix: isUnix != 0,
                                scheme: tlsContext == nil ? "http" : "https")
            return (fd, peer)
        }
    }

    /// The peer's address in binary form, from the bytes `csys_accept`
    /// wrote (network order; 4 for IPv4, 16 for IPv6, none for a unix peer).
    private static func address(_ raw: UnsafeRawBufferPointer, length: Int32) -> PeerAddress {
        switch length {
        case 4: return .ip(IPAddress(ipv4Bytes: UnsafeRawBufferPointer(rebasing: raw[0..<4])))
        case 16: return .ip(IPAddress(ipv6Bytes: raw))
        default: return .unix
        }
    }

    /// The NUL-terminated address `csys_accept` or `csys_local_address` wrote.
    private static func text(_ buffer: UnsafeMutableBufferPointer<CChar>) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A closed connection object to reuse, if one is kept.
    mutating func takeSpare() -> H1Connection? { spares.popLast() }

    /// An accepted connection counts towards --max-connections.
    mutating func opened() { openCount += 1 }

    /// A connection entering its lingering close stops counting towards
    /// --max-connections; at most as many again may linger (beyond that the
    /// connection is closed at once). False: close now.
    mutating func beginLinger() -> Bool {
        guard lingeringCount < maxConnections else { return false }
        lingeringCount += 1
        openCount -= 1
        return true
    }

    /// `c` closed: it no longer counts, and its object waits for the next
    /// accept. Its descriptor is given back too: a pause for a shortage is
    /// to be retried now. True if there was one (the caller wakes its loop).
    mutating func closed(_ c: H1Connection, wasLingering: Bool, now: Instant) -> Bool {
        spares.append(c)
        if wasLingering { lingeringCount -= 1 } else { openCount -= 1 }
        return backoff.descriptorFreed(now: now)
    }

    /// The pause for a shortage ran out: true once, and the caller resumes
    /// (`resumeIfPaused`) and tries to accept at once.
    mutating func retryDue(now: Instant) -> Bool { backoff.retryDue(now: now) }

    /// Milliseconds until `retryDue` (nil: no pause for a shortage), for the
    /// loop's timeout.
    func millisecondsUntilRetry(now: Instant) -> Int? { backoff.millisecondsUntilRetry(now: now) }

    /// The listener leaves the poller (full, or stopping). True if it was
    /// in it, for the caller to remove.
    mutating func pause() -> Bool {
        defer { accepting = false }
        return accepting
    }

    /// The listener returns to the poller after a pause for capacity (never
    /// while stopping, nor while a pause for a shortage runs). True if the
    /// caller should add it back.
    mutating func resumeIfPaused(stopping: Bool) -> Bool {
        guard !accepting && !stopping && !shutDown && !backoff.isPaused else { return false }
        accepting = true
        return true
    }
}
