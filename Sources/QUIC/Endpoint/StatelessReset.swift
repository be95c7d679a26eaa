// Sending stateless resets (RFC 9000 §10.3).
//
// A short-header packet whose Destination Connection ID routes nowhere —
// a connection this endpoint forgot (a restart, a terminated connection, a
// worker replaced) — is answered with a Stateless Reset carrying the token
// for that ID (§10.3.2: recomputed from the ID with the static key the
// ConnectionIDSource holds), so the peer stops at once instead of waiting
// for its idle timeout:
//
//   Stateless Reset {
//     Fixed Bits (2) = 1,
//     Unpredictable Bits (38..),
//     Stateless Reset Token (128),
//   }
//
// Limits, each for a MUST or SHOULD of §10.3:
//   - never larger than the packet that triggered it, by one byte at least
//     (§10.3.3: two endpoints that both reset unknown packets would loop;
//     a reset smaller than its trigger ends any loop), and so none for a
//     trigger of 21 bytes or less (a reset needs 21: §10.3 "at least 21");
//   - triggers of 43 bytes or less get a reset one byte shorter (§10.3:
//     "SHOULD send a Stateless Reset that is one byte shorter"), longer
//     ones a 43-byte reset (never three times the trigger, §10.3);
//   - at most `statelessResetsPerSecond` per second, from a token bucket of
//     that size, so a flood of junk is not reflected in full.

import Core

struct StatelessResetSender {
    /// 5 bytes that look like a short header, then the 16-byte token.
    static let minimumSize = 21
    static let preferredSize = 43

    private let rate: Int
    private var credit: Int
    private var refilledAt: Instant?

    init(perSecond rate: Int) {
        self.rate = max(0, rate)
        credit = self.rate
    }

    /// The size of the reset answering a trigger of `triggerLength` bytes,
    /// nil when none may be sent.
    static func size(answering triggerLength: Int) -> Int? {
        let n = min(triggerLength - 1, preferredSize)
        return n >= minimumSize ? n : nil
    }

    /// Takes one unit of credit, refilled at `rate` per second.
    mutating func allow(now: Instant) -> Bool {
        if let t = refilledAt {
            let elapsed = now.nanoseconds - t.nanoseconds
            let earned = elapsed >= 1_000_000_000 ? rate : Int(elapsed * Int64(rate) / 1_000_000_000)
            if earned > 0 {
                credit = min(rate, credit + earned)
                refilledAt = now
            }
        } else {
            refilledAt = now
        }
        guard credit > 0 else { return false }
        credit -= 1
        return true
    }

    /// A reset of `size` bytes ending in `token`: random bits, with the
    /// first byte's form bit 0 and fixed bit 1 (§10.3).
    static func encode(token: StatelessResetToken, size: Int) -> [UInt8] {
        precondition(size >= minimumSize)
        var out = [UInt8](repeating: 0, count: size)
        var g = SystemRandomNumberGenerator()
        for i in 0..<(size - 16) { out[i] = UInt8.random(in: 0...255, using: &g) }
        out[0] = 0x40 | (out[0] & 0x3f)
        for i in 0..<8 {
            out[size - 16 + i] = UInt8(truncatingIfNeeded: token.high >> UInt64(56 - 8 * i))
            out[size - 8 + i] = UInt8(truncatingIfNeeded: token.low >> UInt64(56 - 8 * i))
        }
        return out
    }
}
