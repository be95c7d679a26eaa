// The packets sent in one packet number space (RFC 9002 §A.1, A.1.1).
//
// Packet numbers only grow within a space (RFC 9000 §12.3), so the ledger
// is a ring of records in packet-number order: appending is O(1), finding a
// packet is a binary search (numbers may have gaps, e.g. a skipped number),
// and an acknowledged or lost packet becomes a tombstone that leaves when
// every packet before it has been settled. The ring doubles only when more
// packets are unsettled than ever before, so steady-state sending and
// acknowledging allocates nothing.
//
// Every packet recorded ends exactly one way: acknowledged, declared lost,
// or dropped with its space's keys (`removeAll`). The connection can rely
// on that to free whatever it keeps per packet.

import Core

/// One sent packet (§A.1.1): number, send time, size, and the two flags.
public struct SentPacket: Sendable, Equatable {
    public enum State: UInt8, Sendable { case outstanding, acknowledged, lost }

    public var packetNumber: UInt64
    public var timeSent: Instant
    public var bytes: Int
    public var ackEliciting: Bool
    /// Counts toward bytes in flight (ack-eliciting or padding-only, §A.1.1).
    public var inFlight: Bool
    public var state: State
}

public struct SentPacketLedger: Sendable {
    private var ring: ContiguousArray<SentPacket>
    private var head = 0
    /// Records from the oldest unsettled packet to the newest sent, tombstones included.
    public private(set) var count = 0

    public private(set) var largestSent: UInt64?
    /// largest_acked_packet (§A.3): the largest packet number the peer acknowledged.
    public private(set) var largestAcked: UInt64?
    /// In-flight bytes of outstanding packets.
    public private(set) var bytesInFlight = 0
    /// Outstanding ack-eliciting in-flight packets: the PTO is armed only when > 0 (§6.2.1).
    public private(set) var ackElicitingInFlight = 0
    /// time_of_last_ack_eliciting_packet (§A.3).
    public private(set) var timeOfLastAckEliciting: Instant?
    /// loss_time (§A.3): when the oldest packet not yet lost by time threshold will be.
    public internal(set) var lossTime: Instant?
    /// The smallest packet number the ledger no longer remembers individually:
    /// every packet below it was settled.
    private var forgottenBelow: UInt64 = 0

    /// 8 records to start with: a handshake space rarely holds more, and
    /// an idle connection keeps little (issue 15: an idle HTTP/3 connection
    /// in a few KiB); a busier space doubles to its peak once.
    public init(initialCapacity: Int = 8) {
        precondition(initialCapacity > 0)
        ring = ContiguousArray(repeating: Self.placeholder, count: initialCapacity)
    }

    private static let placeholder = SentPacket(packetNumber: 0, timeSent: Instant(nanoseconds: 0), bytes: 0,
                                                ackEliciting: false, inFlight: false, state: .acknowledged)

    /// Slots allocated (tests pin that steady state does not grow it).
    public var capacity: Int { ring.count }

    public subscript(position: Int) -> SentPacket {
        get { ring[slot(position)] }
    }

    private func slot(_ position: Int) -> Int {
        let s = head + position
        return s < ring.count ? s : s - ring.count
    }

    /// Records a packet; numbers must increase (RFC 9000 §12.3).
    public mutating func append(_ packet: SentPacket) {
        if let largest = largestSent { precondition(packet.packetNumber > largest, "packet numbers must increase") }
        if count == ring.count { grow() }
        ring[slot(count)] = packet
        count += 1
        largestSent = packet.packetNumber
        if packet.inFlight {
            bytesInFlight += packet.bytes
            if packet.ackEliciting {
                ackElicitingInFlight += 1
                timeOfLastAckEliciting = packet.timeSent
            }
        }
    }

    private mutating func grow() {
        // An emptied ring (a discarded space's) starts again at 8.
        let size = max(8, ring.count * 2)
        var bigger = ContiguousArray<SentPacket>()
        bigger.reserveCapacity(size)
        for position in 0..<count { bigger.append(self[position]) }
        while bigger.count < size { bigger.append(Self.placeholder) }
        ring = bigger
        head = 0
    }

    /// The position of the first record whose number is >= `packetNumber` (count if none).
    public func firstPosition(atLeast packetNumber: UInt64) -> Int {
        var low = 0, high = count
        while low < high {
            let mid = (low + high) / 2
            if self[mid].packetNumber < packetNumber { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Whether `packetNumber` was sent in this space. Numbers older than the
    /// oldest record were all settled and are assumed sent (a skipped number
    /// that far back is no longer known).
    public func wasSent(_ packetNumber: UInt64) -> Bool {
        guard let largest = largestSent, packetNumber <= largest else { return false }
        if packetNumber < forgottenBelow { return true }
        let position = firstPosition(atLeast: packetNumber)
        return position < count && self[position].packetNumber == packetNumber
    }

    /// Settles an outstanding record; returns it as it was.
    public mutating func settle(at position: Int, as state: SentPacket.State) -> SentPacket {
        let s = slot(position)
        let packet = ring[s]
        precondition(packet.state == .outstanding && state != .outstanding)
        ring[s].state = state
        if packet.inFlight {
            bytesInFlight -= packet.bytes
            if packet.ackEliciting { ackElicitingInFlight -= 1 }
        }
        return packet
    }

    /// A packet declared lost and then acknowledged after all (spurious loss):
    /// it is remembered as acknowledged, which matters to persistent congestion.
    public mutating func markLostAsAcknowledged(at position: Int) {
        let s = slot(position)
        precondition(ring[s].state == .lost)
        ring[s].state = .acknowledged
    }

    public mutating func noteAcknowledged(largest: UInt64) {
        largestAcked = max(largestAcked ?? 0, largest)
    }

    /// Drops settled records at the front so the ring holds only what can change.
    public mutating func dropSettledPrefix() {
        while count > 0, ring[head].state != .outstanding {
            forgottenBelow = ring[head].packetNumber + 1
            head = head + 1 == ring.count ? 0 : head + 1
            count -= 1
        }
    }

    /// Key discard (§6.4): forgets every record; returns the in-flight bytes removed.
    public mutating func removeAll() -> Int {
        let removed = bytesInFlight
        if let largest = largestSent { forgottenBelow = largest + 1 }
        head = 0
        count = 0
        bytesInFlight = 0
        ackElicitingInFlight = 0
        timeOfLastAckEliciting = nil
        lossTime = nil
        // The space is gone (its keys discarded, RFC 9001 §4.9): its ring too.
        ring = []
        return removed
    }
}
