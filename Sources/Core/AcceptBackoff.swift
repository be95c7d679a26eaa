/// When a listener that cannot accept (AcceptFailure.pausesAccepting) is
/// tried again. Sans-I/O: it decides, the worker acts on its poller and
/// its log, and time is a parameter.
///
/// Theory of operation. A shortage at accept begins an *episode*. The first
/// failure pauses accepting for `firstDelayMilliseconds`; each failure after
/// a retry doubles the pause, up to `longestDelayMilliseconds`, so a worker
/// whose descriptors stay exhausted tries at most once a second and sleeps
/// in between: its open connections are served as usual, and nothing spins.
/// A connection closing gives a descriptor back, so it makes the retry due
/// at once (`descriptorFreed`). A retry calls accept(2) at once rather than
/// waiting for the poller, since the answer is meaningful even with nobody
/// queued: Linux reserves the descriptor and the socket before it looks at
/// the queue, so EAGAIN, like a connection, means the shortage is over. Either
/// ends the episode and resets the delay. Only the failure that begins an
/// episode asks to be logged, and the end reports it, so a saturated worker
/// writes two lines, not one per attempt.
///
///     accepting ──shortage──▶ paused(delay) ──retryDue (timer, or descriptorFreed)──▶ retry: accept(2)
///         ▲                      ▲                                                        │
///         └──connection / EAGAIN─┼────────────────────────────────────────────────────────┤
///                                └──shortage again (delay × 2, ≤ 1 s)─────────────────────┘
///
/// `connectionLost` (one connection's own error) neither pauses nor changes
/// an episode: the next connection is accepted at once.
public struct AcceptBackoff: Equatable, Sendable {
    /// The first pause of an episode: short, since a descriptor may be
    /// given back by the next response.
    public static let firstDelayMilliseconds = 10
    /// The pause never grows beyond this: a shortage that ends is noticed
    /// within a second even if no connection of this worker closes.
    public static let longestDelayMilliseconds = 1000

    public enum Action: Equatable, Sendable {
        /// Nobody is queued: stop accepting for this round; the listener
        /// stays in the poller. `endedEpisode`: the failures of the episode
        /// this ends (descriptors were there), to be logged; nil: none.
        case waitForReadiness(endedEpisode: Int?)
        /// That connection failed alone: accept the next one now.
        case acceptNext
        /// Take the listener out of the poller until `until` (or until a
        /// descriptor frees). `episodeBegan`: the first failure since
        /// accepting last worked, to be logged; later ones are not.
        case pause(until: Instant, episodeBegan: Bool)
        /// The listener was shut down: take it out of the poller for good.
        case stopAccepting
    }

    /// The pause the next failure gets.
    private var nextDelayMilliseconds = AcceptBackoff.firstDelayMilliseconds
    /// When the paused listener is tried again; nil: not paused.
    public private(set) var retryAt: Instant?
    /// Failures since accepting last worked (0: no episode).
    public private(set) var failures = 0

    public init() {}

    /// The listener is out of the poller for a shortage.
    public var isPaused: Bool { retryAt != nil }

    /// accept(2) failed with `failure` at `now`.
    public mutating func failed(_ failure: AcceptFailure, now: Instant) -> Action {
        switch failure {
        case .queueEmpty: return .waitForReadiness(endedEpisode: succeeded())
        case .connectionLost: return .acceptNext
        case .listenerShutDown: return .stopAccepting
        case .exhausted, .unexpected:
            let began = failures == 0
            failures += 1
            let until = now.adding(milliseconds: nextDelayMilliseconds)
            retryAt = until
            nextDelayMilliseconds = min(nextDelayMilliseconds * 2, AcceptBackoff.longestDelayMilliseconds)
            return .pause(until: until, episodeBegan: began)
        }
    }

    /// accept(2) gave a connection (or found the queue empty, see `failed`).
    /// Returns how many failures the episode it ends had (for the log), or
    /// nil if there was none.
    public mutating func succeeded() -> Int? {
        guard failures > 0 else { return nil }
        defer {
            failures = 0
            nextDelayMilliseconds = AcceptBackoff.firstDelayMilliseconds
            retryAt = nil
        }
        return failures
    }

    /// A connection closed and gave its descriptor back: the retry of a
    /// pause (if any) is due at `now` instead of at its timer. True if there
    /// was a pause, for the caller to wake its loop (the retry is made once
    /// the descriptor is really closed, by `retryDue` on the loop's round).
    public mutating func descriptorFreed(now: Instant) -> Bool {
        guard let at = retryAt else { return false }
        retryAt = min(at, now)
        return true
    }

    /// The pause has run out at `now`: it ends. True (once per pause) if the
    /// listener should return to the poller and accept(2) be tried at once.
    public mutating func retryDue(now: Instant) -> Bool {
        guard let at = retryAt, now >= at else { return false }
        retryAt = nil
        return true
    }

    /// Milliseconds until `retryDue` will be true, rounded up (nil: not paused).
    public func millisecondsUntilRetry(now: Instant) -> Int? {
        guard let at = retryAt else { return nil }
        guard at > now else { return 0 }
        return Int((at.nanoseconds - now.nanoseconds + 999_999) / 1_000_000)
    }
}
