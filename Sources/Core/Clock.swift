import CSys

/// A point on the monotonic clock, in nanoseconds. Protocol code takes one
/// of these as a parameter and never reads the clock itself.
public struct Instant: Comparable, Hashable, Sendable {
    public var nanoseconds: Int64

    @inlinable public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    /// Reads the monotonic clock. Only the loops call this: a worker's
    /// (Server/Worker.swift, once per wake-up) and the supervisor's.
    public static func now() -> Instant { Instant(nanoseconds: csys_monotonic_ns()) }

    @inlinable public static func < (a: Instant, b: Instant) -> Bool { a.nanoseconds < b.nanoseconds }

    @inlinable public func adding(milliseconds: Int) -> Instant {
        Instant(nanoseconds: nanoseconds &+ Int64(milliseconds) &* 1_000_000)
    }

    @inlinable public func milliseconds(since earlier: Instant) -> Int {
        Int((nanoseconds &- earlier.nanoseconds) / 1_000_000)
    }
}
