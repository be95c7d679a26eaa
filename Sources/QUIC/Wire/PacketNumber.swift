// Packet number encoding and recovery (RFC 9000 §17.1, Appendix A.2, A.3).
//
// Packet numbers are 62-bit integers sent truncated to 1-4 bytes. The
// sender picks a length wide enough to cover twice the packets in flight
// since the largest acknowledged (A.2); the receiver recovers the full
// number as the candidate closest to one past the largest it has
// received (A.3).

/// Packet number truncation and recovery.
public enum PacketNumber {
    /// The largest packet number (§12.3: 2^62 - 1).
    public static let max: UInt64 = (1 << 62) - 1

    /// How many bytes (1-4) to send `fullPacketNumber` in, given the largest
    /// packet number the peer acknowledged in this space (nil: none yet).
    /// RFC 9000 Appendix A.2.
    public static func encodedLength(_ fullPacketNumber: UInt64, largestAcknowledged: UInt64?) -> Int {
        // "The number of bits must be at least one more than the base-2
        // logarithm of the number of contiguous unacknowledged packet
        // numbers, including the new packet."
        let unacked: UInt64 = if let largestAcknowledged {
            fullPacketNumber &- largestAcknowledged  // the sender numbers upwards: pn > largest acked
        } else {
            fullPacketNumber &+ 1  // pn ≤ 2^62 - 1: cannot wrap
        }
        let minBits = 64 - unacked.leadingZeroBitCount + 1
        return Swift.max(1, Swift.min(4, (minBits + 7) / 8))
    }

    /// The low `length` bytes of `fullPacketNumber`, for the header.
    public static func truncate(_ fullPacketNumber: UInt64, length: Int) -> UInt32 {
        UInt32(truncatingIfNeeded: fullPacketNumber & ((1 << (8 * UInt64(length))) - 1))
    }

    /// Recovers the full packet number from `truncated` sent in `length`
    /// bytes, given the largest packet number successfully processed in its
    /// space (nil: none yet). RFC 9000 Appendix A.3.
    public static func decode(truncated: UInt64, length: Int, largestReceived: UInt64?) -> UInt64 {
        let expected = largestReceived.map { $0 + 1 } ?? 0  // largest ≤ 2^62 - 1: no overflow
        let window: UInt64 = 1 << (8 * UInt64(length))
        let halfWindow = window / 2
        let candidate = (expected & ~(window - 1)) | truncated
        // "candidate <= expected - hwin" without going below zero.
        if candidate + halfWindow <= expected && candidate < (1 << 62) - window {
            return candidate + window
        }
        if candidate > expected + halfWindow && candidate >= window {
            return candidate - window
        }
        return candidate
    }
}
