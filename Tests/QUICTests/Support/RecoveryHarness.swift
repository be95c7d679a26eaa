// Test helpers for loss recovery (RFC 9002): a fake clock around one
// LossRecovery<CongestionControl> (NewReno unless a test asks for CUBIC),
// and a simulated link (one-way delay, bandwidth, drops, reordering,
// optional pacing) that runs a sender against it until all data is delivered.

import Core
@testable import QUIC

func ms(_ value: Int64) -> Int64 { value * 1_000_000 }

func at(ms value: Int64) -> Instant { Instant(nanoseconds: ms(value)) }

/// An outstanding ack-eliciting in-flight packet sent at `pn` ms.
func outstandingPacket(_ pn: UInt64, bytes: Int = 1_200) -> SentPacket {
    SentPacket(packetNumber: pn, timeSent: at(ms: Int64(pn)), bytes: bytes, ackEliciting: true, inFlight: true,
               state: .outstanding)
}

/// One LossRecovery driven by hand, the clock moved explicitly.
struct RecoveryHarness {
    var recovery: LossRecovery<CongestionControl>
    var now: Instant
    var nextPacketNumber: [UInt64] = [0, 0, 0]

    init(maxAckDelay: Int64 = ms(25), role: EndpointRole = .server, maxDatagramSize: Int = 1_200,
         algorithm: CongestionAlgorithm = .newReno) {
        now = Instant(nanoseconds: 0)
        recovery = LossRecovery(controller: CongestionControl(algorithm, maxDatagramSize: maxDatagramSize),
                                maxAckDelay: maxAckDelay, now: now, role: role)
    }

    mutating func advance(ms value: Int64) { now = Instant(nanoseconds: now.nanoseconds + ms(value)) }

    mutating func advance(to instant: Instant) { now = instant }

    @discardableResult
    mutating func send(_ space: PacketNumberSpace = .application, bytes: Int = 1_200, ackEliciting: Bool = true,
                       inFlight: Bool = true, skip: UInt64 = 0) -> UInt64 {
        let pn = nextPacketNumber[space.rawValue] + skip
        nextPacketNumber[space.rawValue] = pn + 1
        recovery.onPacketSent(space: space, packetNumber: pn, bytes: bytes, ackEliciting: ackEliciting,
                              inFlight: inFlight, now: now)
        return pn
    }

    @discardableResult
    mutating func ack(_ ranges: [ClosedRange<UInt64>], delay: Int64 = 0,
                      confirmed: Bool = true) -> (acked: [UInt64], lost: [UInt64]) {
        ack(.application, ranges, delay: delay, confirmed: confirmed)
    }

    @discardableResult
    mutating func ack(_ space: PacketNumberSpace, _ ranges: [ClosedRange<UInt64>], delay: Int64 = 0,
                      confirmed: Bool = true) -> (acked: [UInt64], lost: [UInt64]) {
        var acked: [UInt64] = [], lost: [UInt64] = []
        recovery.onAckReceived(space: space, ranges: ranges, ackDelay: delay, handshakeConfirmed: confirmed, now: now,
                               acked: { acked.append($0) }, lost: { lost.append($0) })
        return (acked, lost)
    }

    func deadline(confirmed: Bool = true, blocked: Bool = false) -> Instant? {
        recovery.lossDetectionDeadline(handshakeConfirmed: confirmed, amplificationBlocked: blocked)
    }

    mutating func fire(confirmed: Bool = true) -> (action: LossTimerAction, lost: [UInt64]) {
        var lost: [UInt64] = []
        let action = recovery.onLossDetectionTimeout(handshakeConfirmed: confirmed, now: now) { _, pn in lost.append(pn) }
        return (action, lost)
    }

    var window: Int { recovery.controller.congestionWindow }
}

/// A sender pushing `chunks` packets of data over a path with a fixed one-way
/// delay in each direction. The receiver acknowledges every packet it gets,
/// at once, with every range received so far. Lost data goes back to the
/// front of the queue; PTO probes carry queued data or are PINGs.
struct SimulatedLink {
    var harness: RecoveryHarness
    let oneWayDelay: Int64
    /// Whether the sender waits for the pacer (RFC 9002 §7.7) as the
    /// connection does.
    var paced = false
    /// When each packet left, by packet number order.
    var sendTimes: [Instant] = []
    /// Time each packet occupies the link (its bandwidth): packets sent
    /// together arrive one after the other.
    var serialization: Int64 = 0
    private var linkFreeAt = Instant(nanoseconds: 0)
    /// Packet numbers the path drops (first transmission or not: by number).
    var dropped: Set<UInt64> = []
    /// Packets sent in this interval (ns) are dropped: the path is down.
    var blackout: Range<Int64>?
    /// Extra one-way delay per packet number (reordering).
    var extraDelay: [UInt64: Int64] = [:]
    /// Data packets the application has; nil: unlimited.
    var pending: [Int] = []
    var delivered: Set<Int> = []
    var chunkOfPacket: [UInt64: Int] = [:]
    var lostPackets: [UInt64] = []
    var probes = 0
    var congestionEvents = 0
    var windowTrace: [Int] = []
    /// Packet numbers received, as ranges largest first (kept merged, so
    /// long runs stay cheap).
    private var received: [ClosedRange<UInt64>] = []
    /// (time, packet number) arriving at the receiver.
    private var arrivals: [(Instant, UInt64)] = []
    /// (time, ranges) arriving back at the sender.
    private var acks: [(Instant, [ClosedRange<UInt64>])] = []

    init(oneWayDelay: Int64, chunks: Int, algorithm: CongestionAlgorithm = .newReno, paced: Bool = false) {
        harness = RecoveryHarness(algorithm: algorithm)
        self.paced = paced
        self.oneWayDelay = oneWayDelay
        pending = Array(0..<chunks)
    }

    private mutating func transmit(chunk: Int?) {
        let pn = harness.send(.application)
        sendTimes.append(harness.now)
        if let chunk { chunkOfPacket[pn] = chunk }
        guard !dropped.contains(pn), !(blackout?.contains(harness.now.nanoseconds) ?? false) else { return }
        linkFreeAt = Instant(nanoseconds: max(linkFreeAt, harness.now).nanoseconds + serialization)
        let arrival = Instant(nanoseconds: linkFreeAt.nanoseconds + oneWayDelay + (extraDelay[pn] ?? 0))
        arrivals.append((arrival, pn))
    }

    private func rangesReceived() -> [ClosedRange<UInt64>] { received }

    private mutating func receive(_ pn: UInt64) {
        // First range (largest first) whose upper bound is below pn + 1.
        var i = 0
        while i < received.count, received[i].lowerBound > pn { i += 1 }
        if i < received.count, received[i].contains(pn) { return }
        let joinsAbove = i > 0 && received[i - 1].lowerBound == pn + 1
        let joinsBelow = i < received.count && received[i].upperBound + 1 == pn
        switch (joinsAbove, joinsBelow) {
        case (true, true):
            received[i - 1] = received[i].lowerBound...received[i - 1].upperBound
            received.remove(at: i)
        case (true, false): received[i - 1] = pn...received[i - 1].upperBound
        case (false, true): received[i] = received[i].lowerBound...pn
        case (false, false): received.insert(pn...pn, at: i)
        }
    }

    /// Runs until every chunk is acknowledged or `limit` passes; returns whether all were.
    mutating func run(limit: Int64 = ms(60_000)) -> Bool {
        let total = pending.count + delivered.count
        var steps = 0
        while delivered.count < total {
            steps += 1
            if steps > 1_000_000 { return false }
            var release: Instant?
            while harness.recovery.sendAllowance >= 1_200, !pending.isEmpty {
                if paced, let r = harness.recovery.pacingReleaseTime(now: harness.now) {
                    release = r
                    break
                }
                transmit(chunk: pending.removeFirst())
            }
            var next = harness.deadline()
            if let r = release, next.map({ r < $0 }) ?? true { next = r }
            if let a = arrivals.min(by: { $0.0 < $1.0 })?.0, next.map({ a < $0 }) ?? true { next = a }
            if let a = acks.min(by: { $0.0 < $1.0 })?.0, next.map({ a < $0 }) ?? true { next = a }
            guard let time = next, time.nanoseconds <= limit else { return false }
            harness.advance(to: max(time, harness.now))
            if let i = arrivals.firstIndex(where: { $0.0 <= harness.now }) {
                receive(arrivals.remove(at: i).1)
                acks.append((Instant(nanoseconds: harness.now.nanoseconds + oneWayDelay), rangesReceived()))
            } else if let i = acks.firstIndex(where: { $0.0 <= harness.now }) {
                let ranges = acks.remove(at: i).1
                let before = harness.recovery.controller.recoveryStartTime
                let result = harness.ack(.application, ranges)
                for pn in result.acked { if let c = chunkOfPacket[pn] { delivered.insert(c) } }
                requeue(result.lost)
                if harness.recovery.controller.recoveryStartTime != before { congestionEvents += 1 }
                windowTrace.append(harness.window)
            } else {
                let before = harness.recovery.controller.recoveryStartTime
                let (action, lost) = harness.fire()
                requeue(lost)
                if harness.recovery.controller.recoveryStartTime != before { congestionEvents += 1 }
                if case .probe(_, let count) = action {
                    for _ in 0..<count {
                        probes += 1
                        transmit(chunk: pending.isEmpty ? nil : pending.removeFirst())
                    }
                }
            }
        }
        return true
    }

    private mutating func requeue(_ lost: [UInt64]) {
        lostPackets += lost
        for pn in lost.reversed() {
            if let c = chunkOfPacket[pn], !delivered.contains(c) { pending.insert(c, at: 0) }
        }
    }
}
