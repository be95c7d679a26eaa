import CSys
import Core

/// A TCP connection's lingering close (RFC 9112 §9.6): our side is shut
/// down, and what the client still sends is read and dropped until it has
/// been quiet for `quietMilliseconds`, or for at most `maxMilliseconds` or
/// `maxBytes` in all. Closing with unread input would reset the connection
/// and could destroy the response before the client reads it. A lingering
/// connection holds no buffer and no longer counts towards
/// --max-connections.
struct LingeringClose {
    static let quietMilliseconds = 2000
    static let maxMilliseconds = 30_000
    static let maxBytes = 1 << 20

    /// When lingering ends however much the client still sends.
    let deadline: Instant
    private(set) var bytesDrained = 0

    init(now: Instant) {
        deadline = now.adding(milliseconds: LingeringClose.maxMilliseconds)
    }

    /// Reads and drops what the client sent on `fd`. True if the socket has
    /// nothing more for now and the byte budget is not spent: wait for more
    /// (or for quiet). False: close (EOF, an error, or too many bytes).
    mutating func drain(_ fd: Int32) -> Bool {
        var scratch: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
        while bytesDrained < LingeringClose.maxBytes {
            let n = withUnsafeMutableBytes(of: &scratch) { csys_read(fd, $0.baseAddress, $0.count) }
            if n > 0 { bytesDrained += n; continue }
            if n < 0 && csys_eintr(csys_errno()) != 0 { continue }
            return n < 0 && csys_eagain(csys_errno()) != 0
        }
        return false
    }

    /// How long to wait for the client's next bytes before taking its
    /// silence as the end; nil once the deadline has come.
    func waitMilliseconds(now: Instant) -> Int? {
        guard now < deadline else { return nil }
        return min(LingeringClose.quietMilliseconds, max(deadline.milliseconds(since: now), 1))
    }
}
