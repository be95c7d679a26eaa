// One network path to the peer (RFC 9000 §9: a 4-tuple, here the peer's
// address and ours) and what the connection knows of it: whether the peer
// proved it receives there (§8.2), what it sent and we sent there (the
// anti-amplification limit of an unvalidated address, §8.1, §9.3, §21.5),
// the PATH_CHALLENGE data we are waiting to see echoed, and the
// PATH_RESPONSEs we owe there (§8.2.2: a response goes back on the path its
// challenge came on).
//
// Validation (§8.2.1, §8.2.4):
//
//   unvalidated ──PATH_CHALLENGE sent (new data each time, every PTO)──┐
//        │                                                             │
//        ├──PATH_RESPONSE echoing any outstanding data──> validated   │
//        └──deadline (3 × max(PTO, PTO at kInitialRtt))──> failed <───┘
//
// The connection holds the path in use and a few others (QUICConnection
// +Migration.swift); a path's record is a value, moved between those slots.

import Core

struct PeerPath {
    var path: DatagramPath
    /// §8.2: the peer has shown it receives at this address (the handshake
    /// on the first path, §8.1; a PATH_RESPONSE on any other).
    var validated: Bool
    var bytesReceived = 0
    var bytesSent = 0
    /// PATH_CHALLENGE data sent and not yet echoed, oldest first (each
    /// retransmission has new data, §13.3).
    var challenges: [UInt64] = []
    /// A PATH_CHALLENGE is due on this path.
    var challengeDue = false
    /// When the next PATH_CHALLENGE is due if no response came.
    var nextChallengeAt: Instant?
    /// When validation is abandoned (§8.2.4).
    var validationDeadline: Instant?
    /// PATH_RESPONSE data owed on this path (§8.2.2).
    var responses: [UInt64] = []
    /// The peer's connection ID for packets on this path when it is not the
    /// one in use (§9.5: a fresh one per destination address); nil: none
    /// claimed yet.
    var peerID: ConnectionID?

    /// Outstanding challenges remembered per path: older data may still be
    /// echoed by a slow response, newer challenges replace the oldest.
    static let maxChallenges = 4
    /// PATH_RESPONSEs owed per path; more challenges than this before we
    /// can send are answered only for the newest (§8.2.2 needs one answer
    /// per challenge only "if it can").
    static let maxResponses = 4

    init(path: DatagramPath, validated: Bool) {
        self.path = path
        self.validated = validated
    }

    /// Bytes we may still send on this path (§8.1: three times what it
    /// delivered until the peer's address is validated).
    var amplificationAllowance: Int { validated ? Int.max : max(0, 3 * bytesReceived - bytesSent) }

    var isValidating: Bool { validationDeadline != nil }

    /// Starts (or restarts) validation at `now`, abandoned after `timeout`.
    mutating func startValidation(now: Instant, timeout: Int64) {
        guard !validated else { return }
        challengeDue = true
        if validationDeadline == nil { validationDeadline = Instant(nanoseconds: now.nanoseconds + timeout) }
    }

    /// Records a PATH_CHALLENGE with `data` as sent; the next one is due
    /// after `interval` unless a response arrives.
    mutating func challengeSent(_ data: UInt64, now: Instant, interval: Int64) {
        if challenges.count == Self.maxChallenges { challenges.removeFirst() }
        challenges.append(data)
        challengeDue = false
        nextChallengeAt = Instant(nanoseconds: now.nanoseconds + interval)
    }

    /// A PATH_RESPONSE with `data`: true when it validates this path (§8.2.3).
    mutating func receiveResponse(_ data: UInt64) -> Bool {
        guard challenges.contains(data) else { return false }
        validated = true
        challenges.removeAll()
        challengeDue = false
        nextChallengeAt = nil
        validationDeadline = nil
        return true
    }

    /// Gives up challenging (the data sent stays answerable).
    mutating func stopValidation() {
        challengeDue = false
        nextChallengeAt = nil
        validationDeadline = nil
    }

    mutating func owe(response data: UInt64) {
        if responses.count == Self.maxResponses { responses.removeFirst() }
        responses.append(data)
    }

    /// Something to send on this path for validation.
    var hasPathFrames: Bool { challengeDue || !responses.isEmpty }

    /// The peer's address changed beyond its port (§9.4): the congestion
    /// state is reset; a port-only change (a NAT rebinding) keeps it.
    func peerHostDiffers(from other: DatagramPath) -> Bool {
        let a = path.peer, b = other.peer
        return a.family != b.family || a.high != b.high || a.low != b.low || path.local != other.local
    }
}
