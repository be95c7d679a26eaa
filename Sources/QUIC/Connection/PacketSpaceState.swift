// The per-space state of a connection (RFC 9000 §12.3): Initial, Handshake
// and Application data each have their own packet numbers, keys,
// acknowledgments and CRYPTO stream, and are discarded separately (RFC 9001
// §4.9).

import Core

struct PacketSpaceState {
    var readKeys: PacketKeys?
    var writeKeys: PacketKeys?
    var nextPacketNumber: UInt64 = 0
    /// The largest of our packet numbers the peer acknowledged (packet
    /// number length, RFC 9000 §17.1).
    var largestAcked: UInt64?
    /// Keys discarded: nothing more is sent or received in this space.
    /// (Here, in the padding after an optional.)
    private(set) var discarded = false
    var received = ReceivedPackets()
    var cryptoReceive = ReassemblyBuffer()
    var cryptoSend = SendBuffer()
    var sent = SentPacketLog()
    /// PTO probes owed in this space (RFC 9002 §6.2.4).
    var probesOwed = 0

    /// Out-of-order CRYPTO data buffered beyond the read offset at most
    /// (§7.5: "at least 4096 bytes"); more is CRYPTO_BUFFER_EXCEEDED.
    static let cryptoReceiveLimit: UInt64 = 64 << 10

    mutating func discard() {
        readKeys = nil
        writeKeys = nil
        cryptoReceive = ReassemblyBuffer()
        cryptoSend = SendBuffer()
        sent.resolveAll { _ in }
        sent = SentPacketLog()  // its arrays' capacity too
        received = ReceivedPackets()
        probesOwed = 0
        discarded = true
    }

    var canSend: Bool { writeKeys != nil && !discarded }
}

/// 1-RTT keys across key updates (RFC 9001 §6). We answer the peer's
/// updates and start our own (QUICConnection+KeyUpdate.swift): a packet with the other key phase is tried
/// with the next generation of read keys; when it opens, the update is
/// taken — the next read keys become current, the write keys move on too
/// (§6.2: "... MUST update its send keys") and the previous read keys are
/// kept for packets still in flight from before, until three PTOs after the
/// update (§6.5). A packet of the other phase with a packet number below
/// the first one of the current phase belongs to the previous keys (and,
/// after an update of ours, so does every packet of the other phase until
/// the peer sent one in the new phase).
///
/// The next read keys are derived ahead (§6.3: "generally expected to have
/// current and next receive packet protection keys available"), so that
/// opening a packet with the other phase takes no longer than one with the
/// current phase (§9.5). An idle connection gives them back (their AEAD
/// context is about 1.2 KB, QUICConnection+IdleMemory.swift), with the
/// contexts of the current and previous keys; the first packet that
/// reaches the key phase afterwards derives them and makes those contexts
/// again before its phase bit is looked at, so its timing says nothing of
/// that bit either.
struct KeyPhase {
    var phase = false
    /// The next generation of the current read keys; nil once an idle
    /// release gave them back (`next(after:)` derives them again).
    var nextRead: PacketKeys?
    var previousRead: PacketKeys?
    var discardPreviousAt: Instant?
    /// The lowest packet number received in the current phase.
    var firstPacketInPhase: UInt64?
    /// The packet number of our first packet in the current phase; an
    /// update before the peer acknowledged one of those is a KEY_UPDATE_ERROR
    /// (§6.2 "MAY"; we enforce it only for an update arriving before any
    /// acknowledgment of the new phase).
    var firstSentInPhase: UInt64?
    var phaseAcknowledged = true
    /// Packets encrypted with the current write keys (§6.6).
    var packetsSentInPhase: UInt64 = 0
    /// Updates we started (§6.1), for tests and statistics.
    var updatesInitiated = 0

    init(read: PacketKeys) {
        nextRead = read.nextGeneration()
    }

    /// The next read keys after `current` (the current read keys),
    /// derived again if an idle release gave them back.
    mutating func next(after current: PacketKeys) -> PacketKeys {
        if let keys = nextRead { return keys }
        let keys = current.nextGeneration()
        nextRead = keys
        return keys
    }
}

extension QUICError {
    // RFC 9001 §6.2: "An endpoint that receives a second update before it has
    // sent any packets with updated keys ... or before a packet of the
    // current phase was acknowledged MAY treat that as a connection error of
    // type KEY_UPDATE_ERROR."
    public static let keyUpdateTooEarly = QUICError(code: .keyUpdateError, reason: "key update before the previous one was acknowledged")
}

extension PacketNumberSpace {
    init?(_ level: EncryptionLevel) {
        switch level {
        case .initial: self = .initial
        case .handshake: self = .handshake
        case .application: self = .application
        case .earlyData: return nil
        }
    }

    var encryptionLevel: EncryptionLevel {
        switch self {
        case .initial: .initial
        case .handshake: .handshake
        case .application: .application
        }
    }

    var packetKind: PacketKind {
        switch self {
        case .initial: .initial
        case .handshake: .handshake
        case .application: .oneRTT
        }
    }
}
