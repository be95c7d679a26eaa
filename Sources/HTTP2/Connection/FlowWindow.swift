// Flow-control windows (RFC 9113 §5.2, §6.9).
//
// Send side: what the peer lets us send; WINDOW_UPDATE adds, DATA takes, and
// a SETTINGS_INITIAL_WINDOW_SIZE change shifts every stream window by the
// difference — which may leave it negative (§6.9.2: "a change ... can cause
// the available space in a flow-control window to become negative").
//
// Receive side: what the peer may still send us. DATA takes (its whole
// payload, padding included, §6.9.1); credit comes back only when the
// application has consumed bytes (`release`), batched until half the
// advertised window is pending, so a slow reader holds the peer to the window
// we advertised and a fast one costs one WINDOW_UPDATE per half window.

/// The largest legal window, 2^31-1 (§6.9.1).
let maxWindow = Int(SettingsLimits.maxWindowSize)

/// A window we send against.
struct SendWindow {
    private(set) var value: Int

    init(_ value: Int) { self.value = value }

    /// WINDOW_UPDATE or an INITIAL_WINDOW_SIZE change; false (unchanged)
    /// when the result would pass 2^31-1.
    @inline(__always)
    mutating func increase(by delta: Int) -> Bool {
        // value and delta are both within ±2^32: no overflow in Int.
        guard value + delta <= maxWindow else { return false }
        value += delta
        return true
    }

    @inline(__always)
    mutating func consume(_ n: Int) { value -= n }
}

/// A window we advertise and return credit to.
struct ReceiveWindow {
    /// What the peer may still send.
    private(set) var available: Int
    /// Consumed by the application, not yet returned.
    private(set) var pending = 0
    /// The advertised size; pending credit goes back once it reaches half.
    private(set) var target: Int

    init(_ size: Int) {
        available = size
        target = size
    }

    /// The peer sent `n` flow-controlled bytes; false when it had no room.
    @inline(__always)
    mutating func receive(_ n: Int) -> Bool {
        guard n <= available else { return false }
        available -= n
        return true
    }

    /// `n` bytes were consumed. Returns the WINDOW_UPDATE increment to send
    /// now, or nil to keep batching.
    mutating func release(_ n: Int) -> UInt32? {
        pending += n
        guard pending >= max(1, target / 2) else { return nil }
        return flush()
    }

    /// Returns all pending credit now (nil if none).
    mutating func flush() -> UInt32? {
        guard pending > 0 else { return nil }
        // available + pending never exceeds target ≤ 2^31-1: a valid increment.
        let n = pending
        available += n
        pending = 0
        return UInt32(n)
    }

    /// Our advertised size changed to `size` (acknowledged SETTINGS): the
    /// peer's allowance moves by the difference and may go negative.
    mutating func rebase(to size: Int) {
        available += size - target
        target = size
    }
}
